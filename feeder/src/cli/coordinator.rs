//! `hydrofeed coordinator`.

/// Arguments of `hydrofeed coordinator`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `hydrofeed coordinator`.
pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("hydrofeed coordinator is not available in this build yet")
}
