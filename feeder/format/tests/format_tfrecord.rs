//! TFRecord reader against files written by TensorFlow's own `tf.io.TFRecordWriter` (plain,
//! GZIP, ZLIB), plus a bad-input corpus and proptest round-trips of framing and split resync.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, OnceLock};

use arrow_array::{
    Array, BinaryArray, FixedSizeListArray, Float32Array, Int64Array, ListArray, RecordBatch,
};
use arrow_schema::{DataType, Field, Schema};
use hydrofeed_format::split::{Format, Split, SplitUnit};
use hydrofeed_format::tfrecord::{
    self, framing, plan_file, read_file, Example, Feature, RecordWriter, TfrecordReader,
};
use hydrofeed_format::Error;
use hydrofeed_format::{OnError, ReadOptions, SplitReader};
use hydrofeed_storage::{local::LocalStorage, Storage};
use proptest::prelude::*;
use prost::Message;

fn python() -> PathBuf {
    if let Ok(p) = std::env::var("HYDROFEED_PYTHON") {
        return p.into();
    }
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.venv/bin/python")
}

/// Writes the TF fixtures once per test binary: `varied.{tfrecord,tfrecord.gz}`,
/// `varied_zlib.tfrecord` (ZLIB without a telling name) and `expected.json`.
const TF_WRITER: &str = r#"
import json, os, random, sys
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import tensorflow as tf
out = sys.argv[1]
rng = random.Random(7)
recs = []
for n in range(300):
    feats, exp = {}, {}
    if n % 5 != 0:
        v = [rng.randint(-64, 64) / 8.0 for _ in range(rng.randint(0, 4))]
        feats["f"] = tf.train.Feature(float_list=tf.train.FloatList(value=v)); exp["f"] = v
    i = rng.randint(-2**62, 2**62)
    feats["i"] = tf.train.Feature(int64_list=tf.train.Int64List(value=[i])); exp["i"] = [i]
    b = [bytes(rng.randint(0, 255) for _ in range(rng.randint(0, 6))) for _ in range(rng.randint(0, 3))]
    feats["b"] = tf.train.Feature(bytes_list=tf.train.BytesList(value=b)); exp["b"] = [x.hex() for x in b]
    if n % 7 != 3:
        d = [float(n), -float(n), 0.5]
        feats["dense"] = tf.train.Feature(float_list=tf.train.FloatList(value=d)); exp["dense"] = d
    s = ("row-%d" % n).encode()
    feats["s"] = tf.train.Feature(bytes_list=tf.train.BytesList(value=[s])); exp["s"] = [s.hex()]
    recs.append((tf.train.Example(features=tf.train.Features(feature=feats)).SerializeToString(), exp))
for name, comp in [("varied.tfrecord", None), ("varied.tfrecord.gz", "GZIP"), ("varied_zlib.tfrecord", "ZLIB")]:
    with tf.io.TFRecordWriter(os.path.join(out, name), options=comp) as w:
        for r, _ in recs:
            w.write(r)
with open(os.path.join(out, "expected.json"), "w") as f:
    json.dump([e for _, e in recs], f)
"#;

fn fixtures() -> &'static Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = tempfile::tempdir().expect("tempdir");
        let st = Command::new(python())
            .arg("-c")
            .arg(TF_WRITER)
            .arg(dir.path())
            .status()
            .unwrap_or_else(|e| panic!("cannot run {:?} (set HYDROFEED_PYTHON): {e}", python()));
        assert!(st.success(), "the TensorFlow fixture writer failed: {st}");
        dir
    })
    .path()
}

fn storage() -> Arc<dyn Storage> {
    Arc::new(LocalStorage)
}

fn read(path: &Path, opts: &ReadOptions) -> hydrofeed_format::Result<(Vec<RecordBatch>, u64, u64)> {
    let (_, batches, sk) = read_file(&storage(), path.to_str().unwrap(), opts)?;
    Ok((batches, sk.records, sk.blocks))
}

