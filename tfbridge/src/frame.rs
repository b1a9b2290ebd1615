//! Frames: a fixed 64-byte [`FrameHeader`] followed by a payload.
//!
//! Payload by [`FrameKind`]:
//! - `Schema`: Arrow IPC stream messages: the schema message (and an empty record batch, which
//!   the decoder ignores). Sent once per stream, before any batch.
//! - `Batch`: Arrow IPC messages: dictionary batches (if any) then one record batch message.
//! - `EndOfSplit`, `EndOfEpoch`, `EndOfFeed`: no payload (`rows` may carry a count).
//! - `Error`: a UTF-8 message; `code` says which kind of error it is ([`ErrorCode`]).
//!
//! Every IPC message is written with `IpcWriteOptions` alignment 64, and the header is 64 bytes,
//! so in a 64-byte aligned slot every Arrow buffer starts 64-byte aligned: numpy, TF and torch
//! take them as they are. The decoder asks for aligned buffers (`require_alignment`), so a
//! misaligned frame is an error rather than a silent copy.
//!
//! Producer side: [`FrameEncoder::batch`] returns an [`Encoded`] frame whose parts still point
//! at the batch's own buffers; [`Encoded::len`] is known before anything is copied, so the
//! producer reserves exactly that many bytes in the ring and [`Encoded::write_to`] copies the
//! data once, into the reservation.
//!
//! Consumer side: [`owned_buffer`] wraps a ring lease (anything that derefs to bytes and owns
//! them) into an Arrow [`Buffer`] without copying; [`FrameDecoder::decode`] slices the arrays
//! out of it. Every array keeps the lease alive until the last view of it is dropped.

use std::collections::HashMap;
use std::ops::Deref;
use std::panic::RefUnwindSafe;
use std::ptr::NonNull;
use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch};
use arrow_buffer::Buffer;
use arrow_data::ArrayData;
use arrow_ipc::convert::fb_to_schema;
use arrow_ipc::reader::{read_dictionary, RecordBatchDecoder};
use arrow_ipc::writer::{IpcWriteOptions, StreamEncoder};
use arrow_ipc::{root_as_message, MessageHeader, MetadataVersion};
use arrow_schema::{ArrowError, DataType, Schema, SchemaRef};

/// `b"HFFR"`: hydrofeed frame.
pub const MAGIC: [u8; 4] = *b"HFFR";
/// Layout version of [`FrameHeader`]; a reader refuses any other.
pub const VERSION: u16 = 1;
/// Bytes of the header, and the alignment of every Arrow buffer in a frame.
pub const HEADER_LEN: usize = 64;
/// Alignment the IPC messages are written with.
pub const ALIGN: usize = 64;
/// `split` of a frame that belongs to no split.
pub const NO_SPLIT: u32 = u32::MAX;
/// Bytes of one [`Piece`] in a lineage trailer.
pub const PIECE_LEN: usize = 20;

/// Rows of one lease in a batch frame: the frame holds the next `rows` rows of `lease` (rows
/// of one lease come in order). A frame's pieces are its lineage.
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
/// the pieces the producer attached with [`Encoded::with_lineage`], empty if none.
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

/// What a frame carries.
#[repr(u16)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FrameKind {
    /// The stream's Arrow schema.
    Schema = 1,
    /// One record batch.
    Batch = 2,
    /// The split named in the header is done.
    EndOfSplit = 3,
    /// The epoch named in the header is done.
    EndOfEpoch = 4,
    /// Nothing more will come.
    EndOfFeed = 5,
    /// The producer failed; the payload is a UTF-8 message.
    Error = 6,
}

impl FrameKind {
    fn from_u16(v: u16) -> Option<Self> {
        Some(match v {
            1 => Self::Schema,
            2 => Self::Batch,
            3 => Self::EndOfSplit,
            4 => Self::EndOfEpoch,
            5 => Self::EndOfFeed,
            6 => Self::Error,
            _ => return None,
        })
    }
}

/// Which kind of error an `Error` frame reports (so the trainer raises the right exception).
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    /// Anything else (internal errors).
    Other = 0,
    /// Corrupt or unreadable input: the message names file, split and byte offset.
    Data = 1,
    /// Schema mismatch or a missing column.
    Schema = 2,
    /// A file does not exist.
    NotFound = 3,
    /// Access to a file was refused.
    PermissionDenied = 4,
    /// An I/O error.
    Io = 5,
    /// A wait timed out on the producer side.
    Timeout = 6,
    /// Bad argument (e.g. the batch size the trainer asked for).
    InvalidArgument = 7,
}

