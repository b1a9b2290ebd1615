//! The feeder's Prometheus text endpoint (per-rank counters and stage).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use super::figures;
use super::stats::{RankStats, STAGES};
use crate::{Error, Result};

/// Prometheus text of the feeder's counters, and of the trainers' figures that came with their
/// acks (`hydrofeed_feed_*`: only for ranks whose trainer reported).
pub fn render_metrics(stats: &[Arc<RankStats>], uptime: f64) -> String {
    let mut s = String::new();
    let mut some_metric =
        |name: &str, help: &str, kind: &str, f: &dyn Fn(&RankStats) -> Option<f64>| {
            s.push_str(&format!("# HELP {name} {help}\n# TYPE {name} {kind}\n"));
            for st in stats {
                let r = st.rank.load(Ordering::Relaxed);
                if let Some(v) = f(st) {
                    s.push_str(&format!("{name}{{rank=\"{r}\"}} {v}\n"));
                }
            }
        };
    let feed =
        |f: fn(&figures::TrainerFigures) -> Option<f64>| move |st: &RankStats| f(&st.trainer());
    some_metric(
        "hydrofeed_feed_steps_total",
        "Batches the trainer took (its steps), as of its last ack",
        "counter",
        &feed(|t| t.latest().map(|r| r.batches as f64)),
    );
    some_metric(
        "hydrofeed_feed_rows_total",
        "Rows in the batches the trainer took, as of its last ack",
        "counter",
        &feed(|t| t.latest().map(|r| r.rows as f64)),
    );
    some_metric(
        "hydrofeed_feed_rows_per_second",
        "Rows per second the trainer took, over the last 10 s of its reports",
        "gauge",
        &feed(|t| t.rows_per_second()),
    );
    some_metric(
        "hydrofeed_feed_wait_fraction",
        "Share of the trainer's time spent waiting for input (ring, GPU copies), over the last \
         10 s of its reports",
        "gauge",
        &feed(|t| t.wait_fraction()),
    );
    some_metric(
        "hydrofeed_feed_wait_seconds_total",
        "Seconds the trainer waited for input since its first batch",
        "counter",
        &feed(|t| t.latest().map(|r| r.wait_us as f64 / 1e6)),
    );
    some_metric(
        "hydrofeed_feed_seconds_total",
        "Seconds since the trainer's first batch (rate(wait_seconds_total) / rate(this): the \
         wait share over any window)",
        "counter",
        &feed(|t| t.latest().map(|r| r.elapsed_us as f64 / 1e6)),
    );
    some_metric(
        "hydrofeed_feed_gpu_utilization",
        "Utilisation of the trainer's GPU in percent (NVML), when its batches go to a GPU",
        "gauge",
        &feed(|t| t.latest().and_then(|r| r.gpu_utilization).map(f64::from)),
    );
    some_metric(
        "hydrofeed_feed_reports_refused_total",
        "Trainer reports refused as impossible (a wait longer than its time, counters going \
         backwards)",
        "counter",
        &feed(|t| Some(t.refused as f64)),
    );
    let mut metric = |name: &str, help: &str, kind: &str, f: &dyn Fn(&RankStats) -> f64| {
        some_metric(name, help, kind, &|st| Some(f(st)))
    };
    let up = uptime.max(1e-9);
    metric(
        "hydrofeed_feeder_rows_total",
        "Rows read and decoded (ahead of the ring by at most the rank's memory budget)",
        "counter",
        &|st| st.rows_read.load(Ordering::Relaxed) as f64,
    );
    metric(
        "hydrofeed_feeder_rows_per_second",
        "Rows per second since start",
        "gauge",
        &|st| st.rows_read.load(Ordering::Relaxed) as f64 / up,
    );
    metric(
        "hydrofeed_feeder_bytes_total",
        "Frame bytes written into the ring",
        "counter",
        &|st| st.bytes.load(Ordering::Relaxed) as f64,
    );
    metric(
        "hydrofeed_feeder_bytes_per_second",
        "Frame bytes per second since start",
        "gauge",
        &|st| st.bytes.load(Ordering::Relaxed) as f64 / up,
    );
    metric(
        "hydrofeed_feeder_batches_total",
        "Batches written",
        "counter",
        &|st| st.batches.load(Ordering::Relaxed) as f64,
    );
    metric(
        "hydrofeed_feeder_rows_acked_total",
        "Rows the trainer acked",
        "counter",
        &|st| st.rows_acked.load(Ordering::Relaxed) as f64,
    );
    metric(
        "hydrofeed_feeder_rows_skipped_total",
        "Rows decoded and dropped to reach a lease start",
        "counter",
        &|st| st.rows_skipped.load(Ordering::Relaxed) as f64,
    );
    metric(
        "hydrofeed_feeder_rows_passed_total",
        "Rows passed over unread (whole row groups, stripes, blocks, records) to reach a lease start",
        "counter",
        &|st| st.rows_passed.load(Ordering::Relaxed) as f64,
    );
    metric(
        "hydrofeed_feeder_ring_batches_unacked",
        "Batches in the ring or held by the trainer, not yet acked (ring occupancy)",
        "gauge",
        &|st| {
            st.batches
                .load(Ordering::Relaxed)
                .saturating_sub(st.batches_acked.load(Ordering::Relaxed)) as f64
        },
    );
    metric(
        "hydrofeed_feeder_storage_bytes_total",
        "Bytes the readers got from storage (compressed, as stored)",
        "counter",
        &|st| st.storage_bytes.load(Ordering::Relaxed) as f64,
    );
    metric(
        "hydrofeed_feeder_storage_read_seconds_total",
        "Seconds reader threads were blocked reading storage (summed over threads)",
        "counter",
        &|st| st.storage_us.load(Ordering::Relaxed) as f64 / 1e6,
    );
    metric(
        "hydrofeed_feeder_ring_full_seconds_total",
        "Seconds stalled because the ring was full (trainer slower than the feeder)",
        "counter",
        &|st| st.ring_wait_ms.load(Ordering::Relaxed) as f64 / 1000.0,
    );
    metric(
        "hydrofeed_feeder_epoch_barrier_seconds_total",
        "Seconds stalled waiting for work (epoch barrier: other ranks not done)",
        "counter",
        &|st| st.work_wait_ms.load(Ordering::Relaxed) as f64 / 1000.0,
    );
    let (cpu, _) = own_usage();
    s.push_str(&format!(
        "# HELP hydrofeed_feeder_cpu_seconds_total CPU seconds of the feeder process (decode, \
         copies into the rings; rate() = cores used)\n# TYPE hydrofeed_feeder_cpu_seconds_total \
         counter\nhydrofeed_feeder_cpu_seconds_total {cpu}\n"
    ));
    s.push_str("# HELP hydrofeed_feeder_stage Current stage per rank (1 = in this stage)\n# TYPE hydrofeed_feeder_stage gauge\n");
    for st in stats {
        let r = st.rank.load(Ordering::Relaxed);
        let cur = st.stage();
        for x in STAGES {
            s.push_str(&format!(
                "hydrofeed_feeder_stage{{rank=\"{r}\",stage=\"{}\"}} {}\n",
                x.as_str(),
                u8::from(x == cur)
            ));
        }
    }
    s
}

