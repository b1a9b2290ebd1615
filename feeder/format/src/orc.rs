//! ORC reader.
//!
//! Contract shared by every format module: `plan_file` cuts one file into splits from its own
//! metadata and returns the file's (unprojected) schema; `open` reads one split, yielding
//! batches of the projected `schema` (without partition columns, which `format::open_split`
//! appends).
//!
//! - Plan: from the file tail only (rows, offset and length per stripe); consecutive stripes
//!   are grouped into one split up to `opts.split_bytes`.
//! - Read: through `StorageChunks` (orc-rust's `ChunkReader` over `RandomAccess::read_at`),
//!   in the reader loop shared with Parquet (`units.rs`), one orc-rust reader per stripe,
//!   selected with `with_file_byte_range` over the stripe's
//!   first byte, so that an error names its stripe and `OnError::Skip` drops exactly one.
//!   orc-rust has no way to share parsed file metadata between readers, so each stripe
//!   re-reads the tail (a few KiB).
//! - Projection: top-level names (nested columns whole), in the order given.
//! - Codecs: orc-rust always has zlib, snappy, lzo, lz4 and zstd.
//! - Timestamps: the instants of the writer's zone (Spark's reading) or its wall clocks
//!   (Hive's), as `opts.orc_timestamps` says; `JULIAN_GREGORIAN` files' dates and timestamps
//!   in the proleptic calendar; microseconds in files Spark wrote (docs/formats.md).

use std::sync::Arc;

use arrow_schema::SchemaRef;
use orc_rust::arrow_reader::ArrowReader;
use orc_rust::projection::ProjectionMask;
use orc_rust::schema::TimestampPrecision;
use orc_rust::ArrowReaderBuilder;

use super::io::{check_head_magic, column_indices, guard, loc, not_this_format, StorageChunks};
use super::parquet::check_against;
use super::units::{unit_splits, Projection, UnitBatches, UnitReader, UnitSize, Units};
use super::{OrcTimestamps, ReadOptions, SplitReader};
use crate::split::{Format, Split, SplitUnit};
use crate::{Error, Result};
use hydrofeed_storage::{FileStatus, Storage};

const FORMAT: &str = "orc";

/// The footer key naming the Spark version that wrote a file.
const SPARK_VERSION_KEY: &str = "org.apache.spark.version";

/// A reader of the file's tail, set up as `opts` say: timestamps as instants or wall clocks;
/// microseconds in a file Spark wrote (Spark's own unit: the range of years 1 to 9999, which
/// nanoseconds lack), else nanoseconds.
fn builder(
    chunks: &StorageChunks,
    path: &str,
    opts: &ReadOptions,
) -> Result<ArrowReaderBuilder<StorageChunks>> {
    let b = tail(chunks, path)?;
    let spark = b
        .file_metadata()
        .user_custom_metadata()
        .contains_key(SPARK_VERSION_KEY);
    let precision = if spark {
        TimestampPrecision::Microsecond
    } else {
        TimestampPrecision::Nanosecond
    };
    Ok(b.with_timestamp_precision(precision)
        .with_timestamp_instants(opts.orc_timestamps == OrcTimestamps::Instant))
}

fn tail(chunks: &StorageChunks, path: &str) -> Result<ArrowReaderBuilder<StorageChunks>> {
    let len = chunks.file().len();
    let at = || {
        loc(
            path,
            None,
            Some(len.saturating_sub(8)),
            Some("footer".into()),
        )
    };
    guard(at, FORMAT, || {
        ArrowReaderBuilder::try_new(chunks.clone()).map_err(|e| {
            chunks.take_error().unwrap_or_else(|| {
                not_this_format(path, len, FORMAT, format!("not a readable ORC file: {e}"))
            })
        })
    })
}

/// Where a stripe starts, and its rows and bytes.
#[derive(Debug, Clone, Copy)]
struct StripeInfo {
    offset: u64,
    size: UnitSize,
}

/// Every stripe of the file, from its tail.
fn stripes(b: &ArrowReaderBuilder<StorageChunks>) -> Vec<StripeInfo> {
    b.file_metadata()
        .stripe_metadatas()
        .iter()
        .map(|s| StripeInfo {
            offset: s.offset(),
            size: UnitSize {
                rows: s.number_of_rows(),
                bytes: s.index_length() + s.data_length() + s.footer_length(),
            },
        })
        .collect()
}

