//! Parquet reader.
//!
//! Contract shared by every format module: `plan_file` cuts one file into splits from its own
//! metadata and returns the file's (unprojected) schema; `open` reads one split, yielding
//! batches of the projected `schema` (without partition columns, which `format::open_split`
//! appends).
//!
//! - Plan: from the footer only (rows and compressed bytes per row group); consecutive row
//!   groups are grouped into one split up to `opts.split_bytes` (one row group per split when
//!   row groups are at least that large).
//! - Read: through `StorageChunks` (the `parquet` crate's `ChunkReader` over
//!   `RandomAccess::read_at`), in the reader loop shared with ORC (`units.rs`), one
//!   `ParquetRecordBatchReader` per row group so that an error
//!   names its row group and `OnError::Skip` can drop exactly one. Batches therefore never
//!   span two row groups.
//! - Projection: top-level column names (a nested list/struct column comes whole, with all its
//!   leaves) via `ProjectionMask::roots`; batches come in the order the names were given.
//! - Spark's files (`parquet_spark.rs`): INT96 read in microseconds; values Spark wrote in
//!   the hybrid calendar (`LEGACY` rebase mode, Spark 2) rebased as Spark reads them.
//! - Codecs: whatever the workspace enables on `parquet` (snappy, gzip, brotli, lz4, lz4_raw,
//!   zstd); a codec not built in is a `DataError` naming the row group.

use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::{Schema, SchemaRef};
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReader,
    ParquetRecordBatchReaderBuilder,
};
use parquet::arrow::ProjectionMask;

use super::io::{check_head_magic, column_indices, guard, loc, not_this_format, StorageChunks};
use super::parquet_fixed::FixedRg;
use super::parquet_spark::{int96_micros, legacy, rebase_batch, SparkLegacy};
use super::units::{unit_splits, Projection, UnitBatches, UnitReader, UnitSize, Units};
use super::{ReadOptions, SplitReader};
use crate::split::{Format, Split, SplitUnit};
use crate::{Error, Result};
use hydrofeed_storage::{FileStatus, Storage};

const FORMAT: &str = "parquet";

/// Largest projected size of a row group that is read ahead whole (see
/// [`StorageChunks::read_ahead`]); a larger one is read page by page so memory stays bounded.
const READ_AHEAD_MAX: u64 = 256 << 20;

/// Loads the footer, with errors naming the file.
fn load(chunks: &StorageChunks, path: &str) -> Result<ArrowReaderMetadata> {
    check_head_magic(chunks.file(), b"PAR1", FORMAT)?;
    let len = chunks.file().len();
    let at = || {
        loc(
            path,
            None,
            Some(len.saturating_sub(8)),
            Some("footer".into()),
        )
    };
    let meta = guard(at, FORMAT, || {
        ArrowReaderMetadata::load(chunks, ArrowReaderOptions::new()).map_err(|e| {
            chunks.take_error().unwrap_or_else(|| {
                not_this_format(
                    path,
                    len,
                    FORMAT,
                    format!("not a readable Parquet file: {e}"),
                )
            })
        })
    })?;
    Ok(with_int96_micros(with_stored_zones(meta)))
}

/// INT96 columns as `timestamp[us]` (their range is years 1 to 9999 and more).
fn with_int96_micros(meta: ArrowReaderMetadata) -> ArrowReaderMetadata {
    let Some((schema, _)) = int96_micros(meta.metadata(), meta.schema()) else {
        return meta;
    };
    ArrowReaderMetadata::try_new(
        meta.metadata().clone(),
        ArrowReaderOptions::new().with_schema(schema),
    )
    .unwrap_or(meta)
}

/// The time zones of the file's stored Arrow schema (`ARROW:schema`, written by pyarrow and
/// arrow-rs) on its timestamp columns. The parquet crate applies a stored timestamp type only
/// when its unit is the one in the file, and otherwise reads `UTC`: pyarrow stores
/// `timestamp[s, tz=+01:00]` as milliseconds and reads `timestamp[ms, tz=+01:00]` back; so do we.
fn with_stored_zones(meta: ArrowReaderMetadata) -> ArrowReaderMetadata {
    use arrow_schema::DataType::Struct;
    let Some(stored) = stored_arrow_schema(&meta) else {
        return meta;
    };
    let read = Struct(meta.schema().fields().clone());
    let Some(Struct(fields)) = zoned(&read, &Struct(stored.fields().clone())) else {
        return meta;
    };
    let schema = Arc::new(arrow_schema::Schema::new_with_metadata(
        fields,
        meta.schema().metadata().clone(),
    ));
    ArrowReaderMetadata::try_new(
        meta.metadata().clone(),
        ArrowReaderOptions::new().with_schema(schema),
    )
    .unwrap_or(meta)
}

