//! The `hydrofeed` command line: one module per subcommand, each with `Args` and `run`.

use clap::{Parser, Subcommand};

pub mod bench;
pub mod coordinator;
pub mod feeder;
pub mod gen;
pub mod inspect;
pub mod launch;
pub mod serve;

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

/// Runs a parsed command line.
pub fn run(cli: Cli) -> anyhow::Result<()> {
    if let Some(s) = cli.hdfs_timeout {
        anyhow::ensure!(
            s.is_finite() && s >= 0.0,
            "--hdfs-timeout {s}: expected seconds >= 0"
        );
        // Read by the HDFS storage of this process and of its children (launch's feeder);
        // set before any thread that reads the environment is started.
        std::env::set_var(crate::storage::hdfs::CONNECT_TIMEOUT_ENV, s.to_string());
    }
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
