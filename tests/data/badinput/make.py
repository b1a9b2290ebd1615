"""Writes the bad-input corpus of the Parquet, ORC and Avro readers (small, committed).

Run from anywhere: `.venv/bin/python tests/data/badinput/make.py`. Each file starts as a
valid file from an independent writer (pyarrow, pyorc, fastavro) and is then damaged in one
way; `manifest.json` records, per file, where the damage is (offsets and units computed from
the writer's own metadata) and how many rows a reader skipping the bad unit must still yield.
feeder/format/tests/bad_input.rs has one test per file, and a test that fails if a file has none.
"""

import io
import json
import os
import zlib

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq
import pyorc

HERE = os.path.dirname(os.path.abspath(__file__))
manifest = {}


def put(name, data, **facts):
    with open(os.path.join(HERE, name), "wb") as f:
        f.write(data)
    manifest[name] = dict(facts, bytes=len(data))


def table(n):
    return pa.table({"id": pa.array(range(n), pa.int64()), "s": pa.array(["v%d" % i for i in range(n)])})


TEXT = b"id,name\n1,this is a CSV file with the wrong name\n2,it has no footer at all\n" * 4

# ---------------------------------------------------------------- Parquet
buf = io.BytesIO()
pq.write_table(table(300), buf, row_group_size=100, compression="snappy", use_dictionary=False)
good = buf.getvalue()
md = pq.ParquetFile(io.BytesIO(good)).metadata
put("pq_truncated.parquet", good[: len(good) * 6 // 10])
put("pq_bad_magic.parquet", good[:-4] + b"PARX")
put("pq_bad_head_magic.parquet", b"XXXX" + good[4:])
put("pq_empty.parquet", b"")
put("pq_text.parquet", TEXT)
rg1 = md.row_group(1).column(0)
page = rg1.data_page_offset
bad = bytearray(good)
bad[page : page + 8] = b"\xff" * 8  # the page header of row group 1, column id
put("pq_corrupt_page.parquet", bytes(bad), row_group=1, offset=min(rg1.data_page_offset, rg1.dictionary_page_offset or rg1.data_page_offset),
    rows=300, rows_after_skip=200)

# ---------------------------------------------------------------- ORC
ORC_ROWS = 8000
buf = io.BytesIO()
with pyorc.Writer(buf, "struct<id:bigint,s:string>", compression=pyorc.CompressionKind.ZLIB,
                  stripe_size=1024, batch_size=64) as w:
    for i in range(ORC_ROWS):
        w.write((i, "v%d-%s" % (i, "x" * (i % 50))))
good = buf.getvalue()
r = pyorc.Reader(io.BytesIO(good))
stripes = [(r.read_stripe(k).bytes_offset, r.read_stripe(k).bytes_length, len(r.read_stripe(k))) for k in range(r.num_of_stripes)]
assert len(stripes) >= 3, stripes
put("orc_truncated.orc", good[: len(good) * 6 // 10])
put("orc_bad_magic.orc", b"XYZ" + good[3:])
put("orc_bad_tail.orc", good[:-1] + bytes([255]))
put("orc_empty.orc", b"")
put("orc_text.orc", TEXT)
off, length, rows = stripes[1]
bad = bytearray(good)
for k in range(off + 3, off + length - 3):
    bad[k] = (bad[k] * 7 + 13) & 0xFF
put("orc_corrupt_stripe.orc", bytes(bad), stripe=1, offset=off, rows=ORC_ROWS, rows_after_skip=ORC_ROWS - rows)

# ---------------------------------------------------------------- Avro
schema = {"type": "record", "name": "R", "fields": [{"name": "id", "type": "long"}, {"name": "s", "type": "string"}]}
recs = [{"id": i, "s": "v%d" % i} for i in range(600)]


def avro(codec):
    b = io.BytesIO()
    fastavro.writer(b, schema, recs, codec=codec, sync_interval=600)
    return b.getvalue()


def long_(b, i):
    v, s = 0, 0
    while True:
        x = b[i]
        i += 1
        v |= (x & 0x7F) << s
        s += 7
        if not x & 0x80:
            return (v >> 1) ^ -(v & 1), i


def blocks(b):
    sync = fastavro.reader(io.BytesIO(b))._header["sync"]
    i, out = b.index(sync) + 16, []
    while i < len(b):
        start = i
        cnt, i = long_(b, i)
        size, i = long_(b, i)
        data_at = i
        i += size + 16
        out.append({"offset": start, "count": cnt, "data": data_at, "size": size, "end": i})
    return out


good = avro("null")
bl = blocks(good)
assert len(bl) >= 5, len(bl)
cut = bl[3]["data"] + bl[3]["size"] // 2
put("avro_truncated.avro", good[:cut], block=3, offset=bl[3]["offset"], rows=600,
    rows_after_skip=sum(x["count"] for x in bl[:3]))
put("avro_bad_magic.avro", b"Obj\x02" + good[4:])
put("avro_bad_header.avro", good[:4] + b"\xff" * 40)
put("avro_empty.avro", b"")
put("avro_text.avro", TEXT)
bad = bytearray(good)
bad[bl[2]["end"] - 5] ^= 0x5A  # the sync marker after block 2
put("avro_bad_sync.avro", bytes(bad), block=2, offset=bl[2]["offset"], rows=600,
    rows_after_skip=600 - bl[2]["count"])
# Block 2's object count lowered by one (its data still holds all its records).
def enc_long(n):
    n = (n << 1) ^ (n >> 63)
    o = bytearray()
    while True:
        if n & ~0x7F:
            o.append((n & 0x7F) | 0x80)
            n >>= 7
        else:
            o.append(n)
            return bytes(o)


b2 = bl[2]
_, after_count = long_(good, b2["offset"])
low = good[: b2["offset"]] + enc_long(b2["count"] - 1) + good[after_count:]
assert len(low) == len(good)
put("avro_count_low.avro", low, block=2, offset=b2["offset"], rows=600, rows_read=599)

good = avro("deflate")
bl = blocks(good)
bad = bytearray(good)
for k in range(bl[1]["data"], bl[1]["data"] + bl[1]["size"]):
    bad[k] = (bad[k] * 5 + 1) & 0xFF
put("avro_corrupt_block.avro", bytes(bad), block=1, offset=bl[1]["offset"], rows=600,
    rows_after_skip=600 - bl[1]["count"])

with open(os.path.join(HERE, "manifest.json"), "w") as f:
    json.dump(manifest, f, indent=1, sort_keys=True)
    f.write("\n")
print("wrote", len(manifest), "files")
