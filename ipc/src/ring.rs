//! The SPSC frame ring over a [`Segment`]: the protocol, independent of processes and sockets.
//!
//! Positions (`head`, `tail`, the consumer's read position) are byte counts since creation;
//! the offset in the payload is `pos & (capacity - 1)`. Invariants:
//! `tail <= read <= head <= tail + capacity`, all multiples of 64.
//!
//! * Producer: writes the frame bytes and its [`SlotHeader`] at `head`, then publishes with a
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

use crate::layout::{record_size, Header, SlotHeader, KIND_DATA, KIND_PAD, SLOT_HEADER_SIZE};
use crate::segment::Segment;
use crate::sync::{fence, futex_wait, futex_wake, lock, spin_hint, AtomicU32, Mutex, Ordering};
use crate::{AttachError, NextError, ReserveError};
use std::collections::VecDeque;
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;
use std::time::{Duration, Instant};

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

/// The producer's end of a ring.
pub(crate) struct RingProducer {
    sh: Arc<Shared>,
    head: u64,
    tail_cache: u64,
    seq: u64,
    closed: bool,
}

impl RingProducer {
    pub(crate) fn new(sh: Arc<Shared>) -> RingProducer {
        let head = sh.head0;
        let tail_cache = lock(&sh.rel).tail;
        RingProducer {
            tail_cache,
            sh,
            head,
            seq: 0,
            closed: false,
        }
    }

    pub(crate) fn max_frame(&self) -> usize {
        self.sh.max_frame
    }

    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.sh
    }

    pub(crate) fn closed_by_consumer(&self) -> bool {
        self.consumer_closed()
    }

    fn consumer_closed(&self) -> bool {
        self.sh.header().consumer.closed.load(Ordering::Acquire) != 0
    }

    /// Reserves `len` bytes; `on_slice` runs after each sleep slice and may report the peer lost.
    pub(crate) fn reserve(
        &mut self,
        len: usize,
        timeout: Duration,
        on_slice: &mut dyn FnMut() -> Result<(), Lost>,
    ) -> Result<Reservation<'_>, ReserveError> {
        if self.closed {
            return Err(ReserveError::Closed);
        }
        if len > self.sh.max_frame {
            return Err(ReserveError::TooLarge);
        }
        if self.consumer_closed() {
            return Err(ReserveError::Closed);
        }
        let deadline = deadline_after(timeout);
        let rec = record_size(len) as u64;
        let off = self.head & self.sh.mask;
        if self.sh.cap - off < rec {
            // Pad to the end of the payload and publish the padding alone, so the frame can
            // start at offset 0 once the consumer has passed the padding.
            let pad = self.sh.cap - off;
            self.wait_space(pad, deadline, on_slice)?;
            let hdr = SlotHeader {
                len: pad - SLOT_HEADER_SIZE as u64,
                kind: KIND_PAD,
                reserved: 0,
                seq: 0,
            };
            self.sh.track(self.head, SLOT_HEADER_SIZE, true);
            // SAFETY: [head, head + pad) is free (wait_space) and within the payload; the
            // record start is 64-byte aligned.
            unsafe { std::ptr::write(self.sh.at(self.head) as *mut SlotHeader, hdr) };
            self.publish(self.head + pad);
        }
        self.wait_space(rec, deadline, on_slice)?;
        Ok(Reservation {
            pos: self.head,
            len,
            prod: self,
        })
    }

    /// Waits until `need` bytes from `head` are free.
    fn wait_space(
        &mut self,
        need: u64,
        deadline: Instant,
        on_slice: &mut dyn FnMut() -> Result<(), Lost>,
    ) -> Result<(), ReserveError> {
        if fits(self.head, need, self.tail_cache, self.sh.cap) {
            return Ok(());
        }
        let h = self.sh.header();
        loop {
            let cap = self.sh.cap;
            let head = self.head;
            let mut tail = self.tail_cache;
            // SYNC: Acquire, pairs with the Release store of tail in Shared::publish_tail.
            let ok = spin_then_sleep(
                &h.cons.space_futex,
                &h.producer_waiting.waiting,
                deadline,
                || {
                    tail = h.cons.tail.load(Ordering::Acquire);
                    // A close bumps space_futex too: counting it here means a close that
                    // lands before the futex word is sampled cannot leave us asleep for a
                    // whole slice. SYNC: Acquire, pairs with the Release store in
                    // RingConsumer::close.
                    fits(head, need, tail, cap) || h.consumer.closed.load(Ordering::Acquire) != 0
                },
            );
            if fits(head, 0, tail, cap) {
                self.tail_cache = tail;
            }
            if ok && fits(head, need, tail, cap) {
                return Ok(());
            }
            if self.consumer_closed() {
                return Err(ReserveError::Closed);
            }
            h.producer.heartbeat.store(now_ms(), Ordering::Relaxed);
            if on_slice().is_err() {
                return Err(if self.consumer_closed() {
                    ReserveError::Closed
                } else {
                    ReserveError::PeerLost
                });
            }
            if Instant::now() >= deadline {
                return Err(ReserveError::Timeout);
            }
        }
    }

    fn publish(&mut self, head: u64) {
        self.head = head;
        let h = self.sh.header();
        // SYNC: Release, pairs with the Acquire load of head in RingConsumer::next: the frame
        // bytes and header written before are visible to the consumer.
        h.prod.head.store(head, Ordering::Release);
        wake_after_publish(&h.prod.data_futex, &h.consumer_waiting.waiting);
    }

    /// Closes the producer end: the consumer drains what is published, then sees the end.
    pub(crate) fn close(&mut self) {
        if self.closed || self.sh.foreign() {
            return;
        }
        self.closed = true;
        let h = self.sh.header();
        // SYNC: Release, pairs with the Acquire load of producer.closed in RingConsumer::next
        // (every head store happens before it).
        h.producer.closed.store(1, Ordering::Release);
        h.prod.data_futex.fetch_add(1, Ordering::Release);
        futex_wake(&h.prod.data_futex);
    }
}

