//! Parquet reader against files written by pyarrow: every codec pyarrow has, several row
//! groups, dictionaries, nested lists and structs, decimals, timestamps, nulls; values compared
//! with pyarrow reading the same files.

mod common;

use std::path::Path;
use std::sync::OnceLock;

use common::*;
use hydrofeed_format::split::SplitUnit;
use hydrofeed_format::Error;
use hydrofeed_format::{self as format, ReadOptions};

const WRITER: &str = r#"
import sys, os, datetime, decimal, random
import pyarrow as pa, pyarrow.parquet as pq
out = sys.argv[1]
rng = random.Random(11)
n = 1000
def nul(i, k, v):
    return None if i % k == 0 else v
cols = {
    "i8": pa.array([nul(i, 7, (i % 250) - 125) for i in range(n)], pa.int8()),
    "i16": pa.array([nul(i, 11, i * 31 - 9000) for i in range(n)], pa.int16()),
    "i32": pa.array([i * 100003 - 2**30 for i in range(n)], pa.int32()),
    "i64": pa.array([nul(i, 5, rng.randint(-2**63, 2**63 - 1)) for i in range(n)], pa.int64()),
    "u32": pa.array([i * 4000 for i in range(n)], pa.uint32()),
    "f32": pa.array([nul(i, 13, i / 8.0) for i in range(n)], pa.float32()),
    "f64": pa.array([rng.random() * 1e6 - 5e5 if i % 17 else float("nan") for i in range(n)], pa.float64()),
    "flag": pa.array([nul(i, 9, i % 3 == 0) for i in range(n)], pa.bool_()),
    "s": pa.array([nul(i, 4, "row-%d-%s" % (i, "x" * (i % 13))) for i in range(n)], pa.string()),
    "bin": pa.array([bytes(rng.randint(0, 255) for _ in range(i % 9)) for i in range(n)], pa.binary()),
    "fixed": pa.array([bytes([i % 256, 1, 2, 3]) for i in range(n)], pa.binary(4)),
    "day": pa.array([nul(i, 6, datetime.date(2000, 1, 1) + datetime.timedelta(days=i)) for i in range(n)], pa.date32()),
    "ts_ms": pa.array([datetime.datetime(2020, 1, 1) + datetime.timedelta(milliseconds=i * 1234567) for i in range(n)], pa.timestamp("ms")),
    "ts_us_utc": pa.array([nul(i, 8, datetime.datetime(2021, 6, 1, tzinfo=datetime.timezone.utc) + datetime.timedelta(microseconds=i * 987654321)) for i in range(n)], pa.timestamp("us", tz="UTC")),
    "ts_ns": pa.array([1_600_000_000_000_000_000 + i * 123_456_789 for i in range(n)], pa.timestamp("ns")),
    "dec": pa.array([nul(i, 10, decimal.Decimal(i * 7 - 3000) / 100) for i in range(n)], pa.decimal128(10, 2)),
    "dec38": pa.array([decimal.Decimal(rng.randint(-10**30, 10**30)) / 10**6 for i in range(n)], pa.decimal128(38, 6)),
    "cat": pa.array(["red", "green", "blue", None][i % 4] for i in range(n)).dictionary_encode(),
    "ints": pa.array([nul(i, 12, [i + k for k in range(i % 5)]) for i in range(n)], pa.list_(pa.int64())),
    "pt": pa.array([nul(i, 15, {"x": i * 1.5, "label": "p%d" % i}) for i in range(n)], pa.struct([("x", pa.float64()), ("label", pa.string())])),
    "pts": pa.array([[{"x": float(k), "tags": ["a"] * k} for k in range(i % 4)] for i in range(n)],
                    pa.list_(pa.struct([("x", pa.float64()), ("tags", pa.list_(pa.string()))]))),
}
t = pa.table(cols)
codecs = [c for c in ["NONE", "SNAPPY", "GZIP", "BROTLI", "LZ4", "ZSTD"] if c == "NONE" or pa.Codec.is_available(c.lower())]
for c in codecs:
    pq.write_table(t, os.path.join(out, "codec_%s.parquet" % c.lower()), compression=c, row_group_size=300)
pq.write_table(t, os.path.join(out, "v1_plain.parquet"), compression="SNAPPY", use_dictionary=False,
               data_page_version="1.0", row_group_size=1000)
pq.write_table(t, os.path.join(out, "v2_dict.parquet"), compression="ZSTD", use_dictionary=True,
               data_page_version="2.0", row_group_size=128, data_page_size=512)
pq.write_table(t.slice(0, 0), os.path.join(out, "empty_table.parquet"))
print(",".join(codecs))
"#;

fn fixtures() -> &'static Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| write_fixtures(WRITER)).path()
}

fn f(name: &str) -> String {
    fixtures().join(name).to_str().unwrap().to_string()
}

