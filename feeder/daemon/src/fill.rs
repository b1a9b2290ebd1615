//! A split's rows by position, corrupt units padded: [`Filled`] wraps a split reader and
//! yields exactly the rows the plan counts, in order, each at its position. Where the reader
//! skipped rows under `--skip-errors` ([`SplitReader::skipped_rows`]), it yields as many
//! padding rows (copies of readable rows of the same split, else of another split of the
//! plan) and records the range: so a lease or a stream span keeps every position, acks by
//! position stay exact (no later row is counted as a skipped one, none comes twice), and every
//! rank still takes the steps it was given.
//!
//! Broken framing where the reader cannot tell how many rows it lost: when the reader ends
//! before the rows the plan counted and skipped something, the rest of the split is one
//! skipped range (rows lost = rows planned - rows delivered).

use std::collections::VecDeque;

use arrow_array::{RecordBatch, UInt32Array};
use hydrofeed_format::{SkippedRows, SplitReader};

use crate::{Error, Result};

/// Rows of one padding batch at most.
const PAD_BATCH: u64 = 8192;

/// Readable rows to pad with when the split has none: rows of another split of the plan.
pub(crate) type PadSource<'a> = &'a (dyn Fn() -> Result<RecordBatch> + Sync);

/// A split reader whose rows hold their planned positions (see the module docs).
pub(crate) struct Filled<'a> {
    inner: Box<dyn SplitReader>,
    /// Rows the plan counted in the split.
    planned: u64,
    /// Position of the next row handed out.
    pos: u64,
    /// The inner reader's skipped ranges taken so far.
    taken: usize,
    /// Skipped ranges not padded yet, in order.
    gaps: VecDeque<SkippedRows>,
    /// Every range padded, in order.
    padded: Vec<SkippedRows>,
    /// A batch read but not handed out yet.
    ahead: Option<RecordBatch>,
    /// Readable rows of the split, the last ones seen: what padding copies.
    recent: Option<RecordBatch>,
    out: VecDeque<RecordBatch>,
    fallback: Option<PadSource<'a>>,
    ended: bool,
}

impl<'a> Filled<'a> {
    /// Wraps `inner`, which stands at position `pos` (the rows it passed over) of a split of
    /// `planned` rows.
    pub(crate) fn new(
        inner: Box<dyn SplitReader>,
        planned: u64,
        pos: u64,
        fallback: Option<PadSource<'a>>,
    ) -> Self {
        Self {
            inner,
            planned,
            pos,
            taken: 0,
            gaps: VecDeque::new(),
            padded: Vec::new(),
            ahead: None,
            recent: None,
            out: VecDeque::new(),
            fallback,
            ended: false,
        }
    }

    /// The ranges padded so far (positions of the split), in order.
    pub(crate) fn padded(&self) -> &[SkippedRows] {
        &self.padded
    }

    /// What the inner reader skipped so far.
    pub(crate) fn skipped(&self) -> hydrofeed_format::SkipStats {
        self.inner.skipped()
    }

    /// Takes the inner reader's new skipped ranges (those before `pos` were passed over).
    fn take_gaps(&mut self) {
        let all = self.inner.skipped_rows();
        for g in &all[self.taken..] {
            let start = g.start.max(self.pos);
            if start < g.end {
                self.gaps.push_back(SkippedRows { start, ..g.clone() });
            }
        }
        self.taken = all.len();
    }

    /// The next inner batch (`None` at its end), its new skipped ranges taken.
    fn pull(&mut self) -> Result<Option<RecordBatch>> {
        if let Some(b) = self.ahead.take() {
            return Ok(Some(b));
        }
        if self.ended {
            return Ok(None);
        }
        let b = self.inner.next().transpose()?;
        self.take_gaps();
        if b.is_none() {
            self.ended = true;
            let k = self.inner.skipped();
            let lost_tail = self.gaps.back().map_or(self.pos, |g| g.end.max(self.pos));
            if lost_tail < self.planned && (k.records > 0 || k.blocks > 0) {
                // The reader lost rows it cannot place: the rest of the split.
                self.gaps.push_back(SkippedRows {
                    start: lost_tail,
                    end: self.planned,
                    reason: format!(
                        "the split ended {} rows short of the {} rows planned after corrupt \
                         data was skipped (rows lost = rows planned - rows delivered)",
                        self.planned - lost_tail,
                        self.planned
                    ),
                });
            }
        }
        Ok(b)
    }