impl ErrorCode {
    /// The code of a raw value (unknown values are `Other`).
    pub fn from_u32(v: u32) -> Self {
        match v {
            1 => Self::Data,
            2 => Self::Schema,
            3 => Self::NotFound,
            4 => Self::PermissionDenied,
            5 => Self::Io,
            6 => Self::Timeout,
            7 => Self::InvalidArgument,
            _ => Self::Other,
        }
    }
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
    /// [`ErrorCode`] of an `Error` frame, 0 otherwise.
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
    fn new(kind: FrameKind, meta: FrameMeta, payload_len: u64, code: u32) -> Self {
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

/// Errors of encoding and decoding frames.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    /// The bytes are not a valid frame.
    #[error("corrupt frame: {0}")]
    Corrupt(String),
    /// A frame of another layout version.
    #[error("frame layout version {0} is not supported (this build reads {VERSION})")]
    Version(u16),
    /// A batch arrived before the stream's schema.
    #[error("batch frame before the schema frame")]
    NoSchema,
    /// Arrow could not encode or decode.
    #[error("arrow ipc: {0}")]
    Arrow(#[from] ArrowError),
    /// A dictionary is larger than the ring's largest frame: it can never be sent.
    #[error(
        "the dictionary of column \"{column}\" is {bytes} bytes, larger than the ring's largest \
         frame ({max_frame} bytes); a dictionary travels whole in one frame: make the ring \
         larger or read the column without dictionary encoding"
    )]
    DictionaryTooLarge {
        /// The column (a dotted path for a nested one; several are comma-separated when only
        /// their sum is too large).
        column: String,
        /// Bytes of its dictionary values.
        bytes: usize,
        /// The largest frame the ring takes.
        max_frame: usize,
    },
    /// [`FrameEncoder::commit`] of a frame that is not the latest encoded batch frame.
    #[error("only the latest encoded batch frame can be committed, once")]
    NotLatest,
    /// The destination slice has the wrong length.
    #[error("frame needs {need} bytes, got a slot of {got}")]
    Size {
        /// Bytes the frame needs.
        need: usize,
        /// Bytes given.
        got: usize,
    },
}

/// A frame ready to be copied into a ring slot: header plus payload parts that still point at
/// the source batch's buffers.
#[derive(Debug, Clone)]
pub struct Encoded {
    header: FrameHeader,
    parts: Vec<Buffer>,
    inline: Vec<u8>,
    /// The lineage trailer (`header.lineage` pieces), after the payload.
    trailer: Vec<u8>,
    /// Which [`FrameEncoder::batch`] call made it (0: not a batch frame).
    token: u64,
}

impl Encoded {
    /// Total bytes of the frame (header + payload + lineage trailer).
    pub fn len(&self) -> usize {
        HEADER_LEN + self.header.payload_len as usize + self.trailer.len()
    }

    /// Attaches the frame's lineage: which rows of which leases it holds, in order. The
    /// trainer reads it back with [`lineage`] and reports it when it re-attaches to a
    /// restarted feeder, so rows it consumed after its last ack are not fed again.
    pub fn with_lineage(mut self, pieces: &[Piece]) -> Self {
        self.trailer = Vec::with_capacity(pieces.len() * PIECE_LEN);
        for p in pieces {
            self.trailer.extend_from_slice(&p.lease.to_le_bytes());
            self.trailer.extend_from_slice(&p.split.to_le_bytes());
            self.trailer.extend_from_slice(&p.rows.to_le_bytes());
        }
        self.header.lineage = pieces.len() as u32;
        self
    }

    /// Always false (a frame holds at least its header).
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The header.
    pub fn header(&self) -> &FrameHeader {
        &self.header
    }

    /// Copies the frame into `dst`, which must be exactly [`Encoded::len`] bytes. This is the
    /// one copy of the producer side.
    pub fn write_to(&self, dst: &mut [u8]) -> Result<(), FrameError> {
        if dst.len() != self.len() {
            return Err(FrameError::Size {
                need: self.len(),
                got: dst.len(),
            });
        }
        dst[..HEADER_LEN].copy_from_slice(&self.header.to_bytes());
        let mut at = HEADER_LEN;
        for p in &self.parts {
            dst[at..at + p.len()].copy_from_slice(p.as_slice());
            at += p.len();
        }
        dst[at..at + self.inline.len()].copy_from_slice(&self.inline);
        at += self.inline.len();
        dst[at..at + self.trailer.len()].copy_from_slice(&self.trailer);
        Ok(())
    }

