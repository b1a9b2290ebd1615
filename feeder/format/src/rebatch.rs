//! The one rebatcher: batches in, batches of a chosen size out (like arrow-select's
//! `BatchCoalescer`, which also cuts), each piece keeping a tag.
//!
//! Readers decode in their own units (row groups, blocks, `batch_rows`); a trainer's batches
//! are `batch_size` rows that may span units and splits. Every place that re-cuts (`serve`, the
//! feeder daemon with each piece's lease for the lineage, Avro's blocks, `hydrofeed.read`)
//! goes through this type. A batch that is one piece is handed out as is, never copied; the
//! feeder's writer cuts [`Gather`](crate::gather::Gather)s, whose pieces it copies straight
//! into the ring ([`Rebatcher::take_parts`]).

use std::collections::VecDeque;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, FixedSizeListArray, RecordBatch, RecordBatchOptions};
use arrow_schema::{ArrowError, DataType, SchemaRef};

use crate::{Error, Result};

/// Rows that can be counted and cut: a `RecordBatch`, or a [`Gather`](crate::gather::Gather).
pub trait Rowset {
    /// Rows held.
    fn num_rows(&self) -> usize;
    /// Rows `[offset, offset + len)`.
    fn slice(&self, offset: usize, len: usize) -> Self;
}

impl Rowset for RecordBatch {
    fn num_rows(&self) -> usize {
        RecordBatch::num_rows(self)
    }

    fn slice(&self, offset: usize, len: usize) -> Self {
        RecordBatch::slice(self, offset, len)
    }
}

/// Batches pushed in, cut and concatenated into batches of the size asked for.
///
/// `T` tags each pushed batch (the feeder: which lease and split its rows came from); a batch
/// taken out reports the tag and rows of each of its pieces, in order. `B` is what is pushed:
/// record batches (glued on the way out), or the feeder's gathers (handed out as pieces).
#[derive(Debug)]
pub struct Rebatcher<T = (), B = RecordBatch> {
    pending: VecDeque<(B, T)>,
    rows: usize,
}

impl<T, B> Default for Rebatcher<T, B> {
    fn default() -> Self {
        Self {
            pending: VecDeque::new(),
            rows: 0,
        }
    }
}

/// A batch taken out of a [`Rebatcher`], with the tag and rows of each of its pieces in order.
pub type Tagged<T> = (RecordBatch, Vec<(T, usize)>);

/// The pieces of a batch taken out of a [`Rebatcher`], with the tag and rows of each.
pub type Parts<B, T> = (Vec<B>, Vec<(T, usize)>);

impl<T: Clone, B: Rowset> Rebatcher<T, B> {
    /// Appends a batch with its tag (empty batches are dropped).
    pub fn push_tagged(&mut self, b: B, tag: T) {
        if b.num_rows() > 0 {
            self.rows += b.num_rows();
            self.pending.push_back((b, tag));
        }
    }

    /// Rows pending.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Whether no row is pending.
    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    /// Drops every pending row.
    pub fn clear(&mut self) {
        self.pending.clear();
        self.rows = 0;
    }

    /// Takes the first `n` rows pending (fewer when fewer are pending) as pieces, with the tag
    /// and rows of each; a batch ends before a pending piece `cut(first, next)` says to leave
    /// for the next one. `None` when nothing is pending.
    pub fn take_parts(&mut self, n: usize, cut: impl Fn(&B, &B) -> bool) -> Option<Parts<B, T>> {
        if self.rows == 0 || n == 0 {
            return None;
        }
        let mut parts: Vec<B> = Vec::new();
        let mut tags = Vec::new();
        let mut got = 0;
        while got < n {
            if let (Some(first), Some((next, _))) = (parts.first(), self.pending.front()) {
                if cut(first, next) {
                    break;
                }
            }
            let Some((b, tag)) = self.pending.pop_front() else {
                break;
            };
            let want = n - got;
            if b.num_rows() > want {
                self.pending
                    .push_front((b.slice(want, b.num_rows() - want), tag.clone()));
                parts.push(b.slice(0, want));
                tags.push((tag, want));
                got += want;
            } else {
                got += b.num_rows();
                tags.push((tag, b.num_rows()));
                parts.push(b);
            }
        }
        self.rows -= got;
        Some((parts, tags))
    }
}

impl<T: Clone> Rebatcher<T, RecordBatch> {
    /// Takes the first `n` rows pending (fewer when fewer are pending) as one batch, with the
    /// tag and rows of each piece; `None` when nothing is pending.
    pub fn take_tagged(&mut self, n: usize) -> Result<Option<Tagged<T>>> {
        self.take_within(n, false)
    }

