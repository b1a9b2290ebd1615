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

/// `SO_PEERPIDFD` (Linux 6.5) on the architectures where it has the generic value.
const SO_PEERPIDFD: Option<libc::c_int> = if cfg!(any(
    target_arch = "x86_64",
    target_arch = "x86",
    target_arch = "aarch64",
    target_arch = "arm",
    target_arch = "riscv64",
    target_arch = "loongarch64",
    target_arch = "s390x"
)) {
    Some(77)
} else {
    None
};

/// A pidfd of the process at the other end of `sock`. `SO_PEERPIDFD` (Linux 6.5) gives the
/// process that connected, pinned by the kernel at connect time: it cannot name another
/// process that reused `pid` after the peer died. Older kernels: `pidfd_open(pid)` (Linux
/// 5.3), which can in that window (the socket still reports the peer's death); without
/// either, the socket alone detects it.
fn peer_pidfd(sock: &OwnedFd, pid: u32) -> Option<OwnedFd> {
    use std::os::fd::{AsRawFd, FromRawFd};
    if let Some(opt) = SO_PEERPIDFD {
        let mut fd: libc::c_int = -1;
        let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: getsockopt writes at most `len` bytes into `fd`, a c_int of that size; the
        // socket is a valid open descriptor for the duration of the call.
        let r = unsafe {
            libc::getsockopt(
                sock.as_raw_fd(),
                libc::SOL_SOCKET,
                opt,
                (&mut fd as *mut libc::c_int).cast(),
                &mut len,
            )
        };
        if r == 0 && fd >= 0 {
            // SAFETY: the kernel just created `fd` for us; nothing else owns it.
            return Some(unsafe { OwnedFd::from_raw_fd(fd) });
        }
    }
    rustix::process::Pid::from_raw(pid as i32)
        .and_then(|p| rustix::process::pidfd_open(p, rustix::process::PidfdFlags::empty()).ok())
}

impl Peer {
    pub(crate) fn new(sock: OwnedFd, pid: u32) -> Peer {
        let pidfd = peer_pidfd(&sock, pid);
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The pid a pidfd refers to, from `/proc/self/fdinfo`.
    fn pid_of(fd: &OwnedFd) -> Option<u32> {
        use std::os::fd::AsRawFd;
        let info = std::fs::read_to_string(format!("/proc/self/fdinfo/{}", fd.as_raw_fd())).ok()?;
        info.lines()
            .find_map(|l| l.strip_prefix("Pid:"))
            .and_then(|v| v.trim().parse().ok())
    }

    /// The pidfd names the process at the other end of the socket, whatever pid the handshake
    /// said (a pid can be reused once its process died; the socket's peer cannot).
    #[test]
    fn pidfd_comes_from_the_socket_not_the_pid() {
        let (a, _b) = rustix::net::socketpair(
            rustix::net::AddressFamily::UNIX,
            rustix::net::SocketType::STREAM,
            rustix::net::SocketFlags::CLOEXEC,
            None,
        )
        .unwrap();
        let me = std::process::id();
        // A pid that is not ours (pid 1 exists in every namespace, so pidfd_open would work).
        let fd = peer_pidfd(&a, 1).expect("a pidfd");
        let kernel_has_it = {
            let r = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
            let mut v = r
                .trim()
                .split(['.', '-'])
                .map(|x| x.parse::<u32>().unwrap_or(0));
            (v.next().unwrap_or(0), v.next().unwrap_or(0)) >= (6, 5)
        };
        if kernel_has_it && SO_PEERPIDFD.is_some() {
            assert_eq!(pid_of(&fd), Some(me), "the pidfd must be the socket's peer");
        } else {
            eprintln!("SO_PEERPIDFD needs Linux 6.5: checked the pidfd_open fallback only");
            assert_eq!(pid_of(&fd), Some(1));
        }
    }
}
