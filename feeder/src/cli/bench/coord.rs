//! `hydrofeed bench coord`.

/// Arguments of `hydrofeed bench coord`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `hydrofeed bench coord`.
pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("hydrofeed bench coord is not available in this build yet")
}
