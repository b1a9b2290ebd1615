//! The trainer's end of a feed: attach to a feeder's ring, decode frames, hand out batches whose
//! numpy arrays view the ring.
//!
//! Parts: `attach` (attaching to a feeder, the `Hello`, re-attaching to a restarted one with
//! where this trainer is), `ring` (waiting on the ring, decoding frames, acks, ring pressure:
//! the bodies of `next()` and `wait_schema()`) and `batch` (the [`Batch`] mapping). This
//! module holds [`Feed`], its state and its Python methods.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, TryLockError};
use std::time::{Duration, Instant};

use arrow_schema::SchemaRef;
use hydrofeed_ipc::{Consumer, Handout, Held, ProducerStatus};
use hydrofeed_tfbridge::{Consumed, Control, FeedReport, FrameDecoder, NO_SPLIT};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use pyo3_arrow::PySchema;

use crate::blocking::{self, Owner};
use crate::error;

mod attach;
mod batch;
mod ring;

use attach::{attach, send_hello};
pub(crate) use batch::copy_array;
pub use batch::Batch;
use ring::send_ack;

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
    /// over this epoch and the one before (the sums of the lineage pieces), the epoch of
    /// the last batch, whether its end-of-epoch frame was read, rows read in it.
    consumed: Consumed,
    epoch: Option<u32>,
    epoch_done: bool,
    epoch_rows: u64,
}

/// What reached the trainer's code: the frames of this ring handed out (published in the
/// ring's header for the feeder), and the rows of the batches among them. Behind a lock of its
/// own, never held across a wait: a `hand_out` from another thread (tf.data's, after its
/// prefetch) never waits for a blocked `next()`.
#[derive(Default)]
struct Handed {
    /// Bumped when a restarted feeder takes the trainer back (a new ring, counted from 0).
    generation: u64,
    /// Frames `0..frames` of this ring were handed out.
    frames: u64,
    /// Rows of the batches handed out (this run, all rings).
    rows: u64,
    /// Batches read but not handed out yet: (frames up to and with it, rows).
    pending: std::collections::VecDeque<(u64, u64)>,
    word: Option<Handout>,
}

impl Handed {
    /// Everything up to frame count `frames` of ring `generation` reached the trainer's code.
    fn hand_out(&mut self, generation: u64, frames: u64) {
        if generation != self.generation || frames <= self.frames {
            return;
        }
        while self.pending.front().is_some_and(|&(f, _)| f <= frames) {
            let (_, rows) = self.pending.pop_front().unwrap_or_default();
            self.rows += rows;
        }
        self.frames = frames;
        if let Some(w) = &self.word {
            w.publish(frames);
        }
    }
}

/// A batch's place in the hand-out count: the ring's generation in the high 24 bits, the frames
/// up to and with it in the low 40.
const TICKET_FRAMES: u32 = 40;

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
    /// When the first batch was handed out, and the ring wait before it (start-up, not
    /// counted in the figures the feeder gets with the acks).
    first_batch: Option<Instant>,
    wait_at_first: Duration,
    /// Time `next()` of a GPU feed waited for copies, and the GPU's utilisation, as
    /// `DataFeed` last sampled them (`set_device_figures`).
    device_wait: Duration,
    gpu_utilization: Option<u32>,
    /// The word the feeder publishes in the ring's header (its stage for this ring).
    feeder_status: Option<ProducerStatus>,
}

impl Stats {
    /// What this trainer reports with its acks: its steps, rows, and how long it waited for
    /// input since its first batch (`None` before it).
    fn report(&self) -> Option<FeedReport> {
        let first = self.first_batch?;
        let us = |d: Duration| u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
        Some(FeedReport {
            batches: self.batches,
            rows: self.rows,
            elapsed_us: us(first.elapsed()),
            wait_us: us(self
                .wait
                .saturating_sub(self.wait_at_first)
                .saturating_add(self.device_wait)),
            gpu_utilization: self.gpu_utilization,
        })
    }
}

/// What a trainer that holds too much of the ring gets.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Pressure {
    /// Copy the held batches out of the ring (once each) and warn once.
    Copy,
    /// Raise `RingExhaustedError`.
    Raise,
}

