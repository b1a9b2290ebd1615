//! Input listing and planning: Hive/Spark directory layouts (partition directories, marker
//! files), globs, format from names or options, schema mismatches, empty inputs, and tables
//! written by Spark itself (PySpark, local mode).

#[path = "../../format/tests/common/mod.rs"]
mod common;

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use arrow_array::{Array, Float64Array, Int64Array, RecordBatch, StringArray};
use arrow_schema::DataType;
use common::*;
use hydrofeed_error::Error;
use hydrofeed_format::split::Format;
use hydrofeed_format::ReadOptions;
use hydrofeed_storage::{BlockLocation, FileStatus, RandomAccess, Storage};

/// A pyarrow-written Hive-partitioned table plus the litter Hadoop writers leave beside it.
const WRITER: &str = r#"
import sys, os, json
import pyarrow as pa, pyarrow.parquet as pq, pyarrow.orc as po
out = sys.argv[1]
n = 600
t = pa.table({
    "id": pa.array(range(n), pa.int64()),
    "v": pa.array([i * 0.25 for i in range(n)], pa.float64()),
    "day": pa.array(["2024-01-0%d" % (1 + i % 3) for i in range(n)]),
    "shard": pa.array([i % 2 for i in range(n)], pa.int64()),
})
root = os.path.join(out, "hive")
pq.write_to_dataset(t, root, partition_cols=["day", "shard"], row_group_size=50)
for junk in ["_SUCCESS", "_metadata", "_common_metadata", ".hidden.parquet", "_temporary/0/x.parquet",
             "day=2024-01-01/shard=0/.part-0.parquet.crc"]:
    p = os.path.join(root, junk)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    open(p, "wb").write(b"not data")
# Globs and formats.
os.makedirs(os.path.join(out, "flat"))
for k in range(3):
    pq.write_table(t.slice(k * 200, 200), os.path.join(out, "flat", "a_%d.parquet" % k))
pq.write_table(t.slice(0, 10), os.path.join(out, "flat", "b_0.parquet"))
os.makedirs(os.path.join(out, "noext"))
for k in range(2):
    po.write_table(t.slice(k * 300, 300), os.path.join(out, "noext", "part-%05d" % k))
os.makedirs(os.path.join(out, "mixed"))
pq.write_table(t, os.path.join(out, "mixed", "x.parquet"))
po.write_table(t, os.path.join(out, "mixed", "y.orc"))
os.makedirs(os.path.join(out, "schemas"))
pq.write_table(t, os.path.join(out, "schemas", "part-0.parquet"))
pq.write_table(t.set_column(1, "v", pa.array([str(i) for i in range(n)])), os.path.join(out, "schemas", "part-1.parquet"))
os.makedirs(os.path.join(out, "avro"))
import fastavro
fastavro.writer(open(os.path.join(out, "avro", "x.avro"), "wb"),
                {"type": "record", "name": "R", "fields": [{"name": "id", "type": "long"}, {"name": "v", "type": "double"}]},
                [{"id": i, "v": i * 0.25} for i in range(n)], codec="deflate", sync_interval=500)
os.makedirs(os.path.join(out, "meta"))
for k in range(2):
    pq.write_table(t.slice(k * 300, 300).replace_schema_metadata({"writer": "job-%d" % k}),
                   os.path.join(out, "meta", "part-%d.parquet" % k))
os.makedirs(os.path.join(out, "empty"))
os.makedirs(os.path.join(out, "only_markers"))
open(os.path.join(out, "only_markers", "_SUCCESS"), "wb").close()
"#;

fn fixtures() -> &'static Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| write_fixtures(WRITER)).path()
}

fn f(name: &str) -> String {
    fixtures().join(name).to_str().unwrap().to_string()
}

