//! TLS on the control plane: the coordinator's certificate and key ([`ServerTls`], with an
//! optional CA that client certificates must chain to: mutual TLS), and what a client trusts
//! and presents ([`ClientTls`]).
//!
//! TLS sits under the token check, not instead of it: it encrypts the calls (the token
//! included) and proves the coordinator's identity to its clients, and with a client CA the
//! clients' to the coordinator; the token still says which job a call belongs to. The
//! handshakes are rustls with the ring provider, through tonic.
//!
//! Files are PEM, read and checked once when a config is made, so a wrong file fails at start
//! with an error naming the flag (or environment variable) and the path, not at the first
//! handshake. A client takes its files from [`CA_ENV`], [`CERT_ENV`] and [`KEY_ENV`] where no
//! flag names them, so a launcher (or a Spark executor) hands them to its children.

use std::error::Error as StdError;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::{AlertDescription, CertificateError, RootCertStore};

use crate::{Error, Result};

/// The CA a client trusts (PEM): the one that signed the coordinator's certificate.
pub const CA_ENV: &str = "HYDROFEED_TLS_CA";
/// A client's certificate chain (PEM), for a coordinator that requires one (mutual TLS).
pub const CERT_ENV: &str = "HYDROFEED_TLS_CERT";
/// The private key of [`CERT_ENV`]'s certificate (PEM).
pub const KEY_ENV: &str = "HYDROFEED_TLS_KEY";

/// How long the coordinator waits for a client to finish its TLS handshake: a connection that
/// says nothing does not hold a handshake task for ever.
pub(crate) const SERVER_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// A PEM file's contents and where it was named: a flag (`--tls-ca`) or an environment
/// variable ([`CA_ENV`]); errors name both.
#[derive(Clone)]
pub struct PemFile {
    origin: String,
    path: PathBuf,
    pem: Arc<[u8]>,
}

impl std::fmt::Debug for PemFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the contents: a key file is a secret.
        write!(f, "PemFile({self})")
    }
}

/// `--tls-ca /path` for a flag, `HYDROFEED_TLS_CA=/path` for an environment variable.
fn named(origin: &str, path: &Path) -> String {
    let sep = if origin.starts_with('-') { " " } else { "=" };
    format!("{origin}{sep}{}", path.display())
}

impl std::fmt::Display for PemFile {
    /// Where it was named: `--tls-ca /path` or `HYDROFEED_TLS_CA=/path`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&named(&self.origin, &self.path))
    }
}

impl PemFile {
    /// Reads `path`, which `origin` (a flag such as `--tls-cert`, or an environment variable)
    /// named.
    pub fn read(origin: impl Into<String>, path: impl Into<PathBuf>) -> Result<Self> {
        let (origin, path) = (origin.into(), path.into());
        let pem = std::fs::read(&path).map_err(|e| {
            Error::InvalidArgument(format!("cannot read {}: {e}", named(&origin, &path)))
        })?;
        Ok(Self {
            origin,
            path,
            pem: pem.into(),
        })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The certificates in it (at least one).
    fn certs(&self) -> Result<Vec<CertificateDer<'static>>> {
        let certs = CertificateDer::pem_slice_iter(&self.pem)
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|e| Error::InvalidArgument(format!("{self}: not valid PEM: {e}")))?;
        if certs.is_empty() {
            return Err(Error::InvalidArgument(format!(
                "{self}: no PEM certificate in it (expected -----BEGIN CERTIFICATE-----)"
            )));
        }
        Ok(certs)
    }

    /// The private key in it.
    fn key(&self) -> Result<PrivateKeyDer<'static>> {
        PrivateKeyDer::from_pem_slice(&self.pem).map_err(|e| match e {
            rustls::pki_types::pem::Error::NoItemsFound => Error::InvalidArgument(format!(
                "{self}: no PEM private key in it (expected PKCS#8, PKCS#1 or SEC1: -----BEGIN \
                 PRIVATE KEY-----)"
            )),
            e => Error::InvalidArgument(format!("{self}: not valid PEM: {e}")),
        })
    }

    /// The certificates in it as trust anchors (each must be a usable CA certificate).
    fn roots(&self) -> Result<RootCertStore> {
        let mut roots = RootCertStore::empty();
        for c in self.certs()? {
            roots.add(c).map_err(|e| {
                Error::InvalidArgument(format!("{self}: not a usable CA certificate: {e}"))
            })?;
        }
        Ok(roots)
    }
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The coordinator's side: its certificate chain and key, and optionally the CA its clients'
/// certificates must chain to (then a client without one is refused: mutual TLS).
#[derive(Debug, Clone)]
pub struct ServerTls {
    cert: PemFile,
    key: PemFile,
    client_ca: Option<PemFile>,
}

