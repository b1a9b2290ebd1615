//! Delta Lake tables read in place: the live data files of one snapshot (a version of the
//! table's log), never the files a later commit removed or a writer left uncommitted.
//!
//! The log (`_delta_log/`) is read here, with the project's own Parquet reader for
//! checkpoints, rather than through delta-rs: the `deltalake` crate pins its own arrow and
//! object store, a second arrow to compile and a second I/O layer beside `hydrofeed-storage`
//! (HDFS, Kerberos). What is read:
//!
//! - the newest classic checkpoint at or below the snapshot (`N.checkpoint.parquet`, or every
//!   part of `N.checkpoint.i.n.parquet`), then the JSON commits after it, in order: `add` and
//!   `remove` actions give the live files; `metaData` the table's id, schema and partition
//!   columns; `protocol` what a reader must understand;
//! - the snapshot: a version, or a time (the newest commit at or before it, by its
//!   `commitInfo` timestamp, else the commit file's modification time); by default the newest
//!   version at planning time;
//! - partition values from the `add` actions (typed by the table's schema), not from directory
//!   names;
//! - deletion vectors: a file's identity is its path and its vector (a `DELETE` removes the
//!   file without a vector and adds it with one); the vector is passed on with the file
//!   ([`crate::deletion`] reads it, the plan leaves its rows out).
//!
//! - column mapping (`delta.columnMapping.mode` = `name` or `id`): the data files name their
//!   columns (nested struct fields too) by physical names and carry the columns' ids as Parquet
//!   field ids; the table's columns (the logical schema of `metaData.schemaString`, partition
//!   columns left out) are handed to [`crate::mapping`] keyed by physical name or by id, and
//!   the `add` actions' partition values and statistics, keyed by physical names, are read by
//!   the table's.
//!
//! - without column mapping, the files are read through the table's columns too, by their own
//!   names ([`crate::mapping`]): a file's other encoding of a type (`string_view`), a type
//!   widened since (`typeWidening`) or a column added since (nulls) reads as the table's.
//!
//! Refused by name, never read wrong: another column mapping mode, V2 checkpoints and any
//! reader feature this reader does not know; a Delta type it does not know; a snapshot whose
//! commits were cleaned up (the log no longer reaches it).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{Array, RecordBatch, StructArray};
use bytes::Bytes;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use serde::Deserialize;

use crate::{Error, Result};
use hydrofeed_storage::{FileStatus, Storage};

/// The log directory below a table's root.
pub const LOG_DIR: &str = "_delta_log";

/// Which snapshot of a table to read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SnapshotSpec {
    /// A Delta version, an Iceberg snapshot id.
    Version(u64),
    /// The newest snapshot committed at or before this time (milliseconds since the epoch).
    AsOfMs(i64),
}

impl SnapshotSpec {
    /// `"12"` (a version or snapshot id) or an RFC 3339 time (`"2026-11-28T10:00:00Z"`).
    pub fn parse(s: &str) -> Result<Self> {
        let s = s.trim();
        if let Ok(v) = s.parse::<u64>() {
            return Ok(Self::Version(v));
        }
        chrono::DateTime::parse_from_rfc3339(s)
            .map(|t| Self::AsOfMs(t.timestamp_millis()))
            .map_err(|e| {
                Error::InvalidArgument(format!(
                    "snapshot {s:?}: neither a version (a number) nor an RFC 3339 time \
                     (2026-11-28T10:00:00Z): {e}"
                ))
            })
    }
}

/// The snapshot of a table a plan reads: recorded in the plan and a job's state, so that every
/// feeder and a resumed job read the same files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableSnapshot {
    /// `"delta"` or `"iceberg"`.
    pub kind: &'static str,
    /// The table's identity (Delta: `metaData.id`; Iceberg: `table-uuid`).
    pub id: String,
    /// The version (Delta) or snapshot id (Iceberg) read.
    pub version: u64,
    /// Commit time of that version (ms since the epoch), where the log tells it.
    pub committed_ms: Option<i64>,
}

