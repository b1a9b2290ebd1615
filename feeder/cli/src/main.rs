//! The `hydrofeed` command line: one module per subcommand, each with `Args` and `run`; the
//! work itself is in the role crates (`hydrofeed-format`, `hydrofeed-coord`, `hydrofeed-feeder`).

use clap::{Parser, Subcommand};
use hydrofeed_coord::input::{resume_over, FileEntry, InputFingerprint, Resume};
use hydrofeed_coord::{SplitInfo, State};
use hydrofeed_format::Plan;

pub mod bench;
pub mod coordinator;
pub mod feeder;
pub mod gen;
pub mod inspect;
pub mod launch;
pub mod order;
pub mod read_args;
pub mod serve;
pub mod state_file;
pub mod tls;

/// A plain progress line every few seconds for long commands whose stderr is not a terminal
/// (a log file, CI): they would otherwise be silent for minutes.
pub mod progress {
    use std::io::IsTerminal;
    use std::sync::Mutex;
    use std::time::{Duration, Instant};

    static STAGE: Mutex<String> = Mutex::new(String::new());

    /// What the command is doing now (shown in the next progress line).
    pub fn stage(s: impl Into<String>) {
        if let Ok(mut g) = STAGE.lock() {
            *g = s.into();
        }
    }

    /// Starts the progress line for `cmd` (nothing when stderr is a terminal).
    pub fn ticker(cmd: &'static str) {
        if std::io::stderr().is_terminal() {
            return;
        }
        let t0 = Instant::now();
        let _ = std::thread::Builder::new()
            .name("hf-progress".into())
            .spawn(move || loop {
                std::thread::sleep(Duration::from_secs(5));
                let s = STAGE.lock().map(|g| g.clone()).unwrap_or_default();
                eprintln!(
                    "hydrofeed {cmd}: {:.0} s{}{s}",
                    t0.elapsed().as_secs_f64(),
                    if s.is_empty() { "" } else { ": " }
                );
            });
    }
}

/// hydrofeed: feed training data (Parquet, ORC, Avro, TFRecord) from HDFS or local disk into
/// TensorFlow, PyTorch and JAX trainers through zero-copy shared-memory rings.
///
/// Start with `hydrofeed launch --workers N --input DATA -- python train.py` (coordinator,
/// feeder and N trainers on this machine); `hydrofeed inspect DATA` shows what would be read;
/// `hydrofeed bench` measures.
#[derive(Debug, Parser)]
#[command(name = "hydrofeed", version, propagate_version = true)]
pub struct Cli {
    /// Seconds to wait for an unreachable HDFS NameNode (connection refused, unknown host)
    /// before failing [default: one attempt, or the Hadoop configuration's
    /// `ipc.client.connect.max.retries` x `ipc.client.connect.retry.interval`].
    #[arg(long, global = true, value_name = "SECONDS")]
    pub hdfs_timeout: Option<f64>,
    /// Kerberos principal for a secure HDFS (e.g. `alice@EXAMPLE.COM`): with `--keytab`, the
    /// login comes from that keytab, else from the ticket cache (`kinit`). Default: the ticket
    /// cache's principal, or the delegation tokens in `HADOOP_TOKEN_FILE_LOCATION`. Passed to
    /// the feeders of `launch` (`HYDROFEED_KERBEROS_PRINCIPAL`).
    #[arg(long, global = true, value_name = "PRINCIPAL")]
    pub principal: Option<String>,
    /// Keytab file to log in from (needs `--principal`; `HYDROFEED_KERBEROS_KEYTAB`).
    #[arg(long, global = true, value_name = "FILE")]
    pub keytab: Option<std::path::PathBuf>,
    /// The subcommand.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Throughput and latency benchmarks (ring, decode, coordinator).
    Bench(bench::Args),
    /// Print schema, files, splits and row counts of an input.
    Inspect(inspect::Args),
    /// Write a synthetic MNIST-shaped dataset (784 float32 `image` + int64 `label`).
    Gen(gen::Args),
    /// Feed one trainer from an input through a ring, without a coordinator.
    Serve(serve::Args),
    /// Run a coordinator for a job.
    Coordinator(coordinator::Args),
    /// Run a feeder daemon that takes splits from a coordinator.
    Feeder(feeder::Args),
    /// Run coordinator, feeder and N trainers on this machine (the embedded default).
    Launch(launch::Args),
}

/// An error that ends the process with a given exit status (`main` prints it as any error).
#[derive(Debug)]
pub struct Exit {
    /// Exit status.
    pub code: i32,
    /// What went wrong (or what stopped the command).
    pub message: String,
}

