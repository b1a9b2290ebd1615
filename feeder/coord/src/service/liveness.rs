//! The liveness tick's log: every death, and stalls one by one up to a few, then as one line.

use crate::machine::LivenessEvent;

/// Stalls of one tick logged one by one; past this many, the rest in one line.
const STALLS_LOGGED_EACH: usize = 8;

/// Logs a tick's liveness events: every death, and the stalls one by one up to
/// [`STALLS_LOGGED_EACH`], then the others as one line (thousands of ranks silent at once, a
/// slow gang start or a network partition, would be thousands of lines; the metrics name
/// every stalled rank).
pub(super) fn log_liveness(events: &[LivenessEvent]) {
    let mut more = Vec::new();
    for ev in events {
        match ev {
            LivenessEvent::Stalled {
                rank,
                host,
                stage,
                silent_ms,
            } => {
                if more.len() < STALLS_LOGGED_EACH {
                    tracing::warn!(
                        "worker rank {rank} on {host} stalled: silent for {:.1} s, last stage: {}",
                        *silent_ms as f64 / 1000.0,
                        stage.as_str()
                    );
                }
                more.push(*rank);
            }
            LivenessEvent::Dead {
                rank,
                host,
                stage,
                silent_ms,
                requeued_rows,
            } => tracing::error!(
                "worker rank {rank} on {host} declared dead: silent for {:.1} s, last stage: {}; \
                 {requeued_rows} un-acked rows re-queued",
                *silent_ms as f64 / 1000.0,
                stage.as_str()
            ),
        }
    }
    if more.len() > STALLS_LOGGED_EACH {
        let rest = &more[STALLS_LOGGED_EACH..];
        tracing::warn!(
            "{} more workers stalled (ranks {}{}): each is in the metrics \
             (`hydrofeed_coord_worker_stalled`)",
            rest.len(),
            rest.iter()
                .take(16)
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", "),
            if rest.len() > 16 { ", ..." } else { "" }
        );
    }
}
