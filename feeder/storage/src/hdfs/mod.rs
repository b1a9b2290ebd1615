//! HDFS storage over [`hdfs_native`] (pure Rust: no JVM, no libhdfs on the data path).
//!
//! - **URIs**: `hdfs://nn:9000/path`, `hdfs://nameservice/path` (HA, resolved from the Hadoop
//!   configuration), `hdfs:///path` (the authority of `fs.defaultFS`) and `viewfs://cluster/path`
//!   (mount table from the configuration).
//! - **Configuration**: as Hadoop clients expect: `core-site.xml` and `hdfs-site.xml` from
//!   `$HADOOP_CONF_DIR`, else `$HADOOP_HOME/etc/hadoop` ([`HdfsStorageBuilder::with_config_dir`]
//!   overrides both); the user from `HADOOP_USER_NAME` (simple auth) or the Kerberos ticket cache
//!   when `hadoop.security.authentication=kerberos` (hdfs-native loads libgssapi at run time).
//! - **Async bridge**: hdfs-native is async. One process-wide tokio runtime (two worker threads,
//!   `hydrofeed-hdfs`) runs every HDFS future; callers block on a channel with a deadline, so a
//!   call never hangs forever and works from any thread, including rayon workers and threads
//!   inside another runtime (`Runtime::block_on` would panic there).
//! - **Reads**: [`Storage::open`] asks the NameNode for the block list once and keeps the
//!   `FileReader`; each [`RandomAccess::read_at`] is a ranged read straight from the DataNodes.
//!   Small reads go through a read-ahead window (4 MiB by default) so a reader that pulls 64 KiB
//!   at a time does not pay one DataNode round trip per call; a sequential reader also gets the
//!   next window fetched in the background while it decodes the current one.
//! - **Block locations**: hdfs-native 0.14 keeps the located blocks of a `FileReader` private, so
//!   hosts come from the NameNode's WebHDFS `GETFILEBLOCKLOCATIONS` (plain HTTP, simple auth).
//!   Where that is unreachable (secure clusters with SPNEGO or HTTPS, viewfs), blocks are derived
//!   from the block size with no hosts: locality is an optimisation, never a requirement.
//!
//! Parts: `runtime` (the async bridge), `conf` (the Hadoop configuration we read ourselves,
//! NameNode addresses and the reachability probe), `read` (opened files and read-ahead),
//! `webhdfs` (block locations over HTTP); this module holds the builder, [`HdfsStorage`] and
//! the error mapping.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use hdfs_native::{Client, ClientBuilder, HdfsError};

use super::{BlockLocation, FileStatus, RandomAccess, Storage};
use crate::{Error, Result};

mod conf;
mod read;
mod runtime;
mod webhdfs;

use conf::{connect_wait, probe_namenodes, rpc_addresses, HadoopConf};
use read::{HdfsFile, ReadAhead};
use runtime::{run, runtime};

/// Default deadline of one HDFS call (NameNode RPC or one ranged read).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);
/// Default largest background fetch of a sequential reader ([`crate::RandomAccess::read_seq`]).
pub const DEFAULT_READ_AHEAD: usize = 4 << 20;
/// Seconds to wait for an unreachable NameNode (connection refused, unknown host) before
/// failing; `hydrofeed --hdfs-timeout S` sets it. Unset: one attempt, unless the Hadoop
/// configuration sets `ipc.client.connect.max.retries` (then retries x
/// `ipc.client.connect.retry.interval`, as Hadoop's own client waits).
pub const CONNECT_TIMEOUT_ENV: &str = "HYDROFEED_HDFS_TIMEOUT";
/// Kerberos principal to log in as (`hydrofeed --principal`); with [`KEYTAB_ENV`], from that
/// keytab, else from the ticket cache. Unset: the ticket cache's default principal.
pub const PRINCIPAL_ENV: &str = "HYDROFEED_KERBEROS_PRINCIPAL";
/// Keytab to log in from (`hydrofeed --keytab`; needs [`PRINCIPAL_ENV`]).
pub const KEYTAB_ENV: &str = "HYDROFEED_KERBEROS_KEYTAB";
/// Hadoop configuration key with the principal to log in as (below [`PRINCIPAL_ENV`]).
pub const PRINCIPAL_KEY: &str = "hydrofeed.kerberos.principal";
/// Hadoop configuration key with the keytab to log in from (below [`KEYTAB_ENV`]).
pub const KEYTAB_KEY: &str = "hydrofeed.kerberos.keytab";

