//! Simulated feeders driving a [`Machine`] in-process: a seeded random schedule of requests,
//! partial acks (in lease order, as trainers consume), deaths and re-joins. Used by the tests
//! (which check every row of the tally) and by `hydrofeed bench coord`.

use std::collections::{HashMap, VecDeque};

use super::{mix64, Lease, LivenessEvent, Machine, Work};
use crate::{Error, Result};

/// How the simulated feeders behave.
#[derive(Debug, Clone)]
pub struct SimOptions {
    /// Schedule seed.
    pub seed: u64,
    /// Leases a feeder holds at most before it only acks.
    pub max_outstanding: usize,
    /// Largest ack (rows); acks are random in `1..=ack_rows`.
    pub ack_rows: u64,
    /// Keep a per-row tally (tests; costs memory per row).
    pub tally: bool,
    /// Milliseconds of simulated time per step.
    pub ms_per_step: u64,
    /// Ack random pieces of random outstanding leases (a feeder with a shuffle buffer)
    /// instead of prefixes of the oldest lease.
    pub shuffled_acks: bool,
}

impl Default for SimOptions {
    fn default() -> Self {
        Self {
            seed: 1,
            max_outstanding: 3,
            ack_rows: 64,
            tally: true,
            ms_per_step: 1,
            shuffled_acks: false,
        }
    }
}

#[derive(Debug, Default, Clone)]
struct Feeder {
    incarnation: u64,
    /// Outstanding leases with their un-acked row offsets `[a, b)` within the lease.
    leases: VecDeque<(Lease, Vec<(u64, u64)>)>,
    end_steps: Option<u64>,
    /// Silent (killed) until this time, then re-joins.
    silent_until: Option<u64>,
}

/// Simulated feeders around a machine.
#[derive(Debug)]
pub struct Sim {
    /// The machine under test.
    pub m: Machine,
    feeders: Vec<Feeder>,
    opts: SimOptions,
    rng: u64,
    /// Simulated clock (ms).
    pub now: u64,
    /// Acked fresh rows: (data epoch, split) -> count per row.
    pub tally: HashMap<(u32, u32), Vec<u32>>,
    /// Acked rows per (training epoch, rank).
    pub per_rank: HashMap<(u32, u32), u64>,
    /// Quota seen per training epoch.
    pub quotas: HashMap<u32, u64>,
    /// Liveness events seen.
    pub events: Vec<LivenessEvent>,
    /// Requests answered with a lease.
    pub leases: u64,
    /// Calls made (requests, acks, heartbeats).
    pub calls: u64,
}

impl Sim {
    /// Joins every rank at time 0.
    pub fn new(mut m: Machine, opts: SimOptions) -> Result<Self> {
        let w = m.config().workers;
        let mut feeders = vec![Feeder::default(); w as usize];
        for (r, f) in feeders.iter_mut().enumerate() {
            f.incarnation = m.join(r as u32, &format!("host-{r}"), 0)?;
        }
        let rng = mix64(opts.seed);
        let mut s = Self {
            m,
            feeders,
            opts,
            rng,
            now: 0,
            tally: HashMap::new(),
            per_rank: HashMap::new(),
            quotas: HashMap::new(),
            events: Vec::new(),
            leases: 0,
            calls: 0,
        };
        s.quotas.insert(s.m.epoch(), s.m.quota());
        Ok(s)
    }

    fn rand(&mut self) -> u64 {
        self.rng = self.rng.wrapping_add(0x9E37_79B9_7F4A_7C15);
        mix64(self.rng)
    }

    /// Whether every rank got end-of-feed.
    pub fn done(&self) -> bool {
        self.feeders.iter().all(|f| f.end_steps.is_some())
    }

    /// The end-of-feed step count of every rank (once done).
    pub fn end_steps(&self) -> Vec<Option<u64>> {
        self.feeders.iter().map(|f| f.end_steps).collect()
    }

    /// Makes `rank` go silent now; it is declared dead after the machine's `dead_after_ms`
    /// (checked by [`Sim::step`]'s ticks) and re-joins as a new incarnation `rejoin_after_ms`
    /// later. Its un-acked leases are lost with it.
    pub fn kill(&mut self, rank: u32, rejoin_after_ms: u64) {
        let f = &mut self.feeders[rank as usize];
        f.silent_until = Some(self.now + rejoin_after_ms);
        f.leases.clear();
    }

