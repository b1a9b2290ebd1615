//! The one bound on what a pipeline holds between its readers and its writer: decoded bytes
//! and units of work (splits, leases) in flight.
//!
//! Every decoded batch on its way to the writer travels with a [`Permit`] for its bytes, taken
//! from the pipeline's [`Budget`] before the batch is queued and given back when the writer has
//! taken it (the permit is dropped). Every unit of work that reads holds a `Unit` while it
//! runs. So a pipeline holds at most `bytes` of decoded batches (plus the front's few, below)
//! and `units` readers: the splits of the plan order in `serve`, the leases of the dynamic
//! order. The fixed order's stream is one reader whose windows hold permits; it bounds the
//! groups of windows it reads ahead itself (`stream`).
//!
//! Order without deadlock: a writer that takes batches in a fixed order (the plan order takes
//! split after split) must always get the next one it waits for, even when readers further
//! ahead filled the budget. The reader at the front of that order (`Budget::advance` says
//! which) may queue up to `FRONT_QUEUE` batches over the budget; the others wait. A source
//! without an order (leases: the writer takes whatever arrives) asks with `Place::Any`: its
//! batches never wait on one another. Either way a batch alone larger than the whole budget
//! passes when nothing else is held, so a budget below one batch slows a pipeline down to one
//! batch at a time instead of stopping it.
//!
//! Rejected: a bounded channel per reader (the old plan-order read-ahead and the daemon's
//! token channel): it bounds batches, not bytes, and each source had its own.

use std::sync::{Arc, Condvar, Mutex, MutexGuard};

/// Batches the reader at the front may queue when the budget is spent (it never waits on the
/// budget itself while it has fewer queued, so the writer always has something to take).
pub(crate) const FRONT_QUEUE: usize = 2;

/// Where a reader stands in the order the writer takes batches in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Place {
    /// The writer takes this reader's batches after those of every place before `k` (the
    /// plan order: `k` is the split's index in the epoch).
    At(u64),
    /// The writer takes these next whatever else is queued: the one ordered stream of a
    /// budget (the fixed order's rows, whose windows are held under the same budget).
    Front,
    /// The writer takes batches in whatever order they arrive.
    Any,
}

impl Place {
    /// Whether batches at this place are the writer's next when it takes place `front`.
    fn is_front(self, front: u64) -> bool {
        match self {
            Place::At(k) => k == front,
            Place::Front => true,
            Place::Any => false,
        }
    }
}

#[derive(Debug, Default)]
struct State {
    bytes: usize,
    units: usize,
    front: u64,
    front_queued: usize,
    closed: bool,
}

/// Bytes and units a pipeline may hold; shared by its readers and its writer.
#[derive(Debug)]
pub struct Budget {
    bytes: usize,
    units: usize,
    state: Mutex<State>,
    changed: Condvar,
}

/// Bytes of a decoded batch held until the writer took it (released on drop).
#[derive(Debug)]
pub struct Permit {
    budget: Arc<Budget>,
    bytes: usize,
    place: Place,
}

/// A unit of work in flight (released on drop).
#[derive(Debug)]
pub(crate) struct Unit {
    budget: Arc<Budget>,
}

impl Budget {
    /// A budget of `bytes` decoded bytes and `units` units of work in flight (at least one).
    pub fn new(bytes: usize, units: usize) -> Arc<Self> {
        Arc::new(Self {
            bytes,
            units: units.max(1),
            state: Mutex::new(State::default()),
            changed: Condvar::new(),
        })
    }

