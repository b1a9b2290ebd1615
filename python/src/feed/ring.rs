//! The reading side of [`Feed`]: waiting on the ring for the next frame (acking as it goes,
//! answering ring pressure, re-attaching when the feeder was restarted), decoding it, and
//! keeping the counters; the bodies of `next()` and `wait_schema()`.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use hydrofeed_coord::Stage;
use hydrofeed_ipc::{Consumer, Held, NextError, ProducerStatus, Slot};
use hydrofeed_tfbridge::{owned_buffer, Control, FeedReport, Frame};
use pyo3::prelude::*;
use pyo3_arrow::PySchema;

use crate::blocking::{wait, Owner, Step, TICK};
use crate::error::{self, FeedTimeoutError, PeerLostError, RingExhaustedError};

use super::attach::track;
use super::batch::Batch;
use super::{secs, Feed, Pressure};

/// Held batches may pin up to this share of the ring before they are copied out of it.
const HIGH_WATER: f64 = 0.5;

/// Why a wait step stopped.
enum Stop {
    Next(NextError),
    /// The feeder waits for space that only batches this process holds can free.
    Pressure,
    /// `close()` was called from another thread.
    Closed,
    /// The feeder closed the ring without an end-of-feed frame.
    Eof,
}

/// How often a busy trainer acks.
const ACK_EVERY: Duration = Duration::from_millis(50);

/// How long a trainer that finds the ring empty waits for a frame before it acks what it took
/// (a stream that keeps up sends no ack per batch; the end of a feed and the epoch barrier,
/// which wait for those acks, are not held up by a whole wait slice).
const ACK_BLOCKED: Duration = Duration::from_millis(5);

/// Sends `Ack{seq}` for the first `frames` frames if they are not acked yet, with this
/// trainer's figures (`feed`: steps, rows, wait for input; the feeder serves them as metrics).
/// Best effort: a feeder that already left does not read its control channel, and its death
/// is seen by `next()`.
pub(super) fn send_ack(
    consumer: &mut Consumer,
    acked: &mut u64,
    last: &mut Instant,
    frames: u64,
    feed: Option<FeedReport>,
) {
    if frames > *acked {
        let ack = Control::Ack {
            seq: frames - 1,
            feed,
        };
        let _ = consumer.send_control(&ack.to_bytes());
        *acked = frames;
        *last = Instant::now();
    }
}

/// The stage the feeder publishes for this ring (`None`: it publishes none, e.g. `hydrofeed
/// serve`, or a word this version does not know).
pub(super) fn feeder_stage(w: &ProducerStatus) -> Option<Stage> {
    u8::try_from(w.get()).ok().and_then(Stage::from_code)
}

/// What a feeder stage means to a trainer waiting on an empty ring.
fn stage_cause(rank: &str, s: Stage) -> String {
    let why = match s {
        Stage::Reading => "reading from storage: the input is slow to arrive (disk, network, HDFS)",
        Stage::Decoding => {
            "decoding: the decode threads are the bottleneck (--decode-threads, fewer columns)"
        }
        Stage::WaitingWork => {
            "waiting for work: this rank's share of the epoch is done (under the fixed order, \
             of the next epoch's too), and more comes once every rank consumed its share of the \
             epoch (the epoch barrier: another rank is slower)"
        }
        Stage::Starting => "starting (registering, planning the input)",
        Stage::WaitingRing | Stage::TrainerIdle => {
            "waiting for ring space although this process took every batch (another \
             process holds the ring?)"
        }
        Stage::Done => "done: it sent the end of the feed",
        Stage::TrainerGone => "done with this rank: it saw its trainer leave",
    };
    format!("the ring is empty and the feeder of {rank} is {why}")
}

