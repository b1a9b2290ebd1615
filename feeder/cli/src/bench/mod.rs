//! `hydrofeed bench`: benchmarks that report ratios against baselines measured in the same run.

use clap::Subcommand;

pub mod coord;
pub mod decode;
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
    /// Mixing of the fixed order on data stored sorted, beside tf.data and a random
    /// permutation, and the shuffle buffer's cost in read throughput.
    Order(order::Args),
}

/// Runs `hydrofeed bench`.
pub fn run(args: Args) -> anyhow::Result<()> {
    match args.which {
        Which::Ring(a) => ring::run(a),
        Which::Coord(a) => coord::run(a),
        Which::Decode(a) => decode::run(a),
        Which::Order(a) => order::run(a),
    }
}
