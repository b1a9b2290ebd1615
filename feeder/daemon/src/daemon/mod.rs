//! The feeder daemon (`hydrofeed feeder`): feeds the local trainers of one node from row
//! ranges handed out by the coordinator.
//!
//! One ring per local trainer; each trainer is one rank. Per rank, three threads:
//! - the **reader** asks the coordinator for work (`RequestWork`) and reads each lease on the
//!   feeder's rayon decode pool (two leases per rank in flight): it opens the lease's split,
//!   skips to the lease's first row (the readers cannot seek inside a split yet, so the rows
//!   before it are decoded and dropped) and sends the lease's rows on a bounded crossbeam channel;
//! - the **writer** (the rank's own thread) cuts them into batches of exactly the coordinator's
//!   batch size (a batch may hold rows of several leases), writes frames into the ring with the
//!   code `serve` uses ([`crate::serve`]'s writer), writes `EndOfEpoch` when the first lease of
//!   the next epoch arrives (so after the coordinator's epoch barrier: the same step on every
//!   rank) and `EndOfFeed` on end-of-feed, and forwards the trainer's acks: the trainer sends
//!   `Control::Ack{seq}` for the frames it consumed, the writer maps each batch frame to its
//!   pieces `(lease, split, rows)` and sends cumulative per-lease acks to the coordinator;
//! - the **heartbeat** thread reports the rank's stage (reading, decoding, waiting for ring
//!   space, trainer not consuming, waiting for work, done) and counters.
//!
//! Memory: each rank holds at most its ring (`memory_budget / 2 / trainers`) plus the channel
//! (`CHANNEL_BATCHES` decoded batches of at most one batch size each).

use std::collections::{HashMap, VecDeque};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::ops::ControlFlow;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use arrow_array::RecordBatch;
use crossbeam_channel::{bounded, Receiver, RecvTimeoutError, Sender};
use hydrofeed_ipc::{Listener, Producer, RingConfig};
use hydrofeed_tfbridge::{Control, FrameKind, Piece};

use crate::serve::{self, Writer};
use crate::{Error, Result};
use hydrofeed_coord::client::CoordClient;
use hydrofeed_coord::cluster::{Registration, Role};
use hydrofeed_coord::token::Token;
use hydrofeed_coord::{Lease, Stage, Work, WorkerCounters};
use hydrofeed_format::{Plan, ReadOptions, Rebatcher, SplitReader};
use hydrofeed_storage::{self as storage, Storage};

/// Decoded batches a rank's readers may hold ahead of its writer.
const CHANNEL_BATCHES: usize = 4;
/// Leases of one rank read at the same time (prefetch depth).
const LEASES_IN_FLIGHT: usize = 2;
/// How often the writer looks at the control channel while it has nothing to write.
const POLL: Duration = Duration::from_millis(20);

/// Set by [`request_stop`]: every rank ends its feed (see there).
static STOP: AtomicBool = AtomicBool::new(false);

/// Ends the feed on every rank: no new batches; each ring gets `EndOfFeed` after the frames
/// already in it, and the writer forwards the trainer's acks until it leaves or acked
/// everything. What was not consumed stays un-acked, so the coordinator's state resumes it.
/// Async-signal-safe (one atomic store): `hydrofeed feeder` calls it on SIGTERM and SIGINT.
pub fn request_stop() {
    STOP.store(true, Ordering::SeqCst);
}

fn stop_requested() -> bool {
    STOP.load(Ordering::Relaxed)
}

/// What `hydrofeed feeder` does.
#[derive(Debug, Clone)]
pub struct FeederOptions {
    /// Input path (the coordinator plans the same input: split ids are plan indices).
    pub input: String,
    /// Coordinator address `host:port`.
    pub coordinator: String,
    /// The job's token.
    pub token: Token,
    /// Directory of the trainer sockets (`rank-<rank>.sock`).
    pub socket_dir: PathBuf,
    /// Local trainers (one rank each).
    pub trainers: u32,
    /// Ranks to ask for (`None`: the coordinator picks).
    pub ranks: Option<Vec<u32>>,
    /// Port of each trainer's TF server, for the cluster spec (0: none).
    pub trainer_ports: Vec<u32>,
    /// This host's name, for locality and the cluster spec.
    pub host: String,
    /// Columns, format and error policy (`batch_rows` is set to the batch size).
    pub read: ReadOptions,
    /// Total memory for rings (half of it) and decoded batches in flight.
    pub memory_budget: usize,
    /// How long to wait for a trainer to attach.
    pub accept_timeout: Duration,
    /// How long a trainer may leave its ring full.
    pub stall_timeout: Duration,
    /// Prometheus text endpoint.
    pub metrics: Option<SocketAddr>,
    /// Threads of the decode pool shared by all ranks (0: one per CPU).
    pub decode_threads: usize,
    /// The job's batch size comes from the trainers (`launch` without `--batch-size`): each
    /// rank writes what its trainer asked for to [`asked_path`] and waits for [`agreed_path`].
    pub batch_size_from_trainers: bool,
    /// A trainer that leaves before its end of feed ends only its rank; the other ranks keep
    /// going (`launch` sets it: it knows the trainer's exit status, the feeder does not).
    /// Otherwise it ends the feeder at once. Either way the feeder then fails with
    /// [`Error::PeerLost`] naming the ranks.
    pub keep_going: bool,
    /// This feeder replaces one that died under the same ranks (`launch` restarts it): each
    /// rank first takes back its trainer, which re-attaches and reports the rows it read after
    /// its last ack (`Control::Rejoin`), then registers with that report. Needs `ranks`.
    pub rejoin: bool,
}

