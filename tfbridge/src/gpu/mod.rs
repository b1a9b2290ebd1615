//! GPU staging (feature `cuda`): batches from the ring into device memory.
//!
//! The trainer registers the ring mapping with the driver once ([`Stager::register`],
//! `cuMemHostRegister`), so each column is copied by DMA straight out of the ring slot
//! (`cuMemcpyHtoDAsync` on the stager's own stream), with no bounce through pageable memory.
//! Where the driver refuses the registration, each batch goes through a pinned bounce buffer
//! instead (one `memcpy`, then the same asynchronous copy). A batch becomes one device
//! allocation from a small pool ([`Staged`]); the host frame can be released as soon as the
//! copy's event completes ([`Staged::ready`]), not when the trainer drops the tensors.
//!
//! A device buffer goes back to the pool when the last tensor viewing it is dropped; the
//! consumer's stream at that moment is recorded ([`DeviceBuf::released_on`]) and the next copy
//! into that buffer waits for it, so a kernel still reading the old batch never sees the new one
//! (the contract of `torch.Tensor.record_stream`: work queued on other streams must be ordered by
//! the user).
//!
//! The driver is loaded at run time ([`Cuda::open`]): a build with this feature runs on hosts
//! without CUDA, where every entry point says "no CUDA device". [`Backend`] is the handful of
//! driver calls the stager makes, so the pool, the registration fallback and the event
//! bookkeeping are tested without a GPU against a host-memory fake.

mod cuda;
mod nvml;
#[cfg(test)]
mod tests;

use std::sync::{Arc, Mutex};

pub use cuda::{h2d_bandwidth, Cuda, H2dSource};
pub use nvml::{gpus, utilization, GpuInfo};

/// A device address.
pub type DevPtr = u64;

/// What can go wrong on the GPU path.
#[derive(Debug, thiserror::Error)]
pub enum GpuError {
    /// No driver library (`libcuda.so.1`) on this host, or no device.
    #[error("no CUDA device: {0}")]
    NoDevice(String),
    /// A driver call failed.
    #[error("CUDA {call} failed: {code}")]
    Call {
        /// The driver function.
        call: &'static str,
        /// The driver's error name.
        code: String,
    },
    /// NVML (GPU discovery) failed.
    #[error("NVML: {0}")]
    Nvml(String),
}

/// A CUDA event (opaque handle of the backend).
#[derive(Debug, PartialEq, Eq)]
pub struct Event(pub usize);

/// The driver calls the stager makes. [`Cuda`] is the real one.
///
/// # Safety
///
/// Implementations must honour each method's contract on pointers: `copy_h2d` reads `n` bytes at
/// `src` no later than the completion of the next event recorded on the staging stream.
pub unsafe trait Backend: Send + Sync + 'static {
    /// Device memory of `bytes`.
    fn alloc(&self, bytes: usize) -> Result<DevPtr, GpuError>;
    /// Frees what [`Backend::alloc`] returned, once no queued work uses it.
    fn free(&self, p: DevPtr);
    /// Page-locked host memory of `bytes` (a bounce buffer).
    fn alloc_pinned(&self, bytes: usize) -> Result<*mut u8, GpuError>;
    /// Frees what [`Backend::alloc_pinned`] returned.
    fn free_pinned(&self, p: *mut u8);
    /// Page-locks `[p, p + len)` (a mapping this process keeps for as long as it stays
    /// registered) for DMA. `Err` when the driver refuses.
    fn register(&self, p: *mut u8, len: usize) -> Result<(), GpuError>;
    /// Undoes [`Backend::register`].
    fn unregister(&self, p: *mut u8);
    /// Queues a copy of `n` bytes from host `src` to device `dst` on the staging stream.
    ///
    /// # Safety
    ///
    /// `src..src + n` must stay readable until an event recorded after this call completes;
    /// `dst..dst + n` must lie in one allocation.
    unsafe fn copy_h2d(&self, dst: DevPtr, src: *const u8, n: usize) -> Result<(), GpuError>;
    /// An event recorded on the staging stream (`stream == None`) or on a consumer's stream.
    fn record(&self, stream: Option<usize>) -> Result<Event, GpuError>;
    /// Whether the work before `e` is done (non-blocking).
    fn done(&self, e: &Event) -> Result<bool, GpuError>;
    /// Blocks the calling thread until `e` completes.
    fn wait(&self, e: &Event) -> Result<(), GpuError>;
    /// Makes later work on `stream` (`None`: the staging stream) wait for `e`.
    fn stream_wait(&self, stream: Option<usize>, e: &Event) -> Result<(), GpuError>;
    /// Releases `e` (work already waiting on it is unaffected).
    fn destroy(&self, e: Event);
    /// The staging stream's handle (for `__cuda_array_interface__`).
    fn stream(&self) -> usize;
    /// The device's ordinal.
    fn ordinal(&self) -> i32;
}