    /// The frame as one vector (tests, tools; costs a copy).
    pub fn to_vec(&self) -> Vec<u8> {
        let mut v = vec![0u8; self.len()];
        // Cannot fail: the length is right.
        let _ = self.write_to(&mut v);
        v
    }
}

/// Encodes one stream: the schema frame, then batch frames.
///
/// Dictionaries travel in the batch frames, each one only when it differs from the one the
/// reader holds. Encoding is transactional: a batch frame counts as delivered, and its
/// dictionaries as held by the reader, only once [`FrameEncoder::commit`] says it was put
/// into the ring. A frame that is dropped instead (a producer that splits a batch too large
/// for the ring) changes nothing; the next frame carries every dictionary the reader may lack.
pub struct FrameEncoder {
    schema: SchemaRef,
    inner: StreamEncoder,
    /// Whether any column holds a dictionary (else there is no state to keep).
    has_dicts: bool,
    /// The batch of the last committed frame, zero rows: its dictionaries are the reader's.
    committed: RecordBatch,
    /// The latest encoded batch frame not committed yet: its token and batch (zero rows).
    pending: Option<(u64, RecordBatch)>,
    /// `inner` recorded dictionaries of a frame that was not committed: rebuild it from
    /// `committed` before the next frame.
    ahead: bool,
    next_token: u64,
}

impl std::fmt::Debug for FrameEncoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FrameEncoder")
            .field("schema", &self.schema)
            .field("ahead", &self.ahead)
            .finish()
    }
}

fn write_options() -> Result<IpcWriteOptions, ArrowError> {
    IpcWriteOptions::try_new(ALIGN, false, MetadataVersion::V5)
}

fn has_dictionary(dt: &DataType) -> bool {
    match dt {
        DataType::Dictionary(..) => true,
        DataType::List(f)
        | DataType::LargeList(f)
        | DataType::ListView(f)
        | DataType::LargeListView(f)
        | DataType::FixedSizeList(f, _)
        | DataType::Map(f, _) => has_dictionary(f.data_type()),
        DataType::Struct(fs) => fs.iter().any(|f| has_dictionary(f.data_type())),
        DataType::Union(fs, _) => fs.iter().any(|(_, f)| has_dictionary(f.data_type())),
        DataType::RunEndEncoded(_, v) => has_dictionary(v.data_type()),
        _ => false,
    }
}

/// `(column path, bytes of its dictionary values)` of every dictionary in `data` (of type
/// `dt`), nested ones included.
fn dictionary_sizes(path: &str, dt: &DataType, data: &ArrayData, out: &mut Vec<(String, usize)>) {
    let children: Vec<(String, &DataType)> = match dt {
        DataType::Dictionary(_, values) => {
            if let Some(v) = data.child_data().first() {
                let bytes = v
                    .get_slice_memory_size()
                    .unwrap_or_else(|_| v.get_buffer_memory_size());
                out.push((path.to_string(), bytes));
                dictionary_sizes(path, values, v, out);
            }
            return;
        }
        DataType::List(f)
        | DataType::LargeList(f)
        | DataType::ListView(f)
        | DataType::LargeListView(f)
        | DataType::FixedSizeList(f, _)
        | DataType::Map(f, _) => vec![(format!("{path}.{}", f.name()), f.data_type())],
        DataType::Struct(fs) => fs
            .iter()
            .map(|f| (format!("{path}.{}", f.name()), f.data_type()))
            .collect(),
        _ => return,
    };
    for ((p, t), d) in children.iter().zip(data.child_data()) {
        dictionary_sizes(p, t, d, out);
    }
}

impl FrameEncoder {
    /// A new stream of batches of `schema`. Call [`FrameEncoder::schema_frame`] once first.
    pub fn new(schema: SchemaRef) -> Result<Self, FrameError> {
        let inner = StreamEncoder::try_new_with_options(&schema, write_options()?)?;
        let has_dicts = schema
            .fields()
            .iter()
            .any(|f| has_dictionary(f.data_type()));
        Ok(Self {
            committed: RecordBatch::new_empty(schema.clone()),
            schema,
            inner,
            has_dicts,
            pending: None,
            ahead: false,
            next_token: 1,
        })
    }