/// One live data file of a snapshot.
#[derive(Debug, Clone)]
pub struct TableFile {
    /// The file, as storage opens it.
    pub status: FileStatus,
    /// Partition values (`None`: null), in the table's partition column order.
    pub partition: Vec<(String, Option<String>)>,
    /// Rows, from the `add` action's statistics, where present.
    pub records: Option<u64>,
    /// The rows a deletion vector deleted from the file, when it has one.
    pub deletion: Option<crate::deletion::DeletionVector>,
    /// The `add` action's statistics (`numRecords`, `minValues`, `maxValues`, `nullCount`),
    /// where present: a filter rules files out by them unread.
    pub stats: Option<serde_json::Value>,
}

/// A snapshot's live files and what the table says of them.
#[derive(Debug, Clone)]
pub struct TableFiles {
    /// Which snapshot.
    pub snapshot: TableSnapshot,
    /// Live files, in path order.
    pub files: Vec<TableFile>,
    /// Partition columns and whether each is an integer column (else a string).
    pub partition_columns: Vec<(String, bool)>,
    /// The table's columns when its data files name them otherwise (Delta column mapping;
    /// Iceberg, by field id): each file is read through them ([`crate::mapping`]).
    pub columns: Option<Arc<crate::mapping::TableColumns>>,
    /// Manifests a filter ruled out by their partition summaries, unread (Iceberg).
    pub manifests_ruled_out: u64,
}

/// Whether `input` is a Delta table's root (it holds `_delta_log/`).
pub fn is_table(storage: &Arc<dyn Storage>, input: &str) -> bool {
    storage.stat(&join(input, LOG_DIR)).is_ok_and(|s| s.is_dir)
}

