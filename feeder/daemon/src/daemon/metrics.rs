//! The feeder's Prometheus text endpoint (per-rank counters and stage).

use super::*;

/// Prometheus text of the feeder's counters.
pub fn render_metrics(stats: &[Arc<RankStats>], uptime: f64) -> String {
    let mut s = String::new();
    let mut metric = |name: &str, help: &str, kind: &str, f: &dyn Fn(&RankStats) -> f64| {
        s.push_str(&format!("# HELP {name} {help}\n# TYPE {name} {kind}\n"));
        for st in stats {
            let r = st.rank.load(Ordering::Relaxed);
            s.push_str(&format!("{name}{{rank=\"{r}\"}} {}\n", f(st)));
        }
    };
    let up = uptime.max(1e-9);
    metric(
        "hydrofeed_feeder_rows_total",
        "Rows written into the ring",
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
