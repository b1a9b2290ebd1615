//! The one chokepoint for blocking calls: release the GIL, wake every [`TICK`] to run Python
//! signal handlers (Ctrl-C raises `KeyboardInterrupt`), keep an overall deadline, and refuse
//! use in a forked child.

use std::time::{Duration, Instant};

use pyo3::prelude::*;

use crate::error::{FeedTimeoutError, HydrofeedError};

/// How long one wait lasts before signals are checked again.
pub const TICK: Duration = Duration::from_millis(100);

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
    let now = Instant::now();
    // A timeout too large for an Instant waits "forever" (a century), it does not panic.
    let deadline = now
        .checked_add(timeout)
        .unwrap_or_else(|| now + Duration::from_secs(100 * 365 * 24 * 3600));
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
