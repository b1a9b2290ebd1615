//! `hydrofeed launch`: one machine, whole job. Starts the coordinator (in this process), one
//! feeder daemon (`hydrofeed feeder`, a child process) and N trainer processes with `TF_CONFIG`,
//! `HYDROFEED_FEED_SOCKET`, `HYDROFEED_RANK`, `HYDROFEED_NUM_WORKERS`, `HYDROFEED_COORDINATOR`
//! and `HYDROFEED_TOKEN` set; streams the trainers' output prefixed with their rank; shows
//! progress on stderr (a terminal only). If a trainer or the feeder fails, every other process
//! is killed and `launch` exits non-zero naming the rank (or the feeder and the ranks' stages).
//! Children die with `launch` (`PR_SET_PDEATHSIG`); the socket directory is removed on every
//! exit, Ctrl-C included; rings are memfds, so nothing is ever in /dev/shm.

use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::serve::ServeFormat;
use crate::coord::client::CoordClient;
use crate::coord::service::{self, ServiceOptions};
use crate::coord::token::{Token, TOKEN_ENV};
use crate::coord::{Config, Machine, Remainder, SplitInfo};
use crate::format::ReadOptions;
use crate::serve::SOCKET_ENV;

/// Environment variable naming a state file to resume from (same as `--resume`).
pub const RESUME_ENV: &str = "HYDROFEED_RESUME";

/// Arguments of `hydrofeed launch`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Number of trainer processes (ranks).
    #[arg(long)]
    pub workers: u32,
    /// Input: file, directory or glob (local path or hdfs:// URI).
    #[arg(long)]
    pub input: String,
    /// Epochs.
    #[arg(long)]
    pub epochs: Option<u32>,
    /// Rows per batch (every rank, every step).
    #[arg(long, default_value_t = 256)]
    pub batch_size: u64,
    /// Seed of the split order.
    #[arg(long)]
    pub seed: Option<u64>,
    /// What to do with the rows that do not fill a last step of every rank.
    #[arg(long, value_enum)]
    pub remainder: Option<Remainder>,
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
    /// Feeder memory budget in MiB.
    #[arg(long, default_value_t = 512)]
    pub memory_mb: usize,
    /// Feeder Prometheus endpoint.
    #[arg(long)]
    pub feeder_metrics: Option<std::net::SocketAddr>,
    /// Seconds without a heartbeat before a rank is declared dead.
    #[arg(long, default_value_t = 30.0)]
    pub dead_after: f64,
    /// The trainer command (after `--`).
    #[arg(last = true, required = true)]
    pub command: Vec<String>,
}

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
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

