//! `hydrofeed inspect`: the plan of an input (schema, files, splits, row counts), from file
//! metadata only (a table's metadata, Parquet/ORC footers, Avro block headers, a TFRecord
//! index pass), and what planning read from storage.

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use anyhow::Context;
use serde_json::{json, Value};

use crate::read_args::ReadArgs;
use hydrofeed_format::split::SplitUnit;
use hydrofeed_format::{self as format, Plan, ReadOptions};
use hydrofeed_storage::metered::Meter;
use hydrofeed_storage::open_storage;

/// Arguments of `hydrofeed inspect`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// A file, a directory (Spark/Hive layout) or a glob; local path, file://, hdfs://.
    pub path: String,
    /// Columns, format, corrupt records, schema.
    #[command(flatten)]
    pub read: ReadArgs,
    /// Target bytes per split (row groups / stripes are grouped up to it; Avro and TFRecord
    /// byte ranges are cut near it).
    #[arg(long, default_value_t = 64 << 20)]
    pub split_bytes: u64,
    /// Print JSON instead of tables.
    #[arg(long)]
    pub json: bool,
}

fn unit_text(u: &SplitUnit) -> String {
    match u {
        SplitUnit::RowGroups { first, count } if *count == 1 => format!("row group {first}"),
        SplitUnit::RowGroups { first, count } => {
            format!("row groups {first}..{}", first + count)
        }
        SplitUnit::Stripes { first, count } if *count == 1 => format!("stripe {first}"),
        SplitUnit::Stripes { first, count } => format!("stripes {first}..{}", first + count),
        SplitUnit::File => "the whole file".into(),
        SplitUnit::Bytes { start, end } => format!("bytes {start}..{end}"),
    }
}

/// Rows, bytes, splits and partition values of one file.
type FileSums<'a> = (u64, u64, u64, &'a Vec<(String, String)>);

/// The plan as JSON: input, format, schema, files (with rows, bytes, splits, partition
/// values), splits, total rows.
pub fn plan_json(plan: &Plan) -> Value {
    let schema: Vec<Value> = plan
        .schema
        .fields()
        .iter()
        .map(|f| {
            json!({
                "name": f.name(),
                "type": f.data_type().to_string(),
                "nullable": f.is_nullable(),
            })
        })
        .collect();
    let mut files: BTreeMap<&str, FileSums> = BTreeMap::new();
    for s in &plan.splits {
        let e = files.entry(&s.path).or_insert((0, 0, 0, &s.partition));
        e.0 += s.rows;
        e.1 += s.bytes;
        e.2 += 1;
    }
    let files: Vec<Value> = files
        .into_iter()
        .map(|(path, (rows, bytes, splits, part))| {
            json!({
                "path": path,
                "rows": rows,
                "bytes": bytes,
                "splits": splits,
                "partition": part.iter().map(|(k, v)| (k.clone(), json!(v))).collect::<serde_json::Map<_, _>>(),
            })
        })
        .collect();
    let table = plan.table.as_ref().map(|t| {
        json!({
            "kind": t.kind,
            "id": t.id,
            "version": t.version,
            "committed_ms": t.committed_ms,
        })
    });
    let filter = plan.filter.as_ref().map(|f| {
        let c = &f.cost;
        json!({
            "filter": f.bound.text(),
            "rows_before": c.rows_before,
            "rows_after": c.rows_after,
            "units": c.units,
            "units_none_by_stats": c.none_by_stats,
            "units_all_by_stats": c.all_by_stats,
            "units_counted": c.counted,
            "files_ruled_out": c.files_ruled_out,
            "manifests_ruled_out": c.manifests_ruled_out,
            "count_bytes": c.bytes,
            "count_secs": c.secs,
        })
    });
    json!({
        "input": plan.input,
        "format": plan.format.name(),
        "table": table,
        "filter": filter,
        "schema": schema,
        "files": files,
        "splits": plan.splits,
        "total_rows": plan.total_rows(),
    })
}

