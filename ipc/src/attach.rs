//! Attach handshake over a Unix stream socket.
//!
//! 1. The producer binds a socket file (mode 0600) and listens ([`Listener::bind`]).
//! 2. The consumer connects ([`connect`]); each side checks the other's uid with `SO_PEERCRED`.
//! 3. The producer creates a sealed memfd with a fresh ring (or takes the one
//!    [`Listener::prepare`] made before the consumer came) and sends [`wire::Hello`] with the
//!    memfd attached (`SCM_RIGHTS`), then closes its copy of the fd (its mapping remains).
//! 4. The consumer verifies the seals (`F_GET_SEALS`), the size, and the header's magic,
//!    version and geometry against the hello, maps it, writes its pid into the header and
//!    answers [`wire::Ack`].
//! 5. Both open a pidfd of the peer. The socket stays open: consumer -> producer control
//!    messages (`u32` little-endian length, then the bytes) and death detection.

use crate::layout::{LAYOUT_VERSION, MAX_CAPACITY, MIN_CAPACITY, SLOT_HEADER_SIZE};
use crate::peer::Peer;
use crate::ring::{RingConsumer, RingProducer, Shared};
use crate::segment::{create_memfd, open_memfd, MemfdSegment, Pages};
use crate::{AttachError, AttachStage, Consumer, Producer, RingConfig};
use rustix::event::{poll, PollFd, PollFlags};
use rustix::net::{
    AddressFamily, RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SendAncillaryBuffer,
    SendAncillaryMessage, SendFlags, SocketAddrUnix, SocketFlags, SocketType,
};
use std::io::{IoSlice, IoSliceMut};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The handshake messages, as they travel on the socket (all integers little-endian).
pub mod wire {
    /// `b"HYDROHLO"`: first 8 bytes of [`Hello`].
    pub const HELLO_MAGIC: u64 = u64::from_le_bytes(*b"HYDROHLO");
    /// `b"HYDROACK"`: first 8 bytes of [`Ack`].
    pub const ACK_MAGIC: u64 = u64::from_le_bytes(*b"HYDROACK");
    /// Size of [`Hello`] on the wire.
    pub const HELLO_LEN: usize = 32;
    /// Size of [`Ack`] on the wire.
    pub const ACK_LEN: usize = 16;

    /// Producer -> consumer, carrying the memfd as `SCM_RIGHTS`.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct Hello {
        /// Layout version of the ring.
        pub version: u32,
        /// Payload bytes of the ring.
        pub capacity: u64,
        /// Largest frame payload.
        pub max_frame: u64,
    }

    impl Hello {
        /// Bytes on the wire: magic, version, reserved (0), capacity, max_frame.
        pub fn encode(&self) -> [u8; HELLO_LEN] {
            let mut b = [0u8; HELLO_LEN];
            b[0..8].copy_from_slice(&HELLO_MAGIC.to_le_bytes());
            b[8..12].copy_from_slice(&self.version.to_le_bytes());
            b[16..24].copy_from_slice(&self.capacity.to_le_bytes());
            b[24..32].copy_from_slice(&self.max_frame.to_le_bytes());
            b
        }

        /// Parses the bytes; `None` if the magic is wrong.
        pub fn decode(b: &[u8; HELLO_LEN]) -> Option<Hello> {
            let u64at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().expect("8"));
            if u64at(0) != HELLO_MAGIC {
                return None;
            }
            Some(Hello {
                version: u32::from_le_bytes(b[8..12].try_into().expect("4")),
                capacity: u64at(16),
                max_frame: u64at(24),
            })
        }
    }

    /// Consumer -> producer once the segment is validated and mapped.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct Ack {
        /// The consumer's pid.
        pub pid: u32,
    }

    impl Ack {
        /// Bytes on the wire: magic, pid, reserved (0).
        pub fn encode(&self) -> [u8; ACK_LEN] {
            let mut b = [0u8; ACK_LEN];
            b[0..8].copy_from_slice(&ACK_MAGIC.to_le_bytes());
            b[8..12].copy_from_slice(&self.pid.to_le_bytes());
            b
        }

        /// Parses the bytes; `None` if the magic is wrong.
        pub fn decode(b: &[u8; ACK_LEN]) -> Option<Ack> {
            if b[0..8] != ACK_MAGIC.to_le_bytes() {
                return None;
            }
            Some(Ack {
                pid: u32::from_le_bytes(b[8..12].try_into().expect("4")),
            })
        }
    }
}