    /// Rows to copy for padding: the split's last readable rows, else its next ones, else the
    /// fallback's.
    fn source(&mut self) -> Result<RecordBatch> {
        if let Some(r) = &self.recent {
            return Ok(r.clone());
        }
        while self.ahead.is_none() {
            match self.pull()? {
                Some(b) if b.num_rows() > 0 => self.ahead = Some(b),
                Some(_) => continue,
                None => break,
            }
        }
        if let Some(b) = &self.ahead {
            return Ok(b.clone());
        }
        match self.fallback {
            Some(f) => f(),
            None => Err(Error::Internal(
                "no readable row to pad the skipped rows with".into(),
            )),
        }
    }

    /// Pads the gap that starts at `pos`.
    fn pad(&mut self) -> Result<()> {
        let Some(g) = self.gaps.pop_front() else {
            return Ok(());
        };
        let src = self.source()?;
        let n = src.num_rows() as u64;
        if n == 0 {
            return Err(Error::Internal(
                "no readable row to pad the skipped rows with".into(),
            ));
        }
        let mut at = g.start;
        while at < g.end {
            let k = (g.end - at).min(PAD_BATCH);
            let idx = UInt32Array::from_iter_values((0..k).map(|i| ((at + i) % n) as u32));
            let b = arrow_select::take::take_record_batch(&src, &idx)
                .map_err(|e| Error::external("copying padding rows", e))?;
            self.out.push_back(b);
            at += k;
        }
        self.pos = g.end;
        self.padded.push(g);
        Ok(())
    }

    fn step(&mut self) -> Result<bool> {
        if self.gaps.front().is_some_and(|g| g.start <= self.pos) {
            self.pad()?;
            return Ok(true);
        }
        let Some(b) = self.pull()? else {
            if !self.gaps.is_empty() {
                self.pad()?;
                return Ok(true);
            }
            return Ok(false);
        };
        // The batch's rows fill the positions from `pos` on, around the gaps before them.
        let mut b = b;
        while b.num_rows() > 0 {
            let room = self
                .gaps
                .front()
                .map_or(u64::MAX, |g| g.start.saturating_sub(self.pos));
            if room == 0 {
                self.ahead = Some(b);
                return Ok(true);
            }
            let take = (b.num_rows() as u64).min(room) as usize;
            let head = b.slice(0, take);
            self.recent = Some(head.slice(
                head.num_rows().saturating_sub(1024),
                head.num_rows().min(1024),
            ));
            self.out.push_back(head);
            self.pos += take as u64;
            b = b.slice(take, b.num_rows() - take);
        }
        Ok(true)
    }
}

impl Iterator for Filled<'_> {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(b) = self.out.pop_front() {
                return Some(Ok(b));
            }
            match self.step() {
                Ok(true) => continue,
                Ok(false) => return None,
                Err(e) => {
                    self.ended = true;
                    self.gaps.clear();
                    self.ahead = None;
                    return Some(Err(e));
                }
            }
        }
    }
}

/// The part of `padded` inside positions `[from, to)` of split `split`, as skipped ranges.
pub(crate) fn within(padded: &[SkippedRows], from: u64, to: u64) -> Vec<SkippedRows> {
    padded
        .iter()
        .filter_map(|g| {
            let (a, b) = (g.start.max(from), g.end.min(to));
            (a < b).then(|| SkippedRows {
                start: a,
                end: b,
                reason: g.reason.clone(),
            })
        })
        .collect()
}

/// The first readable rows of the plan's splits after `split` (cyclically, `split` last):
/// what a split with no readable row pads with.
pub(crate) fn first_readable(
    storage: &std::sync::Arc<dyn hydrofeed_storage::Storage>,
    plan: &hydrofeed_format::Plan,
    read: &hydrofeed_format::ReadOptions,
    split: u32,
) -> Result<RecordBatch> {
    let n = plan.splits.len();
    for i in 1..=n {
        let s = &plan.splits[(split as usize + i) % n];
        if s.rows == 0 {
            continue;
        }
        let r = hydrofeed_format::open_split(storage, plan, s, read)?;
        for b in r {
            let b = b?;
            if b.num_rows() > 0 {
                return Ok(b);
            }
        }
    }
    Err(Error::Data {
        loc: hydrofeed_error::Location {
            path: plan.input.clone(),
            ..Default::default()
        },
        format: plan.format.name(),
        detail: "no split has a readable row to pad the skipped rows with".into(),
    })
}