fn join(dir: &str, name: &str) -> String {
    format!("{}/{name}", dir.trim_end_matches('/'))
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Add {
    path: String,
    #[serde(default)]
    partition_values: HashMap<String, Option<String>>,
    size: u64,
    #[serde(default)]
    modification_time: i64,
    #[serde(default)]
    deletion_vector: Option<serde_json::Value>,
    #[serde(default)]
    stats: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Remove {
    path: String,
    #[serde(default)]
    deletion_vector: Option<serde_json::Value>,
}

/// A file's identity in the log: its path and its deletion vector's unique id (Delta's
/// protocol: a `DELETE` removes `(path, no vector)` and adds `(path, vector)` in one commit).
fn file_key(path: &str, dv: Option<&serde_json::Value>) -> (String, String) {
    let id = match dv.filter(|d| d.is_object()) {
        None => String::new(),
        Some(d) => {
            let s = |k: &str| d.get(k).map(|v| v.to_string()).unwrap_or_default();
            format!(
                "{}{}@{}",
                s("storageType"),
                s("pathOrInlineDv"),
                s("offset")
            )
        }
    };
    (path.to_string(), id)
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
struct MetaData {
    id: String,
    schema_string: String,
    #[serde(default)]
    partition_columns: Vec<String>,
    #[serde(default)]
    configuration: HashMap<String, Option<String>>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Protocol {
    min_reader_version: i64,
    #[serde(default)]
    reader_features: Option<Vec<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct CommitInfo {
    #[serde(default)]
    timestamp: Option<i64>,
    #[serde(default)]
    in_commit_timestamp: Option<i64>,
}

/// One line of a commit file: one action (the others are ignored).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Line {
    add: Option<Add>,
    remove: Option<Remove>,
    meta_data: Option<MetaData>,
    protocol: Option<Protocol>,
    commit_info: Option<CommitInfo>,
}

/// What the log lists.
#[derive(Default)]
struct LogFiles {
    /// Commit versions and their files.
    commits: BTreeMap<u64, FileStatus>,
    /// Classic checkpoints: version -> parts (`1` for a single file) and the files found.
    checkpoints: BTreeMap<u64, (u32, Vec<String>)>,
    /// A V2 checkpoint (`N.checkpoint.<uuid>.parquet|json`) was seen.
    v2: Option<String>,
}

fn list_log(storage: &Arc<dyn Storage>, log: &str) -> Result<LogFiles> {
    let mut out = LogFiles::default();
    for f in storage.list(log)? {
        let name = f.path.rsplit('/').next().unwrap_or(&f.path).to_string();
        let Some((v, rest)) = name.split_once('.') else {
            continue;
        };
        if v.len() != 20 || !v.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Ok(v) = v.parse::<u64>() else { continue };
        let parts: Vec<&str> = rest.split('.').collect();
        match parts.as_slice() {
            ["json"] => {
                out.commits.insert(v, f);
            }
            ["checkpoint", "parquet"] => {
                out.checkpoints
                    .entry(v)
                    .or_insert((1, Vec::new()))
                    .1
                    .push(f.path);
            }
            ["checkpoint", _, n, "parquet"] if n.parse::<u32>().is_ok() => {
                let n = n.parse::<u32>().unwrap_or(1);
                out.checkpoints
                    .entry(v)
                    .or_insert((n, Vec::new()))
                    .1
                    .push(f.path);
            }
            ["checkpoint", _, "parquet" | "json"] => out.v2 = Some(name),
            _ => {}
        }
    }
    Ok(out)
}

/// A table's metadata that cannot be read as it is (the Delta log, Iceberg's metadata).
pub(crate) fn bad(path: &str, detail: impl Into<String>) -> Error {
    Error::Schema {
        path: path.to_string(),
        detail: detail.into(),
    }
}

/// The live state of the log while it is replayed.
#[derive(Default)]
struct Replay {
    live: BTreeMap<(String, String), Add>,
    meta: Option<MetaData>,
    protocol: Option<Protocol>,
}

impl Replay {
    fn apply(&mut self, l: Line) {
        if let Some(r) = l.remove {
            self.live
                .remove(&file_key(&r.path, r.deletion_vector.as_ref()));
        }
        if let Some(a) = l.add {
            self.live
                .insert(file_key(&a.path, a.deletion_vector.as_ref()), a);
        }
        if let Some(m) = l.meta_data {
            self.meta = Some(m);
        }
        if let Some(p) = l.protocol {
            self.protocol = Some(p);
        }
    }
}

/// The commit time of one commit file.
fn commit_time(storage: &Arc<dyn Storage>, f: &FileStatus) -> Result<Option<i64>> {
    let text = read_all(storage, &f.path)?;
    for line in text.split(|&b| b == b'\n') {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        if let Ok(Line {
            commit_info: Some(c),
            ..
        }) = serde_json::from_slice::<Line>(line)
        {
            return Ok(c
                .in_commit_timestamp
                .or(c.timestamp)
                .or(f.modified_ms.map(|m| m as i64)));
        }
    }
    Ok(f.modified_ms.map(|m| m as i64))
}

/// A whole (metadata) file.
pub(crate) fn read_all(storage: &Arc<dyn Storage>, path: &str) -> Result<Bytes> {
    let f = storage.open(path)?;
    f.read_at(0, f.len() as usize)
}

/// Reads the snapshot `at` (default: the newest) of the Delta table at `root`.
pub fn snapshot(
    storage: &Arc<dyn Storage>,
    root: &str,
    at: Option<&SnapshotSpec>,
) -> Result<TableFiles> {
    let root = root.trim_end_matches('/');
    let log = join(root, LOG_DIR);
    let files = list_log(storage, &log)?;
    let newest = files
        .commits
        .keys()
        .next_back()
        .copied()
        .max(files.checkpoints.keys().next_back().copied())
        .ok_or_else(|| bad(&log, "a Delta log without a commit: not a table (yet)"))?;
    let mut committed_ms = None;
    let version = match at {
        None => newest,
        Some(SnapshotSpec::Version(v)) => {
            if *v > newest {
                return Err(Error::InvalidArgument(format!(
                    "{root}: the Delta table has no version {v} (its newest is {newest})"
                )));
            }
            *v
        }
        Some(SnapshotSpec::AsOfMs(t)) => {
            let mut found = None;
            for (&v, f) in files.commits.iter().rev() {
                let c = commit_time(storage, f)?;
                if c.is_some_and(|c| c <= *t) {
                    found = Some(v);
                    committed_ms = c;
                    break;
                }
            }
            found.ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "{root}: no commit of the Delta table at or before {t} ms since the epoch \
                     (or the log no longer holds it)"
                ))
            })?
        }
    };
    let checkpoint = files
        .checkpoints
        .range(..=version)
        .rev()
        .find(|(_, (n, found))| found.len() as u32 == *n)
        .map(|(&v, (_, paths))| (v, paths.clone()));
    let mut replay = Replay::default();
    let from = match &checkpoint {
        Some((v, paths)) => {
            let mut paths = paths.clone();
            paths.sort();
            for p in &paths {
                read_checkpoint(storage, p, &mut replay)?;
            }
            v + 1
        }
        None => 0,
    };
    if checkpoint.is_none() {
        if let Some(v2) = &files.v2 {
            return Err(bad(
                &log,
                format!(
                    "a V2 checkpoint ({v2}) and no classic one: V2 checkpoints are not read \
                     yet (the table's v2Checkpoint feature)"
                ),
            ));
        }
    }
    for v in from..=version {
        let f = files.commits.get(&v).ok_or_else(|| {
            bad(
                &log,
                format!(
                    "commit {v:020}.json is missing: the log no longer reaches version \
                     {version} (its commits were cleaned up after a checkpoint, or the snapshot \
                     was expired); read a newer version"
                ),
            )
        })?;
        let text = read_all(storage, &f.path)?;
        for (i, line) in text.split(|&b| b == b'\n').enumerate() {
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let l: Line = serde_json::from_slice(line)
                .map_err(|e| bad(&f.path, format!("line {}: not a Delta action: {e}", i + 1)))?;
            if v == version && committed_ms.is_none() {
                if let Some(c) = &l.commit_info {
                    committed_ms = c.in_commit_timestamp.or(c.timestamp);
                }
            }
            replay.apply(l);
        }
    }
    let meta = replay
        .meta
        .clone()
        .ok_or_else(|| bad(&log, format!("no metaData action up to version {version}")))?;
    check_protocol(&log, replay.protocol.as_ref(), &meta)?;
    let types = partition_types(&log, &meta)?;
    // Without column mapping too, every file is read through the table's schema (by the
    // columns' own names): files written with another encoding of a column's type (delta-rs
    // writes `string` then `string_view` into one table), written before a type was widened,
    // or before a column was added (nulls there) read as the table's columns.
    let mapped = column_mapping(&log, &meta)?;
    let mut out = Vec::with_capacity(replay.live.len());
    for ((path, _), a) in replay.live {
        let deletion = match a.deletion_vector.as_ref().filter(|d| !d.is_null()) {
            None => None,
            Some(d) => Some(
                serde_json::from_value::<crate::deletion::DeletionVector>(d.clone())
                    .map_err(|e| bad(&join(root, &path), format!("its deletion vector: {e}")))?,
            ),
        };
        let full = if path.contains("://") || path.starts_with('/') {
            path.clone()
        } else {
            join(root, &crate::listing::unescape(&path))
        };
        let mut stats = a
            .stats
            .as_deref()
            .and_then(|s| serde_json::from_str::<serde_json::Value>(s).ok());
        if let Some(st) = stats.as_mut() {
            for k in ["minValues", "maxValues", "nullCount"] {
                if let Some(v) = st.get_mut(k) {
                    rename_stats(v, &mapped.names);
                }
            }
        }
        let records = stats.as_ref().and_then(|s| s.get("numRecords")?.as_u64());
        out.push(TableFile {
            status: FileStatus {
                path: full,
                len: a.size,
                is_dir: false,
                modified_ms: u64::try_from(a.modification_time).ok(),
            },
            partition: meta
                .partition_columns
                .iter()
                .map(|c| {
                    // Under column mapping, keyed by the column's physical name.
                    let key = mapped
                        .names
                        .iter()
                        .find(|n| &n.logical == c)
                        .map_or(c, |n| &n.physical);
                    (c.clone(), a.partition_values.get(key).cloned().flatten())
                })
                .collect(),
            records,
            deletion,
            stats,
        });
    }
    Ok(TableFiles {
        snapshot: TableSnapshot {
            kind: "delta",
            id: meta.id.clone(),
            version,
            committed_ms,
        },
        files: out,
        partition_columns: meta
            .partition_columns
            .iter()
            .map(|c| (c.clone(), types.get(c).copied().unwrap_or(false)))
            .collect(),
        columns: Some(Arc::new(mapped.columns)),
        manifests_ruled_out: 0,
    })
}

