//! What the Parquet, ORC and Avro readers share: third-party chunk readers over
//! [`RandomAccess`] (so every format reads local disk and HDFS alike, and only through
//! `read_at`), error locations, and the panic guard at the split-reader boundary.

use std::io::Read;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex};

use bytes::Bytes;

use crate::{Error, Result};
use hydrofeed_error::Location;
use hydrofeed_storage::RandomAccess;

/// A location in a file.
pub(crate) fn loc(
    path: &str,
    split: Option<u32>,
    offset: Option<u64>,
    unit: Option<String>,
) -> Location {
    Location {
        path: path.to_string(),
        split,
        offset,
        unit,
    }
}

/// A file behind the third-party readers' chunk-reader traits.
///
/// Storage errors cannot travel through `parquet`/`orc-rust` errors intact (they stringify
/// them), so the first one is kept here and [`StorageChunks::take_error`] hands it back: the
/// caller reports the real I/O or HDFS error, not a "data error" wrapping it.
#[derive(Clone)]
pub(crate) struct StorageChunks {
    file: Arc<dyn RandomAccess>,
    error: Arc<Mutex<Option<Error>>>,
    /// Byte ranges read ahead (`(start, bytes)`, sorted by start, not overlapping): reads
    /// inside one are zero-copy slices of it instead of `read_at` calls.
    ahead: Arc<[(u64, Bytes)]>,
}

impl StorageChunks {
    pub(crate) fn new(file: Arc<dyn RandomAccess>) -> Self {
        Self {
            file,
            error: Arc::new(Mutex::new(None)),
            ahead: Arc::new([]),
        }
    }

    /// A handle on the same file (sharing its error slot) that first reads `ranges`
    /// (`(start, len)`, one `read_at` each) and then serves every read inside them from memory.
    ///
    /// The `parquet` crate's sync reader fetches each page with two calls, a `get_read` for its
    /// header and a `get_bytes` for its body; reading the row group's column chunks whole
    /// first turns that into one `read_at` per chunk (what pyarrow's `pre_buffer` does), which
    /// also matters on HDFS where every call is a round trip.
    pub(crate) fn read_ahead(&self, ranges: &[(u64, u64)]) -> std::io::Result<Self> {
        let mut ranges = ranges.to_vec();
        ranges.sort_unstable();
        let mut ahead: Vec<(u64, Bytes)> = Vec::with_capacity(ranges.len());
        for (start, len) in ranges {
            // Skip ranges inside the previous one (overlapping chunks are not merged: a
            // well-formed file has none).
            if let Some((s, b)) = ahead.last() {
                if start < s + b.len() as u64 {
                    continue;
                }
            }
            ahead.push((start, self.read(start, len as usize)?));
        }
        Ok(Self {
            file: self.file.clone(),
            error: self.error.clone(),
            ahead: ahead.into(),
        })
    }

    /// The read-ahead range holding `offset`: its bytes from `offset` on.
    fn ahead_at(&self, offset: u64) -> Option<Bytes> {
        let i = self
            .ahead
            .partition_point(|(s, _)| *s <= offset)
            .checked_sub(1)?;
        let (start, bytes) = &self.ahead[i];
        let at = (offset - start) as usize;
        (at < bytes.len()).then(|| bytes.slice(at..))
    }

    pub(crate) fn file(&self) -> &Arc<dyn RandomAccess> {
        &self.file
    }

    /// The storage error that made the last read fail, if one did.
    pub(crate) fn take_error(&self) -> Option<Error> {
        self.error.lock().ok().and_then(|mut e| e.take())
    }

    /// Reads `len` bytes at `offset`; a short read (past the end) is an `UnexpectedEof`, which
    /// the decoders report as truncation.
    fn read(&self, offset: u64, len: usize) -> std::io::Result<Bytes> {
        if let Some(b) = self.ahead_at(offset) {
            if b.len() >= len {
                return Ok(b.slice(..len));
            }
        }
        match self.file.read_at(offset, len) {
            Ok(b) if b.len() == len => Ok(b),
            Ok(b) => Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                format!(
                    "wanted {len} bytes at offset {offset}, the {}-byte file has {}",
                    self.file.len(),
                    b.len()
                ),
            )),
            Err(e) => {
                let msg = e.to_string();
                if let Ok(mut slot) = self.error.lock() {
                    slot.get_or_insert(e);
                }
                Err(std::io::Error::other(msg))
            }
        }
    }
}

