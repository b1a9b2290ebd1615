//! The coordinator's state machine: no I/O, no clock (time comes in as milliseconds), no
//! threads. The gRPC service wraps it in a mutex; the benchmark and the tests drive it directly.
//!
//! Work is handed out as *leases* of row ranges (split, first row, rows), dynamically, to the
//! rank that asks, capped by that rank's remaining quota of the epoch. Capping a range cuts the
//! split; the rest goes back to the head of the queue. So uneven splits never cause uneven
//! steps: every rank receives exactly `quota = S * B` rows per epoch.
//!
//! The machine's parts live in submodules, each an `impl Machine` block or its helpers:
//! `lease` hands out work and takes acks, `liveness` registers ranks and notices silent
//! ones, `epoch` opens and closes epochs, `queue` holds the ranges not handed out yet,
//! and `seed` derives the split order and the shuffle seeds.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

use super::ledger::{Ledger, SkippedRange};
use super::{Remainder, SplitInfo, State};
use crate::input::InputFingerprint;
use crate::order::{OrderSpec, Segment};
use crate::{Error, Result};

mod epoch;
mod fixed;
mod lease;
mod liveness;
mod queue;
mod seed;
mod skipped;
mod stage;

use fixed::Fixed;
pub use fixed::SEGMENT_SPLIT;
use lease::LeaseState;
use queue::{Queue, Range};
pub use seed::{epoch_seed, mix64, shuffle_seed, split_order};
pub use stage::Stage;

/// Coordinator settings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Config {
    /// Data workers (ranks `0..workers`).
    pub workers: u32,
    /// Rows per batch (per worker per step).
    pub batch_size: u64,
    /// Epochs to feed.
    pub epochs: u32,
    /// Job seed.
    pub seed: u64,
    /// Shuffle the split order of every epoch by (seed, epoch); `false`: splits in plan order
    /// (files sorted by path, then row groups/stripes/blocks in file order).
    pub shuffle: bool,
    /// What to do with the rows that do not fill a step on every worker.
    pub remainder: Remainder,
    /// A rank silent this long is reported stalled (named, counted), once per silence.
    pub stall_after_ms: u64,
    /// A rank silent this long is declared dead and its un-acked rows re-queued.
    pub dead_after_ms: u64,
    /// `Some`: the fixed order (`crate::order`): every rank's rows and their order follow from
    /// the seed, run after run, and a state resumes them to the row (`remainder` must be
    /// `drop`). `None`: the dynamic order: ranges go to whoever asks first.
    pub order: Option<OrderSpec>,
}

impl Config {
    /// Defaults for everything but the shape: stall after 10 s, dead after 30 s.
    pub fn new(workers: u32, batch_size: u64) -> Self {
        Self {
            workers,
            batch_size,
            epochs: 1,
            seed: 0,
            shuffle: true,
            remainder: Remainder::Drop,
            stall_after_ms: 10_000,
            dead_after_ms: 30_000,
            order: None,
        }
    }
}

/// Counters a heartbeat carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct WorkerCounters {
    /// Rows read from storage.
    pub rows_read: u64,
    /// Rows decoded.
    pub rows_decoded: u64,
    /// Batches written into rings.
    pub batches_written: u64,
    /// Bytes of ring space in use.
    pub ring_bytes_used: u64,
}

/// One row range handed to a rank.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lease {
    /// Lease id (unique within a coordinator run).
    pub lease: u64,
    /// Training epoch.
    pub epoch: u32,
    /// Epoch whose order the rows come from (`epoch + 1` for rows taken under `wrap`).
    pub data_epoch: u32,
    /// Split id.
    pub split: u32,
    /// First row within the split.
    pub first_row: u64,
    /// Rows.
    pub rows: u64,
    /// Repeated rows filling the last step (`pad`); not part of the exactly-once set.
    pub pad: bool,
    /// Seed for the feeder's shuffle buffer, from (seed, epoch, rank).
    pub shuffle_seed: u64,
    /// The job's seed: image crops and flips follow it, the data epoch and the row (not the
    /// rank: a lease of the dynamic order may go to any).
    #[serde(default)]
    pub job_seed: u64,
    /// Under the fixed order: the stream positions to read (`split` is [`SEGMENT_SPLIT`],
    /// `first_row`/`rows` are the positions).
    pub order: Option<OrderLease>,
}

