//! The stager against a host-memory fake of the driver: copies run when the fake "device"
//! completes its queue (as a real stream runs later than the call that queued it), so the
//! tests see what a trainer would: nothing before the event, the host bytes read at completion.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::*;

#[derive(Default)]
struct FakeState {
    mem: HashMap<DevPtr, Vec<u8>>,
    next: DevPtr,
    /// Queued copies `(dst, src, n)`, run at `complete`.
    queue: Vec<(DevPtr, usize, usize)>,
    /// Events recorded so far; an event is done when its number is `<= completed`.
    events: u64,
    completed: u64,
    live_events: u64,
    stream_waits: u64,
    consumer_records: u64,
    registered: Vec<(usize, usize)>,
    pinned: u64,
}

#[derive(Default)]
struct Fake {
    s: Mutex<FakeState>,
    refuse_register: bool,
}

impl Fake {
    fn complete(&self) {
        let mut s = self.s.lock().unwrap();
        let q = std::mem::take(&mut s.queue);
        for (dst, src, n) in q {
            // Find the allocation holding dst.
            let (&base, _) = s
                .mem
                .iter()
                .find(|(&b, v)| dst >= b && dst + n as u64 <= b + v.len() as u64)
                .expect("copy into an allocation");
            let off = (dst - base) as usize;
            // SAFETY: the stager's contract keeps `src..src + n` readable until completion.
            let bytes = unsafe { std::slice::from_raw_parts(src as *const u8, n) }.to_vec();
            s.mem.get_mut(&base).unwrap()[off..off + n].copy_from_slice(&bytes);
        }
        s.completed = s.events;
    }

    fn read(&self, p: DevPtr, n: usize) -> Vec<u8> {
        let s = self.s.lock().unwrap();
        let (&base, v) = s
            .mem
            .iter()
            .find(|(&b, v)| p >= b && p + n as u64 <= b + v.len() as u64)
            .unwrap();
        let off = (p - base) as usize;
        v[off..off + n].to_vec()
    }
}

// SAFETY: copies read host memory only at `complete`, which the tests call while it is alive.
unsafe impl Backend for Fake {
    fn alloc(&self, bytes: usize) -> Result<DevPtr, GpuError> {
        let mut s = self.s.lock().unwrap();
        s.next += 1 << 32;
        let p = s.next;
        s.mem.insert(p, vec![0; bytes]);
        Ok(p)
    }
    fn free(&self, p: DevPtr) {
        assert!(
            self.s.lock().unwrap().mem.remove(&p).is_some(),
            "double free"
        );
    }
    fn alloc_pinned(&self, bytes: usize) -> Result<*mut u8, GpuError> {
        self.s.lock().unwrap().pinned += 1;
        Ok(Box::leak(vec![0u8; bytes].into_boxed_slice()).as_mut_ptr())
    }
    fn free_pinned(&self, _p: *mut u8) {
        self.s.lock().unwrap().pinned -= 1;
    }
    fn register(&self, p: *mut u8, len: usize) -> Result<(), GpuError> {
        if self.refuse_register {
            return Err(GpuError::Call {
                call: "cuMemHostRegister",
                code: "CUDA_ERROR_NOT_PERMITTED".into(),
            });
        }
        self.s.lock().unwrap().registered.push((p as usize, len));
        Ok(())
    }
    fn unregister(&self, p: *mut u8) {
        self.s
            .lock()
            .unwrap()
            .registered
            .retain(|&(a, _)| a != p as usize);
    }
    unsafe fn copy_h2d(&self, dst: DevPtr, src: *const u8, n: usize) -> Result<(), GpuError> {
        self.s.lock().unwrap().queue.push((dst, src as usize, n));
        Ok(())
    }
    fn record(&self, stream: Option<usize>) -> Result<Event, GpuError> {
        let mut s = self.s.lock().unwrap();
        s.events += 1;
        s.live_events += 1;
        if stream.is_some() {
            s.consumer_records += 1;
        }
        Ok(Event(s.events as usize))
    }
    fn done(&self, e: &Event) -> Result<bool, GpuError> {
        Ok(e.0 as u64 <= self.s.lock().unwrap().completed)
    }
    fn wait(&self, _e: &Event) -> Result<(), GpuError> {
        self.complete();
        Ok(())
    }
    fn stream_wait(&self, _stream: Option<usize>, _e: &Event) -> Result<(), GpuError> {
        self.s.lock().unwrap().stream_waits += 1;
        Ok(())
    }
    fn destroy(&self, _e: Event) {
        self.s.lock().unwrap().live_events -= 1;
    }
    fn stream(&self) -> usize {
        7
    }
    fn ordinal(&self) -> i32 {
        0
    }
}

fn fake(refuse: bool) -> (Arc<Fake>, Stager) {
    let f = Arc::new(Fake {
        refuse_register: refuse,
        ..Fake::default()
    });
    let be: Arc<dyn Backend> = f.clone();
    (f, Stager::new(be))
}

