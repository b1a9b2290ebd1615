//! Zero-copy shared-memory frame ring between a feeder (producer) and a trainer (consumer)
//! process on the same node.
//!
//! * [`Listener`] (producer side) binds a Unix socket; [`Listener::accept`] hands each
//!   consumer a fresh ring in a sealed memfd and returns a [`Producer`].
//! * [`connect`] (consumer side) attaches and returns a [`Consumer`].
//! * [`Producer::reserve`] -> write -> [`Reservation::commit`] publishes a frame;
//!   [`Consumer::next`] returns a [`Slot`] whose bytes stay valid until it is dropped.
//! * Most users want exactly that; [`heap_pair`] and [`memfd_pair`] make an in-process pair
//!   for tests.
//!
//! The protocol and its invariants are in `docs/arch/ring.md` and in the `ring` module.
//!
//! ```
//! use hydrofeed_ipc::{connect, Listener, RingConfig};
//! use std::time::Duration;
//!
//! let dir = tempfile::tempdir().unwrap();
//! let path = dir.path().join("ring.sock");
//! let listener = Listener::bind(&path, RingConfig { capacity: 1 << 20, max_frame: None }).unwrap();
//! let trainer = std::thread::spawn({
//!     let path = path.clone();
//!     move || {
//!         let mut consumer = connect(&path, Duration::from_secs(5)).unwrap();
//!         let slot = consumer.next(Duration::from_secs(5)).unwrap().unwrap();
//!         assert_eq!(&slot[..5], b"hello");
//!         consumer.send_control(b"ack").unwrap();
//!     }
//! });
//! let mut producer = listener.accept(Duration::from_secs(5)).unwrap();
//! let mut frame = producer.reserve(5, Duration::from_secs(1)).unwrap();
//! frame.copy_from_slice(b"hello");
//! frame.commit();
//! assert_eq!(producer.wait_control(Duration::from_secs(5)).unwrap().as_deref(), Some(&b"ack"[..]));
//! trainer.join().unwrap();
//! ```
#![cfg_attr(not(test), warn(missing_docs))]

#[cfg(not(loom))]
mod attach;
mod error;
#[cfg(all(test, not(loom)))]
mod hostile_tests;
pub mod layout;
#[cfg(not(loom))]
mod peer;
mod ring;
mod segment;
mod sync;

#[cfg(not(loom))]
pub use attach::{connect, offer, take, wire, Listener};
pub use error::{AttachError, AttachStage, ControlError, NextError, PeerError, ReserveError};
#[cfg(not(loom))]
pub use peer::CONTROL_SEND_TIMEOUT;
pub use ring::{Held, Reservation, Slot};
pub use segment::DetachError;

use ring::{Lost, RingConsumer, RingProducer, Shared};
use std::marker::PhantomData;
use std::time::{Duration, Instant};

#[cfg(loom)]
struct Peer;

#[cfg(not(loom))]
use peer::Peer;

/// Largest control message a consumer may send (64 KiB).
pub const MAX_CONTROL_MSG: usize = 64 * 1024;

/// How often a producer that never has to wait still checks that its consumer is alive.
const PEER_CHECK_EVERY: Duration = Duration::from_millis(100);

/// Geometry of a ring.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RingConfig {
    /// Payload bytes, rounded up to a power of two (at least 4096, at most 1 TiB).
    pub capacity: usize,
    /// Largest frame payload; `None`: half the capacity minus the 64-byte slot header. At
    /// most `capacity - 64`.
    pub max_frame: Option<usize>,
}

impl Default for RingConfig {
    /// 64 MiB, `max_frame` 32 MiB - 64.
    fn default() -> Self {
        RingConfig {
            capacity: 64 << 20,
            max_frame: None,
        }
    }
}

/// The producer's end of a ring (feeder side). `Send`, not `Sync`.
///
/// Dropping it closes the ring (the consumer drains what was committed, then gets `None`).
pub struct Producer {
    ring: RingProducer,
    peer: Option<Peer>,
    last_check: Instant,
    _not_sync: PhantomData<std::cell::Cell<()>>,
}

