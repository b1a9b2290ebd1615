//! [`Batch`]: one batch handed to the trainer, a read-only mapping of column name to a numpy
//! array viewing the ring (or `Ragged`, or a `pyarrow.Array`), with `copy()` out of the ring,
//! DLPack and the Arrow PyCapsule interface.

use arrow_array::RecordBatch;
use hydrofeed_tfbridge::{FrameMeta, NO_SPLIT};
use pyo3::exceptions::PyKeyError;
use pyo3::prelude::*;
use pyo3::types::PyList;
use pyo3_arrow::PyRecordBatch;

use crate::blocking::Owner;
use crate::error;
use crate::tensor;

/// A copy of `c` whose buffers are fresh allocations of this process.
pub(crate) fn copy_array(c: &arrow_array::ArrayRef) -> PyResult<arrow_array::ArrayRef> {
    use arrow_data::transform::MutableArrayData;
    let d = c.to_data();
    let mut m = MutableArrayData::new(vec![&d], false, d.len());
    m.try_extend(0, 0, d.len())
        .map_err(|e| error::internal(format!("copying a batch: {e}")))?;
    Ok(arrow_array::make_array(m.freeze()))
}

/// A copy of `b` whose buffers are all fresh allocations of this process.
fn deep_copy(b: &RecordBatch) -> PyResult<RecordBatch> {
    let cols = b
        .columns()
        .iter()
        .map(copy_array)
        .collect::<PyResult<Vec<_>>>()?;
    let opts = arrow_array::RecordBatchOptions::new().with_row_count(Some(b.num_rows()));
    RecordBatch::try_new_with_options(b.schema(), cols, &opts)
        .map_err(|e| error::internal(format!("copying a batch: {e}")))
}

/// One batch: a read-only mapping of column name -> numpy array viewing the ring (dense
/// columns), `Ragged` (variable lists) or `pyarrow.Array` (strings and others).
#[pyclass(module = "hydrofeed._native", frozen, mapping)]
pub struct Batch {
    pub(crate) batch: RecordBatch,
    pub(crate) meta: FrameMeta,
    pub(super) owner: Owner,
    /// Frames of its ring up to and with this batch, and the ring's generation (its hand-out
    /// ticket, see `Feed::hand_out`).
    pub(super) frames: u64,
    pub(super) generation: u64,
}

impl Batch {
    fn column_index(&self, key: &str) -> PyResult<usize> {
        self.owner.check("Batch")?;
        let s = self.batch.schema();
        s.index_of(key).map_err(|_| {
            let names: Vec<String> = s
                .fields()
                .iter()
                .map(|f| format!("'{}'", f.name()))
                .collect();
            PyKeyError::new_err(format!(
                "no column '{key}'; the batch has [{}]",
                names.join(", ")
            ))
        })
    }
}

#[pymethods]
impl Batch {
    /// Epoch of the batch.
    #[getter]
    fn epoch(&self) -> u32 {
        self.meta.epoch
    }

    /// Split id of the batch's last row (None if unknown).
    #[getter]
    fn split(&self) -> Option<u32> {
        (self.meta.split != NO_SPLIT).then_some(self.meta.split)
    }

    /// Frame sequence number.
    #[getter]
    fn seq(&self) -> u64 {
        self.meta.seq
    }

    /// Rows.
    #[getter]
    fn num_rows(&self) -> usize {
        self.batch.num_rows()
    }

    /// Bytes of Arrow buffers the batch views.
    #[getter]
    fn nbytes(&self) -> usize {
        self.batch.get_array_memory_size()
    }

    /// Rows, as `len()` of a pyarrow `RecordBatch` or a pandas `DataFrame`; iterating a batch
    /// gives its column names, as a `DataFrame` does.
    fn __len__(&self) -> usize {
        self.batch.num_rows()
    }

