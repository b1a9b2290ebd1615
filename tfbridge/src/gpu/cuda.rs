//! The CUDA driver API as a [`Backend`], loaded at run time (cudarc's dynamic loading): no CUDA
//! toolkit to build, and a clear [`GpuError::NoDevice`] on hosts without a driver or a GPU.

use std::ffi::c_void;
use std::mem::MaybeUninit;
use std::time::Instant;

use cudarc::driver::sys::{self, CUcontext, CUdevice, CUevent, CUstream};

use super::{Backend, DevPtr, Event, GpuError};

fn call(name: &'static str, r: sys::CUresult) -> Result<(), GpuError> {
    if r == sys::CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(GpuError::Call {
            call: name,
            code: format!("{r:?}"),
        })
    }
}

/// One device's primary context and a non-blocking staging stream.
pub struct Cuda {
    ordinal: i32,
    dev: CUdevice,
    ctx: CUcontext,
    stream: CUstream,
    name: String,
}

// SAFETY: a primary context and a stream may be used from any thread once made current there
// (every method does so first); the handles are plain driver handles.
unsafe impl Send for Cuda {}
// SAFETY: as above; the driver API is thread-safe.
unsafe impl Sync for Cuda {}

impl Cuda {
    /// Opens device `ordinal` (as numbered under `CUDA_VISIBLE_DEVICES`).
    pub fn open(ordinal: i32) -> Result<Cuda, GpuError> {
        // SAFETY: only tries to dlopen the driver library.
        if !unsafe { sys::is_culib_present() } {
            return Err(GpuError::NoDevice(
                "the CUDA driver library (libcuda.so.1) is not installed on this host".into(),
            ));
        }
        // SAFETY: plain driver calls with out-pointers to locals.
        unsafe {
            let r = sys::cuInit(0);
            if r != sys::CUresult::CUDA_SUCCESS {
                return Err(GpuError::NoDevice(format!(
                    "the CUDA driver found no usable GPU (cuInit: {r:?})"
                )));
            }
            let mut count = 0;
            call("cuDeviceGetCount", sys::cuDeviceGetCount(&mut count))?;
            if ordinal < 0 || ordinal >= count {
                return Err(GpuError::NoDevice(format!(
                    "cuda:{ordinal} asked for, {count} device(s) visible (CUDA_VISIBLE_DEVICES={})",
                    std::env::var("CUDA_VISIBLE_DEVICES").unwrap_or_else(|_| "unset".into())
                )));
            }
            let mut dev = MaybeUninit::uninit();
            call("cuDeviceGet", sys::cuDeviceGet(dev.as_mut_ptr(), ordinal))?;
            let dev = dev.assume_init();
            let mut ctx = MaybeUninit::uninit();
            call(
                "cuDevicePrimaryCtxRetain",
                sys::cuDevicePrimaryCtxRetain(ctx.as_mut_ptr(), dev),
            )?;
            let ctx = ctx.assume_init();
            call("cuCtxSetCurrent", sys::cuCtxSetCurrent(ctx))?;
            let mut stream = MaybeUninit::uninit();
            call(
                "cuStreamCreate",
                sys::cuStreamCreate(
                    stream.as_mut_ptr(),
                    sys::CUstream_flags::CU_STREAM_NON_BLOCKING as u32,
                ),
            )?;
            let mut name = [0 as std::ffi::c_char; 128];
            let _ = sys::cuDeviceGetName(name.as_mut_ptr(), name.len() as i32, dev);
            let name = std::ffi::CStr::from_ptr(name.as_ptr())
                .to_string_lossy()
                .into_owned();
            Ok(Cuda {
                ordinal,
                dev,
                ctx,
                stream: stream.assume_init(),
                name,
            })
        }
    }

    /// The device's name (`NVIDIA H100 80GB HBM3`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Makes this device's context current on the calling thread.
    fn bind(&self) -> Result<(), GpuError> {
        // SAFETY: a live primary context.
        call("cuCtxSetCurrent", unsafe { sys::cuCtxSetCurrent(self.ctx) })
    }

    fn timed_event(&self) -> Result<CUevent, GpuError> {
        let mut e = MaybeUninit::uninit();
        // SAFETY: out-pointer to a local.
        unsafe {
            call(
                "cuEventCreate",
                sys::cuEventCreate(e.as_mut_ptr(), sys::CUevent_flags::CU_EVENT_DEFAULT as u32),
            )?;
            Ok(e.assume_init())
        }
    }
}

impl Drop for Cuda {
    fn drop(&mut self) {
        // SAFETY: handles made in `open`, released once.
        unsafe {
            let _ = sys::cuCtxSetCurrent(self.ctx);
            let _ = sys::cuStreamSynchronize(self.stream);
            let _ = sys::cuStreamDestroy_v2(self.stream);
            let _ = sys::cuDevicePrimaryCtxRelease_v2(self.dev);
        }
    }
}

