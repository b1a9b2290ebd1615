//! `hydrofeed coordinator`: plans the input, then serves the control protocol until every
//! worker got end-of-feed (or Ctrl-C, or SIGTERM), writing the resumable state (at the start,
//! then on the way out: [`crate::state_file`]).

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;

use crate::read_args::ReadArgs;
use hydrofeed_coord::input::InputFingerprint;
use hydrofeed_coord::journal::{self, Journal};
use hydrofeed_coord::service::{self, Journaled, ServiceOptions};
use hydrofeed_coord::token::Token;
use hydrofeed_coord::Roster;
use hydrofeed_coord::{Config, Machine, Remainder, SplitInfo, Stage, State};

/// Arguments of `hydrofeed coordinator`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Input: file, directory (Spark/Hive layout) or glob, local or hdfs://.
    #[arg(long, required_unless_present = "splits")]
    pub input: Option<String>,
    /// Instead of --input: a JSON list of splits `[{"id": 0, "rows": 100, "hosts": ["dn1"]}]`
    /// (ids 0..n in order; hosts optional), e.g. a plan with HDFS block locations.
    #[arg(long, conflicts_with = "input")]
    pub splits: Option<PathBuf>,
    /// Data workers (ranks).
    #[arg(long)]
    pub workers: u32,
    /// Rows per batch per worker.
    #[arg(long)]
    pub batch_size: u64,
    /// Epochs (from the state when resuming).
    #[arg(long)]
    pub epochs: Option<u32>,
    /// Job seed (from the state when resuming).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Feed the splits in plan order (files by path, then row groups/stripes/blocks in file
    /// order) instead of shuffling them by (seed, epoch) (from the state when resuming).
    #[arg(long)]
    pub no_shuffle: bool,
    /// Columns, format, corrupt records, schema: the feeders must be given the same.
    #[command(flatten)]
    pub read: ReadArgs,
    /// Rows that do not fill a step on every worker: drop, pad or wrap.
    #[arg(long, value_enum)]
    pub remainder: Option<Remainder>,
    /// Order: fixed or dynamic, shuffle buffer, cycle length.
    #[command(flatten)]
    pub order: crate::order::OrderArgs,
    /// Address to listen on (port 0: any free port; the address is printed).
    #[arg(long, default_value = "127.0.0.1:0")]
    pub listen: SocketAddr,
    /// Token file, written with mode 0600 (a fresh token per job, unless HYDROFEED_TOKEN is
    /// set, which is then used as is).
    #[arg(long, default_value = "hydrofeed-coord.token")]
    pub token_file: PathBuf,
    /// TLS: certificate, key, client CA.
    #[command(flatten)]
    pub tls: crate::tls::ServerArgs,
    /// Resume from a state file written by an earlier run (`--state-out`, or GetState).
    #[arg(long)]
    pub resume: Option<PathBuf>,
    /// Resume even if the input changed since the state was saved (files added, removed,
    /// rewritten): the acked rows of the unchanged files are kept, changed and new files are
    /// read whole, the rows of removed ones are gone. Without it such a resume is refused.
    #[arg(long, requires = "resume")]
    pub allow_changed_input: bool,
    /// Write the state here: at the start (a file of an earlier run is replaced), and on exit
    /// (end of feed, Ctrl-C, SIGTERM); atomically, never half-written.
    #[arg(long)]
    pub state_out: Option<PathBuf>,
    /// Append every assignment to this JSONL log.
    #[arg(long)]
    pub log: Option<PathBuf>,
    /// Journal every lease granted and every batch of acks in this directory (fsynced before
    /// each answer, compacted at epoch boundaries), with the job's token: a coordinator
    /// started again on the same directory (after `kill -9`, a lost host) continues the job,
    /// and feeders that kept trying it (`--coordinator-timeout`) carry on exactly once.
    #[arg(long)]
    pub journal: Option<PathBuf>,
    /// Serve Prometheus text metrics on this address (`GET /metrics`).
    #[arg(long)]
    pub metrics: Option<SocketAddr>,
    /// Parameter servers expected at reservation.
    #[arg(long, default_value_t = 0)]
    pub ps: u32,
    /// Evaluators expected at reservation.
    #[arg(long, default_value_t = 0)]
    pub evaluators: u32,
    /// Seconds the reservation may take from start.
    #[arg(long, default_value_t = 120.0)]
    pub reservation_timeout: f64,
    /// Seconds of silence before a worker is reported stalled.
    #[arg(long, default_value_t = 10.0)]
    pub stall_after: f64,
    /// Seconds of silence before a worker is declared dead and its rows re-queued.
    #[arg(long, default_value_t = 30.0)]
    pub dead_after: f64,
}

