//! `hydrofeed bench decode`.

/// Arguments of `hydrofeed bench decode`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `hydrofeed bench decode`.
pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("hydrofeed bench decode is not available in this build yet")
}
