//! Apache Iceberg tables read in place: the live data files of one snapshot, from the table's
//! metadata file, the snapshot's manifest list and its manifests (Avro, read with arrow-avro
//! through a reader schema that keeps only the fields used).
//!
//! The input is a metadata file (`.../metadata/00005-<uuid>.metadata.json`, what a catalog
//! points at), or a table directory whose `metadata/version-hint.text` names the current one
//! (Hadoop tables). Without a hint the newest-looking metadata file may be an uncommitted
//! write, so a directory without one is refused, asking for the metadata file.
//!
//! The schema read is the snapshot's own (its `schema-id`, else the current schema), and every
//! column of a data file is found by its field id ([`crate::mapping`]), as the spec requires:
//! a renamed column reads from files written under its old name, a column added later is null
//! in older files, a column dropped and another added under its name are two columns, a
//! widened type (`int` to `long`, `float` to `double`, a decimal's precision) is cast. Files
//! without field ids are read through the table's name mapping (`schema.name-mapping.default`)
//! where it has one, else by name only while the table's schema never changed.
//!
//! Position delete files (format v2), deletion vectors (v3) and equality delete files are
//! honoured: the rows they delete are left out before the plan counts rows
//! (`iceberg_deletes.rs`, `iceberg_equality.rs`; a partitioned spec's equality deletes within
//! their partition, by the tuples the manifests record: `iceberg_partition.rs`).
//!
//! Under a filter, the manifest list's partition summaries rule out whole manifests of data
//! files before they are read, by the spec's identity fields (`iceberg_partition.rs`).
//!
//! A column added with an `initial-default` holds it in the files written before (filled in
//! by [`crate::mapping`]).
//!
//! Refused by name, never read wrong: data files not in Parquet, nested fields with an
//! `initial-default`, types this reader does not know, a type change that is no widening the
//! spec allows (naming the column and the file).

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::Array;
use serde::Deserialize;

use crate::delta::{bad, read_all, SnapshotSpec, TableFile, TableFiles, TableSnapshot};

#[path = "iceberg_deletes.rs"]
mod deletes;
#[path = "iceberg_equality.rs"]
mod equality;
#[path = "iceberg_partition.rs"]
mod partition;
#[path = "iceberg_stats.rs"]
mod stats;
use crate::{Error, Result};
use hydrofeed_storage::{FileStatus, Storage};

/// The manifest list's fields this reader uses (Avro reader schema).
const MANIFEST_LIST: &str = r#"{"type":"record","name":"manifest_file","fields":[
 {"name":"manifest_path","type":"string"},
 {"name":"partition_spec_id","type":"int","default":0},
 {"name":"content","type":"int","default":0},
 {"name":"sequence_number","type":"long","default":0}]}"#;

/// A manifest entry's fields this reader uses (Avro reader schema).
const MANIFEST: &str = r#"{"type":"record","name":"manifest_entry","fields":[
 {"name":"status","type":"int"},
 {"name":"sequence_number","type":["null","long"],"default":null},
 {"name":"data_file","type":{"type":"record","name":"r2","fields":[
  {"name":"content","type":"int","default":0},
  {"name":"file_path","type":"string"},
  {"name":"file_format","type":"string"},
  {"name":"record_count","type":"long"},
  {"name":"file_size_in_bytes","type":"long"},
  {"name":"equality_ids","type":["null",{"type":"array","items":"long"}],"default":null},
  {"name":"referenced_data_file","type":["null","string"],"default":null},
  {"name":"content_offset","type":["null","long"],"default":null},
  {"name":"content_size_in_bytes","type":["null","long"],"default":null},
  {"name":"null_value_counts","type":["null",{"type":"array","items":{"type":"record",
   "name":"k121_v122","fields":[{"name":"key","type":"int"},{"name":"value","type":"long"}]}}],
   "default":null},
  {"name":"lower_bounds","type":["null",{"type":"array","items":{"type":"record",
   "name":"k126_v127","fields":[{"name":"key","type":"int"},{"name":"value","type":"bytes"}]}}],
   "default":null},
  {"name":"upper_bounds","type":["null",{"type":"array","items":{"type":"record",
   "name":"k129_v130","fields":[{"name":"key","type":"int"},{"name":"value","type":"bytes"}]}}],
   "default":null}]}}]}"#;

