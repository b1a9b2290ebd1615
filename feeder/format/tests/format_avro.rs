//! Avro reader against object container files written by fastavro: every codec, many blocks,
//! nested records, arrays, maps, enums, fixed, decimals, timestamps, nullable unions, and
//! schema evolution through a reader schema; values compared with fastavro's own reading.
//!
//! fastavro needs `cramjam`/`backports.zstd` (not installed) for snappy and zstandard, so
//! those two files are written by fastavro without compression and their blocks recompressed
//! with pyarrow's snappy and zstd codecs (the Avro spec's framing: raw snappy + big-endian
//! CRC-32 of the uncompressed data; a zstd frame), then checked against the uncompressed file.

mod common;

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, OnceLock};

use arrow_schema::Schema;
use common::*;
use hydrofeed_format::split::SplitUnit;
use hydrofeed_format::Error;
use hydrofeed_format::{self as format, ReadOptions};

const WRITER: &str = r#"
import sys, os, io, json, datetime, decimal, random, zlib, struct
import fastavro
import pyarrow as pa
out = sys.argv[1]
rng = random.Random(3)
schema = {
    "type": "record", "name": "Row", "namespace": "t",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "small", "type": "int"},
        {"name": "ratio", "type": "float"},
        {"name": "score", "type": "double"},
        {"name": "ok", "type": "boolean"},
        {"name": "name", "type": "string"},
        {"name": "blob", "type": "bytes"},
        {"name": "maybe", "type": ["null", "string"]},
        {"name": "color", "type": {"type": "enum", "name": "Color", "symbols": ["RED", "GREEN", "BLUE"]}},
        {"name": "nums", "type": {"type": "array", "items": "long"}},
        {"name": "attrs", "type": {"type": "map", "values": "long"}},
        {"name": "pos", "type": {"type": "record", "name": "Pos", "fields": [
            {"name": "x", "type": "double"}, {"name": "y", "type": ["null", "double"]}]}},
        {"name": "tag4", "type": {"type": "fixed", "name": "Tag4", "size": 4}},
        {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 12, "scale": 2}},
        {"name": "at", "type": {"type": "long", "logicalType": "timestamp-micros"}},
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
    ],
}
rows = []
for i in range(3000):
    rows.append({
        "id": i, "small": (i * 7919) % 100000 - 50000, "ratio": i / 4.0, "score": rng.random() * 1e3,
        "ok": i % 3 == 0, "name": "name-%d-%s" % (i, "z" * (i % 17)),
        "blob": bytes(rng.randint(0, 255) for _ in range(i % 6)),
        "maybe": None if i % 4 == 0 else "m%d" % i,
        "color": ["RED", "GREEN", "BLUE"][i % 3],
        "nums": [i + k for k in range(i % 4)],
        "attrs": {"k%d" % k: i * k for k in range(i % 3)},
        "pos": {"x": i * 0.5, "y": None if i % 5 == 0 else -i * 0.5},
        "tag4": bytes([i % 256, 0, 1, 2]),
        "price": decimal.Decimal(i * 137 - 100000) / 100,
        "at": datetime.datetime(2023, 1, 1, tzinfo=datetime.timezone.utc) + datetime.timedelta(microseconds=i * 1234567),
        "day": datetime.date(2001, 1, 1) + datetime.timedelta(days=i),
    })
for c in ["null", "deflate", "bzip2", "xz"]:
    with open(os.path.join(out, "codec_%s.avro" % c), "wb") as f:
        fastavro.writer(f, schema, rows, codec=c, sync_interval=4000)

def long_(b, i):
    v, s = 0, 0
    while True:
        x = b[i]; i += 1
        v |= (x & 0x7f) << s; s += 7
        if not x & 0x80:
            return (v >> 1) ^ -(v & 1), i

def enc_long(n):
    n = (n << 1) ^ (n >> 63)
    o = bytearray()
    while True:
        if n & ~0x7f:
            o.append((n & 0x7f) | 0x80); n >>= 7
        else:
            o.append(n); return bytes(o)

