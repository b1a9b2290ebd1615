//! One conformance suite, run on both backings: heap (`heap_pair`) and sealed memfd mapped
//! twice (`memfd_pair`). The multi-process path (sockets, death) is in `process.rs`.
//!
//! This binary has its own small harness (`harness = false`): libtest's main thread keeps
//! allocations alive at exit that valgrind reports as leaks, and this suite must run clean
//! under `valgrind --leak-check=full` (`make valgrind`). Usage: `conformance [FILTER]`; other
//! arguments (`--test-threads=1`, `--nocapture`) are accepted and ignored (tests run one at a
//! time on the main thread).

use hydrofeed_ipc::{Consumer, NextError, Producer, ReserveError, RingConfig};
use std::time::{Duration, Instant};

const T: Duration = Duration::from_secs(10);

/// Deterministic content of frame `seq` of `len` bytes.
fn fill(buf: &mut [u8], seq: u64) {
    for (i, b) in buf.iter_mut().enumerate() {
        *b = (seq.wrapping_mul(31).wrapping_add(i as u64 * 7) % 251) as u8;
    }
}

fn check(buf: &[u8], seq: u64) {
    for (i, b) in buf.iter().enumerate() {
        let want = (seq.wrapping_mul(31).wrapping_add(i as u64 * 7) % 251) as u8;
        assert_eq!(*b, want, "frame {seq} byte {i}");
    }
}

fn send(p: &mut Producer, len: usize, seq: u64) {
    let mut r = p.reserve(len, T).expect("reserve");
    assert_eq!(r.len(), len);
    assert_eq!(
        r.as_ptr() as usize % 64,
        0,
        "reservation not 64-byte aligned"
    );
    fill(&mut r, seq);
    r.commit();
}

fn recv(c: &mut Consumer, len: usize, seq: u64) -> hydrofeed_ipc::Slot {
    let l = c.next(T).expect("next").expect("a frame");
    assert_eq!(l.len(), len, "frame {seq} length");
    assert_eq!(l.as_ptr() as usize % 64, 0, "slot not 64-byte aligned");
    check(&l, seq);
    l
}

