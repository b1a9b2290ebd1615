//! [`Gather`]: a batch given as rows of other batches, not made yet.
//!
//! The writer of a feed copies every row once into the ring. A batch that must first be made
//! (the rows of a shuffle buffer's window in its permutation, a batch glued from the tails and
//! heads of decoded batches) would cost a second copy of every row on the way. A `Gather` says
//! which rows of which batches it holds (runs of consecutive rows); the feeder's writer copies
//! those rows straight from their batches into the ring slot when every column is laid out as
//! a run of fixed-width bytes per row ([`Gather::row_bytes`]: primitives and fixed-size lists of
//! them, without nulls), and makes the batch ([`Gather::materialize`]) for every other column
//! type, as before.

use std::fmt;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{make_array, Array, ArrayRef, FixedSizeListArray, RecordBatch};
use arrow_buffer::Buffer;
use arrow_data::ArrayData;
use arrow_schema::{ArrowError, DataType, SchemaRef};

use crate::rebatch::{glue, schemas_differ, Rowset};
use crate::{Error, Result};

/// Consecutive rows of one source batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Run {
    /// Index of the batch in its set of sources.
    pub source: u32,
    /// First row.
    pub row: u32,
    /// Rows.
    pub len: u32,
}

/// Rows of source batches, in order, as one batch to be.
#[derive(Clone, Default)]
pub struct Gather {
    /// Sets of source batches (a shuffle window's batches are one set, shared by its gathers).
    sources: Vec<Arc<[RecordBatch]>>,
    /// Runs in order, each with its set: `run.source` indexes the batches of `sources[set]`.
    runs: Vec<(u32, Run)>,
    rows: usize,
}

impl fmt::Debug for Gather {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Gather")
            .field("rows", &self.rows)
            .field("runs", &self.runs.len())
            .field("source_sets", &self.sources.len())
            .finish()
    }
}

impl From<RecordBatch> for Gather {
    fn from(b: RecordBatch) -> Self {
        let len = b.num_rows();
        let mut g = Self {
            sources: vec![Arc::from(vec![b])],
            ..Self::default()
        };
        g.push_run(0, 0, 0, len);
        g
    }
}

impl Gather {
    /// The rows `index` names (`(batch, row)` into `sources`, as arrow's `interleave` takes
    /// them), consecutive rows of a batch kept as one run.
    pub fn rows(sources: Arc<[RecordBatch]>, index: &[(usize, usize)]) -> Self {
        let mut g = Self {
            sources: vec![sources],
            ..Self::default()
        };
        for &(b, r) in index {
            g.push_run(0, b as u32, r as u32, 1);
        }
        g
    }

    fn push_run(&mut self, set: u32, source: u32, row: u32, len: usize) {
        if len == 0 {
            return;
        }
        self.rows += len;
        if let Some((s, last)) = self.runs.last_mut() {
            if *s == set && last.source == source && last.row + last.len == row {
                last.len += len as u32;
                return;
            }
        }
        self.runs.push((
            set,
            Run {
                source,
                row,
                len: len as u32,
            },
        ));
    }

    fn batch(&self, set: u32, source: u32) -> &RecordBatch {
        &self.sources[set as usize][source as usize]
    }

    /// Rows held.
    pub fn num_rows(&self) -> usize {
        self.rows
    }

    /// The schema (of the first source; `None` with no rows).
    pub fn schema(&self) -> Option<SchemaRef> {
        self.runs
            .first()
            .map(|(s, r)| self.batch(*s, r.source).schema())
    }

