//! Iceberg partitions as the manifests record them: the tuple of each data and delete file
//! (`data_file.partition`), which scopes a partitioned spec's equality deletes to their own
//! partition, and the manifest list's per-manifest summaries of them (`partitions`), by which a
//! filter rules whole manifests out before they are read.
//!
//! A tuple's type depends on its spec (one field per partition field, of its transform's
//! result type: the source column's for `identity` and `truncate`, an int for `bucket` and
//! `day`...), so the reader schema cannot name it in advance: it is taken from the file's own
//! writer schema (the Avro header) and spliced into the fixed reader schema. Tuples are compared
//! as recorded, in Arrow's row format (a null equal to a null), never recomputed from the rows'
//! values through the transforms.

use std::collections::HashMap;
use std::io::Cursor;
use std::sync::Arc;

use arrow::row::{OwnedRow, RowConverter, SortField};
use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, ListArray, RecordBatch};
use arrow_avro::reader::{read_header_info, ReaderBuilder};
use arrow_avro::schema::AvroSchema;
use arrow_schema::{DataType, Field};
use serde_json::Value;

use super::stats::{decode, ById};
use crate::delta::{bad, read_all};
use crate::filter::{Bound, ColumnStats, Filter};
use crate::Result;
use hydrofeed_storage::Storage;

/// Rows of the Avro file `path` read with the reader schema `schema`; `splice`: a field (its
/// path of names through records) whose type is taken from the file's writer schema and added
/// to the reader schema where the writer has it (a record without fields is left out).
pub(super) fn avro_batches(
    storage: &Arc<dyn Storage>,
    path: &str,
    schema: &str,
    splice: Option<&[&str]>,
) -> Result<Vec<RecordBatch>> {
    let err = |e: &dyn std::fmt::Display| bad(path, format!("Iceberg manifest: {e}"));
    let bytes = read_all(storage, path)?;
    let mut schema = schema.to_string();
    if let Some(field) = splice {
        let header = read_header_info(Cursor::new(&bytes[..])).map_err(|e| err(&e))?;
        let writer = header.writer_schema().map_err(|e| err(&e))?;
        let writer: Value = serde_json::from_str(&writer.json_string).map_err(|e| err(&e))?;
        let mut reader: Value = serde_json::from_str(&schema).map_err(|e| err(&e))?;
        if spliced(&mut reader, &writer, field) {
            schema = reader.to_string();
        }
    }
    let r = ReaderBuilder::new()
        .with_batch_size(8192)
        .with_reader_schema(AvroSchema::new(schema))
        .build(Cursor::new(bytes))
        .map_err(|e| err(&e))?;
    r.collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| err(&e))
}

/// The record inside a field's type: the type itself, or a union's one non-null branch.
fn record_of(t: &Value) -> Option<&Value> {
    match t {
        Value::Array(branches) => branches.iter().find(|b| b != &&Value::from("null")),
        t => Some(t),
    }
    .filter(|t| t["type"] == "record")
}

/// Adds the writer's field at `path` to the reader schema `reader`; whether it did.
fn spliced(reader: &mut Value, writer: &Value, path: &[&str]) -> bool {
    let Some((last, parents)) = path.split_last() else {
        return false;
    };
    let mut w = writer;
    let mut r = reader;
    for name in parents {
        let find = |v: &Value| {
            v["fields"]
                .as_array()
                .and_then(|fs| fs.iter().position(|f| f["name"] == *name))
        };
        let (Some(wi), Some(ri)) = (find(w), find(r)) else {
            return false;
        };
        let Some(wt) = record_of(&w["fields"][wi]["type"]) else {
            return false;
        };
        w = wt;
        r = &mut r["fields"][ri]["type"];
        if r.is_array() {
            return false; // the reader schema's records are never unions
        }
    }
    let Some(field) = w["fields"]
        .as_array()
        .and_then(|fs| fs.iter().find(|f| f["name"] == *last))
    else {
        return false;
    };
    let empty = record_of(&field["type"])
        .is_some_and(|t| t["fields"].as_array().is_none_or(|f| f.is_empty()));
    match r["fields"].as_array_mut() {
        Some(fields) if !empty => {
            fields.push(field.clone());
            true
        }
        _ => false,
    }
}

