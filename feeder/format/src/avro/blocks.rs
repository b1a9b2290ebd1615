//! Framing Avro object container blocks without decoding them: a window over the file, the
//! block header (object count, byte length) and sync marker checks, resynchronisation after a
//! damaged block, and the walk over the blocks that start in a split's byte range.

use super::*;

/// Reads a zig-zag varint long; `None` when `b` ends first or it runs past 10 bytes.
pub(super) fn long(b: &[u8]) -> Option<(i64, usize)> {
    let mut v: u64 = 0;
    for (i, &x) in b.iter().enumerate().take(10) {
        v |= ((x & 0x7f) as u64) << (7 * i);
        if x & 0x80 == 0 {
            return Some((((v >> 1) as i64) ^ -((v & 1) as i64), i + 1));
        }
    }
    None
}

/// Reads through a window of the file, so a sequential walk costs few `read_at`s.
pub(super) struct Window {
    pub(super) file: Arc<dyn RandomAccess>,
    pub(super) start: u64,
    pub(super) buf: Bytes,
    pub(super) size: usize,
}

impl Window {
    pub(super) fn new(file: Arc<dyn RandomAccess>, size: usize) -> Self {
        Self {
            file,
            start: 0,
            buf: Bytes::new(),
            size,
        }
    }

    /// Up to `len` bytes at `off` (fewer at the end of the file).
    pub(super) fn get(&mut self, off: u64, len: usize) -> Result<Bytes> {
        let end = off.saturating_add(len as u64).min(self.file.len());
        if off >= self.start && end <= self.start + self.buf.len() as u64 {
            let a = (off - self.start) as usize;
            return Ok(self.buf.slice(a..a + (end - off) as usize));
        }
        let n = len.max(self.size);
        self.buf = self.file.read_seq(off, n)?;
        self.start = off;
        Ok(self
            .buf
            .slice(..(end.saturating_sub(off) as usize).min(self.buf.len())))
    }
}

/// One block, as the walk found it.
#[derive(Debug, Clone, Copy)]
pub(super) struct BlockPos {
    pub(super) offset: u64,
    pub(super) count: u64,
    /// Where its data starts (after the count and size).
    pub(super) data: u64,
    /// One past its sync marker.
    pub(super) end: u64,
}

/// Why a block could not be framed.
pub(super) enum Bad {
    /// Bad header or sync marker: resynchronise after it. With a bad sync marker after a
    /// well-formed header, where the next block would start: tried first, so that one damaged
    /// marker loses only its own block.
    Corrupt(String, Option<u64>),
    /// The file ends inside it.
    Truncated(String),
}

pub(super) fn frame_at(
    win: &mut Window,
    off: u64,
    sync: &[u8; 16],
) -> Result<std::result::Result<BlockPos, Bad>> {
    let len = win.file.len();
    let head = win.get(off, 20)?;
    let Some((count, n1)) = long(&head) else {
        return Ok(Err(if head.len() < 10 && off + head.len() as u64 == len {
            Bad::Truncated(format!(
                "file ends {} bytes into a block header",
                head.len()
            ))
        } else {
            Bad::Corrupt(
                "bad block header (object count is not a varint)".into(),
                None,
            )
        }));
    };
    let Some((size, n2)) = long(&head[n1..]) else {
        return Ok(Err(if off + head.len() as u64 == len {
            Bad::Truncated(format!(
                "file ends {} bytes into a block header",
                head.len()
            ))
        } else {
            Bad::Corrupt("bad block header (byte size is not a varint)".into(), None)
        }));
    };
    if count < 0 || size < 0 {
        return Ok(Err(Bad::Corrupt(
            format!("bad block header: object count {count}, byte size {size}"),
            None,
        )));
    }
    let end = (off + (n1 + n2) as u64)
        .saturating_add(size as u64)
        .saturating_add(16);
    if end > len {
        // A huge size from a corrupt header looks like truncation; tell them apart by whether
        // the file has a sync marker further on.
        let detail = format!(
            "block of {count} objects and {size} bytes runs to byte {end}, past the end of the {len}-byte file"
        );
        return Ok(Err(if find_sync(win, off + 1, sync)?.is_some() {
            Bad::Corrupt(detail, None)
        } else {
            Bad::Truncated(detail)
        }));
    }
    let got = win.get(end - 16, 16)?;
    if got.as_ref() != sync {
        return Ok(Err(Bad::Corrupt(
            format!(
                "sync marker mismatch at byte {} after a block of {count} objects and {size} bytes",
                end - 16
            ),
            Some(end),
        )));
    }
    Ok(Ok(BlockPos {
        offset: off,
        count: count as u64,
        data: off + (n1 + n2) as u64,
        end,
    }))
}