#[test]
fn every_codec_and_page_layout_matches_pyarrow() {
    let mut checks = Vec::new();
    let mut names = vec![
        "v1_plain.parquet".to_string(),
        "v2_dict.parquet".to_string(),
    ];
    for c in ["none", "snappy", "gzip", "brotli", "lz4", "zstd"] {
        names.push(format!("codec_{c}.parquet"));
    }
    for name in names {
        let batch = read_one(&f(&name), &small(1));
        assert_eq!(batch.num_rows(), 1000, "{name}");
        checks.push(Check {
            kind: "parquet",
            src: f(&name),
            batch,
            columns: None,
            reader_schema: None,
        });
    }
    check_with_python(checks);
}

#[test]
fn row_groups_are_splits_and_every_row_is_read_once() {
    let st = storage();
    // One row group per split when row groups are larger than split_bytes.
    let plan = format::plan(&st, &f("codec_snappy.parquet"), &small(1)).unwrap();
    assert_eq!(plan.splits.len(), 4);
    let rows: Vec<u64> = plan.splits.iter().map(|s| s.rows).collect();
    assert_eq!(rows, [300, 300, 300, 100]);
    for (i, s) in plan.splits.iter().enumerate() {
        assert_eq!(
            s.unit,
            SplitUnit::RowGroups {
                first: i as u32,
                count: 1
            }
        );
        assert!(s.bytes > 0);
    }
    // Grouped into one split by default.
    let plan = format::plan(&st, &f("v2_dict.parquet"), &ReadOptions::default()).unwrap();
    assert_eq!(plan.splits.len(), 1);
    assert_eq!(
        plan.splits[0].unit,
        SplitUnit::RowGroups { first: 0, count: 8 }
    );
    // Every row once, in any split order: the i32 column is distinct per row.
    let plan = format::plan(&st, &f("v2_dict.parquet"), &small(1)).unwrap();
    assert_eq!(plan.splits.len(), 8);
    let mut seen = Vec::new();
    for s in plan.splits.iter().rev() {
        for b in format::open_split(&st, &plan, s, &small(1)).unwrap() {
            let b = b.unwrap();
            let c = b.column_by_name("i32").unwrap();
            let c = c
                .as_any()
                .downcast_ref::<arrow_array::Int32Array>()
                .unwrap();
            seen.extend(c.values().iter().copied());
        }
    }
    seen.sort_unstable();
    let want: Vec<i32> = (0..1000)
        .map(|i: i64| (i * 100003 - (1 << 30)) as i32)
        .collect();
    assert_eq!(seen, want);
}

#[test]
fn projection_by_name_in_the_given_order_with_nested_columns() {
    let cols = vec![
        "pts".to_string(),
        "s".to_string(),
        "pt".to_string(),
        "cat".to_string(),
    ];
    let opts = ReadOptions {
        columns: Some(cols.clone()),
        ..small(1)
    };
    let batch = read_one(&f("codec_zstd.parquet"), &opts);
    let names: Vec<String> = batch
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    assert_eq!(names, ["pts", "s", "pt", "cat"]);
    check_with_python(vec![Check {
        kind: "parquet",
        src: f("codec_zstd.parquet"),
        batch,
        columns: Some(cols),
        reader_schema: None,
    }]);
    let bad = ReadOptions {
        columns: Some(vec!["nope".into()]),
        ..small(1)
    };
    let e = read_all(&f("codec_zstd.parquet"), &bad).unwrap_err();
    assert!(matches!(e, Error::Schema { .. }), "{e}");
    assert!(e.to_string().contains("nope"), "{e}");
}

#[test]
fn empty_table_plans_no_rows() {
    let (plan, batches, _) = read_all(&f("empty_table.parquet"), &small(1)).unwrap();
    assert_eq!(plan.total_rows(), 0);
    assert_eq!(batches.iter().map(|b| b.num_rows()).sum::<usize>(), 0);
    assert_eq!(plan.schema.fields().len(), 21);
}

const FIXED_WRITER: &str = r#"
import sys, os
import numpy as np, pyarrow as pa, pyarrow.parquet as pq
out = sys.argv[1]
n = 1000
rng = np.random.default_rng(5)
def fixed(values, width, item=None):
    t = pa.list_(item or pa.from_numpy_dtype(values.dtype), width)
    return pa.FixedSizeListArray.from_arrays(pa.array(values.reshape(-1)), width) if item is None else \
        pa.FixedSizeListArray.from_arrays(pa.array(values.reshape(-1), item.type), type=t)
t = pa.table({
    "id": pa.array(np.arange(n, dtype=np.int64)),
    "img": fixed(rng.random((n, 16), dtype=np.float32), 16),
    "emb": fixed(rng.random((n, 3)), 3),
    "ints": fixed(rng.integers(-9, 9, (n, 5)).astype(np.int32), 5),
    "longs": fixed(rng.integers(0, 2**40, (n, 2)), 2, pa.field("item", pa.int64(), nullable=False)),
    "label": pa.array((np.arange(n) % 10).astype(np.int64)),
})
pq.write_table(t, os.path.join(out, "fixed_v1.parquet"), row_group_size=300, data_page_size=700, data_page_version="1.0")
pq.write_table(t, os.path.join(out, "fixed_v2.parquet"), row_group_size=333, data_page_size=512, data_page_version="2.0",
               use_dictionary=False, compression="zstd")