impl Drop for RingProducer {
    fn drop(&mut self) {
        self.close();
    }
}

/// Space for one frame in the ring, reserved by [`Producer::reserve`](crate::Producer::reserve)
/// (the consumer's side is a [`Slot`]).
///
/// Derefs to exactly `len` writable bytes, 64-byte aligned. [`commit`](Reservation::commit)
/// publishes it; dropping it without a commit releases the space and publishes nothing.
/// The bytes start uninitialised from the reader's point of view (they hold whatever an
/// earlier frame left); write all you commit.
pub struct Reservation<'a> {
    prod: &'a mut RingProducer,
    pos: u64,
    len: usize,
}

impl Reservation<'_> {
    /// Publishes the whole reservation as one frame.
    pub fn commit(self) {
        let n = self.len;
        self.commit_len(n);
    }

    /// Publishes the first `n` bytes as one frame (the rest of the space is released).
    ///
    /// # Panics
    /// If `n` is larger than the reserved length.
    pub fn commit_len(self, n: usize) {
        assert!(
            n <= self.len,
            "commit_len({n}) larger than the reservation ({})",
            self.len
        );
        let hdr = SlotHeader {
            len: n as u64,
            kind: KIND_DATA,
            reserved: 0,
            seq: self.prod.seq,
        };
        self.prod.sh.track(self.pos, SLOT_HEADER_SIZE, true);
        // SAFETY: the record start is inside the reserved, free space and 64-byte aligned.
        unsafe { std::ptr::write(self.prod.sh.at(self.pos) as *mut SlotHeader, hdr) };
        self.prod.seq += 1;
        let end = self.pos + record_size(n) as u64;
        self.prod.publish(end);
    }
}

impl Deref for Reservation<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: [pos + 64, pos + 64 + len) is reserved for us, inside the payload (the record
        // does not wrap), and no one else touches it until we publish it.
        unsafe {
            std::slice::from_raw_parts(self.prod.sh.at(self.pos).add(SLOT_HEADER_SIZE), self.len)
        }
    }
}

