//! Work requests and acks: [`Machine::request_work`] leases a row range capped by the rank's
//! remaining quota (locality first, then re-queued rows, then plan order; `wrap` and `pad`
//! rows once the epoch's own are handed out), and [`Machine::ack`] / [`Machine::ack_ranges`]
//! record the rows a trainer consumed, as intervals per lease, into the epoch's ledger.

use serde::{Deserialize, Serialize};

use super::queue::Range;
use super::seed::shuffle_seed;
use super::{Lease, LogKind, Machine, Stage, Work};
use crate::{Error, Remainder, Result};

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct LeaseState {
    pub(super) rank: u32,
    pub(super) incarnation: u64,
    /// Training epoch: the current one, or under the fixed order the next one (a rank that
    /// leased its share of the current epoch goes ahead).
    pub(super) epoch: u32,
    pub(super) range: Range,
    pub(super) pad: bool,
    /// Acked rows as sorted, disjoint, non-adjacent intervals `[a, b)` of split rows.
    pub(super) acked: Vec<(u64, u64)>,
    pub(super) acked_rows: u64,
    /// Under the fixed order: the index of the rank's segment it leases.
    pub(super) seg: Option<usize>,
}

impl LeaseState {
    /// A lease of `range` in training epoch `epoch` to `rank`'s incarnation `incarnation`,
    /// nothing acked yet.
    pub(super) fn new(
        rank: u32,
        incarnation: u64,
        epoch: u32,
        range: Range,
        pad: bool,
        seg: Option<usize>,
    ) -> Self {
        Self {
            rank,
            incarnation,
            epoch,
            range,
            pad,
            acked: Vec::new(),
            acked_rows: 0,
            seg,
        }
    }
}

/// Adds `[a, b)` to a sorted disjoint interval list; returns the parts that were new.
fn add_interval(iv: &mut Vec<(u64, u64)>, a: u64, b: u64) -> Vec<(u64, u64)> {
    let mut new = Vec::new();
    let mut at = a;
    for &(s, e) in iv.iter() {
        if e <= at {
            continue;
        }
        if s >= b {
            break;
        }
        if s > at {
            new.push((at, s));
        }
        at = at.max(e);
        if at >= b {
            break;
        }
    }
    if at < b {
        new.push((at, b));
    }
    if !new.is_empty() {
        iv.push((a, b));
        iv.sort_unstable();
        let mut merged: Vec<(u64, u64)> = Vec::with_capacity(iv.len());
        for &(s, e) in iv.iter() {
            match merged.last_mut() {
                Some(last) if s <= last.1 => last.1 = last.1.max(e),
                _ => merged.push((s, e)),
            }
        }
        *iv = merged;
    }
    new
}

impl Machine {
    fn host_id(&self, host: &str) -> Option<u32> {
        self.host_ids.get(host).copied()
    }

    /// The next lease for `rank`, a wait, or end of feed. `host` (if given) overrides the
    /// registered host for the HDFS-locality preference.
    pub fn request_work(
        &mut self,
        rank: u32,
        incarnation: u64,
        host: Option<&str>,
        now_ms: u64,
    ) -> Result<Work> {
        self.request_work_after(rank, incarnation, host, None, now_ms)
    }

    /// [`Machine::request_work`] of a feeder that says which lease it received last
    /// (`known`: its id, 0 for none): when a later one was granted to this incarnation and is
    /// still outstanding, its reply was lost (a retried call, a coordinator restarted on its
    /// journal), and that lease is the answer again, not a new one. `None`: a new request.
    pub fn request_work_after(
        &mut self,
        rank: u32,
        incarnation: u64,
        host: Option<&str>,
        known: Option<u64>,
        now_ms: u64,
    ) -> Result<Work> {
        self.check_live(rank, incarnation)?;
        self.touch(rank, now_ms);
        if let (Some(k), Some(l)) = (known, &self.granted[rank as usize]) {
            let outstanding = self
                .leases
                .get(&l.lease)
                .is_some_and(|s| s.rank == rank && s.incarnation == incarnation);
            if l.lease > k && outstanding {
                return Ok(Work::Lease(l.clone()));
            }
        }
        let w = self.next_work(rank, host)?;
        if let Work::Lease(l) = &w {
            self.granted[rank as usize] = Some(l.clone());
        }
        Ok(w)
    }

    fn next_work(&mut self, rank: u32, host: Option<&str>) -> Result<Work> {
        if self.finished {
            self.ranks[rank as usize].stage = Stage::Done;
            return Ok(Work::EndOfFeed {
                steps: self.steps_done,
            });
        }
        let left = self.quota - self.ranks[rank as usize].assigned;
        if left == 0 {
            if self.fixed_may_go_ahead() {
                return Ok(self.fixed_lease(rank, true));
            }
            return Ok(Work::Wait { retry_ms: 50 });
        }
        if self.fixed_deals(self.epoch) {
            return Ok(self.fixed_lease(rank, false));
        }
        let host = host.unwrap_or(&self.ranks[rank as usize].host);
        let hid = self.host_id(host);
        let mut taken = self.queue.take(hid);
        if taken.is_none() && self.cfg.remainder == Remainder::Wrap {
            if !self.queued_next {
                // This data epoch is all handed out: wrap into the next epoch's order.
                self.queued_next = true;
                self.enqueue_data_epoch(self.epoch + 1);
            }
            taken = self.next_queue.take(hid);
        }
        let (range, pad) = match taken {
            Some(r) => {
                let give = r.rows.min(left);
                if give < r.rows {
                    let rest = Range {
                        first: r.first + give,
                        rows: r.rows - give,
                        ..r
                    };
                    self.push_head(rest);
                }
                (Range { rows: give, ..r }, false)
            }
            None if self.cfg.remainder == Remainder::Pad => match self.next_pad(left) {
                Some(r) => (r, true),
                None => return Ok(Work::Wait { retry_ms: 50 }),
            },
            // Rows in flight with other ranks may come back if one dies.
            None => return Ok(Work::Wait { retry_ms: 50 }),
        };
        let id = self.next_lease;
        self.next_lease += 1;
        let inc = self.ranks[rank as usize].incarnation;
        self.ranks[rank as usize].assigned += range.rows;
        self.leases
            .insert(id, LeaseState::new(rank, inc, self.epoch, range, pad, None));
        self.counters.assignments += 1;
        self.push_log(LogKind::Assign, rank, id, range, pad);
        Ok(Work::Lease(Lease {
            lease: id,
            epoch: self.epoch,
            data_epoch: range.data_epoch,
            split: range.split,
            first_row: range.first,
            rows: range.rows,
            pad,
            shuffle_seed: shuffle_seed(self.cfg.seed, self.epoch, rank),
            job_seed: self.cfg.seed,
            order: None,
        }))
    }