fn col<'a, T: 'static>(b: &'a RecordBatch, name: &str) -> &'a T {
    b.column_by_name(name)
        .unwrap_or_else(|| panic!("no column {name}"))
        .as_any()
        .downcast_ref::<T>()
        .unwrap_or_else(|| {
            panic!(
                "column {name} has type {}",
                b.column_by_name(name).unwrap().data_type()
            )
        })
}

#[test]
fn hive_directory_with_partition_columns_and_marker_files() {
    let (plan, batches, _) = read_all(&f("hive"), &small(1)).unwrap();
    assert_eq!(plan.format, Format::Parquet);
    let names: Vec<&str> = plan
        .schema
        .fields()
        .iter()
        .map(|f| f.name().as_str())
        .collect();
    assert_eq!(names, ["id", "v", "day", "shard"]);
    assert_eq!(
        plan.schema.field_with_name("day").unwrap().data_type(),
        &DataType::Utf8
    );
    assert_eq!(
        plan.schema.field_with_name("shard").unwrap().data_type(),
        &DataType::Int64
    );
    assert!(plan
        .splits
        .iter()
        .all(|s| !s.path.contains("_temporary") && s.path.ends_with(".parquet")));
    assert!(plan.splits.iter().all(|s| s.partition.len() == 2));
    assert_eq!(plan.total_rows(), 600);
    let b = concat(&plan, &batches);
    let (id, v) = (col::<Int64Array>(&b, "id"), col::<Float64Array>(&b, "v"));
    let (day, shard) = (
        col::<StringArray>(&b, "day"),
        col::<Int64Array>(&b, "shard"),
    );
    let mut seen = vec![false; 600];
    for r in 0..b.num_rows() {
        let i = id.value(r);
        assert!(!seen[i as usize], "row {i} read twice");
        seen[i as usize] = true;
        assert_eq!(v.value(r), i as f64 * 0.25);
        assert_eq!(day.value(r), format!("2024-01-0{}", 1 + i % 3));
        assert_eq!(shard.value(r), i % 2);
    }
    assert!(seen.iter().all(|&s| s));
}

#[test]
fn projection_can_name_partition_columns_in_any_order() {
    let opts = ReadOptions {
        columns: Some(vec!["shard".into(), "id".into()]),
        ..small(1)
    };
    let (plan, batches, _) = read_all(&f("hive"), &opts).unwrap();
    let names: Vec<&str> = plan
        .schema
        .fields()
        .iter()
        .map(|f| f.name().as_str())
        .collect();
    assert_eq!(names, ["shard", "id"]);
    let b = concat(&plan, &batches);
    let (id, shard) = (col::<Int64Array>(&b, "id"), col::<Int64Array>(&b, "shard"));
    assert!((0..b.num_rows()).all(|r| shard.value(r) == id.value(r) % 2));
    let opts = ReadOptions {
        columns: Some(vec!["id".into()]),
        ..small(1)
    };
    let (plan, _, _) = read_all(&f("hive"), &opts).unwrap();
    assert_eq!(plan.schema.fields().len(), 1);
}

#[test]
fn globs_match_listed_names() {
    let (plan, _, _) = read_all(&format!("{}/a_*.parquet", f("flat")), &small(1)).unwrap();
    assert_eq!(plan.total_rows(), 600);
    assert_eq!(
        plan.splits
            .iter()
            .map(|s| s.path.as_str())
            .filter(|p| p.contains("b_0"))
            .count(),
        0
    );
    let (plan, _, _) = read_all(&format!("{}/*.parquet", f("flat")), &small(1)).unwrap();
    assert_eq!(plan.total_rows(), 610);
    let (plan, _, _) = read_all(
        &format!("{}/day=2024-01-0[12]/*/*.parquet", f("hive")),
        &small(1),
    )
    .unwrap();
    assert_eq!(plan.total_rows(), 400);
    let e = read_all(&format!("{}/zzz*.parquet", f("flat")), &small(1)).unwrap_err();
    assert!(matches!(e, Error::NotFound { .. }), "{e}");
}

#[test]
fn format_from_options_when_names_tell_none() {
    let e = read_all(&f("noext"), &small(1)).unwrap_err();
    assert!(e.to_string().contains("cannot tell the format"), "{e}");
    let opts = ReadOptions {
        format: Some(Format::Orc),
        ..small(1)
    };
    let (plan, batches, _) = read_all(&f("noext"), &opts).unwrap();
    assert_eq!(plan.format, Format::Orc);
    assert_eq!(batches.iter().map(|b| b.num_rows()).sum::<usize>(), 600);
}

#[test]
fn mixed_formats_and_differing_schemas_are_clear_errors() {
    let e = read_all(&f("mixed"), &small(1)).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
    assert!(e.to_string().contains("y.orc"), "{e}");
    let e = read_all(&f("schemas"), &small(1)).unwrap_err();
    match &e {
        Error::Schema { path, detail } => {
            assert!(path.ends_with("part-1.parquet"), "{e}");
            assert!(
                detail.contains("part-0.parquet") && detail.contains("\"v\""),
                "{e}"
            );
        }
        other => panic!("expected a schema error, got {other}"),
    }
}

#[test]
fn part_files_differing_only_in_schema_metadata_read_as_one_schema() {
    // read_all checks every batch carries exactly the plan's schema.
    let (plan, batches, _) = read_all(&f("meta"), &small(1)).unwrap();
    assert_eq!(
        plan.schema.metadata().get("writer").map(String::as_str),
        Some("job-0")
    );
    assert_eq!(batches.iter().map(|b| b.num_rows()).sum::<usize>(), 600);
}

#[test]
fn empty_inputs_are_clear_errors() {
    for d in ["empty", "only_markers"] {
        let e = read_all(&f(d), &small(1)).unwrap_err();
        assert!(e.to_string().contains("no data files"), "{e}");
    }
    let e = read_all(&f("does-not-exist"), &small(1)).unwrap_err();
    assert!(matches!(e, Error::NotFound { .. }), "{e}");
}

/// Spark's own writers (PySpark, `local[1]`): a partitioned Parquet and ORC table.
/// Avro is not here: Spark's Avro source is the separate `spark-avro` package, which has to be
/// fetched from Maven and cannot be offline; our Avro reader is checked against fastavro.
const SPARK: &str = r#"
import sys, os, json
from pyspark.sql import SparkSession
out = sys.argv[1]
spark = (SparkSession.builder.master("local[1]").appName("hydrofeed-listing-test")
         .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2")
         .config("spark.driver.memory", "512m").getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
rows = [(i, i * 0.5, None if i % 7 == 0 else "n%d" % i, 2020 + i % 3, ["us", "de", "fr"][i % 3 if i % 5 else 0]) for i in range(900)]
df = spark.createDataFrame(rows, "id long, value double, name string, year int, country string").repartition(3)
df.write.partitionBy("year", "country").parquet(os.path.join(out, "spark_parquet"))
df.write.partitionBy("year", "country").orc(os.path.join(out, "spark_orc"))
spark.stop()
json.dump({"rows": [dict(zip(["id", "value", "name", "year", "country"], r)) for r in rows]},
          open(os.path.join(out, "expected.json"), "w"))
"#;

#[test]
fn spark_written_partitioned_parquet_and_orc_tables() {
    let dir = write_fixtures(SPARK);
    let exp: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("expected.json")).unwrap())
            .unwrap();
    let exp = exp["rows"].as_array().unwrap();
    for (table, fmt) in [
        ("spark_parquet", Format::Parquet),
        ("spark_orc", Format::Orc),
    ] {
        let input = dir.path().join(table);
        let (plan, batches, _) = read_all(input.to_str().unwrap(), &small(1)).unwrap();
        assert_eq!(plan.format, fmt);
        let names: Vec<&str> = plan
            .schema
            .fields()
            .iter()
            .map(|f| f.name().as_str())
            .collect();
        assert_eq!(names, ["id", "value", "name", "year", "country"], "{table}");
        assert_eq!(
            plan.schema.field_with_name("year").unwrap().data_type(),
            &DataType::Int64
        );
        let b = concat(&plan, &batches);
        assert_eq!(b.num_rows(), exp.len(), "{table}");
        let id = col::<Int64Array>(&b, "id");
        let value = col::<Float64Array>(&b, "value");
        let name = col::<StringArray>(&b, "name");
        let year = col::<Int64Array>(&b, "year");
        let country = col::<StringArray>(&b, "country");
        let mut seen = vec![false; exp.len()];
        for r in 0..b.num_rows() {
            let i = id.value(r) as usize;
            assert!(!seen[i], "{table}: row {i} twice");
            seen[i] = true;
            let e = &exp[i];
            assert_eq!(value.value(r), e["value"].as_f64().unwrap());
            match e["name"].as_str() {
                Some(s) => assert_eq!(name.value(r), s, "{table} row {i}"),
                None => assert!(name.is_null(r), "{table} row {i}"),
            }
            assert_eq!(year.value(r), e["year"].as_i64().unwrap());
            assert_eq!(country.value(r), e["country"].as_str().unwrap());
        }
    }
}

