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
//! so every consumed row is acked before `--state-out` is written (exit 130).
//! Children lead their own process groups and die with `launch` (`PR_SET_PDEATHSIG`); the
//! private socket directory is removed on every exit, Ctrl-C included; rings are memfds, so
//! nothing is ever in /dev/shm.
//!
//! Parts: `children` (spawning the children, their output and tails, cleanup, the private
//! socket directory), `feeder` (the feeder's command line, its restarts and failures),
//! `batch_size` (the batch size the trainers agree on) and `certs` (`--tls`: the job's CA and
//! certificates). This module holds the arguments, the signal handling and the supervision
//! loop.

use std::io::IsTerminal;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::sync::atomic::{AtomicU32, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::serve::ServeFormat;
use hydrofeed_coord::client::CoordClient;
use hydrofeed_coord::service::{self, ServiceOptions};
use hydrofeed_coord::token::{Token, TOKEN_ENV};
use hydrofeed_coord::{Config, Machine, Remainder};
use hydrofeed_feeder::daemon::SKIPPED_LINE;
use hydrofeed_tfbridge::SOCKET_ENV;

mod batch_size;
pub(crate) mod certs;
mod children;
mod feeder;
mod gpus;

use batch_size::agree_batch_size;
use certs::JobTls;
pub use certs::TlsMode;
pub use children::private_run_dir;
use children::{describe, free_ports, spawn, spawn_at, Job};
use feeder::{failed_by_itself, feeder_command, feeder_failed, restart_feeder, trainer_stalled};

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
    /// Write the coordinator's final state here (resumable if the job stopped early).
    #[arg(long)]
    pub state_out: Option<PathBuf>,
    /// Columns to read, comma-separated.
    #[arg(long, value_delimiter = ',')]
    pub columns: Option<Vec<String>>,
    /// Input format (when file names do not tell).
    #[arg(long, value_enum)]
    pub format: Option<ServeFormat>,
    /// Skip corrupt records (counted, and named in the summary) instead of failing.
    #[arg(long)]
    pub skip_errors: bool,
    /// The schema to read with (JSON as `hydrofeed inspect --json` prints it, or an Arrow IPC
    /// stream): for TFRecord instead of inferring it, for Avro as the reader schema.
    #[arg(long)]
    pub schema: Option<PathBuf>,
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
    /// Seconds without a heartbeat before a rank is declared dead.
    #[arg(long, default_value_t = 30.0)]
    pub dead_after: f64,
    /// Restarts of a feeder killed by a signal (`kill -9`, the OOM killer, a crash): the
    /// trainers re-attach to the new one and report what they read after their last ack, so
    /// every row still comes exactly once. A feeder that fails by itself (bad input: exit
    /// status 1) is not restarted. 0: a dead feeder ends the job.
    #[arg(long, default_value_t = 3)]
    pub feeder_restarts: u32,
    /// TLS on the control plane: a CA made for this job signs the coordinator's certificate
    /// (`--tls`, `--tls server`) and the feeder's and trainers' client certificates too
    /// (`--tls mutual`); the files live in the job's private directory and go with it.
    #[arg(
        long,
        value_enum,
        value_name = "MODE",
        num_args = 0..=1,
        default_missing_value = "server"
    )]
    pub tls: Option<TlsMode>,
    /// The trainer command (after `--`).
    #[arg(last = true, required = true)]
    pub command: Vec<String>,
}

/// Ctrl-C (SIGINT, SIGTERM, SIGHUP) count: the first stops the job in order, the second kills.
static INTERRUPTS: AtomicU32 = AtomicU32::new(0);

