//! Backings of a ring: a sealed memfd shared by two processes, or a heap allocation for tests
//! and loom. Both give the ring a [`Header`] and a payload of `capacity` bytes.
//!
//! memfd, not `shm_open`: a memfd has no name in any file system, so nothing is ever left in
//! `/dev/shm`, whatever kills the processes; its memory goes away with the last fd and mapping.

use crate::layout::{Header, HEADER_SIZE};
#[cfg(not(loom))]
use crate::layout::{Meta, FRAME_HEADER_SIZE, LAYOUT_VERSION, MAGIC, MAX_CAPACITY, MIN_CAPACITY};
#[cfg(not(loom))]
use crate::AttachError;
use std::alloc::Layout;
use std::ptr::NonNull;

/// Memory holding a ring header and its payload.
///
/// # Safety
/// `header()` and `payload()` must stay valid (same addresses, mapped, readable and writable)
/// until the segment is dropped; the payload must be `capacity` bytes, 64-byte aligned, and
/// must not overlap the header.
pub(crate) unsafe trait Segment: Send + Sync + 'static {
    /// The shared header.
    fn header(&self) -> &Header;
    /// Start of the payload.
    fn payload(&self) -> *mut u8;
    /// Records an access to payload bytes `[off, off + len)` for the loom model (no-op
    /// elsewhere): loom then reports any access not ordered by the ring protocol.
    #[cfg(loom)]
    fn track(&self, off: usize, len: usize, write: bool) {
        let _ = (off, len, write);
    }
}

/// A ring in process memory (tests, loom models, in-process pairs).
pub(crate) struct HeapSegment {
    header: Box<Header>,
    payload: NonNull<u8>,
    layout: Layout,
    /// One loom cell per 64-byte unit of payload.
    #[cfg(loom)]
    cells: Vec<loom::cell::UnsafeCell<()>>,
}

// SAFETY: the payload is plain memory; concurrent access to it is ordered by the ring protocol
// (head/tail Release/Acquire pairs), exactly as for the memfd mapping.
unsafe impl Send for HeapSegment {}
// SAFETY: as above.
unsafe impl Sync for HeapSegment {}

impl HeapSegment {
    /// A zeroed segment of `capacity` payload bytes (`capacity` > 0, a multiple of 64).
    pub(crate) fn new(capacity: usize, max_frame: usize) -> HeapSegment {
        let layout = Layout::from_size_align(capacity, HEADER_SIZE).expect("ring capacity layout");
        // SAFETY: the layout has a non-zero size (capacity >= MIN_CAPACITY, checked by the caller).
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        let payload = NonNull::new(ptr).unwrap_or_else(|| std::alloc::handle_alloc_error(layout));
        HeapSegment {
            header: Box::new(Header::new(capacity, max_frame, std::process::id())),
            payload,
            layout,
            #[cfg(loom)]
            cells: (0..capacity / 64)
                .map(|_| loom::cell::UnsafeCell::new(()))
                .collect(),
        }
    }
}

impl Drop for HeapSegment {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout, freed once.
        unsafe { std::alloc::dealloc(self.payload.as_ptr(), self.layout) }
    }
}

// SAFETY: the box and the allocation live as long as the segment; the payload is `capacity`
// bytes aligned to 4096.
unsafe impl Segment for HeapSegment {
    fn header(&self) -> &Header {
        &self.header
    }
    fn payload(&self) -> *mut u8 {
        self.payload.as_ptr()
    }
    #[cfg(loom)]
    fn track(&self, off: usize, len: usize, write: bool) {
        for cell in &self.cells[off / 64..(off + len).div_ceil(64)] {
            if write {
                cell.with_mut(|_| ());
            } else {
                cell.with(|_| ());
            }
        }
    }
}

/// A ring in a sealed memfd, mapped shared.
#[cfg(not(loom))]
pub(crate) struct MemfdSegment {
    map: memmap2::MmapRaw,
}

#[cfg(not(loom))]
// SAFETY: the mapping is `HEADER_SIZE + capacity` bytes, sealed against shrinking (no SIGBUS),
// lives as long as `map`; the header is at offset 0 (page aligned), the payload at HEADER_SIZE.
unsafe impl Segment for MemfdSegment {
    fn header(&self) -> &Header {
        // SAFETY: offset 0 of a live mapping of at least HEADER_SIZE bytes, page aligned; every
        // bit pattern is a valid `Header` (integers and atomics only).
        unsafe { &*(self.map.as_mut_ptr() as *const Header) }
    }
    fn payload(&self) -> *mut u8 {
        // SAFETY: HEADER_SIZE is within the mapping.
        unsafe { self.map.as_mut_ptr().add(HEADER_SIZE) }
    }
}

