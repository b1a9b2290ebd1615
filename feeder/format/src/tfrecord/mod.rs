//! TFRecord reader: files of `tf.train.Example` records into Arrow `RecordBatch`es.
//!
//! Contract shared by every format module: `plan_file` cuts one file into splits from its own
//! metadata and returns the file's (unprojected) schema; `open` reads one split, yielding
//! batches of the projected `schema` (without partition columns, which `format::open_split`
//! appends).
//!
//! - Framing ([`framing`]): both CRCs of every record are checked. GZIP / ZLIB files are told
//!   by content (then extension) and are one split each, since they cannot be entered mid-way.
//! - Plan: TFRecord has no footer, so `plan_file` makes one **index pass** over the file
//!   (headers and data CRCs; no protobuf decoding), cuts byte-range splits of about
//!   `opts.split_bytes` at exact record starts, counts rows per split, and keeps the first
//!   [`SAMPLE_RECORDS`] records to infer the schema ([`example`] has the rule). The index is
//!   cached in memory keyed by path, length and a checksum of the file's first and last 4 KiB
//!   (storage gives no mtime).
//! - Read: a split `[start, end)` owns the records that *start* in it. The reader
//!   resynchronises at `start` (first offset where a whole record validates), so any byte
//!   boundaries work, though planned ones are exact and need no scan.
//! - Errors: `Error::Data` naming file, split, record (counted from the split start) and byte
//!   offset. Under `OnError::Skip`, a bad data CRC or an undecodable Example skips that record;
//!   a bad length CRC resynchronises at the next valid record (counted as one skipped block;
//!   [`TfrecordReader::skipped_bytes`] has the bytes); a truncated tail ends the split.

use std::collections::HashMap;
use std::io::Read;
use std::sync::{Arc, LazyLock, Mutex};

use arrow_array::RecordBatch;
use arrow_schema::{Schema, SchemaRef};

use super::{OnError, ReadOptions, SkipStats, SkippedRows, SplitReader};
use crate::split::{file_splits, Format, Split, SplitUnit};
use crate::{Error, Result};
use hydrofeed_error::Location;
use hydrofeed_storage::{FileStatus, RandomAccess, Storage};

pub mod example;
pub mod framing;

pub use example::{Example, ExampleDecoder, Feature};
pub use framing::{masked_crc, Compression, RecordWriter};

use framing::{Event, RangeReader, RecordStream};

/// Records sampled from the start of a file to infer its schema.
pub const SAMPLE_RECORDS: usize = 100;

const FORMAT: &str = "tfrecord";

/// What the index pass learned of one file.
#[derive(Debug)]
struct Index {
    compression: Compression,
    /// `(start, end, rows)` of each split.
    ranges: Vec<(u64, u64, u64)>,
    /// Schema inferred from the sample (`None` for a file without records).
    inferred: Option<std::result::Result<SchemaRef, String>>,
    /// The first corruption the index pass stepped over.
    first_bad: Option<String>,
}

type IndexKey = (String, u64, u32, u64);

static INDEX_CACHE: LazyLock<Mutex<HashMap<IndexKey, Arc<Index>>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

fn loc(path: &str, split: Option<u32>, offset: Option<u64>, unit: Option<String>) -> Location {
    Location {
        path: path.to_string(),
        split,
        offset,
        unit,
    }
}

/// Turns an I/O error out of a stream back into ours (storage errors travel inside it).
fn from_io(path: &str, split: Option<u32>, c: Compression, at: u64, e: std::io::Error) -> Error {
    if e.get_ref().is_some_and(|x| x.is::<Error>()) {
        if let Some(inner) = e.into_inner() {
            if let Ok(ours) = inner.downcast::<Error>() {
                return *ours;
            }
        }
        return Error::Internal("lost a storage error".into());
    }
    match c {
        Compression::None => Error::Io {
            loc: loc(path, split, Some(at), None),
            source: e,
        },
        _ => Error::data(
            loc(path, split, None, Some(format!("decompressed offset {at}"))),
            FORMAT,
            format!("corrupt {} stream: {e}", c.name()),
        ),
    }
}

