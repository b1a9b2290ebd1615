//! Backings of a ring: a sealed memfd shared by two processes, or a heap allocation for tests
//! and loom. Both give the ring a [`Header`] and a payload of `capacity` bytes.
//!
//! memfd, not `shm_open`: a memfd has no name in any file system, so nothing is ever left in
//! `/dev/shm`, whatever kills the processes; its memory goes away with the last fd and mapping.

use crate::layout::{Header, HEADER_SIZE};
#[cfg(not(loom))]
use crate::layout::{Meta, LAYOUT_VERSION, MAGIC, MAX_CAPACITY, MIN_CAPACITY, SLOT_HEADER_SIZE};
#[cfg(not(loom))]
use crate::AttachError;
use std::alloc::Layout;
use std::ptr::NonNull;

/// Why `Segment::detach` failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DetachError {
    /// This backing cannot move (a heap ring).
    Unsupported,
    /// A memory-mapping call failed with this errno.
    Map(i32),
}

impl std::fmt::Display for DetachError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DetachError::Unsupported => {
                f.write_str("this ring backing cannot copy out held frames")
            }
            DetachError::Map(e) => write!(
                f,
                "copying held frames out of the ring failed: {}",
                std::io::Error::from_raw_os_error(*e)
            ),
        }
    }
}
impl std::error::Error for DetachError {}

