//! Parquet files as Spark wrote them: INT96 timestamps in microseconds, and the values Spark
//! wrote in its `LEGACY` rebase mode (hybrid Julian/Gregorian calendar) read back as Spark
//! reads them. Avro files `spark-avro` wrote carry the same keys in their header and are
//! rebased the same way ([`avro_legacy`]).
//!
//! - INT96 (Spark's `outputTimestampType=INT96`, Impala, Hive) holds a Julian day and the
//!   nanoseconds of that day: years 1 to 9999 and beyond, which `timestamp[ns]` (the parquet
//!   crate's default, years 1677 to 2262) wraps around silently. Every INT96 column is read as
//!   `timestamp[us]`, the unit of Spark's `TimestampType`.
//! - Spark 3+ writes `org.apache.spark.legacyDateTime` (dates, `TIMESTAMP_MICROS`/`_MILLIS`)
//!   and `org.apache.spark.legacyINT96` into the footer when it wrote in the hybrid calendar
//!   (`datetimeRebaseModeInWrite` / `int96RebaseModeInWrite` = `LEGACY`), and the session zone
//!   it rebased timestamps in (`org.apache.spark.timeZone`); Spark 2 (version below 3.0, INT96
//!   below 3.1) always wrote hybrid values. Such values are rebased here as Spark's reader
//!   does (`calendar.rs`); without a zone in the footer, in UTC (Spark would take its JVM's).

use std::collections::HashSet;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Date32Type;
use arrow_array::{Array, ArrayRef, ListArray, MapArray, RecordBatch, StructArray};
use arrow_schema::{ArrowError, DataType, Field, FieldRef, Schema, SchemaRef, TimeUnit};
use chrono_tz::Tz;
use parquet::basic::Type as PhysicalType;
use parquet::file::metadata::ParquetMetaData;

use super::calendar::{julian_to_gregorian_days, rebase_timestamps};

/// What Spark's footer says of the calendar of its values, when any needs rebasing.
#[derive(Debug, Clone)]
pub(crate) struct SparkLegacy {
    /// Dates and INT64 timestamps are hybrid.
    datetime: bool,
    /// INT96 timestamps are hybrid.
    int96: bool,
    /// The zone timestamps were rebased in.
    zone: Tz,
    /// Arrow paths (field names from the root) of the INT96 columns.
    int96_paths: HashSet<Vec<String>>,
}

fn kv<'a>(meta: &'a ParquetMetaData, key: &str) -> Option<Option<&'a str>> {
    meta.file_metadata()
        .key_value_metadata()?
        .iter()
        .find(|k| k.key == key)
        .map(|k| k.value.as_deref())
}

/// Spark's calendar of the file (`None`: nothing to rebase). `int96_paths` from
/// [`int96_micros`].
pub(crate) fn legacy(
    meta: &ParquetMetaData,
    int96_paths: HashSet<Vec<String>>,
) -> Option<SparkLegacy> {
    legacy_of(|key| kv(meta, key), int96_paths)
}

/// Spark's calendar of an Avro file (`spark-avro` writes the same keys into the header's
/// metadata as Spark's Parquet writer into the footer: `org.apache.spark.legacyDateTime` under
/// `datetimeRebaseModeInWrite=LEGACY`, with `org.apache.spark.timeZone`).
pub(crate) fn avro_legacy(head: &arrow_avro::reader::HeaderInfo) -> Option<SparkLegacy> {
    legacy_of(
        |key| {
            head.get(key)
                .map(|v| std::str::from_utf8(v).ok().filter(|s| !s.is_empty()))
        },
        HashSet::new(),
    )
}

/// Spark's calendar from a file's key/value metadata (`kv`: `None` when the key is absent,
/// `Some(None)` when it has no value).
fn legacy_of<'a>(
    kv: impl Fn(&str) -> Option<Option<&'a str>>,
    int96_paths: HashSet<Vec<String>>,
) -> Option<SparkLegacy> {
    let version = kv("org.apache.spark.version")??;
    let mut parts = version.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    let v = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    let datetime = kv("org.apache.spark.legacyDateTime").is_some() || v < (3, 0);
    let int96 = kv("org.apache.spark.legacyINT96").is_some() || v < (3, 1);
    if !datetime && !int96 {
        return None;
    }
    let zone = kv("org.apache.spark.timeZone")
        .flatten()
        .and_then(|z| z.parse::<Tz>().ok())
        .unwrap_or(chrono_tz::UTC);
    Some(SparkLegacy {
        datetime,
        int96,
        zone,
        int96_paths,
    })
}

