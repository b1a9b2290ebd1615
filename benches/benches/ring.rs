//! criterion: the in-process ring (memfd backing, consumer on another thread summing every
//! u64) against a memcpy of the same bytes, for 64 KiB and 1 MiB frames; and the hand-off of a
//! 64-byte frame to a consumer thread that answers on a second ring (round trip).

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use hydrofeed_ipc::{memfd_pair, RingConfig};
use std::hint::black_box;
use std::time::{Duration, Instant};

const T: Duration = Duration::from_secs(30);
const CAP: usize = 64 << 20;

fn sum_u64(bytes: &[u8]) -> u64 {
    bytes.chunks_exact(8).fold(0u64, |a, w| {
        a.wrapping_add(u64::from_le_bytes(w.try_into().unwrap()))
    })
}

fn throughput(c: &mut Criterion) {
    let src: Vec<u8> = (0..CAP).map(|i| (i * 31 % 251) as u8).collect();
    let mut g = c.benchmark_group("ring_spsc");
    g.sample_size(10);
    for frame in [64usize << 10, 1 << 20] {
        let frames_per_iter = (256 << 20) / frame;
        g.throughput(Throughput::Bytes((frames_per_iter * frame) as u64));
        g.bench_with_input(BenchmarkId::new("memcpy", frame), &frame, |b, &frame| {
            let mut dst = vec![0u8; CAP];
            b.iter(|| {
                let (mut s, mut d) = (0, 0);
                for _ in 0..frames_per_iter {
                    dst[d..d + frame].copy_from_slice(&src[s..s + frame]);
                    black_box(&mut dst[d]);
                    s = (s + frame) % src.len();
                    d = (d + frame) % CAP;
                }
            })
        });
        g.bench_with_input(BenchmarkId::new("ring", frame), &frame, |b, &frame| {
            b.iter_custom(|iters| {
                let (mut p, mut cons) = memfd_pair(RingConfig {
                    capacity: CAP,
                    max_frame: None,
                })
                .unwrap();
                let reader = std::thread::spawn(move || {
                    let mut s = 0u64;
                    while let Some(l) = cons.next(T).unwrap() {
                        s = s.wrapping_add(sum_u64(&l));
                    }
                    s
                });
                let t0 = Instant::now();
                let mut off = 0;
                for _ in 0..iters * frames_per_iter as u64 {
                    let mut r = p.reserve(frame, T).unwrap();
                    r.copy_from_slice(&src[off..off + frame]);
                    r.commit();
                    off = (off + frame) % src.len();
                }
                p.close();
                black_box(reader.join().unwrap());
                t0.elapsed()
            })
        });
    }
    g.finish();
}

fn handoff(c: &mut Criterion) {
    let mut g = c.benchmark_group("ring_handoff");
    g.bench_function("round_trip_64B", |b| {
        let cfg = RingConfig {
            capacity: 1 << 16,
            max_frame: None,
        };
        let (mut ping_p, mut ping_c) = memfd_pair(cfg).unwrap();
        let (mut pong_p, mut pong_c) = memfd_pair(cfg).unwrap();
        let echo = std::thread::spawn(move || {
            while let Some(l) = ping_c.next(T).unwrap() {
                let mut r = pong_p.reserve(l.len(), T).unwrap();
                r.copy_from_slice(&l);
                r.commit();
            }
        });
        b.iter(|| {
            let mut r = ping_p.reserve(64, T).unwrap();
            r.fill(7);
            r.commit();
            black_box(pong_c.next(T).unwrap().unwrap());
        });
        drop(ping_p);
        echo.join().unwrap();
    });
    g.finish();
}

#[allow(missing_docs)] // criterion_group! generates an undocumented pub fn
mod group {
    use super::*;
    criterion_group!(benches, throughput, handoff);
}
use group::benches;
criterion_main!(benches);