/// Rounds a device allocation up: whole MiB above 1 MiB (so that batches of slightly different
/// sizes reuse one buffer), 256 bytes below.
fn size_class(n: usize) -> usize {
    const MIB: usize = 1 << 20;
    if n > MIB {
        n.div_ceil(MIB) * MIB
    } else {
        n.max(1).div_ceil(256) * 256
    }
}

/// Column offsets inside a batch's buffer are aligned to this (what cuBLAS and cuDNN prefer).
pub const ALIGN: usize = 256;

/// Free device buffers kept for reuse; more are freed.
const KEEP_FREE: usize = 8;

struct FreeBuf {
    ptr: DevPtr,
    cap: usize,
    /// Events on the streams of the consumers that last used it.
    releases: Vec<Event>,
}

/// The device buffers of one stager.
struct Pool {
    be: Arc<dyn Backend>,
    free: Mutex<Vec<FreeBuf>>,
    counts: Mutex<PoolCounts>,
}

/// What the pool did (tests, metrics).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct PoolCounts {
    /// Device allocations made.
    pub allocs: u64,
    /// Buffers reused from the free list.
    pub reuses: u64,
    /// Device buffers alive (handed out or free).
    pub live: u64,
    /// Bytes of them.
    pub live_bytes: u64,
}

impl Pool {
    fn take(self: &Arc<Self>, bytes: usize) -> Result<Arc<DeviceBuf>, GpuError> {
        let found = {
            let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
            // The smallest buffer that fits, if it wastes at most half of itself.
            let best = free
                .iter()
                .enumerate()
                .filter(|(_, b)| b.cap >= bytes && b.cap <= 2 * size_class(bytes))
                .min_by_key(|(_, b)| b.cap)
                .map(|(i, _)| i);
            best.map(|i| free.swap_remove(i))
        };
        let (ptr, cap) = match found {
            Some(b) => {
                // The copy into it waits for the consumers that read it last.
                for e in b.releases {
                    let r = self.be.stream_wait(None, &e);
                    self.be.destroy(e);
                    r?;
                }
                self.counts().reuses += 1;
                (b.ptr, b.cap)
            }
            None => {
                let cap = size_class(bytes);
                let ptr = self.be.alloc(cap)?;
                let mut c = self.counts();
                c.allocs += 1;
                c.live += 1;
                c.live_bytes += cap as u64;
                (ptr, cap)
            }
        };
        Ok(Arc::new(DeviceBuf {
            ptr,
            cap,
            pool: Arc::clone(self),
            releases: Mutex::new(Vec::new()),
        }))
    }

    fn counts(&self) -> std::sync::MutexGuard<'_, PoolCounts> {
        self.counts.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn put(&self, b: FreeBuf) {
        let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        free.push(b);
        if free.len() > KEEP_FREE {
            // Free the largest: the working set is the recent sizes.
            let i = free
                .iter()
                .enumerate()
                .max_by_key(|(_, b)| b.cap)
                .map(|(i, _)| i)
                .unwrap_or(0);
            let b = free.swap_remove(i);
            drop(free);
            self.release(b);
        }
    }