fn concat(batches: &[RecordBatch]) -> RecordBatch {
    arrow_select::concat::concat_batches(&batches[0].schema(), batches).unwrap()
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn check_varied(batch: &RecordBatch) {
    let exp: Vec<serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(fixtures().join("expected.json")).unwrap())
            .unwrap();
    assert_eq!(batch.num_rows(), exp.len());
    let s = batch.schema();
    let names: Vec<&str> = s.fields().iter().map(|f| f.name().as_str()).collect();
    assert_eq!(names, ["b", "dense", "f", "i", "s"]);
    assert!(matches!(
        s.field_with_name("b").unwrap().data_type(),
        DataType::List(_)
    ));
    assert!(matches!(
        s.field_with_name("dense").unwrap().data_type(),
        DataType::FixedSizeList(_, 3)
    ));
    assert!(matches!(
        s.field_with_name("f").unwrap().data_type(),
        DataType::List(_)
    ));
    assert_eq!(
        s.field_with_name("i").unwrap().data_type(),
        &DataType::Int64
    );
    assert_eq!(
        s.field_with_name("s").unwrap().data_type(),
        &DataType::Binary
    );

    let b = batch
        .column_by_name("b")
        .unwrap()
        .as_any()
        .downcast_ref::<ListArray>()
        .unwrap();
    let dense = batch
        .column_by_name("dense")
        .unwrap()
        .as_any()
        .downcast_ref::<FixedSizeListArray>()
        .unwrap();
    let f = batch
        .column_by_name("f")
        .unwrap()
        .as_any()
        .downcast_ref::<ListArray>()
        .unwrap();
    let i = batch
        .column_by_name("i")
        .unwrap()
        .as_any()
        .downcast_ref::<Int64Array>()
        .unwrap();
    let sc = batch
        .column_by_name("s")
        .unwrap()
        .as_any()
        .downcast_ref::<BinaryArray>()
        .unwrap();
    let floats = |a: Arc<dyn Array>| -> Vec<f64> {
        a.as_any()
            .downcast_ref::<Float32Array>()
            .unwrap()
            .values()
            .iter()
            .map(|&x| x as f64)
            .collect()
    };
    let jf = |v: &serde_json::Value| -> Vec<f64> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect()
    };
    for (r, e) in exp.iter().enumerate() {
        match e.get("f") {
            Some(v) => assert_eq!(floats(f.value(r)), jf(v), "row {r} f"),
            None => assert!(f.is_null(r), "row {r}: missing f must be null"),
        }
        match e.get("dense") {
            Some(v) => assert_eq!(floats(dense.value(r)), jf(v), "row {r} dense"),
            None => assert!(dense.is_null(r), "row {r}: missing dense must be null"),
        }
        assert_eq!(i.value(r), e["i"][0].as_i64().unwrap(), "row {r} i");
        let bv = b.value(r);
        let bv = bv.as_any().downcast_ref::<BinaryArray>().unwrap();
        let got: Vec<String> = (0..bv.len()).map(|k| hex(bv.value(k))).collect();
        let want: Vec<String> = e["b"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_str().unwrap().to_string())
            .collect();
        assert_eq!(got, want, "row {r} b");
        assert_eq!(hex(sc.value(r)), e["s"][0].as_str().unwrap(), "row {r} s");
    }
}

#[test]
fn tf_written_plain_gzip_and_zlib_files_match() {
    for name in [
        "varied.tfrecord",
        "varied.tfrecord.gz",
        "varied_zlib.tfrecord",
    ] {
        let (batches, skipped, _) = read(&fixtures().join(name), &ReadOptions::default()).unwrap();
        assert_eq!(skipped, 0);
        check_varied(&concat(&batches));
    }
}

#[test]
fn compressed_files_are_one_split_and_plain_files_split_on_records() {
    let opts = ReadOptions {
        split_bytes: 2048,
        batch_rows: 7,
        ..Default::default()
    };
    for (name, one) in [
        ("varied.tfrecord.gz", true),
        ("varied_zlib.tfrecord", true),
        ("varied.tfrecord", false),
    ] {
        let path = fixtures().join(name);
        let st = storage().stat(path.to_str().unwrap()).unwrap();
        let (_, splits) = plan_file(&storage(), &st, &opts, 10).unwrap();
        assert_eq!(splits.len() == 1, one, "{name}: {} splits", splits.len());
        assert_eq!(splits.iter().map(|s| s.rows).sum::<u64>(), 300);
        assert_eq!(splits[0].id, 10);
        let (batches, _, _) = read(&path, &opts).unwrap();
        assert!(batches.iter().all(|b| b.num_rows() <= 7));
        check_varied(&concat(&batches));
    }
}

