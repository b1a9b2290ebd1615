//! Format readers: Parquet, ORC, Avro and TFRecord files into Arrow `RecordBatch`es.
//!
//! [`plan`] lists an input (file, directory as Spark/Hive write them, or glob) and cuts every
//! file into [`Split`]s from its own metadata; [`open_split`] reads one split.

use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;

use hydrofeed_storage::{FileStatus, Storage};

use crate::split::{Format, Split, SplitUnit};
pub use hydrofeed_error::{Error, Location, Result};

pub mod avro;
mod calendar;
pub mod deletion;
pub mod delta;
pub mod filter;
pub mod filtered;
pub mod gather;
pub mod gen;
pub mod gen_images;
pub mod iceberg;
pub mod image;
mod io;
pub mod listing;
pub mod mapping;
pub mod orc;
pub mod parquet;
mod parquet_fixed;
mod parquet_pages;
mod parquet_prune;
mod parquet_simd;
mod parquet_spark;
mod parquet_values;
pub mod rebatch;
pub mod split;
pub mod tfrecord;
mod units;

pub use gather::Gather;
pub use rebatch::{Rebatcher, Rowset};

/// What to do with a corrupt record or block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnError {
    /// Stop with a `DataError` (default).
    #[default]
    Raise,
    /// Skip the bad record or block, count it and log its location.
    Skip,
}

/// How ORC `timestamp` columns (without a time zone) are read when a stripe names a writer's
/// time zone other than UTC (the Java writer records the JVM's zone). See docs/formats.md.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OrcTimestamps {
    /// The instant the writer's zone gives each wall clock, as Spark reads them back on the
    /// cluster that wrote them (default).
    #[default]
    Instant,
    /// The wall clock the writer saw, read as UTC, as Hive and the ORC C++ reader (pyarrow)
    /// read them.
    Wall,
}

/// Options for planning and reading.
#[derive(Debug, Clone)]
pub struct ReadOptions {
    /// Columns to read (projection); `None` reads all.
    pub columns: Option<Vec<String>>,
    /// Rows per batch the reader yields (the last batch of a split may be shorter).
    pub batch_rows: usize,
    /// Corrupt-input policy.
    pub on_error: OnError,
    /// Format, when it cannot be told from file names.
    pub format: Option<Format>,
    /// Schema to decode with (TFRecord: instead of inferring it; Avro: reader schema).
    pub schema: Option<SchemaRef>,
    /// Target bytes per split when a format splits by byte range.
    pub split_bytes: u64,
    /// How ORC timestamps written in a zone other than UTC are read.
    pub orc_timestamps: OrcTimestamps,
    /// The snapshot of a table input to read (default: the newest at planning time).
    pub snapshot: Option<delta::SnapshotSpec>,
    /// Rows to read: those the predicate holds for (see [`filter`] and [`filtered`]).
    pub filter: Option<filter::Filter>,
    /// Image columns decoded into `uint8` tensor columns (see [`image`]).
    pub images: Vec<image::ImageSpec>,
}

impl Default for ReadOptions {
    fn default() -> Self {
        Self {
            columns: None,
            batch_rows: 8192,
            on_error: OnError::Raise,
            format: None,
            schema: None,
            split_bytes: 64 << 20,
            orc_timestamps: OrcTimestamps::Instant,
            snapshot: None,
            filter: None,
            images: Vec::new(),
        }
    }
}

/// The plan of an input: files, splits, and the (projected) schema every split yields.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The input as given.
    pub input: String,
    /// Format of the files.
    pub format: Format,
    /// Schema of the batches (after projection, partition columns appended).
    pub schema: SchemaRef,
    /// All splits, in listing order; `Split::id` is the index.
    pub splits: Vec<Split>,
    /// The files listed, in listing order (empty ones included): what a resumed job's input
    /// fingerprint is made of.
    pub files: Vec<FileStatus>,
    /// The schema every file is decoded with when it is not the file's own: the one given,
    /// or for Avro files of successive schemas the newest writer schema (the reader schema).
    pub read_schema: Option<SchemaRef>,
    /// The table snapshot planned, when the input is a table: the files are its live ones.
    pub table: Option<delta::TableSnapshot>,
    /// The filter, when the read has one: the splits' rows are then those that pass.
    pub filter: Option<filtered::PlanFilter>,
    /// The rows deletion vectors deleted, by data file path (Delta tables): the splits' rows
    /// leave them out.
    pub deleted: std::collections::HashMap<String, Arc<deletion::Deleted>>,
}