/// Counters of one rank, shared with the heartbeat and metrics threads.
#[derive(Debug, Default)]
pub struct RankStats {
    /// Rank.
    pub rank: AtomicU64,
    /// Current stage (`Stage as u8`).
    pub stage: AtomicU8,
    /// Rows read (after skipping to the lease start).
    pub rows_read: AtomicU64,
    /// Rows decoded and dropped to reach lease starts (the head of a unit).
    pub rows_skipped: AtomicU64,
    /// Rows passed over without reading or decoding them to reach lease starts (whole row
    /// groups, stripes, blocks, records).
    pub rows_passed: AtomicU64,
    /// Batches written into the ring.
    pub batches: AtomicU64,
    /// Bytes written into the ring.
    pub bytes: AtomicU64,
    /// Rows acked by the trainer.
    pub rows_acked: AtomicU64,
    /// Batches acked by the trainer.
    pub batches_acked: AtomicU64,
    /// Seconds (ms) spent waiting for ring space.
    pub ring_wait_ms: AtomicU64,
    /// Seconds (ms) waiting for work at the epoch barrier.
    pub work_wait_ms: AtomicU64,
    /// Corrupt records skipped under `--skip-errors` inside the leases' row ranges.
    pub skipped_records: AtomicU64,
    /// Files those records were in.
    pub skipped_files: Mutex<std::collections::BTreeSet<String>>,
}

/// Prefix of the line `hydrofeed feeder` prints at exit when records were skipped
/// (`launch` puts it in its summary).
pub const SKIPPED_LINE: &str = "hydrofeed feeder: skipped ";

/// Prints [`SKIPPED_LINE`] with the count and the files, if any record was skipped.
fn report_skipped(stats: &[Arc<RankStats>]) {
    let n: u64 = stats
        .iter()
        .map(|s| s.skipped_records.load(Ordering::Relaxed))
        .sum();
    if n == 0 {
        return;
    }
    let mut files = std::collections::BTreeSet::new();
    for s in stats {
        if let Ok(f) = s.skipped_files.lock() {
            files.extend(f.iter().cloned());
        }
    }
    let files: Vec<String> = files.into_iter().collect();
    eprintln!("{SKIPPED_LINE}{n} corrupt records in {}", files.join(", "));
}

const STAGES: [Stage; 7] = [
    Stage::Starting,
    Stage::Reading,
    Stage::Decoding,
    Stage::WaitingRing,
    Stage::TrainerIdle,
    Stage::WaitingWork,
    Stage::Done,
];

impl RankStats {
    fn set(&self, s: Stage) {
        let i = STAGES.iter().position(|x| *x == s).unwrap_or(0);
        self.stage.store(i as u8, Ordering::Relaxed);
    }

    /// The current stage.
    pub fn stage(&self) -> Stage {
        STAGES[(self.stage.load(Ordering::Relaxed) as usize).min(STAGES.len() - 1)]
    }
}

/// `(rank, rows written, batches written, steps at end of feed)`.
type RankTotals = (u32, u64, u64, u64);

/// What a finished feeder did, per rank.
#[derive(Debug, Clone, Default)]
pub struct FeederReport {
    /// `(rank, rows written, batches written, steps at end of feed)`.
    pub ranks: Vec<(u32, u64, u64, u64)>,
}

