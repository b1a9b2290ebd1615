//! `hydrofeed bench`: benchmarks that report ratios against baselines measured in the same run.

use clap::Subcommand;

pub mod ceiling;
pub mod coord;
pub mod coord_load;
pub mod decode;
pub mod filter;
pub mod order;
pub mod ring;

/// Arguments of `hydrofeed bench`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Which benchmark.
    #[command(subcommand)]
    pub which: Which,
}

/// The benchmarks.
#[derive(Debug, Subcommand)]
pub enum Which {
    /// Ring throughput against memcpy, and hand-off latency, across two processes.
    Ring(ring::Args),
    /// Decode throughput of the format readers against pyarrow, fastavro and tf.data.
    Decode(decode::Args),
    /// Coordinator simulation: many feeders, many splits, heartbeats.
    Coord(coord::Args),
    /// The load generator of `bench coord`'s open-loop gRPC run (started by it).
    #[command(hide = true)]
    CoordLoad(coord_load::LoadArgs),
    /// Mixing of the fixed order on data stored sorted, beside tf.data and a random
    /// permutation, and the shuffle buffer's cost in read throughput.
    Order(order::Args),
    /// Bytes a filtered read fetches from storage beside the same read without the filter,
    /// on a Hive-partitioned table.
    Filter(filter::Args),
    /// GPU staging: H2D GB/s from the registered ring, a pinned buffer and pageable memory,
    /// and rows/s into CUDA tensors against DataLoader(pin_memory=True) (runs
    /// `python -m hydrofeed.bench gpu`; without a CUDA device it prints `{"skipped": ...}`).
    Gpu(PythonArgs),
    /// JPEGs decoded into 224x224 uint8 batches, per core and on all cores: the feeder's
    /// decode against tf.data, a torch DataLoader over Pillow and DALI's CPU pipeline; with
    /// `--gpu`, into CUDA tensors, the trainer's nvJPEG path (`gpu` in the image spec)
    /// against the feeder's decode and torchvision's nvJPEG (runs `python -m hydrofeed.bench
    /// images`).
    Images(PythonArgs),
}

/// Arguments of a benchmark written in Python (`bench gpu`, `bench images`): passed to
/// `python -m hydrofeed.bench <name>`.
#[derive(Debug, clap::Args)]
pub struct PythonArgs {
    /// Python with hydrofeed and torch (default: `.venv/bin/python`, else `python3`).
    #[arg(long, env = "HYDROFEED_PYTHON")]
    pub python: Option<std::path::PathBuf>,
    /// Options of the Python benchmark (`--help` lists them; e.g. `--json`, `--repeat N`).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub rest: Vec<String>,
}

fn run_python(name: &str, a: PythonArgs) -> anyhow::Result<()> {
    use anyhow::Context;
    let python = a.python.unwrap_or_else(|| {
        let venv = std::path::PathBuf::from(".venv/bin/python");
        if venv.exists() {
            venv
        } else {
            "python3".into()
        }
    });
    let exe = std::env::current_exe().context("locating the hydrofeed binary")?;
    let status = std::process::Command::new(&python)
        .args(["-m", "hydrofeed.bench", name])
        .args(&a.rest)
        .env("HYDROFEED_BIN", exe)
        .status()
        .with_context(|| format!("running {} -m hydrofeed.bench {name}", python.display()))?;
    anyhow::ensure!(
        status.success(),
        "python -m hydrofeed.bench {name}: {status}"
    );
    Ok(())
}

/// Runs `hydrofeed bench`.
pub fn run(args: Args) -> anyhow::Result<()> {
    match args.which {
        Which::Ring(a) => ring::run(a),
        Which::Coord(a) => coord::run(a),
        Which::CoordLoad(a) => coord_load::run_load(a),
        Which::Decode(a) => decode::run(a),
        Which::Order(a) => order::run(a),
        Which::Filter(a) => filter::run(a),
        Which::Gpu(a) => run_python("gpu", a),
        Which::Images(a) => run_python("images", a),
    }
}
