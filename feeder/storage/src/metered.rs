//! A storage whose every read is told to a [`Meter`]: the bytes it returned and how long it
//! blocked. The feeder counts each rank's reads with it (bytes from storage, the `reading`
//! stage); `hydrofeed bench order` the bytes an order reads.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;

use crate::{BlockLocation, FileStatus, RandomAccess, Result, Storage};

/// Told of every read of a [`metered`] storage.
pub trait Meter: Send + Sync {
    /// A file is opened for reading.
    fn opened(&self, _path: &str) {}
    /// A read starts.
    fn started(&self) {}
    /// A read that returned `bytes` bytes (0 when it failed) ended after `took`.
    fn ended(&self, bytes: u64, took: Duration);
}

/// A [`Meter`] that adds up the bytes read.
#[derive(Debug, Default)]
pub struct ByteCount(AtomicU64);

impl ByteCount {
    /// Bytes read so far.
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

impl Meter for ByteCount {
    fn ended(&self, bytes: u64, _took: Duration) {
        self.0.fetch_add(bytes, Ordering::Relaxed);
    }
}

/// `storage` with every read told to `meter`.
pub fn metered(storage: &Arc<dyn Storage>, meter: Arc<dyn Meter>) -> Arc<dyn Storage> {
    Arc::new(Metered {
        inner: storage.clone(),
        meter,
    })
}

struct Metered {
    inner: Arc<dyn Storage>,
    meter: Arc<dyn Meter>,
}

struct MeteredFile {
    inner: Arc<dyn RandomAccess>,
    meter: Arc<dyn Meter>,
}

impl Storage for Metered {
    fn stat(&self, path: &str) -> Result<FileStatus> {
        self.inner.stat(path)
    }
    fn list(&self, dir: &str) -> Result<Vec<FileStatus>> {
        self.inner.list(dir)
    }
    fn open(&self, path: &str) -> Result<Arc<dyn RandomAccess>> {
        self.meter.opened(path);
        Ok(Arc::new(MeteredFile {
            inner: self.inner.open(path)?,
            meter: self.meter.clone(),
        }))
    }
    fn block_locations(&self, path: &str) -> Result<Vec<BlockLocation>> {
        self.inner.block_locations(path)
    }
    fn scheme(&self) -> &'static str {
        self.inner.scheme()
    }
}

impl MeteredFile {
    /// Runs one storage call, telling the meter its time and the bytes `n` says it read.
    fn metered<T>(&self, call: impl FnOnce() -> Result<T>, n: impl FnOnce(&T) -> u64) -> Result<T> {
        let t0 = Instant::now();
        self.meter.started();
        let r = call();
        let bytes = r.as_ref().map_or(0, n);
        self.meter.ended(bytes, t0.elapsed());
        r
    }
}

impl RandomAccess for MeteredFile {
    fn len(&self) -> u64 {
        self.inner.len()
    }
    fn read_at(&self, offset: u64, len: usize) -> Result<Bytes> {
        self.metered(|| self.inner.read_at(offset, len), |b| b.len() as u64)
    }
    fn read_seq(&self, offset: u64, len: usize) -> Result<Bytes> {
        self.metered(|| self.inner.read_seq(offset, len), |b| b.len() as u64)
    }
    fn read_into(&self, offset: u64, buf: &mut [u8]) -> Result<usize> {
        // The inner file's own (local files: straight into `buf`), metered the same way.
        self.metered(|| self.inner.read_into(offset, buf), |n| *n as u64)
    }
    fn path(&self) -> &str {
        self.inner.path()
    }
}
