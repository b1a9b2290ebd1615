//! Iceberg's row-level deletes: the rows of a snapshot's data files that its delete files
//! remove, found before the plan counts rows, so that equal steps and exactly-once count only
//! the rows left (the plan reads them as it reads a Delta deletion vector, [`crate::deletion`]).
//!
//! - Position delete files (format v2): Parquet files of `file_path` (field id 2147483546)
//!   and `pos` (2147483545) rows, each the position (from 0) of a deleted row in the data file
//!   of that path, as the manifest names it.
//! - Deletion vectors (format v3): a blob of a Puffin file (`deletion-vector-v1`), at the
//!   entry's `content_offset`, `content_size_in_bytes` long, deleting rows of the one data file
//!   its `referenced_data_file` names. The blob is framed as a Delta deletion vector stored in
//!   a file is (a big-endian length, the magic number `D1 D3 39 64`, a portable 64-bit
//!   Roaring bitmap, a big-endian CRC-32), and is read by the same code.
//!
//! A delete applies to a data file when the delete's data sequence number is at least the data
//! file's (the spec's rule for position deletes: a file added after the delete was committed
//! is not touched by it). Sequence numbers are the entries' own, or, for entries added in the
//! manifest's snapshot (left null), the manifest's. A data file's deletes from several delete
//! files are merged into one set.
//!
//! Equality delete files are read by [`super::equality`]: their rows join the same sets.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::Array;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ProjectionMask;

use crate::deletion::{Deleted, DeletionVector};
use crate::delta::{bad, read_all, TableFile};
use crate::Result;
use hydrofeed_storage::Storage;

/// A live data file of the snapshot, as its manifest entry names it.
pub(super) struct DataEntry {
    /// The file.
    pub file: TableFile,
    /// `file_path` as the manifest wrote it: what delete files name the file by.
    pub raw_path: String,
    /// Its data sequence number.
    pub seq: i64,
    /// Its partition (`None`: its spec has no fields).
    pub partition: Option<super::partition::PartKey>,
}

/// Where a delete file keeps its deletes.
pub(super) enum DeleteKind {
    /// A Parquet file of `(file_path, pos)` rows.
    Positions,
    /// A deletion vector: a blob of a Puffin file.
    Vector {
        /// Where the blob starts.
        offset: u64,
        /// Its bytes, framing included.
        size: u64,
    },
}

/// A live position delete file or deletion vector of the snapshot.
pub(super) struct DeleteEntry {
    /// The delete file, as storage opens it.
    pub path: String,
    /// How its deletes are stored.
    pub kind: DeleteKind,
    /// Its data sequence number.
    pub seq: i64,
    /// Rows it deletes (the entry's `record_count`).
    pub records: u64,
    /// The only data file it deletes from, where the entry names one (always, for a vector).
    pub referenced: Option<String>,
}

/// Field ids of a position delete file's columns (the spec's reserved ids).
const FILE_PATH_ID: i32 = 2_147_483_546;
const POS_ID: i32 = 2_147_483_545;

