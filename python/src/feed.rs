//! The trainer's end of a feed: attach to a feeder's ring, decode frames, hand out batches whose
//! numpy arrays view the ring.

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, TryLockError};
use std::time::{Duration, Instant};

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use hydrofeed_ipc::{connect, AttachError, Consumer, Held, Lease, NextError};
use hydrofeed_tfbridge::{
    lineage, owned_buffer, Control, Frame, FrameDecoder, FrameHeader, FrameMeta, NO_SPLIT,
    REJOIN_LEASES_PER_MESSAGE,
};
use pyo3::exceptions::{PyKeyError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use pyo3_arrow::{PyRecordBatch, PySchema};

use crate::blocking::{wait, Owner, Step, TICK};
use crate::error::{self, FeedTimeoutError, PeerLostError, RingExhaustedError};
use crate::tensor;

/// The reading side, held for a whole `next()` (with the GIL released while it waits).
struct Inner {
    /// Whether the `Hello` (the batch size) went to the feeder: at attach when a size was
    /// given, else at the first `next()` / `wait_schema()` / `ask_batch_size()`.
    hello_sent: bool,
    consumer: Option<Consumer>,
    dec: FrameDecoder,
    /// Frames read (acks count frames).
    frames: u64,
    /// Frames acked to the feeder (`Control::Ack`): every frame read before the current
    /// `next()` call counts as consumed.
    acked: u64,
    last_ack: Instant,
    /// Where the trainer is, for a restarted feeder (`Control::Rejoin`): rows read per lease
    /// since the last end of epoch (from the frames' lineage), the epoch of the last batch,
    /// whether its end-of-epoch frame was read, rows read in it.
    consumed: HashMap<u64, (u32, u64)>,
    epoch: Option<u32>,
    epoch_done: bool,
    epoch_rows: u64,
}

/// Counters and position, behind a lock of their own that is only held for a few assignments
/// (never across a wait or a GIL acquire), so `metrics()`, `state()` and `schema` from another
/// thread never wait for a blocked `next()`.
#[derive(Default)]
struct Stats {
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
    acked: u64,
    schema: Option<SchemaRef>,
    /// The ring's use by batches this process holds, as of the last `next()`.
    held: Held,
    ring_bytes: u64,
    /// Times held batches were copied out of the ring, and what was copied.
    pressure_copies: u64,
    copied_frames: u64,
    copied_bytes: u64,
    warned: bool,
    /// Times a restarted feeder took this trainer back.
    rejoins: u64,
}

/// What a trainer that holds too much of the ring gets.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Pressure {
    /// Copy the held batches out of the ring (once each) and warn once.
    Copy,
    /// Raise `RingExhaustedError`.
    Raise,
}

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

/// Keeps `inner`'s position for a restarted feeder up to date with one frame read.
fn track(inner: &mut Inner, frame: &arrow_buffer::Buffer) {
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
                let e = inner.consumed.entry(p.lease).or_insert((p.split, 0));
                e.1 += p.rows;
            }
        }
        Some(hydrofeed_tfbridge::FrameKind::EndOfEpoch) => {
            // The coordinator's epoch barrier passed: every lease so far is acked there.
            inner.epoch_done = true;
            inner.consumed.clear();
        }
        _ => {}
    }
}

/// A copy of `b` whose buffers are all fresh allocations of this process.
fn deep_copy(b: &RecordBatch) -> PyResult<RecordBatch> {
    use arrow_data::transform::MutableArrayData;
    let cols = b
        .columns()
        .iter()
        .map(|c| {
            let d = c.to_data();
            let mut m = MutableArrayData::new(vec![&d], false, d.len());
            m.try_extend(0, 0, d.len())
                .map_err(|e| error::internal(format!("copying a batch: {e}")))?;
            Ok(arrow_array::make_array(m.freeze()))
        })
        .collect::<PyResult<Vec<_>>>()?;
    let opts = arrow_array::RecordBatchOptions::new().with_row_count(Some(b.num_rows()));
    RecordBatch::try_new_with_options(b.schema(), cols, &opts)
        .map_err(|e| error::internal(format!("copying a batch: {e}")))
}