    fn release(&self, b: FreeBuf) {
        for e in b.releases {
            // Freed memory must not be in use: wait for its last readers.
            let _ = self.be.wait(&e);
            self.be.destroy(e);
        }
        self.be.free(b.ptr);
        let mut c = self.counts();
        c.live -= 1;
        c.live_bytes -= b.cap as u64;
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        let free = std::mem::take(&mut *self.free.lock().unwrap_or_else(|e| e.into_inner()));
        for b in free {
            self.release(b);
        }
    }
}

/// One device allocation holding a staged batch. Shared by the batch's tensors; back to the
/// pool when the last one drops.
pub struct DeviceBuf {
    ptr: DevPtr,
    cap: usize,
    pool: Arc<Pool>,
    releases: Mutex<Vec<Event>>,
}

impl DeviceBuf {
    /// Device address of the first byte.
    pub fn ptr(&self) -> DevPtr {
        self.ptr
    }

    /// Bytes allocated.
    pub fn capacity(&self) -> usize {
        self.cap
    }

    /// A consumer that read this buffer on `stream` (a `CUstream` handle; `None`: the legacy
    /// default stream) let go of it: the next copy into the buffer waits for the work queued on
    /// that stream so far.
    pub fn released_on(&self, stream: Option<usize>) -> Result<(), GpuError> {
        let e = self.pool.be.record(Some(stream.unwrap_or(LEGACY_STREAM)))?;
        self.releases
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(e);
        Ok(())
    }
}

impl Drop for DeviceBuf {
    fn drop(&mut self) {
        let releases = std::mem::take(self.releases.get_mut().unwrap_or_else(|e| e.into_inner()));
        self.pool.put(FreeBuf {
            ptr: self.ptr,
            cap: self.cap,
            releases,
        });
    }
}

/// `CU_STREAM_LEGACY`: the default stream of DLPack's `stream=1`.
pub const LEGACY_STREAM: usize = 1;

/// An event that is destroyed with its last holder.
pub struct SharedEvent {
    be: Arc<dyn Backend>,
    event: Option<Event>,
}

impl SharedEvent {
    /// Whether the copy is done (non-blocking).
    pub fn done(&self) -> Result<bool, GpuError> {
        match &self.event {
            Some(e) => self.be.done(e),
            None => Ok(true),
        }
    }

    /// Blocks until the copy is done.
    pub fn wait(&self) -> Result<(), GpuError> {
        match &self.event {
            Some(e) => self.be.wait(e),
            None => Ok(()),
        }
    }

    /// Makes `stream` (a consumer's `CUstream`) wait for the copy, without blocking the host.
    pub fn order_before(&self, stream: usize) -> Result<(), GpuError> {
        match &self.event {
            Some(e) => self.be.stream_wait(Some(stream), e),
            None => Ok(()),
        }
    }
}

impl Drop for SharedEvent {
    fn drop(&mut self) {
        if let Some(e) = self.event.take() {
            self.be.destroy(e);
        }
    }
}

/// A batch copied (or being copied) to the device: one buffer, one offset per part, and the
/// event that completes with the copy.
pub struct Staged {
    buf: Arc<DeviceBuf>,
    offsets: Vec<usize>,
    event: Arc<SharedEvent>,
    bounce: Option<Bounce>,
    stager: Arc<StagerShared>,
    /// Whether the parts were read by DMA from registered memory.
    pub registered: bool,
}

impl Staged {
    /// Device address of part `i`.
    pub fn ptr(&self, i: usize) -> DevPtr {
        self.buf.ptr + self.offsets[i] as u64
    }

    /// The buffer (each tensor made from it holds a clone).
    pub fn buffer(&self) -> &Arc<DeviceBuf> {
        &self.buf
    }

