//! `launch --tls` (and `coordinator --tls-job-dir`): a CA made for the job at start signs the coordinator's certificate (for
//! 127.0.0.1 and `localhost`, where launch's coordinator listens) and, under `--tls mutual`,
//! one client certificate the feeder and the trainers present. The CA certificate and the
//! other certificates and keys are written 0600 into the job's private directory (0700), which
//! `launch` removes at the end with the trainers' sockets. The CA's key is never written: once
//! `launch` has started, nothing can sign for the job.
//!
//! Across nodes (`--tls-ca-dir`) the CA is the job's, given to every node by the scheduler
//! (`ca.crt` and `ca.key`, e.g. a Kubernetes Secret mounted read-only): each node signs its
//! own leaf certificates with it at start, node 0 the coordinator's for the rendezvous host
//! too, so every node trusts the others without any key crossing the network.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::Context;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};

use hydrofeed_coord::tls::{ClientTls, PemFile, ServerTls, CA_ENV, CERT_ENV, KEY_ENV};

/// Which sides of the control plane prove who they are with a certificate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TlsMode {
    /// The coordinator proves who it is with its certificate; clients, with the token alone.
    Server,
    /// Both: the coordinator also refuses a client without a certificate of the job's CA.
    Mutual,
}

/// The job's TLS: the coordinator's side, launch's own client, and the files its children get.
pub(crate) struct JobTls {
    pub(crate) server: ServerTls,
    pub(super) client: ClientTls,
    ca: PathBuf,
    identity: Option<(PathBuf, PathBuf)>,
}

/// Validity of the job's certificates: from a day back (clocks of a node disagree a little)
/// to a year on (a job outlives no certificate it started with).
fn validity(p: &mut CertificateParams) {
    let now = time::OffsetDateTime::now_utc();
    p.not_before = now - time::Duration::days(1);
    p.not_after = now + time::Duration::days(365);
}

/// Writes `text` to `dir/name`, created 0600.
fn write_private(dir: &Path, name: &str, text: &str) -> anyhow::Result<PathBuf> {
    let p = dir.join(name);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&p)
        .with_context(|| format!("creating {}", p.display()))?;
    f.write_all(text.as_bytes())
        .with_context(|| format!("writing {}", p.display()))?;
    Ok(p)
}

/// A leaf certificate of the job's CA for `names`, with `usage`; its PEM and its key's.
fn leaf(
    issuer: &Issuer<'_, KeyPair>,
    cn: &str,
    names: &[&str],
    usage: ExtendedKeyUsagePurpose,
) -> anyhow::Result<(String, String)> {
    let mut p = CertificateParams::new(names.iter().map(|s| s.to_string()).collect::<Vec<_>>())?;
    p.distinguished_name.push(DnType::CommonName, cn);
    p.use_authority_key_identifier_extension = true;
    p.key_usages.push(KeyUsagePurpose::DigitalSignature);
    p.extended_key_usages.push(usage);
    validity(&mut p);
    let key = KeyPair::generate()?;
    Ok((p.signed_by(&key, issuer)?.pem(), key.serialize_pem()))
}

impl JobTls {
    /// Makes the job's CA and certificates (the coordinator's for `names`, host names or IPs)
    /// and writes them into `dir`.
    pub(crate) fn make_for(dir: &Path, mode: TlsMode, names: &[&str]) -> anyhow::Result<Self> {
        let mut ca = CertificateParams::new(Vec::<String>::new())?;
        ca.distinguished_name.push(
            DnType::CommonName,
            format!("hydrofeed launch CA (pid {})", std::process::id()),
        );
        ca.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
        ca.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        validity(&mut ca);
        let ca_key = KeyPair::generate()?;
        let ca_cert = ca.self_signed(&ca_key)?;
        Self::sign(dir, mode, names, &ca_cert.pem(), Issuer::new(ca, ca_key))
    }