/// Applies `deletes` and the equality deletes `equality` to `data` (`by_id`: the snapshot's
/// top-level columns): each data file some delete applies to is given the merged set of its
/// deleted rows (as an inline vector the plan reads); the files are returned in order.
pub(super) fn apply(
    storage: &Arc<dyn Storage>,
    data: Vec<DataEntry>,
    deletes: &[DeleteEntry],
    equality: &[super::equality::EqualityDelete],
    by_id: &super::stats::ById,
) -> Result<Vec<TableFile>> {
    let by_path: HashMap<&str, usize> = data
        .iter()
        .enumerate()
        .map(|(i, d)| (d.raw_path.as_str(), i))
        .collect();
    let mut sets: HashMap<usize, Deleted> = HashMap::new();
    // The data file of `raw` a delete of sequence number `seq` applies to.
    let target = |raw: &str, seq: i64| by_path.get(raw).copied().filter(|&i| data[i].seq <= seq);
    for d in deletes {
        match d.kind {
            DeleteKind::Vector { offset, size } => {
                let raw = d.referenced.as_deref().ok_or_else(|| {
                    bad(
                        &d.path,
                        "a deletion vector whose manifest entry names no referenced_data_file",
                    )
                })?;
                let Some(i) = target(raw, d.seq) else {
                    continue;
                };
                let dv = DeletionVector {
                    storage_type: "p".into(),
                    path_or_inline_dv: d.path.clone(),
                    offset: Some(offset),
                    // The framing's length and CRC-32 around the magic number and bitmap.
                    size_in_bytes: size.checked_sub(8).ok_or_else(|| {
                        bad(
                            &d.path,
                            format!("a deletion vector of {size} bytes at {offset}: too short"),
                        )
                    })?,
                    cardinality: d.records,
                };
                let set = dv.load(storage, "", &data[i].file.status.path)?;
                sets.entry(i).or_default().union_with(&set);
            }
            DeleteKind::Positions => {
                if d.referenced
                    .as_deref()
                    .is_some_and(|raw| target(raw, d.seq).is_none())
                {
                    continue;
                }
                for (raw, positions) in positions(storage, &d.path)? {
                    if let Some(i) = target(&raw, d.seq) {
                        let set = Deleted::from_rows(positions);
                        sets.entry(i).or_default().union_with(&set);
                    }
                }
            }
        }
    }
    if !equality.is_empty() {
        for (i, set) in super::equality::deleted(storage, &data, equality, by_id)? {
            sets.entry(i).or_default().union_with(&set);
        }
    }
    Ok(data
        .into_iter()
        .enumerate()
        .map(|(i, mut d)| {
            if let Some(set) = sets.get(&i).filter(|s| !s.is_empty()) {
                d.file.deletion = Some(DeletionVector::inline(set));
            }
            d.file
        })
        .collect())
}