/// Whether `e` is a failed login or authentication (no ticket, expired ticket, wrong keytab,
/// a token the NameNode refuses, or a client without security against a secure cluster).
fn is_auth_failure(e: &HdfsError) -> bool {
    match e {
        HdfsError::SASLError(_) | HdfsError::GSSAPIError(..) | HdfsError::NoSASLMechanism => true,
        HdfsError::RPCError(class, msg) | HdfsError::FatalRPCError(class, msg) => {
            (class.ends_with("AccessControlException") && msg.contains("authentication"))
                || class.ends_with("SaslException")
                || class.ends_with("InvalidToken")
        }
        _ => false,
    }
}

/// Non-empty environment variable `k`.
fn env_var(k: &str) -> Option<String> {
    std::env::var(k).ok().filter(|v| !v.is_empty())
}

/// The Kerberos login a storage was built with: principal and keytab (from `--principal` /
/// `--keytab`, their environment variables, or the Hadoop configuration's
/// `hydrofeed.kerberos.principal` / `hydrofeed.kerberos.keytab`).
#[derive(Debug, Clone, Default)]
struct Login {
    principal: Option<String>,
    keytab: Option<String>,
}

impl Login {
    fn from_env() -> Self {
        Self {
            principal: env_var(PRINCIPAL_ENV),
            keytab: env_var(KEYTAB_ENV),
        }
    }
}

/// The default principal of the ticket cache `KRB5CCNAME` names (a `FILE:` cache, or MIT's
/// default `/tmp/krb5cc_<uid>`), read from the cache file's header; `None` for other cache
/// types or a missing or unreadable file.
fn ccache_principal() -> Option<String> {
    let name = env_var("KRB5CCNAME")
        // SAFETY: getuid has no preconditions and cannot fail.
        .unwrap_or_else(|| format!("FILE:/tmp/krb5cc_{}", unsafe { libc::getuid() }));
    let path = match name.split_once(':') {
        Some(("FILE", p)) => p.to_string(),
        Some(_) => return None,
        None => name,
    };
    let b = std::fs::read(path).ok()?;
    let u16_at = |i: usize| Some(u16::from_be_bytes(b.get(i..i + 2)?.try_into().ok()?));
    let u32_at = |i: usize| Some(u32::from_be_bytes(b.get(i..i + 4)?.try_into().ok()?));
    // Version 0x0504 has a header (its length, then tags); 0x0503 none.
    let mut at = match u16_at(0)? {
        0x0504 => 4 + usize::from(u16_at(2)?),
        0x0503 => 2,
        _ => return None,
    };
    let components = u32_at(at + 4)? as usize;
    at += 8;
    let text = |at: &mut usize| -> Option<String> {
        let n = u32_at(*at)? as usize;
        let s = String::from_utf8(b.get(*at + 4..*at + 4 + n)?.to_vec()).ok()?;
        *at += 4 + n;
        Some(s)
    };
    let realm = text(&mut at)?;
    let parts = (0..components.min(16))
        .map(|_| text(&mut at))
        .collect::<Option<Vec<_>>>()?;
    Some(format!("{}@{realm}", parts.join("/")))
}

