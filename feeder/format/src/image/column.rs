//! Image columns in batches: the plan's schema with each image column as a `uint8` tensor
//! column, and the split reader that decodes them, one image per task on the decode pool.

use std::sync::Arc;

use arrow_array::{Array, ArrayRef, FixedSizeListArray, RecordBatch, UInt8Array};
use arrow_buffer::NullBuffer;
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use rayon::prelude::*;

use super::{decode::process, ImageSpec};
use crate::{Error, Location, OnError, Result, SkipStats, SkippedRows, SplitReader};

/// Field metadata on an image column: the source's type (`binary` or `large_binary`), so a
/// split is read as the file holds it.
const SOURCE_KEY: &str = "hydrofeed.image.source";

/// The tensor type of a spec's output: `FixedSizeList` of rows of pixels of 3 bytes, which the
/// trainer sees as `(N, H, W, 3) uint8`.
pub fn tensor_type(h: u32, w: u32) -> DataType {
    let px = DataType::FixedSizeList(Arc::new(Field::new("item", DataType::UInt8, false)), 3);
    let row = DataType::FixedSizeList(Arc::new(Field::new("item", px, false)), w as i32);
    DataType::FixedSizeList(Arc::new(Field::new("item", row, false)), h as i32)
}

/// `schema` with each spec's column as its tensor column. A column that is missing, or not
/// `binary`/`large_binary`, is a schema error naming it.
pub fn image_schema(schema: &SchemaRef, specs: &[ImageSpec], path: &str) -> Result<SchemaRef> {
    if specs.is_empty() {
        return Ok(schema.clone());
    }
    let mut fields: Vec<Field> = schema.fields().iter().map(|f| f.as_ref().clone()).collect();
    for spec in specs {
        let Some(f) = fields.iter_mut().find(|f| f.name() == &spec.column) else {
            return Err(Error::Schema {
                path: path.to_string(),
                detail: format!("image column {:?} is not in the schema", spec.column),
            });
        };
        let source = match f.data_type() {
            DataType::Binary => "binary",
            DataType::LargeBinary => "large_binary",
            t => {
                return Err(Error::Schema {
                    path: path.to_string(),
                    detail: format!(
                        "image column {:?} is {t}, not binary (encoded JPEG or PNG bytes)",
                        spec.column
                    ),
                })
            }
        };
        let (h, w) = spec.out_size();
        let mut md = f.metadata().clone();
        md.insert(SOURCE_KEY.into(), source.into());
        *f = Field::new(f.name(), tensor_type(h, w), f.is_nullable()).with_metadata(md);
    }
    Ok(Arc::new(Schema::new_with_metadata(
        fields,
        schema.metadata().clone(),
    )))
}

/// The schema a split is read with before its images are decoded: [`image_schema`] undone.
pub fn source_schema(schema: &SchemaRef) -> SchemaRef {
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .map(|f| {
            let mut md = f.metadata().clone();
            match md.remove(SOURCE_KEY).as_deref() {
                Some("binary") => Field::new(f.name(), DataType::Binary, f.is_nullable()),
                Some("large_binary") => {
                    Field::new(f.name(), DataType::LargeBinary, f.is_nullable())
                }
                _ => return f.as_ref().clone(),
            }
            .with_metadata(md)
        })
        .collect();
    Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()))
}

/// A split reader whose image columns are decoded (see the module docs of [`super`]).
pub struct ImageReader {
    inner: Box<dyn SplitReader>,
    schema: SchemaRef,
    specs: Vec<ImageSpec>,
    on_error: OnError,
    path: String,
    split: u32,
    /// The position of the next row the inner reader yields, counted from the split's first.
    next: u64,
    /// Inner skipped ranges already merged into `skipped`.
    inner_seen: usize,
    skipped: Vec<SkippedRows>,
    bad_rows: u64,
}

impl ImageReader {
    /// Decodes `specs`' columns of `inner`'s batches (read with [`source_schema`] of `schema`)
    /// into `schema`'s tensor columns.
    pub fn new(
        inner: Box<dyn SplitReader>,
        schema: SchemaRef,
        specs: Vec<ImageSpec>,
        on_error: OnError,
        path: String,
        split: u32,
    ) -> Self {
        Self {
            inner,
            schema,
            specs,
            on_error,
            path,
            split,
            next: 0,
            inner_seen: 0,
            skipped: Vec::new(),
            bad_rows: 0,
        }
    }

    fn merge_inner_skips(&mut self) {
        let inner = self.inner.skipped_rows();
        for r in &inner[self.inner_seen..] {
            if r.start <= self.next {
                self.next = self.next.max(r.end);
            }
            self.skipped.push(r.clone());
        }
        self.inner_seen = inner.len();
    }