    /// The stream's schema.
    pub fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    /// The schema frame (the schema message followed by an empty batch, which the decoder
    /// ignores: arrow-ipc's stream encoder writes the schema with the first batch). It starts
    /// the stream over: the reader holds no dictionaries after it.
    pub fn schema_frame(&mut self, meta: FrameMeta) -> Result<Encoded, FrameError> {
        self.inner = StreamEncoder::try_new_with_options(&self.schema, write_options()?)?;
        let empty = RecordBatch::new_empty(self.schema.clone());
        let parts = self.inner.encode(&empty)?;
        self.committed = empty;
        self.pending = None;
        self.ahead = false;
        Ok(Self::assemble(FrameKind::Schema, meta, parts, 0))
    }

    /// A batch frame; `meta.rows` is set from the batch. Call [`FrameEncoder::commit`] once
    /// the frame is in the ring; until then its dictionaries do not count as sent.
    pub fn batch(
        &mut self,
        batch: &RecordBatch,
        mut meta: FrameMeta,
    ) -> Result<Encoded, FrameError> {
        meta.rows = batch.num_rows() as u64;
        if self.ahead {
            // The last frame was not committed: start from what the reader holds. Encoding the
            // committed batch's zero-row slice records its dictionaries (same buffers) as sent.
            let mut inner = StreamEncoder::try_new_with_options(&self.schema, write_options()?)?;
            inner.encode(&self.committed)?;
            self.inner = inner;
            self.ahead = false;
        }
        let token = self.next_token;
        self.next_token += 1;
        self.pending = Some((token, batch.slice(0, 0)));
        // Until committed, `inner` may hold dictionaries the reader never got (and after an
        // error, any part of them).
        self.ahead = self.has_dicts;
        let parts = self.inner.encode(batch)?;
        Ok(Self::assemble(FrameKind::Batch, meta, parts, token))
    }

    /// [`FrameEncoder::batch`], refusing a batch whose dictionaries alone are larger than
    /// `max_frame` bytes with [`FrameError::DictionaryTooLarge`]: every frame of the batch, down
    /// to one row, carries them whole, so halving the batch cannot make it fit. A frame over
    /// `max_frame` for any other reason is returned as usual (the caller splits the batch).
    pub fn batch_within(
        &mut self,
        batch: &RecordBatch,
        meta: FrameMeta,
        max_frame: usize,
    ) -> Result<Encoded, FrameError> {
        let f = self.batch(batch, meta)?;
        if f.len() <= max_frame || !self.has_dicts {
            return Ok(f);
        }
        let mut sizes = Vec::new();
        for (field, col) in self.schema.fields().iter().zip(batch.columns()) {
            dictionary_sizes(field.name(), field.data_type(), &col.to_data(), &mut sizes);
        }
        let room = max_frame.saturating_sub(HEADER_LEN);
        let total: usize = sizes.iter().map(|s| s.1).sum();
        let too_large = match sizes.iter().max_by_key(|s| s.1) {
            Some((column, bytes)) if *bytes > room => Some((column.clone(), *bytes)),
            Some(_) if total > room => Some((
                sizes
                    .iter()
                    .map(|s| s.0.as_str())
                    .collect::<Vec<_>>()
                    .join("\", \""),
                total,
            )),
            _ => None,
        };
        match too_large {
            Some((column, bytes)) => Err(FrameError::DictionaryTooLarge {
                column,
                bytes,
                max_frame,
            }),
            None => Ok(f),
        }
    }

    /// Records that `frame` (the latest [`FrameEncoder::batch`] frame) was put into the ring:
    /// the reader now holds its dictionaries. Frames of other kinds need no commit (this is a
    /// no-op for them). Committing an older frame, or one twice, is an error.
    pub fn commit(&mut self, frame: &Encoded) -> Result<(), FrameError> {
        if frame.token == 0 {
            return Ok(());
        }
        match self.pending.take() {
            Some((token, batch)) if token == frame.token => {
                self.committed = batch;
                self.ahead = false;
                Ok(())
            }
            other => {
                self.pending = other;
                Err(FrameError::NotLatest)
            }
        }
    }

    fn assemble(kind: FrameKind, meta: FrameMeta, parts: Vec<Buffer>, token: u64) -> Encoded {
        let len: usize = parts.iter().map(|p| p.len()).sum();
        Encoded {
            header: FrameHeader::new(kind, meta, len as u64, 0),
            parts,
            inline: Vec::new(),
            trailer: Vec::new(),
            token,
        }
    }
}

