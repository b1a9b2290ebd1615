//! Ranks joining and staying alive: [`Machine::join`] and [`Machine::rejoin`] (a restarted
//! feeder whose trainer kept running), the incarnation checks every call makes, heartbeats,
//! and [`Machine::tick`], which reports stalled ranks and declares silent ones dead,
//! re-queueing their un-acked rows.

use hydrofeed_tfbridge::Piece;

use super::queue::Range;
use super::{LivenessEvent, LogKind, Machine, Stage, WorkerCounters};
use crate::{Error, Result};

impl Machine {
    /// Registers (or re-registers) `rank` from `host` at `now_ms`. A re-join starts a new
    /// incarnation: the old one's un-acked rows go back to the queue.
    pub fn join(&mut self, rank: u32, host: &str, now_ms: u64) -> Result<u64> {
        self.check_rank(rank)?;
        if self.ranks[rank as usize].alive {
            self.requeue_rank(rank);
        }
        self.granted[rank as usize] = None;
        let r = &mut self.ranks[rank as usize];
        r.joined = true;
        r.alive = true;
        r.incarnation += 1;
        r.host = host.to_string();
        r.last_seen_ms = now_ms;
        r.stage = Stage::Starting;
        r.stalled = false;
        Ok(r.incarnation)
    }

    /// [`Machine::join`] of a feeder restarted under `rank` while its trainer kept running:
    /// first counts `consumed` (rows read per lease, cumulative, reported by the trainer from
    /// its frames' lineage) as acks of the previous incarnation, so only rows nobody read go
    /// back to the queue. Leases no longer outstanding (acked whole, or of an older
    /// incarnation) are skipped. Refused when the previous incarnation was declared dead
    /// in between: its rows were queued again already, and the trainer's would come twice.
    pub fn rejoin(
        &mut self,
        rank: u32,
        host: &str,
        now_ms: u64,
        consumed: &[Piece],
    ) -> Result<u64> {
        self.check_rank(rank)?;
        if !consumed.is_empty() {
            let r = &self.ranks[rank as usize];
            if !r.joined || !r.alive {
                return Err(Error::Coordinator(format!(
                    "rank {rank} was declared dead (silent for {} ms) before its feeder came \
                     back: the rows its trainer read after the last ack were queued again and \
                     would come twice; restart the feeder sooner or raise the dead-after time",
                    self.cfg.dead_after_ms
                )));
            }
            let inc = r.incarnation;
            for &Piece { lease, split, rows } in consumed {
                let ours = self
                    .leases
                    .get(&lease)
                    .is_some_and(|l| l.rank == rank && l.incarnation == inc);
                if ours && rows > 0 {
                    self.ack(rank, inc, lease, split, rows, now_ms)?;
                }
            }
        }
        self.join(rank, host, now_ms)
    }

    fn check_rank(&self, rank: u32) -> Result<()> {
        if rank >= self.cfg.workers {
            return Err(Error::Coordinator(format!(
                "rank {rank} out of range: the job has {} workers",
                self.cfg.workers
            )));
        }
        Ok(())
    }

    pub(super) fn check_live(&self, rank: u32, incarnation: u64) -> Result<()> {
        self.check_rank(rank)?;
        let r = &self.ranks[rank as usize];
        if !r.joined {
            return Err(Error::Coordinator(format!(
                "rank {rank} has not registered"
            )));
        }
        if r.incarnation != incarnation || !r.alive {
            return Err(Error::PeerLost(format!(
                "rank {rank} incarnation {incarnation} (host {}) was declared dead or replaced; \
                 re-register",
                r.host
            )));
        }
        Ok(())
    }

    /// A heartbeat of `rank`. Returns `false` when that incarnation is no longer alive.
    pub fn heartbeat(
        &mut self,
        rank: u32,
        incarnation: u64,
        stage: Stage,
        counters: WorkerCounters,
        now_ms: u64,
    ) -> Result<bool> {
        self.check_rank(rank)?;
        let r = &self.ranks[rank as usize];
        if !r.joined || !r.alive || r.incarnation != incarnation {
            return Ok(false);
        }
        self.touch(rank, now_ms);
        let r = &mut self.ranks[rank as usize];
        r.stage = stage;
        r.counters = counters;
        Ok(true)
    }

    /// A message of `rank`'s incarnation that reports nothing (a session's ack or work
    /// request, whose heartbeat names only the sender): refreshes its liveness as any call
    /// does and says whether it lives, keeping the stage and counters its last heartbeat
    /// reported.
    pub fn seen(&mut self, rank: u32, incarnation: u64, now_ms: u64) -> Result<bool> {
        self.check_rank(rank)?;
        let r = &self.ranks[rank as usize];
        if !r.joined || !r.alive || r.incarnation != incarnation {
            return Ok(false);
        }
        self.touch(rank, now_ms);
        Ok(true)
    }

