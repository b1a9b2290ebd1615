//! loom models of the ring protocol on the heap backing: push/pop, the hand-out count,
//! wrap-around with padding, slots released out of order from another thread, and close from
//! each side.
//!
//! Run: `RUSTFLAGS="--cfg loom" CARGO_BUILD_BUILD_DIR=/work/cargo-build-loom
//! cargo test -p hydrofeed-ipc --release --test loom_ring`
//!
//! Under loom the futex wait is a yield (see `src/sync.rs`), so these models check the data
//! protocol (head/tail publication, padding, the release queue, closed flags) under every
//! interleaving within the preemption bound; the payload bytes are checked for each frame.
#![cfg(loom)]

use hydrofeed_ipc::{heap_pair, ReserveError, RingConfig};
use loom::thread;
use std::time::Duration;

const T: Duration = Duration::from_secs(3600);

fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(3);
    b.check(f);
}

fn cfg() -> RingConfig {
    RingConfig {
        capacity: 4096,
        max_frame: Some(4096 - 64),
    }
}

fn send(p: &mut hydrofeed_ipc::Producer, len: usize, tag: u8) {
    let mut r = p.reserve(len, T).expect("reserve");
    r.fill(tag);
    r.commit();
}

#[test]
fn push_pop() {
    model(|| {
        let (mut p, mut c) = heap_pair(cfg()).unwrap();
        let t = thread::spawn(move || {
            send(&mut p, 100, 1);
            send(&mut p, 200, 2);
        });
        for (len, tag) in [(100, 1u8), (200, 2)] {
            let l = c.next(T).unwrap().expect("frame");
            assert_eq!(l.len(), len);
            assert!(l.iter().all(|&b| b == tag), "frame {tag} bytes");
        }
        t.join().unwrap();
    });
}

/// The hand-out count published on another thread after the consumer read a frame: the
/// producer never sees more than it committed, and sees the count once the thread is joined.
#[test]
fn handout_published_from_another_thread() {
    model(|| {
        let (mut p, mut c) = heap_pair(cfg()).unwrap();
        send(&mut p, 100, 1);
        let l = c.next(T).unwrap().expect("frame");
        let h = c.handout();
        let t = thread::spawn(move || {
            assert!(l.iter().all(|&b| b == 1), "frame bytes");
            h.publish(1);
            drop(l);
        });
        assert!(p.peer_handed() <= 1);
        send(&mut p, 100, 2);
        t.join().unwrap();
        assert_eq!(p.peer_handed(), 1);
    });
}

#[test]
fn wrap_around_with_padding() {
    model(|| {
        let (mut p, mut c) = heap_pair(cfg()).unwrap();
        // Records of 1856 bytes: the third does not fit before the end (3712 + 1856 > 4096),
        // so the producer pads and waits for the first frame and the padding to be reclaimed.
        let t = thread::spawn(move || {
            for tag in 1..=3u8 {
                send(&mut p, 1792, tag);
            }
        });
        for tag in 1..=3u8 {
            let l = c.next(T).unwrap().expect("frame");
            assert_eq!(l.len(), 1792);
            assert!(l.iter().all(|&b| b == tag), "frame {tag} bytes");
        }
        t.join().unwrap();
    });
}

#[test]
fn slots_dropped_out_of_order_on_another_thread() {
    model(|| {
        let (mut p, mut c) = heap_pair(cfg()).unwrap();
        // Two frames fill the ring; a third needs both released.
        send(&mut p, 1984, 1);
        send(&mut p, 1984, 2);
        let a = c.next(T).unwrap().unwrap();
        let b = c.next(T).unwrap().unwrap();
        let t = thread::spawn(move || {
            assert!(a.iter().all(|&x| x == 1));
            drop(a);
        });
        assert!(b.iter().all(|&x| x == 2));
        drop(b);
        send(&mut p, 1984, 3);
        t.join().unwrap();
        let l = c.next(T).unwrap().unwrap();
        assert!(l.iter().all(|&x| x == 3));
    });
}

#[test]
fn producer_close_after_commit_drains_then_ends() {
    model(|| {
        let (mut p, mut c) = heap_pair(cfg()).unwrap();
        let t = thread::spawn(move || {
            send(&mut p, 64, 7);
            p.close();
        });
        let l = c
            .next(T)
            .unwrap()
            .expect("the committed frame comes before the end");
        assert!(l.iter().all(|&x| x == 7));
        assert!(c.next(T).unwrap().is_none());
        t.join().unwrap();
    });
}

#[test]
fn consumer_close_releases_a_waiting_producer() {
    model(|| {
        let (mut p, mut c) = heap_pair(cfg()).unwrap();
        send(&mut p, 4096 - 64, 1);
        let t = thread::spawn(move || p.reserve(64, T).err());
        c.close();
        assert_eq!(t.join().unwrap(), Some(ReserveError::Closed));
    });
}
