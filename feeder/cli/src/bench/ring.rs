//! `hydrofeed bench ring`: the shared-memory ring across two processes against a single-thread
//! memcpy of the same bytes, and the hand-off latency of a ping-pong.
//!
//! * Throughput, for frames of 64 KiB, 1 MiB and 4 MiB: the producer (this process) copies
//!   frames from a 64 MiB source buffer into the ring; the consumer (this executable started
//!   again with the hidden `--consumer` flag) sums every u64 of every frame and sends the sum
//!   back, which is checked. The clock stops when the consumer's answer arrives. The baseline
//!   copies the same bytes, in the same chunks, from the same source into a buffer the size of
//!   the ring, on one thread. Best of `--reps` runs for each.
//! * Hand-off: the producer commits a 64-byte frame holding `CLOCK_MONOTONIC` ns; the consumer
//!   takes it, records `now - sent` and answers on the control channel; the producer waits for
//!   the answer before the next ping. The consumer is therefore waiting in `next()` when each
//!   frame is committed. A second series with 1 ms between pings (the consumer is asleep on the
//!   futex, the slow path) is printed on stderr.

use anyhow::{bail, Context};
use hydrofeed_ipc::{connect, Listener, RingConfig};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Arguments of `hydrofeed bench ring`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print one JSON object on stdout (human-readable text otherwise).
    #[arg(long)]
    pub json: bool,
    /// Bytes moved per frame size and run.
    #[arg(long, default_value_t = 2 << 30)]
    pub bytes: u64,
    /// Runs per frame size (the best is reported, for the ring and for memcpy alike).
    #[arg(long, default_value_t = 3)]
    pub reps: usize,
    /// Ring capacity in bytes.
    #[arg(long, default_value_t = 64 << 20)]
    pub capacity: usize,
    /// Ping-pong round trips.
    #[arg(long, default_value_t = 5000)]
    pub pings: usize,
    /// Internal: run as the consumer of the ring at this socket.
    #[arg(long, hide = true)]
    pub consumer: Option<PathBuf>,
    /// Internal: the consumer answers pings instead of summing.
    #[arg(long, hide = true)]
    pub ping: bool,
}

const FRAME_SIZES: [usize; 3] = [64 << 10, 1 << 20, 4 << 20];
const SOURCE_BYTES: usize = 64 << 20;
const T: Duration = Duration::from_secs(30);

fn now_ns() -> u64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid, writable timespec; CLOCK_MONOTONIC always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut t) };
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

fn sum_u64(bytes: &[u8]) -> u64 {
    let mut acc = [0u64; 8];
    let mut chunks = bytes.chunks_exact(64);
    for c in &mut chunks {
        for (i, w) in c.chunks_exact(8).enumerate() {
            acc[i] = acc[i].wrapping_add(u64::from_le_bytes(w.try_into().expect("8 bytes")));
        }
    }
    let mut s = acc.iter().fold(0u64, |a, b| a.wrapping_add(*b));
    for w in chunks.remainder().chunks_exact(8) {
        s = s.wrapping_add(u64::from_le_bytes(w.try_into().expect("8 bytes")));
    }
    s
}

/// The consumer process.
fn run_consumer(path: &Path, ping: bool) -> anyhow::Result<()> {
    let mut c = connect(path, T).context("consumer: connect")?;
    if ping {
        let mut lat = Vec::new();
        while let Some(l) = c.next(T).context("consumer: next")? {
            let now = now_ns();
            let sent = u64::from_le_bytes(l[..8].try_into().expect("8 bytes"));
            lat.push(now.saturating_sub(sent));
            drop(l);
            c.send_control(b"a").context("consumer: ack")?;
        }
        let bytes: Vec<u8> = lat.iter().flat_map(|v| v.to_le_bytes()).collect();
        for chunk in bytes.chunks(hydrofeed_ipc::MAX_CONTROL_MSG) {
            c.send_control(chunk).context("consumer: results")?;
        }
        c.send_control(b"").context("consumer: end")?;
    } else {
        let (mut sum, mut n) = (0u64, 0u64);
        while let Some(l) = c.next(T).context("consumer: next")? {
            sum = sum.wrapping_add(sum_u64(&l));
            n += l.len() as u64;
        }
        c.send_control(format!("{n} {sum}").as_bytes())
            .context("consumer: result")?;
    }
    Ok(())
}

