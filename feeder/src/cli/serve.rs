//! `hydrofeed serve`.

/// Arguments of `hydrofeed serve`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `hydrofeed serve`.
pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("hydrofeed serve is not available in this build yet")
}