impl Feed {
    /// `next()`: the next batch, or `None` once the feed ended.
    pub(crate) fn read_next(
        &self,
        py: Python<'_>,
        timeout: Option<f64>,
    ) -> PyResult<Option<Batch>> {
        let timeout = match timeout {
            Some(t) => secs("timeout", t)?,
            None => self.timeout,
        };
        let mut g = self.lock(py)?;
        let inner = &mut *g;
        self.hello(inner)?;
        loop {
            if self.stats().done || self.closing.load(Ordering::Acquire) {
                return Ok(None);
            }
            let Some(consumer) = inner.consumer.as_mut() else {
                return Ok(None);
            };
            let held = consumer.held();
            self.stats().held = held;
            if held.slots > 0 && held.pinned as f64 > HIGH_WATER * consumer.capacity() as f64 {
                self.relieve(py, consumer, held)?;
            }
            let frames = self.frames_handed();
            let report = self.stats().report();
            if inner.last_ack.elapsed() >= ACK_EVERY {
                send_ack(
                    consumer,
                    &mut inner.acked,
                    &mut inner.last_ack,
                    frames,
                    report,
                );
            }
            let (acked, last_ack) = (&mut inner.acked, &mut inner.last_ack);
            let closing = &self.closing;
            let handed = &self.handed;
            let t0 = Instant::now();
            let r: PyResult<Result<Slot, Stop>> = wait(py, timeout, "a batch", || {
                if closing.load(Ordering::Acquire) {
                    return Step::Failed(Stop::Closed);
                }
                // Frames handed out (here or by another thread meanwhile) and not acked yet: a
                // first, short slice, then the ack (ACK_BLOCKED).
                let frames = handed.lock().map_or(frames, |h| h.frames);
                let slice = if frames > *acked { ACK_BLOCKED } else { TICK };
                match consumer.next(slice) {
                    Ok(Some(l)) => Step::Ready(l),
                    Ok(None) => Step::Failed(Stop::Eof),
                    Err(NextError::Timeout) => {
                        // Blocked: the feeder (and the coordinator's epoch barrier) may be
                        // waiting for our acks.
                        send_ack(consumer, acked, last_ack, frames, report);
                        // Ring pressure only after a whole slice: a producer seen waiting
                        // within the short one is usually being woken by our last release.
                        if slice == TICK && consumer.producer_waiting() && consumer.held().slots > 0
                        {
                            Step::Failed(Stop::Pressure)
                        } else {
                            Step::Again
                        }
                    }
                    Err(e) => Step::Failed(Stop::Next(e)),
                }
            });
            self.stats().wait += t0.elapsed();
            let slot = match r {
                Ok(Ok(l)) => l,
                Ok(Err(Stop::Closed)) => return Ok(None),
                Ok(Err(Stop::Pressure)) => {
                    let held = consumer.held();
                    self.relieve(py, consumer, held)?;
                    continue;
                }
                Ok(Err(Stop::Next(NextError::PeerLost)))
                    if !self.rejoin_timeout.is_zero() && !self.closing.load(Ordering::Acquire) =>
                {
                    // Every frame the dead feeder committed was read: what this trainer
                    // consumed is exactly what `inner.consumed` says.
                    self.rejoin(py, inner)?;
                    continue;
                }
                Ok(Err(Stop::Next(e))) => {
                    self.stats().done = true;
                    if self.closing.load(Ordering::Acquire) {
                        return Ok(None);
                    }
                    return Err(error::next(e, self.peer(), "waiting on ring"));
                }
                Ok(Err(Stop::Eof)) => {
                    self.stats().done = true;
                    return Err(PeerLostError::new_err(format!(
                        "feeder (pid {}) closed the ring before end-of-feed",
                        self.peer()
                    )));
                }
                Err(e) if e.is_instance_of::<FeedTimeoutError>(py) => {
                    return Err(FeedTimeoutError::new_err(self.stall(consumer, timeout)));
                }
                Err(e) => return Err(e),
            };
            inner.frames += 1;
            let frame_len = slot.len() as u64;
            let buf = owned_buffer(slot);
            if !self.rejoin_timeout.is_zero() {
                track(inner, &buf);
            }
            let decoded = inner
                .dec
                .decode(&buf)
                .map_err(|e| error::frame(e, self.peer()));
            let mut st = self.stats();
            st.frames += 1;
            st.bytes += frame_len;
            if decoded.is_err() {
                // A frame that cannot be decoded ends the feed (like an error frame): the rows
                // after it would come without the ones it held.
                st.done = true;
            }
            match decoded? {
                Frame::Schema(..) => st.schema = inner.dec.schema().cloned(),
                Frame::Batch(meta, batch) => {
                    if st.first_batch.is_none() {
                        st.first_batch = Some(Instant::now());
                        st.wait_at_first = st.wait;
                    }
                    st.epoch = meta.epoch;
                    st.split = meta.split;
                    st.rows += meta.rows;
                    st.batches += 1;
                    st.acked = inner.acked;
                    return Ok(Some(Batch {
                        batch,
                        meta,
                        owner: Owner::here(),
                        frames: inner.frames,
                        generation: self.handed().generation,
                    }));
                }
                Frame::EndOfSplit(_) => st.splits_done += 1,
                Frame::EndOfEpoch(m) => st.epochs_done = m.epoch + 1,
                Frame::EndOfFeed(_) => {
                    st.done = true;
                    // The end reached the trainer's code: so did everything before it.
                    let frames = inner.frames;
                    {
                        let mut h = self.handed();
                        let g = h.generation;
                        h.hand_out(g, frames);
                    }
                    let report = st.report();
                    if let Some(c) = inner.consumer.as_mut() {
                        send_ack(c, &mut inner.acked, &mut inner.last_ack, frames, report);
                    }
                    st.acked = inner.acked;
                    return Ok(None);
                }
                Frame::Error(_, code, msg) => {
                    st.done = true;
                    return Err(error::from_frame(code, &msg, self.peer()));
                }
            }
        }
    }

