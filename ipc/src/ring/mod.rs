//! The SPSC frame ring over a [`Segment`]: the protocol, independent of processes and sockets.
//!
//! Positions (`head`, `tail`, the consumer's read position) are byte counts since creation;
//! the offset in the payload is `pos & (capacity - 1)`. Invariants:
//! `tail <= read <= head <= tail + capacity`, all multiples of 64.
//!
//! * Producer: writes the frame bytes and its [`SlotHeader`](crate::layout::SlotHeader) at `head`, then publishes with a
//!   Release store of `head` (SYNC: pairs with the consumer's Acquire load of `head` in
//!   [`RingConsumer::next`]). A frame that does not fit before the end of the payload is
//!   preceded by a padding record that runs to the end; the padding is published on its own
//!   so a frame of up to `capacity - 64` bytes always fits eventually.
//! * Consumer: reads the record at its read position, hands out a [`Slot`], and records the
//!   slot's span in a release queue. Dropping a slot marks its span released; the released
//!   prefix of the queue is popped and `tail` advanced past it with a Release store (SYNC:
//!   pairs with the producer's Acquire load of `tail` in `wait_space`, so the consumer's reads
//!   of a frame happen before the producer overwrites it).
//! * Sleeping: a side that finds nothing to do spins briefly, then sets its waiting flag,
//!   issues a SeqCst fence, re-checks, and sleeps on the other side's futex word for at most
//!   one slice (100 ms). The waker stores its position, bumps the futex word, issues a SeqCst
//!   fence and reads the waiting flag (Dekker: at least one of the two sees the other), so a
//!   wake-up is never lost; the slices bound the damage if a peer dies.

use crate::layout::{Header, SLOT_HEADER_SIZE};
use crate::segment::Segment;
use crate::sync::{fence, futex_wait, futex_wake, lock, spin_hint, AtomicU32, Mutex, Ordering};
use crate::AttachError;
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

mod consumer;
mod producer;

pub(crate) use consumer::RingConsumer;
pub use consumer::Slot;
pub use producer::Reservation;
pub(crate) use producer::RingProducer;

/// Longest single futex sleep: a side checks its peer at least this often.
pub(crate) const WAIT_SLICE: Duration = Duration::from_millis(100);
/// How long a side spins before it sleeps on the futex.
#[cfg(not(loom))]
const SPIN: Duration = Duration::from_micros(30);
#[cfg(not(loom))]
const SPIN_MAX_ITERS: u32 = 1 << 16;
#[cfg(loom)]
const SPIN_MAX_ITERS: u32 = 1;

/// `timeout` from now; a timeout too large for an `Instant` (`Duration::MAX`: "no limit")
/// saturates to a century instead of panicking.
pub(crate) fn deadline_after(timeout: Duration) -> Instant {
    let now = Instant::now();
    now.checked_add(timeout)
        .unwrap_or_else(|| now + Duration::from_secs(100 * 365 * 24 * 3600))
}

/// What a wait slice callback reports: the peer is gone.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Lost;

/// The ring's memory plus its cached geometry.
pub(crate) struct Shared {
    seg: Box<dyn Segment>,
    cap: u64,
    mask: u64,
    max_frame: usize,
    /// `head` when the ring was opened (validated in `new`).
    head0: u64,
    /// Outstanding slots (consumer side only).
    rel: Mutex<Releases>,
    /// The process that mapped the ring. In a `fork()` child the mapping is still shared, so
    /// drops there (interpreter exit runs them) must not touch the ring: they would release
    /// the parent's slots or close its ring.
    owner: u32,
}

/// A record in the release queue: a slot handed out, or padding met while slots were.
struct Queued {
    start: u64,
    end: u64,
    released: bool,
}

/// The consumer's release queue: the records of its slots in ring order.
struct Releases {
    queue: VecDeque<Queued>,
    /// The consumer's reclaim position (mirror of `header.cons.tail`).
    tail: u64,
    /// Slots copied out of the ring by [`Shared::detach_outstanding`]: start -> region.
    detached: std::collections::HashMap<u64, u64>,
}

/// How much of the ring the consumer's outstanding slots hold.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Held {
    /// Slots handed out and not dropped yet that still live in the ring.
    pub slots: usize,
    /// Their bytes (frame records).
    pub bytes: u64,
    /// Bytes from the oldest outstanding slot to the read position: space the producer
    /// cannot reuse until that slot goes (the ring reclaims in order).
    pub pinned: u64,
    /// Slots copied out of the ring and still alive.
    pub detached: usize,
}