struct Run {
    listener: Listener,
    child: Child,
}

fn start(tag: &str, capacity: usize, ping: bool) -> anyhow::Result<Run> {
    let path = std::env::temp_dir().join(format!(
        "hydrofeed-bench-ring-{}-{tag}.sock",
        std::process::id()
    ));
    let listener = Listener::bind(
        &path,
        RingConfig {
            capacity,
            max_frame: Some(FRAME_SIZES[FRAME_SIZES.len() - 1]),
        },
    )
    .with_context(|| format!("bind {}", path.display()))?;
    let exe = std::env::current_exe().context("current exe")?;
    let mut cmd = Command::new(exe);
    cmd.args(["bench", "ring", "--consumer"]).arg(&path);
    if ping {
        cmd.arg("--ping");
    }
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .context("spawn the consumer process")?;
    Ok(Run { listener, child })
}

fn finish(mut run: Run) -> anyhow::Result<()> {
    let st = run.child.wait().context("wait for the consumer")?;
    drop(run.listener);
    if !st.success() {
        bail!("consumer process failed: {st}");
    }
    Ok(())
}

/// One ring run: returns GB/s.
fn ring_run(
    src: &[u8],
    frame: usize,
    bytes: u64,
    capacity: usize,
    expect: u64,
) -> anyhow::Result<f64> {
    let run = start(&format!("tp{frame}"), capacity, false)?;
    let mut p = run.listener.accept(T).context("accept the consumer")?;
    let frames = bytes / frame as u64;
    let t0 = Instant::now();
    let mut off = 0usize;
    for _ in 0..frames {
        let mut r = p.reserve(frame, T).context("reserve")?;
        r.copy_from_slice(&src[off..off + frame]);
        r.commit();
        off = (off + frame) % src.len();
    }
    p.close();
    let msg = p
        .wait_control(T)
        .context("consumer result")?
        .context("consumer sent no result")?;
    let secs = t0.elapsed().as_secs_f64();
    let msg = String::from_utf8_lossy(&msg).to_string();
    let want = format!("{} {expect}", frames * frame as u64);
    if msg != want {
        bail!("consumer read {msg:?}, expected {want:?}: the ring lost or corrupted bytes");
    }
    drop(p);
    finish(run)?;
    Ok((frames * frame as u64) as f64 / secs / 1e9)
}

fn memcpy_run(src: &[u8], dst: &mut [u8], frame: usize, bytes: u64) -> f64 {
    let frames = bytes / frame as u64;
    let t0 = Instant::now();
    let (mut s, mut d) = (0usize, 0usize);
    for _ in 0..frames {
        dst[d..d + frame].copy_from_slice(&src[s..s + frame]);
        std::hint::black_box(&mut dst[d]);
        s = (s + frame) % src.len();
        d = (d + frame) % dst.len();
    }
    let secs = t0.elapsed().as_secs_f64();
    (frames * frame as u64) as f64 / secs / 1e9
}

fn pct(sorted: &[u64], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i] as f64 / 1000.0
}