/// A record stream over a whole file or a split of it.
fn stream(
    file: &Arc<dyn RandomAccess>,
    c: Compression,
    start: u64,
    end: u64,
) -> RecordStream<Box<dyn Read + Send>> {
    let raw = RangeReader::new(file.clone(), start);
    match c {
        Compression::None => RecordStream::new(Box::new(raw), start, end, file.len()),
        Compression::Gzip => RecordStream::new(
            Box::new(flate2::read::MultiGzDecoder::new(
                std::io::BufReader::with_capacity(1 << 20, raw),
            )),
            0,
            u64::MAX,
            framing::MAX_RESYNC_RECORD,
        ),
        Compression::Zlib => RecordStream::new(
            Box::new(flate2::read::ZlibDecoder::new(
                std::io::BufReader::with_capacity(1 << 20, raw),
            )),
            0,
            u64::MAX,
            framing::MAX_RESYNC_RECORD,
        ),
    }
}

fn detect(file: &Arc<dyn RandomAccess>) -> Result<Compression> {
    let head = file.read_at(0, framing::HEADER_LEN.min(file.len() as usize))?;
    Ok(Compression::detect(file.path(), &head))
}

fn fingerprint(file: &Arc<dyn RandomAccess>) -> Result<u32> {
    let len = file.len();
    let head = file.read_at(0, 4096.min(len) as usize)?;
    let tail_at = len.saturating_sub(4096);
    let tail = file.read_at(tail_at, (len - tail_at) as usize)?;
    Ok(crc32c::crc32c_append(crc32c::crc32c(&head), &tail))
}

/// The index pass: walks every record header and data CRC, cuts splits, samples records.
///
/// It never fails on corrupt records: it steps over them as `OnError::Skip` would, counting
/// only valid records, and leaves the reporting to the reader of the split that holds them
/// (so the error names the split). Splits cover the whole file, `[0, len)`, contiguously;
/// every boundary but the first is the start of a valid record.
fn build_index(file: &Arc<dyn RandomAccess>, opts: &ReadOptions) -> Result<Index> {
    let path = file.path().to_string();
    let compression = detect(file)?;
    let mut s = stream(file, compression, 0, u64::MAX);
    let split_bytes = opts.split_bytes.max(1);
    let splittable = compression == Compression::None;
    let mut ranges = Vec::new();
    let mut sample: Vec<Vec<u8>> = Vec::new();
    let (mut start, mut rows) = (0u64, 0u64);
    let mut first_bad: Option<String> = None;
    loop {
        let at = s.offset();
        let ev = s
            .next_record()
            .map_err(|e| from_io(&path, None, compression, at, e))?;
        match ev {
            Event::Record { offset, at, len } => {
                if sample.len() < SAMPLE_RECORDS {
                    sample.push(s.buf()[at..at + len].to_vec());
                }
                if splittable && rows > 0 && offset >= start + split_bytes {
                    ranges.push((start, offset, rows));
                    (start, rows) = (offset, 0);
                }
                rows += 1;
            }
            Event::BadData { offset } => {
                first_bad.get_or_insert_with(|| format!("data CRC mismatch at offset {offset}"));
            }
            Event::BadHeader { offset } => {
                first_bad.get_or_insert_with(|| format!("length CRC mismatch at offset {offset}"));
                s.resync()
                    .map_err(|e| from_io(&path, None, compression, at, e))?;
            }
            Event::Truncated { offset, detail } => {
                first_bad.get_or_insert_with(|| format!("truncated at offset {offset}: {detail}"));
                break;
            }
            Event::End => break,
        }
    }
    if !file.is_empty() {
        ranges.push((start, file.len(), rows));
    }
    let inferred = if sample.is_empty() {
        None
    } else {
        Some(
            example::infer_schema(sample.iter().map(|r| r.as_slice()))
                .map_err(|(i, e)| format!("record {i}: cannot infer a schema: {}", e.0)),
        )
    };
    Ok(Index {
        compression,
        ranges,
        inferred,
        first_bad,
    })
}

