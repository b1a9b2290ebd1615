//! The fixed order: every rank's rows of an epoch, and their order, are a function of (plan,
//! seed, epoch, workers, batch size, shuffle buffer, cycle length) (`crate::order`), not of
//! who asks first. The machine deals each rank its [`Segment`]s, leases a segment from the
//! position its trainer reached, and advances that position on acks (cumulative: the ring is
//! FIFO and the stream is in order). A dead rank's lease is simply released: the rank's next
//! incarnation goes on from the acked position, and no rows move to another rank (that would
//! change the streams). HDFS locality plays no part here.

use super::lease::LeaseState;
use super::queue::Range;
use super::seed::shuffle_seed;
use super::{Lease, LogKind, Machine, OrderLease, Work};
use crate::order::{chunk_range, quota, recut, OrderSpec, Segment};
use crate::OrderState;

/// The `split` of a lease that carries a segment of the fixed order.
pub const SEGMENT_SPLIT: u32 = u32::MAX;

/// A rank's segment: `seg.from` advances as the trainer acks.
#[derive(Debug, Clone)]
pub(super) struct FixedSeg {
    pub(super) seg: Segment,
    pub(super) lease: Option<u64>,
}

/// The fixed order's dealing of the current epoch.
#[derive(Debug, Clone)]
pub(super) struct Fixed {
    pub(super) spec: OrderSpec,
    pub(super) ranks: Vec<Vec<FixedSeg>>,
    /// Rows no rank receives (fewer than one step under `drop`; dropped when the epoch closes).
    pub(super) rest: Vec<Segment>,
}

impl Fixed {
    pub(super) fn new(spec: OrderSpec, workers: u32) -> Self {
        Self {
            spec,
            ranks: vec![Vec::new(); workers as usize],
            rest: Vec::new(),
        }
    }

    fn deal(&mut self, shares: Vec<Vec<Segment>>, rest: Vec<Segment>) {
        self.ranks = shares
            .into_iter()
            .map(|v| {
                v.into_iter()
                    .filter(|s| !s.is_empty())
                    .map(|seg| FixedSeg { seg, lease: None })
                    .collect()
            })
            .collect();
        self.rest = rest.into_iter().filter(|s| !s.is_empty()).collect();
    }
}

impl Machine {
    /// Deals epoch `e` afresh: chunk `r` of its sequence to rank `r`, the rest aside.
    pub(super) fn fixed_start_epoch(&mut self, e: u32) {
        let (w, b, t) = (self.cfg.workers, self.cfg.batch_size, self.total_rows);
        let seg = |chunk| {
            let (a, z) = chunk_range(t, w, b, chunk);
            Segment {
                data_epoch: e,
                workers: w,
                chunk,
                from: 0,
                to: z - a,
            }
        };
        let shares = (0..w).map(|r| vec![seg(r)]).collect();
        let rest = vec![seg(w)];
        let f = self.fixed.as_mut().expect("fixed order");
        f.deal(shares, rest);
        self.quota = quota(t, w, b);
    }

    /// Deals a resumed epoch: the segments as saved when the worker count is the same and
    /// every rank stopped at the same step (the streams go on exactly as they would have);
    /// otherwise what is left, recut into equal shares (every row not consumed once).
    pub(super) fn fixed_resume(&mut self, e: u32, os: &OrderState) -> Option<String> {
        self.epoch = e;
        self.restart_counts();
        let (w, b) = (self.cfg.workers, self.cfg.batch_size);
        let left: Vec<u64> = os
            .ranks
            .iter()
            .map(|v| v.iter().map(Segment::len).sum())
            .collect();
        let same = os.workers == w
            && os.ranks.len() == w as usize
            && left.windows(2).all(|p| p[0] == p[1])
            && left.first().is_some_and(|&n| n % b == 0);
        let f = self.fixed.as_mut().expect("fixed order");
        let note = if same {
            f.deal(os.ranks.clone(), os.rest.clone());
            self.quota = left[0];
            None
        } else {
            let parts: Vec<Segment> = os.ranks.iter().flatten().chain(&os.rest).copied().collect();
            let (shares, rest, q) = recut(&parts, w, b);
            f.deal(shares, rest);
            self.quota = q;
            Some(if os.workers != w {
                format!(
                    "resumed with {w} workers where the state was saved with {}: the rows not \
                     consumed yet are dealt again ({q} per rank), each once; the streams differ \
                     from the uninterrupted run's",
                    os.workers
                )
            } else {
                format!(
                    "the ranks stopped at different steps ({left:?} rows left): the rows not \
                     consumed yet are dealt again ({q} per rank), each once; the streams differ \
                     from the uninterrupted run's"
                )
            })
        };
        self.maybe_advance();
        note
    }

