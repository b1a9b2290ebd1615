//! The shared-memory layout: the segment [`Header`] and the per-slot [`SlotHeader`].
//!
//! Everything here is `#[repr(C)]`, holds no pointers, and is pinned by the tests at the bottom
//! of this file (offsets and sizes). Any change to it bumps [`LAYOUT_VERSION`].
//!
//! ```text
//! offset  size  line  written by   field
//!      0     8    0   producer*    magic            b"HYDRORNG" as u64 (LE)
//!      8     4    0   producer*    version          LAYOUT_VERSION
//!     12     4    0   producer*    header_size      payload offset in the segment (4096)
//!     16     8    0   producer*    capacity         payload bytes, a power of two
//!     24     8    0   producer*    max_frame        largest payload of one frame
//!     64     8    1   producer     head             bytes ever published (monotonic)
//!     72     4    1   producer     data_futex       bumped after every publish and on close
//!    128     8    2   consumer     tail             bytes ever reclaimed (monotonic)
//!    136     4    2   consumer     space_futex      bumped after every reclaim and on close
//!    144     8    2   consumer     handed           data frames handed to the consumer's user
//!    192     4    3   consumer     consumer_waiting 1 while the consumer may sleep on data_futex
//!    256     4    4   producer     producer_waiting 1 while the producer may sleep on space_futex
//!    320     4    5   producer     producer_pid
//!    324     4    5   producer     producer_closed  1 once the producer closed (drain, then end)
//!    328     8    5   producer     producer_heartbeat  monotonic ms of its last wait slice
//!    336     4    5   producer     producer_status  a word it publishes for the consumer
//!    384     4    6   consumer     consumer_pid
//!    388     4    6   consumer     consumer_closed  1 once the consumer closed
//!    392     8    6   consumer     consumer_heartbeat  monotonic ms of its last wait slice
//!    400     4    6   consumer     consumer_status  (reserved, zero)
//!    448          -                (end of Header; the payload starts at header_size = 4096)
//! ```
//! `*` written once before the segment is shared, read-only afterwards.

use crate::sync::{AtomicU32, AtomicU64};

/// `b"HYDRORNG"` read as a little-endian `u64`.
pub const MAGIC: u64 = u64::from_le_bytes(*b"HYDRORNG");
/// Version of this layout and of the frame format; checked at attach. 2: the `status` words;
/// 3: the consumer's `handed` count.
pub const LAYOUT_VERSION: u32 = 3;
/// Offset of the payload in the segment: one page, so the payload is page aligned.
pub const HEADER_SIZE: usize = 4096;
/// Alignment of every slot header and every frame payload in the ring.
pub const FRAME_ALIGN: usize = 64;
/// Size of the [`SlotHeader`] in front of each slot's payload in the ring.
pub const SLOT_HEADER_SIZE: usize = 64;
/// Smallest ring capacity accepted.
pub const MIN_CAPACITY: usize = 4096;
/// Largest ring capacity accepted (1 TiB).
pub const MAX_CAPACITY: usize = 1 << 40;

/// Line 0: geometry, immutable once the segment is shared.
#[repr(C, align(64))]
#[derive(Debug)]
pub struct Meta {
    /// [`MAGIC`].
    pub magic: u64,
    /// [`LAYOUT_VERSION`].
    pub version: u32,
    /// [`HEADER_SIZE`].
    pub header_size: u32,
    /// Payload bytes (power of two).
    pub capacity: u64,
    /// Largest frame payload the producer will publish.
    pub max_frame: u64,
}

/// Line 1, written by the producer only.
#[repr(C, align(64))]
#[derive(Debug)]
pub struct ProducerHot {
    /// Ring position (bytes since creation) up to which frames are published.
    pub head: AtomicU64,
    /// Futex word the consumer sleeps on; bumped after each publish and on close.
    pub data_futex: AtomicU32,
}

/// Line 2, written by the consumer only.
#[repr(C, align(64))]
#[derive(Debug)]
pub struct ConsumerHot {
    /// Ring position up to which space was handed back to the producer.
    pub tail: AtomicU64,
    /// Futex word the producer sleeps on; bumped after each reclaim and on close.
    pub space_futex: AtomicU32,
    /// Data frames (counted from the first, by their `seq`) the consumer handed to its user:
    /// frames `0..handed` were taken, whatever slots are still held. Only grows. The ring
    /// gives it no meaning; the producer reads it to know what was consumed without a message
    /// (`Producer::peer_handed`), at any time and after the consumer died.
    pub handed: AtomicU64,
}

/// A cache line holding one "I may sleep" flag.
#[repr(C, align(64))]
#[derive(Debug)]
pub struct WaitFlag {
    /// 1 while the owner may be asleep on the futex word of the other side.
    pub waiting: AtomicU32,
}

/// Per-side liveness line.
#[repr(C, align(64))]
#[derive(Debug)]
pub struct Side {
    /// Process id of the side (0 before it attached).
    pub pid: AtomicU32,
    /// 1 once this side closed its end of the ring.
    pub closed: AtomicU32,
    /// `CLOCK_MONOTONIC` milliseconds of this side's last wait slice or peer check
    /// (diagnostics: how long a stuck side has been stuck).
    pub heartbeat: AtomicU64,
    /// A word this side publishes for the other to read, with no meaning to the ring
    /// (diagnostics: the feeder puts its stage there, see `Producer::status_word`). The
    /// reader takes it as a hint, never as a fact about the ring.
    pub status: AtomicU32,
}

