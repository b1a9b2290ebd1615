//! A plan under a filter, and the reader of its splits.
//!
//! Equal steps and exactly-once need every split's row count before the first batch: the
//! filter's count, not the file's. So planning decides every unit (row group, stripe, Avro or
//! TFRecord split) before the job starts:
//!
//! 1. from what is known without reading it: partition values, then the unit's statistics
//!    (Parquet row-group statistics); when they say no row passes the unit counts 0 and is
//!    never read, when they say every row passes it counts its rows;
//! 2. else by a counting pass: the unit's filter columns alone are read and the predicate
//!    counted (units in parallel). Its cost (units, bytes, seconds) is in [`FilterCost`], which
//!    `inspect`, `launch` and the coordinator print.
//!
//! The counts go into the plan ([`SplitFilter`]: each unit's rows before and after), so the
//! order, the ledger and a resumed state count the rows that pass. A feeder does not count
//! again: it takes the coordinator's counts ([`crate::plan_counted`]).
//!
//! `Filtered` reads a split: it leaves out the units that count 0 (their bytes are never
//! fetched), reads the filter's columns beside the projection, drops the rows that do not
//! pass, and maps positions (skipped units, [`SplitReader::skip_rows`]) from the file's rows
//! to the rows that pass.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use arrow_array::{BooleanArray, RecordBatch};
use arrow_schema::{Field, SchemaRef};

use hydrofeed_storage::Storage;

use crate::deletion::Deleted;
use crate::filter::{Bound, ColumnStats};
use crate::split::{Format, Split, SplitFilter};
use crate::{Error, Plan, ReadOptions, Result, SkipStats, SkippedRows, SplitReader};

/// The filter of a plan.
#[derive(Debug, Clone)]
pub struct PlanFilter {
    /// The predicate, bound to the input's columns.
    pub bound: Arc<Bound>,
    /// Its columns that the plan's schema (the projection) leaves out: read beside it.
    pub extra: Vec<Field>,
    /// What deciding the units cost.
    pub cost: FilterCost,
}

/// What planning under a filter did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FilterCost {
    /// Units (row groups, stripes, byte-range splits) planned.
    pub units: u64,
    /// Units no row of which passes, by partition values or statistics (never read).
    pub none_by_stats: u64,
    /// Units every row of which passes, by partition values or statistics.
    pub all_by_stats: u64,
    /// Units whose filter columns were read and counted.
    pub counted: u64,
    /// Rows of the input.
    pub rows_before: u64,
    /// Rows that pass.
    pub rows_after: u64,
    /// Bytes the counting pass read.
    pub bytes: u64,
    /// Seconds the counting pass took (0 when the coordinator's counts were taken).
    pub secs: f64,
    /// Whether the counts came from elsewhere (the coordinator) rather than from here.
    pub given: bool,
    /// Files of a table its own statistics ruled out (never opened, no split planned).
    pub files_ruled_out: u64,
    /// Manifests of an Iceberg table its manifest list's partition summaries ruled out (never
    /// read).
    pub manifests_ruled_out: u64,
}

impl FilterCost {
    /// One line for logs and `inspect`.
    pub fn line(&self) -> String {
        if self.given {
            return format!(
                "{} of {} rows pass (counts from the coordinator)",
                self.rows_after, self.rows_before
            );
        }
        let mut files = match self.files_ruled_out {
            0 => String::new(),
            n => format!("; {n} file(s) ruled out by the table's statistics"),
        };
        if self.manifests_ruled_out > 0 {
            files += &format!(
                "; {} manifest(s) ruled out by their partition summaries",
                self.manifests_ruled_out
            );
        }
        format!(
            "{} of {} rows pass{files}; {} unit(s): {} skipped and {} taken whole by partition \
             values or statistics, {} counted ({:.1} MB read, {:.2} s)",
            self.rows_after,
            self.rows_before,
            self.units,
            self.none_by_stats,
            self.all_by_stats,
            self.counted,
            self.bytes as f64 / 1e6,
            self.secs
        )
    }
}