/// The offset of the first sync marker at or after `from`.
pub(super) fn find_sync(win: &mut Window, from: u64, sync: &[u8; 16]) -> Result<Option<u64>> {
    let len = win.file.len();
    let step = 1 << 20;
    let mut at = from;
    while at + 16 <= len {
        let chunk = win.get(at, step + 15)?;
        if let Some(i) = chunk.windows(16).position(|w| w == sync) {
            return Ok(Some(at + i as u64));
        }
        if chunk.len() < 16 {
            break;
        }
        at += (chunk.len() - 15) as u64;
    }
    Ok(None)
}

/// Walks the blocks that start in `[start, end)`.
pub(super) struct Walker {
    pub(super) win: Window,
    pub(super) sync: [u8; 16],
    pub(super) path: String,
    pub(super) split: Option<u32>,
    pub(super) off: u64,
    pub(super) end: u64,
    /// Blocks met so far (valid or not).
    pub(super) block: u64,
    pub(super) on_error: OnError,
    pub(super) skipped: SkipStats,
    pub(super) done: bool,
}

impl Walker {
    pub(super) fn new(
        file: Arc<dyn RandomAccess>,
        head: &Head,
        split: Option<u32>,
        start: u64,
        end: u64,
        on_error: OnError,
        window: usize,
    ) -> Result<Self> {
        let path = file.path().to_string();
        let mut win = Window::new(file, window);
        let sync = head.info.sync();
        let off = if start <= head.len() {
            Some(head.len())
        } else if frame_at(&mut win, start, &sync)?.is_ok() {
            // A block starts right here (a planned boundary, even one after a damaged marker).
            Some(start)
        } else {
            find_sync(&mut win, start - 16, &sync)?.map(|p| p + 16)
        };
        Ok(Self {
            win,
            sync,
            path,
            split,
            off: off.unwrap_or(u64::MAX),
            end,
            block: 0,
            on_error,
            skipped: SkipStats::default(),
            done: off.is_none(),
        })
    }

    pub(super) fn error(&self, at: u64, detail: String) -> Error {
        Error::data(
            loc(
                &self.path,
                self.split,
                Some(at),
                Some(format!("block {} at {at}", self.block)),
            ),
            FORMAT,
            detail,
        )
    }

    /// The next well-framed block, or `None` at the end of the split.
    pub(super) fn next_block(&mut self) -> Result<Option<BlockPos>> {
        loop {
            if self.done || self.off >= self.end || self.off >= self.win.file.len() {
                self.done = true;
                return Ok(None);
            }
            let at = self.off;
            match frame_at(&mut self.win, at, &self.sync)? {
                Ok(b) => {
                    self.off = b.end;
                    self.block += 1;
                    return Ok(Some(b));
                }
                Err(bad) => {
                    let (detail, truncated, next) = match bad {
                        Bad::Corrupt(d, next) => (d, false, next),
                        Bad::Truncated(d) => (format!("truncated file: {d}"), true, None),
                    };
                    let e = self.error(at, detail);
                    if self.on_error == OnError::Raise {
                        self.done = true;
                        return Err(e);
                    }
                    if self.split.is_some() {
                        tracing::warn!("skipping: {e}");
                    } else {
                        // The index pass: the split reader reports it.
                        tracing::debug!("index pass steps over: {e}");
                    }
                    self.skipped.blocks += 1;
                    self.block += 1;
                    if truncated {
                        self.done = true;
                        return Ok(None);
                    }
                    if let Some(next) = next {
                        if frame_at(&mut self.win, next, &self.sync)?.is_ok() {
                            self.off = next;
                            continue;
                        }
                    }
                    match find_sync(&mut self.win, at + 1, &self.sync)? {
                        Some(p) => self.off = p + 16,
                        None => {
                            self.done = true;
                            return Ok(None);
                        }
                    }
                }
            }
        }
    }
}

/// The index pass: every well-framed block's offset and object count. Corrupt blocks are
/// stepped over (as `OnError::Skip` would) and left to the split reader to report.
pub(super) fn index(file: &Arc<dyn RandomAccess>, head: &Head) -> Result<Vec<BlockPos>> {
    let mut w = Walker::new(file.clone(), head, None, 0, u64::MAX, OnError::Skip, 4096)?;
    let mut out = Vec::new();
    while let Some(b) = w.next_block()? {
        out.push(b);
    }
    Ok(out)
}
