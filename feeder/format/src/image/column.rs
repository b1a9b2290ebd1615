//! Image columns in batches: the plan's schema with each image column as a `uint8` tensor
//! column, and the split reader that decodes them, one image per task on the decode pool.

use std::sync::Arc;

use arrow_array::{
    Array, ArrayRef, BinaryArray, FixedSizeListArray, Int32Array, LargeBinaryArray, RecordBatch,
    StringArray, StructArray, UInt8Array,
};
use arrow_buffer::NullBuffer;
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use rayon::prelude::*;

use super::decode::{gpu_plan, process, GPU_PLAN_LEN};
use super::ImageSpec;
use crate::{Error, Location, OnError, Result, SkipStats, SkippedRows, SplitReader};

/// Field metadata on an image column: the source's Arrow type as text (`Binary`,
/// `LargeBinary`, or the `Struct(...)` holding a `bytes` field), so a split is read as the file
/// holds it.
const SOURCE_KEY: &str = "hydrofeed.image.source";

/// Field metadata on an image column decoded on the trainer's GPU (`gpu`): its spec; with
/// [`SIZE_KEY`] (`HxW`, the output size) and [`FILTER_KEY`] (the resize filter's name).
const GPU_KEY: &str = "hydrofeed.image.gpu";
const SIZE_KEY: &str = "hydrofeed.image.size";
const FILTER_KEY: &str = "hydrofeed.image.filter";
/// Field metadata on a plan column ([`plan_name`]): the image column it plans.
const PLAN_KEY: &str = "hydrofeed.image.plan";

/// The field of an image struct column that holds the encoded bytes (Hugging Face `datasets`'
/// `Image` feature writes `struct<bytes: binary, path: string>`).
const BYTES_FIELD: &str = "bytes";

/// Whether `t` holds encoded images: binary, large binary, or a struct with a binary `bytes`
/// field.
fn is_image_source(t: &DataType) -> bool {
    match t {
        DataType::Binary | DataType::LargeBinary => true,
        DataType::Struct(fs) => fs.iter().any(|f| {
            f.name() == BYTES_FIELD
                && matches!(f.data_type(), DataType::Binary | DataType::LargeBinary)
        }),
        _ => false,
    }
}

/// The tensor type of a spec's output: `FixedSizeList` of rows of pixels of 3 bytes, which the
/// trainer sees as `(N, H, W, 3) uint8`.
pub fn tensor_type(h: u32, w: u32) -> DataType {
    let px = DataType::FixedSizeList(Arc::new(Field::new("item", DataType::UInt8, false)), 3);
    let row = DataType::FixedSizeList(Arc::new(Field::new("item", px, false)), w as i32);
    DataType::FixedSizeList(Arc::new(Field::new("item", row, false)), h as i32)
}

/// `schema` with each spec's column as its tensor column (a struct column's name kept). A
/// column that is missing, or neither binary nor a struct with a binary `bytes` field, is a
/// schema error naming it.
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
        if !is_image_source(f.data_type()) {
            return Err(Error::Schema {
                path: path.to_string(),
                detail: format!(
                    "image column {:?} is {}, not binary (encoded JPEG, PNG or WebP bytes) nor a \
                     struct with a binary {BYTES_FIELD:?} field",
                    spec.column,
                    f.data_type()
                ),
            });
        }
        let (h, w) = spec.out_size();
        let mut md = f.metadata().clone();
        md.insert(SOURCE_KEY.into(), f.data_type().to_string());
        if !spec.gpu {
            *f = Field::new(f.name(), tensor_type(h, w), f.is_nullable()).with_metadata(md);
            continue;
        }
        md.insert(GPU_KEY.into(), spec.to_string());
        md.insert(SIZE_KEY.into(), format!("{h}x{w}"));
        md.insert(FILTER_KEY.into(), spec.filter.name().into());
        *f = Field::new(f.name(), bytes_type(f.data_type()), f.is_nullable()).with_metadata(md);
    }
    for spec in specs.iter().filter(|s| s.gpu) {
        let name = plan_name(&spec.column);
        if fields.iter().any(|f| f.name() == &name) {
            return Err(Error::Schema {
                path: path.to_string(),
                detail: format!(
                    "image column {:?} with gpu needs a column {name:?} for its plan, and the \
                     input has one",
                    spec.column
                ),
            });
        }
        let at = fields
            .iter()
            .position(|f| f.name() == &spec.column)
            .map_or(fields.len(), |i| i + 1);
        let md = [(PLAN_KEY.to_string(), spec.column.clone())].into();
        fields.insert(at, Field::new(name, plan_type(), false).with_metadata(md));
    }
    Ok(Arc::new(Schema::new_with_metadata(
        fields,
        schema.metadata().clone(),
    )))
}

