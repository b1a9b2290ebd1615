//! `hydrofeed gen` output read back: every format by independent readers (pyarrow, fastavro,
//! TensorFlow's tf.data) and TFRecord by ours; and TensorFlow-written MNIST-shaped TFRecord
//! files (plain, GZIP, ZLIB) read by ours. Values are compared exactly, and `id` proves that
//! every row arrives once.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use arrow_array::{Array, FixedSizeListArray, Float32Array, Int64Array, RecordBatch};
use hydrofeed_format::gen::{mnist_row, verify_batch, write_dataset, GenOptions, PIXELS};
use hydrofeed_format::split::Format;
use hydrofeed_format::tfrecord::{read_file, Compression};
use hydrofeed_format::ReadOptions;
use hydrofeed_storage::{local::LocalStorage, Storage};

fn python() -> PathBuf {
    if let Ok(p) = std::env::var("HYDROFEED_PYTHON") {
        return p.into();
    }
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.venv/bin/python")
}

/// `read FORMAT COMPRESSION OUT FILE...`: reads with pyarrow / fastavro / tf.data and dumps
/// `ids.bin`, `labels.bin` (int64) and `images.bin` (float32, 784 a row) into OUT.
/// `tfwrite OUT`: writes MNIST-shaped TFRecords with tf.io.TFRecordWriter (none, GZIP, ZLIB)
/// from numpy random data, and the same dumps of what it wrote.
const PY: &str = r#"
import os, sys
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import numpy as np
mode = sys.argv[1]
def dump(out, ids, labels, images):
    np.asarray(ids, dtype=np.int64).tofile(os.path.join(out, "ids.bin"))
    np.asarray(labels, dtype=np.int64).tofile(os.path.join(out, "labels.bin"))
    np.asarray(images, dtype=np.float32).reshape(-1, 784).tofile(os.path.join(out, "images.bin"))
if mode == "read":
    fmt, comp, out, files = sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]
    ids, labels, images = [], [], []
    if fmt == "parquet":
        import pyarrow.parquet as pq
        for f in files:
            t = pq.read_table(f)
            ids.append(t["id"].to_numpy()); labels.append(t["label"].to_numpy())
            images.append(t["image"].combine_chunks().flatten().to_numpy().reshape(-1, 784))
    elif fmt == "orc":
        import pyarrow.orc as orc
        for f in files:
            t = orc.read_table(f)
            ids.append(t["id"].to_numpy()); labels.append(t["label"].to_numpy())
            assert str(t.schema.field("image").type) == "list<item: float>", t.schema
            images.append(t["image"].combine_chunks().flatten().to_numpy().reshape(-1, 784))
    elif fmt == "avro":
        import fastavro
        for f in files:
            with open(f, "rb") as fh:
                recs = list(fastavro.reader(fh))
            ids.append(np.array([r["id"] for r in recs], dtype=np.int64))
            labels.append(np.array([r["label"] for r in recs], dtype=np.int64))
            images.append(np.array([r["image"] for r in recs], dtype=np.float32).reshape(-1, 784))
    else:
        import tensorflow as tf
        spec = {"image": tf.io.FixedLenFeature([784], tf.float32),
                "label": tf.io.FixedLenFeature([], tf.int64),
                "id": tf.io.FixedLenFeature([], tf.int64)}
        ds = tf.data.TFRecordDataset(files, compression_type=comp).batch(256)
        for b in ds:
            p = tf.io.parse_example(b, spec)
            ids.append(p["id"].numpy()); labels.append(p["label"].numpy()); images.append(p["image"].numpy())
    dump(out, np.concatenate(ids), np.concatenate(labels), np.concatenate(images))
else:
    import tensorflow as tf
    out = sys.argv[2]
    rng = np.random.default_rng(3)
    n = 700
    images = rng.random((n, 784), dtype=np.float32)
    images[images < 0.7] = 0.0
    labels = rng.integers(0, 10, n)
    ids = np.arange(n) * 3 + 11
    for name, comp in [("tf.tfrecord", None), ("tf.tfrecord.gz", "GZIP"), ("tf.zlib", "ZLIB")]:
        with tf.io.TFRecordWriter(os.path.join(out, name), options=comp) as w:
            for i in range(n):
                f = {"image": tf.train.Feature(float_list=tf.train.FloatList(value=images[i])),
                     "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[labels[i]])),
                     "id": tf.train.Feature(int64_list=tf.train.Int64List(value=[ids[i]]))}
                w.write(tf.train.Example(features=tf.train.Features(feature=f)).SerializeToString())
    dump(out, ids, labels, images)
"#;

fn run_py(args: &[&str]) {
    let st = Command::new(python())
        .arg("-c")
        .arg(PY)
        .args(args)
        .status()
        .unwrap_or_else(|e| panic!("cannot run {:?} (set HYDROFEED_PYTHON): {e}", python()));
    assert!(st.success(), "python {args:?} failed: {st}");
}