impl DerefMut for Reservation<'_> {
    fn deref_mut(&mut self) -> &mut [u8] {
        self.prod
            .sh
            .track(self.pos + SLOT_HEADER_SIZE as u64, self.len, true);
        // SAFETY: as in `deref`; `&mut self` makes the slice unique.
        unsafe {
            std::slice::from_raw_parts_mut(
                self.prod.sh.at(self.pos).add(SLOT_HEADER_SIZE),
                self.len,
            )
        }
    }
}

/// The consumer's end of a ring.
pub(crate) struct RingConsumer {
    sh: Arc<Shared>,
    read: u64,
    head_cache: u64,
    seq: u64,
    closed: bool,
    corrupt: bool,
}

impl RingConsumer {
    pub(crate) fn new(sh: Arc<Shared>) -> RingConsumer {
        let read = lock(&sh.rel).tail;
        RingConsumer {
            head_cache: read,
            sh,
            read,
            seq: 0,
            closed: false,
            corrupt: false,
        }
    }

    /// The next frame; `on_slice` runs after each sleep slice and may report the peer lost
    /// (frames already published are still delivered first).
    pub(crate) fn next(
        &mut self,
        timeout: Duration,
        on_slice: &mut dyn FnMut() -> Result<(), Lost>,
    ) -> Result<Option<Slot>, NextError> {
        if self.corrupt {
            return Err(NextError::Corrupt);
        }
        if self.closed {
            return Ok(None);
        }
        let mut deadline = None;
        loop {
            if self.read == self.head_cache {
                // SYNC: Acquire, pairs with the Release store of head in RingProducer::publish.
                self.head_cache = self.sh.header().prod.head.load(Ordering::Acquire);
            }
            if self.read != self.head_cache {
                match self.take() {
                    Ok(Some(slot)) => return Ok(Some(slot)),
                    Ok(None) => continue, // padding
                    Err(e) => {
                        self.corrupt = true;
                        return Err(e);
                    }
                }
            }
            let h = self.sh.header();
            // SYNC: Acquire, pairs with the Release store of producer.closed in
            // RingProducer::close; every head store happened before it.
            if h.producer.closed.load(Ordering::Acquire) != 0 {
                self.head_cache = h.prod.head.load(Ordering::Acquire);
                if self.read == self.head_cache {
                    return Ok(None);
                }
                continue;
            }
            let deadline = *deadline.get_or_insert_with(|| deadline_after(timeout));
            let read = self.read;
            let mut head = self.head_cache;
            let ready = spin_then_sleep(
                &h.prod.data_futex,
                &h.consumer_waiting.waiting,
                deadline,
                || {
                    head = h.prod.head.load(Ordering::Acquire);
                    head != read || h.producer.closed.load(Ordering::Acquire) != 0
                },
            );
            self.head_cache = head;
            if ready {
                continue;
            }
            h.consumer.heartbeat.store(now_ms(), Ordering::Relaxed);
            if on_slice().is_err() {
                self.head_cache = h.prod.head.load(Ordering::Acquire);
                if self.read != self.head_cache || h.producer.closed.load(Ordering::Acquire) != 0 {
                    continue;
                }
                return Err(NextError::PeerLost);
            }
            if Instant::now() >= deadline {
                return Err(NextError::Timeout);
            }
        }
    }

