//! `hydrofeed bench order`: how well the fixed order mixes a dataset stored sorted, beside
//! tf.data's `interleave(cycle) + shuffle(buffer)` of the same memory and a true random
//! permutation, and what the shuffle buffer costs in read throughput.
//!
//! A row's id is its position in storage order (files by path, rows in file order): a dataset
//! stored sorted by id. Quality is computed on the order function's streams (every rank, every
//! epoch asked for); throughput by reading the whole input as one rank through the feeder's
//! stream reader, for each buffer size, in the same run; the bytes read from storage by
//! reading every rank's share of an epoch, against the input's bytes (the row groups' or
//! stripes' compressed bytes, the files' of Avro and TFRecord).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use hydrofeed_coord::order::{chunk_range, expand, quality, OrderSpec, Quality, Segment};
use hydrofeed_coord::{mix64, split_order, OrderLease};
use hydrofeed_feeder::pipeline::Budget;
use hydrofeed_feeder::stream::{read_segment, StreamCtx};
use hydrofeed_format::Plan;
use hydrofeed_storage::metered::{metered, ByteCount};

/// Arguments of `hydrofeed bench order`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Input; without it, 8 Parquet files of 25,000 MNIST-shaped rows are generated.
    #[arg(long)]
    pub input: Option<String>,
    /// Ranks.
    #[arg(long, default_value_t = 2)]
    pub workers: u32,
    /// Rows per batch.
    #[arg(long, default_value_t = 250)]
    pub batch_size: u64,
    /// Shuffle buffer sizes (rows) to measure; 0 is the plain interleave.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "0,1000,5000,20000,100000"
    )]
    pub buffers: Vec<u64>,
    /// Lanes (and tf.data's cycle length).
    #[arg(long, default_value_t = 8)]
    pub cycle_length: u32,
    /// Seed.
    #[arg(long, default_value_t = 7)]
    pub seed: u64,
    /// Epochs whose streams are scored.
    #[arg(long, default_value_t = 2)]
    pub epochs: u32,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// Means over streams, with the worst |corr|.
fn summarize(qs: &[Quality]) -> serde_json::Value {
    let n = qs.len().max(1) as f64;
    serde_json::json!({
        "adjacent_fraction": qs.iter().map(|q| q.adjacent).sum::<f64>() / n,
        "files_per_batch": qs.iter().map(|q| q.files_per_batch).sum::<f64>() / n,
        "abs_corr_mean": qs.iter().map(|q| q.corr.abs()).sum::<f64>() / n,
        "abs_corr_max": qs.iter().map(|q| q.corr.abs()).fold(0.0, f64::max),
    })
}

struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        ((u128::from(mix64(self.0)) * n as u128) >> 64) as usize
    }
}

/// tf.data's `Dataset.from_tensor_slices(files).shuffle(len).interleave(read, cycle_length,
/// block_length=1).shuffle(buffer)` on the rank's files (`files.shard(W, r)`), reimplemented
/// from its documented algorithm: round-robin over `cycle` open files, a file's rows in
/// storage order, then a buffer that emits a uniformly chosen element and puts the next one in
/// its place.
fn tfdata_stream(files: &[(u64, u64)], cycle: usize, buffer: usize, rng: &mut Rng) -> Vec<u64> {
    let mut order: Vec<usize> = (0..files.len()).collect();
    for i in (1..order.len()).rev() {
        order.swap(i, rng.below(i + 1));
    }
    let mut next_file = 0;
    let mut open: Vec<(u64, u64)> = Vec::new();
    let mut interleaved = Vec::new();
    loop {
        while open.len() < cycle && next_file < order.len() {
            open.push(files[order[next_file]]);
            next_file += 1;
        }
        if open.is_empty() {
            break;
        }
        let mut i = 0;
        while i < open.len() {
            let (at, end) = &mut open[i];
            interleaved.push(*at);
            *at += 1;
            if at == end {
                open.remove(i);
            } else {
                i += 1;
            }
        }
    }
    if buffer <= 1 {
        return interleaved;
    }
    let mut buf: Vec<u64> = Vec::with_capacity(buffer);
    let mut out = Vec::with_capacity(interleaved.len());
    for x in interleaved {
        if buf.len() < buffer {
            buf.push(x);
            continue;
        }
        let j = rng.below(buf.len());
        out.push(std::mem::replace(&mut buf[j], x));
    }
    while !buf.is_empty() {
        let j = rng.below(buf.len());
        out.push(buf.swap_remove(j));
    }
    out
}

