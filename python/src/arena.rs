//! A cache of pymalloc's freed arenas in the trainer: rows made into objects batch after batch
//! (`unpickle_frame`) reuse the memory of the batches dropped before them instead of taking
//! fresh pages from the kernel.
//!
//! CPython's small-object allocator takes its memory in arenas (1 MiB since 3.10) and hands an
//! arena back to the kernel (`munmap`) as soon as every object in it is freed, keeping one empty
//! arena at most. A trainer that takes batches of list rows (1,024 rows of 784 floats: 19 MB of
//! float objects), dropping each as it makes the next, so maps, faults in (zeroed by the kernel)
//! and unmaps two pages a row: about a quarter of the time to make such rows
//! (`benches/results/spark_arena`). [`install`] puts a cache in front of the interpreter's arena
//! allocator (`PyObject_SetArenaAllocator`, the documented hook): a freed arena is kept, up to
//! [`cache_bytes`], and handed out again before a new one is asked for. What the cache keeps
//! stays resident, like the free memory of any allocator that does not return it at once.
//!
//! `HYDROFEED_ARENA_CACHE_MB` sets the cache's size (`0`: not installed). The cache wraps the
//! allocator it finds, so arenas are made and freed by that one alone; the hook is resolved at
//! run time, so an interpreter without it (or with pymalloc off, `PYTHONMALLOC=malloc`) runs as
//! before.

use std::ffi::c_void;
use std::sync::{Mutex, Once};

use pyo3::prelude::*;

type AllocFn = unsafe extern "C" fn(*mut c_void, usize) -> *mut c_void;
type FreeFn = unsafe extern "C" fn(*mut c_void, *mut c_void, usize);

/// `PyObjectArenaAllocator` (CPython's `cpython/objimpl.h`, unchanged since 3.4).
#[repr(C)]
struct ArenaAllocator {
    ctx: *mut c_void,
    alloc: Option<AllocFn>,
    free: Option<FreeFn>,
}

type GetSet = unsafe extern "C" fn(*mut ArenaAllocator);

/// The environment variable that sets the cache's size in MiB.
pub const ENV: &str = "HYDROFEED_ARENA_CACHE_MB";

/// The cache's size where [`ENV`] does not say: a few batches of rows made into objects.
const DEFAULT_MB: usize = 64;

struct Cache {
    /// The allocator the cache wraps (its context and functions): every arena is made and
    /// freed by it.
    ctx: *mut c_void,
    alloc: AllocFn,
    free: FreeFn,
    /// Freed arenas kept, with their sizes.
    kept: Vec<(usize, usize)>,
    kept_bytes: usize,
    cap_bytes: usize,
}

// SAFETY: the raw pointers are the wrapped allocator's context and arena addresses; they are
// only used under the mutex, by the allocator's own functions.
unsafe impl Send for Cache {}

static CACHE: Mutex<Option<Cache>> = Mutex::new(None);
static INSTALL: Once = Once::new();

/// The cache's size in bytes: [`ENV`] in MiB, or 64 MiB.
pub fn cache_bytes() -> usize {
    std::env::var(ENV)
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .unwrap_or(DEFAULT_MB)
        .saturating_mul(1 << 20)
}

unsafe extern "C" fn alloc(_ctx: *mut c_void, size: usize) -> *mut c_void {
    let mut guard = CACHE.lock().unwrap_or_else(|p| p.into_inner());
    let Some(c) = guard.as_mut() else {
        return std::ptr::null_mut();
    };
    if let Some(i) = c.kept.iter().rposition(|&(_, s)| s == size) {
        let (addr, _) = c.kept.swap_remove(i);
        c.kept_bytes -= size;
        return addr as *mut c_void;
    }
    // SAFETY: the wrapped allocator's own function and context, as CPython would call it.
    unsafe { (c.alloc)(c.ctx, size) }
}

unsafe extern "C" fn free(_ctx: *mut c_void, ptr: *mut c_void, size: usize) {
    let mut guard = CACHE.lock().unwrap_or_else(|p| p.into_inner());
    let Some(c) = guard.as_mut() else {
        return;
    };
    if c.kept_bytes + size <= c.cap_bytes && c.kept.try_reserve(1).is_ok() {
        c.kept.push((ptr as usize, size));
        c.kept_bytes += size;
        return;
    }
    // SAFETY: `ptr` was made by the wrapped allocator (the cache makes none of its own).
    unsafe { (c.free)(c.ctx, ptr, size) }
}

/// Looks up one of the interpreter's functions by name; None where it has none.
fn symbol(name: &std::ffi::CStr) -> Option<GetSet> {
    // SAFETY: `dlsym` with `RTLD_DEFAULT` searches the loaded objects; a non-null result is the
    // address of the named function, whose signature is CPython's.
    let p = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
    // SAFETY: as above: a non-null address of a function of that signature.
    (!p.is_null()).then(|| unsafe { std::mem::transmute::<*mut c_void, GetSet>(p) })
}

/// Puts the cache in front of the interpreter's arena allocator, once per process (a later call
/// does nothing). The caller holds the GIL, as the allocator's hooks require.
pub fn install() {
    INSTALL.call_once(|| {
        let cap_bytes = cache_bytes();
        if cap_bytes == 0 {
            return;
        }
        let (Some(get), Some(set)) = (
            symbol(c"PyObject_GetArenaAllocator"),
            symbol(c"PyObject_SetArenaAllocator"),
        ) else {
            return;
        };
        let mut inner = ArenaAllocator {
            ctx: std::ptr::null_mut(),
            alloc: None,
            free: None,
        };
        // SAFETY: the GIL is held; CPython fills the struct with its current allocator.
        unsafe { get(&mut inner) };
        let (Some(alloc_inner), Some(free_inner)) = (inner.alloc, inner.free) else {
            return;
        };
        *CACHE.lock().unwrap_or_else(|p| p.into_inner()) = Some(Cache {
            ctx: inner.ctx,
            alloc: alloc_inner,
            free: free_inner,
            kept: Vec::with_capacity(cap_bytes >> 18),
            kept_bytes: 0,
            cap_bytes,
        });
        let mut ours = ArenaAllocator {
            ctx: std::ptr::null_mut(),
            alloc: Some(alloc),
            free: Some(free),
        };
        // SAFETY: the GIL is held; CPython copies the struct. Arenas made before this call are
        // freed through `free`, which keeps them or hands them to the allocator that made them.
        unsafe { set(&mut ours) };
    });
}

/// `(installed, kept_bytes)`: whether the cache that `unpickle_frame` puts in front of the
/// interpreter's arena allocator is in place, and the bytes of freed arenas it holds now.
#[pyfunction]
pub fn arena_cache() -> (bool, usize) {
    let guard = CACHE.lock().unwrap_or_else(|p| p.into_inner());
    (guard.is_some(), guard.as_ref().map_or(0, |c| c.kept_bytes))
}