fn index(file: &Arc<dyn RandomAccess>, opts: &ReadOptions) -> Result<Arc<Index>> {
    let key: IndexKey = (
        file.path().to_string(),
        file.len(),
        fingerprint(file)?,
        opts.split_bytes,
    );
    if let Ok(cache) = INDEX_CACHE.lock() {
        if let Some(ix) = cache.get(&key) {
            return Ok(ix.clone());
        }
    }
    let ix = Arc::new(build_index(file, opts)?);
    if let Ok(mut cache) = INDEX_CACHE.lock() {
        if cache.len() >= 4096 {
            cache.clear();
        }
        cache.insert(key, ix.clone());
    }
    Ok(ix)
}

/// Plans the splits of one file; ids start at `first_id`.
///
/// The schema is `opts.schema` when given (checked to use TFRecord types only), otherwise
/// inferred from the first [`SAMPLE_RECORDS`] records. A file without records and without a
/// given schema is a `DataError` (nothing to infer from).
pub fn plan_file(
    storage: &Arc<dyn Storage>,
    file: &FileStatus,
    opts: &ReadOptions,
    first_id: u32,
) -> Result<(SchemaRef, Vec<Split>)> {
    let f = storage.open(&file.path)?;
    let ix = index(&f, opts)?;
    let schema = match (&opts.schema, &ix.inferred) {
        (Some(s), _) => {
            example::check_schema(s).map_err(|detail| Error::Schema {
                path: file.path.clone(),
                detail,
            })?;
            s.clone()
        }
        (None, Some(Ok(s))) => s.clone(),
        (None, Some(Err(detail))) => {
            return Err(Error::data(
                loc(&file.path, None, None, None),
                FORMAT,
                detail.clone(),
            ))
        }
        (None, None) => {
            return Err(Error::data(
                loc(&file.path, None, Some(0), None),
                FORMAT,
                match &ix.first_bad {
                    Some(bad) => format!(
                        "no valid TFRecord record in a {}-byte file ({bad}); {} file?",
                        file.len,
                        if ix.compression == Compression::None {
                            "not a TFRecord"
                        } else {
                            "corrupt"
                        }
                    ),
                    None => format!(
                        "no records in a {}-byte file: cannot infer a schema (pass one to read \
                         it as empty)",
                        file.len
                    ),
                },
            ))
        }
    };
    let parts = ix
        .ranges
        .iter()
        .map(|&(start, end, rows)| (SplitUnit::Bytes { start, end }, rows, end - start));
    let splits = file_splits(&file.path, Format::Tfrecord, first_id, parts);
    Ok((schema, splits))
}

/// Opens one split for reading, yielding batches of `schema` (projected further by
/// `opts.columns` when set).
pub fn open(
    storage: &Arc<dyn Storage>,
    split: &Split,
    schema: &SchemaRef,
    opts: &ReadOptions,
) -> Result<Box<dyn SplitReader>> {
    Ok(Box::new(TfrecordReader::open(
        storage, split, schema, opts,
    )?))
}

/// Projects `schema` on `columns` (in the order given).
pub fn project(path: &str, schema: &SchemaRef, columns: Option<&[String]>) -> Result<SchemaRef> {
    let Some(cols) = columns else {
        return Ok(schema.clone());
    };
    let mut fields = Vec::with_capacity(cols.len());
    for c in cols {
        let f = schema.field_with_name(c).map_err(|_| Error::Schema {
            path: path.to_string(),
            detail: format!(
                "no column {c:?}; the columns are {:?}",
                schema.fields().iter().map(|f| f.name()).collect::<Vec<_>>()
            ),
        })?;
        fields.push(f.clone());
    }
    Ok(Arc::new(Schema::new(fields)))
}

