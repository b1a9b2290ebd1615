//! The one reader loop of the formats that store rows in independently decodable units with
//! row counts in the footer: Parquet row groups and ORC stripes.
//!
//! A format provides [`Units`]: how many rows each unit holds, how to open one unit for
//! decoding, and where a unit is for an error. [`UnitReader`] does the rest, the same for
//! both: units in order, `OnError::Raise` (stream the unit's batches, stop at the first bad
//! one) or `OnError::Skip` (decode a whole unit before handing any of it out, so a bad unit is
//! dropped whole and counted, never half-delivered), a decoder panic caught as a `DataError`
//! at the unit, the projection's column order, and [`SplitReader::skip_rows`] passing whole
//! units over without reading them (and, where the format can, the head of the next one
//! without decoding it).

use std::collections::VecDeque;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;

use crate::io::{catch, guard, loc, panicked};
use crate::split::{file_splits, Format, Split, SplitUnit};
use crate::{Error, OnError, Result, SkipStats, SkippedRows, SplitReader};

/// Rows and (compressed) bytes of one unit, from the footer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct UnitSize {
    pub(crate) rows: u64,
    pub(crate) bytes: u64,
}

/// Consecutive units planned as one split.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct UnitGroup {
    /// The first unit's index in the file.
    pub(crate) first: u32,
    /// Units in the split.
    pub(crate) count: u32,
    /// Their rows.
    pub(crate) rows: u64,
    /// Their bytes.
    pub(crate) bytes: u64,
}

/// The splits of one file: its units grouped by [`group_units`], each group a split whose
/// unit `unit(first, count)` names (row groups or stripes).
pub(crate) fn unit_splits(
    path: &str,
    format: Format,
    first_id: u32,
    units: &[UnitSize],
    target: u64,
    unit: impl Fn(u32, u32) -> SplitUnit,
) -> Vec<Split> {
    let groups = group_units(units, target);
    let parts = groups
        .iter()
        .map(|g| (unit(g.first, g.count), g.rows, g.bytes));
    let mut splits = file_splits(path, format, first_id, parts);
    for (s, g) in splits.iter_mut().zip(&groups) {
        if g.count > 1 {
            let (a, n) = (g.first as usize, g.count as usize);
            s.units = units[a..a + n].iter().map(|u| u.rows).collect();
        }
    }
    splits
}

/// Groups consecutive units into splits of about `target` bytes (a unit larger than that is a
/// split of its own).
pub(crate) fn group_units(units: &[UnitSize], target: u64) -> Vec<UnitGroup> {
    let mut out: Vec<UnitGroup> = Vec::new();
    for (i, u) in units.iter().enumerate() {
        match out.last_mut() {
            Some(last) if last.bytes + u.bytes <= target.max(1) => {
                last.count += 1;
                last.rows += u.rows;
                last.bytes += u.bytes;
            }
            _ => out.push(UnitGroup {
                first: i as u32,
                count: 1,
                rows: u.rows,
                bytes: u.bytes,
            }),
        }
    }
    out
}

/// The batches of one unit; an `Err` is what the decoder said was wrong (the reader places it).
pub(crate) type UnitBatches =
    Box<dyn Iterator<Item = std::result::Result<RecordBatch, String>> + Send>;

/// What a format tells the reader loop about its units.
pub(crate) trait Units: Send {
    /// Rows of unit `u` by the file's metadata.
    fn rows(&self, u: usize) -> u64;
    /// Opens unit `u` for decoding (reads its bytes or starts to), its first `skip` rows
    /// passed over (always 0 unless [`Units::skips_within`]).
    fn open(&self, u: usize, skip: u64) -> Result<UnitBatches>;
    /// Whether [`Units::open`] can start inside a unit without decoding the rows before
    /// (Parquet: a row selection, which skips records without building them).
    fn skips_within(&self) -> bool {
        false
    }
    /// A `DataError` at unit `u` (a failed storage read's own error first, when there is one).
    fn error(&self, u: usize, detail: String) -> Error;
    /// The unit as the error messages name it: "row group 3", "stripe 1".
    fn name(&self, u: usize) -> String;
}

