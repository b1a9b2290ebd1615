//! The feeder daemon (`hydrofeed feeder`): feeds the local trainers of one node from row
//! ranges handed out by the coordinator.
//!
//! One ring per local trainer; each trainer is one rank. Per rank, three threads:
//! - the **reader** (`work`: `Reader`) asks the coordinator for work (`RequestWork`) and
//!   reads each lease on the feeder's decode pool (two leases per rank in flight: the units of
//!   the rank's budget): it opens the lease's split, passes the whole units before the lease's
//!   first row over unread ([`hydrofeed_format::SplitReader::skip_rows`]), decodes and drops
//!   the rest of the head, and sends the lease's rows to the writer; a segment of the fixed
//!   order is read as one stream ([`crate::stream`]);
//! - the **writer** (the rank's own thread, `rank`) writes them through the pipeline's
//!   `EpochWriter` (the code `serve` uses): batches of exactly the coordinator's batch size (a
//!   batch may hold rows of several leases, each frame carrying its lineage), `EndOfEpoch` when
//!   the first lease of the next epoch arrives (so after the coordinator's epoch barrier: the
//!   same step on every rank) and `EndOfFeed` on end-of-feed; it forwards the trainer's acks:
//!   the trainer sends `Control::Ack{seq}` for the frames it consumed, the `acks` book maps
//!   each batch frame to its pieces `(lease, split, rows)` and sends cumulative per-lease acks
//!   to the coordinator;
//! - the **heartbeat** thread reports the rank's stage (reading, decoding, waiting for ring
//!   space, trainer not consuming, waiting for work, done) and counters (`stats`).
//!
//! The stage is also published in the ring's header for the trainer (a trainer whose wait
//! times out says what its feeder is doing), and the trainer's own figures (steps, rows, wait
//! for input) arrive with its acks: the Prometheus endpoint serves both (`metrics.rs`,
//! `figures.rs`).
//!
//! Memory: each rank holds at most its ring (`memory_budget / 2 / trainers`, 8 to 64 MiB) and
//! its pipeline's budget (`memory_budget / 2 / trainers` of decoded batches and fixed-order
//! windows, plus the two batches the front may queue over it: [`crate::pipeline::budget`]).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use hydrofeed_coord::client::CoordClient;
use hydrofeed_coord::cluster::{Registration, Role};
use hydrofeed_coord::tls::ClientTls;
use hydrofeed_coord::token::Token;
use hydrofeed_coord::{Stage, WorkerCounters};
use hydrofeed_format::{Plan, ReadOptions};
use hydrofeed_storage::{self as storage, Storage};

use crate::pipeline::decode_pool;
use crate::{Error, Result};

mod acks;
mod attach;
mod batch_size;
mod figures;
mod metrics;
mod rank;
mod stats;
mod work;

use attach::attach;
pub use batch_size::{agreed_path, asked_path};
use metrics::spawn_metrics;
pub use metrics::{own_usage, render_metrics};
use rank::{feed_rank, Fed};
use stats::report_skipped;
pub use stats::{RankStats, SKIPPED_LINE};

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

/// The first rank's [`Error::CoordinatorLost`], for the other ranks to end with the same reason:
/// every trainer of the feeder gets it in an error frame, not a ring closed without a word.
static LOST: std::sync::Mutex<Option<(String, String, f64, String)>> = std::sync::Mutex::new(None);

/// Records `e` if it is the feeder's first lost coordinator.
fn note_lost(e: &Error) {
    if let Error::CoordinatorLost {
        addr,
        stage,
        secs,
        detail,
    } = e
    {
        let mut g = LOST.lock().unwrap_or_else(|p| p.into_inner());
        g.get_or_insert_with(|| (addr.clone(), stage.clone(), *secs, detail.clone()));
    }
}

/// The lost coordinator another rank found, as this rank's error.
fn lost_coordinator() -> Option<Error> {
    let g = LOST.lock().unwrap_or_else(|p| p.into_inner());
    g.as_ref()
        .map(|(addr, stage, secs, detail)| Error::CoordinatorLost {
            addr: addr.clone(),
            stage: stage.clone(),
            secs: *secs,
            detail: detail.clone(),
        })
}

/// The stop hook of every rank's writer: a stop asked for, or the coordinator lost by a rank.
fn stop_or_lost() -> bool {
    stop_requested() || LOST.lock().is_ok_and(|g| g.is_some())
}

/// What `hydrofeed feeder` does.
#[derive(Debug, Clone)]
pub struct FeederOptions {
    /// Input path (the coordinator plans the same input: split ids are plan indices).
    pub input: String,
    /// Coordinator address `host:port` (or `https://host:port`).
    pub coordinator: String,
    /// The job's token.
    pub token: Token,
    /// TLS to the coordinator (`None`: plain).
    pub tls: Option<ClientTls>,
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
    /// How long a call keeps trying a coordinator that does not answer (killed, restarting,
    /// its host down) before the feeder fails with [`Error::CoordinatorLost`]: a coordinator
    /// restarted on its journal within it is found again and the feed goes on.
    pub coordinator_timeout: Duration,
}

