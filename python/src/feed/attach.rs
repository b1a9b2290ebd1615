//! Attaching to a feeder (waiting for it to appear, then the `Hello` with the batch size)
//! and re-attaching to a restarted one: the position a trainer reports (`Control::Rejoin`,
//! rows read per lease over this epoch and the last, from the frames' lineage) so the rows it
//! read after its last ack are not handed out again.

use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use hydrofeed_ipc::{connect, AttachError, Consumer};
use hydrofeed_tfbridge::{
    lineage, Control, FrameDecoder, FrameHeader, Piece, REJOIN_LEASES_PER_MESSAGE,
};
use pyo3::prelude::*;

use crate::blocking::{wait, Step, TICK};
use crate::error::{self, PeerLostError};

use super::{Feed, Inner};

/// Keeps `inner`'s position for a restarted feeder up to date with one frame read.
pub(super) fn track(inner: &mut Inner, frame: &arrow_buffer::Buffer) {
    let Ok(h) = FrameHeader::parse(frame.as_slice()) else {
        return; // the decoder names the corruption
    };
    match h.kind() {
        Some(hydrofeed_tfbridge::FrameKind::Batch) => {
            if inner.epoch != Some(h.epoch) {
                inner.epoch = Some(h.epoch);
                inner.epoch_rows = 0;
            }
            inner.epoch_done = false;
            inner.epoch_rows += h.rows;
            for p in lineage(frame.as_slice(), &h) {
                inner.consumed.add(p);
            }
        }
        Some(hydrofeed_tfbridge::FrameKind::EndOfEpoch) => {
            // Every lease before the epoch that ended is acked at the coordinator (not yet
            // that epoch's own: the rank may have gone ahead).
            inner.epoch_done = true;
            inner.consumed.end_epoch();
        }
        _ => {}
    }
}

impl Feed {
    /// Sends the `Hello` once, with the batch size asked so far.
    pub(super) fn hello(&self, inner: &mut Inner) -> PyResult<()> {
        if inner.hello_sent {
            return Ok(());
        }
        inner.hello_sent = true;
        let bs = Some(self.batch_size.load(Ordering::Acquire)).filter(|&b| b > 0);
        match inner.consumer.as_mut() {
            Some(c) => send_hello(c, bs, &self.address, true),
            None => Ok(()),
        }
    }
}

/// `first`: the trainer's first attach (not a re-attach to a restarted feeder).
pub(super) fn send_hello(
    consumer: &mut Consumer,
    batch_size: Option<u64>,
    address: &str,
    first: bool,
) -> PyResult<()> {
    let hello = Control::Hello {
        batch_size,
        pid: std::process::id(),
        first,
    }
    .to_bytes();
    consumer.send_control(&hello).map_err(|e| {
        PeerLostError::new_err(format!(
            "feeder (pid {}) at {address}: sending the batch size: {e}",
            consumer.peer_pid()
        ))
    })
}

/// Attaches to the feeder listening on `address`, waiting up to `timeout` for it to appear.
/// `restarted`: the feeder is restarted when it dies (`launch`), so a feeder lost in the
/// middle of the handshake (reset, or gone before it answered) is waited for too.
pub(super) fn attach(
    py: Python<'_>,
    address: &str,
    timeout: Duration,
    restarted: bool,
) -> PyResult<Consumer> {
    let path = Path::new(address).to_path_buf();
    let what = format!("the feeder at {address} to accept (stage: attach)");
    let started = Instant::now();
    // Each attempt may take a while: the feeder creates (and may prefault) the ring inside
    // the handshake, and an attempt that times out mid-handshake resets it (the feeder then
    // starts over with a new ring). Ctrl-C is checked between attempts (1 s).
    let attempt = timeout.min(Duration::from_secs(1));
    let r = wait(py, timeout, &what, || {
        match connect(&path, attempt) {
            Ok(c) => Step::Ready(c),
            // Not there yet (the feeder may still be starting): retry until the deadline.
            Err(AttachError::Timeout) => Step::Again,
            Err(e @ AttachError::Io { errno, .. })
                if errno == 2 || errno == 111 || (restarted && (errno == 104 || errno == 32)) =>
            {
                if started.elapsed() + TICK >= timeout {
                    Step::Failed(e)
                } else {
                    std::thread::sleep(TICK / 2);
                    Step::Again
                }
            }
            Err(AttachError::PeerLost) if restarted && started.elapsed() + TICK < timeout => {
                std::thread::sleep(TICK / 2);
                Step::Again
            }
            Err(e) => Step::Failed(e),
        }
    })?;
    r.map_err(|e| error::attach(e, address))
}

impl Feed {
    /// The feeder died and `launch` restarts it: attach to the new one at the same address,
    /// say hello again and report where this trainer is (`Control::Rejoin`), so the rows read
    /// after the last ack that reached the coordinator are not handed out again.
    pub(super) fn rejoin(&self, py: Python<'_>, inner: &mut Inner) -> PyResult<()> {
        let old = self.peer();
        let mut c = attach(py, &self.address, self.rejoin_timeout, true).map_err(|e| {
            PeerLostError::new_err(format!(
                "feeder (pid {old}) at {} died, and no feeder took this trainer back within \
                 {:.0} s: {e}",
                self.address,
                self.rejoin_timeout.as_secs_f64()
            ))
        })?;
        let bs = Some(self.batch_size.load(Ordering::Acquire)).filter(|&b| b > 0);
        send_hello(&mut c, bs, &self.address, false)?;
        let consumed: Vec<Piece> = inner.consumed.pieces();
        let mut parts: Vec<&[Piece]> = consumed.chunks(REJOIN_LEASES_PER_MESSAGE).collect();
        if parts.is_empty() {
            parts.push(&[]);
        }
        let last = parts.len() - 1;
        for (i, part) in parts.into_iter().enumerate() {
            let m = Control::Rejoin {
                epoch: inner.epoch,
                epoch_done: inner.epoch_done,
                epoch_rows: inner.epoch_rows,
                consumed: part.to_vec(),
                more: i < last,
            };
            c.send_control(&m.to_bytes()).map_err(|e| {
                PeerLostError::new_err(format!(
                    "feeder (pid {}) at {}: sending where this trainer is: {e}",
                    c.peer_pid(),
                    self.address
                ))
            })?;
        }
        self.peer.store(c.peer_pid(), Ordering::Relaxed);
        let status = c.producer_status();
        {
            // A new ring, counted from its first frame; batches of the old one still to be
            // handed out count no more (the restarted feeder was told what was read).
            let mut h = self.handed();
            h.generation += 1;
            h.frames = 0;
            h.pending.clear();
            h.word = Some(c.handout());
        }
        inner.consumer = Some(c);
        inner.dec = FrameDecoder::new();
        inner.frames = 0;
        inner.acked = 0;
        inner.hello_sent = true;
        let mut st = self.stats();
        st.rejoins += 1;
        st.feeder_status = Some(status);
        Ok(())
    }
}
