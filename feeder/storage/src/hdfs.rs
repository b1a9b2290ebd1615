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

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use hdfs_native::{Client, ClientBuilder, HdfsError};

use super::{BlockLocation, FileStatus, RandomAccess, Storage};
use crate::{Error, Result};

/// Default deadline of one HDFS call (NameNode RPC or one ranged read).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);
/// Default read-ahead window for small reads.
pub const DEFAULT_READ_AHEAD: usize = 4 << 20;
/// Seconds to wait for an unreachable NameNode (connection refused, unknown host) before
/// failing; `hydrofeed --hdfs-timeout S` sets it. Unset: one attempt, unless the Hadoop
/// configuration sets `ipc.client.connect.max.retries` (then retries x
/// `ipc.client.connect.retry.interval`, as Hadoop's own client waits).
pub const CONNECT_TIMEOUT_ENV: &str = "HYDROFEED_HDFS_TIMEOUT";
/// Deadline of one TCP connection attempt to a NameNode.
const PROBE_TIMEOUT: Duration = Duration::from_secs(3);

/// The process-wide runtime that runs hdfs-native's futures.
fn runtime() -> Result<&'static tokio::runtime::Runtime> {
    static RT: OnceLock<std::result::Result<tokio::runtime::Runtime, String>> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("hydrofeed-hdfs")
            .enable_all()
            .build()
            .map_err(|e| e.to_string())
    })
    .as_ref()
    .map_err(|e| Error::external("cannot start the HDFS runtime", e.clone()))
}

/// A future running on the HDFS runtime; [`Task::wait`] collects its output.
struct Task<T> {
    rx: std::sync::mpsc::Receiver<T>,
    handle: tokio::task::JoinHandle<()>,
}

impl<T: Send + 'static> Task<T> {
    fn spawn<F>(fut: F) -> Result<Self>
    where
        F: std::future::Future<Output = T> + Send + 'static,
    {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        let handle = runtime()?.spawn(async move {
            let _ = tx.send(fut.await);
        });
        Ok(Self { rx, handle })
    }

    /// Waits at most `timeout`; on timeout the task is aborted.
    fn wait(self, timeout: Duration, what: impl FnOnce() -> String) -> Result<T> {
        match self.rx.recv_timeout(timeout) {
            Ok(v) => Ok(v),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                self.handle.abort();
                Err(Error::Timeout {
                    what: what(),
                    secs: timeout.as_secs_f64(),
                })
            }
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => Err(Error::Internal(format!(
                "HDFS task for {} ended without a result",
                what()
            ))),
        }
    }
}

/// Runs `fut` on the HDFS runtime and waits for it at most `timeout`.
fn run<T, F>(timeout: Duration, what: impl FnOnce() -> String, fut: F) -> Result<T>
where
    T: Send + 'static,
    F: std::future::Future<Output = T> + Send + 'static,
{
    Task::spawn(fut)?.wait(timeout, what)
}

