//! A consumer that keeps its slots: `Consumer::detach_held` copies them out of the ring so the
//! producer keeps going, and the kept bytes never change.

use hydrofeed_ipc::{memfd_pair, RingConfig, Slot};
use std::time::Duration;

const CAP: usize = 64 * 1024;
const FRAME: usize = 3000;

fn fill(seq: u64) -> Vec<u8> {
    (0..FRAME).map(|i| (seq as usize * 31 + i) as u8).collect()
}

fn pair() -> (hydrofeed_ipc::Producer, hydrofeed_ipc::Consumer) {
    memfd_pair(RingConfig {
        capacity: CAP,
        max_frame: None,
    })
    .unwrap()
}

/// Publishes frames `seqs` at once (the ring has room for them).
fn publish(p: &mut hydrofeed_ipc::Producer, seqs: std::ops::Range<u64>) {
    for seq in seqs {
        let mut r = p.reserve(FRAME, Duration::from_millis(500)).unwrap();
        r.copy_from_slice(&fill(seq));
        r.commit();
    }
}

/// Producer thread writing `frames` frames; returns how many it could publish.
fn produce(
    mut p: hydrofeed_ipc::Producer,
    frames: u64,
    wait: Duration,
) -> std::thread::JoinHandle<u64> {
    std::thread::spawn(move || {
        for seq in 0..frames {
            match p.reserve(FRAME, wait) {
                Ok(mut r) => {
                    r.copy_from_slice(&fill(seq));
                    r.commit();
                }
                Err(_) => return seq,
            }
        }
        p.close();
        frames
    })
}

#[test]
fn keeping_every_slot_stalls_the_producer_without_detach() {
    let (p, mut c) = pair();
    let frames = 10 * (CAP / FRAME) as u64;
    let t = produce(p, frames, Duration::from_millis(300));
    let mut kept: Vec<Slot> = Vec::new();
    while let Ok(Some(l)) = c.next(Duration::from_millis(500)) {
        kept.push(l);
    }
    let sent = t.join().unwrap();
    assert!(sent < frames, "the ring should fill with kept slots");
    assert!(c.held().pinned as usize > CAP / 2);
}

#[test]
fn detached_slots_keep_their_bytes_and_free_the_ring() {
    let (p, mut c) = pair();
    let frames = 10 * (CAP / FRAME) as u64;
    let t = produce(p, frames, Duration::from_secs(20));
    let mut kept: Vec<(u64, *const u8, Slot)> = Vec::new();
    let mut detaches = 0;
    let mut seq = 0u64;
    while let Some(l) = c.next(Duration::from_secs(20)).unwrap() {
        assert_eq!(&l[..], &fill(seq)[..], "frame {seq}");
        kept.push((seq, l.as_ptr(), l));
        seq += 1;
        let h = c.held();
        assert_eq!(h.slots + h.detached, kept.len());
        if h.pinned as usize > CAP / 2 {
            let d = c.detach_held().unwrap();
            assert_eq!(d.slots, h.slots);
            assert_eq!(c.held().pinned, 0);
            assert_eq!(c.held().slots, 0);
            detaches += 1;
        }
    }
    assert_eq!(t.join().unwrap(), frames);
    assert_eq!(seq, frames);
    assert!(detaches >= 9, "{detaches} detaches");
    // Every kept slot, detached or not, still holds its bytes at the same address.
    for (s, ptr, l) in &kept {
        assert_eq!(l.as_ptr(), *ptr);
        assert_eq!(&l[..], &fill(*s)[..], "kept frame {s}");
    }
    assert_eq!(c.held().detached, kept.len() - c.held().slots);
    drop(kept);
    let h = c.held();
    assert_eq!((h.slots, h.detached, h.pinned), (0, 0, 0));
}

#[test]
fn dropping_slots_in_any_order_after_detach_frees_regions() {
    let (mut p, mut c) = pair();
    publish(&mut p, 0..8);
    let mut v: Vec<Slot> = (0..8)
        .map(|_| c.next(Duration::from_secs(1)).unwrap().unwrap())
        .collect();
    drop(v.remove(3));
    let d = c.detach_held().unwrap();
    assert_eq!(d.slots, 7);
    // The ring is free again: a whole ring's worth of frames fits.
    publish(&mut p, 8..8 + (CAP / FRAME - 2) as u64);
    while v.len() > 1 {
        let l = v.remove(v.len() / 2);
        drop(l);
    }
    assert_eq!(c.held().detached, 1);
    assert_eq!(&v[0][..], &fill(0)[..]);
    drop(v);
    assert_eq!(c.held().detached, 0);
    for seq in 8..8 + (CAP / FRAME - 2) as u64 {
        let l = c.next(Duration::from_secs(1)).unwrap().unwrap();
        assert_eq!(&l[..], &fill(seq)[..]);
    }
}

/// A `fork()` child that drops its copies of the slots and the consumer (as interpreter exit
/// does) leaves the parent's ring untouched.
#[test]
fn drops_in_a_fork_child_leave_the_ring_alone() {
    let (mut p, mut c) = pair();
    publish(&mut p, 0..4);
    let held: Vec<Slot> = (0..2)
        .map(|_| c.next(Duration::from_secs(1)).unwrap().unwrap())
        .collect();
    let before = c.held();
    // SAFETY: the child only drops values and exits with `_exit`.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0);
    if pid == 0 {
        drop(held);
        drop(c);
        // SAFETY: ends the child at once.
        unsafe { libc::_exit(0) };
    }
    let mut status = 0;
    // SAFETY: waits for our own child.
    assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
    assert_eq!(status, 0);
    assert_eq!(c.held(), before, "the child released the parent's slots");
    assert!(p.check_peer().is_ok(), "the child closed the parent's ring");
    for (i, l) in held.iter().enumerate() {
        assert_eq!(&l[..], &fill(i as u64)[..]);
    }
    for seq in 2..4 {
        let l = c.next(Duration::from_secs(1)).unwrap().unwrap();
        assert_eq!(&l[..], &fill(seq)[..]);
    }
}