#[test]
fn projection_reads_only_selected_features() {
    let opts = ReadOptions {
        columns: Some(vec!["s".into(), "i".into()]),
        ..Default::default()
    };
    let (batches, _, _) = read(&fixtures().join("varied.tfrecord"), &opts).unwrap();
    let b = concat(&batches);
    let names: Vec<String> = b
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    assert_eq!(names, ["s", "i"]);
    assert_eq!(b.num_rows(), 300);
    let bad = ReadOptions {
        columns: Some(vec!["nope".into()]),
        ..Default::default()
    };
    let e = read(&fixtures().join("varied.tfrecord"), &bad).unwrap_err();
    assert!(matches!(e, Error::Schema { .. }), "{e}");
}

fn ex(pairs: Vec<(&str, Feature)>) -> Vec<u8> {
    Example::from_features(pairs.into_iter().map(|(k, v)| (k.to_string(), v))).encode_to_vec()
}

/// Writes `n` records (`x` float_list of 3, `y` int64 scalar = index) and returns the file
/// and each record's offset.
fn write_simple(dir: &Path, name: &str, n: usize) -> (PathBuf, Vec<u64>) {
    let path = dir.join(name);
    let mut buf = Vec::new();
    let mut offs = Vec::new();
    for k in 0..n {
        offs.push(buf.len() as u64);
        let rec = ex(vec![
            ("x", Feature::floats(vec![k as f32, 1.0, 2.0])),
            ("y", Feature::int64s(vec![k as i64])),
        ]);
        framing::frame(&rec, &mut buf);
    }
    std::fs::write(&path, &buf).unwrap();
    (path, offs)
}

fn ys(batches: &[RecordBatch]) -> Vec<i64> {
    batches
        .iter()
        .flat_map(|b| {
            let y = b
                .column_by_name("y")
                .unwrap()
                .as_any()
                .downcast_ref::<Int64Array>()
                .unwrap();
            y.values().to_vec()
        })
        .collect()
}

fn data_err(e: &Error) -> (&hydrofeed_error::Location, &str) {
    match e {
        Error::Data {
            loc,
            detail,
            format,
        } => {
            assert_eq!(*format, "tfrecord");
            (loc, detail.as_str())
        }
        other => panic!("expected a DataError, got {other}"),
    }
}

#[test]
fn bad_data_crc_raises_with_split_record_offset_or_is_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let (path, offs) = write_simple(dir.path(), "crc.tfrecord", 50);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[offs[17] as usize + 20] ^= 0x40; // inside record 17's data
    std::fs::write(&path, &bytes).unwrap();

    let e = read(&path, &ReadOptions::default()).unwrap_err();
    let (loc, detail) = data_err(&e);
    assert!(detail.contains("data CRC"), "{e}");
    assert_eq!(loc.offset, Some(offs[17]));
    assert_eq!(loc.split, Some(0));
    assert_eq!(loc.unit.as_deref(), Some("record 17"));
    assert!(e.to_string().contains("crc.tfrecord"), "{e}");

    let skip = ReadOptions {
        on_error: OnError::Skip,
        ..Default::default()
    };
    let (batches, recs, blocks) = read(&path, &skip).unwrap();
    assert_eq!((recs, blocks), (1, 0));
    let want: Vec<i64> = (0..50).filter(|&k| k != 17).collect();
    assert_eq!(ys(&batches), want);
}