/// Whether a table's statistics of a file (Delta `add.stats`: `numRecords`, `minValues`,
/// `maxValues`, `nullCount`, by column name) and its partition values say no row passes.
/// Timestamps are left out (Delta truncates their bounds to milliseconds).
pub(crate) fn table_stats_rule_out(
    bound: &Bound,
    stats: &serde_json::Value,
    partition: &[(String, String)],
) -> bool {
    table_stats_possible(bound, stats, partition).is_some_and(|p| p.none_pass())
}

/// Whether they say every row of the file passes (a partition filter over the file's own
/// partition, bounds inside the predicate's): the file's rows are its count, unread.
pub(crate) fn table_stats_all_pass(
    bound: &Bound,
    stats: &serde_json::Value,
    partition: &[(String, String)],
) -> bool {
    table_stats_possible(bound, stats, partition).is_some_and(|p| p.all_pass())
}

/// What a table's statistics of a file say of the rows that pass; `None` without a row count.
fn table_stats_possible(
    bound: &Bound,
    stats: &serde_json::Value,
    partition: &[(String, String)],
) -> Option<crate::filter::Possible> {
    let rows = stats.get("numRecords").and_then(|n| n.as_u64())?;
    let value = |kind: &str, f: &Field| -> Option<arrow_array::ArrayRef> {
        if matches!(f.data_type(), arrow_schema::DataType::Timestamp(..)) {
            return None;
        }
        let text = match stats.get(kind)?.get(f.name())? {
            serde_json::Value::String(s) => s.clone(),
            v @ (serde_json::Value::Number(_) | serde_json::Value::Bool(_)) => v.to_string(),
            _ => return None,
        };
        let a: arrow_array::ArrayRef = Arc::new(arrow_array::StringArray::from(vec![text]));
        let c = arrow::compute::cast(&a, f.data_type()).ok()?;
        c.is_valid(0).then_some(c)
    };
    Some(bound.possible(rows, &|f: &Field| {
        if let Some(s) = partition_stats(partition, f, rows) {
            return Some(s);
        }
        Some(ColumnStats {
            min: value("minValues", f),
            max: value("maxValues", f),
            nulls: stats
                .get("nullCount")
                .and_then(|n| n.get(f.name())?.as_u64()),
        })
    }))
}

/// The statistics that partition values give: one value, or all null.
fn partition_stats(partition: &[(String, String)], f: &Field, rows: u64) -> Option<ColumnStats> {
    let (_, v) = partition.iter().find(|(k, _)| k == f.name())?;
    if v == crate::listing::HIVE_NULL {
        return Some(ColumnStats {
            min: None,
            max: None,
            nulls: Some(rows),
        });
    }
    let c = crate::listing::partition_constant(f.data_type(), v, 1).ok()?;
    Some(ColumnStats {
        min: Some(c.clone()),
        max: Some(c),
        nulls: Some(0),
    })
}