/// Reads a state file (`--resume`), errors naming the file.
pub(crate) fn read_state(p: &std::path::Path) -> anyhow::Result<State> {
    let text = std::fs::read_to_string(p).with_context(|| format!("{}", p.display()))?;
    State::from_json(&text).with_context(|| format!("{}", p.display()))
}

/// The splits, and the input's fingerprint where there is an input (not `--splits`).
/// A table input is planned at the snapshot of `saved`, the state resumed.
/// The splits, the input's fingerprint and, under a filter, what the feeders take of it.
type Planned = (
    Vec<SplitInfo>,
    Option<InputFingerprint>,
    Option<std::sync::Arc<(String, Vec<Vec<u64>>)>>,
);

fn splits_of(args: &Args, saved: Option<&State>) -> anyhow::Result<Planned> {
    if let Some(p) = &args.splits {
        #[derive(serde::Deserialize)]
        struct S {
            id: u32,
            rows: u64,
            #[serde(default)]
            hosts: Vec<String>,
        }
        let text = std::fs::read_to_string(p).with_context(|| format!("{}", p.display()))?;
        let v: Vec<S> = serde_json::from_str(&text)
            .with_context(|| format!("{}: not a split list", p.display()))?;
        let splits = v
            .into_iter()
            .map(|s| SplitInfo::new(s.id, s.rows).with_hosts(s.hosts))
            .collect();
        return Ok((splits, None, None));
    }
    let input = args
        .input
        .as_deref()
        .expect("clap requires input or splits");
    let storage = hydrofeed_storage::open_storage(input)?;
    let mut read = args.read.options()?;
    crate::pin_snapshot(&mut read, saved, "hydrofeed coordinator")?;
    let plan = hydrofeed_format::plan(&storage, input, &read)?;
    if let Some(t) = &plan.table {
        // Feeders started apart plan the input themselves: they must read this version.
        eprintln!(
            "hydrofeed coordinator: the {} table {} at version {}: start the feeders with \
             --snapshot {}",
            t.kind, t.id, t.version, t.version
        );
    }
    Ok((
        crate::split_infos(&plan),
        Some(crate::input_fingerprint(&plan)),
        crate::filter_counts(&plan, "hydrofeed coordinator"),
    ))
}

/// The machine of a resume from `st` (`--resume`, or a journal's state), with the checks of
/// the flags against the state.
fn resume_machine(
    args: &Args,
    splits: Vec<SplitInfo>,
    input: Option<&InputFingerprint>,
    mut cfg: Config,
    st: State,
) -> anyhow::Result<Machine> {
    let st = crate::resume_state(st, input, args.allow_changed_input, "hydrofeed coordinator")?;
    for (what, given, saved) in [
        ("--epochs", args.epochs.map(u64::from), u64::from(st.epochs)),
        ("--seed", args.seed, st.seed),
        ("--batch-size", Some(args.batch_size), st.batch_size),
    ] {
        if let Some(g) = given {
            anyhow::ensure!(
                g == saved,
                "{what} {g} differs from the resumed state's {saved}"
            );
        }
    }
    anyhow::ensure!(
        !(args.no_shuffle && st.shuffle),
        "--no-shuffle differs from the resumed state, which shuffles"
    );
    if let Some(r) = args.remainder {
        anyhow::ensure!(
            r == st.remainder,
            "--remainder differs from the resumed state's {:?}",
            st.remainder
        );
    }
    cfg.seed = st.seed;
    cfg.order = None;
    args.order.check_resume(&st)?;
    let m = Machine::resume(splits, cfg, &st)?;
    if let Some(note) = m.resume_note() {
        tracing::warn!("{note}");
    }
    Ok(m)
}

