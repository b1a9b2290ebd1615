//! The node's GPUs, without a feed: NVML discovery ([`gpus`], [`gpu_utilization`]), whether a
//! CUDA device opens here ([`cuda_available`]) and the host-to-device measurement of
//! `bench gpu` ([`h2d_bandwidth`]).

use std::sync::Arc;

use hydrofeed_tfbridge::gpu::{self, Cuda, H2dSource};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use super::{gpu_err, open};

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