    /// The runs of rows, in order, each as a slice of its batch.
    pub fn slices(&self) -> impl Iterator<Item = RecordBatch> + '_ {
        self.runs.iter().map(|(s, r)| {
            self.batch(*s, r.source)
                .slice(r.row as usize, r.len as usize)
        })
    }

    /// The rows as one slice of one batch, when they are (no copy to make).
    pub fn as_slice(&self) -> Option<RecordBatch> {
        match self.runs.as_slice() {
            [_] => self.slices().next(),
            _ => None,
        }
    }

    /// The gathers' rows one after another.
    pub fn concat(parts: Vec<Gather>) -> Gather {
        let mut parts = parts.into_iter();
        let Some(mut out) = parts.next() else {
            return Gather::default();
        };
        for p in parts {
            let mut map = Vec::with_capacity(p.sources.len());
            for set in p.sources {
                let at = match out.sources.iter().position(|s| Arc::ptr_eq(s, &set)) {
                    Some(at) => at,
                    None => {
                        out.sources.push(set);
                        out.sources.len() - 1
                    }
                };
                map.push(at as u32);
            }
            for (s, r) in p.runs {
                out.push_run(map[s as usize], r.source, r.row, r.len as usize);
            }
        }
        out
    }

    /// Makes the batch (a slice of its one source, sources glued by run, or rows interleaved).
    pub fn materialize(&self) -> Result<RecordBatch> {
        let Some(schema) = self.schema() else {
            return Err(Error::Internal("an empty gather has no schema".into()));
        };
        if let Some(b) = self.as_slice() {
            return Ok(b);
        }
        // Few long runs: glued through their values; many short ones: interleaved by row.
        if self.runs.len() * 64 <= self.rows {
            let parts: Vec<RecordBatch> = self.slices().collect();
            return glue(&schema, &parts).map_err(schemas_differ);
        }
        let mut flat: Vec<&RecordBatch> = Vec::new();
        let mut starts = Vec::with_capacity(self.sources.len());
        for set in &self.sources {
            starts.push(flat.len());
            flat.extend(set.iter());
        }
        let mut index = Vec::with_capacity(self.rows);
        for (s, r) in &self.runs {
            let b = starts[*s as usize] + r.source as usize;
            index.extend((r.row..r.row + r.len).map(|row| (b, row as usize)));
        }
        if flat.iter().any(|b| b.schema() != schema) {
            return Err(schemas_differ(ArrowError::InvalidArgumentError(
                "the sources' schemas differ".into(),
            )));
        }
        arrow_select::interleave::interleave_record_batch(&flat, &index).map_err(schemas_differ)
    }

    /// Bytes per row of each column when every column of every source is laid out as a run
    /// of fixed-width bytes per row (primitives, fixed-size lists of them, nested) without a
    /// null, and the sources share one schema: what [`Gather::fill`] can copy.
    pub fn row_bytes(&self) -> Option<Vec<usize>> {
        let schema = self.schema()?;
        let widths: Vec<usize> = schema
            .fields()
            .iter()
            .map(|f| fixed_row_bytes(f.data_type()))
            .collect::<Option<_>>()?;
        for set in &self.sources {
            for b in set.iter() {
                if b.schema() != schema || b.columns().iter().any(|c| has_nulls(c.as_ref())) {
                    return None;
                }
            }
        }
        Some(widths)
    }

    /// A batch of the gather's schema and rows whose columns' values are `zeros` (never read
    /// or written here), one placeholder per column: encoded, its frame has the layout of the
    /// gather's batch, with the placeholders' bytes where [`Gather::fill`] writes each column.
    /// Returns the batch and each column's placeholder. `zeros` must hold the rows' bytes of
    /// every column, each rounded up to 64 bytes (see [`Gather::placeholder_bytes`]).
    pub fn placeholder(
        &self,
        row_bytes: &[usize],
        zeros: &Buffer,
    ) -> Result<(RecordBatch, Vec<Buffer>)> {
        let schema = self
            .schema()
            .ok_or_else(|| Error::Internal("an empty gather has no schema".into()))?;
        let mut at = 0usize;
        let mut columns = Vec::with_capacity(row_bytes.len());
        let mut holders = Vec::with_capacity(row_bytes.len());
        for (f, &w) in schema.fields().iter().zip(row_bytes) {
            let len = self.rows * w;
            if at + len > zeros.len() {
                return Err(Error::Internal(format!(
                    "placeholder of {} bytes short of {}",
                    zeros.len(),
                    at + len
                )));
            }
            let buf = zeros.slice_with_length(at, len);
            at += len.next_multiple_of(64);
            columns.push(fixed_array(f.data_type(), self.rows, buf.clone())?);
            holders.push(buf);
        }
        let b = RecordBatch::try_new(schema, columns)
            .map_err(|e| Error::external("a gather's placeholder batch", e))?;
        Ok((b, holders))
    }

    /// The bytes [`Gather::placeholder`] needs for columns of `row_bytes`.
    pub fn placeholder_bytes(&self, row_bytes: &[usize]) -> usize {
        row_bytes
            .iter()
            .map(|w| (self.rows * w).next_multiple_of(64))
            .sum()
    }

    /// Copies column `column`'s values of every row, in order, into `dst` (exactly the rows
    /// times `row_bytes`, as [`Gather::row_bytes`] gave them).
    pub fn fill(&self, column: usize, row_bytes: usize, dst: &mut [u8]) -> Result<()> {
        if dst.len() != self.rows * row_bytes {
            return Err(Error::Internal(format!(
                "column {column}: {} bytes to fill, {} rows of {row_bytes} bytes",
                dst.len(),
                self.rows
            )));
        }
        // Each source batch's bytes of the column, looked up once per source.
        let mut bases: Vec<Vec<Option<(Buffer, usize)>>> =
            self.sources.iter().map(|s| vec![None; s.len()]).collect();
        let mut at = 0usize;
        for (s, r) in &self.runs {
            let slot = &mut bases[*s as usize][r.source as usize];
            if slot.is_none() {
                *slot = Some(values_of(self.batch(*s, r.source).column(column).as_ref())?);
            }
            let Some((buf, start)) = slot else {
                unreachable!("set above")
            };
            let from = *start + r.row as usize * row_bytes;
            let n = r.len as usize * row_bytes;
            let src = buf.as_slice().get(from..from + n).ok_or_else(|| {
                Error::Internal(format!(
                    "column {column}: rows {}..{} outside their batch",
                    r.row,
                    r.row + r.len
                ))
            })?;
            dst[at..at + n].copy_from_slice(src);
            at += n;
        }
        Ok(())
    }
}