    fn decode(&mut self, batch: RecordBatch) -> Result<RecordBatch> {
        let rows = batch.num_rows();
        let first = self.next;
        self.next += rows as u64;
        let mut columns: Vec<ArrayRef> = batch.columns().to_vec();
        let mut bad: Vec<Option<String>> = vec![None; rows];
        for spec in &self.specs {
            let idx = batch
                .schema()
                .index_of(&spec.column)
                .map_err(|_| Error::Schema {
                    path: self.path.clone(),
                    detail: format!("image column {:?} is not in the batch", spec.column),
                })?;
            let src = batch.column(idx);
            let (h, w) = spec.out_size();
            let size = h as usize * w as usize * 3;
            let mut out = vec![0u8; rows * size];
            let value = |i: usize| -> Option<&[u8]> {
                if src.is_null(i) {
                    return None;
                }
                Some(match src.data_type() {
                    DataType::LargeBinary => src
                        .as_any()
                        .downcast_ref::<arrow_array::LargeBinaryArray>()
                        .map(|a| a.value(i))
                        .unwrap_or_default(),
                    _ => src
                        .as_any()
                        .downcast_ref::<arrow_array::BinaryArray>()
                        .map(|a| a.value(i))
                        .unwrap_or_default(),
                })
            };
            let split = self.split;
            let errors: Vec<(usize, String)> = out
                .par_chunks_mut(size)
                .enumerate()
                .filter_map(|(i, px)| {
                    let data = value(i)?;
                    process(spec, data, split, first + i as u64, px)
                        .err()
                        .map(|e| (i, e))
                })
                .collect();
            for (i, e) in errors {
                let why = format!("column {:?}: {e}", spec.column);
                if self.on_error == OnError::Raise {
                    return Err(self.row_error(first + i as u64, why));
                }
                bad[i].get_or_insert(why);
            }
            let field = self
                .schema
                .field_with_name(&spec.column)
                .map_err(|e| Error::external("image column", e))?;
            columns[idx] = tensor_array(field.data_type(), out, src.nulls().cloned())?;
        }
        let batch = RecordBatch::try_new(self.schema.clone(), columns)
            .map_err(|e| Error::external("image batch", e))?;
        if bad.iter().all(Option::is_none) {
            return Ok(batch);
        }
        let keep: Vec<bool> = bad.iter().map(Option::is_none).collect();
        for (i, why) in bad.into_iter().enumerate() {
            if let Some(why) = why {
                let pos = first + i as u64;
                tracing::warn!("skipped: {}", self.row_error(pos, why.clone()));
                self.bad_rows += 1;
                self.skipped.push(SkippedRows {
                    start: pos,
                    end: pos + 1,
                    reason: format!("row {pos}: {why}"),
                });
            }
        }
        self.skipped.sort_by_key(|r| r.start);
        arrow_select::filter::filter_record_batch(&batch, &keep.into())
            .map_err(|e| Error::external("image batch", e))
    }

    fn row_error(&self, pos: u64, why: String) -> Error {
        Error::data(
            Location {
                path: self.path.clone(),
                split: Some(self.split),
                offset: None,
                unit: Some(format!("row {pos} of the split")),
            },
            "image",
            why,
        )
    }
}

fn tensor_array(t: &DataType, pixels: Vec<u8>, nulls: Option<NullBuffer>) -> Result<ArrayRef> {
    let err = |e| Error::external("image tensor", e);
    let mut nested: Vec<(Arc<Field>, i32)> = Vec::new();
    let mut cur = t;
    while let DataType::FixedSizeList(f, n) = cur {
        nested.push((f.clone(), *n));
        cur = f.data_type();
    }
    let mut arr: ArrayRef = Arc::new(UInt8Array::from(pixels));
    for (k, (f, n)) in nested.iter().enumerate().rev() {
        let outer_nulls = if k == 0 { nulls.clone() } else { None };
        arr = Arc::new(FixedSizeListArray::try_new(f.clone(), *n, arr, outer_nulls).map_err(err)?);
    }
    Ok(arr)
}

impl Iterator for ImageReader {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Self::Item> {
        let batch = self.inner.next()?;
        self.merge_inner_skips();
        Some(batch.and_then(|b| self.decode(b)))
    }
}

impl SplitReader for ImageReader {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn skipped(&self) -> SkipStats {
        let s = self.inner.skipped();
        SkipStats {
            records: s.records + self.bad_rows,
            blocks: s.blocks,
        }
    }

    fn skipped_rows(&self) -> &[SkippedRows] {
        &self.skipped
    }

    fn skip_rows(&mut self, n: u64) -> u64 {
        let done = self.inner.skip_rows(n);
        self.next += done;
        done
    }
}
