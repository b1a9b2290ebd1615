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

/// ORC timestamps before 1970 came back wrong (orc-rust decoded the nanoseconds of the
/// secondary stream as unsigned; fixed in the vendored copy, `docs/upstream/`). Apache Arrow's
/// ORC writer (an independent writer, through pyarrow) stores a timestamp before the epoch as
/// seconds and nanoseconds truncated towards zero, so its nanoseconds are negative; pyarrow
/// reads back exactly what was written, and so must we.
#[test]
fn orc_timestamps_before_1970_come_back_as_written() {
    let written: [i64; 7] = [
        -500_000_000,
        -1,
        -1_000_000_001,
        0,
        1,
        -631_152_000_000_000_001,
        1_234_567_890_123_456_789,
    ];
    let list = written.map(|v| v.to_string()).join(",");
    let dir = write_fixtures(&format!(
        r#"
import os, sys, pyarrow as pa, pyarrow.orc as po
v = [{list}]
po.write_table(pa.table({{"t": pa.array(v, pa.timestamp("ns"))}}), os.path.join(sys.argv[1], "ts.orc"))
assert po.read_table(os.path.join(sys.argv[1], "ts.orc")).column("t").cast(pa.int64()).to_pylist() == v
"#
    ));
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
    assert_eq!(got, written);
}
