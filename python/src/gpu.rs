//! Batches in GPU memory: [`DeviceFeed`] stages each batch of a [`Feed`] into device memory
//! (`hydrofeed_tfbridge::gpu`) and hands out [`DeviceBatch`]es whose dense columns are
//! [`CudaTensor`]s: DLPack producers (`kDLCUDA`, with the protocol's stream semantics) and
//! `__cuda_array_interface__` objects, so `torch.from_dlpack`, `jax.dlpack.from_dlpack`,
//! `tf.experimental.dlpack.from_dlpack` and CuPy take them without a copy.
//!
//! Pipelining: `next()` waits for the copy of the batch it returned last time (normally done
//! long before: the trainer computed on it meanwhile), releases that batch's ring slot, then
//! queues the copy of the next batch and returns it at once. So the copy of batch k+1 runs while
//! the GPU computes on batch k, and the ring holds no slot of this trainer's once a copy ends.

use std::ffi::{c_void, CStr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hydrofeed_tfbridge::gpu::{
    self, Backend, Cuda, DeviceBuf, GpuError, H2dSource, HostPath, SharedEvent, Staged, Stager,
};
use hydrofeed_tfbridge::{to_tensor, DType, FrameMeta, Tensor};
use pyo3::exceptions::{PyBufferError, PyKeyError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

use crate::blocking::Owner;
use crate::error::{self, NoCudaDeviceError};
use crate::feed::{copy_array, Batch, Feed};
use crate::tensor;

fn gpu_err(e: GpuError) -> PyErr {
    match e {
        GpuError::NoDevice(_) => NoCudaDeviceError::new_err(e.to_string()),
        e => error::internal(e),
    }
}

fn open(device: i32) -> PyResult<Arc<Cuda>> {
    Cuda::open(device).map(Arc::new).map_err(gpu_err)
}

// ---- DLPack (v1.0 and legacy) ----

#[repr(C)]
#[derive(Clone, Copy)]
struct DLDevice {
    device_type: i32,
    device_id: i32,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct DLDataType {
    code: u8,
    bits: u8,
    lanes: u16,
}

#[repr(C)]
struct DLTensor {
    data: *mut c_void,
    device: DLDevice,
    ndim: i32,
    dtype: DLDataType,
    shape: *mut i64,
    strides: *mut i64,
    byte_offset: u64,
}

#[repr(C)]
struct DLManagedTensor {
    dl_tensor: DLTensor,
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DLManagedTensor)>,
}

#[repr(C)]
struct DLPackVersion {
    major: u32,
    minor: u32,
}

#[repr(C)]
struct DLManagedTensorVersioned {
    version: DLPackVersion,
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DLManagedTensorVersioned)>,
    flags: u64,
    dl_tensor: DLTensor,
}

const KDL_CUDA: i32 = 2;

/// `HYDROFEED_CUDA_REGISTER=0`: do not register the ring with the driver; stage every batch
/// through a pinned bounce buffer (hosts where pinning the ring's pages is not wanted).
const REGISTER_ENV: &str = "HYDROFEED_CUDA_REGISTER";
const LEGACY: &CStr = c"dltensor";
const VERSIONED: &CStr = c"dltensor_versioned";

/// What a DLPack export keeps alive: its shape, the device buffer, and the consumer's stream
/// (the buffer's release is ordered after the work queued there).
struct Ctx {
    shape: Vec<i64>,
    buf: Arc<DeviceBuf>,
    stream: Option<usize>,
}

fn release(ctx: *mut c_void) {
    if ctx.is_null() {
        return;
    }
    // SAFETY: made by `Box::into_raw` in `export`, released once (by the deleter).
    let ctx = unsafe { Box::from_raw(ctx.cast::<Ctx>()) };
    let _ = ctx.buf.released_on(ctx.stream);
}

unsafe extern "C" fn delete_legacy(t: *mut DLManagedTensor) {
    if !t.is_null() {
        // SAFETY: made by `Box::into_raw` in `export`; the consumer calls the deleter once.
        let t = unsafe { Box::from_raw(t) };
        release(t.manager_ctx);
    }
}

unsafe extern "C" fn delete_versioned(t: *mut DLManagedTensorVersioned) {
    if !t.is_null() {
        // SAFETY: as for `delete_legacy`.
        let t = unsafe { Box::from_raw(t) };
        release(t.manager_ctx);
    }
}

/// The capsule's destructor: if no consumer took the tensor (the capsule still has its
/// original name), delete it here.
unsafe extern "C" fn capsule_destructor(cap: *mut pyo3::ffi::PyObject) {
    // SAFETY: `cap` is a live capsule (Python calls this while destroying it).
    unsafe {
        if pyo3::ffi::PyCapsule_IsValid(cap, VERSIONED.as_ptr()) == 1 {
            let p = pyo3::ffi::PyCapsule_GetPointer(cap, VERSIONED.as_ptr());
            delete_versioned(p.cast());
        } else if pyo3::ffi::PyCapsule_IsValid(cap, LEGACY.as_ptr()) == 1 {
            let p = pyo3::ffi::PyCapsule_GetPointer(cap, LEGACY.as_ptr());
            delete_legacy(p.cast());
        } else {
            // Consumed ("used_dltensor..."): the consumer owns it now.
            pyo3::ffi::PyErr_Clear();
        }
    }
}

fn dl_dtype(d: DType) -> DLDataType {
    let (code, bits) = match d {
        DType::Bool => (6, 8),
        DType::I8 => (0, 8),
        DType::I16 => (0, 16),
        DType::I32 => (0, 32),
        DType::I64 => (0, 64),
        DType::U8 => (1, 8),
        DType::U16 => (1, 16),
        DType::U32 => (1, 32),
        DType::U64 => (1, 64),
        DType::F16 => (2, 16),
        DType::F32 => (2, 32),
        DType::F64 => (2, 64),
    };
    DLDataType {
        code,
        bits,
        lanes: 1,
    }
}

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

/// The bytes of a dense tensor (its buffer may be longer).
fn part(d: &hydrofeed_tfbridge::Dense) -> &[u8] {
    let n = d.shape.iter().product::<usize>() * d.dtype.size();
    &d.data.as_slice()[..n.min(d.data.len())]
}

/// A dense column in GPU memory. A DLPack producer (`torch.from_dlpack(t)`,
/// `jax.dlpack.from_dlpack(t)`) and a `__cuda_array_interface__` object (CuPy, Numba). The
/// memory is this batch's own device buffer (not shared with the feeder): consumers may write it.
/// It goes back to the feed's pool when the last tensor made from it is dropped.
#[pyclass(module = "hydrofeed._native", frozen)]
pub struct CudaTensor {
    buf: Arc<DeviceBuf>,
    ptr: u64,
    shape: Vec<usize>,
    dtype: DType,
    ready: Arc<SharedEvent>,
    ordinal: i32,
    staging_stream: usize,
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
    values: Py<CudaTensor>,
    /// `rows + 1` offsets starting at 0.
    #[pyo3(get)]
    row_splits: Py<CudaTensor>,
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
    columns: Vec<(String, Py<PyAny>)>,
    meta: FrameMeta,
    rows: usize,
    ready: Arc<SharedEvent>,
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

#[derive(Default, Clone, Copy)]
struct Counts {
    batches: u64,
    bytes: u64,
    registered: u64,
    bounced: u64,
    direct: u64,
    copy_wait: Duration,
}

struct State {
    stager: Stager,
    /// The host batch whose copy is in flight, and the copy.
    inflight: Option<(Batch, Staged)>,
    region: Option<(usize, usize)>,
    counts: Counts,
    closed: bool,
}

/// What `metrics()` reads: copied out of [`State`] at the end of each `next()`, behind a lock
/// that is never held across a wait, so `metrics()` from another thread never waits for a
/// blocked `next()`.
#[derive(Clone)]
struct Snapshot {
    path: HostPath,
    refused: Option<String>,
    counts: Counts,
    pool: gpu::PoolCounts,
}

impl Snapshot {
    fn of(st: &State) -> Snapshot {
        Snapshot {
            path: st.stager.path(),
            refused: st.stager.refused().map(str::to_string),
            counts: st.counts,
            pool: st.stager.pool_counts(),
        }
    }
}

/// A feed's batches staged into GPU memory (`DataFeed.batches(device="cuda:0")` makes one).
#[pyclass(module = "hydrofeed._native")]
pub struct DeviceFeed {
    feed: Py<Feed>,
    /// The staging side, held for a whole `next()`; taken with the GIL released.
    state: Mutex<State>,
    snapshot: Mutex<Snapshot>,
    ordinal: i32,
    name: String,
    staging_stream: usize,
    owner: Owner,
}

impl DeviceFeed {
    /// The staging side. Taken with the GIL released (a `next()` in another thread holds it
    /// while it waits for the ring, and takes the GIL back between slices): never the GIL,
    /// then this lock, or two threads calling `next()` would deadlock.
    fn lock(&self, py: Python<'_>) -> PyResult<std::sync::MutexGuard<'_, State>> {
        loop {
            match self.state.try_lock() {
                Ok(g) => return Ok(g),
                Err(std::sync::TryLockError::Poisoned(_)) => {
                    return Err(error::internal("device feed poisoned by an earlier panic"))
                }
                Err(std::sync::TryLockError::WouldBlock) => {
                    crate::blocking::sleep(py, Duration::from_millis(1))?
                }
            }
        }
    }

    fn publish(&self, st: &State) {
        *self.snapshot.lock().unwrap_or_else(|e| e.into_inner()) = Snapshot::of(st);
    }

    /// Waits for the copy in flight and releases its host batch (the ring slot).
    fn finish_inflight(py: Python<'_>, st: &mut State) -> PyResult<()> {
        if let Some((host, staged)) = st.inflight.take() {
            let t0 = Instant::now();
            let r = py.detach(|| staged.wait());
            st.counts.copy_wait += t0.elapsed();
            drop(staged);
            drop(host);
            r.map_err(gpu_err)?;
        }
        Ok(())
    }
}

#[pymethods]
impl DeviceFeed {
    /// Stages `feed`'s batches on GPU `device` (an ordinal under `CUDA_VISIBLE_DEVICES`).
    /// Raises `NoCudaDeviceError` without a driver or that device.
    #[new]
    #[pyo3(signature = (feed, device=0))]
    fn new(py: Python<'_>, feed: Py<Feed>, device: i32) -> PyResult<DeviceFeed> {
        let cuda = open(device)?;
        let name = cuda.name().to_string();
        let staging_stream = cuda.stream();
        let be: Arc<dyn Backend> = cuda;
        let mut st = State {
            stager: Stager::new(be),
            inflight: None,
            region: None,
            counts: Counts::default(),
            closed: false,
        };
        if std::env::var(REGISTER_ENV).is_ok_and(|v| v == "0") {
            st.stager.use_bounce(&format!("{REGISTER_ENV}=0"));
        }
        register(py, &feed, &mut st)?;
        let snapshot = Mutex::new(Snapshot::of(&st));
        Ok(DeviceFeed {
            feed,
            state: Mutex::new(st),
            snapshot,
            ordinal: device,
            name,
            staging_stream,
            owner: Owner::here(),
        })
    }

    /// The next batch on the GPU, or `None` at the end of the feed. Its copy may still run:
    /// DLPack consumers order their work after it (see [`CudaTensor::__dlpack__`]).
    #[pyo3(signature = (timeout=None))]
    fn next(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<Option<DeviceBatch>> {
        self.owner.check("DeviceFeed")?;
        let mut g = self.lock(py)?;
        let st = &mut *g;
        Self::finish_inflight(py, st)?;
        self.publish(st);
        if st.closed {
            return Ok(None);
        }
        let Some(host) = self.feed.bind(py).borrow().read_next(py, timeout)? else {
            return Ok(None);
        };
        // A restarted feeder (rejoin) or a pressure copy maps the ring anew.
        register(py, &self.feed, st)?;
        let schema = host.batch.schema();
        let mut parts: Vec<&[u8]> = Vec::new();
        enum Col {
            Dense(usize, Vec<usize>, DType),
            Ragged(usize, Vec<usize>, DType, usize, Vec<usize>, DType),
            Host(Py<PyAny>),
        }
        let mut cols = Vec::with_capacity(schema.fields().len());
        let tensors: Vec<Tensor> = schema
            .fields()
            .iter()
            .zip(host.batch.columns())
            .map(|(f, a)| to_tensor(a).map_err(|e| error::layout(f.name(), e)))
            .collect::<PyResult<_>>()?;
        for ((f, a), t) in schema
            .fields()
            .iter()
            .zip(host.batch.columns())
            .zip(&tensors)
        {
            match t {
                Tensor::Dense(d) => {
                    parts.push(part(d));
                    cols.push(Col::Dense(parts.len() - 1, d.shape.clone(), d.dtype));
                }
                Tensor::Ragged(r) => {
                    parts.push(part(&r.values));
                    parts.push(part(&r.row_splits));
                    cols.push(Col::Ragged(
                        parts.len() - 2,
                        r.values.shape.clone(),
                        r.values.dtype,
                        parts.len() - 1,
                        r.row_splits.shape.clone(),
                        r.row_splits.dtype,
                    ));
                }
                // Host columns are copied out of the ring: the slot goes back with the copy.
                Tensor::Arrow(_) => cols.push(Col::Host(
                    tensor::column(py, f.name(), &copy_array(a)?)?.unbind(),
                )),
            }
        }
        let stager = &st.stager;
        let staged = py.detach(|| stager.stage(&parts)).map_err(gpu_err)?;
        let bytes: usize = parts.iter().map(|p| p.len()).sum();
        st.counts.batches += 1;
        st.counts.bytes += bytes as u64;
        if staged.registered {
            st.counts.registered += 1;
        } else if st.stager.path() == HostPath::Bounce {
            st.counts.bounced += 1;
        } else {
            st.counts.direct += 1;
        }
        let ready = Arc::clone(staged.event());
        let tensor = |i: usize, shape: Vec<usize>, dtype: DType| CudaTensor {
            buf: Arc::clone(staged.buffer()),
            ptr: staged.ptr(i),
            shape,
            dtype,
            ready: Arc::clone(&ready),
            ordinal: self.ordinal,
            staging_stream: self.staging_stream,
        };
        let mut columns = Vec::with_capacity(cols.len());
        for (f, c) in schema.fields().iter().zip(cols) {
            let v: Py<PyAny> = match c {
                Col::Dense(i, shape, dt) => Py::new(py, tensor(i, shape, dt))?.into_any(),
                Col::Ragged(vi, vs, vd, si, ss, sd) => Py::new(
                    py,
                    CudaRagged {
                        values: Py::new(py, tensor(vi, vs, vd))?,
                        row_splits: Py::new(py, tensor(si, ss, sd))?,
                    },
                )?
                .into_any(),
                Col::Host(o) => o,
            };
            columns.push((f.name().clone(), v));
        }
        let out = DeviceBatch {
            columns,
            meta: host.meta,
            rows: host.batch.num_rows(),
            ready,
        };
        drop(tensors);
        st.inflight = Some((host, staged));
        self.publish(st);
        Ok(Some(out))
    }

    /// Waits for the copy in flight, releases its ring slot and unregisters the ring. The
    /// device batches already handed out stay valid.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let mut g = self.lock(py)?;
        Self::finish_inflight(py, &mut g)?;
        g.stager.unregister_all();
        g.closed = true;
        self.publish(&g);
        Ok(())
    }

    /// `"cuda:N"`.
    #[getter]
    fn device(&self) -> String {
        format!("cuda:{}", self.ordinal)
    }

    /// What the staging did: `path` (`registered`: DMA from the ring; `bounce`: the driver
    /// refused to register it, each batch goes through a pinned buffer; `pageable`), `refused`
    /// (the driver's reason), batches, bytes, `copy_wait_s` (time `next()` waited for a copy:
    /// near zero when copies hide behind compute), the device buffer pool's counts.
    fn metrics<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let g = self
            .snapshot
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let d = PyDict::new(py);
        d.set_item("device", format!("cuda:{}", self.ordinal))?;
        d.set_item("device_name", &self.name)?;
        d.set_item(
            "path",
            match g.path {
                HostPath::Registered => "registered",
                HostPath::Bounce => "bounce",
                HostPath::Pageable => "pageable",
            },
        )?;
        d.set_item("refused", g.refused)?;
        d.set_item("batches", g.counts.batches)?;
        d.set_item("bytes", g.counts.bytes)?;
        d.set_item("registered_copies", g.counts.registered)?;
        d.set_item("bounced_copies", g.counts.bounced)?;
        d.set_item("pageable_copies", g.counts.direct)?;
        d.set_item("copy_wait_s", g.counts.copy_wait.as_secs_f64())?;
        let c = g.pool;
        d.set_item("pool_allocs", c.allocs)?;
        d.set_item("pool_reuses", c.reuses)?;
        d.set_item("pool_buffers", c.live)?;
        d.set_item("pool_bytes", c.live_bytes)?;
        Ok(d)
    }
}

/// Registers the feed's ring (again, when it moved) with the stager.
fn register(py: Python<'_>, feed: &Py<Feed>, st: &mut State) -> PyResult<()> {
    let region = feed.bind(py).borrow().ring_region(py)?;
    if region != st.region {
        if let Some((p, n)) = region {
            // SAFETY: the ring payload stays mapped while the feed's consumer lives (older
            // mappings stay mapped until the ring drops); the feed outlives this stager's use
            // of it (`DeviceFeed` holds it).
            unsafe { st.stager.register(p as *mut u8, n) };
        }
        st.region = region;
    }
    Ok(())
}

/// The GPUs of this node as NVML sees them: a list of dicts (index, name, pci_bus_id,
/// numa_node, cpus, memory_bytes). Raises `NoCudaDeviceError` without an NVIDIA driver.
#[pyfunction]
pub fn gpus(py: Python<'_>) -> PyResult<Bound<'_, PyList>> {
    let g = gpu::gpus().map_err(gpu_err)?;
    let l = PyList::empty(py);
    for i in g {
        let d = PyDict::new(py);
        d.set_item("index", i.index)?;
        d.set_item("name", i.name)?;
        d.set_item("pci_bus_id", i.pci_bus_id)?;
        d.set_item("numa_node", i.numa_node)?;
        d.set_item("cpus", i.cpus)?;
        d.set_item("memory_bytes", i.memory_bytes)?;
        l.append(d)?;
    }
    Ok(l)
}

/// Percent of time a kernel ran on GPU `index` (NVML index) over the last sample period.
#[pyfunction]
pub fn gpu_utilization(index: u32) -> PyResult<u32> {
    gpu::utilization(index).map_err(gpu_err)
}

/// Host-to-device GB/s on `device`, `iters` copies of `nbytes` each, from a registered shared
/// memfd mapping (what a ring is), from `cuMemHostAlloc` memory (the pinned ceiling) and from
/// `malloc` memory (pageable). Returns a dict with `ring`, `pinned`, `pageable`,
/// `register_s` (the one-time registration) and `device_name`.
#[pyfunction]
#[pyo3(signature = (nbytes, iters=20, device=0))]
pub fn h2d_bandwidth<'py>(
    py: Python<'py>,
    nbytes: usize,
    iters: u32,
    device: i32,
) -> PyResult<Bound<'py, PyDict>> {
    let cuda = open(device)?;
    let d = PyDict::new(py);
    d.set_item("device_name", cuda.name())?;
    d.set_item("bytes", nbytes)?;
    d.set_item("iters", iters)?;
    for (k, src) in [
        ("ring", H2dSource::RegisteredMemfd),
        ("pinned", H2dSource::Pinned),
        ("pageable", H2dSource::Pageable),
    ] {
        let c = Arc::clone(&cuda);
        let (gbps, setup) = py
            .detach(move || gpu::h2d_bandwidth(&c, src, nbytes, iters))
            .map_err(gpu_err)?;
        d.set_item(k, gbps)?;
        if k == "ring" {
            d.set_item("register_s", setup)?;
        }
    }
    Ok(d)
}

/// Whether a CUDA device can be opened here, and if not why (`(False, reason)`).
#[pyfunction]
pub fn cuda_available() -> (bool, Option<String>) {
    match Cuda::open(0) {
        Ok(_) => (true, None),
        Err(e) => (false, Some(e.to_string())),
    }
}