/// The seals every ring memfd carries: its size can never change, nor can the seals.
#[cfg(not(loom))]
pub(crate) fn required_seals() -> rustix::fs::SealFlags {
    use rustix::fs::SealFlags;
    SealFlags::SHRINK | SealFlags::GROW | SealFlags::SEAL
}

#[cfg(not(loom))]
fn map_fd(fd: std::os::fd::BorrowedFd<'_>, len: usize) -> Result<memmap2::MmapRaw, AttachError> {
    use std::os::fd::AsRawFd;
    // MAP_POPULATE: fault the whole ring in at attach, not one page at a time on the first
    // pass of the hot path (the ring is meant to be used whole anyway).
    memmap2::MmapOptions::new()
        .len(len)
        .populate()
        .map_raw(fd.as_raw_fd())
        .map_err(|e| AttachError::Io {
            stage: crate::AttachStage::Map,
            errno: e.raw_os_error().unwrap_or(libc::EIO),
        })
}

/// Creates a sealed memfd holding a fresh ring, and maps it.
#[cfg(not(loom))]
pub(crate) fn create_memfd(
    capacity: usize,
    max_frame: usize,
) -> Result<(std::os::fd::OwnedFd, MemfdSegment), AttachError> {
    use crate::AttachStage::Memfd;
    use rustix::fs::{memfd_create, MemfdFlags};
    use std::os::fd::AsFd;
    let fd = memfd_create(
        "hydrofeed-ring",
        MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING,
    )
    .map_err(|e| AttachError::io(Memfd, e))?;
    let size = (HEADER_SIZE + capacity) as u64;
    rustix::fs::ftruncate(&fd, size).map_err(|e| AttachError::io(Memfd, e))?;
    rustix::fs::fcntl_add_seals(&fd, required_seals()).map_err(|e| AttachError::io(Memfd, e))?;
    let map = map_fd(fd.as_fd(), HEADER_SIZE + capacity)?;
    // SAFETY: the mapping is fresh, ours alone (the fd was not shared yet), HEADER_SIZE >=
    // size_of::<Header>() bytes, page aligned.
    unsafe {
        std::ptr::write(
            map.as_mut_ptr() as *mut Header,
            Header::new(capacity, max_frame, std::process::id()),
        )
    };
    Ok((fd, MemfdSegment { map }))
}

/// Validates a ring memfd received from a producer (seals, size, header magic, version and
/// geometry) and maps it. `expect_capacity` is what the handshake announced.
#[cfg(not(loom))]
pub(crate) fn open_memfd(
    fd: std::os::fd::BorrowedFd<'_>,
    expect_capacity: Option<u64>,
) -> Result<MemfdSegment, AttachError> {
    let seals = rustix::fs::fcntl_get_seals(fd).map_err(|_| AttachError::BadSeals)?;
    if !seals.contains(required_seals()) {
        return Err(AttachError::BadSeals);
    }
    let st = rustix::fs::fstat(fd).map_err(|e| AttachError::io(crate::AttachStage::Map, e))?;
    let size = st.st_size as u64;
    if size < (HEADER_SIZE + MIN_CAPACITY) as u64 || size > (HEADER_SIZE + MAX_CAPACITY) as u64 {
        return Err(AttachError::BadSeals);
    }
    let map = map_fd(fd, size as usize)?;
    // SAFETY: offset 0 of a mapping of more than HEADER_SIZE bytes; `Meta` is plain integers,
    // read by value with a volatile read because another process could be writing it.
    let meta: Meta = unsafe { std::ptr::read_volatile(map.as_ptr() as *const Meta) };
    if meta.magic != MAGIC {
        return Err(AttachError::BadMagic);
    }
    if meta.version != LAYOUT_VERSION {
        return Err(AttachError::BadVersion {
            found: meta.version,
        });
    }
    let cap = meta.capacity;
    let geometry_ok = meta.header_size as usize == HEADER_SIZE
        && cap.is_power_of_two()
        && cap >= MIN_CAPACITY as u64
        && cap + HEADER_SIZE as u64 == size
        && meta.max_frame + FRAME_HEADER_SIZE as u64 <= cap
        && expect_capacity.is_none_or(|c| c == cap);
    if !geometry_ok {
        return Err(AttachError::BadGeometry);
    }
    Ok(MemfdSegment { map })
}
