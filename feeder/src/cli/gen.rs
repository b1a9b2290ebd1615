//! `hydrofeed gen`.

/// Arguments of `hydrofeed gen`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `hydrofeed gen`.
pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("hydrofeed gen is not available in this build yet")
}