/// First `read_at` of a [`ChunkRead`]: enough for a Parquet page header, which is what the
/// `parquet` crate reads through it (then it fetches the page body with `get_bytes`).
const FIRST_CHUNK: u64 = 16 << 10;
/// Largest `read_at` of a [`ChunkRead`]; each one doubles up to this.
const MAX_CHUNK: u64 = 1 << 20;

/// A `Read` from an offset to the end of the file: from read-ahead memory when the offset is
/// in it, else fetching 16 KiB first and doubling up to 1 MiB (a 1 MiB first read cost every
/// Parquet page a wasted 1 MiB `read_at`, zeroed and copied, to parse a ~30-byte header).
pub(crate) struct ChunkRead {
    src: StorageChunks,
    pos: u64,
    buf: Bytes,
    next: u64,
}

impl ChunkRead {
    fn new(src: StorageChunks, pos: u64) -> Self {
        Self {
            src,
            pos,
            buf: Bytes::new(),
            next: FIRST_CHUNK,
        }
    }
}

impl Read for ChunkRead {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        if self.buf.is_empty() {
            if let Some(b) = self.src.ahead_at(self.pos) {
                self.pos += b.len() as u64;
                self.buf = b;
            } else {
                let left = self.src.file.len().saturating_sub(self.pos);
                if left == 0 {
                    return Ok(0);
                }
                let n = left.min(self.next) as usize;
                self.next = (self.next * 2).min(MAX_CHUNK);
                self.buf = self.src.read(self.pos, n)?;
                self.pos += n as u64;
            }
        }
        let n = out.len().min(self.buf.len());
        out[..n].copy_from_slice(&self.buf[..n]);
        let _ = self.buf.split_to(n);
        Ok(n)
    }
}

impl parquet::file::reader::Length for StorageChunks {
    fn len(&self) -> u64 {
        self.file.len()
    }
}

impl parquet::file::reader::ChunkReader for StorageChunks {
    type T = ChunkRead;

    fn get_read(&self, start: u64) -> parquet::errors::Result<ChunkRead> {
        Ok(ChunkRead::new(self.clone(), start))
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<Bytes> {
        self.read(start, length)
            .map_err(|e| parquet::errors::ParquetError::External(Box::new(e)))
    }
}

impl orc_rust::reader::ChunkReader for StorageChunks {
    type T = ChunkRead;

    fn len(&self) -> u64 {
        self.file.len()
    }

    fn get_read(&self, offset_from_start: u64) -> std::io::Result<ChunkRead> {
        Ok(ChunkRead::new(self.clone(), offset_from_start))
    }

    fn get_bytes(&self, offset_from_start: u64, length: u64) -> std::io::Result<Bytes> {
        self.read(offset_from_start, length as usize)
    }
}

/// The message of a panic payload.
fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".to_string()
    }
}

/// Runs `f`, returning a panic's message as an error (the caller names the location, which
/// it may only know after `f` ran).
pub(crate) fn catch<T>(f: impl FnOnce() -> T) -> std::result::Result<T, String> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|p| panic_message(p.as_ref()))
}

/// The message for a panic caught in a decoder.
pub(crate) fn panicked(msg: &str) -> String {
    format!("decoder panicked (corrupt input?): {msg}")
}

/// Runs `f`, turning a panic inside a third-party decoder into a `DataError` at `at`.
///
/// Decoders of untrusted bytes (parquet, orc-rust, arrow-avro) can still panic on inputs they
/// never met (slice indexing, overflow checks); one bad file must not take the feeder down.
pub(crate) fn guard<T>(
    at: impl FnOnce() -> Location,
    format: &'static str,
    f: impl FnOnce() -> Result<T>,
) -> Result<T> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(p) => {
            let msg = panic_message(p.as_ref());
            Err(Error::data(
                at(),
                format,
                format!("decoder panicked (corrupt input?): {msg}"),
            ))
        }
    }
}

/// A `Data` error for a file the plan could not open as `format` (wrong magic, truncated
/// footer, 0 bytes, not that format at all).
pub(crate) fn not_this_format(path: &str, len: u64, format: &'static str, detail: String) -> Error {
    if len == 0 {
        return Error::data(
            loc(path, None, Some(0), None),
            format,
            format!("0-byte file, not a {format} file"),
        );
    }
    Error::data(
        loc(
            path,
            None,
            Some(len.saturating_sub(8)),
            Some("footer".into()),
        ),
        format,
        detail,
    )
}