/// What a feeder needs to read a segment of the fixed order: the segment and every input of
/// the order function besides the plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct OrderLease {
    /// The positions.
    pub segment: Segment,
    /// Job seed.
    pub seed: u64,
    /// Whether the split order is shuffled.
    pub shuffle: bool,
    /// Batch size the sequence was cut for.
    pub batch_size: u64,
    /// Shuffle buffer and cycle length.
    pub spec: OrderSpec,
}

/// Answer to a work request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Work {
    /// Read these rows.
    Lease(Lease),
    /// Nothing now (this rank's quota is done, or rows are in flight elsewhere); ask again.
    Wait {
        /// Suggested delay before asking again.
        retry_ms: u64,
    },
    /// All epochs done: every rank stops after this many steps.
    EndOfFeed {
        /// Steps per rank over the whole feed.
        steps: u64,
    },
}

/// What `tick` found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LivenessEvent {
    /// A rank went silent past `stall_after_ms`.
    Stalled {
        /// Rank.
        rank: u32,
        /// Its host.
        host: String,
        /// Its last reported stage.
        stage: Stage,
        /// Milliseconds since it was last heard.
        silent_ms: u64,
    },
    /// A rank went silent past `dead_after_ms`; its un-acked rows were re-queued.
    Dead {
        /// Rank.
        rank: u32,
        /// Its host.
        host: String,
        /// Its last reported stage.
        stage: Stage,
        /// Milliseconds since it was last heard.
        silent_ms: u64,
        /// Rows re-queued from its leases.
        requeued_rows: u64,
    },
}

/// One line of the assignment log (JSONL).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogRecord {
    /// Order of the record in the log.
    pub seq: u64,
    /// What happened.
    pub kind: LogKind,
    /// Training epoch.
    pub epoch: u32,
    /// Data epoch of the rows.
    pub data_epoch: u32,
    /// Rank (`u32::MAX` for drops).
    pub rank: u32,
    /// Lease id (0 for drops).
    pub lease: u64,
    /// Split id.
    pub split: u32,
    /// First row within the split.
    pub first_row: u64,
    /// Rows.
    pub rows: u64,
    /// Padding rows.
    pub pad: bool,
}

/// Kinds of [`LogRecord`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LogKind {
    /// Rows leased to a rank.
    Assign,
    /// Un-acked rows of a dead rank back in the queue (`first_row`/`rows`: the re-queued part).
    Requeue,
    /// Rows left over under `drop` at the end of an epoch.
    Drop,
}

/// Counters of a coordinator run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Counters {
    /// Rows acked (all epochs, this run).
    pub rows_acked: u64,
    /// Rows dropped under `drop` (all epochs, including earlier runs when resumed).
    pub rows_dropped: u64,
    /// Pad rows acked under `pad`.
    pub rows_padded: u64,
    /// Rows acked in a training epoch that came from the next epoch's order (`wrap`).
    pub rows_wrapped: u64,
    /// Rows skipped as corrupt under `--skip-errors` (all epochs, including earlier runs when
    /// resumed); each was delivered as a padding row, also counted in `rows_padded`.
    #[serde(default)]
    pub rows_skipped: u64,
    /// Leases handed out.
    pub assignments: u64,
    /// Stalls reported.
    pub stalls: u64,
    /// Ranks declared dead.
    pub deaths: u64,
}

/// A rank as the state machine sees it.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct RankInfo {
    /// Whether the rank joined (registered) at least once.
    pub joined: bool,
    /// Whether the current incarnation is alive.
    pub alive: bool,
    /// Incarnation: 1 on first join, +1 on every re-join.
    pub incarnation: u64,
    /// Host it joined from.
    pub host: String,
    /// Last stage it reported.
    pub stage: Stage,
    /// Last heartbeat counters.
    pub counters: WorkerCounters,
    /// When it was last heard (ms).
    pub last_seen_ms: u64,
    /// Whether a stall was reported for the current silence.
    pub stalled: bool,
    /// Rows leased this epoch (acked or in flight).
    pub assigned: u64,
    /// Rows acked this epoch.
    pub acked: u64,
    /// Rows acked over the run (for metrics).
    pub acked_total: u64,
}

