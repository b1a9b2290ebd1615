"""Decode baselines for `hydrofeed bench decode`: the same files our readers decode, read by
pyarrow (Parquet, ORC -> numpy), fastavro (Avro -> dicts) and tf.data (TFRecordDataset +
tf.io.parse_example in batches -> tensors).

Usage: decode.py SPEC.json   where SPEC = {"repeat": N, "threads": "single"|"all",
                                           "files": {"parquet": [...], "orc": [...], ...}}
Prints one JSON object: {format: {"rows": R, "secs": best_of_N_seconds, "bytes": B}}.
"""

import json
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def parquet(files, single):
    import pyarrow.parquet as pq

    rows = 0
    for f in files:
        t = pq.read_table(f, use_threads=not single)
        t["id"].to_numpy()
        t["label"].to_numpy()
        for chunk in t["image"].chunks:
            chunk.flatten().to_numpy(zero_copy_only=False).reshape(-1, 784)
        rows += t.num_rows
    return rows


def orc(files, single):
    import pyarrow.orc as porc

    rows = 0
    for f in files:
        t = porc.read_table(f)
        t["id"].to_numpy()
        t["label"].to_numpy()
        # Our ORC files hold the image as list<float> (ORC has no fixed-size list).
        for chunk in t["image"].chunks:
            chunk.flatten().to_numpy(zero_copy_only=False).reshape(-1, 784)
        rows += t.num_rows
    return rows


def avro(files, single):
    import fastavro

    rows = 0
    for f in files:
        with open(f, "rb") as fh:
            for _ in fastavro.reader(fh):
                rows += 1
    return rows


def tfrecord(files, single):
    import tensorflow as tf

    spec = {
        "image": tf.io.FixedLenFeature([784], tf.float32),
        "label": tf.io.FixedLenFeature([], tf.int64),
        "id": tf.io.FixedLenFeature([], tf.int64),
    }
    ds = tf.data.TFRecordDataset(files, compression_type="")
    if single:
        ds = ds.batch(1024).map(lambda b: tf.io.parse_example(b, spec))
        opts = tf.data.Options()
        opts.threading.private_threadpool_size = 1
        opts.threading.max_intra_op_parallelism = 1
        ds = ds.with_options(opts)
    else:
        ds = ds.batch(1024).map(
            lambda b: tf.io.parse_example(b, spec), num_parallel_calls=tf.data.AUTOTUNE
        )
        ds = ds.prefetch(tf.data.AUTOTUNE)
    rows = 0
    for b in ds:
        rows += int(b["label"].shape[0])
    return rows


def main():
    spec = json.load(open(sys.argv[1]))
    single = spec.get("threads", "single") == "single"
    if single:
        import pyarrow as pa

        pa.set_cpu_count(1)
        pa.set_io_thread_count(1)
        if "tfrecord" in spec["files"]:
            import tensorflow as tf

            tf.config.threading.set_inter_op_parallelism_threads(1)
            tf.config.threading.set_intra_op_parallelism_threads(1)
    out = {}
    for fmt, files in spec["files"].items():
        fn = {"parquet": parquet, "orc": orc, "avro": avro, "tfrecord": tfrecord}[fmt]
        size = sum(os.path.getsize(f) for f in files)
        try:
            fn(files, single)  # warm the page cache and lazy imports
            best, rows = None, 0
            for _ in range(int(spec.get("repeat", 3))):
                t0 = time.perf_counter()
                rows = fn(files, single)
                dt = time.perf_counter() - t0
                best = dt if best is None else min(best, dt)
            out[fmt] = {"rows": rows, "secs": best, "bytes": size}
        except Exception as e:  # report, do not hide: the caller prints it
            out[fmt] = {"error": f"{type(e).__name__}: {e}"}
    json.dump(out, sys.stdout)
    print()


if __name__ == "__main__":
    main()