    /// As [`Rebatcher::take_tagged`], but a batch ends before the first pending piece of
    /// another schema (fewer than `n` rows then): rows of Spark partitions whose types were
    /// inferred apart (a column of ints in one, of floats in the next) are cut in order
    /// without being forced into one schema.
    pub fn take_tagged_one_schema(&mut self, n: usize) -> Result<Option<Tagged<T>>> {
        self.take_within(n, true)
    }

    fn take_within(&mut self, n: usize, one_schema: bool) -> Result<Option<Tagged<T>>> {
        let cut = |a: &RecordBatch, b: &RecordBatch| one_schema && a.schema() != b.schema();
        let Some((mut parts, tags)) = self.take_parts(n, cut) else {
            return Ok(None);
        };
        let out = if parts.len() == 1 {
            parts.pop().unwrap_or_else(|| unreachable!("one part"))
        } else {
            glue(&parts[0].schema(), &parts).map_err(schemas_differ)?
        };
        Ok(Some((out, tags)))
    }
}

/// The error of rows of batches of different schemas put in one batch.
pub(crate) fn schemas_differ(e: ArrowError) -> Error {
    Error::Schema {
        path: String::new(),
        detail: format!("batches of different schemas met in one batch: {e}"),
    }
}

/// `arrow_select::concat::concat_batches`, with fixed-size lists glued through their values
/// (arrow's `concat` takes a fixed-size list through its generic path, which extends the
/// values one list at a time: several times a copy of the values, for the image of an
/// MNIST-like row).
pub(crate) fn glue(
    schema: &SchemaRef,
    parts: &[RecordBatch],
) -> std::result::Result<RecordBatch, ArrowError> {
    if let Some(b) = parts.iter().find(|b| b.schema() != *schema) {
        return Err(ArrowError::InvalidArgumentError(format!(
            "batches of different schemas: {schema:?} and {:?}",
            b.schema()
        )));
    }
    let columns = (0..schema.fields().len())
        .map(|i| {
            let arrays: Vec<&dyn Array> = parts.iter().map(|b| b.column(i).as_ref()).collect();
            glue_arrays(&arrays)
        })
        .collect::<std::result::Result<Vec<_>, _>>()?;
    let rows = parts.iter().map(|b| b.num_rows()).sum();
    RecordBatch::try_new_with_options(
        schema.clone(),
        columns,
        &RecordBatchOptions::new().with_row_count(Some(rows)),
    )
}

/// One column of [`glue`]: fixed-size lists without nulls by their values (recursively),
/// everything else by `arrow_select::concat::concat`.
fn glue_arrays(arrays: &[&dyn Array]) -> std::result::Result<ArrayRef, ArrowError> {
    if let Some(DataType::FixedSizeList(item, width)) = arrays.first().map(|a| a.data_type()) {
        if arrays.iter().all(|a| a.null_count() == 0) {
            let values: Vec<&dyn Array> = arrays
                .iter()
                .map(|a| a.as_fixed_size_list().values().as_ref())
                .collect();
            let values = glue_arrays(&values)?;
            return Ok(Arc::new(FixedSizeListArray::try_new(
                item.clone(),
                *width,
                values,
                None,
            )?));
        }
    }
    arrow_select::concat::concat(arrays)
}

impl Rebatcher<()> {
    /// Appends a batch (empty batches are dropped).
    pub fn push(&mut self, b: RecordBatch) {
        self.push_tagged(b, ());
    }