    /// One random action of one random live rank; every 16 steps a liveness tick.
    pub fn step(&mut self) -> Result<()> {
        self.now += self.opts.ms_per_step;
        if self.now.is_multiple_of(16) {
            let ev = self.m.tick(self.now);
            self.events.extend(ev);
        }
        let w = self.feeders.len() as u64;
        let rank = (self.rand() % w) as u32;
        let r = rank as usize;
        if let Some(t) = self.feeders[r].silent_until {
            if self.now < t {
                return Ok(());
            }
            self.feeders[r].silent_until = None;
            self.feeders[r].incarnation = self.m.join(rank, &format!("host-{r}"), self.now)?;
        }
        if self.feeders[r].end_steps.is_some() {
            return Ok(());
        }
        let inc = self.feeders[r].incarnation;
        let coin = self.rand();
        // Keep the others alive while one is silent.
        if coin.is_multiple_of(8) {
            self.calls += 1;
            self.m.heartbeat(
                rank,
                inc,
                super::Stage::Reading,
                Default::default(),
                self.now,
            )?;
            return Ok(());
        }
        let want_more = self.feeders[r].leases.len() < self.opts.max_outstanding;
        if self.feeders[r].leases.is_empty() || (want_more && coin.is_multiple_of(3)) {
            self.calls += 1;
            match self.m.request_work(rank, inc, None, self.now)? {
                Work::Lease(l) => {
                    self.leases += 1;
                    let rows = l.rows;
                    self.feeders[r].leases.push_back((l, vec![(0, rows)]));
                }
                Work::Wait { .. } => {}
                Work::EndOfFeed { steps } => {
                    if !self.feeders[r].leases.is_empty() {
                        return Err(Error::Internal(format!(
                            "rank {rank} got end of feed with leases outstanding"
                        )));
                    }
                    self.feeders[r].end_steps = Some(steps);
                }
            }
            return Ok(());
        }
        // Ack some rows: a prefix of the oldest lease, or (shuffled) a random piece of a
        // random un-acked gap of a random outstanding lease.
        let n = 1 + self.rand() % self.opts.ack_rows;
        let nl = self.feeders[r].leases.len() as u64;
        let li = if self.opts.shuffled_acks {
            (self.rand() % nl) as usize
        } else {
            0
        };
        let ng = self.feeders[r].leases[li].1.len() as u64;
        let gi = if self.opts.shuffled_acks {
            (self.rand() % ng) as usize
        } else {
            0
        };
        let (ga, gb) = self.feeders[r].leases[li].1[gi];
        let from = if self.opts.shuffled_acks {
            ga + self.rand() % (gb - ga)
        } else {
            ga
        };
        let to = (from + n).min(gb);
        let l = self.feeders[r].leases[li].0.clone();
        self.calls += 1;
        let epoch_before = self.m.epoch();
        if self.opts.shuffled_acks {
            self.m
                .ack_ranges(rank, inc, l.lease, l.split, &[(from, to - from)], self.now)?;
        } else {
            self.m.ack(rank, inc, l.lease, l.split, to, self.now)?;
        }
        if self.opts.tally && !l.pad {
            let rows = self.m_split_rows(l.split);
            let t = self
                .tally
                .entry((l.data_epoch, l.split))
                .or_insert_with(|| vec![0; rows]);
            for i in l.first_row + from..l.first_row + to {
                t[i as usize] += 1;
            }
        }
        *self.per_rank.entry((l.epoch, rank)).or_default() += to - from;
        let gaps = &mut self.feeders[r].leases[li].1;
        let mut piece = Vec::new();
        if ga < from {
            piece.push((ga, from));
        }
        if to < gb {
            piece.push((to, gb));
        }
        gaps.splice(gi..=gi, piece);
        if gaps.is_empty() {
            self.feeders[r].leases.remove(li);
        }
        if self.m.epoch() != epoch_before && !self.m.finished() {
            self.quotas.insert(self.m.epoch(), self.m.quota());
        }
        Ok(())
    }

    fn m_split_rows(&self, split: u32) -> usize {
        self.m.split_rows()[split as usize] as usize
    }

    /// Runs until every rank got end-of-feed, or errs after `max_steps`.
    pub fn run(&mut self, max_steps: u64) -> Result<()> {
        let mut i = 0;
        while !self.done() {
            if i == max_steps {
                return Err(Error::Timeout {
                    what: format!(
                        "simulation to end (epoch {}, {} leases out, {} queued)",
                        self.m.epoch(),
                        self.m.outstanding(),
                        self.m.queued()
                    ),
                    secs: 0.0,
                });
            }
            self.step()?;
            i += 1;
        }
        Ok(())
    }
}
