//! Batch frames in the ring (Arrow IPC messages behind a small header), Arrow to tensor layout,
//! and the trainer -> producer control messages.
//!
//! - [`frame`]: [`FrameHeader`] (64 bytes, `#[repr(C)]`, versioned) + Arrow IPC payload.
//!   Producers use [`FrameEncoder`] (one copy, into the ring slot); consumers wrap the slot
//!   with [`owned_buffer`] and decode with [`FrameDecoder`] (no copy).
//! - [`layout`]: [`to_tensor`] maps a column to a dense N-D array, a ragged values + row_splits
//!   pair, or leaves it Arrow.
//! - [`control`]: [`Control`] messages (batch size negotiation, results, bye).
//! - `gpu` (feature `cuda`): staging batches from the ring into device memory (registered ring,
//!   pinned bounce fallback, a device buffer pool) and GPU discovery through NVML.
//!
//! Most users want the Python `hydrofeed.DataFeed`, which does all of this.
//!
//! ```
//! use std::sync::Arc;
//! use arrow_array::{Int64Array, RecordBatch};
//! use hydrofeed_tfbridge::{owned_buffer, Frame, FrameDecoder, FrameEncoder, FrameMeta};
//!
//! let batch = RecordBatch::try_from_iter([("id", Arc::new(Int64Array::from(vec![1, 2])) as _)])?;
//! let mut enc = FrameEncoder::new(batch.schema())?;
//! let mut dec = FrameDecoder::new();
//! // A ring slot is 64-byte aligned; an Arrow MutableBuffer is too.
//! for f in [enc.schema_frame(FrameMeta::default())?, enc.batch(&batch, FrameMeta::default())?] {
//!     let mut slot = arrow_buffer::MutableBuffer::from_len_zeroed(f.len());
//!     f.write_to(slot.as_slice_mut())?;
//!     let frame = owned_buffer(arrow_buffer::Buffer::from(slot));
//!     if let Frame::Batch(_, b) = dec.decode(&frame)? {
//!         assert_eq!(b, batch);
//!     }
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod control;
pub mod frame;
#[cfg(feature = "cuda")]
pub mod gpu;
pub mod layout;

pub use control::{Control, FeedReport, REJOIN_LEASES_PER_MESSAGE};
pub use frame::{
    error_frame, lineage, marker, owned_buffer, Consumed, Encoded, ErrorCode, FillPart, Frame,
    FrameDecoder, FrameEncoder, FrameError, FrameHeader, FrameKind, FrameMeta, Piece, HEADER_LEN,
    NO_SPLIT, PIECE_LEN,
};
pub use layout::{to_tensor, DType, Dense, LayoutError, Ragged, Tensor};

/// The environment variable that names a trainer's feed socket (`HYDROFEED_FEED_SOCKET`): set
/// by `hydrofeed launch` and the Spark integration, read by the trainer's `DataFeed`.
pub const SOCKET_ENV: &str = "HYDROFEED_FEED_SOCKET";