impl Producer {
    fn from_parts(ring: RingProducer, peer: Option<Peer>) -> Producer {
        Producer {
            ring,
            peer,
            last_check: Instant::now(),
            _not_sync: PhantomData,
        }
    }

    /// Reserves space for a frame of `len` bytes, waiting up to `timeout` for the consumer to
    /// free space. The consumer is checked at least every 100 ms, while waiting or not.
    pub fn reserve(
        &mut self,
        len: usize,
        timeout: Duration,
    ) -> Result<Reservation<'_>, ReserveError> {
        if self.peer.is_some() && self.last_check.elapsed() >= PEER_CHECK_EVERY {
            self.last_check = Instant::now();
            if self.peer_alive().is_err() && !self.ring.closed_by_consumer() {
                return Err(ReserveError::PeerLost);
            }
        }
        let peer = &self.peer;
        self.ring.reserve(len, timeout, &mut || peer_check(peer))
    }

    /// Largest frame payload this ring accepts.
    pub fn max_frame(&self) -> usize {
        self.ring.max_frame()
    }

    /// Closes the ring: the consumer drains what is committed, then `next` returns `Ok(None)`.
    pub fn close(&mut self) {
        self.ring.close();
    }

    /// A control message from the consumer if one has arrived (never blocks).
    pub fn try_recv_control(&mut self) -> Result<Option<Vec<u8>>, ControlError> {
        #[cfg(not(loom))]
        {
            match &mut self.peer {
                Some(p) => p.try_recv(),
                None => Err(ControlError::NoChannel),
            }
        }
        #[cfg(loom)]
        Err(ControlError::NoChannel)
    }

    /// Waits up to `timeout` for a control message; `Ok(None)` on timeout.
    pub fn wait_control(&mut self, timeout: Duration) -> Result<Option<Vec<u8>>, ControlError> {
        #[cfg(not(loom))]
        {
            match &mut self.peer {
                Some(p) => p.wait_recv(timeout),
                None => Err(ControlError::NoChannel),
            }
        }
        #[cfg(loom)]
        {
            let _ = timeout;
            Err(ControlError::NoChannel)
        }
    }

    /// The producer's status word in the ring header: any thread of this process may publish
    /// a `u32` there for the consumer to read ([`Consumer::producer_status`]). The ring gives
    /// it no meaning (the feeder daemon publishes its stage: reading, decoding, waiting for
    /// work), and the consumer must take whatever it reads as a hint.
    pub fn status_word(&self) -> StatusWord {
        StatusWord {
            sh: self.ring.shared().clone(),
        }
    }

    /// Data frames (counted from the first committed, `0..n`) the consumer says it handed to
    /// its user ([`Consumer::handout`]), bounded by the frames committed. Readable at any time,
    /// also after the consumer died or closed: what it took is in the shared memory, so no
    /// message needs to arrive for the producer to know it.
    pub fn peer_handed(&self) -> u64 {
        self.ring.handed()
    }

    /// `Err(PeerLost)` if the consumer died, disconnected or closed the ring.
    pub fn check_peer(&self) -> Result<(), PeerError> {
        if self.ring.closed_by_consumer() {
            return Err(PeerError::PeerLost);
        }
        self.peer_alive()
    }

    fn peer_alive(&self) -> Result<(), PeerError> {
        peer_check(&self.peer).map_err(|_| PeerError::PeerLost)
    }

    /// The consumer's pid (this process's pid for an in-process pair).
    pub fn peer_pid(&self) -> u32 {
        #[cfg(not(loom))]
        if let Some(p) = &self.peer {
            return p.pid;
        }
        std::process::id()
    }
}

impl std::fmt::Debug for Producer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Producer")
            .field("peer_pid", &self.peer_pid())
            .field("max_frame", &self.max_frame())
            .finish()
    }
}

fn peer_check(peer: &Option<Peer>) -> Result<(), Lost> {
    #[cfg(not(loom))]
    if let Some(p) = peer {
        if !p.alive() {
            return Err(Lost);
        }
    }
    #[cfg(loom)]
    let _ = peer;
    Ok(())
}