/// `read` (the type the parquet crate gives) with the zones of `stored` (the type the writer
/// stored) on its timestamps, nested ones included; `None` when nothing changes.
fn zoned(
    read: &arrow_schema::DataType,
    stored: &arrow_schema::DataType,
) -> Option<arrow_schema::DataType> {
    use arrow_schema::DataType as T;
    let child = |r: &arrow_schema::FieldRef, s: &arrow_schema::FieldRef| {
        zoned(r.data_type(), s.data_type()).map(|t| Arc::new(r.as_ref().clone().with_data_type(t)))
    };
    match (read, stored) {
        (T::Timestamp(unit, Some(tz)), T::Timestamp(_, Some(want))) if want != tz => {
            Some(T::Timestamp(*unit, Some(want.clone())))
        }
        (T::List(r), T::List(s) | T::LargeList(s) | T::FixedSizeList(s, _)) => {
            child(r, s).map(T::List)
        }
        (T::LargeList(r), T::List(s) | T::LargeList(s) | T::FixedSizeList(s, _)) => {
            child(r, s).map(T::LargeList)
        }
        (T::FixedSizeList(r, n), T::List(s) | T::LargeList(s) | T::FixedSizeList(s, _)) => {
            child(r, s).map(|c| T::FixedSizeList(c, *n))
        }
        (T::Map(r, sorted), T::Map(s, _)) => child(r, s).map(|c| T::Map(c, *sorted)),
        (T::Struct(rs), T::Struct(ss)) => {
            let mut any = false;
            let fields: Vec<arrow_schema::FieldRef> = rs
                .iter()
                .map(|r| match ss.find(r.name()).and_then(|(_, s)| child(r, s)) {
                    Some(c) => {
                        any = true;
                        c
                    }
                    None => r.clone(),
                })
                .collect();
            any.then(|| T::Struct(fields.into()))
        }
        _ => None,
    }
}

/// The Arrow schema stored in the file's key-value metadata (`ARROW:schema`), if any.
fn stored_arrow_schema(meta: &ArrowReaderMetadata) -> Option<arrow_schema::Schema> {
    use base64::Engine;
    let kv = meta.metadata().file_metadata().key_value_metadata()?;
    let text = kv
        .iter()
        .find(|k| k.key == "ARROW:schema")?
        .value
        .as_ref()?;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text)
        .ok()?;
    // An IPC message, with or without the 0xFFFFFFFF continuation marker before its length.
    let body = if bytes.len() > 8 && bytes[..4] == [0xff; 4] {
        &bytes[8..]
    } else {
        bytes.get(4..)?
    };
    let msg = arrow_ipc::root_as_message(body).ok()?;
    Some(arrow_ipc::convert::fb_to_schema(msg.header_as_schema()?))
}

/// Plans the splits of one file; ids start at `first_id`.
pub fn plan_file(
    storage: &Arc<dyn Storage>,
    file: &FileStatus,
    opts: &ReadOptions,
    first_id: u32,
) -> Result<(SchemaRef, Vec<Split>)> {
    let chunks = StorageChunks::new(storage.open(&file.path)?);
    let meta = load(&chunks, &file.path)?;
    let units: Vec<UnitSize> = meta
        .metadata()
        .row_groups()
        .iter()
        .map(|rg| UnitSize {
            rows: rg.num_rows().max(0) as u64,
            bytes: rg.compressed_size().max(0) as u64,
        })
        .collect();
    let splits = unit_splits(
        &file.path,
        Format::Parquet,
        first_id,
        &units,
        opts.split_bytes,
        |first, count| SplitUnit::RowGroups { first, count },
    );
    Ok((meta.schema().clone(), splits))
}

