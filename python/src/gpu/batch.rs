//! What [`DeviceFeed::next`](super::DeviceFeed) hands out: [`DeviceBatch`], a read-only mapping
//! of column name to [`CudaTensor`] (a dense column in GPU memory: a DLPack producer and a
//! `__cuda_array_interface__` object), [`CudaRagged`] (its values and row splits, both
//! [`CudaTensor`]s) or a host `pyarrow.Array`.

use std::ffi::c_void;
use std::sync::Arc;

use hydrofeed_tfbridge::gpu::{self, DeviceBuf, SharedEvent};
use hydrofeed_tfbridge::{DType, FrameMeta};
use pyo3::exceptions::{PyBufferError, PyKeyError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

use super::dlpack::{
    capsule_destructor, delete_legacy, delete_versioned, dl_dtype, Ctx, DLDevice, DLManagedTensor,
    DLManagedTensorVersioned, DLPackVersion, DLTensor, KDL_CUDA, LEGACY, VERSIONED,
};
use super::gpu_err;

fn typestr(d: DType) -> &'static str {
    match d {
        DType::Bool => "|b1",
        DType::I8 => "|i1",
        DType::I16 => "<i2",
        DType::I32 => "<i4",
        DType::I64 => "<i8",
        DType::U8 => "|u1",
        DType::U16 => "<u2",
        DType::U32 => "<u4",
        DType::U64 => "<u8",
        DType::F16 => "<f2",
        DType::F32 => "<f4",
        DType::F64 => "<f8",
    }
}

/// A dense column in GPU memory. A DLPack producer (`torch.from_dlpack(t)`,
/// `jax.dlpack.from_dlpack(t)`) and a `__cuda_array_interface__` object (CuPy, Numba). The
/// memory is this batch's own device buffer (not shared with the feeder): consumers may write it.
/// It goes back to the feed's pool when the last tensor made from it is dropped.
#[pyclass(module = "hydrofeed._native", frozen)]
pub struct CudaTensor {
    pub(super) buf: Arc<DeviceBuf>,
    pub(super) ptr: u64,
    pub(super) shape: Vec<usize>,
    pub(super) dtype: DType,
    pub(super) ready: Arc<SharedEvent>,
    pub(super) ordinal: i32,
    pub(super) staging_stream: usize,
}

impl CudaTensor {
    fn export(&self, stream: Option<usize>, versioned: bool) -> PyResult<*mut c_void> {
        let mut ctx = Box::new(Ctx {
            shape: self.shape.iter().map(|&n| n as i64).collect(),
            buf: Arc::clone(&self.buf),
            stream,
        });
        let t = DLTensor {
            data: self.ptr as *mut c_void,
            device: DLDevice {
                device_type: KDL_CUDA,
                device_id: self.ordinal,
            },
            ndim: ctx.shape.len() as i32,
            dtype: dl_dtype(self.dtype),
            shape: ctx.shape.as_mut_ptr(),
            strides: std::ptr::null_mut(),
            byte_offset: 0,
        };
        let ctx = Box::into_raw(ctx).cast::<c_void>();
        Ok(if versioned {
            Box::into_raw(Box::new(DLManagedTensorVersioned {
                version: DLPackVersion { major: 1, minor: 0 },
                manager_ctx: ctx,
                deleter: Some(delete_versioned),
                flags: 0,
                dl_tensor: t,
            }))
            .cast()
        } else {
            Box::into_raw(Box::new(DLManagedTensor {
                dl_tensor: t,
                manager_ctx: ctx,
                deleter: Some(delete_legacy),
            }))
            .cast()
        })
    }
}