/// A feed from one feeder: `next()` returns the next [`Batch`] or `None` at end-of-feed.
#[pyclass(module = "hydrofeed._native")]
pub struct Feed {
    inner: Mutex<Inner>,
    stats: Mutex<Stats>,
    closing: AtomicBool,
    pressure: Pressure,
    /// Whether a pressure copy warns (the adapters turn it off: there the framework, not the
    /// user's code, holds the batches, and the copy is the right answer).
    warn_pressure: AtomicBool,
    owner: Owner,
    address: String,
    /// The feeder's pid (changes when a restarted feeder takes the trainer back).
    peer: AtomicU32,
    timeout: Duration,
    /// How long to wait for a restarted feeder when this one dies (zero: raise at once).
    rejoin_timeout: Duration,
    /// The batch size asked of the feeder (0: none, the feeder's default).
    batch_size: AtomicU64,
}

fn secs(name: &str, v: f64) -> PyResult<Duration> {
    if v.is_finite() && v > 0.0 {
        // Larger than a Duration holds (1e300): no limit, not a panic.
        Ok(Duration::try_from_secs_f64(v).unwrap_or(Duration::MAX))
    } else {
        Err(PyValueError::new_err(format!(
            "{name}={v}: expected a positive number of seconds"
        )))
    }
}