    /// `rank`'s trainer is alive, says whoever supervises it (`hydrofeed launch`): the rank
    /// stays alive while its feeder is gone (killed, being restarted) and its trainer busy
    /// longer than `dead_after_ms` (an evaluation, a checkpoint) before it re-attaches. Death
    /// by silence is for a node that is gone, supervisor included. Returns whether the rank is
    /// alive (one declared dead stays dead; one not registered yet is left alone).
    pub fn keep_alive(&mut self, rank: u32, now_ms: u64) -> Result<bool> {
        self.check_rank(rank)?;
        let r = &self.ranks[rank as usize];
        if !r.joined || !r.alive {
            return Ok(false);
        }
        self.touch(rank, now_ms);
        Ok(true)
    }

    pub(super) fn touch(&mut self, rank: u32, now_ms: u64) {
        let r = &mut self.ranks[rank as usize];
        r.last_seen_ms = r.last_seen_ms.max(now_ms);
        r.stalled = false;
    }

    /// Checks liveness at `now_ms`: names stalled ranks once per silence and declares dead
    /// (re-queueing their un-acked rows) those silent past `dead_after_ms`.
    pub fn tick(&mut self, now_ms: u64) -> Vec<LivenessEvent> {
        let mut ev = Vec::new();
        if self.finished {
            return ev;
        }
        for rank in 0..self.cfg.workers {
            let r = &self.ranks[rank as usize];
            if !r.joined || !r.alive {
                continue;
            }
            let silent_ms = now_ms.saturating_sub(r.last_seen_ms);
            if silent_ms >= self.cfg.dead_after_ms {
                let (host, stage) = (r.host.clone(), r.stage);
                let requeued_rows = self.declare_dead(rank);
                ev.push(LivenessEvent::Dead {
                    rank,
                    host,
                    stage,
                    silent_ms,
                    requeued_rows,
                });
            } else if silent_ms >= self.cfg.stall_after_ms && !r.stalled {
                let (host, stage) = (r.host.clone(), r.stage);
                self.ranks[rank as usize].stalled = true;
                self.counters.stalls += 1;
                ev.push(LivenessEvent::Stalled {
                    rank,
                    host,
                    stage,
                    silent_ms,
                });
            }
        }
        ev
    }

    /// Declares `rank` dead (what [`Machine::tick`] does to a silent one; a journal's replay
    /// of it): its un-acked rows go back to the queue. Returns the rows re-queued.
    pub fn declare_dead(&mut self, rank: u32) -> u64 {
        let Some(r) = self.ranks.get(rank as usize) else {
            return 0;
        };
        if !r.joined || !r.alive {
            return 0;
        }
        let requeued = self.requeue_rank(rank);
        self.ranks[rank as usize].alive = false;
        self.counters.deaths += 1;
        requeued
    }

    /// Sets a rank as a journal's compaction saved it (no lease outstanding then): joined,
    /// alive, incarnation, host; heard from at once.
    pub fn restore_rank(
        &mut self,
        rank: u32,
        joined: bool,
        alive: bool,
        incarnation: u64,
        host: &str,
    ) -> Result<()> {
        self.check_rank(rank)?;
        let r = &mut self.ranks[rank as usize];
        r.joined = joined;
        r.alive = alive;
        r.incarnation = incarnation;
        r.host = host.to_string();
        Ok(())
    }

    /// Puts the un-acked rows of every lease of `rank` back at the head of the queue (pad
    /// rows are simply forgotten: they are generated again). Returns the rows re-queued.
    fn requeue_rank(&mut self, rank: u32) -> u64 {
        let mut ids: Vec<u64> = self
            .leases
            .iter()
            .filter(|(_, l)| l.rank == rank)
            .map(|(&id, _)| id)
            .collect();
        // Latest first, so that after the push_head calls the oldest is at the head.
        ids.sort_unstable_by(|a, b| b.cmp(a));
        let mut rows = 0;
        for id in ids {
            let l = self.leases.remove(&id).expect("listed above");
            let left = l.range.rows - l.acked_rows;
            if let Some(seg) = l.seg {
                // Fixed order: the rank's next incarnation goes on from the acked row.
                let ahead = l.epoch > self.epoch;
                if !ahead {
                    self.ranks[rank as usize].assigned -= left;
                }
                self.fixed_release(rank, (seg, ahead), left);
                continue;
            }
            self.ranks[rank as usize].assigned -= left;
            if l.pad || left == 0 {
                continue;
            }
            // The gaps between acked intervals, last first so the first ends at the head.
            let mut gaps = Vec::new();
            let mut at = l.range.first;
            for &(a, b) in &l.acked {
                if a > at {
                    gaps.push((at, a));
                }
                at = b;
            }
            if at < l.range.first + l.range.rows {
                gaps.push((at, l.range.first + l.range.rows));
            }
            for &(a, b) in gaps.iter().rev() {
                let rest = Range {
                    first: a,
                    rows: b - a,
                    ..l.range
                };
                self.push_head(rest);
                self.push_log(LogKind::Requeue, rank, id, rest, false);
            }
            rows += left;
        }
        rows
    }
}
