//! The `Session` stream: one bidirectional stream per feeder in place of its three unary calls
//! a second. Each message is a heartbeat, the acks since the last one and, optionally, a work
//! request; it is applied under one lock by the unary handlers' bodies (`Inner::heartbeat`,
//! `Inner::ack`, `Inner::request_work`), and answered by one reply, in order, once every
//! journal record it wrote is durable (the group commit's wait, as a unary call's). The token
//! was checked by the interceptor when the stream opened. A stream that ends or breaks is
//! the feeder's last heartbeat: nothing is reclaimed here, the dead-after rule does it.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::sync::oneshot;
use tonic::codegen::tokio_stream::Stream;
use tonic::{Status, Streaming};

use super::held::Granted;
use super::{work_reply, Inner, Shared};
use crate::proto;

/// The next message's answer, with the stream to read the one after from (`None`: the
/// feeder's stream ended or broke).
type Step = Pin<Box<dyn Future<Output = Option<(proto::SessionReply, Inbound)>> + Send>>;
type Inbound = Streaming<proto::SessionRequest>;

/// The replies of one session, in the order of its messages: each is made when the
/// connection asks for the next one, in the task that sends it (no task or channel of its
/// own, so a message costs no more wakeups than its frames).
pub struct Replies {
    sh: Arc<Shared>,
    step: Option<Step>,
}

/// Serves one session.
pub(super) fn serve(sh: Arc<Shared>, inbound: Inbound) -> Replies {
    Replies {
        step: Some(step(sh.clone(), inbound)),
        sh,
    }
}

fn step(sh: Arc<Shared>, mut inbound: Inbound) -> Step {
    Box::pin(async move {
        let msg = match inbound.message().await {
            Ok(Some(m)) => m,
            Ok(None) => return None,
            Err(s) => {
                tracing::debug!("a feeder's session broke: {s}");
                return None;
            }
        };
        Some((answer(&sh, &msg).await, inbound))
    })
}

impl Stream for Replies {
    type Item = Result<proto::SessionReply, Status>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let Some(f) = self.step.as_mut() else {
            return Poll::Ready(None);
        };
        match f.as_mut().poll(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(None) => {
                self.step = None;
                Poll::Ready(None)
            }
            Poll::Ready(Some((reply, inbound))) => {
                self.step = Some(step(self.sh.clone(), inbound));
                Poll::Ready(Some(Ok(reply)))
            }
        }
    }
}

/// Names the milliseconds a request told to wait is held at most (default [`HOLD_MS`]; 0:
/// answered at once, the feeder asks again). Held requests are answered together when the
/// epoch opens: one message per feeder at a barrier instead of one per retry, for a burst of
/// grants then.
pub const HOLD_ENV: &str = "HYDROFEED_COORD_HOLD_MS";

/// The default of [`HOLD_ENV`].
const HOLD_MS: u64 = 1000;

/// [`HOLD_ENV`], or its default; never more than half the stall timeout, so that a held rank
/// is never reported silent.
pub(super) fn hold_for(stall_after_ms: u64) -> Result<Duration, String> {
    let ms = match std::env::var(HOLD_ENV) {
        Ok(v) => v
            .trim()
            .parse::<u64>()
            .map_err(|_| format!("{HOLD_ENV}={v:?}: not a number of milliseconds"))?,
        Err(_) => HOLD_MS,
    };
    Ok(Duration::from_millis(ms.min(stall_after_ms / 2)))
}