fn load_i64(p: &Path) -> Vec<i64> {
    std::fs::read(p)
        .unwrap()
        .chunks_exact(8)
        .map(|c| i64::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

fn load_f32(p: &Path) -> Vec<f32> {
    std::fs::read(p)
        .unwrap()
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

/// Checks the dumps of an independent reader against what `(seed, id)` generates; all ids
/// `0..rows` exactly once.
fn check_dumps(dir: &Path, seed: u64, rows: u64) {
    let ids = load_i64(&dir.join("ids.bin"));
    let labels = load_i64(&dir.join("labels.bin"));
    let images = load_f32(&dir.join("images.bin"));
    let mut sorted = ids.clone();
    sorted.sort_unstable();
    assert_eq!(
        sorted,
        (0..rows as i64).collect::<Vec<_>>(),
        "every id once"
    );
    let mut row = Vec::new();
    for (k, &id) in ids.iter().enumerate() {
        let label = mnist_row(seed, id as u64, &mut row);
        assert_eq!(labels[k], label, "id {id}");
        assert_eq!(&images[k * PIXELS..(k + 1) * PIXELS], &row[..], "id {id}");
    }
}

fn gen(
    dir: &Path,
    format: Format,
    compression: Compression,
    rows: u64,
    files: usize,
) -> Vec<PathBuf> {
    let opts = GenOptions {
        format,
        rows,
        files,
        seed: 42,
        compression,
    };
    write_dataset(dir, &opts).unwrap()
}

fn strs(files: &[PathBuf]) -> Vec<&str> {
    files.iter().map(|p| p.to_str().unwrap()).collect()
}

#[test]
fn gen_is_deterministic_given_seed() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    for format in [Format::Tfrecord, Format::Parquet] {
        let fa = gen(a.path(), format, Compression::None, 300, 2);
        let fb = gen(b.path(), format, Compression::None, 300, 2);
        for (x, y) in fa.iter().zip(&fb) {
            assert_eq!(
                std::fs::read(x).unwrap(),
                std::fs::read(y).unwrap(),
                "{x:?}"
            );
        }
    }
}

#[test]
fn generated_parquet_orc_avro_read_by_pyarrow_and_fastavro() {
    for format in [Format::Parquet, Format::Orc, Format::Avro] {
        let dir = tempfile::tempdir().unwrap();
        let files = gen(dir.path(), format, Compression::None, 5000, 3);
        let name = format!("{format:?}").to_lowercase();
        let mut args = vec!["read", name.as_str(), "", dir.path().to_str().unwrap()];
        args.extend(strs(&files));
        run_py(&args);
        check_dumps(dir.path(), 42, 5000);
    }
}

#[test]
fn generated_tfrecord_read_by_ours_and_by_tf_data() {
    for (c, tfname) in [
        (Compression::None, ""),
        (Compression::Gzip, "GZIP"),
        (Compression::Zlib, "ZLIB"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let files = gen(dir.path(), Format::Tfrecord, c, 3000, 2);
        // Ours, with small splits so that plain files split several times.
        let storage: Arc<dyn Storage> = Arc::new(LocalStorage);
        let opts = ReadOptions {
            split_bytes: 100_000,
            batch_rows: 500,
            ..Default::default()
        };
        let mut ids = Vec::new();
        for f in &files {
            let (schema, batches, skipped) =
                read_file(&storage, f.to_str().unwrap(), &opts).unwrap();
            assert_eq!(skipped.records, 0);
            assert!(matches!(
                schema.field_with_name("image").unwrap().data_type(),
                arrow_schema::DataType::FixedSizeList(_, 784)
            ));
            assert_eq!(
                schema.field_with_name("label").unwrap().data_type(),
                &arrow_schema::DataType::Int64
            );
            for b in &batches {
                ids.extend(verify_batch(b, 42).unwrap());
            }
        }
        assert_eq!(ids, (0..3000).collect::<Vec<_>>(), "{c:?}");
        // TensorFlow's.
        let mut args = vec!["read", "tfrecord", tfname, dir.path().to_str().unwrap()];
        args.extend(strs(&files));
        run_py(&args);
        check_dumps(dir.path(), 42, 3000);
    }
}

#[test]
fn tf_written_mnist_tfrecords_read_by_ours() {
    let dir = tempfile::tempdir().unwrap();
    run_py(&["tfwrite", dir.path().to_str().unwrap()]);
    let ids = load_i64(&dir.path().join("ids.bin"));
    let labels = load_i64(&dir.path().join("labels.bin"));
    let images = load_f32(&dir.path().join("images.bin"));
    let storage: Arc<dyn Storage> = Arc::new(LocalStorage);
    for name in ["tf.tfrecord", "tf.tfrecord.gz", "tf.zlib"] {
        let path = dir.path().join(name);
        let opts = ReadOptions {
            split_bytes: 50_000,
            ..Default::default()
        };
        let (_, batches, _) = read_file(&storage, path.to_str().unwrap(), &opts).unwrap();
        let b: RecordBatch =
            arrow_select::concat::concat_batches(&batches[0].schema(), &batches).unwrap();
        let col = |n: &str| b.column_by_name(n).unwrap().clone();
        let got_ids = col("id")
            .as_any()
            .downcast_ref::<Int64Array>()
            .unwrap()
            .values()
            .to_vec();
        let got_labels = col("label")
            .as_any()
            .downcast_ref::<Int64Array>()
            .unwrap()
            .values()
            .to_vec();
        let img = col("image");
        let img = img.as_any().downcast_ref::<FixedSizeListArray>().unwrap();
        assert_eq!(img.null_count(), 0);
        let vals = img
            .values()
            .as_any()
            .downcast_ref::<Float32Array>()
            .unwrap()
            .values()
            .to_vec();
        assert_eq!(got_ids, ids, "{name}");
        assert_eq!(got_labels, labels, "{name}");
        assert_eq!(vals, images, "{name}");
    }
}
