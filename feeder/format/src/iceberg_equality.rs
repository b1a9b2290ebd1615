//! Iceberg's equality deletes: a delete file of rows of some columns (its `equality_ids`) deletes
//! every row of an older data file whose values in those columns equal one of its rows (a null
//! equal to a null, as the spec says).
//!
//! Which rows that is cannot be told without reading the data files, so the key columns of
//! every data file an equality delete applies to are read when the snapshot is planned (the
//! coordinator, and each feeder again), their rows compared with the delete files' in Arrow's
//! row format (`arrow::row`, values cast to the table's types first), and the positions that
//! match become deleted rows as a position delete's are: the plan counts the rows left.
//!
//! A delete applies to the data files whose data sequence number is lower than its own (not
//! equal: a file committed with the delete is not touched by it) and, for a delete file of a
//! partitioned spec, that are in its partition (the same spec, an equal tuple as the manifests
//! record it); a delete file of a spec without fields applies to every data file. Data files
//! outside every delete file's reach are not read. Refused by name: key columns that are not
//! top-level primitive columns of the snapshot's schema, and a data or delete file that lacks
//! a key column's field id.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use arrow::row::{OwnedRow, RowConverter, SortField};
use arrow_array::ArrayRef;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ProjectionMask;

use super::deletes::DataEntry;
use super::partition::PartKey;
use super::stats::ById;
use crate::deletion::Deleted;
use crate::delta::{bad, read_all};
use crate::Result;
use hydrofeed_storage::Storage;

/// A live equality delete file of the snapshot.
#[derive(Clone)]
pub(super) struct EqualityDelete {
    /// The delete file, as storage opens it.
    pub path: String,
    /// The field ids of its key columns.
    pub ids: Vec<i32>,
    /// Its data sequence number.
    pub seq: i64,
    /// The partition it applies within (`None`: its spec has no fields, it applies to all).
    pub partition: Option<PartKey>,
}