/// The positions a position delete file deletes, by the data file path it names them by.
fn positions(storage: &Arc<dyn Storage>, path: &str) -> Result<HashMap<String, Vec<u64>>> {
    let err = |e: &dyn std::fmt::Display| bad(path, format!("Iceberg position delete file: {e}"));
    let builder =
        ParquetRecordBatchReaderBuilder::try_new(read_all(storage, path)?).map_err(|e| err(&e))?;
    // The columns by field id where the file carries ids, else by the spec's names.
    let fields = builder.parquet_schema().root_schema().get_fields().to_vec();
    let find = |id: i32, name: &str| {
        fields
            .iter()
            .position(|f| {
                let info = f.get_basic_info();
                info.has_id() && info.id() == id
            })
            .or_else(|| fields.iter().position(|f| f.name() == name))
            .ok_or_else(|| {
                bad(
                    path,
                    format!("an Iceberg position delete file without {name}"),
                )
            })
    };
    let (fp, pos) = (find(FILE_PATH_ID, "file_path")?, find(POS_ID, "pos")?);
    let mask = ProjectionMask::roots(builder.parquet_schema(), [fp, pos]);
    let names = [
        fields[fp].name().to_string(),
        fields[pos].name().to_string(),
    ];
    let reader = builder
        .with_projection(mask)
        .with_batch_size(8192)
        .build()
        .map_err(|e| err(&e))?;
    let mut out: HashMap<String, Vec<u64>> = HashMap::new();
    for b in reader {
        let b = b.map_err(|e| err(&e))?;
        let col = |n: &str| {
            b.column_by_name(n)
                .ok_or_else(|| bad(path, format!("no column {n}")))
        };
        let files = arrow::compute::cast(col(&names[0])?, &arrow_schema::DataType::Utf8)
            .map_err(|e| err(&e))?;
        let files = files.as_string::<i32>();
        let pos = col(&names[1])?
            .as_primitive_opt::<Int64Type>()
            .ok_or_else(|| bad(path, "an Iceberg position delete file whose pos is no long"))?;
        for i in 0..b.num_rows() {
            if files.is_null(i) || pos.is_null(i) || pos.value(i) < 0 {
                return Err(bad(
                    path,
                    format!("row {i}: a position delete without a file path or position"),
                ));
            }
            out.entry(files.value(i).to_string())
                .or_default()
                .push(pos.value(i) as u64);
        }
    }
    Ok(out)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use hydrofeed_storage::FileStatus;

    fn data(raw: &str, seq: i64) -> DataEntry {
        DataEntry {
            file: TableFile {
                status: FileStatus {
                    path: raw.trim_start_matches("file:").to_string(),
                    len: 1,
                    is_dir: false,
                    modified_ms: None,
                },
                partition: Vec::new(),
                records: Some(10),
                deletion: None,
                stats: None,
            },
            raw_path: raw.to_string(),
            seq,
            partition: None,
        }
    }

    /// Writes a position delete file of `rows` to `dir` (columns by the spec's names).
    fn delete_file(dir: &std::path::Path, name: &str, rows: &[(&str, i64)]) -> String {
        use arrow_array::{Int64Array, RecordBatch, StringArray};
        let b = RecordBatch::try_from_iter([
            (
                "file_path",
                Arc::new(StringArray::from_iter_values(rows.iter().map(|r| r.0))) as Arc<dyn Array>,
            ),
            (
                "pos",
                Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.1))),
            ),
        ])
        .unwrap();
        parquet_file(dir, name, &b)
    }

    /// `b` written as the Parquet file `dir/name` (arrow-rs's writer); its path.
    pub(crate) fn parquet_file(
        dir: &std::path::Path,
        name: &str,
        b: &arrow_array::RecordBatch,
    ) -> String {
        let path = dir.join(name);
        let f = std::fs::File::create(&path).unwrap();
        let mut w = parquet::arrow::ArrowWriter::try_new(f, b.schema(), None).unwrap();
        w.write(b).unwrap();
        w.close().unwrap();
        path.to_string_lossy().into_owned()
    }

    #[test]
    fn position_deletes_apply_by_path_and_sequence_number() {
        let dir = tempfile::tempdir().unwrap();
        let storage: Arc<dyn Storage> = Arc::new(hydrofeed_storage::local::LocalStorage);
        let one = delete_file(
            dir.path(),
            "d1.parquet",
            &[
                ("file:/a", 1),
                ("file:/a", 3),
                ("file:/b", 0),
                ("file:/c", 2),
            ],
        );
        let two = delete_file(dir.path(), "d2.parquet", &[("file:/a", 4)]);
        let del = |path: &str, seq: i64| DeleteEntry {
            path: path.to_string(),
            kind: DeleteKind::Positions,
            seq,
            records: 0,
            referenced: None,
        };
        // /b was added after the first delete (sequence number 3 > 2): untouched by it.
        let files = apply(
            &storage,
            vec![data("file:/a", 1), data("file:/b", 3), data("file:/c", 2)],
            &[del(&one, 2), del(&two, 4)],
            &[],
            &Default::default(),
        )
        .unwrap();
        let rows = |f: &TableFile| {
            f.deletion
                .as_ref()
                .map(|dv| dv.load(&storage, "", "x").unwrap())
                .map(|d| (0..10).filter(|&i| d.contains(i)).collect::<Vec<_>>())
        };
        assert_eq!(rows(&files[0]), Some(vec![1, 3, 4]));
        assert_eq!(rows(&files[1]), None);
        assert_eq!(rows(&files[2]), Some(vec![2]));
        // A delete file naming one data file is not opened for the others.
        let scoped = DeleteEntry {
            referenced: Some("file:/b".into()),
            ..del("/nonexistent.parquet", 2)
        };
        let files = apply(
            &storage,
            vec![data("file:/b", 3)],
            &[scoped],
            &[],
            &Default::default(),
        )
        .unwrap();
        assert!(files[0].deletion.is_none());
    }
}