extern "C" fn on_signal(_: libc::c_int) {
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
enum Ended {
    /// Every trainer exited 0 at the end of the feed.
    Done,
    /// A trainer exited 0 before the end of the feed; the others were told to stop.
    Early(u32),
    /// Ctrl-C: the trainers were interrupted and the feed ended.
    Interrupted,
}

/// Runs `hydrofeed launch`.
pub fn run(args: Args) -> anyhow::Result<()> {
    let (workers, gpus) = gpus::plan(args.gpus.as_deref(), args.workers)?;
    anyhow::ensure!(workers >= 1, "--workers must be at least 1");
    super::secs("--stall-timeout", args.stall_timeout)?;
    if let Some(d) = gpus::describe(&gpus) {
        eprintln!("hydrofeed launch: {d}");
    }
    catch_signals();
    // The feeder plans with the same options: split ids and row counts must agree.
    let read = super::serve::read_options(
        args.columns.clone(),
        args.format,
        args.skip_errors,
        args.schema.as_deref(),
    )?;
    let storage = hydrofeed_storage::open_storage(&args.input)?;
    let plan = hydrofeed_format::plan(&storage, &args.input, &read)?;
    let splits = crate::split_infos(&plan);
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
        ..Config::new(workers, args.batch_size.unwrap_or(1))
    };
    let m = match &args.resume {
        Some(p) => {
            let st = super::coordinator::read_state(p)?;
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
            let m = Machine::resume(splits, cfg, &st)?;
            if let Some(note) = m.resume_note() {
                eprintln!("hydrofeed launch: {note}");
            }
            m
        }
        None => Machine::new(splits, cfg)?,
    };
    let (epochs, total_rows) = (m.config().epochs, m.total_rows());
    let token = Token::generate()?;
    // The directory first: it holds the TLS files the coordinator starts with, and `job`
    // removes it on every exit.
    let dir = private_run_dir("hydrofeed-launch")?;
    let mut job = Job {
        dir: dir.clone(),
        children: Vec::new(),
        outs: Vec::new(),
    };
    let tls = args.tls.map(|mode| JobTls::make(&dir, mode)).transpose()?;
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
        },
        "127.0.0.1:0".parse()?,
        None,
    )?;
    let addr = match &tls {
        Some(_) => format!("https://{}", svc.addr),
        None => svc.addr.to_string(),
    };
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
    let result = supervise(
        &args,
        &gpus,
        &addr,
        &token,
        tls.as_ref(),
        &dir,
        &mut job,
        &svc,
        &pb,
    );
    pb.finish_and_clear();
    // Stop every child before the state is taken: no ack can arrive after it.
    drop(job);
    let state = svc.shared.with_machine(|m| m.state());
    let acked = svc.shared.with_machine(|m| m.counters().rows_acked);
    let saved = match &args.state_out {
        Some(p) => {
            std::fs::write(p, state.to_json()).with_context(|| format!("{}", p.display()))?;
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
                "interrupted (Ctrl-C): stopped every trainer and the feeder; {acked} rows acked{saved}"
            ),
        )
        .into()),
    }
}