/// The coordinator state machine. See the module docs of [`super`] for the contract.
///
/// It serialises whole (a journal's compaction with leases outstanding saves it:
/// [`crate::journal`]); the assignment-log records not drained yet are not part of that.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Machine {
    cfg: Config,
    split_rows: Vec<u64>,
    split_hosts: Vec<Vec<u32>>,
    host_ids: HashMap<String, u32>,
    total_rows: u64,
    epoch: u32,
    finished: bool,
    quota: u64,
    steps_done: u64,
    ranks: Vec<RankInfo>,
    /// Every rank before this index acked the epoch's quota (`acked` only grows within an
    /// epoch): the closing rule goes on from here instead of looking at every rank each ack.
    /// Back to 0 whenever the ranks' counts start again ([`Machine::restart_counts`]).
    quota_met_below: usize,
    queue: Queue,
    /// Rows of the next data epoch (`wrap` only), taken once `queue` is empty. Two queues, not
    /// one, so that rows of this epoch coming back from a dead rank always go before the next
    /// epoch's, whatever the locality preference picks.
    next_queue: Queue,
    /// Whether `next_queue` was filled for this epoch.
    queued_next: bool,
    leases: HashMap<u64, LeaseState>,
    next_lease: u64,
    ledgers: BTreeMap<u32, Ledger>,
    /// Cyclic position (index into the epoch order, row) for `pad` rows.
    pad_order: Vec<u32>,
    pad_at: (usize, u64),
    counters: Counters,
    #[serde(skip)]
    log: Vec<LogRecord>,
    log_seq: u64,
    keep_log: bool,
    /// Built by [`Machine::resume`]: the batch size is the state's.
    resumed: bool,
    /// The epoch a resumed machine started in and each rank's quota there (rows).
    resumed_at: Option<(u32, u64)>,
    /// The fixed order's dealing (`cfg.order` is `Some`).
    fixed: Option<Fixed>,
    /// Resumed epochs of the fixed order dealt by the ledger, first and last (a resume over a
    /// changed input: `OrderState::by_ledger`; the next epoch too when a rank was inside it).
    by_ledger_epoch: Option<(u32, u32)>,
    /// The input's fingerprint, carried into the state.
    input: Option<InputFingerprint>,
    /// What a resume changed about the streams, for the caller to log.
    resume_note: Option<String>,
    /// The last lease granted to each rank's incarnation, sent again to a request that did
    /// not see it ([`Machine::request_work_after`]).
    granted: Vec<Option<Lease>>,
    /// Rows skipped as corrupt (`--skip-errors`), all epochs.
    skipped: Vec<SkippedRange>,
    /// Ranks the epoch-closing rule looked at, over the machine's life.
    #[cfg(test)]
    #[serde(skip)]
    pub(crate) ranks_inspected: u64,
}

impl Machine {
    /// A coordinator for `splits` (ids must be `0..n` in order) starting at epoch 0.
    pub fn new(splits: Vec<SplitInfo>, cfg: Config) -> Result<Self> {
        let mut m = Self::empty(splits, cfg)?;
        if m.cfg.order.is_some() && m.cfg.remainder != Remainder::Drop {
            return Err(Error::InvalidArgument(format!(
                "the fixed order deals equal shares and drops the rest: remainder={} needs the \
                 dynamic order",
                match m.cfg.remainder {
                    Remainder::Pad => "pad",
                    _ => "wrap",
                }
            )));
        }
        if m.cfg.remainder == Remainder::Drop && m.total_rows < m.row_per_step() {
            return Err(Error::InvalidArgument(format!(
                "{} rows in all, fewer than workers x batch size = {} x {}: not one full step under \
                 remainder=drop (use pad or wrap, or a smaller batch)",
                m.total_rows, m.cfg.workers, m.cfg.batch_size
            )));
        }
        m.start_epoch(0);
        Ok(m)
    }

