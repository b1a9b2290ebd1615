//! `hydrofeed bench decode`: decode throughput of our readers against pyarrow, fastavro and
//! tf.data, measured in one run on the same files, beside this machine's ceilings.
//!
//! The files are compressed as Spark and Hive write them by default: Parquet snappy (`gen`),
//! ORC zlib (pyarrow's writer), Avro deflate (fastavro's), TFRecord plain and gzip (`gen`).
//! Without the Python baselines (`--no-baseline`), ORC and Avro come from `gen` (ORC
//! uncompressed, Avro without a codec), and the JSON says so.
//!
//! Every value is touched on both sides: each reader's batches are summed (ids, labels, and
//! the image floats in f64), and the sums must agree across readers. MB/s counts the decoded
//! bytes of the same rows for every format (`ROW_BYTES` a row). Each measurement repeats
//! passes for at least `--min-secs` (2 s); ours and the baselines alternate, `--rounds`
//! times, and the report gives the best and the median pass. Ceilings, same run: a `memcpy`
//! of the decoded bytes, snappy's decompression of the Parquet pages, DEFLATE's of the gzip
//! TFRecord files (the codec of ORC zlib and Avro deflate too).
//!
//! Ratios are ours / baseline in rows per second.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use anyhow::Context;
use arrow_array::cast::AsArray;
use arrow_array::types::{Float32Type, Int64Type};
use arrow_array::{Array, RecordBatch};
use arrow_schema::DataType;
use rayon::prelude::*;
use serde_json::{json, Map, Value};

use super::ceiling;
use crate::read_args::FormatArg;
use hydrofeed_format::gen::{write_dataset, GenOptions};
use hydrofeed_format::split::{Format, Split};
use hydrofeed_format::tfrecord::Compression;
use hydrofeed_format::{self as format, ReadOptions, SplitReader};
use hydrofeed_storage::{local::LocalStorage, Storage};

/// Decoded bytes of a row: 784 float32 pixels, an int64 id and an int64 label.
const ROW_BYTES: u64 = 784 * 4 + 8 + 8;

/// Arguments of `hydrofeed bench decode`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Rows per format.
    #[arg(long, default_value_t = 200_000)]
    pub rows: u64,
    /// Files per format.
    #[arg(long, default_value_t = 4)]
    pub files: usize,
    /// Formats to measure (TFRecord: plain and gzip).
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "parquet,orc,avro,tfrecord"
    )]
    pub formats: Vec<FormatArg>,
    /// Rows per batch our readers yield (`ReadOptions::batch_rows`).
    #[arg(long, default_value_t = ReadOptions::default().batch_rows)]
    pub batch_rows: usize,
    /// Rounds: ours and the baselines alternate this many times.
    #[arg(long, alias = "repeat", default_value_t = 3)]
    pub rounds: usize,
    /// Seconds each measurement runs at least (whole passes over the files).
    #[arg(long, default_value_t = 2.0)]
    pub min_secs: f64,
    /// Directory for the data (kept); by default a temporary one, removed at the end.
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Python with pyarrow, fastavro and tensorflow (default: `.venv/bin/python`).
    #[arg(long, env = "HYDROFEED_PYTHON")]
    pub python: Option<PathBuf>,
    /// Skip the Python baselines.
    #[arg(long)]
    pub no_baseline: bool,
    /// Print one JSON object (otherwise a table and the JSON).
    #[arg(long)]
    pub json: bool,
}

/// The format module's `plan_file` and `open` (the contract in `format::parquet`).
fn plan_file(
    f: Format,
    storage: &Arc<dyn Storage>,
    st: &hydrofeed_storage::FileStatus,
    opts: &ReadOptions,
    first: u32,
) -> hydrofeed_error::Result<(arrow_schema::SchemaRef, Vec<Split>)> {
    match f {
        Format::Parquet => format::parquet::plan_file(storage, st, opts, first),
        Format::Orc => format::orc::plan_file(storage, st, opts, first),
        Format::Avro => format::avro::plan_file(storage, st, opts, first),
        Format::Tfrecord => format::tfrecord::plan_file(storage, st, opts, first),
    }
}

fn open(
    storage: &Arc<dyn Storage>,
    split: &Split,
    schema: &arrow_schema::SchemaRef,
    opts: &ReadOptions,
) -> hydrofeed_error::Result<Box<dyn SplitReader>> {
    match split.format {
        Format::Parquet => format::parquet::open(storage, split, schema, opts),
        Format::Orc => format::orc::open(storage, split, schema, opts),
        Format::Avro => format::avro::open(storage, split, schema, opts),
        Format::Tfrecord => format::tfrecord::open(storage, split, schema, opts),
    }
}

