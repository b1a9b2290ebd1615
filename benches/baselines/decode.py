"""Decode baselines for `hydrofeed bench decode`: the same files our readers decode, read by
pyarrow (Parquet, ORC -> numpy), fastavro (Avro -> dicts) and tf.data (TFRecordDataset +
tf.io.parse_example in batches -> tensors -> numpy), every value touched: ids, labels and image
floats summed (the image in float64), as our side sums them.

Usage: decode.py SPEC.json, where SPEC is either
  {"min_secs": S, "threads": "single"|"all_cores", "files": {"parquet": [...], "orc": [...],
   "avro": [...], "tfrecord": [...], "tfrecord_gzip": [...]}}
    -> prints {key: {"secs": [each pass], "sums": {...}}}: passes repeated for at least S
       seconds per key, after one warm-up pass;
  {"write": "orc"|"avro", "codec": C, "from": [parquet files], "to": [files]}
    -> writes each Parquet file as ORC (pyarrow, C = zlib) or Avro (fastavro, C = deflate).
"""

import json
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def sums(n, ids, labels, image):
    return {"rows": int(n), "ids": int(ids), "labels": int(labels), "image": float(image)}


def arrow_table(t):
    import numpy as np

    img = 0.0
    for chunk in t["image"].chunks:
        img += float(np.sum(chunk.flatten().to_numpy(zero_copy_only=False), dtype=np.float64))
    return sums(t.num_rows, np.sum(t["id"].to_numpy()), np.sum(t["label"].to_numpy()), img)


def add(a, b):
    return {k: a[k] + b[k] for k in a} if a else b


def parquet(files, single):
    import pyarrow.parquet as pq

    out = None
    for f in files:
        out = add(out, arrow_table(pq.read_table(f, use_threads=not single)))
    return out


def orc(files, single):
    import pyarrow.orc as porc

    out = None
    for f in files:
        out = add(out, arrow_table(porc.read_table(f)))
    return out


def avro(files, single):
    import fastavro

    n = ids = labels = 0
    img = 0.0
    for f in files:
        with open(f, "rb") as fh:
            for r in fastavro.reader(fh):
                n += 1
                ids += r["id"]
                labels += r["label"]
                img += sum(r["image"])
    return sums(n, ids, labels, img)


def tfrecord(files, single, compression=""):
    import numpy as np
    import tensorflow as tf

    spec = {
        "image": tf.io.FixedLenFeature([784], tf.float32),
        "label": tf.io.FixedLenFeature([], tf.int64),
        "id": tf.io.FixedLenFeature([], tf.int64),
    }
    ds = tf.data.TFRecordDataset(files, compression_type=compression)
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
    n = ids = labels = 0
    img = 0.0
    for b in ds:
        n += int(b["label"].shape[0])
        ids += int(np.sum(b["id"].numpy()))
        labels += int(np.sum(b["label"].numpy()))
        img += float(np.sum(b["image"].numpy(), dtype=np.float64))
    return sums(n, ids, labels, img)


def tfrecord_gzip(files, single):
    return tfrecord(files, single, "GZIP")


def write(spec):
    import pyarrow as pa
    import pyarrow.parquet as pq

    for src, dst in zip(spec["from"], spec["to"]):
        t = pq.read_table(src)
        t = t.set_column(t.schema.get_field_index("image"), "image",
                         t["image"].cast(pa.list_(pa.float32())))
        if spec["write"] == "orc":
            import pyarrow.orc as porc

            porc.write_table(t, dst, compression=spec["codec"])
        else:
            import fastavro

            schema = fastavro.parse_schema({
                "type": "record", "name": "mnist", "fields": [
                    {"name": "id", "type": "long"},
                    {"name": "image", "type": {"type": "array", "items": "float"}},
                    {"name": "label", "type": "long"},
                ]})
            with open(dst, "wb") as out:
                w = fastavro.write.Writer(out, schema, codec=spec["codec"])
                for batch in t.to_batches(max_chunksize=2000):
                    for r in batch.to_pylist():
                        w.write(r)
                w.flush()
    json.dump({"wrote": spec["to"]}, sys.stdout)
    print()


def main():
    spec = json.load(open(sys.argv[1]))
    if "write" in spec:
        return write(spec)
    single = spec.get("threads", "single") == "single"
    if single:
        import pyarrow as pa

        pa.set_cpu_count(1)
        pa.set_io_thread_count(1)
        if any(k.startswith("tfrecord") for k in spec["files"]):
            import tensorflow as tf

            tf.config.threading.set_inter_op_parallelism_threads(1)
            tf.config.threading.set_intra_op_parallelism_threads(1)
    fns = {"parquet": parquet, "orc": orc, "avro": avro, "tfrecord": tfrecord,
           "tfrecord_gzip": tfrecord_gzip}
    out = {}
    for key, files in spec["files"].items():
        fn = fns[key]
        try:
            fn(files, single)  # warm the page cache and lazy imports
            secs, s = [], None
            t_start = time.perf_counter()
            while not secs or time.perf_counter() - t_start < float(spec.get("min_secs", 2.0)):
                t0 = time.perf_counter()
                s = fn(files, single)
                secs.append(time.perf_counter() - t0)
            out[key] = {"secs": secs, "sums": s}
        except Exception as e:  # report, do not hide: the caller prints it
            out[key] = {"error": f"{type(e).__name__}: {e}"}
    json.dump(out, sys.stdout)
    print()


if __name__ == "__main__":
    main()