/// The header at offset 0 of every ring segment.
#[repr(C, align(64))]
#[derive(Debug)]
pub struct Header {
    /// Geometry.
    pub meta: Meta,
    /// Producer's publish position and the consumer's futex word.
    pub prod: ProducerHot,
    /// Consumer's reclaim position and the producer's futex word.
    pub cons: ConsumerHot,
    /// Consumer's sleep flag.
    pub consumer_waiting: WaitFlag,
    /// Producer's sleep flag.
    pub producer_waiting: WaitFlag,
    /// Producer liveness.
    pub producer: Side,
    /// Consumer liveness.
    pub consumer: Side,
}

impl Header {
    /// A fresh header for a ring of `capacity` payload bytes.
    pub fn new(capacity: usize, max_frame: usize, producer_pid: u32) -> Header {
        let side = |pid| Side {
            pid: AtomicU32::new(pid),
            closed: AtomicU32::new(0),
            heartbeat: AtomicU64::new(0),
            status: AtomicU32::new(0),
        };
        Header {
            meta: Meta {
                magic: MAGIC,
                version: LAYOUT_VERSION,
                header_size: HEADER_SIZE as u32,
                capacity: capacity as u64,
                max_frame: max_frame as u64,
            },
            prod: ProducerHot {
                head: AtomicU64::new(0),
                data_futex: AtomicU32::new(0),
            },
            cons: ConsumerHot {
                tail: AtomicU64::new(0),
                space_futex: AtomicU32::new(0),
                handed: AtomicU64::new(0),
            },
            consumer_waiting: WaitFlag {
                waiting: AtomicU32::new(0),
            },
            producer_waiting: WaitFlag {
                waiting: AtomicU32::new(0),
            },
            producer: side(producer_pid),
            consumer: side(0),
        }
    }
}

/// Kind of a ring record: a data frame.
pub const KIND_DATA: u32 = 0x4652_4d31; // "FRM1"
/// Kind of a ring record: padding up to the end of the ring (the frame after it starts at 0).
pub const KIND_PAD: u32 = 0x5041_4431; // "PAD1"

/// The 64 bytes in front of every record (slot) in the ring. Plain memory: written by the
/// producer before the Release store of `head` that publishes it, read by the consumer after
/// its Acquire load of `head`. The ring's own header, not the frame's: a frame's
/// `hydrofeed_tfbridge::FrameHeader` is the start of the payload behind it.
#[repr(C, align(64))]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlotHeader {
    /// Payload bytes of a data frame; for padding, the bytes after this header up to the end.
    pub len: u64,
    /// [`KIND_DATA`] or [`KIND_PAD`].
    pub kind: u32,
    /// Reserved, zero.
    pub reserved: u32,
    /// Frame number (data frames only, from 0), checked by the consumer.
    pub seq: u64,
}

/// Bytes a frame of `len` payload bytes takes in the ring (header + payload rounded up to 64).
pub const fn record_size(len: usize) -> usize {
    SLOT_HEADER_SIZE + len.div_ceil(FRAME_ALIGN) * FRAME_ALIGN
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::mem::{align_of, offset_of, size_of};

    #[test]
    fn header_layout_is_pinned() {
        assert_eq!(size_of::<Header>(), 448);
        assert_eq!(align_of::<Header>(), 64);
        assert_eq!(offset_of!(Header, meta.magic), 0);
        assert_eq!(offset_of!(Header, meta.version), 8);
        assert_eq!(offset_of!(Header, meta.header_size), 12);
        assert_eq!(offset_of!(Header, meta.capacity), 16);
        assert_eq!(offset_of!(Header, meta.max_frame), 24);
        assert_eq!(offset_of!(Header, prod.head), 64);
        assert_eq!(offset_of!(Header, prod.data_futex), 72);
        assert_eq!(offset_of!(Header, cons.tail), 128);
        assert_eq!(offset_of!(Header, cons.space_futex), 136);
        assert_eq!(offset_of!(Header, cons.handed), 144);
        assert_eq!(offset_of!(Header, consumer_waiting.waiting), 192);
        assert_eq!(offset_of!(Header, producer_waiting.waiting), 256);
        assert_eq!(offset_of!(Header, producer.pid), 320);
        assert_eq!(offset_of!(Header, producer.closed), 324);
        assert_eq!(offset_of!(Header, producer.heartbeat), 328);
        assert_eq!(offset_of!(Header, producer.status), 336);
        assert_eq!(offset_of!(Header, consumer.pid), 384);
        assert_eq!(offset_of!(Header, consumer.closed), 388);
        assert_eq!(offset_of!(Header, consumer.heartbeat), 392);
        assert_eq!(offset_of!(Header, consumer.status), 400);
        assert!(size_of::<Header>() <= HEADER_SIZE);
        assert_eq!(MAGIC.to_le_bytes(), *b"HYDRORNG");
    }

    #[test]
    fn slot_header_layout_is_pinned() {
        assert_eq!(size_of::<SlotHeader>(), SLOT_HEADER_SIZE);
        assert_eq!(align_of::<SlotHeader>(), FRAME_ALIGN);
        assert_eq!(offset_of!(SlotHeader, len), 0);
        assert_eq!(offset_of!(SlotHeader, kind), 8);
        assert_eq!(offset_of!(SlotHeader, seq), 16);
    }

    #[test]
    fn record_sizes() {
        assert_eq!(record_size(0), 64);
        assert_eq!(record_size(1), 128);
        assert_eq!(record_size(64), 128);
        assert_eq!(record_size(65), 192);
    }
}