/// Memory holding a ring header and its payload.
///
/// # Safety
/// Every address `header()` and `payload()` returned must stay valid (mapped, readable and
/// writable) until the segment is dropped; the payload must be `capacity` bytes, 64-byte
/// aligned, and must not overlap the header. They return the same addresses until
/// [`Segment::detach`] moves the ring to a new mapping; the old addresses stay mapped.
pub(crate) unsafe trait Segment: Send + Sync + 'static {
    /// The shared header.
    fn header(&self) -> &Header;
    /// Start of the payload.
    fn payload(&self) -> *mut u8;
    /// `(capacity, max_frame)` as validated when the segment was made or opened. The ring
    /// takes its geometry from here, never again from the shared header, which the peer
    /// could rewrite after the check.
    fn geometry(&self) -> (u64, usize);
    /// Leaves a private, read-only copy of each payload range `(offset, len)` at its current
    /// address and moves the ring to a fresh mapping of the same memory, so the ring can reuse
    /// those bytes while whoever points at the old addresses keeps reading the same values.
    /// Returns one region id per range, to hand back to [`Segment::release_region`] once
    /// nothing points into it any more. The caller excludes every other use of the payload
    /// (the consumer's release queue lock) while it runs.
    fn detach(&self, ranges: &[(usize, usize)]) -> Result<Vec<u64>, DetachError> {
        let _ = ranges;
        Err(DetachError::Unsupported)
    }
    /// Frees the memory of a region made by [`Segment::detach`] once its last range is released.
    fn release_region(&self, id: u64) {
        let _ = id;
    }
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
    capacity: usize,
    max_frame: usize,
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
            capacity,
            max_frame,
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
    fn geometry(&self) -> (u64, usize) {
        (self.capacity as u64, self.max_frame)
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
///
/// After a [`Segment::detach`] the ring lives in a newer mapping of the same memfd (made with
/// `mremap(old, 0, len, MREMAP_MAYMOVE)`, which maps the same shared pages again); the older
/// mappings stay mapped whole until the segment drops, so every address handed out stays valid,
/// and never a part of one is unmapped (a partial `munmap` could hit memory the process reused).
#[cfg(not(loom))]
pub(crate) struct MemfdSegment {
    map: memmap2::MmapRaw,
    /// Base of the mapping in use (`map`'s until the first detach).
    base: crate::sync::AtomicPtr<u8>,
    moved: std::sync::Mutex<Moved>,
    /// Validated `(capacity, max_frame)`.
    geometry: (u64, usize),
}

/// Mappings and private regions made by [`Segment::detach`].
#[cfg(not(loom))]
#[derive(Default)]
struct Moved {
    /// Later mappings of the memfd `(addr, len)`, unmapped whole at drop.
    maps: Vec<(usize, usize)>,
    /// Private copies: id -> (addr, len, ranges not yet released).
    regions: std::collections::HashMap<u64, (usize, usize, usize)>,
    next_id: u64,
}

#[cfg(not(loom))]
impl MemfdSegment {
    fn new(map: memmap2::MmapRaw, geometry: (u64, usize)) -> MemfdSegment {
        MemfdSegment {
            base: crate::sync::AtomicPtr::new(map.as_mut_ptr()),
            map,
            moved: std::sync::Mutex::new(Moved::default()),
            geometry,
        }
    }

    /// The ring's `(capacity, max_frame)`.
    pub(crate) fn geometry(&self) -> (u64, usize) {
        self.geometry
    }

    pub(crate) fn base(&self) -> *mut u8 {
        // SYNC: Acquire, pairs with the Release store in `detach` (the new mapping exists
        // before its address is seen).
        self.base.load(crate::sync::Ordering::Acquire)
    }
}

#[cfg(not(loom))]
// SAFETY: every mapping is `HEADER_SIZE + capacity` bytes of the memfd, sealed against
// shrinking (no SIGBUS), and stays mapped until drop; the header is at offset 0 (page aligned),
// the payload at HEADER_SIZE.
unsafe impl Segment for MemfdSegment {
    fn header(&self) -> &Header {
        // SAFETY: offset 0 of a live mapping of at least HEADER_SIZE bytes, page aligned; every
        // bit pattern is a valid `Header` (integers and atomics only). An older mapping's header
        // is the same shared page, so a reference kept across a detach still sees the ring.
        unsafe { &*(self.base() as *const Header) }
    }
    fn payload(&self) -> *mut u8 {
        // SAFETY: HEADER_SIZE is within the mapping.
        unsafe { self.base().add(HEADER_SIZE) }
    }
    fn geometry(&self) -> (u64, usize) {
        self.geometry
    }

    fn detach(&self, ranges: &[(usize, usize)]) -> Result<Vec<u64>, DetachError> {
        let mut moved = self.moved.lock().unwrap_or_else(|e| e.into_inner());
        let len = self.map.len();
        let old = self.base();
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as usize;
        // Page spans to copy, merged; each range maps to the span that holds it.
        let mut spans: Vec<(usize, usize, usize)> = Vec::new(); // (start, end, ranges)
        let mut which = Vec::with_capacity(ranges.len());
        let mut sorted: Vec<(usize, usize, usize)> = ranges
            .iter()
            .enumerate()
            .map(|(i, &(off, n))| (off, n, i))
            .collect();
        sorted.sort_unstable();
        which.resize(ranges.len(), 0usize);
        for (off, n, i) in sorted {
            let a = (HEADER_SIZE + off) / page * page;
            let b = (HEADER_SIZE + off + n.max(1)).div_ceil(page) * page;
            if a < HEADER_SIZE || b > len {
                return Err(DetachError::Map(libc::EINVAL));
            }
            match spans.last_mut() {
                Some(last) if a <= last.1 => {
                    last.1 = last.1.max(b);
                    last.2 += 1;
                }
                _ => spans.push((a, b, 1)),
            }
            which[i] = spans.len() - 1;
        }
        // 1. A second mapping of the same pages: the ring continues there.
        // SAFETY: `old` is a live MAP_SHARED mapping of `len` bytes; old_size 0 asks for a new
        // mapping of the same pages and leaves the old one in place.
        let new = unsafe { libc::mremap(old.cast(), 0, len, libc::MREMAP_MAYMOVE) };
        if new == libc::MAP_FAILED {
            return Err(DetachError::Map(errno()));
        }
        moved.maps.push((new as usize, len));
        // 2. At the old addresses, private read-only copies of the held spans. Each copy is
        // made aside, then moved over the old pages in one `mremap`, so a thread reading them
        // meanwhile sees the same bytes before and after.
        let mut ids = Vec::with_capacity(spans.len());
        for &(a, b, count) in &spans {
            let n = b - a;
            // SAFETY: a fresh anonymous mapping, ours alone.
            let tmp = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    n,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                    -1,
                    0,
                )
            };
            if tmp == libc::MAP_FAILED {
                return Err(DetachError::Map(errno()));
            }
            // SAFETY: `[old + a, old + b)` lies in the old mapping (checked above) and no one
            // writes it (the frames are outstanding: the producer stays behind tail); `tmp` is
            // `n` writable bytes.
            unsafe {
                std::ptr::copy_nonoverlapping(old.add(a), tmp.cast::<u8>(), n);
                if libc::mprotect(tmp, n, libc::PROT_READ) != 0
                    || libc::mremap(
                        tmp,
                        n,
                        n,
                        libc::MREMAP_MAYMOVE | libc::MREMAP_FIXED,
                        old.add(a).cast::<libc::c_void>(),
                    ) == libc::MAP_FAILED
                {
                    let e = errno();
                    libc::munmap(tmp, n);
                    return Err(DetachError::Map(e));
                }
            }
            let id = moved.next_id;
            moved.next_id += 1;
            moved.regions.insert(id, (old as usize + a, n, count));
            ids.push(id);
        }
        // SYNC: Release, pairs with the Acquire load in `base`.
        self.base
            .store(new.cast::<u8>(), crate::sync::Ordering::Release);
        Ok(which.into_iter().map(|s| ids[s]).collect())
    }

    fn release_region(&self, id: u64) {
        let mut moved = self.moved.lock().unwrap_or_else(|e| e.into_inner());
        let Some(r) = moved.regions.get_mut(&id) else {
            return;
        };
        r.2 -= 1;
        if r.2 == 0 {
            let (addr, n, _) = *r;
            moved.regions.remove(&id);
            // SAFETY: a private anonymous region of ours that nothing points into any more; its
            // pages are given back and the addresses stay reserved (inside a mapping unmapped
            // whole at drop).
            unsafe { libc::madvise(addr as *mut libc::c_void, n, libc::MADV_DONTNEED) };
        }
    }
}