impl ServerTls {
    /// Checks that `cert` holds a chain, `key` its key and `client_ca` usable CA
    /// certificates; errors name the file.
    pub fn new(cert: PemFile, key: PemFile, client_ca: Option<PemFile>) -> Result<Self> {
        let builder = rustls::ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(|e| Error::Internal(format!("rustls protocol versions: {e}")))?;
        builder
            .with_no_client_auth()
            .with_single_cert(cert.certs()?, key.key()?)
            .map_err(|e| {
                Error::InvalidArgument(format!(
                    "{key} does not go with the certificate in {cert}: {e}"
                ))
            })?;
        if let Some(ca) = &client_ca {
            ca.roots()?;
        }
        Ok(Self {
            cert,
            key,
            client_ca,
        })
    }

    /// [`ServerTls::new`] from the files the coordinator's flags name (`--tls-cert`,
    /// `--tls-key`, `--tls-client-ca`).
    pub fn from_files(cert: &Path, key: &Path, client_ca: Option<&Path>) -> Result<Self> {
        Self::new(
            PemFile::read("--tls-cert", cert)?,
            PemFile::read("--tls-key", key)?,
            client_ca
                .map(|p| PemFile::read("--tls-client-ca", p))
                .transpose()?,
        )
    }

    /// The certificate file.
    pub fn cert(&self) -> &PemFile {
        &self.cert
    }

    /// The client CA, when clients must present a certificate.
    pub fn client_ca(&self) -> Option<&PemFile> {
        self.client_ca.as_ref()
    }

    /// tonic's configuration.
    pub(crate) fn tonic(&self) -> tonic::transport::ServerTlsConfig {
        let mut c = tonic::transport::ServerTlsConfig::new()
            .identity(tonic::transport::Identity::from_pem(
                &*self.cert.pem,
                &*self.key.pem,
            ))
            .timeout(SERVER_HANDSHAKE_TIMEOUT);
        if let Some(ca) = &self.client_ca {
            c = c.client_ca_root(tonic::transport::Certificate::from_pem(&*ca.pem));
        }
        c
    }
}

/// A client's side: the CA it trusts, optionally its own certificate and key (for a
/// coordinator with a client CA), optionally the name the coordinator's certificate must carry
/// when it is not the address's host.
#[derive(Clone)]
pub struct ClientTls {
    ca: PemFile,
    identity: Option<(PemFile, PemFile)>,
    domain: Option<String>,
    /// The configuration tonic's amounts to, for [`ClientTls::diagnose`].
    rustls: Arc<rustls::ClientConfig>,
}

impl std::fmt::Debug for ClientTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientTls")
            .field("ca", &self.ca)
            .field("identity", &self.identity)
            .field("domain", &self.domain)
            .finish_non_exhaustive()
    }
}

/// A rustls client configuration trusting `ca`, presenting `identity`, speaking HTTP/2.
fn client_config(
    ca: &PemFile,
    identity: Option<(&PemFile, &PemFile)>,
) -> Result<Arc<rustls::ClientConfig>> {
    let b = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::Internal(format!("rustls protocol versions: {e}")))?
        .with_root_certificates(ca.roots()?);
    let mut c = match identity {
        None => b.with_no_client_auth(),
        Some((cert, key)) => b
            .with_client_auth_cert(cert.certs()?, key.key()?)
            .map_err(|e| {
                Error::InvalidArgument(format!(
                    "{key} does not go with the certificate in {cert}: {e}"
                ))
            })?,
    };
    c.alpn_protocols = vec![b"h2".to_vec()];
    Ok(Arc::new(c))
}