/// Capacity (power of two) and max_frame of a config, or `InvalidConfig`.
pub(crate) fn geometry(cfg: &RingConfig) -> Result<(usize, usize), AttachError> {
    if cfg.capacity > MAX_CAPACITY {
        return Err(AttachError::InvalidConfig);
    }
    let cap = cfg.capacity.max(MIN_CAPACITY).next_power_of_two();
    let max_frame = match cfg.max_frame {
        Some(m) if m + SLOT_HEADER_SIZE > cap => return Err(AttachError::InvalidConfig),
        Some(m) => m,
        None => cap / 2 - SLOT_HEADER_SIZE,
    };
    Ok((cap, max_frame))
}

fn ts(d: Duration) -> rustix::time::Timespec {
    rustix::time::Timespec {
        tv_sec: d.as_secs() as i64,
        tv_nsec: d.subsec_nanos() as _,
    }
}

/// Waits until `fd` is readable (or hung up), at most until `deadline`.
fn wait_readable(fd: BorrowedFd<'_>, deadline: Instant) -> Result<(), AttachError> {
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let mut fds = [PollFd::new(&fd, PollFlags::IN)];
        match poll(&mut fds, Some(&ts(left))) {
            Ok(0) => return Err(AttachError::Timeout),
            Ok(_) => return Ok(()),
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(AttachError::io(AttachStage::Recv, e)),
        }
    }
}

fn check_uid(sock: &OwnedFd) -> Result<u32, AttachError> {
    let cred = rustix::net::sockopt::socket_peercred(sock)
        .map_err(|e| AttachError::io(AttachStage::Peer, e))?;
    let me = rustix::process::geteuid();
    if cred.uid != me {
        return Err(AttachError::PeerUid {
            uid: cred.uid.as_raw(),
        });
    }
    Ok(cred.pid.as_raw_nonzero().get() as u32)
}

/// The producer's listening socket; [`accept`](Listener::accept) makes one ring per consumer
/// (or hands over the one [`prepare`](Listener::prepare) made ahead). The socket file is
/// removed when the listener is dropped.
pub struct Listener {
    fd: OwnedFd,
    path: PathBuf,
    cap: usize,
    max_frame: usize,
    ino: (u64, u64),
    /// The ring made ahead for the next consumer.
    ready: std::sync::Mutex<Option<Fresh>>,
}

/// A fresh ring's sealed memfd and its mapping, not offered to anyone yet.
type Fresh = (OwnedFd, MemfdSegment);

impl std::fmt::Debug for Listener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Listener")
            .field("path", &self.path)
            .field("cap", &self.cap)
            .field("max_frame", &self.max_frame)
            .finish_non_exhaustive()
    }
}