    /// The next segment of `rank` not leased yet, or a wait.
    pub(super) fn fixed_lease(&mut self, rank: u32) -> Work {
        let f = self.fixed.as_mut().expect("fixed order");
        let spec = f.spec;
        let Some((i, fs)) = f.ranks[rank as usize]
            .iter_mut()
            .enumerate()
            .find(|(_, s)| !s.seg.is_empty() && s.lease.is_none())
        else {
            return Work::Wait { retry_ms: 50 };
        };
        let id = self.next_lease;
        self.next_lease += 1;
        fs.lease = Some(id);
        let seg = fs.seg;
        let range = Range {
            data_epoch: seg.data_epoch,
            split: SEGMENT_SPLIT,
            first: seg.from,
            rows: seg.len(),
        };
        let r = &mut self.ranks[rank as usize];
        r.assigned += seg.len();
        let inc = r.incarnation;
        self.leases
            .insert(id, LeaseState::new(rank, inc, range, false, Some(i)));
        self.counters.assignments += 1;
        self.push_log(LogKind::Assign, rank, id, range, false);
        Work::Lease(Lease {
            lease: id,
            epoch: self.epoch,
            data_epoch: seg.data_epoch,
            split: SEGMENT_SPLIT,
            first_row: seg.from,
            rows: seg.len(),
            pad: false,
            shuffle_seed: shuffle_seed(self.cfg.seed, self.epoch, rank),
            job_seed: self.cfg.seed,
            order: Some(OrderLease {
                segment: seg,
                seed: self.cfg.seed,
                shuffle: self.cfg.shuffle,
                batch_size: self.cfg.batch_size,
                spec,
            }),
        })
    }

    /// Advances segment `seg` of `rank` to `prefix_end` (the end of its lease's acked prefix,
    /// if the prefix is not empty); `done`: the lease is over.
    pub(super) fn fixed_acked(
        &mut self,
        rank: u32,
        seg: usize,
        prefix_end: Option<u64>,
        done: bool,
    ) {
        let Some(fs) = self
            .fixed
            .as_mut()
            .and_then(|f| f.ranks[rank as usize].get_mut(seg))
        else {
            return;
        };
        if let Some(end) = prefix_end {
            fs.seg.from = fs.seg.from.max(end);
        }
        if done {
            fs.lease = None;
        }
    }

    /// Releases a dead rank's segment lease: its next incarnation goes on from the acked row.
    pub(super) fn fixed_release(&mut self, rank: u32, seg: usize) {
        if let Some(fs) = self
            .fixed
            .as_mut()
            .and_then(|f| f.ranks[rank as usize].get_mut(seg))
        {
            fs.lease = None;
        }
    }

    /// Drops the rows no rank received, when the epoch closes.
    pub(super) fn fixed_drop_rest(&mut self) {
        let rest = match self.fixed.as_mut() {
            Some(f) => std::mem::take(&mut f.rest),
            None => return,
        };
        for s in rest {
            self.counters.rows_dropped += s.len();
            let r = Range {
                data_epoch: s.data_epoch,
                split: SEGMENT_SPLIT,
                first: s.from,
                rows: s.len(),
            };
            self.push_log(LogKind::Drop, u32::MAX, 0, r, false);
        }
    }

    /// The fixed order's part of [`State`].
    pub(super) fn fixed_state(&self) -> Option<OrderState> {
        let by_ledger = !self.finished && !self.fixed_deals(self.epoch);
        self.fixed.as_ref().map(|f| OrderState {
            spec: f.spec,
            workers: self.cfg.workers,
            by_ledger,
            ranks: f
                .ranks
                .iter()
                .map(|v| v.iter().map(|s| s.seg).filter(|s| !s.is_empty()).collect())
                .collect(),
            rest: f.rest.clone(),
        })
    }

    /// The order spec of the fixed order, if the machine uses it.
    pub fn order_spec(&self) -> Option<OrderSpec> {
        self.fixed.as_ref().map(|f| f.spec)
    }
}
