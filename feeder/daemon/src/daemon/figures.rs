//! The trainer's own figures, as it reports them with its acks ([`FeedReport`]): steps, rows,
//! and the time it waited for input. The feeder serves them as Prometheus metrics per rank and
//! uses its step time to tell a slow trainer from one that stopped taking batches.
//!
//! A trainer's word: a report that cannot be true (a wait longer than the time it is part of,
//! counters going backwards, more batches than rows, a utilisation above 100%) is refused,
//! counted, and warned about once per rank; the ack it came with still counts.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use hydrofeed_tfbridge::FeedReport;

/// The rates are taken over about this much of the trainer's time.
pub(super) const WINDOW: Duration = Duration::from_secs(10);
/// Reports closer together than this (on the trainer's clock) replace the newest kept one, so
/// the window holds a few dozen of them whatever the ack rate.
const SPACING_US: u64 = 250_000;

/// What one rank's trainer said about itself.
#[derive(Debug, Default)]
pub(super) struct TrainerFigures {
    /// Accepted reports, oldest first: those of the last [`WINDOW`] and one before.
    window: VecDeque<FeedReport>,
    /// When the last ack arrived (with or without a report).
    last_ack: Option<Instant>,
    /// Reports refused.
    pub(super) refused: u64,
}

/// Why a report cannot be true, if it cannot.
fn implausible(prev: Option<&FeedReport>, r: &FeedReport) -> Option<&'static str> {
    if r.wait_us > r.elapsed_us {
        return Some("it waited longer than it ran");
    }
    if r.batches > r.rows {
        return Some("more batches than rows");
    }
    if r.gpu_utilization.is_some_and(|u| u > 100) {
        return Some("a GPU utilisation above 100%");
    }
    match prev {
        Some(p)
            if r.batches < p.batches
                || r.rows < p.rows
                || r.elapsed_us < p.elapsed_us
                || r.wait_us < p.wait_us =>
        {
            Some("its counters went backwards")
        }
        _ => None,
    }
}

