//! Opened HDFS files: [`HdfsFile`] keeps the `FileReader` (block list fetched once, at open)
//! and serves [`RandomAccess::read_at`] as exactly the ranged DataNode reads asked for, and
//! [`RandomAccess::read_seq`] (Avro, TFRecord walks) with the next range of the same length
//! fetched in the background once the reader proved sequential. The DataNodes send what the
//! readers use: a 4 MiB window behind every small read made them send 3x a whole read's
//! bytes, and half the input for footers alone.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;

use super::map_hdfs;
use super::runtime::Task;
use crate::{Error, RandomAccess, Result};

/// One opened HDFS file: the NameNode's block list is fetched once, at open.
pub(super) struct HdfsFile {
    pub(super) path: String,
    pub(super) reader: Arc<hdfs_native::file::FileReader>,
    pub(super) len: u64,
    pub(super) timeout: Duration,
    pub(super) read_ahead: usize,
    pub(super) state: Mutex<ReadAhead>,
}

/// Read-ahead state of [`RandomAccess::read_seq`]. A sequential read starting in (or right
/// at the end of) the current window fetches the one after it in the background, so the
/// DataNode transfer overlaps the caller's decoding. [`RandomAccess::read_at`] (Parquet
/// footers, column chunks) never triggers a background fetch.
#[derive(Default)]
pub(super) struct ReadAhead {
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

    /// A background window at `offset` of `want` bytes, at most the read-ahead and the rest of
    /// the file.
    fn window_len(&self, offset: u64, want: usize) -> usize {
        (want.min(self.read_ahead) as u64).min(self.len - offset) as usize
    }
}

impl HdfsFile {
    /// `[offset, end)` from the current window or the background one (waiting for it when it
    /// is in flight and covers the range); the background window becomes the current one and,
    /// for a sequential reader (`follow`), the next is fetched. `None`: a miss.
    fn hit(&self, offset: u64, end: u64, follow: bool) -> Result<Option<Bytes>> {
        let n = (end - offset) as usize;
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((start, bytes)) = &st.window {
            if offset >= *start && end <= start + bytes.len() as u64 {
                let a = (offset - start) as usize;
                return Ok(Some(bytes.slice(a..a + n)));
            }
        }
        let cur = st.window.as_ref().map(|(s, b)| (*s, *s + b.len() as u64));
        // The background window serves this read when the read lies in it, or starts in the
        // current window and ends in it (a read straddling the window boundary).
        let Some((ns, nl, task)) = st.next.take() else {
            return Ok(None);
        };
        let nend = ns + nl as u64;
        let straddles = cur.is_some_and(|(s, e)| offset >= s && offset < e && e == ns);
        if !(end <= nend && (offset >= ns || straddles)) {
            st.next = Some((ns, nl, task));
            return Ok(None);
        }
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
        if follow && nend < self.len && self.read_ahead > 0 {
            let l = self.window_len(nend, nl);
            st.next = Some((nend, l, self.read_task(nend, l)?));
        }
        Ok(Some(out))
    }

    /// The range `[offset, offset + len)` clipped to the file: `None` when empty.
    fn clip(&self, offset: u64, len: usize) -> Option<u64> {
        // hdfs-native panics on a range past the end: clip first.
        let end = offset.saturating_add(len as u64).min(self.len);
        (end > offset).then_some(end)
    }
}

impl RandomAccess for HdfsFile {
    fn len(&self) -> u64 {
        self.len
    }

    /// Exactly the bytes asked for: one DataNode range per block, nothing read ahead (a
    /// Parquet column chunk or footer costs its own bytes), unless a window a sequential
    /// reader fetched holds them.
    fn read_at(&self, offset: u64, len: usize) -> Result<Bytes> {
        let Some(end) = self.clip(offset, len) else {
            return Ok(Bytes::new());
        };
        if let Some(b) = self.hit(offset, end, false)? {
            return Ok(b);
        }
        self.fetch(offset, (end - offset) as usize)
    }

    /// A sequential reader's next range: fetched exactly, and once the reader proved
    /// sequential (this read starts where its last one ended) the range after it, of the same
    /// length (at most the read-ahead), in the background, so the DataNode transfer overlaps
    /// the caller's decoding. What a walk that stops leaves fetched is that one range.
    fn read_seq(&self, offset: u64, len: usize) -> Result<Bytes> {
        let Some(end) = self.clip(offset, len) else {
            return Ok(Bytes::new());
        };
        if let Some(b) = self.hit(offset, end, true)? {
            return Ok(b);
        }
        let n = (end - offset) as usize;
        let sequential = {
            let st = self.state.lock().unwrap_or_else(|p| p.into_inner());
            st.window
                .as_ref()
                .is_some_and(|(s, b)| offset >= *s && offset <= *s + b.len() as u64)
        };
        // Fetch without the lock: other threads keep reading their ranges meanwhile.
        let bytes = self.fetch(offset, n)?;
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((_, _, t)) = st.next.take() {
            t.handle.abort();
        }
        st.window = Some((offset, bytes.clone()));
        if sequential && end < self.len && self.read_ahead > 0 {
            let l = self.window_len(end, n);
            st.next = Some((end, l, self.read_task(end, l)?));
        }
        Ok(bytes)
    }

    fn path(&self) -> &str {
        &self.path
    }
}
