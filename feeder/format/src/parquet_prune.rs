//! Page pruning under a filter: the rows of a row group whose pages' statistics say no row
//! passes are neither fetched nor decoded.
//!
//! Row-group statistics decide whole units at planning ([`crate::filtered`]). Inside a row group
//! the file's column index (Parquet's page index: each data page's minimum, maximum and null
//! count; written by parquet-mr as Spark writes it, by arrow-rs by default and by pyarrow with
//! `write_page_index=True`) with its offset index (each page's first row) says more where the
//! data is sorted or clustered on a filter column: the row group's rows are cut at every page
//! boundary of the filter's columns, each piece judged with the statistics of the pages holding
//! it, and the pieces no row of which can pass are passed over with a row selection; the
//! projected columns' pages that hold none of the kept rows are never fetched (the readers skip
//! them by their locations).
//!
//! Exactness is the filter's: every row read is still judged by the predicate, so pruning only
//! leaves out rows that could not pass. The plan's counts and the reader agree because both
//! read through here. Not used where a row's position in its file matters beyond passing
//! (deletion vectors, which the caller then reads unpruned), nor for columns whose statistics
//! the row-group rule does not trust either (INT96, dates and timestamps of a file Spark wrote in
//! its hybrid calendar).

use std::sync::Arc;

use arrow_array::Array;
use arrow_schema::Field;
use parquet::arrow::arrow_reader::ArrowReaderMetadata;

use crate::filter::{Bound, ColumnStats};

/// A filter to prune a file's pages with: the predicate and whether the file's dates and
/// timestamps are Spark's unrebased hybrid-calendar values.
#[derive(Clone)]
pub(crate) struct PagePrune {
    pub(crate) bound: Arc<Bound>,
    pub(crate) spark_legacy: bool,
}

/// Pages of one filter column in one row group: first rows and statistics.
struct ColumnPages {
    first_rows: Vec<u64>,
    mins: arrow_array::ArrayRef,
    maxes: arrow_array::ArrayRef,
    /// Per page: whether its values are all null (`Some(true)`), none (`Some(false)`), or
    /// either is unknown: a piece of a page has a known null count only in those two cases.
    all_null: Vec<Option<bool>>,
}

impl PagePrune {
    /// The rows of row group `rg` that may pass, as sorted, disjoint `[from, to)` ranges;
    /// `None` when the page statistics rule nothing out (or `meta` has no page index).
    pub(crate) fn keep(&self, meta: &ArrowReaderMetadata, rg: usize) -> Option<Vec<(u64, u64)>> {
        let md = meta.metadata();
        let (ci, oi) = (md.column_index()?, md.offset_index()?);
        let rows = u64::try_from(md.row_group(rg).num_rows()).ok()?;
        let cols: Vec<(String, Option<ColumnPages>)> = self
            .bound
            .columns()
            .iter()
            .map(|f| (f.name().clone(), self.pages(meta, ci, oi, rg, f)))
            .collect();
        // Every page boundary of every filter column cuts the row group.
        let mut cuts: Vec<u64> = cols
            .iter()
            .filter_map(|(_, p)| p.as_ref())
            .flat_map(|p| p.first_rows.iter().copied())
            .chain([0, rows])
            .filter(|&r| r <= rows)
            .collect();
        cuts.sort_unstable();
        cuts.dedup();
        let mut kept: Vec<(u64, u64)> = Vec::new();
        for w in cuts.windows(2) {
            let (from, to) = (w[0], w[1]);
            let stats = |f: &Field| -> Option<ColumnStats> {
                let (_, pages) = cols.iter().find(|(n, _)| n == f.name())?;
                pages.as_ref()?.stats(from, to)
            };
            if self.bound.possible(to - from, &stats).none_pass() {
                continue;
            }
            match kept.last_mut() {
                Some(last) if last.1 == from => last.1 = to,
                _ => kept.push((from, to)),
            }
        }
        (kept != [(0, rows)]).then_some(kept)
    }

    /// The page statistics of filter column `f` in row group `rg`, if the filter may trust them.
    fn pages(
        &self,
        meta: &ArrowReaderMetadata,
        ci: &parquet::file::metadata::ParquetColumnIndex,
        oi: &parquet::file::metadata::ParquetOffsetIndex,
        rg: usize,
        f: &Field,
    ) -> Option<ColumnPages> {
        let c = super::parquet::trusted_stats(meta, f, self.spark_legacy)?;
        let leaf = c.parquet_column_index()?;
        let locations = oi.get(rg)?.get(leaf)?.page_locations();
        let first_rows = locations
            .iter()
            .map(|p| u64::try_from(p.first_row_index).ok())
            .collect::<Option<Vec<u64>>>()?;
        let mins = c.data_page_mins(ci, oi, [&rg]).ok()?;
        let maxes = c.data_page_maxes(ci, oi, [&rg]).ok()?;
        let nulls = c.data_page_null_counts(ci, oi, [&rg]).ok()?;
        let n = first_rows.len();
        if n == 0 || mins.len() != n || maxes.len() != n || nulls.len() != n {
            return None;
        }
        let mut page_rows: Vec<u64> = first_rows.windows(2).map(|w| w[1] - w[0]).collect();
        page_rows.push(
            u64::try_from(meta.metadata().row_group(rg).num_rows()).ok()? - first_rows[n - 1],
        );
        let all_null = (0..n)
            .map(|i| match nulls.is_valid(i).then(|| nulls.value(i)) {
                Some(0) => Some(false),
                Some(k) if k == page_rows[i] => Some(true),
                _ => None,
            })
            .collect();
        Some(ColumnPages {
            first_rows,
            mins,
            maxes,
            all_null,
        })
    }
}

impl ColumnPages {
    /// The statistics of rows `[from, to)`, which lie in one page of this column.
    fn stats(&self, from: u64, to: u64) -> Option<ColumnStats> {
        let i = self
            .first_rows
            .partition_point(|&r| r <= from)
            .checked_sub(1)?;
        Some(ColumnStats {
            min: self.mins.is_valid(i).then(|| self.mins.slice(i, 1)),
            max: self.maxes.is_valid(i).then(|| self.maxes.slice(i, 1)),
            nulls: self.all_null[i].map(|all| if all { to - from } else { 0 }),
        })
    }
}
