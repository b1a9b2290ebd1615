//! The trainer's end of a feed: attach to a feeder's ring, decode frames, hand out batches whose
//! numpy arrays view the ring.

use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use hydrofeed_ipc::{connect, AttachError, Consumer, Lease, NextError};
use hydrofeed_tfbridge::{owned_buffer, Control, Frame, FrameDecoder, FrameMeta, NO_SPLIT};
use pyo3::exceptions::{PyKeyError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use pyo3_arrow::{PyRecordBatch, PySchema};

use crate::blocking::{wait, Owner, Step, TICK};
use crate::error::{self, PeerLostError};
use crate::tensor;

struct Inner {
    consumer: Option<Consumer>,
    dec: FrameDecoder,
    done: bool,
    epoch: u32,
    epochs_done: u32,
    split: u32,
    splits_done: u64,
    rows: u64,
    batches: u64,
    bytes: u64,
    frames: u64,
    wait: Duration,
    results: u64,
    /// Frames acked to the feeder (`Control::Ack`): every frame read before the current
    /// `next()` call counts as consumed.
    acked: u64,
    last_ack: Instant,
}

/// How often a busy trainer acks (a blocked one acks at once).
const ACK_EVERY: Duration = Duration::from_millis(50);

/// Sends `Ack{seq}` for the first `frames` frames if they are not acked yet. Best effort: a
/// feeder that already left does not read its control channel, and its death is seen by
/// `next()`.
fn send_ack(consumer: &mut Consumer, acked: &mut u64, last: &mut Instant, frames: u64) {
    if frames > *acked {
        let _ = consumer.send_control(&Control::Ack { seq: frames - 1 }.to_bytes());
        *acked = frames;
        *last = Instant::now();
    }
}

/// A feed from one feeder: `next()` returns the next [`Batch`] or `None` at end-of-feed.
#[pyclass(module = "hydrofeed._native")]
pub struct Feed {
    inner: Mutex<Inner>,
    owner: Owner,
    address: String,
    peer: u32,
    timeout: Duration,
    batch_size: Option<u64>,
}

fn secs(name: &str, v: f64) -> PyResult<Duration> {
    if v.is_finite() && v > 0.0 {
        Ok(Duration::from_secs_f64(v))
    } else {
        Err(PyValueError::new_err(format!(
            "{name}={v}: expected a positive number of seconds"
        )))
    }
}

impl Feed {
    fn lock(&self) -> PyResult<std::sync::MutexGuard<'_, Inner>> {
        self.owner.check("DataFeed")?;
        self.inner
            .lock()
            .map_err(|_| error::internal("feed poisoned by an earlier panic"))
    }
}

#[pymethods]
impl Feed {
    /// Attaches to the feeder listening on `address` (a Unix socket path) and tells it the
    /// batch size wanted. Waits up to `connect_timeout` seconds for the feeder to appear.
    #[new]
    #[pyo3(signature = (address, batch_size=None, timeout=600.0, connect_timeout=60.0))]
    fn new(
        py: Python<'_>,
        address: &str,
        batch_size: Option<u64>,
        timeout: f64,
        connect_timeout: f64,
    ) -> PyResult<Self> {
        let timeout = secs("timeout", timeout)?;
        let connect_timeout = secs("connect_timeout", connect_timeout)?;
        if batch_size == Some(0) {
            return Err(PyValueError::new_err("batch_size must be at least 1"));
        }
        let path = Path::new(address).to_path_buf();
        let what = format!("the feeder at {address} to accept (stage: attach)");
        let mut last = None;
        let started = Instant::now();
        // Each attempt may take a while: the feeder creates (and may prefault) the ring inside
        // the handshake, and an attempt that times out mid-handshake resets it (the feeder
        // then starts over with a new ring). Ctrl-C is checked between attempts (1 s).
        let attempt = connect_timeout.min(Duration::from_secs(1));
        let r = wait(py, connect_timeout, &what, || {
            match connect(&path, attempt) {
                Ok(c) => Step::Ready(c),
                // Not there yet (the feeder may still be starting): retry until the deadline.
                Err(AttachError::Timeout) => Step::Again,
                Err(e @ AttachError::Io { errno, .. }) if errno == 2 || errno == 111 => {
                    last = Some(e);
                    if started.elapsed() + TICK >= connect_timeout {
                        Step::Failed(e)
                    } else {
                        std::thread::sleep(TICK / 2);
                        Step::Again
                    }
                }
                Err(e) => Step::Failed(e),
            }
        })?;
        let _ = last;
        let mut consumer = r.map_err(|e| error::attach(e, address))?;
        let peer = consumer.peer_pid();
        let hello = Control::Hello {
            batch_size,
            pid: std::process::id(),
        }
        .to_bytes();
        consumer.send_control(&hello).map_err(|e| {
            PeerLostError::new_err(format!(
                "feeder (pid {peer}) at {address}: sending the batch size: {e}"
            ))
        })?;
        Ok(Self {
            inner: Mutex::new(Inner {
                consumer: Some(consumer),
                dec: FrameDecoder::new(),
                done: false,
                epoch: 0,
                epochs_done: 0,
                split: NO_SPLIT,
                splits_done: 0,
                rows: 0,
                batches: 0,
                bytes: 0,
                frames: 0,
                wait: Duration::ZERO,
                results: 0,
                acked: 0,
                last_ack: Instant::now(),
            }),
            owner: Owner::here(),
            address: address.to_string(),
            peer,
            timeout,
            batch_size,
        })
    }