macro_rules! suite {
    ($modname:ident, $pair:path) => {
        mod $modname {
            use super::*;

            fn pair(capacity: usize, max_frame: Option<usize>) -> (Producer, Consumer) {
                $pair(RingConfig {
                    capacity,
                    max_frame,
                })
                .expect("pair")
            }

            /// The producer's status word: 0 until published, then what any thread of the
            /// producer last set, read by the consumer without taking a frame.
            fn status_word_reaches_the_consumer() {
                let (p, c) = pair(1 << 16, None);
                let seen = c.producer_status();
                assert_eq!(seen.get(), 0);
                let w = p.status_word();
                std::thread::spawn(move || w.set(6)).join().unwrap();
                assert_eq!(seen.get(), 6);
                p.status_word().set(u32::MAX);
                assert_eq!(c.producer_status().get(), u32::MAX);
            }

            /// The hand-out count: what the consumer publishes from any thread, only growing,
            /// read by the producer bounded by the frames it committed, also after the
            /// consumer closed, whatever slots are still held.
            fn handout_reaches_the_producer_bounded_by_frames_committed() {
                let (mut p, mut c) = pair(1 << 16, None);
                assert_eq!(p.peer_handed(), 0);
                for seq in 0..3 {
                    send(&mut p, 100, seq);
                }
                let h = c.handout();
                let held: Vec<_> = (0..3).map(|seq| recv(&mut c, 100, seq)).collect();
                let h2 = h.clone();
                std::thread::spawn(move || h2.publish(2)).join().unwrap();
                assert_eq!(
                    p.peer_handed(),
                    2,
                    "slots still held do not hide what was handed"
                );
                h.publish(1);
                assert_eq!(p.peer_handed(), 2, "the count only grows");
                h.publish(1000);
                assert_eq!(p.peer_handed(), 3, "never more than the frames committed");
                c.close();
                drop(held);
                assert_eq!(p.peer_handed(), 3, "readable after the consumer closed");
            }

            fn order_across_threads() {
                let (mut p, mut c) = pair(1 << 16, None);
                let n = 2000u64;
                let sizes = |i: u64| ((i * 977) % 3000) as usize;
                let t = std::thread::spawn(move || {
                    for i in 0..n {
                        send(&mut p, sizes(i), i);
                    }
                    p.close();
                });
                for i in 0..n {
                    drop(recv(&mut c, sizes(i), i));
                }
                assert!(c.next(T).unwrap().is_none());
                t.join().unwrap();
            }

            fn wrap_around_keeps_frames_contiguous() {
                // 4096-byte ring; 1000-byte frames take 1088 bytes, so every few frames the
                // producer pads to the end and starts again at 0.
                let (mut p, mut c) = pair(4096, None);
                for i in 0..100u64 {
                    let len = 900 + (i as usize % 5) * 50;
                    send(&mut p, len, i);
                    let l = recv(&mut c, len, i);
                    drop(l);
                }
            }

            fn odd_sizes() {
                let (mut p, mut c) = pair(1 << 14, None);
                let sizes = [
                    0usize, 1, 7, 63, 64, 65, 127, 128, 129, 1000, 4095, 4096, 8000,
                ];
                for round in 0..5u64 {
                    for (j, &len) in sizes.iter().enumerate() {
                        let seq = round * 100 + j as u64;
                        send(&mut p, len, seq);
                        drop(recv(&mut c, len, seq));
                    }
                }
            }

            fn max_frame_is_enforced() {
                let (mut p, _c) = pair(4096, None);
                assert_eq!(p.max_frame(), 2048 - 64);
                assert_eq!(
                    p.reserve(p.max_frame() + 1, T).err(),
                    Some(ReserveError::TooLarge)
                );
                assert!(p.reserve(p.max_frame(), T).is_ok());
                let (mut p, mut c) = pair(4096, Some(4096 - 64));
                // Frames of the whole ring, after the ring has wrapped: the padding is
                // reclaimed when the consumer passes it, so this needs a concurrent consumer.
                let t = std::thread::spawn(move || {
                    for i in 0..10 {
                        send(&mut p, 100, 2 * i);
                        send(&mut p, 4096 - 64, 2 * i + 1);
                    }
                });
                for i in 0..10 {
                    drop(recv(&mut c, 100, 2 * i));
                    drop(recv(&mut c, 4096 - 64, 2 * i + 1));
                }
                t.join().unwrap();
                assert!(hydrofeed_ipc::heap_pair(RingConfig {
                    capacity: 4096,
                    max_frame: Some(4096)
                })
                .is_err());
            }

            fn full_ring_backpressure() {
                let (mut p, mut c) = pair(4096, None);
                // 15 frames of 192 bytes = 2880; 4 more fill 3648 .. each record 256 bytes: 16 fit.
                let mut sent = 0u64;
                loop {
                    match p.reserve(192, Duration::from_millis(20)) {
                        Ok(mut r) => {
                            fill(&mut r, sent);
                            r.commit();
                            sent += 1;
                        }
                        Err(e) => {
                            assert_eq!(e, ReserveError::Timeout);
                            break;
                        }
                    }
                }
                assert_eq!(sent, 16, "4096 / (64 + 192) records fit");
                // Holding the oldest slot keeps the ring full.
                let first = recv(&mut c, 192, 0);
                assert_eq!(
                    p.reserve(192, Duration::from_millis(20)).err(),
                    Some(ReserveError::Timeout)
                );
                drop(first);
                send(&mut p, 192, sent);
                for i in 1..=sent {
                    drop(recv(&mut c, 192, i));
                }
            }

            fn blocked_producer_wakes_when_space_frees() {
                let (mut p, mut c) = pair(4096, None);
                for i in 0..16 {
                    send(&mut p, 192, i);
                }
                let t = std::thread::spawn(move || {
                    let t0 = Instant::now();
                    send(&mut p, 192, 16);
                    (p, t0.elapsed())
                });
                std::thread::sleep(Duration::from_millis(50));
                for i in 0..=16 {
                    drop(recv(&mut c, 192, i));
                }
                let (_p, waited) = t.join().unwrap();
                assert!(waited < T, "producer was woken");
            }

            fn many_leases_released_out_of_order() {
                let (mut p, mut c) = pair(1 << 14, None);
                for round in 0..20u64 {
                    let n = 40u64;
                    for i in 0..n {
                        send(&mut p, 100 + i as usize, round * n + i);
                    }
                    let mut slots: Vec<_> = (0..n)
                        .map(|i| recv(&mut c, 100 + i as usize, round * n + i))
                        .collect();
                    // Deterministic shuffle.
                    let mut x = round.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
                    for i in (1..slots.len()).rev() {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        slots.swap(i, (x % (i as u64 + 1)) as usize);
                    }
                    // Keep the oldest for last: until it goes, nothing is reclaimed.
                    let oldest = slots.iter().position(|l| l.len() == 100).unwrap();
                    let oldest = slots.remove(oldest);
                    for l in slots.drain(..) {
                        check(&l, round * n + (l.len() as u64 - 100));
                        drop(l);
                    }
                    check(&oldest, round * n);
                    drop(oldest);
                }
                // Everything reclaimed: a frame of max_frame fits at once.
                assert!(p.reserve(p.max_frame(), Duration::ZERO).is_ok());
            }

            fn slots_outlive_both_ends_and_cross_threads() {
                let (mut p, mut c) = pair(1 << 14, None);
                for i in 0..4 {
                    send(&mut p, 1000, i);
                }
                let slots: Vec<_> = (0..4).map(|i| recv(&mut c, 1000, i)).collect();
                drop(p);
                drop(c);
                let t = std::thread::spawn(move || {
                    for (i, l) in slots.iter().enumerate() {
                        check(l, i as u64);
                    }
                });
                t.join().unwrap();
            }

            fn aborted_reservation_publishes_nothing() {
                let (mut p, mut c) = pair(4096, None);
                for _ in 0..100 {
                    // Dropped at the end of the block without a commit.
                    let mut r = p.reserve(1500, T).unwrap();
                    r[0] = 1;
                }
                assert_eq!(
                    c.next(Duration::from_millis(10)).err(),
                    Some(NextError::Timeout)
                );
                send(&mut p, 10, 0);
                drop(recv(&mut c, 10, 0));
            }

            fn commit_len_publishes_a_prefix() {
                let (mut p, mut c) = pair(4096, None);
                for i in 0..50u64 {
                    let mut r = p.reserve(1800, T).unwrap();
                    fill(&mut r[..300], i);
                    r.commit_len(300);
                    drop(recv(&mut c, 300, i));
                }
            }

            fn next_times_out_on_empty_ring() {
                let (_p, mut c) = pair(4096, None);
                let t0 = Instant::now();
                assert_eq!(
                    c.next(Duration::from_millis(30)).err(),
                    Some(NextError::Timeout)
                );
                assert!(t0.elapsed() >= Duration::from_millis(30));
            }

            fn producer_close_drains_then_ends() {
                let (mut p, mut c) = pair(4096, None);
                for i in 0..5 {
                    send(&mut p, 100, i);
                }
                p.close();
                assert_eq!(p.reserve(1, T).err(), Some(ReserveError::Closed));
                for i in 0..5 {
                    drop(recv(&mut c, 100, i));
                }
                assert!(c.next(T).unwrap().is_none());
                assert!(c.next(T).unwrap().is_none());
            }

            fn producer_close_wakes_waiting_consumer() {
                let (mut p, mut c) = pair(4096, None);
                let t = std::thread::spawn(move || {
                    let t0 = Instant::now();
                    let r = c.next(T).map(|l| l.is_none());
                    (r, t0.elapsed())
                });
                std::thread::sleep(Duration::from_millis(50));
                p.close();
                let (r, waited) = t.join().unwrap();
                assert_eq!(r, Ok(true));
                assert!(waited < T, "consumer woken by close");
            }

            fn producer_drop_closes() {
                let (mut p, mut c) = pair(4096, None);
                send(&mut p, 5, 0);
                drop(p);
                drop(recv(&mut c, 5, 0));
                assert!(c.next(T).unwrap().is_none());
            }

            fn consumer_close_wakes_blocked_producer() {
                let (mut p, mut c) = pair(4096, None);
                for i in 0..16 {
                    send(&mut p, 192, i);
                }
                let t = std::thread::spawn(move || {
                    let t0 = Instant::now();
                    let r = p.reserve(192, T).err();
                    (r, t0.elapsed(), p)
                });
                std::thread::sleep(Duration::from_millis(50));
                let held = recv(&mut c, 192, 0);
                c.close();
                let (r, waited, mut p) = t.join().unwrap();
                assert_eq!(r, Some(ReserveError::Closed));
                assert!(waited < T, "producer woken by close");
                assert_eq!(p.reserve(1, T).err(), Some(ReserveError::Closed));
                assert!(p.check_peer().is_err());
                check(&held, 0);
                assert!(c.next(T).unwrap().is_none());
            }

            fn in_process_pair_has_no_control_channel() {
                let (mut p, mut c) = pair(4096, None);
                assert_eq!(
                    c.send_control(b"x"),
                    Err(hydrofeed_ipc::ControlError::NoChannel)
                );
                assert_eq!(
                    p.try_recv_control(),
                    Err(hydrofeed_ipc::ControlError::NoChannel)
                );
                assert_eq!(p.peer_pid(), std::process::id());
                assert!(p.check_peer().is_ok());
            }
            /// The suite's tests, by name.
            pub const TESTS: &[(&str, fn())] = &[
                (
                    "handout_reaches_the_producer_bounded_by_frames_committed",
                    handout_reaches_the_producer_bounded_by_frames_committed,
                ),
                ("order_across_threads", order_across_threads),
                (
                    "wrap_around_keeps_frames_contiguous",
                    wrap_around_keeps_frames_contiguous,
                ),
                ("odd_sizes", odd_sizes),
                ("max_frame_is_enforced", max_frame_is_enforced),
                ("full_ring_backpressure", full_ring_backpressure),
                (
                    "blocked_producer_wakes_when_space_frees",
                    blocked_producer_wakes_when_space_frees,
                ),
                (
                    "many_leases_released_out_of_order",
                    many_leases_released_out_of_order,
                ),
                (
                    "slots_outlive_both_ends_and_cross_threads",
                    slots_outlive_both_ends_and_cross_threads,
                ),
                (
                    "aborted_reservation_publishes_nothing",
                    aborted_reservation_publishes_nothing,
                ),
                (
                    "commit_len_publishes_a_prefix",
                    commit_len_publishes_a_prefix,
                ),
                ("next_times_out_on_empty_ring", next_times_out_on_empty_ring),
                (
                    "producer_close_drains_then_ends",
                    producer_close_drains_then_ends,
                ),
                (
                    "producer_close_wakes_waiting_consumer",
                    producer_close_wakes_waiting_consumer,
                ),
                ("producer_drop_closes", producer_drop_closes),
                (
                    "consumer_close_wakes_blocked_producer",
                    consumer_close_wakes_blocked_producer,
                ),
                (
                    "in_process_pair_has_no_control_channel",
                    in_process_pair_has_no_control_channel,
                ),
                (
                    "status_word_reaches_the_consumer",
                    status_word_reaches_the_consumer,
                ),
            ];
        }
    };
}