/// Ping-pong; returns the sorted one-way hand-off latencies in ns (warm-up dropped).
fn ping_run(pings: usize, pause: Duration) -> anyhow::Result<Vec<u64>> {
    let run = start(&format!("ping{}", pause.as_micros()), 8 << 20, true)?;
    let mut p = run.listener.accept(T).context("accept the consumer")?;
    for seq in 0..pings as u64 {
        if !pause.is_zero() {
            std::thread::sleep(pause);
        }
        let mut r = p.reserve(64, T).context("reserve")?;
        r[8..16].copy_from_slice(&seq.to_le_bytes());
        r[..8].copy_from_slice(&now_ns().to_le_bytes());
        r.commit();
        p.wait_control(T)
            .context("ping ack")?
            .context("no ping ack")?;
    }
    p.close();
    let mut raw = Vec::new();
    loop {
        let m = p
            .wait_control(T)
            .context("ping results")?
            .context("no ping results")?;
        if m.is_empty() {
            break;
        }
        raw.extend_from_slice(&m);
    }
    drop(p);
    finish(run)?;
    let mut lat: Vec<u64> = raw
        .chunks_exact(8)
        .map(|w| u64::from_le_bytes(w.try_into().expect("8 bytes")))
        .collect();
    if lat.len() != pings {
        bail!(
            "consumer reported {} latencies for {pings} pings",
            lat.len()
        );
    }
    lat.drain(..pings / 10);
    lat.sort_unstable();
    Ok(lat)
}

/// One frame size's result.
#[derive(Debug, serde::Serialize)]
struct FrameRow {
    frame_bytes: usize,
    ring_gbps: f64,
    memcpy_gbps: f64,
    ratio: f64,
}

/// The JSON object printed by `--json`.
#[derive(Debug, serde::Serialize)]
struct Report {
    frames: Vec<FrameRow>,
    handoff_p50_us: f64,
    handoff_p99_us: f64,
}

/// Runs `hydrofeed bench ring`.
pub fn run(args: Args) -> anyhow::Result<()> {
    if let Some(path) = &args.consumer {
        return run_consumer(path, args.ping);
    }
    if args.pings < 10 || args.reps == 0 || args.capacity < 2 * FRAME_SIZES[FRAME_SIZES.len() - 1] {
        bail!("--pings must be at least 10, --reps at least 1, --capacity at least 8 MiB");
    }
    // Source: pseudo-random words, touched; per-frame sums precomputed for the check.
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let src: Vec<u8> = (0..SOURCE_BYTES / 8)
        .flat_map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x.to_le_bytes()
        })
        .collect();
    let mut dst = vec![1u8; args.capacity.next_power_of_two()];
    let mut rows = Vec::new();
    for &frame in &FRAME_SIZES {
        let frames = args.bytes / frame as u64;
        let per_pos: Vec<u64> = src.chunks_exact(frame).map(sum_u64).collect();
        let expect =
            (0..frames as usize).fold(0u64, |a, i| a.wrapping_add(per_pos[i % per_pos.len()]));
        let (mut best_ring, mut best_copy) = (0f64, 0f64);
        for _ in 0..args.reps {
            best_copy = best_copy.max(memcpy_run(&src, &mut dst, frame, args.bytes));
            best_ring = best_ring.max(ring_run(&src, frame, args.bytes, args.capacity, expect)?);
        }
        eprintln!(
            "frame {:>8} B: ring {best_ring:6.2} GB/s, memcpy {best_copy:6.2} GB/s, ratio {:.2}",
            frame,
            best_ring / best_copy
        );
        rows.push(FrameRow {
            frame_bytes: frame,
            ring_gbps: best_ring,
            memcpy_gbps: best_copy,
            ratio: best_ring / best_copy,
        });
    }
    let hot = ping_run(args.pings, Duration::ZERO)?;
    let (p50, p99) = (pct(&hot, 0.5), pct(&hot, 0.99));
    eprintln!("handoff (consumer waiting): p50 {p50:.1} us, p99 {p99:.1} us");
    let idle = ping_run(args.pings.min(2000), Duration::from_millis(1))?;
    eprintln!(
        "handoff after 1 ms idle (futex wake): p50 {:.1} us, p99 {:.1} us",
        pct(&idle, 0.5),
        pct(&idle, 0.99)
    );
    let out = Report {
        frames: rows,
        handoff_p50_us: p50,
        handoff_p99_us: p99,
    };
    if args.json {
        println!("{}", serde_json::to_string(&out)?);
    } else {
        println!("{}", serde_json::to_string_pretty(&out)?);
    }
    Ok(())
}
