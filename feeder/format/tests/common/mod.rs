//! Shared by the reader tests: running the project's Python (pyarrow, fastavro, pyorc,
//! pyspark) to write fixtures and to check what we read against an independent reader.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use arrow_array::RecordBatch;
use hydrofeed_format::Result;
use hydrofeed_format::{self as format, OnError, Plan, ReadOptions, SkipStats};
use hydrofeed_storage::{local::LocalStorage, Storage};

/// The project's Python (`.venv/bin/python`, or `$HYDROFEED_PYTHON`).
pub fn python() -> PathBuf {
    if let Ok(p) = std::env::var("HYDROFEED_PYTHON") {
        return p.into();
    }
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.venv/bin/python")
}

/// Runs a Python script with arguments; panics with its output when it fails.
pub fn run_py(script: &str, args: &[&str]) -> String {
    let out = Command::new(python())
        .arg("-c")
        .arg(script)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {:?} (set HYDROFEED_PYTHON): {e}", python()));
    let so = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "python failed ({}):\n{so}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    so
}

/// Writes fixtures with `script` (given the directory as `sys.argv[1]`) into a fresh temp dir.
pub fn write_fixtures(script: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    run_py(script, &[dir.path().to_str().unwrap()]);
    dir
}

pub fn storage() -> Arc<dyn Storage> {
    Arc::new(LocalStorage)
}

/// Plans `input` and reads every split in order: the plan, the batches and what was skipped.
pub fn read_all(input: &str, opts: &ReadOptions) -> Result<(Plan, Vec<RecordBatch>, SkipStats)> {
    let st = storage();
    let plan = format::plan(&st, input, opts)?;
    let mut out = Vec::new();
    let mut sk = SkipStats::default();
    for s in &plan.splits {
        let mut r = format::open_split(&st, &plan, s, opts)?;
        for b in &mut r {
            let b = b?;
            assert_eq!(
                b.schema(),
                plan.schema,
                "split {} yields the plan's schema",
                s.id
            );
            assert!(b.num_rows() <= opts.batch_rows);
            out.push(b);
        }
        let k = r.skipped();
        sk.records += k.records;
        sk.blocks += k.blocks;
    }
    Ok((plan, out, sk))
}

pub fn concat(plan: &Plan, batches: &[RecordBatch]) -> RecordBatch {
    arrow_select::concat::concat_batches(&plan.schema, batches).unwrap()
}

/// Writes batches as an Arrow IPC file for the Python checker.
pub fn write_ipc(path: &Path, batch: &RecordBatch) {
    let f = std::fs::File::create(path).unwrap();
    let mut w = arrow_ipc::writer::FileWriter::try_new(f, &batch.schema()).unwrap();
    w.write(batch).unwrap();
    w.finish().unwrap();
}

/// Compares what we read (Arrow IPC files) with an independent reader, column by column as
/// Python values. Each check: `{"kind": "parquet"|"orc"|"avro"|"json", "src": FILE,
/// "ipc": OURS, "columns": [..] or null, "reader_schema": avro JSON or null}`; `json` compares
/// with rows in a JSON file (`{"rows": [...]}`), in order.
pub const CHECKER: &str = r#"
import json, sys, decimal, datetime
import pyarrow as pa

