//! The fixed order: every rank's rows of an epoch, and their order, are a function of (plan,
//! seed, epoch, workers, batch size, shuffle buffer, cycle length) (`crate::order`), not of
//! who asks first. The machine deals each rank its [`Segment`]s, leases a segment from the
//! position its trainer reached, and advances that position on acks (cumulative: the ring is
//! FIFO and the stream is in order). A dead rank's lease is simply released: the rank's next
//! incarnation goes on from the acked position, and no rows move to another rank (that would
//! change the streams). HDFS locality plays no part here.
//!
//! A rank that leased its whole share of an epoch is dealt its share of the next one at once
//! (the whole next epoch is dealt then, [`Next`]): its feeder reads on over the boundary and
//! its request is answered when it is made, not held until the slowest rank acks. The next
//! epoch's leases and acks count apart from the current epoch's, which still closes when
//! every rank acked its quota; then the next deal, with what its ranks already did, becomes
//! the epoch's. A rank never runs more than one epoch ahead.

use serde::{Deserialize, Serialize};

use super::lease::LeaseState;
use super::queue::Range;
use super::seed::shuffle_seed;
use super::{Lease, LogKind, Machine, OrderLease, Work};
use crate::order::{chunk_range, quota, recut, OrderSpec, Segment};
use crate::{NextDeal, OrderState};

/// The `split` of a lease that carries a segment of the fixed order.
pub const SEGMENT_SPLIT: u32 = u32::MAX;

/// A rank's segment: `seg.from` advances as the trainer acks.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct FixedSeg {
    pub(super) seg: Segment,
    pub(super) lease: Option<u64>,
}

/// The fixed order's dealing of the current epoch.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct Fixed {
    pub(super) spec: OrderSpec,
    pub(super) ranks: Vec<Vec<FixedSeg>>,
    /// Rows no rank receives (fewer than one step under `drop`; dropped when the epoch closes).
    pub(super) rest: Vec<Segment>,
    /// The next epoch, dealt once a rank leased its whole share of this one.
    pub(super) next: Option<Next>,
    /// A resumed state's deal of the next epoch (a rank was inside it when the state was
    /// saved): dealt as saved, or recut, when that epoch opens. Until then no rank goes ahead.
    pub(super) saved_next: Option<NextDeal>,
}

/// The next epoch's deal while the current one is open, and what its ranks did in it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct Next {
    pub(super) ranks: Vec<Vec<FixedSeg>>,
    pub(super) rest: Vec<Segment>,
    /// Rows of the next epoch leased to each rank (acked or in flight).
    pub(super) assigned: Vec<u64>,
    /// Rows of the next epoch each rank acked.
    pub(super) acked: Vec<u64>,
}

/// Segments as a rank's list: empty ones left out, none leased.
fn segs(v: Vec<Segment>) -> Vec<FixedSeg> {
    v.into_iter()
        .filter(|s| !s.is_empty())
        .map(|seg| FixedSeg { seg, lease: None })
        .collect()
}

fn non_empty(v: Vec<Segment>) -> Vec<Segment> {
    v.into_iter().filter(|s| !s.is_empty()).collect()
}

/// Whether a saved deal goes on as saved: the same workers, every rank the same rows left,
/// whole steps. Otherwise its rows are recut into equal shares.
fn goes_on(saved: &[Vec<Segment>], workers: u32, batch: u64) -> bool {
    let left: Vec<u64> = saved
        .iter()
        .map(|v| v.iter().map(Segment::len).sum())
        .collect();
    saved.len() == workers as usize
        && left.windows(2).all(|p| p[0] == p[1])
        && left.first().is_some_and(|&n| n % batch == 0)
}

impl Fixed {
    pub(super) fn new(spec: OrderSpec, workers: u32) -> Self {
        Self {
            spec,
            ranks: vec![Vec::new(); workers as usize],
            rest: Vec::new(),
            next: None,
            saved_next: None,
        }
    }

    fn deal(&mut self, shares: Vec<Vec<Segment>>, rest: Vec<Segment>) {
        self.ranks = shares.into_iter().map(segs).collect();
        self.rest = non_empty(rest);
    }

