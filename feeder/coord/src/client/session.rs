//! The feeder's steady-state calls (work requests, acks, heartbeats) over one `Session`
//! stream per client, opened by the first of them on the client's connection (its TLS, its
//! token: the coordinator checks the token when the stream opens). A coordinator that answers
//! the opening with UNIMPLEMENTED (one older than the stream) gets the unary calls from then
//! on. Messages are answered in order: a stream that breaks, or a reply that does not come
//! within the call's deadline, is dropped (a late reply would answer the next message) and the
//! message goes again on a new stream under the client's retry rule, as a unary call would;
//! each is idempotent at the coordinator (heartbeats, cumulative or ranged acks, requests that
//! name the last lease received).

use std::time::{Duration, Instant};

use tonic::codegen::tokio_stream::wrappers::ReceiverStream;
use tonic::{Code, Status};

use super::{unanswered, CoordClient, FIRST_BACKOFF};
use crate::proto;
use crate::tls::causes;
use crate::{Error, Result};

/// The client's stream.
#[derive(Debug, Default)]
pub(super) enum Link {
    /// None open: the next message opens one.
    #[default]
    Closed,
    Open(Box<Stream>),
    /// The coordinator does not serve `Session`, or the client was built for unary calls.
    Unary,
}

/// An open session: where messages go, and their replies.
#[derive(Debug)]
pub(super) struct Stream {
    tx: tokio::sync::mpsc::Sender<proto::SessionRequest>,
    replies: tonic::Streaming<proto::SessionReply>,
}

/// A heartbeat that only names the sender (stage unspecified): the coordinator refreshes the
/// rank's liveness and keeps the stage and counters of its last full heartbeat, which the
/// feeder's heartbeat thread sends.
pub(super) fn sender(rank: u32, incarnation: u64) -> proto::HeartbeatRequest {
    proto::HeartbeatRequest {
        rank,
        incarnation,
        stage: proto::Stage::Unspecified as i32,
        ..Default::default()
    }
}

/// How one try of a message ended, short of its reply.
enum Failed {
    /// The coordinator answered with an error status (a wrong token when the stream opened).
    Refused(Status),
    /// No answer: the stream or the connection broke, or nothing came within the deadline.
    Lost { detail: String, timed_out: bool },
}

impl CoordClient {
    /// Sends `msg` over the session and returns its reply; `Ok(None)`: this coordinator has no
    /// session, make the unary call. A part of the message the coordinator refused comes back
    /// as the error its unary call would have returned. `what` and `stage` as for unary calls.
    pub(super) fn exchange(
        &mut self,
        what: &str,
        stage: &str,
        msg: &proto::SessionRequest,
        timeout: Duration,
    ) -> Result<Option<proto::SessionReply>> {
        if matches!(self.link, Link::Unary) {
            return Ok(None);
        }
        let t0 = Instant::now();
        let mut pause = FIRST_BACKOFF;
        loop {
            let detail = match self.try_exchange(msg, timeout) {
                Ok(None) => return Ok(None),
                Ok(Some(r)) => return self.answered(what, r).map(Some),
                Err(Failed::Refused(s)) => return Err(self.err(what, s)),
                Err(Failed::Lost {
                    timed_out: true, ..
                }) if self.retry_for.is_zero() => {
                    return Err(Error::Timeout {
                        what: format!("{what} at the coordinator {}", self.addr),
                        secs: timeout.as_secs_f64(),
                    })
                }
                Err(Failed::Lost { detail, .. }) => detail,
            };
            self.link = Link::Closed;
            self.redial_after(t0, &mut pause, stage, detail)?;
        }
    }

    /// The reply, or the error its message's refused part carries.
    fn answered(&self, what: &str, r: proto::SessionReply) -> Result<proto::SessionReply> {
        match &r.error {
            None => Ok(r),
            Some(e) => {
                let s = Status::new(Code::from(e.code), e.message.clone());
                Err(self.err(&format!("{what} ({} in a session)", e.stage), s))
            }
        }
    }

    /// One try: opens the stream if none is, sends `msg`, takes its reply.
    fn try_exchange(
        &mut self,
        msg: &proto::SessionRequest,
        timeout: Duration,
    ) -> std::result::Result<Option<proto::SessionReply>, Failed> {
        let mut c = self.inner.clone();
        let link = std::mem::take(&mut self.link);
        let msg = msg.clone();
        let r = self.rt.block_on(async move {
            tokio::time::timeout(timeout, async move {
                let mut s = match link {
                    Link::Open(s) => *s,
                    _ => {
                        let (tx, rx) = tokio::sync::mpsc::channel(2);
                        match c.session(ReceiverStream::new(rx)).await {
                            Ok(r) => Stream {
                                tx,
                                replies: r.into_inner(),
                            },
                            Err(s) => return Err((true, s)),
                        }
                    }
                };
                if s.tx.send(msg).await.is_err() {
                    return Err((false, Status::unavailable("the session's stream closed")));
                }
                match s.replies.message().await {
                    Ok(Some(r)) => Ok((s, r)),
                    Ok(None) => Err((
                        false,
                        Status::unavailable("the coordinator ended the session"),
                    )),
                    Err(st) => Err((false, st)),
                }
            })
            .await
        });
        match r {
            Ok(Ok((s, reply))) => {
                self.link = Link::Open(Box::new(s));
                Ok(Some(reply))
            }
            Ok(Err((true, s))) if s.code() == Code::Unimplemented => {
                tracing::debug!(
                    "the coordinator at {} has no Session stream: unary calls",
                    self.addr
                );
                self.link = Link::Unary;
                Ok(None)
            }
            Ok(Err((_, s))) if !unanswered(&s) => Err(Failed::Refused(s)),
            Ok(Err((_, s))) => Err(Failed::Lost {
                detail: causes(&s),
                timed_out: false,
            }),
            Err(_) => Err(Failed::Lost {
                detail: format!("no answer within {:.1} s", timeout.as_secs_f64()),
                timed_out: true,
            }),
        }
    }
}