/// Runs `hydrofeed bench order`.
pub fn run(a: Args) -> anyhow::Result<()> {
    let tmp = std::env::temp_dir().join(format!("hydrofeed-bench-order-{}", std::process::id()));
    let input = match &a.input {
        Some(i) => i.clone(),
        None => {
            let dir: PathBuf = tmp.join("sorted");
            std::fs::create_dir_all(&dir)?;
            let opts = hydrofeed_format::gen::GenOptions {
                rows: 200_000,
                files: 8,
                ..Default::default()
            };
            hydrofeed_format::gen::write_dataset(&dir, &opts)?;
            dir.to_string_lossy().into_owned()
        }
    };
    let r = measure(&a, &input);
    let _ = std::fs::remove_dir_all(&tmp);
    r
}

fn measure(a: &Args, input: &str) -> anyhow::Result<()> {
    let storage = hydrofeed_storage::open_storage(input)?;
    let read = hydrofeed_format::ReadOptions::default();
    let plan: Plan = hydrofeed_format::plan(&storage, input, &read)?;
    // The input's bytes: the column chunks of every row group (stripe), or the files.
    let input_bytes: u64 = plan.splits.iter().map(|s| s.bytes).sum::<u64>().max(1);
    let split_rows = plan.split_rows();
    let split_units = plan.split_units();
    // Storage order: a split's first id, and the file of every split.
    let mut start = Vec::with_capacity(split_rows.len());
    let mut at = 0;
    for &n in &split_rows {
        start.push(at);
        at += n;
    }
    let total = at;
    let mut paths: Vec<&str> = plan.splits.iter().map(|s| s.path.as_str()).collect();
    paths.dedup();
    let file_idx: HashMap<&str, u32> = paths
        .iter()
        .enumerate()
        .map(|(i, p)| (*p, i as u32))
        .collect();
    let split_file: Vec<u32> = plan
        .splits
        .iter()
        .map(|s| file_idx[s.path.as_str()])
        .collect();
    let file_bounds: Vec<(u64, u64)> = {
        let mut v: Vec<(u64, u64)> = vec![(u64::MAX, 0); paths.len()];
        for (i, s) in split_file.iter().enumerate() {
            let e = &mut v[*s as usize];
            e.0 = e.0.min(start[i]);
            e.1 = e.1.max(start[i] + split_rows[i]);
        }
        v
    };
    let file_of = |id: u64| -> u32 {
        let i = start.partition_point(|&s| s <= id) - 1;
        split_file[i]
    };
    let (w, b) = (a.workers, a.batch_size);
    let mut rows_out = Vec::new();

    // Read throughput: the whole input as one rank, per buffer size, through the stream reader.
    let pool = rayon::ThreadPoolBuilder::new().build()?;
    let bytes_per_row = {
        let mut r = hydrofeed_format::open_split(&storage, &plan, &plan.splits[0], &read)?;
        let batch = r.next().transpose()?.expect("a first batch");
        batch.get_array_memory_size() as f64 / batch.num_rows().max(1) as f64
    };
    for &buffer in &a.buffers {
        let spec = OrderSpec::new(buffer, a.cycle_length);
        let mut qs = Vec::new();
        for e in 0..a.epochs {
            for r in 0..w {
                let (x, z) = chunk_range(total, w, b, r);
                let seg = Segment {
                    data_epoch: e,
                    workers: w,
                    chunk: r,
                    from: 0,
                    to: z - x,
                };
                let ids: Vec<u64> = expand(&split_rows, &split_units, a.seed, true, spec, b, &seg)
                    .into_iter()
                    .map(|(s, row)| start[s as usize] + row)
                    .collect();
                qs.push(quality(&ids, &file_of, b as usize));
            }
        }
        let lease = |workers: u32, chunk: u32| {
            let (x, z) = chunk_range(total, workers, b, chunk);
            OrderLease {
                segment: Segment {
                    data_epoch: 0,
                    workers,
                    chunk,
                    from: 0,
                    to: z - x,
                },
                seed: a.seed,
                shuffle: true,
                batch_size: b,
                spec,
            }
        };
        // Unbounded memory: the bench measures the order's reads, not the budget's waits.
        let budget = Budget::new(usize::MAX, 2);
        let count = Arc::new(ByteCount::default());
        let counted = metered(&storage, count.clone());
        let ctx = StreamCtx {
            storage: &counted,
            plan: &plan,
            read: &read,
            pool: &pool,
            budget: &budget,
            on_skipped: None,
            on_padded: None,
            pad_source: None,
        };
        // Bytes from storage: every rank's share of an epoch, against the input's.
        for r in 0..w {
            read_segment(&ctx, &lease(w, r), b as usize, |_, _| true)?;
        }
        let storage_ratio = count.get() as f64 / input_bytes as f64;
        let t0 = Instant::now();
        let mut n = 0u64;
        let mut made = Ok(());
        // Each batch made, as a reader of rows without a ring would get it.
        read_segment(&ctx, &lease(1, 0), b as usize, |rows, _permit| {
            match rows.materialize() {
                Ok(batch) => n += batch.num_rows() as u64,
                Err(e) => made = Err(e),
            }
            made.is_ok()
        })?;
        made?;
        let secs = t0.elapsed().as_secs_f64();
        let held = if buffer > 0 {
            2 * (buffer + u64::from(a.cycle_length))
        } else {
            2 * hydrofeed_coord::order::BLOCK_ROWS * u64::from(a.cycle_length)
        };
        rows_out.push(serde_json::json!({
            "order": "hydrofeed fixed",
            "buffer_rows": buffer,
            "rows_held": held,
            "memory_mb": held as f64 * bytes_per_row / 1048576.0,
            "rows_per_s": n as f64 / secs,
            "storage_bytes_vs_input": storage_ratio,
            "quality": summarize(&qs),
        }));
        // tf.data with the same memory: a shuffle buffer of the rows the fixed order holds.
        let mut tq = Vec::new();
        for e in 0..a.epochs {
            let mut rng = Rng(mix64(a.seed ^ u64::from(e)));
            let order = split_order(a.seed, e, paths.len() as u32);
            for r in 0..w as usize {
                let mine: Vec<(u64, u64)> = order
                    .iter()
                    .skip(r)
                    .step_by(w as usize)
                    .map(|&f| file_bounds[f as usize])
                    .collect();
                let s = tfdata_stream(&mine, a.cycle_length as usize, held as usize, &mut rng);
                tq.push(quality(&s, &file_of, b as usize));
            }
        }
        rows_out.push(serde_json::json!({
            "order": "tf.data interleave+shuffle (same memory)",
            "buffer_rows": held,
            "rows_held": held,
            "memory_mb": held as f64 * bytes_per_row / 1048576.0,
            "quality": summarize(&tq),
        }));
    }
    // The limit: a true random permutation of each rank's rows.
    let mut rq = Vec::new();
    let mut rng = Rng(a.seed);
    for _ in 0..a.epochs {
        let mut all: Vec<u64> = (0..total).collect();
        for i in (1..all.len()).rev() {
            all.swap(i, rng.below(i + 1));
        }
        let q = chunk_range(total, w, b, 1).0;
        for r in 0..w as usize {
            rq.push(quality(
                &all[r * q as usize..(r + 1) * q as usize],
                &file_of,
                b as usize,
            ));
        }
    }
    rows_out.push(serde_json::json!({
        "order": "random permutation (limit)",
        "quality": summarize(&rq),
    }));
    let plain = rows_out[0]["rows_per_s"].as_f64().unwrap_or(0.0);
    let ratios: serde_json::Map<String, serde_json::Value> = rows_out
        .iter()
        .filter(|r| r["rows_per_s"].is_number() && r["buffer_rows"].as_u64() != Some(0))
        .map(|r| {
            (
                format!("buffer_{}_vs_no_buffer", r["buffer_rows"]),
                serde_json::json!(r["rows_per_s"].as_f64().unwrap_or(0.0) / plain),
            )
        })
        .collect();
    let out = serde_json::json!({
        "benchmark": "order",
        "input": input,
        "rows": total,
        "files": paths.len(),
        "splits": split_rows.len(),
        "workers": w,
        "batch_size": b,
        "cycle_length": a.cycle_length,
        "order_version": OrderSpec::VERSION,
        "input_bytes": input_bytes,
        "seed": a.seed,
        "epochs_scored": a.epochs,
        "results": rows_out,
        "ratios": ratios,
    });
    if a.json {
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        println!(
            "{:<44} {:>9} {:>9} {:>10} {:>10} {:>9} {:>12} {:>8}",
            "order", "buffer", "MiB", "adjacent", "files/bat", "|corr|", "rows/s", "storage"
        );
        for r in out["results"].as_array().into_iter().flatten() {
            let q = &r["quality"];
            println!(
                "{:<44} {:>9} {:>9.1} {:>10.5} {:>10.2} {:>9.4} {:>12} {:>8}",
                r["order"].as_str().unwrap_or(""),
                r["buffer_rows"]
                    .as_u64()
                    .map_or("-".into(), |v| v.to_string()),
                r["memory_mb"].as_f64().unwrap_or(0.0),
                q["adjacent_fraction"].as_f64().unwrap_or(0.0),
                q["files_per_batch"].as_f64().unwrap_or(0.0),
                q["abs_corr_max"].as_f64().unwrap_or(0.0),
                r["rows_per_s"]
                    .as_f64()
                    .map_or("-".into(), |v| format!("{v:.0}")),
                r["storage_bytes_vs_input"]
                    .as_f64()
                    .map_or("-".into(), |v| format!("{v:.3}x")),
            );
        }
    }
    Ok(())
}
