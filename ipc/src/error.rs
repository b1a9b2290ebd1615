//! Error types: one small `Copy` enum per operation, so the hot path never allocates.

use std::fmt;

/// The step of the attach handshake where a system call failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttachStage {
    /// Creating, binding or `chmod`ing the listening socket.
    Bind,
    /// Accepting a connection.
    Accept,
    /// Connecting to the producer's socket.
    Connect,
    /// Creating, sizing or sealing the memfd.
    Memfd,
    /// Mapping the segment.
    Map,
    /// Sending a handshake message (or the memfd) over the socket.
    Send,
    /// Receiving a handshake message (or the memfd) from the socket.
    Recv,
    /// Reading the peer's credentials or opening its pidfd.
    Peer,
}

/// Why attaching a producer and a consumer failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttachError {
    /// The [`RingConfig`](crate::RingConfig) is out of range: capacity above 1 TiB, or
    /// `max_frame` larger than `capacity - 64`.
    InvalidConfig,
    /// A system call failed; `errno` is the raw OS error number.
    Io {
        /// Where it failed.
        stage: AttachStage,
        /// The raw `errno`.
        errno: i32,
    },
    /// No peer connected, or the peer did not answer, within the timeout.
    Timeout,
    /// The peer runs as another user (checked with `SO_PEERCRED`); it was refused.
    PeerUid {
        /// The peer's uid.
        uid: u32,
    },
    /// The segment the producer sent lacks the `F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL`
    /// seals, or its size differs from the header's geometry.
    BadSeals,
    /// The segment header does not start with the ring magic.
    BadMagic,
    /// The segment header has a layout version this build does not speak.
    BadVersion {
        /// The version found in the header.
        found: u32,
    },
    /// The segment header's capacity, header size or `max_frame` is invalid or disagrees with
    /// the handshake message.
    BadGeometry,
    /// A handshake message was malformed (wrong size, wrong tag, missing memfd).
    Protocol,
    /// The peer closed the connection during the handshake (it may have refused us).
    PeerLost,
    /// [`Listener::bind`](crate::Listener::bind): the socket path holds something that is not
    /// a socket file of ours (a regular file, a directory, a symlink, another user's socket);
    /// it is left alone.
    PathInUse,
}

impl AttachError {
    #[cfg(not(loom))]
    pub(crate) fn io(stage: AttachStage, e: rustix::io::Errno) -> AttachError {
        AttachError::Io {
            stage,
            errno: e.raw_os_error(),
        }
    }
}

impl fmt::Display for AttachError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AttachError::InvalidConfig => write!(
                f,
                "invalid ring config: capacity must be at most 1 TiB and max_frame at most capacity - 64"
            ),
            AttachError::Io { stage, errno } => write!(
                f,
                "ring attach failed at {stage:?}: {}",
                std::io::Error::from_raw_os_error(*errno)
            ),
            AttachError::Timeout => write!(f, "ring attach timed out waiting for the peer"),
            AttachError::PeerUid { uid } => {
                write!(f, "ring peer runs as uid {uid}, not ours; refused")
            }
            AttachError::BadSeals => write!(
                f,
                "ring segment is not sealed against shrink/grow/seal or has the wrong size"
            ),
            AttachError::BadMagic => write!(f, "ring segment has a wrong magic number"),
            AttachError::BadVersion { found } => write!(
                f,
                "ring segment has layout version {found}, this build speaks {}",
                crate::layout::LAYOUT_VERSION
            ),
            AttachError::BadGeometry => write!(f, "ring segment header has an invalid geometry"),
            AttachError::Protocol => write!(f, "malformed ring handshake message"),
            AttachError::PeerLost => write!(f, "ring peer closed the connection during attach"),
            AttachError::PathInUse => write!(
                f,
                "the socket path is taken by something that is not a stale socket of ours \
                 (a file, a directory, a symlink or another user's socket); remove it or pick \
                 another path"
            ),
        }
    }
}
impl std::error::Error for AttachError {}

/// Why [`Producer::reserve`](crate::Producer::reserve) failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReserveError {
    /// The frame is larger than [`Producer::max_frame`](crate::Producer::max_frame); it can never
    /// be reserved in this ring.
    TooLarge,
    /// The ring stayed full for the whole timeout (the consumer is slow or holds its slots).
    /// Retryable.
    Timeout,
    /// The ring is closed: the consumer closed its end, or this producer was closed.
    Closed,
    /// The consumer process died or dropped the connection without closing the ring.
    PeerLost,
}

impl fmt::Display for ReserveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ReserveError::TooLarge => "frame larger than the ring's max_frame",
            ReserveError::Timeout => "ring full: timed out waiting for the consumer to free space",
            ReserveError::Closed => "ring closed",
            ReserveError::PeerLost => "ring consumer lost (process died or disconnected)",
        })
    }
}
impl std::error::Error for ReserveError {}

/// Why [`Consumer::next`](crate::Consumer::next) failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NextError {
    /// No frame arrived within the timeout. Retryable.
    Timeout,
    /// The producer process died (or dropped the connection) without closing the ring, and
    /// every frame it had committed was delivered.
    PeerLost,
    /// The ring holds an invalid slot header (bad kind, length or sequence number); the ring
    /// cannot be read further.
    Corrupt,
}

impl fmt::Display for NextError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            NextError::Timeout => "timed out waiting for a ring frame",
            NextError::PeerLost => "ring producer lost (process died or disconnected)",
            NextError::Corrupt => "ring frame header is corrupt",
        })
    }
}
impl std::error::Error for NextError {}

/// Why sending or receiving a control message failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ControlError {
    /// The message is longer than [`MAX_CONTROL_MSG`](crate::MAX_CONTROL_MSG).
    TooLarge,
    /// The socket stayed full for [`CONTROL_SEND_TIMEOUT`](crate::CONTROL_SEND_TIMEOUT): the
    /// producer does not read its control messages.
    Timeout,
    /// The peer closed the control channel (the ring was closed, or the peer died).
    PeerLost,
    /// A received length prefix is out of range, or a send was cut off half-way; the channel
    /// is unusable.
    Corrupt,
    /// This ring has no control channel (an in-process pair).
    NoChannel,
}

impl fmt::Display for ControlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ControlError::TooLarge => "control message too large",
            ControlError::Timeout => "control channel full: the producer is not reading",
            ControlError::PeerLost => "control channel closed by the peer",
            ControlError::Corrupt => "control channel corrupt (bad length prefix or cut-off send)",
            ControlError::NoChannel => "this ring has no control channel",
        })
    }
}
impl std::error::Error for ControlError {}

/// The result of a peer check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PeerError {
    /// The peer died, disconnected or closed its end of the ring.
    PeerLost,
}

impl fmt::Display for PeerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ring peer lost (died, disconnected or closed)")
    }
}
impl std::error::Error for PeerError {}
