//! Opened HDFS files: [`HdfsFile`] keeps the `FileReader` (block list fetched once, at open)
//! and serves [`RandomAccess::read_at`] as ranged DataNode reads, small ones through a
//! read-ahead window with the next window fetched in the background for sequential readers.

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

/// Read-ahead state. A miss right at the end of the current window means the reader is
/// sequential: the window after the new one is then fetched in the background, so the
/// DataNode transfer overlaps the caller's decoding. Random access (Parquet footers, column
/// chunks) never triggers a background fetch.
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
