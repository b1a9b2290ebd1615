//! Input listing: which files an input names, their format and Hive-style partition values.
//!
//! - A file is itself.
//! - A directory is walked recursively, as Spark and Hive write tables: `key=value`
//!   directory names give partition values (percent-escapes decoded,
//!   `__HIVE_DEFAULT_PARTITION__` is null); names starting with `.` or `_` (`_SUCCESS`,
//!   `_metadata`, `_common_metadata`, `_temporary`, `.part-0.crc`) and names ending in `.crc`
//!   are ignored.
//! - A path with `*`, `?` or `[` is a glob: the directory above the first such component is
//!   walked as above and every file whose path below it matches (`glob::Pattern`, `*` not
//!   crossing `/`) is taken. Matching is on listed names, so it works on HDFS alike.
//! - Format: `opts.format`, else from the names (`.parquet`/`.parq`/`.pq`, `.orc`, `.avro`,
//!   `.tfrecord`/`.tfrecords`, optionally `.gz`/`.zlib` after them). Files of two formats, or
//!   a name that tells none, are an error naming the file.
//! - Partition columns are `Int64` when every value parses as one, else `Utf8`; they come
//!   after the file's columns unless `opts.columns` orders them.

use std::sync::Arc;

use arrow_array::{new_null_array, ArrayRef, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use super::{SkipStats, SplitReader};
use crate::split::{Format, Split};
use crate::{Error, Result};
use hydrofeed_storage::{FileStatus, Storage};

/// The value Hive writes for a null partition value.
pub const HIVE_NULL: &str = "__HIVE_DEFAULT_PARTITION__";

/// One listed data file.
#[derive(Debug, Clone)]
pub struct Listed {
    /// The file.
    pub status: FileStatus,
    /// `key=value` directories above it (below the input root).
    pub partition: Vec<(String, String)>,
    /// A table's deletion vector of the file (Delta): rows it no longer holds.
    pub deletion: Option<crate::deletion::DeletionVector>,
    /// A table's statistics of the file (Delta `add.stats`), where present.
    pub stats: Option<serde_json::Value>,
}

/// The files of an input.
#[derive(Debug, Clone)]
pub struct Listing {
    /// Their format.
    pub format: Format,
    /// In path order.
    pub files: Vec<Listed>,
    /// Partition columns, in directory order.
    pub partition_fields: Vec<Field>,
    /// The table snapshot the files are, when the input is a table (Delta Lake).
    pub table: Option<crate::delta::TableSnapshot>,
    /// The table's columns, when its files are read by physical name or field id (Delta column
    /// mapping, Iceberg): each file's own columns are resolved against them.
    pub columns: Option<Arc<crate::mapping::TableColumns>>,
    /// Manifests of the table a filter ruled out by their partition summaries (Iceberg).
    pub manifests_ruled_out: u64,
}

/// The format a file name tells, if any.
pub fn format_of_name(name: &str) -> Option<Format> {
    let n = name.to_ascii_lowercase();
    let n = n
        .strip_suffix(".gz")
        .or_else(|| n.strip_suffix(".zlib"))
        .unwrap_or(&n);
    if n.ends_with(".parquet") || n.ends_with(".parq") || n.ends_with(".pq") {
        Some(Format::Parquet)
    } else if n.ends_with(".orc") {
        Some(Format::Orc)
    } else if n.ends_with(".avro") {
        Some(Format::Avro)
    } else if n.ends_with(".tfrecord") || n.ends_with(".tfrecords") {
        Some(Format::Tfrecord)
    } else {
        None
    }
}

fn base_name(path: &str) -> &str {
    path.trim_end_matches('/')
        .rsplit('/')
        .next()
        .unwrap_or(path)
}

/// Whether a name is one Spark/Hive/Hadoop writers leave beside the data.
pub fn is_hidden(name: &str) -> bool {
    name.starts_with('.') || name.starts_with('_') || name.ends_with(".crc")
}

/// A partition column: `int64` when every value is an integer, else `string`; nullable.
fn partition_field(name: &str, ints: bool) -> Field {
    let t = if ints {
        DataType::Int64
    } else {
        DataType::Utf8
    };
    Field::new(name, t, true)
}

/// `%XX` escapes decoded (Hive partition directories, Delta paths).
pub(crate) fn unescape(v: &str) -> String {
    let b = v.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let Ok(x) = u8::from_str_radix(&v[i + 1..i + 3], 16) {
                out.push(x);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn walk(
    storage: &Arc<dyn Storage>,
    dir: &str,
    rel: &str,
    parts: &[(String, String)],
    out: &mut Vec<(String, Listed)>,
    depth: usize,
) -> Result<()> {
    if depth > 64 {
        return Err(Error::InvalidArgument(format!(
            "{dir}: directories nested deeper than 64"
        )));
    }
    let mut children = storage.list(dir)?;
    children.sort_by(|a, b| a.path.cmp(&b.path));
    for c in children {
        let name = base_name(&c.path).to_string();
        if is_hidden(&name) {
            continue;
        }
        let child_rel = if rel.is_empty() {
            name.clone()
        } else {
            format!("{rel}/{name}")
        };
        if c.is_dir {
            let mut p = parts.to_vec();
            if let Some((k, v)) = name.split_once('=') {
                if !k.is_empty() {
                    p.push((unescape(k), unescape(v)));
                }
            }
            walk(storage, &c.path, &child_rel, &p, out, depth + 1)?;
        } else {
            out.push((
                child_rel,
                Listed {
                    status: c,
                    partition: parts.to_vec(),
                    deletion: None,
                    stats: None,
                },
            ));
        }
    }
    Ok(())
}

fn is_glob(s: &str) -> bool {
    s.contains(['*', '?', '['])
}

/// The live files of the table (Delta Lake or Iceberg) at `input`, at `snapshot`.
fn list_table(
    storage: &Arc<dyn Storage>,
    input: &str,
    format: Option<Format>,
    snapshot: Option<&crate::delta::SnapshotSpec>,
    filter: Option<&crate::filter::Filter>,
    iceberg: bool,
) -> Result<Listing> {
    let kind = if iceberg { "an Iceberg" } else { "a Delta" };
    if format.is_some_and(|f| f != Format::Parquet) {
        return Err(Error::InvalidArgument(format!(
            "{input}: {kind} table is read from its Parquet files, but --format says {format:?}"
        )));
    }
    let t = if iceberg {
        crate::iceberg::snapshot(storage, input, snapshot, filter)?
    } else {
        crate::delta::snapshot(storage, input, snapshot)?
    };
    tracing::info!(
        "{input}: {} table {} at {}: {} live files",
        t.snapshot.kind,
        t.snapshot.id,
        t.snapshot.version,
        t.files.len()
    );
    if t.files.is_empty() {
        return Err(Error::InvalidArgument(format!(
            "{input}: snapshot {} of {kind} table holds no data file",
            t.snapshot.version
        )));
    }
    let files = t
        .files
        .into_iter()
        .map(|f| Listed {
            status: f.status,
            deletion: f.deletion,
            stats: f.stats,
            partition: f
                .partition
                .into_iter()
                .map(|(k, v)| (k, v.unwrap_or_else(|| HIVE_NULL.to_string())))
                .collect(),
        })
        .collect();
    let partition_fields = t
        .partition_columns
        .iter()
        .map(|(k, int)| partition_field(k, *int))
        .collect();
    Ok(Listing {
        format: Format::Parquet,
        files,
        partition_fields,
        table: Some(t.snapshot),
        columns: t.columns,
        manifests_ruled_out: t.manifests_ruled_out,
    })
}

/// Lists the data files of `input` (a table's at `snapshot`; an Iceberg table's without the
/// manifests `filter` rules out by their partition summaries).
pub fn list(
    storage: &Arc<dyn Storage>,
    input: &str,
    format: Option<Format>,
    snapshot: Option<&crate::delta::SnapshotSpec>,
    filter: Option<&crate::filter::Filter>,
) -> Result<Listing> {
    if !is_glob(input) && crate::delta::is_table(storage, input) {
        return list_table(storage, input, format, snapshot, None, false);
    }
    if !is_glob(input) && crate::iceberg::is_table(storage, input) {
        return list_table(storage, input, format, snapshot, filter, true);
    }
    if snapshot.is_some() {
        return Err(Error::InvalidArgument(format!(
            "{input}: a snapshot was given, but this is not a table (no {}/ below it, not an \
             Iceberg table's metadata file or directory)",
            crate::delta::LOG_DIR
        )));
    }
    let mut found: Vec<(String, Listed)> = Vec::new();
    if is_glob(input) {
        // The directory above the first component with a glob character.
        let first = input.find(['*', '?', '[']).unwrap_or(0);
        let cut = input[..first].rfind('/').ok_or_else(|| {
            Error::InvalidArgument(format!(
                "{input}: a glob needs a directory part (e.g. dir/*.parquet)"
            ))
        })?;
        let (base, pat) = (&input[..cut.max(1)], &input[cut + 1..]);
        let pattern = glob::Pattern::new(pat)
            .map_err(|e| Error::InvalidArgument(format!("{input}: bad glob: {e}")))?;
        let st = storage.stat(base)?;
        if !st.is_dir {
            return Err(Error::InvalidArgument(format!(
                "{input}: {base} is not a directory"
            )));
        }
        let mut all = Vec::new();
        walk(storage, base, "", &[], &mut all, 0)?;
        let opts = glob::MatchOptions {
            require_literal_separator: true,
            ..Default::default()
        };
        // A pattern naming directories takes every file below a matching directory.
        found = all
            .into_iter()
            .filter(|(rel, _)| {
                let mut prefix = String::new();
                rel.split('/').any(|comp| {
                    if !prefix.is_empty() {
                        prefix.push('/');
                    }
                    prefix.push_str(comp);
                    pattern.matches_with(&prefix, opts)
                })
            })
            .collect();
        if found.is_empty() {
            return Err(Error::NotFound {
                path: format!("{input} (the glob matches no data file)"),
            });
        }
    } else {
        let st = storage.stat(input)?;
        if st.is_dir {
            walk(storage, input, "", &[], &mut found, 0)?;
            if found.is_empty() {
                return Err(Error::InvalidArgument(format!(
                    "{input}: no data files in this directory (it is empty or holds only hidden, \
                     _SUCCESS or .crc files)"
                )));
            }
        } else {
            let name = base_name(&st.path).to_string();
            found.push((
                name,
                Listed {
                    status: st,
                    partition: Vec::new(),
                    deletion: None,
                    stats: None,
                },
            ));
        }
    }
    found.sort_by(|a, b| a.0.cmp(&b.0));

    // The format.
    let mut fmt: Option<(Format, String)> = format.map(|f| (f, "--format".to_string()));
    for (_, l) in &found {
        let named = format_of_name(base_name(&l.status.path));
        match (&fmt, named) {
            (Some((f, from)), Some(n)) if *f != n => {
                return Err(Error::InvalidArgument(format!(
                    "{}: its name says {n:?} but {from} says {f:?}; an input holds one format",
                    l.status.path
                )))
            }
            (None, Some(n)) => fmt = Some((n, l.status.path.clone())),
            (None, None) => {
                return Err(Error::InvalidArgument(format!(
                    "{}: cannot tell the format from the name; pass the format (--format)",
                    l.status.path
                )))
            }
            _ => {}
        }
    }
    let Some((format, _)) = fmt else {
        return Err(Error::Internal(format!("{input}: no format")));
    };
    // Partition columns: every file must have the same keys in the same order.
    let keys: Vec<String> = found[0]
        .1
        .partition
        .iter()
        .map(|(k, _)| k.clone())
        .collect();
    for (_, l) in &found {
        let k: Vec<&String> = l.partition.iter().map(|(k, _)| k).collect();
        if k != keys.iter().collect::<Vec<_>>() {
            return Err(Error::Schema {
                path: l.status.path.clone(),
                detail: format!(
                    "partition directories {:?} differ from {:?} of {}",
                    k, keys, found[0].1.status.path
                ),
            });
        }
    }
    let partition_fields = keys
        .iter()
        .enumerate()
        .map(|(i, k)| {
            let ints = found.iter().all(|(_, l)| {
                let v = &l.partition[i].1;
                v == HIVE_NULL || v.parse::<i64>().is_ok()
            });
            partition_field(k, ints)
        })
        .collect();
    Ok(Listing {
        format,
        files: found.into_iter().map(|(_, l)| l).collect(),
        partition_fields,
        table: None,
        columns: None,
        manifests_ruled_out: 0,
    })
}

/// Checks that a file's schema is the first file's.
pub fn same_schema(p0: &str, s0: &SchemaRef, p: &str, s: &SchemaRef) -> Result<()> {
    let names = |s: &SchemaRef| {
        s.fields()
            .iter()
            .map(|f| f.name().clone())
            .collect::<Vec<_>>()
    };
    if names(s0) != names(s) {
        return Err(Error::Schema {
            path: p.to_string(),
            detail: format!(
                "its columns {:?} differ from {:?} of {p0}",
                names(s),
                names(s0)
            ),
        });
    }
    for (a, b) in s0.fields().iter().zip(s.fields()) {
        if !a.data_type().equals_datatype(b.data_type()) {
            return Err(Error::Schema {
                path: p.to_string(),
                detail: format!(
                    "column {:?} is {} here but {} in {p0}",
                    a.name(),
                    b.data_type(),
                    a.data_type()
                ),
            });
        }
    }
    Ok(())
}

/// The schema of a plan: the file's columns (projected) and the partition columns.
pub fn plan_schema(
    path: &str,
    file: &SchemaRef,
    partition: &[Field],
    columns: Option<&[String]>,
) -> Result<SchemaRef> {
    for p in partition {
        if file.field_with_name(p.name()).is_ok() {
            return Err(Error::Schema {
                path: path.to_string(),
                detail: format!(
                    "partition directory key {:?} is also a column of the file",
                    p.name()
                ),
            });
        }
    }
    let fields: Vec<Field> = match columns {
        None => file
            .fields()
            .iter()
            .map(|f| f.as_ref().clone())
            .chain(partition.iter().cloned())
            .collect(),
        Some(cols) => cols
            .iter()
            .map(|c| {
                file.field_with_name(c)
                    .ok()
                    .or_else(|| partition.iter().find(|p| p.name() == c))
                    .cloned()
                    .ok_or_else(|| Error::Schema {
                        path: path.to_string(),
                        detail: format!(
                            "no column {c:?}; the columns are {:?}",
                            file.fields()
                                .iter()
                                .map(|f| f.name().as_str())
                                .chain(partition.iter().map(|p| p.name().as_str()))
                                .collect::<Vec<_>>()
                        ),
                    })
            })
            .collect::<Result<_>>()?,
    };
    Ok(Arc::new(Schema::new_with_metadata(
        fields,
        file.metadata().clone(),
    )))
}

/// A split reader with the split's partition values appended as constant columns.
pub struct WithPartition {
    inner: Box<dyn SplitReader>,
    schema: SchemaRef,
    /// Per output column: `None` from the file, `Some(value)` a partition constant.
    consts: Vec<Option<Option<String>>>,
}

impl WithPartition {
    /// Wraps `inner` (yielding the file columns of `schema`) for `split`.
    pub fn new(inner: Box<dyn SplitReader>, schema: SchemaRef, split: &Split) -> Result<Self> {
        let consts = schema
            .fields()
            .iter()
            .map(|f| {
                split
                    .partition
                    .iter()
                    .find(|(k, _)| k == f.name())
                    .map(|(_, v)| {
                        if v == HIVE_NULL {
                            None
                        } else {
                            Some(v.clone())
                        }
                    })
            })
            .collect();
        Ok(Self {
            inner,
            schema,
            consts,
        })
    }

    fn extend(&self, b: RecordBatch) -> Result<RecordBatch> {
        let n = b.num_rows();
        let mut cols: Vec<ArrayRef> = Vec::with_capacity(self.consts.len());
        for (f, c) in self.schema.fields().iter().zip(&self.consts) {
            let col: ArrayRef = match c {
                None => b.column_by_name(f.name()).cloned().ok_or_else(|| {
                    Error::Internal(format!("reader yielded no column {:?}", f.name()))
                })?,
                Some(None) => new_null_array(f.data_type(), n),
                Some(Some(v)) => partition_constant(f.data_type(), v, n)?,
            };
            cols.push(col);
        }
        RecordBatch::try_new_with_options(
            self.schema.clone(),
            cols,
            &arrow_array::RecordBatchOptions::new().with_row_count(Some(n)),
        )
        .map_err(|e| Error::Internal(format!("appending partition columns: {e}")))
    }
}

/// `n` rows of the partition value `v` (not Hive's null) in a partition column of type `t`.
pub(crate) fn partition_constant(t: &DataType, v: &str, n: usize) -> Result<ArrayRef> {
    Ok(match t {
        DataType::Int64 => Arc::new(Int64Array::from_value(
            v.parse::<i64>()
                .map_err(|e| Error::Internal(format!("{v}: {e}")))?,
            n,
        )),
        _ => Arc::new(StringArray::from_iter_values(std::iter::repeat_n(v, n))),
    })
}

impl Iterator for WithPartition {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Self::Item> {
        let b = self.inner.next()?;
        Some(b.and_then(|b| self.extend(b)))
    }
}

impl SplitReader for WithPartition {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn skipped(&self) -> SkipStats {
        self.inner.skipped()
    }

    fn skipped_rows(&self) -> &[crate::SkippedRows] {
        self.inner.skipped_rows()
    }

    fn skip_rows(&mut self, n: u64) -> u64 {
        self.inner.skip_rows(n)
    }
}