    /// The next batch, or `None` once the feed ended. Raises the feeder's error (`DataError`
    /// naming file and offset), `PeerLostError` if the feeder died, `FeedTimeoutError` after
    /// `timeout` seconds without a frame, `KeyboardInterrupt` on Ctrl-C.
    #[pyo3(signature = (timeout=None))]
    fn next(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<Option<Batch>> {
        let timeout = match timeout {
            Some(t) => secs("timeout", t)?,
            None => self.timeout,
        };
        let mut g = self.lock()?;
        let inner = &mut *g;
        loop {
            if inner.done {
                return Ok(None);
            }
            let Some(consumer) = inner.consumer.as_mut() else {
                return Ok(None);
            };
            let frames = inner.frames;
            if inner.last_ack.elapsed() >= ACK_EVERY {
                send_ack(consumer, &mut inner.acked, &mut inner.last_ack, frames);
            }
            let (acked, last_ack) = (&mut inner.acked, &mut inner.last_ack);
            let what = format!(
                "a batch from the feeder (pid {}) at {} (stage: waiting on ring; the feeder may \
                 be reading or decoding slowly)",
                self.peer, self.address
            );
            let t0 = Instant::now();
            let r: Result<Option<Lease>, NextError> =
                wait(py, timeout, &what, || match consumer.next(TICK) {
                    Ok(l) => Step::Ready(l),
                    Err(NextError::Timeout) => {
                        // Blocked: the feeder (and the coordinator's epoch barrier) may be
                        // waiting for our acks.
                        send_ack(consumer, acked, last_ack, frames);
                        Step::Again
                    }
                    Err(e) => Step::Failed(e),
                })?;
            inner.wait += t0.elapsed();
            let lease = match r {
                Ok(Some(l)) => l,
                Ok(None) => {
                    inner.done = true;
                    return Err(PeerLostError::new_err(format!(
                        "feeder (pid {}) closed the ring before end-of-feed",
                        self.peer
                    )));
                }
                Err(e) => {
                    inner.done = true;
                    return Err(error::next(e, self.peer, "waiting on ring"));
                }
            };
            inner.frames += 1;
            inner.bytes += lease.len() as u64;
            let buf = owned_buffer(lease);
            match inner
                .dec
                .decode(&buf)
                .map_err(|e| error::frame(e, self.peer))?
            {
                Frame::Schema(..) => {}
                Frame::Batch(meta, batch) => {
                    inner.epoch = meta.epoch;
                    inner.split = meta.split;
                    inner.rows += meta.rows;
                    inner.batches += 1;
                    return Ok(Some(Batch { batch, meta }));
                }
                Frame::EndOfSplit(_) => inner.splits_done += 1,
                Frame::EndOfEpoch(m) => inner.epochs_done = m.epoch + 1,
                Frame::EndOfFeed(_) => {
                    inner.done = true;
                    let frames = inner.frames;
                    if let Some(c) = inner.consumer.as_mut() {
                        send_ack(c, &mut inner.acked, &mut inner.last_ack, frames);
                    }
                    return Ok(None);
                }
                Frame::Error(_, code, msg) => {
                    inner.done = true;
                    return Err(error::from_frame(code, &msg, self.peer));
                }
            }
        }
    }

    /// Waits for the stream's schema (the feeder's first frame) and returns it as a
    /// `pyarrow.Schema`, without consuming any batch. Raises the feeder's error if it failed
    /// before sending one.
    #[pyo3(signature = (timeout=None))]
    fn wait_schema<'py>(
        &self,
        py: Python<'py>,
        timeout: Option<f64>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let timeout = match timeout {
            Some(t) => secs("timeout", t)?,
            None => self.timeout,
        };
        let mut g = self.lock()?;
        let inner = &mut *g;
        while inner.dec.schema().is_none() {
            let Some(consumer) = inner.consumer.as_mut().filter(|_| !inner.done) else {
                return Err(PeerLostError::new_err(
                    "the feed is closed and never sent a schema",
                ));
            };
            let what = format!(
                "the schema from the feeder (pid {}) at {} (stage: feeder planning the input)",
                self.peer, self.address
            );
            let r = wait(py, timeout, &what, || match consumer.next(TICK) {
                Ok(l) => Step::Ready(l),
                Err(NextError::Timeout) => Step::Again,
                Err(e) => Step::Failed(e),
            })?;
            let lease = match r {
                Ok(Some(l)) => l,
                Ok(None) => {
                    inner.done = true;
                    return Err(PeerLostError::new_err(format!(
                        "feeder (pid {}) closed the ring before sending a schema",
                        self.peer
                    )));
                }
                Err(e) => {
                    inner.done = true;
                    return Err(error::next(e, self.peer, "waiting for the schema"));
                }
            };
            inner.frames += 1;
            inner.bytes += lease.len() as u64;
            match inner
                .dec
                .decode(&owned_buffer(lease))
                .map_err(|e| error::frame(e, self.peer))?
            {
                Frame::Schema(..) => {}
                Frame::Error(_, code, msg) => {
                    inner.done = true;
                    return Err(error::from_frame(code, &msg, self.peer));
                }
                other => {
                    return Err(error::frame(
                        hydrofeed_tfbridge::FrameError::Corrupt(format!(
                            "expected the schema frame first, got {other:?}"
                        )),
                        self.peer,
                    ))
                }
            }
        }
        let s = inner
            .dec
            .schema()
            .cloned()
            .ok_or_else(|| error::internal("schema vanished"))?;
        PySchema::new(s).into_pyarrow(py)
    }

