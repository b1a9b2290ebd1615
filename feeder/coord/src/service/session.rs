//! The `Session` stream: one bidirectional stream per feeder in place of its three unary calls
//! a second. Each message is a heartbeat, the acks since the last one and, optionally, a work
//! request; it is applied under one lock by the unary handlers' bodies (`Inner::heartbeat`,
//! `Inner::ack`, `Inner::request_work`), and answered by one reply, in order, once every
//! journal record it wrote is durable (the group commit's wait, as a unary call's). The token
//! was checked by the interceptor when the stream opened. A stream that ends or breaks is
//! the feeder's last heartbeat: nothing is reclaimed here, the dead-after rule does it.

use std::sync::Arc;

use tonic::codegen::tokio_stream::wrappers::ReceiverStream;
use tonic::{Status, Streaming};

use super::{work_reply, Inner, Shared};
use crate::proto;

/// The replies of one session, in the order of its messages.
pub type Replies = ReceiverStream<Result<proto::SessionReply, Status>>;

/// Replies not yet taken by the connection before the session stops reading messages.
const IN_FLIGHT: usize = 4;

/// Serves one session: a task reads its messages one at a time and answers each.
pub(super) fn serve(sh: Arc<Shared>, mut inbound: Streaming<proto::SessionRequest>) -> Replies {
    let (tx, rx) = tokio::sync::mpsc::channel(IN_FLIGHT);
    tokio::spawn(async move {
        loop {
            let msg = match inbound.message().await {
                Ok(Some(m)) => m,
                Ok(None) => break,
                Err(s) => {
                    tracing::debug!("a feeder's session broke: {s}");
                    break;
                }
            };
            let reply = answer(&sh, &msg).await;
            if tx.send(Ok(reply)).await.is_err() {
                break;
            }
        }
    });
    ReceiverStream::new(rx)
}

/// Applies one message and waits until what it recorded is durable.
async fn answer(sh: &Shared, msg: &proto::SessionRequest) -> proto::SessionReply {
    let now = sh.now_ms();
    let mut reply = proto::SessionReply::default();
    let mut seq = 0;
    {
        let mut g = sh.lock();
        if let Err(e) = apply(&mut g, msg, now, &mut reply, &mut seq) {
            reply.error = Some(e);
        }
        reply.epoch = g.m.epoch();
    }
    if let Err(s) = sh.durable(seq).await {
        // Nothing the message changed can be promised: no lease goes out.
        reply.work = None;
        let acks_applied = reply.error.as_ref().map_or(0, |e| e.acks_applied);
        reply.error = Some(error("journal", acks_applied, &s));
    }
    reply
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
    reply.alive = g
        .heartbeat(hb, now)
        .map_err(|s| error("heartbeat", 0, &s))?;
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
