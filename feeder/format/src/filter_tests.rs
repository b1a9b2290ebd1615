use std::sync::Arc;

use arrow_array::types::Int32Type;
use arrow_array::{
    ArrayRef, BooleanArray, Date32Array, Decimal128Array, DictionaryArray, Float32Array,
    Int64Array, Int8Array, RecordBatch, StringArray, TimestampMicrosecondArray,
};
use arrow_schema::{DataType, Field, Schema};

use arrow_array::Array;

use super::{ColumnStats, Filter};

fn batch() -> RecordBatch {
    let cols: Vec<(&str, ArrayRef)> = vec![
        (
            "id",
            Arc::new(Int64Array::from(vec![
                Some(1),
                Some(2),
                None,
                Some(4),
                Some(5),
            ])),
        ),
        (
            "name",
            Arc::new(StringArray::from(vec![
                Some("a"),
                Some("b"),
                Some("c"),
                None,
                Some("e"),
            ])),
        ),
        (
            "small",
            Arc::new(Int8Array::from(vec![1, -1, 100, 127, -128])),
        ),
        (
            "f",
            Arc::new(Float32Array::from(vec![0.1, 0.5, f32::NAN, -1.0, 2.0])),
        ),
        (
            "flag",
            Arc::new(BooleanArray::from(vec![
                Some(true),
                Some(false),
                None,
                Some(true),
                Some(false),
            ])),
        ),
        (
            "day",
            Arc::new(Date32Array::from(vec![0, 10, 20, 30, 18262])),
        ),
        (
            "ts",
            Arc::new(
                TimestampMicrosecondArray::from(vec![
                    0, 1_000_000, 2_000_000, 3_000_000, 4_000_000,
                ])
                .with_timezone("UTC"),
            ),
        ),
        (
            "price",
            Arc::new(
                Decimal128Array::from(vec![100, 250, 999, 1000, -5])
                    .with_precision_and_scale(9, 2)
                    .unwrap(),
            ),
        ),
        (
            "cat",
            Arc::new(
                vec!["x", "y", "x", "z", "y"]
                    .into_iter()
                    .collect::<DictionaryArray<Int32Type>>(),
            ),
        ),
    ];
    RecordBatch::try_from_iter(cols).unwrap()
}

/// The ids of the rows that pass (id null shown as -1).
fn rows(text: &str) -> Vec<i64> {
    let b = batch();
    let f = Filter::parse(text).unwrap().bind(&b.schema()).unwrap();
    let m = f.eval(&b).unwrap();
    let ids = b.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
    (0..b.num_rows())
        .filter(|&i| m.value(i))
        .map(|i| if ids.is_valid(i) { ids.value(i) } else { -1 })
        .collect()
}