    /// The bytes it allows.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn wait<'a>(&self, g: MutexGuard<'a, State>) -> MutexGuard<'a, State> {
        self.changed.wait(g).unwrap_or_else(|p| p.into_inner())
    }

    /// Waits for room for `bytes` of decoded batch at `place`; `None` once the pipeline is
    /// closed (the writer is gone: the reader stops).
    pub(crate) fn permit(self: &Arc<Self>, bytes: usize, place: Place) -> Option<Permit> {
        let mut st = self.lock();
        loop {
            if st.closed {
                return None;
            }
            let fits = st.bytes + bytes <= self.bytes || st.bytes == 0;
            let front = place.is_front(st.front);
            let ahead = matches!(place, Place::At(k) if k > st.front);
            let pass = match place {
                _ if front => fits || st.front_queued < FRONT_QUEUE,
                Place::At(_) => ahead && fits,
                Place::Front | Place::Any => fits,
            };
            if pass {
                st.bytes += bytes;
                if front {
                    st.front_queued += 1;
                }
                return Some(Permit {
                    budget: self.clone(),
                    bytes,
                    place,
                });
            }
            st = self.wait(st);
        }
    }

    /// Waits until another unit of work may start; `None` once the pipeline is closed.
    pub(crate) fn unit(self: &Arc<Self>) -> Option<Unit> {
        let mut st = self.lock();
        loop {
            if st.closed {
                return None;
            }
            if st.units < self.units {
                st.units += 1;
                return Some(Unit {
                    budget: self.clone(),
                });
            }
            st = self.wait(st);
        }
    }

    /// Whether another unit may start now (never waits).
    pub(crate) fn try_unit(self: &Arc<Self>) -> Option<Unit> {
        let mut st = self.lock();
        (!st.closed && st.units < self.units).then(|| {
            st.units += 1;
            Unit {
                budget: self.clone(),
            }
        })
    }

    /// The writer now takes the batches of place `front`; `queued` of them are already queued
    /// (they count as the front's from now on).
    pub(crate) fn advance(&self, front: u64, queued: usize) {
        let mut st = self.lock();
        st.front = front;
        st.front_queued = queued;
        self.changed.notify_all();
    }

    /// Ends the pipeline: every reader waiting or asking from now on is told to stop.
    pub(crate) fn close(&self) {
        self.lock().closed = true;
        self.changed.notify_all();
    }

    /// Bytes held now.
    #[cfg(test)]
    pub(crate) fn held(&self) -> usize {
        self.lock().bytes
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        let mut st = self.budget.lock();
        st.bytes = st.bytes.saturating_sub(self.bytes);
        // The writer takes batches from the front only: one of the front's went (a batch that
        // was queued ahead when the front moved to it counts as the front's, see `advance`).
        if self.place.is_front(st.front) {
            st.front_queued = st.front_queued.saturating_sub(1);
        }
        self.budget.changed.notify_all();
    }
}

impl Drop for Unit {
    fn drop(&mut self) {
        let mut st = self.budget.lock();
        st.units = st.units.saturating_sub(1);
        self.budget.changed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use std::thread;
    use std::time::Duration;

    use super::*;

    /// A reader waits for a permit `ms` long at most: `Some(passed)`.
    fn try_permit(b: &Arc<Budget>, bytes: usize, place: Place) -> Option<Permit> {
        let (tx, rx) = crossbeam_channel::bounded(1);
        let b2 = b.clone();
        thread::spawn(move || {
            let _ = tx.send(b2.permit(bytes, place));
        });
        let got = rx.recv_timeout(Duration::from_millis(200)).ok().flatten();
        if got.is_none() {
            b.close(); // frees the waiting thread
        }
        got
    }

    #[test]
    fn bytes_are_bounded_and_come_back_when_the_writer_takes_them() {
        let b = Budget::new(100, 4);
        let p1 = b.permit(60, Place::Any).unwrap();
        assert_eq!(b.held(), 60);
        let p2 = b.permit(40, Place::Any).unwrap();
        assert_eq!(b.held(), 100);
        drop(p1);
        assert_eq!(b.held(), 40);
        let p3 = b.permit(60, Place::Any).unwrap();
        drop((p2, p3));
        assert_eq!(b.held(), 0);
        // Full: the next reader waits.
        let _full = b.permit(100, Place::Any).unwrap();
        assert!(try_permit(&b, 1, Place::Any).is_none());
    }

    #[test]
    fn a_batch_larger_than_the_budget_passes_alone() {
        let b = Budget::new(10, 1);
        let big = b.permit(1000, Place::Any).unwrap();
        assert!(try_permit(&b, 1, Place::Any).is_none(), "a second waits");
        drop(big);
    }

    /// Readers ahead of the front wait for room; the front always gets its next batches, so
    /// an ordered writer never waits for a reader stuck behind the others.
    #[test]
    fn the_front_passes_when_readers_ahead_filled_the_budget() {
        let b = Budget::new(100, 4);
        let ahead = b.permit(100, Place::At(1)).unwrap();
        let f1 = b.permit(50, Place::At(0)).unwrap();
        let f2 = b.permit(50, Place::At(0)).unwrap();
        assert_eq!(b.held(), 200, "the front's two batches are over the budget");
        // A third waits until the writer took one.
        drop(f1);
        let f3 = b.permit(50, Place::At(0)).unwrap();
        drop((f2, f3, ahead));
        // Behind the front: never (the writer took that place already).
        let b = Budget::new(100, 4);
        b.advance(3, 0);
        assert!(try_permit(&b, 1, Place::At(2)).is_none());
    }

    #[test]
    fn units_are_bounded_and_close_releases_every_waiter() {
        let b = Budget::new(100, 2);
        let u1 = b.unit().unwrap();
        let _u2 = b.unit().unwrap();
        assert!(b.try_unit().is_none());
        drop(u1);
        assert!(b.try_unit().is_some());
        let b2 = b.clone();
        let _hold = b.permit(100, Place::Any).unwrap();
        let waiter = thread::spawn(move || b2.permit(10, Place::Any).is_none());
        thread::sleep(Duration::from_millis(50));
        b.close();
        assert!(waiter.join().unwrap(), "closed: the waiter stops");
        assert!(b.unit().is_none());
    }
}