    /// Takes the record at `read` (which is published). `Ok(None)`: it was padding.
    fn take(&mut self) -> Result<Option<Slot>, NextError> {
        let sh = &self.sh;
        let start = self.read;
        let off = start & sh.mask;
        let avail = self.head_cache.wrapping_sub(start);
        if avail > sh.cap || avail < SLOT_HEADER_SIZE as u64 {
            return Err(NextError::Corrupt);
        }
        sh.track(start, SLOT_HEADER_SIZE, false);
        // SAFETY: the record header is published (start < head) and inside the payload, 64-byte
        // aligned (`start` is: checked in `Shared::new`, then advanced by record sizes); read
        // by value, once (volatile: the other process shares this memory and may rewrite it;
        // every check below uses this copy).
        let hdr: SlotHeader = unsafe { std::ptr::read_volatile(sh.at(start) as *const SlotHeader) };
        match hdr.kind {
            KIND_PAD => {
                let size = sh.cap - off;
                if hdr.len.checked_add(SLOT_HEADER_SIZE as u64) != Some(size) || size > avail {
                    return Err(NextError::Corrupt);
                }
                self.read = start.checked_add(size).ok_or(NextError::Corrupt)?;
                sh.release_pad(start, self.read);
                Ok(None)
            }
            KIND_DATA => {
                if hdr.len > sh.max_frame as u64 || hdr.seq != self.seq {
                    return Err(NextError::Corrupt);
                }
                // hdr.len <= max_frame < cap: no overflow below.
                let len = hdr.len as usize;
                let size = record_size(len) as u64;
                if size > avail || off + size > sh.cap {
                    return Err(NextError::Corrupt);
                }
                let end = start.checked_add(size).ok_or(NextError::Corrupt)?;
                self.seq += 1;
                self.read = end;
                lock(&sh.rel).queue.push_back(Queued {
                    start,
                    end: self.read,
                    released: false,
                });
                // SAFETY: inside the payload, see the checks above.
                let ptr = unsafe { sh.at(start).add(SLOT_HEADER_SIZE) };
                Ok(Some(Slot {
                    sh: Arc::clone(sh),
                    ptr,
                    len,
                    start,
                    _not_unpin: PhantomData,
                }))
            }
            _ => Err(NextError::Corrupt),
        }
    }

    /// How much of the ring outstanding slots hold.
    pub(crate) fn held(&self) -> Held {
        self.sh.held()
    }

    /// See [`Shared::detach_outstanding`].
    pub(crate) fn detach_outstanding(&mut self) -> Result<Held, crate::DetachError> {
        self.sh.detach_outstanding()
    }

    /// Ring capacity in bytes.
    pub(crate) fn capacity(&self) -> u64 {
        self.sh.cap
    }

    /// The payload's current address and length (moves after a detach).
    pub(crate) fn payload(&self) -> (*mut u8, usize) {
        (self.sh.seg.payload(), self.sh.cap as usize)
    }

    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.sh
    }

    /// Whether the producer is asleep waiting for space.
    pub(crate) fn producer_waiting(&self) -> bool {
        self.sh
            .header()
            .producer_waiting
            .waiting
            .load(Ordering::Relaxed)
            != 0
    }

    /// Closes the consumer end: the producer's reserve returns `Closed` from now on.
    pub(crate) fn close(&mut self) {
        if self.closed || self.sh.foreign() {
            return;
        }
        self.closed = true;
        let h = self.sh.header();
        h.consumer.closed.store(1, Ordering::Release);
        h.cons.space_futex.fetch_add(1, Ordering::Release);
        futex_wake(&h.cons.space_futex);
    }
}

impl Drop for RingConsumer {
    fn drop(&mut self) {
        self.close();
    }
}

/// A frame's slot in the ring, held by the consumer until dropped (the producer's side is a
/// [`Reservation`]): its bytes stay valid and unchanged until then. Slots may be held
/// together, moved to other threads and dropped in any order; the ring reclaims space in ring
/// order as the oldest outstanding slots go.
pub struct Slot {
    sh: Arc<Shared>,
    ptr: *const u8,
    len: usize,
    start: u64,
    _not_unpin: PhantomData<()>,
}

// SAFETY: the slot's bytes are not written by anyone until it is dropped (the producer
// never writes below tail + capacity, and tail stays at or below this frame while it is
// outstanding); the release queue is behind a mutex; the mapping is kept alive by the Arc.
unsafe impl Send for Slot {}
// SAFETY: as above; shared access is read-only.
unsafe impl Sync for Slot {}

impl Slot {
    /// The frame's bytes (same as `&*slot`).
    pub fn bytes(&self) -> &[u8] {
        self
    }
}

impl Deref for Slot {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.sh
            .track(self.start + SLOT_HEADER_SIZE as u64, self.len, false);
        // SAFETY: see the `Send` impl: published, inside the payload, immutable while held.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

impl AsRef<[u8]> for Slot {
    fn as_ref(&self) -> &[u8] {
        self
    }
}

impl std::fmt::Debug for Slot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Slot")
            .field("pos", &self.start)
            .field("len", &self.len)
            .finish()
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.sh.release(self.start);
    }
}
