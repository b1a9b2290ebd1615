//! Avro object container file reader.
//!
//! Contract shared by every format module: `plan_file` cuts one file into splits from its own
//! metadata and returns the file's (unprojected) schema; `open` reads one split, yielding
//! batches of the projected `schema` (without partition columns, which `format::open_split`
//! appends).
//!
//! - Framing: header (magic `Obj\x01`, metadata, 16-byte sync marker), then blocks of
//!   `count: long, size: long, data[size], sync[16]`. We walk blocks ourselves and check every
//!   sync marker (arrow-avro does not); arrow-avro decompresses and decodes.
//! - Plan: an **index pass** over block headers only (one small read per block: the sync
//!   marker of a block and the header of the next), giving rows per block without decoding
//!   anything. Splits are byte ranges `[start, end)` cut at block starts, about
//!   `opts.split_bytes` each, covering the file.
//! - Read: a split owns the blocks that *start* in `[start, end)`. It resynchronises at
//!   `start` by scanning for the sync marker from `start - 16` (planned boundaries are exact).
//! - Schema: the writer schema, or `opts.schema` as the **reader schema** (schema evolution:
//!   fields missing from the file take their defaults). An Arrow schema carrying the Avro JSON
//!   under the `avro.schema` metadata key is used verbatim (that is how defaults are given);
//!   otherwise it is converted by arrow-avro. `opts.columns` projects top-level fields.
//! - Decode: block by block, each by its own arrow-avro `Reader` asked for exactly the block's
//!   object count (see [`AvroReader`] for why), then cut into batches of `batch_rows`.
//! - Codecs: those arrow-avro is built with (deflate, snappy, zstandard, bzip2, xz).
//! - Errors name the block (`block N at OFFSET`, N counted from the split start) and its byte
//!   offset. Under `OnError::Skip` a bad block (bad header, bad sync marker, undecodable data)
//!   is dropped whole and counted, and reading resumes at the next sync marker; a truncated
//!   tail ends the split.

use crate::parquet_spark::{avro_legacy, rebase_batch, SparkLegacy};
use std::io::BufRead;
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_avro::reader::{read_header_info, HeaderInfo, ReaderBuilder};
use arrow_avro::schema::AvroSchema;
use arrow_schema::SchemaRef;
use bytes::Bytes;

use super::io::{catch, column_indices, guard, loc, panicked};
use super::parquet::check_against;
use super::Rebatcher;
use super::{OnError, ReadOptions, SkipStats, SkippedRows, SplitReader};
use crate::split::{file_splits, Format, Split, SplitUnit};
use crate::{Error, Result};
use hydrofeed_storage::{FileStatus, RandomAccess, Storage};

mod blocks;
use blocks::*;

const FORMAT: &str = "avro";
const MAGIC: &[u8; 4] = b"Obj\x01";
/// The largest header we accept (schemas with many fields and metadata run to a few hundred
/// KiB at most).
const MAX_HEADER: u64 = 64 << 20;

/// The parsed header of a file.
struct Head {
    bytes: Bytes,
    info: HeaderInfo,
}

impl Head {
    fn len(&self) -> u64 {
        self.info.header_len()
    }
}

fn read_head(file: &Arc<dyn RandomAccess>) -> Result<Head> {
    let path = file.path();
    let len = file.len();
    let at0 = |unit: &str| loc(path, None, Some(0), Some(unit.to_string()));
    if len == 0 {
        return Err(Error::data(
            at0("header"),
            FORMAT,
            "0-byte file, not an Avro file",
        ));
    }
    let magic = file.read_at(0, 4.min(len as usize))?;
    if magic.as_ref() != MAGIC {
        return Err(Error::data(
            at0("header"),
            FORMAT,
            format!(
                "wrong magic {:02x?} (expected \"Obj\\x01\"): not an Avro object container file",
                magic.as_ref()
            ),
        ));
    }
    let mut want = 64u64 << 10;
    loop {
        let n = want.min(len);
        let bytes = file.read_at(0, n as usize)?;
        let parsed = guard(
            || at0("header"),
            FORMAT,
            || {
                read_header_info(bytes.as_ref())
                    .map_err(|e| Error::data(at0("header"), FORMAT, e.to_string()))
            },
        );
        match parsed {
            Ok(info) => {
                return Ok(Head {
                    bytes: bytes.slice(..info.header_len() as usize),
                    info,
                })
            }
            Err(e) if n >= len || n >= MAX_HEADER => {
                return Err(match e {
                    Error::Data { detail, .. } => Error::data(
                        at0("header"),
                        FORMAT,
                        format!("bad or truncated header ({len}-byte file): {detail}"),
                    ),
                    e => e,
                })
            }
            Err(_) => want *= 8,
        }
    }
}