    /// A copy of the batch in this process's memory, holding nothing of the ring: for data
    /// that is kept past the next few steps (a validation cache, a list of batches).
    fn copy(&self) -> PyResult<Batch> {
        self.owner.check("Batch")?;
        Ok(Batch {
            batch: deep_copy(&self.batch)?,
            meta: self.meta,
            owner: Owner::here(),
            frames: self.frames,
            generation: self.generation,
        })
    }

    /// Its place in the feed's hand-out count: `DataFeed`'s adapters pass it to
    /// `Feed.hand_out` when the batch reaches the trainer's code.
    #[getter]
    fn ticket(&self) -> u64 {
        (self.generation << super::TICKET_FRAMES) | self.frames
    }

    fn __contains__(&self, key: &str) -> bool {
        self.batch.schema().index_of(key).is_ok()
    }

    fn __getitem__<'py>(&self, py: Python<'py>, key: &str) -> PyResult<Bound<'py, PyAny>> {
        let i = self.column_index(key)?;
        tensor::column(py, key, self.batch.column(i))
    }

    fn __iter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        Ok(self.keys(py)?.try_iter()?.into_any())
    }

    /// Column names.
    fn keys<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let s = self.batch.schema();
        PyList::new(py, s.fields().iter().map(|f| f.name().clone()))
    }

    /// Columns, in order.
    fn values<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        self.owner.check("Batch")?;
        let s = self.batch.schema();
        let v = s
            .fields()
            .iter()
            .zip(self.batch.columns())
            .map(|(f, a)| tensor::column(py, f.name(), a))
            .collect::<PyResult<Vec<_>>>()?;
        PyList::new(py, v)
    }

    /// `(name, column)` pairs.
    fn items<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        self.owner.check("Batch")?;
        let s = self.batch.schema();
        let v = s
            .fields()
            .iter()
            .zip(self.batch.columns())
            .map(|(f, a)| Ok((f.name().clone(), tensor::column(py, f.name(), a)?)))
            .collect::<PyResult<Vec<_>>>()?;
        PyList::new(py, v)
    }

    /// A DLPack capsule of a dense column, for TensorFlow
    /// (`tf.experimental.dlpack.from_dlpack(batch.dlpack("x"))`), which speaks only legacy
    /// DLPack: that cannot mark memory read-only, so the capsule holds a copy of the column,
    /// never a writeable alias of the ring. (torch, JAX and numpy take `batch["x"]` directly,
    /// without a copy: numpy arrays have `__dlpack__` with DLPack 1.0's read-only flag.)
    fn dlpack<'py>(&self, py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyAny>> {
        let i = self.column_index(name)?;
        tensor::legacy_dlpack(py, name, self.batch.column(i))
    }

    /// The batch as a `pyarrow.RecordBatch` (Arrow PyCapsule interface; no copy, the buffers
    /// keep the ring slot alive).
    fn to_arrow<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.owner.check("Batch")?;
        PyRecordBatch::new(self.batch.clone()).into_pyarrow(py)
    }

    /// Arrow PyCapsule interface: `pyarrow.record_batch(batch)`, polars, etc.
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_array__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, pyo3::types::PyCapsule>>,
    ) -> PyResult<Bound<'py, pyo3::types::PyTuple>> {
        self.owner.check("Batch")?;
        let b = &self.batch;
        let field = arrow_schema::Field::new_struct("", b.schema_ref().fields().clone(), false)
            .with_metadata(b.schema_ref().metadata().clone());
        let array: arrow_array::ArrayRef =
            std::sync::Arc::new(arrow_array::StructArray::from(b.clone()));
        pyo3_arrow::ffi::to_array_pycapsules(py, field.into(), &array, requested_schema)
            .map_err(PyErr::from)
    }

    fn __repr__(&self) -> String {
        let s = self.batch.schema();
        format!(
            "Batch(rows={}, epoch={}, columns={:?})",
            self.batch.num_rows(),
            self.meta.epoch,
            s.fields()
                .iter()
                .map(|f| f.name().as_str())
                .collect::<Vec<_>>()
        )
    }
}