impl TrainerFigures {
    /// An ack arrived at `now`, with the trainer's report if it sent one. `Err`: the report
    /// was refused (why).
    pub(super) fn ack(
        &mut self,
        now: Instant,
        r: Option<FeedReport>,
    ) -> std::result::Result<(), &'static str> {
        self.last_ack = Some(now);
        let Some(r) = r else { return Ok(()) };
        if let Some(why) = implausible(self.window.back(), &r) {
            self.refused += 1;
            return Err(why);
        }
        let n = self.window.len();
        if n >= 2 && r.elapsed_us - self.window[n - 2].elapsed_us < SPACING_US {
            self.window[n - 1] = r;
        } else {
            self.window.push_back(r);
        }
        let since = r.elapsed_us.saturating_sub(WINDOW.as_micros() as u64);
        while self.window.len() > 2 && self.window[1].elapsed_us <= since {
            self.window.pop_front();
        }
        Ok(())
    }

    /// The last accepted report.
    pub(super) fn latest(&self) -> Option<&FeedReport> {
        self.window.back()
    }

    /// The oldest and newest report of the window, when they differ in time (else the newest
    /// against the trainer's first batch).
    fn span(&self) -> Option<(FeedReport, FeedReport)> {
        let last = *self.window.back()?;
        let first = *self.window.front()?;
        if last.elapsed_us > first.elapsed_us {
            Some((first, last))
        } else if last.elapsed_us > 0 {
            Some((FeedReport::default(), last))
        } else {
            None
        }
    }

    /// The share of the trainer's time spent waiting for input, over the last [`WINDOW`] of
    /// its reports.
    pub(super) fn wait_fraction(&self) -> Option<f64> {
        let (a, b) = self.span()?;
        let dt = (b.elapsed_us - a.elapsed_us) as f64;
        Some(((b.wait_us.saturating_sub(a.wait_us)) as f64 / dt).clamp(0.0, 1.0))
    }

    /// Rows the trainer took per second, over the last [`WINDOW`] of its reports.
    pub(super) fn rows_per_second(&self) -> Option<f64> {
        let (a, b) = self.span()?;
        let dt = (b.elapsed_us - a.elapsed_us) as f64 / 1e6;
        Some(b.rows.saturating_sub(a.rows) as f64 / dt)
    }

    /// The trainer's mean time per step over the window (`None` before two steps).
    pub(super) fn mean_step(&self) -> Option<Duration> {
        let (a, b) = self.span()?;
        let steps = b.batches.saturating_sub(a.batches);
        (steps > 0).then(|| Duration::from_micros((b.elapsed_us - a.elapsed_us) / steps))
    }

    /// How long ago the trainer last acked (`None`: it never did).
    pub(super) fn since_ack(&self, now: Instant) -> Option<Duration> {
        self.last_ack.map(|t| now.saturating_duration_since(t))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rep(batches: u64, elapsed_ms: u64, wait_ms: u64) -> FeedReport {
        FeedReport {
            batches,
            rows: batches * 64,
            elapsed_us: elapsed_ms * 1000,
            wait_us: wait_ms * 1000,
            gpu_utilization: None,
        }
    }

    /// Rates over the window: a trainer that waited 1 s of every 4 for 40 s, then none.
    #[test]
    fn rates_cover_the_last_window() {
        let mut f = TrainerFigures::default();
        let t = Instant::now();
        assert_eq!(f.wait_fraction(), None);
        for i in 1..=40u64 {
            f.ack(t, Some(rep(i * 10, i * 1000, i * 250))).unwrap();
        }
        assert!((f.wait_fraction().unwrap() - 0.25).abs() < 1e-9);
        assert!((f.rows_per_second().unwrap() - 640.0).abs() < 1e-6);
        assert_eq!(f.mean_step(), Some(Duration::from_millis(100)));
        for i in 41..=60u64 {
            f.ack(t, Some(rep(i * 10, i * 1000, 40 * 250))).unwrap();
        }
        assert_eq!(f.wait_fraction(), Some(0.0));
        assert!(f.window.len() <= 12, "{}", f.window.len());
        // One report only: against its first batch.
        let mut g = TrainerFigures::default();
        g.ack(t, Some(rep(5, 2000, 500))).unwrap();
        assert_eq!(g.wait_fraction(), Some(0.25));
    }

    /// Acks every few milliseconds keep a few dozen reports, not thousands.
    #[test]
    fn frequent_reports_are_thinned() {
        let mut f = TrainerFigures::default();
        let t = Instant::now();
        for i in 1..=20_000u64 {
            f.ack(t, Some(rep(i, i * 2, i))).unwrap();
        }
        assert!(f.window.len() <= 45, "{}", f.window.len());
        assert!((f.wait_fraction().unwrap() - 0.5).abs() < 1e-3);
    }

    /// A hostile or broken trainer's impossible figures are refused, counted, and change
    /// nothing; the ack itself still counts.
    #[test]
    fn impossible_reports_are_refused() {
        let mut f = TrainerFigures::default();
        let t = Instant::now();
        f.ack(t, Some(rep(10, 1000, 100))).unwrap();
        let bad = [
            rep(11, 1100, 1200), // waited longer than it ran
            rep(9, 1200, 100),   // steps went backwards
            rep(12, 900, 100),   // its clock went backwards
            FeedReport {
                rows: 5,
                ..rep(12, 1300, 100)
            }, // more batches than rows
            FeedReport {
                gpu_utilization: Some(101),
                ..rep(12, 1300, 100)
            },
            FeedReport {
                elapsed_us: u64::MAX,
                wait_us: u64::MAX,
                ..rep(12, 0, 0)
            },
        ];
        for (i, r) in bad.into_iter().enumerate() {
            let later = t + Duration::from_secs(i as u64 + 1);
            let ok = f.ack(later, Some(r));
            if i < 5 {
                assert!(ok.is_err(), "{r:?}");
                assert_eq!(f.since_ack(later), Some(Duration::ZERO));
            }
        }
        assert_eq!(f.refused, 5);
        // The extreme but possible one was taken, and the arithmetic holds.
        assert!(f.wait_fraction().is_some_and(|w| (0.0..=1.0).contains(&w)));
        assert!(f.rows_per_second().is_some_and(f64::is_finite));
    }
}
