//! `hydrofeed launch`: one machine, whole job. Starts the coordinator (in this process), one
//! feeder daemon (`hydrofeed feeder --keep-going`, a child process) and N trainer processes with
//! `TF_CONFIG`, `HYDROFEED_FEED_SOCKET`, `HYDROFEED_RANK`, `HYDROFEED_NUM_WORKERS`, `HYDROFEED_EPOCHS`,
//! `HYDROFEED_COORDINATOR` and `HYDROFEED_TOKEN` set (with `--tls`, also `HYDROFEED_TLS_CA`, and
//! `HYDROFEED_TLS_CERT` / `HYDROFEED_TLS_KEY` under `--tls mutual`); streams the trainers'
//! output prefixed with their rank and keeps each child's last lines; shows progress on stderr
//! (a bar on a terminal, a plain line every 5 s otherwise).
//!
//! Endings: a trainer that fails (status or signal) is named with its last lines and everything
//! is stopped; the feeder is named only when it failed by itself (a trainer leaving is exit
//! status 3, never the feeder's fault). A trainer exiting 0 before the end of the feed ends the
//! feed on the other ranks (exit 0). Ctrl-C interrupts the trainers and ends the feed in order,
//! so every consumed row is acked before `--state-out` is written (exit 130). SIGTERM (a
//! preemption: YARN, Kubernetes, Spark) does the same with SIGTERM to the trainers, whose own
//! handlers may checkpoint and call `feed.state()` within `--grace`. `--state-out` is written
//! when the job starts (a file of an earlier run never looks current), at once on the first
//! signal (YARN kills 250 ms after its SIGTERM), and at the end; atomically each time
//! ([`crate::state_file`]).
//!
//! A rank lives while its trainer does: the supervisor keeps it alive at the coordinator, so a
//! restarted feeder is taken back however long its trainer is busy before it re-attaches
//! (`--dead-after` is for a silent node, not a busy trainer).
//! Children lead their own process groups and die with `launch` (`PR_SET_PDEATHSIG`); the
//! private socket directory is removed on every exit, Ctrl-C included; rings are memfds, so
//! nothing is ever in /dev/shm.
//!
//! Parts: `supervisor` (the [`Supervisor`]: starting the children and watching them to the
//! end), `children` (one child process, its output and tail, cleanup, the private socket
//! directory), `feeder` (the feeder's command line, its restarts and failures), `batch_size`
//! (the batch size the trainers agree on) and `certs` (`--tls`: the job's CA and
//! certificates). This module holds the arguments and the signal handling, and runs the
//! coordinator around the supervisor.

use anyhow::Context;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI32, AtomicU32, Ordering};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::read_args::ReadArgs;
use hydrofeed_coord::service::{self, ServiceOptions};
use hydrofeed_coord::token::Token;
use hydrofeed_coord::{Config, Machine, Remainder};

mod batch_size;
pub(crate) mod certs;
mod children;
mod feeder;
mod gpus;
mod nodes;
mod run_dir;
mod supervisor;

use certs::JobTls;
pub use certs::TlsMode;
use nodes::{Coord, NodePlan};
use run_dir::RunDir;
use supervisor::{Job, Supervisor};

/// Seconds a trainer waits for a restarted feeder (`hydrofeed.DataFeed` reads it).
pub const REJOIN_ENV: &str = "HYDROFEED_REJOIN_TIMEOUT";
/// What `launch` gives its trainers in [`REJOIN_ENV`]: the restarts and their backoff fit.
const REJOIN_TIMEOUT: Duration = Duration::from_secs(60);

/// TensorBoard log directory of the job's chief (`hydrofeed.DataFeed` writes the feed's
/// scalars there); `launch` gives it to rank 0 only.
pub const TENSORBOARD_ENV: &str = "HYDROFEED_TENSORBOARD_DIR";

/// Environment variable naming a state file to resume from (same as `--resume`).
pub const RESUME_ENV: &str = "HYDROFEED_RESUME";

