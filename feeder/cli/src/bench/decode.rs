//! `hydrofeed bench decode`: decode throughput of our readers against pyarrow, fastavro and
//! tf.data, measured in one run on the same files.
//!
//! It writes the MNIST-shaped dataset of [`hydrofeed_format::gen`] in every format, then times, best of
//! `--repeat` after one warm-up pass (page cache warm for everyone):
//! - ours, one thread: every split of every file in turn, decoded into Arrow batches;
//! - ours, all cores: the splits spread over rayon's pool;
//! - the baselines in a Python subprocess (`benches/baselines/decode.py`), once limited to one
//!   thread and once with their default threading.
//!
//! Ratios are ours / baseline in rows per second. Planning (footers; TFRecord's index pass) is
//! timed separately as `plan_secs` and is not part of the decode figures.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use anyhow::Context;
use rayon::prelude::*;
use serde_json::{json, Map, Value};

use crate::read_args::FormatArg;
use hydrofeed_format::gen::{write_dataset, GenOptions};
use hydrofeed_format::split::{Format, Split};
use hydrofeed_format::{self as format, ReadOptions, SplitReader};
use hydrofeed_storage::{local::LocalStorage, Storage};

/// Arguments of `hydrofeed bench decode`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Rows per format.
    #[arg(long, default_value_t = 200_000)]
    pub rows: u64,
    /// Files per format.
    #[arg(long, default_value_t = 4)]
    pub files: usize,
    /// Formats to measure.
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
    /// Timed passes per measurement (the best counts), after one warm-up pass.
    #[arg(long, default_value_t = 3)]
    pub repeat: usize,
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

fn name(f: Format) -> &'static str {
    match f {
        Format::Parquet => "parquet",
        Format::Orc => "orc",
        Format::Avro => "avro",
        Format::Tfrecord => "tfrecord",
    }
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

fn drain(
    storage: &Arc<dyn Storage>,
    split: &Split,
    schema: &arrow_schema::SchemaRef,
    opts: &ReadOptions,
) -> hydrofeed_error::Result<u64> {
    let mut rows = 0;
    for b in open(storage, split, schema, opts)? {
        rows += b?.num_rows() as u64;
    }
    Ok(rows)
}

fn figures(rows: u64, bytes: u64, secs: f64) -> Value {
    json!({
        "rows": rows,
        "secs": secs,
        "rows_per_s": rows as f64 / secs,
        "mb_per_s": bytes as f64 / 1e6 / secs,
    })
}

/// Best of `repeat` timed runs after one warm-up.
fn best_of(
    repeat: usize,
    mut f: impl FnMut() -> hydrofeed_error::Result<u64>,
) -> hydrofeed_error::Result<(u64, f64)> {
    f()?;
    let mut best = f64::INFINITY;
    let mut rows = 0;
    for _ in 0..repeat.max(1) {
        let t = Instant::now();
        rows = f()?;
        best = best.min(t.elapsed().as_secs_f64());
    }
    Ok((rows, best))
}