/// Children get SIGKILL when `launch` dies, whatever kills it.
fn die_with_parent(cmd: &mut Command) {
    // SAFETY: the closure runs in the child between fork and exec and calls only `prctl`,
    // which is async-signal-safe; it touches no memory of the parent.
    unsafe {
        cmd.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// Everything to clean up, on every exit path.
struct Job {
    dir: PathBuf,
    children: Vec<(String, Child)>,
    /// Threads copying the children's output.
    outs: Vec<thread::JoinHandle<()>>,
}

impl Job {
    /// Lets the output threads print what the exited children wrote last (at most 2 s).
    fn drain_output(&mut self) {
        let t = Instant::now();
        while self.outs.iter().any(|h| !h.is_finished()) && t.elapsed() < Duration::from_secs(2) {
            thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Job {
    fn drop(&mut self) {
        for (_, c) in &mut self.children {
            let _ = c.kill();
        }
        for (_, c) in &mut self.children {
            let _ = c.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn describe(s: ExitStatus) -> String {
    match (s.code(), s.signal()) {
        (Some(c), _) => format!("exit status {c}"),
        (None, Some(sig)) => format!("signal {sig}{}", if sig == 9 { " (SIGKILL)" } else { "" }),
        _ => s.to_string(),
    }
}

fn pipe_lines(
    job: &mut Job,
    r: impl Read + Send + 'static,
    prefix: String,
    err: bool,
    pb: ProgressBar,
) {
    let h = thread::Builder::new().name("hf-out".into()).spawn(move || {
        for line in BufReader::new(r).lines() {
            let Ok(line) = line else { break };
            pb.suspend(|| {
                if err {
                    eprintln!("{prefix} {line}");
                } else {
                    println!("{prefix} {line}");
                }
            });
        }
    });
    if let Ok(h) = h {
        job.outs.push(h);
    }
}

fn free_ports(n: u32) -> anyhow::Result<Vec<u32>> {
    let ls: Vec<std::net::TcpListener> = (0..n)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0"))
        .collect::<Result<_, _>>()
        .context("picking ports for the trainers' TF servers")?;
    ls.iter()
        .map(|l| Ok(u32::from(l.local_addr()?.port())))
        .collect()
}

/// Runs `hydrofeed launch`.
pub fn run(args: Args) -> anyhow::Result<()> {
    anyhow::ensure!(args.workers >= 1, "--workers must be at least 1");
    catch_signals();
    let read = ReadOptions {
        columns: args.columns.clone(),
        ..ReadOptions::default()
    };
    let storage = crate::storage::open_storage(&args.input)?;
    let plan = crate::format::plan(&storage, &args.input, &read)?;
    let splits = SplitInfo::from_plan(&plan);
    let cfg = Config {
        epochs: args.epochs.unwrap_or(1),
        seed: args.seed.unwrap_or(0),
        remainder: args.remainder.unwrap_or_default(),
        stall_after_ms: 10_000,
        dead_after_ms: (args.dead_after * 1000.0) as u64,
        ..Config::new(args.workers, args.batch_size)
    };
    let m = match &args.resume {
        Some(p) => {
            let st = super::coordinator::read_state(p)?;
            anyhow::ensure!(
                st.batch_size == args.batch_size,
                "--batch-size {} differs from the resumed state's {}",
                args.batch_size,
                st.batch_size
            );
            if let Some(e) = args.epochs {
                anyhow::ensure!(
                    e == st.epochs,
                    "--epochs {e} differs from the state's {}",
                    st.epochs
                );
            }
            Machine::resume(splits, cfg, &st)?
        }
        None => Machine::new(splits, cfg)?,
    };
    let (epochs, total_rows) = (m.config().epochs, m.total_rows());
    let token = Token::generate()?;
    let svc = service::spawn(
        m,
        ServiceOptions {
            ps: 0,
            evaluators: 0,
            reservation_timeout: Duration::from_secs(120),
            heartbeat_interval: Duration::from_secs(1),
            log_path: None,
            token: token.clone(),
        },
        "127.0.0.1:0".parse()?,
        None,
    )?;
    let addr = svc.addr.to_string();
    let dir = std::env::temp_dir().join(format!("hydrofeed-launch-{}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| format!("{}", dir.display()))?;
    let mut job = Job {
        dir: dir.clone(),
        children: Vec::new(),
        outs: Vec::new(),
    };
    let pb = if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
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
    let result = supervise(&args, &addr, &token, &dir, &mut job, &svc, &pb);
    pb.finish_and_clear();
    let state = svc.shared.with_machine(|m| m.state());
    if let Some(p) = &args.state_out {
        std::fs::write(p, state.to_json()).with_context(|| format!("{}", p.display()))?;
    }
    drop(job);
    let _ = svc.shutdown();
    result
}

fn supervise(
    args: &Args,
    addr: &str,
    token: &Token,
    dir: &Path,
    job: &mut Job,
    svc: &service::RunningService,
    pb: &ProgressBar,
) -> anyhow::Result<()> {
    let n = args.workers;
    let ports = free_ports(n)?;
    let exe = std::env::current_exe().context("finding the hydrofeed executable")?;
    let mut feeder = Command::new(exe);
    feeder
        .arg("feeder")
        .args(["--input", &args.input, "--coordinator", addr])
        .arg("--socket-dir")
        .arg(dir)
        .args(["--trainers", &n.to_string()])
        .arg("--ranks")
        .arg((0..n).map(|r| r.to_string()).collect::<Vec<_>>().join(","))
        .arg("--trainer-ports")
        .arg(
            ports
                .iter()
                .map(|p| p.to_string())
                .collect::<Vec<_>>()
                .join(","),
        )
        .args(["--memory-mb", &args.memory_mb.to_string()])
        .env(TOKEN_ENV, token.as_str())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(c) = &args.columns {
        feeder.arg("--columns").arg(c.join(","));
    }
    if let Some(f) = args.format {
        let v = clap::ValueEnum::to_possible_value(&f).map(|v| v.get_name().to_string());
        if let Some(v) = v {
            feeder.args(["--format", &v]);
        }
    }
    if let Some(a) = args.feeder_metrics {
        feeder.args(["--metrics", &a.to_string()]);
    }
    die_with_parent(&mut feeder);
    let mut child = feeder.spawn().context("starting the feeder")?;
    if let Some(o) = child.stdout.take() {
        pipe_lines(job, o, "[feeder]".into(), false, pb.clone());
    }
    if let Some(e) = child.stderr.take() {
        pipe_lines(job, e, "[feeder]".into(), true, pb.clone());
    }
    job.children.push(("feeder".into(), child));

    // The feeder registers every rank; then each rank's TF_CONFIG is known.
    let mut client = CoordClient::connect(addr, token, Duration::from_secs(10))?;
    let mut tf_configs = Vec::new();
    for rank in 0..n {
        let t0 = Instant::now();
        loop {
            check_feeder(job, svc)?;
            if INTERRUPTED.load(Ordering::SeqCst) {
                bail!("interrupted");
            }
            match client.wait_cluster_spec(rank, Duration::from_millis(500)) {
                Ok((_, tf)) => {
                    tf_configs.push(tf);
                    break;
                }
                Err(crate::Error::Timeout { .. }) if t0.elapsed() < Duration::from_secs(120) => {}
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
            .env("HYDROFEED_COORDINATOR", addr)
            .env(TOKEN_ENV, token.as_str())
            .env("PYTHONUNBUFFERED", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        die_with_parent(&mut c);
        let mut ch = c
            .spawn()
            .with_context(|| format!("starting trainer rank {rank}: {:?}", args.command))?;
        if let Some(o) = ch.stdout.take() {
            pipe_lines(job, o, format!("[rank {rank}]"), false, pb.clone());
        }
        if let Some(e) = ch.stderr.take() {
            pipe_lines(job, e, format!("[rank {rank}]"), true, pb.clone());
        }
        job.children.push((format!("rank {rank}"), ch));
    }

    let t0 = Instant::now();
    let mut done = vec![false; n as usize];
    let mut feeder_done = false;
    let mut last_epoch = 0;
    loop {
        if INTERRUPTED.load(Ordering::SeqCst) {
            bail!("interrupted (Ctrl-C): stopped every trainer and the feeder");
        }
        let (epoch, acked, finished) = svc
            .shared
            .with_machine(|m| (m.epoch(), m.counters().rows_acked, m.finished()));
        pb.set_position(acked);
        pb.set_message(format!("epoch {epoch}"));
        if epoch != last_epoch {
            let secs = t0.elapsed().as_secs_f64();
            pb.suspend(|| {
                eprintln!(
                    "hydrofeed launch: epoch {last_epoch} done: {acked} rows acked so far, {:.0} rows/s",
                    acked as f64 / secs.max(1e-9)
                )
            });
            last_epoch = epoch;
        }
        #[allow(clippy::needless_range_loop)]
        for i in 0..n as usize {
            if done[i] {
                continue;
            }
            let (_, c) = &mut job.children[i + 1];
            if let Some(s) = c.try_wait()? {
                if !s.success() {
                    // Let its last lines (a traceback) reach the terminal before the verdict.
                    thread::sleep(Duration::from_millis(200));
                    // A trainer that lost its feeder fails too: name the feeder, the cause.
                    if !feeder_done {
                        check_feeder(job, svc)?;
                    }
                    let (name, c) = &mut job.children[i + 1];
                    bail!(
                        "trainer {name} (pid {}) failed: {}; stopped the other trainers and the feeder",
                        c.id(),
                        describe(s)
                    );
                }
                done[i] = true;
            }
        }
        if !feeder_done {
            feeder_done = check_feeder(job, svc)?;
        }
        if done.iter().all(|d| *d) {
            // Give the feeder a moment to forward the last acks and leave.
            let t = Instant::now();
            while !feeder_done && t.elapsed() < Duration::from_secs(10) {
                feeder_done = check_feeder(job, svc)?;
                thread::sleep(Duration::from_millis(50));
            }
            job.drain_output();
            let secs = t0.elapsed().as_secs_f64();
            let c = svc.shared.with_machine(|m| m.counters());
            let steps = svc.shared.with_machine(|m| m.steps_done());
            pb.suspend(|| {
                eprintln!(
                    "hydrofeed launch: {} workers, {} rows acked ({} dropped) in {:.1} s = {:.0} \
                     rows/s, {} steps per worker{}",
                    n,
                    c.rows_acked,
                    c.rows_dropped,
                    secs,
                    c.rows_acked as f64 / secs.max(1e-9),
                    steps,
                    if finished {
                        ""
                    } else {
                        " (stopped before the end of the feed)"
                    }
                )
            });
            return Ok(());
        }
        thread::sleep(Duration::from_millis(100));
    }
}

/// `Ok(true)`: the feeder exited cleanly; error if it failed.
fn check_feeder(job: &mut Job, svc: &service::RunningService) -> anyhow::Result<bool> {
    let (_, c) = &mut job.children[0];
    match c.try_wait()? {
        None => Ok(false),
        Some(s) if s.success() => Ok(true),
        Some(s) => {
            let stages = svc.shared.with_machine(|m| {
                m.ranks()
                    .iter()
                    .enumerate()
                    .map(|(r, i)| format!("rank {r}: {}", i.stage.as_str()))
                    .collect::<Vec<_>>()
                    .join(", ")
            });
            bail!(
                "the feeder (pid {}) failed: {}; last stages reported: {stages}; stopped every \
                 trainer",
                c.id(),
                describe(s)
            )
        }
    }
}