#[allow(clippy::too_many_lines, clippy::too_many_arguments)]
fn supervise(
    args: &Args,
    gpus: &[gpus::RankGpu],
    addr: &str,
    token: &Token,
    tls: Option<&JobTls>,
    dir: &Path,
    job: &mut Job,
    svc: &service::RunningService,
    pb: &ProgressBar,
) -> anyhow::Result<Ended> {
    let n = gpus.len() as u32;
    let epochs = svc.shared.with_machine(|m| m.config().epochs);
    let ports = free_ports(n)?;
    // torch.distributed's store (rank 0) and JAX's coordinator service (process 0).
    let rendezvous = free_ports(2)?;
    let from_trainers = args.batch_size.is_none() && args.resume.is_none();
    let feeder = feeder_command(args, addr, token, tls, dir, &ports, from_trainers, false)?;
    spawn(job, "the feeder".into(), "[feeder]".into(), feeder, pb)
        .context("starting the feeder")?;

    // The feeder registers every rank; then each rank's TF_CONFIG is known.
    let mut client =
        CoordClient::connect_tls(addr, token, Duration::from_secs(10), tls.map(|t| &t.client))?;
    let mut tf_configs = Vec::new();
    for rank in 0..n {
        let t0 = Instant::now();
        loop {
            if let Some(s) = job.children[0].1.try_wait()? {
                return Err(feeder_failed(job, svc, s));
            }
            if INTERRUPTS.load(Ordering::SeqCst) > 0 {
                bail!("interrupted before the trainers started");
            }
            match client.wait_cluster_spec(rank, Duration::from_millis(500)) {
                Ok((_, tf)) => {
                    tf_configs.push(tf);
                    break;
                }
                Err(hydrofeed_error::Error::Timeout { .. })
                    if t0.elapsed() < Duration::from_secs(120) => {}
                Err(e) => return Err(e.into()),
            }
        }
    }
    for (rank, tf) in tf_configs.iter().enumerate() {
        let mut c = Command::new(&args.command[0]);
        c.args(&args.command[1..])
            .env("TF_CONFIG", tf)
            .env(SOCKET_ENV, dir.join(format!("rank-{rank}.sock")))
            .env("HYDROFEED_RANK", rank.to_string())
            .env("HYDROFEED_NUM_WORKERS", n.to_string())
            .env("HYDROFEED_EPOCHS", epochs.to_string())
            .env("HYDROFEED_COORDINATOR", addr)
            .env(TOKEN_ENV, token.as_str())
            .env("PYTHONUNBUFFERED", "1");
        certs::clear_env(&mut c);
        if let Some(t) = tls {
            t.trainer_env(&mut c);
        }
        // As torchrun sets them (init_process_group(backend) then needs no arguments), and
        // JAX's distributed coordinates (hydrofeed.jax.initialize() passes them on).
        c.env("RANK", rank.to_string())
            .env("LOCAL_RANK", rank.to_string())
            .env("WORLD_SIZE", n.to_string())
            .env("LOCAL_WORLD_SIZE", n.to_string())
            .env("MASTER_ADDR", "127.0.0.1")
            .env("MASTER_PORT", rendezvous[0].to_string())
            .env(
                "JAX_COORDINATOR_ADDRESS",
                format!("127.0.0.1:{}", rendezvous[1]),
            )
            .env("JAX_NUM_PROCESSES", n.to_string())
            .env("JAX_PROCESS_ID", rank.to_string());
        if let Some(g) = &gpus[rank] {
            gpus::place(&mut c, g);
        }
        if args.feeder_restarts > 0 {
            // A killed feeder is restarted: the trainer waits for the new one.
            c.env(REJOIN_ENV, REJOIN_TIMEOUT.as_secs().to_string());
        }
        // The chief alone writes the feed's TensorBoard scalars.
        match &args.tensorboard {
            Some(d) if rank == 0 => c.env(TENSORBOARD_ENV, d),
            _ => c.env_remove(TENSORBOARD_ENV),
        };
        spawn(
            job,
            format!("trainer rank {rank}"),
            format!("[rank {rank}]"),
            c,
            pb,
        )
        .with_context(|| format!("starting trainer rank {rank}: {:?}", args.command))?;
    }

    let t0 = Instant::now();
    let mut status: Vec<Option<ExitStatus>> = vec![None; n as usize];
    let mut feeder_status: Option<ExitStatus> = None;
    let mut stop: Option<(Ended, Instant)> = None;
    let mut killed: Vec<u32> = Vec::new();
    let mut last_epoch = 0;
    let mut last_line = Instant::now();
    let mut agreed = !from_trainers;
    let mut restarts = 0u32;
    let plain = !std::io::stderr().is_terminal();
    let total = svc
        .shared
        .with_machine(|m| m.total_rows() * u64::from(m.config().epochs));
    loop {
        let interrupts = INTERRUPTS.load(Ordering::SeqCst);
        if interrupts >= 2 {
            return Err(super::Exit::new(
                130,
                "interrupted twice: killed every trainer and the feeder",
            )
            .into());
        }
        if interrupts == 1 && !matches!(stop, Some((Ended::Interrupted, _))) {
            pb.suspend(|| {
                eprintln!(
                    "hydrofeed launch: interrupted: stopping the trainers (SIGINT) and ending the \
                     feed; Ctrl-C again to kill them"
                )
            });
            for i in 1..=n as usize {
                job.signal(i, libc::SIGINT);
            }
            job.signal(0, libc::SIGTERM);
            stop = Some((Ended::Interrupted, Instant::now()));
        }
        let (epoch, acked, finished) = svc
            .shared
            .with_machine(|m| (m.epoch(), m.counters().rows_acked, m.finished()));
        pb.set_position(acked);
        pb.set_message(format!("epoch {epoch}"));
        let secs = t0.elapsed().as_secs_f64();
        if epoch != last_epoch {
            pb.suspend(|| {
                eprintln!(
                    "hydrofeed launch: epoch {last_epoch} done: {acked} rows acked so far, {:.0} rows/s",
                    acked as f64 / secs.max(1e-9)
                )
            });
            last_epoch = epoch;
            last_line = Instant::now();
        } else if plain && last_line.elapsed() >= PROGRESS_EVERY {
            eprintln!(
                "hydrofeed launch: {:.0} s: epoch {epoch}, {acked}/{total} rows acked, {:.0} rows/s",
                secs,
                acked as f64 / secs.max(1e-9)
            );
            last_line = Instant::now();
        }
        if !agreed {
            agreed = agree_batch_size(dir, n, svc, pb)?;
        }
        // The feeder first: a trainer that failed because its feeder failed names the feeder.
        if feeder_status.is_none() {
            feeder_status = job.children[0].1.try_wait()?;
            if let Some(s) = feeder_status {
                let restart = s.signal().is_some()
                    && stop.is_none()
                    && agreed
                    && restarts < args.feeder_restarts
                    && status.iter().any(Option::is_none);
                if restart {
                    restarts += 1;
                    restart_feeder(job, s, restarts, args.feeder_restarts, pb)?;
                    let cmd = feeder_command(args, addr, token, tls, dir, &ports, false, true)?;
                    spawn_at(
                        job,
                        Some(0),
                        "the feeder".into(),
                        "[feeder]".into(),
                        cmd,
                        pb,
                    )
                    .context("restarting the feeder")?;
                    feeder_status = None;
                } else if s.code() == Some(crate::feeder::TRAINER_STALLED_EXIT) {
                    return Err(trainer_stalled(job, s));
                } else if failed_by_itself(s) && stop.is_none() {
                    return Err(feeder_failed(job, svc, s));
                }
            }
        }
        #[allow(clippy::needless_range_loop)] // `job` is borrowed mutably inside
        for i in 0..n as usize {
            if status[i].is_some() {
                continue;
            }
            let Some(s) = job.children[i + 1].1.try_wait()? else {
                continue;
            };
            status[i] = Some(s);
            let interrupted = matches!(stop, Some((Ended::Interrupted, _)));
            if !s.success() && !interrupted && !killed.contains(&(i as u32)) {
                if let Some(fs) = job.children[0].1.try_wait()? {
                    if failed_by_itself(fs) {
                        return Err(feeder_failed(job, svc, fs));
                    }
                }
                let pid = job.children[i + 1].1.id();
                let tail = job.tail(i + 1);
                bail!(
                    "trainer rank {i} (pid {pid}) failed: {}; stopped the other trainers and the \
                     feeder{tail}",
                    describe(s)
                );
            }
            if s.success() && stop.is_none() && !finished {
                pb.suspend(|| {
                    eprintln!(
                        "hydrofeed launch: trainer rank {i} exited 0 before the end of the feed: \
                         ending the feed on the other ranks"
                    )
                });
                job.signal(0, libc::SIGTERM);
                stop = Some((Ended::Early(i as u32), Instant::now()));
            }
        }
        if let Some((_, since)) = &stop {
            if since.elapsed() > STOP_GRACE {
                for (i, st) in status.iter().enumerate() {
                    if st.is_none() && !killed.contains(&(i as u32)) {
                        job.signal(i + 1, libc::SIGKILL);
                        killed.push(i as u32);
                    }
                }
            }
        }
        if status.iter().all(Option::is_some) {
            // Give the feeder a moment to forward the last acks and leave.
            let t = Instant::now();
            while feeder_status.is_none() && t.elapsed() < Duration::from_secs(10) {
                feeder_status = job.children[0].1.try_wait()?;
                thread::sleep(Duration::from_millis(20));
            }
            job.drain_output(None);
            let ended = stop.map_or(Ended::Done, |(e, _)| e);
            if !killed.is_empty() && !matches!(ended, Ended::Interrupted) {
                bail!(
                    "rank(s) {killed:?} did not stop within {} s after the feed ended; killed them",
                    STOP_GRACE.as_secs()
                );
            }
            if matches!(ended, Ended::Interrupted) {
                return Ok(ended);
            }
            if let Some(s) = feeder_status {
                if failed_by_itself(s) {
                    return Err(feeder_failed(job, svc, s));
                }
            }
            let secs = t0.elapsed().as_secs_f64();
            let c = svc.shared.with_machine(|m| m.counters());
            let (steps, finished) = svc.shared.with_machine(|m| (m.steps_done(), m.finished()));
            let early = match ended {
                Ended::Early(r) => format!(
                    " (stopped before the end of the feed: trainer rank {r} exited 0 first)"
                ),
                _ if !finished => " (stopped before the end of the feed)".to_string(),
                _ => String::new(),
            };
            let skipped = if args.skip_errors {
                let line = job.children[0].2.lock().ok().and_then(|t| {
                    t.iter()
                        .rev()
                        .find_map(|l| l.strip_prefix(SKIPPED_LINE).map(str::to_string))
                });
                format!(
                    ", skipped {}",
                    line.unwrap_or_else(|| "0 corrupt records".into())
                )
            } else {
                String::new()
            };
            pb.suspend(|| {
                eprintln!(
                    "hydrofeed launch: {} workers, {} rows acked ({} dropped) in {:.1} s = {:.0} \
                     rows/s, {} steps per worker{skipped}{early}",
                    n,
                    c.rows_acked,
                    c.rows_dropped,
                    secs,
                    c.rows_acked as f64 / secs.max(1e-9),
                    steps,
                )
            });
            return Ok(ended);
        }
        thread::sleep(Duration::from_millis(50));
    }
}
