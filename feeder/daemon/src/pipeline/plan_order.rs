//! [`PlanOrder`]: the splits of a plan in plan order, decoded in parallel. Up to one split per
//! unit of the budget is read at a time, each on the decode pool into a channel of its own;
//! the writer takes them split by split from its own [`Source::pull`] calls, so the trainer
//! sees the plan's order and no thread stands between the readers and the writer. The splits
//! behind the one being taken hold at most the budget's bytes between them; the front's
//! reader never waits for them ([`Place::At`]).

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};
use hydrofeed_format::{self as format, Gather, Plan, ReadOptions};
use hydrofeed_storage::Storage;

use super::budget::Unit;
use super::{batch_bytes, Budget, Event, Place, Pull, Rows, Source, Tag};

/// One epoch of a plan, split after split.
pub(crate) struct PlanOrder {
    storage: Arc<dyn Storage>,
    plan: Arc<Plan>,
    read: ReadOptions,
    pool: Arc<rayon::ThreadPool>,
    budget: Arc<Budget>,
    /// The next split to start.
    next: usize,
    /// The splits started and not yet taken, in plan order: the front's events go out first.
    started: VecDeque<Receiver<Event>>,
    /// The index of the front split.
    front: u64,
}

impl PlanOrder {
    /// Reads `plan` with `read` on `pool`, within `budget`.
    pub(crate) fn new(
        storage: Arc<dyn Storage>,
        plan: Arc<Plan>,
        read: ReadOptions,
        pool: Arc<rayon::ThreadPool>,
        budget: Arc<Budget>,
    ) -> Self {
        Self {
            storage,
            plan,
            read,
            pool,
            budget,
            next: 0,
            started: VecDeque::new(),
            front: 0,
        }
    }

    /// Starts the next splits while the budget has units for them.
    fn start(&mut self) {
        while self.next < self.plan.splits.len() {
            let Some(unit) = self.budget.try_unit() else {
                return;
            };
            let (tx, rx) = crossbeam_channel::unbounded();
            let reader = SplitRead {
                storage: self.storage.clone(),
                plan: self.plan.clone(),
                read: self.read.clone(),
                budget: self.budget.clone(),
                index: self.next,
            };
            self.pool.spawn(move || reader.run(unit, &tx));
            self.started.push_back(rx);
            self.next += 1;
        }
    }
}

impl Source for PlanOrder {
    fn pull(&mut self, timeout: Duration) -> Pull {
        loop {
            self.start();
            let Some(rx) = self.started.front() else {
                return Pull::Done; // every split taken
            };
            match rx.recv_timeout(timeout) {
                Ok(ev) => return Pull::Event(ev),
                Err(RecvTimeoutError::Timeout) => return Pull::Idle,
                // A split's channel closes after its `SplitEnd` or `Failed`: on to the next,
                // whose batches already queued count as the front's.
                Err(RecvTimeoutError::Disconnected) => {
                    self.started.pop_front();
                    self.front += 1;
                    let queued = self.started.front().map_or(0, Receiver::len);
                    self.budget.advance(self.front, queued);
                }
            }
        }
    }
}

impl Drop for PlanOrder {
    fn drop(&mut self) {
        // Splits still in flight (an error, or the trainer left) stop at their next batch.
        self.budget.close();
    }
}

/// One split's read, on the decode pool.
struct SplitRead {
    storage: Arc<dyn Storage>,
    plan: Arc<Plan>,
    read: ReadOptions,
    budget: Arc<Budget>,
    index: usize,
}