impl ClientTls {
    /// Trusts the CA certificates in `ca`.
    pub fn new(ca: PemFile) -> Result<Self> {
        let rustls = client_config(&ca, None)?;
        Ok(Self {
            ca,
            identity: None,
            domain: None,
            rustls,
        })
    }

    /// Presents the certificate chain in `cert`, whose key is in `key`.
    pub fn with_identity(mut self, cert: PemFile, key: PemFile) -> Result<Self> {
        self.rustls = client_config(&self.ca, Some((&cert, &key)))?;
        self.identity = Some((cert, key));
        Ok(self)
    }

    /// Expects the coordinator's certificate to be issued to `name` instead of the address's
    /// host (an address by IP, a certificate by host name).
    pub fn with_domain(mut self, name: impl Into<String>) -> Self {
        self.domain = Some(name.into());
        self
    }

    /// The client's files: each one a flag names, else its environment variable ([`CA_ENV`],
    /// [`CERT_ENV`], [`KEY_ENV`]). `None` when neither names a CA (plain connections);
    /// a certificate without its key, or either without a CA, is an error.
    pub fn from_flags_or_env(
        ca: Option<&Path>,
        cert: Option<&Path>,
        key: Option<&Path>,
    ) -> Result<Option<Self>> {
        let pick = |flag: &'static str, given: Option<&Path>, env: &'static str| match (
            given,
            std::env::var_os(env).filter(|v| !v.is_empty()),
        ) {
            (Some(p), _) => Some((flag, p.to_path_buf())),
            (None, Some(v)) => Some((env, PathBuf::from(v))),
            (None, None) => None,
        };
        let ca = pick("--tls-ca", ca, CA_ENV);
        let cert = pick("--tls-cert", cert, CERT_ENV);
        let key = pick("--tls-key", key, KEY_ENV);
        match (&cert, &key) {
            (Some(c), None) => {
                return Err(Error::InvalidArgument(format!(
                    "{} without its key: pass --tls-key FILE (or set {KEY_ENV})",
                    named(c.0, &c.1)
                )))
            }
            (None, Some(k)) => {
                return Err(Error::InvalidArgument(format!(
                    "{} without its certificate: pass --tls-cert FILE (or set {CERT_ENV})",
                    named(k.0, &k.1)
                )))
            }
            _ => {}
        }
        let Some(ca) = ca else {
            return match cert {
                Some(c) => Err(Error::InvalidArgument(format!(
                    "{} without a CA to trust: pass --tls-ca FILE (or set {CA_ENV}) with the CA \
                     that signed the coordinator's certificate",
                    named(c.0, &c.1)
                ))),
                None => Ok(None),
            };
        };
        let tls = ClientTls::new(PemFile::read(ca.0, ca.1)?)?;
        match (cert, key) {
            (Some(c), Some(k)) => Ok(Some(
                tls.with_identity(PemFile::read(c.0, c.1)?, PemFile::read(k.0, k.1)?)?,
            )),
            _ => Ok(Some(tls)),
        }
    }

    /// [`ClientTls::from_flags_or_env`] with no flags: what [`CA_ENV`], [`CERT_ENV`] and
    /// [`KEY_ENV`] name.
    pub fn from_env() -> Result<Option<Self>> {
        Self::from_flags_or_env(None, None, None)
    }

    /// The CA file.
    pub fn ca(&self) -> &PemFile {
        &self.ca
    }

    /// tonic's configuration; `timeout` bounds the handshake.
    pub(crate) fn tonic(&self, timeout: Duration) -> tonic::transport::ClientTlsConfig {
        let mut c = tonic::transport::ClientTlsConfig::new()
            .ca_certificate(tonic::transport::Certificate::from_pem(&*self.ca.pem))
            .timeout(timeout);
        if let Some((cert, key)) = &self.identity {
            c = c.identity(tonic::transport::Identity::from_pem(&*cert.pem, &*key.pem));
        }
        if let Some(d) = &self.domain {
            c = c.domain_name(d.clone());
        }
        c
    }