/// Builds arrow-avro's reader settings for a file.
fn builder(
    path: &str,
    opts: &ReadOptions,
    projection: Option<Vec<usize>>,
) -> Result<ReaderBuilder> {
    let mut b = ReaderBuilder::new().with_batch_size(opts.batch_rows.max(1));
    if let Some(s) = &opts.schema {
        let avro = AvroSchema::try_from(s.as_ref()).map_err(|e| Error::Schema {
            path: path.to_string(),
            detail: format!("cannot use the given schema as an Avro reader schema: {e}"),
        })?;
        b = b.with_reader_schema(avro);
    }
    if let Some(p) = projection {
        b = b.with_projection(p);
    }
    Ok(b)
}

/// The (reader-)schema of a file, unprojected.
fn file_schema(head: &Head, path: &str, opts: &ReadOptions) -> Result<SchemaRef> {
    let b = builder(path, opts, None)?;
    let r = guard(
        || loc(path, None, Some(0), Some("header".into())),
        FORMAT,
        || {
            b.build(head.bytes.as_ref()).map_err(|e| Error::Schema {
                path: path.to_string(),
                detail: format!("cannot decode with this schema: {e}"),
            })
        },
    )?;
    Ok(r.schema())
}

/// A file's writer schema as an Arrow schema that carries the Avro JSON (under
/// `avro.schema`), so that, given as `ReadOptions::schema`, it is the reader schema verbatim.
pub fn writer_schema(storage: &Arc<dyn Storage>, file: &FileStatus) -> Result<SchemaRef> {
    let f = storage.open(&file.path)?;
    let head = read_head(&f)?;
    let json = head
        .info
        .writer_schema()
        .map_err(|e| {
            Error::data(
                loc(&file.path, None, Some(0), Some("header".into())),
                FORMAT,
                e.to_string(),
            )
        })?
        .json_string;
    let plain = file_schema(&head, &file.path, &ReadOptions::default())?;
    let mut md = plain.metadata().clone();
    md.insert(arrow_avro::schema::SCHEMA_METADATA_KEY.to_string(), json);
    Ok(Arc::new(plain.as_ref().clone().with_metadata(md)))
}

/// Plans the splits of one file; ids start at `first_id`.
///
/// The schema is the writer schema, or the one `opts.schema` makes of it as a reader schema.
pub fn plan_file(
    storage: &Arc<dyn Storage>,
    file: &FileStatus,
    opts: &ReadOptions,
    first_id: u32,
) -> Result<(SchemaRef, Vec<Split>)> {
    let f = storage.open(&file.path)?;
    let head = read_head(&f)?;
    let schema = file_schema(&head, &file.path, opts)?;
    let blocks = index(&f, &head)?;
    let len = f.len();
    let target = opts.split_bytes.max(1);
    let mut ranges: Vec<(u64, u64, u64)> = Vec::new();
    let (mut start, mut rows) = (0u64, 0u64);
    for b in &blocks {
        if rows > 0 && b.offset >= start + target {
            ranges.push((start, b.offset, rows));
            (start, rows) = (b.offset, 0);
        }
        rows += b.count;
    }
    ranges.push((start, len, rows));
    let parts = ranges
        .into_iter()
        .map(|(start, end, rows)| (SplitUnit::Bytes { start, end }, rows, end - start));
    let splits = file_splits(&file.path, Format::Avro, first_id, parts);
    Ok((schema, splits))
}

/// Opens one split for reading, yielding batches of `schema` projected by `opts.columns`.
pub fn open(
    storage: &Arc<dyn Storage>,
    split: &Split,
    schema: &SchemaRef,
    opts: &ReadOptions,
) -> Result<Box<dyn SplitReader>> {
    Ok(Box::new(AvroReader::open(storage, split, schema, opts)?))
}

/// A `BufRead` giving arrow-avro the header, then one block, then end of input.
struct Feed {
    header: Bytes,
    block: Bytes,
}