/// Raises this process's soft limit of open files to its hard limit; returns the new limit
/// (0 when it cannot be read).
pub fn raise_nofile() -> u64 {
    // SAFETY: getrlimit/setrlimit read and write an `rlimit` we own.
    unsafe {
        let mut r: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) != 0 {
            return 0;
        }
        r.rlim_cur = r.rlim_max;
        libc::setrlimit(libc::RLIMIT_NOFILE, &r);
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut r);
        r.rlim_cur
    }
}

/// Runs `hydrofeed coordinator`.
pub fn run(args: Args) -> anyhow::Result<()> {
    // Before planning: a wrong TLS file fails at once.
    let tls = args.tls.load(args.listen)?;
    let saved = args.resume.as_deref().map(read_state).transpose()?;
    // A job recovered from its journal reads the table snapshot it was planned at, as a
    // resume does (the journal's state names it).
    let journaled = match &args.journal {
        Some(dir) if hydrofeed_coord::journal::exists(dir) => {
            Some(read_state(&hydrofeed_coord::journal::state_path(dir))?)
        }
        _ => None,
    };
    let (splits, input, filter_counts) = splits_of(&args, journaled.as_ref().or(saved.as_ref()))?;
    let cfg = Config {
        epochs: args.epochs.unwrap_or(1),
        seed: args.seed.unwrap_or(0),
        shuffle: !args.no_shuffle,
        remainder: args.remainder.unwrap_or_default(),
        stall_after_ms: (args.stall_after * 1000.0) as u64,
        dead_after_ms: (args.dead_after * 1000.0) as u64,
        order: match &args.resume {
            Some(_) => None,
            None => args.order.spec(args.remainder.unwrap_or_default())?,
        },
        ..Config::new(args.workers, args.batch_size)
    };
    let m = match &args.journal {
        Some(dir) if hydrofeed_coord::journal::exists(dir) => None,
        _ => Some(match (&args.resume, saved) {
            (Some(p), Some(st)) => {
                resume_machine(&args, splits.clone(), input.as_ref(), cfg.clone(), st)
                    .with_context(|| format!("resuming from {}", p.display()))?
            }
            _ => Machine::new(splits.clone(), cfg.clone())?,
        }),
    };
    // The input before the journal's first state is written: a recovery checks it (and pins
    // a table input's snapshot) as a resume does.
    let m = m.map(|mut m| {
        if let Some(fp) = &input {
            m.set_input(fp.clone());
        }
        m
    });
    let roster = || Roster::new(args.workers, args.ps, args.evaluators);
    let (m, journaled) = match (&args.journal, m) {
        (None, Some(m)) => (m, None),
        (Some(dir), Some(m)) => {
            let j = Journal::create(dir, &m, &roster(), 0)?;
            let roster = roster();
            (
                m,
                Some(Journaled {
                    journal: j,
                    roster,
                    now_ms: 0,
                }),
            )
        }
        (Some(dir), None) => {
            let rec = journal::recover(
                dir,
                |st| {
                    resume_machine(
                        &args,
                        splits.clone(),
                        input.as_ref(),
                        cfg.clone(),
                        st.clone(),
                    )
                    .map_err(|e| hydrofeed_coord::Error::Coordinator(format!("{e:#}")))
                },
                roster(),
            )
            .with_context(|| format!("recovering the job from the journal in {}", dir.display()))?;
            // On stderr: the first line on stdout stays the address.
            eprintln!(
                "hydrofeed coordinator: continuing the job from the journal in {}: epoch {}, {} records replayed{}",
                dir.display(),
                rec.machine.epoch(),
                rec.replayed,
                rec.dropped
                    .as_ref()
                    .map(|d| format!(" (a torn tail dropped: {d})"))
                    .unwrap_or_default()
            );
            let j = Journaled {
                journal: rec.journal,
                roster: rec.roster,
                now_ms: rec.now_ms,
            };
            (rec.machine, Some(j))
        }
        (None, None) => unreachable!("a machine without a journal"),
    };
    let mut m = m;
    if let Some(fp) = input {
        m.set_input(fp);
    }
    let token = match (Token::from_env()?, &args.journal) {
        (Some(t), _) => t,
        (None, None) => {
            let t = Token::generate()?;
            t.write(&args.token_file)?;
            t
        }
        // The job's token lives in the journal: a coordinator started again on it keeps it,
        // so the feeders' calls still pass.
        (None, Some(dir)) => {
            let kept = dir.join("token");
            let t = if kept.is_file() {
                Token::read(&kept)?
            } else {
                let t = Token::generate()?;
                t.write(&kept)?;
                t
            };
            t.write(&args.token_file)?;
            t
        }
    };
    let opts = ServiceOptions {
        ps: args.ps,
        evaluators: args.evaluators,
        reservation_timeout: super::secs("--reservation-timeout", args.reservation_timeout)?,
        heartbeat_interval: Duration::from_secs(1),
        log_path: args.log.clone(),
        token,
        tls,
        filter_counts,
    };
    let (workers, quota, total) = (m.config().workers, m.quota(), m.total_rows());
    let tls_line = opts.tls.as_ref().map(|t| match t.client_ca() {
        Some(ca) => format!("TLS: {}; client certificates required ({ca})", t.cert()),
        None => format!("TLS: {}", t.cert()),
    });
    // Written now, so a file left by an earlier run never looks like this run's state (a
    // coordinator killed before its exit leaves where this run started).
    if let Some(p) = &args.state_out {
        crate::state_file::write_state(p, &m.state())?;
    }
    // One connection per feeder: at 10,000 workers the usual soft limit of 1,024 open files
    // would refuse connections long before the hard limit does.
    let nofile = raise_nofile();
    if nofile < u64::from(workers) + 64 {
        tracing::warn!(
            "open files limited to {nofile} (ulimit -n), below one connection per worker \
             ({workers}): raise the hard limit"
        );
    }
    let svc = service::spawn_journaled(m, journaled, opts, args.listen, args.metrics)?;
    // Ctrl-C and SIGTERM (a preemption: YARN, Kubernetes) end it, the state written at once;
    // caught before the address is printed, so a signal sent as soon as it is seen counts.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let (mut int, mut term) = {
        use tokio::signal::unix::{signal, SignalKind};
        let _rt = rt.enter();
        (
            signal(SignalKind::interrupt())?,
            signal(SignalKind::terminate())?,
        )
    };
    println!("hydrofeed coordinator listening on {}", svc.addr);
    if let Some(t) = &tls_line {
        println!("{t}");
    }
    if std::env::var_os(hydrofeed_coord::token::TOKEN_ENV).is_none() {
        println!("token file: {}", args.token_file.display());
    }
    if let Some(a) = svc.metrics_addr {
        println!("metrics: http://{a}/metrics");
    }
    std::io::stdout().flush()?;
    tracing::info!(
        workers,
        total_rows = total,
        rows_per_worker = quota,
        "epoch 0"
    );

    let interrupted = rt.block_on(async {
        let done = async {
            loop {
                tokio::time::sleep(Duration::from_millis(20)).await;
                let all_told = svc.shared.with_machine(|m| {
                    m.finished() && m.ranks().iter().all(|r| !r.alive || r.stage == Stage::Done)
                });
                if all_told {
                    // Let the last replies leave before the server goes.
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    return;
                }
            }
        };
        tokio::select! {
            () = done => false,
            _ = int.recv() => true,
            _ = term.recv() => true,
        }
    });
    let st = svc.shared.with_machine(Machine::state);
    let k = svc.shared.with_machine(Machine::counters);
    // Before the server's shutdown, which waits for its connections.
    if let Some(p) = &args.state_out {
        crate::state_file::write_state(p, &st)?;
        println!("state written to {}", p.display());
    }
    svc.shutdown()?;
    println!(
        "{}: epoch {}, {} rows acked, {} dropped, {} padded, {} wrapped, {} leases, {} stalls, {} deaths",
        if interrupted { "interrupted" } else { "end of feed" },
        st.epoch,
        k.rows_acked,
        k.rows_dropped,
        k.rows_padded,
        k.rows_wrapped,
        k.assignments,
        k.stalls,
        k.deaths
    );
    if std::env::var_os(hydrofeed_coord::token::TOKEN_ENV).is_none() {
        let _ = std::fs::remove_file(&args.token_file);
    }
    Ok(())
}
