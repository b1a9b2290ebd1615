//! The bad-input corpus (`tests/data/badinput/`, written by its `make.py` from valid files of
//! pyarrow, pyorc and fastavro): one test per file, each checking that the error is a
//! `DataError` naming the file and where (split, row group / stripe / block, byte offset), and
//! what `OnError::Skip` keeps and counts. A last test fails if a corpus file has no test.

mod common;

use std::path::PathBuf;

use common::*;
use hydrofeed_error::Location;
use hydrofeed_format::Error;
use hydrofeed_format::{OnError, ReadOptions, SkipStats};

/// The corpus files that have a test below (the test of the same name).
const COVERED: &[&str] = &[
    "pq_truncated.parquet",
    "pq_bad_magic.parquet",
    "pq_bad_head_magic.parquet",
    "pq_empty.parquet",
    "pq_text.parquet",
    "pq_corrupt_page.parquet",
    "orc_truncated.orc",
    "orc_bad_magic.orc",
    "orc_bad_tail.orc",
    "orc_empty.orc",
    "orc_text.orc",
    "orc_corrupt_stripe.orc",
    "avro_truncated.avro",
    "avro_bad_magic.avro",
    "avro_bad_header.avro",
    "avro_empty.avro",
    "avro_text.avro",
    "avro_bad_sync.avro",
    "avro_corrupt_block.avro",
    "avro_count_low.avro",
];

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/badinput")
}

fn path(name: &str) -> String {
    assert!(COVERED.contains(&name), "{name} is not in COVERED");
    dir().join(name).to_str().unwrap().to_string()
}

fn facts(name: &str) -> serde_json::Value {
    let m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir().join("manifest.json")).unwrap())
            .unwrap();
    m[name].clone()
}

/// The `DataError` of `format`, checked to name the file.
fn data_err(e: Error, name: &str, format: &str) -> (Location, String) {
    let msg = e.to_string();
    match e {
        Error::Data {
            loc,
            format: f,
            detail,
        } => {
            assert_eq!(f, format, "{msg}");
            assert!(loc.path.ends_with(name), "{msg}");
            assert!(msg.contains(name), "{msg}");
            (loc, detail)
        }
        other => panic!("{name}: expected a DataError, got {other}"),
    }
}

fn opts(on_error: OnError) -> ReadOptions {
    ReadOptions {
        on_error,
        ..Default::default()
    }
}

/// A file that cannot be planned at all: the same error under both policies.
fn unplannable(name: &str, format: &str, offset: Option<u64>, says: &str) {
    for policy in [OnError::Raise, OnError::Skip] {
        let e = read_all(&path(name), &opts(policy)).unwrap_err();
        let (loc, detail) = data_err(e, name, format);
        assert_eq!(loc.offset, offset, "{name}: {detail}");
        assert!(
            detail.contains(says),
            "{name}: {detail:?} should say {says:?}"
        );
    }
}

/// A 0-byte file holds no records (as Spark reads it): with no schema given the read says
/// there is nothing to take one from; with one, it is an empty read of that schema.
fn empty_file(name: &str) {
    let e = read_all(&path(name), &opts(OnError::Raise)).unwrap_err();
    match &e {
        Error::Schema { path, detail } => {
            assert!(path.ends_with(name), "{e}");
            assert!(detail.contains("empty") && detail.contains("schema"), "{e}");
        }
        other => panic!("{name}: expected a SchemaError, got {other}"),
    }
    let schema = std::sync::Arc::new(arrow_schema::Schema::new(vec![arrow_schema::Field::new(
        "x",
        arrow_schema::DataType::Int64,
        true,
    )]));
    let o = ReadOptions {
        schema: Some(schema.clone()),
        ..Default::default()
    };
    let (plan, batches, _) = read_all(&path(name), &o).unwrap();
    assert_eq!(plan.schema, schema);
    assert!(batches.is_empty() && plan.splits.is_empty(), "{name}");
}

fn len(name: &str) -> u64 {
    std::fs::metadata(path(name)).unwrap().len()
}

/// A file whose unit `unit` is bad: Raise names it; Skip drops exactly it and counts it.
fn bad_unit(name: &str, format: &str, unit: &str, detail_has: &str) {
    let f = facts(name);
    let e = read_all(&path(name), &opts(OnError::Raise)).unwrap_err();
    let (loc, detail) = data_err(e, name, format);
    assert_eq!(loc.split, Some(0), "{name}: {detail}");
    assert_eq!(loc.offset, f["offset"].as_u64(), "{name}: {detail}");
    assert!(
        loc.unit.as_deref().unwrap_or("").starts_with(unit),
        "{name}: {:?}",
        loc.unit
    );
    assert!(
        detail.contains(detail_has),
        "{name}: {detail:?} should say {detail_has:?}"
    );
    let (_, batches, sk) = read_all(&path(name), &opts(OnError::Skip)).unwrap();
    let rows: u64 = batches.iter().map(|b| b.num_rows() as u64).sum();
    assert_eq!(rows, f["rows_after_skip"].as_u64().unwrap(), "{name}");
    assert_eq!(sk.blocks, 1, "{name}: {sk:?}");
    let total = f["rows"].as_u64().unwrap();
    if sk.records > 0 {
        assert_eq!(sk.records, total - rows, "{name}: {sk:?}");
    }
}

