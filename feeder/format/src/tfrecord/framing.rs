//! TFRecord framing: `u64 length | masked crc32c(length) | data | masked crc32c(data)`, all
//! little-endian, optionally inside one GZIP or ZLIB stream.
//!
//! [`RecordStream`] walks records of any `Read` source (a ranged local/HDFS file, or a
//! decompressor), validating BOTH checksums, and resynchronises after a corrupt header by
//! scanning for the next offset whose length CRC and data CRC validate. [`RecordWriter`] writes
//! records (our `gen`, tests, benches).

use std::io::{self, Read, Write};
use std::sync::Arc;

use hydrofeed_storage::RandomAccess;

/// Bytes of a record header (`u64` length + masked CRC of it).
pub const HEADER_LEN: usize = 12;
/// Bytes of a record footer (masked CRC of the data).
pub const FOOTER_LEN: usize = 4;
/// Largest record accepted while resynchronising a compressed stream (whose length is unknown):
/// a candidate header claiming more is taken for garbage. Uncompressed files bound it by the
/// file length instead.
pub const MAX_RESYNC_RECORD: u64 = 1 << 30;

const MASK_DELTA: u32 = 0xa282_ead8;

/// The masked CRC32C TensorFlow stores: `((crc >> 15) | (crc << 17)) + 0xa282ead8`.
pub fn masked_crc(data: &[u8]) -> u32 {
    let crc = crc32c::crc32c(data);
    crc.rotate_right(15).wrapping_add(MASK_DELTA)
}

/// Compression of a TFRecord file (`TFRecordOptions.compression_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Compression {
    /// Plain records; splittable.
    #[default]
    None,
    /// One GZIP stream (`compression_type="GZIP"`); one split per file.
    Gzip,
    /// One ZLIB stream (`compression_type="ZLIB"`); one split per file.
    Zlib,
}

impl Compression {
    /// Name as TensorFlow spells it.
    pub fn name(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Gzip => "gzip",
            Compression::Zlib => "zlib",
        }
    }

    /// Tells the compression from the first bytes of a file, then from its extension.
    ///
    /// Content wins over the name: a valid plain record header (length CRC checks) means
    /// uncompressed even in a `.gz` file; otherwise the GZIP magic `1f 8b`, otherwise a valid
    /// ZLIB header (`78 xx`, `(b0 * 256 + b1) % 31 == 0`); otherwise the extension (`.gz`,
    /// `.gzip`, `.zlib`, `.zz`); otherwise none, and the reader reports the bad header.
    pub fn detect(path: &str, head: &[u8]) -> Compression {
        if head.len() >= HEADER_LEN && header_ok(head) {
            return Compression::None;
        }
        if head.len() >= 2 && head[0] == 0x1f && head[1] == 0x8b {
            return Compression::Gzip;
        }
        if head.len() >= 2
            && head[0] & 0x0f == 8
            && (u16::from(head[0]) * 256 + u16::from(head[1])) % 31 == 0
        {
            return Compression::Zlib;
        }
        let lower = path.to_ascii_lowercase();
        if lower.ends_with(".gz") || lower.ends_with(".gzip") {
            Compression::Gzip
        } else if lower.ends_with(".zlib") || lower.ends_with(".zz") {
            Compression::Zlib
        } else {
            Compression::None
        }
    }
}

/// Whether a 12-byte header's length CRC validates.
fn header_ok(h: &[u8]) -> bool {
    let stored = u32::from_le_bytes([h[8], h[9], h[10], h[11]]);
    masked_crc(&h[..8]) == stored
}

fn header_len(h: &[u8]) -> u64 {
    u64::from_le_bytes([h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7]])
}

/// Writes TFRecord records.
pub struct RecordWriter<W: Write> {
    inner: W,
}

impl<W: Write> RecordWriter<W> {
    /// A writer of plain records into `inner` (wrap it in a flate2 encoder for GZIP/ZLIB).
    pub fn new(inner: W) -> Self {
        Self { inner }
    }

    /// Writes one record.
    pub fn write_record(&mut self, data: &[u8]) -> io::Result<()> {
        let len = (data.len() as u64).to_le_bytes();
        let mut header = [0u8; HEADER_LEN];
        header[..8].copy_from_slice(&len);
        header[8..].copy_from_slice(&masked_crc(&len).to_le_bytes());
        self.inner.write_all(&header)?;
        self.inner.write_all(data)?;
        self.inner.write_all(&masked_crc(data).to_le_bytes())
    }

    /// The inner writer.
    pub fn into_inner(self) -> W {
        self.inner
    }
}

/// Encodes one framed record into a buffer (tests, fuzzing).
pub fn frame(data: &[u8], out: &mut Vec<u8>) {
    let mut w = RecordWriter::new(out);
    // Writing into a Vec cannot fail.
    let _ = w.write_record(data);
}

/// A `Read` over `[offset, len)` of a [`RandomAccess`] file, in chunks.
pub struct RangeReader {
    file: Arc<dyn RandomAccess>,
    pos: u64,
    end: u64,
}