fn err(text: &str) -> String {
    let b = batch();
    match Filter::parse(text).and_then(|f| f.bind(&b.schema())) {
        Ok(_) => panic!("{text:?} was accepted"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn comparisons_take_the_columns_types() {
    assert_eq!(rows("id > 2"), vec![4, 5]);
    assert_eq!(rows("2 < id"), vec![4, 5]);
    assert_eq!(rows("id <> 2"), vec![1, 4, 5]);
    assert_eq!(rows("name = 'b'"), vec![2]);
    assert_eq!(rows("NAME = 'b'"), vec![2]);
    assert_eq!(rows("small < 1000"), vec![1, 2, -1, 4, 5]);
    assert_eq!(rows("small > 1.5"), vec![-1, 4]);
    assert_eq!(rows("small >= -128 AND small <= -1"), vec![2, 5]);
    assert_eq!(
        rows("f = 0.1"),
        Vec::<i64>::new(),
        "float32 0.1 is not the double 0.1"
    );
    assert_eq!(
        rows("f >= 0.5"),
        vec![2, -1, 5],
        "NaN orders above every number"
    );
    assert_eq!(rows("flag"), vec![1, 4]);
    assert_eq!(rows("NOT flag"), vec![2, 5]);
    assert_eq!(rows("day >= DATE '1970-01-21'"), vec![-1, 4, 5]);
    assert_eq!(rows("day = '2020-01-01'"), vec![5]);
    assert_eq!(rows("ts > TIMESTAMP '1970-01-01T00:00:02Z'"), vec![4, 5]);
    assert_eq!(
        rows("ts BETWEEN '1970-01-01 00:00:01' AND '1970-01-01 00:00:03'"),
        vec![2, -1, 4]
    );
    assert_eq!(rows("price > 2.5"), vec![-1, 4]);
    assert_eq!(rows("price >= 2.50"), vec![2, -1, 4]);
    assert_eq!(
        rows("price > 2.505"),
        vec![-1, 4],
        "more digits than the scale: as doubles"
    );
    assert_eq!(rows("cat = 'x'"), vec![1, -1]);
    assert_eq!(rows("cat IN ('y', 'z')"), vec![2, 4, 5]);
}

#[test]
fn nulls_follow_sql() {
    assert_eq!(rows("id IS NULL"), vec![-1]);
    assert_eq!(rows("id IS NOT NULL AND id < 3"), vec![1, 2]);
    assert_eq!(rows("id = NULL"), Vec::<i64>::new());
    assert_eq!(
        rows("NOT (id = 1)"),
        vec![2, 4, 5],
        "NOT unknown stays unknown"
    );
    assert_eq!(rows("id IN (1, NULL)"), vec![1]);
    assert_eq!(rows("id NOT IN (1, NULL)"), Vec::<i64>::new());
    assert_eq!(rows("id NOT IN (1, 2)"), vec![4, 5]);
    assert_eq!(rows("id > 3 OR name = 'c'"), vec![-1, 4, 5]);
    assert_eq!(rows("name <> 'a' OR id = 1"), vec![1, 2, -1, 5]);
    assert_eq!(rows("flag IS NOT TRUE"), vec![2, -1, 5]);
    assert_eq!(rows("flag IS FALSE"), vec![2, 5]);
    assert_eq!(rows("NOT id NOT BETWEEN 2 AND 4"), vec![2, 4]);
    assert_eq!(rows("TRUE"), vec![1, 2, -1, 4, 5]);
    assert_eq!(rows("NULL OR id = 5"), vec![5]);
}

#[test]
fn what_is_not_understood_is_named() {
    assert!(err("id >").contains("filter \"id >\""));
    assert!(
        err("nope = 1").contains("no column \"nope\""),
        "{}",
        err("nope = 1")
    );
    assert!(err("id = name").contains("comparing two columns"));
    assert!(
        err("id = 'x'").contains("column \"id\" (Int64) compared with 'x'"),
        "{}",
        err("id = 'x'")
    );
    assert!(err("name = 3").contains("a number needs a numeric column"));
    assert!(err("id + 1 > 2").contains("not supported"));
    assert!(err("a.b = 1").contains("nested columns"));
    assert!(err("id = 1 garbage").contains("filter"));
    assert!(err("day = 'not a date'").contains("day"));
    assert!(err("\"ID\" = 1").contains("no column \"ID\""));
}

fn one<A: arrow_array::Array + 'static>(a: A) -> Option<ArrayRef> {
    Some(Arc::new(a))
}

/// The verdict on a unit of 10 rows whose column `x` (int64) has these statistics.
fn verdict(text: &str, min: i64, max: i64, nulls: Option<u64>) -> &'static str {
    let s = Schema::new(vec![Field::new("x", DataType::Int64, true)]);
    let f = Filter::parse(text).unwrap().bind(&s).unwrap();
    let p = f.possible(10, &|_| {
        Some(ColumnStats {
            min: one(Int64Array::from(vec![min])),
            max: one(Int64Array::from(vec![max])),
            nulls,
        })
    });
    if p.none_pass() {
        "none"
    } else if p.all_pass() {
        "all"
    } else {
        "some"
    }
}

#[test]
fn statistics_decide_what_they_can() {
    assert_eq!(verdict("x > 10", 0, 10, Some(0)), "none");
    assert_eq!(verdict("x > 10", 0, 11, Some(0)), "some");
    assert_eq!(verdict("x >= 0", 0, 11, Some(0)), "all");
    assert_eq!(
        verdict("x >= 0", 0, 11, Some(1)),
        "some",
        "a null does not pass"
    );
    assert_eq!(verdict("x >= 0", 0, 11, None), "some", "nulls not known");
    assert_eq!(verdict("x = 5", 5, 5, Some(0)), "all");
    assert_eq!(verdict("x <> 5", 5, 5, Some(0)), "none");
    assert_eq!(verdict("x IN (1, 20)", 2, 19, Some(0)), "none");
    assert_eq!(verdict("x IN (1, 20)", 2, 20, Some(0)), "some");
    assert_eq!(verdict("x IS NULL", 2, 20, Some(0)), "none");
    assert_eq!(verdict("x IS NULL", 2, 20, Some(10)), "all");
    assert_eq!(verdict("x < 3", 2, 20, Some(10)), "none", "all null");
    assert_eq!(verdict("NOT x < 3", 5, 20, Some(0)), "all");
    assert_eq!(verdict("x < 3 OR x > 100", 5, 20, Some(0)), "none");
    assert_eq!(verdict("x > 3 AND x < 100", 5, 20, Some(0)), "all");
    assert_eq!(verdict("x > 3 AND x < 100", 5, 200, Some(0)), "some");
    assert_eq!(verdict("x = NULL", 5, 200, Some(0)), "none");
    // Without statistics, nothing is decided.
    let s = Schema::new(vec![Field::new("x", DataType::Int64, true)]);
    let f = Filter::parse("x > 1").unwrap().bind(&s).unwrap();
    let p = f.possible(10, &|_| None);
    assert!(!p.none_pass() && !p.all_pass());
}

#[test]
fn a_float_maximum_does_not_rule_out_nan() {
    let s = Schema::new(vec![Field::new("x", DataType::Float64, true)]);
    let f = Filter::parse("x > 10").unwrap().bind(&s).unwrap();
    let p = f.possible(10, &|_| {
        Some(ColumnStats {
            min: one(arrow_array::Float64Array::from(vec![0.0])),
            max: one(arrow_array::Float64Array::from(vec![5.0])),
            nulls: Some(0),
        })
    });
    assert!(
        !p.none_pass(),
        "a NaN (left out of the maximum) passes x > 10"
    );
    let f = Filter::parse("x < -1").unwrap().bind(&s).unwrap();
    let p = f.possible(10, &|_| {
        Some(ColumnStats {
            min: one(arrow_array::Float64Array::from(vec![0.0])),
            max: one(arrow_array::Float64Array::from(vec![5.0])),
            nulls: Some(0),
        })
    });
    assert!(p.none_pass());
}