def norm(v):
    if isinstance(v, dict):
        return {k: norm(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [norm(x) for x in v]
    if isinstance(v, float) and v != v:
        return "NaN"
    return v

def vals(col):
    if pa.types.is_timestamp(col.type) and col.type.unit == "ns":
        col = col.cast(pa.int64())
    if pa.types.is_map(col.type):
        return [None if v is None else dict(v) for v in col.to_pylist()]
    if pa.types.is_dictionary(col.type):
        col = col.cast(col.type.value_type)
    return col.to_pylist()

TYPES = {}

def avro_rows(src, reader_schema):
    import fastavro
    with open(src, "rb") as f:
        r = fastavro.reader(f, reader_schema=reader_schema) if reader_schema else fastavro.reader(f)
        rows = list(r)
    return rows

def expected(c):
    kind, src, cols = c["kind"], c["src"], c.get("columns")
    if kind == "parquet":
        import pyarrow.parquet as pq
        t = pq.read_table(src, columns=cols)
        TYPES[src] = {n: str(t.schema.field(n).type) for n in t.column_names}
        return {n: vals(t.column(n)) for n in (cols or t.column_names)}
    if kind == "orc":
        import pyarrow.orc as po
        t = po.read_table(src, columns=cols)
        return {n: vals(t.column(n)) for n in (cols or t.column_names)}
    if kind == "avro":
        rs = c.get("reader_schema")
        rows = avro_rows(src, json.loads(rs) if rs else None)
        names = cols or (list(rows[0].keys()) if rows else [])
        return {n: [r[n] for r in rows] for n in names}
    if kind == "json":
        rows = json.load(open(src))["rows"]
        names = cols or list(rows[0].keys())
        return {n: [r[n] for r in rows] for n in names}
    raise SystemExit("unknown kind " + kind)

def ours(c):
    t = pa.ipc.open_file(c["ipc"]).read_all()
    if c["src"] in TYPES:
        for n in t.column_names:
            if str(t.schema.field(n).type) != TYPES[c["src"]].get(n):
                print(c["src"], "column", n, "type", t.schema.field(n).type, "pyarrow:", TYPES[c["src"]].get(n))
                global bad
                bad += 1
    out = {n: vals(t.column(n)) for n in t.column_names}
    return out

bad = 0
for c in json.load(open(sys.argv[1])):
    e, o = expected(c), ours(c)
    if list(e.keys()) != list(o.keys()):
        print(c["src"], "columns differ:", list(e.keys()), list(o.keys())); bad += 1; continue
    for n in e:
        ev, ov = norm(e[n]), norm(o[n])
        if ev != ov:
            bad += 1
            print(c["src"], "column", n, "differs; rows", len(ev), len(ov))
            for i, (a, b) in enumerate(zip(ev, ov)):
                if a != b:
                    print("  first difference at row", i, ":", repr(a)[:200], "vs ours", repr(b)[:200]); break
print("checked", len(json.load(open(sys.argv[1]))), "files,", bad, "differences")
sys.exit(1 if bad else 0)
"#;

/// One comparison for [`check_with_python`].
pub struct Check {
    pub kind: &'static str,
    pub src: String,
    pub batch: RecordBatch,
    pub columns: Option<Vec<String>>,
    pub reader_schema: Option<String>,
}

/// Runs [`CHECKER`] over `checks` in one Python process.
pub fn check_with_python(checks: Vec<Check>) {
    let dir = tempfile::tempdir().unwrap();
    let mut spec = Vec::new();
    for (i, c) in checks.into_iter().enumerate() {
        let ipc = dir.path().join(format!("ours-{i}.arrow"));
        write_ipc(&ipc, &c.batch);
        spec.push(serde_json::json!({
            "kind": c.kind, "src": c.src, "ipc": ipc.to_str().unwrap(),
            "columns": c.columns, "reader_schema": c.reader_schema,
        }));
    }
    let spec_path = dir.path().join("spec.json");
    std::fs::write(&spec_path, serde_json::to_vec(&spec).unwrap()).unwrap();
    let out = run_py(CHECKER, &[spec_path.to_str().unwrap()]);
    assert!(out.contains(" 0 differences"), "{out}");
}

/// Reads a whole input split by split and returns one batch.
pub fn read_one(input: &str, opts: &ReadOptions) -> RecordBatch {
    let (plan, batches, sk) = read_all(input, opts).unwrap_or_else(|e| panic!("{input}: {e}"));
    assert_eq!(sk, SkipStats::default(), "{input}: nothing skipped");
    let b = concat(&plan, &batches);
    assert_eq!(
        b.num_rows() as u64,
        plan.total_rows(),
        "{input}: rows read = rows planned"
    );
    b
}

/// Options with small batches and splits.
pub fn small(split_bytes: u64) -> ReadOptions {
    ReadOptions {
        batch_rows: 100,
        split_bytes,
        on_error: OnError::Raise,
        ..Default::default()
    }
}