impl Exit {
    /// An error that exits with `code`.
    pub fn new(code: i32, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }
}

impl std::fmt::Display for Exit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Exit {}

/// The exit status for an error returned by [`run`]: an [`Exit`]'s code, else 1.
pub fn exit_code(e: &anyhow::Error) -> i32 {
    e.downcast_ref::<Exit>().map_or(1, |x| x.code)
}

/// Checks `--principal` / `--keytab` and hands them to the HDFS storage of this process and
/// its children through the environment (set before any thread reads it).
fn kerberos_login(principal: Option<&str>, keytab: Option<&std::path::Path>) -> anyhow::Result<()> {
    use hydrofeed_storage::hdfs::{KEYTAB_ENV, PRINCIPAL_ENV};
    if let Some(k) = keytab {
        anyhow::ensure!(
            principal.is_some(),
            "--keytab {} needs --principal: the principal whose key it holds",
            k.display()
        );
        let abs = std::fs::canonicalize(k)
            .and_then(|p| std::fs::File::open(&p).map(|_| p))
            .map_err(|e| anyhow::anyhow!("--keytab {}: cannot read it: {e}", k.display()))?;
        std::env::set_var(KEYTAB_ENV, abs);
    }
    if let Some(p) = principal {
        anyhow::ensure!(!p.trim().is_empty(), "--principal: empty");
        std::env::set_var(PRINCIPAL_ENV, p);
    }
    Ok(())
}

/// Runs a parsed command line.
pub fn run(cli: Cli) -> anyhow::Result<()> {
    if let Some(s) = cli.hdfs_timeout {
        anyhow::ensure!(
            s.is_finite() && s >= 0.0,
            "--hdfs-timeout {s}: expected seconds >= 0"
        );
        // Read by the HDFS storage of this process and of its children (launch's feeder);
        // set before any thread that reads the environment is started.
        std::env::set_var(hydrofeed_storage::hdfs::CONNECT_TIMEOUT_ENV, s.to_string());
    }
    kerberos_login(cli.principal.as_deref(), cli.keytab.as_deref())?;
    match cli.command {
        Command::Bench(a) => {
            progress::ticker("bench");
            bench::run(a)
        }
        Command::Inspect(a) => inspect::run(a),
        Command::Gen(a) => gen::run(a),
        Command::Serve(a) => serve::run(a),
        Command::Coordinator(a) => coordinator::run(a),
        Command::Feeder(a) => feeder::run(a),
        Command::Launch(a) => launch::run(a),
    }
}

/// Seconds given on the command line as a `Duration`: `inf` (or more than a `Duration` holds)
/// waits for ever; a negative or NaN value is an error naming the flag.
pub(crate) fn secs(flag: &str, v: f64) -> anyhow::Result<std::time::Duration> {
    anyhow::ensure!(
        v >= 0.0,
        "{flag} {v}: seconds must be 0 or more (inf: no limit)"
    );
    Ok(std::time::Duration::try_from_secs_f64(v).unwrap_or(std::time::Duration::MAX))
}

/// The fingerprint of a plan's input (files, sizes, modification times, rows per split): the
/// states a job writes carry it, and a resume checks it.
pub(crate) fn input_fingerprint(plan: &Plan) -> InputFingerprint {
    type Splits = (Vec<u64>, Vec<Vec<u64>>);
    let mut rows: std::collections::HashMap<&str, Splits> = std::collections::HashMap::new();
    for s in &plan.splits {
        let e = rows.entry(s.path.as_str()).or_default();
        e.0.push(s.rows);
        e.1.push(s.units.clone());
    }
    let files = plan
        .files
        .iter()
        .map(|f| {
            let (split_rows, mut split_units) = rows.remove(f.path.as_str()).unwrap_or_default();
            if split_units.iter().all(Vec::is_empty) {
                split_units.clear();
            }
            FileEntry {
                path: f.path.clone(),
                size: f.len,
                modified_ms: f.modified_ms,
                split_rows,
                split_units,
            }
        })
        .collect();
    InputFingerprint::of_files(&plan.input, files)
        .with_table(
            plan.table
                .as_ref()
                .map(|t| hydrofeed_coord::input::TableRef {
                    kind: t.kind.to_string(),
                    id: t.id.clone(),
                    version: t.version,
                }),
        )
        .with_filter(plan.filter.as_ref().map(|f| f.bound.text().to_string()))
}

/// Under a filter, what the coordinator hands its feeders (the filter and each split's
/// passing rows per unit), its cost printed on standard error prefixed with `who`.
pub(crate) fn filter_counts(
    plan: &Plan,
    who: &str,
) -> Option<std::sync::Arc<(String, Vec<Vec<u64>>)>> {
    let f = plan.filter.as_ref()?;
    eprintln!("{who}: filter {:?}: {}", f.bound.text(), f.cost.line());
    Some(std::sync::Arc::new((
        f.bound.text().to_string(),
        plan.filter_counts()?,
    )))
}

