//! The fixed 64-byte [`FrameHeader`] in front of every frame (layout, serialisation, the
//! checks of [`FrameHeader::parse`]), the [`FrameMeta`] a producer fills in, and the lineage
//! trailer after the payload: the [`Piece`]s of leases a batch frame holds.

use super::{FrameError, FrameKind, HEADER_LEN, MAGIC, NO_SPLIT, PIECE_LEN, VERSION};

/// Rows of one lease in a batch frame: the frame holds the next `rows` rows of `lease` (rows
/// of one lease come in order). A frame's pieces are its lineage. Summed per lease, they are
/// also what a trainer reports to a restarted feeder ([`Control::Rejoin`](crate::Control))
/// and the coordinator counts on rejoin.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Piece {
    /// The coordinator's lease id.
    pub lease: u64,
    /// The lease's split.
    pub split: u32,
    /// Rows of the lease in this frame.
    pub rows: u64,
}

/// The lineage trailer of `frame` (a whole slot whose header [`FrameHeader::parse`] checked):
/// the pieces the producer attached with [`Encoded::with_lineage`](super::Encoded::with_lineage), empty if none.
pub fn lineage(frame: &[u8], h: &FrameHeader) -> Vec<Piece> {
    let at = HEADER_LEN + h.payload_len as usize;
    let n = h.lineage as usize;
    let Some(t) = frame.get(at..at + n * PIECE_LEN) else {
        return Vec::new();
    };
    t.chunks_exact(PIECE_LEN)
        .map(|c| Piece {
            lease: u64::from_le_bytes(c[0..8].try_into().unwrap_or_default()),
            split: u32::from_le_bytes(c[8..12].try_into().unwrap_or_default()),
            rows: u64::from_le_bytes(c[12..20].try_into().unwrap_or_default()),
        })
        .collect()
}

/// The fixed header in front of every frame. Plain bytes, no pointers, little-endian fields
/// (the ring never crosses machines).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameHeader {
    /// [`MAGIC`].
    pub magic: [u8; 4],
    /// [`VERSION`].
    pub version: u16,
    /// [`FrameKind`] as `u16`.
    pub kind: u16,
    /// Epoch (0-based).
    pub epoch: u32,
    /// Split id, or [`NO_SPLIT`].
    pub split: u32,
    /// Sequence number of the frame in the stream (0-based, no gaps).
    pub seq: u64,
    /// Rows of a batch (or rows of the split/epoch/feed for end markers).
    pub rows: u64,
    /// Bytes of payload after the header.
    pub payload_len: u64,
    /// [`ErrorCode`](super::ErrorCode) of an `Error` frame, 0 otherwise.
    pub code: u32,
    /// Reserved, zero.
    pub flags: u32,
    /// Number of [`Piece`]s in the lineage trailer after the payload (0: none).
    pub lineage: u32,
    /// Reserved, zero.
    pub reserved: [u8; 12],
}

const _: () = assert!(std::mem::size_of::<FrameHeader>() == HEADER_LEN);

/// Where a frame sits in the feed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FrameMeta {
    /// Epoch.
    pub epoch: u32,
    /// Split id, or [`NO_SPLIT`].
    pub split: u32,
    /// Sequence number.
    pub seq: u64,
    /// Rows.
    pub rows: u64,
}

impl FrameHeader {
    pub(super) fn new(kind: FrameKind, meta: FrameMeta, payload_len: u64, code: u32) -> Self {
        Self {
            magic: MAGIC,
            version: VERSION,
            kind: kind as u16,
            epoch: meta.epoch,
            split: meta.split,
            seq: meta.seq,
            rows: meta.rows,
            payload_len,
            code,
            flags: 0,
            lineage: 0,
            reserved: [0; 12],
        }
    }