# nulls in a fixed-size list (a null list and a null item): the statistics say so, the
# parquet crate's own reader takes that column
img = t.column("img").to_pylist()
img[3] = None
img[7] = [None] + img[7][1:]
pq.write_table(t.set_column(1, "img", pa.array(img, t.schema.field("img").type)),
               os.path.join(out, "fixed_nulls.parquet"), row_group_size=300)
# the value encodings of the path: dictionaries of 1 bit (0/1), 8 bits (MNIST-like pixels, most
# of them 0: RLE runs beside bit-packed groups) and 14 bits (random floats); a dictionary page
# that fills up, so that PLAIN pages follow dictionary-encoded ones in a column chunk;
# BYTE_STREAM_SPLIT for floats and integers; DELTA_BINARY_PACKED (the crate's reader)
mn = np.where(rng.random((n, 40)) < 0.8, 0, rng.integers(1, 256, (n, 40)) / 255).astype(np.float32)
t2 = t.select(["id", "img", "ints", "longs"]).append_column("mn", fixed(mn, 40)).append_column(
    "bits", fixed(rng.integers(0, 2, (n, 8)).astype(np.int64), 8))
pq.write_table(t2, os.path.join(out, "enc_dict_v1.parquet"), row_group_size=450, data_page_size=1000)
pq.write_table(t2, os.path.join(out, "enc_dict_v2.parquet"), row_group_size=450, data_page_size=300,
               data_page_version="2.0")
pq.write_table(t2, os.path.join(out, "enc_fallback.parquet"), dictionary_pagesize_limit=4096, data_page_size=2000)
pq.write_table(t2, os.path.join(out, "enc_split.parquet"), row_group_size=700, use_dictionary=False,
               use_byte_stream_split=True, data_page_size=1500)
pq.write_table(t2, os.path.join(out, "enc_delta.parquet"), use_dictionary=False,
               column_encoding={"ints.list.element": "DELTA_BINARY_PACKED", "bits.list.element": "DELTA_BINARY_PACKED"})
"#;

/// Fixed-size lists of numbers without nulls take the column-reader path (see
/// `format::parquet_fixed`): multi-page row groups, V1 and V2 pages, projections with and
/// without other columns, and a file with nulls (the generic path) all equal pyarrow.
#[test]
fn fixed_size_lists_match_pyarrow_on_every_path() {
    let dir = write_fixtures(FIXED_WRITER);
    let p = |n: &str| dir.path().join(n).to_str().unwrap().to_string();
    let mut checks = Vec::new();
    let projections: [Option<Vec<&str>>; 4] = [
        None,
        Some(vec!["id", "img"]),
        Some(vec!["img", "longs"]),
        Some(vec!["id"]),
    ];
    for name in [
        "fixed_v1.parquet",
        "fixed_v2.parquet",
        "fixed_nulls.parquet",
        "enc_dict_v1.parquet",
        "enc_dict_v2.parquet",
        "enc_fallback.parquet",
        "enc_split.parquet",
        "enc_delta.parquet",
    ] {
        for cols in &projections {
            for batch_rows in [64, 1000] {
                let opts = ReadOptions {
                    batch_rows,
                    columns: cols
                        .as_ref()
                        .map(|c| c.iter().map(|s| s.to_string()).collect()),
                    ..small(1)
                };
                let batch = read_one(&p(name), &opts);
                assert_eq!(batch.num_rows(), 1000, "{name} {cols:?}");
                from_every_row(&p(name), &opts, &batch);
                checks.push(Check {
                    kind: "parquet",
                    src: p(name),
                    batch,
                    columns: cols
                        .as_ref()
                        .map(|c| c.iter().map(|s| s.to_string()).collect()),
                    reader_schema: None,
                });
            }
        }
    }
    check_with_python(checks);
}

/// Each split of `input` read from a row inside its first row group (the reader passes over
/// the rows before it: pages left unread, indices unpacked but not gathered) equals the
/// same rows of `whole`, the input read from its start.
fn from_every_row(input: &str, opts: &ReadOptions, whole: &arrow_array::RecordBatch) {
    let st = storage();
    let opts = ReadOptions {
        split_bytes: 1,
        ..opts.clone()
    };
    let plan = format::plan(&st, input, &opts).unwrap();
    let mut first = 0;
    for s in &plan.splits {
        for skip in [1, 7, 64, 299] {
            let skip = skip.min(s.rows.saturating_sub(1));
            let mut r = format::open_split(&st, &plan, s, &opts).unwrap();
            assert_eq!(r.skip_rows(skip), skip, "{input}: split at row {first}");
            let got: Vec<arrow_array::RecordBatch> = r.map(|b| b.unwrap()).collect();
            let got = concat(&plan, &got);
            let want = whole.slice((first + skip) as usize, (s.rows - skip) as usize);
            assert_eq!(
                got,
                want,
                "{input} {:?}: from row {}",
                opts.columns,
                first + skip
            );
        }
        first += s.rows;
    }
}