#[test]
fn bad_length_crc_raises_or_resyncs_counting_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let (path, offs) = write_simple(dir.path(), "len.tfrecord", 40);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[offs[9] as usize + 9] ^= 0x01; // record 9's length CRC
    std::fs::write(&path, &bytes).unwrap();

    let e = read(&path, &ReadOptions::default()).unwrap_err();
    let (loc, detail) = data_err(&e);
    assert!(detail.contains("length CRC"), "{e}");
    assert_eq!(loc.offset, Some(offs[9]));

    let skip = ReadOptions {
        on_error: OnError::Skip,
        ..Default::default()
    };
    let st = storage().stat(path.to_str().unwrap()).unwrap();
    let (schema, splits) = plan_file(&storage(), &st, &skip, 0).unwrap();
    assert_eq!(
        splits.iter().map(|s| s.rows).sum::<u64>(),
        39,
        "index counts valid records"
    );
    let mut r = TfrecordReader::open(&storage(), &splits[0], &schema, &skip).unwrap();
    let batches: Vec<RecordBatch> = (&mut r).map(|b| b.unwrap()).collect();
    assert_eq!(r.skipped().blocks, 1);
    assert_eq!(r.skipped_bytes(), offs[10] - offs[9]);
    let want: Vec<i64> = (0..40).filter(|&k| k != 9).collect();
    assert_eq!(ys(&batches), want);
}

#[test]
fn truncated_file_names_the_offset() {
    let dir = tempfile::tempdir().unwrap();
    let (path, offs) = write_simple(dir.path(), "cut.tfrecord", 10);
    let bytes = std::fs::read(&path).unwrap();
    for cut in [offs[9] as usize + 5, offs[9] as usize + 20, bytes.len() - 1] {
        std::fs::write(&path, &bytes[..cut]).unwrap();
        let e = read(&path, &ReadOptions::default()).unwrap_err();
        let (loc, detail) = data_err(&e);
        assert!(detail.contains("truncated"), "{e}");
        assert_eq!(loc.offset, Some(offs[9]), "{e}");
        let skip = ReadOptions {
            on_error: OnError::Skip,
            ..Default::default()
        };
        let (batches, _, blocks) = read(&path, &skip).unwrap();
        assert_eq!(ys(&batches), (0..9).collect::<Vec<_>>());
        assert_eq!(blocks, 1);
    }
}

#[test]
fn truncated_or_corrupt_compressed_stream_is_a_data_error() {
    let src = std::fs::read(fixtures().join("varied.tfrecord.gz")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cut = dir.path().join("cut.tfrecord.gz");
    std::fs::write(&cut, &src[..src.len() / 2]).unwrap();
    let e = read(&cut, &ReadOptions::default()).unwrap_err();
    assert!(matches!(e, Error::Data { .. }), "{e}");
    assert!(e.to_string().contains("decompressed offset"), "{e}");

    let mut bad = src.clone();
    let mid = bad.len() / 2;
    for b in &mut bad[mid..mid + 64] {
        *b = !*b;
    }
    let corrupt = dir.path().join("corrupt.tfrecord.gz");
    std::fs::write(&corrupt, &bad).unwrap();
    let e = read(&corrupt, &ReadOptions::default()).unwrap_err();
    assert!(matches!(e, Error::Data { .. }), "{e}");
}

#[test]
fn wrong_compression_and_not_a_tfrecord() {
    let dir = tempfile::tempdir().unwrap();
    // A ".gz" name over plain records: content wins.
    let (plain, _) = write_simple(dir.path(), "plain.tfrecord", 5);
    let named_gz = dir.path().join("plain.tfrecord.gz");
    std::fs::copy(&plain, &named_gz).unwrap();
    let (batches, _, _) = read(&named_gz, &ReadOptions::default()).unwrap();
    assert_eq!(ys(&batches), (0..5).collect::<Vec<_>>());

    // A ".gz" name over garbage, and a text file.
    let garbage = dir.path().join("garbage.tfrecord.gz");
    std::fs::write(&garbage, b"this is not gzip at all, nor a tfrecord").unwrap();
    let e = read(&garbage, &ReadOptions::default()).unwrap_err();
    assert!(matches!(e, Error::Data { .. }), "{e}");
    let text = dir.path().join("notes.tfrecord");
    std::fs::write(&text, "hello world, this is a text file\n".repeat(20)).unwrap();
    let e = read(&text, &ReadOptions::default()).unwrap_err();
    let (loc, detail) = data_err(&e);
    assert!(detail.contains("no valid TFRecord record"), "{e}");
    assert_eq!(loc.offset, Some(0));
    // With a schema given, the corrupt header is reported by the reader, at offset 0.
    let schema = Arc::new(Schema::new(vec![Field::new("y", DataType::Int64, true)]));
    let with = ReadOptions {
        schema: Some(schema),
        ..Default::default()
    };
    let e = read(&text, &with).unwrap_err();
    let (loc, detail) = data_err(&e);
    assert!(detail.contains("length CRC"), "{e}");
    assert_eq!((loc.offset, loc.split), (Some(0), Some(0)));
}

#[test]
fn empty_file_is_an_error_without_a_schema_and_empty_with_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("empty.tfrecord");
    std::fs::write(&path, b"").unwrap();
    let e = read(&path, &ReadOptions::default()).unwrap_err();
    let (loc, detail) = data_err(&e);
    assert!(detail.contains("no records in a 0-byte file"), "{e}");
    assert_eq!(loc.offset, Some(0));
    let schema = Arc::new(Schema::new(vec![Field::new("y", DataType::Int64, true)]));
    let opts = ReadOptions {
        schema: Some(schema),
        ..Default::default()
    };
    let (batches, _, _) = read(&path, &opts).unwrap();
    assert!(batches.is_empty());
}