    /// Puts a range back at the head of the queue of its data epoch.
    pub(super) fn push_head(&mut self, r: Range) {
        let q = if r.data_epoch == self.epoch {
            &mut self.queue
        } else {
            &mut self.next_queue
        };
        q.push_head(r, &self.split_hosts[r.split as usize]);
    }

    /// The next `pad` range: rows of this epoch's order again, cyclically, from its start.
    fn next_pad(&mut self, left: u64) -> Option<Range> {
        if self.pad_order.is_empty() {
            return None;
        }
        let (i, at) = self.pad_at;
        let s = self.pad_order[i];
        let n = self.split_rows[s as usize];
        let give = (n - at).min(left);
        self.pad_at = if at + give == n {
            ((i + 1) % self.pad_order.len(), 0)
        } else {
            (i, at + give)
        };
        Some(Range {
            data_epoch: self.epoch,
            split: s,
            first: at,
            rows: give,
        })
    }

    /// Records that the trainer of `rank` consumed `rows_acked` rows of `lease` (cumulative
    /// from the lease's first row). Repeated or older acks are accepted and change nothing.
    pub fn ack(
        &mut self,
        rank: u32,
        incarnation: u64,
        lease: u64,
        split: u32,
        rows_acked: u64,
        now_ms: u64,
    ) -> Result<()> {
        self.ack_ranges(rank, incarnation, lease, split, &[(0, rows_acked)], now_ms)
    }

    /// Records that the trainer of `rank` consumed the given rows of `lease`, as
    /// `(offset within the lease, rows)` ranges in any order: what a feeder with a shuffle
    /// buffer reports. Rows acked before are ignored (a retried ack is harmless); after a
    /// death only the rows never acked are re-queued, so shuffling keeps exactly-once.
    pub fn ack_ranges(
        &mut self,
        rank: u32,
        incarnation: u64,
        lease: u64,
        split: u32,
        ranges: &[(u64, u64)],
        now_ms: u64,
    ) -> Result<()> {
        self.check_live(rank, incarnation)?;
        self.touch(rank, now_ms);
        let Some(l) = self.leases.get_mut(&lease) else {
            return Err(Error::Coordinator(format!(
                "rank {rank}: ack of lease {lease} (split {split}), which is not outstanding"
            )));
        };
        if l.rank != rank || l.incarnation != incarnation || l.range.split != split {
            return Err(Error::Coordinator(format!(
                "rank {rank}: lease {lease} is split {} of rank {}, not split {split} of rank {rank}",
                l.range.split, l.rank
            )));
        }
        for &(off, rows) in ranges {
            if off.checked_add(rows).is_none_or(|end| end > l.range.rows) {
                return Err(Error::Coordinator(format!(
                    "rank {rank}: ack of rows [{off}, {off}+{rows}) of lease {lease} (split {split}), \
                     which has {}",
                    l.range.rows
                )));
            }
        }
        let mut new = Vec::new();
        for &(off, rows) in ranges {
            let a = l.range.first + off;
            new.extend(add_interval(&mut l.acked, a, a + rows));
        }
        let delta: u64 = new.iter().map(|(a, b)| b - a).sum();
        if delta == 0 {
            return Ok(());
        }
        l.acked_rows += delta;
        let (range, pad, complete) = (l.range, l.pad, l.acked_rows == l.range.rows);
        let ahead = l.epoch > self.epoch;
        // Fixed order: the segment advances to the end of the lease's acked prefix.
        let fixed = l.seg.map(|i| {
            let prefix = l.acked.first().filter(|iv| iv.0 == range.first);
            (i, prefix.map(|iv| iv.1))
        });
        if complete {
            self.leases.remove(&lease);
        }
        if let Some((i, prefix)) = fixed {
            self.fixed_acked(rank, (i, ahead), prefix, delta, complete);
        } else if pad {
            self.counters.rows_padded += delta;
        } else {
            let n = self.split_rows[split as usize];
            let e = self.epoch;
            if range.data_epoch != e {
                self.counters.rows_wrapped += delta;
            }
            for (from, to) in new {
                self.ledger(range.data_epoch)
                    .add(split, from, to, n)
                    .map_err(|(a, b)| {
                        Error::Internal(format!(
                            "data epoch {}, split {split}: rows [{a}, {b}) acked twice (lease \
                         {lease}, rank {rank}, training epoch {e})",
                            range.data_epoch
                        ))
                    })?;
            }
        }
        self.counters.rows_acked += delta;
        let r = &mut self.ranks[rank as usize];
        r.acked_total += delta;
        if ahead {
            // Rows of the next epoch: counted there ([`Machine::fixed_acked`]).
            return Ok(());
        }
        r.acked += delta;
        self.maybe_advance();
        Ok(())
    }
}
