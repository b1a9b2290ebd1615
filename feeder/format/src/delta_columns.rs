//! A Delta table's columns as its files hold them: column mapping (`name` and `id` modes)
//! and type widening, resolved to [`crate::mapping::TableColumns`]; statistics keyed by
//! physical names given the table's names.

use super::{bad, MetaData};
use crate::Result;

/// A table's columns and the physical names its log keys statistics and partition values by
/// (their own names without column mapping).
pub(super) struct Mapped {
    pub(super) columns: crate::mapping::TableColumns,
    pub(super) names: Vec<Physical>,
}

/// A column's physical name (what the data files and the log's `stats` and `partitionValues`
/// call it) and its struct fields'.
pub(super) struct Physical {
    pub(super) logical: String,
    pub(super) physical: String,
    pub(super) fields: Vec<Physical>,
}

/// How a table's columns are found in its files.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Keys {
    /// By physical name (column mapping `name`).
    Physical,
    /// By Parquet field id (column mapping `id`).
    Id,
    /// By the table's own name: no column mapping. Every file is still read through the
    /// table's schema, so a file's other encoding of a type, a type widened since it was
    /// written (`typeWidening`) or a column added since read as the table's.
    Logical,
}

/// The table's columns, its partition columns left out: under column mapping found by
/// physical name (`name`) or Parquet field id (`id`), else by their own names.
pub(super) fn column_mapping(log: &str, meta: &MetaData) -> Result<Mapped> {
    use crate::mapping::{Column, Key, Kind};
    let mode = meta
        .configuration
        .get("delta.columnMapping.mode")
        .cloned()
        .flatten()
        .unwrap_or_default();
    let keys = match mode.as_str() {
        "name" => Keys::Physical,
        "id" => Keys::Id,
        _ => Keys::Logical,
    };
    let schema: serde_json::Value = serde_json::from_str(&meta.schema_string)
        .map_err(|e| bad(log, format!("metaData.schemaString: {e}")))?;
    fn field(log: &str, f: &serde_json::Value, keys: Keys) -> Result<(Column, Physical)> {
        let name = f["name"].as_str().ok_or_else(|| {
            bad(
                log,
                format!("metaData.schemaString: a field without a name: {f}"),
            )
        })?;
        let md = &f["metadata"];
        let physical = match keys {
            Keys::Logical => Some(name),
            _ => md["delta.columnMapping.physicalName"].as_str(),
        };
        let physical = physical.ok_or_else(|| {
            bad(
                log,
                format!(
                    "column mapping, but column {name:?} has no delta.columnMapping.physicalName"
                ),
            )
        })?;
        let key = if keys == Keys::Id {
            let id = md["delta.columnMapping.id"]
                .as_i64()
                .and_then(|i| i32::try_from(i).ok())
                .ok_or_else(|| {
                    bad(log, format!("column mapping by id, but column {name:?} has no delta.columnMapping.id"))
                })?;
            Key::Id(id)
        } else {
            Key::Name(physical.to_string())
        };
        let (kind, fields) = kind(log, name, &f["type"], keys)?;
        let nullable = f["nullable"].as_bool().unwrap_or(true);
        Ok((
            Column::new(name, key, nullable, kind),
            Physical {
                logical: name.to_string(),
                physical: physical.to_string(),
                fields,
            },
        ))
    }
    fn kind(
        log: &str,
        name: &str,
        t: &serde_json::Value,
        keys: Keys,
    ) -> Result<(Kind, Vec<Physical>)> {
        use arrow_schema::{DataType as T, TimeUnit};
        let element = |k: Kind, nullable: bool| {
            Box::new(Column::new(
                "element",
                Key::Name(String::new()),
                nullable,
                k,
            ))
        };
        if let Some(p) = t.as_str() {
            let prim = match p {
                "string" => T::Utf8,
                "long" => T::Int64,
                "integer" => T::Int32,
                "short" => T::Int16,
                "byte" => T::Int8,
                "float" => T::Float32,
                "double" => T::Float64,
                "boolean" => T::Boolean,
                "binary" => T::Binary,
                "date" => T::Date32,
                "timestamp" => T::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
                "timestamp_ntz" => T::Timestamp(TimeUnit::Microsecond, None),
                d if d.starts_with("decimal(") => {
                    let ps = d.trim_start_matches("decimal(").trim_end_matches(')');
                    let (p, s) = ps.split_once(',').unwrap_or((ps, "0"));
                    match (p.trim().parse::<u8>(), s.trim().parse::<i8>()) {
                        (Ok(p), Ok(s)) => T::Decimal128(p, s),
                        _ => return Err(bad(log, format!("column {name:?}: type {d:?}"))),
                    }
                }
                other => {
                    return Err(bad(
                        log,
                        format!("column {name:?} is of Delta type {other:?}, which this reader does not read"),
                    ))
                }
            };
            return Ok((Kind::Primitive(prim), Vec::new()));
        }
        match t["type"].as_str() {
            Some("struct") => {
                let mut cols = Vec::new();
                let mut names = Vec::new();
                for f in t["fields"].as_array().into_iter().flatten() {
                    let (c, p) = field(log, f, keys)?;
                    cols.push(c);
                    names.push(p);
                }
                Ok((Kind::Struct(cols), names))
            }
            Some("array") => {
                let (e, _) = kind(log, name, &t["elementType"], keys)?;
                let nullable = t["containsNull"].as_bool().unwrap_or(true);
                Ok((Kind::List(element(e, nullable)), Vec::new()))
            }
            Some("map") => {
                let (k, _) = kind(log, name, &t["keyType"], keys)?;
                let (v, _) = kind(log, name, &t["valueType"], keys)?;
                let nullable = t["valueContainsNull"].as_bool().unwrap_or(true);
                Ok((
                    Kind::Map(element(k, false), element(v, nullable)),
                    Vec::new(),
                ))
            }
            _ => Err(bad(
                log,
                format!("column {name:?}: a Delta type this reader does not know: {t}"),
            )),
        }
    }
    let mut columns = Vec::new();
    let mut names = Vec::new();
    for f in schema["fields"].as_array().into_iter().flatten() {
        let (c, p) = field(log, f, keys)?;
        if !meta.partition_columns.contains(&c.name) {
            columns.push(c);
        }
        names.push(p);
    }
    Ok(Mapped {
        columns: crate::mapping::TableColumns {
            columns,
            names_without_ids: false,
            name_mapping: None,
        },
        names,
    })
}

/// A file's statistics (one of `minValues`, `maxValues`, `nullCount`), keyed by physical
/// names, keyed by the table's names instead (nested structs too); keys of no column dropped.
pub(super) fn rename_stats(v: &mut serde_json::Value, names: &[Physical]) {
    let Some(o) = v.as_object_mut() else { return };
    let mut out = serde_json::Map::new();
    for n in names {
        if let Some(mut x) = o.remove(&n.physical) {
            if !n.fields.is_empty() {
                rename_stats(&mut x, &n.fields);
            }
            out.insert(n.logical.clone(), x);
        }
    }
    *o = out;
}
