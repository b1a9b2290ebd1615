//! The TLS flags of the commands on the coordinator's control plane: [`ServerArgs`] for
//! `hydrofeed coordinator`, [`ClientArgs`] for `hydrofeed feeder` (each flattened into its
//! command's arguments). The files are read and checked here, at start; see
//! `hydrofeed_coord::tls`.

use std::path::PathBuf;

use hydrofeed_coord::tls::{ClientTls, ServerTls};

/// The coordinator's TLS flags.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ServerArgs {
    /// Serve TLS with this certificate chain (PEM, the coordinator's own first); clients then
    /// need the CA that signed it (`--tls-ca` or HYDROFEED_TLS_CA). Off by default.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The private key of `--tls-cert` (PEM: PKCS#8, PKCS#1 or SEC1).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Mutual TLS: refuse clients without a certificate signed by this CA (PEM).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_client_ca: Option<PathBuf>,
    /// Serve TLS with a CA made for this job: its certificate goes to DIR/tls-ca.pem (0600;
    /// the clients' `--tls-ca`), the coordinator's certificate names the `--listen` address,
    /// `localhost`, 127.0.0.1 and each `--tls-name`; the CA's key is never written. What the
    /// Spark integration uses.
    #[arg(long, value_name = "DIR", conflicts_with = "tls_cert")]
    pub tls_job_dir: Option<PathBuf>,
    /// A further name (host or IP) for the certificate `--tls-job-dir` makes.
    #[arg(long, value_name = "NAME", requires = "tls_job_dir")]
    pub tls_name: Vec<String>,
}

impl ServerArgs {
    /// The TLS the flags ask for (`None`: plain); `listen` is the coordinator's address.
    pub fn load(&self, listen: std::net::SocketAddr) -> anyhow::Result<Option<ServerTls>> {
        if let Some(dir) = &self.tls_job_dir {
            let ip = listen.ip().to_string();
            let mut names: Vec<&str> = Vec::new();
            for n in [ip.as_str(), "localhost", "127.0.0.1"]
                .into_iter()
                .chain(self.tls_name.iter().map(String::as_str))
            {
                if !names.contains(&n) {
                    names.push(n);
                }
            }
            let job = crate::launch::certs::JobTls::make_for(
                dir,
                crate::launch::TlsMode::Server,
                &names,
            )?;
            return Ok(Some(job.server));
        }
        match (&self.tls_cert, &self.tls_key) {
            (Some(cert), Some(key)) => Ok(Some(ServerTls::from_files(
                cert,
                key,
                self.tls_client_ca.as_deref(),
            )?)),
            _ => Ok(None),
        }
    }
}

/// A coordinator client's TLS flags; each one not given is taken from its environment
/// variable.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ClientArgs {
    /// Reach the coordinator over TLS, trusting this CA (PEM): the one that signed its
    /// `--tls-cert` [else HYDROFEED_TLS_CA].
    #[arg(long, value_name = "FILE")]
    pub tls_ca: Option<PathBuf>,
    /// This client's certificate (PEM), for a coordinator started with `--tls-client-ca`
    /// [else HYDROFEED_TLS_CERT].
    #[arg(long, value_name = "FILE")]
    pub tls_cert: Option<PathBuf>,
    /// The private key of `--tls-cert` (PEM) [else HYDROFEED_TLS_KEY].
    #[arg(long, value_name = "FILE")]
    pub tls_key: Option<PathBuf>,
    /// The name the coordinator's certificate is issued to, when the address's host is not it
    /// (an address by IP, a certificate by host name).
    #[arg(long, value_name = "NAME")]
    pub tls_domain: Option<String>,
}

impl ClientArgs {
    /// The TLS the flags (or the environment) ask for (`None`: plain).
    pub fn load(&self) -> anyhow::Result<Option<ClientTls>> {
        let tls = ClientTls::from_flags_or_env(
            self.tls_ca.as_deref(),
            self.tls_cert.as_deref(),
            self.tls_key.as_deref(),
        )?;
        match (tls, &self.tls_domain) {
            (Some(t), Some(d)) => Ok(Some(t.with_domain(d))),
            (None, Some(_)) => anyhow::bail!(
                "--tls-domain without a CA to trust: pass --tls-ca FILE (or set {})",
                hydrofeed_coord::tls::CA_ENV
            ),
            (t, None) => Ok(t),
        }
    }
}
