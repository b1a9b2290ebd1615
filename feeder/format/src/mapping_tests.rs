use super::*;
use arrow_array::{Int32Array, Int64Array, StringArray};
use std::collections::HashMap;

fn with_id(f: Field, id: i32) -> Field {
    f.with_metadata(HashMap::from([(FIELD_ID.to_string(), id.to_string())]))
}

fn col(name: &str, id: i32, t: DataType) -> Column {
    Column::new(name, Key::Id(id), true, Kind::Primitive(t))
}

/// Batches handed out as a split reader would.
struct Batches(std::vec::IntoIter<RecordBatch>, SchemaRef);

impl Iterator for Batches {
    type Item = Result<RecordBatch>;
    fn next(&mut self) -> Option<Self::Item> {
        self.0.next().map(Ok)
    }
}

impl SplitReader for Batches {
    fn schema(&self) -> SchemaRef {
        self.1.clone()
    }
    fn skipped(&self) -> SkipStats {
        SkipStats::default()
    }
}

#[test]
fn a_file_is_read_by_field_id_with_added_columns_null_and_widened_types() {
    // The table: b (id 2, was `a`, int widened to long), c (id 4, added), st (id 5) whose
    // field w (id 6) was `u` and z (id 7) was added.
    let st = Column::new(
        "st",
        Key::Id(5),
        true,
        Kind::Struct(vec![
            col("w", 6, DataType::Int32),
            col("z", 7, DataType::Int64),
        ]),
    );
    let table = TableColumns {
        columns: vec![
            col("b", 2, DataType::Int64),
            col("c", 4, DataType::Int64),
            st,
        ],
        names_without_ids: false,
        name_mapping: None,
    };
    let st_file = DataType::Struct(Fields::from(vec![with_id(
        Field::new("u", DataType::Int32, true),
        6,
    )]));
    let file = Schema::new(vec![
        with_id(Field::new("gone", DataType::Utf8, true), 3),
        with_id(Field::new("a", DataType::Int32, true), 2),
        with_id(Field::new("st", st_file.clone(), true), 5),
    ]);
    let fc = table.file("f.parquet", &file).unwrap();
    let want = table.schema();
    let read = fc.file_schema(&want).unwrap();
    let names: Vec<_> = read.fields().iter().map(|f| f.name().as_str()).collect();
    assert_eq!(names, ["a", "st"]);
    let DataType::Struct(sf) = &st_file else {
        unreachable!()
    };
    let batch = RecordBatch::try_new(
        read.clone(),
        vec![
            Arc::new(Int32Array::from(vec![Some(1), None])),
            Arc::new(StructArray::new(
                sf.clone(),
                vec![Arc::new(Int32Array::from(vec![7, 8]))],
                None,
            )),
        ],
    )
    .unwrap();
    let r = fc
        .reader(
            Box::new(Batches(vec![batch].into_iter(), read)),
            want.clone(),
        )
        .unwrap();
    let got: Vec<RecordBatch> = r.map(|b| b.unwrap()).collect();
    assert_eq!(got[0].schema(), want);
    let b = got[0]
        .column(0)
        .as_primitive::<arrow_array::types::Int64Type>();
    assert_eq!(b, &Int64Array::from(vec![Some(1), None]));
    assert_eq!(got[0].column(1).null_count(), 2);
    let s = got[0].column(2).as_struct();
    assert_eq!(
        s.column(0).as_ref(),
        &Int32Array::from(vec![7, 8]) as &dyn Array
    );
    assert_eq!(s.column(1).null_count(), 2);
}

#[test]
fn a_type_that_is_no_widening_is_refused_naming_the_column_and_file() {
    let table = TableColumns {
        columns: vec![col("b", 2, DataType::Int32)],
        names_without_ids: false,
        name_mapping: None,
    };
    let file = Schema::new(vec![with_id(Field::new("a", DataType::Int64, true), 2)]);
    let e = table.file("f.parquet", &file).unwrap_err().to_string();
    assert!(
        e.contains("f.parquet") && e.contains("\"b\"") && e.contains("widening"),
        "{e}"
    );
    let file = Schema::new(vec![with_id(Field::new("a", DataType::Utf8, true), 2)]);
    assert!(table.file("f.parquet", &file).is_err());
    // Nested: named by its dotted path.
    let table = TableColumns {
        columns: vec![Column::new(
            "st",
            Key::Id(1),
            true,
            Kind::Struct(vec![col("x", 2, DataType::Float32)]),
        )],
        names_without_ids: false,
        name_mapping: None,
    };
    let inner = Fields::from(vec![with_id(Field::new("x", DataType::Float64, true), 2)]);
    let file = Schema::new(vec![with_id(
        Field::new("st", DataType::Struct(inner), true),
        1,
    )]);
    let e = table.file("g.parquet", &file).unwrap_err().to_string();
    assert!(e.contains("\"st.x\"") && e.contains("g.parquet"), "{e}");
}

#[test]
fn required_columns_a_file_lacks_and_files_without_ids_are_refused() {
    let table = TableColumns {
        columns: vec![Column::new(
            "b",
            Key::Id(2),
            false,
            Kind::Primitive(DataType::Int64),
        )],
        names_without_ids: false,
        name_mapping: None,
    };
    let file = Schema::new(vec![with_id(Field::new("x", DataType::Int64, true), 9)]);
    let e = table.file("f.parquet", &file).unwrap_err().to_string();
    assert!(e.contains("required") && e.contains("\"b\""), "{e}");
    // No field id at all: refused when the columns changed, else read by the table's names.
    let file = Schema::new(vec![Field::new("b", DataType::Int64, true)]);
    let e = table.file("f.parquet", &file).unwrap_err().to_string();
    assert!(e.contains("no field ids"), "{e}");
    let table = TableColumns {
        names_without_ids: true,
        name_mapping: None,
        ..table
    };
    let fc = table.file("f.parquet", &file).unwrap();
    assert_eq!(
        fc.file_schema(&table.schema()).unwrap().field(0).name(),
        "b"
    );
}