suite!(heap, hydrofeed_ipc::heap_pair);
#[cfg(not(loom))]
suite!(memfd, hydrofeed_ipc::memfd_pair);
/// Under loom (only `loom_ring` is meant to run there) the memfd backing does not exist.
#[cfg(loom)]
mod memfd {
    pub const TESTS: &[(&str, fn())] = &[];
}

#[cfg(not(loom))]
fn memfd_pair_leaves_nothing_in_dev_shm() {
    let before: Vec<_> = std::fs::read_dir("/dev/shm")
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    let (mut p, mut c) = hydrofeed_ipc::memfd_pair(RingConfig {
        capacity: 1 << 16,
        max_frame: None,
    })
    .unwrap();
    send(&mut p, 10, 0);
    drop(recv(&mut c, 10, 0));
    let after: Vec<_> = std::fs::read_dir("/dev/shm")
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert_eq!(before, after);
}

fn main() {
    let filter: Option<String> = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    if std::env::args().any(|a| a == "--list") {
        for (m, list) in [("heap", heap::TESTS), ("memfd", memfd::TESTS)] {
            for (n, _) in list {
                println!("{m}::{n}: test");
            }
        }
        println!("memfd_pair_leaves_nothing_in_dev_shm: test");
        return;
    }
    let mut all: Vec<(String, fn())> = Vec::new();
    for (m, list) in [("heap", heap::TESTS), ("memfd", memfd::TESTS)] {
        all.extend(list.iter().map(|(n, f)| (format!("{m}::{n}"), *f)));
    }
    #[cfg(not(loom))]
    all.push((
        "memfd_pair_leaves_nothing_in_dev_shm".into(),
        memfd_pair_leaves_nothing_in_dev_shm,
    ));
    let selected: Vec<_> = all
        .into_iter()
        .filter(|(n, _)| filter.as_ref().is_none_or(|f| n.contains(f.as_str())))
        .collect();
    println!("\nrunning {} tests", selected.len());
    let mut failed = Vec::new();
    for (name, f) in &selected {
        let ok = std::panic::catch_unwind(f).is_ok();
        println!("test {name} ... {}", if ok { "ok" } else { "FAILED" });
        if !ok {
            failed.push(name.clone());
        }
    }
    println!(
        "\ntest result: {}. {} passed; {} failed",
        if failed.is_empty() { "ok" } else { "FAILED" },
        selected.len() - failed.len(),
        failed.len()
    );
    if !failed.is_empty() {
        println!("failures: {failed:?}");
        std::process::exit(101);
    }
}