/// Reads one TFRecord split.
pub struct TfrecordReader {
    path: String,
    split: u32,
    compression: Compression,
    stream: RecordStream<Box<dyn Read + Send>>,
    decoder: ExampleDecoder,
    schema: SchemaRef,
    batch_rows: usize,
    on_error: OnError,
    /// Records seen (valid or not) since the split start.
    record: u64,
    skipped: SkipStats,
    skipped_bytes: u64,
    /// Valid records (both CRCs right) taken so far: the position of the next one, as the
    /// plan counts rows.
    valid: u64,
    /// Valid records that did not decode, by position.
    gaps: Vec<SkippedRows>,
    done: bool,
    /// What [`SplitReader::skip_rows`] met and left for [`Self::fill`] (never a valid record).
    held: Option<std::io::Result<Event>>,
}

impl TfrecordReader {
    /// Opens a split.
    pub fn open(
        storage: &Arc<dyn Storage>,
        split: &Split,
        schema: &SchemaRef,
        opts: &ReadOptions,
    ) -> Result<Self> {
        let schema = project(&split.path, schema, opts.columns.as_deref())?;
        let SplitUnit::Bytes { start, end } = split.unit else {
            return Err(Error::InvalidArgument(format!(
                "{}: a TFRecord split must be a byte range, got {:?}",
                split.path, split.unit
            )));
        };
        let file = storage.open(&split.path)?;
        let compression = detect(&file)?;
        if compression != Compression::None && start != 0 {
            return Err(Error::InvalidArgument(format!(
                "{}: a {} TFRecord file is one split and cannot start at byte {start}",
                split.path,
                compression.name()
            )));
        }
        let decoder = ExampleDecoder::new(schema.clone()).map_err(|detail| Error::Schema {
            path: split.path.clone(),
            detail,
        })?;
        let mut stream = stream(&file, compression, start, end);
        if compression == Compression::None && start > 0 {
            // Bytes before the first record that starts in the split belong to the previous
            // split: not corruption, not counted.
            stream
                .sync_here()
                .map_err(|e| from_io(&split.path, Some(split.id), compression, start, e))?;
        }
        Ok(Self {
            path: split.path.clone(),
            split: split.id,
            compression,
            stream,
            decoder,
            schema,
            batch_rows: opts.batch_rows.max(1),
            on_error: opts.on_error,
            record: 0,
            skipped: SkipStats::default(),
            skipped_bytes: 0,
            valid: 0,
            gaps: Vec::new(),
            done: false,
            held: None,
        })
    }

    /// Bytes skipped while resynchronising after corrupt headers or a truncated tail.
    pub fn skipped_bytes(&self) -> u64 {
        self.skipped_bytes
    }

    fn error(&self, offset: u64, detail: String) -> Error {
        let l = match self.compression {
            Compression::None => loc(
                &self.path,
                Some(self.split),
                Some(offset),
                Some(format!("record {}", self.record)),
            ),
            c => loc(
                &self.path,
                Some(self.split),
                None,
                Some(format!(
                    "record {} at decompressed offset {offset} ({})",
                    self.record,
                    c.name()
                )),
            ),
        };
        Error::data(l, FORMAT, detail)
    }

    /// Handles a bad record: an error under Raise, a count and a warning under Skip.
    fn bad(&mut self, offset: u64, detail: String) -> Result<()> {
        let e = self.error(offset, detail);
        match self.on_error {
            OnError::Raise => {
                self.done = true;
                Err(e)
            }
            OnError::Skip => {
                tracing::warn!("skipping: {e}");
                self.skipped.records += 1;
                Ok(())
            }
        }
    }