impl Feed {
    /// The reading side. Taken with the GIL released (a `next()` in another thread holds it
    /// while it waits, and takes the GIL back between slices): never the GIL, then this lock.
    fn lock(&self, py: Python<'_>) -> PyResult<MutexGuard<'_, Inner>> {
        self.owner.check("DataFeed")?;
        loop {
            match self.inner.try_lock() {
                Ok(g) => return Ok(g),
                Err(TryLockError::Poisoned(_)) => {
                    return Err(error::internal("feed poisoned by an earlier panic"))
                }
                Err(TryLockError::WouldBlock) => {
                    py.detach(|| std::thread::sleep(Duration::from_millis(1)));
                    py.check_signals()?;
                }
            }
        }
    }

    fn stats(&self) -> MutexGuard<'_, Stats> {
        self.stats.lock().unwrap_or_else(|e| e.into_inner())
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
            held.leases,
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
            st.copied_frames += d.leases as u64;
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
        let cause = if waiting && held.leases > 0 {
            format!(
                "the ring is full of {} batches this process holds ({} bytes): drop references \
                 to old batches",
                held.leases, held.bytes
            )
        } else if waiting {
            "the feeder waits for ring space although this process holds no batch".to_string()
        } else {
            "the ring is empty and the feeder is alive: it is reading or decoding slowly, or \
             waiting on its input (see its log)"
                .to_string()
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

impl Feed {
    /// Sends the `Hello` once, with the batch size asked so far.
    fn hello(&self, inner: &mut Inner) -> PyResult<()> {
        if inner.hello_sent {
            return Ok(());
        }
        inner.hello_sent = true;
        let bs = Some(self.batch_size.load(Ordering::Acquire)).filter(|&b| b > 0);
        match inner.consumer.as_mut() {
            Some(c) => send_hello(c, bs, &self.address),
            None => Ok(()),
        }
    }
}

fn send_hello(consumer: &mut Consumer, batch_size: Option<u64>, address: &str) -> PyResult<()> {
    let hello = Control::Hello {
        batch_size,
        pid: std::process::id(),
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
fn attach(py: Python<'_>, address: &str, timeout: Duration) -> PyResult<Consumer> {
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
            Err(e @ AttachError::Io { errno, .. }) if errno == 2 || errno == 111 => {
                if started.elapsed() + TICK >= timeout {
                    Step::Failed(e)
                } else {
                    std::thread::sleep(TICK / 2);
                    Step::Again
                }
            }
            Err(e) => Step::Failed(e),
        }
    })?;
    r.map_err(|e| error::attach(e, address))
}

impl Feed {
    fn peer(&self) -> u32 {
        self.peer.load(Ordering::Relaxed)
    }

    /// The feeder died and `launch` restarts it: attach to the new one at the same address,
    /// say hello again and report where this trainer is (`Control::Rejoin`), so the rows read
    /// after the last ack that reached the coordinator are not handed out again.
    fn rejoin(&self, py: Python<'_>, inner: &mut Inner) -> PyResult<()> {
        let old = self.peer();
        let mut c = attach(py, &self.address, self.rejoin_timeout).map_err(|e| {
            PeerLostError::new_err(format!(
                "feeder (pid {old}) at {} died, and no feeder took this trainer back within \
                 {:.0} s: {e}",
                self.address,
                self.rejoin_timeout.as_secs_f64()
            ))
        })?;
        let bs = Some(self.batch_size.load(Ordering::Acquire)).filter(|&b| b > 0);
        send_hello(&mut c, bs, &self.address)?;
        let consumed: Vec<(u64, u32, u64)> = inner
            .consumed
            .iter()
            .map(|(&lease, &(split, rows))| (lease, split, rows))
            .collect();
        let mut parts: Vec<&[(u64, u32, u64)]> =
            consumed.chunks(REJOIN_LEASES_PER_MESSAGE).collect();
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
        inner.consumer = Some(c);
        inner.dec = FrameDecoder::new();
        inner.frames = 0;
        inner.acked = 0;
        inner.hello_sent = true;
        self.stats().rejoins += 1;
        Ok(())
    }
}

#[pymethods]
impl Feed {
    /// Attaches to the feeder listening on `address` (a Unix socket path) and tells it the
    /// batch size wanted. Waits up to `connect_timeout` seconds for the feeder to appear.
    #[new]
    #[pyo3(signature = (address, batch_size=None, timeout=600.0, connect_timeout=60.0, on_ring_pressure="copy", rejoin_timeout=0.0))]
    fn new(
        py: Python<'_>,
        address: &str,
        batch_size: Option<u64>,
        timeout: f64,
        connect_timeout: f64,
        on_ring_pressure: &str,
        rejoin_timeout: f64,
    ) -> PyResult<Self> {
        let pressure = match on_ring_pressure {
            "copy" => Pressure::Copy,
            "raise" => Pressure::Raise,
            other => {
                return Err(PyValueError::new_err(format!(
                    "on_ring_pressure={other:?}: expected \"copy\" or \"raise\""
                )))
            }
        };
        let timeout = secs("timeout", timeout)?;
        let connect_timeout = secs("connect_timeout", connect_timeout)?;
        if batch_size == Some(0) {
            return Err(PyValueError::new_err("batch_size must be at least 1"));
        }
        let rejoin_timeout = if rejoin_timeout == 0.0 {
            Duration::ZERO
        } else {
            secs("rejoin_timeout", rejoin_timeout)?
        };
        let mut consumer = attach(py, address, connect_timeout)?;
        let peer = consumer.peer_pid();
        let hello_sent = batch_size.is_some();
        if hello_sent {
            send_hello(&mut consumer, batch_size, address)?;
        }
        let ring_bytes = consumer.capacity();
        Ok(Self {
            inner: Mutex::new(Inner {
                hello_sent,
                consumer: Some(consumer),
                dec: FrameDecoder::new(),
                frames: 0,
                acked: 0,
                last_ack: Instant::now(),
                consumed: HashMap::new(),
                epoch: None,
                epoch_done: false,
                epoch_rows: 0,
            }),
            stats: Mutex::new(Stats {
                split: NO_SPLIT,
                ring_bytes,
                ..Stats::default()
            }),
            closing: AtomicBool::new(false),
            pressure,
            warn_pressure: AtomicBool::new(true),
            owner: Owner::here(),
            address: address.to_string(),
            peer: AtomicU32::new(peer),
            timeout,
            rejoin_timeout,
            batch_size: AtomicU64::new(batch_size.unwrap_or(0)),
        })
    }

    /// The next batch, or `None` once the feed ended. Raises the feeder's error (`DataError`
    /// naming file and offset), `PeerLostError` if the feeder died, `FeedTimeoutError` after
    /// `timeout` seconds without a frame, `RingExhaustedError` when held batches fill the ring
    /// under `on_ring_pressure="raise"`, `KeyboardInterrupt` on Ctrl-C.
    #[pyo3(signature = (timeout=None))]
    fn next(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<Option<Batch>> {
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
            if held.leases > 0 && held.pinned as f64 > HIGH_WATER * consumer.capacity() as f64 {
                self.relieve(py, consumer, held)?;
            }
            let frames = inner.frames;
            if inner.last_ack.elapsed() >= ACK_EVERY {
                send_ack(consumer, &mut inner.acked, &mut inner.last_ack, frames);
            }
            let (acked, last_ack) = (&mut inner.acked, &mut inner.last_ack);
            let closing = &self.closing;
            let t0 = Instant::now();
            let r: PyResult<Result<Lease, Stop>> = wait(py, timeout, "a batch", || {
                if closing.load(Ordering::Acquire) {
                    return Step::Failed(Stop::Closed);
                }
                match consumer.next(TICK) {
                    Ok(Some(l)) => Step::Ready(l),
                    Ok(None) => Step::Failed(Stop::Eof),
                    Err(NextError::Timeout) => {
                        // Blocked: the feeder (and the coordinator's epoch barrier) may be
                        // waiting for our acks.
                        send_ack(consumer, acked, last_ack, frames);
                        if consumer.producer_waiting() && consumer.held().leases > 0 {
                            Step::Failed(Stop::Pressure)
                        } else {
                            Step::Again
                        }
                    }
                    Err(e) => Step::Failed(Stop::Next(e)),
                }
            });
            self.stats().wait += t0.elapsed();
            let lease = match r {
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
            let frame_len = lease.len() as u64;
            let buf = owned_buffer(lease);
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
                    st.epoch = meta.epoch;
                    st.split = meta.split;
                    st.rows += meta.rows;
                    st.batches += 1;
                    st.acked = inner.acked;
                    return Ok(Some(Batch {
                        batch,
                        meta,
                        owner: Owner::here(),
                    }));
                }
                Frame::EndOfSplit(_) => st.splits_done += 1,
                Frame::EndOfEpoch(m) => st.epochs_done = m.epoch + 1,
                Frame::EndOfFeed(_) => {
                    st.done = true;
                    let frames = inner.frames;
                    if let Some(c) = inner.consumer.as_mut() {
                        send_ack(c, &mut inner.acked, &mut inner.last_ack, frames);
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
            let lease = match r {
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
                st.bytes += lease.len() as u64;
            }
            let decoded = inner.dec.decode(&owned_buffer(lease)).map_err(|e| {
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

    /// The schema of the stream (`pyarrow.Schema`), once the first frame arrived.
    #[getter]
    fn schema<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.owner.check("DataFeed")?;
        let s: Option<SchemaRef> = self.stats().schema.clone();
        s.map(|s| PySchema::new(s).into_pyarrow(py)).transpose()
    }

    /// Whether the feed ended (end-of-feed, an error, or `close()`).
    #[getter]
    fn done(&self) -> PyResult<bool> {
        self.owner.check("DataFeed")?;
        Ok(self.stats().done)
    }

    /// Whether copying held batches out of the ring warns (once). The framework adapters turn
    /// it off for the batches the framework holds.
    #[getter]
    fn get_warn_pressure(&self) -> bool {
        self.warn_pressure.load(Ordering::Relaxed)
    }

    #[setter]
    fn set_warn_pressure(&self, v: bool) {
        self.warn_pressure.store(v, Ordering::Relaxed);
    }

    /// The feeder's pid.
    #[getter]
    fn peer_pid(&self) -> u32 {
        self.peer()
    }

    /// The batch size asked of the feeder (None: the feeder's default, or not asked yet).
    #[getter]
    fn batch_size(&self) -> Option<u64> {
        Some(self.batch_size.load(Ordering::Acquire)).filter(|&b| b > 0)
    }

    /// Asks the feeder for `batch_size` rows per batch, when the feed was made without a size
    /// and has not started. A feed that already told the feeder another size (at attach, or
    /// the feeder's default at its first batch) raises `ValueError`: batches are never silently
    /// of another size than the one asked.
    fn ask_batch_size(&self, py: Python<'_>, batch_size: u64) -> PyResult<()> {
        if batch_size == 0 {
            return Err(PyValueError::new_err("batch_size must be at least 1"));
        }
        let mut g = self.lock(py)?;
        let inner = &mut *g;
        if !inner.hello_sent {
            self.batch_size.store(batch_size, Ordering::Release);
            return self.hello(inner);
        }
        match self.batch_size.load(Ordering::Acquire) {
            b if b == batch_size => Ok(()),
            0 => Err(PyValueError::new_err(format!(
                "batch_size={batch_size}, but this feed already started with the feeder's batch \
                 size: pass DataFeed(batch_size={batch_size}) (or ask before the first batch)"
            ))),
            b => Err(PyValueError::new_err(format!(
                "batch_size={batch_size}, but this feed asked the feeder for {b} rows per batch"
            ))),
        }
    }

    /// Tells the feeder how many results the trainer produced (TFoS `batch_results`).
    fn send_results(&self, py: Python<'_>, count: u64) -> PyResult<()> {
        let mut g = self.lock(py)?;
        self.stats().results += count;
        if let Some(c) = g.consumer.as_mut() {
            // Best effort: a feeder that already finished no longer reads its control channel.
            let _ = c.send_control(&Control::Results { count }.to_bytes());
        }
        Ok(())
    }

    /// Acks every frame read so far (all batches handed out count as consumed). `next()` acks
    /// on its own every 50 ms and whenever it blocks; call this before a checkpoint.
    fn flush_acks(&self, py: Python<'_>) -> PyResult<u64> {
        let mut g = self.lock(py)?;
        let inner = &mut *g;
        let frames = inner.frames;
        if let Some(c) = inner.consumer.as_mut() {
            send_ack(c, &mut inner.acked, &mut inner.last_ack, frames);
        }
        self.stats().acked = inner.acked;
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
        use hydrofeed_coord::client::CoordClient;
        use hydrofeed_coord::token::Token;
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
    /// From another thread, a `next()` blocked there returns `None` within 100 ms.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        self.owner.check("DataFeed")?;
        self.closing.store(true, Ordering::Release);
        let mut g = self.lock(py)?;
        self.stats().done = true;
        if let Some(mut c) = g.consumer.take() {
            let _ = c.send_control(&Control::Bye.to_bytes());
            c.close();
        }
        Ok(())
    }

    /// Where this feed stands: epoch, split, rows delivered. Without a coordinator this is a
    /// position only; `DataFeed.state()` asks the coordinator for a resumable one.
    fn state<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        self.owner.check("DataFeed")?;
        let g = self.stats();
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

    /// Counters: rows, batches, frames, bytes, seconds spent waiting on the ring, results;
    /// the ring (`ring_bytes`) and what batches this process holds pin of it (`held_batches`,
    /// `held_bytes`, `pinned_bytes`, as of the last `next()`), and the copies made when they
    /// pinned too much (`pressure_copies`, `copied_batches`, `copied_bytes`).
    fn metrics<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        self.owner.check("DataFeed")?;
        // Fresh ring figures when no `next()` holds the reader; else the last ones.
        if let Ok(g) = self.inner.try_lock() {
            if let Some(c) = g.consumer.as_ref() {
                self.stats().held = c.held();
            }
        }
        let g = self.stats();
        let d = PyDict::new(py);
        d.set_item("rows", g.rows)?;
        d.set_item("batches", g.batches)?;
        d.set_item("frames", g.frames)?;
        d.set_item("bytes", g.bytes)?;
        d.set_item("wait_seconds", g.wait.as_secs_f64())?;
        d.set_item("results", g.results)?;
        d.set_item("frames_acked", g.acked)?;
        d.set_item("ring_bytes", g.ring_bytes)?;
        d.set_item("held_batches", g.held.leases)?;
        d.set_item("held_bytes", g.held.bytes)?;
        d.set_item("pinned_bytes", g.held.pinned)?;
        d.set_item("pressure_copies", g.pressure_copies)?;
        d.set_item("copied_batches", g.copied_frames)?;
        d.set_item("copied_bytes", g.copied_bytes)?;
        d.set_item("feeder_pid", self.peer())?;
        d.set_item("rejoins", g.rejoins)?;
        Ok(d)
    }
}

/// One batch: a read-only mapping of column name -> numpy array viewing the ring (dense
/// columns), `Ragged` (variable lists) or `pyarrow.Array` (strings and others).
#[pyclass(module = "hydrofeed._native", frozen, mapping)]
pub struct Batch {
    batch: RecordBatch,
    meta: FrameMeta,
    owner: Owner,
}

impl Batch {
    fn column_index(&self, key: &str) -> PyResult<usize> {
        self.owner.check("Batch")?;
        let s = self.batch.schema();
        s.index_of(key).map_err(|_| {
            let names: Vec<String> = s
                .fields()
                .iter()
                .map(|f| format!("'{}'", f.name()))
                .collect();
            PyKeyError::new_err(format!(
                "no column '{key}'; the batch has [{}]",
                names.join(", ")
            ))
        })
    }
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

    /// Rows, as `len()` of a pyarrow `RecordBatch` or a pandas `DataFrame`; iterating a batch
    /// gives its column names, as a `DataFrame` does.
    fn __len__(&self) -> usize {
        self.batch.num_rows()
    }

    /// A copy of the batch in this process's memory, holding nothing of the ring: for data
    /// that is kept past the next few steps (a validation cache, a list of batches).
    fn copy(&self) -> PyResult<Batch> {
        self.owner.check("Batch")?;
        Ok(Batch {
            batch: deep_copy(&self.batch)?,
            meta: self.meta,
            owner: Owner::here(),
        })
    }

    fn __contains__(&self, key: &str) -> bool {
        self.batch.schema().index_of(key).is_ok()
    }

    fn __getitem__<'py>(&self, py: Python<'py>, key: &str) -> PyResult<Bound<'py, PyAny>> {
        let i = self.column_index(key)?;
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
        self.owner.check("Batch")?;
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
        self.owner.check("Batch")?;
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
    /// DLPack: that cannot mark memory read-only, so the capsule holds a copy of the column,
    /// never a writeable alias of the ring. (torch, JAX and numpy take `batch["x"]` directly,
    /// without a copy: numpy arrays have `__dlpack__` with DLPack 1.0's read-only flag.)
    fn dlpack<'py>(&self, py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyAny>> {
        let i = self.column_index(name)?;
        tensor::legacy_dlpack(py, name, self.batch.column(i))
    }

    /// The batch as a `pyarrow.RecordBatch` (Arrow PyCapsule interface; no copy, the buffers
    /// keep the ring slot alive).
    fn to_arrow<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.owner.check("Batch")?;
        PyRecordBatch::new(self.batch.clone()).into_pyarrow(py)
    }

    /// Arrow PyCapsule interface: `pyarrow.record_batch(batch)`, polars, etc.
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_array__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, pyo3::types::PyCapsule>>,
    ) -> PyResult<Bound<'py, pyo3::types::PyTuple>> {
        self.owner.check("Batch")?;
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
