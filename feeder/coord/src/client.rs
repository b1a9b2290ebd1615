//! A blocking client of the coordinator, for the feeder daemon and for Python (through the
//! native module, which releases the GIL around each call).
//!
//! Each client owns a current-thread tokio runtime; every call has a deadline (the client's
//! `call_timeout`, or the wait asked for plus a margin) so nothing waits forever. gRPC
//! statuses come back as the feeder's [`Error`]: unreachable or refused -> `PeerLost`,
//! deadlines -> `Timeout`, a wrong token -> `Coordinator` with the server's message. Over TLS
//! ([`ClientTls`]), a failed handshake either way (a coordinator certificate the client's CA
//! did not sign, a client certificate refused, TLS on one side only) -> `Coordinator`, at
//! connect, with the rustls cause.

use std::time::{Duration, Instant};

use hydrofeed_tfbridge::Piece;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Channel, Endpoint};
use tonic::{Request, Status};

use super::cluster::{ClusterSpec, Registration, Role};
use super::machine::{Lease, Stage, Work, WorkerCounters};
use super::proto::{self, coordinator_client::CoordinatorClient};
use super::tls::{causes, ClientTls, CA_ENV};
use super::token::Token;
use super::State;
use crate::{Error, Result};

mod session;
use session::Link;

/// Adds `authorization: Bearer <token>` to every call.
#[derive(Clone)]
pub struct AddToken(tonic::metadata::MetadataValue<tonic::metadata::Ascii>);

impl tonic::service::Interceptor for AddToken {
    fn call(&mut self, mut req: Request<()>) -> Result<Request<()>, Status> {
        req.metadata_mut().insert("authorization", self.0.clone());
        Ok(req)
    }
}

/// The largest reply taken (a filter's counts: a few bytes per row group of the input).
const MAX_REPLY: usize = 256 << 20;

/// What `register` returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Registered {
    /// Rank given.
    pub rank: u32,
    /// Incarnation of the rank (pass it on every later call).
    pub incarnation: u64,
    /// Data workers in the job.
    pub num_workers: u32,
    /// Batch size.
    pub batch_size: u64,
    /// Epochs.
    pub epochs: u32,
    /// How often to heartbeat.
    pub heartbeat_interval: Duration,
    /// Splits in the coordinator's plan (a feeder checks its own plan against it).
    pub num_splits: u32,
    /// Rows in the coordinator's plan.
    pub total_rows: u64,
}

/// Whether the server behind `uri` (`http://host:port`) answers a plain HTTP/2 preface with a
/// TLS record (an alert: it read the preface as a bad ClientHello). Asked only after a plain
/// connection failed, to say why.
async fn speaks_tls(uri: &str, within: Duration) -> bool {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let Some(hostport) = uri.split_once("://").map(|(_, h)| h.trim_end_matches('/')) else {
        return false;
    };
    let ask = async {
        let mut s = tokio::net::TcpStream::connect(hostport).await.ok()?;
        s.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
            .await
            .ok()?;
        let mut b = [0u8; 3];
        s.read_exact(&mut b).await.ok()?;
        // A TLS record: content type alert (21) or handshake (22), protocol major version 3.
        Some(matches!(b[0], 21 | 22) && b[1] == 3)
    };
    tokio::time::timeout(within.min(Duration::from_secs(2)), ask)
        .await
        .ok()
        .flatten()
        .unwrap_or(false)
}

/// A blocking coordinator client.
#[derive(Debug)]
pub struct CoordClient {
    rt: tokio::runtime::Runtime,
    inner: CoordinatorClient<InterceptedService<Channel, AddToken>>,
    addr: String,
    call_timeout: Duration,
    /// How long a call keeps trying a coordinator that does not answer (see
    /// [`CoordClient::with_retry`]).
    retry_for: Duration,
    auth: AddToken,
    /// What [`CoordClient::connect_tls`] dialled, to dial again after a lost connection.
    endpoint: Endpoint,
    /// The `Session` stream the steady-state calls go over (`client::session`).
    link: Link,
}

/// The first pause between two tries of a coordinator that does not answer; it doubles up to
/// [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(100);

/// The longest pause between two tries.
const MAX_BACKOFF: Duration = Duration::from_secs(2);

/// Whether a status means the coordinator did not answer (refused, reset, gone, never
/// reached), as opposed to an answer it sent.
fn unanswered(s: &Status) -> bool {
    s.code() == tonic::Code::Unavailable
        || (std::error::Error::source(s).is_some()
            && !matches!(
                s.code(),
                tonic::Code::Unauthenticated | tonic::Code::InvalidArgument
            ))
}