/// Each split's passing rows per unit, by statistics where they tell and by a counting pass
/// where they do not.
pub(crate) fn count(
    storage: &Arc<dyn Storage>,
    plan: &Plan,
    bound: &Arc<Bound>,
    full: &SchemaRef,
    opts: &ReadOptions,
) -> Result<(Vec<Vec<u64>>, FilterCost)> {
    let t0 = Instant::now();
    let mut cost = FilterCost::default();
    let cols = bound.columns();
    let mut out: Vec<Vec<u64>> = Vec::with_capacity(plan.splits.len());
    // (split, unit, the unit's first row in its file)
    let mut todo: Vec<(usize, usize, u64)> = Vec::new();
    let starts = first_rows(&plan.splits);
    // Row-group statistics of the file being planned (splits of a file are consecutive).
    let mut file_stats: Option<(String, Vec<Vec<Option<ColumnStats>>>)> = None;
    for (si, split) in plan.splits.iter().enumerate() {
        let raw = split.raw_units();
        // A table's file planned unread under a filter: only where the table's statistics
        // said every row passes (`crate::unread_splits`), so its rows are those not deleted.
        let unread = split.unit == crate::split::SplitUnit::File;
        let stats_of_file = match split.format {
            _ if unread => None,
            Format::Parquet | Format::Orc => {
                if file_stats.as_ref().map(|(p, _)| p) != Some(&split.path) {
                    let file_cols: Vec<Field> = cols
                        .iter()
                        .filter(|c| !split.partition.iter().any(|(k, _)| k == c.name()))
                        .cloned()
                        .collect();
                    let mut st = match split.format {
                        Format::Parquet => {
                            crate::parquet::row_group_stats(storage, &split.path, &file_cols)?
                        }
                        _ => crate::orc::stripe_stats(storage, &split.path, &file_cols, opts)?,
                    };
                    // Back in `cols`' order, partition keys without file statistics.
                    for unit in &mut st {
                        let got: Vec<(&Field, Option<ColumnStats>)> =
                            file_cols.iter().zip(unit.drain(..)).collect();
                        *unit = cols
                            .iter()
                            .map(|c| {
                                got.iter()
                                    .find(|(f, _)| f.name() == c.name())
                                    .and_then(|(_, s)| s.clone())
                            })
                            .collect();
                    }
                    file_stats = Some((split.path.clone(), st));
                }
                file_stats.as_ref().map(|(_, s)| s)
            }
            _ => None,
        };
        let first = match split.unit {
            crate::split::SplitUnit::RowGroups { first, .. }
            | crate::split::SplitUnit::Stripes { first, .. } => first as usize,
            _ => 0,
        };
        let mut pass = Vec::with_capacity(raw.len());
        let deleted = plan.deleted.get(&split.path);
        let mut unit_row = starts[si];
        for (u, &rows) in raw.iter().enumerate() {
            let at = unit_row;
            unit_row += rows;
            cost.units += 1;
            cost.rows_before += rows;
            let alive = rows - deleted.map_or(0, |d| d.count_in(at, at + rows));
            if unread {
                cost.all_by_stats += 1;
                pass.push(alive);
                continue;
            }
            let p = bound.possible(rows, &|f: &Field| {
                if let Some(s) = partition_stats(&split.partition, f, rows) {
                    return Some(s);
                }
                let i = cols.iter().position(|c| c.name() == f.name())?;
                stats_of_file?.get(first + u)?.get(i)?.clone()
            });
            if alive == 0 || p.none_pass() {
                cost.none_by_stats += 1;
                pass.push(0);
            } else if p.all_pass() {
                cost.all_by_stats += 1;
                pass.push(alive);
            } else {
                todo.push((si, u, at));
                pass.push(0);
            }
        }
        out.push(pass);
    }
    cost.counted = todo.len() as u64;
    if !todo.is_empty() {
        let bytes = Arc::new(hydrofeed_storage::metered::ByteCount::default());
        let metered = hydrofeed_storage::metered::metered(storage, bytes.clone());
        let idx: Vec<usize> = cols
            .iter()
            .filter_map(|c| full.index_of(c.name()).ok())
            .collect();
        let schema: SchemaRef = Arc::new(full.project(&idx).map_err(|e| Error::Schema {
            path: plan.input.clone(),
            detail: e.to_string(),
        })?);
        let next = AtomicUsize::new(0);
        let counted: Mutex<Vec<(usize, usize, u64)>> = Mutex::new(Vec::new());
        let failed: Mutex<Option<Error>> = Mutex::new(None);
        let threads = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(2)
            .clamp(1, 16)
            .min(todo.len());
        std::thread::scope(|s| {
            for _ in 0..threads {
                s.spawn(|| loop {
                    let k = next.fetch_add(1, Ordering::Relaxed);
                    let Some(&(si, u, at)) = todo.get(k) else {
                        break;
                    };
                    if failed.lock().map(|f| f.is_some()).unwrap_or(true) {
                        break;
                    }
                    let unit = plan.splits[si].unit_alone(u);
                    let deleted = plan.deleted.get(&unit.path).map(|d| (d.as_ref(), at));
                    let r = count_unit(&metered, plan, &schema, &unit, bound, deleted, opts);
                    match r {
                        Ok(n) => counted.lock().expect("count list").push((si, u, n)),
                        Err(e) => {
                            let mut f = failed.lock().expect("count error");
                            f.get_or_insert(e);
                            break;
                        }
                    }
                });
            }
        });
        if let Some(e) = failed.into_inner().ok().flatten() {
            return Err(e);
        }
        for (si, u, n) in counted.into_inner().unwrap_or_default() {
            out[si][u] = n;
        }
        cost.bytes = bytes.get();
    }
    cost.rows_after = out.iter().flatten().sum();
    cost.secs = t0.elapsed().as_secs_f64();
    Ok((out, cost))
}

