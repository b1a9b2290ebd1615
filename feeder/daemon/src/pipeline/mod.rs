//! The one pipeline of `serve` and the feeder daemon: a `Source` of work hands `Event`s to
//! one `EpochWriter`, which cuts batches of the job's size and writes frames into the ring.
//!
//! ```text
//!   source (one per feed)                                 writer (the feed's own thread)
//!   PlanOrder:   splits in plan order, decoded on the    EpochWriter: Rebatcher -> gathers of
//!                decode pool, taken split by split         batch_size rows, lineage, EndOfSplit,
//!   a channel:   the fixed order's stream (`stream`),      EndOfEpoch, EndOfFeed -> Writer -> ring
//!                the coordinator's leases (`daemon`)
//!            \__ every decoded batch holds a Permit of the feed's one Budget __/
//! ```
//!
//! - `Source`: what the writer pulls from, without a thread in between: `PlanOrder`
//!   decodes the splits of the plan in parallel and hands their events on in plan order from
//!   the writer's own calls; a channel (`Receiver<Event>`) is the source of work that comes
//!   from a thread of its own (the coordinator's leases, the fixed order's windows).
//! - [`Budget`]: the one memory and concurrency bound: decoded bytes between the readers and
//!   the writer, and units of work (splits, leases, windows) in flight.
//! - `EpochWriter`: the one write loop, a type with methods (as arrow's `BatchCoalescer`
//!   is a type): rows in, batches of exactly the job's size out, markers at split, epoch and
//!   feed ends.
//! - `decode_pool`: the one place the decode threads are made.

use std::sync::Arc;
use std::time::Duration;

use arrow_array::RecordBatch;
use crossbeam_channel::{Receiver, RecvTimeoutError};
use hydrofeed_format::Gather;

use crate::{Error, Result};

pub mod budget;
mod epoch;
mod plan_order;

pub use budget::Budget;
pub use budget::Permit;
pub(crate) use budget::Place;
pub(crate) use epoch::{BatchSink, Ended, EpochWriter};
pub(crate) use plan_order::PlanOrder;

/// Where a batch's rows come from: the coordinator's lease (0 without a coordinator) and the
/// split.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Tag {
    /// The lease.
    pub(crate) lease: u64,
    /// The split.
    pub(crate) split: u32,
}

/// Decoded rows on their way to the writer, with the bytes they hold of the budget.
pub(crate) struct Rows {
    pub(crate) tag: Tag,
    /// A decoded batch (or part of one), or rows of a shuffle window in its permutation that
    /// the writer copies straight into the ring.
    pub(crate) batch: Gather,
    /// Given back once the writer took the rows.
    pub(crate) permit: Option<Permit>,
}

/// What a source hands the writer.
pub(crate) enum Event {
    /// The rows that follow belong to epoch `e` (the daemon: a lease of that epoch came).
    Epoch(u32),
    /// Rows, in the order the trainer gets them.
    Rows(Rows),
    /// Split `.0` ended after `.1` rows: an `EndOfSplit` frame follows the batch holding its
    /// last row (the plan order).
    SplitEnd(u32, u64),
    /// The coordinator's end of feed, with the steps every rank took.
    End(u64),
    /// Reading failed: the rows before it still reach the trainer, then the error.
    Failed(Error),
}

/// What one pull from a source gave.
pub(crate) enum Pull {
    /// The next event.
    Event(Event),
    /// Nothing within the wait.
    Idle,
    /// The source has nothing more.
    Done,
}

/// Work the writer pulls from.
pub(crate) trait Source {
    /// Waits up to `timeout` for the next event.
    fn pull(&mut self, timeout: Duration) -> Pull;
}

impl Source for Receiver<Event> {
    fn pull(&mut self, timeout: Duration) -> Pull {
        match self.recv_timeout(timeout) {
            Ok(ev) => Pull::Event(ev),
            Err(RecvTimeoutError::Timeout) => Pull::Idle,
            Err(RecvTimeoutError::Disconnected) => Pull::Done,
        }
    }
}

/// Bytes a decoded batch holds, as the budget counts them: a slice its own rows' share, not
/// the whole buffers it points into (the slices of one decoded batch handed on apart would
/// each count all of it).
pub(crate) fn batch_bytes(b: &RecordBatch) -> usize {
    b.columns()
        .iter()
        .map(|c| {
            c.to_data()
                .get_slice_memory_size()
                .unwrap_or_else(|_| c.get_array_memory_size())
        })
        .sum()
}

/// The decode pool: `threads` threads (0: one per CPU) that every reader of a feed runs on.
pub(crate) fn decode_pool(threads: usize) -> Result<Arc<rayon::ThreadPool>> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("hf-decode{i}"))
        .build()
        .map(Arc::new)
        .map_err(|e| Error::external("starting the decode pool", e))
}
