//! Files the fuzzers found (`fuzz/regressions/`): footers that crashed the process before.
//! Each must be a clear error (or a clean read), never a panic or a stack overflow.

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