/// Rows of one unit (a split of one unit) that pass, leaving out those `deleted` (with the
/// unit's first row in its file) deletes.
fn count_unit(
    storage: &Arc<dyn Storage>,
    plan: &Plan,
    schema: &SchemaRef,
    unit: &Split,
    bound: &Arc<Bound>,
    deleted: Option<(&Deleted, u64)>,
    opts: &ReadOptions,
) -> Result<u64> {
    // Pruned as the reader prunes (not where rows are deleted by position): the same rows.
    let prune = Some(bound).filter(|_| deleted.is_none());
    let r = crate::open_projected(
        storage,
        schema,
        plan.read_schema.as_ref(),
        unit,
        opts,
        prune,
    )?;
    let mut n = 0u64;
    let mut row = deleted.map_or(0, |(_, at)| at);
    for b in r {
        let b = b?;
        let mut m = bound.eval(&b)?;
        if let Some((d, _)) = deleted {
            m = and_alive(m, d, row)?;
        }
        row += b.num_rows() as u64;
        n += m.true_count() as u64;
    }
    Ok(n)
}

/// `mask` and not deleted, for rows `row..` of the file.
fn and_alive(mask: BooleanArray, d: &Deleted, row: u64) -> Result<BooleanArray> {
    let n = mask.len() as u64;
    if d.count_in(row, row + n) == 0 {
        return Ok(mask);
    }
    let alive: BooleanArray = (row..row + n).map(|i| Some(!d.contains(i))).collect();
    arrow::compute::and(&mask, &alive).map_err(|e| Error::external("masking deleted rows", e))
}

/// The file row each split starts at (a file's splits are consecutive, in unit order).
pub(crate) fn first_rows(splits: &[Split]) -> Vec<u64> {
    let mut out = Vec::with_capacity(splits.len());
    let (mut path, mut at): (Option<&str>, u64) = (None, 0);
    for s in splits {
        if path != Some(s.path.as_str()) {
            (path, at) = (Some(s.path.as_str()), 0);
        }
        out.push(at);
        at += s.raw_units().iter().sum::<u64>();
    }
    out
}

/// Each split's rows per unit that its file's deletion vector left (no filter).
pub(crate) fn undeleted(plan: &Plan) -> Vec<Vec<u64>> {
    let starts = first_rows(&plan.splits);
    plan.splits
        .iter()
        .zip(starts)
        .map(|(s, mut at)| {
            let d = plan.deleted.get(&s.path);
            s.raw_units()
                .into_iter()
                .map(|rows| {
                    let left = rows - d.map_or(0, |d| d.count_in(at, at + rows));
                    at += rows;
                    left
                })
                .collect()
        })
        .collect()
}