    /// The copy's event (each tensor made from it holds a clone).
    pub fn event(&self) -> &Arc<SharedEvent> {
        &self.event
    }

    /// Whether the copy is done: then the host memory it read can be released.
    pub fn ready(&self) -> Result<bool, GpuError> {
        self.event.done()
    }

    /// Blocks until the copy is done.
    pub fn wait(&self) -> Result<(), GpuError> {
        self.event.wait()
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if let Some(b) = self.bounce.take() {
            // The bounce buffer may be reused only once the copy out of it is done.
            let _ = self.event.wait();
            self.stager.put_bounce(b);
        }
    }
}

/// A pinned host buffer for the fallback path.
struct Bounce {
    ptr: *mut u8,
    cap: usize,
}

// SAFETY: the pointer is to pinned memory owned by the stager's backend; one holder at a time.
unsafe impl Send for Bounce {}
// SAFETY: as above; the buffer is only written through `&mut` paths of its single holder.
unsafe impl Sync for Bounce {}

struct StagerShared {
    be: Arc<dyn Backend>,
    bounces: Mutex<Vec<Bounce>>,
}

impl StagerShared {
    fn put_bounce(&self, b: Bounce) {
        let mut v = self.bounces.lock().unwrap_or_else(|e| e.into_inner());
        if v.len() < 4 {
            v.push(b);
        } else {
            self.be.free_pinned(b.ptr);
        }
    }

    fn take_bounce(&self, n: usize) -> Result<Bounce, GpuError> {
        let mut v = self.bounces.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = v.iter().position(|b| b.cap >= n) {
            return Ok(v.swap_remove(i));
        }
        drop(v);
        let cap = size_class(n);
        Ok(Bounce {
            ptr: self.be.alloc_pinned(cap)?,
            cap,
        })
    }
}

impl Drop for StagerShared {
    fn drop(&mut self) {
        for b in self
            .bounces
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .drain(..)
        {
            self.be.free_pinned(b.ptr);
        }
    }
}

/// How the stager reads host memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostPath {
    /// Nothing registered yet: copies from pageable memory (the driver bounces them itself).
    Pageable,
    /// The ring mapping is registered: DMA straight from the ring.
    Registered,
    /// Registration was refused: each batch goes through a pinned bounce buffer.
    Bounce,
}

/// Copies batches from host memory (the ring) to the device. One per feed.
pub struct Stager {
    shared: Arc<StagerShared>,
    pool: Arc<Pool>,
    /// Registered ranges `(addr, len)`.
    registered: Vec<(usize, usize)>,
    path: HostPath,
    /// Why registration was refused, when it was.
    refused: Option<String>,
}

impl Stager {
    /// A stager on `be`.
    pub fn new(be: Arc<dyn Backend>) -> Stager {
        Stager {
            shared: Arc::new(StagerShared {
                be: Arc::clone(&be),
                bounces: Mutex::new(Vec::new()),
            }),
            pool: Arc::new(Pool {
                be,
                free: Mutex::new(Vec::new()),
                counts: Mutex::new(PoolCounts::default()),
            }),
            registered: Vec::new(),
            path: HostPath::Pageable,
            refused: None,
        }
    }

    /// Registers `[p, p + len)` (the ring mapping) for DMA. Where the driver refuses, later
    /// batches go through a pinned bounce buffer; the reason is kept ([`Stager::refused`]).
    ///
    /// # Safety
    ///
    /// The range must stay mapped until [`Stager::unregister_all`] or the stager drops.
    pub unsafe fn register(&mut self, p: *mut u8, len: usize) -> HostPath {
        if self.path == HostPath::Bounce {
            return self.path;
        }
        let (a, n) = (p as usize, len);
        if self.registered.iter().any(|&(b, m)| b == a && m == n) {
            return self.path;
        }
        match self.shared.be.register(p, len) {
            Ok(()) => {
                self.registered.push((a, n));
                self.path = HostPath::Registered;
            }
            Err(e) => {
                self.refused = Some(e.to_string());
                self.path = HostPath::Bounce;
            }
        }
        self.path
    }