    fn fill(&mut self) -> Result<()> {
        while self.decoder.rows() < self.batch_rows {
            let at = self.stream.offset();
            let ev = self
                .held
                .take()
                .unwrap_or_else(|| self.stream.next_record())
                .map_err(|e| from_io(&self.path, Some(self.split), self.compression, at, e))?;
            match ev {
                Event::Record { offset, at, len } => {
                    let r = self.decoder.push(&self.stream.buf()[at..at + len]);
                    self.valid += 1;
                    if let Err(e) = r {
                        self.bad(offset, format!("bad tf.train.Example: {}", e.0))?;
                        let reason = SkippedRows::reason_of(&self.error(offset, e.0));
                        self.gaps.push(SkippedRows {
                            start: self.valid - 1,
                            end: self.valid,
                            reason,
                        });
                    }
                }
                Event::BadData { offset } => {
                    self.bad(offset, "data CRC mismatch (corrupt record)".into())?;
                }
                Event::BadHeader { offset } => {
                    let e = self.error(
                        offset,
                        "length CRC mismatch (corrupt record header or not a TFRecord file)".into(),
                    );
                    if self.on_error == OnError::Raise {
                        self.done = true;
                        return Err(e);
                    }
                    let n = self.stream.resync().map_err(|e| {
                        from_io(&self.path, Some(self.split), self.compression, at, e)
                    })?;
                    tracing::warn!("skipping {n} bytes to the next valid record: {e}");
                    self.skipped.blocks += 1;
                    self.skipped_bytes += n;
                }
                Event::Truncated { offset, detail } => {
                    let e = self.error(offset, format!("truncated file: {detail}"));
                    self.done = true;
                    if self.on_error == OnError::Raise {
                        return Err(e);
                    }
                    tracing::warn!("skipping a truncated tail: {e}");
                    self.skipped.blocks += 1;
                    self.skipped_bytes += self.stream.offset().saturating_sub(offset);
                    return Ok(());
                }
                Event::End => {
                    self.done = true;
                    return Ok(());
                }
            }
            self.record += 1;
        }
        Ok(())
    }
}

impl Iterator for TfrecordReader {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done && self.decoder.rows() == 0 {
            return None;
        }
        if !self.done {
            if let Err(e) = self.fill() {
                return Some(Err(e));
            }
        }
        if self.decoder.rows() == 0 {
            return None;
        }
        let rows = self.decoder.rows();
        let r = self
            .decoder
            .finish()
            .map_err(|detail| self.error(self.stream.offset(), detail))
            .and_then(|cols| {
                RecordBatch::try_new_with_options(
                    self.schema.clone(),
                    cols,
                    &arrow_array::RecordBatchOptions::new().with_row_count(Some(rows)),
                )
                .map_err(|e| Error::Schema {
                    path: self.path.clone(),
                    detail: format!("a decoded batch does not match the file's schema: {e}"),
                })
            });
        Some(r)
    }
}

impl SplitReader for TfrecordReader {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn skipped(&self) -> SkipStats {
        self.skipped.clone()
    }

    fn skipped_rows(&self) -> &[SkippedRows] {
        &self.gaps
    }

    /// Frames records (their CRCs checked) without parsing them as `tf.train.Example`s; stops
    /// at anything but a valid record, which the next read then reports as it would have.
    fn skip_rows(&mut self, n: u64) -> u64 {
        if self.done || self.record > 0 || self.decoder.rows() > 0 || self.held.is_some() {
            return 0;
        }
        let mut passed = 0;
        while passed < n {
            match self.stream.next_record() {
                Ok(Event::Record { .. }) => {
                    passed += 1;
                    self.valid += 1;
                    self.record += 1;
                }
                other => {
                    self.held = Some(other);
                    break;
                }
            }
        }
        passed
    }
}

/// Plans and reads a whole file (tests, tools): the schema, the batches of every split in
/// order, and what was skipped.
pub fn read_file(
    storage: &Arc<dyn Storage>,
    path: &str,
    opts: &ReadOptions,
) -> Result<(SchemaRef, Vec<RecordBatch>, SkipStats)> {
    let st = storage.stat(path)?;
    let (schema, splits) = plan_file(storage, &st, opts, 0)?;
    let schema = project(path, &schema, opts.columns.as_deref())?;
    let mut out = Vec::new();
    let mut skipped = SkipStats::default();
    for s in &splits {
        let mut r = TfrecordReader::open(storage, s, &schema, opts)?;
        for b in &mut r {
            out.push(b?);
        }
        let k = r.skipped();
        skipped.records += k.records;
        skipped.blocks += k.blocks;
    }
    Ok((schema, out, skipped))
}
