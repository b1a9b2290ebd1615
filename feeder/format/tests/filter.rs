//! Filtered plans and reads (`ReadOptions::filter`): the plan counts the rows that pass, the
//! reader yields exactly them, positions are theirs, and the units statistics rule out are
//! never read.

use std::path::Path;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{ArrayRef, Float64Array, Int64Array, RecordBatch, StringArray};
use hydrofeed_format::filter::Filter;
use hydrofeed_format::gen::{write_dataset, GenOptions};
use hydrofeed_format::split::Format;
use hydrofeed_format::{open_split, plan, plan_counted, OnError, Plan, ReadOptions};
use hydrofeed_storage::local::LocalStorage;
use hydrofeed_storage::metered::{metered, ByteCount};
use hydrofeed_storage::Storage;

/// Row `i` of the table: `id` = i, `score` = (i % 7) as a float, null every 10th row, `name`.
fn rows(lo: i64, hi: i64) -> RecordBatch {
    let ids: Vec<i64> = (lo..hi).collect();
    let score: Float64Array = ids
        .iter()
        .map(|&i| (i % 10 != 3).then_some((i % 7) as f64))
        .collect();
    let names = StringArray::from_iter_values(ids.iter().map(|i| format!("n{}", i % 5)));
    // 100 bytes a row that no encoding shrinks much: the data pages outweigh the footer.
    let blob = StringArray::from_iter_values(ids.iter().map(|i| {
        (0..10)
            .map(|k| format!("{:010}", (i * 7919 + k * 104_729) % 1_000_003))
            .collect::<String>()
    }));
    let cols: Vec<(&str, ArrayRef)> = vec![
        ("id", Arc::new(Int64Array::from(ids))),
        ("score", Arc::new(score)),
        ("name", Arc::new(names)),
        ("blob", Arc::new(blob)),
    ];
    RecordBatch::try_from_iter(cols).unwrap()
}

/// `part=a` (ids 0..400) and `part=b` (ids 400..800), each one file of 4 row groups of 100.
fn table(dir: &Path) {
    for (part, lo) in [("a", 0), ("b", 400)] {
        let d = dir.join(format!("part={part}"));
        std::fs::create_dir_all(&d).unwrap();
        let f = std::fs::File::create(d.join("f.parquet")).unwrap();
        let props = parquet::file::properties::WriterProperties::builder()
            .set_max_row_group_row_count(Some(100))
            .build();
        let b = rows(lo, lo + 400);
        let mut w = parquet::arrow::ArrowWriter::try_new(f, b.schema(), Some(props)).unwrap();
        w.write(&b).unwrap();
        w.close().unwrap();
    }
}

fn opts(filter: &str) -> ReadOptions {
    ReadOptions {
        filter: Some(Filter::parse(filter).unwrap()),
        // One split per row group, so that splits have one unit.
        split_bytes: 1,
        ..ReadOptions::default()
    }
}

/// The ids every split yields, in split order, and each split's planned rows checked.
fn read_all(storage: &Arc<dyn Storage>, p: &Plan, o: &ReadOptions) -> Vec<i64> {
    let mut ids = Vec::new();
    for s in &p.splits {
        let mut n = 0;
        for b in open_split(storage, p, s, o).unwrap() {
            let b = b.unwrap();
            assert_eq!(b.schema(), p.schema);
            n += b.num_rows() as u64;
            ids.extend(
                b.column_by_name("id")
                    .unwrap()
                    .as_primitive::<Int64Type>()
                    .values(),
            );
        }
        assert_eq!(n, s.rows, "split {} yields the rows planned", s.id);
    }
    ids
}

/// The ids for which `pred` holds on (id, score, name, part).
fn expected(pred: impl Fn(i64, Option<f64>, &str, &str) -> bool) -> Vec<i64> {
    (0..800)
        .filter(|&i| {
            let score = (i % 10 != 3).then_some((i % 7) as f64);
            let name = format!("n{}", i % 5);
            let part = if i < 400 { "a" } else { "b" };
            pred(i, score, &name, part)
        })
        .collect()
}