    /// Sets the batch size before any work was handed out (`hydrofeed launch` without
    /// `--batch-size` takes the trainers' size once they attached): the quotas of epoch 0 are
    /// computed again. Refused after the first assignment, and on a resumed machine (its batch
    /// size is the state's).
    pub fn set_batch_size(&mut self, batch_size: u64) -> Result<()> {
        if batch_size == self.cfg.batch_size {
            return Ok(());
        }
        if self.counters.assignments > 0 || self.epoch > 0 || self.resumed {
            return Err(Error::InvalidArgument(format!(
                "the batch size is {} already: work was handed out (or the job resumed)",
                self.cfg.batch_size
            )));
        }
        if batch_size == 0 {
            return Err(Error::InvalidArgument("batch size 0".into()));
        }
        let old = self.cfg.batch_size;
        self.cfg.batch_size = batch_size;
        if self.cfg.remainder == Remainder::Drop && self.total_rows < self.row_per_step() {
            self.cfg.batch_size = old;
            return Err(Error::InvalidArgument(format!(
                "{} rows in all, fewer than workers x batch size = {} x {batch_size}: not one full \
                 step under remainder=drop (use pad or wrap, or a smaller batch)",
                self.total_rows, self.cfg.workers
            )));
        }
        self.start_epoch(0);
        Ok(())
    }

    /// A coordinator resuming from `state`, possibly with another worker count. The seed,
    /// epochs, batch size and remainder policy come from the state; `cfg.workers` and the
    /// timeouts from `cfg`. The plan must be the one the state was written for.
    pub fn resume(splits: Vec<SplitInfo>, mut cfg: Config, state: &State) -> Result<Self> {
        if !State::READS.contains(&state.version) {
            return Err(Error::Coordinator(format!(
                "state version {} not supported (this build reads versions 1 to 3): written \
                 by a newer hydrofeed?",
                state.version
            )));
        }
        cfg.seed = state.seed;
        cfg.shuffle = state.shuffle;
        cfg.epochs = state.epochs;
        cfg.batch_size = state.batch_size;
        cfg.remainder = state.remainder;
        cfg.order = state.order.as_ref().map(|o| o.spec);
        if let Some(o) = &cfg.order {
            o.check()
                .map_err(|e| Error::Coordinator(format!("state: {e}")))?;
        }
        let mut m = Self::empty(splits, cfg)?;
        m.resumed = true;
        if state.splits as usize != m.split_rows.len() || state.total_rows != m.total_rows {
            return Err(Error::Coordinator(format!(
                "state was written for {} splits / {} rows, the input has {} splits / {} rows",
                state.splits,
                state.total_rows,
                m.split_rows.len(),
                m.total_rows
            )));
        }
        for ls in &state.ledgers {
            let l = Ledger::from_state(ls, &m.split_rows).map_err(|e| {
                Error::Coordinator(format!("state, data epoch {}: {e}", ls.data_epoch))
            })?;
            m.ledgers.insert(ls.data_epoch, l);
        }
        m.steps_done = state.steps_done;
        m.counters.rows_dropped = state.rows_dropped;
        m.counters.rows_padded = state.rows_padded;
        m.counters.rows_wrapped = state.rows_wrapped;
        m.skipped = state.skipped.clone();
        m.counters.rows_skipped = m.skipped.iter().map(|r| r.end - r.start).sum();
        if state.finished || state.epoch >= m.cfg.epochs {
            m.epoch = state.epoch;
            m.finished = true;
        } else if let Some(os) = state.order.as_ref().filter(|o| !o.by_ledger) {
            m.resume_note = m.fixed_resume(state.epoch, os);
        } else if state.order.is_some() {
            let last = state.ledgers.iter().map(|l| l.data_epoch).max();
            m.by_ledger_epoch = Some((state.epoch, last.unwrap_or(0).max(state.epoch)));
            m.start_epoch(state.epoch);
        } else {
            m.start_epoch(state.epoch);
        }
        if !m.finished {
            m.resumed_at = Some((m.epoch, m.quota));
        }
        Ok(m)
    }

    /// The machine a journal's compaction saved (`saved`: its JSON), for the job `like` was
    /// resumed as from the same directory's state: the plan must be the same; the timeouts
    /// and the assignment log's setting are `like`'s (this run's flags).
    pub fn restore(saved: &[u8], like: &Machine) -> Result<Self> {
        let mut m: Machine = serde_json::from_slice(saved)
            .map_err(|e| Error::Coordinator(format!("a saved machine that does not read: {e}")))?;
        if m.split_rows != like.split_rows || m.cfg.workers != like.cfg.workers {
            return Err(Error::Coordinator(format!(
                "a saved machine of {} splits and {} workers, where the state's job has {} and {}",
                m.split_rows.len(),
                m.cfg.workers,
                like.split_rows.len(),
                like.cfg.workers
            )));
        }
        m.cfg.stall_after_ms = like.cfg.stall_after_ms;
        m.cfg.dead_after_ms = like.cfg.dead_after_ms;
        m.keep_log = like.keep_log;
        Ok(m)
    }