    /// Like [`JobTls::make_for`], signing with the job's CA read from `ca_dir` (`ca.crt`,
    /// `ca.key`: PEM, the key PKCS#8) instead of a CA of its own: what every node of a job
    /// across nodes does (`--tls-ca-dir`).
    pub(crate) fn from_ca_dir(
        dir: &Path,
        mode: TlsMode,
        names: &[&str],
        ca_dir: &Path,
    ) -> anyhow::Result<Self> {
        let read = |name: &str| {
            let p = ca_dir.join(name);
            std::fs::read_to_string(&p).with_context(|| {
                format!(
                    "--tls-ca-dir: reading {} (the job's CA: ca.crt and ca.key, PEM)",
                    p.display()
                )
            })
        };
        let (cert, key) = (read("ca.crt")?, read("ca.key")?);
        let key = KeyPair::from_pem(&key).with_context(|| {
            format!(
                "--tls-ca-dir: {} is not a PKCS#8 PEM private key rcgen can sign with (ECDSA \
                 P-256/P-384, Ed25519 or RSA)",
                ca_dir.join("ca.key").display()
            )
        })?;
        let issuer = Issuer::from_ca_cert_pem(&cert, key).with_context(|| {
            format!(
                "--tls-ca-dir: {} is not a PEM certificate",
                ca_dir.join("ca.crt").display()
            )
        })?;
        Self::sign(dir, mode, names, &cert, issuer)
    }

    /// The job's files in `dir`: the CA certificate `ca_pem`, the coordinator's certificate for
    /// `names` and, under `--tls mutual`, a client certificate, both signed by `issuer`.
    fn sign(
        dir: &Path,
        mode: TlsMode,
        names: &[&str],
        ca_pem: &str,
        issuer: Issuer<'_, KeyPair>,
    ) -> anyhow::Result<Self> {
        let ca_path = write_private(dir, "tls-ca.pem", ca_pem)?;
        let (cert, key) = leaf(
            &issuer,
            "hydrofeed coordinator",
            names,
            ExtendedKeyUsagePurpose::ServerAuth,
        )?;
        let server_cert = write_private(dir, "tls-coordinator.pem", &cert)?;
        let server_key = write_private(dir, "tls-coordinator.key", &key)?;
        let identity = match mode {
            TlsMode::Server => None,
            TlsMode::Mutual => {
                let (cert, key) = leaf(
                    &issuer,
                    "hydrofeed client",
                    &[],
                    ExtendedKeyUsagePurpose::ClientAuth,
                )?;
                Some((
                    write_private(dir, "tls-client.pem", &cert)?,
                    write_private(dir, "tls-client.key", &key)?,
                ))
            }
        };
        let server = ServerTls::from_files(
            &server_cert,
            &server_key,
            identity.as_ref().map(|_| ca_path.as_path()),
        )?;
        let mut client = ClientTls::new(PemFile::read(CA_ENV, &ca_path)?)?;
        if let Some((c, k)) = &identity {
            client =
                client.with_identity(PemFile::read(CERT_ENV, c)?, PemFile::read(KEY_ENV, k)?)?;
        }
        Ok(Self {
            server,
            client,
            ca: ca_path,
            identity,
        })
    }

    /// The feeder's flags.
    pub(super) fn feeder_args(&self, cmd: &mut Command) {
        cmd.arg("--tls-ca").arg(&self.ca);
        if let Some((c, k)) = &self.identity {
            cmd.arg("--tls-cert").arg(c).arg("--tls-key").arg(k);
        }
    }

    /// A trainer's environment (`hydrofeed.DataFeed.state()` reaches the coordinator with it).
    pub(super) fn trainer_env(&self, cmd: &mut Command) {
        cmd.env(CA_ENV, &self.ca);
        if let Some((c, k)) = &self.identity {
            cmd.env(CERT_ENV, c).env(KEY_ENV, k);
        }
    }
}

/// Takes the TLS variables out of a child's environment: a job's children reach its own
/// coordinator, with the job's files or none, never with what the caller had set.
pub(super) fn clear_env(cmd: &mut Command) {
    for v in [CA_ENV, CERT_ENV, KEY_ENV] {
        cmd.env_remove(v);
    }
}
