//! Timeouts: any `Duration` is accepted (`Duration::MAX` means "no limit"), and a side that
//! waits is woken at once when its peer closes, not at the end of its wait slice.

use hydrofeed_ipc::{connect, heap_pair, memfd_pair, Listener, ReserveError, RingConfig};
use std::time::{Duration, Instant};

fn cfg() -> RingConfig {
    RingConfig {
        capacity: 1 << 16,
        max_frame: None,
    }
}

#[test]
fn huge_timeouts_do_not_overflow() {
    let (mut p, mut c) = heap_pair(cfg()).unwrap();
    let mut r = p.reserve(8, Duration::MAX).unwrap();
    r.copy_from_slice(b"12345678");
    r.commit();
    assert_eq!(&c.next(Duration::MAX).unwrap().unwrap()[..], b"12345678");
    let closer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(20));
        drop(p);
    });
    assert!(c.next(Duration::MAX).unwrap().is_none());
    closer.join().unwrap();

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ring.sock");
    let l = Listener::bind(&path, cfg()).unwrap();
    let t = std::thread::spawn(move || {
        let mut c = connect(&path, Duration::MAX).unwrap();
        c.send_control(b"hi").unwrap();
        c
    });
    let mut p = l.accept(Duration::MAX).unwrap();
    assert_eq!(
        p.wait_control(Duration::MAX).unwrap().as_deref(),
        Some(&b"hi"[..])
    );
    drop(t.join().unwrap());
}

/// A producer waiting for space sees the consumer close at once, whenever the close comes
/// (during its spin, or while it sleeps). The wake is measured against the wait slice
/// (100 ms) it would otherwise sleep out, not against a speed target.
#[test]
fn producer_waiting_for_space_is_woken_by_close() {
    let mut worst = Duration::ZERO;
    for i in 0..120u32 {
        let (mut p, mut c) = memfd_pair(cfg()).unwrap();
        // Fill the ring and keep the slots: no space comes back.
        let mut held = Vec::new();
        loop {
            match p.reserve(4000, Duration::ZERO) {
                Ok(r) => r.commit(),
                Err(ReserveError::Timeout) => break,
                Err(e) => panic!("{e}"),
            }
            held.push(c.next(Duration::ZERO).unwrap().unwrap());
        }
        let (tx, rx) = std::sync::mpsc::channel();
        let waiter = std::thread::spawn(move || {
            tx.send(()).unwrap();
            let r = p.reserve(4000, Duration::from_secs(30)).map(|_| ());
            (r, Instant::now())
        });
        rx.recv().unwrap();
        // Close at a different point each time: early in the producer's spin, late in it,
        // or once it sleeps on the futex.
        let delay = Duration::from_micros(u64::from(i % 60));
        let t0 = Instant::now();
        while t0.elapsed() < delay {
            std::hint::spin_loop();
        }
        let closed_at = Instant::now();
        c.close();
        let (r, woke_at) = waiter.join().unwrap();
        assert_eq!(r, Err(ReserveError::Closed));
        worst = worst.max(woke_at.saturating_duration_since(closed_at));
        drop(held);
    }
    assert!(
        worst < Duration::from_millis(50),
        "a producer slept {worst:?} after the consumer closed"
    );
}