/// Checks the magic bytes a file starts with (the `parquet` and `orc-rust` crates only look
/// at the tail), so a file of another kind is named as such.
pub(crate) fn check_head_magic(
    file: &Arc<dyn RandomAccess>,
    magic: &[u8],
    format: &'static str,
) -> Result<()> {
    let len = file.len();
    if len == 0 {
        return Err(not_this_format(file.path(), 0, format, String::new()));
    }
    let head = file.read_at(0, magic.len().min(len as usize))?;
    if head.as_ref() != magic {
        return Err(Error::data(
            loc(file.path(), None, Some(0), Some("header".into())),
            format,
            format!(
                "wrong magic {:02x?} (expected {:?}): not a {format} file",
                head.as_ref(),
                String::from_utf8_lossy(magic)
            ),
        ));
    }
    Ok(())
}

/// Projects `schema` on `columns` by name, in the order given, with a `Schema` error naming
/// the columns there are.
pub(crate) fn column_indices(
    path: &str,
    schema: &arrow_schema::Schema,
    columns: &[String],
) -> Result<Vec<usize>> {
    columns
        .iter()
        .map(|c| {
            schema.index_of(c).map_err(|_| Error::Schema {
                path: path.to_string(),
                detail: format!(
                    "no column {c:?}; the columns are {:?}",
                    schema.fields().iter().map(|f| f.name()).collect::<Vec<_>>()
                ),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// An in-memory file that logs every `read_at` as `(offset, len)`.
    struct Logged {
        data: Bytes,
        reads: Mutex<Vec<(u64, usize)>>,
        calls: AtomicUsize,
    }

    impl RandomAccess for Logged {
        fn len(&self) -> u64 {
            self.data.len() as u64
        }
        fn read_at(&self, offset: u64, len: usize) -> Result<Bytes> {
            self.calls.fetch_add(1, Ordering::Relaxed);
            if let Ok(mut r) = self.reads.lock() {
                r.push((offset, len));
            }
            let lo = (offset as usize).min(self.data.len());
            let hi = (lo + len).min(self.data.len());
            Ok(self.data.slice(lo..hi))
        }
        fn path(&self) -> &str {
            "mem"
        }
    }

    fn file(n: usize) -> Arc<Logged> {
        Arc::new(Logged {
            data: (0..n).map(|i| i as u8).collect::<Vec<u8>>().into(),
            reads: Mutex::new(Vec::new()),
            calls: AtomicUsize::new(0),
        })
    }

    #[test]
    fn chunk_read_starts_small_and_doubles() {
        let f = file(300 << 10);
        let chunks = StorageChunks::new(f.clone());
        let mut r = ChunkRead::new(chunks, 10);
        let mut head = [0u8; 32];
        r.read_exact(&mut head).unwrap();
        assert_eq!(head[0], 10);
        assert_eq!(*f.reads.lock().unwrap(), vec![(10, 16 << 10)]);
        let mut rest = Vec::new();
        r.read_to_end(&mut rest).unwrap();
        assert_eq!(rest.len(), (300 << 10) - 10 - 32);
        let lens: Vec<usize> = f.reads.lock().unwrap().iter().map(|r| r.1).collect();
        assert_eq!(&lens[..4], &[16 << 10, 32 << 10, 64 << 10, 128 << 10]);
    }

    #[test]
    fn read_ahead_serves_reads_inside_its_ranges_without_read_at() {
        let f = file(10_000);
        let base = StorageChunks::new(f.clone());
        let ahead = base.read_ahead(&[(5000, 1000), (100, 400)]).unwrap();
        assert_eq!(f.calls.load(Ordering::Relaxed), 2);
        // Inside a range: a zero-copy slice, no read_at.
        let b = ahead.read(150, 50).unwrap();
        assert_eq!(b[0], 150u8);
        assert_eq!(b.len(), 50);
        let b = ahead.read(5999, 1).unwrap();
        assert_eq!(b[0], (5999 % 256) as u8);
        let mut r = ChunkRead::new(ahead.clone(), 5500);
        let mut got = [0u8; 500];
        r.read_exact(&mut got).unwrap();
        assert_eq!(got[0], (5500 % 256) as u8);
        assert_eq!(f.calls.load(Ordering::Relaxed), 2);
        // Past a range's end or outside every range: read from the file.
        let b = ahead.read(450, 100).unwrap();
        assert_eq!(b[0], (450 % 256) as u8);
        assert_eq!(b.len(), 100);
        assert_eq!(ahead.read(0, 10).unwrap()[9], 9);
        assert_eq!(f.calls.load(Ordering::Relaxed), 4);
        // A read past the end of the file is still a short-read error.
        assert!(ahead.read(9_990, 20).is_err());
    }
}