/// The rows the equality deletes `deletes` remove from each data file of `data` (by index);
/// `by_id`: the snapshot's top-level columns.
pub(super) fn deleted(
    storage: &Arc<dyn Storage>,
    data: &[DataEntry],
    deletes: &[EqualityDelete],
    by_id: &ById,
) -> Result<HashMap<usize, Deleted>> {
    let mut out: HashMap<usize, Deleted> = HashMap::new();
    // Delete files by their key columns: each data file is read once per set of keys.
    let mut by_keys: HashMap<Vec<i32>, Vec<&EqualityDelete>> = HashMap::new();
    for d in deletes {
        let mut ids = d.ids.clone();
        ids.sort_unstable();
        ids.dedup();
        by_keys.entry(ids).or_default().push(d);
    }
    for (ids, files) in by_keys {
        let types = ids
            .iter()
            .map(|id| {
                by_id.get(id).map(|(_, t)| t.clone()).ok_or_else(|| {
                    bad(
                        &files[0].path,
                        format!(
                            "an equality delete on field id {id}, which is no top-level \
                                 column of a primitive type in the snapshot's schema"
                        ),
                    )
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let converter = RowConverter::new(types.iter().cloned().map(SortField::new).collect())
            .map_err(|e| bad(&files[0].path, format!("equality delete keys: {e}")))?;
        // The delete files' keys, each with its sequence number and partition: a data file is
        // matched against those newer than it whose partition it is in.
        let mut keys: Vec<(&EqualityDelete, HashSet<OwnedRow>)> = Vec::new();
        for f in &files {
            let rows = key_rows(storage, &f.path, &ids, &types, &converter)?;
            keys.push((f, rows.into_iter().collect()));
        }
        for (i, d) in data.iter().enumerate() {
            let newer: Vec<&HashSet<OwnedRow>> = keys
                .iter()
                .filter(|(f, k)| f.seq > d.seq && !k.is_empty() && applies(f, d))
                .map(|(_, k)| k)
                .collect();
            if newer.is_empty() {
                continue;
            }
            let rows = key_rows(storage, &d.file.status.path, &ids, &types, &converter)?;
            let hit = rows
                .iter()
                .enumerate()
                .filter(|(_, r)| newer.iter().any(|k| k.contains(*r)))
                .map(|(p, _)| p as u64);
            let set = Deleted::from_rows(hit);
            if !set.is_empty() {
                // A file under deletes of other key columns too: the rows of both.
                out.entry(i).or_default().union_with(&set);
            }
        }
    }
    Ok(out)
}

/// Whether the delete file `f` reaches the data file `d`'s partition.
fn applies(f: &EqualityDelete, d: &DataEntry) -> bool {
    f.partition
        .as_ref()
        .is_none_or(|p| d.partition.as_ref() == Some(p))
}

/// Every row of the columns `ids` (field ids) of the Parquet file `path`, in file order, in
/// Arrow's row format (each column cast to its table type, `types`).
fn key_rows(
    storage: &Arc<dyn Storage>,
    path: &str,
    ids: &[i32],
    types: &[arrow_schema::DataType],
    converter: &RowConverter,
) -> Result<Vec<OwnedRow>> {
    let err = |e: &dyn std::fmt::Display| bad(path, format!("equality delete keys: {e}"));
    let builder =
        ParquetRecordBatchReaderBuilder::try_new(read_all(storage, path)?).map_err(|e| err(&e))?;
    let top = builder.parquet_schema().root_schema().get_fields().to_vec();
    let mut roots = Vec::with_capacity(ids.len());
    for id in ids {
        let i = top
            .iter()
            .position(|f| f.get_basic_info().has_id() && f.get_basic_info().id() == *id)
            .ok_or_else(|| {
                bad(
                    path,
                    format!(
                        "no column of field id {id}, a key of an equality delete: a file \
                         without field ids under equality deletes is not read"
                    ),
                )
            })?;
        roots.push(i);
    }
    let names: Vec<String> = roots.iter().map(|&i| top[i].name().to_string()).collect();
    let mask = ProjectionMask::roots(builder.parquet_schema(), roots);
    let reader = builder
        .with_projection(mask)
        .with_batch_size(8192)
        .build()
        .map_err(|e| err(&e))?;
    let mut out = Vec::new();
    for b in reader {
        let b = b.map_err(|e| err(&e))?;
        let cols = names
            .iter()
            .zip(types)
            .map(|(n, t)| {
                let c = b
                    .column_by_name(n)
                    .ok_or_else(|| bad(path, format!("no column {n}")))?;
                arrow::compute::cast(c, t).map_err(|e| err(&e))
            })
            .collect::<Result<Vec<ArrayRef>>>()?;
        let rows = converter.convert_columns(&cols).map_err(|e| err(&e))?;
        out.extend(rows.iter().map(|r| r.owned()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::delta::TableFile;
    use arrow_array::{Int32Array, Int64Array, RecordBatch};
    use arrow_schema::{DataType, Field, Schema};
    use hydrofeed_storage::FileStatus;

    /// A Parquet file of `id` (field id 1) and, where given, `k` (field id 2).
    fn file(dir: &std::path::Path, name: &str, ids: &[i64], ks: Option<&[i32]>) -> String {
        let field = |n: &str, t: DataType, id: &str| {
            Field::new(n, t, false).with_metadata([("PARQUET:field_id".into(), id.into())].into())
        };
        let mut fields = vec![field("id", DataType::Int64, "1")];
        let mut cols: Vec<ArrayRef> = vec![Arc::new(Int64Array::from(ids.to_vec()))];
        if let Some(ks) = ks {
            fields.push(field("k", DataType::Int32, "2"));
            cols.push(Arc::new(Int32Array::from(ks.to_vec())));
        }
        let b = RecordBatch::try_new(Arc::new(Schema::new(fields)), cols).unwrap();
        super::super::deletes::tests::parquet_file(dir, name, &b)
    }

    #[test]
    fn rows_equal_to_a_newer_delete_on_any_key_set_are_deleted() {
        let dir = tempfile::tempdir().unwrap();
        let storage: Arc<dyn Storage> = Arc::new(hydrofeed_storage::local::LocalStorage);
        let ids: Vec<i64> = (0..10).collect();
        let ks: Vec<i32> = (0..10).map(|i| i % 3).collect();
        let data_path = file(dir.path(), "data.parquet", &ids, Some(&ks));
        let entry = |seq: i64| DataEntry {
            file: TableFile {
                status: FileStatus {
                    path: data_path.clone(),
                    len: 1,
                    is_dir: false,
                    modified_ms: None,
                },
                partition: Vec::new(),
                records: Some(10),
                deletion: None,
                stats: None,
            },
            raw_path: data_path.clone(),
            seq,
            partition: None,
        };
        // On id alone: 1 and 5. On (id, k): (2, 2) matches, (4, 0) does not (4 has k 1).
        let by_id_only = file(dir.path(), "d1.parquet", &[1, 5], None);
        let by_both = file(dir.path(), "d2.parquet", &[2, 4], Some(&[2, 0]));
        let deletes = [
            EqualityDelete {
                path: by_id_only,
                ids: vec![1],
                seq: 3,
                partition: None,
            },
            EqualityDelete {
                path: by_both,
                ids: vec![2, 1],
                seq: 3,
                partition: None,
            },
        ];
        let by_id: ById = [
            (1, ("id".to_string(), DataType::Int64)),
            (2, ("k".to_string(), DataType::Int32)),
        ]
        .into();
        // The second data file was committed with the deletes: not older, untouched.
        let got = deleted(&storage, &[entry(1), entry(3)], &deletes, &by_id).unwrap();
        assert_eq!(got.len(), 1);
        let d = &got[&0];
        assert_eq!(
            (0..10).filter(|&i| d.contains(i)).collect::<Vec<_>>(),
            [1, 2, 5]
        );
        // Partitions (k's values as a tuple of spec 0): a delete file of partition 1 touches
        // only the data file of partition 1, one of a spec without fields both.
        let mut tuples = super::super::partition::Tuples::default();
        let k: ArrayRef = Arc::new(Int32Array::from(vec![0, 1]));
        let s: ArrayRef = Arc::new(arrow_array::StructArray::from(vec![(
            Arc::new(Field::new("k", DataType::Int32, true)),
            k,
        )]));
        let parts = tuples.keys("m", 0, Some(&s)).unwrap().unwrap();
        let in_part = |p: usize| DataEntry {
            partition: Some(parts[p].clone()),
            ..entry(1)
        };
        let scoped = EqualityDelete {
            partition: Some(parts[1].clone()),
            ..deletes[0].clone()
        };
        let got = deleted(&storage, &[in_part(0), in_part(1)], &[scoped], &by_id).unwrap();
        assert_eq!(got.keys().collect::<Vec<_>>(), [&1]);
        let got = deleted(&storage, &[in_part(0), in_part(1)], &deletes[..1], &by_id).unwrap();
        assert_eq!(got.len(), 2);
        // A key column the schema lacks is named.
        let e = deleted(
            &storage,
            &[entry(1)],
            &[EqualityDelete {
                ids: vec![7],
                ..deletes[0].clone()
            }],
            &by_id,
        )
        .unwrap_err();
        assert!(e.to_string().contains("field id 7"), "{e}");
    }
}
