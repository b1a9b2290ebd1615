//! Reading a row group from a row inside it without fetching the pages before that row.
//!
//! A lane of the fixed order that starts inside a row group (at a rank's boundary, or where a
//! resumed epoch stopped) needs the row group's rows from `skip` on. Without page locations the
//! reader must fetch every column chunk whole and decode its way to `skip`. With the file's
//! offset index (Parquet's page index: each data page's offset, size and first row; written by
//! parquet-mr, as Spark writes it, and by arrow-rs by default, by pyarrow with
//! `write_page_index=True`), only the dictionary page and the data pages from the one holding
//! row `skip` on are fetched, and the readers pass over the pages before it without their bytes.
//!
//! The offset index is read only when a row group is opened inside (once per open file). A
//! file without one, or with one that does not fit its footer (pages outside their column
//! chunk, first rows out of order), is read as before: whole column chunks.

use std::sync::Arc;

use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, RowSelection, RowSelector,
};
use parquet::arrow::ProjectionMask;
use parquet::file::metadata::{
    ColumnChunkMetaData, PageIndexPolicy, ParquetMetaData, ParquetMetaDataReader,
};

use super::io::StorageChunks;
use super::parquet::chunk_start;

/// `meta` with the file's offset index loaded (its column index too where `column_index`, if
/// the file has one), or `None` when the file has no offset index or it does not fit the footer.
pub(crate) fn with_offset_index(
    meta: &ArrowReaderMetadata,
    chunks: &StorageChunks,
    column_index: bool,
) -> Option<ArrowReaderMetadata> {
    let md = meta.metadata();
    let any = md.row_groups().iter().any(|rg| {
        rg.columns()
            .iter()
            .any(|c| c.offset_index_offset().is_some())
    });
    if !any {
        return None;
    }
    let mut reader = ParquetMetaDataReader::new_with_metadata(md.as_ref().clone())
        .with_offset_index_policy(PageIndexPolicy::Required)
        .with_column_index_policy(if column_index {
            PageIndexPolicy::Optional
        } else {
            PageIndexPolicy::Skip
        });
    reader.read_page_indexes(chunks).ok()?;
    let loaded = reader.finish().ok()?;
    if !fits(&loaded) {
        return None;
    }
    ArrowReaderMetadata::try_new(
        Arc::new(loaded),
        ArrowReaderOptions::new().with_schema(meta.schema().clone()),
    )
    .ok()
}

/// Whether every column chunk's page locations lie inside the chunk, in order, the first at
/// row 0 and every first row within the row group.
fn fits(md: &ParquetMetaData) -> bool {
    let Some(oi) = md.offset_index() else {
        return false;
    };
    oi.len() == md.num_row_groups()
        && md.row_groups().iter().zip(oi).all(|(rg, cols)| {
            cols.len() == rg.num_columns()
                && rg.columns().iter().zip(cols).all(|(c, o)| {
                    let Some((start, end)) = chunk_span(c) else {
                        return false;
                    };
                    let pages = o.page_locations();
                    !pages.is_empty()
                        && pages[0].first_row_index == 0
                        && pages.windows(2).all(|w| {
                            w[0].first_row_index < w[1].first_row_index && w[0].offset < w[1].offset
                        })
                        && pages.iter().all(|p| {
                            let (Ok(at), Ok(size)) = (
                                u64::try_from(p.offset),
                                u64::try_from(p.compressed_page_size),
                            ) else {
                                return false;
                            };
                            at >= start
                                && at.saturating_add(size) <= end
                                && p.first_row_index < rg.num_rows()
                        })
                })
        })
}

/// Where a column chunk starts and ends in the file, if its footer says so sensibly.
fn chunk_span(c: &ColumnChunkMetaData) -> Option<(u64, u64)> {
    let start = chunk_start(c)?;
    Some((
        start,
        start.saturating_add(u64::try_from(c.compressed_size()).ok()?),
    ))
}

/// The byte ranges, `(start, len)`, that reading the rows `want` of row group `rg` (sorted,
/// disjoint `[from, to)` ranges: from a row on, or the rows a filter's page statistics leave)
/// needs for the leaves of `mask`: per column chunk its dictionary page (the bytes before its
/// first data page) and the data pages holding any of those rows, neighbours merged. `None`
/// when `meta` has no offset index.
pub(crate) fn ranges_of(
    meta: &ArrowReaderMetadata,
    rg: usize,
    want: &[(u64, u64)],
    mask: &ProjectionMask,
) -> Option<Vec<(u64, u64)>> {
    let md = meta.metadata();
    let cols = md.offset_index()?.get(rg)?;
    let rows = u64::try_from(md.row_group(rg).num_rows()).ok()?;
    let mut out = Vec::new();
    for (leaf, (c, o)) in md.row_group(rg).columns().iter().zip(cols).enumerate() {
        if !mask.leaf_included(leaf) {
            continue;
        }
        let pages = o.page_locations();
        let (start, _) = chunk_span(c)?;
        let first = u64::try_from(pages.first()?.offset).ok()?;
        if first > start {
            out.push((start, first - start));
        }
        for (i, p) in pages.iter().enumerate() {
            let from = u64::try_from(p.first_row_index).ok()?;
            let to = match pages.get(i + 1) {
                Some(n) => u64::try_from(n.first_row_index).ok()?,
                None => rows,
            };
            if !want.iter().any(|&(a, b)| a < to && from < b) {
                continue;
            }
            let at = u64::try_from(p.offset).ok()?;
            let len = u64::try_from(p.compressed_page_size).ok()?;
            match out.last_mut() {
                Some(last) if last.0 + last.1 == at => last.1 += len,
                _ => out.push((at, len)),
            }
        }
    }
    Some(out)
}

/// The rows of `keep` (sorted, disjoint `[from, to)` ranges) from row `skip` on.
pub(crate) fn from_row(keep: &[(u64, u64)], skip: u64) -> Vec<(u64, u64)> {
    keep.iter()
        .map(|&(from, to)| (from.max(skip), to))
        .filter(|(from, to)| from < to)
        .collect()
}

/// The row selection reading the rows `want` (sorted, disjoint `[from, to)` ranges) of a row
/// group of `rows` rows.
pub(crate) fn selection(want: &[(u64, u64)], rows: u64) -> RowSelection {
    let mut out: Vec<RowSelector> = Vec::new();
    let mut at = 0u64;
    for &(from, to) in want {
        let to = to.min(rows);
        if from >= to {
            continue;
        }
        if from > at {
            out.push(RowSelector::skip((from - at) as usize));
        }
        out.push(RowSelector::select((to - from) as usize));
        at = to;
    }
    if rows > at {
        out.push(RowSelector::skip((rows - at) as usize));
    }
    RowSelection::from(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_selection_reads_the_rows_wanted() {
        let sel = selection(&from_row(&[(10, 20), (30, 40)], 15), 50);
        let got: Vec<(bool, usize)> = sel.iter().map(|s| (s.skip, s.row_count)).collect();
        assert_eq!(
            got,
            vec![(true, 15), (false, 5), (true, 10), (false, 10), (true, 10)]
        );
        let none = selection(&[], 8);
        assert_eq!(none.row_count(), 0);
        assert_eq!(none.skipped_row_count(), 8);
        let from = selection(&[(3, 8)], 8);
        let got: Vec<(bool, usize)> = from.iter().map(|s| (s.skip, s.row_count)).collect();
        assert_eq!(got, vec![(true, 3), (false, 5)]);
    }
}
