//! Storage: one trait over local files and HDFS.
//!
//! [`open_storage`] picks the backend from a path or URI (`/data`, `file:///data`,
//! `hdfs://nn:9000/data`, `viewfs://cluster/data`).

use std::sync::Arc;

use bytes::Bytes;

pub use hydrofeed_error::{Error, Location, Result};

pub mod hdfs;
pub mod local;
pub mod metered;

/// Metadata of one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileStatus {
    /// Full path or URI, usable with [`Storage::open`].
    pub path: String,
    /// Length in bytes.
    pub len: u64,
    /// Whether this is a directory.
    pub is_dir: bool,
    /// Last modification, milliseconds since the Unix epoch, where the backend tells it
    /// (part of a resumed job's input fingerprint).
    pub modified_ms: Option<u64>,
}

/// Hosts that hold a byte range of a file (HDFS block locations).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockLocation {
    /// First byte of the block.
    pub offset: u64,
    /// Block length.
    pub len: u64,
    /// Host names holding a replica.
    pub hosts: Vec<String>,
}

/// A file opened for ranged reads. Cheap to share between threads.
pub trait RandomAccess: Send + Sync {
    /// File length in bytes.
    fn len(&self) -> u64;
    /// Whether the file is empty.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Reads exactly `len` bytes at `offset` (fewer only at end of file). Storage fetches
    /// these bytes and no more (HDFS: one DataNode range per block, nothing read ahead), so a
    /// reader that knows its ranges (Parquet column chunks, ORC streams, footers) costs its
    /// input once.
    fn read_at(&self, offset: u64, len: usize) -> Result<Bytes>;
    /// [`RandomAccess::read_at`] for a reader that walks the file in order (Avro blocks,
    /// TFRecord records): storage may fetch the next range of the same length in the
    /// background while the caller decodes this one (HDFS does), so the transfer overlaps the
    /// work. At most one such range is fetched beyond where the walk stops.
    fn read_seq(&self, offset: u64, len: usize) -> Result<Bytes> {
        self.read_at(offset, len)
    }
    /// Reads `buf.len()` bytes at `offset` into `buf` (fewer only at end of file) and returns
    /// how many: for streaming readers that refill a buffer of their own. The default goes
    /// through [`RandomAccess::read_seq`]; local files read straight into `buf`.
    fn read_into(&self, offset: u64, buf: &mut [u8]) -> Result<usize> {
        let b = self.read_seq(offset, buf.len())?;
        let n = b.len().min(buf.len());
        buf[..n].copy_from_slice(&b[..n]);
        Ok(n)
    }
    /// The path, for error messages.
    fn path(&self) -> &str;
}

/// A file system: local disk or HDFS.
pub trait Storage: Send + Sync {
    /// Status of one path.
    fn stat(&self, path: &str) -> Result<FileStatus>;
    /// Direct children of a directory.
    fn list(&self, dir: &str) -> Result<Vec<FileStatus>>;
    /// Opens a file for ranged reads.
    fn open(&self, path: &str) -> Result<Arc<dyn RandomAccess>>;
    /// Block locations of a file (one entry covering the file for local disk).
    fn block_locations(&self, path: &str) -> Result<Vec<BlockLocation>>;
    /// Scheme name: "file", "hdfs", "viewfs".
    fn scheme(&self) -> &'static str;
}

/// Opens the storage for a path or URI.
pub fn open_storage(uri: &str) -> Result<Arc<dyn Storage>> {
    match uri.split_once("://").map(|(s, _)| s) {
        None | Some("file") => Ok(Arc::new(local::LocalStorage)),
        Some("hdfs") | Some("viewfs") => open_hdfs(uri),
        Some(other) => Err(crate::Error::InvalidArgument(format!(
            "{uri}: unsupported scheme {other:?} (expected a local path, file://, hdfs:// or viewfs://)"
        ))),
    }
}

/// One [`hdfs::HdfsStorage`] per `scheme://authority` (and the user, configuration directory
/// and Kerberos login the environment names), so that every caller shares the NameNode and
/// DataNode connections.
fn open_hdfs(uri: &str) -> Result<Arc<dyn Storage>> {
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock};
    static CACHE: OnceLock<Mutex<HashMap<String, Arc<hdfs::HdfsStorage>>>> = OnceLock::new();
    let (scheme, rest) = uri.split_once("://").unwrap_or(("hdfs", uri));
    let authority = rest.split('/').next().unwrap_or("");
    let env = |k: &str| std::env::var(k).unwrap_or_default();
    let key = format!(
        "{scheme}://{authority} {} {} {} {}",
        env("HADOOP_USER_NAME"),
        env("HADOOP_CONF_DIR"),
        env(hdfs::PRINCIPAL_ENV),
        env(hdfs::KEYTAB_ENV)
    );
    let mut cache = CACHE
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    if let Some(s) = cache.get(&key) {
        return Ok(s.clone());
    }
    let s = Arc::new(hdfs::HdfsStorage::new(uri)?);
    cache.insert(key, s.clone());
    Ok(s)
}