impl Rowset for Gather {
    fn num_rows(&self) -> usize {
        self.rows
    }

    fn slice(&self, offset: usize, len: usize) -> Self {
        let mut out = Gather {
            sources: self.sources.clone(),
            ..Gather::default()
        };
        let (mut skip, mut want) = (offset, len);
        for (s, r) in &self.runs {
            if want == 0 {
                break;
            }
            let n = r.len as usize;
            if skip >= n {
                skip -= n;
                continue;
            }
            let take = (n - skip).min(want);
            out.push_run(*s, r.source, r.row + skip as u32, take);
            want -= take;
            skip = 0;
        }
        out
    }
}

/// Bytes per row of a column type laid out as fixed-width values (primitives and fixed-size
/// lists of them); `None` for every other type.
fn fixed_row_bytes(dt: &DataType) -> Option<usize> {
    match dt {
        DataType::FixedSizeList(item, n) => Some(fixed_row_bytes(item.data_type())? * *n as usize),
        DataType::Boolean => None,
        dt if dt.is_primitive() => dt.primitive_width(),
        _ => None,
    }
}

/// Whether the array or a child (of a fixed-size list) has a null.
fn has_nulls(a: &dyn Array) -> bool {
    a.null_count() > 0
        || matches!(a.data_type(), DataType::FixedSizeList(..))
            && has_nulls(a.as_fixed_size_list().values().as_ref())
}

/// The buffer of a fixed-width column's innermost values and the byte of its first row.
fn values_of(a: &dyn Array) -> Result<(Buffer, usize)> {
    if let DataType::FixedSizeList(..) = a.data_type() {
        let l = a.as_fixed_size_list();
        let (buf, start) = values_of(l.values().as_ref())?;
        let item = fixed_row_bytes(&l.value_type()).unwrap_or(0);
        // A fixed-size list's rows start at `value_offset(0)` items into its values.
        return Ok((buf, start + l.value_offset(0).max(0) as usize * item));
    }
    let d = a.to_data();
    let w = a
        .data_type()
        .primitive_width()
        .ok_or_else(|| Error::Internal(format!("{} is not a fixed-width column", a.data_type())))?;
    let buf = d
        .buffers()
        .first()
        .cloned()
        .ok_or_else(|| Error::Internal("a primitive array without values".into()))?;
    Ok((buf, d.offset() * w))
}

/// An array of `dt` (as [`fixed_row_bytes`] takes) with `rows` rows over `values`.
fn fixed_array(dt: &DataType, rows: usize, values: Buffer) -> Result<ArrayRef> {
    let err = |e: ArrowError| Error::external("a gather's placeholder column", e);
    if let DataType::FixedSizeList(item, n) = dt {
        let child = fixed_array(item.data_type(), rows * *n as usize, values)?;
        return FixedSizeListArray::try_new(item.clone(), *n, child, None)
            .map(|a| Arc::new(a) as ArrayRef)
            .map_err(err);
    }
    let data = ArrayData::builder(dt.clone())
        .len(rows)
        .add_buffer(values)
        .build()
        .map_err(err)?;
    Ok(make_array(data))
}

#[cfg(test)]
#[path = "gather_tests.rs"]
mod tests;
