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
//!   one orc-rust reader per stripe, selected with `with_file_byte_range` over the stripe's
//!   first byte, so that an error names its stripe and `OnError::Skip` drops exactly one.
//!   orc-rust has no way to share parsed file metadata between readers, so each stripe
//!   re-reads the tail (a few KiB).
//! - Projection: top-level names (nested columns whole), in the order given.
//! - Codecs: orc-rust always has zlib, snappy, lzo, lz4 and zstd.

use std::collections::VecDeque;
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use orc_rust::arrow_reader::ArrowReader;
use orc_rust::projection::ProjectionMask;
use orc_rust::ArrowReaderBuilder;

use super::io::{
    catch, check_head_magic, column_indices, guard, loc, not_this_format, panicked, StorageChunks,
};
use super::parquet::{check_against, group_units};
use super::{OnError, ReadOptions, SkipStats, SplitReader};
use crate::split::{Format, Split, SplitUnit};
use crate::{Error, Result};
use hydrofeed_storage::{FileStatus, Storage};

const FORMAT: &str = "orc";

fn builder(chunks: &StorageChunks, path: &str) -> Result<ArrowReaderBuilder<StorageChunks>> {
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

/// `(offset, rows, bytes)` of every stripe.
fn stripes(b: &ArrowReaderBuilder<StorageChunks>) -> Vec<(u64, u64, u64)> {
    b.file_metadata()
        .stripe_metadatas()
        .iter()
        .map(|s| {
            (
                s.offset(),
                s.number_of_rows(),
                s.index_length() + s.data_length() + s.footer_length(),
            )
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
    let b = builder(&chunks, &file.path)?;
    let units: Vec<(u64, u64)> = stripes(&b).iter().map(|&(_, r, n)| (r, n)).collect();
    let splits = group_units(&units, opts.split_bytes)
        .into_iter()
        .enumerate()
        .map(|(i, (first, count, rows, bytes))| Split {
            id: first_id + i as u32,
            path: file.path.clone(),
            format: Format::Orc,
            unit: SplitUnit::Stripes { first, count },
            rows,
            bytes,
            partition: Vec::new(),
        })
        .collect();
    Ok((b.schema(), splits))
}

/// Opens one split for reading, yielding batches of `schema` projected by `opts.columns`.
pub fn open(
    storage: &Arc<dyn Storage>,
    split: &Split,
    schema: &SchemaRef,
    opts: &ReadOptions,
) -> Result<Box<dyn SplitReader>> {
    Ok(Box::new(OrcReader::open(storage, split, schema, opts)?))
}

/// Reads one ORC split, stripe by stripe.
pub struct OrcReader {
    path: String,
    split: u32,
    chunks: StorageChunks,
    /// Offset and rows of every stripe of the file.
    stripes: Vec<(u64, u64, u64)>,
    columns: Option<Vec<String>>,
    /// Output column `i` is column `perm[i]` of what orc-rust yields.
    perm: Option<Vec<usize>>,
    schema: SchemaRef,
    batch_rows: usize,
    on_error: OnError,
    todo: VecDeque<usize>,
    /// The stripe being read (for errors).
    active: usize,
    current: Option<(usize, ArrowReader<StorageChunks>)>,
    buffered: VecDeque<RecordBatch>,
    skipped: SkipStats,
    done: bool,
}

impl OrcReader {
    /// Opens a split.
    pub fn open(
        storage: &Arc<dyn Storage>,
        split: &Split,
        schema: &SchemaRef,
        opts: &ReadOptions,
    ) -> Result<Self> {
        let SplitUnit::Stripes { first, count } = split.unit else {
            return Err(Error::InvalidArgument(format!(
                "{}: an ORC split must be stripes, got {:?}",
                split.path, split.unit
            )));
        };
        let chunks = StorageChunks::new(storage.open(&split.path)?);
        check_head_magic(chunks.file(), b"ORC", FORMAT)?;
        let b = builder(&chunks, &split.path)?;
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
        let (perm, out_schema) = match &opts.columns {
            None => (None, file_schema.clone()),
            Some(cols) => {
                let idx = column_indices(&split.path, &file_schema, cols)?;
                let mut sorted = idx.clone();
                sorted.sort_unstable();
                sorted.dedup();
                let perm = idx
                    .iter()
                    .map(|i| sorted.iter().position(|s| s == i).unwrap_or(0))
                    .collect();
                let out = Arc::new(file_schema.project(&idx).map_err(|e| Error::Schema {
                    path: split.path.clone(),
                    detail: e.to_string(),
                })?);
                (Some(perm), out)
            }
        };
        check_against(&split.path, &out_schema, schema)?;
        Ok(Self {
            path: split.path.clone(),
            split: split.id,
            chunks,
            stripes,
            columns: opts.columns.clone(),
            perm,
            schema: out_schema,
            batch_rows: opts.batch_rows.max(1),
            on_error: opts.on_error,
            todo: (first as usize..(first + count) as usize).collect(),
            active: first as usize,
            current: None,
            buffered: VecDeque::new(),
            skipped: SkipStats::default(),
            done: false,
        })
    }

    fn stripe_error(&self, stripe: usize, detail: String) -> Error {
        if let Some(e) = self.chunks.take_error() {
            return e;
        }
        Error::data(
            loc(
                &self.path,
                Some(self.split),
                Some(self.stripes[stripe].0),
                Some(format!("stripe {stripe}")),
            ),
            FORMAT,
            detail,
        )
    }

    fn stripe_reader(&self, stripe: usize) -> Result<ArrowReader<StorageChunks>> {
        let b = builder(&self.chunks, &self.path)?;
        let mask = match &self.columns {
            None => ProjectionMask::all(),
            Some(c) => ProjectionMask::named_roots(b.file_metadata().root_data_type(), c),
        };
        let at = self.stripes[stripe].0 as usize;
        Ok(b.with_projection(mask)
            .with_batch_size(self.batch_rows)
            .with_file_byte_range(at..at + 1)
            .build())
    }

    fn finish_batch(&self, b: RecordBatch) -> Result<RecordBatch> {
        let cols = match &self.perm {
            None => b.columns().to_vec(),
            Some(p) => p.iter().map(|&i| b.column(i).clone()).collect(),
        };
        RecordBatch::try_new_with_options(
            self.schema.clone(),
            cols,
            &arrow_array::RecordBatchOptions::new().with_row_count(Some(b.num_rows())),
        )
        .map_err(|e| Error::Internal(format!("batch of {}: {e}", self.path)))
    }

    fn bad(&mut self, stripe: usize, e: Error) -> Result<()> {
        if self.on_error == OnError::Raise || !matches!(e, Error::Data { .. }) {
            self.done = true;
            return Err(e);
        }
        tracing::warn!("skipping: {e}");
        self.skipped.blocks += 1;
        self.skipped.records += self.stripes[stripe].1;
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
            let Some((stripe, mut reader)) = self.current.take() else {
                let Some(stripe) = self.todo.pop_front() else {
                    self.done = true;
                    return Ok(None);
                };
                self.active = stripe;
                match self.stripe_reader(stripe) {
                    Ok(r) => self.current = Some((stripe, r)),
                    Err(e) => {
                        let e = match e {
                            Error::Data { detail, .. } => self.stripe_error(stripe, detail),
                            e => e,
                        };
                        self.bad(stripe, e)?
                    }
                }
                continue;
            };
            if self.on_error == OnError::Raise {
                match reader.next() {
                    Some(Ok(b)) => {
                        self.current = Some((stripe, reader));
                        return self.finish_batch(b).map(Some);
                    }
                    Some(Err(e)) => {
                        let e = self.stripe_error(stripe, e.to_string());
                        self.done = true;
                        return Err(e);
                    }
                    None => continue,
                }
            }
            // Skip: decode the whole stripe first, so a bad one is dropped whole and counted.
            let (path, split) = (self.path.clone(), self.split);
            let decoded = guard(
                || loc(&path, Some(split), None, Some(format!("stripe {stripe}"))),
                FORMAT,
                || {
                    reader
                        .by_ref()
                        .collect::<std::result::Result<Vec<_>, _>>()
                        .map_err(|e| Error::Internal(e.to_string()))
                },
            );
            match decoded {
                Ok(got) => {
                    for b in got {
                        let b = self.finish_batch(b)?;
                        self.buffered.push_back(b);
                    }
                }
                Err(Error::Internal(msg)) => {
                    let e = self.stripe_error(stripe, msg);
                    self.bad(stripe, e)?;
                }
                Err(e) => self.bad(stripe, e)?,
            }
        }
    }
}

impl Iterator for OrcReader {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Self::Item> {
        let r = match catch(|| self.step()) {
            Ok(r) => r,
            Err(msg) => Err(self.stripe_error(self.active, panicked(&msg))),
        };
        if r.is_err() {
            self.done = true;
            self.current = None;
            self.buffered.clear();
        }
        r.transpose()
    }
}

impl SplitReader for OrcReader {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn skipped(&self) -> SkipStats {
        self.skipped.clone()
    }
}