/// Puts the counts (each split's passing rows per unit) into the splits; an error when they do
/// not fit the splits (counts of another plan).
pub(crate) fn apply(splits: &mut [Split], counts: &[Vec<u64>]) -> Result<()> {
    if counts.len() != splits.len() {
        return Err(Error::InvalidArgument(format!(
            "the filter's counts are of {} splits, the plan has {}: the coordinator planned \
             another input",
            counts.len(),
            splits.len()
        )));
    }
    let starts = first_rows(splits);
    for ((s, pass), first_row) in splits.iter_mut().zip(counts).zip(starts) {
        let raw = s.raw_units();
        if pass.len() != raw.len() || pass.iter().zip(&raw).any(|(p, r)| p > r) {
            return Err(Error::InvalidArgument(format!(
                "the filter's counts of split {} ({}) do not fit its units {raw:?}: the \
                 coordinator planned another input",
                s.id, s.path
            )));
        }
        s.rows = pass.iter().sum();
        s.units = if pass.len() > 1 {
            pass.clone()
        } else {
            Vec::new()
        };
        s.filter = Some(SplitFilter {
            raw,
            pass: pass.clone(),
            first_row,
        });
    }
    Ok(())
}

/// Reads a split of a filtered plan (or of a file with deleted rows): the rows that pass and
/// are not deleted, in the plan's schema.
pub(crate) struct Filtered {
    inner: Box<dyn SplitReader>,
    bound: Option<Arc<Bound>>,
    deleted: Option<Arc<Deleted>>,
    schema: SchemaRef,
    /// Output column `i` is column `out[i]` of the inner reader's batches.
    out: Vec<usize>,
    /// Rows before each unit boundary: the file's (`raw[i]`) and the filter's (`pass[i]`).
    raw_at: Vec<u64>,
    pass_at: Vec<u64>,
    filter: SplitFilter,
    /// Skips among a byte-range split's records, which its count never held.
    whole_units: bool,
    gaps: Vec<SkippedRows>,
    seen_gaps: usize,
    started: bool,
    /// Where the next batch starts (with deleted rows): its unit and the rows of it read.
    cur: usize,
    off: u64,
}