/// An end marker (`EndOfSplit`, `EndOfEpoch`, `EndOfFeed`) without payload.
pub fn marker(kind: FrameKind, meta: FrameMeta) -> Encoded {
    Encoded {
        header: FrameHeader::new(kind, meta, 0, 0),
        parts: Vec::new(),
        inline: Vec::new(),
        trailer: Vec::new(),
        token: 0,
    }
}

/// An error frame carrying `message` (UTF-8). The message is cut (on a char boundary) to
/// `max_len - HEADER_LEN` bytes so it always fits a ring slot.
pub fn error_frame(code: ErrorCode, message: &str, meta: FrameMeta, max_len: usize) -> Encoded {
    let room = max_len.saturating_sub(HEADER_LEN);
    let mut end = message.len().min(room);
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    let inline = message.as_bytes()[..end].to_vec();
    Encoded {
        header: FrameHeader::new(FrameKind::Error, meta, inline.len() as u64, code as u32),
        parts: Vec::new(),
        inline,
        trailer: Vec::new(),
        token: 0,
    }
}

/// A decoded frame.
#[derive(Debug, Clone)]
pub enum Frame {
    /// The stream's schema (the decoder keeps it for the batches that follow).
    Schema(FrameMeta, SchemaRef),
    /// A batch whose arrays point into the frame's buffer.
    Batch(FrameMeta, RecordBatch),
    /// End of a split.
    EndOfSplit(FrameMeta),
    /// End of an epoch.
    EndOfEpoch(FrameMeta),
    /// End of the feed.
    EndOfFeed(FrameMeta),
    /// The producer's error.
    Error(FrameMeta, ErrorCode, String),
}

/// Decodes the frames of one stream, keeping its schema and dictionaries.
#[derive(Debug, Default)]
pub struct FrameDecoder {
    schema: Option<SchemaRef>,
    dicts: HashMap<i64, ArrayRef>,
}

/// The owner of a region of bytes that an Arrow [`Buffer`] borrows (a ring lease).
struct Owner<T>(T);

// The owner is only read through the Buffer and dropped; a panic cannot leave it half-updated.
impl<T> RefUnwindSafe for Owner<T> {}

/// Wraps `owner`'s bytes in an Arrow [`Buffer`] without copying. The bytes stay valid (and
/// `owner` alive) until the last Buffer or array sliced from it is dropped.
pub fn owned_buffer<T>(owner: T) -> Buffer
where
    T: Deref<Target = [u8]> + Send + Sync + 'static,
{
    let owner = Arc::new(Owner(owner));
    let bytes: &[u8] = &owner.0;
    let len = bytes.len();
    let ptr = NonNull::new(bytes.as_ptr() as *mut u8).unwrap_or(NonNull::dangling());
    // SAFETY: `ptr` points at `len` bytes that `owner` owns; `owner` moves into the Buffer's
    // allocation handle (an Arc), so the bytes stay valid and unchanged (Deref gives shared
    // access only, and a lease's bytes are never rewritten while it lives) for as long as any
    // Buffer sliced from this one exists. A moved `T` keeps pointing at the same bytes: the
    // lease/Vec owns heap or shared memory, not inline storage (checked by the tests).
    unsafe { Buffer::from_custom_allocation(ptr, len, owner) }
}

impl FrameDecoder {
    /// A decoder for a new stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// The schema, once the schema frame was seen.
    pub fn schema(&self) -> Option<&SchemaRef> {
        self.schema.as_ref()
    }

    /// Decodes one frame. `frame` is the whole slot (header included); batches slice their
    /// arrays out of it without copying.
    pub fn decode(&mut self, frame: &Buffer) -> Result<Frame, FrameError> {
        if frame.as_ptr() as usize % ALIGN != 0 {
            return Err(FrameError::Corrupt(format!(
                "frame at {:p} is not {ALIGN}-byte aligned (ring slots are)",
                frame.as_ptr()
            )));
        }
        let h = FrameHeader::parse(frame.as_slice())?;
        self.decode_payload(frame, &h).map_err(|e| match e {
            FrameError::Corrupt(m) => FrameError::Corrupt(format!("{}: {m}", h.name())),
            FrameError::Arrow(e) => FrameError::Corrupt(format!("{}: arrow ipc: {e}", h.name())),
            e => e,
        })
    }

