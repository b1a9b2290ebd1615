//! [`AckBook`]: the batches a rank wrote and its trainer did not ack yet, with their lineage;
//! the trainer's acks become cumulative per-lease acks to the coordinator.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use hydrofeed_coord::client::CoordClient;
use hydrofeed_tfbridge::{FeedReport, Piece};

use super::stats::RankStats;
use crate::Result;

/// Batches written but not yet acked, and per-lease acked rows.
pub(super) struct AckBook {
    /// `(last frame seq, the batch's pieces: rows of one lease each)`.
    pub(super) frames: VecDeque<(u64, Vec<Piece>)>,
    pub(super) acked: HashMap<u64, u64>,
    pub(super) client: CoordClient,
    pub(super) rank: u32,
    pub(super) inc: u64,
    pub(super) st: Arc<RankStats>,
}

impl AckBook {
    /// The trainer's figures that came with an ack (refused ones are counted, and warned
    /// about once).
    pub(super) fn report(&mut self, feed: Option<FeedReport>, pid: u32) {
        let mut t = self.st.trainer();
        if let Err(why) = t.ack(Instant::now(), feed) {
            if t.refused == 1 {
                tracing::warn!(
                    rank = self.rank,
                    "the trainer (pid {pid}) reported figures that cannot be ({why}: {feed:?}); \
                     its reports are ignored until they can be"
                );
            }
        }
    }

    pub(super) fn ack(&mut self, seq: u64) -> Result<()> {
        let mut touched: Vec<(u64, u32)> = Vec::new();
        while self.frames.front().is_some_and(|(s, _)| *s <= seq) {
            let (_, pieces) = self.frames.pop_front().unwrap_or_default();
            self.st.batches_acked.fetch_add(1, Ordering::Relaxed);
            for Piece { lease, split, rows } in pieces {
                *self.acked.entry(lease).or_default() += rows;
                self.st.rows_acked.fetch_add(rows, Ordering::Relaxed);
                if !touched.contains(&(lease, split)) {
                    touched.push((lease, split));
                }
            }
        }
        for (lease, split) in touched {
            let n = self.acked[&lease];
            self.client.ack(self.rank, self.inc, lease, split, n)?;
        }
        Ok(())
    }
}