impl Plan {
    /// Total rows of all splits.
    pub fn total_rows(&self) -> u64 {
        self.splits.iter().map(|s| s.rows).sum()
    }

    /// Rows of each split, in split order.
    pub fn split_rows(&self) -> Vec<u64> {
        self.splits.iter().map(|s| s.rows).collect()
    }

    /// The units of each split (`Split::units`), in split order: what the fixed order cuts
    /// its lanes at, besides the splits.
    pub fn split_units(&self) -> Vec<Vec<u64>> {
        self.splits.iter().map(|s| s.units.clone()).collect()
    }

    /// Under a filter, the rows of each split's units that pass it (what a feeder takes from
    /// its coordinator, [`plan_counted`]); `None` without a filter.
    pub fn filter_counts(&self) -> Option<Vec<Vec<u64>>> {
        self.filter.as_ref()?;
        Some(
            self.splits
                .iter()
                .map(|s| {
                    s.filter
                        .as_ref()
                        .map(|f| f.pass.clone())
                        .unwrap_or_default()
                })
                .collect(),
        )
    }
}

/// Counters a reader keeps of what its `on_error = skip` policy skipped.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SkipStats {
    /// Records or rows skipped.
    pub records: u64,
    /// Blocks (row groups, stripes, Avro blocks) skipped.
    pub blocks: u64,
}

/// Rows of a split that `OnError::Skip` left out: positions `[start, end)` counted from the
/// split's first row as the plan counts them (a unit whose rows the plan counted and the reader
/// could not decode), and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedRows {
    /// First position left out.
    pub start: u64,
    /// One past the last.
    pub end: u64,
    /// The unit and what was wrong with it.
    pub reason: String,
}

impl SkippedRows {
    /// Rows left out.
    pub fn rows(&self) -> u64 {
        self.end - self.start
    }

    /// `e` as the reason of a skip: where in the file and what was wrong.
    pub fn reason_of(e: &Error) -> String {
        match e {
            Error::Data { loc, detail, .. } => match (&loc.unit, loc.offset) {
                (Some(u), Some(o)) => format!("{u} at byte {o}: {detail}"),
                (Some(u), None) => format!("{u}: {detail}"),
                (None, Some(o)) => format!("byte {o}: {detail}"),
                (None, None) => detail.clone(),
            },
            e => e.to_string(),
        }
    }
}

/// A reader of one split.
pub trait SplitReader: Iterator<Item = Result<RecordBatch>> + Send {
    /// The schema of the batches it yields.
    fn schema(&self) -> SchemaRef;
    /// What was skipped so far under `OnError::Skip`.
    fn skipped(&self) -> SkipStats;
    /// The positions `OnError::Skip` left out so far, in order. Every range that comes before
    /// a row of a batch the reader returned is in it when that batch is returned, so a caller
    /// that counts positions can tell which position each row holds. Records the plan never
    /// counted (TFRecord records with a bad CRC, Avro blocks that cannot be framed) hold no
    /// position and are not here.
    fn skipped_rows(&self) -> &[SkippedRows] {
        &[]
    }
    /// Passes over whole units at the head of what is left to read (row groups, stripes, Avro
    /// blocks, TFRecord records) that hold at most `n` rows together, without reading or
    /// decoding them, and returns how many rows it passed over: 0 once reading has started,
    /// or for a reader that cannot. A lease that starts at row `k` of a split calls this with
    /// `k` and drops only the rest from the batches that follow, so it costs what it reads.
    fn skip_rows(&mut self, n: u64) -> u64 {
        let _ = n;
        0
    }
}