    /// The schema of the stream (`pyarrow.Schema`), once the first frame arrived.
    #[getter]
    fn schema<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let s: Option<SchemaRef> = self.lock()?.dec.schema().cloned();
        s.map(|s| PySchema::new(s).into_pyarrow(py)).transpose()
    }

    /// Whether the feed ended (end-of-feed, an error, or `close()`).
    #[getter]
    fn done(&self) -> PyResult<bool> {
        Ok(self.lock()?.done)
    }

    /// The feeder's pid.
    #[getter]
    fn peer_pid(&self) -> u32 {
        self.peer
    }

    /// The batch size asked of the feeder (None: the feeder's default).
    #[getter]
    fn batch_size(&self) -> Option<u64> {
        self.batch_size
    }

    /// Tells the feeder how many results the trainer produced (TFoS `batch_results`).
    fn send_results(&self, count: u64) -> PyResult<()> {
        let mut g = self.lock()?;
        g.results += count;
        if let Some(c) = g.consumer.as_mut() {
            // Best effort: a feeder that already finished no longer reads its control channel.
            let _ = c.send_control(&Control::Results { count }.to_bytes());
        }
        Ok(())
    }

    /// Acks every frame read so far (all batches handed out count as consumed). `next()` acks
    /// on its own every 50 ms and whenever it blocks; call this before a checkpoint.
    fn flush_acks(&self) -> PyResult<u64> {
        let mut g = self.lock()?;
        let inner = &mut *g;
        let frames = inner.frames;
        if let Some(c) = inner.consumer.as_mut() {
            send_ack(c, &mut inner.acked, &mut inner.last_ack, frames);
        }
        Ok(inner.acked)
    }

    /// The coordinator's resumable state (JSON text), once it holds at least
    /// `min_rows_acked` rows acked for `rank` (this trainer's flushed acks, forwarded by the
    /// feeder). Raises `FeedTimeoutError` after `timeout` seconds.
    #[staticmethod]
    #[pyo3(signature = (address, token, rank, min_rows_acked, timeout=30.0))]
    fn coordinator_state(
        py: Python<'_>,
        address: &str,
        token: &str,
        rank: u32,
        min_rows_acked: u64,
        timeout: f64,
    ) -> PyResult<String> {
        use hydrofeed_feeder::coord::client::CoordClient;
        use hydrofeed_feeder::coord::token::Token;
        let timeout = secs("timeout", timeout)?;
        let token = Token::new(token).map_err(|e| PyValueError::new_err(e.to_string()))?;
        let addr = address.to_string();
        let r: Result<String, String> = py.detach(move || {
            let mut c = CoordClient::connect(&addr, &token, timeout).map_err(|e| e.to_string())?;
            let t0 = Instant::now();
            loop {
                let m = c.metrics().map_err(|e| e.to_string())?;
                let acked = m
                    .workers
                    .iter()
                    .find(|w| w.rank == rank)
                    .map_or(0, |w| w.rows_acked);
                if acked >= min_rows_acked {
                    return c.state().map(|s| s.to_json()).map_err(|e| e.to_string());
                }
                if t0.elapsed() > timeout {
                    return Err(format!(
                        "the coordinator at {addr} to record rank {rank}'s acks ({acked} of                          {min_rows_acked} rows) within {:.1} s (stage: forwarding acks through                          the feeder)",
                        timeout.as_secs_f64()
                    ));
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        });
        r.map_err(error::FeedTimeoutError::new_err)
    }

    /// Stops reading: tells the feeder, closes the ring. Batches already handed out stay valid.
    fn close(&self) -> PyResult<()> {
        let mut g = self.lock()?;
        g.done = true;
        if let Some(mut c) = g.consumer.take() {
            let _ = c.send_control(&Control::Bye.to_bytes());
            c.close();
        }
        Ok(())
    }

    /// Where the feed stands: epoch, split, rows delivered. A placeholder position until the
    /// coordinator fills in seeds and acked offsets; it cannot resume a feed yet.
    fn state<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let g = self.lock()?;
        let d = PyDict::new(py);
        d.set_item("epoch", g.epoch)?;
        d.set_item("epochs_done", g.epochs_done)?;
        d.set_item(
            "split",
            if g.split == NO_SPLIT {
                None
            } else {
                Some(g.split)
            },
        )?;
        d.set_item("splits_done", g.splits_done)?;
        d.set_item("rows", g.rows)?;
        d.set_item("done", g.done)?;
        Ok(d)
    }

    /// Counters: rows, batches, frames, bytes, seconds spent waiting on the ring, results.
    fn metrics<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let g = self.lock()?;
        let d = PyDict::new(py);
        d.set_item("rows", g.rows)?;
        d.set_item("batches", g.batches)?;
        d.set_item("frames", g.frames)?;
        d.set_item("bytes", g.bytes)?;
        d.set_item("wait_seconds", g.wait.as_secs_f64())?;
        d.set_item("results", g.results)?;
        d.set_item("frames_acked", g.acked)?;
        d.set_item("feeder_pid", self.peer)?;
        Ok(d)
    }
}