    /// Goes through pinned bounce buffers without trying to register host memory (`why` is
    /// reported as [`Stager::refused`]): for hosts where pinning the ring is not wanted.
    pub fn use_bounce(&mut self, why: &str) {
        self.unregister_all();
        self.refused = Some(why.to_string());
        self.path = HostPath::Bounce;
    }

    /// Unregisters every range.
    pub fn unregister_all(&mut self) {
        if self.registered.is_empty() {
            return;
        }
        // Copies still queued may read the ranges: let them finish first.
        let be = &self.shared.be;
        if let Ok(e) = be.record(None) {
            let _ = be.wait(&e);
            be.destroy(e);
        }
        for (a, _) in self.registered.drain(..) {
            self.shared.be.unregister(a as *mut u8);
        }
    }

    /// How host memory is read now.
    pub fn path(&self) -> HostPath {
        self.path
    }

    /// Why the driver refused to register the ring, if it did.
    pub fn refused(&self) -> Option<&str> {
        self.refused.as_deref()
    }

    /// The pool's counts.
    pub fn pool_counts(&self) -> PoolCounts {
        *self.pool.counts()
    }

    /// The backend.
    pub fn backend(&self) -> &Arc<dyn Backend> {
        &self.shared.be
    }

    fn in_registered(&self, s: &[u8]) -> bool {
        let (a, n) = (s.as_ptr() as usize, s.len());
        self.registered
            .iter()
            .any(|&(b, m)| a >= b && a + n <= b + m)
    }

    /// Queues the copy of `parts` into one device buffer (each part at an [`ALIGN`]ed offset)
    /// and returns at once. The host bytes must stay untouched until [`Staged::ready`].
    pub fn stage(&self, parts: &[&[u8]]) -> Result<Staged, GpuError> {
        let mut offsets = Vec::with_capacity(parts.len());
        let mut total = 0usize;
        for p in parts {
            offsets.push(total);
            total += p.len().div_ceil(ALIGN) * ALIGN;
        }
        let buf = self.pool.take(total)?;
        let registered = !parts.is_empty() && parts.iter().all(|p| self.in_registered(p));
        let be = &self.shared.be;
        let mut bounce = None;
        if !registered && self.path == HostPath::Bounce && total > 0 {
            let b = self.shared.take_bounce(total)?;
            for (p, &o) in parts.iter().zip(&offsets) {
                // SAFETY: `b` holds `cap >= total` bytes, ours alone until the copy's event
                // completes (Staged's drop waits before returning it).
                unsafe { std::ptr::copy_nonoverlapping(p.as_ptr(), b.ptr.add(o), p.len()) };
            }
            // SAFETY: the bounce buffer outlives the copy (see above); `buf` has `total` bytes.
            unsafe { be.copy_h2d(buf.ptr, b.ptr, total)? };
            bounce = Some(b);
        } else {
            for (p, &o) in parts.iter().zip(&offsets) {
                if p.is_empty() {
                    continue;
                }
                // SAFETY: the caller keeps the parts untouched until the event completes; the
                // destination lies in `buf` (offsets sum to `total <= cap`).
                unsafe { be.copy_h2d(buf.ptr + o as u64, p.as_ptr(), p.len())? };
            }
        }
        let event = be.record(None)?;
        Ok(Staged {
            buf,
            offsets,
            event: Arc::new(SharedEvent {
                be: Arc::clone(be),
                event: Some(event),
            }),
            bounce,
            stager: Arc::clone(&self.shared),
            registered,
        })
    }
}

impl Drop for Stager {
    fn drop(&mut self) {
        self.unregister_all();
    }
}
