//! ORC reader against files written by pyarrow.orc (ORC C++) and pyorc: every codec they
//! write, several stripes, nested lists and structs, decimals, timestamps, nulls; values
//! compared with pyarrow reading the same files.

mod common;

use std::path::Path;
use std::sync::OnceLock;

use common::*;
use hydrofeed_format::split::SplitUnit;
use hydrofeed_format::Error;
use hydrofeed_format::{self as format, ReadOptions};

const WRITER: &str = r#"
import sys, os, datetime, decimal, random, json
import pyarrow as pa, pyarrow.orc as po
out = sys.argv[1]
rng = random.Random(5)
n = 6000
def nul(i, k, v):
    return None if i % k == 0 else v
t = pa.table({
    "i8": pa.array([nul(i, 7, (i % 250) - 125) for i in range(n)], pa.int8()),
    "i16": pa.array([nul(i, 11, i - 3000) for i in range(n)], pa.int16()),
    "i32": pa.array([i * 100003 - 2**30 for i in range(n)], pa.int32()),
    "i64": pa.array([nul(i, 5, rng.randint(-2**63, 2**63 - 1)) for i in range(n)], pa.int64()),
    "f32": pa.array([nul(i, 13, i / 8.0) for i in range(n)], pa.float32()),
    "f64": pa.array([rng.random() * 1e6 for i in range(n)], pa.float64()),
    "flag": pa.array([nul(i, 9, i % 3 == 0) for i in range(n)], pa.bool_()),
    "s": pa.array([nul(i, 4, "row-%d-%s" % (i, "y" * (i % 40))) for i in range(n)], pa.string()),
    "bin": pa.array([bytes(rng.randint(0, 255) for _ in range(i % 9)) for i in range(n)], pa.binary()),
    "day": pa.array([nul(i, 6, datetime.date(1990, 1, 1) + datetime.timedelta(days=i)) for i in range(n)], pa.date32()),
    "ts": pa.array([1_500_000_000_000_000_000 + i * 987_654_321_000 for i in range(n)], pa.timestamp("ns")),
    "dec": pa.array([nul(i, 10, decimal.Decimal(i * 7 - 3000) / 100) for i in range(n)], pa.decimal128(10, 2)),
    "ints": pa.array([nul(i, 12, [i + k for k in range(i % 5)]) for i in range(n)], pa.list_(pa.int64())),
    "pt": pa.array([nul(i, 15, {"x": i * 1.5, "label": "p%d" % i}) for i in range(n)], pa.struct([("x", pa.float64()), ("label", pa.string())])),
})
codecs = []
for c in ["uncompressed", "zlib", "snappy", "lz4", "zstd"]:
    try:
        po.write_table(t, os.path.join(out, "pa_%s.orc" % c), compression=c, stripe_size=4096, batch_size=512)
        codecs.append(c)
    except Exception as e:
        print("pyarrow cannot write ORC", c, e, file=sys.stderr)

import pyorc
schema = "struct<id:bigint,name:string,score:double,tags:array<string>,when:timestamp,amount:decimal(12,3)>"
rows = []
for i in range(5000):
    rows.append((i, None if i % 6 == 0 else "n%d" % i, i * 0.25, ["t%d" % k for k in range(i % 3)],
                 datetime.datetime(2022, 3, 4, tzinfo=datetime.timezone.utc) + datetime.timedelta(seconds=i * 77),
                 decimal.Decimal(i * 13 - 999) / 1000))
for name, c in [("none", pyorc.CompressionKind.NONE), ("zlib", pyorc.CompressionKind.ZLIB),
                ("snappy", pyorc.CompressionKind.SNAPPY), ("lz4", pyorc.CompressionKind.LZ4),
                ("zstd", pyorc.CompressionKind.ZSTD)]:
    with open(os.path.join(out, "pyorc_%s.orc" % name), "wb") as f:
        with pyorc.Writer(f, schema, compression=c, stripe_size=16 * 1024, batch_size=256) as w:
            for r in rows:
                w.write(r)
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
fn pyarrow_and_pyorc_files_of_every_codec_match_pyarrow() {
    let mut checks = Vec::new();
    for c in ["uncompressed", "zlib", "snappy", "lz4", "zstd"] {
        let name = format!("pa_{c}.orc");
        let batch = read_one(&f(&name), &small(1));
        assert_eq!(batch.num_rows(), 6000, "{name}");
        checks.push(Check {
            kind: "orc",
            src: f(&name),
            batch,
            columns: None,
            reader_schema: None,
        });
    }
    for c in ["none", "zlib", "snappy", "lz4", "zstd"] {
        let name = format!("pyorc_{c}.orc");
        let batch = read_one(&f(&name), &small(1));
        assert_eq!(batch.num_rows(), 5000, "{name}");
        checks.push(Check {
            kind: "orc",
            src: f(&name),
            batch,
            columns: None,
            reader_schema: None,
        });
    }
    check_with_python(checks);
}

#[test]
fn stripes_are_splits_and_every_row_is_read_once() {
    let st = storage();
    let plan = format::plan(&st, &f("pa_uncompressed.orc"), &small(1)).unwrap();
    assert!(plan.splits.len() > 2, "{} stripes", plan.splits.len());
    assert_eq!(plan.total_rows(), 6000);
    for (i, s) in plan.splits.iter().enumerate() {
        assert_eq!(
            s.unit,
            SplitUnit::Stripes {
                first: i as u32,
                count: 1
            }
        );
    }
    let one = format::plan(&st, &f("pa_zstd.orc"), &ReadOptions::default()).unwrap();
    assert_eq!(one.splits.len(), 1);
    assert_eq!(one.total_rows(), 6000);
    let mut seen = Vec::new();
    for s in plan.splits.iter().rev() {
        let mut rows = 0;
        for b in format::open_split(&st, &plan, s, &small(1)).unwrap() {
            let b = b.unwrap();
            rows += b.num_rows() as u64;
            let c = b.column_by_name("i32").unwrap();
            let c = c
                .as_any()
                .downcast_ref::<arrow_array::Int32Array>()
                .unwrap();
            seen.extend(c.values().iter().copied());
        }
        assert_eq!(rows, s.rows, "split {} reads the rows it planned", s.id);
    }
    seen.sort_unstable();
    let want: Vec<i32> = (0..6000)
        .map(|i: i64| (i * 100003 - (1 << 30)) as i32)
        .collect();
    assert_eq!(seen, want);
}

#[test]
fn projection_by_name_in_the_given_order() {
    let cols = vec!["pt".to_string(), "s".to_string(), "ints".to_string()];
    let opts = ReadOptions {
        columns: Some(cols.clone()),
        ..small(1)
    };
    let batch = read_one(&f("pa_snappy.orc"), &opts);
    let names: Vec<String> = batch
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    assert_eq!(names, cols);
    check_with_python(vec![Check {
        kind: "orc",
        src: f("pa_snappy.orc"),
        batch,
        columns: Some(cols),
        reader_schema: None,
    }]);
    let bad = ReadOptions {
        columns: Some(vec!["nope".into()]),
        ..small(1)
    };
    let e = read_all(&f("pa_snappy.orc"), &bad).unwrap_err();
    assert!(matches!(e, Error::Schema { .. }), "{e}");
}
