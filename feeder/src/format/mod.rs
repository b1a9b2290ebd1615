//! Format readers: Parquet, ORC, Avro and TFRecord files into Arrow `RecordBatch`es.
//!
//! [`plan`] lists an input (file, directory as Spark/Hive write them, or glob) and cuts every
//! file into [`Split`]s from its own metadata; [`open_split`] reads one split.

use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;

use crate::split::{Format, Split};
use crate::storage::Storage;
use crate::Result;

pub mod avro;
pub mod orc;
pub mod parquet;
pub mod tfrecord;

/// What to do with a corrupt record or block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnError {
    /// Stop with a `DataError` (default).
    #[default]
    Raise,
    /// Skip the bad record or block, count it and log its location.
    Skip,
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
}

impl Plan {
    /// Total rows of all splits.
    pub fn total_rows(&self) -> u64 {
        self.splits.iter().map(|s| s.rows).sum()
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

/// A reader of one split.
pub trait SplitReader: Iterator<Item = Result<RecordBatch>> + Send {
    /// The schema of the batches it yields.
    fn schema(&self) -> SchemaRef;
    /// What was skipped so far under `OnError::Skip`.
    fn skipped(&self) -> SkipStats;
}

/// Lists `input` and plans its splits.
pub fn plan(storage: &Arc<dyn Storage>, input: &str, opts: &ReadOptions) -> Result<Plan> {
    let _ = (storage, input, opts);
    Err(crate::Error::Internal("format::plan is not built yet".into()))
}

/// Opens one split of a plan for reading.
pub fn open_split(
    storage: &Arc<dyn Storage>,
    plan: &Plan,
    split: &Split,
    opts: &ReadOptions,
) -> Result<Box<dyn SplitReader>> {
    let _ = (storage, plan, split, opts);
    Err(crate::Error::Internal("format::open_split is not built yet".into()))
}
