//! A data file's column statistics from its manifest entry (`null_value_counts`,
//! `lower_bounds`, `upper_bounds`, keyed by field id; bounds in Iceberg's single-value binary
//! form), given as the table statistics a filter rules files out by, keyed by the snapshot's
//! column names ([`crate::filtered`]): a file they rule out is never opened.
//!
//! Only top-level columns of types whose bounds are exact or safely loose are given:
//! booleans, integers, floats (NaN is left out of Iceberg's bounds, as a filter expects),
//! dates, decimals and strings (a truncated lower bound is a prefix, a truncated upper bound
//! is rounded up: both still bound). A file written before a widening holds its bounds in the
//! older type (`int` for a `long`, `float` for a `double`): read by their length. Timestamps,
//! binary and nested columns are left out.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type};
use arrow_array::{Array, ArrayRef, ListArray, StructArray};
use arrow_schema::DataType;
use serde_json::{json, Map, Value};

use crate::mapping::{Kind, TableColumns};

/// Top-level columns of primitive types by field id: (the table's name, its type).
pub(super) type ById = HashMap<i32, (String, DataType)>;

/// The snapshot's top-level primitive columns by field id.
pub(super) fn top_level(columns: &TableColumns) -> ById {
    columns
        .columns
        .iter()
        .filter_map(|c| match (&c.key, &c.kind) {
            (crate::mapping::Key::Id(id), Kind::Primitive(t)) => {
                Some((*id, (c.name.clone(), t.clone())))
            }
            _ => None,
        })
        .collect()
}

/// The statistics columns of a batch of manifest entries (`data_file.*`).
pub(super) struct Bounds {
    nulls: Option<ListArray>,
    lower: Option<ListArray>,
    upper: Option<ListArray>,
}

impl Bounds {
    /// The statistics columns of `data_file` (a struct column of manifest entries).
    pub(super) fn of(data_file: &StructArray) -> Self {
        let list = |n: &str| {
            data_file
                .column_by_name(n)
                .map(|c| c.as_list::<i32>().clone())
        };
        Bounds {
            nulls: list("null_value_counts"),
            lower: list("lower_bounds"),
            upper: list("upper_bounds"),
        }
    }

    /// Entry `i`'s statistics in the form of a Delta `add.stats` (`numRecords`, `minValues`,
    /// `maxValues`, `nullCount`, by column name); `None` where the entry has none.
    pub(super) fn stats(&self, i: usize, records: i64, by_id: &ById) -> Option<Value> {
        let mut min = Map::new();
        let mut max = Map::new();
        let mut nulls = Map::new();
        for (id, v) in pairs(self.nulls.as_ref(), i) {
            if let (Some((name, _)), Some(n)) = (by_id.get(&id), v.as_primitive_opt::<Int64Type>())
            {
                if n.is_valid(0) {
                    nulls.insert(name.clone(), json!(n.value(0)));
                }
            }
        }
        for (list, out) in [
            (self.lower.as_ref(), &mut min),
            (self.upper.as_ref(), &mut max),
        ] {
            for (id, v) in pairs(list, i) {
                let Some((name, t)) = by_id.get(&id) else {
                    continue;
                };
                let bytes = v.as_binary_opt::<i32>().filter(|b| b.is_valid(0));
                if let Some(value) = bytes.and_then(|b| decode(t, b.value(0))) {
                    out.insert(name.clone(), value);
                }
            }
        }
        if min.is_empty() && max.is_empty() && nulls.is_empty() {
            return None;
        }
        Some(json!({
            "numRecords": records,
            "minValues": min,
            "maxValues": max,
            "nullCount": nulls,
        }))
    }
}

/// The (key, value) pairs of entry `i` of a map stored as a list of `{key, value}` records
/// (each value a one-element array).
fn pairs(list: Option<&ListArray>, i: usize) -> Vec<(i32, ArrayRef)> {
    let Some(list) = list.filter(|l| l.is_valid(i)) else {
        return Vec::new();
    };
    let entries = list.value(i);
    let entries = entries.as_struct();
    let (Some(keys), Some(values)) = (
        entries
            .column_by_name("key")
            .and_then(|k| k.as_primitive_opt::<Int32Type>()),
        entries.column_by_name("value"),
    ) else {
        return Vec::new();
    };
    (0..entries.len())
        .filter(|&j| keys.is_valid(j))
        .map(|j| (keys.value(j), values.slice(j, 1)))
        .collect()
}