/// Runs the daemon until every local trainer got end-of-feed (or one failed).
pub fn run_feeder(opts: &FeederOptions) -> Result<FeederReport> {
    if opts.trainers == 0 {
        return Err(Error::InvalidArgument("--trainers 0".into()));
    }
    let storage = storage::open_storage(&opts.input)?;
    let plan = Arc::new(hydrofeed_format::plan(&storage, &opts.input, &opts.read)?);
    tracing::info!(
        splits = plan.splits.len(),
        rows = plan.total_rows(),
        "planned {}",
        opts.input
    );
    std::fs::create_dir_all(&opts.socket_dir).map_err(|e| Error::Io {
        loc: hydrofeed_error::Location {
            path: opts.socket_dir.display().to_string(),
            ..Default::default()
        },
        source: e,
    })?;
    let stats: Vec<Arc<RankStats>> = (0..opts.trainers)
        .map(|_| Arc::new(RankStats::default()))
        .collect();
    let started = Instant::now();
    let _metrics = match opts.metrics {
        Some(a) => Some(spawn_metrics(a, stats.clone(), started)?),
        None => None,
    };
    let pool = Arc::new(
        rayon::ThreadPoolBuilder::new()
            .num_threads(opts.decode_threads)
            .thread_name(|i| format!("hf-decode{i}"))
            .build()
            .map_err(|e| Error::external("decode pool", e))?,
    );
    let mut handles: Vec<(usize, thread::JoinHandle<Result<RankTotals>>)> = Vec::new();
    for i in 0..opts.trainers {
        let (o, p, s, st) = (
            opts.clone(),
            plan.clone(),
            storage.clone(),
            stats[i as usize].clone(),
        );
        let pool = pool.clone();
        let h = thread::Builder::new()
            .name(format!("hf-rank{i}"))
            .spawn(move || run_rank(&o, i, &p, &s, &st, &pool))
            .map_err(|e| Error::external("spawning a rank thread", e))?;
        handles.push((i as usize, h));
    }
    let mut report = FeederReport::default();
    let mut first_err = None;
    let mut lost: Vec<String> = Vec::new();
    // Fail fast: the first rank that fails ends the process (its trainer gets an error frame;
    // the others notice their feeder is gone). A trainer that left ends only its rank under
    // `keep_going`.
    while !handles.is_empty() {
        if let Some(k) = handles.iter().position(|(_, h)| h.is_finished()) {
            let (i, h) = handles.remove(k);
            let rank = stats[i].rank.load(Ordering::Relaxed);
            match h.join() {
                Ok(Ok(r)) => report.ranks.push(r),
                Ok(Err(Error::PeerLost(m))) if opts.keep_going => {
                    tracing::info!("rank {rank}: {m}");
                    lost.push(format!("rank {rank}: {m}"));
                }
                Ok(Err(e)) => {
                    first_err = Some(e);
                    break;
                }
                Err(_) => {
                    first_err = Some(Error::Internal("a rank thread panicked".into()));
                    break;
                }
            }
            continue;
        }
        thread::sleep(Duration::from_millis(20));
    }
    report_skipped(&stats);
    match first_err {
        Some(e) => Err(e),
        None if !lost.is_empty() => Err(Error::PeerLost(format!(
            "a trainer left before its end of feed ({}); the other ranks were fed to their end",
            lost.join("; ")
        ))),
        None => {
            report.ranks.sort();
            Ok(report)
        }
    }
}

fn connect(opts: &FeederOptions) -> Result<CoordClient> {
    CoordClient::connect(&opts.coordinator, &opts.token, Duration::from_secs(30))
}

/// One rank: register, attach the trainer, feed until end-of-feed.
fn run_rank(
    opts: &FeederOptions,
    i: u32,
    plan: &Arc<Plan>,
    storage: &Arc<dyn Storage>,
    stats: &Arc<RankStats>,
    pool: &Arc<rayon::ThreadPool>,
) -> Result<(u32, u64, u64, u64)> {
    let mut client = connect(opts)?;
    let want = opts.ranks.as_ref().and_then(|r| r.get(i as usize).copied());
    // A restarted feeder takes its trainer back first: the trainer says what it read after
    // its last ack, and the registration carries that to the coordinator.
    let attached = match (opts.rejoin, want) {
        (false, _) => None,
        (true, Some(rank)) => Some(attach(opts, rank, true)?),
        (true, None) => {
            return Err(Error::InvalidArgument(
                "--rejoin needs --ranks: the restarted feeder serves the ranks it served".into(),
            ))
        }
    };
    let consumed = attached
        .as_ref()
        .and_then(|a| a.rejoin.as_ref())
        .map(|r| r.consumed.clone())
        .unwrap_or_default();
    let reg = client.rejoin(
        &Registration {
            rank: want,
            host: opts.host.clone(),
            port: opts.trainer_ports.get(i as usize).copied().unwrap_or(0),
            gpus: Vec::new(),
            role: Role::Worker,
        },
        &consumed,
    )?;
    let (rank, inc) = (reg.rank, reg.incarnation);
    stats.rank.store(u64::from(rank), Ordering::Relaxed);
    if reg.num_splits as usize != plan.splits.len() || reg.total_rows != plan.total_rows() {
        return Err(Error::Coordinator(format!(
            "rank {rank}: the coordinator planned {} splits / {} rows, this feeder {} / {} for \
             {}: not the same input",
            reg.num_splits,
            reg.total_rows,
            plan.splits.len(),
            plan.total_rows(),
            opts.input
        )));
    }
    let stop = Arc::new(AtomicBool::new(false));
    let hb = {
        let (o, st, stop) = (opts.clone(), stats.clone(), stop.clone());
        let every = reg.heartbeat_interval.max(Duration::from_millis(100));
        thread::Builder::new()
            .name(format!("hf-hb{rank}"))
            .spawn(move || heartbeat(&o, rank, inc, &st, &stop, every))
            .map_err(|e| Error::external("spawning a heartbeat thread", e))?
    };
    let r = feed_rank(opts, &reg, plan, storage, stats, client, pool, attached);
    stats.set(Stage::Done);
    stop.store(true, Ordering::Relaxed);
    let _ = hb.join();
    r.map(|(rows, batches, steps)| (rank, rows, batches, steps))
}

fn heartbeat(
    opts: &FeederOptions,
    rank: u32,
    inc: u64,
    st: &RankStats,
    stop: &AtomicBool,
    every: Duration,
) {
    let Ok(mut c) = connect(opts) else { return };
    let mut last = Instant::now() - every;
    loop {
        let done = stop.load(Ordering::Relaxed);
        if done || last.elapsed() >= every {
            last = Instant::now();
            let counters = WorkerCounters {
                rows_read: st.rows_read.load(Ordering::Relaxed),
                rows_decoded: st.rows_read.load(Ordering::Relaxed),
                batches_written: st.batches.load(Ordering::Relaxed),
                ring_bytes_used: 0,
            };
            match c.heartbeat(rank, inc, st.stage(), counters) {
                Ok(true) => {}
                Ok(false) => tracing::warn!("rank {rank}: the coordinator declared it dead"),
                Err(e) => tracing::warn!("rank {rank}: heartbeat: {e}"),
            }
        }
        if done {
            return;
        }
        thread::sleep(Duration::from_millis(50));
    }
}