/// Lists `input` and plans its splits.
///
/// `input` is a file, a directory as Spark and Hive write them (part files, `key=value/`
/// partition directories whose values become appended columns; `_SUCCESS`, `_metadata`,
/// `.crc` and other hidden `.`/`_` names ignored), or a glob over such names. See
/// [`listing`] for the rules.
///
/// - 0-byte files hold no records and are left out, in every format, as Spark does (jobs write
///   empty part files); they contribute no schema. Zero-row files with a schema contribute it.
/// - Every file must have the same schema, except Avro files written under successive schemas:
///   they are all read with the newest writer schema (that of the last file in listing order)
///   as the reader schema, by Avro's resolution rules (fields added with defaults).
/// - `opts.schema`, when given, is the schema of the read; a dataset with no file to take a
///   schema from and none given is a `SchemaError` that says so.
///
/// Under a filter (`opts.filter`), every split's rows are counted here (see [`filtered`]).
pub fn plan(storage: &Arc<dyn Storage>, input: &str, opts: &ReadOptions) -> Result<Plan> {
    plan_counted(storage, input, opts, None)
}

/// [`plan`], with the filter's counts (each split's passing rows per unit, as
/// [`Plan::filter_counts`] gives them) taken from the plan that made them instead of counted
/// again: what a feeder does with its coordinator's.
pub fn plan_counted(
    storage: &Arc<dyn Storage>,
    input: &str,
    opts: &ReadOptions,
    counts: Option<&[Vec<u64>]>,
) -> Result<Plan> {
    let files = listing::list(
        storage,
        input,
        opts.format,
        opts.snapshot.as_ref(),
        opts.filter.as_ref(),
    )?;
    let table = files.table.clone();
    let manifests_ruled_out = files.manifests_ruled_out;
    let format = files.format;
    let mut deleted = std::collections::HashMap::new();
    for f in &files.files {
        if let Some(dv) = &f.deletion {
            let d = dv.load(storage, input, &f.status.path)?;
            deleted.insert(f.status.path.clone(), Arc::new(d));
        }
    }
    let mut read_schema = opts.schema.clone();
    let mut planned = plan_files(storage, &files, opts);
    if format == Format::Avro && opts.schema.is_none() {
        if let Err(crate::Error::Schema { .. }) = &planned {
            // Files written under successive schemas: read all with the newest one.
            if let Some(newest) = files.files.iter().rev().find(|f| f.status.len > 0) {
                let reader = avro::writer_schema(storage, &newest.status)?;
                let mut o = opts.clone();
                o.schema = Some(reader.clone());
                planned = plan_files(storage, &files, &o);
                read_schema = Some(reader);
            }
        }
    }
    let (first, splits, files_ruled_out) = planned?;
    if let (Some((p, s)), Some(given), Format::Parquet | Format::Orc) =
        (&first, &opts.schema, format)
    {
        listing::same_schema("the given schema", given, p, s)?;
    }
    let (first_path, file_schema) = match (first, &opts.schema) {
        (Some(f), _) => f,
        (None, Some(s)) => (input.to_string(), s.clone()),
        (None, None) => {
            return Err(crate::Error::Schema {
                path: input.to_string(),
                detail: format!(
                    "no record to read and no schema to read it with: its {} file(s) are empty; \
                     pass the schema (schema= in Python, --schema FILE on the command line)",
                    files.files.len()
                ),
            })
        }
    };
    let schema = listing::plan_schema(
        &first_path,
        &file_schema,
        &files.partition_fields,
        opts.columns.as_deref(),
    )?;
    if let Some(name) = nul_name(schema.fields()) {
        return Err(crate::Error::Schema {
            path: first_path,
            detail: format!(
                "column {name:?} has a NUL character in its name: Arrow's C data interface \
                 (pyarrow, the trainer's batches) cuts names there; rename it, or leave it out \
                 with columns="
            ),
        });
    }
    let mut plan = Plan {
        input: input.to_string(),
        format,
        schema,
        splits,
        read_schema,
        files: files.files.into_iter().map(|f| f.status).collect(),
        table,
        filter: None,
        deleted,
    };
    if opts.filter.is_none() && !plan.deleted.is_empty() {
        let counts = filtered::undeleted(&plan);
        filtered::apply(&mut plan.splits, &counts)?;
    }
    if let Some(f) = &opts.filter {
        let full = listing::plan_schema(&first_path, &file_schema, &files.partition_fields, None)?;
        let bound = Arc::new(f.bind(&full)?);
        let (counts, cost) = match counts {
            Some(c) => (
                c.to_vec(),
                filtered::FilterCost {
                    rows_before: plan.total_rows(),
                    rows_after: c.iter().flatten().sum(),
                    units: c.iter().map(|u| u.len() as u64).sum(),
                    given: true,
                    ..Default::default()
                },
            ),
            None => filtered::count(storage, &plan, &bound, &full, opts)?,
        };
        filtered::apply(&mut plan.splits, &counts)?;
        let cost = filtered::FilterCost {
            files_ruled_out,
            manifests_ruled_out,
            ..cost
        };
        tracing::info!("filter {:?}: {}", f.text(), cost.line());
        let extra = bound
            .columns()
            .iter()
            .filter(|c| plan.schema.field_with_name(c.name()).is_err())
            .cloned()
            .collect();
        plan.filter = Some(filtered::PlanFilter { bound, extra, cost });
    }
    plan.schema = image::image_schema(&plan.schema, &opts.images, input)?;
    Ok(plan)
}