#[cfg(not(loom))]
impl Drop for MemfdSegment {
    fn drop(&mut self) {
        let moved = self.moved.get_mut().unwrap_or_else(|e| e.into_inner());
        for &(addr, len) in &moved.maps {
            // SAFETY: a whole mapping made by `detach`, unmapped once; nothing points into it
            // (slots hold the segment alive).
            unsafe { libc::munmap(addr as *mut libc::c_void, len) };
        }
    }
}

#[cfg(not(loom))]
fn errno() -> i32 {
    std::io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

/// The seals every ring memfd carries: its size can never change, nor can the seals.
#[cfg(not(loom))]
pub(crate) fn required_seals() -> rustix::fs::SealFlags {
    use rustix::fs::SealFlags;
    SealFlags::SHRINK | SealFlags::GROW | SealFlags::SEAL
}

/// When a ring mapping's pages are faulted in.
#[cfg(not(loom))]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pages {
    /// When it is mapped (`MAP_POPULATE`, up to [`POPULATE_MAX`]): a ring made ahead of its
    /// consumer (a feeder's `Listener::prepare`), whose first pass then takes no faults.
    Now,
    /// As they are first touched: a ring made on the way of its first frame (a Spark feeding
    /// task's [`offer`](crate::offer)), where allocating and clearing all of it up front
    /// (64 MiB: ~65 ms) would hold that frame back while its consumer waits.
    OnUse,
}

/// Largest mapping faulted in whole at attach (`MAP_POPULATE`). A bigger ring faults in page
/// by page on first use: populating a peer-announced size would let the peer make us allocate
/// up to 1 TiB, and would outlast the attach timeout.
#[cfg(not(loom))]
pub(crate) const POPULATE_MAX: usize = 128 << 20;

#[cfg(not(loom))]
fn map_fd(
    fd: std::os::fd::BorrowedFd<'_>,
    len: usize,
    pages: Pages,
) -> Result<memmap2::MmapRaw, AttachError> {
    use std::os::fd::AsRawFd;
    // MAP_POPULATE: fault the ring in at attach, not one page at a time on the first pass of
    // the hot path (the ring is meant to be used whole anyway), up to POPULATE_MAX.
    let mut opts = memmap2::MmapOptions::new();
    opts.len(len);
    if pages == Pages::Now && len <= POPULATE_MAX {
        opts.populate();
    }
    opts.map_raw(fd.as_raw_fd()).map_err(|e| AttachError::Io {
        stage: crate::AttachStage::Map,
        errno: e.raw_os_error().unwrap_or(libc::EIO),
    })
}

/// Creates a sealed memfd holding a fresh ring, and maps it.
#[cfg(not(loom))]
pub(crate) fn create_memfd(
    capacity: usize,
    max_frame: usize,
    pages: Pages,
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
    let map = map_fd(fd.as_fd(), HEADER_SIZE + capacity, pages)?;
    // SAFETY: the mapping is fresh, ours alone (the fd was not shared yet), HEADER_SIZE >=
    // size_of::<Header>() bytes, page aligned.
    unsafe {
        std::ptr::write(
            map.as_mut_ptr() as *mut Header,
            Header::new(capacity, max_frame, std::process::id()),
        )
    };
    Ok((fd, MemfdSegment::new(map, (capacity as u64, max_frame))))
}

/// Validates a ring memfd received from a producer (seals, size, header magic, version and
/// geometry) and maps it. `expect_capacity` is what the handshake announced.
#[cfg(not(loom))]
pub(crate) fn open_memfd(
    fd: std::os::fd::BorrowedFd<'_>,
    expect_capacity: Option<u64>,
    pages: Pages,
) -> Result<MemfdSegment, AttachError> {
    let seals = rustix::fs::fcntl_get_seals(fd).map_err(|_| AttachError::BadSeals)?;
    if !seals.contains(required_seals()) {
        return Err(AttachError::BadSeals);
    }
    let st = rustix::fs::fstat(fd).map_err(|e| AttachError::io(crate::AttachStage::Map, e))?;
    let size = u64::try_from(st.st_size).map_err(|_| AttachError::BadSeals)?;
    if size < (HEADER_SIZE + MIN_CAPACITY) as u64 || size > (HEADER_SIZE + MAX_CAPACITY) as u64 {
        return Err(AttachError::BadSeals);
    }
    // Checked before mapping: the size is the one the handshake announced.
    if expect_capacity.is_some_and(|c| c.checked_add(HEADER_SIZE as u64) != Some(size)) {
        return Err(AttachError::BadGeometry);
    }
    let map = map_fd(fd, size as usize, pages)?;
    // SAFETY: offset 0 of a mapping of more than HEADER_SIZE bytes; `Meta` is plain integers,
    // read by value with a volatile read because another process could be writing it. This is
    // the one read of the geometry: the ring uses the validated copy from here on.
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
        && cap.checked_add(HEADER_SIZE as u64) == Some(size)
        && meta
            .max_frame
            .checked_add(SLOT_HEADER_SIZE as u64)
            .is_some_and(|m| m <= cap)
        && expect_capacity.is_none_or(|c| c == cap);
    if !geometry_ok {
        return Err(AttachError::BadGeometry);
    }
    Ok(MemfdSegment::new(map, (cap, meta.max_frame as usize)))
}
