//! The ring between a Spark feeding task and the trainer it feeds (`hydrofeed.spark.transport`):
//! the same `ipc` ring and `tfbridge` frames as a feeder's, dialled the other way.
//!
//! A feeding task is short-lived and dials the trainer's socket, so it is the side that makes
//! the ring and offers it ([`hydrofeed_ipc::offer`]); the trainer takes it
//! ([`hydrofeed_ipc::take`]). One ring per feeding connection (a partition). Frames: the
//! schema, the partition's batches, and an end-of-split marker at its end; the trainer answers
//! on the ring's control channel (the partition consumed, inference results, an error).
//!
//! - [`RingWriter`] (feeding task): `send(batch)`, `end()`, `control(timeout)`, `close()`.
//! - [`RingReader`] (trainer's hub): `next(timeout)` gives a `pyarrow.RecordBatch`, `"end"`
//!   at the end of the partition, or `None` when nothing came in time; `send(message)`.
//!
//! The reader copies each batch out of its slot (one copy) before handing it on: rows of a
//! partition are queued in the hub and kept by user code for as long as it likes, and a ring
//! frees its slots in order, so a batch that pinned its slot would stop the feeding task for
//! good. The feeder's `DataFeed` hands out zero-copy batches because it can copy held batches
//! out later; a `pyarrow` batch cannot be moved once handed out.

use std::os::fd::{BorrowedFd, OwnedFd};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use arrow_buffer::{Buffer, MutableBuffer};
use hydrofeed_ipc::{
    Consumer, ControlError, NextError, Producer, ReserveError, RingConfig, CONTROL_SEND_TIMEOUT,
};
use hydrofeed_tfbridge::{
    marker, Encoded, Frame, FrameDecoder, FrameEncoder, FrameError, FrameKind, FrameMeta,
};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};
use pyo3_arrow::PyRecordBatch;

use crate::blocking::{self, Owner, Step, TICK};
use crate::error::{self, PeerLostError};

/// A ring's payload bytes: 16 MiB (frames up to 8 MiB; a larger batch is split by rows).
const CAPACITY: usize = 16 << 20;

/// A slice of a wait on the ring, so that a control message sent from another thread gets in.
const SLICE: Duration = Duration::from_millis(20);

fn secs(t: f64) -> PyResult<Duration> {
    Duration::try_from_secs_f64(t.max(0.0))
        .map_err(|e| PyValueError::new_err(format!("timeout {t}: {e}")))
}