impl std::fmt::Debug for AddToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AddToken(..)")
    }
}

impl CoordClient {
    /// Connects to `addr` (`host:port`, `http://host:port` or `https://host:port`) within
    /// `connect_timeout`, over TLS when [`CA_ENV`] names a CA (see
    /// [`CoordClient::connect_tls`]).
    pub fn connect(addr: &str, token: &Token, connect_timeout: Duration) -> Result<Self> {
        let tls = ClientTls::from_env()?;
        Self::connect_tls(addr, token, connect_timeout, tls.as_ref())
    }

    /// Connects to `addr` within `connect_timeout`: over TLS with `tls` (a bare `host:port`
    /// then means `https://`), plain HTTP/2 without. An `https://` address needs `tls` (the
    /// CA to trust). A first call checks the connection, so a TLS mismatch either way (or a
    /// client certificate refused) fails here, with one error naming the address and the
    /// cause; a wrong token does not (the first real call says so).
    pub fn connect_tls(
        addr: &str,
        token: &Token,
        connect_timeout: Duration,
        tls: Option<&ClientTls>,
    ) -> Result<Self> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| Error::external("tokio runtime", e))?;
        let uri = match (addr.split_once("://").map(|(s, _)| s), tls) {
            (None, None) => format!("http://{addr}"),
            (None, Some(_)) => format!("https://{addr}"),
            (Some("http"), Some(t)) => {
                return Err(Error::InvalidArgument(format!(
                    "coordinator address {addr}: plain http://, but a CA to trust is given \
                     ({}): use https:// (or a bare host:port) for TLS",
                    t.ca()
                )))
            }
            (Some("https"), None) => {
                return Err(Error::InvalidArgument(format!(
                    "coordinator address {addr}: https:// needs the CA that signed the \
                     coordinator's certificate: pass --tls-ca FILE or set {CA_ENV}"
                )))
            }
            _ => addr.to_string(),
        };
        let mut ep = Endpoint::from_shared(uri.clone())
            .map_err(|e| Error::InvalidArgument(format!("coordinator address {addr:?}: {e}")))?
            .connect_timeout(connect_timeout)
            .tcp_nodelay(true);
        if let Some(t) = tls {
            ep = ep
                .tls_config(t.tonic(connect_timeout))
                .map_err(|e| Error::InvalidArgument(format!("TLS for {uri}: {}", causes(&e))))?;
        }
        let t0 = Instant::now();
        let ch = rt
            .block_on(async { tokio::time::timeout(connect_timeout, ep.clone().connect()).await });
        let ch = match ch {
            Ok(Ok(c)) => c,
            Ok(Err(e)) => {
                if let Some(msg) = tls.and_then(|t| t.explain(&uri, &e)) {
                    return Err(Error::Coordinator(msg));
                }
                return Err(Error::PeerLost(format!(
                    "coordinator at {addr} unreachable: {}",
                    causes(&e)
                )));
            }
            Err(_) => {
                return Err(Error::Timeout {
                    what: format!("a connection to the coordinator at {addr}"),
                    secs: connect_timeout.as_secs_f64(),
                })
            }
        };
        let v = format!("Bearer {}", token.as_str())
            .parse()
            .map_err(|_| Error::InvalidArgument("token is not valid metadata".into()))?;
        let auth = AddToken(v);
        let inner = CoordinatorClient::with_interceptor(ch, auth.clone())
            .max_decoding_message_size(MAX_REPLY);
        let mut c = Self {
            rt,
            inner,
            addr: addr.to_string(),
            call_timeout: Duration::from_secs(30),
            retry_for: Duration::ZERO,
            auth,
            endpoint: ep,
            link: Link::Closed,
        };
        let left = connect_timeout
            .saturating_sub(t0.elapsed())
            .max(Duration::from_millis(100));
        c.check(&uri, tls, left)?;
        Ok(c)
    }

    /// A first call (`Ping`, which touches nothing) that must reach the service: tonic's
    /// connect does not wait for the server's first bytes, so a plain client of a TLS
    /// coordinator (or a client certificate refused after the handshake) shows only here.
    /// Any status the service itself sent (a wrong token, or UNIMPLEMENTED from a coordinator
    /// older than `Ping`) means the connection works.
    fn check(&mut self, uri: &str, tls: Option<&ClientTls>, within: Duration) -> Result<()> {
        let mut req = Request::new(proto::PingRequest {});
        req.set_timeout(within);
        let mut c = self.inner.clone();
        let r = self
            .rt
            .block_on(async { tokio::time::timeout(within, c.ping(req)).await });
        let s = match r {
            Ok(Ok(_)) => return Ok(()),
            // Sent by the service: no transport error behind it.
            Ok(Err(s)) if std::error::Error::source(&s).is_none() => return Ok(()),
            Ok(Err(s)) => s,
            Err(_) => {
                return Err(Error::Timeout {
                    what: format!("the first reply of the coordinator at {}", self.addr),
                    secs: within.as_secs_f64(),
                })
            }
        };
        let explained = tls.and_then(|t| t.explain(uri, &s).or_else(|| t.diagnose(uri, within)));
        if let Some(msg) = explained {
            return Err(Error::Coordinator(msg));
        }
        let cause = causes(&s);
        if tls.is_none() && self.rt.block_on(speaks_tls(uri, within)) {
            return Err(Error::Coordinator(format!(
                "the coordinator at {uri} speaks TLS and this client plain HTTP/2: give the \
                 client the CA that signed the coordinator's certificate (--tls-ca FILE or \
                 {CA_ENV}) ({cause})"
            )));
        }
        Err(Error::PeerLost(format!(
            "coordinator at {} unreachable: {cause}",
            self.addr
        )))
    }

    /// [`CoordClient::connect_tls`] that keeps trying for `retry_for` while the coordinator
    /// is unreachable (not started yet, restarting), with a growing pause between tries; the
    /// client it returns retries its calls as long ([`CoordClient::with_retry`]). Gives up
    /// with [`Error::CoordinatorLost`] naming the address.
    pub fn connect_retrying(
        addr: &str,
        token: &Token,
        connect_timeout: Duration,
        tls: Option<&ClientTls>,
        retry_for: Duration,
    ) -> Result<Self> {
        let t0 = Instant::now();
        let mut pause = FIRST_BACKOFF;
        loop {
            let e = match Self::connect_tls(addr, token, connect_timeout, tls) {
                Ok(c) => return Ok(c.with_retry(retry_for)),
                Err(e @ (Error::PeerLost(_) | Error::Timeout { .. })) => e,
                Err(e) => return Err(e),
            };
            if t0.elapsed() + pause > retry_for {
                return Err(Error::CoordinatorLost {
                    addr: addr.to_string(),
                    stage: "connecting".into(),
                    secs: t0.elapsed().as_secs_f64(),
                    detail: e.to_string(),
                });
            }
            tracing::debug!("coordinator at {addr}: {e}; trying again in {pause:?}");
            std::thread::sleep(pause);
            pause = (pause * 2).min(MAX_BACKOFF);
        }
    }

    /// Sets the deadline of each call (default 30 s).
    pub fn with_call_timeout(mut self, t: Duration) -> Self {
        self.call_timeout = t;
        self
    }

    /// Keeps trying a call for `t` while the coordinator does not answer (refused, reset,
    /// no reply within the call's deadline), dialling it again with a growing pause (0.1 s
    /// doubling to 2 s) between tries, so a coordinator restarted within `t` is found again;
    /// then fails with [`Error::CoordinatorLost`], naming the address and the stage. Default
    /// zero: one try. Every call the feeder retries is idempotent at the coordinator (acks are
    /// cumulative or ranges; a repeated work request is answered with the lease it was given).
    pub fn with_retry(mut self, t: Duration) -> Self {
        self.retry_for = t;
        self
    }

    /// The address this client dials.
    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// Dials the coordinator again (after a lost connection), within `within`.
    fn redial(&mut self, within: Duration) -> std::result::Result<(), String> {
        let ep = self.endpoint.clone();
        let ch = self
            .rt
            .block_on(async { tokio::time::timeout(within, ep.connect()).await });
        match ch {
            Ok(Ok(ch)) => {
                // The token stays; only the channel is new.
                self.inner = CoordinatorClient::with_interceptor(ch, self.auth.clone())
                    .max_decoding_message_size(MAX_REPLY);
                Ok(())
            }
            Ok(Err(e)) => Err(causes(&e)),
            Err(_) => Err(format!(
                "no connection within {:.1} s",
                within.as_secs_f64()
            )),
        }
    }

    fn err(&self, what: &str, s: Status) -> Error {
        let msg = s.message().to_string();
        match s.code() {
            tonic::Code::DeadlineExceeded => Error::Timeout {
                what: format!("{what} at the coordinator {}: {msg}", self.addr),
                secs: self.call_timeout.as_secs_f64(),
            },
            tonic::Code::Unavailable | tonic::Code::Aborted => {
                Error::PeerLost(format!("coordinator {} ({what}): {msg}", self.addr))
            }
            tonic::Code::InvalidArgument => Error::InvalidArgument(msg),
            tonic::Code::Unauthenticated => Error::Coordinator(format!(
                "{} refused {what}: unauthenticated: {msg}",
                self.addr
            )),
            _ => Error::Coordinator(format!("{} ({what}): {msg}", self.addr)),
        }
    }

    /// One call, tried again while the coordinator does not answer (see
    /// [`CoordClient::with_retry`]). `what` names the call in errors ("an ack"), `stage` what
    /// the caller was doing ("acking (lease 12)").
    fn call<T, R, F, Fut>(
        &mut self,
        what: &str,
        stage: &str,
        msg: T,
        timeout: Duration,
        f: F,
    ) -> Result<R>
    where
        T: Clone,
        F: Fn(CoordinatorClient<InterceptedService<Channel, AddToken>>, Request<T>) -> Fut,
        Fut: std::future::Future<Output = Result<tonic::Response<R>, Status>>,
    {
        let t0 = Instant::now();
        let mut pause = FIRST_BACKOFF;
        loop {
            let mut req = Request::new(msg.clone());
            req.set_timeout(timeout);
            let c = self.inner.clone();
            let r = self
                .rt
                .block_on(async { tokio::time::timeout(timeout, f(c, req)).await });
            let detail = match r {
                Ok(Ok(resp)) => return Ok(resp.into_inner()),
                Ok(Err(s)) if !unanswered(&s) => return Err(self.err(what, s)),
                Ok(Err(s)) => causes(&s),
                Err(_) if self.retry_for.is_zero() => {
                    return Err(Error::Timeout {
                        what: format!("{what} at the coordinator {}", self.addr),
                        secs: timeout.as_secs_f64(),
                    })
                }
                Err(_) => format!("no answer within {:.1} s", timeout.as_secs_f64()),
            };
            self.redial_after(t0, &mut pause, stage, detail)?;
        }
    }

    /// After a try that got no answer (`detail` says why), begun `t0` with the pause before
    /// the next at `pause`: waits and dials the coordinator again until a connection is made,
    /// or fails with [`Error::CoordinatorLost`] once [`CoordClient::with_retry`]'s time is
    /// spent.
    fn redial_after(
        &mut self,
        t0: Instant,
        pause: &mut Duration,
        stage: &str,
        mut detail: String,
    ) -> Result<()> {
        loop {
            if t0.elapsed() + *pause > self.retry_for {
                return Err(Error::CoordinatorLost {
                    addr: self.addr.clone(),
                    stage: stage.to_string(),
                    secs: t0.elapsed().as_secs_f64(),
                    detail,
                });
            }
            tracing::debug!(
                "coordinator at {} ({stage}): {detail}; trying again in {pause:?}",
                self.addr
            );
            std::thread::sleep(*pause);
            *pause = (*pause * 2).min(MAX_BACKOFF);
            let left = self.retry_for.saturating_sub(t0.elapsed());
            match self.redial(left.clamp(Duration::from_millis(100), Duration::from_secs(5))) {
                Ok(()) => return Ok(()),
                Err(e) => detail = e,
            }
        }
    }

    /// Registers this process.
    pub fn register(&mut self, reg: &Registration) -> Result<Registered> {
        self.rejoin(reg, &[])
    }

    /// [`CoordClient::register`] of a restarted feeder: `consumed` holds the rows its trainer
    /// read per lease (see `Machine::rejoin`).
    pub fn rejoin(&mut self, reg: &Registration, consumed: &[Piece]) -> Result<Registered> {
        let role = match reg.role {
            Role::Worker => proto::Role::Worker,
            Role::Chief => proto::Role::Chief,
            Role::Ps => proto::Role::Ps,
            Role::Evaluator => proto::Role::Evaluator,
        };
        let msg = proto::RegisterRequest {
            rank: reg.rank,
            host: reg.host.clone(),
            port: reg.port,
            gpus: reg.gpus.clone(),
            role: role as i32,
            consumed: consumed.iter().map(proto::proto_piece).collect(),
        };
        let t = self.call_timeout;
        let r = self.call("register", "registering", msg, t, |mut c, r| async move {
            c.register(r).await
        })?;
        Ok(Registered {
            rank: r.rank,
            incarnation: r.incarnation,
            num_workers: r.num_workers,
            batch_size: r.batch_size,
            epochs: r.epochs,
            heartbeat_interval: Duration::from_millis(r.heartbeat_interval_ms),
            num_splits: r.num_splits,
            total_rows: r.total_rows,
        })
    }

    /// Waits (at most `timeout`) until every rank registered; returns the cluster spec and
    /// this rank's `TF_CONFIG` JSON. Times out naming the missing ranks.
    pub fn wait_cluster_spec(
        &mut self,
        rank: u32,
        timeout: Duration,
    ) -> Result<(ClusterSpec, String)> {
        let msg = proto::WaitClusterSpecRequest {
            rank,
            timeout_ms: timeout.as_millis() as u64,
        };
        let r = self.call(
            "the cluster spec",
            "waiting for the cluster spec",
            msg,
            timeout + Duration::from_secs(5),
            |mut c, r| async move { c.wait_cluster_spec(r).await },
        )?;
        let spec = serde_json::from_str(&r.cluster_json)
            .map_err(|e| Error::Coordinator(format!("bad cluster spec from {}: {e}", self.addr)))?;
        Ok((spec, r.tf_config_json))
    }

    /// Asks for work.
    pub fn request_work(&mut self, rank: u32, incarnation: u64, host: &str) -> Result<Work> {
        self.request_work_after(rank, incarnation, host, None)
    }

    /// Asks for work, saying the last lease received (`Some(0)`: none yet), so a retried
    /// request whose reply was lost gets that lease again (`Machine::request_work_after`).
    pub fn request_work_after(
        &mut self,
        rank: u32,
        incarnation: u64,
        host: &str,
        known: Option<u64>,
    ) -> Result<Work> {
        let msg = proto::WorkRequest {
            rank,
            incarnation,
            host: host.to_string(),
            known_lease: known,
        };
        let t = self.call_timeout;
        let (what, stage) = ("a work request", "requesting a lease");
        let s = proto::SessionRequest {
            heartbeat: Some(session::sender(rank, incarnation)),
            acks: Vec::new(),
            work: Some(msg.clone()),
        };
        let r = match self.exchange(what, stage, &s, t)? {
            Some(reply) => reply.work.ok_or_else(|| {
                Error::Coordinator(format!("{}: a session reply without its work", self.addr))
            })?,
            None => self.call(what, stage, msg, t, |mut c, r| async move {
                c.request_work(r).await
            })?,
        };
        use proto::work_reply::Kind;
        match r.kind {
            Some(Kind::Lease(l)) => Ok(Work::Lease(Lease {
                lease: l.lease,
                epoch: l.epoch,
                data_epoch: l.data_epoch,
                split: l.split,
                first_row: l.first_row,
                rows: l.rows,
                pad: l.pad,
                shuffle_seed: l.shuffle_seed,
                order: l.order.as_ref().map(proto::order_of),
                job_seed: l.job_seed,
            })),
            Some(Kind::WaitMs(ms)) => Ok(Work::Wait { retry_ms: ms }),
            Some(Kind::EndOfFeedSteps(steps)) => Ok(Work::EndOfFeed { steps }),
            None => Err(Error::Coordinator(format!(
                "{}: empty work reply",
                self.addr
            ))),
        }
    }

    /// Acks `rows_acked` rows (cumulative) of a lease; returns the coordinator's epoch.
    pub fn ack(
        &mut self,
        rank: u32,
        incarnation: u64,
        lease: u64,
        split: u32,
        rows_acked: u64,
    ) -> Result<u32> {
        let msg = proto::AckRequest {
            rank,
            incarnation,
            lease,
            split,
            rows_acked,
            ranges: Vec::new(),
        };
        self.send_ack(msg)
    }

    /// Acks rows of a lease as `(offset within the lease, rows)` ranges in any order (a
    /// feeder with a shuffle buffer); returns the coordinator's epoch.
    pub fn ack_ranges(
        &mut self,
        rank: u32,
        incarnation: u64,
        lease: u64,
        split: u32,
        ranges: &[(u64, u64)],
    ) -> Result<u32> {
        let msg = proto::AckRequest {
            rank,
            incarnation,
            lease,
            split,
            rows_acked: 0,
            ranges: ranges
                .iter()
                .map(|&(offset, rows)| proto::RowRange { offset, rows })
                .collect(),
        };
        self.send_ack(msg)
    }

    /// One ack, over the session where the coordinator has one; returns its epoch.
    fn send_ack(&mut self, msg: proto::AckRequest) -> Result<u32> {
        let t = self.call_timeout;
        let stage = format!("acking (lease {})", msg.lease);
        let s = proto::SessionRequest {
            heartbeat: Some(session::sender(msg.rank, msg.incarnation)),
            acks: vec![msg.clone()],
            work: None,
        };
        if let Some(r) = self.exchange("an ack", &stage, &s, t)? {
            return Ok(r.epoch);
        }
        Ok(self
            .call("an ack", &stage, msg, t, |mut c, r| async move {
                c.ack(r).await
            })?
            .epoch)
    }

    /// Reports rows of a split skipped as corrupt (`--skip-errors`) and delivered as padding.
    pub fn skipped(&mut self, rank: u32, incarnation: u64, r: &crate::SkippedRange) -> Result<()> {
        let msg = proto::SkippedRequest {
            rank,
            incarnation,
            data_epoch: r.data_epoch,
            path: r.path.clone(),
            split: r.split,
            start: r.start,
            end: r.end,
            reason: r.reason.clone(),
        };
        let t = self.call_timeout;
        self.call(
            "a report of skipped rows",
            &format!("reporting skipped rows of split {}", r.split),
            msg,
            t,
            |mut c, r| async move { c.skipped(r).await },
        )?;
        Ok(())
    }

    /// Sends a heartbeat; `false` means this incarnation was declared dead (re-register).
    pub fn heartbeat(
        &mut self,
        rank: u32,
        incarnation: u64,
        stage: Stage,
        c: WorkerCounters,
    ) -> Result<bool> {
        let msg = proto::HeartbeatRequest {
            rank,
            incarnation,
            stage: proto::proto_stage(stage) as i32,
            rows_read: c.rows_read,
            rows_decoded: c.rows_decoded,
            batches_written: c.batches_written,
            ring_bytes_used: c.ring_bytes_used,
        };
        let t = self.call_timeout;
        let s = proto::SessionRequest {
            heartbeat: Some(msg),
            acks: Vec::new(),
            work: None,
        };
        if let Some(r) = self.exchange("a heartbeat", "heartbeating", &s, t)? {
            return Ok(r.alive);
        }
        Ok(self
            .call(
                "a heartbeat",
                "heartbeating",
                msg,
                t,
                |mut c, r| async move { c.heartbeat(r).await },
            )?
            .alive)
    }

    /// The resumable state.
    pub fn state(&mut self) -> Result<State> {
        State::from_json(&self.state_json()?)
    }

    /// The resumable state as the coordinator wrote it: what to save, since parsing it here
    /// and writing it again would drop the fields this build does not know (a coordinator of
    /// another version), the input's fingerprint included.
    pub fn state_json(&mut self) -> Result<String> {
        let t = self.call_timeout;
        let r = self.call(
            "the state",
            "reading the state",
            proto::GetStateRequest {},
            t,
            |mut c, r| async move { c.get_state(r).await },
        )?;
        Ok(r.state_json)
    }

    /// The filter the job was planned with and each split's passing rows per unit (see
    /// `hydrofeed_format::plan_counted`); an error when the job has no filter.
    pub fn filter_counts(&mut self) -> Result<(String, Vec<Vec<u64>>)> {
        let t = self.call_timeout;
        let r = self.call(
            "the filter's counts",
            "reading the filter's counts",
            proto::FilterCountsRequest {},
            t,
            |mut c, r| async move { c.filter_counts(r).await },
        )?;
        let mut pass = r.pass.into_iter();
        let counts: Vec<Vec<u64>> = r
            .units
            .iter()
            .map(|&n| pass.by_ref().take(n as usize).collect())
            .collect();
        if pass.next().is_some()
            || counts
                .iter()
                .zip(&r.units)
                .any(|(c, &n)| c.len() != n as usize)
        {
            return Err(Error::Coordinator(
                "the filter's counts do not add up (units and rows disagree)".into(),
            ));
        }
        Ok((r.filter, counts))
    }

    /// Counters.
    pub fn metrics(&mut self) -> Result<proto::MetricsReply> {
        let t = self.call_timeout;
        self.call(
            "metrics",
            "reading the metrics",
            proto::MetricsRequest {},
            t,
            |mut c, r| async move { c.metrics(r).await },
        )
    }
}
