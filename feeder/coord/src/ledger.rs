//! Which rows of one data epoch were acked: a bitmap of fully acked splits plus sorted,
//! disjoint row intervals for splits acked in part. Adding an interval that overlaps what is
//! already there is refused: that would be a row delivered twice.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

/// The acked rows of one data epoch.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct Ledger {
    /// One bit per split id: fully acked.
    done: Vec<u64>,
    /// Splits acked in part: sorted, disjoint, non-adjacent `[start, end)` row intervals.
    partial: HashMap<u32, Vec<(u64, u64)>>,
    /// Rows acked in all.
    pub(crate) acked_rows: u64,
}

/// Serialised form of a `Ledger` (part of [`super::State`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LedgerState {
    /// The data epoch whose rows these are.
    pub data_epoch: u32,
    /// Fully acked split ids as sorted runs `[first, end)`.
    pub done: Vec<[u32; 2]>,
    /// Splits acked in part, by split id, with their acked row intervals `[start, end)`.
    pub partial: Vec<PartialSplit>,
}

/// A split acked in part.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartialSplit {
    /// Split id.
    pub split: u32,
    /// Acked row intervals `[start, end)` within the split, sorted and disjoint.
    pub acked: Vec<[u64; 2]>,
}

/// Rows of a split that a reader could not decode and skipped under `--skip-errors`: their
/// positions were delivered as padding rows of the same epoch (acked like any position, so no
/// later row moves), and are named here, in the state and in the run's summary.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkippedRange {
    /// The data epoch that read them.
    pub data_epoch: u32,
    /// The file.
    pub path: String,
    /// Split id.
    pub split: u32,
    /// Rows `[start, end)` of the split.
    pub start: u64,
    /// One past the last row.
    pub end: u64,
    /// What was wrong (the unit and the decoder's words).
    pub reason: String,
}

/// Adds `r` to `list` (sorted by data epoch, split and start; ranges of one split and epoch
/// disjoint): a range reported again (a lease read twice after a death, a range that two
/// spans of a stream report in parts) is merged with what is there. Returns the rows new to
/// the list.
pub(crate) fn add_skipped(list: &mut Vec<SkippedRange>, r: SkippedRange) -> u64 {
    if r.start >= r.end {
        return 0;
    }
    let key = |x: &SkippedRange| (x.data_epoch, x.split);
    let same: Vec<usize> = (0..list.len())
        .filter(|&i| key(&list[i]) == key(&r) && list[i].start <= r.end && r.start <= list[i].end)
        .collect();
    let (mut lo, mut hi) = (r.start, r.end);
    let mut before = 0;
    let mut reason = r.reason.clone();
    for &i in &same {
        lo = lo.min(list[i].start);
        hi = hi.max(list[i].end);
        before += list[i].end - list[i].start;
        if i == same[0] {
            reason = list[i].reason.clone();
        }
    }
    for &i in same.iter().rev() {
        list.remove(i);
    }
    let merged = SkippedRange {
        start: lo,
        end: hi,
        reason,
        ..r
    };
    let at = list.partition_point(|x| (key(x), x.start) < (key(&merged), merged.start));
    list.insert(at, merged);
    (hi - lo) - before
}

impl Ledger {
    pub(crate) fn new(num_splits: usize) -> Self {
        Self {
            done: vec![0; num_splits.div_ceil(64)],
            partial: HashMap::new(),
            acked_rows: 0,
        }
    }

    pub(crate) fn is_done(&self, split: u32) -> bool {
        let i = split as usize;
        self.done[i / 64] & (1 << (i % 64)) != 0
    }

    fn set_done(&mut self, split: u32) {
        let i = split as usize;
        self.done[i / 64] |= 1 << (i % 64);
    }

    /// Records rows `[start, end)` of `split` (which has `split_rows` rows) as acked.
    /// Errs (with the overlapping interval) if any of them was acked already.
    pub(crate) fn add(
        &mut self,
        split: u32,
        start: u64,
        end: u64,
        split_rows: u64,
    ) -> Result<(), (u64, u64)> {
        if start >= end {
            return Ok(());
        }
        if self.is_done(split) {
            return Err((0, split_rows));
        }
        let iv = self.partial.entry(split).or_default();
        // First interval that ends at or after `start`; all before it end strictly before.
        let pos = iv.partition_point(|&(_, e)| e < start);
        let touches_left = iv.get(pos).is_some_and(|&(_, e)| e == start);
        let next = if touches_left { pos + 1 } else { pos };
        if let Some(&(s, e)) = iv.get(next) {
            if s < end {
                return Err((s.max(start), e.min(end)));
            }
        }
        let lo = pos;
        let mut hi = pos;
        let (mut ns, mut ne) = (start, end);
        if touches_left {
            ns = iv[pos].0;
            hi += 1;
        }
        if iv.get(hi).is_some_and(|&(s, _)| s == end) {
            ne = iv[hi].1;
            hi += 1;
        }
        iv.splice(lo..hi, [(ns, ne)]);
        self.acked_rows += end - start;
        if iv.len() == 1 && iv[0] == (0, split_rows) {
            self.partial.remove(&split);
            self.set_done(split);
        }
        Ok(())
    }

    /// The rows of `split` not acked yet, as `[start, end)` intervals in row order.
    pub(crate) fn gaps(&self, split: u32, split_rows: u64) -> Vec<(u64, u64)> {
        if self.is_done(split) {
            return Vec::new();
        }
        let Some(iv) = self.partial.get(&split) else {
            return if split_rows > 0 {
                vec![(0, split_rows)]
            } else {
                Vec::new()
            };
        };
        let mut out = Vec::new();
        let mut at = 0;
        for &(s, e) in iv {
            if s > at {
                out.push((at, s));
            }
            at = e;
        }
        if at < split_rows {
            out.push((at, split_rows));
        }
        out
    }