impl std::io::Read for Feed {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        let b = self.fill_buf()?;
        let n = b.len().min(out.len());
        out[..n].copy_from_slice(&b[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl BufRead for Feed {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        if self.header.is_empty() {
            Ok(&self.block)
        } else {
            Ok(&self.header)
        }
    }

    fn consume(&mut self, n: usize) {
        if self.header.is_empty() {
            let _ = self.block.split_to(n.min(self.block.len()));
        } else {
            let _ = self.header.split_to(n.min(self.header.len()));
        }
    }
}

/// Reads one Avro split, block by block.
///
/// Each block is framed here and decoded by one arrow-avro `Reader` of the split, fed the
/// block's data and its object count (`Reader::decode_block_data`, a method our vendored copy
/// adds: docs/upstream/arrow-avro-block-data.md), which yields exactly that many rows or an
/// error. Why not arrow-avro's own block loop: it loops forever on a block whose header count
/// is lower than the records its data holds (it decodes zero rows from the leftover bytes and
/// never advances), so a corrupt count would hang the feeder. Decoding block by block also
/// lets `OnError::Skip` drop exactly one block (the `Reader` is built again after a bad one).
/// Blocks are then cut into batches of `batch_rows`.
pub struct AvroReader {
    path: String,
    split: u32,
    head: Head,
    builder_opts: ReadOptions,
    projection: Option<Vec<usize>>,
    schema: SchemaRef,
    walker: Walker,
    /// The block being decoded (for errors): offset and index from the split start.
    current: Option<(u64, u64)>,
    pending: Rebatcher,
    batch_rows: usize,
    on_error: OnError,
    skipped: SkipStats,
    /// Blocks whose data did not decode, by position (rows of the well-framed blocks before).
    gaps: Vec<SkippedRows>,
    /// Rows of the well-framed blocks taken so far (decoded, skipped or passed over): the
    /// position of the next block's first row, as the plan counts rows.
    pos: u64,
    done: bool,
    /// The columns holding a `duration` (checked per block, see [`check_durations`]).
    duration_columns: Vec<usize>,
    /// What [`SplitReader::skip_rows`] framed and left for the next read (a block too large to
    /// pass over, the end, or an error).
    held: Option<Result<Option<BlockPos>>>,
    /// Spark's hybrid calendar, when `spark-avro` wrote the file in its `LEGACY` rebase mode.
    spark: Option<SparkLegacy>,
    /// The decoder of this file's blocks, built once from the header (again after a block
    /// failed: its batch is undefined then).
    decoder: Option<arrow_avro::reader::Reader<Feed>>,
}

impl AvroReader {
    /// Opens a split.
    pub fn open(
        storage: &Arc<dyn Storage>,
        split: &Split,
        schema: &SchemaRef,
        opts: &ReadOptions,
    ) -> Result<Self> {
        let SplitUnit::Bytes { start, end } = split.unit else {
            return Err(Error::InvalidArgument(format!(
                "{}: an Avro split must be a byte range, got {:?}",
                split.path, split.unit
            )));
        };
        let file = storage.open(&split.path)?;
        let head = read_head(&file)?;
        let spark = avro_legacy(&head.info);
        let full = file_schema(&head, &split.path, opts)?;
        let projection = match &opts.columns {
            None => None,
            Some(cols) => Some(column_indices(&split.path, &full, cols)?),
        };
        let out = match &projection {
            None => full.clone(),
            Some(p) => Arc::new(full.project(p).map_err(|e| Error::Schema {
                path: split.path.clone(),
                detail: e.to_string(),
            })?),
        };
        check_against(&split.path, &out, schema)?;
        let walker = Walker::new(
            file,
            &head,
            Some(split.id),
            start,
            end,
            opts.on_error,
            1 << 20,
        )?;
        Ok(Self {
            path: split.path.clone(),
            split: split.id,
            head,
            builder_opts: opts.clone(),
            projection,
            duration_columns: (0..out.fields().len())
                .filter(|&i| holds_duration(out.field(i).data_type()))
                .collect(),
            schema: out,
            walker,
            current: None,
            pending: Rebatcher::default(),
            batch_rows: opts.batch_rows.max(1),
            on_error: opts.on_error,
            skipped: SkipStats::default(),
            gaps: Vec::new(),
            pos: 0,
            done: false,
            held: None,
            spark,
            decoder: None,
        })
    }

    /// The error for the block being decoded.
    fn block_error(&self, detail: String) -> Error {
        match self.current {
            Some((offset, index)) => Error::data(
                loc(
                    &self.path,
                    Some(self.split),
                    Some(offset),
                    Some(format!("block {index} at {offset}")),
                ),
                FORMAT,
                detail,
            ),
            None => Error::data(
                loc(&self.path, Some(self.split), None, None),
                FORMAT,
                detail,
            ),
        }
    }

    /// The split's block decoder, built from the header on first use.
    fn decoder(&mut self) -> Result<&mut arrow_avro::reader::Reader<Feed>> {
        if self.decoder.is_none() {
            let feed = Feed {
                header: self.head.bytes.clone(),
                block: Bytes::new(),
            };
            let b = builder(&self.path, &self.builder_opts, self.projection.clone())?;
            let r = b.build(feed).map_err(|e| self.block_error(e.to_string()))?;
            self.decoder = Some(r);
        }
        Ok(self.decoder.as_mut().expect("built above"))
    }

    /// Decodes one well-framed block of `count` rows. `whole`: into one batch of exactly its
    /// rows (so that a bad block can be dropped alone); otherwise the rows join the batch
    /// being built, and only the batches that filled up come back.
    fn decode(&mut self, bytes: Bytes, count: u64, whole: bool) -> Result<Vec<RecordBatch>> {
        if count == 0 {
            return Ok(Vec::new());
        }
        let count = usize::try_from(count).unwrap_or(usize::MAX);
        let mut full = Vec::new();
        let r = self.decoder()?;
        let mut decoded = r.decode_block_data(&bytes, count, &mut full);
        if whole && decoded.is_ok() {
            decoded = r.flush_rows().map(|b| full.extend(b));
        }
        if let Err(e) = decoded {
            // The batch being built is undefined after a failed block.
            self.decoder = None;
            return Err(self.block_error(e.to_string()));
        }
        if whole && full.len() > 1 {
            full = vec![arrow_select::concat::concat_batches(&self.schema, &full)
                .map_err(|e| self.block_error(e.to_string()))?];
        }
        let rows: usize = full.iter().map(RecordBatch::num_rows).sum();
        if whole && rows != count {
            self.decoder = None;
            return Err(self.block_error(format!(
                "block holds {rows} objects, its header says {count}"
            )));
        }
        full.into_iter().map(|b| self.checked(b)).collect()
    }

    /// A decoded batch checked (durations) and rebased (Spark's hybrid calendar).
    fn checked(&self, batch: RecordBatch) -> Result<RecordBatch> {
        for &i in &self.duration_columns {
            check_durations(self.schema.field(i).name(), &batch.column(i).to_data())
                .map_err(|e| self.block_error(e))?;
        }
        match &self.spark {
            Some(how) => rebase_batch(batch, how)
                .map_err(|e| self.block_error(format!("Spark's hybrid calendar: {e}"))),
            None => Ok(batch),
        }
    }

    /// Decodes the next block into `pending`; `false` at the end of the split.
    ///
    /// Under `OnError::Raise` the blocks' rows build batches of `batch_rows` in the decoder
    /// (no batch per block, no copy to glue them); under `OnError::Skip` every block is its
    /// own batch, so that a bad one is dropped alone.
    fn next_block(&mut self) -> Result<bool> {
        let whole = self.on_error == OnError::Skip;
        loop {
            let next = match self.held.take() {
                Some(r) => r,
                None => self.walker.next_block(),
            };
            let Some(b) = next? else {
                // The rows of the last blocks.
                let last = match self.decoder.as_mut().map(|r| r.flush_rows()) {
                    Some(Ok(Some(batch))) => batch,
                    Some(Err(e)) => return Err(self.block_error(e.to_string())),
                    _ => return Ok(false),
                };
                let last = self.checked(last)?;
                self.pending.push(last);
                return Ok(true);
            };
            self.current = Some((b.offset, self.walker.block - 1));
            let bytes = self
                .walker
                .win
                .get(b.data, (b.end - 16 - b.data) as usize)?;
            let r = match catch(|| self.decode(bytes, b.count, whole)) {
                Ok(r) => r,
                Err(msg) => {
                    self.decoder = None;
                    Err(self.block_error(panicked(&msg)))
                }
            };
            let at = self.pos;
            self.pos += b.count;
            match r {
                Ok(batches) => {
                    for batch in batches {
                        self.pending.push(batch);
                    }
                    return Ok(true);
                }
                Err(e) if self.on_error == OnError::Skip && matches!(e, Error::Data { .. }) => {
                    tracing::warn!("skipping: {e}");
                    self.skipped.blocks += 1;
                    self.skipped.records += b.count;
                    if b.count > 0 {
                        self.gaps.push(SkippedRows {
                            start: at,
                            end: at + b.count,
                            reason: SkippedRows::reason_of(&e),
                        });
                    }
                }
                Err(e) => return Err(e),
            }
        }
    }

    fn step(&mut self) -> Result<Option<RecordBatch>> {
        if self.done {
            return Ok(None);
        }
        while self.pending.rows() < self.batch_rows {
            if !self.next_block()? {
                break;
            }
        }
        match self.pending.take(self.batch_rows)? {
            Some(b) => self.finish(b).map(Some),
            None => Ok(None),
        }
    }

    fn finish(&self, b: RecordBatch) -> Result<RecordBatch> {
        RecordBatch::try_new_with_options(
            self.schema.clone(),
            b.columns().to_vec(),
            &arrow_array::RecordBatchOptions::new().with_row_count(Some(b.num_rows())),
        )
        .map_err(|e| Error::Schema {
            path: self.path.clone(),
            detail: format!("a decoded batch does not match the file's schema: {e}"),
        })
    }
}

impl Iterator for AvroReader {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Self::Item> {
        let r = match catch(|| self.step()) {
            Ok(r) => r,
            Err(msg) => Err(self.block_error(panicked(&msg))),
        };
        if !matches!(r, Ok(Some(_))) {
            self.done = true;
        }
        r.transpose()
    }
}

impl SplitReader for AvroReader {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn skipped(&self) -> SkipStats {
        let mut s = self.skipped.clone();
        s.blocks += self.walker.skipped.blocks;
        s.records += self.walker.skipped.records;
        s
    }

    fn skipped_rows(&self) -> &[SkippedRows] {
        &self.gaps
    }

    /// Frames blocks (header, length, sync marker) without decoding them: a block's object
    /// count is in its header.
    fn skip_rows(&mut self, n: u64) -> u64 {
        if self.done || self.current.is_some() || self.held.is_some() || self.pending.rows() > 0 {
            return 0;
        }
        let mut passed = 0;
        loop {
            match self.walker.next_block() {
                Ok(Some(b)) if passed + b.count <= n => {
                    passed += b.count;
                    self.pos += b.count;
                }
                other => {
                    self.held = Some(other);
                    return passed;
                }
            }
        }
    }
}

/// Whether `t` holds an Avro `duration` (read as Arrow's `Interval(MonthDayNano)`).
fn holds_duration(t: &arrow_schema::DataType) -> bool {
    use arrow_schema::{DataType, IntervalUnit};
    match t {
        DataType::Interval(IntervalUnit::MonthDayNano) => true,
        DataType::List(f)
        | DataType::LargeList(f)
        | DataType::FixedSizeList(f, _)
        | DataType::Map(f, _) => holds_duration(f.data_type()),
        DataType::Struct(fs) => fs.iter().any(|f| holds_duration(f.data_type())),
        DataType::Union(fs, _) => fs.iter().any(|(_, f)| holds_duration(f.data_type())),
        DataType::Dictionary(_, v) => holds_duration(v),
        _ => false,
    }
}

/// Avro's `duration` counts months and days as unsigned 32-bit numbers; Arrow's
/// `month_day_nano` has signed 32-bit ones. A count of 2^31 or more would read as a negative
/// one: refuse it, naming the column.
fn check_durations(name: &str, data: &arrow_data::ArrayData) -> std::result::Result<(), String> {
    use arrow_array::Array;
    if let arrow_schema::DataType::Interval(arrow_schema::IntervalUnit::MonthDayNano) =
        data.data_type()
    {
        let a = arrow_array::IntervalMonthDayNanoArray::from(data.clone());
        for i in 0..a.len() {
            if a.is_valid(i) {
                let v = a.value(i);
                if v.months < 0 || v.days < 0 {
                    return Err(format!(
                        "column {name:?}: an Avro duration of {} months, {} days does not fit \
                         Arrow's month_day_nano (signed 32-bit months and days)",
                        v.months as u32, v.days as u32
                    ));
                }
            }
        }
        return Ok(());
    }
    for c in data.child_data() {
        check_durations(name, c)?;
    }
    Ok(())
}
