//! Session requests held at an epoch barrier, answered together by the call that frees work.
//!
//! A request told to wait is kept here ([`Inner::hold_request`]) instead of being answered
//! "wait" and retried. When work may have come free (an epoch opened, the feed ended, a rank
//! died and its rows went back), the call that freed it asks every held request again in the
//! same lock acquisition, their journal records kept and written at once
//! ([`Inner::grant_held`]); the answers go out when those records are written
//! ([`Inner::deliver`], from [`Inner::release`]), each request then waiting for the one sync that
//! covers them all. At 10,000 feeders an epoch opening is one lock, one journal write and one
//! sync for the 10,000 grants, where each woken request took the lock, wrote its record and
//! signalled the sync thread on its own.

use std::time::Instant;

use tokio::sync::oneshot;
use tonic::Status;

use super::{status_of, Inner};
use crate::machine::Work;
use crate::{proto, Error};

/// A work request's answer: the work with its journal record's sequence number, or the error.
type Answer = Result<(u64, Work), Status>;

/// A held request's answer, the epoch after it, and when the grants that made it began (the
/// hold's end: the time until its session gets to it is latency).
pub(super) type Granted = (Answer, u32, Instant);

/// A session's work request told to wait.
struct Held {
    req: proto::WorkRequest,
    tx: oneshot::Sender<Granted>,
}

/// The held requests, and the answers made for them whose journal records are not written yet.
#[derive(Default)]
pub(super) struct HeldRequests {
    waiting: Vec<Held>,
    granted: Vec<(oneshot::Sender<Granted>, Answer, Instant)>,
    /// `waiting.len()` after the last sweep of requests whose session gave up waiting.
    swept: usize,
}

impl HeldRequests {
    /// The requests held now.
    #[cfg(test)]
    pub(super) fn waiting(&self) -> usize {
        self.waiting.len()
    }
}

impl Inner {
    /// Holds `req` (told to wait) until work may come free; the receiver gets its answer. A
    /// request whose session stopped waiting (the hold's time passed, the stream broke) is
    /// dropped, at the latest when the held requests have doubled since the last sweep.
    pub(super) fn hold_request(&mut self, req: proto::WorkRequest) -> oneshot::Receiver<Granted> {
        let h = &mut self.held;
        if h.waiting.len() >= 64 && h.waiting.len() >= 2 * h.swept {
            h.waiting.retain(|w| !w.tx.is_closed());
            h.swept = h.waiting.len();
        }
        let (tx, rx) = oneshot::channel();
        h.waiting.push(Held { req, tx });
        rx
    }

    /// Work may have come free: every held request is asked again now, in this lock, its
    /// records kept with those of the call that freed the work (a session message's) or
    /// written together here. Each is answered, lease, wait or error, as a retry would be.
    pub(super) fn grant_held(&mut self, now: u64) {
        if self.held.waiting.is_empty() {
            return;
        }
        let inside = self.journal.as_ref().is_some_and(|j| j.holding());
        let first = self.seq;
        let (t0, n) = (Instant::now(), self.held.waiting.len());
        if !inside {
            self.hold();
        }
        for h in std::mem::take(&mut self.held.waiting) {
            if h.tx.is_closed() {
                continue;
            }
            let r = self.request_work(&h.req, now);
            self.held.granted.push((h.tx, r, t0));
        }
        self.held.swept = 0;
        if !inside {
            if let Err(e) = self.release(first) {
                tracing::error!("journal: the grants of held requests: {e}");
            }
        }
        tracing::debug!(
            held = n,
            took_us = t0.elapsed().as_micros() as u64,
            "held requests asked again"
        );
    }

    /// Sends the answers made by [`Inner::grant_held`] once their records are written;
    /// `failed`: the write failed, so no lease of theirs can be promised.
    pub(super) fn deliver(&mut self, failed: Option<&Error>) {
        if self.held.granted.is_empty() {
            return;
        }
        let epoch = self.m.epoch();
        for (tx, r, at) in std::mem::take(&mut self.held.granted) {
            let r = match (failed, r) {
                (Some(e), Ok(_)) => Err(status_of(Error::Internal(format!(
                    "the coordinator's journal: {e}"
                )))),
                (_, r) => r,
            };
            // A session that stopped waiting asks again; its lease, granted, is its again.
            let _ = tx.send((r, epoch, at));
        }
    }
}