#[pymethods]
impl CudaTensor {
    /// DLPack export. `stream` is the consumer's stream (the protocol's values: `None` or 1 the
    /// legacy default stream, 2 the per-thread default stream, -1 no ordering wanted, else a
    /// `CUstream`): that stream waits for the copy before its later work, without blocking
    /// the host. With `-1` the host waits for the copy here. A DLPack 1.0 capsule when the
    /// consumer says `max_version >= (1, 0)`, else a legacy one.
    #[pyo3(signature = (*, stream=None, max_version=None, dl_device=None, copy=None))]
    fn __dlpack__<'py>(
        &self,
        py: Python<'py>,
        stream: Option<i64>,
        max_version: Option<(u32, u32)>,
        dl_device: Option<(i32, i32)>,
        copy: Option<bool>,
    ) -> PyResult<Bound<'py, PyAny>> {
        if copy == Some(true) {
            return Err(PyBufferError::new_err(
                "hydrofeed CudaTensor: copy=True is not supported (the tensor is already this \
                 batch's own device memory)",
            ));
        }
        if let Some(d) = dl_device {
            if d != (KDL_CUDA, self.ordinal) {
                return Err(PyBufferError::new_err(format!(
                    "hydrofeed CudaTensor lives on (kDLCUDA={KDL_CUDA}, {}); asked for {d:?}",
                    self.ordinal
                )));
            }
        }
        let consumer = match stream {
            None | Some(1) => Some(gpu::LEGACY_STREAM),
            Some(-1) => None,
            Some(0) => {
                return Err(PyValueError::new_err(
                    "stream=0 is ambiguous for CUDA in the DLPack protocol: pass 1 (legacy \
                     default stream), 2 (per-thread default stream) or a stream handle",
                ))
            }
            Some(s) if s > 0 => Some(s as usize),
            Some(s) => return Err(PyValueError::new_err(format!("stream={s}: not a stream"))),
        };
        match consumer {
            Some(s) => self.ready.order_before(s).map_err(gpu_err)?,
            None => {
                let ready = Arc::clone(&self.ready);
                py.detach(move || ready.wait()).map_err(gpu_err)?
            }
        }
        let versioned = max_version.is_some_and(|v| v.0 >= 1);
        let p = self.export(consumer, versioned)?;
        let name = if versioned { VERSIONED } else { LEGACY };
        // SAFETY: `p` is a fresh managed tensor; the destructor deletes it unless a consumer
        // renames the capsule (then the consumer calls the deleter).
        let cap = unsafe { pyo3::ffi::PyCapsule_New(p, name.as_ptr(), Some(capsule_destructor)) };
        if cap.is_null() {
            // SAFETY: not handed out: delete it here.
            unsafe {
                if versioned {
                    delete_versioned(p.cast());
                } else {
                    delete_legacy(p.cast());
                }
            }
            return Err(PyErr::fetch(py));
        }
        // SAFETY: a new reference just made.
        Ok(unsafe { Bound::from_owned_ptr(py, cap) })
    }

    /// `(kDLCUDA, device ordinal)`.
    fn __dlpack_device__(&self) -> (i32, i32) {
        (KDL_CUDA, self.ordinal)
    }

    /// The CUDA Array Interface (version 3). `stream` is the stager's stream: a consumer
    /// orders its work after it (CuPy and Numba do so).
    #[getter]
    fn __cuda_array_interface__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        d.set_item("shape", PyTuple::new(py, &self.shape)?)?;
        d.set_item("typestr", typestr(self.dtype))?;
        d.set_item("data", (self.ptr, false))?;
        d.set_item("version", 3)?;
        d.set_item("strides", py.None())?;
        d.set_item("stream", self.staging_stream)?;
        Ok(d)
    }

    /// Shape; `shape[0]` is rows.
    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, &self.shape)
    }

    /// Element type, as numpy names it.
    #[getter]
    fn dtype(&self) -> &'static str {
        self.dtype.numpy_name()
    }

    /// `"cuda:N"`.
    #[getter]
    fn device(&self) -> String {
        format!("cuda:{}", self.ordinal)
    }

    /// Device address of the first element.
    #[getter]
    fn data_ptr(&self) -> u64 {
        self.ptr
    }

    /// Bytes.
    #[getter]
    fn nbytes(&self) -> usize {
        self.shape.iter().product::<usize>() * self.dtype.size()
    }

    /// Rows.
    fn __len__(&self) -> usize {
        self.shape.first().copied().unwrap_or(0)
    }

    /// Blocks until the copy to the device is done (consumers that pass a stream never need
    /// this).
    fn synchronize(&self, py: Python<'_>) -> PyResult<()> {
        let ready = Arc::clone(&self.ready);
        py.detach(move || ready.wait()).map_err(gpu_err)
    }

    fn __repr__(&self) -> String {
        format!(
            "CudaTensor(shape={:?}, dtype={}, device=cuda:{})",
            self.shape,
            self.dtype.numpy_name(),
            self.ordinal
        )
    }
}