/// The consumer's end of a ring (trainer side). `Send`.
///
/// Dropping it closes the ring; slots already handed out stay valid.
pub struct Consumer {
    ring: RingConsumer,
    peer: Option<Peer>,
}

impl Consumer {
    fn from_parts(ring: RingConsumer, peer: Option<Peer>) -> Consumer {
        Consumer { ring, peer }
    }

    /// The next frame, waiting up to `timeout`. `Ok(None)`: the producer closed the ring and
    /// every frame was delivered (or this consumer was closed).
    pub fn next(&mut self, timeout: Duration) -> Result<Option<Slot>, NextError> {
        let peer = &self.peer;
        self.ring.next(timeout, &mut || peer_check(peer))
    }

    /// Sends a small message to the producer (at most [`MAX_CONTROL_MSG`] bytes).
    pub fn send_control(&mut self, msg: &[u8]) -> Result<(), ControlError> {
        #[cfg(not(loom))]
        {
            match &mut self.peer {
                Some(p) => p.send_msg(msg),
                None => Err(ControlError::NoChannel),
            }
        }
        #[cfg(loom)]
        {
            let _ = msg;
            Err(ControlError::NoChannel)
        }
    }

    /// Closes the ring from the consumer side: the producer's `reserve` returns `Closed`.
    pub fn close(&mut self) {
        self.ring.close();
    }

    /// How much of the ring the slots this consumer handed out still hold. The ring reclaims
    /// in order, so one old slot kept alive pins everything after it (`pinned`).
    pub fn held(&self) -> Held {
        self.ring.held()
    }

    /// Copies every outstanding slot out of the ring and frees its space at once: the slots'
    /// bytes keep their addresses and values (now in private read-only memory of this process,
    /// freed when the slot drops), so views made from them stay valid. Costs one copy of the
    /// held bytes. For a trainer that keeps batches: without this, the ring fills with slots it
    /// holds and the producer waits forever. Fails with `Unsupported` on a heap ring.
    pub fn detach_held(&mut self) -> Result<Held, DetachError> {
        self.ring.detach_outstanding()
    }

    /// Ring capacity in bytes.
    pub fn capacity(&self) -> u64 {
        self.ring.capacity()
    }

    /// Where the frames live: the payload mapping's address and length. A GPU trainer
    /// registers it for DMA once (`cuMemHostRegister`). The address changes after
    /// [`Consumer::detach_held`], which maps the ring anew.
    pub fn payload_region(&self) -> (*mut u8, usize) {
        self.ring.payload()
    }

    /// Whether the producer is asleep waiting for the consumer to free space.
    pub fn producer_waiting(&self) -> bool {
        self.ring.producer_waiting()
    }

    /// The consumer's hand-out count in the ring header ([`Producer::peer_handed`]): any thread
    /// of this process publishes through it that the data frames `0..n` (in the order `next`
    /// returned them) reached its user. The ring gives it no meaning beyond that; the feeder
    /// daemon counts those frames consumed. It only grows.
    pub fn handout(&self) -> Handout {
        Handout {
            sh: self.ring.shared().clone(),
        }
    }

    /// The producer's status word ([`Producer::status_word`]), readable without this
    /// consumer (another thread may hold it in a wait).
    pub fn producer_status(&self) -> ProducerStatus {
        ProducerStatus {
            sh: self.ring.shared().clone(),
        }
    }

    /// The producer's pid (this process's pid for an in-process pair).
    pub fn peer_pid(&self) -> u32 {
        #[cfg(not(loom))]
        if let Some(p) = &self.peer {
            return p.pid;
        }
        std::process::id()
    }
}

impl std::fmt::Debug for Consumer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Consumer")
            .field("peer_pid", &self.peer_pid())
            .finish()
    }
}