/// Applies one message and waits until what it recorded is durable. A request that would be
/// told to wait is held (`service::held`) until the call that frees work answers it or
/// [`HOLD_ENV`]'s time passed: a feeder at an epoch barrier sends one message, not one a retry.
pub(super) async fn answer(sh: &Shared, msg: &proto::SessionRequest) -> proto::SessionReply {
    sh.count(true);
    let now = sh.now_ms();
    let mut reply = proto::SessionReply::default();
    let mut seq = 0;
    let held = {
        let mut g = sh.lock();
        // The message's records in one write.
        let first = g.seq;
        g.hold();
        if let Err(e) = apply(&mut g, msg, now, &mut reply, &mut seq) {
            reply.error = Some(e);
        }
        if let Err(e) = g.release(first) {
            let acks_applied = reply.error.as_ref().map_or(0, |e| e.acks_applied);
            reply.work = None;
            reply.error = Some(error("journal", acks_applied, &super::status_of(e)));
            // Nothing of the message was written: nothing to wait for.
            seq = 0;
        }
        reply.epoch = g.m.epoch();
        let hold = sh
            .hold
            .min(Duration::from_millis(g.m.config().stall_after_ms / 2));
        match &msg.work {
            Some(w) if told_to_wait(&reply) && !hold.is_zero() => {
                Some((g.hold_request(w.clone()), hold, std::time::Instant::now()))
            }
            _ => None,
        }
    };
    if let Some((granted, hold, t0)) = held {
        // Held until the answer was made; the wait for this task to run after is latency.
        let end = match wait_held(sh, granted, hold).await {
            Some((work, epoch, at)) => {
                match work {
                    Ok((s, work)) => {
                        seq = seq.max(s);
                        reply.work = Some(work_reply(work));
                    }
                    Err(s) => {
                        reply.work = None;
                        reply.error = Some(error("request_work", msg.acks.len() as u32, &s));
                    }
                }
                reply.epoch = epoch;
                at
            }
            None => std::time::Instant::now(),
        };
        reply.held_ms = end.saturating_duration_since(t0).as_millis() as u32;
    }
    if let Err(s) = sh.durable(seq).await {
        // Nothing the message changed can be promised: no lease goes out.
        reply.work = None;
        let acks_applied = reply.error.as_ref().map_or(0, |e| e.acks_applied);
        reply.error = Some(error("journal", acks_applied, &s));
    }
    reply
}

/// A held request's answer, waited for until `hold` passed. A grant made as the hold ran out
/// is taken, not lost: the receiver is read and dropped under the lock that grants, so no grant
/// comes after it. (Dropped outside it, a grant made in between would leave a lease outstanding
/// that nobody was told of, and its epoch could not close before the dead-after rule.)
async fn wait_held(
    sh: &Shared,
    mut granted: oneshot::Receiver<Granted>,
    hold: Duration,
) -> Option<Granted> {
    if let Ok(r) = tokio::time::timeout(hold, &mut granted).await {
        return r.ok();
    }
    let g = sh.lock();
    let r = granted.try_recv().ok();
    drop(granted);
    drop(g);
    r
}

fn told_to_wait(r: &proto::SessionReply) -> bool {
    use proto::work_reply::Kind;
    r.error.is_none()
        && matches!(
            r.work.as_ref().and_then(|w| w.kind.as_ref()),
            Some(Kind::WaitMs(_))
        )
}

/// The heartbeat, the acks in order, then the request; stops at the first error. `seq` is
/// the last journal record written.
fn apply(
    g: &mut Inner,
    msg: &proto::SessionRequest,
    now: u64,
    reply: &mut proto::SessionReply,
    seq: &mut u64,
) -> Result<(), proto::SessionError> {
    let Some(hb) = &msg.heartbeat else {
        let s = Status::invalid_argument(
            "a session message without its heartbeat (rank, incarnation): every message \
             carries one",
        );
        return Err(error("heartbeat", 0, &s));
    };
    // A heartbeat of no stage only names the sender (an ack or a request from a thread that
    // does not report): liveness, keeping the stage and counters last reported.
    let alive = if hb.stage == proto::Stage::Unspecified as i32 {
        g.m.seen(hb.rank, hb.incarnation, now)
            .map_err(super::status_of)
    } else {
        g.heartbeat(hb, now)
    };
    reply.alive = alive.map_err(|s| error("heartbeat", 0, &s))?;
    for (i, a) in msg.acks.iter().enumerate() {
        let s = g.ack(a, now).map_err(|s| error("ack", i as u32, &s))?;
        *seq = (*seq).max(s);
    }
    if let Some(w) = &msg.work {
        let acks = msg.acks.len() as u32;
        let (s, work) = g
            .request_work(w, now)
            .map_err(|s| error("request_work", acks, &s))?;
        *seq = (*seq).max(s);
        reply.work = Some(work_reply(work));
    }
    Ok(())
}

fn error(stage: &str, acks_applied: u32, s: &Status) -> proto::SessionError {
    proto::SessionError {
        code: s.code() as i32,
        message: s.message().to_string(),
        stage: stage.to_string(),
        acks_applied,
    }
}
