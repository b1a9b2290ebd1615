//! The coordinator's state machine: no I/O, no clock (time comes in as milliseconds), no
//! threads. The gRPC service wraps it in a mutex; the benchmark and the tests drive it directly.
//!
//! Work is handed out as *leases* of row ranges (split, first row, rows), dynamically, to the
//! rank that asks, capped by that rank's remaining quota of the epoch. Capping a range cuts the
//! split; the rest goes back to the head of the queue. So uneven splits never cause uneven
//! steps: every rank receives exactly `quota = S * B` rows per epoch.

use std::collections::{BTreeMap, HashMap, VecDeque};

use serde::{Deserialize, Serialize};

use super::ledger::Ledger;
use super::{Remainder, SplitInfo, State};
use crate::{Error, Result};

/// Coordinator settings.
#[derive(Debug, Clone, PartialEq, Eq)]
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
        }
    }
}

/// What a worker is doing, as its heartbeats say.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    /// Registered, nothing done yet.
    #[default]
    Starting,
    /// Reading bytes from storage.
    Reading,
    /// Decoding into Arrow.
    Decoding,
    /// Waiting for ring space: the trainer is slower than the feeder.
    WaitingRing,
    /// The trainer is not consuming (not attached, or stuck).
    TrainerIdle,
    /// Quota of the epoch done, waiting for the other ranks.
    WaitingWork,
    /// End of feed reached.
    Done,
}

impl Stage {
    /// Name used in logs and metrics.
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::Starting => "starting",
            Stage::Reading => "reading",
            Stage::Decoding => "decoding",
            Stage::WaitingRing => "waiting for ring space",
            Stage::TrainerIdle => "trainer not consuming",
            Stage::WaitingWork => "waiting for work",
            Stage::Done => "done",
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
    /// Leases handed out.
    pub assignments: u64,
    /// Stalls reported.
    pub stalls: u64,
    /// Ranks declared dead.
    pub deaths: u64,
}

/// A rank as the state machine sees it.
#[derive(Debug, Clone, Default)]
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

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Range {
    data_epoch: u32,
    split: u32,
    first: u64,
    rows: u64,
}

/// Ranges not handed out yet. Entries are taken lazily: a taken entry becomes `None`, and
/// the per-host and re-queue indexes skip such entries when they reach them.
#[derive(Debug, Default)]
struct Queue {
    entries: Vec<Option<Range>>,
    front: usize,
    requeued: VecDeque<usize>,
    by_host: HashMap<u32, VecDeque<usize>>,
    live: usize,
}

impl Queue {
    fn push_back(&mut self, r: Range, hosts: &[u32]) {
        let i = self.entries.len();
        self.entries.push(Some(r));
        self.live += 1;
        for h in hosts {
            self.by_host.entry(*h).or_default().push_back(i);
        }
    }

    /// Puts a range at the head (remainders of cut ranges, rows of dead ranks).
    fn push_head(&mut self, r: Range, hosts: &[u32]) {
        let i = self.entries.len();
        self.entries.push(Some(r));
        self.live += 1;
        self.requeued.push_front(i);
        for h in hosts {
            self.by_host.entry(*h).or_default().push_front(i);
        }
    }

    fn take(&mut self, host: Option<u32>) -> Option<Range> {
        if let Some(q) = host.and_then(|h| self.by_host.get_mut(&h)) {
            while let Some(i) = q.pop_front() {
                if let Some(r) = self.entries[i].take() {
                    self.live -= 1;
                    return Some(r);
                }
            }
        }
        while let Some(i) = self.requeued.pop_front() {
            if let Some(r) = self.entries[i].take() {
                self.live -= 1;
                return Some(r);
            }
        }
        while self.front < self.entries.len() {
            let i = self.front;
            self.front += 1;
            if let Some(r) = self.entries[i].take() {
                self.live -= 1;
                return Some(r);
            }
        }
        None
    }

    fn drain(&mut self) -> Vec<Range> {
        let out = self.entries.drain(..).flatten().collect();
        *self = Queue::default();
        out
    }
}

#[derive(Debug, Clone)]
struct LeaseState {
    rank: u32,
    incarnation: u64,
    range: Range,
    pad: bool,
    /// Acked rows as sorted, disjoint, non-adjacent intervals `[a, b)` of split rows.
    acked: Vec<(u64, u64)>,
    acked_rows: u64,
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

/// splitmix64: the one mixing function behind every derived seed and the split order. Ours,
/// not a library's, because the order is part of the resume contract and must not change
/// with a dependency update.
pub fn mix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Seed of an epoch, from the job seed.
pub fn epoch_seed(seed: u64, epoch: u32) -> u64 {
    mix64(seed ^ mix64(u64::from(epoch) ^ 0x6879_6472_6f66_6565))
}

/// Seed of a rank's shuffle buffer in an epoch.
pub fn shuffle_seed(seed: u64, epoch: u32, rank: u32) -> u64 {
    mix64(epoch_seed(seed, epoch) ^ mix64(u64::from(rank) ^ 0x7368_7566_666c_6500))
}

/// The split order of a data epoch: a Fisher-Yates permutation of `0..n` driven by
/// splitmix64 from the epoch seed. Depends on (seed, epoch, n) only, not on the number of
/// workers, so a resumed run with another worker count walks the same order.
pub fn split_order(seed: u64, epoch: u32, n: u32) -> Vec<u32> {
    let mut v: Vec<u32> = (0..n).collect();
    let mut state = epoch_seed(seed, epoch);
    for i in (1..v.len()).rev() {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let r = mix64(state);
        // Multiply-shift: unbiased enough for n < 2^32 and stable across platforms.
        let j = ((u128::from(r) * (i as u128 + 1)) >> 64) as usize;
        v.swap(i, j);
    }
    v
}

/// The coordinator state machine. See the module docs of [`super`] for the contract.
#[derive(Debug)]
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
    log: Vec<LogRecord>,
    log_seq: u64,
    keep_log: bool,
    /// Built by [`Machine::resume`]: the batch size is the state's.
    resumed: bool,
}