#[test]
fn parts_land_at_aligned_offsets_when_the_copy_completes() {
    let (f, mut st) = fake(false);
    let mut ring = vec![0u8; 4096];
    ring[..5].copy_from_slice(b"hello");
    ring[1000..1300].fill(9);
    // SAFETY: `ring` outlives the stager's use of it (the stager drops first below).
    let path = unsafe { st.register(ring.as_mut_ptr(), ring.len()) };
    assert_eq!(path, HostPath::Registered);
    let s = st.stage(&[&ring[..5], &ring[1000..1300]]).unwrap();
    assert!(s.registered);
    assert_eq!(s.ptr(1) - s.ptr(0), ALIGN as u64);
    assert!(!s.ready().unwrap(), "ready before the device ran the copy");
    f.complete();
    assert!(s.ready().unwrap());
    assert_eq!(f.read(s.ptr(0), 5), b"hello");
    assert_eq!(f.read(s.ptr(1), 300), vec![9u8; 300]);
    drop(s);
    drop(st);
    assert!(
        f.s.lock().unwrap().registered.is_empty(),
        "unregistered at drop"
    );
}

#[test]
fn a_released_buffer_is_reused_after_its_consumers_stream() {
    let (f, st) = fake(false);
    let host = vec![1u8; 3000];
    let s = st.stage(&[&host]).unwrap();
    f.complete();
    let buf = Arc::clone(s.buffer());
    drop(s);
    // A tensor made from it was read on a consumer stream, then dropped.
    buf.released_on(Some(42)).unwrap();
    assert_eq!(f.s.lock().unwrap().consumer_records, 1);
    drop(buf);
    let waits = f.s.lock().unwrap().stream_waits;
    let s2 = st.stage(&[&host[..2900]]).unwrap();
    assert_eq!(
        f.s.lock().unwrap().stream_waits,
        waits + 1,
        "the copy into a reused buffer waits for its last reader"
    );
    let c = st.pool_counts();
    assert_eq!((c.allocs, c.reuses, c.live), (1, 1, 1));
    f.complete();
    drop(s2);
    drop(st);
    assert_eq!(f.s.lock().unwrap().live_events, 0, "every event destroyed");
    assert!(f.s.lock().unwrap().mem.is_empty(), "every buffer freed");
}

#[test]
fn a_refused_registration_bounces_and_the_host_bytes_are_free_at_once() {
    let (f, mut st) = fake(true);
    let mut ring = vec![5u8; 1024];
    // SAFETY: `ring` outlives the stager.
    let path = unsafe { st.register(ring.as_mut_ptr(), ring.len()) };
    assert_eq!(path, HostPath::Bounce);
    assert!(st.refused().unwrap().contains("CUDA_ERROR_NOT_PERMITTED"));
    let s = st.stage(&[&ring[..100]]).unwrap();
    assert!(!s.registered);
    // The bytes were copied into the bounce buffer at stage(): the ring slot may be reused.
    ring[..100].fill(6);
    f.complete();
    assert_eq!(f.read(s.ptr(0), 100), vec![5u8; 100]);
    drop(s);
    assert_eq!(
        f.s.lock().unwrap().pinned,
        1,
        "bounce buffer kept for reuse"
    );
    drop(st);
    assert_eq!(f.s.lock().unwrap().pinned, 0, "bounce buffers freed");
}

#[test]
fn unregistered_memory_is_copied_directly_and_read_at_completion() {
    // Outside the registered ring (a batch copied out of it): a plain asynchronous copy.
    let (f, mut st) = fake(false);
    let mut ring = vec![0u8; 64];
    // SAFETY: `ring` outlives the stager.
    unsafe { st.register(ring.as_mut_ptr(), ring.len()) };
    let other = vec![3u8; 10];
    let s = st.stage(&[&other]).unwrap();
    assert!(!s.registered);
    f.complete();
    assert_eq!(f.read(s.ptr(0), 10), vec![3u8; 10]);
}

#[test]
fn the_pool_keeps_a_few_free_buffers_and_frees_the_rest() {
    let (f, st) = fake(false);
    let host = vec![0u8; 100];
    let held: Vec<Staged> = (0..12).map(|_| st.stage(&[&host]).unwrap()).collect();
    f.complete();
    assert_eq!(st.pool_counts().live, 12);
    drop(held);
    assert_eq!(st.pool_counts().live, KEEP_FREE as u64);
    assert_eq!(size_class(100), 256);
    assert_eq!(size_class((1 << 20) + 1), 2 << 20);
}

#[test]
fn bounce_on_request_registers_nothing() {
    let (f, mut st) = fake(false);
    st.use_bounce("asked");
    let mut ring = vec![1u8; 64];
    // SAFETY: `ring` outlives the stager.
    let path = unsafe { st.register(ring.as_mut_ptr(), ring.len()) };
    assert_eq!(path, HostPath::Bounce);
    assert!(f.s.lock().unwrap().registered.is_empty());
    let s = st.stage(&[&ring[..8]]).unwrap();
    assert!(!s.registered);
    f.complete();
    assert_eq!(f.read(s.ptr(0), 8), vec![1u8; 8]);
}