impl Listener {
    /// Binds a Unix socket at `path` (mode 0600) and listens. A stale socket file of ours
    /// (a socket owned by this uid that nobody listens on) is replaced; a live one is an error
    /// (`EADDRINUSE`); anything else at the path (a regular file, a directory, a symlink,
    /// another user's socket) is left alone and refused with [`AttachError::PathInUse`].
    pub fn bind(path: &Path, cfg: RingConfig) -> Result<Listener, AttachError> {
        let (cap, max_frame) = geometry(&cfg)?;
        let bind_err = |e| AttachError::io(AttachStage::Bind, e);
        let fd = rustix::net::socket_with(
            AddressFamily::UNIX,
            SocketType::STREAM,
            SocketFlags::CLOEXEC,
            None,
        )
        .map_err(bind_err)?;
        let addr = SocketAddrUnix::new(path).map_err(bind_err)?;
        // Binders take turns (an exclusive lock on the directory, held until the socket
        // listens): a socket bound but not yet listening looks stale, and must not be removed
        // by a second binder.
        let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
        let dir = rustix::fs::open(
            dir.unwrap_or(Path::new(".")),
            rustix::fs::OFlags::RDONLY
                | rustix::fs::OFlags::DIRECTORY
                | rustix::fs::OFlags::CLOEXEC,
            rustix::fs::Mode::empty(),
        )
        .map_err(bind_err)?;
        rustix::fs::flock(&dir, rustix::fs::FlockOperation::LockExclusive).map_err(bind_err)?;
        match rustix::net::bind(&fd, &addr) {
            Ok(()) => {}
            Err(rustix::io::Errno::ADDRINUSE) => {
                // Only a socket file of ours may be replaced (lstat: a symlink is not one).
                let st = match rustix::fs::lstat(path) {
                    Err(rustix::io::Errno::NOENT) => {
                        // Removed meanwhile (its listener ended): the path is free now.
                        rustix::net::bind(&fd, &addr).map_err(bind_err)?;
                        return Self::listen_on(fd, path, cap, max_frame);
                    }
                    r => r.map_err(bind_err)?,
                };
                let ours = rustix::fs::FileType::from_raw_mode(st.st_mode)
                    == rustix::fs::FileType::Socket
                    && st.st_uid == rustix::process::geteuid().as_raw();
                if !ours {
                    return Err(AttachError::PathInUse);
                }
                if std::os::unix::net::UnixStream::connect(path).is_ok() {
                    return Err(bind_err(rustix::io::Errno::ADDRINUSE));
                }
                // Remove it only if it is still the file checked above.
                match rustix::fs::lstat(path) {
                    Ok(now) if (now.st_dev, now.st_ino) == (st.st_dev, st.st_ino) => {
                        let _ = std::fs::remove_file(path);
                    }
                    _ => return Err(AttachError::PathInUse),
                }
                rustix::net::bind(&fd, &addr).map_err(bind_err)?;
            }
            Err(e) => return Err(bind_err(e)),
        }
        Self::listen_on(fd, path, cap, max_frame)
    }

    /// Makes the socket bound at `path` private and listening.
    fn listen_on(
        fd: OwnedFd,
        path: &Path,
        cap: usize,
        max_frame: usize,
    ) -> Result<Listener, AttachError> {
        let bind_err = |e| AttachError::io(AttachStage::Bind, e);
        // Before listen() nobody can connect, so tightening the mode here leaves no window.
        rustix::fs::chmod(path, rustix::fs::Mode::from_raw_mode(0o600)).map_err(bind_err)?;
        let st = rustix::fs::stat(path).map_err(bind_err)?;
        rustix::net::listen(&fd, 16).map_err(bind_err)?;
        Ok(Listener {
            fd,
            path: path.to_path_buf(),
            cap,
            max_frame,
            ino: (st.st_dev, st.st_ino),
            ready: std::sync::Mutex::new(None),
        })
    }

    /// Makes the next consumer's ring now: the memfd is created, sized, sealed and its pages
    /// allocated and mapped here (tens of milliseconds for a ring of tens of MiB), so that the
    /// consumer's attach does not wait for them. The next [`accept`](Listener::accept) offers
    /// it; later ones make their own. Does nothing when one is ready already.
    pub fn prepare(&self) -> Result<(), AttachError> {
        let mut ready = self.ready.lock().unwrap_or_else(|e| e.into_inner());
        if ready.is_none() {
            *ready = Some(create_memfd(self.cap, self.max_frame, Pages::Now)?);
        }
        Ok(())
    }

    /// The socket's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Waits up to `timeout` for one consumer and hands it a new ring.
    ///
    /// A consumer running as another uid is refused with [`AttachError::PeerUid`] (its
    /// connection is closed); call `accept` again for the next one.
    pub fn accept(&self, timeout: Duration) -> Result<Producer, AttachError> {
        let deadline = crate::ring::deadline_after(timeout);
        loop {
            match self.accept_one(deadline) {
                // The peer hung up before the handshake finished (a liveness probe from a
                // second `bind`, or a consumer that refused our segment): wait for the next.
                Err(AttachError::PeerLost) if Instant::now() < deadline => continue,
                r => return r,
            }
        }
    }

    fn accept_one(&self, deadline: Instant) -> Result<Producer, AttachError> {
        wait_readable(self.fd.as_fd(), deadline)?;
        let sock = rustix::net::accept_with(&self.fd, SocketFlags::CLOEXEC)
            .map_err(|e| AttachError::io(AttachStage::Accept, e))?;
        offer_on(sock, || self.fresh(), deadline)
    }

