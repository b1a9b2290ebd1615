//! `hydrofeed bench filter`: the bytes a filtered read fetches from storage beside the same
//! read without the filter, on a Hive-partitioned table: planning (footers, and the counting
//! pass on the filter's columns where statistics do not decide) and reading every split.
//!
//! Bytes are what the storage returned (a metered storage under the planner and the readers),
//! so they do not depend on the machine; seconds are reported beside them, each side's best of
//! `--repeat` alternated passes.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use hydrofeed_format::filter::Filter;
use hydrofeed_format::gen::{write_dataset, GenOptions};
use hydrofeed_format::split::Format;
use hydrofeed_format::{open_split, plan, ReadOptions};
use hydrofeed_storage::metered::{metered, ByteCount};
use hydrofeed_storage::Storage;

/// Arguments of `hydrofeed bench filter`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Input; without it, a table of MNIST-shaped rows in 8 partitions `day=0` .. `day=7` (2
    /// Parquet files of 12,500 rows each) is generated.
    #[arg(long)]
    pub input: Option<String>,
    /// The filter.
    #[arg(long, default_value = "day IN (2, 5) AND label < 5")]
    pub filter: String,
    /// Passes of each side (alternated); the best is reported.
    #[arg(long, default_value_t = 3)]
    pub repeat: u32,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// One read of the whole input: bytes planning and reading took, rows, seconds.
#[derive(Debug, Clone, Copy, Default)]
struct Pass {
    plan_bytes: u64,
    read_bytes: u64,
    rows: u64,
    secs: f64,
}

fn pass(storage: &Arc<dyn Storage>, input: &str, opts: &ReadOptions) -> anyhow::Result<Pass> {
    let count = Arc::new(ByteCount::default());
    let s = metered(storage, count.clone());
    let t0 = Instant::now();
    let p = plan(&s, input, opts)?;
    let plan_bytes = count.get();
    let mut rows = 0u64;
    for split in p.splits.iter().filter(|x| x.rows > 0) {
        for b in open_split(&s, &p, split, opts)? {
            rows += b?.num_rows() as u64;
        }
    }
    anyhow::ensure!(
        rows == p.total_rows(),
        "read {rows} rows, planned {}",
        p.total_rows()
    );
    Ok(Pass {
        plan_bytes,
        read_bytes: count.get() - plan_bytes,
        rows,
        secs: t0.elapsed().as_secs_f64(),
    })
}

fn generate(dir: &std::path::Path) -> anyhow::Result<()> {
    for day in 0..8u64 {
        write_dataset(
            &dir.join(format!("day={day}")),
            &GenOptions {
                format: Format::Parquet,
                rows: 25_000,
                files: 2,
                seed: day,
                ..GenOptions::default()
            },
        )?;
    }
    Ok(())
}

/// Runs `hydrofeed bench filter`.
pub fn run(a: Args) -> anyhow::Result<()> {
    let tmp = std::env::temp_dir().join(format!("hydrofeed-bench-filter-{}", std::process::id()));
    let input = match &a.input {
        Some(i) => i.clone(),
        None => {
            let d: PathBuf = tmp.join("table");
            generate(&d)?;
            d.display().to_string()
        }
    };
    let r = measure(&a, &input);
    let _ = std::fs::remove_dir_all(&tmp);
    r
}

fn measure(a: &Args, input: &str) -> anyhow::Result<()> {
    let input = input.to_string();
    let storage = hydrofeed_storage::open_storage(&input)?;
    let plain = ReadOptions::default();
    let filtered = ReadOptions {
        filter: Some(Filter::parse(&a.filter)?),
        ..ReadOptions::default()
    };
    let (mut best_plain, mut best_filtered): (Option<Pass>, Option<Pass>) = (None, None);
    for _ in 0..a.repeat.max(1) {
        for (o, best) in [(&plain, &mut best_plain), (&filtered, &mut best_filtered)] {
            let p = pass(&storage, &input, o)?;
            if best.is_none_or(|b| p.secs < b.secs) {
                *best = Some(p);
            }
        }
    }
    let (n, f) = (
        best_plain.unwrap_or_default(),
        best_filtered.unwrap_or_default(),
    );
    let cost = plan(&storage, &input, &filtered)?
        .filter
        .map(|pf| pf.cost.line())
        .unwrap_or_default();
    let total = |p: &Pass| p.plan_bytes + p.read_bytes;
    let ratio = total(&f) as f64 / total(&n).max(1) as f64;
    if a.json {
        let side = |p: &Pass| {
            serde_json::json!({
                "plan_bytes": p.plan_bytes, "read_bytes": p.read_bytes,
                "bytes": p.plan_bytes + p.read_bytes, "rows": p.rows, "secs": p.secs,
            })
        };
        println!(
            "{}",
            serde_json::json!({
                "input": input,
                "filter": a.filter,
                "plan": cost,
                "without": side(&n),
                "with": side(&f),
                "bytes_ratio": ratio,
            })
        );
        return Ok(());
    }
    println!("input:  {input}");
    println!("filter: {}", a.filter);
    println!("        {cost}");
    println!(
        "{:>10} {:>14} {:>14} {:>14} {:>10} {:>8}",
        "", "plan bytes", "read bytes", "total", "rows", "secs"
    );
    for (name, p) in [("without", &n), ("with", &f)] {
        println!(
            "{name:>10} {:>14} {:>14} {:>14} {:>10} {:>8.2}",
            p.plan_bytes,
            p.read_bytes,
            total(p),
            p.rows,
            p.secs
        );
    }
    println!("bytes with / without: {ratio:.3}");
    Ok(())
}
