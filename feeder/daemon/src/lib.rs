//! The hydrofeed feeder daemon: reads splits with [`hydrofeed_format`] and writes their batches
//! into the trainers' rings ([`hydrofeed_ipc`], frames of [`hydrofeed_tfbridge`]).
//!
//! - [`serve`]: one trainer, no coordinator: every split of the input, epoch after epoch.
//! - [`daemon`]: the coordinated feeder of a node: leases row ranges from the coordinator
//!   ([`hydrofeed_coord`]), one ring per local rank, acks what the trainers consumed.
//! - [`stream`]: reads a segment of the fixed order (lanes in parallel, windows permuted).
//! - [`pipeline`]: what both are made of: a source of work, one epoch writer, one budget.

pub mod daemon;
mod fill;
pub mod pipeline;
pub mod serve;
pub mod stream;
mod writer;

pub use hydrofeed_error::{Error, Result};