/// One clear error for a failed HDFS login: who we tried to be (principal, keytab, ticket
/// cache or delegation token file), the NameNode, the cause, and what to run.
fn auth_error(path: &str, e: &HdfsError, login: &Login) -> Error {
    let namenode = path
        .split_once("://")
        .map_or(path, |(_, r)| r.split('/').next().unwrap_or(r));
    let cache = || {
        env_var("KRB5CCNAME").map_or("KRB5CCNAME unset: the system default".into(), |c| {
            format!("KRB5CCNAME={c}")
        })
    };
    let mut principal = login.principal.clone();
    let keytab = login.keytab.clone();
    let who = match (&principal, &keytab, env_var("HADOOP_TOKEN_FILE_LOCATION")) {
        (Some(p), Some(k), _) => format!("principal {p} with keytab {k}"),
        (Some(p), None, _) => format!("principal {p} from the ticket cache ({})", cache()),
        (None, _, Some(t)) => format!(
            "the delegation tokens in HADOOP_TOKEN_FILE_LOCATION={t}, else the ticket cache"
        ),
        (None, _, None) => match ccache_principal() {
            Some(p) => {
                let who = format!("principal {p} from the ticket cache ({})", cache());
                principal = Some(p);
                who
            }
            None => format!("the default principal of the ticket cache ({})", cache()),
        },
    };
    // GSSAPI's own text, without the status codes' debug form.
    let raw = match e {
        HdfsError::GSSAPIError(_, _, msg) => format!("GSSAPI: {}", msg.trim()),
        other => other.to_string(),
    };
    let lower = raw.to_lowercase();
    let cause = if lower.contains("expired") {
        "the Kerberos ticket has expired"
    } else if keytab.is_some()
        && (lower.contains("no credentials")
            || lower.contains("keytab")
            || lower.contains("key table")
            || lower.contains("decrypt"))
    {
        "the keytab holds no usable key for the principal"
    } else if lower.contains("no credentials")
        || lower.contains("not found")
        || lower.contains("no such file")
        || lower.contains("cannot find kdc")
    {
        "no usable Kerberos credentials"
    } else if lower.contains("simple authentication is not enabled") {
        "the cluster requires Kerberos and the client's Hadoop configuration does not say so \
         (hadoop.security.authentication=kerberos in core-site.xml under HADOOP_CONF_DIR)"
    } else if lower.contains("token") {
        "the NameNode refused the delegation token (expired, cancelled or for another cluster)"
    } else {
        "authentication failed"
    };
    let user = principal.as_deref().unwrap_or("<principal>");
    Error::Hdfs {
        path: path.to_string(),
        detail: format!(
            "cannot log in to the HDFS NameNode {namenode} as {who}: {cause} ({raw}). Get a \
             ticket with `kinit {user}` (or `kinit -kt <keytab> {user}`), or pass \
             `--principal {user} --keytab <keytab>`"
        ),
        retryable: false,
    }
}

/// Maps an hdfs-native error on `path` (a full URI) to the feeder's [`Error`] (a failed login
/// names the principal and keytab of the environment: `--principal` / `--keytab`).
pub fn map_hdfs(path: &str, e: HdfsError) -> Error {
    map_hdfs_as(path, e, &Login::from_env())
}