/// The snapshot to plan a table input at when resuming `saved`: the state's, which a
/// `--snapshot` given too must name. Says so on standard error, prefixed with `who`.
pub(crate) fn pin_snapshot(
    read: &mut hydrofeed_format::ReadOptions,
    saved: Option<&hydrofeed_coord::State>,
    who: &str,
) -> anyhow::Result<()> {
    use hydrofeed_format::delta::SnapshotSpec;
    let Some(t) = saved.and_then(|s| s.input.as_ref()).and_then(|i| i.table()) else {
        return Ok(());
    };
    match &read.snapshot {
        None => read.snapshot = Some(SnapshotSpec::Version(t.version)),
        Some(SnapshotSpec::Version(v)) if *v == t.version => {}
        Some(other) => anyhow::bail!(
            "--snapshot {other:?}: the resumed state read version {} of the {} table {}; a \
             resume reads the snapshot it was made from (leave --snapshot out)",
            t.version,
            t.kind,
            t.id
        ),
    }
    eprintln!(
        "{who}: resuming the {} table {} at its saved version {}",
        t.kind, t.id, t.version
    );
    Ok(())
}

/// The state to resume `saved` with over the input of fingerprint `now` (`None`: splits given
/// by hand, nothing to check): `saved` itself when the input is the same, else a refusal
/// naming the first file that differs, or with `allow_changed` the state carried over to the
/// new plan. Notes go to standard error, prefixed with `who`.
pub(crate) fn resume_state(
    saved: State,
    now: Option<&InputFingerprint>,
    allow_changed: bool,
    who: &str,
) -> anyhow::Result<State> {
    let Some(now) = now else {
        return Ok(saved);
    };
    match resume_over(&saved, now, allow_changed)? {
        Resume::AsSaved { note } => {
            if let Some(n) = note {
                eprintln!("{who}: {n}");
            }
            Ok(saved)
        }
        Resume::Replanned { state, note } => {
            eprintln!("{who}: {note}");
            Ok(*state)
        }
    }
}

/// The splits of a plan as the coordinator takes them (no locality hints: `inspect` and the
/// feeders' block locations add them where there are any).
pub(crate) fn split_infos(plan: &Plan) -> Vec<SplitInfo> {
    plan.splits
        .iter()
        .map(|s| SplitInfo::new(s.id, s.rows))
        .collect()
}

/// Keeps freed memory in the process instead of returning it to the kernel at once.
///
/// Decoded batches are tens of MiB each (a 8192-row batch of 784 float32 pixels is 25.7 MB), so
/// glibc's defaults serve every one of them from a fresh `mmap` and unmap it on free: every
/// batch page-faults its memory in again, and page faults on several decode threads serialise
/// on the address-space lock. Measured on `hydrofeed bench decode` (docs/arch/readers.md,
/// "Performance"): 72k page faults per Parquet pass instead of about 2k, and ORC rows/s up
/// 1.2x single-thread and 3x on all cores once the memory is kept. The process's footprint
/// stays flat (it is bounded by the feeder's memory budget), it just stops churning.
#[cfg(target_env = "gnu")]
fn retain_freed_memory() {
    // SAFETY: mallopt only sets allocator parameters; it is called once, before any thread
    // is started, with valid parameter numbers and values.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 1 << 30);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 1 << 30);
        libc::mallopt(libc::M_TOP_PAD, 256 << 20);
    }
}

#[cfg(not(target_env = "gnu"))]
fn retain_freed_memory() {}

fn main() {
    if let Err(e) = hydrofeed_error::check_cpu() {
        eprintln!("hydrofeed: {e}");
        std::process::exit(2);
    }
    retain_freed_memory();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("HYDROFEED_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        // Colour only for a terminal, and never with NO_COLOR set (https://no-color.org).
        .with_ansi(
            std::io::IsTerminal::is_terminal(&std::io::stderr())
                && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
        )
        .init();
    if let Err(e) = run(Cli::parse()) {
        // The backtrace (RUST_BACKTRACE=1) first and the error, causes included, on the last
        // line: `launch` and the Spark supervisor report a failed feeder by its last lines.
        let bt = e.backtrace();
        if bt.status() == std::backtrace::BacktraceStatus::Captured {
            eprintln!("Stack backtrace:\n{bt}");
        }
        eprintln!("Error: {e:#}");
        std::process::exit(exit_code(&e));
    }
}
