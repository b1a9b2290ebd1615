//! The ring between a Spark feeding task and the trainer it feeds (`hydrofeed.spark.hub`):
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
//! The ring is made when the first frame is ready (so its size fits the partition's batches:
//! 48 of them, 4 to 64 MiB, as many as the hub queues and more). Batches reach the hub
//! zero-copy, as views of their slots. User code may keep them as long as it likes, and a ring
//! frees its slots in order: when what the trainer holds (the hub's queue included) pins more
//! than half of the ring, the hub reads no further ahead, and if the trainer lets none of it go
//! for 200 ms, the held slots are copied out once
//! ([`hydrofeed_ipc::Consumer::detach_held`]: same addresses, private memory), as the feeder's
//! `DataFeed` does for batches its trainer keeps.

use std::collections::HashMap;
use std::os::fd::{BorrowedFd, OwnedFd};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use arrow_array::{BinaryArray, RecordBatch};
use arrow_buffer::{Buffer, MutableBuffer, OffsetBuffer};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use hydrofeed_ipc::{
    Consumer, ControlError, NextError, Producer, ReserveError, RingConfig, CONTROL_SEND_TIMEOUT,
};
use hydrofeed_tfbridge::{
    marker, owned_buffer, Encoded, Frame, FrameDecoder, FrameEncoder, FrameError, FrameKind,
    FrameMeta,
};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedBytes;
use pyo3::types::{PyBytes, PyString};
use pyo3_arrow::PyRecordBatch;

use crate::blocking::{self, Owner, Step, TICK};
use crate::error::{self, PeerLostError};

/// A ring holds this many frames the size of its first batch, within [`MIN_RING`] and
/// [`MAX_RING`] bytes (frames up to half of it; a larger batch is split by rows).
const RING_FRAMES: usize = 48;
/// The smallest ring (an empty partition's, or one of small batches).
const MIN_RING: usize = 4 << 20;
/// The largest ring of Arrow columns. Each partition makes its own, its pages allocated and
/// cleared by the kernel when it is made: at 64 MiB (a DataFrame's 10,000-row Arrow batches,
/// 1,024 numpy rows) that cost a feeding task ~0.1 s before its first batch, in the feeding
/// workers' CPU; at 16 MiB those feeds ran 1.1-1.3x the rows a second.
const MAX_RING: usize = 16 << 20;
/// The largest ring of forwarded pickled rows (schema metadata `hf.row` = `pickled`): their
/// frames wait in the ring until the trainer's thread makes their objects, and the list RDD's
/// feed read 0.58-0.72 of its ceiling with 4-8 MiB rings against 0.82-0.83 with 32 MiB.
const MAX_PICKLED_RING: usize = 64 << 20;
/// The schema metadata key saying what a frame's rows are, and its value for forwarded pickled
/// rows (`ROW_KIND` in `hydrofeed/spark/rows.py`).
const ROW_KIND: (&str, &str) = ("hf.row", "pickled");
/// The field metadata key of a frame of forwarded pickled rows saying whether each value is a
/// pickled list of rows (`BATCHED` in `hydrofeed/spark/rows.py`).
const BATCHED: &str = "hf.batched";

/// When the slots the trainer holds pin more than this share of the ring, the hub reads no
/// further ahead; if they still do after [`PATIENCE`], they are copied out of it.
const HIGH_WATER: f64 = 0.5;
const PATIENCE: Duration = Duration::from_millis(200);
/// How often a hub that reads no further ahead looks again.
const RECHECK: Duration = Duration::from_millis(2);

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

/// Asked for each payload part of a frame being put: writes it into the slot itself
/// (`Ok(true)`) or leaves it to be copied; `Send`, as the put runs with the GIL released.
type Fill<'a> = dyn FnMut(usize, &mut [u8]) -> Result<bool, FrameError> + Send + 'a;

/// A column whose values a batch holds as a placeholder (`values`: zeros, never read), and
/// the bytes that are its values in order, written into the ring slot from where they are.
struct Placed<'a> {
    values: Buffer,
    blobs: &'a [PyBackedBytes],
}

/// The schema of a frame of forwarded pickled rows (`pickled_frames` in
/// `hydrofeed/spark/rows.py`): one binary column `pickled`, `hf.batched` saying whether each
/// value is a pickled list of rows.
fn pickled_schema(batched: bool) -> SchemaRef {
    let field = Field::new("pickled", DataType::Binary, true).with_metadata(HashMap::from([(
        BATCHED.to_string(),
        if batched { "1" } else { "0" }.to_string(),
    )]));
    let meta = HashMap::from([(ROW_KIND.0.to_string(), ROW_KIND.1.to_string())]);
    Arc::new(Schema::new_with_metadata(vec![field], meta))
}

struct Writer {
    /// The socket, until the ring is offered on it.
    sock: Option<OwnedFd>,
    /// The largest ring this partition's frames may have ([`MAX_RING`] or [`MAX_PICKLED_RING`]).
    max_ring: usize,
    producer: Option<Producer>,
    enc: Option<FrameEncoder>,
    seq: u64,
    /// The placeholder values of [`RingWriter::send_pickled`]'s frames, never touched.
    zeros: Buffer,
}