/// Plans the splits of one file; ids start at `first_id`.
pub fn plan_file(
    storage: &Arc<dyn Storage>,
    file: &FileStatus,
    opts: &ReadOptions,
    first_id: u32,
) -> Result<(SchemaRef, Vec<Split>)> {
    let chunks = StorageChunks::new(storage.open(&file.path)?);
    check_head_magic(chunks.file(), b"ORC", FORMAT)?;
    let b = builder(&chunks, &file.path, opts)?;
    let units: Vec<UnitSize> = stripes(&b).iter().map(|s| s.size).collect();
    let splits = unit_splits(
        &file.path,
        Format::Orc,
        first_id,
        &units,
        opts.split_bytes,
        |first, count| SplitUnit::Stripes { first, count },
    );
    Ok((b.schema(), splits))
}

/// Opens one split for reading, yielding batches of `schema` projected by `opts.columns`.
pub fn open(
    storage: &Arc<dyn Storage>,
    split: &Split,
    schema: &SchemaRef,
    opts: &ReadOptions,
) -> Result<Box<dyn SplitReader>> {
    Ok(Box::new(open_reader(storage, split, schema, opts)?))
}

/// The stripes of one ORC file, for the reader loop ([`UnitReader`]).
pub(crate) struct Stripes {
    path: String,
    split: u32,
    chunks: StorageChunks,
    /// Every stripe of the file.
    stripes: Vec<StripeInfo>,
    columns: Option<Vec<String>>,
    batch_rows: usize,
    opts: ReadOptions,
}