/// What every value of the rows sums to: both sides compute it, and it must agree.
#[derive(Debug, Default, Clone, Copy)]
struct Sums {
    rows: u64,
    ids: i64,
    labels: i64,
    image: f64,
}

impl Sums {
    fn add(mut self, o: Sums) -> Sums {
        self.rows += o.rows;
        self.ids = self.ids.wrapping_add(o.ids);
        self.labels = self.labels.wrapping_add(o.labels);
        self.image += o.image;
        self
    }

    /// Every value of `b`: its ids, labels and image floats.
    fn of(b: &RecordBatch) -> hydrofeed_error::Result<Sums> {
        let int = |name: &str| -> hydrofeed_error::Result<i64> {
            let c = b.column_by_name(name).ok_or_else(|| missing(name))?;
            let a = c
                .as_primitive_opt::<Int64Type>()
                .ok_or_else(|| missing(name))?;
            Ok(a.values().iter().fold(0i64, |s, &v| s.wrapping_add(v)))
        };
        let image = b.column_by_name("image").ok_or_else(|| missing("image"))?;
        let (values, lo, hi) = match image.data_type() {
            &DataType::FixedSizeList(_, n) => {
                let l = image.as_fixed_size_list();
                let n = n as usize;
                (
                    l.values().clone(),
                    l.offset() * n,
                    (l.offset() + l.len()) * n,
                )
            }
            DataType::List(_) => {
                let l = image.as_list::<i32>();
                let o = l.value_offsets();
                (l.values().clone(), o[0] as usize, o[o.len() - 1] as usize)
            }
            _ => return Err(missing("image")),
        };
        let f = values
            .as_primitive_opt::<Float32Type>()
            .ok_or_else(|| missing("image"))?;
        // Eight running sums: the adds vectorize; the order differs from a plain loop's by
        // rounding only.
        let mut acc = [0f64; 8];
        let v = &f.values()[lo..hi];
        let mut chunks = v.chunks_exact(8);
        for c in &mut chunks {
            for (a, &x) in acc.iter_mut().zip(c) {
                *a += f64::from(x);
            }
        }
        let tail: f64 = chunks.remainder().iter().map(|&x| f64::from(x)).sum();
        Ok(Sums {
            rows: b.num_rows() as u64,
            ids: int("id")?,
            labels: int("label")?,
            image: acc.iter().sum::<f64>() + tail,
        })
    }

    fn json(&self) -> Value {
        json!({ "rows": self.rows, "ids": self.ids, "labels": self.labels, "image": self.image })
    }
}

fn missing(name: &str) -> hydrofeed_error::Error {
    hydrofeed_error::Error::InvalidArgument(format!("bench decode: no {name} column to sum"))
}

fn drain(
    storage: &Arc<dyn Storage>,
    split: &Split,
    schema: &arrow_schema::SchemaRef,
    opts: &ReadOptions,
) -> hydrofeed_error::Result<Sums> {
    let mut s = Sums::default();
    for b in open(storage, split, schema, opts)? {
        s = s.add(Sums::of(&b?)?);
    }
    Ok(s)
}

/// The files of one measured input: a format with one codec.
struct Entry {
    /// Key in the report: the format, `tfrecord_gzip` for gzip TFRecord.
    key: String,
    format: Format,
    codec: &'static str,
    files: Vec<PathBuf>,
}

/// Rows/s of each pass: best, median, and the passes.
fn rates(rows: u64, secs: &[f64]) -> Value {
    let mut r: Vec<f64> = secs.iter().map(|s| rows as f64 / s).collect();
    r.sort_by(f64::total_cmp);
    let best = r.last().copied().unwrap_or(0.0);
    let median = if r.is_empty() { 0.0 } else { r[r.len() / 2] };
    json!({
        "rows_per_s": best,
        "median_rows_per_s": median,
        "mb_per_s": best * ROW_BYTES as f64 / 1e6,
        "median_mb_per_s": median * ROW_BYTES as f64 / 1e6,
        "passes": r.len(),
        "secs": secs.iter().sum::<f64>(),
    })
}

/// Our reader of one entry, planned once.
struct Ours {
    storage: Arc<dyn Storage>,
    splits: Vec<Split>,
    schema: arrow_schema::SchemaRef,
    opts: ReadOptions,
    plan_secs: f64,
}