/// What one rank of a finished feeder did.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct RankReport {
    /// The rank.
    pub rank: u32,
    /// Rows written into its ring.
    pub rows: u64,
    /// Batches written.
    pub batches: u64,
    /// Steps at the end of the feed.
    pub steps: u64,
    /// Bytes its readers got from storage.
    pub storage_bytes: u64,
    /// Frame bytes written into its ring.
    pub ring_bytes: u64,
}

/// What a finished feeder did, per rank.
#[derive(Debug, Clone, Default)]
pub struct FeederReport {
    /// Each rank, by rank.
    pub ranks: Vec<RankReport>,
}

/// What every rank of a feeder shares: its options, the plan, the storage, the decode pool.
pub(super) struct Feeder {
    pub(super) opts: FeederOptions,
    pub(super) plan: Arc<Plan>,
    pub(super) storage: Arc<dyn Storage>,
    pub(super) pool: Arc<rayon::ThreadPool>,
}

impl Feeder {
    /// The bytes of decoded batches and windows one rank may hold: half the memory budget is
    /// the rings', the other half the ranks' pipelines.
    pub(super) fn rank_memory(&self) -> usize {
        self.opts.memory_budget / 2 / self.opts.trainers as usize
    }
}

/// Runs the daemon until every local trainer got end-of-feed (or one failed).
pub fn run_feeder(opts: &FeederOptions) -> Result<FeederReport> {
    if opts.trainers == 0 {
        return Err(Error::InvalidArgument("--trainers 0".into()));
    }
    let storage = storage::open_storage(&opts.input)?;
    let plan = Arc::new(plan_input(&storage, opts)?);
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
    let feeder = Arc::new(Feeder {
        opts: opts.clone(),
        plan: plan.clone(),
        storage,
        pool: decode_pool(opts.decode_threads)?,
    });
    let mut handles: Vec<(usize, thread::JoinHandle<Result<RankReport>>)> = Vec::new();
    for i in 0..opts.trainers {
        let (f, st) = (feeder.clone(), stats[i as usize].clone());
        let h = thread::Builder::new()
            .name(format!("hf-rank{i}"))
            .spawn(move || run_rank(&f, i, &st))
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
                Ok(Err(e @ Error::CoordinatorLost { .. })) => {
                    // Every rank ends with this reason (`stop_or_lost`): wait a little for
                    // them to tell their trainers.
                    note_lost(&e);
                    tracing::error!("rank {rank}: {e}");
                    first_err = Some(e);
                    let t0 = Instant::now();
                    while handles.iter().any(|(_, h)| !h.is_finished())
                        && t0.elapsed() < Duration::from_secs(5)
                    {
                        thread::sleep(Duration::from_millis(20));
                    }
                    break;
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

/// A client of the coordinator that keeps trying it for `--coordinator-timeout`.
/// The feeder's plan: under a filter, with the rows the coordinator counted (it planned the
/// same input with the same filter; counting again on every node would read the filter's
/// columns once per feeder).
fn plan_input(storage: &Arc<dyn Storage>, opts: &FeederOptions) -> Result<Plan> {
    let Some(f) = &opts.read.filter else {
        return hydrofeed_format::plan(storage, &opts.input, &opts.read);
    };
    let (text, counts) = connect(opts)?.filter_counts()?;
    if text != f.text() {
        return Err(Error::InvalidArgument(format!(
            "--filter {:?} differs from the coordinator's {text:?}: a feeder reads the rows \
             its coordinator planned",
            f.text()
        )));
    }
    hydrofeed_format::plan_counted(storage, &opts.input, &opts.read, Some(&counts))
}

fn connect(opts: &FeederOptions) -> Result<CoordClient> {
    CoordClient::connect_retrying(
        &opts.coordinator,
        &opts.token,
        Duration::from_secs(30),
        opts.tls.as_ref(),
        opts.coordinator_timeout,
    )
}

/// One rank: register, attach the trainer, feed until end-of-feed.
fn run_rank(f: &Feeder, i: u32, stats: &Arc<RankStats>) -> Result<RankReport> {
    let (opts, plan) = (&f.opts, &f.plan);
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
    let r = feed_rank(f, stats, &reg, client, attached);
    // A rank that failed keeps the stage it failed in: the last one its heartbeat reports.
    // One whose trainer left says so, after it acked what that trainer was handed (`launch`
    // waits for it before it takes the state).
    match &r {
        Ok(_) => stats.set(Stage::Done),
        Err(Error::PeerLost(_)) => stats.set(Stage::TrainerGone),
        Err(_) => {}
    }
    stop.store(true, Ordering::Relaxed);
    // Its last heartbeat (the final stage) goes now, not after its pause.
    hb.thread().unpark();
    let _ = hb.join();
    r.map(|(rows, batches, steps): Fed| RankReport {
        rank,
        rows,
        batches,
        steps,
        storage_bytes: stats.storage_bytes.load(Ordering::Relaxed),
        ring_bytes: stats.bytes.load(Ordering::Relaxed),
    })
}

fn heartbeat(
    opts: &FeederOptions,
    rank: u32,
    inc: u64,
    st: &RankStats,
    stop: &AtomicBool,
    every: Duration,
) {
    // Heartbeats only inform: a short retry (the ranks' own calls wait for the coordinator).
    let Ok(c) = connect(opts) else { return };
    let mut c = c.with_retry(every.min(Duration::from_secs(2)));
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
        // Unparked when the rank ends.
        thread::park_timeout(Duration::from_millis(50));
    }
}