/// The reader features this reader understands (others are refused by name).
const KNOWN_FEATURES: &[&str] = &[
    "timestampNtz",
    "vacuumProtocolCheck",
    "deletionVectors",
    "columnMapping",
    "typeWidening",
    "typeWidening-preview",
];

fn check_protocol(log: &str, p: Option<&Protocol>, meta: &MetaData) -> Result<()> {
    let mode = meta
        .configuration
        .get("delta.columnMapping.mode")
        .cloned()
        .flatten()
        .unwrap_or_else(|| "none".into());
    if !matches!(mode.as_str(), "none" | "name" | "id") {
        return Err(bad(
            log,
            format!(
                "column mapping mode {mode:?} (delta.columnMapping.mode): this reader knows \
                 none, name and id"
            ),
        ));
    }
    let Some(p) = p else { return Ok(()) };
    if p.min_reader_version > 3 {
        return Err(bad(
            log,
            format!(
                "minReaderVersion {}: this reader knows Delta reader versions 1 to 3",
                p.min_reader_version
            ),
        ));
    }
    for f in p.reader_features.iter().flatten() {
        if !KNOWN_FEATURES.contains(&f.as_str()) {
            return Err(bad(
                log,
                format!("the table needs the reader feature {f:?}, which this reader lacks"),
            ));
        }
    }
    Ok(())
}