/// What the reader sends the writer.
enum Ev {
    Lease(Lease),
    Rows(u64, u32, RecordBatch),
    End(u64),
    Failed(Error),
}

/// What a rank's reader needs.
struct ReadCtx {
    storage: Arc<dyn Storage>,
    plan: Arc<Plan>,
    read: ReadOptions,
    st: Arc<RankStats>,
    pool: Arc<rayon::ThreadPool>,
}

/// Asks the coordinator for work and reads each lease on the decode pool, at most
/// `LEASES_IN_FLIGHT` leases at a time (so the next lease is read while the last one's batches
/// are still being written); rows of one lease stay in order (cumulative acks need that), rows
/// of two leases may interleave.
#[allow(clippy::too_many_arguments)]
fn read_work(
    mut client: CoordClient,
    rank: u32,
    inc: u64,
    host: String,
    ctx: Arc<ReadCtx>,
    tx: Sender<Ev>,
    stop: Arc<AtomicBool>,
) {
    let (tokens, done) = bounded::<()>(LEASES_IN_FLIGHT);
    let st = ctx.st.clone();
    let mut waited: Option<Instant> = None;
    loop {
        if stop.load(Ordering::Relaxed) {
            return;
        }
        let w = match client.request_work(rank, inc, &host) {
            Ok(w) => w,
            Err(e) => {
                let _ = tx.send(Ev::Failed(e));
                return;
            }
        };
        match w {
            Work::Lease(l) => {
                if let Some(t) = waited.take() {
                    st.work_wait_ms
                        .fetch_add(t.elapsed().as_millis() as u64, Ordering::Relaxed);
                }
                if tx.send(Ev::Lease(l.clone())).is_err() {
                    return;
                }
                // Blocks while LEASES_IN_FLIGHT leases are being read.
                if tokens.send(()).is_err() {
                    return;
                }
                let (c, tx2, done2) = (ctx.clone(), tx.clone(), done.clone());
                ctx.pool.spawn(move || {
                    if let Err(e) = read_lease(&c.storage, &c.plan, &c.read, &l, &c.st, &tx2) {
                        let _ = tx2.send(Ev::Failed(e));
                    }
                    let _ = done2.recv();
                });
            }
            Work::Wait { retry_ms } => {
                st.set(Stage::WaitingWork);
                waited.get_or_insert_with(Instant::now);
                thread::sleep(Duration::from_millis(retry_ms.clamp(5, 200)));
            }
            Work::EndOfFeed { steps } => {
                // Every lease's rows were consumed and acked before end-of-feed, so the pool
                // holds no reads of ours any more.
                let _ = tx.send(Ev::End(steps));
                return;
            }
        }
    }
}

/// Reads the rows `[first_row, first_row + rows)` of the lease's split.
fn read_lease(
    storage: &Arc<dyn Storage>,
    plan: &Plan,
    read: &ReadOptions,
    l: &Lease,
    st: &RankStats,
    tx: &Sender<Ev>,
) -> Result<()> {
    let split = plan.splits.get(l.split as usize).ok_or_else(|| {
        Error::Coordinator(format!(
            "lease {} names split {} but the plan has {}",
            l.lease,
            l.split,
            plan.splits.len()
        ))
    })?;
    st.set(Stage::Reading);
    let mut reader = hydrofeed_format::open_split(storage, plan, split, read)?;
    // Whole units before the lease's first row are passed over unread; only the rest of the
    // head is decoded and dropped.
    let passed = reader.skip_rows(l.first_row);
    st.rows_passed.fetch_add(passed, Ordering::Relaxed);
    let (mut skip, mut left) = (l.first_row - passed, l.rows);
    // Records skipped before the lease's first row belong to another lease's range (the
    // readers re-decode a split's head): count only those after it.
    let mut skipped_before = (l.first_row == 0).then_some(0);
    let note_skips = |reader: &dyn SplitReader, before: Option<u64>| {
        let n = reader.skipped().records - before.unwrap_or(0);
        if n > 0 {
            st.skipped_records.fetch_add(n, Ordering::Relaxed);
            if let Ok(mut f) = st.skipped_files.lock() {
                f.insert(split.path.clone());
            }
        }
    };
    while let Some(b) = reader.next() {
        st.set(Stage::Decoding);
        let b = b?;
        let n = b.num_rows() as u64;
        if skip >= n {
            skip -= n;
            st.rows_skipped.fetch_add(n, Ordering::Relaxed);
            continue;
        }
        skipped_before.get_or_insert(reader.skipped().records);
        st.rows_skipped.fetch_add(skip, Ordering::Relaxed);
        let take = (n - skip).min(left);
        let piece = b.slice(skip as usize, take as usize);
        skip = 0;
        left -= take;
        st.rows_read.fetch_add(take, Ordering::Relaxed);
        if tx.send(Ev::Rows(l.lease, l.split, piece)).is_err() {
            return Ok(()); // the writer is gone; it reports why
        }
        if left == 0 {
            note_skips(reader.as_ref(), skipped_before);
            return Ok(());
        }
        st.set(Stage::Reading);
    }
    Err(Error::Data {
        loc: hydrofeed_error::Location {
            path: split.path.clone(),
            split: Some(split.id),
            ..Default::default()
        },
        format: format_name(split.format),
        detail: format!(
            "split ended {left} rows short of the lease's [{}, {}) (the plan counted {} rows)",
            l.first_row,
            l.first_row + l.rows,
            split.rows
        ),
    })
}