#[test]
fn fixed_length_from_sample_then_other_length_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ragged.tfrecord");
    let mut w = RecordWriter::new(std::fs::File::create(&path).unwrap());
    let mut offs = Vec::new();
    let mut at = 0u64;
    for k in 0..150usize {
        let n = if k == 120 { 4 } else { 3 };
        let rec = ex(vec![("v", Feature::int64s(vec![7; n]))]);
        offs.push(at);
        at += (rec.len() + 16) as u64;
        w.write_record(&rec).unwrap();
    }
    drop(w);
    let e = read(&path, &ReadOptions::default()).unwrap_err();
    let (loc, detail) = data_err(&e);
    assert!(detail.contains("fixed_size_list of 3"), "{e}");
    assert_eq!(loc.offset, Some(offs[120]));
    assert_eq!(loc.unit.as_deref(), Some("record 120"));
    // A given schema with list<int64> reads it.
    let schema = Arc::new(Schema::new(vec![Field::new(
        "v",
        DataType::List(Arc::new(Field::new("item", DataType::Int64, false))),
        true,
    )]));
    let opts = ReadOptions {
        schema: Some(schema),
        ..Default::default()
    };
    let (batches, _, _) = read(&path, &opts).unwrap();
    let b = concat(&batches);
    let v = b.column(0).as_any().downcast_ref::<ListArray>().unwrap();
    assert_eq!(v.value_length(120), 4);
    // A bad given schema is a schema error.
    let bad = Arc::new(Schema::new(vec![Field::new("v", DataType::Float64, true)]));
    let e = read(
        &path,
        &ReadOptions {
            schema: Some(bad),
            ..Default::default()
        },
    )
    .unwrap_err();
    assert!(matches!(e, Error::Schema { .. }), "{e}");
}

#[test]
fn kind_mismatch_and_bad_protobuf_are_data_errors_and_skippable() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kinds.tfrecord");
    let mut buf = Vec::new();
    for k in 0..120 {
        let rec = if k == 110 {
            ex(vec![("y", Feature::floats(vec![1.0]))])
        } else if k == 111 {
            vec![0x0a, 0xff, 0xff, 0x03, 0x01] // features field claiming 65535 bytes
        } else {
            ex(vec![("y", Feature::int64s(vec![k]))])
        };
        framing::frame(&rec, &mut buf);
    }
    std::fs::write(&path, &buf).unwrap();
    let e = read(&path, &ReadOptions::default()).unwrap_err();
    let (loc, detail) = data_err(&e);
    assert!(
        detail.contains("float_list") && detail.contains("int64_list"),
        "{e}"
    );
    assert_eq!(loc.unit.as_deref(), Some("record 110"));
    let skip = ReadOptions {
        on_error: OnError::Skip,
        ..Default::default()
    };
    let (batches, recs, _) = read(&path, &skip).unwrap();
    assert_eq!(recs, 2);
    assert_eq!(ys(&batches).len(), 118);
}

