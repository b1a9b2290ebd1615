//! Taking a rank's trainer: the socket, the ring, its `Hello` (the batch size it asks for),
//! and the `Rejoin` report of a trainer re-attaching to a restarted feeder.

use std::ops::ControlFlow;
use std::time::Duration;

use hydrofeed_ipc::{Listener, Producer, RingConfig};
use hydrofeed_tfbridge::{Control, Piece};

use super::FeederOptions;
use crate::writer;
use crate::Result;

/// A trainer attached to a rank's ring, before any batch.
pub(super) struct Attached {
    pub(super) listener: Listener,
    pub(super) producer: Producer,
    /// The batch size its `Hello` asked for.
    pub(super) asked: Option<usize>,
    /// What a re-attaching trainer reported (`--rejoin`).
    pub(super) rejoin: Option<Rejoin>,
}

/// Where a trainer that re-attaches to a restarted feeder is in the feed.
#[derive(Debug, Default)]
pub(super) struct Rejoin {
    pub(super) epoch: Option<u32>,
    pub(super) epoch_done: bool,
    pub(super) epoch_rows: u64,
    pub(super) consumed: Vec<Piece>,
}

/// Binds `rank`'s socket, takes its trainer's attach and `Hello` (and with `rejoin`, its
/// `Rejoin` report).
pub(super) fn attach(opts: &FeederOptions, rank: u32, rejoin: bool) -> Result<Attached> {
    take(bind(opts, rank)?, opts, rejoin)
}

/// Binds `rank`'s socket and makes its trainer's ring before the trainer comes (the ring's
/// pages allocated now, not between the trainer's connect and its first batch).
pub(super) fn bind(opts: &FeederOptions, rank: u32) -> Result<Listener> {
    let socket = opts.socket_dir.join(format!("rank-{rank}.sock"));
    let ring_bytes = (opts.memory_budget / 2 / opts.trainers as usize).clamp(8 << 20, 64 << 20);
    writer::bind(
        &socket,
        RingConfig {
            capacity: ring_bytes,
            max_frame: None,
        },
    )
}

/// Takes the trainer's attach on `listener` and its `Hello` (and with `rejoin`, its `Rejoin`
/// report).
pub(super) fn take(listener: Listener, opts: &FeederOptions, rejoin: bool) -> Result<Attached> {
    tracing::info!(socket = %listener.path().display(), "waiting for the trainer");
    let mut producer = writer::accept(&listener, opts.accept_timeout)?;
    let (asked, first) = writer::hello(&mut producer, opts.accept_timeout)?;
    let rejoin = match (rejoin, first) {
        (false, _) => None,
        // A trainer still starting when the feeder before died: it read nothing.
        (true, true) => {
            tracing::info!(socket = %listener.path().display(), "the trainer attaches for the first time");
            Some(Rejoin::default())
        }
        (true, false) => Some(rejoin_report(&mut producer, opts.accept_timeout)?),
    };
    Ok(Attached {
        listener,
        producer,
        asked,
        rejoin,
    })
}

/// Reads the `Rejoin` message(s) of a trainer re-attaching to a restarted feeder.
pub(super) fn rejoin_report(p: &mut Producer, timeout: Duration) -> Result<Rejoin> {
    let mut r = Rejoin::default();
    writer::await_control(
        p,
        timeout,
        "Rejoin",
        "say where it was in the feed (stage: rejoin)",
        |c| match c {
            Control::Rejoin {
                epoch,
                epoch_done,
                epoch_rows,
                consumed,
                more,
            } => {
                r.epoch = epoch;
                r.epoch_done = epoch_done;
                r.epoch_rows = epoch_rows;
                r.consumed.extend(consumed);
                if more {
                    ControlFlow::Continue(None)
                } else {
                    ControlFlow::Break(std::mem::take(&mut r))
                }
            }
            other => ControlFlow::Continue(Some(other)),
        },
    )
}