fn stream_of(s: Option<usize>, own: CUstream) -> CUstream {
    match s {
        None => own,
        Some(h) => h as CUstream,
    }
}

// SAFETY: every call below passes pointers the caller vouched for (see the trait's contract)
// and binds the context first.
unsafe impl Backend for Cuda {
    fn alloc(&self, bytes: usize) -> Result<DevPtr, GpuError> {
        self.bind()?;
        let mut p = 0;
        // SAFETY: out-pointer to a local.
        call("cuMemAlloc", unsafe { sys::cuMemAlloc_v2(&mut p, bytes) })?;
        Ok(p)
    }

    fn free(&self, p: DevPtr) {
        if self.bind().is_ok() {
            // SAFETY: `p` came from `alloc`; the pool waited for its readers.
            let _ = unsafe { sys::cuMemFree_v2(p) };
        }
    }

    fn alloc_pinned(&self, bytes: usize) -> Result<*mut u8, GpuError> {
        self.bind()?;
        let mut p: *mut c_void = std::ptr::null_mut();
        // SAFETY: out-pointer to a local.
        call("cuMemHostAlloc", unsafe {
            sys::cuMemHostAlloc(&mut p, bytes, sys::CU_MEMHOSTALLOC_PORTABLE)
        })?;
        Ok(p.cast())
    }

    fn free_pinned(&self, p: *mut u8) {
        if self.bind().is_ok() {
            // SAFETY: `p` came from `alloc_pinned`.
            let _ = unsafe { sys::cuMemFreeHost(p.cast()) };
        }
    }

    fn register(&self, p: *mut u8, len: usize) -> Result<(), GpuError> {
        self.bind()?;
        // SAFETY: the caller keeps `[p, p + len)` mapped while registered.
        let r = call("cuMemHostRegister", unsafe {
            sys::cuMemHostRegister_v2(p.cast(), len, sys::CU_MEMHOSTREGISTER_PORTABLE)
        });
        if r.is_ok() {
            return r;
        }
        // A mapping the driver may not pin for writing can still be pinned read-only (the copies
        // only read it).
        // SAFETY: as above.
        call("cuMemHostRegister", unsafe {
            sys::cuMemHostRegister_v2(
                p.cast(),
                len,
                sys::CU_MEMHOSTREGISTER_PORTABLE | sys::CU_MEMHOSTREGISTER_READ_ONLY,
            )
        })
        .or(r)
    }

    fn unregister(&self, p: *mut u8) {
        if self.bind().is_ok() {
            // SAFETY: `p` was registered by `register`.
            let _ = unsafe { sys::cuMemHostUnregister(p.cast()) };
        }
    }

    unsafe fn copy_h2d(&self, dst: DevPtr, src: *const u8, n: usize) -> Result<(), GpuError> {
        self.bind()?;
        // SAFETY: the caller's contract (trait docs).
        call("cuMemcpyHtoDAsync", unsafe {
            sys::cuMemcpyHtoDAsync_v2(dst, src.cast(), n, self.stream)
        })
    }

    fn record(&self, stream: Option<usize>) -> Result<Event, GpuError> {
        self.bind()?;
        let mut e = MaybeUninit::uninit();
        // SAFETY: out-pointer to a local; the stream is ours or the consumer's live stream.
        unsafe {
            call(
                "cuEventCreate",
                sys::cuEventCreate(
                    e.as_mut_ptr(),
                    sys::CUevent_flags::CU_EVENT_DISABLE_TIMING as u32,
                ),
            )?;
            let e = e.assume_init();
            if let Err(err) = call(
                "cuEventRecord",
                sys::cuEventRecord(e, stream_of(stream, self.stream)),
            ) {
                let _ = sys::cuEventDestroy_v2(e);
                return Err(err);
            }
            Ok(Event(e as usize))
        }
    }

    fn done(&self, e: &Event) -> Result<bool, GpuError> {
        self.bind()?;
        // SAFETY: a live event.
        match unsafe { sys::cuEventQuery(e.0 as CUevent) } {
            sys::CUresult::CUDA_SUCCESS => Ok(true),
            sys::CUresult::CUDA_ERROR_NOT_READY => Ok(false),
            r => call("cuEventQuery", r).map(|()| false),
        }
    }

    fn wait(&self, e: &Event) -> Result<(), GpuError> {
        self.bind()?;
        // SAFETY: a live event.
        call("cuEventSynchronize", unsafe {
            sys::cuEventSynchronize(e.0 as CUevent)
        })
    }

    fn stream_wait(&self, stream: Option<usize>, e: &Event) -> Result<(), GpuError> {
        self.bind()?;
        // SAFETY: a live event and stream.
        call("cuStreamWaitEvent", unsafe {
            sys::cuStreamWaitEvent(stream_of(stream, self.stream), e.0 as CUevent, 0)
        })
    }