/// The schema of a Parquet file as its reader yields it (what [`plan_file`] gives): read from
/// the footer, which is handed on to the next [`open`] of the same file on this thread (a
/// table's file planned unread is opened for its columns, then read: one footer read).
pub(crate) fn file_schema(storage: &Arc<dyn Storage>, path: &str) -> Result<SchemaRef> {
    let file = storage.open(path)?;
    let meta = load(&StorageChunks::new(file.clone()), path)?;
    let schema = meta.schema().clone();
    HANDED.with(|h| *h.borrow_mut() = Some((path.to_string(), file, meta)));
    Ok(schema)
}

/// A file handle and its footer.
type Footer = (
    String,
    Arc<dyn hydrofeed_storage::RandomAccess>,
    ArrowReaderMetadata,
);

thread_local! {
    /// The footer [`file_schema`] loaded last on this thread, taken by the next open of the
    /// same file (any other open drops it).
    static HANDED: std::cell::RefCell<Option<Footer>> = const { std::cell::RefCell::new(None) };
}

/// The file and its footer: those [`file_schema`] handed on, or opened and loaded.
fn open_footer(
    storage: &Arc<dyn Storage>,
    path: &str,
) -> Result<(StorageChunks, ArrowReaderMetadata)> {
    if let Some((_, file, meta)) = HANDED
        .with(|h| h.borrow_mut().take())
        .filter(|(p, ..)| p == path)
    {
        return Ok((StorageChunks::new(file), meta));
    }
    let chunks = StorageChunks::new(storage.open(path)?);
    let meta = load(&chunks, path)?;
    Ok((chunks, meta))
}

/// Checks that the fields a reader yields are those of the plan's schema.
pub(crate) fn check_against(path: &str, got: &Schema, plan: &SchemaRef) -> Result<()> {
    for f in got.fields() {
        match plan.field_with_name(f.name()) {
            Ok(p) if p.data_type().equals_datatype(f.data_type()) => {}
            Ok(p) => {
                return Err(Error::Schema {
                    path: path.to_string(),
                    detail: format!(
                        "column {:?} is {} here but {} in the plan's schema",
                        f.name(),
                        f.data_type(),
                        p.data_type()
                    ),
                })
            }
            Err(_) => {
                return Err(Error::Schema {
                    path: path.to_string(),
                    detail: format!("column {:?} is not in the plan's schema", f.name()),
                })
            }
        }
    }
    Ok(())
}

/// Opens one split for reading, yielding batches of `schema` projected by `opts.columns`.
pub fn open(
    storage: &Arc<dyn Storage>,
    split: &Split,
    schema: &SchemaRef,
    opts: &ReadOptions,
) -> Result<Box<dyn SplitReader>> {
    Ok(Box::new(open_reader(storage, split, schema, opts, None)?))
}

/// [`open`], the pages of each row group that `prune`'s predicate cannot pass on passed over
/// unread ([`super::parquet_prune`]): the rows left out are only rows that do not pass.
pub(crate) fn open_pruned(
    storage: &Arc<dyn Storage>,
    split: &Split,
    schema: &SchemaRef,
    opts: &ReadOptions,
    prune: Arc<crate::filter::Bound>,
) -> Result<Box<dyn SplitReader>> {
    Ok(Box::new(open_reader(
        storage,
        split,
        schema,
        opts,
        Some(prune),
    )?))
}

/// The row groups of one Parquet file, for the reader loop ([`UnitReader`]).
pub(crate) struct RowGroups {
    path: String,
    split: u32,
    chunks: StorageChunks,
    meta: ArrowReaderMetadata,
    mask: ProjectionMask,
    batch_rows: usize,
    /// Spark's hybrid-calendar values to rebase, if any.
    spark: Option<Arc<SparkLegacy>>,
    /// `meta` with the file's offset index (and its column index under `prune`), loaded when a
    /// row group is first opened inside or pruned (`None`: the file has none): see
    /// [`super::parquet_pages`].
    paged: std::sync::OnceLock<Option<ArrowReaderMetadata>>,
    /// The filter whose page statistics leave pages unread.
    prune: Option<super::parquet_prune::PagePrune>,
}