/// A duplicate of the socket `fd` (the Python socket object keeps its own).
fn dup(fd: i32) -> PyResult<OwnedFd> {
    // SAFETY: the caller passes the descriptor of a socket object it holds open for the call;
    // it is only borrowed to duplicate it.
    let b = unsafe { BorrowedFd::borrow_raw(fd) };
    b.try_clone_to_owned()
        .map_err(|e| PeerLostError::new_err(format!("duplicating socket {fd}: {e}")))
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A failed ring handshake with the feeding task or trainer (`what`).
fn handshake(e: hydrofeed_ipc::AttachError, what: &str) -> PyErr {
    use hydrofeed_ipc::AttachError as A;
    let msg = format!("{what}: {e}");
    match e {
        A::Timeout => error::FeedTimeoutError::new_err(msg),
        A::PeerLost => PeerLostError::new_err(msg),
        A::PeerUid { .. } => pyo3::exceptions::PyPermissionError::new_err(msg),
        _ => error::HydrofeedError::new_err(msg),
    }
}

fn frame_err(e: FrameError) -> PyErr {
    PyValueError::new_err(format!("encoding a batch for the trainer: {e}"))
}

struct Writer {
    producer: Producer,
    enc: Option<FrameEncoder>,
    seq: u64,
}

impl Writer {
    /// Puts `f` into the ring, waiting up to `timeout` for room (the GIL released).
    fn put(&mut self, py: Python<'_>, f: &Encoded, timeout: Duration) -> PyResult<()> {
        let peer = self.producer.peer_pid();
        let r = blocking::wait(
            py,
            timeout,
            "the trainer to take earlier batches",
            || match self.producer.reserve(f.len(), TICK) {
                Ok(mut slot) => match f.write_to(&mut slot) {
                    Ok(()) => {
                        slot.commit();
                        Step::Ready(())
                    }
                    Err(e) => Step::Failed(Err(e)),
                },
                Err(ReserveError::Timeout) => Step::Again,
                Err(e) => Step::Failed(Ok(e)),
            },
        )?;
        match r {
            Ok(()) => {
                self.seq += 1;
                Ok(())
            }
            Err(Err(e)) => Err(frame_err(e)),
            Err(Ok(ReserveError::TooLarge)) => Err(PyValueError::new_err(format!(
                "a frame of {} bytes is larger than the ring's {}",
                f.len(),
                self.producer.max_frame()
            ))),
            Err(Ok(e)) => Err(PeerLostError::new_err(format!(
                "trainer (pid {peer}) went away while being fed: {e}"
            ))),
        }
    }

    fn meta(&self) -> FrameMeta {
        FrameMeta {
            seq: self.seq,
            ..FrameMeta::default()
        }
    }
}

/// A feeding task's end of the ring to one trainer.
#[pyclass(module = "hydrofeed._native")]
pub struct RingWriter {
    owner: Owner,
    inner: Mutex<Option<Writer>>,
}

impl RingWriter {
    fn with<T>(&self, f: impl FnOnce(&mut Writer) -> PyResult<T>) -> PyResult<T> {
        self.owner.check("RingWriter")?;
        let mut g = lock(&self.inner);
        match g.as_mut() {
            Some(w) => f(w),
            None => Err(PeerLostError::new_err("the ring to the trainer is closed")),
        }
    }
}

#[pymethods]
impl RingWriter {
    /// Makes a ring and offers it to the trainer over the connected socket `fd` (duplicated;
    /// the caller keeps its own), waiting up to `timeout` seconds for the trainer to take it.
    #[new]
    #[pyo3(signature = (fd, timeout=30.0))]
    fn new(py: Python<'_>, fd: i32, timeout: f64) -> PyResult<Self> {
        let sock = dup(fd)?;
        let timeout = secs(timeout)?;
        let cfg = RingConfig {
            capacity: CAPACITY,
            max_frame: None,
        };
        let producer = blocking::call(py, "the trainer to take the ring", move || {
            hydrofeed_ipc::offer(sock, cfg, timeout)
        })?
        .map_err(|e| handshake(e, "offering the ring to the trainer"))?;
        Ok(RingWriter {
            owner: Owner::here(),
            inner: Mutex::new(Some(Writer {
                producer,
                enc: None,
                seq: 0,
            })),
        })
    }

    /// Puts `batch` into the ring (its schema first, when it is the first batch or its
    /// schema changed), waiting up to `timeout` seconds for room. False where its frame is
    /// larger than the ring's largest (the caller splits it by rows).
    #[pyo3(signature = (batch, timeout=600.0))]
    fn send(&self, py: Python<'_>, batch: PyRecordBatch, timeout: f64) -> PyResult<bool> {
        let timeout = secs(timeout)?;
        let rb = batch.into_inner();
        self.with(|w| {
            if w.enc.as_ref().is_none_or(|e| e.schema() != &rb.schema()) {
                let mut enc = FrameEncoder::new(rb.schema()).map_err(frame_err)?;
                let f = enc.schema_frame(w.meta()).map_err(frame_err)?;
                w.enc = None;
                w.put(py, &f, timeout)?;
                w.enc = Some(enc);
            }
            let max = w.producer.max_frame();
            let meta = w.meta();
            let enc = w.enc.as_mut().expect("set above");
            let f = enc.batch_within(&rb, meta, max).map_err(frame_err)?;
            if f.len() > max {
                return Ok(false);
            }
            w.put(py, &f, timeout)?;
            if let Some(enc) = w.enc.as_mut() {
                enc.commit(&f).map_err(frame_err)?;
            }
            Ok(true)
        })
    }

    /// Ends the partition: the trainer's hub answers once it consumed (or answered) its rows.
    #[pyo3(signature = (timeout=600.0))]
    fn end(&self, py: Python<'_>, timeout: f64) -> PyResult<()> {
        let timeout = secs(timeout)?;
        self.with(|w| {
            let f = marker(FrameKind::EndOfSplit, w.meta());
            w.put(py, &f, timeout)
        })
    }

    /// The trainer's next control message, waiting up to `timeout` seconds; `None` if none
    /// came in time.
    #[pyo3(signature = (timeout=1.0))]
    fn control<'py>(&self, py: Python<'py>, timeout: f64) -> PyResult<Option<Bound<'py, PyBytes>>> {
        let timeout = secs(timeout)?;
        let msg = self.with(|w| {
            let peer = w.producer.peer_pid();
            let got = blocking::wait(py, timeout, "the trainer", || {
                match w.producer.wait_control(TICK.min(timeout)) {
                    Ok(Some(m)) => Step::Ready(m),
                    Ok(None) => Step::Again,
                    Err(e) => Step::Failed(e),
                }
            });
            match got {
                Ok(Ok(m)) => Ok(Some(m)),
                Ok(Err(e)) => Err(PeerLostError::new_err(format!(
                    "trainer (pid {peer}) went away: {e}"
                ))),
                Err(e) if e.is_instance_of::<error::FeedTimeoutError>(py) => Ok(None),
                Err(e) => Err(e),
            }
        })?;
        Ok(msg.map(|m| PyBytes::new(py, &m)))
    }

    /// Closes the ring (the trainer sees the end of its frames).
    fn close(&self) {
        if let Some(mut w) = lock(&self.inner).take() {
            w.producer.close();
        }
    }
}

struct Reader {
    consumer: Consumer,
    dec: FrameDecoder,
}

/// The trainer's end of one feeding task's ring.
#[pyclass(module = "hydrofeed._native")]
pub struct RingReader {
    owner: Owner,
    inner: Mutex<Option<Reader>>,
    peer: u32,
}