/// Arguments of `hydrofeed launch`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Number of trainer processes (ranks); with `--gpus`, one per GPU (may be left out).
    #[arg(long, required_unless_present = "gpus")]
    pub workers: Option<u32>,
    /// One trainer per GPU: `auto` (every GPU NVML lists on this node), `0,2` (those), `none`.
    /// Each trainer gets `CUDA_VISIBLE_DEVICES` and runs on its GPU's NUMA node's CPUs.
    #[arg(long)]
    pub gpus: Option<String>,
    /// Input: file, directory or glob (local path or hdfs:// URI).
    #[arg(long)]
    pub input: String,
    /// Passes over the input [default: 1, or the resumed state's].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub epochs: Option<u32>,
    /// Rows per batch, every rank, every step [default: the size the trainers ask for (they
    /// must agree), 256 if none asks; a resumed job: the state's].
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub batch_size: Option<u64>,
    /// Seed of the split order.
    #[arg(long)]
    pub seed: Option<u64>,
    /// What to do with the rows that do not fill a last step of every rank.
    #[arg(long, value_enum)]
    pub remainder: Option<Remainder>,
    /// Order: fixed or dynamic, shuffle buffer, cycle length.
    #[command(flatten)]
    pub order: crate::order::OrderArgs,
    /// Resume from a state file written by `DataFeed.state()` or `--state-out`.
    #[arg(long, env = RESUME_ENV)]
    pub resume: Option<PathBuf>,
    /// Resume even if the input changed since the state was saved (files added, removed,
    /// rewritten): the acked rows of the unchanged files are kept, changed and new files are
    /// read whole, the rows of removed ones are gone. Without it such a resume is refused.
    #[arg(long, requires = "resume")]
    pub allow_changed_input: bool,
    /// Write the coordinator's state here (resumable if the job stopped early): at the start,
    /// at once on SIGTERM or Ctrl-C, and at the end; atomically, never half-written.
    #[arg(long)]
    pub state_out: Option<PathBuf>,
    /// Seconds the trainers get after SIGTERM (or Ctrl-C) to checkpoint, call
    /// `feed.state()` and exit, before they are killed.
    #[arg(long, value_name = "SECONDS", default_value_t = 20.0)]
    pub grace: f64,
    /// Columns, format, corrupt records, schema: the feeder is given the same.
    #[command(flatten)]
    pub read: ReadArgs,
    /// Feeder memory budget in MiB.
    #[arg(long, default_value_t = 512)]
    pub memory_mb: usize,
    /// Feeder Prometheus endpoint.
    #[arg(long)]
    pub feeder_metrics: Option<std::net::SocketAddr>,
    /// Seconds a trainer may leave its ring full (taking no batch) before the job fails
    /// naming that rank.
    #[arg(long, default_value_t = 600.0)]
    pub stall_timeout: f64,
    /// TensorBoard log directory: rank 0's feed writes `feed/wait_fraction`, `feed/rows_per_s`
    /// (and `feed/gpu_utilization` for batches on a GPU) into DIR/hydrofeed every few seconds
    /// (`HYDROFEED_METRICS_EVERY`, default 10) and at the end.
    #[arg(long, value_name = "DIR", env = TENSORBOARD_ENV)]
    pub tensorboard: Option<PathBuf>,
    /// Seconds without a heartbeat before a rank is declared dead. A rank whose trainer runs
    /// is kept alive by `launch` (its feeder may be restarting while the trainer is busy).
    #[arg(long, default_value_t = 30.0)]
    pub dead_after: f64,
    /// Restarts of a feeder killed by a signal (`kill -9`, the OOM killer, a crash): the
    /// trainers re-attach to the new one and report what they read after their last ack, so
    /// every row still comes exactly once. A feeder that fails by itself (bad input: exit
    /// status 1) is not restarted. 0: a dead feeder ends the job.
    #[arg(long, default_value_t = 3)]
    pub feeder_restarts: u32,
    /// TLS on the control plane: a CA made for this job (or the one of `--tls-ca-dir`) signs
    /// the coordinator's certificate (`--tls`, `--tls server`) and the feeder's and trainers'
    /// client certificates too (`--tls mutual`); the files live in the job's private directory
    /// and go with it.
    #[arg(
        long,
        value_enum,
        value_name = "MODE",
        num_args = 0..=1,
        default_missing_value = "server"
    )]
    pub tls: Option<TlsMode>,
    /// The job's CA for `--tls`: a directory holding `ca.crt` and `ca.key` (PEM, the key
    /// PKCS#8), e.g. a Secret every node mounts; each node signs its own certificates with it.
    /// Needed for `--tls` across nodes; on one node, used instead of a CA made for the job.
    #[arg(long, value_name = "DIR", requires = "tls")]
    pub tls_ca_dir: Option<PathBuf>,
    /// Across nodes: `--nnodes`, `--node-rank`, `--rdzv-endpoint` (torchrun's names).
    #[command(flatten)]
    pub nodes: nodes::NodeArgs,
    /// The trainer command (after `--`).
    #[arg(last = true, required = true)]
    pub command: Vec<String>,
}

