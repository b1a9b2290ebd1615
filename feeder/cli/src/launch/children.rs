//! The job's child processes: a [`ChildProc`] (the feeder, or a trainer) is started in its own
//! process group, dies with `launch`, has its output prefixed and its last lines kept for the
//! error that names it; [`kill_all`] kills and reaps them on every exit path. Also the trainers'
//! TF server ports.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::Context;
use indicatif::ProgressBar;

/// Children get SIGKILL when `launch` dies, whatever kills it.
fn die_with_parent(cmd: &mut Command) {
    // SAFETY: the closure runs in the child between fork and exec and calls only `prctl`,
    // which is async-signal-safe; it touches no memory of the parent.
    unsafe {
        cmd.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// Lines of a child's output kept for the error that names it.
const TAIL_LINES: usize = 20;

/// The last lines a child wrote (stdout and stderr together).
type Tail = Arc<Mutex<VecDeque<String>>>;

/// One child of the job: its name in messages (`the feeder`, `trainer rank 2`), the process,
/// its last lines and the threads copying its output.
pub(super) struct ChildProc {
    name: String,
    child: Child,
    tail: Tail,
    outs: Vec<thread::JoinHandle<()>>,
}

impl ChildProc {
    /// Starts `cmd` with its output prefixed with `prefix` and kept; it leads its own process
    /// group (so a terminal's Ctrl-C reaches `launch` alone, which stops the children in order)
    /// and dies with `launch`.
    pub(super) fn spawn(
        name: String,
        prefix: &str,
        mut cmd: Command,
        pb: &ProgressBar,
    ) -> std::io::Result<Self> {
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        die_with_parent(&mut cmd);
        let mut child = cmd.spawn()?;
        let tail = Tail::default();
        let mut outs = Vec::new();
        if let Some(o) = child.stdout.take() {
            outs.extend(pipe_lines(&tail, o, prefix.to_string(), false, pb.clone()));
        }
        if let Some(e) = child.stderr.take() {
            outs.extend(pipe_lines(&tail, e, prefix.to_string(), true, pb.clone()));
        }
        Ok(Self {
            name,
            child,
            tail,
            outs,
        })
    }

    /// Its process id.
    pub(super) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Its exit status once it exited (the same status again after that).
    pub(super) fn try_wait(&mut self) -> std::io::Result<Option<ExitStatus>> {
        self.child.try_wait()
    }

    /// Sends `sig` if it was not reaped yet.
    pub(super) fn signal(&mut self, sig: libc::c_int) {
        if matches!(self.child.try_wait(), Ok(None)) {
            // SAFETY: plain syscall on the pid of our own child, which is not reaped yet, so
            // the pid cannot have been reused.
            unsafe { libc::kill(self.child.id() as libc::pid_t, sig) };
        }
    }

    /// Lets its output threads print what it wrote last (at most 2 s).
    pub(super) fn drain_output(&self) {
        drain_output([self]);
    }

    /// Its last lines, indented, for an error message.
    pub(super) fn tail(&self) -> String {
        self.drain_output();
        let lines = self.tail.lock().map(|t| t.clone()).unwrap_or_default();
        if lines.is_empty() {
            return format!("; {} wrote nothing", self.name);
        }
        let mut s = format!("; last lines of {}:", self.name);
        for l in lines {
            s.push_str("\n    ");
            s.push_str(&l);
        }
        s
    }

    /// The first of its last lines, newest first, that `f` picks something from.
    pub(super) fn find_line<T>(&self, f: impl FnMut(&String) -> Option<T>) -> Option<T> {
        self.tail
            .lock()
            .ok()
            .and_then(|t| t.iter().rev().find_map(f))
    }
}

/// Lets the output threads of `children` print what they wrote last (at most 2 s in all: a
/// grandchild may hold a pipe open).
pub(super) fn drain_output<'a>(children: impl IntoIterator<Item = &'a ChildProc>) {
    let outs: Vec<&thread::JoinHandle<()>> =
        children.into_iter().flat_map(|c| c.outs.iter()).collect();
    let t = Instant::now();
    while outs.iter().any(|h| !h.is_finished()) && t.elapsed() < Duration::from_secs(2) {
        thread::sleep(Duration::from_millis(10));
    }
}

/// Kills every child that is still running, with its process group, then reaps them all.
pub(super) fn kill_all(children: &mut [&mut ChildProc]) {
    for c in children.iter_mut() {
        let c = &mut c.child;
        if matches!(c.try_wait(), Ok(None)) {
            // The child leads its own process group: take its children along.
            // SAFETY: plain syscall; the group is our un-reaped child's.
            unsafe { libc::kill(-(c.id() as libc::pid_t), libc::SIGKILL) };
        }
        let _ = c.kill();
    }
    for c in children.iter_mut() {
        let _ = c.child.wait();
    }
}

fn signal_name(sig: i32) -> Option<&'static str> {
    Some(match sig {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGTERM => "SIGTERM",
        _ => return None,
    })
}

pub(super) fn describe(s: ExitStatus) -> String {
    match (s.code(), s.signal()) {
        (Some(c), _) => format!("exit status {c}"),
        (None, Some(sig)) => format!(
            "killed by signal {sig}{}{}",
            signal_name(sig)
                .map(|n| format!(" ({n})"))
                .unwrap_or_default(),
            if s.core_dumped() { ", core dumped" } else { "" }
        ),
        _ => s.to_string(),
    }
}

/// A thread copying `r` line by line to stdout (or stderr: `err`) behind `prefix`, keeping the
/// last lines in `tail`.
fn pipe_lines(
    tail: &Tail,
    r: impl Read + Send + 'static,
    prefix: String,
    err: bool,
    pb: ProgressBar,
) -> Option<thread::JoinHandle<()>> {
    let tail = tail.clone();
    thread::Builder::new()
        .name("hf-out".into())
        .spawn(move || {
            for line in BufReader::new(r).lines() {
                let Ok(line) = line else { break };
                if let Ok(mut t) = tail.lock() {
                    if t.len() == TAIL_LINES {
                        t.pop_front();
                    }
                    t.push_back(line.chars().take(500).collect());
                }
                pb.suspend(|| {
                    if err {
                        eprintln!("{prefix} {line}");
                    } else {
                        println!("{prefix} {line}");
                    }
                });
            }
        })
        .ok()
}

pub(super) fn free_ports(n: u32) -> anyhow::Result<Vec<u32>> {
    let ls: Vec<std::net::TcpListener> = (0..n)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0"))
        .collect::<Result<_, _>>()
        .context("picking ports for the trainers' TF servers")?;
    ls.iter()
        .map(|l| Ok(u32::from(l.local_addr()?.port())))
        .collect()
}