fn hydrofeed(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_hydrofeed"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn inspect_prints_schema_files_splits_and_rows() {
    let out = hydrofeed(&["inspect", &f("hive"), "--json", "--split-bytes", "1"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["format"], "parquet");
    assert_eq!(v["total_rows"], 600);
    let names: Vec<&str> = v["schema"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["id", "v", "day", "shard"]);
    let files = v["files"].as_array().unwrap();
    assert_eq!(files.len(), 6);
    assert_eq!(
        files
            .iter()
            .map(|f| f["rows"].as_u64().unwrap())
            .sum::<u64>(),
        600
    );
    assert!(files.iter().all(|f| f["partition"]["shard"].is_string()));
    // 100 rows per file in row groups of 50, one row group per split.
    assert_eq!(v["splits"].as_array().unwrap().len(), 12);
    assert_eq!(v["splits"][0]["unit"]["row_groups"]["count"], 1);

    let out = hydrofeed(&[
        "inspect",
        &f("noext"),
        "--format",
        "orc",
        "--columns",
        "v,id",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("format: orc") && text.contains("rows: 600"),
        "{text}"
    );
    assert!(
        text.contains("schema:") && text.contains("stripe 0"),
        "{text}"
    );

    let bad = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data/badinput/pq_text.parquet");
    let out = hydrofeed(&["inspect", bad.to_str().unwrap()]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("pq_text.parquet") && err.contains("wrong magic"),
        "{err}"
    );
}

/// Storage holding copies of files in memory under `mem://` paths, counting reads, and failing
/// every read after `fail_after` of them with a retryable HDFS error.
struct MemStorage {
    files: std::collections::BTreeMap<String, bytes::Bytes>,
    reads: Arc<AtomicU64>,
    fail_after: u64,
}

struct MemFile {
    path: String,
    data: bytes::Bytes,
    reads: Arc<AtomicU64>,
    fail_after: u64,
}

impl RandomAccess for MemFile {
    fn len(&self) -> u64 {
        self.data.len() as u64
    }
    fn read_at(&self, offset: u64, len: usize) -> hydrofeed_error::Result<bytes::Bytes> {
        // SYNC: Relaxed, a counter read after the threads that bump it are joined.
        if self.reads.fetch_add(1, Ordering::Relaxed) >= self.fail_after {
            return Err(Error::Hdfs {
                path: self.path.clone(),
                detail: "datanode went away".into(),
                retryable: true,
            });
        }
        let a = (offset as usize).min(self.data.len());
        let b = a.saturating_add(len).min(self.data.len());
        Ok(self.data.slice(a..b))
    }
    fn path(&self) -> &str {
        &self.path
    }
}

impl Storage for MemStorage {
    fn stat(&self, path: &str) -> hydrofeed_error::Result<FileStatus> {
        if let Some(d) = self.files.get(path) {
            return Ok(FileStatus {
                path: path.into(),
                len: d.len() as u64,
                is_dir: false,
                modified_ms: None,
            });
        }
        let dir = format!("{path}/");
        if self.files.keys().any(|k| k.starts_with(&dir)) {
            return Ok(FileStatus {
                path: path.into(),
                len: 0,
                is_dir: true,
                modified_ms: None,
            });
        }
        Err(Error::NotFound { path: path.into() })
    }
    fn list(&self, dir: &str) -> hydrofeed_error::Result<Vec<FileStatus>> {
        let pre = format!("{dir}/");
        let mut out: Vec<FileStatus> = Vec::new();
        for (k, d) in &self.files {
            if let Some(rest) = k.strip_prefix(&pre) {
                match rest.split_once('/') {
                    None => out.push(FileStatus {
                        path: k.clone(),
                        len: d.len() as u64,
                        is_dir: false,
                        modified_ms: None,
                    }),
                    Some((sub, _)) => {
                        let p = format!("{pre}{sub}");
                        if !out.iter().any(|s| s.path == p) {
                            out.push(FileStatus {
                                path: p,
                                len: 0,
                                is_dir: true,
                                modified_ms: None,
                            });
                        }
                    }
                }
            }
        }
        Ok(out)
    }
    fn open(&self, path: &str) -> hydrofeed_error::Result<Arc<dyn RandomAccess>> {
        let data = self
            .files
            .get(path)
            .cloned()
            .ok_or_else(|| Error::NotFound { path: path.into() })?;
        Ok(Arc::new(MemFile {
            path: path.into(),
            data,
            reads: self.reads.clone(),
            fail_after: self.fail_after,
        }))
    }
    fn block_locations(&self, path: &str) -> hydrofeed_error::Result<Vec<BlockLocation>> {
        let st = self.stat(path)?;
        Ok(vec![BlockLocation {
            offset: 0,
            len: st.len,
            hosts: vec![],
        }])
    }
    fn scheme(&self) -> &'static str {
        "mem"
    }
}

/// Copies a local directory tree into a MemStorage under `mem://t`.
fn mem_copy(local: &str, fail_after: u64) -> MemStorage {
    fn walk(p: &Path, rel: &str, out: &mut std::collections::BTreeMap<String, bytes::Bytes>) {
        for e in std::fs::read_dir(p).unwrap() {
            let e = e.unwrap();
            let name = e.file_name().to_string_lossy().into_owned();
            if e.file_type().unwrap().is_dir() {
                walk(&e.path(), &format!("{rel}/{name}"), out);
            } else {
                out.insert(
                    format!("{rel}/{name}"),
                    std::fs::read(e.path()).unwrap().into(),
                );
            }
        }
    }
    let mut files = std::collections::BTreeMap::new();
    walk(Path::new(local), "mem://t", &mut files);
    MemStorage {
        files,
        reads: Arc::new(AtomicU64::new(0)),
        fail_after,
    }
}

fn read_with(
    st: &Arc<dyn Storage>,
    input: &str,
    opts: &ReadOptions,
) -> hydrofeed_error::Result<u64> {
    let plan = hydrofeed_format::plan(st, input, opts)?;
    let mut rows = 0;
    for s in &plan.splits {
        for b in hydrofeed_format::open_split(st, &plan, s, opts)? {
            rows += b?.num_rows() as u64;
        }
    }
    assert_eq!(rows, plan.total_rows());
    Ok(rows)
}

#[test]
fn readers_use_only_the_storage_trait_and_pass_its_errors_through() {
    for (dir, fmt) in [("hive", None), ("noext", Some(Format::Orc)), ("avro", None)] {
        let mem = mem_copy(&f(dir), u64::MAX);
        let reads = mem.reads.clone();
        let st: Arc<dyn Storage> = Arc::new(mem);
        let opts = ReadOptions {
            format: fmt,
            ..small(1)
        };
        assert_eq!(read_with(&st, "mem://t", &opts).unwrap(), 600, "{dir}");
        let n = reads.load(Ordering::Relaxed);
        assert!(n > 0, "{dir}: read through the storage");
        // A storage failure mid-read comes out as itself, not as a data error.
        for fail_after in [n / 3, n * 2 / 3] {
            let st: Arc<dyn Storage> = Arc::new(mem_copy(&f(dir), fail_after));
            let e = read_with(&st, "mem://t", &opts).unwrap_err();
            assert!(
                matches!(
                    e,
                    Error::Hdfs {
                        retryable: true,
                        ..
                    }
                ),
                "{dir}, fail after {fail_after}: {e}"
            );
        }
    }
}