/// Maps an hdfs-native error on `path` (a full URI) to the feeder's [`Error`].
pub fn map_hdfs(path: &str, e: HdfsError) -> Error {
    let detail = e.to_string();
    tracing::debug!(path, error = %detail, "hdfs error");
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

    /// Read-ahead window for reads smaller than it; 0 turns read-ahead off.
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
        if let Some(p) = principal {
            b = b.with_kerberos_principal(p);
        }
        if let Some(k) = keytab {
            b = b.with_kerberos_keytab(k);
        }
        if let Some(c) = cache {
            b = b.with_kerberos_cache(c);
        }
        // Client::build resolves the NameNode addresses and may read Kerberos state; no I/O to the
        // NameNode happens until the first call.
        let client = {
            let _guard = rt.enter();
            b.build().map_err(|e| map_hdfs(&base, e))?
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
        HdfsStorageBuilder {
            uri: uri.into(),
            config_dir: None,
            config: HashMap::new(),
            user: None,
            kerberos: [None, None, None],
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
        .map_err(|e| map_hdfs(&uri, e))
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
        .map_err(|e| map_hdfs(&uri, e))
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
        .map_err(|e| map_hdfs(&uri, e))
    }

    /// Block locations from WebHDFS, trying each NameNode HTTP address.
    fn webhdfs_locations(&self, path: &str) -> std::result::Result<Vec<BlockLocation>, String> {
        let mut errors = Vec::new();
        let mut query = String::from("op=GETFILEBLOCKLOCATIONS");
        if let Some(u) = &self.user {
            query.push_str("&user.name=");
            query.push_str(&url_encode(u));
        }
        for addr in &self.http {
            let target = format!("/webhdfs/v1{}?{query}", url_encode_path(path));
            match http_get(addr, &target, self.timeout.min(Duration::from_secs(30))) {
                Ok((200, body)) => return parse_block_locations(&body),
                Ok((code, body)) => errors.push(format!(
                    "{addr}: HTTP {code}: {}",
                    String::from_utf8_lossy(&body)
                )),
                Err(e) => errors.push(format!("{addr}: {e}")),
            }
        }
        Err(if errors.is_empty() {
            "no NameNode HTTP address".to_string()
        } else {
            errors.join("; ")
        })
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
        .map_err(|e| map_hdfs(&self.uri(&p), e))?;
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
        .map_err(|e| map_hdfs(&self.uri(&p), e))?;
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
        .map_err(|e| map_hdfs(&uri, e))?;
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
                .map_err(|e| map_hdfs(&st.path, e))?
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

/// One opened HDFS file: the NameNode's block list is fetched once, at open.
struct HdfsFile {
    path: String,
    reader: Arc<hdfs_native::file::FileReader>,
    len: u64,
    timeout: Duration,
    read_ahead: usize,
    state: Mutex<ReadAhead>,
}

/// Read-ahead state. A miss right at the end of the current window means the reader is
/// sequential: the window after the new one is then fetched in the background, so the
/// DataNode transfer overlaps the caller's decoding. Random access (Parquet footers, column
/// chunks) never triggers a background fetch.
#[derive(Default)]
struct ReadAhead {
    /// The current window: (offset, bytes).
    window: Option<(u64, Bytes)>,
    /// The next window, in flight: (offset, len, task).
    next: Option<(u64, usize, Task<hdfs_native::Result<Bytes>>)>,
}

impl Drop for ReadAhead {
    fn drop(&mut self) {
        if let Some((_, _, t)) = self.next.take() {
            t.handle.abort();
        }
    }
}

impl HdfsFile {
    fn read_task(&self, offset: u64, len: usize) -> Result<Task<hdfs_native::Result<Bytes>>> {
        let reader = Arc::clone(&self.reader);
        Task::spawn(async move { reader.read_range(offset as usize, len).await })
    }

    fn wait_read(
        &self,
        task: Task<hdfs_native::Result<Bytes>>,
        offset: u64,
        len: usize,
    ) -> Result<Bytes> {
        let path = &self.path;
        let got = task
            .wait(self.timeout, || {
                format!("hdfs read of {path} at byte offset {offset} ({len} bytes)")
            })?
            .map_err(|e| match map_hdfs(path, e) {
                Error::Hdfs {
                    path,
                    detail,
                    retryable,
                } => Error::Hdfs {
                    path,
                    detail: format!("reading {len} bytes at byte offset {offset}: {detail}"),
                    retryable,
                },
                other => other,
            })?;
        if got.len() != len {
            return Err(Error::Hdfs {
                path: self.path.clone(),
                detail: format!(
                    "short read at byte offset {offset}: {} of {len} bytes",
                    got.len()
                ),
                retryable: true,
            });
        }
        Ok(got)
    }

    fn fetch(&self, offset: u64, len: usize) -> Result<Bytes> {
        self.wait_read(self.read_task(offset, len)?, offset, len)
    }

    fn window_len(&self, offset: u64) -> usize {
        (self.read_ahead as u64).min(self.len - offset) as usize
    }
}

impl RandomAccess for HdfsFile {
    fn len(&self) -> u64 {
        self.len
    }

    fn read_at(&self, offset: u64, len: usize) -> Result<Bytes> {
        // hdfs-native panics on a range past the end: clip first.
        let end = offset.saturating_add(len as u64).min(self.len);
        if end <= offset {
            return Ok(Bytes::new());
        }
        let n = (end - offset) as usize;
        if n >= self.read_ahead {
            return self.fetch(offset, n);
        }
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let in_window = |w: &Option<(u64, Bytes)>| match w {
            Some((start, bytes)) if offset >= *start && end <= start + bytes.len() as u64 => {
                let a = (offset - start) as usize;
                Some(bytes.slice(a..a + n))
            }
            _ => None,
        };
        if let Some(b) = in_window(&st.window) {
            return Ok(b);
        }
        let cur = st.window.as_ref().map(|(s, b)| (*s, *s + b.len() as u64));
        // The background window serves this read when the read lies in it, or starts in the
        // current window and ends in it (a read straddling the window boundary).
        if let Some((ns, nl, task)) = st.next.take() {
            let nend = ns + nl as u64;
            let straddles = cur.is_some_and(|(s, e)| offset >= s && offset < e && e == ns);
            if end <= nend && (offset >= ns || straddles) {
                let next = self.wait_read(task, ns, nl)?;
                let out = if offset >= ns {
                    let a = (offset - ns) as usize;
                    next.slice(a..a + n)
                } else {
                    let Some((s, b)) = st.window.as_ref() else {
                        return Err(Error::Internal(
                            "read-ahead: straddle without a window".into(),
                        ));
                    };
                    let mut v = Vec::with_capacity(n);
                    v.extend_from_slice(&b[(offset - s) as usize..]);
                    v.extend_from_slice(&next[..n - v.len()]);
                    Bytes::from(v)
                };
                st.window = Some((ns, next));
                if nend < self.len {
                    let l = self.window_len(nend);
                    st.next = Some((nend, l, self.read_task(nend, l)?));
                }
                return Ok(out);
            }
            task.handle.abort();
        }
        // A miss starting in (or right at the end of) the current window: a sequential reader.
        let sequential = cur.is_some_and(|(s, e)| offset >= s && offset <= e);
        let l = self.window_len(offset).max(n);
        // Fetch without the lock: other threads keep reading their ranges meanwhile.
        drop(st);
        let bytes = self.fetch(offset, l)?;
        let out = bytes.slice(..n);
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((_, _, t)) = st.next.take() {
            t.handle.abort();
        }
        st.window = Some((offset, bytes));
        let wend = offset + l as u64;
        if sequential && wend < self.len {
            let l = self.window_len(wend);
            st.next = Some((wend, l, self.read_task(wend, l)?));
        }
        Ok(out)
    }

    fn path(&self) -> &str {
        &self.path
    }
}

/// How long to keep trying an unreachable NameNode: [`CONNECT_TIMEOUT_ENV`], else the Hadoop
/// client's retry keys when the configuration sets them, else one attempt.
fn connect_wait(conf: &HadoopConf) -> Duration {
    if let Some(s) = std::env::var(CONNECT_TIMEOUT_ENV)
        .ok()
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|v| v.is_finite() && *v >= 0.0)
    {
        return Duration::from_secs_f64(s);
    }
    match conf
        .get("ipc.client.connect.max.retries")
        .and_then(|v| v.trim().parse::<u64>().ok())
    {
        Some(n) => {
            let every = conf
                .get("ipc.client.connect.retry.interval")
                .and_then(|v| v.trim().parse::<u64>().ok())
                .unwrap_or(1000);
            Duration::from_millis(n.saturating_mul(every))
        }
        None => Duration::ZERO,
    }
}

/// The NameNode RPC addresses of `authority`, each with the configuration key (or URI) it
/// came from.
fn rpc_addresses(conf: &HadoopConf, authority: &str, from: &str) -> Vec<(String, String)> {
    if let Some(nns) = conf.get(&format!("dfs.ha.namenodes.{authority}")) {
        return nns
            .split(',')
            .map(str::trim)
            .filter_map(|nn| {
                let key = format!("dfs.namenode.rpc-address.{authority}.{nn}");
                conf.get(&key).map(|a| (a, key))
            })
            .collect();
    }
    let addr = if authority.contains(':') {
        authority.to_string()
    } else {
        format!("{authority}:8020")
    };
    vec![(addr, from.to_string())]
}

/// Fails fast when none of the NameNode addresses accepts a TCP connection: names each
/// address, where it came from, and why (connection refused, unknown host, timed out). Retries
/// for `wait`. (An HA name service without addresses in the configuration has none: left to
/// hdfs-native, which reports that itself.)
fn probe_namenodes(addrs: &[(String, String)], wait: Duration, uri: &str) -> Result<()> {
    let t0 = std::time::Instant::now();
    loop {
        let mut errors = Vec::new();
        for (addr, key) in addrs {
            let resolved = match addr.to_socket_addrs() {
                Ok(a) => a.collect::<Vec<_>>(),
                Err(e) => {
                    errors.push(format!("{addr} (from {key}): unknown host ({e})"));
                    continue;
                }
            };
            let mut why = format!("{addr} (from {key}): resolves to no address");
            for sa in resolved {
                match TcpStream::connect_timeout(&sa, PROBE_TIMEOUT) {
                    Ok(_) => return Ok(()),
                    Err(e) => {
                        let what = match e.kind() {
                            std::io::ErrorKind::ConnectionRefused => "connection refused".into(),
                            std::io::ErrorKind::TimedOut => {
                                format!("no answer within {} s", PROBE_TIMEOUT.as_secs())
                            }
                            _ => e.to_string(),
                        };
                        why = if sa.to_string() == *addr {
                            format!("{addr} (from {key}): {what}")
                        } else {
                            format!("{addr} (from {key}, {sa}): {what}")
                        };
                    }
                }
            }
            errors.push(why);
        }
        if t0.elapsed() >= wait {
            return Err(Error::Hdfs {
                path: uri.to_string(),
                detail: format!(
                    "cannot reach the NameNode: {}{}",
                    errors.join("; "),
                    if wait.is_zero() {
                        format!(
                            " (to wait for it, pass --hdfs-timeout SECONDS or set \
                             {CONNECT_TIMEOUT_ENV})"
                        )
                    } else {
                        format!(" (tried for {:.0} s)", wait.as_secs_f64())
                    }
                ),
                retryable: true,
            });
        }
        tracing::warn!(
            "cannot reach the NameNode yet ({}); retrying for up to {:.0} s",
            errors.join("; "),
            wait.saturating_sub(t0.elapsed()).as_secs_f64()
        );
        std::thread::sleep(Duration::from_secs(1).min(wait.saturating_sub(t0.elapsed())));
    }
}

/// The subset of the Hadoop configuration we read ourselves (hdfs-native reads its own copy).
struct HadoopConf {
    map: HashMap<String, String>,
}

impl HadoopConf {
    /// `core-site.xml` then `hdfs-site.xml` from `dir`, `$HADOOP_CONF_DIR` or
    /// `$HADOOP_HOME/etc/hadoop`, then `overrides`: the same order as hdfs-native.
    fn load(dir: Option<&str>, overrides: &HashMap<String, String>) -> Self {
        let dir = dir
            .map(str::to_string)
            .or_else(|| std::env::var("HADOOP_CONF_DIR").ok())
            .or_else(|| {
                std::env::var("HADOOP_HOME")
                    .ok()
                    .map(|h| format!("{h}/etc/hadoop"))
            });
        let mut map = HashMap::new();
        if let Some(dir) = dir {
            for f in ["core-site.xml", "hdfs-site.xml"] {
                let p = std::path::Path::new(&dir).join(f);
                if let Ok(text) = std::fs::read_to_string(&p) {
                    match roxmltree::Document::parse(&text) {
                        Ok(doc) => {
                            for prop in doc.descendants().filter(|n| n.has_tag_name("property")) {
                                let get = |tag: &str| {
                                    prop.children()
                                        .find(|c| c.has_tag_name(tag))
                                        .and_then(|c| c.text())
                                        .map(|t| t.trim().to_string())
                                };
                                if let (Some(k), Some(v)) = (get("name"), get("value")) {
                                    map.insert(k, v);
                                }
                            }
                        }
                        Err(e) => {
                            tracing::warn!(file = %p.display(), error = %e, "cannot parse Hadoop config")
                        }
                    }
                }
            }
        }
        map.extend(overrides.iter().map(|(k, v)| (k.clone(), v.clone())));
        Self { map }
    }

    fn get(&self, k: &str) -> Option<String> {
        self.map.get(k).cloned()
    }

    /// NameNode HTTP addresses for `authority` (host:port or an HA name service).
    fn http_addresses(&self, authority: &str) -> Vec<String> {
        if let Some(nns) = self.get(&format!("dfs.ha.namenodes.{authority}")) {
            return nns
                .split(',')
                .map(str::trim)
                .filter_map(|nn| self.get(&format!("dfs.namenode.http-address.{authority}.{nn}")))
                .collect();
        }
        let host = authority.rsplit_once(':').map_or(authority, |(h, _)| h);
        match self.get("dfs.namenode.http-address") {
            // 0.0.0.0 means "every interface": reach it through the RPC host.
            Some(a) => {
                let port = a.rsplit_once(':').map_or("9870", |(_, p)| p);
                match a.rsplit_once(':').map(|(h, _)| h) {
                    Some("0.0.0.0") | None => vec![format!("{host}:{port}")],
                    Some(h) if h == host || !authority.contains(':') => vec![format!("{h}:{port}")],
                    // The configured NameNode is another one than the URI names: guess.
                    Some(_) => vec![format!("{host}:{port}")],
                }
            }
            None => vec![format!("{host}:9870")],
        }
    }
}

fn url_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn url_encode_path(p: &str) -> String {
    p.split('/').map(url_encode).collect::<Vec<_>>().join("/")
}

/// A minimal HTTP/1.0 GET (no chunked encoding to handle), with deadlines on every step.
fn http_get(addr: &str, target: &str, timeout: Duration) -> std::io::Result<(u16, Vec<u8>)> {
    let sa = addr
        .to_socket_addrs()?
        .next()
        .ok_or_else(|| std::io::Error::other(format!("cannot resolve {addr}")))?;
    let mut s = TcpStream::connect_timeout(&sa, timeout)?;
    s.set_read_timeout(Some(timeout))?;
    s.set_write_timeout(Some(timeout))?;
    write!(
        s,
        "GET {target} HTTP/1.0\r\nHost: {addr}\r\nAccept: application/json\r\n\r\n"
    )?;
    let mut buf = Vec::new();
    s.take(64 << 20).read_to_end(&mut buf)?;
    let head_end = buf
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| std::io::Error::other("malformed HTTP response"))?;
    let head = String::from_utf8_lossy(&buf[..head_end]);
    let code = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| std::io::Error::other("malformed HTTP status line"))?;
    let body = &buf[head_end + 4..];
    let chunked = head.lines().any(|l| {
        let l = l.to_ascii_lowercase();
        l.starts_with("transfer-encoding:") && l.contains("chunked")
    });
    Ok((
        code,
        if chunked {
            dechunk(body)?
        } else {
            body.to_vec()
        },
    ))
}