/// What one wait on the ring gave.
enum Got {
    Frame(Buffer),
    Closed,
}

#[pymethods]
impl RingReader {
    /// Takes the ring a feeding task offers on the connected socket `fd` (duplicated),
    /// waiting up to `timeout` seconds for the offer.
    #[new]
    #[pyo3(signature = (fd, timeout=30.0))]
    fn new(py: Python<'_>, fd: i32, timeout: f64) -> PyResult<Self> {
        let sock = dup(fd)?;
        let timeout = secs(timeout)?;
        let consumer = blocking::call(py, "a feeding task's ring", move || {
            hydrofeed_ipc::take(sock, timeout)
        })?
        .map_err(|e| handshake(e, "taking a feeding task's ring"))?;
        let peer = consumer.peer_pid();
        Ok(RingReader {
            owner: Owner::here(),
            inner: Mutex::new(Some(Reader {
                consumer,
                dec: FrameDecoder::new(),
            })),
            peer,
        })
    }

    /// The feeding task's pid.
    #[getter]
    fn peer(&self) -> u32 {
        self.peer
    }

    /// The next batch (a `pyarrow.RecordBatch` of its own memory), `"end"` at the end of the
    /// partition, or `None` when nothing came within `timeout` seconds. A feeding task that
    /// closed its ring or died before the end raises `PeerLostError`.
    #[pyo3(signature = (timeout=0.2))]
    fn next(&self, py: Python<'_>, timeout: f64) -> PyResult<Option<Py<PyAny>>> {
        self.owner.check("RingReader")?;
        let timeout = secs(timeout)?;
        let peer = self.peer;
        loop {
            let got = blocking::wait(py, timeout, "a feeding task", || {
                let mut g = lock(&self.inner);
                let Some(r) = g.as_mut() else {
                    return Step::Ready(Got::Closed);
                };
                match r.consumer.next(SLICE.min(timeout)) {
                    Ok(Some(slot)) => {
                        // One copy, out of the slot: see the module's doc.
                        let mut buf = MutableBuffer::with_capacity(slot.len());
                        buf.extend_from_slice(&slot);
                        Step::Ready(Got::Frame(buf.into()))
                    }
                    Ok(None) => Step::Ready(Got::Closed),
                    Err(NextError::Timeout) => Step::Again,
                    Err(e) => Step::Failed(e),
                }
            });
            let frame = match got {
                Ok(Ok(Got::Frame(b))) => b,
                Ok(Ok(Got::Closed)) | Ok(Err(NextError::PeerLost)) => {
                    return Err(PeerLostError::new_err(format!(
                        "feeding task (pid {peer}) closed its ring before the end of its \
                         partition (it failed or was killed)"
                    )))
                }
                Ok(Err(e)) => return Err(error::next(e, peer, "reading a partition")),
                Err(e) if e.is_instance_of::<error::FeedTimeoutError>(py) => return Ok(None),
                Err(e) => return Err(e),
            };
            let decoded = {
                let mut g = lock(&self.inner);
                let r = g
                    .as_mut()
                    .ok_or_else(|| PeerLostError::new_err("the ring is closed"))?;
                r.dec.decode(&frame).map_err(|e| error::frame(e, peer))?
            };
            match decoded {
                Frame::Schema(..) => continue,
                Frame::Batch(_, b) => {
                    return Ok(Some(PyRecordBatch::new(b).into_pyarrow(py)?.unbind()))
                }
                Frame::EndOfSplit(_) => {
                    return Ok(Some(PyString::new(py, "end").into_any().unbind()))
                }
                Frame::Error(_, code, msg) => return Err(error::from_frame(code, &msg, peer)),
                other => {
                    return Err(error::internal(format!(
                        "feeding task (pid {peer}) sent an unexpected frame: {other:?}"
                    )))
                }
            }
        }
    }

    /// Sends `message` to the feeding task on the ring's control channel (at most 64 KiB).
    fn send(&self, py: Python<'_>, message: &[u8]) -> PyResult<()> {
        self.owner.check("RingReader")?;
        let peer = self.peer;
        let msg = message.to_vec();
        let r = py.detach(|| match lock(&self.inner).as_mut() {
            Some(r) => r.consumer.send_control(&msg),
            None => Err(ControlError::PeerLost),
        });
        r.map_err(|e| match e {
            ControlError::TooLarge => PyValueError::new_err(format!(
                "a control message of {} bytes (at most {})",
                message.len(),
                hydrofeed_ipc::MAX_CONTROL_MSG
            )),
            ControlError::Timeout => PeerLostError::new_err(format!(
                "feeding task (pid {peer}) read no message for {CONTROL_SEND_TIMEOUT:?}"
            )),
            e => PeerLostError::new_err(format!("feeding task (pid {peer}) went away: {e}")),
        })
    }

    /// Closes the ring: the feeding task's next wait for room fails.
    fn close(&self) {
        if let Some(mut r) = lock(&self.inner).take() {
            r.consumer.close();
        }
    }
}
