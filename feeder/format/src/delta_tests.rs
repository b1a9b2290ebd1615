use super::*;
use hydrofeed_storage::local::LocalStorage;

const META: &str = r#"{"metaData":{"id":"t-1","schemaString":"{\"type\":\"struct\",\"fields\":[{\"name\":\"id\",\"type\":\"long\"},{\"name\":\"p\",\"type\":\"integer\"},{\"name\":\"s\",\"type\":\"string\"}]}","partitionColumns":["p","s"],"configuration":{}}}"#;

fn add(path: &str, p: &str, extra: &str) -> String {
    format!(
        r#"{{"add":{{"path":"{path}","partitionValues":{{"p":"{p}","s":null}},"size":10,"modificationTime":5,"dataChange":true,"stats":"{{\"numRecords\":7}}"{extra}}}}}"#
    )
}

fn table(commits: &[Vec<String>]) -> (tempfile::TempDir, Arc<dyn Storage>) {
    let d = tempfile::tempdir().unwrap();
    let log = d.path().join(LOG_DIR);
    std::fs::create_dir(&log).unwrap();
    for (v, lines) in commits.iter().enumerate() {
        std::fs::write(log.join(format!("{v:020}.json")), lines.join("\n")).unwrap();
    }
    (d, Arc::new(LocalStorage))
}

fn paths(t: &TableFiles) -> Vec<String> {
    t.files
        .iter()
        .map(|f| f.status.path.rsplit('/').next().unwrap().to_string())
        .collect()
}

#[test]
fn a_snapshot_is_the_adds_less_the_removes_up_to_its_version() {
    let (d, s) = table(&[
        vec![
            r#"{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}"#.into(),
            META.into(),
            add("p=1/a.parquet", "1", ""),
            add("p=2/b%20c.parquet", "2", ""),
        ],
        vec![
            r#"{"remove":{"path":"p=1/a.parquet","dataChange":true}}"#.into(),
            add("p=1/d.parquet", "1", ""),
        ],
    ]);
    let root = d.path().to_str().unwrap();
    assert!(is_table(&s, root));
    let v0 = snapshot(&s, root, Some(&SnapshotSpec::Version(0))).unwrap();
    assert_eq!(paths(&v0), ["a.parquet", "b c.parquet"]);
    assert_eq!(v0.snapshot.version, 0);
    assert_eq!(v0.snapshot.id, "t-1");
    let newest = snapshot(&s, root, None).unwrap();
    assert_eq!(newest.snapshot.version, 1);
    assert_eq!(paths(&newest), ["d.parquet", "b c.parquet"]);
    let f = &newest.files[0];
    assert_eq!(f.records, Some(7));
    assert_eq!(
        f.partition,
        [
            ("p".to_string(), Some("1".to_string())),
            ("s".to_string(), None)
        ]
    );
    assert_eq!(
        newest.partition_columns,
        [("p".to_string(), true), ("s".to_string(), false)]
    );
    let e = snapshot(&s, root, Some(&SnapshotSpec::Version(2))).unwrap_err();
    assert!(e.to_string().contains("no version 2"), "{e}");
}