impl SplitRead {
    /// Sends the split's batches, then `SplitEnd`, or `Failed`. Stops early when the writer has
    /// gone (an error in an earlier split, or the trainer left).
    fn run(self, _unit: Unit, tx: &Sender<Event>) {
        let split = &self.plan.splits[self.index];
        let reader = match format::open_split(&self.storage, &self.plan, split, &self.read) {
            Ok(r) => r,
            Err(e) => {
                let _ = tx.send(Event::Failed(e));
                return;
            }
        };
        let tag = Tag {
            lease: 0,
            split: split.id,
        };
        let mut rows = 0u64;
        for b in reader {
            match b {
                Ok(b) if b.num_rows() == 0 => {}
                Ok(batch) => {
                    rows += batch.num_rows() as u64;
                    let place = Place::At(self.index as u64);
                    let Some(permit) = self.budget.permit(batch_bytes(&batch), place) else {
                        return;
                    };
                    let (batch, permit) = (Gather::from(batch), Some(permit));
                    if tx.send(Event::Rows(Rows { tag, batch, permit })).is_err() {
                        return;
                    }
                }
                Err(e) => {
                    let _ = tx.send(Event::Failed(e));
                    return;
                }
            }
        }
        let _ = tx.send(Event::SplitEnd(split.id, rows));
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use arrow_array::cast::AsArray;
    use arrow_array::types::Int64Type;
    use hydrofeed_format::gen::{write_dataset, GenOptions};
    use hydrofeed_format::split::Format;

    use super::*;
    use crate::pipeline::budget::FRONT_QUEUE;
    use crate::pipeline::decode_pool;

    fn plan(dir: &Path) -> (Arc<dyn Storage>, Arc<Plan>, ReadOptions) {
        let opts = GenOptions {
            format: Format::Tfrecord,
            rows: 4000,
            files: 8,
            ..Default::default()
        };
        write_dataset(dir, &opts).unwrap();
        let storage = hydrofeed_storage::open_storage("/").unwrap();
        let read = ReadOptions {
            batch_rows: 100,
            ..Default::default()
        };
        let plan = format::plan(&storage, &dir.display().to_string(), &read).unwrap();
        (storage, Arc::new(plan), read)
    }

    /// A writer slower than its readers: the splits ahead of the front never hold more than the
    /// budget, the front never more than its queue over it, and the rows come in plan order.
    #[test]
    fn readers_ahead_hold_the_budget_and_rows_keep_the_plan_order() {
        let d = tempfile::tempdir().unwrap();
        let (storage, plan, read) = plan(d.path());
        let pool = decode_pool(4).unwrap();
        let one_batch = 100 * (784 * 4 + 8);
        for budget_bytes in [1, 3 * one_batch] {
            let budget = Budget::new(budget_bytes, 4);
            let mut src = PlanOrder::new(
                storage.clone(),
                plan.clone(),
                read.clone(),
                pool.clone(),
                budget.clone(),
            );
            let (mut ids, mut ends, mut most) = (Vec::new(), 0, 0);
            loop {
                // Give the readers time to run ahead as far as the budget lets them.
                std::thread::sleep(Duration::from_millis(2));
                most = most.max(budget.held());
                match src.pull(Duration::from_secs(10)) {
                    Pull::Event(Event::Rows(r)) => {
                        let col = r
                            .batch
                            .as_slice()
                            .unwrap()
                            .column_by_name("id")
                            .unwrap()
                            .clone();
                        ids.extend(col.as_primitive::<Int64Type>().values().iter().copied());
                    }
                    Pull::Event(Event::SplitEnd(..)) => ends += 1,
                    Pull::Event(Event::Failed(e)) => panic!("{e}"),
                    Pull::Event(_) => panic!("a plan order sends rows and split ends only"),
                    Pull::Idle => panic!("no event within 10 s"),
                    Pull::Done => break,
                }
            }
            assert_eq!(ids, (0..4000).collect::<Vec<i64>>(), "plan order");
            assert_eq!(ends, plan.splits.len());
            // Each batch's bytes as Arrow counts them, with some slack for its buffers.
            let bound = budget_bytes + (FRONT_QUEUE + 1) * one_batch * 2;
            assert!(most <= bound, "{most} bytes held, budget {budget_bytes}");
            assert!(most > 0, "the readers queued nothing ahead");
            drop(src);
            assert_eq!(budget.held(), 0, "every permit came back");
        }
    }
}
