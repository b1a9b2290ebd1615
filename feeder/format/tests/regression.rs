//! One test per defect of the readers found from outside (by users, by the fuzzers, by the
//! differential suite), named by what broke; a new one lands here with its fix, failing first.
//! Python-side defects have the same file: `python/tests/test_regression.py`.
//!
//! The fuzzers' finds are files in `fuzz/regressions/` (footers that crashed the process): each
//! must be a clear error (or a clean read), never a panic or a stack overflow.

mod common;

use common::*;
use hydrofeed_format::{OnError, ReadOptions};

fn read(name: &str, ext: &str, on_error: OnError) -> String {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/regressions")
        .join(name);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(format!("input.{ext}"));
    std::fs::copy(&src, &path).unwrap();
    let opts = ReadOptions {
        on_error,
        split_bytes: 256,
        batch_rows: 64,
        ..Default::default()
    };
    match read_all(path.to_str().unwrap(), &opts) {
        Ok((_, batches, _)) => format!("ok: {} batches", batches.len()),
        Err(e) => e.to_string(),
    }
}

/// A column chunk with a negative page offset: `byte_range()` panicked in the row-group error
/// path, outside the decode guard.
#[test]
fn parquet_negative_chunk_offset_is_a_data_error() {
    for on_error in [OnError::Raise, OnError::Skip] {
        let e = read("parquet/negative-chunk-offset", "parquet", on_error);
        assert!(e.contains("input.parquet") || e.starts_with("ok"), "{e}");
    }
}

/// Footer types that form a cycle (struct 0 -> 2 -> 0): the schema parser recursed off its
/// stack and the process died.
#[test]
fn orc_cyclic_footer_types_are_a_data_error() {
    for on_error in [OnError::Raise, OnError::Skip] {
        let e = read("orc/cyclic-footer-types", "orc", on_error);
        assert!(e.contains("input.orc") && e.contains("subtype"), "{e}");
    }
}

/// ORC timestamps before 1970 came back one second late (orc-rust decoded the nanoseconds of
/// the secondary stream as unsigned; fixed in the vendored copy, `docs/upstream/`): a file
/// written by pyorc (an independent writer) reads back what pyarrow reads.
#[test]
fn orc_timestamps_before_1970_are_not_a_second_off() {
    let dir = write_fixtures(
        r#"
import datetime, os, sys, pyorc
out = sys.argv[1]
ts = [datetime.datetime(1969, 12, 31, 23, 59, 59, 500000, tzinfo=datetime.timezone.utc),
      datetime.datetime(1950, 6, 1, 12, 0, 0, 1, tzinfo=datetime.timezone.utc),
      datetime.datetime(1970, 1, 1, 0, 0, 0, 0, tzinfo=datetime.timezone.utc),
      datetime.datetime(2001, 2, 3, 4, 5, 6, 7, tzinfo=datetime.timezone.utc)]
with open(os.path.join(out, "ts.orc"), "wb") as f:
    with pyorc.Writer(f, "struct<t:timestamp>", timezone=datetime.timezone.utc) as w:
        for t in ts:
            w.write((t,))
"#,
    );
    let path = dir.path().join("ts.orc");
    let (_, batches, _) = read_all(path.to_str().unwrap(), &ReadOptions::default()).unwrap();
    let got: Vec<i64> = batches
        .iter()
        .flat_map(|b| {
            let a = arrow::compute::cast(b.column(0), &arrow_schema::DataType::Int64).unwrap();
            a.as_any()
                .downcast_ref::<arrow_array::Int64Array>()
                .unwrap()
                .values()
                .to_vec()
        })
        .collect();
    let want = run_py(
        r#"
import sys, pyarrow.orc as orc, pyarrow.compute as pc, pyarrow as pa
t = orc.read_table(sys.argv[1]).column("t")
print(",".join(str(v) for v in pc.cast(t, pa.int64()).to_pylist()))
"#,
        &[path.to_str().unwrap()],
    );
    let want: Vec<i64> = want.trim().split(',').map(|v| v.parse().unwrap()).collect();
    assert_eq!(got, want);
    // -0.5 s: before the fix it read +0.5 s.
    assert_eq!(got[0], -500_000_000);
}
