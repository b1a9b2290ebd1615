//! hydrofeed feeder: storage, format readers, split planning, coordinator and daemon.
//!
//! Most users want [`format::plan`] to cut an input into [`split::Split`]s and
//! [`format::open_split`] to read one split as Arrow `RecordBatch`es.

pub mod cli;
pub mod coord;
pub mod daemon;
pub mod error;
pub mod format;
pub mod gen;
pub mod serve;
pub mod split;
pub mod storage;

pub use error::{Error, Result};