/// [`map_hdfs`] for a storage logged in as `login`.
fn map_hdfs_as(path: &str, e: HdfsError, login: &Login) -> Error {
    let detail = e.to_string();
    tracing::debug!(path, error = %detail, "hdfs error");
    if is_auth_failure(&e) {
        return auth_error(path, &e, login);
    }
    match &e {
        HdfsError::FileNotFound(_) => Error::NotFound {
            path: path.to_string(),
        },
        // The NameNode answers "Path is not a file" to reads of a directory.
        HdfsError::RPCError(class, msg) | HdfsError::FatalRPCError(class, msg)
            if class.ends_with("FileNotFoundException") && msg.contains("is not a file") =>
        {
            Error::InvalidArgument(format!("{path}: is a directory, expected a file"))
        }
        HdfsError::RPCError(class, _) | HdfsError::FatalRPCError(class, _)
            if class.ends_with("FileNotFoundException") =>
        {
            Error::NotFound {
                path: path.to_string(),
            }
        }
        HdfsError::RPCError(class, _) | HdfsError::FatalRPCError(class, _)
            if class.ends_with("AccessControlException") =>
        {
            Error::PermissionDenied {
                path: path.to_string(),
            }
        }
        HdfsError::IsADirectoryError(_) => {
            Error::InvalidArgument(format!("{path}: is a directory, expected a file"))
        }
        HdfsError::InvalidPath(_) | HdfsError::InvalidArgument(_) | HdfsError::UrlParseError(_) => {
            Error::InvalidArgument(format!("{path}: {detail}"))
        }
        _ => Error::Hdfs {
            path: path.to_string(),
            detail,
            retryable: is_retryable(&e),
        },
    }
}

fn is_retryable(e: &HdfsError) -> bool {
    match e {
        // Connection refused/reset, DataNode gone mid-read, bad replica: another try (or another
        // replica, which hdfs-native picks after marking the node dead) may succeed.
        HdfsError::IOError(_)
        | HdfsError::DataTransferError(_)
        | HdfsError::ChecksumError
        | HdfsError::BlocksNotFound(_) => true,
        HdfsError::RPCError(class, _) => [
            "StandbyException",
            "RetriableException",
            "SafeModeException",
            "ObserverRetryOnActiveException",
        ]
        .iter()
        .any(|c| class.ends_with(c)),
        _ => false,
    }
}

/// Builds an [`HdfsStorage`].
#[derive(Debug, Clone)]
pub struct HdfsStorageBuilder {
    uri: String,
    config_dir: Option<String>,
    config: HashMap<String, String>,
    user: Option<String>,
    kerberos: [Option<String>; 3],
    timeout: Duration,
    read_ahead: usize,
}

impl HdfsStorageBuilder {
    /// Kerberos principal, keytab and credential cache (each optional), for clusters with
    /// `hadoop.security.authentication=kerberos`; by default the login ticket cache is used.
    pub fn with_kerberos(
        mut self,
        principal: Option<String>,
        keytab: Option<String>,
        cache: Option<String>,
    ) -> Self {
        self.kerberos = [principal, keytab, cache];
        self
    }

    /// Reads the Hadoop configuration from `dir` instead of `$HADOOP_CONF_DIR`.
    pub fn with_config_dir(mut self, dir: impl Into<String>) -> Self {
        self.config_dir = Some(dir.into());
        self
    }

    /// Sets one Hadoop configuration key (overrides the files).
    pub fn with_config(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.config.insert(key.into(), value.into());
        self
    }

    /// Acts as `user` (simple auth; otherwise `HADOOP_USER_NAME` or the login user).
    pub fn with_user(mut self, user: impl Into<String>) -> Self {
        self.user = Some(user.into());
        self
    }

    /// Deadline of each HDFS call (default [`DEFAULT_TIMEOUT`]).
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Largest background fetch of a sequential reader ([`crate::RandomAccess::read_seq`]);
    /// 0 turns read-ahead off.
    pub fn with_read_ahead(mut self, bytes: usize) -> Self {
        self.read_ahead = bytes;
        self
    }

