//! The order flags of `launch` and `coordinator` (docs/arch/order.md).

use hydrofeed_coord::{OrderSpec, Remainder, State};

/// Which order the coordinator deals.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OrderMode {
    /// Every rank's rows, and their order, follow from (input, seed, epoch, workers, batch size,
    /// shuffle buffer, cycle length): the same on every run, resumable to the row.
    Fixed,
    /// Row ranges go to whichever rank asks first (fast ranks take more; HDFS locality
    /// first): not the same from run to run, and no shuffle buffer.
    Dynamic,
}

/// How an epoch's rows are ordered.
#[derive(Debug, Clone, clap::Args)]
pub struct OrderArgs {
    /// The order [default: fixed; dynamic with --remainder pad or wrap].
    #[arg(long, value_enum)]
    pub order: Option<OrderMode>,
    /// Rows each rank mixes at once: its rows come in windows of this many, each window from
    /// every lane and in a seeded permutation (memory: two windows per rank). 0: no
    /// shuffling within files [default: 0, or the resumed state's].
    #[arg(long)]
    pub shuffle_buffer: Option<u64>,
    /// Lanes: sequential reads of different parts of a rank's share that every window mixes
    /// (read in parallel) [default: 8, or the resumed state's].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub cycle_length: Option<u32>,
    /// The order function's version: 2 cuts and starts lanes where a row group or stripe
    /// starts, so every byte is read once an epoch, but a lane of one row group keeps its
    /// storage order across the epoch; 1 cuts lanes of equal rows anywhere (streams that
    /// follow the storage order less on inputs of few row groups, each row group at a lane
    /// boundary read again) [default: 2, or the resumed state's].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=2))]
    pub order_version: Option<u32>,
}

impl OrderArgs {
    /// The coordinator's order: `Some` for the fixed order.
    pub fn spec(&self, remainder: Remainder) -> anyhow::Result<Option<OrderSpec>> {
        let mode = self.order.unwrap_or(if remainder == Remainder::Drop {
            OrderMode::Fixed
        } else {
            OrderMode::Dynamic
        });
        match mode {
            OrderMode::Fixed => {
                anyhow::ensure!(
                    remainder == Remainder::Drop,
                    "--order fixed deals equal shares and drops the rest: --remainder {} needs \
                     --order dynamic",
                    if remainder == Remainder::Pad {
                        "pad"
                    } else {
                        "wrap"
                    }
                );
                let d = OrderSpec::default();
                Ok(Some(OrderSpec {
                    version: self.order_version.unwrap_or(d.version),
                    ..OrderSpec::new(
                        self.shuffle_buffer.unwrap_or(d.buffer),
                        self.cycle_length.unwrap_or(d.cycle),
                    )
                }))
            }
            OrderMode::Dynamic => {
                anyhow::ensure!(
                    self.shuffle_buffer.unwrap_or(0) == 0
                        && self.cycle_length.is_none()
                        && self.order_version.is_none(),
                    "--shuffle-buffer, --cycle-length and --order-version belong to --order fixed"
                );
                Ok(None)
            }
        }
    }

    /// Refuses flags that contradict a resumed state's order (the state's order rules).
    pub fn check_resume(&self, st: &State) -> anyhow::Result<()> {
        let saved = st.order.as_ref().map(|o| o.spec);
        match (self.order, saved) {
            (Some(OrderMode::Fixed), None) => {
                anyhow::bail!("--order fixed differs from the resumed state, which is dynamic")
            }
            (Some(OrderMode::Dynamic), Some(_)) => {
                anyhow::bail!("--order dynamic differs from the resumed state, which is fixed")
            }
            _ => {}
        }
        let spec = saved.unwrap_or(OrderSpec::new(0, 0));
        if let Some(b) = self.shuffle_buffer {
            anyhow::ensure!(
                b == spec.buffer,
                "--shuffle-buffer {b} differs from the resumed state's {}",
                spec.buffer
            );
        }
        if let Some(v) = self.order_version {
            anyhow::ensure!(
                v == spec.version,
                "--order-version {v} differs from the resumed state's {}",
                spec.version
            );
        }
        if let Some(c) = self.cycle_length {
            anyhow::ensure!(
                c == spec.cycle,
                "--cycle-length {c} differs from the resumed state's {}",
                spec.cycle
            );
        }
        Ok(())
    }
}