/// A ragged column on the GPU: `values` and `row_splits`, both [`CudaTensor`]s.
#[pyclass(module = "hydrofeed._native", frozen)]
pub struct CudaRagged {
    /// The flat values.
    #[pyo3(get)]
    pub(super) values: Py<CudaTensor>,
    /// `rows + 1` offsets starting at 0.
    #[pyo3(get)]
    pub(super) row_splits: Py<CudaTensor>,
}

#[pymethods]
impl CudaRagged {
    /// Rows.
    fn __len__(&self) -> usize {
        self.row_splits.get().__len__().saturating_sub(1)
    }

    fn __repr__(&self) -> String {
        format!(
            "CudaRagged(values={}, row_splits={})",
            self.values.get().__repr__(),
            self.row_splits.get().__repr__()
        )
    }
}

/// One batch on the GPU: a read-only mapping of column name -> [`CudaTensor`] (dense),
/// [`CudaRagged`] (variable lists), or `pyarrow.Array` (strings and other columns without a
/// tensor layout stay in host memory).
#[pyclass(module = "hydrofeed._native", frozen, mapping)]
pub struct DeviceBatch {
    pub(super) columns: Vec<(String, Py<PyAny>)>,
    pub(super) meta: FrameMeta,
    pub(super) rows: usize,
    pub(super) ready: Arc<SharedEvent>,
}

#[pymethods]
impl DeviceBatch {
    /// Epoch of the batch.
    #[getter]
    fn epoch(&self) -> u32 {
        self.meta.epoch
    }

    /// Frame sequence number.
    #[getter]
    fn seq(&self) -> u64 {
        self.meta.seq
    }

    /// Rows.
    #[getter]
    fn num_rows(&self) -> usize {
        self.rows
    }

    fn __len__(&self) -> usize {
        self.rows
    }

    fn __contains__(&self, key: &str) -> bool {
        self.columns.iter().any(|(k, _)| k == key)
    }

    fn __getitem__(&self, py: Python<'_>, key: &str) -> PyResult<Py<PyAny>> {
        self.columns
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.clone_ref(py))
            .ok_or_else(|| {
                let names: Vec<&str> = self.columns.iter().map(|(k, _)| k.as_str()).collect();
                PyKeyError::new_err(format!("no column '{key}'; the batch has {names:?}"))
            })
    }

    fn __iter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        Ok(self.keys(py)?.try_iter()?.into_any())
    }

    /// Column names.
    fn keys<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        PyList::new(py, self.columns.iter().map(|(k, _)| k.as_str()))
    }

    /// Columns, in order.
    fn values<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        PyList::new(py, self.columns.iter().map(|(_, v)| v.clone_ref(py)))
    }

    /// `(name, column)` pairs.
    fn items<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        PyList::new(
            py,
            self.columns
                .iter()
                .map(|(k, v)| (k.as_str(), v.clone_ref(py))),
        )
    }

    /// Blocks until the batch's copy to the device is done.
    fn synchronize(&self, py: Python<'_>) -> PyResult<()> {
        let ready = Arc::clone(&self.ready);
        py.detach(move || ready.wait()).map_err(gpu_err)
    }

    fn __repr__(&self) -> String {
        let names: Vec<&str> = self.columns.iter().map(|(k, _)| k.as_str()).collect();
        format!(
            "DeviceBatch(rows={}, epoch={}, columns={names:?})",
            self.rows, self.meta.epoch
        )
    }
}