    /// Connects (lazily: the first call opens the NameNode connection).
    pub fn build(self) -> Result<HdfsStorage> {
        let (scheme, rest) = self.uri.split_once("://").ok_or_else(|| {
            Error::InvalidArgument(format!("{}: not an hdfs:// or viewfs:// URI", self.uri))
        })?;
        let scheme: &'static str = match scheme {
            "hdfs" => "hdfs",
            "viewfs" => "viewfs",
            other => {
                return Err(Error::InvalidArgument(format!(
                    "{}: scheme {other:?} is not hdfs or viewfs",
                    self.uri
                )))
            }
        };
        let authority = rest.split('/').next().unwrap_or("").to_string();
        let conf = HadoopConf::load(self.config_dir.as_deref(), &self.config);
        // `hdfs:///path`: the authority of fs.defaultFS, as Hadoop does.
        let authority = if authority.is_empty() {
            let default_fs = conf.get("fs.defaultFS").unwrap_or_default();
            match default_fs.split_once("://") {
                Some((s, r)) if s == scheme => r.split('/').next().unwrap_or("").to_string(),
                _ => {
                    let uri = &self.uri;
                    return Err(Error::InvalidArgument(format!(
                        "{uri}: no host in the URI and fs.defaultFS ({default_fs:?}) is not \
                         {scheme}://"
                    )));
                }
            }
        } else {
            authority
        };
        let base = format!("{scheme}://{authority}");
        // hdfs-native retries an unreachable NameNode for minutes and then reports only a
        // timeout: the first call checks whether anything answers, and names what does not.
        let from = if rest.starts_with('/') {
            "fs.defaultFS"
        } else {
            "the URI"
        };
        let namenodes = if scheme == "hdfs" {
            rpc_addresses(&conf, &authority, from)
        } else {
            Vec::new()
        };
        let connect_wait = connect_wait(&conf);
        let rt = runtime()?;
        let mut b = ClientBuilder::new()
            .with_url(base.clone())
            .with_io_runtime(rt.handle().clone());
        if let Some(dir) = &self.config_dir {
            b = b.with_config_dir(dir.clone());
        }
        if !self.config.is_empty() {
            b = b.with_config(self.config.clone());
        }
        if let Some(user) = &self.user {
            b = b.with_user(user.clone());
        }
        let [principal, keytab, cache] = self.kerberos.clone();
        // The flags (through the environment) first, then the cluster's configuration.
        let login = Login {
            principal: principal.or_else(|| conf.get(PRINCIPAL_KEY)),
            keytab: keytab.or_else(|| conf.get(KEYTAB_KEY)),
        };
        if let Some(p) = &login.principal {
            b = b.with_kerberos_principal(p.clone());
        }
        if let Some(k) = &login.keytab {
            b = b.with_kerberos_keytab(k.clone());
        }
        if let Some(c) = cache {
            b = b.with_kerberos_cache(c);
        }
        // Client::build resolves the NameNode addresses and may read Kerberos state; no I/O to the
        // NameNode happens until the first call.
        let client = {
            let _guard = rt.enter();
            b.build().map_err(|e| map_hdfs_as(&base, e, &login))?
        };
        let user = self
            .user
            .clone()
            .or_else(|| std::env::var("HADOOP_USER_NAME").ok())
            .or_else(|| std::env::var("USER").ok())
            .or_else(|| std::env::var("LOGNAME").ok());
        let http = if scheme == "hdfs" {
            conf.http_addresses(&authority)
        } else {
            Vec::new()
        };
        Ok(HdfsStorage {
            client,
            scheme,
            base,
            http,
            user,
            timeout: self.timeout,
            read_ahead: self.read_ahead,
            namenodes,
            connect_wait,
            reached: std::sync::atomic::AtomicBool::new(false),
            login,
        })
    }
}

/// HDFS (or viewfs) storage for one file system (one `scheme://authority`).
pub struct HdfsStorage {
    client: Client,
    scheme: &'static str,
    /// `scheme://authority`, prefixed to every path we return.
    base: String,
    /// NameNode HTTP addresses (host:port) for WebHDFS block locations; empty for viewfs.
    http: Vec<String>,
    user: Option<String>,
    timeout: Duration,
    read_ahead: usize,
    /// NameNode RPC addresses with the key they came from (empty: not checked, e.g. viewfs).
    namenodes: Vec<(String, String)>,
    /// How long to wait for an unreachable NameNode ([`connect_wait`]).
    connect_wait: Duration,
    /// A NameNode accepted a connection once: no more checks.
    reached: std::sync::atomic::AtomicBool,
    /// Who it logs in as (for the error of a failed login).
    login: Login,
}