    /// `wait_schema()`: waits for the stream's schema without consuming any batch.
    pub(super) fn read_schema<'py>(
        &self,
        py: Python<'py>,
        timeout: Option<f64>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let timeout = match timeout {
            Some(t) => secs("timeout", t)?,
            None => self.timeout,
        };
        if let Some(sc) = self.stats().schema.clone() {
            return PySchema::new(sc).into_pyarrow(py);
        }
        let mut g = self.lock(py)?;
        let inner = &mut *g;
        self.hello(inner)?;
        while inner.dec.schema().is_none() {
            let done = self.stats().done;
            let Some(consumer) = inner.consumer.as_mut().filter(|_| !done) else {
                return Err(PeerLostError::new_err(
                    "the feed is closed and never sent a schema",
                ));
            };
            let what = format!(
                "the schema from the feeder (pid {}) at {} (stage: feeder planning the input)",
                self.peer(),
                self.address
            );
            let r = wait(py, timeout, &what, || match consumer.next(TICK) {
                Ok(l) => Step::Ready(l),
                Err(NextError::Timeout) => Step::Again,
                Err(e) => Step::Failed(e),
            })?;
            let slot = match r {
                Ok(Some(l)) => l,
                Ok(None) => {
                    self.stats().done = true;
                    return Err(PeerLostError::new_err(format!(
                        "feeder (pid {}) closed the ring before sending a schema",
                        self.peer()
                    )));
                }
                Err(e) => {
                    self.stats().done = true;
                    return Err(error::next(e, self.peer(), "waiting for the schema"));
                }
            };
            inner.frames += 1;
            {
                let mut st = self.stats();
                st.frames += 1;
                st.bytes += slot.len() as u64;
            }
            let decoded = inner.dec.decode(&owned_buffer(slot)).map_err(|e| {
                self.stats().done = true;
                error::frame(e, self.peer())
            })?;
            match decoded {
                Frame::Schema(..) => {}
                Frame::Error(_, code, msg) => {
                    self.stats().done = true;
                    return Err(error::from_frame(code, &msg, self.peer()));
                }
                other => {
                    return Err(error::frame(
                        hydrofeed_tfbridge::FrameError::Corrupt(format!(
                            "expected the schema frame first, got {other:?}"
                        )),
                        self.peer(),
                    ))
                }
            }
        }
        let s = inner
            .dec
            .schema()
            .cloned()
            .ok_or_else(|| error::internal("schema vanished"))?;
        self.stats().schema = Some(s.clone());
        PySchema::new(s).into_pyarrow(py)
    }

    /// Batches this process holds pin too much of the ring: copy them out (and warn once), or
    /// raise, as the feed was told.
    fn relieve(&self, py: Python<'_>, consumer: &mut Consumer, held: Held) -> PyResult<()> {
        let cap = consumer.capacity();
        let mib = |b: u64| b as f64 / (1 << 20) as f64;
        let what = format!(
            "this trainer holds {} batches ({:.1} MiB) of the ring it shares with the feeder \
             (pid {}); with the batches after them they pin {:.1} of its {:.1} MiB, and the \
             ring frees space in order",
            held.slots,
            mib(held.bytes),
            self.peer(),
            mib(held.pinned),
            mib(cap)
        );
        let remedies = "drop references to old batches, keep `batch.copy()` or `np.array(...)` \
                        of data you mean to keep, or give the feeder a bigger ring \
                        (--ring-mb)";
        if self.pressure == Pressure::Raise {
            return Err(RingExhaustedError::new_err(format!(
                "{what}: the feeder cannot write the next batch. Remedies: {remedies}; or \
                 DataFeed(on_ring_pressure=\"copy\") to copy held batches out of the ring"
            )));
        }
        let d = consumer.detach_held().map_err(|e| {
            error::HydrofeedError::new_err(format!("{what}, and copying them out failed: {e}"))
        })?;
        let first = {
            let mut st = self.stats();
            st.pressure_copies += 1;
            st.copied_frames += d.slots as u64;
            st.copied_bytes += d.bytes;
            st.held = consumer.held();
            !std::mem::replace(&mut st.warned, true)
        } && self.warn_pressure.load(Ordering::Relaxed);
        if first {
            let msg = format!(
                "{what}. They were copied out of the ring ({:.1} MiB copied) so the feed keeps \
                 going; batches kept from now on are copied when they pin more than half the \
                 ring (metrics(): pressure_copies, copied_bytes). To stay zero-copy: \
                 {remedies}. DataFeed(on_ring_pressure=\"raise\") raises instead.",
                mib(d.bytes)
            );
            PyErr::warn(
                py,
                &py.get_type::<error::RingPressureWarning>(),
                &std::ffi::CString::new(msg).unwrap_or_default(),
                1,
            )?;
        }
        Ok(())
    }

    /// Why a wait for a batch timed out, from what the ring shows.
    fn stall(&self, consumer: &Consumer, timeout: Duration) -> String {
        let held = consumer.held();
        let waiting = consumer.producer_waiting();
        let cause = if waiting && held.slots > 0 {
            format!(
                "the ring is full of {} batches this process holds ({} bytes): drop references \
                 to old batches",
                held.slots, held.bytes
            )
        } else if waiting {
            "the feeder waits for ring space although this process holds no batch".to_string()
        } else {
            let rank = std::env::var("HYDROFEED_RANK")
                .map(|r| format!("rank {r}"))
                .unwrap_or_else(|_| "this trainer".into());
            match self.stats().feeder_status.as_ref().and_then(feeder_stage) {
                Some(s) => stage_cause(&rank, s),
                None => "the ring is empty and the feeder is alive: it is reading or decoding \
                         slowly, or waiting on its input (see its log)"
                    .to_string(),
            }
        };
        format!(
            "timed out after {:.1}s waiting for a batch from the feeder (pid {}) at {} \
             (stage: waiting on ring): {cause}",
            timeout.as_secs_f64(),
            self.peer(),
            self.address
        )
    }
}
