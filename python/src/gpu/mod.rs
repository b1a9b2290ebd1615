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
//!
//! Parts: `batch` ([`DeviceBatch`] and its columns in device memory, [`CudaTensor`] and
//! [`CudaRagged`]), `dlpack` (the DLPack ABI those columns export) and `devices` (NVML
//! discovery, `cuda_available`, the H2D measurement of `bench gpu`). This module holds
//! [`DeviceFeed`]: the staging state, its counters and its Python methods.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hydrofeed_tfbridge::gpu::{Backend, Cuda, GpuError, HostPath, PoolCounts, Staged, Stager};
use hydrofeed_tfbridge::{to_tensor, DType, Tensor};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::blocking::Owner;
use crate::error::{self, NoCudaDeviceError};
use crate::feed::{copy_array, Batch, Feed};
use crate::tensor;

mod batch;
mod devices;
mod dlpack;

pub use batch::{CudaRagged, CudaTensor, DeviceBatch};
pub use devices::{cuda_available, gpu_utilization, gpus, h2d_bandwidth};

fn gpu_err(e: GpuError) -> PyErr {
    match e {
        GpuError::NoDevice(_) => NoCudaDeviceError::new_err(e.to_string()),
        e => error::internal(e),
    }
}

fn open(device: i32) -> PyResult<Arc<Cuda>> {
    Cuda::open(device).map(Arc::new).map_err(gpu_err)
}

/// `HYDROFEED_CUDA_REGISTER=0`: do not register the ring with the driver; stage every batch
/// through a pinned bounce buffer (hosts where pinning the ring's pages is not wanted).
const REGISTER_ENV: &str = "HYDROFEED_CUDA_REGISTER";

/// The bytes of a dense tensor (its buffer may be longer).
fn part(d: &hydrofeed_tfbridge::Dense) -> &[u8] {
    let n = d.shape.iter().product::<usize>() * d.dtype.size();
    &d.data.as_slice()[..n.min(d.data.len())]
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
    pool: PoolCounts,
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
        // Staged batches are handed out when read (the staging holds at most the next one).
        self.feed.bind(py).borrow().took(&host, true);
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