impl Filtered {
    /// `inner` reads `split` with the filter's extra columns after the plan's `schema`.
    pub(crate) fn new(
        inner: Box<dyn SplitReader>,
        bound: Option<Arc<Bound>>,
        deleted: Option<Arc<Deleted>>,
        schema: SchemaRef,
        split: &Split,
    ) -> Result<Self> {
        let filter = split.filter.clone().ok_or_else(|| {
            Error::Internal(format!(
                "split {} of a filtered plan has no filter counts",
                split.id
            ))
        })?;
        let inner_schema = inner.schema();
        let out = schema
            .fields()
            .iter()
            .map(|f| {
                inner_schema.index_of(f.name()).map_err(|_| {
                    Error::Internal(format!("filtered read: no column {:?}", f.name()))
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let prefix = |v: &[u64]| {
            std::iter::once(0)
                .chain(v.iter().scan(0u64, |a, &x| {
                    *a += x;
                    Some(*a)
                }))
                .collect::<Vec<u64>>()
        };
        Ok(Self {
            inner,
            bound,
            deleted,
            schema,
            out,
            raw_at: prefix(&filter.raw),
            pass_at: prefix(&filter.pass),
            whole_units: !matches!(split.unit, crate::split::SplitUnit::Bytes { .. }),
            filter,
            gaps: Vec::new(),
            seen_gaps: 0,
            started: false,
            cur: 0,
            off: 0,
        })
    }

    /// Which rows of `b`, the next batch of the inner reader, are read: those the predicate
    /// holds for and no deletion vector deleted (`None`: all).
    fn keep(&mut self, b: &RecordBatch) -> Result<Option<BooleanArray>> {
        let mut mask = match &self.bound {
            Some(f) => Some(f.eval(b)?),
            None => None,
        };
        if let Some(d) = &self.deleted {
            let units = self.filter.raw.len();
            // Batches never span units; units that count 0 are not read.
            while self.cur < units
                && (self.filter.pass[self.cur] == 0 || self.off >= self.filter.raw[self.cur])
            {
                self.cur += 1;
                self.off = 0;
            }
            let row = self.filter.first_row + self.raw_at[self.cur.min(units)] + self.off;
            self.off += b.num_rows() as u64;
            let n = b.num_rows() as u64;
            if d.count_in(row, row + n) > 0 {
                let all = BooleanArray::from(vec![true; b.num_rows()]);
                mask = Some(and_alive(mask.unwrap_or(all), d, row)?);
            }
        }
        Ok(mask)
    }

    /// The inner reader's new skipped ranges, in the filter's positions: a unit skipped whole
    /// is the unit's passing rows. A skip inside a byte-range split held no counted row (its
    /// counting pass skipped the same records), so it holds no position.
    fn map_gaps(&mut self) {
        let inner = self.inner.skipped_rows();
        for g in &inner[self.seen_gaps..] {
            let a = self.raw_at.iter().position(|&r| r == g.start);
            let b = self.raw_at.iter().rposition(|&r| r == g.end);
            if let (Some(a), Some(b)) = (a, b) {
                if self.cur < b {
                    (self.cur, self.off) = (b, 0);
                }
                if self.pass_at[b] > self.pass_at[a] {
                    self.gaps.push(SkippedRows {
                        start: self.pass_at[a],
                        end: self.pass_at[b],
                        reason: g.reason.clone(),
                    });
                }
            }
        }
        self.seen_gaps = inner.len();
    }

    fn step(&mut self) -> Option<Result<RecordBatch>> {
        loop {
            let b = self.inner.next();
            self.map_gaps();
            let b = match b? {
                Ok(b) => b,
                Err(e) => return Some(Err(e)),
            };
            self.started = true;
            let kept = self.keep(&b).and_then(|mask| match mask {
                None => Ok(b),
                Some(m) => arrow_select::filter::filter_record_batch(&b, &m)
                    .map_err(|e| Error::external("filtering a batch", e)),
            });
            let kept = match kept {
                Ok(k) => k,
                Err(e) => return Some(Err(e)),
            };
            if kept.num_rows() == 0 {
                continue;
            }
            let cols = self.out.iter().map(|&i| kept.column(i).clone()).collect();
            return Some(
                RecordBatch::try_new_with_options(
                    self.schema.clone(),
                    cols,
                    &arrow_array::RecordBatchOptions::new().with_row_count(Some(kept.num_rows())),
                )
                .map_err(|e| Error::Internal(format!("filtered batch: {e}"))),
            );
        }
    }
}

impl Iterator for Filtered {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Self::Item> {
        self.step()
    }
}

impl SplitReader for Filtered {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn skipped(&self) -> SkipStats {
        self.inner.skipped()
    }

    fn skipped_rows(&self) -> &[SkippedRows] {
        &self.gaps
    }

    /// Passes over whole units holding at most `n` passing rows: the file rows of those the
    /// inner reader reads (units that count 0 are not among them).
    fn skip_rows(&mut self, n: u64) -> u64 {
        if self.started || !self.whole_units {
            return 0;
        }
        let (mut pass, mut raw, mut units) = (0u64, 0u64, 0usize);
        for (p, r) in self.filter.pass.iter().zip(&self.filter.raw) {
            if pass + p > n {
                break;
            }
            pass += p;
            units += 1;
            if *p > 0 {
                raw += r;
            }
        }
        if raw == 0 {
            return 0;
        }
        if self.inner.skip_rows(raw) == raw {
            self.started = true;
            (self.cur, self.off) = (units, 0);
            pass
        } else {
            0
        }
    }
}
