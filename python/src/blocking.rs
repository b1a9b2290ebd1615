//! The one chokepoint for blocking calls: release the GIL, wake every [`TICK`] to run Python
//! signal handlers (Ctrl-C raises `KeyboardInterrupt`), keep an overall deadline, and refuse
//! use in a forked child.
//!
//! [`wait`] drives a step that blocks at most about a tick (a ring wait, an attach attempt).
//! A call that blocks longer and cannot be cut into steps (an HDFS listing, a gRPC call to
//! the coordinator, decoding the next batch of a file) runs on a thread of its own: [`call`]
//! for a one-shot call, [`spawn`] and [`Pending::wait`] when an interrupted call's result must
//! still be collected later. [`sleep`] is a pause that answers Ctrl-C.

use std::sync::{mpsc, Mutex};
use std::time::{Duration, Instant};

use pyo3::prelude::*;

use crate::error::{self, FeedTimeoutError, HydrofeedError};

/// How long one wait lasts before signals are checked again.
pub const TICK: Duration = Duration::from_millis(100);

/// The deadline of a wait for something that has a deadline of its own (a thread's call).
const FOREVER: Duration = Duration::MAX;

/// `timeout` from now. A timeout too large for an Instant waits "forever" (a century), it does
/// not panic.
fn deadline(timeout: Duration) -> Instant {
    let now = Instant::now();
    now.checked_add(timeout)
        .unwrap_or_else(|| now + Duration::from_secs(100 * 365 * 24 * 3600))
}

/// The outcome of one short wait.
pub enum Step<T, E> {
    /// Done.
    Ready(T),
    /// Nothing yet: wait again.
    Again,
    /// Failed.
    Failed(E),
}

/// Runs `step` (which blocks at most about [`TICK`]) with the GIL released until it is ready,
/// fails, Python raises a signal exception, or `timeout` passes (`FeedTimeoutError` naming
/// `what`).
pub fn wait<T, E, F>(
    py: Python<'_>,
    timeout: Duration,
    what: &str,
    mut step: F,
) -> PyResult<Result<T, E>>
where
    F: FnMut() -> Step<T, E> + Send,
    T: Send,
    E: Send,
{
    let deadline = deadline(timeout);
    loop {
        match py.detach(&mut step) {
            Step::Ready(t) => return Ok(Ok(t)),
            Step::Failed(e) => return Ok(Err(e)),
            Step::Again => {}
        }
        py.check_signals()?;
        if Instant::now() >= deadline {
            return Err(FeedTimeoutError::new_err(format!(
                "timed out after {:.1}s waiting for {what}",
                timeout.as_secs_f64()
            )));
        }
    }
}

/// A call running on a short-lived thread of its own (named `hf-blocking`); [`Pending::wait`]
/// collects its result.
pub struct Pending<T> {
    /// In a mutex only so that a wait step, which runs with the GIL released and so must be
    /// `Send`, can borrow it (a receiver is not `Sync`); nothing else ever takes it.
    rx: Mutex<mpsc::Receiver<T>>,
    what: String,
}

/// Starts `f` (which may block as long as it likes: it is expected to have a deadline of its
/// own) on a thread of its own; `what` names it in errors. Wait for it with [`Pending::wait`].
pub fn spawn<T, F>(what: &str, f: F) -> PyResult<Pending<T>>
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    let (tx, rx) = mpsc::sync_channel(1);
    std::thread::Builder::new()
        .name("hf-blocking".into())
        .spawn(move || {
            // Nobody waits any more when the caller was interrupted and dropped the Pending:
            // the result is dropped.
            let _ = tx.send(f());
        })
        .map_err(|e| HydrofeedError::new_err(format!("cannot start a thread for {what}: {e}")))?;
    Ok(Pending {
        rx: Mutex::new(rx),
        what: what.to_string(),
    })
}

impl<T: Send> Pending<T> {
    /// Waits for the call's result with the GIL released, running Python's signal handlers
    /// every [`TICK`]. When one raises (Ctrl-C: `KeyboardInterrupt`), that exception is
    /// returned at once and the call goes on: waiting again collects its result, dropping the
    /// `Pending` drops it when it comes.
    pub fn wait(&self, py: Python<'_>) -> PyResult<T> {
        let r = wait(py, FOREVER, &self.what, || {
            let rx = self.rx.lock().unwrap_or_else(|e| e.into_inner());
            match rx.recv_timeout(TICK) {
                Ok(t) => Step::Ready(t),
                Err(mpsc::RecvTimeoutError::Timeout) => Step::Again,
                Err(mpsc::RecvTimeoutError::Disconnected) => Step::Failed(()),
            }
        })?;
        r.map_err(|()| {
            error::internal(format!(
                "{} ended without a result (it panicked: see stderr)",
                self.what
            ))
        })
    }
}

/// Runs `f`, a one-shot blocking call, on a short-lived thread of its own and waits for its
/// result with the GIL released, answering Ctrl-C every [`TICK`]: a `KeyboardInterrupt`
/// propagates at once while the thread finishes in the background (its result is dropped).
/// `f` should have a deadline of its own; `what` names it in errors.
pub fn call<T, F>(py: Python<'_>, what: &str, f: F) -> PyResult<T>
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    spawn(what, f)?.wait(py)
}

/// Pauses for `d` with the GIL released, running Python's signal handlers at least every
/// [`TICK`] and once at the end (so a loop of short pauses answers Ctrl-C too).
pub fn sleep(py: Python<'_>, d: Duration) -> PyResult<()> {
    let end = deadline(d);
    loop {
        py.detach(|| std::thread::sleep(end.saturating_duration_since(Instant::now()).min(TICK)));
        py.check_signals()?;
        if Instant::now() >= end {
            return Ok(());
        }
    }
}

/// The pid that made an object; use in another process is refused.
#[derive(Debug, Clone, Copy)]
pub struct Owner(u32);

impl Owner {
    /// Records the current process.
    pub fn here() -> Self {
        Self(std::process::id())
    }

    /// Errors when called in another process than the one that made the object (after
    /// `fork()`: the child shares the parent's ring mapping and socket, and reading from both
    /// would corrupt the feed).
    pub fn check(&self, what: &str) -> PyResult<()> {
        let now = std::process::id();
        if now != self.0 {
            return Err(HydrofeedError::new_err(format!(
                "this {what} was created in process {} and cannot be used in process {now} \
                 (a fork() child, e.g. a PySpark or multiprocessing worker): create a new {what} \
                 in the child",
                self.0
            )));
        }
        Ok(())
    }
}
