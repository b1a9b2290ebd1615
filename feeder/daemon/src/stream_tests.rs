use std::path::{Path, PathBuf};
use std::time::Duration;

use hydrofeed_coord::order::{chunk_range, OrderSpec, Segment};
use hydrofeed_format::gen::{write_dataset, GenOptions};
use hydrofeed_format::split::Format;
use hydrofeed_storage as storage;

use super::*;
use crate::pipeline::decode_pool;

/// Bytes of one generated row (784 floats and an id, as read with every column).
const ROW_BYTES: usize = 784 * 4 + 8 + 8;

/// 12,000 generated rows in two Parquet files under `dir`; returns the files in order.
fn dataset(dir: &Path) -> Vec<PathBuf> {
    let gen = GenOptions {
        format: Format::Parquet,
        rows: 12_000,
        files: 2,
        ..Default::default()
    };
    write_dataset(dir, &gen).unwrap();
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    files
}

/// Reads the one-rank segment of `dir`'s data (batches of 100, 4 lanes, a shuffle buffer of
/// `buffer` rows) within `budget`, handing every gather and permit to `emit`.
fn read_all(
    dir: &Path,
    buffer: u64,
    budget: &Arc<Budget>,
    emit: impl FnMut(Gather, Option<Permit>) -> bool,
) -> Result<()> {
    let input = dir.display().to_string();
    let storage = storage::open_storage(&input).unwrap();
    let read = ReadOptions::default();
    let plan = hydrofeed_format::plan(&storage, &input, &read).unwrap();
    let (_, total) = chunk_range(plan.split_rows().iter().sum(), 1, 100, 0);
    let o = OrderLease {
        segment: Segment {
            data_epoch: 0,
            workers: 1,
            chunk: 0,
            from: 0,
            to: total,
        },
        seed: 1,
        shuffle: true,
        batch_size: 100,
        spec: OrderSpec::new(buffer, 4),
    };
    let ctx = StreamCtx {
        storage: &storage,
        plan: &plan,
        read: &read,
        pool: &decode_pool(2).unwrap(),
        budget,
        on_skipped: None,
        on_padded: None,
        pad_source: None,
    };
    read_segment(&ctx, &o, 100, emit)
}

/// Rows a fixed-order stream hands on before its budget stops it, while nothing takes them (a
/// trainer still starting): what it reads ahead.
fn rows_read_ahead(buffer: u64, budget_bytes: usize) -> usize {
    let d = tempfile::tempdir().unwrap();
    dataset(d.path());
    let budget = Budget::new(budget_bytes, 2);
    let (tx, rx) = crossbeam_channel::unbounded();
    thread::scope(|s| {
        let b = budget.clone();
        let dir = d.path();
        // Every gather and permit is kept: nothing is taken.
        let reader = s.spawn(move || read_all(dir, buffer, &b, |g, p| tx.send((g, p)).is_ok()));
        // Until the stream has handed nothing on for half a second (it waits for its budget).
        let mut held: Vec<_> = Vec::new();
        let started = std::time::Instant::now();
        while started.elapsed() < Duration::from_secs(30) {
            match rx.recv_timeout(Duration::from_millis(500)) {
                Ok(x) => held.push(x),
                Err(_) => break,
            }
        }
        let ahead = held.iter().map(|(g, _)| g.num_rows()).sum();
        budget.close();
        reader.join().unwrap().unwrap();
        ahead
    })
}

/// The budget counts what the stream holds, not more: rows handed on (and the window being
/// read) fill most of it before the stream waits. A slice of a decoded batch counts its own
/// rows, not the whole batch's buffers, and a window's rows are not counted twice (the
/// window's permit and its rows' permits).
#[test]
fn a_stream_reads_ahead_as_far_as_its_budget_allows() {
    let budget = 16 << 20;
    for buffer in [0, 1000] {
        let ahead = rows_read_ahead(buffer, budget);
        let share = (ahead * ROW_BYTES) as f64 / budget as f64;
        eprintln!("buffer {buffer}: {ahead} rows read ahead, {share:.2} of the budget");
        assert!(
            share >= 0.7,
            "buffer {buffer}: {ahead} rows ({share:.2} of the budget) read ahead"
        );
        assert!(
            share <= 1.3,
            "buffer {buffer}: {ahead} rows, over the budget"
        );
    }
}

/// A lane that fails (a corrupt page in the second file) ends the stream with its error, named
/// by file, while the other lanes are reading ahead: no hang, no rows after it.
#[test]
fn a_lane_that_fails_ends_the_stream_with_its_error() {
    let d = tempfile::tempdir().unwrap();
    let bad = dataset(d.path()).pop().unwrap();
    let mut bytes = std::fs::read(&bad).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid..mid + 4096].fill(0xff);
    std::fs::write(&bad, bytes).unwrap();
    let (tx, rx) = crossbeam_channel::bounded(1);
    let dir = d.path().to_path_buf();
    thread::spawn(move || {
        let mut rows = 0usize;
        let r = read_all(&dir, 0, &Budget::new(usize::MAX, 2), |g, _| {
            rows += g.num_rows();
            true
        });
        let _ = tx.send((r, rows));
    });
    let (r, rows) = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("the stream ended");
    let e = r.expect_err("a corrupt page is an error").to_string();
    assert!(e.contains(&bad.display().to_string()), "{e}");
    assert!(rows < 12_000, "{rows} rows");
}
