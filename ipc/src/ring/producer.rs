//! The producer's side of the ring: [`RingProducer`] reserves space at `head` (waiting for the
//! consumer to release it), and a [`Reservation`] is written and published, or dropped unsent.

use std::ops::{Deref, DerefMut};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{deadline_after, fits, now_ms, spin_then_sleep, wake_after_publish, Lost, Shared};
use crate::layout::{record_size, SlotHeader, KIND_DATA, KIND_PAD, SLOT_HEADER_SIZE};
use crate::sync::{futex_wake, lock, Ordering};
use crate::ReserveError;

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

    /// Data frames the consumer handed to its user: what it published, never more than the
    /// frames committed (a broken peer's word frees nothing and acks nothing it never got).
    pub(crate) fn handed(&self) -> u64 {
        self.sh.handed().min(self.seq)
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
/// (the consumer's side is a [`Slot`](crate::Slot)).
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