fn records_in(bytes: &[u8], start: u64, end: u64, chunk: usize) -> Vec<(u64, Vec<u8>)> {
    let mut s =
        framing::RecordStream::new(&bytes[start as usize..], start, end, bytes.len() as u64)
            .with_chunk(chunk);
    let mut out = Vec::new();
    if start > 0 {
        s.sync_here().unwrap();
    }
    loop {
        match s.next_record().unwrap() {
            framing::Event::Record { offset, at, len } => {
                out.push((offset, s.buf()[at..at + len].to_vec()))
            }
            framing::Event::End => return out,
            other => panic!("clean file gave {other:?}"),
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn framing_round_trips(payloads in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..300), 0..40),
                           chunk in 1usize..64) {
        let mut f = Vec::new();
        for p in &payloads {
            framing::frame(p, &mut f);
        }
        let got: Vec<Vec<u8>> = records_in(&f, 0, u64::MAX, chunk).into_iter().map(|r| r.1).collect();
        prop_assert_eq!(got, payloads);
    }

    #[test]
    fn any_split_boundaries_give_every_record_once(
        payloads in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..200), 1..40),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..6),
        chunk in 1usize..100,
    ) {
        let mut f = Vec::new();
        for p in &payloads {
            framing::frame(p, &mut f);
        }
        let mut bounds: Vec<u64> = cuts.iter().map(|i| i.index(f.len() + 1) as u64).collect();
        bounds.push(0);
        bounds.push(f.len() as u64);
        bounds.sort_unstable();
        bounds.dedup();
        let mut all = Vec::new();
        for w in bounds.windows(2) {
            all.extend(records_in(&f, w[0], w[1], chunk).into_iter().map(|r| r.1));
        }
        prop_assert_eq!(all, payloads);
    }

    #[test]
    fn corruption_errors_or_skips_never_panics(
        payloads in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..100), 1..20),
        flips in prop::collection::vec((any::<prop::sample::Index>(), 1u8..=255), 1..4),
        cut in any::<prop::sample::Index>(),
        truncate in any::<bool>(),
    ) {
        let mut f = Vec::new();
        for p in &payloads {
            framing::frame(p, &mut f);
        }
        for (i, x) in &flips {
            let k = i.index(f.len());
            f[k] ^= x;
        }
        if truncate {
            f.truncate(cut.index(f.len() + 1));
        }
        let mut s = framing::RecordStream::new(&f[..], 0, u64::MAX, f.len() as u64).with_chunk(7);
        let mut got = Vec::new();
        let mut steps = 0;
        loop {
            steps += 1;
            prop_assert!(steps < 10_000, "no progress");
            match s.next_record().unwrap() {
                framing::Event::Record { at, len, .. } => got.push(s.buf()[at..at + len].to_vec()),
                framing::Event::BadData { .. } => {}
                framing::Event::BadHeader { .. } => { s.resync().unwrap(); }
                framing::Event::Truncated { .. } | framing::Event::End => break,
            }
        }
        // Every record returned is one that was written, in order.
        let mut it = payloads.iter();
        for g in &got {
            prop_assert!(it.any(|p| p == g), "returned a record that was never written");
        }
    }
}

#[test]
fn reader_with_arbitrary_byte_splits_reads_each_record_once() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = write_simple(dir.path(), "splits.tfrecord", 200);
    let len = std::fs::metadata(&path).unwrap().len();
    let st = storage().stat(path.to_str().unwrap()).unwrap();
    let (schema, _) = plan_file(&storage(), &st, &ReadOptions::default(), 0).unwrap();
    for step in [1u64, 13, 100, 997, len] {
        let mut got = Vec::new();
        let mut start = 0;
        let mut id = 0;
        while start < len {
            let end = (start + step).min(len);
            let split = Split {
                id,
                path: path.to_str().unwrap().into(),
                format: Format::Tfrecord,
                unit: SplitUnit::Bytes { start, end },
                rows: 0,
                bytes: end - start,
                partition: vec![],
                columns: None,
                table: None,
                units: vec![],
                filter: None,
            };
            let r = tfrecord::open(&storage(), &split, &schema, &ReadOptions::default()).unwrap();
            let batches: Vec<RecordBatch> = r.map(|b| b.unwrap()).collect();
            got.extend(ys(&batches));
            start = end;
            id += 1;
        }
        assert_eq!(got, (0..200).collect::<Vec<_>>(), "step {step}");
    }
}