impl std::fmt::Debug for HdfsStorage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HdfsStorage")
            .field("base", &self.base)
            .field("user", &self.user)
            .finish()
    }
}

impl HdfsStorage {
    /// A builder for the file system of `uri` (`hdfs://nn:9000/...`, `viewfs://cluster/...`).
    pub fn builder(uri: impl Into<String>) -> HdfsStorageBuilder {
        let login = Login::from_env();
        HdfsStorageBuilder {
            uri: uri.into(),
            config_dir: None,
            config: HashMap::new(),
            user: None,
            // `hydrofeed --principal/--keytab` (and launchers) pass them through the
            // environment, so every feeder of a job logs in the same way.
            kerberos: [login.principal, login.keytab, None],
            timeout: DEFAULT_TIMEOUT,
            read_ahead: DEFAULT_READ_AHEAD,
        }
    }

    /// Connects with the default settings.
    pub fn new(uri: &str) -> Result<Self> {
        Self::builder(uri).build()
    }

    /// Fails fast (naming address, source and cause) when no NameNode accepts a connection,
    /// until one did once.
    fn reach(&self, path: &str) -> Result<()> {
        use std::sync::atomic::Ordering;
        if self.namenodes.is_empty() || self.reached.load(Ordering::Relaxed) {
            return Ok(());
        }
        probe_namenodes(&self.namenodes, self.connect_wait, &self.uri(path))?;
        self.reached.store(true, Ordering::Relaxed);
        Ok(())
    }

    /// `scheme://authority` of this file system.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// The path part of `uri` (which must belong to this file system), e.g. `/data/x`.
    fn hdfs_path<'a>(&self, uri: &'a str) -> Result<&'a str> {
        if uri.starts_with('/') {
            return Ok(uri);
        }
        let rest = uri
            .strip_prefix(self.scheme)
            .and_then(|r| r.strip_prefix("://"));
        let Some(rest) = rest else {
            return Err(Error::InvalidArgument(format!(
                "{uri}: not a {} URI",
                self.scheme
            )));
        };
        let (auth, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        if !auth.is_empty() && self.base[self.scheme.len() + 3..] != *auth {
            return Err(Error::InvalidArgument(format!(
                "{uri}: belongs to another file system than {}",
                self.base
            )));
        }
        Ok(path)
    }

    fn uri(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    fn status(&self, s: hdfs_native::client::FileStatus) -> FileStatus {
        FileStatus {
            path: self.uri(&s.path),
            len: s.length as u64,
            is_dir: s.isdir,
            modified_ms: Some(s.modification_time),
        }
    }

    /// Creates (or overwrites) a file with `data`: for tests and tools, not the data path.
    pub fn write_file(&self, path: &str, data: Bytes) -> Result<()> {
        let p = self.hdfs_path(path)?.to_string();
        self.reach(&p)?;
        let client = self.client.clone();
        let uri = self.uri(&p);
        run(
            self.timeout,
            || format!("hdfs write of {uri}"),
            async move {
                let opts = hdfs_native::WriteOptions::default()
                    .overwrite(true)
                    .create_parent(true);
                let mut w = client.create(&p, opts).await?;
                w.write_bytes(data).await?;
                w.close().await
            },
        )?
        .map_err(|e| map_hdfs_as(&uri, e, &self.login))
    }

    /// Sets the permission bits of a path (octal, e.g. `0o600`).
    pub fn set_permission(&self, path: &str, perm: u32) -> Result<()> {
        let p = self.hdfs_path(path)?.to_string();
        self.reach(&p)?;
        let client = self.client.clone();
        let uri = self.uri(&p);
        run(
            self.timeout,
            || format!("hdfs chmod of {uri}"),
            async move { client.set_permission(&p, perm).await },
        )?
        .map_err(|e| map_hdfs_as(&uri, e, &self.login))
    }

    /// Deletes a path (recursively for directories); `Ok(false)` if it did not exist.
    pub fn delete(&self, path: &str, recursive: bool) -> Result<bool> {
        let p = self.hdfs_path(path)?.to_string();
        self.reach(&p)?;
        let client = self.client.clone();
        let uri = self.uri(&p);
        run(
            self.timeout,
            || format!("hdfs delete of {uri}"),
            async move { client.delete(&p, recursive).await },
        )?
        .map_err(|e| map_hdfs_as(&uri, e, &self.login))
    }
}

