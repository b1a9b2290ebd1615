//! A broken or hostile peer writes whatever it likes into the shared header and the records:
//! the other side returns an error or a valid record, never panics and never reads or writes
//! outside the mapping.

use crate::layout::{Header, SlotHeader, KIND_DATA, KIND_PAD, SLOT_HEADER_SIZE};
use crate::ring::{Lost, RingConsumer, RingProducer, Shared};
use crate::segment::{create_memfd, open_memfd, HeapSegment, Pages, Segment};
use proptest::prelude::*;
use std::os::fd::AsFd;
use std::sync::atomic::Ordering;
use std::time::Duration;

const CAP: usize = 1 << 14;
const MAX: usize = CAP / 2 - SLOT_HEADER_SIZE;

fn alive() -> Result<(), Lost> {
    Ok(())
}

/// Writes `v` at byte `off` of a mapping, as another process would.
///
/// # Safety
/// `base + off` must be 8 bytes inside a live mapping, 8-byte aligned.
unsafe fn poke(base: *mut u8, off: usize, v: u64) {
    // SAFETY: the caller's contract.
    unsafe { std::ptr::write_volatile(base.add(off) as *mut u64, v) }
}

fn consumer_of(seg: Box<dyn Segment>) -> Option<RingConsumer> {
    Shared::new(seg).ok().map(RingConsumer::new)
}

fn producer_of(seg: Box<dyn Segment>) -> RingProducer {
    RingProducer::new(Shared::new(seg).expect("a fresh ring is valid"))
}

/// The consumer validates the geometry once, at attach; a producer that rewrites it later
/// (capacity 1 TiB: the consumer would read far outside its mapping) changes nothing.
#[test]
fn geometry_is_read_once() {
    let (fd, prod) = create_memfd(CAP, MAX, Pages::Now).unwrap();
    let cons = open_memfd(fd.as_fd(), Some(CAP as u64), Pages::Now).unwrap();
    let base = prod.base();
    // SAFETY: offsets 16 and 24 (capacity, max_frame) of the header page.
    unsafe {
        poke(base, 16, 1 << 40);
        poke(base, 24, 1 << 39);
    }
    let c = consumer_of(Box::new(cons)).expect("attached");
    assert_eq!(c.capacity(), CAP as u64);
}

/// A start position that is not 64-byte aligned (or too far from head) is refused at
/// attach: the consumer would read its record headers misaligned.
#[test]
fn initial_positions_are_checked() {
    for (tail, head) in [(8, 8), (0, 8), (64, 0), (0, 2 * CAP as u64)] {
        let (fd, prod) = create_memfd(CAP, MAX, Pages::Now).unwrap();
        let base = prod.base();
        // SAFETY: offsets 64 (head) and 128 (tail) of the header page.
        unsafe {
            poke(base, 64, head);
            poke(base, 128, tail);
        }
        let refused = match open_memfd(fd.as_fd(), Some(CAP as u64), Pages::Now) {
            Err(_) => true,
            Ok(seg) => consumer_of(Box::new(seg)).is_none(),
        };
        assert!(refused, "tail {tail} head {head} accepted");
    }
}

fn kind() -> impl Strategy<Value = u32> {
    prop_oneof![Just(KIND_DATA), Just(KIND_PAD), any::<u32>()]
}

fn len() -> impl Strategy<Value = u64> {
    prop_oneof![0u64..(2 * CAP as u64), any::<u64>(), Just(u64::MAX - 63)]
}