/// The first column name (nested ones included) holding a NUL character.
fn nul_name(fields: &arrow_schema::Fields) -> Option<String> {
    use arrow_schema::DataType;
    fields.iter().find_map(|f| {
        if f.name().contains('\0') {
            return Some(f.name().clone());
        }
        match f.data_type() {
            DataType::Struct(fs) => nul_name(fs),
            DataType::List(c)
            | DataType::LargeList(c)
            | DataType::FixedSizeList(c, _)
            | DataType::Map(c, _) => nul_name(&arrow_schema::Fields::from(vec![c.clone()])),
            _ => None,
        }
    })
}

/// The first file with a schema (its path and schema), the splits of every file, and how
/// many files a table's statistics ruled out under the filter (never opened).
type Planned = (Option<(String, SchemaRef)>, Vec<Split>, u64);

fn plan_files(
    storage: &Arc<dyn Storage>,
    files: &listing::Listing,
    opts: &ReadOptions,
) -> Result<Planned> {
    let mut splits: Vec<Split> = Vec::new();
    let mut first: Option<(String, SchemaRef)> = None;
    // The filter, once the first file told the schema: what a table's file statistics are
    // checked against.
    let mut bound: Option<filter::Bound> = None;
    let mut ruled_out = 0u64;
    // A table that states its schema (Iceberg; Delta with column mapping): bound before any
    // file is opened, so its first file too is ruled out unread.
    if let (Some(filter), Some(t)) = (&opts.filter, &files.columns) {
        let full = listing::plan_schema("the table", &t.schema(), &files.partition_fields, None)?;
        bound = filter.bind(&full).ok();
    }
    for f in files.files.iter().filter(|f| f.status.len > 0) {
        if let (Some(b), Some(st)) = (&bound, &f.stats) {
            if filtered::table_stats_rule_out(b, st, &f.partition) {
                ruled_out += 1;
                continue;
            }
        }
        if let Some(mut sp) = unread_splits(files, f, opts, bound.as_ref(), splits.len() as u32) {
            if let (None, Some(t)) = (&first, &files.columns) {
                first = Some((f.status.path.clone(), t.schema()));
            }
            for s in &mut sp {
                s.partition = f.partition.clone();
                s.table = files.columns.clone();
            }
            splits.extend(sp);
            continue;
        }
        let (schema, mut sp) =
            plan_file(files.format, storage, &f.status, opts, splits.len() as u32)?;
        // A table whose files name its columns otherwise: the table's schema, each file's
        // columns found in it.
        let (schema, columns) = match &files.columns {
            Some(t) => (t.schema(), Some(t.file(&f.status.path, &schema)?)),
            None => (schema, None),
        };
        match &first {
            None => {
                if let (Some(filter), true, None) = (&opts.filter, files.table.is_some(), &bound) {
                    let full = listing::plan_schema(
                        &f.status.path,
                        &schema,
                        &files.partition_fields,
                        None,
                    )?;
                    bound = filter.bind(&full).ok();
                    if let (Some(b), Some(st)) = (&bound, &f.stats) {
                        if filtered::table_stats_rule_out(b, st, &f.partition) {
                            sp.clear();
                            ruled_out += 1;
                        }
                    }
                }
                first = Some((f.status.path.clone(), schema));
            }
            Some((p0, s0)) => listing::same_schema(p0, s0, &f.status.path, &schema)?,
        }
        for s in &mut sp {
            s.partition = f.partition.clone();
            s.columns = columns.clone();
        }
        splits.extend(sp);
    }
    if let (None, Some(t), Some(f)) = (&first, &files.columns, files.files.first()) {
        // Every file ruled out unread: the table's schema is the plan's.
        first = Some((f.status.path.clone(), t.schema()));
    }
    Ok((first, splits, ruled_out))
}