/// Measures our reader on the files of one format.
fn measure_ours(f: Format, files: &[PathBuf], bytes: u64, args: &Args) -> Value {
    let storage: Arc<dyn Storage> = Arc::new(LocalStorage);
    let opts = ReadOptions {
        batch_rows: args.batch_rows,
        ..ReadOptions::default()
    };
    let t = Instant::now();
    let mut splits = Vec::new();
    let mut schema = None;
    for p in files {
        let path = p.to_string_lossy();
        let st = match storage.stat(&path) {
            Ok(st) => st,
            Err(e) => return json!({ "error": e.to_string() }),
        };
        match plan_file(f, &storage, &st, &opts, splits.len() as u32) {
            Ok((s, sp)) => {
                schema.get_or_insert(s);
                splits.extend(sp);
            }
            Err(e) => return json!({ "error": e.to_string() }),
        }
    }
    let plan_secs = t.elapsed().as_secs_f64();
    let Some(schema) = schema else {
        return json!({ "error": "no files" });
    };
    let single = best_of(args.repeat, || {
        splits
            .iter()
            .try_fold(0, |n, s| Ok(n + drain(&storage, s, &schema, &opts)?))
    });
    let all = best_of(args.repeat, || {
        splits
            .par_iter()
            .map(|s| drain(&storage, s, &schema, &opts))
            .sum::<hydrofeed_error::Result<u64>>()
    });
    let mut out = json!({ "plan_secs": plan_secs, "splits": splits.len() });
    for (key, r) in [("single", single), ("all_cores", all)] {
        out[key] = match r {
            Ok((rows, secs)) if rows == args.rows => figures(rows, bytes, secs),
            Ok((rows, _)) => json!({ "error": format!("read {rows} rows, wrote {}", args.rows) }),
            Err(e) => json!({ "error": e.to_string() }),
        };
    }
    out
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

/// Runs the Python baselines over `files` (format name -> paths).
fn run_baselines(
    python: &Path,
    dir: &Path,
    files: &Map<String, Value>,
    threads: &str,
    repeat: usize,
) -> anyhow::Result<Map<String, Value>> {
    let spec = json!({ "repeat": repeat, "threads": threads, "files": files });
    let spec_path = dir.join(format!("baseline-{threads}.json"));
    std::fs::write(&spec_path, serde_json::to_vec(&spec)?)?;
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

fn baseline_figures(v: &Value) -> Value {
    match (v["rows"].as_u64(), v["secs"].as_f64(), v["bytes"].as_u64()) {
        (Some(r), Some(s), Some(b)) => figures(r, b, s),
        _ => v.clone(),
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
    let formats: Vec<Format> = args.formats.iter().map(|&g| Format::from(g)).collect();
    let mut report = Map::new();
    let mut paths = Map::new();
    for &f in &formats {
        let sub = dir.join(name(f));
        let t = Instant::now();
        let opts = GenOptions {
            format: f,
            rows: args.rows,
            files: args.files,
            seed: 7,
            ..Default::default()
        };
        super::super::progress::stage(format!("{}: writing {} rows", name(f), args.rows));
        let files = write_dataset(&sub, &opts)?;
        let gen_secs = t.elapsed().as_secs_f64();
        let bytes: u64 = files
            .iter()
            .filter_map(|p| std::fs::metadata(p).ok())
            .map(|m| m.len())
            .sum();
        if !args.json {
            eprintln!(
                "{}: wrote {} rows, {:.1} MB in {gen_secs:.1}s; decoding",
                name(f),
                args.rows,
                bytes as f64 / 1e6
            );
        }
        super::super::progress::stage(format!("{}: decoding", name(f)));
        let mut entry = measure_ours(f, &files, bytes, &args);
        entry["bytes"] = json!(bytes);
        entry["gen_secs"] = json!(gen_secs);
        report.insert(name(f).into(), json!({ "ours": entry }));
        paths.insert(
            name(f).into(),
            Value::Array(files.iter().map(|p| json!(p.to_string_lossy())).collect()),
        );
    }
    let baseline_name = |f: &str| match f {
        "parquet" | "orc" => "pyarrow",
        "avro" => "fastavro",
        _ => "tfdata",
    };
    if !args.no_baseline {
        let python = args.python.clone().unwrap_or_else(default_python);
        for threads in ["single", "all"] {
            if !args.json {
                eprintln!(
                    "baselines ({threads} thread{})",
                    if threads == "all" { "s" } else { "" }
                );
            }
            let key = if threads == "single" {
                "single"
            } else {
                "all_cores"
            };
            super::super::progress::stage(format!("baselines ({threads} thread)"));
            match run_baselines(&python, &dir, &paths, threads, args.repeat) {
                Ok(b) => {
                    for (f, v) in b {
                        if let Some(e) = report.get_mut(&f) {
                            e["baseline"]["name"] = json!(baseline_name(&f));
                            e["baseline"][key] = baseline_figures(&v);
                        }
                    }
                }
                Err(e) => {
                    for e2 in report.values_mut() {
                        e2["baseline"][key] = json!({ "error": format!("{e:#}") });
                    }
                }
            }
        }
    }
    let mut ratios = Map::new();
    let mut ratios_all = Map::new();
    for (f, e) in &report {
        let key = format!("{f}_vs_{}", baseline_name(f));
        let r = |k: &str| match (
            e["ours"][k]["rows_per_s"].as_f64(),
            e["baseline"][k]["rows_per_s"].as_f64(),
        ) {
            (Some(a), Some(b)) if b > 0.0 => json!(a / b),
            _ => Value::Null,
        };
        ratios.insert(key.clone(), r("single"));
        ratios_all.insert(key, r("all_cores"));
    }
    let out = json!({
        "bench": "decode",
        "rows": args.rows,
        "files": args.files,
        "repeat": args.repeat,
        "batch_rows": args.batch_rows,
        "cores": rayon::current_num_threads(),
        "formats": report,
        "ratios": ratios,
        "ratios_all_cores": ratios_all,
    });
    if !args.json {
        for (k, v) in &ratios {
            eprintln!(
                "{k:>24}: {}",
                v.as_f64()
                    .map_or("n/a".into(), |x| format!("{x:.2}x (single thread)"))
            );
        }
    }
    println!("{}", serde_json::to_string_pretty(&out)?);
    if temp {
        let _ = std::fs::remove_dir_all(&dir);
    }
    Ok(())
}
