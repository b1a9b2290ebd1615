//! `hydrofeed bench ring`.

/// Arguments of `hydrofeed bench ring`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `hydrofeed bench ring`.
pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("hydrofeed bench ring is not available in this build yet")
}