/// A file's partition: its spec and its tuple as its manifest entry records it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) struct PartKey {
    spec: i32,
    tuple: OwnedRow,
}

/// The tuples of the snapshot's specs in Arrow's row format, one converter per spec.
#[derive(Default)]
pub(super) struct Tuples {
    by_spec: HashMap<i32, (Vec<DataType>, RowConverter)>,
}

impl Tuples {
    /// The partition of each entry of a batch of manifest entries (`partition`: its
    /// `data_file.partition` column); `None` where the spec `spec` has no fields.
    pub(super) fn keys(
        &mut self,
        path: &str,
        spec: i32,
        partition: Option<&ArrayRef>,
    ) -> Result<Option<Vec<PartKey>>> {
        let Some(s) = partition.and_then(|p| p.as_struct_opt()) else {
            return Ok(None);
        };
        if s.num_columns() == 0 {
            return Ok(None);
        }
        let err = |e: &dyn std::fmt::Display| bad(path, format!("partition tuples: {e}"));
        let (types, conv) = match self.by_spec.entry(spec) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => {
                let types: Vec<DataType> =
                    s.columns().iter().map(|c| c.data_type().clone()).collect();
                let conv = RowConverter::new(types.iter().cloned().map(SortField::new).collect())
                    .map_err(|e| err(&e))?;
                e.insert((types, conv))
            }
        };
        if types.len() != s.num_columns() {
            return Err(bad(
                path,
                format!(
                    "partition tuples of spec {spec} with {} fields, another manifest's with {}",
                    s.num_columns(),
                    types.len()
                ),
            ));
        }
        let cols = s
            .columns()
            .iter()
            .zip(types)
            .map(|(c, t)| arrow::compute::cast(c, t).map_err(|e| err(&e)))
            .collect::<Result<Vec<_>>>()?;
        let rows = conv.convert_columns(&cols).map_err(|e| err(&e))?;
        Ok(Some(
            rows.iter()
                .map(|r| PartKey {
                    spec,
                    tuple: r.owned(),
                })
                .collect(),
        ))
    }
}

/// The fields of every partition spec of the metadata, by spec id: each field's source
/// column's field id and its transform. `specs`: `partition-specs`; `v1`: format v1's single
/// `partition-spec` (spec 0), where `partition-specs` is absent.
pub(super) fn spec_fields(specs: &[Value], v1: Option<&Value>) -> HashMap<i32, Vec<(i32, String)>> {
    let fields = |fs: &Value| -> Vec<(i32, String)> {
        fs.as_array()
            .into_iter()
            .flatten()
            .map(|f| {
                let source = f["source-id"].as_i64().and_then(|i| i32::try_from(i).ok());
                let transform = f["transform"].as_str().unwrap_or_default().to_string();
                (source.unwrap_or(-1), transform)
            })
            .collect()
    };
    let mut out: HashMap<i32, Vec<(i32, String)>> = specs
        .iter()
        .filter_map(|s| {
            let id = i32::try_from(s["spec-id"].as_i64()?).ok()?;
            Some((id, fields(&s["fields"])))
        })
        .collect();
    if out.is_empty() {
        if let Some(v1) = v1 {
            out.insert(0, fields(v1));
        }
    }
    out
}

/// Rules whole manifests out under a filter by the manifest list's partition summaries
/// (`contains_null`, `lower_bound`, `upper_bound` of each partition field, bounds in the
/// single-value binary form): only identity-transformed fields, whose values are the source
/// column's; any other transform keeps its manifest.
pub(super) struct Pruner {
    bound: Bound,
    /// By spec id: for each partition field, the source column (name, type) of an identity
    /// field of a top-level column of the snapshot's schema.
    specs: HashMap<i32, Vec<Option<(String, DataType)>>>,
}