fn position() -> impl Strategy<Value = u64> {
    prop_oneof![
        (0u64..4 * CAP as u64),
        (0u64..4 * CAP as u64).prop_map(|p| p & !63),
        any::<u64>(),
        any::<u64>().prop_map(|p| p & !63),
        (0u64..4096).prop_map(|d| !63u64 - d * 64),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Random positions and record headers: `next` returns an error, the end, or a slot
    /// inside the payload.
    #[test]
    fn hostile_producer(
        tail in position(),
        head in position(),
        heads in proptest::collection::vec(position(), 0..4),
        records in proptest::collection::vec((0usize..CAP / 64, len(), kind(), 0u64..4), 0..8),
        closed in any::<bool>(),
    ) {
        let seg = HeapSegment::new(CAP, MAX);
        let payload = seg.payload() as usize;
        let h: &Header = seg.header();
        h.cons.tail.store(tail, Ordering::Relaxed);
        h.prod.head.store(head, Ordering::Relaxed);
        h.producer.closed.store(closed as u32, Ordering::Relaxed);
        for &(slot, len, kind, seq) in &records {
            let hdr = SlotHeader { len, kind, reserved: 0, seq };
            // SAFETY: slot * 64 < CAP, 64-byte aligned, inside the payload.
            unsafe { std::ptr::write(seg.payload().add(slot * 64) as *mut SlotHeader, hdr) };
        }
        let hp: *const Header = h;
        let Some(mut c) = consumer_of(Box::new(seg)) else { return Ok(()) };
        let mut slots = Vec::new();
        let mut later = heads.into_iter();
        for _ in 0..16 {
            match c.next(Duration::ZERO, &mut alive) {
                Ok(Some(l)) => {
                    let (p, n) = (l.as_ptr() as usize, l.len());
                    prop_assert!(p >= payload && p + n <= payload + CAP, "slot outside the payload");
                    slots.push(l);
                }
                Ok(None) | Err(_) => break,
            }
            if let Some(next) = later.next() {
                // SAFETY: the segment lives in `c` (and the slots); atomics only.
                unsafe { (*hp).prod.head.store(next, Ordering::Relaxed) };
            }
            if slots.len() > 2 {
                slots.remove(0);
            }
        }
    }

    /// A consumer that writes nonsense into `tail`: `reserve` waits, fails or hands out space
    /// inside the payload; it never panics.
    #[test]
    fn hostile_consumer(tail in position(), len in 0usize..CAP, closed in any::<bool>()) {
        let seg = HeapSegment::new(CAP, MAX);
        let payload = seg.payload() as usize;
        let hp: *const Header = seg.header();
        let mut p = producer_of(Box::new(seg));
        for _ in 0..3 {
            // SAFETY: the segment lives in `p`; atomics only.
            unsafe {
                (*hp).cons.tail.store(tail, Ordering::Relaxed);
                (*hp).consumer.closed.store(closed as u32, Ordering::Relaxed);
            }
            match p.reserve(len, Duration::ZERO, &mut alive) {
                Ok(r) => {
                    let (a, n) = (r.as_ptr() as usize, r.len());
                    prop_assert!(a >= payload && a + n <= payload + CAP, "reservation outside the payload");
                    r.commit();
                }
                Err(_) => break,
            }
        }
    }
}
/// A peer-announced ring is not faulted in whole at attach: a producer announcing a huge
/// (sparse) memfd would otherwise make the consumer allocate all of it.
#[test]
fn big_announced_ring_is_not_populated() {
    use rustix::fs::{memfd_create, MemfdFlags};
    let cap: usize = 512 << 20;
    let fd = memfd_create("hostile", MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING).unwrap();
    rustix::fs::ftruncate(&fd, (crate::layout::HEADER_SIZE + cap) as u64).unwrap();
    let h = Header::new(cap, cap / 2 - SLOT_HEADER_SIZE, std::process::id());
    // SAFETY: `Header` is plain integers and atomics, `repr(C)`, no padding with undefined
    // contents that matters here (the bytes go to a file).
    let bytes = unsafe {
        std::slice::from_raw_parts(
            &h as *const Header as *const u8,
            std::mem::size_of::<Header>(),
        )
    };
    rustix::io::pwrite(&fd, bytes, 0).unwrap();
    rustix::fs::fcntl_add_seals(&fd, crate::segment::required_seals()).unwrap();
    let seg = open_memfd(fd.as_fd(), Some(cap as u64), Pages::Now).unwrap();
    let len = crate::layout::HEADER_SIZE + cap;
    let mut vec = vec![0u8; len / 4096];
    // SAFETY: the mapping is `len` bytes at `base`, page aligned; `vec` has one byte per page.
    let rc = unsafe { libc::mincore(seg.base().cast(), len, vec.as_mut_ptr()) };
    assert_eq!(rc, 0);
    let resident = vec.iter().filter(|b| **b & 1 != 0).count() * 4096;
    assert!(
        resident < 64 << 20,
        "{} MiB of a {} MiB ring resident after attach",
        resident >> 20,
        cap >> 20
    );
}