/// The name of the plan column of an image column decoded on the trainer's GPU (`gpu`): one
/// row of `int32` `[height, width, resized height, resized width, crop top, crop left, flip]`
/// beside the encoded bytes (python/hydrofeed/images.py reads it).
pub fn plan_name(column: &str) -> String {
    format!("{column}.plan")
}

/// The item of a plan column's lists (see [`plan_name`]).
fn plan_item() -> Arc<Field> {
    Arc::new(Field::new("item", DataType::Int32, false))
}

fn plan_type() -> DataType {
    DataType::FixedSizeList(plan_item(), GPU_PLAN_LEN as i32)
}

/// The bytes column a `gpu` spec sends: the source's binary type, or its struct's `bytes` one.
fn bytes_type(source: &DataType) -> DataType {
    match source {
        DataType::Struct(fs) => fs
            .iter()
            .find(|f| f.name() == BYTES_FIELD)
            .map_or(DataType::Binary, |f| f.data_type().clone()),
        t => t.clone(),
    }
}

/// The schema a split is read with before its images are decoded: [`image_schema`] undone.
pub fn source_schema(schema: &SchemaRef) -> SchemaRef {
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .filter(|f| !f.metadata().contains_key(PLAN_KEY))
        .map(|f| {
            let mut md = f.metadata().clone();
            for k in [GPU_KEY, SIZE_KEY, FILTER_KEY] {
                md.remove(k);
            }
            match md.remove(SOURCE_KEY).map(|t| t.parse::<DataType>()) {
                Some(Ok(t)) => Field::new(f.name(), t, f.is_nullable()).with_metadata(md),
                _ => f.as_ref().clone(),
            }
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
        let mut made: Vec<(String, ArrayRef)> = Vec::new();
        let mut bad: Vec<Option<String>> = vec![None; rows];
        for spec in &self.specs {
            let src = batch
                .column_by_name(&spec.column)
                .ok_or_else(|| Error::Schema {
                    path: self.path.clone(),
                    detail: format!("image column {:?} is not in the batch", spec.column),
                })?;
            let bytes = Bytes::of(src).map_err(|detail| Error::Schema {
                path: self.path.clone(),
                detail: format!("image column {:?}: {detail}", spec.column),
            })?;
            let split = self.split;
            let (errors, arrays) = if spec.gpu {
                let mut plans = vec![0i32; rows * GPU_PLAN_LEN];
                let errors = bytes.per_row(&mut plans, GPU_PLAN_LEN, |i, data, out| {
                    out.copy_from_slice(&gpu_plan(spec, data, split, first + i as u64)?);
                    Ok(())
                });
                let plan = FixedSizeListArray::try_new(
                    plan_item(),
                    GPU_PLAN_LEN as i32,
                    Arc::new(Int32Array::from(plans)),
                    None,
                )
                .map_err(|e| Error::external("image plan", e))?;
                let plan_col = (plan_name(&spec.column), Arc::new(plan) as ArrayRef);
                (
                    errors,
                    vec![(spec.column.clone(), bytes.column(src)), plan_col],
                )
            } else {
                let (h, w) = spec.out_size();
                let size = h as usize * w as usize * 3;
                let mut out = vec![0u8; rows * size];
                let errors = bytes.per_row(&mut out, size, |i, data, px| {
                    process(spec, data, split, first + i as u64, px)
                });
                let field = self
                    .schema
                    .field_with_name(&spec.column)
                    .map_err(|e| Error::external("image column", e))?;
                let tensor = tensor_array(field.data_type(), out, src.nulls().cloned())?;
                (errors, vec![(spec.column.clone(), tensor)])
            };
            for (i, e) in errors {
                let why = format!("column {:?}: {e}", spec.column);
                if self.on_error == OnError::Raise {
                    return Err(self.row_error(first + i as u64, why));
                }
                bad[i].get_or_insert(why);
            }
            made.extend(arrays);
        }
        let columns = self
            .schema
            .fields()
            .iter()
            .map(|f| {
                made.iter()
                    .find(|(n, _)| n == f.name())
                    .map(|(_, a)| a.clone())
                    .or_else(|| batch.column_by_name(f.name()).cloned())
                    .ok_or_else(|| Error::Schema {
                        path: self.path.clone(),
                        detail: format!("column {:?} is not in the batch", f.name()),
                    })
            })
            .collect::<Result<Vec<_>>>()?;
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

/// The encoded bytes of an image column's rows: a binary column, or a struct's `bytes` field
/// (a row's path, where the struct has one, named when its bytes are missing).
struct Bytes<'a> {
    /// The row is null where this is (the column's, or the struct's, nulls).
    outer: &'a dyn Array,
    bytes: &'a dyn Array,
    path: Option<&'a dyn Array>,
}

impl<'a> Bytes<'a> {
    fn of(src: &'a ArrayRef) -> std::result::Result<Self, String> {
        let Some(st) = src.as_any().downcast_ref::<StructArray>() else {
            return Ok(Self {
                outer: src.as_ref(),
                bytes: src.as_ref(),
                path: None,
            });
        };
        let bytes = st
            .column_by_name(BYTES_FIELD)
            .ok_or_else(|| format!("the struct has no {BYTES_FIELD:?} field"))?;
        Ok(Self {
            outer: src.as_ref(),
            bytes: bytes.as_ref(),
            path: st.column_by_name("path").map(|p| p.as_ref()),
        })
    }

    /// `f` on each non-null row's bytes and its `size` values of `out`, one row per task on
    /// the decode pool: the rows whose bytes are missing or whose `f` failed, with the reason.
    fn per_row<T: Send>(
        &self,
        out: &mut [T],
        size: usize,
        f: impl Fn(usize, &[u8], &mut [T]) -> std::result::Result<(), String> + Sync,
    ) -> Vec<(usize, String)> {
        out.par_chunks_mut(size)
            .enumerate()
            .filter_map(|(i, chunk)| {
                let data = match self.value(i)? {
                    Ok(data) => data,
                    Err(e) => return Some((i, e)),
                };
                f(i, data, chunk).err().map(|e| (i, e))
            })
            .collect()
    }

    /// The bytes as one binary column (`src` itself where it is one), nulls where rows are.
    fn column(&self, src: &ArrayRef) -> ArrayRef {
        if !matches!(src.data_type(), DataType::Struct(_)) {
            return src.clone();
        }
        let rows = (0..self.outer.len()).map(|i| self.value(i).and_then(|v| v.ok()));
        match self.bytes.data_type() {
            DataType::LargeBinary => Arc::new(rows.collect::<LargeBinaryArray>()),
            _ => Arc::new(rows.collect::<BinaryArray>()),
        }
    }

    /// Row `i`'s bytes; `None` for a null row, an error for a struct whose bytes are null.
    fn value(&self, i: usize) -> Option<std::result::Result<&'a [u8], String>> {
        if self.outer.is_null(i) {
            return None;
        }
        if self.bytes.is_null(i) {
            let at = self
                .path
                .and_then(|p| p.as_any().downcast_ref::<StringArray>())
                .filter(|p| p.is_valid(i))
                .map(|p| format!(" (the image is at {:?}, which is not read)", p.value(i)))
                .unwrap_or_default();
            return Some(Err(format!("{BYTES_FIELD:?} is null{at}")));
        }
        let any = self.bytes.as_any();
        Some(Ok(match self.bytes.data_type() {
            DataType::LargeBinary => any
                .downcast_ref::<LargeBinaryArray>()
                .map(|a| a.value(i))
                .unwrap_or_default(),
            _ => any
                .downcast_ref::<BinaryArray>()
                .map(|a| a.value(i))
                .unwrap_or_default(),
        }))
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