/// A table's data file planned from its metadata alone, without reading the file: where the
/// table states its columns (each file's resolved when a split is opened), records the file's
/// row count, no filter needs its rows counted (none, or the table's statistics say every row
/// passes: `bound`, the filter bound to the table), the file is Parquet (the tables read here
/// hold their rows in Parquet), and it is no larger than a split (so its footer would make it
/// one split anyway). One split of the whole file ([`SplitUnit::File`]); none for a file of
/// no rows. `None`: plan it from its footer.
fn unread_splits(
    files: &listing::Listing,
    f: &listing::Listed,
    opts: &ReadOptions,
    bound: Option<&filter::Bound>,
    id: u32,
) -> Option<Vec<Split>> {
    let stats = f.stats.as_ref()?;
    let counted = match (&opts.filter, bound) {
        (None, _) => true,
        (Some(_), Some(b)) => filtered::table_stats_all_pass(b, stats, &f.partition),
        (Some(_), None) => false,
    };
    if files.columns.is_none()
        || !counted
        || files.format != Format::Parquet
        || f.status.len > opts.split_bytes
    {
        return None;
    }
    let rows = stats.get("numRecords")?.as_u64()?;
    if rows == 0 {
        return Some(Vec::new());
    }
    let part = (SplitUnit::File, rows, f.status.len);
    Some(split::file_splits(&f.status.path, files.format, id, [part]))
}

/// Plans one file of a known format (the per-format `plan_file`).
pub fn plan_file(
    format: Format,
    storage: &Arc<dyn Storage>,
    file: &hydrofeed_storage::FileStatus,
    opts: &ReadOptions,
    first_id: u32,
) -> Result<(SchemaRef, Vec<Split>)> {
    match format {
        Format::Parquet => parquet::plan_file(storage, file, opts, first_id),
        Format::Orc => orc::plan_file(storage, file, opts, first_id),
        Format::Avro => avro::plan_file(storage, file, opts, first_id),
        Format::Tfrecord => tfrecord::plan_file(storage, file, opts, first_id),
    }
}

/// Opens one split of a plan for reading: batches of `plan.schema` (projection applied,
/// partition columns appended as constants; under a filter, the rows that pass).
pub fn open_split(
    storage: &Arc<dyn Storage>,
    plan: &Plan,
    split: &Split,
    opts: &ReadOptions,
) -> Result<Box<dyn SplitReader>> {
    if opts.images.is_empty() {
        return open_split_as(storage, plan, &plan.schema, split, opts);
    }
    let source = image::source_schema(&plan.schema);
    let inner = open_split_as(storage, plan, &source, split, opts)?;
    Ok(Box::new(image::ImageReader::new(
        inner,
        plan.schema.clone(),
        opts.images.clone(),
        opts.on_error,
        split.path.clone(),
        split.id,
    )))
}