/// One bound in Iceberg's single-value binary form, as the text or number a filter's
/// statistics take (`None`: a type left out, or bytes that do not fit it).
pub(super) fn decode(t: &DataType, b: &[u8]) -> Option<Value> {
    let le4 = || b.try_into().ok().map(i32::from_le_bytes);
    let le8 = || b.try_into().ok().map(i64::from_le_bytes);
    let finite = |f: f64| f.is_finite().then(|| json!(f));
    match t {
        DataType::Boolean => (b.len() == 1).then(|| json!(b[0] != 0)),
        DataType::Int32 => le4().map(|v| json!(v)),
        DataType::Int64 => match b.len() {
            4 => le4().map(|v| json!(v)),
            _ => le8().map(|v| json!(v)),
        },
        DataType::Float32 => le4().and_then(|v| finite(f32::from_bits(v as u32) as f64)),
        DataType::Float64 => match b.len() {
            4 => le4().and_then(|v| finite(f32::from_bits(v as u32) as f64)),
            _ => le8().and_then(|v| finite(f64::from_bits(v as u64))),
        },
        DataType::Date32 => {
            let days = arrow_array::Date32Array::from(vec![le4()?]);
            text(Arc::new(days))
        }
        DataType::Decimal128(p, s) => {
            if b.is_empty() || b.len() > 16 {
                return None;
            }
            // Big-endian two's complement of the unscaled value, in as few bytes as it needs.
            let fill = if b[0] & 0x80 != 0 { 0xff } else { 0 };
            let mut be = [fill; 16];
            be[16 - b.len()..].copy_from_slice(b);
            let d = arrow_array::Decimal128Array::from(vec![i128::from_be_bytes(be)])
                .with_precision_and_scale(*p, *s)
                .ok()?;
            text(Arc::new(d))
        }
        DataType::Utf8 | DataType::LargeUtf8 => std::str::from_utf8(b).ok().map(|s| json!(s)),
        _ => None,
    }
}

/// A one-value array as text (what a filter's statistics cast back to the column's type).
fn text(a: ArrayRef) -> Option<Value> {
    let s = arrow::compute::cast(&a, &DataType::Utf8).ok()?;
    let s = s.as_string::<i32>();
    s.is_valid(0).then(|| json!(s.value(0)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_decode_as_the_spec_writes_them() {
        let t = |t: DataType, b: &[u8]| decode(&t, b);
        assert_eq!(t(DataType::Int32, &7i32.to_le_bytes()), Some(json!(7)));
        assert_eq!(t(DataType::Int64, &(-3i64).to_le_bytes()), Some(json!(-3)));
        // written as an int before the column was widened to long
        assert_eq!(t(DataType::Int64, &(-3i32).to_le_bytes()), Some(json!(-3)));
        assert_eq!(
            t(DataType::Float64, &1.5f64.to_le_bytes()),
            Some(json!(1.5))
        );
        assert_eq!(
            t(DataType::Float64, &1.5f32.to_le_bytes()),
            Some(json!(1.5))
        );
        assert_eq!(t(DataType::Float64, &f64::NAN.to_le_bytes()), None);
        assert_eq!(
            t(DataType::Date32, &20454i32.to_le_bytes()),
            Some(json!("2026-01-01"))
        );
        // unscaled 125 and -125 at scale 2, in one byte each
        assert_eq!(t(DataType::Decimal128(10, 2), &[0x7d]), Some(json!("1.25")));
        assert_eq!(
            t(DataType::Decimal128(10, 2), &[0x83]),
            Some(json!("-1.25"))
        );
        assert_eq!(t(DataType::Utf8, b"k2-0"), Some(json!("k2-0")));
        assert_eq!(t(DataType::Boolean, &[1]), Some(json!(true)));
        // bytes that do not fit the type, and types left out
        assert_eq!(t(DataType::Int32, &[1, 2]), None);
        assert_eq!(t(DataType::Binary, b"x"), None);
        assert_eq!(
            t(
                DataType::Timestamp(arrow_schema::TimeUnit::Microsecond, None),
                &[0; 8]
            ),
            None
        );
    }
}