impl Shared {
    /// The ring over `seg`. The geometry comes from the segment's validated copy; `head` and
    /// `tail` are read once here and must be 64-byte aligned, `tail <= head <= tail + cap`
    /// (else `BadGeometry`): the consumer starts reading at `tail`.
    pub(crate) fn new(seg: Box<dyn Segment>) -> Result<Arc<Shared>, AttachError> {
        let (cap, max_frame) = seg.geometry();
        let h = seg.header();
        // SYNC: Acquire, pairs with the Release stores of tail and head by the other side.
        let tail = h.cons.tail.load(Ordering::Acquire);
        let head = h.prod.head.load(Ordering::Acquire);
        let align = SLOT_HEADER_SIZE as u64 - 1;
        if !cap.is_power_of_two()
            || tail & align != 0
            || head & align != 0
            || head.wrapping_sub(tail) > cap
        {
            return Err(AttachError::BadGeometry);
        }
        Ok(Arc::new(Shared {
            seg,
            cap,
            mask: cap - 1,
            max_frame,
            head0: head,
            rel: Mutex::new(Releases {
                queue: VecDeque::with_capacity(64),
                tail,
                detached: std::collections::HashMap::new(),
            }),
            owner: std::process::id(),
        }))
    }

    pub(crate) fn header(&self) -> &Header {
        self.seg.header()
    }

    /// Publishes the producer's status word (not from a `fork()` child: it is not the
    /// producer).
    pub(crate) fn set_producer_status(&self, v: u32) {
        if self.foreign() {
            return;
        }
        let w = &self.header().producer.status;
        // SYNC: Relaxed both ways: a diagnostic word, nothing else is published through it.
        if w.load(Ordering::Relaxed) != v {
            w.store(v, Ordering::Relaxed);
        }
    }

    /// Publishes that the consumer's user was handed the data frames `0..n` (the count only
    /// grows: a smaller `n` changes nothing). Not from a `fork()` child: it is not the consumer.
    pub(crate) fn set_handed(&self, n: u64) {
        if self.foreign() {
            return;
        }
        // SYNC: Release, pairs with the Acquire load in `handed`: what the consumer did before
        // handing the frames out (its reads of them) happens before the producer counts them.
        self.header().cons.handed.fetch_max(n, Ordering::Release);
    }

    /// The count the consumer published with `set_handed`, as written (unchecked: the
    /// producer bounds it by the frames it committed).
    pub(crate) fn handed(&self) -> u64 {
        // SYNC: Acquire, pairs with the Release in `set_handed`.
        self.header().cons.handed.load(Ordering::Acquire)
    }

    /// The producer's status word, as last published.
    pub(crate) fn producer_status(&self) -> u32 {
        // SYNC: Relaxed, as the store in `set_producer_status`.
        self.header().producer.status.load(Ordering::Relaxed)
    }

    fn at(&self, pos: u64) -> *mut u8 {
        // SAFETY: the offset is masked into the payload, which is `cap` bytes long.
        unsafe { self.seg.payload().add((pos & self.mask) as usize) }
    }

    /// Records an access to `[pos, pos + len)` for the loom model (no-op elsewhere).
    #[inline(always)]
    fn track(&self, pos: u64, len: usize, write: bool) {
        #[cfg(loom)]
        self.seg.track((pos & self.mask) as usize, len, write);
        #[cfg(not(loom))]
        let _ = (pos, len, write);
    }

    /// Marks the slot starting at `start` released and reclaims the released prefix.
    /// Whether this is a `fork()` child of the process that mapped the ring.
    pub(crate) fn foreign(&self) -> bool {
        std::process::id() != self.owner
    }

    fn release(&self, start: u64) {
        if self.foreign() {
            return;
        }
        let mut rel = lock(&self.rel);
        if let Some(region) = rel.detached.remove(&start) {
            self.seg.release_region(region);
            return;
        }
        let Ok(i) = rel.queue.binary_search_by_key(&start, |s| s.start) else {
            debug_assert!(false, "released a slot that is not outstanding");
            return;
        };
        rel.queue[i].released = true;
        if i != 0 {
            return;
        }
        let mut tail = rel.tail;
        while let Some(s) = rel.queue.front() {
            if !s.released {
                break;
            }
            tail = s.end;
            rel.queue.pop_front();
        }
        self.publish_tail(&mut rel, tail);
    }

    /// Reclaims a padding record at once (or queues it behind outstanding slots).
    fn release_pad(&self, start: u64, end: u64) {
        let mut rel = lock(&self.rel);
        if rel.queue.is_empty() {
            self.publish_tail(&mut rel, end);
        } else {
            rel.queue.push_back(Queued {
                start,
                end,
                released: true,
            });
        }
    }

