//! The connection to the peer process: the Unix socket (death detection, control channel) and
//! the peer's pidfd.
//!
//! Death is seen two ways, whichever comes first: the socket reports `POLLRDHUP`/`POLLHUP`
//! (the peer's last copy of its end closed, which the kernel does when a process dies), or the
//! pidfd becomes readable (the process exited, even if a forked child inherited its socket).

use crate::{ControlError, MAX_CONTROL_MSG};
use rustix::event::{poll, PollFd, PollFlags};
use rustix::net::{recv, send, RecvFlags, SendFlags};
use std::os::fd::OwnedFd;
use std::time::{Duration, Instant};

/// How long [`Consumer::send_control`](crate::Consumer::send_control) waits for room in the
/// socket before it gives up with [`ControlError::Timeout`].
pub const CONTROL_SEND_TIMEOUT: Duration = Duration::from_secs(5);

pub(crate) struct Peer {
    pub(crate) sock: OwnedFd,
    pub(crate) pidfd: Option<OwnedFd>,
    pub(crate) pid: u32,
    /// Received control bytes not yet returned (producer side).
    rx: Vec<u8>,
    eof: bool,
    broken: bool,
}

fn ts(d: Duration) -> rustix::time::Timespec {
    rustix::time::Timespec {
        tv_sec: d.as_secs() as i64,
        tv_nsec: d.subsec_nanos() as _,
    }
}

impl Peer {
    pub(crate) fn new(sock: OwnedFd, pid: u32) -> Peer {
        // pidfd_open needs Linux 5.3; without it the socket alone detects death.
        let pidfd = rustix::process::Pid::from_raw(pid as i32).and_then(|p| {
            rustix::process::pidfd_open(p, rustix::process::PidfdFlags::empty()).ok()
        });
        Peer {
            sock,
            pidfd,
            pid,
            rx: Vec::new(),
            eof: false,
            broken: false,
        }
    }

    /// Whether the peer is still there (non-blocking).
    pub(crate) fn alive(&self) -> bool {
        let mut fds = [
            PollFd::new(&self.sock, PollFlags::RDHUP),
            PollFd::new(&self.sock, PollFlags::empty()),
        ];
        let n = if let Some(p) = &self.pidfd {
            fds[1] = PollFd::new(p, PollFlags::IN);
            2
        } else {
            1
        };
        match poll(&mut fds[..n], Some(&ts(Duration::ZERO))) {
            Ok(0) => true,
            Ok(_) => fds[..n].iter().all(|f| f.revents().is_empty()),
            Err(_) => true,
        }
    }

    /// Reads what the socket holds without blocking; sets `eof` on end of stream.
    fn fill(&mut self) -> Result<(), ControlError> {
        let mut buf = [0u8; 16 * 1024];
        loop {
            match recv(&self.sock, &mut buf[..], RecvFlags::DONTWAIT) {
                Ok((0, _)) => {
                    self.eof = true;
                    return Ok(());
                }
                Ok((n, _)) => self.rx.extend_from_slice(&buf[..n]),
                Err(rustix::io::Errno::AGAIN) => return Ok(()),
                Err(rustix::io::Errno::INTR) => continue,
                Err(_) => {
                    self.eof = true;
                    return Ok(());
                }
            }
        }
    }

    /// A complete control message from the buffer, if any.
    fn parse(&mut self) -> Result<Option<Vec<u8>>, ControlError> {
        if self.rx.len() < 4 {
            return Ok(None);
        }
        let len = u32::from_le_bytes(self.rx[..4].try_into().expect("4 bytes")) as usize;
        if len > MAX_CONTROL_MSG {
            self.broken = true;
            return Err(ControlError::Corrupt);
        }
        if self.rx.len() < 4 + len {
            return Ok(None);
        }
        let msg = self.rx[4..4 + len].to_vec();
        self.rx.drain(..4 + len);
        Ok(Some(msg))
    }

    pub(crate) fn try_recv(&mut self) -> Result<Option<Vec<u8>>, ControlError> {
        if self.broken {
            return Err(ControlError::Corrupt);
        }
        if let Some(m) = self.parse()? {
            return Ok(Some(m));
        }
        if !self.eof {
            self.fill()?;
            if let Some(m) = self.parse()? {
                return Ok(Some(m));
            }
        }
        if self.eof {
            return Err(if self.rx.is_empty() {
                ControlError::PeerLost
            } else {
                ControlError::Corrupt
            });
        }
        Ok(None)
    }

    pub(crate) fn wait_recv(&mut self, timeout: Duration) -> Result<Option<Vec<u8>>, ControlError> {
        let deadline = crate::ring::deadline_after(timeout);
        loop {
            if let Some(m) = self.try_recv()? {
                return Ok(Some(m));
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(None);
            }
            let mut fds = [
                PollFd::new(&self.sock, PollFlags::IN),
                PollFd::new(&self.sock, PollFlags::empty()),
            ];
            let n = if let Some(p) = &self.pidfd {
                fds[1] = PollFd::new(p, PollFlags::IN);
                2
            } else {
                1
            };
            let _ = poll(&mut fds[..n], Some(&ts(left.min(crate::ring::WAIT_SLICE))));
            if n == 2 && !fds[1].revents().is_empty() {
                // The process is gone: return what it sent, then PeerLost.
                self.fill()?;
                if let Some(m) = self.parse()? {
                    return Ok(Some(m));
                }
                return Err(ControlError::PeerLost);
            }
        }
    }

    pub(crate) fn send_msg(&mut self, msg: &[u8]) -> Result<(), ControlError> {
        if msg.len() > MAX_CONTROL_MSG {
            return Err(ControlError::TooLarge);
        }
        if self.broken {
            return Err(ControlError::Corrupt);
        }
        let prefix = (msg.len() as u32).to_le_bytes();
        let deadline = Instant::now() + CONTROL_SEND_TIMEOUT;
        let mut sent = 0usize;
        let total = 4 + msg.len();
        while sent < total {
            let r = if sent < 4 {
                let iov = [
                    std::io::IoSlice::new(&prefix[sent..]),
                    std::io::IoSlice::new(msg),
                ];
                rustix::net::sendmsg(
                    &self.sock,
                    &iov,
                    &mut rustix::net::SendAncillaryBuffer::default(),
                    SendFlags::DONTWAIT | SendFlags::NOSIGNAL,
                )
            } else {
                send(
                    &self.sock,
                    &msg[sent - 4..],
                    SendFlags::DONTWAIT | SendFlags::NOSIGNAL,
                )
            };
            match r {
                Ok(n) => sent += n,
                Err(rustix::io::Errno::INTR) => {}
                Err(rustix::io::Errno::AGAIN) => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() || !self.alive() {
                        if sent > 0 {
                            self.broken = true;
                        }
                        return Err(if left.is_zero() {
                            ControlError::Timeout
                        } else {
                            ControlError::PeerLost
                        });
                    }
                    let mut fds = [PollFd::new(&self.sock, PollFlags::OUT)];
                    let _ = poll(&mut fds, Some(&ts(left.min(crate::ring::WAIT_SLICE))));
                }
                Err(_) => return Err(ControlError::PeerLost),
            }
        }
        Ok(())
    }
}
