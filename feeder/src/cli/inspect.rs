//! `hydrofeed inspect`.

/// Arguments of `hydrofeed inspect`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `hydrofeed inspect`.
pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("hydrofeed inspect is not available in this build yet")
}