    /// The segments of `rank` in the current epoch (`next`: in the next one, dealt).
    fn segs_of(&mut self, rank: u32, next: bool) -> Option<&mut Vec<FixedSeg>> {
        if next {
            self.next.as_mut().map(|n| &mut n.ranks[rank as usize])
        } else {
            Some(&mut self.ranks[rank as usize])
        }
    }
}

impl Machine {
    /// Epoch `e` dealt afresh: chunk `r` of its sequence to rank `r`, and the rest.
    fn fresh_deal(&self, e: u32) -> (Vec<Vec<Segment>>, Vec<Segment>) {
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
        ((0..w).map(|r| vec![seg(r)]).collect(), vec![seg(w)])
    }

    /// Deals epoch `e` as it opens: the deal its ranks already went into (with what they
    /// leased and acked there), a resumed state's deal of it, or afresh.
    pub(super) fn fixed_start_epoch(&mut self, e: u32) {
        let (w, b, t) = (self.cfg.workers, self.cfg.batch_size, self.total_rows);
        let f = self.fixed.as_mut().expect("fixed order");
        if let Some(n) = f.next.take() {
            f.ranks = n.ranks;
            f.rest = n.rest;
            for (r, (&a, &k)) in self.ranks.iter_mut().zip(n.assigned.iter().zip(&n.acked)) {
                r.assigned = a;
                r.acked = k;
            }
            self.quota = quota(t, w, b);
        } else if let Some(saved) = f.saved_next.take() {
            self.fixed_deal_saved(w, saved.ranks, saved.rest);
        } else {
            let (shares, rest) = self.fresh_deal(e);
            self.fixed.as_mut().expect("fixed order").deal(shares, rest);
            self.quota = quota(t, w, b);
        }
    }

    /// Deals saved segments: as saved when they go on ([`goes_on`]), or recut into equal
    /// shares (every row not consumed once). Returns whether they were recut.
    fn fixed_deal_saved(
        &mut self,
        saved_workers: u32,
        ranks: Vec<Vec<Segment>>,
        rest: Vec<Segment>,
    ) -> bool {
        let (w, b) = (self.cfg.workers, self.cfg.batch_size);
        let f = self.fixed.as_mut().expect("fixed order");
        if saved_workers == w && goes_on(&ranks, w, b) {
            self.quota = ranks[0].iter().map(Segment::len).sum();
            f.deal(ranks, rest);
            return false;
        }
        let parts: Vec<Segment> = ranks.iter().flatten().chain(&rest).copied().collect();
        let (shares, rest, q) = recut(&parts, w, b);
        f.deal(shares, rest);
        self.quota = q;
        true
    }