impl Ours {
    fn plan(e: &Entry, batch_rows: usize) -> anyhow::Result<Ours> {
        let storage: Arc<dyn Storage> = Arc::new(LocalStorage);
        let opts = ReadOptions {
            batch_rows,
            ..ReadOptions::default()
        };
        let t = Instant::now();
        let mut splits = Vec::new();
        let mut schema = None;
        for p in &e.files {
            let st = storage.stat(&p.to_string_lossy())?;
            let (s, sp) = plan_file(e.format, &storage, &st, &opts, splits.len() as u32)?;
            schema.get_or_insert(s);
            splits.extend(sp);
        }
        Ok(Ours {
            storage,
            splits,
            schema: schema.context("no files")?,
            opts,
            plan_secs: t.elapsed().as_secs_f64(),
        })
    }

    /// One pass over every split: in turn (`single`) or spread over rayon's pool.
    fn pass(&self, single: bool) -> anyhow::Result<Sums> {
        let one = |s: &Split| drain(&self.storage, s, &self.schema, &self.opts);
        let r = if single {
            self.splits
                .iter()
                .try_fold(Sums::default(), |a, s| Ok(a.add(one(s)?)))
        } else {
            self.splits
                .par_iter()
                .map(one)
                .try_reduce(Sums::default, |a, b| Ok(a.add(b)))
        };
        Ok(r?)
    }

    /// Passes for at least `min_secs`: (the sums of a pass, each pass's seconds).
    fn measure(&self, single: bool, min_secs: f64) -> anyhow::Result<(Sums, Vec<f64>)> {
        let mut sums = Sums::default();
        let (_, secs) = ceiling::passes(min_secs, || {
            sums = self.pass(single)?;
            Ok(sums.rows)
        })?;
        Ok((sums, secs))
    }
}

fn default_python() -> PathBuf {
    let local = PathBuf::from(".venv/bin/python");
    if local.exists() {
        return local;
    }
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.venv/bin/python")
}

fn baseline_script() -> PathBuf {
    let local = PathBuf::from("benches/baselines/decode.py");
    if local.exists() {
        return local;
    }
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../benches/baselines/decode.py")
}