    pub(crate) fn to_state(&self, data_epoch: u32) -> LedgerState {
        let mut done = Vec::new();
        let n = self.done.len() * 64;
        let mut i = 0;
        while i < n {
            if self.done[i / 64] == 0 && i % 64 == 0 {
                i += 64;
                continue;
            }
            if self.done[i / 64] & (1 << (i % 64)) != 0 {
                let s = i;
                while i < n && self.done[i / 64] & (1 << (i % 64)) != 0 {
                    i += 1;
                }
                done.push([s as u32, i as u32]);
            } else {
                i += 1;
            }
        }
        let mut partial: Vec<PartialSplit> = self
            .partial
            .iter()
            .filter(|(_, iv)| !iv.is_empty())
            .map(|(&split, iv)| PartialSplit {
                split,
                acked: iv.iter().map(|&(s, e)| [s, e]).collect(),
            })
            .collect();
        partial.sort_by_key(|p| p.split);
        LedgerState {
            data_epoch,
            done,
            partial,
        }
    }

    /// Rebuilds a ledger, checking every split id and interval against the plan's row counts.
    pub(crate) fn from_state(st: &LedgerState, split_rows: &[u64]) -> Result<Self, String> {
        let mut l = Ledger::new(split_rows.len());
        for &[a, b] in &st.done {
            if a > b || b as usize > split_rows.len() {
                return Err(format!(
                    "done run [{a}, {b}) outside the {} splits",
                    split_rows.len()
                ));
            }
            for s in a..b {
                if l.is_done(s) {
                    return Err(format!("split {s} listed twice as done"));
                }
                l.set_done(s);
                l.acked_rows += split_rows[s as usize];
            }
        }
        for p in &st.partial {
            let Some(&rows) = split_rows.get(p.split as usize) else {
                return Err(format!("partial split {} outside the plan", p.split));
            };
            for &[s, e] in &p.acked {
                if s > e || e > rows {
                    return Err(format!(
                        "split {}: rows [{s}, {e}) outside its {rows} rows",
                        p.split
                    ));
                }
                l.add(p.split, s, e, rows)
                    .map_err(|(a, b)| format!("split {}: rows [{a}, {b}) acked twice", p.split))?;
            }
        }
        Ok(l)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn skipped_ranges_merge_and_count_once() {
        let r = |e, s, a, b| SkippedRange {
            data_epoch: e,
            path: "f".into(),
            split: s,
            start: a,
            end: b,
            reason: "bad".into(),
        };
        let mut l = Vec::new();
        assert_eq!(add_skipped(&mut l, r(0, 1, 100, 200)), 100);
        assert_eq!(add_skipped(&mut l, r(0, 1, 100, 200)), 0);
        assert_eq!(add_skipped(&mut l, r(0, 1, 200, 250)), 50);
        assert_eq!(add_skipped(&mut l, r(1, 1, 100, 200)), 100);
        assert_eq!(add_skipped(&mut l, r(0, 0, 0, 10)), 10);
        let got: Vec<_> = l
            .iter()
            .map(|x| (x.data_epoch, x.split, x.start, x.end))
            .collect();
        assert_eq!(got, vec![(0, 0, 0, 10), (0, 1, 100, 250), (1, 1, 100, 200)]);
    }

    #[test]
    fn merges_and_completes() {
        let mut l = Ledger::new(3);
        l.add(1, 5, 10, 10).unwrap();
        l.add(1, 0, 5, 10).unwrap();
        assert!(l.is_done(1));
        assert_eq!(l.acked_rows, 10);
        assert_eq!(l.add(1, 3, 4, 10), Err((0, 10)));
        l.add(2, 2, 4, 8).unwrap();
        assert_eq!(l.add(2, 3, 6, 8), Err((3, 4)));
        assert_eq!(l.gaps(2, 8), vec![(0, 2), (4, 8)]);
        assert_eq!(l.gaps(0, 7), vec![(0, 7)]);
    }

    proptest! {
        /// Acking the pieces of a random partition of every split in random order marks
        /// every split done exactly when all its rows are in, and round-trips through State.
        #[test]
        fn random_pieces(rows in proptest::collection::vec(1u64..50, 1..20),
                         cuts in proptest::collection::vec(0u64..50, 0..60),
                         seed in any::<u64>()) {
            let mut pieces = Vec::new();
            for (s, &n) in rows.iter().enumerate() {
                let mut c: Vec<u64> = cuts.iter().map(|c| c % n).filter(|&c| c > 0).collect();
                c.push(0);
                c.push(n);
                c.sort();
                c.dedup();
                for w in c.windows(2) {
                    pieces.push((s as u32, w[0], w[1]));
                }
            }
            let mut x = seed;
            for i in (1..pieces.len()).rev() {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                pieces.swap(i, (x >> 33) as usize % (i + 1));
            }
            let mut l = Ledger::new(rows.len());
            let half = pieces.len() / 2;
            for &(s, a, b) in &pieces[..half] {
                l.add(s, a, b, rows[s as usize]).unwrap();
            }
            let back = Ledger::from_state(&l.to_state(0), &rows).unwrap();
            prop_assert_eq!(back.acked_rows, l.acked_rows);
            let mut l = back;
            for &(s, a, b) in &pieces[half..] {
                l.add(s, a, b, rows[s as usize]).unwrap();
            }
            for (s, &n) in rows.iter().enumerate() {
                prop_assert!(l.is_done(s as u32));
                prop_assert!(l.add(s as u32, 0, 1, n).is_err());
            }
            prop_assert_eq!(l.acked_rows, rows.iter().sum::<u64>());
        }
    }
}