/// Whether each partition column is an integer column, from the table's schema.
fn partition_types(log: &str, meta: &MetaData) -> Result<HashMap<String, bool>> {
    let schema: serde_json::Value = serde_json::from_str(&meta.schema_string)
        .map_err(|e| bad(log, format!("metaData.schemaString: {e}")))?;
    let mut out = HashMap::new();
    for f in schema["fields"].as_array().into_iter().flatten() {
        let (Some(name), Some(t)) = (f["name"].as_str(), f["type"].as_str()) else {
            continue;
        };
        if meta.partition_columns.iter().any(|c| c == name) {
            out.insert(
                name.to_string(),
                matches!(t, "long" | "integer" | "short" | "byte"),
            );
        }
    }
    Ok(out)
}

/// Replays one checkpoint file (Parquet, read with the project's Parquet crate).
fn read_checkpoint(storage: &Arc<dyn Storage>, path: &str, replay: &mut Replay) -> Result<()> {
    let bytes = read_all(storage, path)?;
    let reader = ParquetRecordBatchReaderBuilder::try_new(bytes)
        .and_then(|b| b.with_batch_size(8192).build())
        .map_err(|e| bad(path, format!("checkpoint: {e}")))?;
    for b in reader {
        let b = b.map_err(|e| bad(path, format!("checkpoint: {e}")))?;
        checkpoint_batch(path, &b, replay)?;
    }
    Ok(())
}

fn field<'a>(s: &'a StructArray, name: &str) -> Option<&'a Arc<dyn Array>> {
    s.column_by_name(name)
}

/// A checkpoint's `deletionVector` struct at row `i`, as the JSON log writes it.
fn dv_at(a: Option<&Arc<dyn Array>>, i: usize) -> Option<serde_json::Value> {
    let d = a?.as_any().downcast_ref::<StructArray>()?;
    if d.is_null(i) {
        return None;
    }
    let mut o = serde_json::Map::new();
    for k in ["storageType", "pathOrInlineDv"] {
        if let Some(v) = str_at(field(d, k), i) {
            o.insert(k.into(), v.into());
        }
    }
    for k in ["offset", "sizeInBytes", "cardinality"] {
        if let Some(v) = i64_at(field(d, k), i) {
            o.insert(k.into(), v.into());
        }
    }
    Some(serde_json::Value::Object(o))
}

fn str_at(a: Option<&Arc<dyn Array>>, i: usize) -> Option<String> {
    let a = a?;
    if a.is_null(i) {
        return None;
    }
    match a.data_type() {
        arrow_schema::DataType::Utf8 => Some(a.as_string::<i32>().value(i).to_string()),
        arrow_schema::DataType::LargeUtf8 => Some(a.as_string::<i64>().value(i).to_string()),
        _ => None,
    }
}