    fn empty(splits: Vec<SplitInfo>, cfg: Config) -> Result<Self> {
        if cfg.workers == 0 || cfg.batch_size == 0 {
            return Err(Error::InvalidArgument(
                "workers and batch size must be at least 1".into(),
            ));
        }
        if splits.len() >= u32::MAX as usize {
            return Err(Error::InvalidArgument("too many splits".into()));
        }
        let mut host_ids = HashMap::new();
        let mut split_rows = Vec::with_capacity(splits.len());
        let mut split_hosts = Vec::with_capacity(splits.len());
        for (i, s) in splits.into_iter().enumerate() {
            if s.id as usize != i {
                return Err(Error::InvalidArgument(format!(
                    "split ids must be 0..n in order; found id {} at index {i}",
                    s.id
                )));
            }
            split_rows.push(s.rows);
            let mut hs = Vec::with_capacity(s.hosts.len());
            for h in s.hosts {
                let n = host_ids.len() as u32;
                hs.push(*host_ids.entry(h).or_insert(n));
            }
            split_hosts.push(hs);
        }
        let total_rows: u64 = split_rows.iter().sum();
        if total_rows == 0 {
            return Err(Error::InvalidArgument("the input has no rows".into()));
        }
        let wb = u64::from(cfg.workers) * cfg.batch_size;
        if cfg.remainder == Remainder::Wrap && total_rows < wb {
            return Err(Error::InvalidArgument(format!(
                "{total_rows} rows in all, fewer than workers x batch size = {wb}: remainder=wrap \
                 would need more than the next epoch (use pad)"
            )));
        }
        let ranks = vec![RankInfo::default(); cfg.workers as usize];
        let granted = vec![None; cfg.workers as usize];
        let fixed = cfg.order.map(|spec| Fixed::new(spec, cfg.workers));
        Ok(Self {
            cfg,
            split_rows,
            split_hosts,
            host_ids,
            total_rows,
            epoch: 0,
            finished: false,
            quota: 0,
            steps_done: 0,
            ranks,
            quota_met_below: 0,
            queue: Queue::default(),
            next_queue: Queue::default(),
            queued_next: false,
            leases: HashMap::new(),
            next_lease: 1,
            ledgers: BTreeMap::new(),
            pad_order: Vec::new(),
            pad_at: (0, 0),
            counters: Counters::default(),
            log: Vec::new(),
            log_seq: 0,
            keep_log: true,
            resumed: false,
            resumed_at: None,
            fixed,
            by_ledger_epoch: None,
            input: None,
            resume_note: None,
            granted,
            skipped: Vec::new(),
            #[cfg(test)]
            ranks_inspected: 0,
        })
    }

    fn row_per_step(&self) -> u64 {
        u64::from(self.cfg.workers) * self.cfg.batch_size
    }

    /// Keep assignment-log records for [`Machine::drain_log`] (default on; off for benchmarks).
    pub fn set_keep_log(&mut self, keep: bool) {
        self.keep_log = keep;
    }

    /// Takes the assignment-log records produced since the last call.
    pub fn drain_log(&mut self) -> Vec<LogRecord> {
        std::mem::take(&mut self.log)
    }

    fn push_log(&mut self, kind: LogKind, rank: u32, lease: u64, r: Range, pad: bool) {
        if !self.keep_log {
            return;
        }
        self.log_seq += 1;
        self.log.push(LogRecord {
            seq: self.log_seq,
            kind,
            epoch: self.epoch,
            data_epoch: r.data_epoch,
            rank,
            lease,
            split: r.split,
            first_row: r.first,
            rows: r.rows,
            pad,
        });
    }