/// The producer's side of its status word ([`Producer::status_word`]): `Send + Sync`, cheap to
/// clone; it keeps the ring's memory mapped.
#[derive(Clone)]
pub struct StatusWord {
    sh: std::sync::Arc<Shared>,
}

impl StatusWord {
    /// Publishes `v` (a `fork()` child of the producer publishes nothing).
    pub fn set(&self, v: u32) {
        self.sh.set_producer_status(v);
    }
}

impl std::fmt::Debug for StatusWord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StatusWord").finish_non_exhaustive()
    }
}

/// The consumer's hand-out count ([`Consumer::handout`]): `Send + Sync`, cheap to clone; it
/// keeps the ring's memory mapped.
#[derive(Clone)]
pub struct Handout {
    sh: std::sync::Arc<Shared>,
}

impl Handout {
    /// Publishes that the data frames `0..n` were handed out (a smaller `n` than before changes
    /// nothing; a `fork()` child publishes nothing).
    pub fn publish(&self, n: u64) {
        self.sh.set_handed(n);
    }

    /// The count published so far.
    pub fn get(&self) -> u64 {
        self.sh.handed()
    }
}

impl std::fmt::Debug for Handout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Handout").field("n", &self.get()).finish()
    }
}

/// The consumer's side of the producer's status word ([`Consumer::producer_status`]).
#[derive(Clone)]
pub struct ProducerStatus {
    sh: std::sync::Arc<Shared>,
}

impl ProducerStatus {
    /// The word the producer last published (0 if none): any value, the peer's word.
    pub fn get(&self) -> u32 {
        self.sh.producer_status()
    }
}

impl std::fmt::Debug for ProducerStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("ProducerStatus").field(&self.get()).finish()
    }
}

/// An in-process producer/consumer pair on a heap backing (tests, loom models).
pub fn heap_pair(cfg: RingConfig) -> Result<(Producer, Consumer), AttachError> {
    let (cap, max_frame) = attach_geometry(&cfg)?;
    let sh = Shared::new(Box::new(segment::HeapSegment::new(cap, max_frame)))?;
    Ok((
        Producer::from_parts(RingProducer::new(sh.clone()), None),
        Consumer::from_parts(RingConsumer::new(sh), None),
    ))
}

/// An in-process pair on a sealed memfd, mapped twice (once per side) and validated as
/// [`connect`] validates it: the shared-memory path without the socket.
#[cfg(not(loom))]
pub fn memfd_pair(cfg: RingConfig) -> Result<(Producer, Consumer), AttachError> {
    use std::os::fd::AsFd;
    let (cap, max_frame) = attach_geometry(&cfg)?;
    let (fd, seg) = segment::create_memfd(cap, max_frame, segment::Pages::Now)?;
    let cseg = segment::open_memfd(fd.as_fd(), Some(cap as u64), segment::Pages::Now)?;
    drop(fd);
    Ok((
        Producer::from_parts(RingProducer::new(Shared::new(Box::new(seg))?), None),
        Consumer::from_parts(RingConsumer::new(Shared::new(Box::new(cseg))?), None),
    ))
}

#[cfg(not(loom))]
fn attach_geometry(cfg: &RingConfig) -> Result<(usize, usize), AttachError> {
    attach::geometry(cfg)
}

#[cfg(loom)]
fn attach_geometry(cfg: &RingConfig) -> Result<(usize, usize), AttachError> {
    let cap = cfg.capacity.max(layout::MIN_CAPACITY).next_power_of_two();
    let max_frame = cfg.max_frame.unwrap_or(cap / 2 - layout::SLOT_HEADER_SIZE);
    if max_frame + layout::SLOT_HEADER_SIZE > cap {
        return Err(AttachError::InvalidConfig);
    }
    Ok((cap, max_frame))
}

#[cfg(all(test, not(loom)))]
mod tests {
    fn send<T: Send>() {}
    fn send_sync_static<T: Send + Sync + 'static>() {}

    #[test]
    fn thread_bounds() {
        send::<super::Producer>();
        send::<super::Consumer>();
        send_sync_static::<super::Slot>();
        send::<super::Listener>();
    }
}