#[test]
fn a_filtered_plan_counts_and_reads_exactly_the_rows_that_pass() {
    let dir = tempfile::tempdir().unwrap();
    table(dir.path());
    let storage: Arc<dyn Storage> = Arc::new(LocalStorage);
    let input = dir.path().display().to_string();
    let cases: Vec<(&str, Vec<i64>)> = vec![
        (
            "id >= 150 AND id < 260",
            expected(|i, _, _, _| (150..260).contains(&i)),
        ),
        (
            "part = 'b' AND score > 4",
            expected(|_, s, _, p| p == "b" && s.is_some_and(|s| s > 4.0)),
        ),
        (
            "score IS NULL OR name IN ('n1', 'n2')",
            expected(|_, s, n, _| s.is_none() || n == "n1" || n == "n2"),
        ),
        (
            "NOT (score < 3)",
            expected(|_, s, _, _| s.is_some_and(|s| s >= 3.0)),
        ),
        ("id < 0", vec![]),
    ];
    for (f, want) in cases {
        let o = opts(f);
        let p = plan(&storage, &input, &o).unwrap();
        assert_eq!(p.total_rows(), want.len() as u64, "{f}: rows planned");
        let mut got = read_all(&storage, &p, &o);
        got.sort_unstable();
        assert_eq!(got, want, "{f}");
    }
    // The projection need not hold the filter's columns.
    let o = ReadOptions {
        columns: Some(vec!["name".into(), "id".into()]),
        ..opts("part = 'a' AND score = 2")
    };
    let p = plan(&storage, &input, &o).unwrap();
    let names: Vec<&str> = p
        .schema
        .fields()
        .iter()
        .map(|f| f.name().as_str())
        .collect();
    assert_eq!(names, vec!["name", "id"]);
    let mut got = read_all(&storage, &p, &o);
    got.sort_unstable();
    assert_eq!(got, expected(|_, s, _, p| p == "a" && s == Some(2.0)));
}

#[test]
fn partitions_and_statistics_decide_units_without_reading_them() {
    let dir = tempfile::tempdir().unwrap();
    table(dir.path());
    let bytes = Arc::new(ByteCount::default());
    let local: Arc<dyn Storage> = Arc::new(LocalStorage);
    let storage = metered(&local, bytes.clone());
    let input = dir.path().display().to_string();
    // Row group 2 of part=b (ids 600..700) alone holds rows that pass.
    let o = opts("part = 'b' AND id >= 600 AND id < 650");
    let p = plan(&storage, &input, &o).unwrap();
    let cost = &p.filter.as_ref().unwrap().cost;
    assert_eq!(cost.units, 8);
    assert_eq!(cost.none_by_stats, 7, "{}", cost.line());
    assert_eq!(cost.counted, 1, "{}", cost.line());
    assert_eq!(p.total_rows(), 50);
    let passing: Vec<u64> = p.splits.iter().map(|s| s.rows).collect();
    assert_eq!(passing, vec![0, 0, 0, 0, 0, 0, 50, 0]);
    let got = read_all(&storage, &p, &o);
    assert_eq!(got, (600..650).collect::<Vec<_>>());
    // With the file's 4 row groups in one split, only that row group is read, not the file.
    let o = ReadOptions {
        split_bytes: 1 << 30,
        ..o
    };
    let p = plan(&storage, &input, &o).unwrap();
    let s = p.splits.iter().find(|s| s.rows > 0).unwrap();
    assert_eq!(s.units, vec![0, 0, 50, 0]);
    let before = bytes.get();
    let n: usize = open_split(&storage, &p, s, &o)
        .unwrap()
        .map(|b| b.unwrap().num_rows())
        .sum();
    assert_eq!(n, 50);
    let read = bytes.get() - before;
    let whole = std::fs::metadata(dir.path().join("part=b/f.parquet"))
        .unwrap()
        .len();
    assert!(
        read < whole / 2,
        "read {read} bytes of a {whole}-byte file for one row group of 4"
    );
    // A filter statistics take whole: no counting pass.
    let p = plan(&storage, &input, &opts("id >= 0 AND part IS NOT NULL")).unwrap();
    let cost = &p.filter.as_ref().unwrap().cost;
    assert_eq!((cost.all_by_stats, cost.counted), (8, 0), "{}", cost.line());
    assert_eq!(p.total_rows(), 800);
}