#[test]
fn physical_names_find_columns_and_encodings_are_not_type_changes() {
    let table = TableColumns {
        columns: vec![
            Column::new(
                "s",
                Key::Name("col-1".into()),
                true,
                Kind::Primitive(DataType::Utf8),
            ),
            Column::new(
                "l",
                Key::Name("col-2".into()),
                true,
                Kind::List(Box::new(Column::new(
                    "element",
                    Key::Name(String::new()),
                    true,
                    Kind::Primitive(DataType::Int64),
                ))),
            ),
        ],
        names_without_ids: false,
        name_mapping: None,
    };
    let item = Arc::new(Field::new("item", DataType::Int32, true));
    let file = Schema::new(vec![
        Field::new("col-2", DataType::LargeList(item.clone()), true),
        Field::new("col-1", DataType::LargeUtf8, true),
    ]);
    let fc = table.file("f.parquet", &file).unwrap();
    let want = table.schema();
    let read = fc.file_schema(&want).unwrap();
    let batch = RecordBatch::try_new(
        read.clone(),
        vec![
            Arc::new(arrow_array::LargeStringArray::from(vec!["a", "b"])),
            Arc::new(LargeListArray::new(
                item,
                arrow_buffer::OffsetBuffer::new(vec![0i64, 2, 3].into()),
                Arc::new(Int32Array::from(vec![1, 2, 3])),
                None,
            )),
        ],
    )
    .unwrap();
    let got: Vec<RecordBatch> = fc
        .reader(
            Box::new(Batches(vec![batch].into_iter(), read)),
            want.clone(),
        )
        .unwrap()
        .map(|b| b.unwrap())
        .collect();
    assert_eq!(got[0].schema(), want);
    assert_eq!(
        got[0].column(0).as_ref(),
        &StringArray::from(vec!["a", "b"]) as &dyn Array
    );
    let l = got[0].column(1).as_list::<i32>();
    assert_eq!(
        l.value(0).as_ref(),
        &Int64Array::from(vec![1, 2]) as &dyn Array
    );
}

/// A file without field ids in a table whose schema changed: refused without a name mapping,
/// read by it with one (the names a column had, a widening cast); a nested column found by the
/// mapping is refused by name.
#[test]
fn a_name_mapping_gives_a_file_without_ids_its_columns() {
    let mut table = TableColumns {
        columns: vec![col("id", 1, DataType::Int64), col("x2", 2, DataType::Int64)],
        names_without_ids: false,
        name_mapping: None,
    };
    let file = Schema::new(vec![
        Field::new("id", DataType::Int64, true),
        Field::new("x", DataType::Int32, true),
    ]);
    let e = table.file("imp.parquet", &file).unwrap_err().to_string();
    assert!(e.contains("no field ids"), "{e}");
    table.name_mapping = Some(
        serde_json::from_str(
            r#"[{"names":["id"],"field-id":1},{"names":["x","x2"],"field-id":2}]"#,
        )
        .unwrap(),
    );
    let fc = table.file("imp.parquet", &file).unwrap();
    let read = fc.file_schema(&table.schema()).unwrap();
    assert_eq!(read.fields().len(), 2);
    assert_eq!(read.field(1).name(), "x");
    // Nested fields through the mapping's nested entries: a struct's field by its name, a
    // list's element and a map's key and value by the spec's names, whatever the file calls
    // them; a field the mapping does not name has no id, so its table column is null.
    table.columns = vec![
        Column::new(
            "st",
            Key::Id(2),
            true,
            Kind::Struct(vec![
                col("y2", 3, DataType::Int32),
                col("q", 9, DataType::Int32),
            ]),
        ),
        Column::new(
            "l",
            Key::Id(4),
            true,
            Kind::List(Box::new(Column::new(
                "element",
                Key::Id(5),
                true,
                Kind::Struct(vec![col("u", 6, DataType::Int64)]),
            ))),
        ),
    ];
    table.name_mapping = Some(
        serde_json::from_str(
            r#"[{"names":["st"],"field-id":2,"fields":[{"names":["y","y2"],"field-id":3},
                {"names":["other"],"field-id":9}]},
               {"names":["l"],"field-id":4,"fields":[{"names":["element"],"field-id":5,
                "fields":[{"names":["u"],"field-id":6}]}]}]"#,
        )
        .unwrap(),
    );
    let item = Field::new(
        "item",
        DataType::Struct(vec![Field::new("u", DataType::Int64, true)].into()),
        true,
    );
    let file = Schema::new(vec![
        Field::new(
            "st",
            DataType::Struct(
                vec![
                    Field::new("y", DataType::Int32, true),
                    Field::new("q", DataType::Int32, true),
                ]
                .into(),
            ),
            true,
        ),
        Field::new("l", DataType::List(Arc::new(item)), true),
    ]);
    let fc = table.file("imp.parquet", &file).unwrap();
    let Some((0, Conv::Struct(st))) = &fc.from[0] else {
        panic!("{:?}", fc.from[0]);
    };
    // y2 is the file's y (mapped by its old name); q is not the file's q (id 9 is "other").
    assert!(matches!(st[0], Some((0, Conv::Same))), "{st:?}");
    assert!(st[1].is_none(), "{st:?}");
    let Some((1, Conv::List(e))) = &fc.from[1] else {
        panic!("{:?}", fc.from[1]);
    };
    assert!(matches!(e.as_ref(), Conv::Struct(u) if matches!(u[..], [Some((0, Conv::Same))])));
}
