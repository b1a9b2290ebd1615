//! `hydrofeed bench`.

/// Arguments of `hydrofeed bench`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `hydrofeed bench`.
pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("hydrofeed bench is not available in this build yet")
}
