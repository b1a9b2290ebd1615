//! `hydrofeed launch`.

/// Arguments of `hydrofeed launch`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `hydrofeed launch`.
pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("hydrofeed launch is not available in this build yet")
}
