//! The `hydrofeed` command line.
use clap::Parser;

/// hydrofeed: feed training data from HDFS or local disk into TensorFlow, PyTorch and JAX.
#[derive(Parser)]
#[command(name = "hydrofeed", version, about)]
struct Cli {}

fn main() -> anyhow::Result<()> {
    let _cli = Cli::parse();
    Ok(())
}