/// Ctrl-C (SIGINT, SIGTERM, SIGHUP) count: the first stops the job in order, the second kills.
static INTERRUPTS: AtomicU32 = AtomicU32::new(0);
/// The first of those signals (0: none yet): the trainers get SIGTERM after a SIGTERM, SIGINT
/// otherwise.
static FIRST_SIGNAL: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    let _ = FIRST_SIGNAL.compare_exchange(0, sig, Ordering::SeqCst, Ordering::SeqCst);
    INTERRUPTS.fetch_add(1, Ordering::SeqCst);
}

fn catch_signals() {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: `on_signal` only stores to an atomic, which is async-signal-safe; the
        // handler is a valid `extern "C" fn(c_int)` for the whole program.
        unsafe {
            libc::signal(
                sig,
                on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t,
            );
        }
    }
}

/// How long stopping trainers may take (Ctrl-C, or the feed ended early) before they are
/// killed.
const STOP_GRACE: Duration = Duration::from_secs(10);
/// Non-terminal stderr: a plain progress line this often.
const PROGRESS_EVERY: Duration = Duration::from_secs(5);

/// How the trainers ended.
#[derive(Clone, Copy)]
enum Ended {
    /// Every trainer exited 0 at the end of the feed.
    Done,
    /// A trainer exited 0 before the end of the feed; the others were told to stop.
    Early(u32),
    /// Ctrl-C: the trainers were interrupted and the feed ended.
    Interrupted,
}

/// The job's TLS under `--tls` (None without): certificates for the coordinator's `names`,
/// signed by the CA of `--tls-ca-dir` or by one made for the job; the files in `dir`.
fn job_tls(args: &Args, dir: &Path, names: &[&str]) -> anyhow::Result<Option<JobTls>> {
    let Some(mode) = args.tls else {
        return Ok(None);
    };
    Ok(Some(match &args.tls_ca_dir {
        Some(ca) => JobTls::from_ca_dir(dir, mode, names, ca)?,
        None => JobTls::make_for(dir, mode, names)?,
    }))
}

/// The address the job's children and other nodes dial for the coordinator at `host_port`:
/// `https://` in front under `--tls`.
fn coordinator_url(args: &Args, host_port: impl std::fmt::Display) -> String {
    let scheme = if args.tls.is_some() { "https://" } else { "" };
    format!("{scheme}{host_port}")
}