/// Decodes a `Transfer-Encoding: chunked` body (servers may use it even for HTTP/1.0).
fn dechunk(mut b: &[u8]) -> std::io::Result<Vec<u8>> {
    let bad = || std::io::Error::other("malformed chunked HTTP body");
    let mut out = Vec::new();
    loop {
        let eol = b.windows(2).position(|w| w == b"\r\n").ok_or_else(bad)?;
        let size_text = std::str::from_utf8(&b[..eol]).map_err(|_| bad())?;
        let size_text = size_text.split(';').next().unwrap_or("").trim();
        let size = usize::from_str_radix(size_text, 16).map_err(|_| bad())?;
        b = &b[eol + 2..];
        if size == 0 {
            return Ok(out);
        }
        if b.len() < size + 2 {
            return Err(bad());
        }
        out.extend_from_slice(&b[..size]);
        b = &b[size + 2..];
    }
}

fn parse_block_locations(body: &[u8]) -> std::result::Result<Vec<BlockLocation>, String> {
    let v: serde_json::Value =
        serde_json::from_slice(body).map_err(|e| format!("bad WebHDFS JSON: {e}"))?;
    let arr = v
        .pointer("/BlockLocations/BlockLocation")
        .and_then(|a| a.as_array())
        .ok_or_else(|| "WebHDFS answer without BlockLocations".to_string())?;
    arr.iter()
        .map(|b| {
            let num = |k: &str| {
                b.get(k)
                    .and_then(|x| x.as_u64())
                    .ok_or_else(|| format!("block without {k}"))
            };
            Ok(BlockLocation {
                offset: num("offset")?,
                len: num("length")?,
                hosts: b
                    .get("hosts")
                    .and_then(|h| h.as_array())
                    .map(|h| {
                        h.iter()
                            .filter_map(|x| x.as_str().map(str::to_string))
                            .collect()
                    })
                    .unwrap_or_default(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {

    /// `f` on a thread; `None` if it did not finish within `secs` (left running).
    fn within<T: Send + 'static>(secs: u64, f: impl FnOnce() -> T + Send + 'static) -> Option<T> {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(f());
        });
        rx.recv_timeout(Duration::from_secs(secs)).ok()
    }

    #[test]
    fn unreachable_namenode_fails_fast_naming_address_and_source() {
        // Port 9 (discard) on loopback: nothing listens, the kernel refuses at once.
        let e = within(10, || {
            HdfsStorage::new("hdfs://127.0.0.1:9/x").and_then(|s| s.stat("/x").map(|_| ()))
        })
        .expect("an unreachable NameNode must fail within 10 s")
        .unwrap_err();
        let m = e.to_string();
        assert!(
            m.contains("127.0.0.1:9") && m.contains("connection refused") && m.contains("the URI"),
            "{m}"
        );
        assert!(m.contains("--hdfs-timeout"), "{m}");
        let e = within(10, || {
            HdfsStorage::new("hdfs://no-such-namenode.invalid:8020/x")
                .and_then(|s| s.stat("/x").map(|_| ()))
        })
        .expect("an unknown host must fail within 10 s")
        .unwrap_err();
        let m = e.to_string();
        assert!(
            m.contains("no-such-namenode.invalid:8020") && m.contains("unknown host"),
            "{m}"
        );
    }

    #[test]
    fn namenode_addresses_name_their_conf_keys() {
        let mut o = HashMap::new();
        o.insert("dfs.ha.namenodes.ns".to_string(), "a,b".to_string());
        o.insert(
            "dfs.namenode.rpc-address.ns.a".to_string(),
            "h1:8020".to_string(),
        );
        let conf = HadoopConf::load(Some("/nonexistent"), &o);
        assert_eq!(
            rpc_addresses(&conf, "ns", "the URI"),
            vec![(
                "h1:8020".to_string(),
                "dfs.namenode.rpc-address.ns.a".to_string()
            )]
        );
        assert_eq!(
            rpc_addresses(&conf, "nn", "fs.defaultFS"),
            vec![("nn:8020".to_string(), "fs.defaultFS".to_string())]
        );
        o.insert("ipc.client.connect.max.retries".into(), "3".into());
        o.insert("ipc.client.connect.retry.interval".into(), "500".into());
        let conf = HadoopConf::load(Some("/nonexistent"), &o);
        if std::env::var_os(CONNECT_TIMEOUT_ENV).is_none() {
            assert_eq!(connect_wait(&conf), Duration::from_millis(1500));
        }
    }
    use super::*;

    #[test]
    fn parses_webhdfs_block_locations() {
        let body = br#"{"BlockLocations":{"BlockLocation":[
            {"hosts":["dn1","dn2"],"length":1048576,"offset":0,"names":["a:1"]},
            {"hosts":["dn3"],"length":10,"offset":1048576}]}}"#;
        let v = parse_block_locations(body).unwrap();
        assert_eq!(v.len(), 2);
        assert_eq!(
            v[0],
            BlockLocation {
                offset: 0,
                len: 1 << 20,
                hosts: vec!["dn1".into(), "dn2".into()]
            }
        );
        assert_eq!(v[1].offset, 1 << 20);
        assert!(parse_block_locations(b"{}").is_err());
    }

    #[test]
    fn dechunks() {
        assert_eq!(
            dechunk(b"3\r\nabc\r\n2;x=y\r\nde\r\n0\r\n\r\n").unwrap(),
            b"abcde"
        );
        assert!(dechunk(b"5\r\nab").is_err());
        assert!(dechunk(b"zz\r\n").is_err());
    }

    #[test]
    fn http_addresses_from_config() {
        let mut o = HashMap::new();
        let c = HadoopConf::load(Some("/nonexistent"), &o);
        assert_eq!(c.http_addresses("nn1:9000"), vec!["nn1:9870"]);
        o.insert("dfs.ha.namenodes.ns".to_string(), "a, b".to_string());
        o.insert(
            "dfs.namenode.http-address.ns.a".to_string(),
            "h1:50070".to_string(),
        );
        o.insert(
            "dfs.namenode.http-address.ns.b".to_string(),
            "h2:50070".to_string(),
        );
        o.insert(
            "dfs.namenode.http-address".to_string(),
            "0.0.0.0:9871".to_string(),
        );
        let c = HadoopConf::load(Some("/nonexistent"), &o);
        assert_eq!(c.http_addresses("ns"), vec!["h1:50070", "h2:50070"]);
        assert_eq!(c.http_addresses("nn1:9000"), vec!["nn1:9871"]);
    }

    #[test]
    fn maps_errors() {
        let e = map_hdfs("hdfs://x/a", HdfsError::FileNotFound("/a".into()));
        assert!(matches!(e, Error::NotFound { ref path } if path == "hdfs://x/a"));
        let e = map_hdfs(
            "hdfs://x/a",
            HdfsError::RPCError(
                "org.apache.hadoop.security.AccessControlException".into(),
                "no".into(),
            ),
        );
        assert!(matches!(e, Error::PermissionDenied { .. }));
        let e = map_hdfs(
            "hdfs://x/a",
            HdfsError::RPCError(
                "org.apache.hadoop.ipc.StandbyException".into(),
                "standby".into(),
            ),
        );
        assert!(
            e.is_retryable() && e.to_string().contains("hdfs://x/a"),
            "{e}"
        );
        let e = map_hdfs(
            "hdfs://x/a",
            HdfsError::IOError(std::io::ErrorKind::ConnectionRefused.into()),
        );
        assert!(e.is_retryable());
        let e = map_hdfs("hdfs://x/a", HdfsError::UnsupportedFeature("ec".into()));
        assert!(!e.is_retryable());
    }

    #[test]
    fn uri_paths() {
        let s = HdfsStorage::builder("hdfs://127.0.0.1:1/x")
            .with_config_dir("/nonexistent")
            .build()
            .unwrap();
        assert_eq!(s.base(), "hdfs://127.0.0.1:1");
        assert_eq!(s.hdfs_path("hdfs://127.0.0.1:1/a/b").unwrap(), "/a/b");
        assert_eq!(s.hdfs_path("hdfs:///a/b").unwrap(), "/a/b");
        assert_eq!(s.hdfs_path("/a").unwrap(), "/a");
        assert!(s.hdfs_path("hdfs://other:1/a").is_err());
        assert!(s.hdfs_path("viewfs://127.0.0.1:1/a").is_err());
        // hdfs:/// needs fs.defaultFS; s3:// is not ours.
        let e = HdfsStorage::builder("hdfs:///a")
            .with_config_dir("/nonexistent")
            .with_config("fs.defaultFS", "file:///")
            .build()
            .unwrap_err();
        assert!(
            matches!(&e, Error::InvalidArgument(m) if m.contains("fs.defaultFS")),
            "{e}"
        );
        let s2 = HdfsStorage::builder("hdfs:///a")
            .with_config_dir("/nonexistent")
            .with_config("fs.defaultFS", "hdfs://nn.example:8020")
            .build()
            .unwrap();
        assert_eq!(s2.base(), "hdfs://nn.example:8020");
        assert!(HdfsStorage::builder("s3://b/a").build().is_err());
        // Nothing listens on port 1 (hdfs-native keeps retrying the connection): a retryable
        // error naming the path, within the deadline.
        let s = HdfsStorage::builder("hdfs://127.0.0.1:1/")
            .with_config_dir("/nonexistent")
            .with_timeout(Duration::from_secs(2))
            .build()
            .unwrap();
        let e = s.stat("hdfs://127.0.0.1:1/a").unwrap_err();
        assert!(
            e.to_string().contains("hdfs://127.0.0.1:1/a") && e.is_retryable(),
            "{e}"
        );
    }
}
