//! `hydrofeed feeder`.

/// Arguments of `hydrofeed feeder`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `hydrofeed feeder`.
pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("hydrofeed feeder is not available in this build yet")
}