/// [`open_split`] for batches of `schema` (the plan's, or its images' sources).
fn open_split_as(
    storage: &Arc<dyn Storage>,
    plan: &Plan,
    schema: &SchemaRef,
    split: &Split,
    opts: &ReadOptions,
) -> Result<Box<dyn SplitReader>> {
    let deleted = plan.deleted.get(&split.path).cloned();
    if plan.filter.is_none() && deleted.is_none() {
        return open_projected(
            storage,
            schema,
            plan.read_schema.as_ref(),
            split,
            opts,
            None,
        );
    }
    let mut fields: Vec<arrow_schema::FieldRef> = schema.fields().iter().cloned().collect();
    if let Some(f) = &plan.filter {
        fields.extend(f.extra.iter().map(|x| Arc::new(x.clone())));
    }
    let read: SchemaRef = Arc::new(arrow_schema::Schema::new_with_metadata(
        fields,
        schema.metadata().clone(),
    ));
    // Pages no row of which passes are left unread, except where rows are deleted by their
    // position in the file (the filter then counts the file's rows as they come).
    let bound = plan.filter.as_ref().map(|f| &f.bound);
    let prune = bound.filter(|_| deleted.is_none());
    let inner = open_projected(
        storage,
        &read,
        plan.read_schema.as_ref(),
        split,
        opts,
        prune,
    )?;
    Ok(Box::new(filtered::Filtered::new(
        inner,
        plan.filter.as_ref().map(|f| f.bound.clone()),
        deleted,
        schema.clone(),
        split,
    )?))
}

/// Opens `split` for batches of `schema` (columns of the file and partition keys; the files
/// decoded with `read_schema` where it is given). `prune`: a filter whose page statistics may
/// leave pages of a Parquet file unread (see `parquet_prune`): only rows that do not pass are
/// left out, so the caller still applies it to every row.
pub(crate) fn open_projected(
    storage: &Arc<dyn Storage>,
    schema: &SchemaRef,
    read_schema: Option<&SchemaRef>,
    split: &Split,
    opts: &ReadOptions,
    prune: Option<&Arc<filter::Bound>>,
) -> Result<Box<dyn SplitReader>> {
    // A table's file planned without its footer: its columns found now, from the footer.
    let resolved;
    let split = match (&split.columns, &split.table) {
        (None, Some(t)) => {
            let file = match split.format {
                Format::Parquet => parquet::file_schema(storage, &split.path)?,
                Format::Orc | Format::Avro | Format::Tfrecord => {
                    return Err(Error::Internal(format!(
                        "{}: a {} split planned without its footer",
                        split.path,
                        split.format.name()
                    )))
                }
            };
            resolved = Split {
                columns: Some(t.file(&split.path, &file)?),
                ..split.clone()
            };
            &resolved
        }
        _ => split,
    };
    let is_part = |name: &str| split.partition.iter().any(|(k, _)| k == name);
    let file_fields: Vec<_> = schema
        .fields()
        .iter()
        .filter(|f| !is_part(f.name()))
        .cloned()
        .collect();
    let file_schema: SchemaRef = Arc::new(arrow_schema::Schema::new(file_fields));
    let mut file_opts = opts.clone();
    if read_schema.is_some() {
        file_opts.schema = read_schema.cloned();
    }
    // A table's file is read by its own names (`mapping`), its batches renamed after.
    let read = match &split.columns {
        Some(c) => c.file_schema(&file_schema)?,
        None => file_schema.clone(),
    };
    file_opts.columns = Some(read.fields().iter().map(|f| f.name().clone()).collect());
    let inner = match split.format {
        // (A table file read by other names or types than the filter's is not pruned.)
        Format::Parquet => {
            match prune.filter(|_| split.columns.as_ref().is_none_or(|c| c.is_identity())) {
                Some(b) => parquet::open_pruned(storage, split, &read, &file_opts, b.clone())?,
                None => parquet::open(storage, split, &read, &file_opts)?,
            }
        }
        Format::Orc => orc::open(storage, split, &read, &file_opts)?,
        Format::Avro => avro::open(storage, split, &read, &file_opts)?,
        Format::Tfrecord => tfrecord::open(storage, split, &read, &file_opts)?,
    };
    let inner = match &split.columns {
        Some(c) => c.reader(inner, file_schema)?,
        None => inner,
    };
    if &inner.schema() == schema {
        return Ok(inner);
    }
    // Partition columns to append, or only schema metadata differing from the first file's
    // (pandas metadata, created_by): batches always carry exactly `schema`.
    Ok(Box::new(listing::WithPartition::new(
        inner,
        schema.clone(),
        split,
    )?))
}
