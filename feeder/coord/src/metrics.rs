//! Prometheus text metrics of the coordinator, served over plain HTTP by a tiny tokio
//! handler (`GET /metrics`; anything else is 404). No HTTP library: one request per
//! connection, a 5 s read timeout, 8 KiB of request head at most.

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::Machine;

/// Prometheus text exposition of a machine's counters, `uptime_s` seconds after start.
pub fn render(m: &Machine, uptime_s: f64, now_ms: u64) -> String {
    let k = m.counters();
    let mut s = String::new();
    let mut metric = |name: &str, kind: &str, help: &str, v: f64| {
        let _ = writeln!(s, "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {v}");
    };
    metric(
        "hydrofeed_coord_epoch",
        "gauge",
        "Current training epoch.",
        f64::from(m.epoch()),
    );
    metric(
        "hydrofeed_coord_finished",
        "gauge",
        "1 once every epoch is done.",
        f64::from(u8::from(m.finished())),
    );
    metric(
        "hydrofeed_coord_rows_acked_total",
        "counter",
        "Rows consumed by trainers.",
        k.rows_acked as f64,
    );
    metric(
        "hydrofeed_coord_rows_per_second",
        "gauge",
        "Rows acked per second since start (use rate() on rows_acked_total for windows).",
        if uptime_s > 0.0 {
            k.rows_acked as f64 / uptime_s
        } else {
            0.0
        },
    );
    metric(
        "hydrofeed_coord_rows_dropped_total",
        "counter",
        "Rows dropped by remainder=drop.",
        k.rows_dropped as f64,
    );
    metric(
        "hydrofeed_coord_rows_padded_total",
        "counter",
        "Pad rows acked (remainder=pad).",
        k.rows_padded as f64,
    );
    metric(
        "hydrofeed_coord_rows_wrapped_total",
        "counter",
        "Rows taken from the next epoch (remainder=wrap).",
        k.rows_wrapped as f64,
    );
    metric(
        "hydrofeed_coord_assignments_total",
        "counter",
        "Leases handed out.",
        k.assignments as f64,
    );
    metric(
        "hydrofeed_coord_stalls_total",
        "counter",
        "Stalls reported.",
        k.stalls as f64,
    );
    metric(
        "hydrofeed_coord_deaths_total",
        "counter",
        "Workers declared dead.",
        k.deaths as f64,
    );
    metric(
        "hydrofeed_coord_leases_outstanding",
        "gauge",
        "Leases handed out, not fully acked.",
        m.outstanding() as f64,
    );
    metric(
        "hydrofeed_coord_steps_per_epoch",
        "gauge",
        "Steps per worker in the current epoch.",
        (m.quota() / m.config().batch_size) as f64,
    );
    let _ = writeln!(s, "# HELP hydrofeed_coord_worker_steps Steps fed to a worker (acked).\n# TYPE hydrofeed_coord_worker_steps gauge");
    for (rank, r) in m.ranks().iter().enumerate() {
        let steps = m.steps_of(rank as u32);
        let _ = writeln!(
            s,
            "hydrofeed_coord_worker_steps{{rank=\"{rank}\",host=\"{}\"}} {steps}",
            esc(&r.host)
        );
    }
    let _ = writeln!(s, "# HELP hydrofeed_coord_worker_alive 1 while the worker's incarnation is alive.\n# TYPE hydrofeed_coord_worker_alive gauge");
    for (rank, r) in m.ranks().iter().enumerate() {
        let _ = writeln!(
            s,
            "hydrofeed_coord_worker_alive{{rank=\"{rank}\",host=\"{}\"}} {}",
            esc(&r.host),
            u8::from(r.alive)
        );
    }
    let _ = writeln!(s, "# HELP hydrofeed_coord_worker_silent_seconds Seconds since the worker was last heard.\n# TYPE hydrofeed_coord_worker_silent_seconds gauge");
    for (rank, r) in m.ranks().iter().enumerate().filter(|(_, r)| r.joined) {
        let silent = now_ms.saturating_sub(r.last_seen_ms) as f64 / 1000.0;
        let _ = writeln!(
            s,
            "hydrofeed_coord_worker_silent_seconds{{rank=\"{rank}\",host=\"{}\"}} {silent}",
            esc(&r.host)
        );
    }
    let _ = writeln!(s, "# HELP hydrofeed_coord_worker_stalled 1 while the worker is silent past the stall timeout, labelled with its last stage.\n# TYPE hydrofeed_coord_worker_stalled gauge");
    for (rank, r) in m.ranks().iter().enumerate().filter(|(_, r)| r.joined) {
        let _ = writeln!(
            s,
            "hydrofeed_coord_worker_stalled{{rank=\"{rank}\",host=\"{}\",stage=\"{}\"}} {}",
            esc(&r.host),
            r.stage.as_str(),
            u8::from(r.stalled || !r.alive)
        );
    }
    s
}

/// Appends the feeders' steady-state traffic: `(session messages, unary calls)`.
pub fn render_traffic(s: &mut String, (session, unary): (u64, u64)) {
    let _ = writeln!(
        s,
        "# HELP hydrofeed_coord_session_messages_total Session messages answered.\n\
         # TYPE hydrofeed_coord_session_messages_total counter\n\
         hydrofeed_coord_session_messages_total {session}\n\
         # HELP hydrofeed_coord_unary_calls_total Unary RequestWork, Ack and Heartbeat calls.\n\
         # TYPE hydrofeed_coord_unary_calls_total counter\n\
         hydrofeed_coord_unary_calls_total {unary}"
    );
}

fn esc(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// Serves `GET /metrics` on `listener` until the task is aborted; `body` renders the page (the
/// service passes [`render`] of its machine).
pub async fn serve(
    listener: tokio::net::TcpListener,
    body: impl Fn() -> String + Send + Sync + 'static,
) {
    let body = Arc::new(body);
    loop {
        let Ok((mut sock, peer)) = listener.accept().await else {
            continue;
        };
        let body = body.clone();
        tokio::spawn(async move {
            let mut buf = vec![0u8; 8192];
            let mut n = 0;
            let read = tokio::time::timeout(Duration::from_secs(5), async {
                while n < buf.len() {
                    let k = sock.read(&mut buf[n..]).await?;
                    if k == 0 {
                        break;
                    }
                    n += k;
                    if buf[..n].windows(4).any(|w| w == b"\r\n\r\n") {
                        break;
                    }
                }
                Ok::<_, std::io::Error>(())
            })
            .await;
            if !matches!(read, Ok(Ok(()))) {
                tracing::debug!(%peer, "metrics request not read");
                return;
            }
            let head = String::from_utf8_lossy(&buf[..n]);
            let line = head.lines().next().unwrap_or("");
            let (code, body) = if line.starts_with("GET /metrics ") || line.starts_with("GET / ") {
                ("200 OK", body())
            } else {
                (
                    "404 Not Found",
                    "only GET /metrics is served here\n".to_string(),
                )
            };
            let resp = format!(
                "HTTP/1.1 {code}\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ =
                tokio::time::timeout(Duration::from_secs(5), sock.write_all(resp.as_bytes())).await;
            let _ = sock.shutdown().await;
        });
    }
}