    /// The prepared ring (a ring offered once is never offered again), or a new one.
    fn fresh(&self) -> Result<Fresh, AttachError> {
        let ready = self.ready.lock().unwrap_or_else(|e| e.into_inner()).take();
        match ready {
            Some(f) => Ok(f),
            None => create_memfd(self.cap, self.max_frame, Pages::Now),
        }
    }
}

/// The producer's half of the handshake (steps 2-5 above) over a stream socket that is
/// already connected, whichever side connected: a producer that dials its consumer (a Spark
/// feeding task dialling the trainer's socket) makes the ring and offers it, as
/// [`Listener::accept`] does for the consumer that dialled it. The consumer answers with
/// [`take`]. The socket stays the ring's control channel. The ring is made here, on the way
/// of the first frame, so its pages are allocated as the producer first writes them, not
/// all before it offers the ring.
pub fn offer(sock: OwnedFd, cfg: RingConfig, timeout: Duration) -> Result<Producer, AttachError> {
    let (cap, max_frame) = geometry(&cfg)?;
    offer_on(
        sock,
        || create_memfd(cap, max_frame, Pages::OnUse),
        crate::ring::deadline_after(timeout),
    )
}

/// Offers the ring `fresh` gives on `sock`, once the peer's uid passed.
fn offer_on(
    sock: OwnedFd,
    fresh: impl FnOnce() -> Result<Fresh, AttachError>,
    deadline: Instant,
) -> Result<Producer, AttachError> {
    let pid = check_uid(&sock)?;
    let (memfd, seg) = fresh()?;
    let (capacity, max_frame) = seg.geometry();
    let hello = wire::Hello {
        version: LAYOUT_VERSION,
        capacity,
        max_frame: max_frame as u64,
    }
    .encode();
    send_with_fd(sock.as_fd(), &hello, memfd.as_fd())?;
    // Our mapping keeps the memory; the memfd itself now lives only in the consumer.
    drop(memfd);
    wait_readable(sock.as_fd(), deadline)?;
    let mut ack = [0u8; wire::ACK_LEN];
    recv_exact(sock.as_fd(), &mut ack, deadline)?;
    let ack = wire::Ack::decode(&ack).ok_or(AttachError::Protocol)?;
    if ack.pid != pid {
        return Err(AttachError::Protocol);
    }
    let sh = Shared::new(Box::new(seg))?;
    let peer = Peer::new(sock, pid);
    Ok(Producer::from_parts(RingProducer::new(sh), Some(peer)))
}

impl Drop for Listener {
    fn drop(&mut self) {
        if let Ok(st) = rustix::fs::stat(&self.path) {
            if (st.st_dev, st.st_ino) == self.ino {
                let _ = std::fs::remove_file(&self.path);
            }
        }
    }
}

fn send_with_fd(sock: BorrowedFd<'_>, bytes: &[u8], fd: BorrowedFd<'_>) -> Result<(), AttachError> {
    let fds = [fd];
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut cmsg = SendAncillaryBuffer::new(&mut space);
    if !cmsg.push(SendAncillaryMessage::ScmRights(&fds)) {
        return Err(AttachError::Protocol);
    }
    let n = rustix::net::sendmsg(sock, &[IoSlice::new(bytes)], &mut cmsg, SendFlags::NOSIGNAL)
        .map_err(|e| match e {
            rustix::io::Errno::PIPE | rustix::io::Errno::CONNRESET => AttachError::PeerLost,
            e => AttachError::io(AttachStage::Send, e),
        })?;
    if n != bytes.len() {
        return Err(AttachError::Protocol);
    }
    Ok(())
}

fn recv_exact(sock: BorrowedFd<'_>, buf: &mut [u8], deadline: Instant) -> Result<(), AttachError> {
    let mut got = 0;
    while got < buf.len() {
        wait_readable(sock, deadline)?;
        match rustix::net::recv(sock, &mut buf[got..], RecvFlags::DONTWAIT) {
            Ok((0, _)) => return Err(AttachError::PeerLost),
            Ok((n, _)) => got += n,
            Err(rustix::io::Errno::AGAIN | rustix::io::Errno::INTR) => {}
            Err(rustix::io::Errno::CONNRESET) => return Err(AttachError::PeerLost),
            Err(e) => return Err(AttachError::io(AttachStage::Recv, e)),
        }
    }
    Ok(())
}