    /// Why the coordinator at `uri` refuses this client after the handshake, which tonic
    /// reports only as "connection closed" (hyper drops the rustls alert on the way): a
    /// handshake of its own over a blocking socket, then the coordinator's first records,
    /// where a TLS 1.3 server refuses a client certificate. `None` when it accepts it.
    pub(crate) fn diagnose(&self, uri: &str, within: Duration) -> Option<String> {
        use std::io::{ErrorKind, Read};
        use std::net::ToSocketAddrs;
        let hostport = uri.split_once("://")?.1.trim_end_matches('/');
        let host = match hostport.strip_prefix('[') {
            Some(v6) => v6.split_once(']')?.0,
            None => hostport.rsplit_once(':')?.0,
        };
        let name = rustls::pki_types::ServerName::try_from(
            self.domain.clone().unwrap_or_else(|| host.to_string()),
        )
        .ok()?;
        let addr = hostport.to_socket_addrs().ok()?.next()?;
        let within = within.min(Duration::from_secs(5));
        let mut sock = std::net::TcpStream::connect_timeout(&addr, within).ok()?;
        sock.set_read_timeout(Some(within)).ok()?;
        sock.set_write_timeout(Some(within)).ok()?;
        let mut conn = rustls::ClientConnection::new(self.rustls.clone(), name).ok()?;
        let deadline = std::time::Instant::now() + within;
        let err = loop {
            if std::time::Instant::now() > deadline {
                return None;
            }
            if conn.wants_write() {
                if let Err(e) = conn.write_tls(&mut sock) {
                    break e;
                }
                continue;
            }
            match conn.read_tls(&mut sock) {
                Ok(0) => return None,
                Ok(_) => {}
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    return None
                }
                Err(e) => break e,
            }
            if let Err(e) = conn.process_new_packets() {
                break std::io::Error::new(ErrorKind::InvalidData, e);
            }
            // Application data (the server's HTTP/2 settings): the certificate was accepted.
            if !conn.is_handshaking() && conn.reader().read(&mut [0u8; 1]).is_ok_and(|n| n > 0) {
                return None;
            }
        };
        self.explain(uri, &err)
    }

    /// Why a TLS connection to the coordinator at `uri` failed, in one sentence, when the
    /// cause is TLS (a certificate refused either way, a coordinator that does not speak TLS);
    /// `None` otherwise (unreachable, a timeout).
    pub(crate) fn explain(&self, uri: &str, err: &(dyn StdError + 'static)) -> Option<String> {
        let failed = format!("TLS handshake with the coordinator at {uri} failed");
        let Some(e) = chain(err).find_map(|e| e.downcast_ref::<rustls::Error>()) else {
            // The peer hung up in the middle of the handshake without a TLS alert: a plain
            // HTTP/2 server that read the ClientHello as a bad preface.
            let eof = chain(err).any(|e| {
                e.downcast_ref::<std::io::Error>()
                    .is_some_and(|io| io.kind() == std::io::ErrorKind::UnexpectedEof)
            });
            return eof.then(|| {
                format!(
                    "{failed}: it closed the connection without a TLS alert: it does not speak \
                     TLS (started without --tls-cert?) ({})",
                    causes(err)
                )
            });
        };
        let why = match e {
            rustls::Error::InvalidCertificate(c) => match c {
                CertificateError::UnknownIssuer | CertificateError::BadSignature => {
                    format!("its certificate is not signed by the CA in {}", self.ca)
                }
                CertificateError::NotValidForName
                | CertificateError::NotValidForNameContext { .. } => match &self.domain {
                    Some(d) => format!("its certificate is not issued to {d:?} (--tls-domain)"),
                    None => "its certificate is not issued to the address's host: connect by a \
                             name the certificate carries, or name it with --tls-domain"
                        .to_string(),
                },
                CertificateError::Expired
                | CertificateError::ExpiredContext { .. }
                | CertificateError::NotValidYet
                | CertificateError::NotValidYetContext { .. } => {
                    "its certificate is outside its validity period".to_string()
                }
                _ => "its certificate was refused".to_string(),
            },
            rustls::Error::AlertReceived(a) => match (&self.identity, a) {
                (
                    None,
                    AlertDescription::CertificateRequired | AlertDescription::HandshakeFailure,
                ) => format!(
                    "it requires a client certificate (it was started with --tls-client-ca): \
                     pass --tls-cert and --tls-key (or set {CERT_ENV} and {KEY_ENV})"
                ),
                (
                    Some((cert, _)),
                    AlertDescription::UnknownCA
                    | AlertDescription::BadCertificate
                    | AlertDescription::CertificateUnknown,
                ) => format!(
                    "it refused the client certificate in {cert}: not signed by the CA it \
                     trusts for clients (its --tls-client-ca)"
                ),
                (Some((cert, _)), AlertDescription::UnsupportedCertificate) => format!(
                    "it refused the client certificate in {cert}: not made for client use \
                     (its extended key usage lacks clientAuth)"
                ),
                (Some((cert, _)), _) => format!("it refused the client certificate in {cert}"),
                (None, a) => format!("it ended the handshake with the alert {a:?}"),
            },
            rustls::Error::InvalidMessage(_) | rustls::Error::InappropriateMessage { .. } => {
                "it does not speak TLS (started without --tls-cert?)".to_string()
            }
            _ => "the handshake was refused".to_string(),
        };
        Some(format!("{failed}: {why} ({e})"))
    }
}