    fn decode_payload(&mut self, frame: &Buffer, h: &FrameHeader) -> Result<Frame, FrameError> {
        let meta = h.meta();
        let payload = frame.slice_with_length(HEADER_LEN, h.payload_len as usize);
        match h.kind() {
            Some(FrameKind::Schema) => {
                // A new stream: forget the old one's dictionaries first, then keep the ones
                // this frame carries (empty ones, which the encoder counts as sent).
                self.dicts.clear();
                self.schema = None;
                let schema = self.read_guarded(&payload, true)?.0.ok_or_else(|| {
                    FrameError::Corrupt("schema frame without a schema message".into())
                })?;
                self.schema = Some(schema.clone());
                Ok(Frame::Schema(meta, schema))
            }
            Some(FrameKind::Batch) => {
                let batch = self.read_guarded(&payload, false)?.1.ok_or_else(|| {
                    FrameError::Corrupt("batch frame without a record batch message".into())
                })?;
                if batch.num_rows() as u64 != h.rows {
                    return Err(FrameError::Corrupt(format!(
                        "frame header says {} rows, batch has {}",
                        h.rows,
                        batch.num_rows()
                    )));
                }
                Ok(Frame::Batch(meta, batch))
            }
            Some(FrameKind::EndOfSplit) => Ok(Frame::EndOfSplit(meta)),
            Some(FrameKind::EndOfEpoch) => Ok(Frame::EndOfEpoch(meta)),
            Some(FrameKind::EndOfFeed) => Ok(Frame::EndOfFeed(meta)),
            Some(FrameKind::Error) => Ok(Frame::Error(
                meta,
                ErrorCode::from_u32(h.code),
                String::from_utf8_lossy(payload.as_slice()).into_owned(),
            )),
            None => Err(FrameError::Corrupt(format!(
                "unknown frame kind {}",
                h.kind
            ))),
        }
    }