#[test]
fn positions_are_the_passing_rows_and_skip_rows_passes_whole_units() {
    let dir = tempfile::tempdir().unwrap();
    table(dir.path());
    let storage: Arc<dyn Storage> = Arc::new(LocalStorage);
    let input = dir.path().display().to_string();
    // All 4 row groups of a file in one split; a filter keeping ids with score 1.
    let o = ReadOptions {
        split_bytes: 1 << 30,
        ..opts("score = 1 AND id >= 100")
    };
    let p = plan(&storage, &input, &o).unwrap();
    let s = &p.splits[0];
    let want: Vec<i64> = expected(|i, s, _, _| (100..400).contains(&i) && s == Some(1.0));
    assert_eq!(s.rows, want.len() as u64);
    assert_eq!(s.units.len(), 4, "the units count passing rows");
    assert_eq!(s.units[0], 0, "row group 0 (ids 0..100) holds none");
    let at_unit_2 = s.units[1];
    // A lease from the start of row group 2 passes groups 0 and 1 without reading them.
    let mut r = open_split(&storage, &p, s, &o).unwrap();
    assert_eq!(r.skip_rows(at_unit_2), at_unit_2);
    let rest: Vec<i64> = r
        .flat_map(|b| {
            b.unwrap()
                .column_by_name("id")
                .unwrap()
                .as_primitive::<Int64Type>()
                .values()
                .to_vec()
        })
        .collect();
    assert_eq!(rest, want[at_unit_2 as usize..]);
    // Inside a unit: nothing passed over (the caller drops the rows).
    let mut r = open_split(&storage, &p, s, &o).unwrap();
    assert_eq!(r.skip_rows(at_unit_2 + 3), at_unit_2);
}

#[test]
fn a_feeder_takes_the_coordinators_counts_and_refuses_others() {
    let dir = tempfile::tempdir().unwrap();
    table(dir.path());
    let storage: Arc<dyn Storage> = Arc::new(LocalStorage);
    let input = dir.path().display().to_string();
    let o = opts("score >= 5");
    let counted = plan(&storage, &input, &o).unwrap();
    let counts = counted.filter_counts().unwrap();
    let taken = plan_counted(&storage, &input, &o, Some(&counts)).unwrap();
    assert_eq!(taken.split_rows(), counted.split_rows());
    assert!(taken.filter.as_ref().unwrap().cost.given);
    assert_eq!(
        read_all(&storage, &taken, &o).len() as u64,
        counted.total_rows()
    );
    let e = plan_counted(&storage, &input, &o, Some(&counts[1..])).unwrap_err();
    assert!(e.to_string().contains("another input"), "{e}");
    let mut wrong = counts.clone();
    wrong[0][0] = 1_000_000;
    let e = plan_counted(&storage, &input, &o, Some(&wrong)).unwrap_err();
    assert!(e.to_string().contains("do not fit"), "{e}");
}

/// 3,000 `gen` rows in 3 files of `format` (ids 0..3000 in order), and the input's path.
fn generated(format: Format) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    write_dataset(
        dir.path(),
        &GenOptions {
            format,
            rows: 3000,
            files: 3,
            ..GenOptions::default()
        },
    )
    .unwrap();
    let input = dir.path().display().to_string();
    (dir, input)
}

