//! `hydrofeed._native.Rebatcher`: the feeder's one rebatcher
//! ([`hydrofeed_format::Rebatcher`]) for the trainer's `next_batch(n)`.
//!
//! `DataFeed.next_batch` cuts the batches it received (the feeder's ring batches, or a Spark
//! feeding task's) into batches of the size the training loop asks for. Each pushed batch
//! carries an integer tag, so the caller learns which of its batches (and how many of their
//! rows) each cut batch holds: what it must acknowledge, hand out or answer with results.
//! Batches cross the boundary through the Arrow PyCapsule interface: no copy, except where a
//! cut batch glues pieces of several.

use std::sync::Mutex;

use hydrofeed_format::Rebatcher as Cutter;
use pyo3::prelude::*;
use pyo3_arrow::PyRecordBatch;

use crate::error;

/// Batches pushed in with an integer tag, taken out cut to a size.
#[pyclass(module = "hydrofeed._native")]
pub struct Rebatcher {
    inner: Mutex<Cutter<u64>>,
}

fn lock(m: &Mutex<Cutter<u64>>) -> std::sync::MutexGuard<'_, Cutter<u64>> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A cut batch and the `(tag, rows)` of each of its pieces, in order.
type Taken = (Py<PyAny>, Vec<(u64, usize)>);

#[pymethods]
impl Rebatcher {
    #[new]
    fn new() -> Self {
        Self {
            inner: Mutex::new(Cutter::default()),
        }
    }

    /// Appends a `pyarrow.RecordBatch` (any Arrow PyCapsule batch) with its tag; an empty one
    /// is dropped.
    fn push(&self, batch: PyRecordBatch, tag: u64) {
        lock(&self.inner).push_tagged(batch.into_inner(), tag);
    }

    /// The first `n` rows pending as one `pyarrow.RecordBatch`, with the `(tag, rows)` of
    /// each piece; fewer rows when fewer are pending or when the next piece has another
    /// schema (a batch never mixes two); `None` when nothing is pending.
    fn take(&self, py: Python<'_>, n: usize) -> PyResult<Option<Taken>> {
        let got = lock(&self.inner)
            .take_tagged_one_schema(n)
            .map_err(|e| error::internal(format!("cutting a batch: {e}")))?;
        match got {
            None => Ok(None),
            Some((b, tags)) => Ok(Some((
                PyRecordBatch::new(b).into_pyarrow(py)?.unbind(),
                tags,
            ))),
        }
    }

    /// Rows pending.
    #[getter]
    fn rows(&self) -> usize {
        lock(&self.inner).rows()
    }

    /// Drops every pending row.
    fn clear(&self) {
        lock(&self.inner).clear();
    }

    fn __len__(&self) -> usize {
        lock(&self.inner).rows()
    }
}
