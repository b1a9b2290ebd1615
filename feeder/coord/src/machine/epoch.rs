//! Epochs: opening one (its queue in split order, the per-rank quota, the `pad` cycle) and
//! closing it once every rank acked its quota (dropping the remainder under `drop`, moving
//! to the next epoch or ending the feed). The ledgers of acked rows per data epoch live here.

use super::queue::{Queue, Range};
use super::seed::split_order;
use super::{Ledger, LogKind, Machine};
use crate::Remainder;

impl Machine {
    pub(super) fn ledger(&mut self, data_epoch: u32) -> &mut Ledger {
        let n = self.split_rows.len();
        self.ledgers
            .entry(data_epoch)
            .or_insert_with(|| Ledger::new(n))
    }

    /// Appends the un-acked rows of `data_epoch`, in its order, to the queue.
    pub(super) fn enqueue_data_epoch(&mut self, data_epoch: u32) -> u64 {
        let order = self.order(data_epoch);
        let mut rows = 0;
        self.ledger(data_epoch);
        for &s in &order {
            let n = self.split_rows[s as usize];
            let gaps = self.ledgers[&data_epoch].gaps(s, n);
            for (a, b) in gaps {
                rows += b - a;
                let r = Range {
                    data_epoch,
                    split: s,
                    first: a,
                    rows: b - a,
                };
                let q = if data_epoch == self.epoch {
                    &mut self.queue
                } else {
                    &mut self.next_queue
                };
                q.push_back(r, &self.split_hosts[s as usize]);
            }
        }
        if data_epoch == self.epoch {
            self.pad_order = order
                .into_iter()
                .filter(|&s| self.split_rows[s as usize] > 0)
                .collect();
            self.pad_at = (0, 0);
        }
        rows
    }

    /// Sets up training epoch `e`: its queue and the per-rank quota.
    pub(super) fn start_epoch(&mut self, e: u32) {
        self.epoch = e;
        self.restart_counts();
        // Ledgers of finished data epochs are of no further use.
        self.ledgers.retain(|&d, _| d >= e);
        if self.fixed_deals(e) {
            self.fixed_start_epoch(e);
            self.maybe_advance();
            return;
        }
        // Under wrap the queue may already hold the rest of this data epoch.
        let fresh = if self.queued_next {
            self.queued_next = false;
            let order = self.order(e);
            self.pad_order = order
                .into_iter()
                .filter(|&s| self.split_rows[s as usize] > 0)
                .collect();
            self.pad_at = (0, 0);
            self.queue = std::mem::take(&mut self.next_queue);
            self.queue.entries.iter().flatten().map(|r| r.rows).sum()
        } else {
            self.queue = Queue::default();
            self.next_queue = Queue::default();
            self.enqueue_data_epoch(e)
        };
        let wb = self.row_per_step();
        let steps = match self.cfg.remainder {
            Remainder::Drop => fresh / wb,
            Remainder::Pad | Remainder::Wrap => fresh.div_ceil(wb),
        };
        self.quota = steps * self.cfg.batch_size;
        // A resumed epoch may have nothing left for anyone.
        self.maybe_advance();
    }

    /// Every rank's rows leased and acked back to none, for an epoch that starts (or resumes).
    pub(super) fn restart_counts(&mut self) {
        for r in &mut self.ranks {
            r.assigned = 0;
            r.acked = 0;
        }
        self.quota_met_below = 0;
    }

    /// Closes the epoch when every rank acked its quota, and starts the next (or ends the feed).
    pub(super) fn maybe_advance(&mut self) {
        if self.finished {
            return;
        }
        let (q, from) = (self.quota, self.quota_met_below);
        let done = from
            + self.ranks[from..]
                .iter()
                .take_while(|r| r.acked == q)
                .count();
        #[cfg(test)]
        {
            self.ranks_inspected += (done - from + 1).min(self.ranks.len() - from) as u64;
        }
        self.quota_met_below = done;
        if done < self.ranks.len() {
            return;
        }
        // Leases still out are of the next epoch (ranks that went ahead under the fixed order).
        debug_assert!(self.leases.values().all(|l| l.epoch == self.epoch + 1));
        let e = self.epoch;
        // Rows of this epoch still queued are the remainder under drop (under pad and wrap
        // the quotas cover every row, so there are none): dropped and counted. Under wrap the
        // rest of the next epoch's order stays in `next_queue` for it.
        for r in self.queue.drain() {
            debug_assert_eq!(self.cfg.remainder, Remainder::Drop);
            self.counters.rows_dropped += r.rows;
            self.push_log(LogKind::Drop, u32::MAX, 0, r, false);
        }
        self.fixed_drop_rest();
        self.steps_done += self.quota / self.cfg.batch_size;
        if e + 1 >= self.cfg.epochs {
            self.epoch = e + 1;
            self.finished = true;
            self.ledgers.clear();
            return;
        }
        self.start_epoch(e + 1);
    }

    /// The split order of a data epoch: shuffled by (seed, epoch), or plan order.
    fn order(&self, data_epoch: u32) -> Vec<u32> {
        let n = self.split_rows.len() as u32;
        if self.cfg.shuffle {
            split_order(self.cfg.seed, data_epoch, n)
        } else {
            (0..n).collect()
        }
    }
}