    /// Deals a resumed epoch: the segments as saved when the worker count is the same and
    /// every rank stopped at the same step (the streams go on exactly as they would have);
    /// otherwise what is left, recut into equal shares (every row not consumed once). A saved
    /// deal of the next epoch is kept for when it opens.
    pub(super) fn fixed_resume(&mut self, e: u32, os: &OrderState) -> Option<String> {
        self.epoch = e;
        self.restart_counts();
        let (w, b) = (self.cfg.workers, self.cfg.batch_size);
        let left: Vec<u64> = os
            .ranks
            .iter()
            .map(|v| v.iter().map(Segment::len).sum())
            .collect();
        let cut = self.fixed_deal_saved(os.workers, os.ranks.clone(), os.rest.clone());
        let next_recut = os
            .next
            .as_ref()
            .is_some_and(|n| !(os.workers == w && goes_on(&n.ranks, w, b)));
        self.fixed.as_mut().expect("fixed order").saved_next = os.next.clone();
        let q = self.quota;
        let note = if !cut && !next_recut {
            None
        } else if !cut {
            Some(format!(
                "the ranks were at different steps of epoch {} when the state was saved: its \
                 rows not consumed yet are dealt again when it opens, each once; the streams \
                 differ from the uninterrupted run's",
                e + 1
            ))
        } else {
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

    /// Whether `rank`, its share of this epoch all leased, may be dealt the next epoch's:
    /// there is one, the fixed order deals both (not an epoch a resume over a changed input
    /// deals by the ledger: its ranges are read two at a time, and a rank's rows never wait
    /// for another's there anyway), and no resumed deal of the next one waits.
    pub(super) fn fixed_may_go_ahead(&self) -> bool {
        let e = self.epoch + 1;
        e < self.cfg.epochs
            && self.fixed_deals(self.epoch)
            && self.fixed_deals(e)
            && self.fixed.as_ref().is_some_and(|f| f.saved_next.is_none())
    }

    /// The next segment of `rank` not leased yet, in this epoch or (`ahead`) the next one
    /// (dealt now if no rank went there before), or a wait.
    pub(super) fn fixed_lease(&mut self, rank: u32, ahead: bool) -> Work {
        let epoch = self.epoch + u32::from(ahead);
        if ahead && self.fixed.as_ref().is_some_and(|f| f.next.is_none()) {
            let (shares, rest) = self.fresh_deal(epoch);
            let n = self.cfg.workers as usize;
            self.fixed.as_mut().expect("fixed order").next = Some(Next {
                ranks: shares.into_iter().map(segs).collect(),
                rest: non_empty(rest),
                assigned: vec![0; n],
                acked: vec![0; n],
            });
        }
        let f = self.fixed.as_mut().expect("fixed order");
        let spec = f.spec;
        let Some((i, fs)) = f
            .segs_of(rank, ahead)
            .expect("dealt above")
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
        match &mut f.next {
            Some(n) if ahead => n.assigned[rank as usize] += seg.len(),
            _ => self.ranks[rank as usize].assigned += seg.len(),
        }
        let inc = self.ranks[rank as usize].incarnation;
        self.leases
            .insert(id, LeaseState::new(rank, inc, epoch, range, false, Some(i)));
        self.counters.assignments += 1;
        self.push_log(LogKind::Assign, rank, id, range, false);
        Work::Lease(Lease {
            lease: id,
            epoch,
            data_epoch: seg.data_epoch,
            split: SEGMENT_SPLIT,
            first_row: seg.from,
            rows: seg.len(),
            pad: false,
            shuffle_seed: shuffle_seed(self.cfg.seed, epoch, rank),
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

    /// Advances segment `seg` of `rank` (in the next epoch's deal when `ahead`) to
    /// `prefix_end` (the end of its lease's acked prefix, if the prefix is not empty);
    /// `delta` rows were acked; `done`: the lease is over.
    pub(super) fn fixed_acked(
        &mut self,
        rank: u32,
        (seg, ahead): (usize, bool),
        prefix_end: Option<u64>,
        delta: u64,
        done: bool,
    ) {
        let Some(f) = self.fixed.as_mut() else {
            return;
        };
        if ahead {
            if let Some(n) = f.next.as_mut() {
                n.acked[rank as usize] += delta;
            }
        }
        let Some(fs) = f.segs_of(rank, ahead).and_then(|v| v.get_mut(seg)) else {
            return;
        };
        if let Some(end) = prefix_end {
            fs.seg.from = fs.seg.from.max(end);
        }
        if done {
            fs.lease = None;
        }
    }

    /// Releases a dead rank's segment lease (in the next epoch's deal when `ahead`), `left`
    /// rows of it un-acked: its next incarnation goes on from the acked row.
    pub(super) fn fixed_release(&mut self, rank: u32, (seg, ahead): (usize, bool), left: u64) {
        let Some(f) = self.fixed.as_mut() else {
            return;
        };
        if ahead {
            if let Some(n) = f.next.as_mut() {
                n.assigned[rank as usize] -= left;
            }
        }
        if let Some(fs) = f.segs_of(rank, ahead).and_then(|v| v.get_mut(seg)) {
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
            // Only once a rank acked rows there: before, the deal is the one the epoch gets
            // afresh (a feeder reads ahead, so ranks lease the next epoch long before they
            // consume it).
            next: f
                .next
                .as_ref()
                .filter(|n| n.acked.iter().any(|&a| a > 0))
                .map(|n| NextDeal {
                    ranks: n
                        .ranks
                        .iter()
                        .map(|v| v.iter().map(|s| s.seg).filter(|s| !s.is_empty()).collect())
                        .collect(),
                    rest: n.rest.clone(),
                })
                .or_else(|| f.saved_next.clone()),
        })
    }

    /// The order spec of the fixed order, if the machine uses it.
    pub fn order_spec(&self) -> Option<OrderSpec> {
        self.fixed.as_ref().map(|f| f.spec)
    }
}