/// Opens a Parquet split: the row groups it names, projected to `opts.columns`.
fn open_reader(
    storage: &Arc<dyn Storage>,
    split: &Split,
    schema: &SchemaRef,
    opts: &ReadOptions,
    prune: Option<Arc<crate::filter::Bound>>,
) -> Result<UnitReader<RowGroups>> {
    let (chunks, meta) = open_footer(storage, &split.path)?;
    let n_rg = meta.metadata().num_row_groups();
    let (first, count) = match split.unit {
        SplitUnit::RowGroups { first, count } => (first, count),
        SplitUnit::File => {
            let rows = meta.metadata().row_groups().iter().map(|rg| rg.num_rows());
            crate::split::check_file_rows(split, rows.map(|r| r.max(0) as u64).sum())?;
            (0, n_rg as u32)
        }
        _ => {
            return Err(Error::InvalidArgument(format!(
                "{}: a Parquet split must be row groups, got {:?}",
                split.path, split.unit
            )))
        }
    };
    if (first as usize) + (count as usize) > n_rg {
        return Err(Error::InvalidArgument(format!(
            "{}: split {} asks for row groups {first}..{} of a file with {n_rg}",
            split.path,
            split.id,
            first + count
        )));
    }
    let file_schema = meta.schema().clone();
    let idx = match &opts.columns {
        None => None,
        Some(cols) => Some(column_indices(&split.path, &file_schema, cols)?),
    };
    let (sorted, projection) = Projection::of(&split.path, &file_schema, idx)?;
    let mask = match sorted {
        None => ProjectionMask::all(),
        Some(sorted) => ProjectionMask::roots(meta.parquet_schema(), sorted),
    };
    check_against(&split.path, &projection.schema, schema)?;
    let paths = int96_micros(meta.metadata(), meta.schema())
        .map(|(_, p)| p)
        .unwrap_or_default();
    let spark = legacy(meta.metadata(), paths).map(Arc::new);
    let prune = prune.map(|bound| super::parquet_prune::PagePrune {
        bound,
        spark_legacy: spark.is_some(),
    });
    let units = RowGroups {
        path: split.path.clone(),
        split: split.id,
        chunks,
        meta,
        mask,
        batch_rows: opts.batch_rows.max(1),
        spark,
        paged: std::sync::OnceLock::new(),
        prune,
    };
    Ok(UnitReader::new(
        units,
        FORMAT,
        (&split.path, split.id),
        projection,
        opts.on_error,
        (first as usize, count as usize),
    )
    .passing(split))
}

impl RowGroups {
    fn rg_error(&self, rg: usize, detail: String) -> Error {
        // (Not `byte_range()`: it panics on the negative offsets of a corrupt footer, and this
        // runs outside the decode guard.)
        if let Some(e) = self.chunks.take_error() {
            return e;
        }
        let offset = self
            .meta
            .metadata()
            .row_group(rg)
            .columns()
            .first()
            .and_then(chunk_start);
        Error::data(
            loc(
                &self.path,
                Some(self.split),
                offset,
                Some(format!("row group {rg}")),
            ),
            FORMAT,
            detail,
        )
    }

    /// The projected column chunks of row group `rg`, `(start, len)` each, when they add up to
    /// at most [`READ_AHEAD_MAX`] (else none: the pages are then fetched one by one).
    fn chunk_ranges(&self, rg: usize) -> Vec<(u64, u64)> {
        let ranges: Vec<(u64, u64)> = self
            .meta
            .metadata()
            .row_group(rg)
            .columns()
            .iter()
            .enumerate()
            .filter(|(i, _)| self.mask.leaf_included(*i))
            .map(|(_, c)| c.byte_range())
            .collect();
        let total = ranges
            .iter()
            .fold(0u64, |n, &(_, len)| n.saturating_add(len));
        if total <= READ_AHEAD_MAX {
            ranges
        } else {
            Vec::new()
        }
    }