/// Runs the baseline script with `spec`; returns its last JSON line.
fn run_script(python: &Path, dir: &Path, name: &str, spec: &Value) -> anyhow::Result<Value> {
    let spec_path = dir.join(format!("{name}.json"));
    std::fs::write(&spec_path, serde_json::to_vec(spec)?)?;
    let out = std::process::Command::new(python)
        .arg(baseline_script())
        .arg(&spec_path)
        .output()
        .with_context(|| format!("running {}", python.display()))?;
    if !out.status.success() {
        anyhow::bail!(
            "baseline script failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .rev()
        .find(|l| l.starts_with('{'))
        .unwrap_or("{}");
    serde_json::from_str(line).context("baseline output is not JSON")
}

/// Writes the entries of `formats` into `dir`.
fn write_entries(args: &Args, dir: &Path, python: Option<&Path>) -> anyhow::Result<Vec<Entry>> {
    let gen = |f: Format, sub: &str, compression: Compression| -> anyhow::Result<Vec<PathBuf>> {
        let opts = GenOptions {
            format: f,
            rows: args.rows,
            files: args.files,
            seed: 7,
            compression,
        };
        super::super::progress::stage(format!("{sub}: writing {} rows", args.rows));
        Ok(write_dataset(&dir.join(sub), &opts)?)
    };
    let formats: Vec<Format> = args.formats.iter().map(|&g| Format::from(g)).collect();
    // Parquet snappy is also the source the Python writers convert.
    let parquet = gen(Format::Parquet, "parquet", Compression::None)?;
    let mut out = Vec::new();
    for f in formats {
        match f {
            Format::Parquet => out.push(Entry {
                key: "parquet".into(),
                format: f,
                codec: "snappy",
                files: parquet.clone(),
            }),
            Format::Orc | Format::Avro => {
                let (key, codec) = if f == Format::Orc {
                    ("orc", "zlib")
                } else {
                    ("avro", "deflate")
                };
                let entry = match python {
                    Some(py) => {
                        super::super::progress::stage(format!("{key}: writing ({codec})"));
                        let target = dir.join(key);
                        std::fs::create_dir_all(&target)?;
                        let files: Vec<PathBuf> = (0..parquet.len())
                            .map(|i| target.join(format!("part-{i:05}.{key}")))
                            .collect();
                        let spec = json!({
                            "write": key, "codec": codec,
                            "from": parquet, "to": files,
                        });
                        run_script(py, dir, &format!("write-{key}"), &spec)?;
                        Entry {
                            key: key.into(),
                            format: f,
                            codec,
                            files,
                        }
                    }
                    None => Entry {
                        key: key.into(),
                        format: f,
                        codec: "none",
                        files: gen(f, key, Compression::None)?,
                    },
                };
                out.push(entry);
            }
            Format::Tfrecord => {
                out.push(Entry {
                    key: "tfrecord".into(),
                    format: f,
                    codec: "none",
                    files: gen(f, "tfrecord", Compression::None)?,
                });
                out.push(Entry {
                    key: "tfrecord_gzip".into(),
                    format: f,
                    codec: "gzip",
                    files: gen(f, "tfrecord_gzip", Compression::Gzip)?,
                });
            }
        }
    }
    Ok(out)
}

fn baseline_name(key: &str) -> &'static str {
    match key {
        "parquet" | "orc" => "pyarrow",
        "avro" => "fastavro",
        _ => "tfdata",
    }
}

/// The floors the project holds itself to, per core (ours / baseline, single thread).
fn floor(key: &str) -> f64 {
    match key {
        "parquet" | "orc" => 1.5,
        "avro" => 20.0,
        _ => 3.0,
    }
}

/// Runs `hydrofeed bench decode`.
pub fn run(args: Args) -> anyhow::Result<()> {
    let (dir, temp) = match &args.dir {
        Some(d) => (d.clone(), false),
        None => (
            std::env::temp_dir().join(format!("hydrofeed-bench-decode-{}", std::process::id())),
            true,
        ),
    };
    std::fs::create_dir_all(&dir)?;
    let python = (!args.no_baseline).then(|| args.python.clone().unwrap_or_else(default_python));
    let entries = write_entries(&args, &dir, python.as_deref())?;
    let mut report = Map::new();
    let mut ours = Vec::new();
    for e in &entries {
        let bytes: u64 = e
            .files
            .iter()
            .filter_map(|p| std::fs::metadata(p).ok())
            .map(|m| m.len())
            .sum();
        let o = Ours::plan(e, args.batch_rows)?;
        report.insert(
            e.key.clone(),
            json!({ "codec": e.codec, "file_bytes": bytes, "splits": o.splits.len(),
                    "plan_secs": o.plan_secs, "baseline": { "name": baseline_name(&e.key) } }),
        );
        ours.push(o);
    }
    let files: Map<String, Value> = entries
        .iter()
        .map(|e| (e.key.clone(), json!(e.files)))
        .collect();
    // Rounds: ours then the baselines, single thread then all cores, alternated.
    let mut secs: std::collections::HashMap<(String, &str, &str), Vec<f64>> = Default::default();
    for round in 0..args.rounds.max(1) {
        for (threads, single) in [("single", true), ("all_cores", false)] {
            for (e, o) in entries.iter().zip(&ours) {
                super::super::progress::stage(format!(
                    "round {}: {} ours ({threads})",
                    round + 1,
                    e.key
                ));
                let (sums, s) = o.measure(single, args.min_secs)?;
                anyhow::ensure!(
                    sums.rows == args.rows,
                    "{}: read {} rows, wrote {}",
                    e.key,
                    sums.rows,
                    args.rows
                );
                report[&e.key]["ours"]["sums"] = sums.json();
                secs.entry((e.key.clone(), "ours", threads))
                    .or_default()
                    .extend(s);
            }
            let Some(py) = &python else { continue };
            super::super::progress::stage(format!("round {}: baselines ({threads})", round + 1));
            let spec = json!({ "min_secs": args.min_secs, "threads": threads, "files": files });
            let b = run_script(py, &dir, &format!("baseline-{threads}"), &spec)
                .unwrap_or_else(|e| json!({ "error": format!("{e:#}") }));
            for e in &entries {
                let v = &b[&e.key];
                match v["secs"].as_array() {
                    Some(a) => {
                        report[&e.key]["baseline"]["sums"] = v["sums"].clone();
                        secs.entry((e.key.clone(), "baseline", threads))
                            .or_default()
                            .extend(a.iter().filter_map(Value::as_f64));
                    }
                    None => {
                        report[&e.key]["baseline"]["error"] = v
                            .get("error")
                            .cloned()
                            .unwrap_or_else(|| b["error"].clone())
                    }
                }
            }
        }
    }
    for ((key, side, threads), s) in &secs {
        report[key][*side][*threads] = rates(args.rows, s);
    }
    // Both sides read the same values: ids and labels exactly, image floats to rounding.
    for e in &entries {
        let r = &mut report[&e.key];
        let (a, b) = (r["ours"]["sums"].clone(), r["baseline"]["sums"].clone());
        if b.is_object() {
            let rel = (a["image"].as_f64().unwrap_or(f64::NAN)
                - b["image"].as_f64().unwrap_or(f64::NAN))
            .abs()
                / b["image"].as_f64().unwrap_or(1.0).abs().max(1.0);
            let agree = ["rows", "ids", "labels"].iter().all(|k| a[k] == b[k]) && rel < 1e-6;
            r["sums_agree"] = json!(agree);
            anyhow::ensure!(
                agree,
                "{}: our sums {a} differ from the baseline's {b}",
                e.key
            );
        }
    }
    // Ceilings: memcpy of the decoded bytes; each codec's decompression alone.
    super::super::progress::stage("ceilings".to_string());
    let decoded = args.rows * ROW_BYTES;
    let mut ceilings = Map::new();
    let (_, s) = ceiling::passes(args.min_secs, ceiling::memcpy(decoded))?;
    ceilings.insert("memcpy".into(), rates(args.rows, &s));
    for e in &entries {
        let pass: Option<Box<dyn FnMut() -> anyhow::Result<u64> + '_>> = match e.key.as_str() {
            "parquet" => Some(Box::new(ceiling::parquet_pages(&e.files))),
            "tfrecord_gzip" => Some(Box::new(ceiling::gunzip(&e.files))),
            _ => None,
        };
        if let Some(p) = pass {
            let (_, s) = ceiling::passes(args.min_secs, p)?;
            let name = if e.key == "parquet" {
                "snappy"
            } else {
                "deflate"
            };
            ceilings.insert(name.into(), rates(args.rows, &s));
        }
    }
    // Parquet's ceiling: its decompression and one copy of the decoded bytes, in turn.
    let best = |c: &Map<String, Value>, k: &str| c.get(k).and_then(|v| v["rows_per_s"].as_f64());
    if let (Some(a), Some(b)) = (best(&ceilings, "snappy"), best(&ceilings, "memcpy")) {
        ceilings.insert(
            "snappy_plus_memcpy".into(),
            json!({ "rows_per_s": 1.0 / (1.0 / a + 1.0 / b) }),
        );
    }
    let mut ratios = Map::new();
    let mut checks = Map::new();
    for e in &entries {
        let r = &report[&e.key];
        for (threads, stat) in [
            ("single", "rows_per_s"),
            ("single", "median_rows_per_s"),
            ("all_cores", "rows_per_s"),
            ("all_cores", "median_rows_per_s"),
        ] {
            if let (Some(a), Some(b)) = (
                r["ours"][threads][stat].as_f64(),
                r["baseline"][threads][stat].as_f64(),
            ) {
                let name = format!(
                    "{}_vs_{}_{threads}{}",
                    e.key,
                    baseline_name(&e.key),
                    if stat == "rows_per_s" { "" } else { "_median" }
                );
                ratios.insert(name, json!(a / b));
            }
        }
        if let Some(x) = ratios
            .get(&format!("{}_vs_{}_single", e.key, baseline_name(&e.key)))
            .and_then(Value::as_f64)
        {
            checks.insert(
                format!("{} >= {}x {}", e.key, floor(&e.key), baseline_name(&e.key)),
                json!(x >= floor(&e.key)),
            );
        }
    }
    if let (Some(a), Some(c)) = (
        report
            .get("parquet")
            .and_then(|p| p["ours"]["single"]["rows_per_s"].as_f64()),
        best(&ceilings, "snappy_plus_memcpy"),
    ) {
        ratios.insert("parquet_vs_snappy_plus_memcpy".into(), json!(a / c));
        checks.insert("parquet >= 0.7x snappy+memcpy".into(), json!(a / c >= 0.7));
    }
    let out = json!({
        "bench": "decode",
        "rows": args.rows,
        "row_bytes": ROW_BYTES,
        "files": args.files,
        "rounds": args.rounds,
        "min_secs": args.min_secs,
        "batch_rows": args.batch_rows,
        "cores": rayon::current_num_threads(),
        "formats": report,
        "ceilings": ceilings,
        "ratios": ratios,
        "floors_met": checks,
    });
    if !args.json {
        for (k, v) in &ratios {
            eprintln!(
                "{k:>42}: {}",
                v.as_f64().map_or("n/a".into(), |x| format!("{x:.2}x"))
            );
        }
        for (k, v) in &checks {
            eprintln!(
                "{k:>42}: {}",
                if v == &json!(true) { "met" } else { "NOT met" }
            );
        }
    }
    println!("{}", serde_json::to_string_pretty(&out)?);
    if temp {
        let _ = std::fs::remove_dir_all(&dir);
    }
    Ok(())
}