#[test]
fn pq_truncated() {
    let n = "pq_truncated.parquet";
    unplannable(
        n,
        "parquet",
        Some(len(n) - 8),
        "not a readable Parquet file",
    );
}

#[test]
fn pq_bad_magic() {
    let n = "pq_bad_magic.parquet";
    unplannable(
        n,
        "parquet",
        Some(len(n) - 8),
        "not a readable Parquet file",
    );
}

#[test]
fn pq_bad_head_magic() {
    unplannable(
        "pq_bad_head_magic.parquet",
        "parquet",
        Some(0),
        "wrong magic",
    );
}

#[test]
fn pq_empty() {
    empty_file("pq_empty.parquet");
}

#[test]
fn pq_text() {
    unplannable("pq_text.parquet", "parquet", Some(0), "wrong magic");
}

#[test]
fn pq_corrupt_page() {
    bad_unit("pq_corrupt_page.parquet", "parquet", "row group 1", "");
}

#[test]
fn orc_truncated() {
    let n = "orc_truncated.orc";
    unplannable(n, "orc", Some(len(n) - 8), "not a readable ORC file");
}

#[test]
fn orc_bad_magic() {
    unplannable("orc_bad_magic.orc", "orc", Some(0), "wrong magic");
}

#[test]
fn orc_bad_tail() {
    let n = "orc_bad_tail.orc";
    unplannable(n, "orc", Some(len(n) - 8), "not a readable ORC file");
}

#[test]
fn orc_empty() {
    empty_file("orc_empty.orc");
}

#[test]
fn orc_text() {
    unplannable("orc_text.orc", "orc", Some(0), "wrong magic");
}

#[test]
fn orc_corrupt_stripe() {
    bad_unit("orc_corrupt_stripe.orc", "orc", "stripe 1", "");
}

#[test]
fn avro_truncated() {
    bad_unit("avro_truncated.avro", "avro", "block 3 at", "truncated");
}

#[test]
fn avro_bad_magic() {
    unplannable("avro_bad_magic.avro", "avro", Some(0), "wrong magic");
}

#[test]
fn avro_bad_header() {
    unplannable("avro_bad_header.avro", "avro", Some(0), "header");
}

#[test]
fn avro_empty() {
    empty_file("avro_empty.avro");
}

#[test]
fn avro_text() {
    unplannable("avro_text.avro", "avro", Some(0), "wrong magic");
}

#[test]
fn avro_bad_sync() {
    bad_unit(
        "avro_bad_sync.avro",
        "avro",
        "block 2 at",
        "sync marker mismatch",
    );
}

#[test]
fn avro_corrupt_block() {
    bad_unit("avro_corrupt_block.avro", "avro", "block 1 at", "");
}

/// A block whose header count is one lower than the records its data holds. arrow-avro's own
/// streaming reader spins forever on this; ours decodes exactly the count the header gives (as
/// Apache Avro's Java reader does) and must finish. The record past the count is not read:
/// nothing in the file tells it apart from padding without decoding past the count.
#[test]
fn avro_count_low() {
    let name = "avro_count_low.avro";
    let f = facts(name);
    let p = path(name);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(read_all(&p, &opts(OnError::Raise)).map(|(plan, b, _)| {
            (
                plan.total_rows(),
                b.iter().map(|x| x.num_rows() as u64).sum::<u64>(),
            )
        }));
    });
    let (planned, read) = rx
        .recv_timeout(std::time::Duration::from_secs(60))
        .expect("reading a block with a low object count hung")
        .unwrap();
    assert_eq!(planned, read);
    assert_eq!(read, f["rows_read"].as_u64().unwrap());
}

#[test]
fn every_corpus_file_has_a_test() {
    let mut missing = Vec::new();
    for e in std::fs::read_dir(dir()).unwrap() {
        let name = e.unwrap().file_name().to_string_lossy().into_owned();
        if name == "make.py" || name == "manifest.json" {
            continue;
        }
        if !COVERED.contains(&name.as_str()) {
            missing.push(name);
        }
    }
    assert!(
        missing.is_empty(),
        "corpus files without a test in bad_input.rs: {missing:?}"
    );
    let m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir().join("manifest.json")).unwrap())
            .unwrap();
    for n in COVERED {
        assert!(
            m.get(*n).is_some(),
            "{n} is not in manifest.json (run make.py)"
        );
        assert!(dir().join(n).exists(), "{n} is missing (run make.py)");
    }
    let _ = SkipStats::default();
}