/// Opens an ORC split: the stripes it names, projected to `opts.columns`.
fn open_reader(
    storage: &Arc<dyn Storage>,
    split: &Split,
    schema: &SchemaRef,
    opts: &ReadOptions,
) -> Result<UnitReader<Stripes>> {
    let SplitUnit::Stripes { first, count } = split.unit else {
        return Err(Error::InvalidArgument(format!(
            "{}: an ORC split must be stripes, got {:?}",
            split.path, split.unit
        )));
    };
    let chunks = StorageChunks::new(storage.open(&split.path)?);
    check_head_magic(chunks.file(), b"ORC", FORMAT)?;
    let b = builder(&chunks, &split.path, opts)?;
    let stripes = stripes(&b);
    if (first as usize) + (count as usize) > stripes.len() {
        return Err(Error::InvalidArgument(format!(
            "{}: split {} asks for stripes {first}..{} of a file with {}",
            split.path,
            split.id,
            first + count,
            stripes.len()
        )));
    }
    let file_schema = b.schema();
    let idx = match &opts.columns {
        None => None,
        Some(cols) => Some(column_indices(&split.path, &file_schema, cols)?),
    };
    let (_, projection) = Projection::of(&split.path, &file_schema, idx)?;
    check_against(&split.path, &projection.schema, schema)?;
    let units = Stripes {
        path: split.path.clone(),
        split: split.id,
        chunks,
        stripes,
        columns: opts.columns.clone(),
        batch_rows: opts.batch_rows.max(1),
        opts: opts.clone(),
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

impl Stripes {
    fn stripe_error(&self, stripe: usize, detail: String) -> Error {
        if let Some(e) = self.chunks.take_error() {
            return e;
        }
        Error::data(
            loc(
                &self.path,
                Some(self.split),
                Some(self.stripes[stripe].offset),
                Some(format!("stripe {stripe}")),
            ),
            FORMAT,
            detail,
        )
    }

    fn stripe_reader(&self, stripe: usize) -> Result<ArrowReader<StorageChunks>> {
        let b = builder(&self.chunks, &self.path, &self.opts)?;
        let mask = match &self.columns {
            None => ProjectionMask::all(),
            Some(c) => ProjectionMask::named_roots(b.file_metadata().root_data_type(), c),
        };
        let at = self.stripes[stripe].offset as usize;
        Ok(b.with_projection(mask)
            .with_batch_size(self.batch_rows)
            .with_file_byte_range(at..at + 1)
            .build())
    }
}

impl Units for Stripes {
    fn rows(&self, stripe: usize) -> u64 {
        self.stripes[stripe].size.rows
    }

    fn open(&self, stripe: usize, _skip: u64) -> Result<UnitBatches> {
        match self.stripe_reader(stripe) {
            Ok(r) => Ok(Box::new(r.map(|b| b.map_err(|e| e.to_string())))),
            // The footer read again for this stripe: name the stripe.
            Err(Error::Data { detail, .. }) => Err(self.stripe_error(stripe, detail)),
            Err(e) => Err(e),
        }
    }

    fn error(&self, stripe: usize, detail: String) -> Error {
        self.stripe_error(stripe, detail)
    }

    fn name(&self, stripe: usize) -> String {
        format!("stripe {stripe}")
    }
}

/// The statistics of `columns` (those of the file) in each stripe of the file at `path`, as
/// the filter takes them: per stripe, per column in `columns`' order (`None`: none it can
/// trust). Integers, floating point, strings, and dates of a file in the proleptic calendar
/// have bounds; every column has its null count (rows less values). Timestamps (written in
/// the writer's zone), decimals and dates of a hybrid-calendar file have only the null count.
pub(crate) fn stripe_stats(
    storage: &Arc<dyn Storage>,
    path: &str,
    columns: &[arrow_schema::Field],
    opts: &ReadOptions,
) -> Result<Vec<Vec<Option<crate::filter::ColumnStats>>>> {
    use arrow_array::{ArrayRef, Date32Array, Float64Array, Int64Array, StringArray};
    use orc_rust::statistics::TypeStatistics as T;
    let chunks = StorageChunks::new(storage.open(path)?);
    check_head_magic(chunks.file(), b"ORC", FORMAT)?;
    let b = builder(&chunks, path, opts)?;
    let md = b.file_metadata();
    let hybrid = md.hybrid_calendar();
    let index: Vec<Option<usize>> = columns
        .iter()
        .map(|f| {
            md.root_data_type()
                .children()
                .iter()
                .find(|c| c.name() == f.name())
                .map(|c| c.data_type().column_index())
        })
        .collect();
    let one = |a: ArrayRef, t: &arrow_schema::DataType| -> Option<ArrayRef> {
        // Bounds in the column's type (an int64 bound of an int32 column cast back).
        arrow::compute::cast(&a, t).ok().filter(|c| c.is_valid(0))
    };
    Ok(md
        .stripe_metadatas()
        .iter()
        .map(|s| {
            let rows = s.number_of_rows();
            columns
                .iter()
                .zip(&index)
                .map(|(f, i)| {
                    let cs = s.column_statistics().get((*i)?)?;
                    let nulls = Some(rows.saturating_sub(cs.number_of_values()));
                    let t = f.data_type();
                    let bounds: Option<(ArrayRef, ArrayRef)> = match cs.type_statistics() {
                        Some(T::Integer { min, max, .. }) if t.is_integer() => Some((
                            Arc::new(Int64Array::from(vec![*min])),
                            Arc::new(Int64Array::from(vec![*max])),
                        )),
                        Some(T::Double { min, max, .. }) if t.is_floating() => Some((
                            Arc::new(Float64Array::from(vec![*min])),
                            Arc::new(Float64Array::from(vec![*max])),
                        )),
                        Some(T::String {
                            lower_bound,
                            upper_bound,
                            ..
                        }) if matches!(
                            t,
                            arrow_schema::DataType::Utf8 | arrow_schema::DataType::LargeUtf8
                        ) =>
                        {
                            Some((
                                Arc::new(StringArray::from(vec![lower_bound.as_str()])),
                                Arc::new(StringArray::from(vec![upper_bound.as_str()])),
                            ))
                        }
                        Some(T::Date { min, max })
                            if !hybrid && t == &arrow_schema::DataType::Date32 =>
                        {
                            Some((
                                Arc::new(Date32Array::from(vec![*min])),
                                Arc::new(Date32Array::from(vec![*max])),
                            ))
                        }
                        _ => None,
                    };
                    let (min, max) = match bounds {
                        Some((lo, hi)) => (one(lo, t), one(hi, t)),
                        None => (None, None),
                    };
                    Some(crate::filter::ColumnStats { min, max, nulls })
                })
                .collect()
        })
        .collect())
}