/// One batch: a read-only mapping of column name -> numpy array viewing the ring (dense
/// columns), `Ragged` (variable lists) or `pyarrow.Array` (strings and others).
#[pyclass(module = "hydrofeed._native", frozen, mapping)]
pub struct Batch {
    batch: RecordBatch,
    meta: FrameMeta,
}

#[pymethods]
impl Batch {
    /// Epoch of the batch.
    #[getter]
    fn epoch(&self) -> u32 {
        self.meta.epoch
    }

    /// Split id of the batch's last row (None if unknown).
    #[getter]
    fn split(&self) -> Option<u32> {
        (self.meta.split != NO_SPLIT).then_some(self.meta.split)
    }

    /// Frame sequence number.
    #[getter]
    fn seq(&self) -> u64 {
        self.meta.seq
    }

    /// Rows.
    #[getter]
    fn num_rows(&self) -> usize {
        self.batch.num_rows()
    }

    /// Bytes of Arrow buffers the batch views.
    #[getter]
    fn nbytes(&self) -> usize {
        self.batch.get_array_memory_size()
    }

    fn __len__(&self) -> usize {
        self.batch.num_columns()
    }

    fn __contains__(&self, key: &str) -> bool {
        self.batch.schema().index_of(key).is_ok()
    }

    fn __getitem__<'py>(&self, py: Python<'py>, key: &str) -> PyResult<Bound<'py, PyAny>> {
        let i = self
            .batch
            .schema()
            .index_of(key)
            .map_err(|_| PyKeyError::new_err(key.to_string()))?;
        tensor::column(py, key, self.batch.column(i))
    }

    fn __iter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        Ok(self.keys(py)?.try_iter()?.into_any())
    }

    /// Column names.
    fn keys<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let s = self.batch.schema();
        PyList::new(py, s.fields().iter().map(|f| f.name().clone()))
    }

    /// Columns, in order.
    fn values<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let s = self.batch.schema();
        let v = s
            .fields()
            .iter()
            .zip(self.batch.columns())
            .map(|(f, a)| tensor::column(py, f.name(), a))
            .collect::<PyResult<Vec<_>>>()?;
        PyList::new(py, v)
    }

    /// `(name, column)` pairs.
    fn items<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let s = self.batch.schema();
        let v = s
            .fields()
            .iter()
            .zip(self.batch.columns())
            .map(|(f, a)| Ok((f.name().clone(), tensor::column(py, f.name(), a)?)))
            .collect::<PyResult<Vec<_>>>()?;
        PyList::new(py, v)
    }

    /// A DLPack capsule of a dense column, for TensorFlow
    /// (`tf.experimental.dlpack.from_dlpack(batch.dlpack("x"))`), which speaks only legacy
    /// DLPack and so cannot take the read-only numpy views. No copy; the capsule's tensor keeps
    /// the ring slot alive. (torch, JAX and numpy take `batch["x"]` directly: numpy arrays have
    /// `__dlpack__` with DLPack 1.0's read-only flag.)
    fn dlpack<'py>(&self, py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyAny>> {
        let i = self
            .batch
            .schema()
            .index_of(name)
            .map_err(|_| PyKeyError::new_err(name.to_string()))?;
        tensor::legacy_dlpack(py, name, self.batch.column(i))
    }

    /// The batch as a `pyarrow.RecordBatch` (Arrow PyCapsule interface; no copy, the buffers
    /// keep the ring slot alive).
    fn to_arrow<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        PyRecordBatch::new(self.batch.clone()).into_pyarrow(py)
    }

    /// Arrow PyCapsule interface: `pyarrow.record_batch(batch)`, polars, etc.
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_array__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, pyo3::types::PyCapsule>>,
    ) -> PyResult<Bound<'py, pyo3::types::PyTuple>> {
        let b = &self.batch;
        let field = arrow_schema::Field::new_struct("", b.schema_ref().fields().clone(), false)
            .with_metadata(b.schema_ref().metadata().clone());
        let array: arrow_array::ArrayRef =
            std::sync::Arc::new(arrow_array::StructArray::from(b.clone()));
        pyo3_arrow::ffi::to_array_pycapsules(py, field.into(), &array, requested_schema)
            .map_err(PyErr::from)
    }

    fn __repr__(&self) -> String {
        let s = self.batch.schema();
        format!(
            "Batch(rows={}, epoch={}, columns={:?})",
            self.batch.num_rows(),
            self.meta.epoch,
            s.fields()
                .iter()
                .map(|f| f.name().as_str())
                .collect::<Vec<_>>()
        )
    }
}
