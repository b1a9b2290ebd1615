//! `SplitReader::skip_rows`: a lease that starts at row `k` of a split passes whole units
//! (row groups, stripes, Avro blocks, TFRecord records) over without decoding them, and the
//! rows that follow are exactly those after `k`, in every format. For Parquet and ORC the units
//! passed over are not even read: the bytes read fall with `k`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use bytes::Bytes;
use hydrofeed_format::gen::{write_dataset, GenOptions};
use hydrofeed_format::split::Format;
use hydrofeed_format::{open_split, plan, ReadOptions};
use hydrofeed_storage::local::LocalStorage;
use hydrofeed_storage::{BlockLocation, FileStatus, RandomAccess, Result, Storage};

/// Local storage that counts the bytes read through it.
#[derive(Default)]
struct Counting(Arc<AtomicU64>);

struct CountingFile(Arc<dyn RandomAccess>, Arc<AtomicU64>);

impl RandomAccess for CountingFile {
    fn len(&self) -> u64 {
        self.0.len()
    }
    fn read_at(&self, offset: u64, len: usize) -> Result<Bytes> {
        let b = self.0.read_at(offset, len)?;
        self.1.fetch_add(b.len() as u64, Ordering::Relaxed);
        Ok(b)
    }
    fn path(&self) -> &str {
        self.0.path()
    }
}

impl Storage for Counting {
    fn stat(&self, path: &str) -> Result<FileStatus> {
        LocalStorage.stat(path)
    }
    fn list(&self, dir: &str) -> Result<Vec<FileStatus>> {
        LocalStorage.list(dir)
    }
    fn open(&self, path: &str) -> Result<Arc<dyn RandomAccess>> {
        Ok(Arc::new(CountingFile(
            LocalStorage.open(path)?,
            self.0.clone(),
        )))
    }
    fn block_locations(&self, path: &str) -> Result<Vec<BlockLocation>> {
        LocalStorage.block_locations(path)
    }
    fn scheme(&self) -> &'static str {
        "file"
    }
}

const ROWS: u64 = 36_000;

/// Reads the one split of a `format` dataset from row `k`: (rows passed over unread, the ids
/// that follow, bytes read by the reads after planning).
fn read_from(dir: &std::path::Path, format: Format, k: u64) -> (u64, Vec<i64>, u64) {
    let counter = Arc::new(AtomicU64::new(0));
    let storage: Arc<dyn Storage> = Arc::new(Counting(counter.clone()));
    let opts = ReadOptions {
        batch_rows: 1000,
        split_bytes: 1 << 40,
        columns: Some(vec!["id".into()]),
        ..Default::default()
    };
    let p = plan(&storage, dir.to_str().unwrap(), &opts).unwrap();
    assert_eq!(p.splits.len(), 1, "{format:?}: one split");
    assert_eq!(p.total_rows(), ROWS);
    counter.store(0, Ordering::Relaxed);
    let mut r = open_split(&storage, &p, &p.splits[0], &opts).unwrap();
    let passed = r.skip_rows(k);
    assert!(passed <= k, "{format:?}: passed {passed} > {k}");
    let mut drop = (k - passed) as usize;
    let mut ids = Vec::new();
    for b in r {
        let b = b.unwrap();
        let col = b.column(0).as_primitive::<Int64Type>();
        let skip = drop.min(b.num_rows());
        drop -= skip;
        ids.extend(col.values()[skip..].iter().copied());
    }
    (passed, ids, counter.load(Ordering::Relaxed))
}

/// Writes a `format` dataset of [`ROWS`] rows into one file and checks reads from several
/// rows `k`; `units` are the rows of the file's units in order (`None`: ask the plan).
fn check(format: Format, units: Option<Vec<u64>>) {
    let dir = tempfile::tempdir().unwrap();
    write_dataset(
        dir.path(),
        &GenOptions {
            format,
            rows: ROWS,
            files: 1,
            ..Default::default()
        },
    )
    .unwrap();
    let units = units.unwrap_or_else(|| {
        // Parquet and ORC: one split per row group / stripe.
        let opts = ReadOptions {
            split_bytes: 1,
            ..Default::default()
        };
        let p = plan(
            &(Arc::new(LocalStorage) as Arc<dyn Storage>),
            dir.path().to_str().unwrap(),
            &opts,
        )
        .unwrap();
        p.splits.iter().map(|s| s.rows).collect()
    });
    assert!(units.len() > 2, "{format:?}: several units ({units:?})");
    let ends: Vec<u64> = units
        .iter()
        .scan(0, |n, r| {
            *n += r;
            Some(*n)
        })
        .collect();
    assert_eq!(ends.last(), Some(&ROWS));
    let (_, all, bytes_all) = read_from(dir.path(), format, 0);
    assert_eq!(all.len() as u64, ROWS);
    let u0 = units[0];
    let mut last_bytes = bytes_all;
    for k in [1, u0 - 1, u0, u0 + 7, ends[1] + 3, ROWS - 1, ROWS] {
        let (passed, ids, bytes) = read_from(dir.path(), format, k);
        assert_eq!(ids, all[k as usize..], "{format:?} from row {k}");
        // Every whole unit before k is passed over, none after it.
        let want = ends.iter().copied().filter(|&e| e <= k).max().unwrap_or(0);
        assert_eq!(passed, want, "{format:?} from row {k}");
        if matches!(format, Format::Parquet | Format::Orc) && k >= u0 {
            assert!(
                bytes < bytes_all,
                "{format:?} from row {k}: read {bytes} bytes, the whole split {bytes_all}"
            );
            assert!(
                bytes <= last_bytes,
                "{format:?} from row {k}: {bytes} > {last_bytes}"
            );
            last_bytes = bytes;
        }
    }
}

#[test]
fn parquet_passes_row_groups_over_unread() {
    check(Format::Parquet, None);
}

#[test]
fn orc_passes_stripes_over_unread() {
    check(Format::Orc, None);
}

#[test]
fn avro_passes_blocks_over_undecoded() {
    // `gen` writes Avro blocks of 4096 rows.
    let mut blocks = vec![4096; (ROWS / 4096) as usize];
    blocks.push(ROWS % 4096);
    check(Format::Avro, Some(blocks));
}

#[test]
fn tfrecord_passes_records_over_unparsed() {
    check(Format::Tfrecord, Some(vec![1; ROWS as usize]));
}