/// Runs `hydrofeed launch`.
pub fn run(mut args: Args) -> anyhow::Result<()> {
    let (workers, gpus) = gpus::plan(args.gpus.as_deref(), args.workers)?;
    anyhow::ensure!(workers >= 1, "--workers must be at least 1");
    super::secs("--stall-timeout", args.stall_timeout)?;
    super::secs("--grace", args.grace)?;
    if let Some(d) = gpus::describe(&gpus) {
        eprintln!("hydrofeed launch: {d}");
    }
    catch_signals();
    let node = NodePlan::from_args(&args.nodes, workers)?;
    if node.multi() {
        anyhow::ensure!(
            args.tls.is_none() || args.tls_ca_dir.is_some(),
            "--tls across nodes needs --tls-ca-dir: every node signs its certificates with the \
             job's CA, which the scheduler gives each node (see docs/arch/launch-nodes.md)"
        );
        anyhow::ensure!(
            args.batch_size.is_some() || args.resume.is_some(),
            "a job across nodes needs --batch-size (or --resume): the trainers of every node \
             cannot agree on one"
        );
        if node.node_rank > 0 {
            return nodes::run_member(&args, &gpus, &node);
        }
    }
    // The feeder plans with the same options: split ids and row counts must agree.
    let mut read = args.read.options()?;
    let saved = args
        .resume
        .as_deref()
        .map(super::coordinator::read_state)
        .transpose()?;
    crate::pin_snapshot(&mut read, saved.as_ref(), "hydrofeed launch")?;
    let storage = hydrofeed_storage::open_storage(&args.input)?;
    let plan = hydrofeed_format::plan(&storage, &args.input, &read)?;
    if let Some(t) = &plan.table {
        // The feeder reads the version planned here, not the newest when it starts.
        args.read.snapshot = Some(t.version.to_string());
        eprintln!(
            "hydrofeed launch: the {} table {} at version {} ({} files)",
            t.kind,
            t.id,
            t.version,
            plan.files.len()
        );
    }
    let splits = crate::split_infos(&plan);
    let input = crate::input_fingerprint(&plan);
    let filter_counts = crate::filter_counts(&plan, "hydrofeed launch");
    let cfg = Config {
        epochs: args.epochs.unwrap_or(1),
        seed: args.seed.unwrap_or(0),
        remainder: args.remainder.unwrap_or_default(),
        stall_after_ms: 10_000,
        dead_after_ms: (args.dead_after * 1000.0) as u64,
        // A resumed job's order is the state's (`check_resume` below refuses other flags).
        order: match &args.resume {
            Some(_) => None,
            None => args.order.spec(args.remainder.unwrap_or_default())?,
        },
        // From the trainers: a placeholder until they attached (1: every input has a step).
        ..Config::new(node.world(), args.batch_size.unwrap_or(1))
    };
    let resume_cfg = Config {
        order: None,
        ..cfg.clone()
    };
    let m = match (&args.resume, saved) {
        (Some(p), Some(st)) => {
            let st = crate::resume_state(
                st,
                Some(&input),
                args.allow_changed_input,
                "hydrofeed launch",
            )
            .with_context(|| format!("resuming from {}", p.display()))?;
            if let Some(b) = args.batch_size {
                anyhow::ensure!(
                    st.batch_size == b,
                    "--batch-size {b} differs from the resumed state's {}",
                    st.batch_size
                );
            }
            if let Some(e) = args.epochs {
                anyhow::ensure!(
                    e == st.epochs,
                    "--epochs {e} differs from the state's {}",
                    st.epochs
                );
            }
            args.order.check_resume(&st)?;
            let m = Machine::resume(splits.clone(), cfg, &st)?;
            if let Some(note) = m.resume_note() {
                eprintln!("hydrofeed launch: {note}");
            }
            m
        }
        _ => Machine::new(splits.clone(), cfg)?,
    };
    let mut m = m;
    m.set_input(input.clone());
    if node.multi() {
        let again = nodes::Again {
            splits,
            cfg: resume_cfg,
            input,
        };
        return nodes::run_leader(&args, &gpus, &node, m, again, filter_counts);
    }
    let (epochs, total_rows) = (m.config().epochs, m.total_rows());
    let token = Token::generate()?;
    // The directory first: it holds the TLS files the coordinator starts with, and it is
    // removed on every exit.
    let dir = RunDir::create("hydrofeed-launch")?;
    let tls = job_tls(&args, dir.path(), &["127.0.0.1", "localhost"])?;
    let svc = service::spawn(
        m,
        ServiceOptions {
            ps: 0,
            evaluators: 0,
            reservation_timeout: Duration::from_secs(120),
            heartbeat_interval: Duration::from_secs(1),
            log_path: None,
            token: token.clone(),
            tls: tls.as_ref().map(|t| t.server.clone()),
            filter_counts,
        },
        "127.0.0.1:0".parse()?,
        None,
    )?;
    // This run's state replaces the file of an earlier one at once.
    if let Some(p) = &args.state_out {
        crate::state_file::write_state(p, &svc.shared.with_machine(|m| m.state()))?;
    }
    let addr = coordinator_url(&args, svc.addr);
    let pb = if std::io::stderr().is_terminal() {
        ProgressBar::with_draw_target(
            Some(total_rows * u64::from(epochs)),
            ProgressDrawTarget::stderr(),
        )
    } else {
        ProgressBar::hidden()
    };
    pb.set_style(
        ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} rows {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let coord = Coord::Local(&svc);
    let job = Job {
        args: &args,
        gpus: &gpus,
        addr: &addr,
        token: &token,
        tls: tls.as_ref(),
        dir: dir.path(),
        coord: &coord,
        node: &node,
        epochs,
        restart: 0,
        pb: &pb,
    };
    let mut supervisor = None;
    let result = Supervisor::start(job).and_then(|s| supervisor.insert(s).run());
    pb.finish_and_clear();
    // Stop every child before the state is taken: no ack can arrive after it.
    drop(supervisor);
    drop(dir);
    let state = svc.shared.with_machine(|m| m.state());
    let acked = svc.shared.with_machine(|m| m.counters().rows_acked);
    let saved = match &args.state_out {
        Some(p) => {
            crate::state_file::write_state(p, &state)?;
            format!("; state saved to {}", p.display())
        }
        None => String::new(),
    };
    let _ = svc.shutdown();
    match result? {
        Ended::Done | Ended::Early(_) => Ok(()),
        Ended::Interrupted => Err(super::Exit::new(
            130,
            format!(
                "interrupted ({}): stopped every trainer and the feeder; {acked} rows acked{saved}",
                match FIRST_SIGNAL.load(Ordering::SeqCst) {
                    libc::SIGTERM => "SIGTERM",
                    libc::SIGHUP => "SIGHUP",
                    _ => "Ctrl-C",
                }
            ),
        )
        .into()),
    }
}