impl RangeReader {
    /// Reads `file` from `offset` to its end.
    pub fn new(file: Arc<dyn RandomAccess>, offset: u64) -> Self {
        let end = file.len();
        Self {
            file,
            pos: offset,
            end,
        }
    }
}

impl Read for RangeReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = (self.end.saturating_sub(self.pos)).min(buf.len() as u64) as usize;
        if n == 0 {
            return Ok(0);
        }
        let n = self
            .file
            .read_into(self.pos, &mut buf[..n])
            .map_err(io::Error::other)?;
        self.pos += n as u64;
        Ok(n)
    }
}

/// What [`RecordStream::next_record`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// A valid record: its offset (of the header) and where its data lies in [`RecordStream::buf`].
    Record {
        /// Offset of the record header in the (decompressed) stream.
        offset: u64,
        /// Start of the data in `buf()`.
        at: usize,
        /// Length of the data.
        len: usize,
    },
    /// Header valid but the data CRC did not match (the stream stays in step).
    BadData {
        /// Offset of the record header.
        offset: u64,
    },
    /// The length CRC did not match: the stream lost its framing at `offset`.
    BadHeader {
        /// Offset of the bad header.
        offset: u64,
    },
    /// The stream ended inside a record.
    Truncated {
        /// Offset of the incomplete record.
        offset: u64,
        /// What was missing.
        detail: String,
    },
    /// Clean end: no more records at or before the split end.
    End,
}

/// Walks TFRecord records of a byte stream.
pub struct RecordStream<R: Read> {
    src: R,
    buf: Vec<u8>,
    /// Bytes of `buf` that hold stream data (the rest is room read into later).
    filled: usize,
    /// Start of unconsumed bytes in `buf`.
    pos: usize,
    /// Stream offset of `buf[0]`.
    base: u64,
    eof: bool,
    /// Records starting at or after this offset are not ours.
    end: u64,
    /// Upper bound of a plausible record length (resync only).
    max_len: u64,
    chunk: usize,
}

impl<R: Read> RecordStream<R> {
    /// A stream whose first byte is at stream offset `base`; records starting at or after
    /// `end` are left to the next split.
    pub fn new(src: R, base: u64, end: u64, max_len: u64) -> Self {
        Self {
            src,
            buf: Vec::new(),
            filled: 0,
            pos: 0,
            base,
            eof: false,
            end,
            max_len,
            chunk: 4 << 20,
        }
    }

    /// Sets the read chunk size (tests use tiny chunks to cross every boundary).
    pub fn with_chunk(mut self, chunk: usize) -> Self {
        self.chunk = chunk.max(1);
        self
    }

    /// The buffer that `Event::Record::at` indexes.
    pub fn buf(&self) -> &[u8] {
        &self.buf[..self.filled]
    }