impl Machine {
    /// A coordinator for `splits` (ids must be `0..n` in order) starting at epoch 0.
    pub fn new(splits: Vec<SplitInfo>, cfg: Config) -> Result<Self> {
        let mut m = Self::empty(splits, cfg)?;
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
        if state.version != State::VERSION {
            return Err(Error::Coordinator(format!(
                "state version {} not supported (this build reads {})",
                state.version,
                State::VERSION
            )));
        }
        cfg.seed = state.seed;
        cfg.shuffle = state.shuffle;
        cfg.epochs = state.epochs;
        cfg.batch_size = state.batch_size;
        cfg.remainder = state.remainder;
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
        if state.finished || state.epoch >= m.cfg.epochs {
            m.epoch = state.epoch;
            m.finished = true;
        } else {
            m.start_epoch(state.epoch);
        }
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

    fn ledger(&mut self, data_epoch: u32) -> &mut Ledger {
        let n = self.split_rows.len();
        self.ledgers
            .entry(data_epoch)
            .or_insert_with(|| Ledger::new(n))
    }

    /// Appends the un-acked rows of `data_epoch`, in its order, to the queue.
    fn enqueue_data_epoch(&mut self, data_epoch: u32) -> u64 {
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
    fn start_epoch(&mut self, e: u32) {
        self.epoch = e;
        for r in &mut self.ranks {
            r.assigned = 0;
            r.acked = 0;
        }
        // Ledgers of finished data epochs are of no further use.
        self.ledgers.retain(|&d, _| d >= e);
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

    /// Closes the epoch when every rank acked its quota, and starts the next (or ends the feed).
    fn maybe_advance(&mut self) {
        if self.finished || !self.ranks.iter().all(|r| r.acked == self.quota) {
            return;
        }
        debug_assert!(self.leases.is_empty());
        let e = self.epoch;
        // Rows of this epoch still queued are the remainder under drop (under pad and wrap
        // the quotas cover every row, so there are none): dropped and counted. Under wrap the
        // rest of the next epoch's order stays in `next_queue` for it.
        for r in self.queue.drain() {
            debug_assert_eq!(self.cfg.remainder, Remainder::Drop);
            self.counters.rows_dropped += r.rows;
            self.push_log(LogKind::Drop, u32::MAX, 0, r, false);
        }
        self.steps_done += self.quota / self.cfg.batch_size;
        if e + 1 >= self.cfg.epochs {
            self.epoch = e + 1;
            self.finished = true;
            self.ledgers.clear();
            return;
        }
        self.start_epoch(e + 1);
    }

    fn host_id(&self, host: &str) -> Option<u32> {
        self.host_ids.get(host).copied()
    }

    /// Registers (or re-registers) `rank` from `host` at `now_ms`. A re-join starts a new
    /// incarnation: the old one's un-acked rows go back to the queue.
    pub fn join(&mut self, rank: u32, host: &str, now_ms: u64) -> Result<u64> {
        self.check_rank(rank)?;
        if self.ranks[rank as usize].alive {
            self.requeue_rank(rank);
        }
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
    /// first counts `consumed` (`(lease, split, rows read)`, cumulative per lease, reported by
    /// the trainer from its frames' lineage) as acks of the previous incarnation, so only rows
    /// nobody read go back to the queue. Leases no longer outstanding (acked whole, or of an
    /// older incarnation) are skipped. Refused when the previous incarnation was declared dead
    /// in between: its rows were queued again already, and the trainer's would come twice.
    pub fn rejoin(
        &mut self,
        rank: u32,
        host: &str,
        now_ms: u64,
        consumed: &[(u64, u32, u64)],
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
            for &(lease, split, rows) in consumed {
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

    fn check_live(&self, rank: u32, incarnation: u64) -> Result<()> {
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

    /// The next lease for `rank`, a wait, or end of feed. `host` (if given) overrides the
    /// registered host for the HDFS-locality preference.
    pub fn request_work(
        &mut self,
        rank: u32,
        incarnation: u64,
        host: Option<&str>,
        now_ms: u64,
    ) -> Result<Work> {
        self.check_live(rank, incarnation)?;
        self.touch(rank, now_ms);
        if self.finished {
            self.ranks[rank as usize].stage = Stage::Done;
            return Ok(Work::EndOfFeed {
                steps: self.steps_done,
            });
        }
        let left = self.quota - self.ranks[rank as usize].assigned;
        if left == 0 {
            return Ok(Work::Wait { retry_ms: 50 });
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
        self.leases.insert(
            id,
            LeaseState {
                rank,
                incarnation: inc,
                range,
                pad,
                acked: Vec::new(),
                acked_rows: 0,
            },
        );
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
        }))
    }

    /// Puts a range back at the head of the queue of its data epoch.
    fn push_head(&mut self, r: Range) {
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
        if complete {
            self.leases.remove(&lease);
        }
        if pad {
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
        r.acked += delta;
        r.acked_total += delta;
        self.maybe_advance();
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

    fn touch(&mut self, rank: u32, now_ms: u64) {
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
                let requeued_rows = self.requeue_rank(rank);
                let r = &mut self.ranks[rank as usize];
                r.alive = false;
                self.counters.deaths += 1;
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

    /// The resumable position: epoch, seed, acked rows per data epoch, counters. Rows in
    /// flight (leased, not acked) are not in it: a resumed run hands them out again.
    pub fn state(&self) -> State {
        State {
            version: State::VERSION,
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
        }
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