/// `schema` with every INT96 column as `timestamp[us]`, and the Arrow paths of those columns;
/// `None` when the file has none.
pub(crate) fn int96_micros(
    meta: &ParquetMetaData,
    schema: &SchemaRef,
) -> Option<(SchemaRef, HashSet<Vec<String>>)> {
    let descr = meta.file_metadata().schema_descr();
    let mut fields: Vec<FieldRef> = schema.fields().iter().cloned().collect();
    let mut paths = HashSet::new();
    for c in descr.columns() {
        if c.physical_type() != PhysicalType::INT96 {
            continue;
        }
        let parts = c.path().parts();
        let Some(i) = fields.iter().position(|f| f.name() == &parts[0]) else {
            continue;
        };
        let mut arrow_path = vec![parts[0].clone()];
        let t = micros_at(fields[i].data_type(), &parts[1..], &mut arrow_path);
        fields[i] = Arc::new(fields[i].as_ref().clone().with_data_type(t));
        paths.insert(arrow_path);
    }
    if paths.is_empty() {
        return None;
    }
    let schema = Schema::new_with_metadata(fields, schema.metadata().clone());
    Some((Arc::new(schema), paths))
}

/// `t` with the timestamp at the Parquet path `rest` in microseconds; `arrow_path` gets the
/// Arrow field names walked (Parquet's list and map groups that Arrow has no field for are
/// passed over).
fn micros_at(t: &DataType, rest: &[String], arrow_path: &mut Vec<String>) -> DataType {
    let field = |f: &FieldRef, rest: &[String], p: &mut Vec<String>| -> FieldRef {
        p.push(f.name().clone());
        Arc::new(
            f.as_ref()
                .clone()
                .with_data_type(micros_at(f.data_type(), rest, p)),
        )
    };
    let Some(head) = rest.first() else {
        return match t {
            DataType::Timestamp(TimeUnit::Nanosecond, tz) => {
                DataType::Timestamp(TimeUnit::Microsecond, tz.clone())
            }
            other => other.clone(),
        };
    };
    match t {
        DataType::Struct(fs) => DataType::Struct(
            fs.iter()
                .map(|f| {
                    if f.name() == head {
                        field(f, &rest[1..], arrow_path)
                    } else {
                        f.clone()
                    }
                })
                .collect(),
        ),
        DataType::List(f) if f.name() == head => DataType::List(field(f, &rest[1..], arrow_path)),
        DataType::Map(f, s) if f.name() == head => {
            DataType::Map(field(f, &rest[1..], arrow_path), *s)
        }
        // A group Arrow has no field for (the `list` of a three-level list).
        DataType::List(_) | DataType::Map(_, _) => micros_at(t, &rest[1..], arrow_path),
        other => other.clone(),
    }
}

/// The batch with Spark's hybrid-calendar values rebased.
pub(crate) fn rebase_batch(b: RecordBatch, how: &SparkLegacy) -> Result<RecordBatch, ArrowError> {
    let schema = b.schema();
    let mut path = Vec::new();
    let cols = b
        .columns()
        .iter()
        .zip(schema.fields())
        .map(|(c, f)| {
            path.push(f.name().clone());
            let r = rebase(c, &mut path, how);
            path.pop();
            r
        })
        .collect::<Result<Vec<_>, _>>()?;
    RecordBatch::try_new(schema, cols)
}

fn rebase(a: &ArrayRef, path: &mut Vec<String>, how: &SparkLegacy) -> Result<ArrayRef, ArrowError> {
    let child = |c: &ArrayRef, f: &Field, path: &mut Vec<String>| {
        path.push(f.name().clone());
        let r = rebase(c, path, how);
        path.pop();
        r
    };
    Ok(match a.data_type() {
        DataType::Date32 if how.datetime => Arc::new(
            a.as_primitive::<Date32Type>()
                .unary::<_, Date32Type>(julian_to_gregorian_days),
        ),
        DataType::Timestamp(unit, tz) => {
            // Spark rebases its `TimestampType` (an instant), never `TIMESTAMP_NTZ` (a
            // wall clock without a zone, which it writes in the proleptic calendar).
            let int96 = how.int96_paths.contains(path.as_slice());
            if (int96 && how.int96) || (!int96 && how.datetime && tz.is_some()) {
                rebase_timestamps(a, *unit, how.zone)
            } else {
                a.clone()
            }
        }
        DataType::Struct(fs) => {
            let s = a.as_struct();
            let cols = s
                .columns()
                .iter()
                .zip(fs.iter())
                .map(|(c, f)| child(c, f, path))
                .collect::<Result<Vec<_>, _>>()?;
            Arc::new(StructArray::try_new(fs.clone(), cols, s.nulls().cloned())?)
        }
        DataType::List(f) => {
            let l = a.as_list::<i32>();
            let values = child(l.values(), f, path)?;
            Arc::new(ListArray::try_new(
                f.clone(),
                l.offsets().clone(),
                values,
                l.nulls().cloned(),
            )?)
        }
        DataType::Map(f, sorted) => {
            let m = a.as_map();
            let entries = Arc::new(m.entries().clone()) as ArrayRef;
            let entries = child(&entries, f, path)?;
            Arc::new(MapArray::try_new(
                f.clone(),
                m.offsets().clone(),
                entries.as_struct().clone(),
                m.nulls().cloned(),
                *sorted,
            )?)
        }
        _ => a.clone(),
    })
}