impl Pruner {
    /// A pruner for `filter` (`None` where it does not bind to `schema`, the snapshot's
    /// columns: the plan names the error).
    pub(super) fn new(
        filter: &Filter,
        schema: &arrow_schema::Schema,
        by_id: &ById,
        specs: &HashMap<i32, Vec<(i32, String)>>,
    ) -> Option<Self> {
        let bound = filter.bind(schema).ok()?;
        let specs = specs
            .iter()
            .map(|(id, fields)| {
                let cols = fields
                    .iter()
                    .map(|(source, t)| (t == "identity").then(|| by_id.get(source).cloned())?)
                    .collect();
                (*id, cols)
            })
            .collect();
        Some(Pruner { bound, specs })
    }

    /// Whether the summaries of manifest `i` of `summaries` (the manifest list's `partitions`
    /// column) of spec `spec` say no row of it passes.
    pub(super) fn rules_out(&self, spec: i32, summaries: &ListArray, i: usize) -> bool {
        let Some(fields) = self.specs.get(&spec) else {
            return false;
        };
        if !summaries.is_valid(i) {
            return false;
        }
        let list = summaries.value(i);
        let Some(s) = list.as_struct_opt() else {
            return false;
        };
        if s.len() != fields.len() {
            return false;
        }
        let flag = |n: &str, j: usize| {
            let c = s.column_by_name(n)?.as_boolean_opt()?;
            c.is_valid(j).then(|| c.value(j))
        };
        let bound = |n: &str| s.column_by_name(n).and_then(|c| c.as_binary_opt::<i32>());
        let (lower, upper) = (bound("lower_bound"), bound("upper_bound"));
        let mut by_name: HashMap<&str, ColumnStats> = HashMap::new();
        for (j, col) in fields.iter().enumerate() {
            let Some((name, t)) = col else { continue };
            let value = |b: Option<&arrow_array::BinaryArray>| {
                let b = b.filter(|b| b.is_valid(j))?;
                single(t, b.value(j))
            };
            let (min, max) = (value(lower), value(upper));
            // No bounds: every value is null, or NaN (a float column whose summary does not
            // say it holds none).
            let float = matches!(t, DataType::Float32 | DataType::Float64);
            let all_null = flag("contains_null", j) == Some(true)
                && [lower, upper]
                    .iter()
                    .all(|b| b.is_some_and(|b| b.is_null(j)))
                && (!float || flag("contains_nan", j) == Some(false));
            let nulls = match flag("contains_null", j) {
                Some(false) => Some(0),
                Some(true) if all_null => Some(u64::MAX),
                _ => None,
            };
            by_name.insert(name, ColumnStats { min, max, nulls });
        }
        if by_name.is_empty() {
            return false;
        }
        // Rows unknown: the null counts say none (0) or all (`u64::MAX`).
        self.bound
            .possible(u64::MAX, &|f: &Field| {
                by_name.get(f.name().as_str()).cloned()
            })
            .none_pass()
    }
}