    /// How much of the ring the outstanding slots hold.
    pub(crate) fn held(&self) -> Held {
        let rel = lock(&self.rel);
        let mut h = Held {
            detached: rel.detached.len(),
            ..Held::default()
        };
        for s in rel.queue.iter().filter(|s| !s.released) {
            h.slots += 1;
            h.bytes += s.end - s.start;
        }
        if let Some(last) = rel.queue.back() {
            h.pinned = last.end - rel.tail;
        }
        h
    }

    /// Copies every outstanding slot out of the ring (their addresses keep the same bytes,
    /// now private to this process) and reclaims their space at once. Returns what was held.
    pub(crate) fn detach_outstanding(&self) -> Result<Held, crate::DetachError> {
        let mut rel = lock(&self.rel);
        let held: Vec<(u64, u64)> = rel
            .queue
            .iter()
            .filter(|s| !s.released)
            .map(|s| (s.start, s.end))
            .collect();
        let Some(end) = rel.queue.back().map(|s| s.end) else {
            return Ok(Held::default());
        };
        let ranges: Vec<(usize, usize)> = held
            .iter()
            .map(|&(a, b)| ((a & self.mask) as usize, (b - a) as usize))
            .collect();
        let ids = if ranges.is_empty() {
            Vec::new()
        } else {
            self.seg.detach(&ranges)?
        };
        let mut out = Held::default();
        for (&(start, end), id) in held.iter().zip(ids) {
            rel.detached.insert(start, id);
            out.slots += 1;
            out.bytes += end - start;
        }
        out.pinned = end - rel.tail;
        rel.queue.clear();
        out.detached = rel.detached.len();
        self.publish_tail(&mut rel, end);
        Ok(out)
    }

    fn publish_tail(&self, rel: &mut Releases, tail: u64) {
        rel.tail = tail;
        let h = self.header();
        // SYNC: Release, pairs with the Acquire load of tail in RingProducer::wait_space: the
        // reads of every reclaimed frame happen before the producer reuses its bytes.
        h.cons.tail.store(tail, Ordering::Release);
        wake_after_publish(&h.cons.space_futex, &h.producer_waiting.waiting);
    }
}

/// Bumps `word` and wakes its sleeper if the sleeper announced itself.
fn wake_after_publish(word: &AtomicU32, waiting: &AtomicU32) {
    word.fetch_add(1, Ordering::Release);
    // SYNC: SeqCst fence, pairs with the fence in `sleep` (Dekker): either the sleeper's
    // re-check sees our position store, or we see its waiting flag and wake it.
    fence(Ordering::SeqCst);
    if waiting.load(Ordering::Relaxed) != 0 {
        futex_wake(word);
    }
}

/// Spin, then sleep one slice on `word`, unless `ready()` turns true. Returns whether it did.
fn spin_then_sleep(
    word: &AtomicU32,
    waiting: &AtomicU32,
    deadline: Instant,
    mut ready: impl FnMut() -> bool,
) -> bool {
    #[cfg(not(loom))]
    let spin_end = Instant::now() + SPIN;
    for i in 0..SPIN_MAX_ITERS {
        spin_hint();
        if ready() {
            return true;
        }
        #[cfg(not(loom))]
        if i % 64 == 63 && Instant::now() >= spin_end {
            break;
        }
        #[cfg(loom)]
        let _ = i;
    }
    let seen = word.load(Ordering::Acquire);
    waiting.store(1, Ordering::Relaxed);
    // SYNC: SeqCst fence, pairs with the fence in `wake_after_publish`.
    fence(Ordering::SeqCst);
    if ready() {
        waiting.store(0, Ordering::Relaxed);
        return true;
    }
    let left = deadline.saturating_duration_since(Instant::now());
    if !left.is_zero() {
        futex_wait(word, seen, left.min(WAIT_SLICE));
    }
    waiting.store(0, Ordering::Relaxed);
    ready()
}

fn now_ms() -> u64 {
    #[cfg(not(loom))]
    {
        // libc, not rustix: rustix reads the vDSO itself, which valgrind does not provide.
        let mut t = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `t` is a valid, writable timespec; CLOCK_MONOTONIC always exists.
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut t) };
        t.tv_sec as u64 * 1000 + t.tv_nsec as u64 / 1_000_000
    }
    #[cfg(loom)]
    {
        0
    }
}

/// Whether `need` bytes from `head` are free given the consumer's `tail`. A `tail` the
/// consumer could not have written (ahead of `head`, or more than `cap` behind) frees nothing.
fn fits(head: u64, need: u64, tail: u64, cap: u64) -> bool {
    head.checked_sub(tail)
        .and_then(|used| used.checked_add(need))
        .is_some_and(|n| n <= cap)
}
