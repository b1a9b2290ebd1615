//! The one exception tree of `hydrofeed`, and every mapping of a Rust error onto it.
//!
//! ```text
//! HydrofeedError
//!  +-- DataError          corrupt or unreadable input (names file, split, byte offset)
//!  +-- SchemaError        schema mismatch, missing column, column without tensor layout
//!  +-- FeedTimeoutError   a wait passed its deadline (names peer and stage)
//!  +-- PeerLostError      the feeder (or trainer) process is gone
//!  +-- RingExhaustedError batches the trainer holds fill the ring (on_ring_pressure="raise")
//!  +-- CoordinatorError   coordinator protocol or state errors
//! ```
//! Missing files raise `FileNotFoundError`, refused access `PermissionError`, bad arguments
//! `ValueError`; `RuntimeError` only for "internal error, please report".

use hydrofeed_error::Error as FeedError;
use hydrofeed_ipc::{AttachError, NextError};
use hydrofeed_tfbridge::{ErrorCode, FrameError, LayoutError};
use pyo3::create_exception;
use pyo3::exceptions::{
    PyException, PyFileNotFoundError, PyPermissionError, PyRuntimeError, PyValueError,
};
use pyo3::prelude::*;

create_exception!(
    hydrofeed,
    HydrofeedError,
    PyException,
    "Base of every hydrofeed error."
);
create_exception!(
    hydrofeed,
    DataError,
    HydrofeedError,
    "Corrupt or unreadable input; the message names file, split and byte offset."
);
create_exception!(
    hydrofeed,
    SchemaError,
    HydrofeedError,
    "A schema mismatch, a missing column, or a column that has no tensor layout."
);
create_exception!(
    hydrofeed,
    FeedTimeoutError,
    HydrofeedError,
    "A wait passed its deadline; the message names the peer and the stage."
);
create_exception!(
    hydrofeed,
    PeerLostError,
    HydrofeedError,
    "The peer process (feeder or trainer) died or disconnected."
);
create_exception!(
    hydrofeed,
    RingExhaustedError,
    HydrofeedError,
    "Batches this trainer holds fill the ring (DataFeed(on_ring_pressure=\"raise\"))."
);
create_exception!(
    hydrofeed,
    RingPressureWarning,
    pyo3::exceptions::PyUserWarning,
    "Batches this trainer holds pinned too much of the ring and were copied out of it."
);
create_exception!(
    hydrofeed,
    CoordinatorError,
    HydrofeedError,
    "A coordinator protocol or state error."
);

create_exception!(
    hydrofeed,
    NoCudaDeviceError,
    HydrofeedError,
    "A GPU path was asked for on a host without a CUDA driver or device (or one that refused)."
);

/// Registers the exception classes on the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("HydrofeedError", py.get_type::<HydrofeedError>())?;
    m.add("DataError", py.get_type::<DataError>())?;
    m.add("SchemaError", py.get_type::<SchemaError>())?;
    m.add("FeedTimeoutError", py.get_type::<FeedTimeoutError>())?;
    m.add("PeerLostError", py.get_type::<PeerLostError>())?;
    m.add("CoordinatorError", py.get_type::<CoordinatorError>())?;
    m.add("RingExhaustedError", py.get_type::<RingExhaustedError>())?;
    m.add("RingPressureWarning", py.get_type::<RingPressureWarning>())?;
    m.add("NoCudaDeviceError", py.get_type::<NoCudaDeviceError>())?;
    Ok(())
}

/// A feeder error as a Python exception.
pub fn feeder(e: FeedError) -> PyErr {
    let msg = e.to_string();
    match e {
        FeedError::NotFound { .. } => PyFileNotFoundError::new_err(msg),
        FeedError::PermissionDenied { .. } => PyPermissionError::new_err(msg),
        FeedError::Io { .. } | FeedError::Data { .. } | FeedError::Hdfs { .. } => {
            DataError::new_err(msg)
        }
        FeedError::Schema { .. } => SchemaError::new_err(msg),
        FeedError::Timeout { .. } | FeedError::Stalled { .. } => FeedTimeoutError::new_err(msg),
        FeedError::PeerLost(_) => PeerLostError::new_err(msg),
        FeedError::Coordinator(_) | FeedError::CoordinatorLost { .. } => {
            CoordinatorError::new_err(msg)
        }
        FeedError::InvalidArgument(_) => PyValueError::new_err(msg),
        _ => PyRuntimeError::new_err(msg),
    }
}

/// An `Error` frame from the feeder, raised in the trainer.
pub fn from_frame(code: ErrorCode, msg: &str, peer: u32) -> PyErr {
    let msg = format!("feeder (pid {peer}): {msg}");
    match code {
        ErrorCode::Data | ErrorCode::Io => DataError::new_err(msg),
        ErrorCode::Schema => SchemaError::new_err(msg),
        ErrorCode::NotFound => PyFileNotFoundError::new_err(msg),
        ErrorCode::PermissionDenied => PyPermissionError::new_err(msg),
        ErrorCode::Timeout => FeedTimeoutError::new_err(msg),
        ErrorCode::InvalidArgument => PyValueError::new_err(msg),
        ErrorCode::Coordinator => CoordinatorError::new_err(msg),
        ErrorCode::Other => HydrofeedError::new_err(msg),
    }
}

/// A frame that cannot be decoded (corrupt bytes: a `DataError`, naming the frame).
pub fn frame(e: FrameError, peer: u32) -> PyErr {
    DataError::new_err(format!("feeder (pid {peer}) sent a bad frame: {e}"))
}

/// A column without tensor layout.
pub fn layout(column: &str, e: LayoutError) -> PyErr {
    SchemaError::new_err(format!("column {column:?}: {e}"))
}

/// Attaching to the feeder failed.
pub fn attach(e: AttachError, address: &str) -> PyErr {
    let msg = format!("attaching to the feeder at {address}: {e}");
    match e {
        AttachError::Timeout => FeedTimeoutError::new_err(msg),
        AttachError::PeerLost => PeerLostError::new_err(msg),
        AttachError::Io { errno, .. } if errno == libc_enoent() => {
            PyFileNotFoundError::new_err(format!("{msg} (is `hydrofeed serve` running?)"))
        }
        AttachError::Io { errno, .. } if errno == libc_econnrefused() => PeerLostError::new_err(
            format!("{msg} (no feeder listens there: it exited or was never started)"),
        ),
        AttachError::PeerUid { .. } => PyPermissionError::new_err(msg),
        _ => HydrofeedError::new_err(msg),
    }
}

fn libc_enoent() -> i32 {
    2
}

fn libc_econnrefused() -> i32 {
    111
}

/// Reading the ring failed (not a timeout, which the caller handles).
pub fn next(e: NextError, peer: u32, stage: &str) -> PyErr {
    match e {
        NextError::PeerLost => PeerLostError::new_err(format!(
            "feeder (pid {peer}) is gone ({stage}): it died or dropped the ring before \
             end-of-feed"
        )),
        NextError::Timeout => FeedTimeoutError::new_err(format!("feeder (pid {peer}): {stage}")),
        NextError::Corrupt => {
            HydrofeedError::new_err(format!("feeder (pid {peer}): ring corrupt ({stage})"))
        }
    }
}

/// An internal invariant broke.
pub fn internal(msg: impl std::fmt::Display) -> PyErr {
    PyRuntimeError::new_err(format!("internal error, please report: {msg}"))
}