/// Connects to the producer listening at `path` and attaches to the ring it sends.
///
/// Retries while the socket does not exist yet or refuses connections, until `timeout`.
pub fn connect(path: &Path, timeout: Duration) -> Result<Consumer, AttachError> {
    let deadline = crate::ring::deadline_after(timeout);
    let conn_err = |e| AttachError::io(AttachStage::Connect, e);
    let addr = SocketAddrUnix::new(path).map_err(conn_err)?;
    let sock = loop {
        let fd = rustix::net::socket_with(
            AddressFamily::UNIX,
            SocketType::STREAM,
            SocketFlags::CLOEXEC,
            None,
        )
        .map_err(conn_err)?;
        match rustix::net::connect(&fd, &addr) {
            Ok(()) => break fd,
            Err(rustix::io::Errno::NOENT | rustix::io::Errno::CONNREFUSED)
                if Instant::now() < deadline =>
            {
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(conn_err(e)),
        }
    };
    take_on(sock, deadline, Pages::Now)
}

/// The consumer's half of the handshake over a stream socket that is already connected: takes
/// the ring a producer [`offer`]s on it (a trainer's socket that Spark feeding tasks dial).
pub fn take(sock: OwnedFd, timeout: Duration) -> Result<Consumer, AttachError> {
    take_on(sock, crate::ring::deadline_after(timeout), Pages::OnUse)
}

/// `pages`: when the consumer's mapping faults its pages in ([`Pages::OnUse`] for a ring
/// [`offer`]ed, whose producer allocates them as it writes: populating it here would allocate
/// and clear all of it).
fn take_on(sock: OwnedFd, deadline: Instant, pages: Pages) -> Result<Consumer, AttachError> {
    let pid = check_uid(&sock)?;
    wait_readable(sock.as_fd(), deadline)?;
    let mut hello = [0u8; wire::HELLO_LEN];
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(2))];
    let mut cmsg = RecvAncillaryBuffer::new(&mut space);
    let msg = rustix::net::recvmsg(
        &sock,
        &mut [IoSliceMut::new(&mut hello)],
        &mut cmsg,
        RecvFlags::CMSG_CLOEXEC,
    )
    .map_err(|e| AttachError::io(AttachStage::Recv, e))?;
    let mut memfd: Option<OwnedFd> = None;
    for m in cmsg.drain() {
        if let RecvAncillaryMessage::ScmRights(fds) = m {
            for fd in fds {
                // Keep the first, close any extra.
                memfd.get_or_insert(fd);
            }
        }
    }
    if msg.bytes == 0 {
        return Err(AttachError::PeerLost);
    }
    let memfd = memfd.ok_or(AttachError::Protocol)?;
    if msg.bytes != wire::HELLO_LEN {
        return Err(AttachError::Protocol);
    }
    let hello = wire::Hello::decode(&hello).ok_or(AttachError::Protocol)?;
    if hello.version != LAYOUT_VERSION {
        return Err(AttachError::BadVersion {
            found: hello.version,
        });
    }
    let seg = open_memfd(memfd.as_fd(), Some(hello.capacity), pages)?;
    drop(memfd);
    let sh = Shared::new(Box::new(seg))?;
    let me = std::process::id();
    sh.header()
        .consumer
        .pid
        .store(me, crate::sync::Ordering::Release);
    let ack = wire::Ack { pid: me }.encode();
    let n = rustix::net::send(&sock, &ack, SendFlags::NOSIGNAL).map_err(|e| match e {
        rustix::io::Errno::PIPE | rustix::io::Errno::CONNRESET => AttachError::PeerLost,
        e => AttachError::io(AttachStage::Send, e),
    })?;
    if n != ack.len() {
        return Err(AttachError::Protocol);
    }
    let peer = Peer::new(sock, pid);
    Ok(Consumer::from_parts(RingConsumer::new(sh), Some(peer)))
}