    /// Row group `rg` from its row `skip` on: the rows before are passed over with a row
    /// selection (the column readers skip their records without building arrays).
    fn rg_reader(&self, rg: usize, skip: u64) -> Result<RgReader> {
        let mut ranges = self.chunk_ranges(rg);
        let mut meta = &self.meta;
        let paged = || {
            self.paged.get_or_init(|| {
                super::parquet_pages::with_offset_index(
                    &self.meta,
                    &self.chunks,
                    self.prune.is_some(),
                )
            })
        };
        // Under a filter, the rows the page statistics leave.
        let keep = self
            .prune
            .as_ref()
            .and_then(|p| p.keep(paged().as_ref()?, rg));
        let rows = self.meta.metadata().row_group(rg).num_rows().max(0) as u64;
        let skip = skip.min(rows);
        // The rows to read, where not all: those left, from row `skip` on.
        let want = match &keep {
            Some(keep) => Some(super::parquet_pages::from_row(keep, skip)),
            None => (skip > 0).then(|| vec![(skip, rows)]),
        };
        // With page locations, only the pages holding them are fetched; a row group too large
        // to read ahead stays fetched page by page, its pruned pages passed over by location.
        let located = want
            .as_ref()
            .filter(|_| keep.is_some() || !ranges.is_empty());
        if let Some((want, paged)) = located.and_then(|w| Some((w, paged().as_ref()?))) {
            if ranges.is_empty() {
                meta = paged;
            } else if let Some(r) = super::parquet_pages::ranges_of(paged, rg, want, &self.mask) {
                (ranges, meta) = (r, paged);
            }
        }
        let chunks = self
            .chunks
            .read_ahead(&ranges)
            .map_err(|e| self.rg_error(rg, e.to_string()))?;
        let md = meta.metadata();
        let pq_schema = md.file_metadata().schema_descr();
        let file_schema = self.meta.schema();
        // Projected root columns, in the order the parquet reader yields them.
        let roots: Vec<usize> = (0..file_schema.fields().len())
            .filter(|&r| {
                (0..pq_schema.num_columns())
                    .any(|l| pq_schema.get_column_root_idx(l) == r && self.mask.leaf_included(l))
            })
            .collect();
        let fast: Vec<(usize, usize)> = roots
            .iter()
            .enumerate()
            .filter_map(|(pos, &r)| {
                super::parquet_fixed::eligible(
                    pq_schema,
                    md.row_group(rg),
                    r,
                    file_schema.field(r).data_type(),
                )
                .map(|leaf| (pos, leaf))
            })
            .collect();
        let rest: Vec<usize> = (0..pq_schema.num_columns())
            .filter(|&l| self.mask.leaf_included(l) && !fast.iter().any(|&(_, f)| f == l))
            .collect();
        let selection = want
            .as_ref()
            .map(|w| super::parquet_pages::selection(w, rows));
        let arrow_reader = |chunks: StorageChunks, mask: ProjectionMask| {
            let mut b = ParquetRecordBatchReaderBuilder::new_with_metadata(chunks, meta.clone())
                .with_row_groups(vec![rg])
                .with_projection(mask)
                .with_batch_size(self.batch_rows);
            if let Some(sel) = &selection {
                b = b.with_row_selection(sel.clone());
            }
            b.build().map_err(|e| self.rg_error(rg, e.to_string()))
        };
        if fast.is_empty() {
            return arrow_reader(chunks, self.mask.clone()).map(RgReader::Arrow);
        }
        let chunks = Arc::new(chunks);
        let mut cols = Vec::with_capacity(fast.len());
        for &(pos, leaf) in &fast {
            let field = file_schema.field(roots[pos]).clone();
            let c = super::parquet_fixed::FixedListColumn::open(
                chunks.clone(),
                md.row_group(rg),
                md.offset_index().and_then(|oi| oi.get(rg)).map(|v| &v[..]),
                leaf,
                Arc::new(field),
            )
            .map_err(|e| self.rg_error(rg, e))?;
            cols.push((pos, c));
        }
        let arrow = if rest.is_empty() {
            None
        } else {
            let mask = ProjectionMask::leaves(pq_schema, rest);
            Some(arrow_reader((*chunks).clone(), mask)?)
        };
        let schema = Arc::new(
            file_schema
                .project(&roots)
                .map_err(|e| self.rg_error(rg, e.to_string()))?,
        );
        Ok(RgReader::Fixed(FixedRg::new(
            arrow,
            cols,
            want.unwrap_or_else(|| vec![(0, rows)]),
            self.batch_rows,
            schema,
        )))
    }
}

impl Units for RowGroups {
    fn rows(&self, rg: usize) -> u64 {
        self.meta.metadata().row_group(rg).num_rows().max(0) as u64
    }

    fn open(&self, rg: usize, skip: u64) -> Result<UnitBatches> {
        let r = self.rg_reader(rg, skip)?;
        Ok(match &self.spark {
            None => Box::new(r),
            Some(how) => {
                let how = how.clone();
                Box::new(
                    r.map(move |b| {
                        b.and_then(|b| rebase_batch(b, &how).map_err(|e| e.to_string()))
                    }),
                )
            }
        })
    }

    fn skips_within(&self) -> bool {
        true
    }