/// File in the socket directory where rank `r` writes the batch size its trainer asked for.
pub fn asked_path(dir: &std::path::Path, rank: u32) -> PathBuf {
    dir.join(format!("rank-{rank}.batch-size"))
}

/// File in the socket directory where `launch` writes the job's batch size.
pub fn agreed_path(dir: &std::path::Path) -> PathBuf {
    dir.join("batch-size")
}

/// `--batch-size-from-trainers`: writes what this rank's trainer asked for (`none` for no
/// size) and waits for the size `launch` set on the coordinator once every rank's trainer
/// attached. Files, not a protocol message: `launch` and this feeder share the private
/// socket directory, and the coordinator's protocol stays as it is.
fn agree_batch_size(
    dir: &std::path::Path,
    rank: u32,
    asked: Option<usize>,
    timeout: Duration,
) -> Result<usize> {
    let io = |path: &std::path::Path, e: std::io::Error| Error::Io {
        loc: hydrofeed_error::Location {
            path: path.display().to_string(),
            ..Default::default()
        },
        source: e,
    };
    let p = asked_path(dir, rank);
    let tmp = p.with_extension("tmp");
    let text = asked.map_or_else(|| "none".to_string(), |a| a.to_string());
    std::fs::write(&tmp, text).map_err(|e| io(&tmp, e))?;
    std::fs::rename(&tmp, &p).map_err(|e| io(&p, e))?;
    let agreed = agreed_path(dir);
    let t0 = Instant::now();
    loop {
        match std::fs::read_to_string(&agreed) {
            Ok(s) => {
                return s.trim().parse::<usize>().map_err(|_| {
                    Error::Internal(format!("{}: not a batch size: {s:?}", agreed.display()))
                })
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(io(&agreed, e)),
        }
        if stop_requested() {
            return Err(Error::PeerLost(
                "stopped before the batch size was agreed".into(),
            ));
        }
        if t0.elapsed() > timeout {
            return Err(Error::Timeout {
                what: format!("the job's batch size in {}", agreed.display()),
                secs: timeout.as_secs_f64(),
            });
        }
        thread::sleep(POLL);
    }
}

/// Batches written but not yet acked, and per-lease acked rows.
struct AckBook {
    /// `(last frame seq, the batch's pieces: rows of one lease each)`.
    frames: VecDeque<(u64, Vec<Piece>)>,
    acked: HashMap<u64, u64>,
    client: CoordClient,
    rank: u32,
    inc: u64,
    st: Arc<RankStats>,
}

impl AckBook {
    fn ack(&mut self, seq: u64) -> Result<()> {
        let mut touched: Vec<(u64, u32)> = Vec::new();
        while self.frames.front().is_some_and(|(s, _)| *s <= seq) {
            let (_, pieces) = self.frames.pop_front().unwrap_or_default();
            self.st.batches_acked.fetch_add(1, Ordering::Relaxed);
            for Piece { lease, split, rows } in pieces {
                *self.acked.entry(lease).or_default() += rows;
                self.st.rows_acked.fetch_add(rows, Ordering::Relaxed);
                if !touched.contains(&(lease, split)) {
                    touched.push((lease, split));
                }
            }
        }
        for (lease, split) in touched {
            let n = self.acked[&lease];
            self.client.ack(self.rank, self.inc, lease, split, n)?;
        }
        Ok(())
    }
}

/// A trainer attached to a rank's ring, before any batch.
struct Attached {
    listener: Listener,
    producer: Producer,
    /// The batch size its `Hello` asked for.
    asked: Option<usize>,
    /// What a re-attaching trainer reported (`--rejoin`).
    rejoin: Option<Rejoin>,
}

/// Where a trainer that re-attaches to a restarted feeder is in the feed.
#[derive(Debug, Default)]
struct Rejoin {
    epoch: Option<u32>,
    epoch_done: bool,
    epoch_rows: u64,
    consumed: Vec<(u64, u32, u64)>,
}

/// Binds `rank`'s socket, takes its trainer's attach and `Hello` (and with `rejoin`, its
/// `Rejoin` report).
fn attach(opts: &FeederOptions, rank: u32, rejoin: bool) -> Result<Attached> {
    let socket = opts.socket_dir.join(format!("rank-{rank}.sock"));
    let ring_bytes = (opts.memory_budget / 2 / opts.trainers as usize).clamp(8 << 20, 64 << 20);
    let listener = serve::bind(
        &socket,
        RingConfig {
            capacity: ring_bytes,
            max_frame: None,
        },
    )?;
    tracing::info!(rank, socket = %socket.display(), "waiting for the trainer");
    let mut producer = serve::accept(&listener, opts.accept_timeout)?;
    let asked = serve::hello(&mut producer, opts.accept_timeout)?;
    let rejoin = if rejoin {
        Some(rejoin_report(&mut producer, opts.accept_timeout)?)
    } else {
        None
    };
    Ok(Attached {
        listener,
        producer,
        asked,
        rejoin,
    })
}

/// Reads the `Rejoin` message(s) of a trainer re-attaching to a restarted feeder.
fn rejoin_report(p: &mut Producer, timeout: Duration) -> Result<Rejoin> {
    let mut r = Rejoin::default();
    serve::await_control(
        p,
        timeout,
        "Rejoin",
        "say where it was in the feed (stage: rejoin)",
        |c| match c {
            Control::Rejoin {
                epoch,
                epoch_done,
                epoch_rows,
                consumed,
                more,
            } => {
                r.epoch = epoch;
                r.epoch_done = epoch_done;
                r.epoch_rows = epoch_rows;
                r.consumed.extend(consumed);
                if more {
                    ControlFlow::Continue(None)
                } else {
                    ControlFlow::Break(std::mem::take(&mut r))
                }
            }
            other => ControlFlow::Continue(Some(other)),
        },
    )
}

#[allow(clippy::too_many_arguments)] // the rank's parts, each owned elsewhere
fn feed_rank(
    opts: &FeederOptions,
    reg: &hydrofeed_coord::client::Registered,
    plan: &Arc<Plan>,
    storage: &Arc<dyn Storage>,
    st: &Arc<RankStats>,
    client: CoordClient,
    pool: &Arc<rayon::ThreadPool>,
    attached: Option<Attached>,
) -> Result<(u64, u64, u64)> {
    let (rank, inc) = (reg.rank, reg.incarnation);
    let mut bs = reg.batch_size as usize;
    let Attached {
        listener,
        producer,
        asked,
        rejoin,
    } = match attached {
        Some(a) => a,
        None => attach(opts, rank, false)?,
    };
    let mut told = "`--batch-size {bs}` of `hydrofeed launch` or `hydrofeed coordinator`";
    if opts.batch_size_from_trainers && rejoin.is_none() {
        bs = agree_batch_size(&opts.socket_dir, rank, asked, opts.accept_timeout)?;
        told = "what the other ranks' trainers asked for";
    }
    let mut w = Writer::new(producer, serve::encoder(plan)?, opts.stall_timeout, bs);
    if let Some(a) = asked {
        if a != bs {
            let e = Error::InvalidArgument(format!(
                "rank {rank}: the trainer (pid {}) asked for batches of {a} rows, but the job's \
                 batch size is {bs} ({}: every rank takes the same steps); ask for {bs}, or leave \
                 the batch size unset",
                w.peer,
                told.replace("{bs}", &bs.to_string())
            ));
            w.error(&e);
            w.producer.close();
            // The trainer's mistake, and it was told: the rank ends as if its trainer left.
            return Err(Error::PeerLost(e.to_string()));
        }
    }
    let book = Arc::new(Mutex::new(AckBook {
        frames: VecDeque::new(),
        acked: HashMap::new(),
        client,
        rank,
        inc,
        st: st.clone(),
    }));
    {
        let b = book.clone();
        w.on_ack = Some(Box::new(move |seq| {
            b.lock()
                .map_err(|_| Error::Internal("ack book poisoned".into()))?
                .ack(seq)
        }));
        let s = st.clone();
        w.on_wait = Some(Box::new(move |waited| {
            if waited.is_zero() {
                return;
            }
            s.set(if waited > Duration::from_secs(1) {
                Stage::TrainerIdle
            } else {
                Stage::WaitingRing
            });
            s.ring_wait_ms.fetch_add(100, Ordering::Relaxed);
        }));
    }
    let (tx, rx) = bounded(CHANNEL_BATCHES);
    let reader_stop = Arc::new(AtomicBool::new(false));
    let reader = {
        let c = connect(opts)?;
        let mut read = opts.read.clone();
        read.batch_rows = bs;
        let ctx = Arc::new(ReadCtx {
            storage: storage.clone(),
            plan: plan.clone(),
            read,
            st: st.clone(),
            pool: pool.clone(),
        });
        let (stop, host) = (reader_stop.clone(), opts.host.clone());
        thread::Builder::new()
            .name(format!("hf-read{rank}"))
            .spawn(move || read_work(c, rank, inc, host, ctx, tx, stop))
            .map_err(|e| Error::external("spawning a reader thread", e))?
    };
    let mut r = write_rank(
        &mut w,
        &rx,
        bs,
        &book,
        st,
        opts.stall_timeout,
        rejoin.as_ref(),
    );
    reader_stop.store(true, Ordering::Relaxed);
    drop(rx);
    if r.is_err() && w.bye {
        // The trainer stopped reading on purpose (`terminate()`): what it acked is in the
        // coordinator's state; the rest goes to whoever resumes the job.
        tracing::info!(
            rank,
            "the trainer said bye after {} batches",
            w.report.batches
        );
        r = Ok(0);
    }
    let _ = reader.join();
    match &r {
        Ok(_) => w.producer.close(),
        Err(Error::PeerLost(_)) => {}
        Err(e) => {
            w.error(e);
            w.producer.close();
        }
    }
    drop(listener);
    r.map(|steps| (w.report.rows, w.report.batches, steps))
}

fn write_rank(
    w: &mut Writer,
    rx: &Receiver<Ev>,
    bs: usize,
    book: &Arc<Mutex<AckBook>>,
    st: &RankStats,
    stall: Duration,
    rejoin: Option<&Rejoin>,
) -> Result<u64> {
    let schema = w
        .enc
        .schema_frame(w.meta(0, u32::MAX, 0))
        .map_err(|e| Error::external("frame encoding", e))?;
    w.put(&schema)?;
    // A trainer that re-attached is in the middle of an epoch (its end-of-epoch frame still
    // to come unless it read it), maybe in the middle of a batch that was cut in frames.
    let mut epoch: Option<u32> = rejoin.filter(|r| !r.epoch_done).and_then(|r| r.epoch);
    // Rows of the next batch, each piece tagged with its (lease, split).
    let mut pending: Rebatcher<(u64, u32)> = Rebatcher::default();
    // Rows the trainer already holds of its current batch (one cut in frames before a
    // restart): the next batch completes it.
    let mut short = match (rejoin, epoch) {
        (Some(r), Some(_)) => (r.epoch_rows % bs as u64) as usize,
        _ => 0,
    };
    let mut last_split = u32::MAX;
    let flush = |w: &mut Writer,
                 pending: &mut Rebatcher<(u64, u32)>,
                 short: &mut usize,
                 epoch: u32,
                 split: u32|
     -> Result<()> {
        if let Some((b, tags)) = pending.take_tagged(bs - *short)? {
            *short = 0;
            let pieces: Vec<Piece> = tags
                .into_iter()
                .map(|((lease, split), rows)| Piece {
                    lease,
                    split,
                    rows: rows as u64,
                })
                .collect();
            w.batch(epoch, split, &b, &pieces)?;
            st.batches.store(w.report.batches, Ordering::Relaxed);
            st.bytes.store(w.report.bytes, Ordering::Relaxed);
            let last = w.seq - 1;
            book.lock()
                .map_err(|_| Error::Internal("ack book poisoned".into()))?
                .frames
                .push_back((last, pieces));
        }
        Ok(())
    };
    let steps = loop {
        if w.bye {
            return Err(bye());
        }
        if stop_requested() {
            // Stopped early: the batches written so far are this rank's steps.
            break w.report.batches;
        }
        let ev = match rx.recv_timeout(POLL) {
            Ok(ev) => ev,
            Err(RecvTimeoutError::Timeout) => {
                if w.poll_control()? {
                    return Err(bye());
                }
                if w.producer.check_peer().is_err() {
                    return Err(w.lost());
                }
                continue;
            }
            Err(RecvTimeoutError::Disconnected) => {
                return Err(Error::Internal(
                    "the reader thread stopped without end-of-feed".into(),
                ))
            }
        };
        match ev {
            Ev::Lease(l) => {
                if epoch != Some(l.epoch) {
                    if let Some(e) = epoch {
                        // Quotas are multiples of the batch size: nothing is pending here
                        // unless the coordinator broke its contract; send it short then.
                        flush(w, &mut pending, &mut short, e, last_split)?;
                        let rows = w.report.rows;
                        w.marker(FrameKind::EndOfEpoch, e, u32::MAX, rows)?;
                    }
                    // (A re-attached trainer's cut batch belongs to the epoch that ended.)
                    short = 0;
                    epoch = Some(l.epoch);
                }
            }
            Ev::Rows(lease, split, b) => {
                last_split = split;
                let e = epoch.unwrap_or(0);
                pending.push_tagged(b, (lease, split));
                while pending.rows() >= bs - short {
                    flush(w, &mut pending, &mut short, e, split)?;
                }
            }
            Ev::End(steps) => break steps,
            Ev::Failed(e) => {
                let ep = epoch.unwrap_or(0);
                flush(w, &mut pending, &mut short, ep, last_split)?;
                return Err(e);
            }
        }
    };
    let e = epoch.unwrap_or(0);
    if stop_requested() {
        // Rows of a partial batch are not sent: un-acked, they go to whoever resumes.
        pending.clear();
    } else {
        flush(w, &mut pending, &mut short, e, last_split)?;
    }
    if epoch.is_some() && !stop_requested() {
        let rows = w.report.rows;
        w.marker(FrameKind::EndOfEpoch, e, u32::MAX, rows)?;
    }
    w.marker(FrameKind::EndOfFeed, e, u32::MAX, steps)?;
    // The trainer's last acks come after it read end-of-feed: forward them before leaving,
    // so the coordinator's final state holds every consumed row.
    let t0 = Instant::now();
    loop {
        let left = book
            .lock()
            .map_err(|_| Error::Internal("ack book poisoned".into()))?
            .frames
            .len();
        if left == 0 {
            break;
        }
        match w.poll_control() {
            Ok(true) => {
                // Bye: the trainer stopped reading; what it did not ack was not consumed.
                break;
            }
            Ok(false) => {}
            Err(_) => break, // gone: its last acks were sent or are lost with it
        }
        if w.producer.check_peer().is_err() || t0.elapsed() > stall {
            break;
        }
        thread::sleep(POLL);
    }
    Ok(steps)
}

fn bye() -> Error {
    Error::PeerLost("the trainer said bye".into())
}

/// Prometheus text of the feeder's counters.
pub fn render_metrics(stats: &[Arc<RankStats>], uptime: f64) -> String {
    let mut s = String::new();
    let mut metric = |name: &str, help: &str, kind: &str, f: &dyn Fn(&RankStats) -> f64| {
        s.push_str(&format!("# HELP {name} {help}\n# TYPE {name} {kind}\n"));
        for st in stats {
            let r = st.rank.load(Ordering::Relaxed);
            s.push_str(&format!("{name}{{rank=\"{r}\"}} {}\n", f(st)));
        }
    };
    let up = uptime.max(1e-9);
    metric(
        "hydrofeed_feeder_rows_total",
        "Rows written into the ring",
        "counter",
        &|st| st.rows_read.load(Ordering::Relaxed) as f64,
    );
    metric(
        "hydrofeed_feeder_rows_per_second",
        "Rows per second since start",
        "gauge",
        &|st| st.rows_read.load(Ordering::Relaxed) as f64 / up,
    );
    metric(
        "hydrofeed_feeder_bytes_total",
        "Frame bytes written into the ring",
        "counter",
        &|st| st.bytes.load(Ordering::Relaxed) as f64,
    );
    metric(
        "hydrofeed_feeder_bytes_per_second",
        "Frame bytes per second since start",
        "gauge",
        &|st| st.bytes.load(Ordering::Relaxed) as f64 / up,
    );
    metric(
        "hydrofeed_feeder_batches_total",
        "Batches written",
        "counter",
        &|st| st.batches.load(Ordering::Relaxed) as f64,
    );
    metric(
        "hydrofeed_feeder_rows_acked_total",
        "Rows the trainer acked",
        "counter",
        &|st| st.rows_acked.load(Ordering::Relaxed) as f64,
    );
    metric(
        "hydrofeed_feeder_rows_skipped_total",
        "Rows decoded and dropped to reach a lease start",
        "counter",
        &|st| st.rows_skipped.load(Ordering::Relaxed) as f64,
    );
    metric(
        "hydrofeed_feeder_rows_passed_total",
        "Rows passed over unread (whole row groups, stripes, blocks, records) to reach a lease start",
        "counter",
        &|st| st.rows_passed.load(Ordering::Relaxed) as f64,
    );
    metric(
        "hydrofeed_feeder_ring_batches_unacked",
        "Batches in the ring or held by the trainer, not yet acked (ring occupancy)",
        "gauge",
        &|st| {
            st.batches
                .load(Ordering::Relaxed)
                .saturating_sub(st.batches_acked.load(Ordering::Relaxed)) as f64
        },
    );
    metric(
        "hydrofeed_feeder_ring_full_seconds_total",
        "Seconds stalled because the ring was full (trainer slower than the feeder)",
        "counter",
        &|st| st.ring_wait_ms.load(Ordering::Relaxed) as f64 / 1000.0,
    );
    metric(
        "hydrofeed_feeder_epoch_barrier_seconds_total",
        "Seconds stalled waiting for work (epoch barrier: other ranks not done)",
        "counter",
        &|st| st.work_wait_ms.load(Ordering::Relaxed) as f64 / 1000.0,
    );
    s.push_str("# HELP hydrofeed_feeder_stage Current stage per rank (1 = in this stage)\n# TYPE hydrofeed_feeder_stage gauge\n");
    for st in stats {
        let r = st.rank.load(Ordering::Relaxed);
        let cur = st.stage();
        for x in STAGES {
            s.push_str(&format!(
                "hydrofeed_feeder_stage{{rank=\"{r}\",stage=\"{}\"}} {}\n",
                x.as_str(),
                u8::from(x == cur)
            ));
        }
    }
    s
}

fn spawn_metrics(addr: SocketAddr, stats: Vec<Arc<RankStats>>, t0: Instant) -> Result<SocketAddr> {
    let l = TcpListener::bind(addr)
        .map_err(|e| Error::InvalidArgument(format!("cannot listen on {addr} for metrics: {e}")))?;
    let local = l.local_addr().map_err(|e| Error::Internal(e.to_string()))?;
    thread::Builder::new()
        .name("hf-metrics".into())
        .spawn(move || {
            for c in l.incoming() {
                let Ok(mut c) = c else { continue };
                let _ = c.set_read_timeout(Some(Duration::from_secs(2)));
                let mut buf = [0u8; 2048];
                let _ = c.read(&mut buf);
                let body = render_metrics(&stats, t0.elapsed().as_secs_f64());
                let _ = write!(
                    c,
                    "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
            }
        })
        .map_err(|e| Error::external("spawning the metrics thread", e))?;
    tracing::info!("feeder metrics on http://{local}/metrics");
    Ok(local)
}

fn format_name(f: hydrofeed_format::split::Format) -> &'static str {
    use hydrofeed_format::split::Format as F;
    match f {
        F::Parquet => "parquet",
        F::Orc => "orc",
        F::Avro => "avro",
        F::Tfrecord => "tfrecord",
    }
}