    fn destroy(&self, e: Event) {
        if self.bind().is_ok() {
            // SAFETY: a live event, destroyed once (work waiting on it is unaffected).
            let _ = unsafe { sys::cuEventDestroy_v2(e.0 as CUevent) };
        }
    }

    fn stream(&self) -> usize {
        self.stream as usize
    }

    fn ordinal(&self) -> i32 {
        self.ordinal
    }
}

/// Host memory an H2D measurement copies from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum H2dSource {
    /// A shared memfd mapping (what a ring is) registered with `cuMemHostRegister`.
    RegisteredMemfd,
    /// `cuMemHostAlloc` memory: the pinned ceiling.
    Pinned,
    /// Ordinary `malloc` memory: what `tensor.to("cuda")` of a numpy array copies from.
    Pageable,
}

/// A shared memfd mapping of `len` bytes, unmapped on drop.
struct Memfd {
    p: *mut u8,
    len: usize,
}

impl Memfd {
    fn new(len: usize) -> Result<Memfd, GpuError> {
        let os = |what: &'static str| GpuError::Call {
            call: what,
            code: std::io::Error::last_os_error().to_string(),
        };
        // SAFETY: plain syscalls; the fd is closed once mapped (the mapping keeps the pages).
        unsafe {
            let fd = libc::memfd_create(c"hydrofeed-bench".as_ptr(), libc::MFD_CLOEXEC);
            if fd < 0 {
                return Err(os("memfd_create"));
            }
            if libc::ftruncate(fd, len as libc::off_t) != 0 {
                libc::close(fd);
                return Err(os("ftruncate"));
            }
            let p = libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                0,
            );
            libc::close(fd);
            if p == libc::MAP_FAILED {
                return Err(os("mmap"));
            }
            Ok(Memfd { p: p.cast(), len })
        }
    }
}

impl Drop for Memfd {
    fn drop(&mut self) {
        // SAFETY: our mapping, unmapped once.
        unsafe { libc::munmap(self.p.cast(), self.len) };
    }
}

/// Host-to-device bandwidth in GB/s (1e9 bytes) from `src`: `iters` copies of `bytes` on the
/// staging stream after one warm-up copy, timed with CUDA events. Also returns the wall time of
/// the setup (allocation, registration) in seconds.
pub fn h2d_bandwidth(
    cuda: &Cuda,
    src: H2dSource,
    bytes: usize,
    iters: u32,
) -> Result<(f64, f64), GpuError> {
    let t0 = Instant::now();
    let dst = cuda.alloc(bytes)?;
    let mut pageable = Vec::new();
    let mut memfd = None;
    let mut pinned = None;
    let host: *mut u8 = match src {
        H2dSource::Pageable => {
            pageable = vec![1u8; bytes];
            pageable.as_mut_ptr()
        }
        H2dSource::Pinned => {
            let p = cuda.alloc_pinned(bytes)?;
            // SAFETY: `bytes` fresh bytes.
            unsafe { std::ptr::write_bytes(p, 1, bytes) };
            pinned = Some(p);
            p
        }
        H2dSource::RegisteredMemfd => {
            let m = Memfd::new(bytes)?;
            // SAFETY: the mapping's `len` bytes.
            unsafe { std::ptr::write_bytes(m.p, 1, m.len) };
            cuda.register(m.p, m.len)?;
            let p = m.p;
            memfd = Some(m);
            p
        }
    };
    let setup = t0.elapsed().as_secs_f64();
    let run = || -> Result<f64, GpuError> {
        // SAFETY: `host` has `bytes` readable bytes that outlive the synchronize below.
        unsafe { cuda.copy_h2d(dst, host, bytes)? };
        let (a, b) = (cuda.timed_event()?, cuda.timed_event()?);
        // SAFETY: live events and stream; `host` outlives the copies (synchronized below).
        unsafe {
            call("cuEventRecord", sys::cuEventRecord(a, cuda.stream))?;
            for _ in 0..iters {
                cuda.copy_h2d(dst, host, bytes)?;
            }
            call("cuEventRecord", sys::cuEventRecord(b, cuda.stream))?;
            call("cuEventSynchronize", sys::cuEventSynchronize(b))?;
            let mut ms = 0f32;
            let r = call("cuEventElapsedTime", sys::cuEventElapsedTime(&mut ms, a, b));
            let _ = sys::cuEventDestroy_v2(a);
            let _ = sys::cuEventDestroy_v2(b);
            r?;
            Ok(bytes as f64 * f64::from(iters) / (f64::from(ms) / 1e3) / 1e9)
        }
    };
    let r = run();
    if let Some(m) = &memfd {
        cuda.unregister(m.p);
    }
    if let Some(p) = pinned {
        cuda.free_pinned(p);
    }
    cuda.free(dst);
    drop(pageable);
    r.map(|gbps| (gbps, setup))
}