#[test]
fn every_format_filters_the_same_rows() {
    for format in [Format::Parquet, Format::Orc, Format::Avro, Format::Tfrecord] {
        let (_dir, input) = generated(format);
        let storage: Arc<dyn Storage> = Arc::new(LocalStorage);
        let o = ReadOptions {
            filter: Some(Filter::parse("id BETWEEN 500 AND 1499 AND label <> 3").unwrap()),
            columns: Some(vec!["id".into()]),
            ..ReadOptions::default()
        };
        let p = plan(&storage, &input, &o).unwrap();
        // The reference: the same rows unfiltered, filtered here by hand.
        let all = plan(&storage, &input, &ReadOptions::default()).unwrap();
        let mut want = Vec::new();
        for s in &all.splits {
            for b in open_split(&storage, &all, s, &ReadOptions::default()).unwrap() {
                let b = b.unwrap();
                let id = b.column_by_name("id").unwrap().as_primitive::<Int64Type>();
                let label = b
                    .column_by_name("label")
                    .unwrap()
                    .as_primitive::<Int64Type>();
                for i in 0..b.num_rows() {
                    if (500..1500).contains(&id.value(i)) && label.value(i) != 3 {
                        want.push(id.value(i));
                    }
                }
            }
        }
        assert!(want.len() > 500, "{format:?}: {}", want.len());
        let mut got = read_all(&storage, &p, &o);
        got.sort_unstable();
        want.sort_unstable();
        assert_eq!(got, want, "{format:?}");
    }
}

#[test]
fn a_unit_skipped_as_corrupt_keeps_the_positions_of_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    table(dir.path());
    // Corrupt the data pages of part=a's row group 1 in a column the filter does not read.
    let path = dir.path().join("part=a/f.parquet");
    let meta = {
        let f = std::fs::File::open(&path).unwrap();
        parquet::file::reader::SerializedFileReader::new(f).unwrap()
    };
    use parquet::file::reader::FileReader;
    let col = meta.metadata().row_group(1).column(2);
    let (start, len) = col.byte_range();
    let mut bytes = std::fs::read(&path).unwrap();
    for b in &mut bytes[start as usize + 20..(start + len) as usize] {
        *b = 0xff;
    }
    std::fs::write(&path, bytes).unwrap();
    let storage: Arc<dyn Storage> = Arc::new(LocalStorage);
    let input = path.display().to_string();
    let o = ReadOptions {
        on_error: OnError::Skip,
        split_bytes: 1 << 30,
        ..opts("score = 2")
    };
    let p = plan(&storage, &input, &o).unwrap();
    let s = &p.splits[0];
    assert_eq!(s.units.len(), 4);
    let mut r = open_split(&storage, &p, s, &o).unwrap();
    let mut got = 0u64;
    for b in r.by_ref() {
        got += b.unwrap().num_rows() as u64;
    }
    let gaps = r.skipped_rows().to_vec();
    assert_eq!(gaps.len(), 1, "{gaps:?}");
    assert_eq!(
        (gaps[0].start, gaps[0].end),
        (s.units[0], s.units[0] + s.units[1])
    );
    assert_eq!(
        got + gaps[0].rows(),
        s.rows,
        "every planned position is read or skipped"
    );
}

#[test]
fn parquet_row_group_statistics_rule_files_out() {
    for (format, by_stats) in [
        (Format::Parquet, true),
        // (`gen`'s ORC writer, orc-rust's, writes no stripe statistics: pyarrow's files, which
        // have them, are in python/tests/test_filter.py.)
        (Format::Orc, false),
        (Format::Avro, false),
        (Format::Tfrecord, false),
    ] {
        let (_dir, input) = generated(format);
        let storage: Arc<dyn Storage> = Arc::new(LocalStorage);
        let o = ReadOptions {
            filter: Some(Filter::parse("id >= 200 AND id < 700").unwrap()),
            ..ReadOptions::default()
        };
        let p = plan(&storage, &input, &o).unwrap();
        assert_eq!(p.total_rows(), 500, "{format:?}");
        let c = &p.filter.as_ref().unwrap().cost;
        if by_stats {
            // Files 2 and 3 hold ids 1000..3000: their units are ruled out unread.
            assert!(
                c.none_by_stats >= 2 && c.counted <= c.units - 2,
                "{format:?}: {}",
                c.line()
            );
        } else {
            assert_eq!(
                c.counted,
                c.units,
                "{format:?}: no statistics: {}",
                c.line()
            );
        }
    }
}
