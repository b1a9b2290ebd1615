//! Synchronisation shim: atomics, `Mutex` and the futex wait/wake from `core`/`std`/`rustix`,
//! or from loom under `cfg(loom)` so that `tests/loom_ring.rs` can model the protocol.
//!
//! Under loom the futex is modelled as a yield: the wait returns at once and the caller's loop
//! re-checks its condition, so loom explores the data protocol (head/tail/closed flags and the
//! release queue) with every interleaving; the wake-up protocol itself (waiting flags, `SeqCst`
//! fences) is exercised by the real-futex tests.

// The one place std's atomics are named in this crate (`ipc/clippy.toml` refuses them
// elsewhere).
#[cfg(not(loom))]
#[allow(clippy::disallowed_types)]
pub(crate) use std::sync::atomic::{fence, AtomicPtr, AtomicU32, AtomicU64, Ordering};
#[cfg(not(loom))]
pub(crate) use std::sync::{Mutex, MutexGuard};

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{fence, AtomicPtr, AtomicU32, AtomicU64, Ordering};
#[cfg(loom)]
pub(crate) use loom::sync::{Mutex, MutexGuard};

use std::time::Duration;

/// Locks a mutex, ignoring poisoning (the protected state stays consistent: every critical
/// section is a few plain assignments that cannot panic half-way).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    #[cfg(not(loom))]
    {
        m.lock().unwrap_or_else(|e| e.into_inner())
    }
    #[cfg(loom)]
    {
        m.lock().unwrap()
    }
}

/// Blocks while `*word == expected`, at most `timeout`. Spurious returns are allowed; callers
/// re-check their condition. The futex is shared (not `FUTEX_PRIVATE`): the word lives in a
/// `MAP_SHARED` mapping seen by two processes.
#[cfg(not(loom))]
pub(crate) fn futex_wait(word: &AtomicU32, expected: u32, timeout: Duration) {
    use rustix::thread::futex;
    let ts = rustix::time::Timespec {
        tv_sec: timeout.as_secs() as i64,
        tv_nsec: timeout.subsec_nanos() as _,
    };
    // EAGAIN (value changed), ETIMEDOUT and EINTR all mean "re-check"; nothing else can occur
    // for a valid, aligned word.
    let _ = futex::wait(word, futex::Flags::empty(), expected, Some(&ts));
}

/// Wakes every waiter on `word` (at most one per side exists).
#[cfg(not(loom))]
pub(crate) fn futex_wake(word: &AtomicU32) {
    use rustix::thread::futex;
    let _ = futex::wake(word, futex::Flags::empty(), i32::MAX as u32);
}

/// loom model of the futex wait: yield to the other modelled threads.
#[cfg(loom)]
pub(crate) fn futex_wait(word: &AtomicU32, expected: u32, _timeout: Duration) {
    if word.load(Ordering::SeqCst) == expected {
        loom::thread::yield_now();
    }
}

/// loom model of the futex wake: nothing to do, waiters re-check after their yield.
#[cfg(loom)]
pub(crate) fn futex_wake(_word: &AtomicU32) {}

/// One step of the short spin before a futex wait.
pub(crate) fn spin_hint() {
    #[cfg(not(loom))]
    std::hint::spin_loop();
    #[cfg(loom)]
    loom::thread::yield_now();
}