#[derive(Debug, Deserialize)]
struct Metadata {
    #[serde(rename = "table-uuid")]
    uuid: String,
    #[serde(rename = "current-snapshot-id", default)]
    current: Option<i64>,
    #[serde(default)]
    snapshots: Vec<Snapshot>,
    #[serde(default)]
    schemas: Vec<serde_json::Value>,
    #[serde(rename = "current-schema-id", default)]
    current_schema: Option<i64>,
    /// Format v1's single schema, where `schemas` is absent.
    #[serde(default)]
    schema: Option<serde_json::Value>,
    #[serde(default)]
    properties: std::collections::HashMap<String, String>,
    #[serde(rename = "partition-specs", default)]
    partition_specs: Vec<serde_json::Value>,
    /// Format v1's single partition spec (its fields), where `partition-specs` is absent.
    #[serde(rename = "partition-spec", default)]
    partition_spec: Option<serde_json::Value>,
}

#[derive(Debug, Deserialize)]
struct Snapshot {
    #[serde(rename = "snapshot-id")]
    id: i64,
    #[serde(rename = "timestamp-ms")]
    timestamp_ms: i64,
    #[serde(rename = "manifest-list")]
    manifest_list: String,
    #[serde(rename = "schema-id", default)]
    schema_id: Option<i64>,
}

/// A path of the metadata as storage opens it: `file:` URIs become local paths.
fn storage_path(p: &str) -> String {
    if let Some(rest) = p.strip_prefix("file://") {
        return rest.to_string();
    }
    if let Some(rest) = p.strip_prefix("file:") {
        return rest.to_string();
    }
    p.to_string()
}

/// Whether `input` names an Iceberg table: a `.metadata.json` file, or a directory whose
/// `metadata/` holds one.
pub fn is_table(storage: &Arc<dyn Storage>, input: &str) -> bool {
    if input.ends_with(".metadata.json") {
        return true;
    }
    let dir = format!("{}/metadata", input.trim_end_matches('/'));
    storage.stat(&dir).is_ok_and(|s| s.is_dir)
        && storage
            .list(&dir)
            .is_ok_and(|l| l.iter().any(|f| f.path.ends_with(".metadata.json")))
}

/// The metadata file of the table at `input` (see the module).
fn metadata_file(storage: &Arc<dyn Storage>, input: &str) -> Result<String> {
    if input.ends_with(".metadata.json") {
        return Ok(input.to_string());
    }
    let dir = format!("{}/metadata", input.trim_end_matches('/'));
    let hint = format!("{dir}/version-hint.text");
    let v = match read_all(storage, &hint) {
        Ok(b) => String::from_utf8_lossy(&b).trim().to_string(),
        Err(_) => {
            return Err(Error::InvalidArgument(format!(
                "{input}: an Iceberg table without metadata/version-hint.text: its newest \
                 metadata file may be an uncommitted write; give the current metadata file \
                 (what the catalog points at, .../metadata/NNNNN-<uuid>.metadata.json) as the \
                 input"
            )))
        }
    };
    let mut names: Vec<String> = storage
        .list(&dir)?
        .into_iter()
        .map(|f| f.path)
        .filter(|p| {
            let n = p.rsplit('/').next().unwrap_or(p);
            n == format!("v{v}.metadata.json")
                || n.starts_with(&format!("{v:0>5}-")) && n.ends_with(".metadata.json")
        })
        .collect();
    names.sort();
    names.pop().ok_or_else(|| {
        bad(
            &hint,
            format!("names version {v}, but no v{v}.metadata.json is in {dir}"),
        )
    })
}

fn col<'a>(b: &'a arrow_array::RecordBatch, name: &str, path: &str) -> Result<&'a Arc<dyn Array>> {
    b.column_by_name(name)
        .ok_or_else(|| bad(path, format!("no field {name}")))
}