    /// Takes the first `n` rows pending as one batch (fewer when fewer are pending); `None`
    /// when nothing is pending.
    pub fn take(&mut self, n: usize) -> Result<Option<RecordBatch>> {
        Ok(self.take_tagged(n)?.map(|(b, _)| b))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::sync::Arc;

    use arrow_array::cast::AsArray;
    use arrow_array::types::Int64Type;
    use arrow_array::Int64Array;
    use arrow_schema::{DataType, Field, Schema};

    use super::*;

    fn ids(lo: i64, hi: i64) -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, false)]));
        RecordBatch::try_new(schema, vec![Arc::new(Int64Array::from_iter_values(lo..hi))]).unwrap()
    }

    fn values(b: &RecordBatch) -> Vec<i64> {
        b.column(0).as_primitive::<Int64Type>().values().to_vec()
    }

    #[test]
    fn cuts_and_glues_in_order_with_the_tags_of_the_pieces() {
        let mut r = Rebatcher::default();
        r.push_tagged(ids(0, 3), 'a');
        r.push_tagged(ids(3, 3), 'x'); // empty: dropped
        r.push_tagged(ids(3, 10), 'b');
        assert_eq!(r.rows(), 10);
        let (b, tags) = r.take_tagged(4).unwrap().unwrap();
        assert_eq!(values(&b), [0, 1, 2, 3]);
        assert_eq!(tags, [('a', 3), ('b', 1)]);
        let (b, tags) = r.take_tagged(4).unwrap().unwrap();
        assert_eq!(values(&b), [4, 5, 6, 7]);
        assert_eq!(tags, [('b', 4)]);
        let (b, tags) = r.take_tagged(4).unwrap().unwrap();
        assert_eq!(values(&b), [8, 9]);
        assert_eq!(tags, [('b', 2)]);
        assert!(r.take_tagged(4).unwrap().is_none());
        assert!(r.is_empty());
    }

    #[test]
    fn one_schema_batches_end_where_the_schema_changes() {
        let floats = Arc::new(Schema::new(vec![Field::new(
            "id",
            DataType::Float64,
            false,
        )]));
        let f = RecordBatch::try_new(
            floats,
            vec![Arc::new(arrow_array::Float64Array::from(vec![3.0, 4.0]))],
        )
        .unwrap();
        let mut r = Rebatcher::default();
        r.push_tagged(ids(0, 3), 'a');
        r.push_tagged(f, 'b');
        r.push_tagged(ids(5, 6), 'c');
        let (b, tags) = r.take_tagged_one_schema(4).unwrap().unwrap();
        assert_eq!(values(&b), [0, 1, 2]);
        assert_eq!(tags, [('a', 3)]);
        let (b, tags) = r.take_tagged_one_schema(4).unwrap().unwrap();
        assert_eq!(b.num_rows(), 2);
        assert_eq!(tags, [('b', 2)]);
        let (b, tags) = r.take_tagged_one_schema(4).unwrap().unwrap();
        assert_eq!(values(&b), [5]);
        assert_eq!(tags, [('c', 1)]);
        assert!(r.is_empty());
    }

    /// Rows `[lo, lo + n)` of a nested fixed-size list column: 2 lists of 3 floats a row, the
    /// floats counting from `6 lo`.
    pub(crate) fn nested_floats(lo: usize, n: usize) -> FixedSizeListArray {
        use arrow_array::Float32Array;
        use arrow_schema::Field;
        let inner = Arc::new(
            FixedSizeListArray::try_new(
                Arc::new(Field::new("item", DataType::Float32, false)),
                3,
                Arc::new(Float32Array::from_iter_values(
                    (lo * 6..(lo + n) * 6).map(|v| v as f32),
                )),
                None,
            )
            .unwrap(),
        );
        FixedSizeListArray::try_new(
            Arc::new(Field::new("item", inner.data_type().clone(), false)),
            2,
            inner,
            None,
        )
        .unwrap()
    }

    /// Glued fixed-size lists (sliced, nested, beside other columns) equal arrow's own
    /// concatenation; with nulls they take arrow's path.
    #[test]
    fn fixed_size_lists_glue_as_arrow_concatenates_them() {
        use arrow_array::builder::{FixedSizeListBuilder, Float32Builder};
        use arrow_schema::{Field, Schema};

        let nested = |lo: usize, n: usize, nulls: bool| -> RecordBatch {
            let outer = nested_floats(lo, n);
            let mut flat = FixedSizeListBuilder::new(Float32Builder::new(), 2);
            for r in lo..lo + n {
                flat.values().append_slice(&[r as f32, -(r as f32)]);
                flat.append(!(nulls && r % 3 == 0));
            }
            let flat = flat.finish();
            let schema = Arc::new(Schema::new(vec![
                Field::new("id", DataType::Int64, false),
                Field::new("nested", outer.data_type().clone(), false),
                Field::new("flat", flat.data_type().clone(), true),
            ]));
            RecordBatch::try_new(
                schema,
                vec![
                    Arc::new(Int64Array::from_iter_values(lo as i64..(lo + n) as i64)),
                    Arc::new(outer),
                    Arc::new(flat),
                ],
            )
            .unwrap()
        };
        for nulls in [false, true] {
            let (a, b, c) = (
                nested(0, 7, nulls),
                nested(7, 5, nulls),
                nested(12, 9, nulls),
            );
            let parts = [a.slice(2, 5), b, c.slice(1, 4)];
            let want = arrow_select::concat::concat_batches(&a.schema(), &parts).unwrap();
            let got = glue(&a.schema(), &parts).unwrap();
            assert_eq!(got, want, "nulls: {nulls}");
        }
        let other = ids(0, 2);
        assert!(glue(&nested(0, 1, false).schema(), &[nested(0, 1, false), other]).is_err());
    }

    #[test]
    fn one_piece_is_not_copied() {
        let mut r = Rebatcher::default();
        let b = ids(0, 8);
        let ptr = b.column(0).to_data().buffers()[0].as_ptr();
        r.push(b);
        let out = r.take(8).unwrap().unwrap();
        assert_eq!(out.column(0).to_data().buffers()[0].as_ptr(), ptr);
    }
}