    fn error(&self, rg: usize, detail: String) -> Error {
        self.rg_error(rg, detail)
    }

    fn name(&self, rg: usize) -> String {
        format!("row group {rg}")
    }
}

/// One row group's reader: the parquet crate's, or [`FixedRg`] when some projected columns
/// are fixed-size lists of numbers without nulls.
enum RgReader {
    Arrow(ParquetRecordBatchReader),
    Fixed(FixedRg),
}

impl Iterator for RgReader {
    type Item = std::result::Result<RecordBatch, String>;

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            RgReader::Arrow(r) => r.next().map(|b| b.map_err(|e| e.to_string())),
            RgReader::Fixed(r) => r.next(),
        }
    }
}

/// Where a column chunk starts in the file, if its footer says so sensibly.
pub(crate) fn chunk_start(c: &parquet::file::metadata::ColumnChunkMetaData) -> Option<u64> {
    let start = match c.dictionary_page_offset() {
        Some(d) => d,
        None => c.data_page_offset(),
    };
    u64::try_from(start).ok()
}

/// The statistics converter of column `f` where a filter may trust the statistics: `None` for a
/// column read as INT96, and for dates and timestamps of a file Spark wrote in its hybrid
/// calendar (`spark_legacy`: their statistics are the unrebased values).
pub(crate) fn trusted_stats<'a>(
    meta: &'a ArrowReaderMetadata,
    f: &'a arrow_schema::Field,
    spark_legacy: bool,
) -> Option<parquet::arrow::arrow_reader::statistics::StatisticsConverter<'a>> {
    use arrow_schema::DataType as D;
    if spark_legacy && matches!(f.data_type(), D::Date32 | D::Date64 | D::Timestamp(..)) {
        return None;
    }
    let c = parquet::arrow::arrow_reader::statistics::StatisticsConverter::try_new(
        f.name(),
        meta.schema(),
        meta.parquet_schema(),
    )
    .ok()?
    .with_missing_null_counts_as_zero(false);
    let leaf = c.parquet_column_index()?;
    (meta.parquet_schema().column(leaf).physical_type() != parquet::basic::Type::INT96).then_some(c)
}

/// The statistics of `columns` (those of the file) in each row group of the file at `path`,
/// as the filter takes them: per row group, per column, in `columns`' order (`None`: none the
/// filter can trust). Columns read as INT96, and dates and timestamps of a file Spark wrote in
/// its hybrid calendar (whose statistics are the unrebased values), have none.
pub(crate) fn row_group_stats(
    storage: &Arc<dyn Storage>,
    path: &str,
    columns: &[arrow_schema::Field],
) -> Result<Vec<Vec<Option<crate::filter::ColumnStats>>>> {
    use arrow_array::Array;
    let chunks = StorageChunks::new(storage.open(path)?);
    let meta = load(&chunks, path)?;
    let md = meta.metadata();
    let n = md.num_row_groups();
    let paths = int96_micros(md, meta.schema())
        .map(|(_, p)| p)
        .unwrap_or_default();
    let spark_legacy = legacy(md, paths).is_some();
    // Per column: every row group's minima, maxima and null counts.
    type Columns = (
        arrow_array::ArrayRef,
        arrow_array::ArrayRef,
        Vec<Option<u64>>,
    );
    let per_column: Vec<Option<Columns>> = columns
        .iter()
        .map(|f| {
            let c = trusted_stats(&meta, f, spark_legacy)?;
            let mins = c.row_group_mins(md.row_groups()).ok()?;
            let maxes = c.row_group_maxes(md.row_groups()).ok()?;
            let nulls = c.row_group_null_counts(md.row_groups()).ok()?;
            let nulls = (0..nulls.len())
                .map(|i| nulls.is_valid(i).then(|| nulls.value(i)))
                .collect();
            (mins.len() == n && maxes.len() == n).then_some((mins, maxes, nulls))
        })
        .collect();
    Ok((0..n)
        .map(|rg| {
            per_column
                .iter()
                .map(|c| {
                    let (mins, maxes, nulls) = c.as_ref()?;
                    Some(crate::filter::ColumnStats {
                        min: mins.is_valid(rg).then(|| mins.slice(rg, 1)),
                        max: maxes.is_valid(rg).then(|| maxes.slice(rg, 1)),
                        nulls: nulls.get(rg).copied().flatten(),
                    })
                })
                .collect()
        })
        .collect())
}