/// The projection: output column `i` is column `perm[i]` of what the decoder yields (decoders
/// yield projected columns in file order).
pub(crate) struct Projection {
    pub(crate) perm: Option<Vec<usize>>,
    pub(crate) schema: SchemaRef,
}

impl Projection {
    /// The projection of `columns` (indices into the file's schema, in the order asked for)
    /// over `file_schema`: the sorted, deduplicated indices the decoder reads, and the
    /// projection that reorders its output.
    pub(crate) fn of(
        path: &str,
        file_schema: &SchemaRef,
        columns: Option<Vec<usize>>,
    ) -> Result<(Option<Vec<usize>>, Self)> {
        let Some(idx) = columns else {
            return Ok((
                None,
                Self {
                    perm: None,
                    schema: file_schema.clone(),
                },
            ));
        };
        let mut sorted = idx.clone();
        sorted.sort_unstable();
        sorted.dedup();
        let perm = idx
            .iter()
            .map(|i| sorted.iter().position(|s| s == i).unwrap_or(0))
            .collect();
        let schema = file_schema.project(&idx).map_err(|e| Error::Schema {
            path: path.to_string(),
            detail: e.to_string(),
        })?;
        Ok((
            Some(sorted),
            Self {
                perm: Some(perm),
                schema: schema.into(),
            },
        ))
    }

    /// A decoded batch in the projection's column order and schema.
    fn apply(&self, path: &str, b: RecordBatch) -> Result<RecordBatch> {
        let cols = match &self.perm {
            None => b.columns().to_vec(),
            Some(p) => p.iter().map(|&i| b.column(i).clone()).collect(),
        };
        RecordBatch::try_new_with_options(
            self.schema.clone(),
            cols,
            &arrow_array::RecordBatchOptions::new().with_row_count(Some(b.num_rows())),
        )
        .map_err(|e| Error::Schema {
            path: path.to_string(),
            detail: format!("a decoded batch does not match the file's schema: {e}"),
        })
    }
}

/// Reads the units `todo` of one split, in order.
pub(crate) struct UnitReader<U: Units> {
    units: U,
    format: &'static str,
    path: String,
    split: u32,
    projection: Projection,
    on_error: OnError,
    todo: VecDeque<usize>,
    /// The unit being read (for errors).
    active: usize,
    current: Option<(usize, UnitBatches)>,
    buffered: VecDeque<RecordBatch>,
    skipped: SkipStats,
    /// The positions of the units skipped, from the split's first row.
    gaps: Vec<SkippedRows>,
    /// The split's first unit.
    first: usize,
    done: bool,
    /// Rows of the next unit to pass over when it is opened ([`SplitReader::skip_rows`]).
    skip_in_next: u64,
}

impl<U: Units> UnitReader<U> {
    /// A reader of `units` `[first, first + count)` of the file at `path` (split `split`).
    pub(crate) fn new(
        units: U,
        format: &'static str,
        (path, split): (&str, u32),
        projection: Projection,
        on_error: OnError,
        (first, count): (usize, usize),
    ) -> Self {
        Self {
            units,
            format,
            path: path.to_string(),
            split,
            projection,
            on_error,
            todo: (first..first + count).collect(),
            active: first,
            current: None,
            buffered: VecDeque::new(),
            skipped: SkipStats::default(),
            gaps: Vec::new(),
            first,
            done: false,
            skip_in_next: 0,
        }
    }

    /// Leaves out the units of `split` that its filter left no row of: they are never read.
    pub(crate) fn passing(mut self, split: &Split) -> Self {
        if let Some(f) = &split.filter {
            let first = self.first;
            self.todo
                .retain(|&u| f.pass.get(u - first).copied().unwrap_or(1) > 0);
        }
        self
    }