/// The error and its sources, looking inside I/O errors (whose `source()` skips the error
/// they wrap, where rustls puts its own).
pub(crate) fn chain<'a>(
    err: &'a (dyn StdError + 'static),
) -> impl Iterator<Item = &'a (dyn StdError + 'static)> {
    std::iter::successors(Some(err), |&e: &&'a (dyn StdError + 'static)| {
        match e
            .downcast_ref::<std::io::Error>()
            .and_then(std::io::Error::get_ref)
        {
            Some(inner) => Some(inner as &(dyn StdError + 'static)),
            None => e.source(),
        }
    })
}

/// The distinct messages of the error's chain, joined: the cause behind tonic's "transport
/// error".
pub(crate) fn causes(err: &(dyn StdError + 'static)) -> String {
    let mut out: Vec<String> = Vec::new();
    for e in chain(err) {
        // A status's Display repeats its whole source chain in Debug form.
        let s = match e.downcast_ref::<tonic::Status>() {
            Some(st) => st.message().to_string(),
            None => e.to_string(),
        };
        if !s.is_empty() && !out.iter().any(|o| o.contains(&s)) {
            out.push(s);
        }
    }
    out.join(": ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn errors_name_the_flag_and_the_file() {
        let d = tempfile::tempdir().unwrap();
        let junk = write(d.path(), "junk.pem", "not a certificate\n");
        let missing = d.path().join("missing.pem");

        let e = ServerTls::from_files(&junk, &junk, None)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(&format!(
                "--tls-cert {}: no PEM certificate in it",
                junk.display()
            )),
            "{e}"
        );
        let e = ServerTls::from_files(&missing, &junk, None)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(&format!("cannot read --tls-cert {}", missing.display())),
            "{e}"
        );
        let e = ClientTls::from_flags_or_env(Some(&junk), None, None)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(&format!("--tls-ca {}: no PEM certificate", junk.display())),
            "{e}"
        );
        let e = ClientTls::from_flags_or_env(Some(&junk), Some(&junk), None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("without its key"), "{e}");
        let e = ClientTls::from_flags_or_env(None, Some(&junk), Some(&junk))
            .unwrap_err()
            .to_string();
        assert!(e.contains("without a CA to trust"), "{e}");
    }

    #[test]
    fn key_without_pem_key_is_named() {
        let d = tempfile::tempdir().unwrap();
        let junk = write(
            d.path(),
            "key.pem",
            "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
        );
        let f = PemFile::read(KEY_ENV, &junk).unwrap();
        assert_eq!(f.to_string(), format!("{KEY_ENV}={}", junk.display()));
        let e = f.key().unwrap_err().to_string();
        assert!(e.contains("no PEM private key in it"), "{e}");
        assert!(e.contains(&format!("{KEY_ENV}={}", junk.display())), "{e}");
        // The contents never show in Debug.
        assert!(!format!("{f:?}").contains("AAAA"));
    }
}
