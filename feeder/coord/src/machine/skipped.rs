//! Rows skipped as corrupt under `--skip-errors`: a feeder reports the positions a reader
//! could not decode ([`Machine::skipped`]); it delivered padding rows of the same epoch at
//! those positions, which are acked like any other, so no later row moves and every rank
//! still takes its steps. The machine keeps the ranges (merged: a range read again after a
//! death is not counted twice), counts them as padded, and the state carries them.

use super::{Machine, SkippedRange};
use crate::ledger::add_skipped;
use crate::{Error, Result};

impl Machine {
    /// Records that `rank` skipped rows `[start, end)` of split `split` (file `path`) of data
    /// epoch `data_epoch` as corrupt, and why; they were delivered as padding rows.
    pub fn skipped(
        &mut self,
        rank: u32,
        incarnation: u64,
        r: SkippedRange,
        now_ms: u64,
    ) -> Result<()> {
        self.check_live(rank, incarnation)?;
        self.touch(rank, now_ms);
        let rows = self
            .split_rows
            .get(r.split as usize)
            .copied()
            .ok_or_else(|| {
                Error::Coordinator(format!(
                    "rank {rank}: skipped rows of split {}, but the plan has {}",
                    r.split,
                    self.split_rows.len()
                ))
            })?;
        if r.start > r.end || r.end > rows {
            return Err(Error::Coordinator(format!(
                "rank {rank}: skipped rows [{}, {}) of split {}, which has {rows}",
                r.start, r.end, r.split
            )));
        }
        let new = add_skipped(&mut self.skipped, r);
        self.counters.rows_skipped += new;
        self.counters.rows_padded += new;
        Ok(())
    }

    /// The rows skipped as corrupt so far, by data epoch, split and row.
    pub fn skipped_ranges(&self) -> &[SkippedRange] {
        &self.skipped
    }
}
