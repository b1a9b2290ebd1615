//! The conformance suite: the properties every format reader keeps, run over all four formats
//! on the same generated data (`hydrofeed gen`, MNIST-shaped, `id` unique per row). What is
//! particular to a format (independent writers, codecs, nested types, its own corruptions) is
//! in `format_<format>.rs`.
//!
//! - Every row once: splits read in any order yield exactly their planned rows, and together
//!   every `id` once.
//! - Projection: columns by name in the order asked for; a missing column is a `SchemaError`
//!   naming it.
//! - Batches: never more than `batch_rows` rows, always the plan's schema.
//! - `SplitReader::skip_rows`: a lease that starts at row `k` of a split passes whole units
//!   (row groups, stripes, Avro blocks, TFRecord records) over without decoding them, and the
//!   rows that follow are exactly those after `k`. For Parquet and ORC the units passed over
//!   are not even read: the bytes read fall with `k`. Parquet also passes over the head of the
//!   row group `k` is in (a row selection), fixed-size lists included.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use bytes::Bytes;
use hydrofeed_format::gen::{mnist_row, write_dataset, GenOptions};
use hydrofeed_format::split::Format;
use hydrofeed_format::{open_split, plan, Error, ReadOptions};
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
const SEED: u64 = 0;

/// A one-file dataset of [`ROWS`] rows in `format`, written once per test binary run under
/// cargo's temporary directory for integration tests (removed with the target directory).
fn dataset(format: Format) -> PathBuf {
    static MADE: OnceLock<Mutex<Vec<Format>>> = OnceLock::new();
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "conformance-{}-{ROWS}",
        format!("{format:?}").to_lowercase()
    ));
    let mut made = MADE.get_or_init(Default::default).lock().unwrap();
    if !made.contains(&format) {
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        write_dataset(
            &dir,
            &GenOptions {
                format,
                rows: ROWS,
                files: 1,
                seed: SEED,
                ..Default::default()
            },
        )
        .unwrap();
        made.push(format);
    }
    dir
}