fn print_table(out: &mut impl Write, plan: &Plan, v: &Value) -> std::io::Result<()> {
    writeln!(out, "input:  {}", plan.input)?;
    if let Some(t) = &plan.table {
        writeln!(
            out,
            "table:  {} {} at {} {} (its live files below)",
            t.kind,
            t.id,
            if t.kind == "iceberg" {
                "snapshot"
            } else {
                "version"
            },
            t.version
        )?;
    }
    if let Some(f) = &plan.filter {
        writeln!(out, "filter: {}", f.bound.text())?;
        writeln!(out, "        {}", f.cost.line())?;
    }
    writeln!(
        out,
        "format: {}   files: {}   splits: {}   rows: {}",
        plan.format.name(),
        v["files"].as_array().map_or(0, |a| a.len()),
        plan.splits.len(),
        plan.total_rows()
    )?;
    let p = &v["planning"];
    writeln!(
        out,
        "planned in {:.3} s: {} files opened ({} of the {} data files), {} reads, {} bytes \
         from storage",
        p["secs"].as_f64().unwrap_or(0.0),
        p["files_opened"].as_u64().unwrap_or(0),
        p["data_files_opened"].as_u64().unwrap_or(0),
        plan.files.len(),
        p["reads"].as_u64().unwrap_or(0),
        p["bytes_read"].as_u64().unwrap_or(0)
    )?;
    writeln!(out, "\nschema:")?;
    let w = plan
        .schema
        .fields()
        .iter()
        .map(|f| f.name().len())
        .max()
        .unwrap_or(4)
        .max(4);
    for f in plan.schema.fields() {
        writeln!(
            out,
            "  {:<w$}  {}{}",
            f.name(),
            f.data_type(),
            if f.is_nullable() { "" } else { " not null" }
        )?;
    }
    writeln!(out, "\nfiles:")?;
    writeln!(
        out,
        "  {:>12}  {:>14}  {:>6}  path",
        "rows", "bytes", "splits"
    )?;
    for f in v["files"].as_array().into_iter().flatten() {
        let part = f["partition"]
            .as_object()
            .filter(|m| !m.is_empty())
            .map(|m| {
                let kv: Vec<String> = m
                    .iter()
                    .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
                    .collect();
                format!("  [{}]", kv.join(", "))
            })
            .unwrap_or_default();
        writeln!(
            out,
            "  {:>12}  {:>14}  {:>6}  {}{part}",
            f["rows"].as_u64().unwrap_or(0),
            f["bytes"].as_u64().unwrap_or(0),
            f["splits"].as_u64().unwrap_or(0),
            f["path"].as_str().unwrap_or("")
        )?;
    }
    writeln!(out, "\nsplits:")?;
    writeln!(
        out,
        "  {:>5}  {:>12}  {:>14}  {:<24}  path",
        "id", "rows", "bytes", "unit"
    )?;
    for s in &plan.splits {
        writeln!(
            out,
            "  {:>5}  {:>12}  {:>14}  {:<24}  {}",
            s.id,
            s.rows,
            s.bytes,
            unit_text(&s.unit),
            s.path
        )?;
    }
    Ok(())
}

/// What planning read from storage: files opened, reads and their bytes (a table's metadata,
/// footers, the rows a filter counts).
#[derive(Default)]
struct PlanningCost {
    opened: std::sync::Mutex<std::collections::HashSet<String>>,
    reads: AtomicU64,
    bytes: AtomicU64,
}

impl Meter for PlanningCost {
    fn opened(&self, path: &str) {
        if let Ok(mut o) = self.opened.lock() {
            o.insert(path.to_string());
        }
    }
    fn ended(&self, bytes: u64, _took: std::time::Duration) {
        self.reads.fetch_add(1, Ordering::Relaxed);
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
    }
}

/// Runs `hydrofeed inspect`.
pub fn run(args: Args) -> anyhow::Result<()> {
    let storage = open_storage(&args.path)?;
    let opts = ReadOptions {
        split_bytes: args.split_bytes.max(1),
        ..args.read.options()?
    };
    let cost = Arc::new(PlanningCost::default());
    let metered = hydrofeed_storage::metered::metered(&storage, cost.clone());
    let t0 = std::time::Instant::now();
    let plan = format::plan(&metered, &args.path, &opts)
        .with_context(|| format!("inspecting {}", args.path))?;
    let mut v = plan_json(&plan);
    let secs = t0.elapsed().as_secs_f64();
    let opened = cost.opened.lock().map(|o| o.clone()).unwrap_or_default();
    let data_opened = plan
        .files
        .iter()
        .filter(|f| opened.contains(&f.path))
        .count();
    v["planning"] = json!({
        "secs": secs,
        "files_opened": opened.len(),
        "data_files_opened": data_opened,
        "reads": cost.reads.load(Ordering::Relaxed),
        "bytes_read": cost.bytes.load(Ordering::Relaxed),
    });
    let mut out = std::io::stdout().lock();
    let r = if args.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&v)?)
    } else {
        print_table(&mut out, &plan, &v)
    }
    .and_then(|()| out.flush());
    match r {
        // `hydrofeed inspect --json | head`: the reader has what it wanted.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => Ok(r?),
    }
}