    /// [`FrameDecoder::read_messages`], with arrow-rs panics turned into errors. The messages
    /// are checked before arrow-rs sees them (every buffer inside the body, sane counts), but
    /// arrow-rs still asserts on some inconsistent bodies (a validity buffer shorter than its
    /// node, say) instead of returning an error; a corrupt frame must not take the trainer
    /// down. The decoder's state is unchanged by a panic: dictionaries are stored last.
    fn read_guarded(
        &mut self,
        payload: &Buffer,
        schema_frame: bool,
    ) -> Result<(Option<SchemaRef>, Option<RecordBatch>), FrameError> {
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            self.read_messages(payload, schema_frame)
        }));
        r.unwrap_or_else(|p| {
            let why = p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "no message".into());
            Err(FrameError::Corrupt(format!(
                "arrow ipc could not read the payload: {why}"
            )))
        })
    }

    /// Walks the IPC messages of a payload. Returns the schema (if a schema message came) and
    /// the record batch (the last one, if any).
    fn read_messages(
        &mut self,
        payload: &Buffer,
        schema_frame: bool,
    ) -> Result<(Option<SchemaRef>, Option<RecordBatch>), FrameError> {
        let bytes = payload.as_slice();
        let mut at = 0usize;
        let mut schema_out = None;
        let mut batch_out = None;
        while at + 8 <= bytes.len() {
            let mut word = u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap_or([0; 4]));
            let mut prefix = 4;
            if word == 0xFFFF_FFFF {
                word = u32::from_le_bytes(bytes[at + 4..at + 8].try_into().unwrap_or([0; 4]));
                prefix = 8;
            }
            let meta_len = word as usize;
            if meta_len == 0 {
                break; // end-of-stream marker
            }
            let meta_start = at + prefix;
            let meta_end = meta_start
                .checked_add(meta_len)
                .filter(|&e| e <= bytes.len())
                .ok_or_else(|| {
                    FrameError::Corrupt(format!(
                        "IPC message at payload offset {at} claims {meta_len} metadata bytes, \
                         {} remain",
                        bytes.len() - meta_start
                    ))
                })?;
            let msg = root_as_message(&bytes[meta_start..meta_end]).map_err(|e| {
                FrameError::Corrupt(format!("IPC message at payload offset {at}: {e}"))
            })?;
            let body_len = usize::try_from(msg.bodyLength()).unwrap_or(usize::MAX);
            let body_end = meta_end
                .checked_add(body_len)
                .filter(|&e| e <= bytes.len())
                .ok_or_else(|| {
                    FrameError::Corrupt(format!(
                        "IPC message at payload offset {at} claims a {body_len}-byte body, {} \
                         remain",
                        bytes.len() - meta_end
                    ))
                })?;
            let body = payload.slice_with_length(meta_end, body_len);
            let version = msg.version();
            match msg.header_type() {
                MessageHeader::Schema => {
                    let fb = msg
                        .header_as_schema()
                        .ok_or_else(|| FrameError::Corrupt("unreadable schema message".into()))?;
                    schema_out = Some(Arc::new(fb_to_schema(fb)));
                }
                MessageHeader::DictionaryBatch => {
                    let schema = schema_out
                        .clone()
                        .or_else(|| self.schema.clone())
                        .ok_or(FrameError::NoSchema)?;
                    let d = msg.header_as_dictionary_batch().ok_or_else(|| {
                        FrameError::Corrupt("unreadable dictionary batch message".into())
                    })?;
                    let rb = d.data().ok_or_else(|| {
                        FrameError::Corrupt("dictionary batch message without data".into())
                    })?;
                    check_batch(rb, body_len, at)?;
                    // Dictionaries are kept for the batches that follow, so they get their
                    // own copy: a view into this frame would keep its lease, and so every
                    // later slot of the ring, from being reclaimed (the ring frees in order).
                    let owned = Buffer::from_slice_ref(body.as_slice());
                    read_dictionary(&owned, d, &schema, &mut self.dicts, &version)
                        .map_err(|e| at_offset(at, e))?;
                }
                MessageHeader::RecordBatch => {
                    if !schema_frame {
                        let schema = self.schema.clone().ok_or(FrameError::NoSchema)?;
                        let rb = msg.header_as_record_batch().ok_or_else(|| {
                            FrameError::Corrupt("unreadable record batch message".into())
                        })?;
                        check_batch(rb, body_len, at)?;
                        let batch =
                            RecordBatchDecoder::try_new(&body, rb, schema, &self.dicts, &version)
                                .and_then(|d| d.with_require_alignment(true).read_record_batch())
                                .map_err(|e| at_offset(at, e))?;
                        batch_out = Some(batch);
                    }
                }
                other => {
                    return Err(FrameError::Corrupt(format!(
                        "unexpected IPC message {other:?} in a frame"
                    )))
                }
            }
            at = body_end;
        }
        Ok((schema_out, batch_out))
    }
}

fn at_offset(at: usize, e: ArrowError) -> FrameError {
    FrameError::Corrupt(format!("IPC message at payload offset {at}: {e}"))
}

/// Checks a record (or dictionary) batch message against its body before arrow-rs reads it:
/// no compression (frames are written without), counts that are not negative, null counts
/// within their node, every buffer inside the body.
fn check_batch(
    rb: arrow_ipc::RecordBatch<'_>,
    body_len: usize,
    at: usize,
) -> Result<(), FrameError> {
    let bad = |what: String| {
        Err(FrameError::Corrupt(format!(
            "IPC message at payload offset {at}: {what}"
        )))
    };
    if rb.compression().is_some() {
        return bad("compressed body (frames are written uncompressed)".into());
    }
    if rb.length() < 0 {
        return bad(format!("negative row count {}", rb.length()));
    }
    for (i, n) in rb.nodes().iter().flatten().enumerate() {
        if n.length() < 0 || n.null_count() < 0 || n.null_count() > n.length() {
            return bad(format!(
                "field node {i} has length {} and null count {}",
                n.length(),
                n.null_count()
            ));
        }
    }
    for (i, b) in rb.buffers().iter().flatten().enumerate() {
        let end = u64::try_from(b.offset())
            .ok()
            .zip(u64::try_from(b.length()).ok())
            .and_then(|(o, l)| o.checked_add(l));
        // The format aligns every buffer to 8 bytes (frames: 64); arrow-rs asserts on less.
        if end.is_none_or(|e| e > body_len as u64) || b.offset() % 8 != 0 {
            return bad(format!(
                "buffer {i} at {} of {} bytes is misaligned or outside the {body_len}-byte body",
                b.offset(),
                b.length()
            ));
        }
    }
    Ok(())
}

/// The schema of a stream as an `Arc`.
pub fn schema_ref(s: Schema) -> SchemaRef {
    Arc::new(s)
}