/// A feed from one feeder: `next()` returns the next [`Batch`] or `None` at end-of-feed.
#[pyclass(module = "hydrofeed._native")]
pub struct Feed {
    inner: Mutex<Inner>,
    stats: Mutex<Stats>,
    handed: Mutex<Handed>,
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
                Err(TryLockError::WouldBlock) => blocking::sleep(py, Duration::from_millis(1))?,
            }
        }
    }

    /// The ring payload's address and length, for a GPU stager to register (`None` once the
    /// feed closed).
    pub(crate) fn ring_region(&self, py: Python<'_>) -> PyResult<Option<(usize, usize)>> {
        let g = self.lock(py)?;
        Ok(g.consumer.as_ref().map(|c| {
            let (p, n) = c.payload_region();
            (p as usize, n)
        }))
    }

    fn stats(&self) -> MutexGuard<'_, Stats> {
        self.stats.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn handed(&self) -> MutexGuard<'_, Handed> {
        self.handed.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `b` was read: it waits to be handed out, or is at once.
    pub(crate) fn took(&self, b: &Batch, hand_out: bool) {
        let mut h = self.handed();
        if b.generation != h.generation {
            return;
        }
        h.pending.push_back((b.frames, b.batch.num_rows() as u64));
        if hand_out {
            h.hand_out(b.generation, b.frames);
        }
    }

    /// Frames of the current ring handed out.
    fn frames_handed(&self) -> u64 {
        self.handed().frames
    }

    fn peer(&self) -> u32 {
        self.peer.load(Ordering::Relaxed)
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
        // Under `launch` with feeder restarts (a rejoin timeout), a feeder killed while this
        // trainer attaches is restarted: wait for it as a rejoin would.
        let restarted = !rejoin_timeout.is_zero();
        let wait_for = if restarted {
            connect_timeout.max(rejoin_timeout)
        } else {
            connect_timeout
        };
        let mut consumer = attach(py, address, wait_for, restarted)?;
        let peer = consumer.peer_pid();
        let hello_sent = batch_size.is_some();
        if hello_sent {
            send_hello(&mut consumer, batch_size, address, true)?;
        }
        let ring_bytes = consumer.capacity();
        let feeder_status = Some(consumer.producer_status());
        let word = Some(consumer.handout());
        Ok(Self {
            handed: Mutex::new(Handed {
                word,
                ..Handed::default()
            }),
            inner: Mutex::new(Inner {
                hello_sent,
                consumer: Some(consumer),
                dec: FrameDecoder::new(),
                frames: 0,
                acked: 0,
                last_ack: Instant::now(),
                consumed: Consumed::default(),
                epoch: None,
                epoch_done: false,
                epoch_rows: 0,
            }),
            stats: Mutex::new(Stats {
                split: NO_SPLIT,
                ring_bytes,
                feeder_status,
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
    ///
    /// The batch counts as consumed (the feeder acks it, a saved state holds it) once it is
    /// handed out: at once, or with `hand_out=False` when its `ticket` is given to
    /// [`Feed::hand_out`] (an adapter that reads ahead hands a batch out when it yields it).
    #[pyo3(signature = (timeout=None, hand_out=true))]
    fn next(
        &self,
        py: Python<'_>,
        timeout: Option<f64>,
        hand_out: bool,
    ) -> PyResult<Option<Batch>> {
        let b = self.read_next(py, timeout)?;
        if let Some(b) = &b {
            self.took(b, hand_out);
        }
        Ok(b)
    }

    /// Counts the batch of `ticket` (`Batch.ticket`), and every batch read before it, as
    /// handed to the trainer's code: consumed. Published in the ring's header at once, so the
    /// feeder knows it without a message, also if this process dies next. Any thread; never
    /// waits for a `next()` blocked in another. A ticket of a ring left behind (the feeder was
    /// restarted) or already counted changes nothing.
    fn hand_out(&self, ticket: u64) -> PyResult<()> {
        self.owner.check("DataFeed")?;
        let g = ticket >> TICKET_FRAMES;
        let f = ticket & ((1u64 << TICKET_FRAMES) - 1);
        self.handed().hand_out(g, f);
        Ok(())
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
        self.read_schema(py, timeout)
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
        let frames = self.frames_handed();
        let report = self.stats().report();
        if let Some(c) = inner.consumer.as_mut() {
            send_ack(c, &mut inner.acked, &mut inner.last_ack, frames, report);
        }
        self.stats().acked = inner.acked;
        Ok(inner.acked)
    }

    /// The GPU figures the acks carry to the feeder (its Prometheus text): the seconds `next()`
    /// of a GPU feed waited for copies so far (added to the wait for input) and the GPU's
    /// utilisation in percent (`None`: unknown). `DataFeed` sets them every few seconds.
    #[pyo3(signature = (copy_wait_s, utilization=None))]
    fn set_device_figures(&self, copy_wait_s: f64, utilization: Option<u32>) -> PyResult<()> {
        self.owner.check("DataFeed")?;
        if !(copy_wait_s.is_finite() && copy_wait_s >= 0.0) {
            return Err(PyValueError::new_err(format!(
                "copy_wait_s={copy_wait_s}: expected seconds, 0 or more"
            )));
        }
        if utilization.is_some_and(|u| u > 100) {
            return Err(PyValueError::new_err(format!(
                "utilization={utilization:?}: expected a percentage, 0 to 100"
            )));
        }
        let mut st = self.stats();
        st.device_wait = Duration::try_from_secs_f64(copy_wait_s).unwrap_or(Duration::MAX);
        st.gpu_utilization = utilization;
        Ok(())
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
        let what = format!("the coordinator's state from {addr}");
        // A gRPC call that may wait up to `timeout`: on a thread of its own, so Ctrl-C is
        // answered meanwhile.
        let r: Result<String, String> = blocking::call(py, &what, move || {
            // A coordinator restarting (on its journal) is waited for, within `timeout`.
            let tls = hydrofeed_coord::tls::ClientTls::from_env().map_err(|e| e.to_string())?;
            let mut c =
                CoordClient::connect_retrying(&addr, &token, timeout, tls.as_ref(), timeout)
                    .map_err(|e| e.to_string())?;
            let t0 = Instant::now();
            loop {
                let m = c.metrics().map_err(|e| e.to_string())?;
                let acked = m
                    .workers
                    .iter()
                    .find(|w| w.rank == rank)
                    .map_or(0, |w| w.rows_acked);
                if acked >= min_rows_acked {
                    return c.state_json().map_err(|e| e.to_string());
                }
                if t0.elapsed() > timeout {
                    return Err(format!(
                        "the coordinator at {addr} to record rank {rank}'s acks ({acked} of \
                         {min_rows_acked} rows) within {:.1} s (stage: forwarding acks through \
                         the feeder)",
                        timeout.as_secs_f64()
                    ));
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        })?;
        r.map_err(error::FeedTimeoutError::new_err)
    }

    /// Where a resumed run began: `(epoch, steps)`, the epoch the coordinator resumed in and
    /// the steps each rank had left in it; `None` for a run that did not resume (or resumed
    /// a finished state). Raises `FeedTimeoutError` after `timeout` seconds.
    #[staticmethod]
    #[pyo3(signature = (address, token, timeout=30.0))]
    fn coordinator_resumed(
        py: Python<'_>,
        address: &str,
        token: &str,
        timeout: f64,
    ) -> PyResult<Option<(u32, u64)>> {
        use hydrofeed_coord::client::CoordClient;
        use hydrofeed_coord::token::Token;
        let timeout = secs("timeout", timeout)?;
        let token = Token::new(token).map_err(|e| PyValueError::new_err(e.to_string()))?;
        let addr = address.to_string();
        let what = format!("where the run resumed, from the coordinator at {addr}");
        let r: Result<Option<(u32, u64)>, String> = blocking::call(py, &what, move || {
            let mut c = CoordClient::connect(&addr, &token, timeout).map_err(|e| e.to_string())?;
            let m = c.metrics().map_err(|e| e.to_string())?;
            Ok(m.resumed.map(|r| (r.epoch, r.steps)))
        })?;
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
        drop(g);
        let (handed_rows, handed_frames) = {
            let h = self.handed();
            (h.rows, h.frames)
        };
        let g = self.stats();
        d.set_item("rows_handed", handed_rows)?;
        d.set_item("frames_handed", handed_frames)?;
        d.set_item("frames", g.frames)?;
        d.set_item("bytes", g.bytes)?;
        d.set_item("wait_seconds", g.wait.as_secs_f64())?;
        d.set_item("results", g.results)?;
        d.set_item("frames_acked", g.acked)?;
        d.set_item("ring_bytes", g.ring_bytes)?;
        d.set_item("held_batches", g.held.slots)?;
        d.set_item("held_bytes", g.held.bytes)?;
        d.set_item("pinned_bytes", g.held.pinned)?;
        d.set_item("pressure_copies", g.pressure_copies)?;
        d.set_item("copied_batches", g.copied_frames)?;
        d.set_item("copied_bytes", g.copied_bytes)?;
        d.set_item("feeder_pid", self.peer())?;
        d.set_item("rejoins", g.rejoins)?;
        // What the feeder says it is doing for this ring (its stage), if it says.
        let stage = g.feeder_status.as_ref().and_then(ring::feeder_stage);
        d.set_item("feeder_stage", stage.map(|s| s.as_str()))?;
        Ok(d)
    }
}
