//! A table column's default for the data files written before it was added (Iceberg's
//! `initial-default`), from the spec's JSON single-value form to a one-row array of the
//! column's Arrow type.
//!
//! The forms (Iceberg spec, Appendix D): booleans and numbers as JSON booleans and numbers;
//! decimals, dates (`2017-11-16`), times (`22:31:08.123456`), timestamps
//! (`2017-11-16T22:31:08.123456`, with `+00:00` for `timestamptz`), strings and UUIDs
//! (`f79c3e09-677c-4d09-a4ec-6bd6bf3e8f73`) as JSON strings; `fixed` and `binary` as
//! hexadecimal strings. Defaults of nested types are not filled (refused where the table is
//! read).

use std::sync::Arc;

use arrow_array::{ArrayRef, BinaryArray, BooleanArray, Float64Array, Int64Array, StringArray};
use arrow_schema::DataType;

/// `v` (the JSON form) as a one-row array of `t`; `Err`: why it is not a value of `t`.
pub(crate) fn default_array(t: &DataType, v: &serde_json::Value) -> Result<ArrayRef, String> {
    use serde_json::Value as J;
    let raw: ArrayRef = match (t, v) {
        (DataType::Struct(_) | DataType::List(_) | DataType::Map(..), _) => {
            return Err("a default of a nested type is not filled in yet".into())
        }
        (_, J::Bool(b)) => Arc::new(BooleanArray::from(vec![*b])),
        (_, J::Number(n)) => match n.as_i64() {
            Some(i) => Arc::new(Int64Array::from(vec![i])),
            None => Arc::new(Float64Array::from(vec![n
                .as_f64()
                .ok_or_else(|| format!("{n} is not a number this reader holds"))?])),
        },
        (DataType::Binary | DataType::LargeBinary | DataType::FixedSizeBinary(_), J::String(s)) => {
            let hex: String = s.chars().filter(|c| *c != '-').collect();
            Arc::new(BinaryArray::from_vec(vec![&unhex(&hex)?[..]]))
        }
        (_, J::String(s)) => Arc::new(StringArray::from(vec![s.as_str()])),
        _ => return Err(format!("{v} is not a value of {t}")),
    };
    if raw.data_type() == t {
        return Ok(raw);
    }
    let opts = arrow::compute::CastOptions {
        safe: false,
        ..Default::default()
    };
    let a = arrow::compute::cast_with_options(&raw, t, &opts)
        .map_err(|e| format!("{v} is not a value of {t}: {e}"))?;
    if a.is_null(0) {
        return Err(format!("{v} is not a value of {t}"));
    }
    Ok(a)
}

/// The bytes of a hexadecimal string.
fn unhex(s: &str) -> Result<Vec<u8>, String> {
    if !s.len().is_multiple_of(2) {
        return Err(format!("{s:?} is not hexadecimal bytes (an odd length)"));
    }
    (0..s.len())
        .step_by(2)
        .map(|i| {
            u8::from_str_radix(&s[i..i + 2], 16)
                .map_err(|_| format!("{s:?} is not hexadecimal bytes"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::Array;
    use arrow_schema::TimeUnit;
    use serde_json::json;

    #[test]
    fn the_specs_json_forms_are_values_of_their_types() {
        let cases: Vec<(DataType, serde_json::Value, &str)> = vec![
            (DataType::Int32, json!(34), "34"),
            (DataType::Int64, json!(-7), "-7"),
            (DataType::Float64, json!(1.5), "1.5"),
            (DataType::Float32, json!(2), "2.0"),
            (DataType::Boolean, json!(true), "true"),
            (DataType::Utf8, json!("iceberg"), "iceberg"),
            (DataType::Date32, json!("2017-11-16"), "2017-11-16"),
            (
                DataType::Timestamp(TimeUnit::Microsecond, None),
                json!("2017-11-16T22:31:08.123456"),
                "2017-11-16T22:31:08.123456",
            ),
            (
                DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
                json!("2017-11-16T22:31:08.123456+00:00"),
                "2017-11-16T22:31:08.123456Z",
            ),
            (
                DataType::Time64(TimeUnit::Microsecond),
                json!("22:31:08.123456"),
                "22:31:08.123456",
            ),
            (DataType::Decimal128(9, 2), json!("14.20"), "14.20"),
            (DataType::Binary, json!("0000ff"), "0000ff"),
            (
                DataType::FixedSizeBinary(16),
                json!("f79c3e09-677c-4d09-a4ec-6bd6bf3e8f73"),
                "f79c3e09677c4d09a4ec6bd6bf3e8f73",
            ),
        ];
        for (t, v, shown) in cases {
            let a = default_array(&t, &v).unwrap_or_else(|e| panic!("{t} {v}: {e}"));
            assert_eq!(a.data_type(), &t);
            assert_eq!(a.len(), 1);
            let text = arrow::util::display::array_value_to_string(&a, 0).unwrap();
            assert_eq!(text, shown, "{t} {v}");
        }
    }

    #[test]
    fn values_of_other_types_are_refused() {
        for (t, v) in [
            (DataType::Int32, json!("x")),
            (DataType::Date32, json!("yesterday")),
            (DataType::Int32, json!(1u64 << 40)),
            (DataType::Binary, json!("abc")),
            (DataType::Int64, json!([1])),
            (
                DataType::Struct(vec![arrow_schema::Field::new("a", DataType::Int32, true)].into()),
                json!({}),
            ),
        ] {
            assert!(default_array(&t, &v).is_err(), "{t} {v}");
        }
    }
}
