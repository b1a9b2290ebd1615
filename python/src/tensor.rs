//! Columns to numpy arrays that view the ring (or Arrow) memory, and to pyarrow arrays.

use arrow_array::ArrayRef;
use arrow_buffer::Buffer;
use hydrofeed_tfbridge::{to_tensor, DType, Dense, Tensor};
use numpy::ndarray::{ArrayView, IxDyn};
use numpy::npyffi::flags::NPY_ARRAY_WRITEABLE;
use numpy::{Element, PyArray, PyUntypedArrayMethods};
use pyo3::prelude::*;
use pyo3_arrow::PyArray as ArrowPyArray;

use crate::error;

/// Keeps the bytes of a numpy view alive: the array's `base`. It holds an Arrow buffer, which
/// holds the ring lease (or the Arrow allocation), so the ring slot is released exactly when
/// the last array viewing it is collected.
#[pyclass(module = "hydrofeed._native", frozen)]
pub struct BufferOwner {
    buf: Buffer,
}

#[pymethods]
impl BufferOwner {
    /// Address of the first byte (tests compare it with the array's data pointer).
    #[getter]
    fn address(&self) -> usize {
        self.buf.as_ptr() as usize
    }

    /// Bytes held.
    fn __len__(&self) -> usize {
        self.buf.len()
    }
}

fn view<'py, T: Element>(
    py: Python<'py>,
    d: &Dense,
    writeable: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let owner = Bound::new(
        py,
        BufferOwner {
            buf: d.data.clone(),
        },
    )?;
    let ptr = d.data.as_ptr() as *const T;
    let elems: usize = d.shape.iter().product();
    if elems * std::mem::size_of::<T>() > d.data.len()
        || !(ptr as usize).is_multiple_of(std::mem::align_of::<T>())
    {
        return Err(error::internal(format!(
            "tensor of shape {:?} does not fit its {}-byte buffer at {ptr:p}",
            d.shape,
            d.data.len()
        )));
    }
    // SAFETY: `ptr` is aligned for T and points at `elems` initialised T inside `d.data`
    // (checked above); the buffer is immutable and `owner` keeps it alive; ndarray only reads
    // the view while numpy copies shape and strides out of it.
    let v = unsafe { ArrayView::<T, IxDyn>::from_shape_ptr(IxDyn(&d.shape), ptr) };
    // SAFETY: `owner` becomes the array's base and holds the buffer, which is never
    // reallocated; the array is made read-only below, so numpy never writes through it.
    let arr = unsafe { PyArray::<T, IxDyn>::borrow_from_array(&v, owner.into_any()) };
    if !writeable {
        // SAFETY: `arr` is a live numpy array we own a reference to; clearing WRITEABLE is the
        // documented way to make it read-only (the ring memory is shared with the feeder).
        unsafe {
            (*arr.as_array_ptr()).fields.flags &= !NPY_ARRAY_WRITEABLE;
        }
    }
    let _ = arr.ndim();
    Ok(arr.into_any())
}

/// A dense tensor as a read-only numpy array over its buffer.
pub fn dense<'py>(py: Python<'py>, d: &Dense) -> PyResult<Bound<'py, PyAny>> {
    let w = false;
    match d.dtype {
        DType::Bool => view::<u8>(py, d, w)?.call_method1("view", ("bool",)),
        DType::I8 => view::<i8>(py, d, w),
        DType::I16 => view::<i16>(py, d, w),
        DType::I32 => view::<i32>(py, d, w),
        DType::I64 => view::<i64>(py, d, w),
        DType::U8 => view::<u8>(py, d, w),
        DType::U16 => view::<u16>(py, d, w),
        DType::U32 => view::<u32>(py, d, w),
        DType::U64 => view::<u64>(py, d, w),
        DType::F16 => view::<u16>(py, d, w)?.call_method1("view", ("float16",)),
        DType::F32 => view::<f32>(py, d, w),
        DType::F64 => view::<f64>(py, d, w),
    }
}

/// A legacy DLPack capsule (`"dltensor"`) of a dense column, for consumers that do not speak
/// DLPack 1.0 (TensorFlow's `tf.experimental.dlpack.from_dlpack`). Legacy DLPack has no
/// read-only flag, so the capsule holds a copy: a writeable alias of the ring would let the
/// consumer write memory the feeder shares.
pub fn legacy_dlpack<'py>(
    py: Python<'py>,
    name: &str,
    a: &ArrayRef,
) -> PyResult<Bound<'py, PyAny>> {
    match to_tensor(a).map_err(|e| error::layout(name, e))? {
        Tensor::Dense(d) => dense(py, &d)?
            .call_method0("copy")?
            .call_method0("__dlpack__"),
        _ => Err(error::SchemaError::new_err(format!(
            "column {name:?} is not dense: DLPack exports dense columns only (ragged: use \
             .values and .row_splits)"
        ))),
    }
}

