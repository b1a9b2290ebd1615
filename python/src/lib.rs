//! `hydrofeed._native`: the compiled half of the `hydrofeed` Python package.
//!
//! - [`read::Reader`]: `hydrofeed.read(path)`, an input's batches as `pyarrow.RecordBatch`.
//! - [`feed::Feed`] / [`feed::Batch`]: the trainer's end of a ring; batches are mappings of
//!   column -> numpy array viewing the ring memory (zero-copy).
//! - [`gpu`]: batches staged into GPU memory ([`gpu::DeviceFeed`], DLPack `kDLCUDA` tensors),
//!   GPU discovery and the H2D measurement of `bench gpu`.
//! - [`spark_ring`]: the ring a Spark feeding task feeds a trainer through.
//! - [`rebatch::Rebatcher`]: the cutter of `DataFeed.next_batch(n)`.
//! - [`unpickle::unpickle_frame`]: rows Spark holds pickled, made into objects in the trainer;
//!   [`arena`]: the cache of freed object memory that making them batch after batch reuses.
//! - [`error`]: the exception tree; [`blocking`]: the one chokepoint for blocking calls (GIL
//!   released, Ctrl-C answered every 100 ms, overall deadline, fork refused).
//!
//! Most users want the pure-Python `hydrofeed.DataFeed` built on these.

use pyo3::prelude::*;

pub mod arena;
pub mod blocking;
pub mod error;
pub mod feed;
pub mod gpu;
pub mod read;
pub mod rebatch;
pub mod spark_ring;
pub mod tensor;
pub mod unpickle;

/// `TF_CONFIG` JSON for a task, from the cluster spec as JSON (`{job: ["host:port", ...]}`):
/// built by the same code as `hydrofeed launch`'s (`hydrofeed_coord::cluster::tf_config_for`).
#[pyfunction]
#[pyo3(signature = (cluster_spec_json, task_type, index, environment=None))]
fn tf_config(
    cluster_spec_json: &str,
    task_type: &str,
    index: u32,
    environment: Option<&str>,
) -> PyResult<String> {
    let spec: hydrofeed_coord::ClusterSpec =
        serde_json::from_str(cluster_spec_json).map_err(|e| {
            pyo3::exceptions::PyValueError::new_err(format!(
                "cluster spec: expected {{job: [\"host:port\", ...]}} as JSON: {e}"
            ))
        })?;
    Ok(hydrofeed_coord::cluster::tf_config_for(
        &spec,
        task_type,
        index,
        environment,
    ))
}

/// The native module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    hydrofeed_error::check_cpu().map_err(pyo3::exceptions::PyImportError::new_err)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    error::register(m)?;
    m.add_class::<read::Reader>()?;
    m.add_class::<rebatch::Rebatcher>()?;
    m.add_class::<feed::Feed>()?;
    m.add_class::<feed::Batch>()?;
    m.add_class::<tensor::Ragged>()?;
    m.add_class::<tensor::BufferOwner>()?;
    m.add_class::<spark_ring::RingWriter>()?;
    m.add_class::<spark_ring::RingReader>()?;
    m.add("SOCKET_ENV", hydrofeed_tfbridge::SOCKET_ENV)?;
    m.add_function(wrap_pyfunction!(tf_config, m)?)?;
    m.add_function(wrap_pyfunction!(unpickle::unpickle_frame, m)?)?;
    m.add_function(wrap_pyfunction!(arena::arena_cache, m)?)?;
    m.add_class::<gpu::DeviceFeed>()?;
    m.add_class::<gpu::DeviceBatch>()?;
    m.add_class::<gpu::CudaTensor>()?;
    m.add_class::<gpu::CudaRagged>()?;
    m.add_function(wrap_pyfunction!(gpu::gpus, m)?)?;
    m.add_function(wrap_pyfunction!(gpu::gpu_utilization, m)?)?;
    m.add_function(wrap_pyfunction!(gpu::h2d_bandwidth, m)?)?;
    m.add_function(wrap_pyfunction!(gpu::cuda_available, m)?)?;
    Ok(())
}