    /// The header as bytes.
    pub fn to_bytes(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        b[0..4].copy_from_slice(&self.magic);
        b[4..6].copy_from_slice(&self.version.to_le_bytes());
        b[6..8].copy_from_slice(&self.kind.to_le_bytes());
        b[8..12].copy_from_slice(&self.epoch.to_le_bytes());
        b[12..16].copy_from_slice(&self.split.to_le_bytes());
        b[16..24].copy_from_slice(&self.seq.to_le_bytes());
        b[24..32].copy_from_slice(&self.rows.to_le_bytes());
        b[32..40].copy_from_slice(&self.payload_len.to_le_bytes());
        b[40..44].copy_from_slice(&self.code.to_le_bytes());
        b[44..48].copy_from_slice(&self.flags.to_le_bytes());
        b[48..52].copy_from_slice(&self.lineage.to_le_bytes());
        b[52..64].copy_from_slice(&self.reserved);
        b
    }

    /// Parses and checks a header (magic, version, kind, payload length against `frame_len`).
    pub fn parse(buf: &[u8]) -> Result<Self, FrameError> {
        if buf.len() < HEADER_LEN {
            return Err(FrameError::Corrupt(format!(
                "frame of {} bytes is shorter than its {HEADER_LEN}-byte header",
                buf.len()
            )));
        }
        let u16_at = |i: usize| u16::from_le_bytes([buf[i], buf[i + 1]]);
        let u32_at = |i: usize| u32::from_le_bytes(buf[i..i + 4].try_into().unwrap_or([0; 4]));
        let u64_at = |i: usize| u64::from_le_bytes(buf[i..i + 8].try_into().unwrap_or([0; 8]));
        let mut magic = [0u8; 4];
        magic.copy_from_slice(&buf[0..4]);
        if magic != MAGIC {
            return Err(FrameError::Corrupt(format!(
                "bad frame magic {magic:02x?} (expected {MAGIC:02x?})"
            )));
        }
        let version = u16_at(4);
        if version != VERSION {
            return Err(FrameError::Version(version));
        }
        let mut reserved = [0u8; 12];
        reserved.copy_from_slice(&buf[52..64]);
        let h = Self {
            magic,
            version,
            kind: u16_at(6),
            epoch: u32_at(8),
            split: u32_at(12),
            seq: u64_at(16),
            rows: u64_at(24),
            payload_len: u64_at(32),
            code: u32_at(40),
            flags: u32_at(44),
            lineage: u32_at(48),
            reserved,
        };
        if FrameKind::from_u16(h.kind).is_none() {
            return Err(FrameError::Corrupt(format!(
                "unknown frame kind {}",
                h.kind
            )));
        }
        if h.payload_len > (buf.len() - HEADER_LEN) as u64 {
            return Err(FrameError::Corrupt(format!(
                "frame header says {} payload bytes but the frame holds {}",
                h.payload_len,
                buf.len() - HEADER_LEN
            )));
        }
        // Checked here, once: the lineage trailer lies inside the frame.
        let trailer = u64::from(h.lineage) * PIECE_LEN as u64;
        if trailer > (buf.len() - HEADER_LEN) as u64 - h.payload_len {
            return Err(FrameError::Corrupt(format!(
                "frame header says {} lineage pieces after {} payload bytes but the frame holds {}",
                h.lineage,
                h.payload_len,
                buf.len() - HEADER_LEN
            )));
        }
        Ok(h)
    }

    /// How errors name the frame: sequence number, epoch and split.
    pub fn name(&self) -> String {
        let split = if self.split == NO_SPLIT {
            String::new()
        } else {
            format!(", split {}", self.split)
        };
        format!("frame {} (epoch {}{split})", self.seq, self.epoch)
    }

    /// The kind (checked by [`FrameHeader::parse`]).
    pub fn kind(&self) -> Option<FrameKind> {
        FrameKind::from_u16(self.kind)
    }

    /// The meta fields.
    pub fn meta(&self) -> FrameMeta {
        FrameMeta {
            epoch: self.epoch,
            split: self.split,
            seq: self.seq,
            rows: self.rows,
        }
    }
}
