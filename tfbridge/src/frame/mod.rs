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
//! Consumer side: [`owned_buffer`] wraps a ring slot (anything that derefs to bytes and owns
//! them) into an Arrow [`Buffer`](arrow_buffer::Buffer) without copying;
//! [`FrameDecoder::decode`] slices the arrays out of it. Every array keeps the slot alive
//! until the last view of it is dropped.
//!
//! Parts: `header` ([`FrameHeader`], [`FrameMeta`] and the lineage trailer of [`Piece`]s),
//! `encode` ([`FrameEncoder`], [`Encoded`], end markers and error frames) and `decode`
//! ([`FrameDecoder`], [`owned_buffer`], the checks that run before arrow-rs reads a message).
//! This module holds the constants, the frame kinds, the error codes and [`FrameError`].

use std::sync::Arc;

use arrow_schema::{ArrowError, Schema, SchemaRef};

mod consumed;
mod decode;
mod encode;
mod header;

pub use consumed::Consumed;
pub use decode::{owned_buffer, Frame, FrameDecoder};
pub use encode::{error_frame, marker, Encoded, FillPart, FrameEncoder};
pub use header::{lineage, FrameHeader, FrameMeta, Piece};

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
    /// The feeder lost its coordinator: the message names its address and the stage.
    Coordinator = 8,
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
            8 => Self::Coordinator,
            _ => Self::Other,
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
    /// Writing a part's values straight into the slot failed.
    #[error("writing a frame's values: {0}")]
    Fill(String),
    /// The destination slice has the wrong length.
    #[error("frame needs {need} bytes, got a slot of {got}")]
    Size {
        /// Bytes the frame needs.
        need: usize,
        /// Bytes given.
        got: usize,
    },
}

/// The schema of a stream as an `Arc`.
pub fn schema_ref(s: Schema) -> SchemaRef {
    Arc::new(s)
}
