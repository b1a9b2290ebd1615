//! The job's child processes: [`Job`] holds them (the feeder first, then the trainers) and
//! kills and reaps them on every exit path; [`spawn`] starts one in its own process group,
//! dying with `launch`, its output prefixed and its last lines kept for the error that names
//! it. Also the private socket directory and the trainers' TF server ports.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
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
pub(super) type Tail = Arc<Mutex<VecDeque<String>>>;

/// Everything to clean up, on every exit path.
pub(super) struct Job {
    pub(super) dir: PathBuf,
    /// `(name, child, its output tail)`; the feeder first, then rank 0, 1, ...
    pub(super) children: Vec<(String, Child, Tail)>,
    /// Threads copying the children's output, with the index of their child.
    pub(super) outs: Vec<(usize, thread::JoinHandle<()>)>,
}

impl Job {
    /// Lets the output threads of child `i` (all children: `None`) print what it wrote last
    /// (at most 2 s: a grandchild may hold the pipe open).
    pub(super) fn drain_output(&mut self, i: Option<usize>) {
        let t = Instant::now();
        while self
            .outs
            .iter()
            .any(|(k, h)| i.is_none_or(|i| i == *k) && !h.is_finished())
            && t.elapsed() < Duration::from_secs(2)
        {
            thread::sleep(Duration::from_millis(10));
        }
    }

    /// The last lines child `i` wrote, indented, for an error message.
    pub(super) fn tail(&mut self, i: usize) -> String {
        self.drain_output(Some(i));
        let (name, _, tail) = &self.children[i];
        let lines = tail.lock().map(|t| t.clone()).unwrap_or_default();
        if lines.is_empty() {
            return format!("; {name} wrote nothing");
        }
        let mut s = format!("; last lines of {name}:");
        for l in lines {
            s.push_str("\n    ");
            s.push_str(&l);
        }
        s
    }

    /// Sends `sig` to child `i` if it was not reaped yet.
    pub(super) fn signal(&mut self, i: usize, sig: libc::c_int) {
        let c = &mut self.children[i].1;
        if matches!(c.try_wait(), Ok(None)) {
            // SAFETY: plain syscall on the pid of our own child, which is not reaped yet, so
            // the pid cannot have been reused.
            unsafe { libc::kill(c.id() as libc::pid_t, sig) };
        }
    }
}

impl Drop for Job {
    fn drop(&mut self) {
        for (_, c, _) in &mut self.children {
            if matches!(c.try_wait(), Ok(None)) {
                // The child leads its own process group: take its children along.
                // SAFETY: plain syscall; the group is our un-reaped child's.
                unsafe { libc::kill(-(c.id() as libc::pid_t), libc::SIGKILL) };
            }
            let _ = c.kill();
        }
        for (_, c, _) in &mut self.children {
            let _ = c.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
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

fn pipe_lines(
    job: &mut Job,
    i: usize,
    r: impl Read + Send + 'static,
    prefix: String,
    err: bool,
    pb: ProgressBar,
) {
    let tail = job.children[i].2.clone();
    let h = thread::Builder::new().name("hf-out".into()).spawn(move || {
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
    });
    if let Ok(h) = h {
        job.outs.push((i, h));
    }
}

/// Starts a child of `job` with its output prefixed and kept; it leads its own process group
/// (so a terminal's Ctrl-C reaches `launch` alone, which stops the children in order) and dies
/// with `launch`.
pub(super) fn spawn(
    job: &mut Job,
    name: String,
    prefix: String,
    cmd: Command,
    pb: &ProgressBar,
) -> std::io::Result<u32> {
    spawn_at(job, None, name, prefix, cmd, pb)
}

/// [`spawn`] into child slot `slot` (replacing a child that was reaped), or a new slot.
pub(super) fn spawn_at(
    job: &mut Job,
    slot: Option<usize>,
    name: String,
    prefix: String,
    mut cmd: Command,
    pb: &ProgressBar,
) -> std::io::Result<u32> {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    die_with_parent(&mut cmd);
    let mut c = cmd.spawn()?;
    let pid = c.id();
    let (o, e) = (c.stdout.take(), c.stderr.take());
    let entry = (name, c, Arc::new(Mutex::new(VecDeque::new())));
    let i = match slot {
        Some(i) => {
            job.children[i] = entry;
            i
        }
        None => {
            job.children.push(entry);
            job.children.len() - 1
        }
    };
    if let Some(o) = o {
        pipe_lines(job, i, o, prefix.clone(), false, pb.clone());
    }
    if let Some(e) = e {
        pipe_lines(job, i, e, prefix, true, pb.clone());
    }
    Ok(pid)
}

/// A private directory for the job's sockets: `hydrofeed-launch-<pid>-<random>` under
/// `$XDG_RUNTIME_DIR` (else the temporary directory), created 0700 by this call: a directory
/// someone else made beforehand, at a predictable name, is never used.
pub fn private_run_dir(prefix: &str) -> anyhow::Result<PathBuf> {
    use rand::RngCore;
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    let base = std::env::var_os("XDG_RUNTIME_DIR")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute() && p.is_dir())
        .unwrap_or_else(std::env::temp_dir);
    for _ in 0..16 {
        let dir = base.join(format!(
            "{prefix}-{}-{:08x}",
            std::process::id(),
            rand::rng().next_u32()
        ));
        match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => {
                let m = std::fs::symlink_metadata(&dir)
                    .with_context(|| format!("{}", dir.display()))?;
                // SAFETY: getuid never fails and has no preconditions.
                let uid = unsafe { libc::getuid() };
                anyhow::ensure!(
                    m.is_dir() && m.uid() == uid && m.mode() & 0o077 == 0,
                    "{}: not a private directory of this user",
                    dir.display()
                );
                return Ok(dir);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e).with_context(|| format!("creating {}", dir.display())),
        }
    }
    bail!(
        "could not create a private directory under {}",
        base.display()
    )
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