impl Writer {
    /// The ring, made and offered (sized for frames of `len` bytes) if it is not yet.
    fn ring(&mut self, py: Python<'_>, len: usize, timeout: Duration) -> PyResult<&mut Producer> {
        if self.producer.is_none() {
            let sock = self
                .sock
                .take()
                .ok_or_else(|| PeerLostError::new_err("the ring to the trainer is closed"))?;
            let cfg = RingConfig {
                capacity: len
                    .saturating_mul(RING_FRAMES)
                    .clamp(MIN_RING, self.max_ring)
                    .next_power_of_two(),
                max_frame: None,
            };
            let p = blocking::call(py, "the trainer to take the ring", move || {
                hydrofeed_ipc::offer(sock, cfg, timeout)
            })?
            .map_err(|e| handshake(e, "offering the ring to the trainer"))?;
            self.producer = Some(p);
        }
        Ok(self.producer.as_mut().expect("made above"))
    }

    /// Puts `f` into the ring, waiting up to `timeout` for room (the GIL released).
    fn put(&mut self, py: Python<'_>, f: &Encoded, timeout: Duration) -> PyResult<()> {
        self.put_filling(py, f, timeout, &mut |_, _| Ok(false))
    }

    /// [`Writer::put`], asking `fill` first for each payload part of `f` to write it into the
    /// slot itself ([`Encoded::write_filling`]).
    fn put_filling(
        &mut self,
        py: Python<'_>,
        f: &Encoded,
        timeout: Duration,
        fill: &mut Fill<'_>,
    ) -> PyResult<()> {
        let producer = self.ring(py, f.len(), timeout)?;
        let peer = producer.peer_pid();
        let r = blocking::wait(
            py,
            timeout,
            "the trainer to take earlier batches",
            || match producer.reserve(f.len(), TICK) {
                Ok(mut slot) => match f.write_filling(&mut slot, &mut *fill) {
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
                "a frame of {} bytes is larger than the ring's largest",
                f.len(),
            ))),
            Err(Ok(e)) => Err(PeerLostError::new_err(format!(
                "trainer (pid {peer}) went away while being fed: {e}"
            ))),
        }
    }

    /// Puts `rb` into the ring, its schema frame first where it is new; `placed`: a column's
    /// values that `rb` holds as a placeholder, written into the slot from where they are.
    /// False where the frame is larger than the ring's largest.
    fn send(
        &mut self,
        py: Python<'_>,
        rb: &RecordBatch,
        timeout: Duration,
        placed: Option<Placed<'_>>,
    ) -> PyResult<bool> {
        // The schema first when it is new; the ring is sized by the batch frame, so both
        // are encoded before either is put.
        let mut schema = None;
        if self.enc.as_ref().is_none_or(|e| e.schema() != &rb.schema()) {
            if self.producer.is_none() {
                let pickled =
                    rb.schema().metadata().get(ROW_KIND.0).map(String::as_str) == Some(ROW_KIND.1);
                self.max_ring = if pickled { MAX_PICKLED_RING } else { MAX_RING };
            }
            let mut enc = FrameEncoder::new(rb.schema()).map_err(frame_err)?;
            schema = Some(enc.schema_frame(self.meta()).map_err(frame_err)?);
            self.enc = Some(enc);
        }
        let mut meta = self.meta();
        meta.seq += u64::from(schema.is_some());
        let max_frame = self.max_ring / 2;
        let enc = self.enc.as_mut().expect("set above");
        let f = enc.batch_within(rb, meta, max_frame).map_err(frame_err)?;
        // The payload part that is the placeholder (the encoder passes a column's values on
        // as they are; were it ever to copy them, the frame would carry the zeros: refused).
        let part = match &placed {
            Some(p) if !p.values.is_empty() => {
                let same =
                    |b: &Buffer| b.as_ptr() == p.values.as_ptr() && b.len() == p.values.len();
                Some(f.parts().iter().position(same).ok_or_else(|| {
                    error::internal("the frame encoder copied a placeholder column")
                })?)
            }
            _ => None,
        };
        let mut fill = |i: usize, slot: &mut [u8]| -> Result<bool, FrameError> {
            let (Some(p), Some(blobs)) = (part, placed.as_ref().map(|p| p.blobs)) else {
                return Ok(false);
            };
            if i != p {
                return Ok(false);
            }
            let mut at = 0;
            for b in blobs {
                slot[at..at + b.len()].copy_from_slice(b);
                at += b.len();
            }
            Ok(true)
        };
        let mut put = || -> PyResult<bool> {
            if f.len() > self.ring(py, f.len(), timeout)?.max_frame() {
                return Ok(false);
            }
            if let Some(sf) = &schema {
                self.put(py, sf, timeout)?;
            }
            self.put_filling(py, &f, timeout, &mut fill)?;
            Ok(true)
        };
        match put() {
            Ok(true) => {
                let enc = self.enc.as_mut().expect("set above");
                enc.commit(&f).map_err(frame_err)?;
                Ok(true)
            }
            other => {
                if schema.is_some() {
                    self.enc = None; // its schema frame is not in the ring: send it again
                }
                other
            }
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
    /// The feeding task's end of a ring to the trainer across the connected socket `fd`
    /// (duplicated; the caller keeps its own). The ring is made and offered with the first
    /// frame, waiting up to that call's timeout for the trainer to take it.
    #[new]
    fn new(fd: i32) -> PyResult<Self> {
        Ok(RingWriter {
            owner: Owner::here(),
            inner: Mutex::new(Some(Writer {
                sock: Some(dup(fd)?),
                max_ring: MAX_RING,
                producer: None,
                enc: None,
                seq: 0,
                zeros: Buffer::from_vec(Vec::<u8>::new()),
            })),
        })
    }

    /// Puts `batch` into the ring (its schema first, when it is the first batch or its
    /// schema changed), waiting up to `timeout` seconds for room. False where its frame is
    /// larger than the ring's largest (the caller splits it by rows).
    #[pyo3(signature = (batch, timeout=600.0))]
    fn send(&self, py: Python<'_>, batch: PyRecordBatch, timeout: f64) -> PyResult<bool> {
        let timeout = secs(timeout)?;
        self.with(|w| w.send(py, &batch.into_inner(), timeout, None))
    }

    /// Puts a frame of forwarded pickled rows into the ring: `blobs`, Spark's pickled
    /// elements (each a list of rows where `batched`), as the binary column
    /// `hydrofeed.spark.rows.pickled_frames` makes of them, their bytes copied once, from the
    /// `bytes` objects straight into the ring slot. False where the frame is larger than the
    /// ring's largest (the caller splits `blobs`).
    #[pyo3(signature = (blobs, batched, timeout=600.0))]
    fn send_pickled(
        &self,
        py: Python<'_>,
        blobs: Vec<PyBackedBytes>,
        batched: bool,
        timeout: f64,
    ) -> PyResult<bool> {
        let timeout = secs(timeout)?;
        let mut offsets = Vec::with_capacity(blobs.len() + 1);
        offsets.push(0i32);
        let mut total = 0usize;
        for b in &blobs {
            total += b.len();
            match i32::try_from(total) {
                Ok(o) => offsets.push(o),
                Err(_) => return Ok(false), // past any ring: the caller splits
            }
        }
        self.with(|w| {
            if w.zeros.len() < total {
                // Zeroed pages that nothing writes or reads: address space, not memory.
                w.zeros = MutableBuffer::from_len_zeroed(total.next_power_of_two()).into();
            }
            let values = w.zeros.slice_with_length(0, total);
            let column =
                BinaryArray::try_new(OffsetBuffer::new(offsets.into()), values.clone(), None)
                    .map_err(|e| frame_err(FrameError::Arrow(e)))?;
            let batch = RecordBatch::try_new(pickled_schema(batched), vec![Arc::new(column)])
                .map_err(|e| frame_err(FrameError::Arrow(e)))?;
            w.send(
                py,
                &batch,
                timeout,
                Some(Placed {
                    values,
                    blobs: &blobs,
                }),
            )
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
            let Some(producer) = w.producer.as_mut() else {
                return Err(PeerLostError::new_err(
                    "no ring to the trainer yet (nothing sent)",
                ));
            };
            let peer = producer.peer_pid();
            let got = blocking::wait(py, timeout, "the trainer", || {
                match producer.wait_control(TICK.min(timeout)) {
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
        if let Some(mut p) = lock(&self.inner).take().and_then(|w| w.producer) {
            p.close();
        }
    }
}

struct Reader {
    consumer: Consumer,
    dec: FrameDecoder,
    /// Since when the slots the trainer holds pin more than [`HIGH_WATER`] of the ring.
    pressed: Option<Instant>,
}

/// The trainer's end of one feeding task's ring.
#[pyclass(module = "hydrofeed._native")]
pub struct RingReader {
    owner: Owner,
    inner: Mutex<Option<Reader>>,
    peer: u32,
}

/// Copies the slots the trainer holds out of the ring (see the module's doc). A ring that
/// cannot (a failed remap) keeps them: the feeding task then waits for the trainer to let
/// them go, as it would without this.
fn relieve(c: &mut Consumer) {
    if let Err(e) = c.detach_held() {
        eprintln!("hydrofeed: copying held batches out of a feeding task's ring: {e}");
    }
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
                pressed: None,
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
                let c = &mut r.consumer;
                let held = c.held();
                if held.slots > 0 && held.pinned as f64 > HIGH_WATER * c.capacity() as f64 {
                    // Read no further ahead: the hub's queue drains as the trainer goes on.
                    // Slots it has not let go of for PATIENCE are kept batches: copy them out.
                    let since = *r.pressed.get_or_insert_with(Instant::now);
                    if since.elapsed() < PATIENCE {
                        drop(g);
                        std::thread::sleep(RECHECK.min(timeout));
                        return Step::Again;
                    }
                    relieve(c);
                }
                r.pressed = None;
                match c.next(SLICE.min(timeout)) {
                    Ok(Some(slot)) => Step::Ready(Got::Frame(owned_buffer(slot))),
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