    /// Stream offset of the next unconsumed byte.
    pub fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    /// Makes at least `need` unconsumed bytes available; false if the stream ends first. The
    /// buffer is reused: bytes are read into it in place, never zeroed again.
    fn fill(&mut self, need: usize) -> io::Result<bool> {
        if self.filled - self.pos >= need {
            return Ok(true);
        }
        if self.pos > 0 {
            self.buf.copy_within(self.pos..self.filled, 0);
            self.filled -= self.pos;
            self.base += self.pos as u64;
            self.pos = 0;
        }
        while self.filled < need && !self.eof {
            // Grow in steps so that a garbage length cannot allocate a gigabyte up front.
            let want = (need - self.filled).clamp(self.chunk, self.chunk.max(64 << 20));
            let target = self.filled + want;
            if self.filled < target {
                self.buf.resize(target, 0);
            }
            while self.filled < target {
                match self.src.read(&mut self.buf[self.filled..target]) {
                    Ok(0) => {
                        self.eof = true;
                        break;
                    }
                    Ok(n) => self.filled += n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
            }
        }
        Ok(self.filled >= need)
    }

    /// The next record, corruption event, or end.
    pub fn next_record(&mut self) -> io::Result<Event> {
        let offset = self.offset();
        if offset >= self.end {
            return Ok(Event::End);
        }
        if !self.fill(HEADER_LEN)? {
            let left = self.filled - self.pos;
            if left == 0 {
                return Ok(Event::End);
            }
            self.pos = self.filled;
            return Ok(Event::Truncated {
                offset,
                detail: format!(
                    "{left} bytes where a {HEADER_LEN}-byte record header was expected"
                ),
            });
        }
        let h = &self.buf[self.pos..self.pos + HEADER_LEN];
        if !header_ok(h) {
            return Ok(Event::BadHeader { offset });
        }
        let len = header_len(h);
        let total = (HEADER_LEN as u64)
            .saturating_add(len)
            .saturating_add(FOOTER_LEN as u64);
        if len > self.max_len || total > usize::MAX as u64 / 2 {
            return Ok(Event::Truncated {
                offset,
                detail: format!("record length {len} runs past the end of the stream"),
            });
        }
        let total = total as usize;
        if !self.fill(total)? {
            let have = self.filled - self.pos;
            self.pos = self.filled;
            return Ok(Event::Truncated {
                offset,
                detail: format!("record of {len} bytes cut short: {have} of {total} bytes present"),
            });
        }
        let at = self.pos + HEADER_LEN;
        let len = len as usize;
        let data = &self.buf[at..at + len];
        let c = &self.buf[at + len..at + len + FOOTER_LEN];
        let stored = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        self.pos += total;
        if masked_crc(data) != stored {
            return Ok(Event::BadData { offset });
        }
        Ok(Event::Record { offset, at, len })
    }

    /// After a bad header: scans forward from one byte past the current position for the next
    /// offset where a whole record validates (both CRCs). Returns the bytes skipped, and leaves
    /// the stream at that record (or at end).
    pub fn resync(&mut self) -> io::Result<u64> {
        let from = self.offset();
        self.pos += 1;
        self.scan()?;
        Ok(self.offset() - from)
    }

    /// Positions the stream at the first valid record at or after the current offset (split
    /// start), or at end. Returns the bytes skipped.
    pub fn sync_here(&mut self) -> io::Result<u64> {
        let from = self.offset();
        self.scan()?;
        Ok(self.offset() - from)
    }

    fn scan(&mut self) -> io::Result<()> {
        loop {
            if self.offset() >= self.end {
                return Ok(());
            }
            if !self.fill(HEADER_LEN)? {
                self.pos = self.filled;
                return Ok(());
            }
            let h = &self.buf[self.pos..self.pos + HEADER_LEN];
            if header_ok(h) {
                let len = header_len(h);
                if len <= self.max_len {
                    let total = HEADER_LEN + len as usize + FOOTER_LEN;
                    if self.fill(total)? {
                        let at = self.pos + HEADER_LEN;
                        let data = &self.buf[at..at + len as usize];
                        let c = &self.buf[at + len as usize..at + total - HEADER_LEN];
                        if masked_crc(data) == u32::from_le_bytes([c[0], c[1], c[2], c[3]]) {
                            return Ok(());
                        }
                    }
                }
            }
            self.pos += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[allow(clippy::manual_rotate)] // spelled as TensorFlow's crc32c::Mask spells it
    fn masked_crc_matches_tensorflow() {
        // The CRC32C check value, then TensorFlow's mask.
        assert_eq!(crc32c::crc32c(b"123456789"), 0xe306_9283);
        let raw = 0xe306_9283u32;
        assert_eq!(
            masked_crc(b"123456789"),
            ((raw >> 15) | (raw << 17)).wrapping_add(0xa282ead8)
        );
    }

    #[test]
    fn walk_resync_and_truncation() {
        let mut f = Vec::new();
        frame(b"hello", &mut f);
        let second = f.len() as u64;
        frame(b"world!", &mut f);
        let third = f.len() as u64;
        frame(b"x", &mut f);
        // Corrupt the length CRC of the second record.
        f[second as usize + 9] ^= 0xff;
        let mut s = RecordStream::new(&f[..], 0, u64::MAX, 1 << 20).with_chunk(3);
        assert!(matches!(
            s.next_record().unwrap(),
            Event::Record {
                offset: 0,
                len: 5,
                ..
            }
        ));
        assert_eq!(
            s.next_record().unwrap(),
            Event::BadHeader { offset: second }
        );
        assert_eq!(s.resync().unwrap(), third - second);
        assert!(matches!(
            s.next_record().unwrap(),
            Event::Record { len: 1, .. }
        ));
        assert_eq!(s.next_record().unwrap(), Event::End);

        // Resync past a truncated last record finds nothing more.
        let cut = &f[..f.len() - 2];
        let mut s = RecordStream::new(cut, 0, u64::MAX, 1 << 20);
        s.next_record().unwrap();
        s.next_record().unwrap();
        s.resync().unwrap();
        assert_eq!(s.next_record().unwrap(), Event::End);

        let mut g = Vec::new();
        frame(b"hello", &mut g);
        frame(b"world!", &mut g);
        let mut s = RecordStream::new(&g[..g.len() - 1], 0, u64::MAX, 1 << 20);
        s.next_record().unwrap();
        assert!(matches!(
            s.next_record().unwrap(),
            Event::Truncated { offset: 21, .. }
        ));
        assert_eq!(s.next_record().unwrap(), Event::End);
    }

    #[test]
    fn detect_compression() {
        let mut f = Vec::new();
        frame(b"abc", &mut f);
        assert_eq!(Compression::detect("x.gz", &f), Compression::None);
        assert_eq!(
            Compression::detect("x", &[0x1f, 0x8b, 8, 0]),
            Compression::Gzip
        );
        assert_eq!(
            Compression::detect("x", &[0x78, 0x9c, 1, 2]),
            Compression::Zlib
        );
        assert_eq!(Compression::detect("x.zlib", &[0, 0]), Compression::Zlib);
        assert_eq!(Compression::detect("x", &[]), Compression::None);
    }
}