impl Storage for HdfsStorage {
    fn stat(&self, path: &str) -> Result<FileStatus> {
        let p = self.hdfs_path(path)?.to_string();
        self.reach(&p)?;
        let client = self.client.clone();
        let q = p.clone();
        let s = run(
            self.timeout,
            || format!("hdfs stat of {path}"),
            async move { client.get_file_info(&q).await },
        )?
        .map_err(|e| map_hdfs_as(&self.uri(&p), e, &self.login))?;
        Ok(self.status(s))
    }

    fn list(&self, dir: &str) -> Result<Vec<FileStatus>> {
        let p = self.hdfs_path(dir)?.to_string();
        self.reach(&p)?;
        let client = self.client.clone();
        let q = p.clone();
        let v = run(self.timeout, || format!("hdfs list of {dir}"), async move {
            client.list_status(&q, false).await
        })?
        .map_err(|e| map_hdfs_as(&self.uri(&p), e, &self.login))?;
        let mut out: Vec<FileStatus> = v.into_iter().map(|s| self.status(s)).collect();
        out.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(out)
    }

    fn open(&self, path: &str) -> Result<Arc<dyn RandomAccess>> {
        let p = self.hdfs_path(path)?.to_string();
        let uri = self.uri(&p);
        self.reach(&p)?;
        let client = self.client.clone();
        let q = p.clone();
        let reader = run(self.timeout, || format!("hdfs open of {uri}"), async move {
            client.read(&q).await
        })?
        .map_err(|e| map_hdfs_as(&uri, e, &self.login))?;
        let len = reader.file_length() as u64;
        Ok(Arc::new(HdfsFile {
            path: uri,
            reader: Arc::new(reader),
            len,
            timeout: self.timeout,
            read_ahead: self.read_ahead,
            state: Mutex::new(ReadAhead::default()),
        }))
    }

    fn block_locations(&self, path: &str) -> Result<Vec<BlockLocation>> {
        let p = self.hdfs_path(path)?.to_string();
        let st = self.stat(path)?;
        if st.is_dir {
            return Err(Error::InvalidArgument(format!(
                "{}: is a directory, expected a file",
                st.path
            )));
        }
        match self.webhdfs_locations(&p) {
            Ok(v) => Ok(v),
            Err(why) => {
                tracing::warn!(path = %st.path, %why, "no HDFS block hosts (WebHDFS unavailable); locality off for this file");
                // Fall back on the block size (from the NameNode), hosts unknown.
                let client = self.client.clone();
                let q = p.clone();
                let bs = run(
                    self.timeout,
                    || format!("hdfs stat of {path}"),
                    async move { client.get_file_info(&q).await },
                )?
                .map_err(|e| map_hdfs_as(&st.path, e, &self.login))?
                .blocksize
                .filter(|&b| b > 0)
                .unwrap_or(st.len.max(1));
                let mut out = Vec::new();
                let mut off = 0;
                while off < st.len {
                    let len = bs.min(st.len - off);
                    out.push(BlockLocation {
                        offset: off,
                        len,
                        hosts: Vec::new(),
                    });
                    off += len;
                }
                Ok(out)
            }
        }
    }

    fn scheme(&self) -> &'static str {
        self.scheme
    }
}

#[cfg(test)]
mod tests;
