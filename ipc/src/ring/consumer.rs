//! The consumer's side of the ring: [`RingConsumer`] hands out the record at its read position
//! as a [`Slot`], and advances `tail` past the released prefix of its slots.

use std::marker::PhantomData;
use std::ops::Deref;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{deadline_after, now_ms, spin_then_sleep, Held, Lost, Queued, Shared};
use crate::layout::{record_size, SlotHeader, KIND_DATA, KIND_PAD, SLOT_HEADER_SIZE};
use crate::sync::{futex_wake, lock, Ordering};
use crate::NextError;

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
/// [`Reservation`](crate::Reservation)): its bytes stay valid and unchanged until then. Slots may be held
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