/// A bound in the single-value binary form as a one-value array of `t` (`None`: a type
/// whose bounds are not used, or bytes that do not fit it).
fn single(t: &DataType, b: &[u8]) -> Option<ArrayRef> {
    let text = match decode(t, b)? {
        Value::String(s) => s,
        v => v.to_string(),
    };
    let a: ArrayRef = Arc::new(arrow_array::StringArray::from(vec![text]));
    let c = arrow::compute::cast(&a, t).ok()?;
    c.is_valid(0).then_some(c)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::builder::{BinaryBuilder, BooleanBuilder, ListBuilder, StructBuilder};
    use arrow_array::{Int32Array, StringArray, StructArray};
    use arrow_schema::Fields;
    use serde_json::json;

    #[test]
    fn the_writers_partition_type_is_spliced_into_the_reader_schema() {
        let reader = json!({"type": "record", "name": "manifest_entry", "fields": [
            {"name": "data_file", "type": {"type": "record", "name": "r2", "fields": []}}]});
        let part = json!({"name": "partition", "type": {"type": "record", "name": "r102",
            "fields": [{"name": "k", "type": ["null", "int"], "default": null}]}});
        let writer = json!({"type": "record", "name": "manifest_entry", "fields": [
            {"name": "status", "type": "int"},
            {"name": "data_file", "type": {"type": "record", "name": "r2", "fields": [part]}}]});
        let mut r = reader.clone();
        assert!(spliced(&mut r, &writer, &["data_file", "partition"]));
        assert_eq!(r["fields"][0]["type"]["fields"][0], part);
        // An unpartitioned spec's record has no fields: left out.
        let empty = json!({"type": "record", "name": "manifest_entry", "fields": [
            {"name": "data_file", "type": {"type": "record", "name": "r2", "fields": [
                {"name": "partition", "type": {"type": "record", "name": "r102", "fields": []}}]}}]});
        let mut r = reader.clone();
        assert!(!spliced(&mut r, &empty, &["data_file", "partition"]));
        assert_eq!(r, reader);
    }

    /// An Avro object container file of no rows written under the schema `schema`.
    fn empty_avro(dir: &std::path::Path, schema: &Value) -> String {
        let zigzag = |n: usize| {
            let mut v = (n as u64) << 1;
            let mut out = Vec::new();
            while v >= 0x80 {
                out.push((v as u8) | 0x80);
                v >>= 7;
            }
            out.push(v as u8);
            out
        };
        let text = schema.to_string();
        let mut b = b"Obj\x01".to_vec();
        b.extend(zigzag(1));
        b.extend(zigzag("avro.schema".len()));
        b.extend(b"avro.schema");
        b.extend(zigzag(text.len()));
        b.extend(text.as_bytes());
        b.push(0);
        b.extend([7u8; 16]);
        let path = dir.join("m.avro");
        std::fs::write(&path, b).unwrap();
        path.to_string_lossy().into_owned()
    }

    #[test]
    fn every_partition_type_iceberg_writes_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let storage: Arc<dyn Storage> = Arc::new(hydrofeed_storage::local::LocalStorage);
        let reader = r#"{"type":"record","name":"manifest_entry","fields":[
            {"name":"data_file","type":{"type":"record","name":"r2","fields":[
              {"name":"file_path","type":"string"}]}}]}"#;
        // The Avro forms of Iceberg's types (the spec's "Avro" appendix), as a transform's
        // result: decimals on fixed, uuid, timestamps and times, fixed, optional dates.
        for t in [
            json!({"type": "fixed", "name": "f1", "size": 16, "logicalType": "decimal",
                   "precision": 38, "scale": 2}),
            json!({"type": "fixed", "name": "f2", "size": 16, "logicalType": "uuid"}),
            json!({"type": "long", "logicalType": "timestamp-nanos"}),
            json!({"type": "long", "logicalType": "timestamp-micros", "adjust-to-utc": true}),
            json!({"type": "long", "logicalType": "local-timestamp-micros"}),
            json!({"type": "long", "logicalType": "time-micros"}),
            json!({"type": "fixed", "name": "f3", "size": 3}),
            json!(["null", {"type": "int", "logicalType": "date"}]),
            json!(["null", "bytes"]),
            json!(["null", "boolean"]),
        ] {
            let writer = json!({"type": "record", "name": "manifest_entry", "fields": [
                {"name": "data_file", "type": {"type": "record", "name": "r2", "fields": [
                    {"name": "file_path", "type": "string"},
                    {"name": "partition", "type": {"type": "record", "name": "r102",
                        "fields": [{"name": "p", "type": t}]}}]}}]});
            let path = empty_avro(dir.path(), &writer);
            let at: &[&str] = &["data_file", "partition"];
            let b = avro_batches(&storage, &path, reader, Some(at));
            assert!(b.is_ok_and(|b| b.is_empty()), "{t}");
        }
    }

    #[test]
    fn equal_tuples_nulls_included_are_one_partition_per_spec() {
        let mut t = Tuples::default();
        let fields = Fields::from(vec![
            Field::new("pad", DataType::Utf8, true),
            Field::new("id_bucket", DataType::Int32, true),
        ]);
        let s: ArrayRef = Arc::new(StructArray::new(
            fields,
            vec![
                Arc::new(StringArray::from(vec![None, Some("a"), None])),
                Arc::new(Int32Array::from(vec![Some(1), Some(1), Some(1)])),
            ],
            None,
        ));
        let k = t.keys("m", 0, Some(&s)).unwrap().unwrap();
        assert_eq!(k[0], k[2]);
        assert_ne!(k[0], k[1]);
        let other = t.keys("m", 1, Some(&s)).unwrap().unwrap();
        assert_ne!(k[0], other[0], "another spec");
        assert!(t.keys("m", 2, None).unwrap().is_none());
    }

    #[test]
    fn identity_summaries_rule_manifests_out() {
        let by_id: ById = [
            (1, ("id".to_string(), DataType::Int64)),
            (2, ("k".to_string(), DataType::Int32)),
        ]
        .into();
        let specs: HashMap<i32, Vec<(i32, String)>> = [
            (0, vec![(2, "identity".to_string())]),
            (1, vec![(1, "bucket[4]".to_string())]),
        ]
        .into();
        let schema = arrow_schema::Schema::new(vec![
            Field::new("id", DataType::Int64, true),
            Field::new("k", DataType::Int32, true),
        ]);
        let p = |f: &str| Pruner::new(&Filter::parse(f).unwrap(), &schema, &by_id, &specs).unwrap();
        // Manifests: k in [3, 5] without nulls; k in [3, 5] with nulls; of spec 1 (bucket);
        // k all null.
        let fields = Fields::from(vec![
            Field::new("contains_null", DataType::Boolean, false),
            Field::new("lower_bound", DataType::Binary, true),
            Field::new("upper_bound", DataType::Binary, true),
        ]);
        let mut b = ListBuilder::new(StructBuilder::new(
            fields,
            vec![
                Box::new(BooleanBuilder::new()),
                Box::new(BinaryBuilder::new()),
                Box::new(BinaryBuilder::new()),
            ],
        ));
        for (null, bounds) in [(false, true), (true, true), (false, true), (true, false)] {
            let s = b.values();
            s.field_builder::<BooleanBuilder>(0)
                .unwrap()
                .append_value(null);
            for (j, v) in [(1, 3i32), (2, 5)] {
                let f = s.field_builder::<BinaryBuilder>(j).unwrap();
                match bounds {
                    true => f.append_value(v.to_le_bytes()),
                    false => f.append_null(),
                }
            }
            s.append(true);
            b.append(true);
        }
        let l = b.finish();
        let out = |f: &str| {
            let p = p(f);
            [(0, 0), (0, 1), (1, 2), (0, 3)]
                .iter()
                .map(|&(spec, i)| p.rules_out(spec, &l, i))
                .collect::<Vec<_>>()
        };
        assert_eq!(out("k = 7"), [true, true, false, true]);
        assert_eq!(out("k >= 4"), [false, false, false, true]);
        assert_eq!(out("k IS NULL"), [true, false, false, false]);
        assert_eq!(out("k IS NOT NULL"), [false, false, false, true]);
        assert_eq!(out("k < 3 OR id = 1"), [false, false, false, false]);
        assert_eq!(out("k < 3 AND id = 1"), [true, true, false, true]);
    }
}