#[test]
fn what_cannot_be_read_right_is_refused_by_name() {
    let feature = r#"{"protocol":{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":["variantType"]}}"#;
    let (d, s) = table(&[vec![feature.into(), META.into(), add("a.parquet", "1", "")]]);
    let e = snapshot(&s, d.path().to_str().unwrap(), None).unwrap_err();
    assert!(e.to_string().contains("variantType"), "{e}");

    let dv = r#","deletionVector":{"storageType":"u","pathOrInlineDv":"x","offset":1,"sizeInBytes":4,"cardinality":2}"#;
    let (d, s) = table(&[vec![META.into(), add("a.parquet", "1", dv)]]);
    let t = snapshot(&s, d.path().to_str().unwrap(), None).unwrap();
    assert_eq!(t.files[0].deletion.as_ref().map(|v| v.cardinality), Some(2));
    // A deletion vector the log does not describe whole is named.
    let dv = r#","deletionVector":{"storageType":"u"}"#;
    let (d, s) = table(&[vec![META.into(), add("a.parquet", "1", dv)]]);
    let e = snapshot(&s, d.path().to_str().unwrap(), None).unwrap_err();
    assert!(e.to_string().contains("its deletion vector"), "{e}");

    // Column mapping is read (below); a mode this reader does not know is named, and so is
    // name mode with a column the log gives no physical name.
    for (mode, said) in [
        ("other", "column mapping mode \"other\""),
        ("name", "no delta.columnMapping.physicalName"),
    ] {
        let mapped = META.replace(
            r#""configuration":{}"#,
            &format!(r#""configuration":{{"delta.columnMapping.mode":"{mode}"}}"#),
        );
        let (d, s) = table(&[vec![mapped, add("a.parquet", "1", "")]]);
        let e = snapshot(&s, d.path().to_str().unwrap(), None).unwrap_err();
        assert!(e.to_string().contains(said), "{e}");
    }

    // The commits before a snapshot were cleaned up, with no checkpoint to start from.
    let (d, s) = table(&[
        vec![META.into(), add("a.parquet", "1", "")],
        vec![add("b.parquet", "1", "")],
    ]);
    std::fs::remove_file(d.path().join(LOG_DIR).join(format!("{:020}.json", 0))).unwrap();
    let e = snapshot(&s, d.path().to_str().unwrap(), None).unwrap_err();
    assert!(e.to_string().contains("no longer reaches"), "{e}");
}

/// A table's metaData under column mapping (`mode`): id (long), v (string), st (struct of
/// w: integer) and the partition column p (integer), each with its physical name and id.
fn mapped_meta(mode: &str) -> String {
    let field = |name: &str, t: &str, id: u32| {
        format!(
            r#"{{"name":"{name}","type":{t},"nullable":true,"metadata":{{"delta.columnMapping.id":{id},"delta.columnMapping.physicalName":"col-{name}"}}}}"#
        )
    };
    let st = format!(
        r#"{{"type":"struct","fields":[{}]}}"#,
        field("w", r#""integer""#, 4)
    );
    let schema = format!(
        r#"{{"type":"struct","fields":[{},{},{},{}]}}"#,
        field("id", r#""long""#, 1),
        field("v", r#""string""#, 2),
        field("st", &st, 3),
        field("p", r#""integer""#, 5)
    );
    let meta = serde_json::json!({"metaData": {
        "id": "t-m", "schemaString": schema, "partitionColumns": ["p"],
        "configuration": {"delta.columnMapping.mode": mode}}});
    meta.to_string()
}

fn mapped_add(path: &str, p: &str, rows: u64) -> String {
    let stats = format!(
        r#"{{"numRecords":{rows},"minValues":{{"col-id":1,"col-st":{{"col-w":3}}}},"maxValues":{{"col-id":2}},"nullCount":{{"col-v":0}}}}"#
    );
    serde_json::json!({"add": {"path": path, "partitionValues": {"col-p": p}, "size": 10,
        "modificationTime": 5, "dataChange": true, "stats": stats}})
    .to_string()
}

#[test]
fn column_mapping_gives_the_tables_names_to_partition_values_stats_and_columns() {
    use crate::mapping::Key;
    let (d, s) = table(&[vec![
        r#"{"protocol":{"minReaderVersion":2,"minWriterVersion":5}}"#.into(),
        mapped_meta("name"),
        mapped_add("ab/x.parquet", "7", 2),
    ]]);
    let t = snapshot(&s, d.path().to_str().unwrap(), None).unwrap();
    let f = &t.files[0];
    assert_eq!(f.partition, [("p".to_string(), Some("7".to_string()))]);
    assert_eq!(t.partition_columns, [("p".to_string(), true)]);
    let st = f.stats.as_ref().unwrap();
    assert_eq!(
        st["minValues"],
        serde_json::json!({"id": 1, "st": {"w": 3}})
    );
    assert_eq!(st["nullCount"], serde_json::json!({"v": 0}));
    let cols = t.columns.as_ref().unwrap();
    let keys: Vec<_> = cols
        .columns
        .iter()
        .map(|c| (c.name.as_str(), &c.key))
        .collect();
    assert_eq!(
        keys,
        [
            ("id", &Key::Name("col-id".into())),
            ("v", &Key::Name("col-v".into())),
            ("st", &Key::Name("col-st".into()))
        ]
    );
    let (d, s) = table(&[vec![mapped_meta("id"), mapped_add("x.parquet", "7", 2)]]);
    let t = snapshot(&s, d.path().to_str().unwrap(), None).unwrap();
    assert_eq!(t.columns.as_ref().unwrap().columns[1].key, Key::Id(2));
    // Without column mapping, the files are read through the table's columns by their own
    // names (its partition columns left out: they come from the log).
    let (d, s) = table(&[vec![META.into(), add("a.parquet", "1", "")]]);
    let t = snapshot(&s, d.path().to_str().unwrap(), None).unwrap();
    let keys: Vec<_> = t
        .columns
        .as_ref()
        .unwrap()
        .columns
        .iter()
        .map(|c| &c.key)
        .collect();
    assert_eq!(keys, [&Key::Name("id".into())]);
}

/// `id` mode: the files' columns found by Parquet field id whatever their names; a file
/// written before a column was added gives nulls.
#[test]
fn id_mode_reads_the_files_by_field_id() {
    use arrow_array::{Int32Array, Int64Array, StringArray};
    use arrow_schema::{DataType, Field, Fields, Schema};
    let (d, s) = table(&[vec![
        r#"{"protocol":{"minReaderVersion":2,"minWriterVersion":5}}"#.into(),
        mapped_meta("id"),
        mapped_add("a.parquet", "1", 2),
        mapped_add("b.parquet", "2", 1),
    ]]);
    let id = |f: Field, i: i32| {
        f.with_metadata(HashMap::from([(
            crate::mapping::FIELD_ID.to_string(),
            i.to_string(),
        )]))
    };
    let write = |name: &str, b: RecordBatch| {
        let f = std::fs::File::create(d.path().join(name)).unwrap();
        let mut w = parquet::arrow::ArrowWriter::try_new(f, b.schema(), None).unwrap();
        w.write(&b).unwrap();
        w.close().unwrap();
    };
    let w_field = Fields::from(vec![id(Field::new("old-w", DataType::Int32, true), 4)]);
    // a.parquet: v under another name, before st was added.
    let a = Arc::new(Schema::new(vec![
        id(Field::new("renamed-v", DataType::Utf8, true), 2),
        id(Field::new("whatever", DataType::Int64, true), 1),
    ]));
    write(
        "a.parquet",
        RecordBatch::try_new(
            a,
            vec![
                Arc::new(StringArray::from(vec!["a", "b"])),
                Arc::new(Int64Array::from(vec![1, 2])),
            ],
        )
        .unwrap(),
    );
    let b = Arc::new(Schema::new(vec![
        id(Field::new("x", DataType::Int64, true), 1),
        id(Field::new("y", DataType::Struct(w_field.clone()), true), 3),
        id(Field::new("z", DataType::Utf8, true), 2),
    ]));
    write(
        "b.parquet",
        RecordBatch::try_new(
            b,
            vec![
                Arc::new(Int64Array::from(vec![3])),
                Arc::new(StructArray::new(
                    w_field,
                    vec![Arc::new(Int32Array::from(vec![30]))],
                    None,
                )),
                Arc::new(StringArray::from(vec!["c"])),
            ],
        )
        .unwrap(),
    );
    let root = d.path().to_str().unwrap();
    let opts = crate::ReadOptions::default();
    let plan = crate::plan(&s, root, &opts).unwrap();
    let names: Vec<_> = plan
        .schema
        .fields()
        .iter()
        .map(|f| f.name().as_str())
        .collect();
    assert_eq!(names, ["id", "v", "st", "p"]);
    let mut rows = Vec::new();
    for sp in &plan.splits {
        let opened = Arc::new(Opened::default());
        let metered = hydrofeed_storage::metered::metered(&s, opened.clone());
        for b in crate::open_split(&metered, &plan, sp, &opts).unwrap() {
            // Planned unread: its footer read once when opened, for its columns and the read.
            assert_eq!(sp.unit, crate::split::SplitUnit::File);
            assert_eq!(*opened.0.lock().unwrap(), vec![sp.path.clone()]);
            let b = b.unwrap();
            for i in 0..b.num_rows() {
                let st = b.column(2).as_struct();
                rows.push((
                    b.column(0)
                        .as_primitive::<arrow_array::types::Int64Type>()
                        .value(i),
                    b.column(1).as_string::<i32>().value(i).to_string(),
                    (!st.is_null(i)).then(|| {
                        st.column(0)
                            .as_primitive::<arrow_array::types::Int32Type>()
                            .value(i)
                    }),
                    b.column(3)
                        .as_primitive::<arrow_array::types::Int64Type>()
                        .value(i),
                ));
            }
        }
    }
    assert_eq!(
        rows,
        [
            (1, "a".to_string(), None, 1),
            (2, "b".to_string(), None, 1),
            (3, "c".to_string(), Some(30), 2)
        ]
    );
}

#[test]
fn snapshots_parse_as_versions_or_times() {
    assert_eq!(
        SnapshotSpec::parse(" 12 ").unwrap(),
        SnapshotSpec::Version(12)
    );
    assert_eq!(
        SnapshotSpec::parse("1970-01-01T00:00:01Z").unwrap(),
        SnapshotSpec::AsOfMs(1000)
    );
    assert!(SnapshotSpec::parse("yesterday").is_err());
    assert_eq!(crate::listing::unescape("a%20b%3Dc"), "a b=c");
}

/// The paths a storage opened, in order.
#[derive(Default)]
struct Opened(std::sync::Mutex<Vec<String>>);

impl hydrofeed_storage::metered::Meter for Opened {
    fn opened(&self, path: &str) {
        self.0.lock().unwrap().push(path.to_string());
    }
    fn ended(&self, _bytes: u64, _took: std::time::Duration) {}
}