def recompress(src, dst, codec):
    b = open(src, "rb").read()
    r = fastavro.reader(io.BytesIO(b))
    # The header ends with the file's sync marker; blocks follow.
    sync = r._header["sync"]
    hend = b.index(sync) + 16
    i, blocks = hend, []
    while i < len(b):
        cnt, i = long_(b, i)
        size, i = long_(b, i)
        data = b[i:i + size]; i += size
        assert b[i:i + 16] == sync; i += 16
        if codec == "snappy":
            z = pa.compress(data, codec="snappy", asbytes=True) + struct.pack(">I", zlib.crc32(data) & 0xffffffff)
        else:
            z = pa.compress(data, codec="zstd", asbytes=True)
        blocks.append(enc_long(cnt) + enc_long(len(z)) + z + sync)
    meta = {"avro.schema": json.dumps(schema), "avro.codec": codec}
    h = bytearray(b"Obj\x01") + enc_long(len(meta))
    for k, v in meta.items():
        kb, vb = k.encode(), v.encode()
        h += enc_long(len(kb)) + kb + enc_long(len(vb)) + vb
    h += enc_long(0) + sync
    open(dst, "wb").write(bytes(h) + b"".join(blocks))
recompress(os.path.join(out, "codec_null.avro"), os.path.join(out, "codec_snappy.avro"), "snappy")
recompress(os.path.join(out, "codec_null.avro"), os.path.join(out, "codec_zstandard.avro"), "zstandard")

# Schema evolution: v1 written, read with v2.
v1 = {"type": "record", "name": "Ev", "fields": [
    {"name": "id", "type": "int"}, {"name": "name", "type": "string"}, {"name": "w", "type": "float"}]}
with open(os.path.join(out, "evolve_v1.avro"), "wb") as f:
    fastavro.writer(f, v1, [{"id": i, "name": "e%d" % i, "w": i * 0.5} for i in range(500)], codec="deflate", sync_interval=1000)
v2 = {"type": "record", "name": "Ev", "fields": [
    {"name": "id", "type": "long"}, {"name": "w", "type": "double"},
    {"name": "score", "type": "double", "default": 1.5},
    {"name": "label", "type": ["null", "string"], "default": None},
    {"name": "kind", "type": "string", "default": "unknown"}]}
open(os.path.join(out, "evolve_v2.json"), "w").write(json.dumps(v2))
"#;

fn fixtures() -> &'static Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| write_fixtures(WRITER)).path()
}

fn f(name: &str) -> String {
    fixtures().join(name).to_str().unwrap().to_string()
}

#[test]
fn every_codec_matches_fastavro() {
    let mut checks = Vec::new();
    for c in ["null", "deflate", "bzip2", "xz", "snappy", "zstandard"] {
        let name = format!("codec_{c}.avro");
        let batch = read_one(&f(&name), &small(8 << 10));
        assert_eq!(batch.num_rows(), 3000, "{name}");
        // fastavro here cannot read snappy / zstandard: compare with the same rows uncompressed.
        let src = if matches!(c, "snappy" | "zstandard") {
            f("codec_null.avro")
        } else {
            f(&name)
        };
        checks.push(Check {
            kind: "avro",
            src,
            batch,
            columns: None,
            reader_schema: None,
        });
    }
    check_with_python(checks);
}

#[test]
fn byte_range_splits_cut_at_blocks_and_every_row_is_read_once() {
    let st = storage();
    let plan = format::plan(&st, &f("codec_deflate.avro"), &small(8 << 10)).unwrap();
    assert!(plan.splits.len() > 3, "{} splits", plan.splits.len());
    assert_eq!(plan.total_rows(), 3000);
    let len = std::fs::metadata(f("codec_deflate.avro")).unwrap().len();
    let mut at = 0;
    for s in &plan.splits {
        let SplitUnit::Bytes { start, end } = s.unit else {
            panic!("{:?}", s.unit)
        };
        assert_eq!(start, at, "splits are contiguous");
        at = end;
    }
    assert_eq!(at, len);
    let mut seen = Vec::new();
    for s in plan.splits.iter().rev() {
        let mut rows = 0;
        for b in format::open_split(&st, &plan, s, &small(8 << 10)).unwrap() {
            let b = b.unwrap();
            rows += b.num_rows() as u64;
            let c = b.column_by_name("id").unwrap();
            seen.extend(
                c.as_any()
                    .downcast_ref::<arrow_array::Int64Array>()
                    .unwrap()
                    .values()
                    .iter()
                    .copied(),
            );
        }
        assert_eq!(rows, s.rows, "split {} reads the rows it planned", s.id);
    }
    seen.sort_unstable();
    assert_eq!(seen, (0..3000).collect::<Vec<i64>>());
}