fn i64_at(a: Option<&Arc<dyn Array>>, i: usize) -> Option<i64> {
    let a = a?;
    if a.is_null(i) {
        return None;
    }
    match a.data_type() {
        arrow_schema::DataType::Int64 => {
            Some(a.as_primitive::<arrow_array::types::Int64Type>().value(i))
        }
        arrow_schema::DataType::Int32 => Some(i64::from(
            a.as_primitive::<arrow_array::types::Int32Type>().value(i),
        )),
        _ => None,
    }
}

fn map_at(a: Option<&Arc<dyn Array>>, i: usize) -> HashMap<String, Option<String>> {
    let mut out = HashMap::new();
    let Some(a) = a else { return out };
    let arrow_schema::DataType::Map(..) = a.data_type() else {
        return out;
    };
    if a.is_null(i) {
        return out;
    }
    let m = a.as_map();
    let entries = m.value(i);
    let (k, v) = (entries.column(0), entries.column(1));
    for j in 0..entries.len() {
        if let Some(key) = str_at(Some(k), j) {
            out.insert(key, str_at(Some(v), j));
        }
    }
    out
}

fn strings_at(a: Option<&Arc<dyn Array>>, i: usize) -> Vec<String> {
    let Some(a) = a else { return Vec::new() };
    if a.is_null(i) {
        return Vec::new();
    }
    let values = match a.data_type() {
        arrow_schema::DataType::List(_) => a.as_list::<i32>().value(i),
        arrow_schema::DataType::LargeList(_) => a.as_list::<i64>().value(i),
        _ => return Vec::new(),
    };
    (0..values.len())
        .filter_map(|j| str_at(Some(&values), j))
        .collect()
}

/// The actions of one checkpoint batch, as [`Line`]s.
fn checkpoint_batch(path: &str, b: &RecordBatch, replay: &mut Replay) -> Result<()> {
    let col = |name: &str| b.column_by_name(name).map(|c| c.as_struct());
    let (add, remove, meta, protocol) =
        (col("add"), col("remove"), col("metaData"), col("protocol"));
    for i in 0..b.num_rows() {
        let mut line = Line::default();
        if let Some(a) = add.filter(|a| a.is_valid(i)) {
            let p = str_at(field(a, "path"), i)
                .ok_or_else(|| bad(path, format!("checkpoint row {i}: add without a path")))?;
            line.add = Some(Add {
                path: p,
                partition_values: map_at(field(a, "partitionValues"), i),
                size: i64_at(field(a, "size"), i).unwrap_or(0).max(0) as u64,
                modification_time: i64_at(field(a, "modificationTime"), i).unwrap_or(0),
                deletion_vector: dv_at(field(a, "deletionVector"), i),
                stats: str_at(field(a, "stats"), i),
            });
        }
        if let Some(r) = remove.filter(|r| r.is_valid(i)) {
            if let Some(p) = str_at(field(r, "path"), i) {
                line.remove = Some(Remove {
                    path: p,
                    deletion_vector: dv_at(field(r, "deletionVector"), i),
                });
            }
        }
        if let Some(m) = meta.filter(|m| m.is_valid(i)) {
            line.meta_data = Some(MetaData {
                id: str_at(field(m, "id"), i).unwrap_or_default(),
                schema_string: str_at(field(m, "schemaString"), i).unwrap_or_default(),
                partition_columns: strings_at(field(m, "partitionColumns"), i),
                configuration: map_at(field(m, "configuration"), i),
            });
        }
        if let Some(p) = protocol.filter(|p| p.is_valid(i)) {
            line.protocol = Some(Protocol {
                min_reader_version: i64_at(field(p, "minReaderVersion"), i).unwrap_or(1),
                reader_features: Some(strings_at(field(p, "readerFeatures"), i)),
            });
        }
        replay.apply(line);
    }
    Ok(())
}

#[path = "delta_columns.rs"]
mod columns;
use columns::{column_mapping, rename_stats};

#[cfg(test)]
#[path = "delta_tests.rs"]
mod tests;