/// Reads the snapshot `at` (default: the current one) of the Iceberg table at `input`; under
/// `filter`, without the manifests of data files its partition summaries rule out.
pub fn snapshot(
    storage: &Arc<dyn Storage>,
    input: &str,
    at: Option<&SnapshotSpec>,
    filter: Option<&crate::filter::Filter>,
) -> Result<TableFiles> {
    let meta_path = metadata_file(storage, input)?;
    let meta_local = storage_path(&meta_path);
    let meta: Metadata = serde_json::from_slice(&read_all(storage, &meta_local)?)
        .map_err(|e| bad(&meta_path, format!("not Iceberg table metadata: {e}")))?;
    let snap = match at {
        None => {
            let id = meta
                .current
                .filter(|&id| id >= 0)
                .ok_or_else(|| bad(&meta_path, "the table has no current snapshot (no data)"))?;
            meta.snapshots.iter().find(|s| s.id == id)
        }
        Some(SnapshotSpec::Version(v)) => meta.snapshots.iter().find(|s| s.id as u64 == *v),
        Some(SnapshotSpec::AsOfMs(t)) => meta
            .snapshots
            .iter()
            .filter(|s| s.timestamp_ms <= *t)
            .max_by_key(|s| s.timestamp_ms),
    }
    .ok_or_else(|| {
        Error::InvalidArgument(format!(
            "{input}: the Iceberg table has no snapshot {} (it has {}; an expired snapshot \
             cannot be read)",
            match at {
                Some(SnapshotSpec::Version(v)) => v.to_string(),
                Some(SnapshotSpec::AsOfMs(t)) => format!("at or before {t} ms since the epoch"),
                None => "current".into(),
            },
            meta.snapshots
                .iter()
                .map(|s| s.id.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ))
    })?;
    let columns = snapshot_columns(&meta_path, &meta, snap)?;
    let by_id = stats::top_level(&columns);
    let list_path = storage_path(&snap.manifest_list);
    let mut live = Live::default();
    let pruner = filter.and_then(|f| {
        let specs = partition::spec_fields(&meta.partition_specs, meta.partition_spec.as_ref());
        partition::Pruner::new(f, &columns.schema(), &by_id, &specs)
    });
    let splice: &[&str] = &["partitions"];
    let (mut manifests, mut pruned) = (0, 0);
    for b in partition::avro_batches(
        storage,
        &list_path,
        MANIFEST_LIST,
        pruner.as_ref().map(|_| splice),
    )? {
        let paths = col(&b, "manifest_path", &list_path)?
            .as_string::<i32>()
            .clone();
        let seqs = col(&b, "sequence_number", &list_path)?
            .as_primitive::<arrow_array::types::Int64Type>()
            .clone();
        let specs = col(&b, "partition_spec_id", &list_path)?
            .as_primitive::<arrow_array::types::Int32Type>()
            .clone();
        let content = col(&b, "content", &list_path)?
            .as_primitive::<arrow_array::types::Int32Type>()
            .clone();
        let summaries = b.column_by_name("partitions").map(|c| c.as_list::<i32>());
        for i in 0..b.num_rows() {
            manifests += 1;
            // Manifests of data files only: a delete manifest is kept whole.
            if let (Some(p), Some(s), 0) = (&pruner, summaries, content.value(i)) {
                if p.rules_out(specs.value(i), s, i) {
                    pruned += 1;
                    continue;
                }
            }
            let manifest = Manifest {
                path: storage_path(paths.value(i)),
                seq: seqs.value(i),
                spec: specs.value(i),
            };
            manifest_files(storage, &manifest, &by_id, &mut live)?;
        }
    }
    if pruner.is_some() {
        tracing::info!(
            "{input}: snapshot {}: {pruned} of {manifests} manifests ruled out by their \
             partition summaries under the filter (not read)",
            snap.id
        );
    }
    let mut files = deletes::apply(storage, live.data, &live.deletes, &live.equality, &by_id)?;
    files.sort_by(|a: &TableFile, b| a.status.path.cmp(&b.status.path));
    Ok(TableFiles {
        snapshot: TableSnapshot {
            kind: "iceberg",
            id: meta.uuid,
            version: snap.id as u64,
            committed_ms: Some(snap.timestamp_ms),
        },
        files,
        partition_columns: Vec::new(),
        columns: Some(Arc::new(columns)),
        manifests_ruled_out: pruned,
    })
}

/// The columns of the schema `snap` was written with (its `schema-id`, else the table's
/// current schema), each found in the data files by its field id.
fn snapshot_columns(
    meta_path: &str,
    meta: &Metadata,
    snap: &Snapshot,
) -> Result<crate::mapping::TableColumns> {
    let id = snap.schema_id.or(meta.current_schema);
    let schema = match id {
        Some(id) => meta
            .schemas
            .iter()
            .find(|s| s["schema-id"].as_i64() == Some(id))
            .or(meta
                .schema
                .as_ref()
                .filter(|s| s["schema-id"].as_i64().is_none_or(|i| i == id))),
        None => meta.schema.as_ref().or(meta.schemas.last()),
    }
    .ok_or_else(|| {
        bad(
            meta_path,
            format!(
                "snapshot {} was written with schema {}, which the metadata does not hold",
                snap.id,
                id.map_or("(none named)".into(), |i| i.to_string())
            ),
        )
    })?;
    let mut columns = Vec::new();
    for f in schema["fields"].as_array().into_iter().flatten() {
        columns.push(iceberg_field(meta_path, "", f)?);
    }
    Ok(crate::mapping::TableColumns {
        columns,
        // A table that never changed its schema: files without field ids (imported ones)
        // name its columns as it does.
        names_without_ids: meta.schemas.len() <= 1,
        name_mapping: meta
            .properties
            .get("schema.name-mapping.default")
            .map(|m| {
                serde_json::from_str(m)
                    .map_err(|e| bad(meta_path, format!("schema.name-mapping.default: {e}")))
            })
            .transpose()?,
    })
}

/// One field of an Iceberg schema (`{"id", "name", "required", "type"}`); `parent`: the dotted
/// path above it, for errors.
fn iceberg_field(
    meta_path: &str,
    parent: &str,
    f: &serde_json::Value,
) -> Result<crate::mapping::Column> {
    use crate::mapping::{Column, Key};
    let name = f["name"].as_str().unwrap_or_default();
    let dotted = if parent.is_empty() {
        name.to_string()
    } else {
        format!("{parent}.{name}")
    };
    let id = f["id"]
        .as_i64()
        .and_then(|i| i32::try_from(i).ok())
        .ok_or_else(|| bad(meta_path, format!("column {dotted:?} has no field id")))?;
    let required = f["required"].as_bool().unwrap_or(false);
    let kind = iceberg_type(meta_path, &dotted, &f["type"])?;
    let column = Column::new(name, Key::Id(id), !required, kind);
    // The value of the files written before the column was added: checked here, filled in
    // where a file lacks the column (`mapping`). Nested fields' defaults are not filled yet.
    let default = match f.get("initial-default") {
        Some(d) if !d.is_null() => {
            let t = column.field().data_type().clone();
            let why = if parent.is_empty() {
                crate::mapping::default_array(&t, d).err()
            } else {
                Some("a nested field's default is not filled in yet".to_string())
            };
            if let Some(why) = why {
                return Err(bad(
                    meta_path,
                    format!("column {dotted:?} has the initial default {d}: {why}"),
                ));
            }
            Some(d.to_string())
        }
        _ => None,
    };
    Ok(column.with_default(default))
}

/// An Iceberg type as the Arrow type of a table column.
fn iceberg_type(
    meta_path: &str,
    dotted: &str,
    t: &serde_json::Value,
) -> Result<crate::mapping::Kind> {
    use crate::mapping::{Column, Key, Kind};
    use arrow_schema::{DataType as T, TimeUnit};
    let child = |id: &serde_json::Value, name: &str, required: bool, t: &serde_json::Value| {
        let id = id
            .as_i64()
            .and_then(|i| i32::try_from(i).ok())
            .unwrap_or(-1);
        let k = iceberg_type(meta_path, &format!("{dotted}.{name}"), t)?;
        Ok::<_, Error>(Box::new(Column::new(name, Key::Id(id), !required, k)))
    };
    if let Some(p) = t.as_str() {
        let prim = match p {
            "boolean" => T::Boolean,
            "int" => T::Int32,
            "long" => T::Int64,
            "float" => T::Float32,
            "double" => T::Float64,
            "date" => T::Date32,
            "time" => T::Time64(TimeUnit::Microsecond),
            "timestamp" => T::Timestamp(TimeUnit::Microsecond, None),
            "timestamptz" => T::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
            "timestamp_ns" => T::Timestamp(TimeUnit::Nanosecond, None),
            "timestamptz_ns" => T::Timestamp(TimeUnit::Nanosecond, Some("UTC".into())),
            "string" => T::Utf8,
            "uuid" => T::FixedSizeBinary(16),
            "binary" => T::Binary,
            _ => {
                let num = |s: &str| s.trim().parse::<u32>().ok();
                if let Some(n) = p.strip_prefix("fixed[").and_then(|r| r.strip_suffix(']')) {
                    T::FixedSizeBinary(
                        num(n).and_then(|n| i32::try_from(n).ok()).ok_or_else(|| {
                            bad(meta_path, format!("column {dotted:?}: type {p:?}"))
                        })?,
                    )
                } else if let Some(ps) =
                    p.strip_prefix("decimal(").and_then(|r| r.strip_suffix(')'))
                {
                    let (pr, sc) = ps.split_once(',').unwrap_or((ps, "0"));
                    match (
                        num(pr).and_then(|v| u8::try_from(v).ok()),
                        sc.trim().parse::<i8>(),
                    ) {
                        (Some(pr), Ok(sc)) => T::Decimal128(pr, sc),
                        _ => return Err(bad(meta_path, format!("column {dotted:?}: type {p:?}"))),
                    }
                } else {
                    return Err(bad(
                        meta_path,
                        format!(
                            "column {dotted:?} is of Iceberg type {p:?}, which this reader does \
                             not read"
                        ),
                    ));
                }
            }
        };
        return Ok(Kind::Primitive(prim));
    }
    match t["type"].as_str() {
        Some("struct") => {
            let mut cols = Vec::new();
            for f in t["fields"].as_array().into_iter().flatten() {
                cols.push(iceberg_field(meta_path, dotted, f)?);
            }
            Ok(Kind::Struct(cols))
        }
        Some("list") => Ok(Kind::List(child(
            &t["element-id"],
            "element",
            t["element-required"].as_bool().unwrap_or(false),
            &t["element"],
        )?)),
        Some("map") => Ok(Kind::Map(
            child(&t["key-id"], "key", true, &t["key"])?,
            child(
                &t["value-id"],
                "value",
                t["value-required"].as_bool().unwrap_or(false),
                &t["value"],
            )?,
        )),
        _ => Err(bad(
            meta_path,
            format!("column {dotted:?}: an Iceberg type this reader does not know: {t}"),
        )),
    }
}

/// A snapshot's live data files and delete files, from its manifests.
#[derive(Default)]
struct Live {
    data: Vec<deletes::DataEntry>,
    deletes: Vec<deletes::DeleteEntry>,
    equality: Vec<equality::EqualityDelete>,
    /// The partition tuples of the manifests read.
    tuples: partition::Tuples,
}

/// A manifest as the manifest list names it.
struct Manifest {
    /// As storage opens it.
    path: String,
    /// Its sequence number (the one its entries added in its snapshot inherit).
    seq: i64,
    /// Its partition spec's id.
    spec: i32,
}

/// The live entries of `manifest` into `out`.
fn manifest_files(
    storage: &Arc<dyn Storage>,
    manifest: &Manifest,
    by_id: &stats::ById,
    out: &mut Live,
) -> Result<()> {
    use arrow_array::types::{Int32Type, Int64Type};
    let path = manifest.path.as_str();
    for b in partition::avro_batches(storage, path, MANIFEST, Some(&["data_file", "partition"]))? {
        let status = col(&b, "status", path)?.as_primitive::<Int32Type>().clone();
        let seq = col(&b, "sequence_number", path)?
            .as_primitive::<Int64Type>()
            .clone();
        let df = col(&b, "data_file", path)?.as_struct().clone();
        let field = |n: &str| {
            df.column_by_name(n)
                .cloned()
                .ok_or_else(|| bad(path, format!("no data_file.{n}")))
        };
        let content = field("content")?;
        let content = content.as_primitive::<arrow_array::types::Int32Type>();
        let file_path = field("file_path")?;
        let file_path = file_path.as_string::<i32>();
        let format = field("file_format")?;
        let format = format.as_string::<i32>();
        let records = field("record_count")?;
        let records = records.as_primitive::<arrow_array::types::Int64Type>();
        let size = field("file_size_in_bytes")?;
        let size = size.as_primitive::<arrow_array::types::Int64Type>();
        let referenced = field("referenced_data_file")?;
        let referenced = referenced.as_string::<i32>();
        let offset = field("content_offset")?;
        let offset = offset.as_primitive::<Int64Type>();
        let blob = field("content_size_in_bytes")?;
        let blob = blob.as_primitive::<Int64Type>();
        let eq_ids = field("equality_ids")?;
        let eq_ids = eq_ids.as_list::<i32>();
        let bounds = stats::Bounds::of(&df);
        let parts = out
            .tuples
            .keys(path, manifest.spec, df.column_by_name("partition"))?;
        let part = |i: usize| parts.as_ref().map(|p| p[i].clone());
        for i in 0..b.num_rows() {
            if status.value(i) == 2 {
                continue; // DELETED: not live in this snapshot
            }
            // Inherited from the manifest where the entry was added in its snapshot.
            let seq = if seq.is_valid(i) {
                seq.value(i)
            } else {
                manifest.seq
            };
            let fmt = format.value(i);
            match content.value(i) {
                0 => {}
                1 => {
                    let kind = if fmt.eq_ignore_ascii_case("puffin") {
                        if !offset.is_valid(i) || !blob.is_valid(i) {
                            return Err(bad(
                                file_path.value(i),
                                "a deletion vector whose manifest entry gives no \
                                 content_offset and content_size_in_bytes",
                            ));
                        }
                        deletes::DeleteKind::Vector {
                            offset: offset.value(i).max(0) as u64,
                            size: blob.value(i).max(0) as u64,
                        }
                    } else if fmt.eq_ignore_ascii_case("parquet") {
                        deletes::DeleteKind::Positions
                    } else {
                        return Err(bad(
                            file_path.value(i),
                            format!(
                                "an Iceberg position delete file in {fmt}: only Parquet and \
                                 Puffin deletion vectors are read"
                            ),
                        ));
                    };
                    out.deletes.push(deletes::DeleteEntry {
                        path: storage_path(file_path.value(i)),
                        kind,
                        seq,
                        records: records.value(i).max(0) as u64,
                        referenced: referenced
                            .is_valid(i)
                            .then(|| referenced.value(i).to_string()),
                    });
                    continue;
                }
                2 => {
                    if !fmt.eq_ignore_ascii_case("parquet") {
                        return Err(bad(
                            file_path.value(i),
                            format!(
                                "an Iceberg equality delete file in {fmt}: only Parquet is read"
                            ),
                        ));
                    }
                    // Read as longs: the spec's ints, and the longs pyiceberg writes.
                    let ids = if eq_ids.is_valid(i) {
                        let l = eq_ids.value(i);
                        let ids = l.as_primitive::<Int64Type>().values().iter();
                        ids.map(|&v| i32::try_from(v).ok())
                            .collect::<Option<Vec<i32>>>()
                            .ok_or_else(|| {
                                bad(file_path.value(i), "an equality_ids field id out of range")
                            })?
                    } else {
                        Vec::new()
                    };
                    if ids.is_empty() {
                        return Err(bad(
                            file_path.value(i),
                            "an equality delete file whose manifest entry names no equality_ids",
                        ));
                    }
                    out.equality.push(equality::EqualityDelete {
                        path: storage_path(file_path.value(i)),
                        ids,
                        seq,
                        partition: part(i),
                    });
                    continue;
                }
                c => {
                    return Err(bad(
                        file_path.value(i),
                        format!("a manifest entry of content {c}, which Iceberg does not define"),
                    ))
                }
            }
            if !fmt.eq_ignore_ascii_case("parquet") {
                return Err(bad(
                    file_path.value(i),
                    format!("an Iceberg data file in {fmt}: only Parquet is read"),
                ));
            }
            out.data.push(deletes::DataEntry {
                file: TableFile {
                    status: FileStatus {
                        path: storage_path(file_path.value(i)),
                        len: size.value(i).max(0) as u64,
                        is_dir: false,
                        modified_ms: None,
                    },
                    partition: Vec::new(),
                    records: u64::try_from(records.value(i)).ok(),
                    deletion: None,
                    stats: bounds.stats(i, records.value(i), by_id),
                },
                raw_path: file_path.value(i).to_string(),
                seq,
                partition: part(i),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mapping::{Key, Kind};

    fn meta(schemas: &str) -> Metadata {
        serde_json::from_str(&format!(
            r#"{{"table-uuid":"u","current-schema-id":1,"schemas":[{schemas}],"snapshots":[]}}"#
        ))
        .unwrap()
    }

    fn snap(schema_id: Option<i64>) -> Snapshot {
        Snapshot {
            id: 9,
            timestamp_ms: 0,
            manifest_list: String::new(),
            schema_id,
        }
    }

    const TWO: &str = r#"{"schema-id":0,"type":"struct","fields":[
        {"id":1,"name":"a","required":false,"type":"int"},
        {"id":2,"name":"gone","required":false,"type":"string"}]},
      {"schema-id":1,"type":"struct","fields":[
        {"id":1,"name":"b","required":true,"type":"long"},
        {"id":3,"name":"st","required":false,"type":{"type":"struct","fields":[
          {"id":4,"name":"w","required":false,"type":"decimal(9, 2)"}]}},
        {"id":5,"name":"l","required":false,"type":{"type":"list","element-id":6,
          "element-required":false,"element":"timestamptz"}}]}"#;

    #[test]
    fn a_snapshot_reads_its_own_schema_by_field_id() {
        let m = meta(TWO);
        let old = snapshot_columns("m.json", &m, &snap(Some(0))).unwrap();
        let names: Vec<_> = old
            .columns
            .iter()
            .map(|c| (c.name.as_str(), &c.key))
            .collect();
        assert_eq!(names, [("a", &Key::Id(1)), ("gone", &Key::Id(2))]);
        assert!(
            !old.names_without_ids,
            "the schema changed: files need field ids"
        );
        // No schema-id on the snapshot: the current schema.
        let now = snapshot_columns("m.json", &m, &snap(None)).unwrap();
        let names: Vec<_> = now.columns.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["b", "st", "l"]);
        assert!(!now.columns[0].nullable);
        let Kind::Struct(st) = &now.columns[1].kind else {
            panic!("{:?}", now.columns[1])
        };
        assert_eq!(
            st[0].kind,
            Kind::Primitive(arrow_schema::DataType::Decimal128(9, 2))
        );
        let s = now.schema();
        assert_eq!(
            s.field(2).data_type().to_string(),
            r#"List(Timestamp(µs, "UTC"), field: 'element')"#
        );
        let e = snapshot_columns("m.json", &m, &snap(Some(7))).unwrap_err();
        assert!(e.to_string().contains("schema 7"), "{e}");
    }

    #[test]
    fn what_cannot_be_read_right_is_refused_by_name() {
        let m = meta(
            r#"{"schema-id":1,"type":"struct","fields":[
            {"id":1,"name":"v","required":false,"type":"variant"}]}"#,
        );
        let e = snapshot_columns("m.json", &m, &snap(None)).unwrap_err();
        assert!(
            e.to_string()
                .contains(r#"column "v" is of Iceberg type "variant""#),
            "{e}"
        );
        // A default that is no value of its type, and a nested field's: refused by name (a
        // top-level one of its type is read: `mapping` fills it in).
        let m = meta(
            r#"{"schema-id":1,"type":"struct","fields":[
            {"id":1,"name":"d","required":false,"type":"int","initial-default":"four"}]}"#,
        );
        let e = snapshot_columns("m.json", &m, &snap(None)).unwrap_err();
        assert!(
            e.to_string()
                .contains(r#"column "d" has the initial default"#),
            "{e}"
        );
        let m = meta(
            r#"{"schema-id":1,"type":"struct","fields":[
            {"id":1,"name":"st","required":false,"type":{"type":"struct","fields":[
              {"id":2,"name":"z","required":false,"type":"int","initial-default":4}]}}]}"#,
        );
        let e = snapshot_columns("m.json", &m, &snap(None)).unwrap_err();
        assert!(e.to_string().contains("nested field's default"), "{e}");
        let m = meta(
            r#"{"schema-id":1,"type":"struct","fields":[
            {"id":1,"name":"d","required":true,"type":"int","initial-default":4}]}"#,
        );
        let c = snapshot_columns("m.json", &m, &snap(None)).unwrap();
        assert_eq!(c.columns[0].default.as_deref(), Some("4"));
    }
}
