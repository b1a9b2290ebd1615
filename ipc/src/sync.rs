//! Synchronisation shim: atomics, `Mutex` and the futex wait/wake from `core`/`std`/`rustix`,
//! or from loom under `cfg(loom)` so that `tests/loom_ring.rs` can model the protocol.
//!
//! Under loom the futex is modelled as a yield: the wait returns at once and the caller's loop
//! re-checks its condition, so loom explores the data protocol (head/tail/closed flags and the
//! release queue) with every interleaving; the wake-up protocol itself (waiting flags, `SeqCst`
//! fences) is exercised by the real-futex tests.

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{fence, Ordering};
#[cfg(not(loom))]
pub(crate) use std::sync::{Mutex, MutexGuard};

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{fence, Ordering};
#[cfg(loom)]
pub(crate) use loom::sync::{Mutex, MutexGuard};

use std::time::Duration;

/// The atomics the crate uses: `std`'s, or loom's under `cfg(loom)`. This is the one place
/// either is named (`ipc/clippy.toml` refuses std's atomics everywhere else), so loom's model
/// covers every atomic of the ring. `repr(transparent)`: the shared-memory layout is that of
/// the wrapped atomic.
mod atomics {
    #![allow(clippy::disallowed_types)]

    use super::Ordering;
    #[cfg(loom)]
    use loom::sync::atomic as imp;
    #[cfg(not(loom))]
    use std::sync::atomic as imp;

    macro_rules! atomic {
        ($name:ident, $t:ty) => {
            #[doc = concat!("`", stringify!($name), "` of std, or of loom under `cfg(loom)`.")]
            #[repr(transparent)]
            #[derive(Debug)]
            // `pub` for the fields of `layout`'s public structs; unnameable outside the crate.
            pub struct $name(pub(super) imp::$name);

            #[allow(dead_code)]
            impl $name {
                /// A new atomic holding `v`.
                pub fn new(v: $t) -> Self {
                    Self(imp::$name::new(v))
                }
                /// `load` of the wrapped atomic.
                pub fn load(&self, o: Ordering) -> $t {
                    self.0.load(o)
                }
                /// `store` of the wrapped atomic.
                pub fn store(&self, v: $t, o: Ordering) {
                    self.0.store(v, o)
                }
                /// `fetch_add` of the wrapped atomic.
                pub fn fetch_add(&self, v: $t, o: Ordering) -> $t {
                    self.0.fetch_add(v, o)
                }
                /// `fetch_max` of the wrapped atomic.
                pub fn fetch_max(&self, v: $t, o: Ordering) -> $t {
                    self.0.fetch_max(v, o)
                }
            }
        };
    }
    atomic!(AtomicU32, u32);
    atomic!(AtomicU64, u64);

    /// `AtomicPtr` of std, or of loom under `cfg(loom)`.
    #[repr(transparent)]
    #[derive(Debug)]
    pub(crate) struct AtomicPtr<T>(imp::AtomicPtr<T>);

    impl<T> AtomicPtr<T> {
        pub(crate) fn new(p: *mut T) -> Self {
            Self(imp::AtomicPtr::new(p))
        }
        pub(crate) fn load(&self, o: Ordering) -> *mut T {
            self.0.load(o)
        }
        pub(crate) fn store(&self, p: *mut T, o: Ordering) {
            self.0.store(p, o)
        }
    }
}
pub(crate) use atomics::{AtomicPtr, AtomicU32, AtomicU64};

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
    let _ = futex::wait(&word.0, futex::Flags::empty(), expected, Some(&ts));
}

/// Wakes every waiter on `word` (at most one per side exists).
#[cfg(not(loom))]
pub(crate) fn futex_wake(word: &AtomicU32) {
    use rustix::thread::futex;
    let _ = futex::wake(&word.0, futex::Flags::empty(), i32::MAX as u32);
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