    /// A bad unit: the error under `Raise` (or when it is not a data error), a count and a
    /// warning under `Skip`.
    fn bad(&mut self, u: usize, e: Error) -> Result<()> {
        if self.on_error == OnError::Raise || !matches!(e, Error::Data { .. }) {
            self.done = true;
            return Err(e);
        }
        tracing::warn!("skipping: {e}");
        let at: u64 = (self.first..u).map(|v| self.units.rows(v)).sum();
        let rows = self.units.rows(u);
        self.skipped.blocks += 1;
        self.skipped.records += rows.saturating_sub(self.skip_in_next);
        if rows > self.skip_in_next {
            self.gaps.push(SkippedRows {
                start: at + self.skip_in_next,
                end: at + rows,
                reason: SkippedRows::reason_of(&e),
            });
        }
        self.skip_in_next = 0;
        Ok(())
    }

    fn step(&mut self) -> Result<Option<RecordBatch>> {
        loop {
            if let Some(b) = self.buffered.pop_front() {
                return Ok(Some(b));
            }
            if self.done {
                return Ok(None);
            }
            let Some((u, mut batches)) = self.current.take() else {
                let Some(u) = self.todo.pop_front() else {
                    self.done = true;
                    return Ok(None);
                };
                self.active = u;
                match self.units.open(u, self.skip_in_next) {
                    Ok(b) => {
                        self.skip_in_next = 0;
                        self.current = Some((u, b));
                    }
                    Err(e) => self.bad(u, e)?,
                }
                continue;
            };
            if self.on_error == OnError::Raise {
                match batches.next() {
                    Some(Ok(b)) => {
                        self.current = Some((u, batches));
                        return self.projection.apply(&self.path, b).map(Some);
                    }
                    Some(Err(detail)) => {
                        self.done = true;
                        return Err(self.units.error(u, detail));
                    }
                    None => continue,
                }
            }
            let units = &self.units;
            let (path, split) = (&self.path, self.split);
            let decoded = guard(
                || loc(path, Some(split), None, Some(units.name(u))),
                self.format,
                || {
                    batches
                        .by_ref()
                        .collect::<std::result::Result<Vec<_>, _>>()
                        .map_err(|detail| units.error(u, detail))
                },
            );
            match decoded {
                Ok(got) => {
                    for b in got {
                        let b = self.projection.apply(&self.path, b)?;
                        self.buffered.push_back(b);
                    }
                }
                Err(e) => self.bad(u, e)?,
            }
        }
    }
}

impl<U: Units> Iterator for UnitReader<U> {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Self::Item> {
        let r = match catch(|| self.step()) {
            Ok(r) => r,
            Err(msg) => Err(self.units.error(self.active, panicked(&msg))),
        };
        if r.is_err() {
            self.done = true;
            self.current = None;
            self.buffered.clear();
        }
        r.transpose()
    }
}

impl<U: Units> SplitReader for UnitReader<U> {
    fn schema(&self) -> SchemaRef {
        self.projection.schema.clone()
    }

    fn skipped(&self) -> SkipStats {
        self.skipped.clone()
    }

    fn skipped_rows(&self) -> &[SkippedRows] {
        &self.gaps
    }

    fn skip_rows(&mut self, n: u64) -> u64 {
        if self.current.is_some() || !self.buffered.is_empty() || self.skip_in_next > 0 {
            return 0;
        }
        let mut passed = 0;
        while let Some(&u) = self.todo.front() {
            let rows = self.units.rows(u);
            if passed + rows > n {
                // Inside this unit: passed over when it opens, where the format can.
                if self.units.skips_within() {
                    self.skip_in_next = n - passed;
                    passed = n;
                }
                break;
            }
            passed += rows;
            self.todo.pop_front();
        }
        passed
    }
}