/// Reads the one split of a `format` dataset from row `k`: (rows passed over unread, the ids
/// that follow, bytes read by the reads after planning). Parquet also reads `image` (a
/// fixed-size list, which has its own decode path) and checks each row's pixels.
fn read_from(dir: &std::path::Path, format: Format, k: u64) -> (u64, Vec<i64>, u64) {
    let counter = Arc::new(AtomicU64::new(0));
    let storage: Arc<dyn Storage> = Arc::new(Counting(counter.clone()));
    let mut columns = vec!["id".to_string()];
    if format == Format::Parquet {
        columns.push("image".into());
    }
    let opts = ReadOptions {
        batch_rows: 1000,
        split_bytes: 1 << 40,
        columns: Some(columns),
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
    let mut pixels = Vec::new();
    for b in r {
        let b = b.unwrap();
        let col = b.column(0).as_primitive::<Int64Type>();
        let skip = drop.min(b.num_rows());
        drop -= skip;
        ids.extend(col.values()[skip..].iter().copied());
        if let Some(image) = b.column_by_name("image") {
            let image = image.as_fixed_size_list();
            for row in skip..b.num_rows() {
                mnist_row(SEED, col.value(row) as u64, &mut pixels);
                let got = image.value(row);
                let got = got.as_primitive::<arrow_array::types::Float32Type>();
                assert_eq!(
                    got.values(),
                    &pixels[..],
                    "{format:?} id {}",
                    col.value(row)
                );
            }
        }
    }
    (passed, ids, counter.load(Ordering::Relaxed))
}

fn local() -> Arc<dyn Storage> {
    Arc::new(LocalStorage)
}

/// The rows of each unit of the file, in order: row groups and stripes from the plan (one split
/// each with `split_bytes` 1); Avro blocks and TFRecord records as `gen` writes them.
fn units(format: Format, dir: &Path) -> Vec<u64> {
    match format {
        Format::Parquet | Format::Orc => {
            let opts = ReadOptions {
                split_bytes: 1,
                ..Default::default()
            };
            let p = plan(&local(), dir.to_str().unwrap(), &opts).unwrap();
            p.splits.iter().map(|s| s.rows).collect()
        }
        // `gen` writes Avro blocks of 4096 rows.
        Format::Avro => {
            let mut blocks = vec![4096; (ROWS / 4096) as usize];
            blocks.push(ROWS % 4096);
            blocks
        }
        Format::Tfrecord => vec![1; ROWS as usize],
    }
}

/// Reads from several rows `k` of the one split: whole units before `k` passed over, the rows
/// after `k` exactly, and (Parquet, ORC) fewer bytes read.
fn skip_rows(format: Format) {
    let dir = dataset(format);
    let units = units(format, &dir);
    assert!(units.len() > 2, "{format:?}: several units ({units:?})");
    let ends: Vec<u64> = units
        .iter()
        .scan(0, |n, r| {
            *n += r;
            Some(*n)
        })
        .collect();
    assert_eq!(ends.last(), Some(&ROWS));
    let (_, all, bytes_all) = read_from(&dir, format, 0);
    assert_eq!(all, (0..ROWS as i64).collect::<Vec<_>>());
    let u0 = units[0];
    let mut last_bytes = bytes_all;
    for k in [1, u0 - 1, u0, u0 + 7, ends[1] + 3, ROWS - 1, ROWS] {
        let (passed, ids, bytes) = read_from(&dir, format, k);
        assert_eq!(ids, all[k as usize..], "{format:?} from row {k}");
        // Every whole unit before k is passed over, none after it; Parquet passes over the
        // head of the unit k is in too (a row selection: its rows are not built).
        let want = match format {
            Format::Parquet => k,
            _ => ends.iter().copied().filter(|&e| e <= k).max().unwrap_or(0),
        };
        assert_eq!(passed, want, "{format:?} from row {k}");
        if matches!(format, Format::Parquet | Format::Orc) && k >= u0 {
            assert!(
                bytes < bytes_all,
                "{format:?} from row {k}: read {bytes} bytes, the whole split {bytes_all}"
            );
            // (Parquet opened inside a row group also reads the file's offset index: a few
            // hundred bytes here.)
            let index = if format == Format::Parquet { 4096 } else { 0 };
            assert!(
                bytes <= last_bytes + index,
                "{format:?} from row {k}: {bytes} > {last_bytes}"
            );
            last_bytes = bytes;
        }
    }
}

/// Splits of about 1 MiB read in reverse order: each yields exactly its planned rows, of at
/// most `batch_rows` each and the plan's schema, and together every `id` once, with the
/// values `gen` wrote.
fn every_row_once(format: Format) {
    let dir = dataset(format);
    let opts = ReadOptions {
        batch_rows: 1000,
        split_bytes: 1 << 20,
        ..Default::default()
    };
    let st = local();
    let p = plan(&st, dir.to_str().unwrap(), &opts).unwrap();
    assert!(p.splits.len() > 2, "{format:?}: {} splits", p.splits.len());
    assert_eq!(p.total_rows(), ROWS);
    let mut seen = Vec::with_capacity(ROWS as usize);
    let mut pixels = Vec::new();
    for s in p.splits.iter().rev() {
        let mut rows = 0;
        for b in open_split(&st, &p, s, &opts).unwrap() {
            let b = b.unwrap();
            assert_eq!(b.schema(), p.schema, "{format:?} split {}", s.id);
            assert!(
                b.num_rows() <= 1000,
                "{format:?}: a batch of {}",
                b.num_rows()
            );
            rows += b.num_rows() as u64;
            let id = b.column_by_name("id").unwrap().as_primitive::<Int64Type>();
            let label = b
                .column_by_name("label")
                .unwrap()
                .as_primitive::<Int64Type>();
            for (i, l) in id.values().iter().zip(label.values()) {
                assert_eq!(
                    *l,
                    mnist_row(SEED, *i as u64, &mut pixels),
                    "{format:?} id {i}"
                );
            }
            seen.extend(id.values().iter().copied());
        }
        assert_eq!(
            rows, s.rows,
            "{format:?}: split {} reads the rows it planned",
            s.id
        );
    }
    seen.sort_unstable();
    assert_eq!(seen, (0..ROWS as i64).collect::<Vec<_>>(), "{format:?}");
}

/// Columns come by name in the order asked for; a missing one is a `SchemaError` naming it.
fn projection(format: Format) {
    let dir = dataset(format);
    let opts = ReadOptions {
        columns: Some(vec!["label".into(), "id".into()]),
        batch_rows: 4096,
        ..Default::default()
    };
    let st = local();
    let p = plan(&st, dir.to_str().unwrap(), &opts).unwrap();
    let names: Vec<&str> = p
        .schema
        .fields()
        .iter()
        .map(|f| f.name().as_str())
        .collect();
    assert_eq!(names, ["label", "id"], "{format:?}");
    let b = open_split(&st, &p, &p.splits[0], &opts)
        .unwrap()
        .next()
        .unwrap()
        .unwrap();
    assert_eq!(b.schema(), p.schema);
    let label = b.column(0).as_primitive::<Int64Type>();
    let id = b.column(1).as_primitive::<Int64Type>();
    let mut pixels = Vec::new();
    for (i, l) in id.values().iter().zip(label.values()) {
        assert_eq!(
            *l,
            mnist_row(SEED, *i as u64, &mut pixels),
            "{format:?} id {i}"
        );
    }
    let bad = ReadOptions {
        columns: Some(vec!["id".into(), "nope".into()]),
        ..Default::default()
    };
    let e = plan(&st, dir.to_str().unwrap(), &bad).unwrap_err();
    assert!(matches!(e, Error::Schema { .. }), "{format:?}: {e}");
    assert!(e.to_string().contains("nope"), "{format:?}: {e}");
}

macro_rules! conformance {
    ($($name:ident: $format:expr;)*) => {$(
        mod $name {
            use super::*;

            #[test]
            fn every_row_once_across_splits_in_any_order() {
                every_row_once($format);
            }

            #[test]
            fn projection_in_the_given_order_and_a_missing_column_named() {
                projection($format);
            }

            #[test]
            fn skip_rows_passes_whole_units_over() {
                skip_rows($format);
            }
        }
    )*};
}

conformance! {
    parquet: Format::Parquet;
    orc: Format::Orc;
    avro: Format::Avro;
    tfrecord: Format::Tfrecord;
}

/// Parquet from a row inside a row group, the file having an offset index (`gen` writes one, as
/// parquet-mr and arrow-rs do by default): only the pages from the one holding that row on are
/// fetched (and the dictionary pages), not the row group's column chunks whole; the rows and
/// pixels that follow are exact on both decode paths (`id`: the parquet crate's reader with a
/// row selection; `image`: the fixed-size-list path).
#[test]
fn parquet_from_inside_a_row_group_fetches_its_pages_from_there_on() {
    let dir = dataset(Format::Parquet);
    let units = units(Format::Parquet, &dir);
    let (u0, u1) = (units[0], units[1]);
    let (_, all, _) = read_from(&dir, Format::Parquet, 0);
    let (_, _, at_unit) = read_from(&dir, Format::Parquet, u0);
    let (_, _, at_next) = read_from(&dir, Format::Parquet, u0 + u1);
    let unit_bytes = at_unit - at_next;
    for k in [u0 + 1, u0 + u1 / 2, u0 + u1 * 3 / 4, u0 + u1 - 1] {
        let (passed, ids, bytes) = read_from(&dir, Format::Parquet, k);
        assert_eq!(passed, k);
        assert_eq!(ids, all[k as usize..], "from row {k}");
        // The pages before row k's page stay unread: at most one page's rows more than the
        // rows from k on (pages of `gen`'s files hold well under a tenth of a row group).
        let share = (u0 + u1 - k) as f64 / u1 as f64 + 0.1;
        let got = (bytes - at_next) as f64 / unit_bytes as f64;
        assert!(
            got <= share,
            "from row {k}: {got:.3} of the row group's bytes fetched for {:.3} of its rows",
            share - 0.1
        );
    }
}