pub(super) fn spawn_metrics(
    addr: SocketAddr,
    stats: Vec<Arc<RankStats>>,
    t0: Instant,
) -> Result<SocketAddr> {
    let l = TcpListener::bind(addr)
        .map_err(|e| Error::InvalidArgument(format!("cannot listen on {addr} for metrics: {e}")))?;
    let local = l.local_addr().map_err(|e| Error::Internal(e.to_string()))?;
    thread::Builder::new()
        .name("hf-metrics".into())
        .spawn(move || {
            for c in l.incoming() {
                let Ok(mut c) = c else { continue };
                let _ = c.set_read_timeout(Some(Duration::from_secs(2)));
                let mut buf = [0u8; 2048];
                let _ = c.read(&mut buf);
                let body = render_metrics(&stats, t0.elapsed().as_secs_f64());
                let _ = write!(
                    c,
                    "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
            }
        })
        .map_err(|e| Error::external("spawning the metrics thread", e))?;
    tracing::info!("feeder metrics on http://{local}/metrics");
    Ok(local)
}

/// CPU seconds (user + system) and max RSS (MiB) of this process.
pub fn own_usage() -> (f64, f64) {
    // SAFETY: `rusage` is plain old data; all-zero is a valid value.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `u` is a valid, writable `rusage` for the call's duration.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) } != 0 {
        return (f64::NAN, f64::NAN);
    }
    let t = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
    (t(u.ru_utime) + t(u.ru_stime), u.ru_maxrss as f64 / 1024.0)
}