#[test]
fn arbitrary_byte_ranges_resync_on_the_sync_marker() {
    // Splits at any byte boundaries still give every row once (blocks that start in a range).
    let st = storage();
    let path = f("codec_null.avro");
    let len = std::fs::metadata(&path).unwrap().len();
    let plan = format::plan(&st, &path, &ReadOptions::default()).unwrap();
    assert_eq!(plan.splits.len(), 1);
    for parts in [2u64, 3, 7, 29] {
        let mut seen = Vec::new();
        for k in 0..parts {
            let mut s = plan.splits[0].clone();
            s.unit = SplitUnit::Bytes {
                start: len * k / parts,
                end: len * (k + 1) / parts,
            };
            for b in format::open_split(&st, &plan, &s, &ReadOptions::default()).unwrap() {
                let b = b.unwrap();
                let c = b.column_by_name("id").unwrap();
                seen.extend(
                    c.as_any()
                        .downcast_ref::<arrow_array::Int64Array>()
                        .unwrap()
                        .values()
                        .iter()
                        .copied(),
                );
            }
        }
        seen.sort_unstable();
        assert_eq!(seen, (0..3000).collect::<Vec<i64>>(), "{parts} parts");
    }
}

#[test]
fn projection_in_the_given_order() {
    let cols = vec![
        "pos".to_string(),
        "name".to_string(),
        "attrs".to_string(),
        "id".to_string(),
    ];
    let opts = ReadOptions {
        columns: Some(cols.clone()),
        ..small(8 << 10)
    };
    let batch = read_one(&f("codec_xz.avro"), &opts);
    let names: Vec<String> = batch
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    assert_eq!(names, cols);
    check_with_python(vec![Check {
        kind: "avro",
        src: f("codec_xz.avro"),
        batch,
        columns: Some(cols),
        reader_schema: None,
    }]);
    let bad = ReadOptions {
        columns: Some(vec!["nope".into()]),
        ..small(8 << 10)
    };
    assert!(matches!(
        read_all(&f("codec_xz.avro"), &bad).unwrap_err(),
        Error::Schema { .. }
    ));
}

#[test]
fn reader_schema_evolution_fills_defaults_and_promotes() {
    let v2 = std::fs::read_to_string(f("evolve_v2.json")).unwrap();
    let schema = Arc::new(Schema::new_with_metadata(
        Vec::<arrow_schema::Field>::new(),
        HashMap::from([("avro.schema".to_string(), v2.clone())]),
    ));
    let opts = ReadOptions {
        schema: Some(schema),
        ..small(1 << 10)
    };
    let batch = read_one(&f("evolve_v1.avro"), &opts);
    assert_eq!(batch.num_rows(), 500);
    let names: Vec<String> = batch
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    assert_eq!(names, ["id", "w", "score", "label", "kind"]);
    check_with_python(vec![Check {
        kind: "avro",
        src: f("evolve_v1.avro"),
        batch,
        columns: None,
        reader_schema: Some(v2.clone()),
    }]);
    // With a projection on top of the reader schema.
    let schema = Arc::new(Schema::new_with_metadata(
        Vec::<arrow_schema::Field>::new(),
        HashMap::from([("avro.schema".to_string(), v2.clone())]),
    ));
    let cols = vec!["kind".to_string(), "id".to_string()];
    let opts = ReadOptions {
        schema: Some(schema),
        columns: Some(cols.clone()),
        ..small(1 << 10)
    };
    let batch = read_one(&f("evolve_v1.avro"), &opts);
    check_with_python(vec![Check {
        kind: "avro",
        src: f("evolve_v1.avro"),
        batch,
        columns: Some(cols),
        reader_schema: Some(v2),
    }]);
    // A reader schema the file cannot be read with (a new field without a default).
    let bad = r#"{"type":"record","name":"Ev","fields":[{"name":"id","type":"long"},{"name":"must","type":"string"}]}"#;
    let schema = Arc::new(Schema::new_with_metadata(
        Vec::<arrow_schema::Field>::new(),
        HashMap::from([("avro.schema".to_string(), bad.to_string())]),
    ));
    let e = read_all(
        &f("evolve_v1.avro"),
        &ReadOptions {
            schema: Some(schema),
            ..small(1 << 10)
        },
    )
    .unwrap_err();
    assert!(matches!(e, Error::Schema { .. }), "{e}");
    assert!(e.to_string().contains("evolve_v1.avro"), "{e}");
}