    /// The resumable position: epoch, seed, acked rows per data epoch, counters. Rows in
    /// flight (leased, not acked) are not in it: a resumed run hands them out again.
    pub fn state(&self) -> State {
        let order = self.fixed_state();
        let next = order.as_ref().is_some_and(|o| o.next.is_some());
        State {
            version: if next {
                State::VERSION_NEXT
            } else {
                State::VERSION
            },
            seed: self.cfg.seed,
            shuffle: self.cfg.shuffle,
            epochs: self.cfg.epochs,
            batch_size: self.cfg.batch_size,
            remainder: self.cfg.remainder,
            splits: self.split_rows.len() as u32,
            total_rows: self.total_rows,
            epoch: self.epoch,
            finished: self.finished,
            steps_done: self.steps_done,
            rows_dropped: self.counters.rows_dropped,
            rows_padded: self.counters.rows_padded,
            rows_wrapped: self.counters.rows_wrapped,
            ledgers: self.ledgers.iter().map(|(&d, l)| l.to_state(d)).collect(),
            order,
            input: self.input.clone(),
            journal: None,
            skipped: self.skipped.clone(),
        }
    }

    /// The id the next lease gets (the journal's compaction saves it).
    pub fn next_lease_id(&self) -> u64 {
        self.next_lease
    }

    /// Sets the id the next lease gets (a journal's recovery: ids are never reused).
    pub fn set_next_lease_id(&mut self, id: u64) {
        self.next_lease = self.next_lease.max(id);
    }

    /// Records the fingerprint of the input this machine's plan was made from: the states it
    /// writes carry it, and a resume checks it ([`crate::input::resume_over`]).
    pub fn set_input(&mut self, input: InputFingerprint) {
        self.input = Some(input);
    }

    /// Whether the fixed order deals epoch `e` (not the ledger: see `by_ledger_epoch`).
    fn fixed_deals(&self, e: u32) -> bool {
        self.fixed.is_some() && self.by_ledger_epoch.is_none_or(|(a, z)| e < a || e > z)
    }

    /// What [`Machine::resume`] changed about the streams (a new worker count, or ranks that
    /// stopped at different steps), to log; `None` when they go on exactly.
    pub fn resume_note(&self) -> Option<&str> {
        self.resume_note.as_deref()
    }

    /// Current training epoch (equals `epochs` once finished).
    pub fn epoch(&self) -> u32 {
        self.epoch
    }

    /// Whether every epoch is done.
    pub fn finished(&self) -> bool {
        self.finished
    }

    /// Rows per rank in the current epoch (`steps * batch_size`).
    pub fn quota(&self) -> u64 {
        self.quota
    }

    /// For a machine built by [`Machine::resume`] (and not finished then): the epoch it
    /// resumed in and the steps each rank had left in it, its quota over the batch size
    /// (fewer than a whole epoch's when the state was saved mid-epoch).
    pub fn resumed_at(&self) -> Option<(u32, u64)> {
        self.resumed_at.map(|(e, q)| (e, q / self.cfg.batch_size))
    }

    /// Steps `rank` consumed (acked) over the feed: the completed epochs', the current
    /// one's, and the next one's when it went ahead (the fixed order).
    pub fn steps_of(&self, rank: u32) -> u64 {
        let Some(r) = self.ranks.get(rank as usize).filter(|_| !self.finished) else {
            return self.steps_done;
        };
        let ahead = self
            .fixed
            .as_ref()
            .and_then(|f| f.next.as_ref())
            .map_or(0, |n| n.acked[rank as usize]);
        let b = self.cfg.batch_size;
        self.steps_done + r.acked / b + ahead / b
    }

    /// Steps per rank of the completed epochs.
    pub fn steps_done(&self) -> u64 {
        self.steps_done
    }

    /// Counters of the run.
    pub fn counters(&self) -> Counters {
        self.counters
    }

    /// The ranks.
    pub fn ranks(&self) -> &[RankInfo] {
        &self.ranks
    }

    /// The settings.
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// Rows of every split, by id.
    pub fn split_rows(&self) -> &[u64] {
        &self.split_rows
    }

    /// Total rows of the input.
    pub fn total_rows(&self) -> u64 {
        self.total_rows
    }

    /// Leases outstanding (handed out, not fully acked).
    pub fn outstanding(&self) -> usize {
        self.leases.len()
    }

    /// Ranges waiting in the queue.
    pub fn queued(&self) -> usize {
        self.queue.live + self.next_queue.live
    }
}