/// A ragged column: flat `values` and `row_splits` (TF `RaggedTensor.from_row_splits`).
#[pyclass(module = "hydrofeed._native", frozen)]
pub struct Ragged {
    /// The flat values.
    #[pyo3(get)]
    values: Py<PyAny>,
    /// `rows + 1` offsets starting at 0.
    #[pyo3(get)]
    row_splits: Py<PyAny>,
}

#[pymethods]
impl Ragged {
    /// Number of rows.
    fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
        Ok(self.row_splits.bind(py).len()?.saturating_sub(1))
    }

    /// `(values, row_splits)`, so `values, splits = ragged` works.
    fn __iter__(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let t = pyo3::types::PyTuple::new(
            py,
            [self.values.clone_ref(py), self.row_splits.clone_ref(py)],
        )?;
        Ok(t.try_iter()?.into_any().unbind())
    }

    /// The column as one dense numpy array `(rows, n, ...)` when every row has the same length
    /// `n` (a view of `values`, no copy); `ValueError` naming the lengths otherwise.
    fn to_numpy<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let np = py.import("numpy")?;
        let values = self.values.bind(py);
        let splits = self.row_splits.bind(py);
        let rows = splits.len()?.saturating_sub(1);
        let inner: Bound<'py, pyo3::types::PyTuple> = values
            .getattr("shape")?
            .get_item(pyo3::types::PySlice::new(py, 1, isize::MAX, 1))?
            .cast_into()?;
        let lens = np.getattr("diff")?.call1((splits,))?;
        let (lo, hi): (i64, i64) = if rows == 0 {
            (0, 0)
        } else {
            (
                lens.call_method0("min")?.extract()?,
                lens.call_method0("max")?.extract()?,
            )
        };
        if lo != hi {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "ragged column: row lengths vary from {lo} to {hi}, so it has no dense shape; \
                 use .values and .row_splits, or pad the data"
            )));
        }
        let first: i64 = if rows == 0 {
            0
        } else {
            splits.get_item(0)?.extract()?
        };
        let n = hi;
        let flat = values.get_item(pyo3::types::PySlice::new(
            py,
            first as isize,
            (first + n * rows as i64) as isize,
            1,
        ))?;
        let mut shape: Vec<Bound<'py, PyAny>> = vec![
            (rows as i64).into_pyobject(py)?.into_any(),
            n.into_pyobject(py)?.into_any(),
        ];
        shape.extend(inner.iter());
        flat.call_method1("reshape", (pyo3::types::PyTuple::new(py, shape)?,))
    }

    /// `np.asarray(ragged)`: [`Ragged::to_numpy`] (dense, or `ValueError`).
    #[pyo3(signature = (dtype=None, copy=None))]
    fn __array__<'py>(
        &self,
        py: Python<'py>,
        dtype: Option<Bound<'py, PyAny>>,
        copy: Option<bool>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let mut a = self.to_numpy(py)?;
        if let Some(d) = dtype {
            a = a.call_method1("astype", (d,))?;
        }
        if copy == Some(true) {
            a = a.call_method0("copy")?;
        }
        Ok(a)
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!(
            "Ragged(values={}, row_splits={})",
            self.values.bind(py).repr()?,
            self.row_splits.bind(py).repr()?
        ))
    }
}

/// A column as numpy (dense), [`Ragged`] (variable lists) or pyarrow (strings and the rest).
pub fn column<'py>(py: Python<'py>, name: &str, a: &ArrayRef) -> PyResult<Bound<'py, PyAny>> {
    match to_tensor(a).map_err(|e| error::layout(name, e))? {
        Tensor::Dense(d) => dense(py, &d),
        Tensor::Ragged(r) => Ok(Bound::new(
            py,
            Ragged {
                values: dense(py, &r.values)?.unbind(),
                row_splits: dense(py, &r.row_splits)?.unbind(),
            },
        )?
        .into_any()),
        Tensor::Arrow(a) => {
            let obj = Bound::new(py, ArrowPyArray::from_array_ref(a))?;
            py.import("pyarrow")?.getattr("array")?.call1((obj,))
        }
    }
}
