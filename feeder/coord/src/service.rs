//! The coordinator's gRPC service (`hydrofeed.coord.v1.Coordinator`, tonic + prost) around
//! the [`Machine`] and the [`Roster`].
//!
//! One mutex guards both; every call holds it for a few microseconds and never across an
//! await. With a journal, a call's record is written under it and made durable outside it, by
//! one fsync for all the calls in flight (`service::commit`), before the call is answered. A
//! background task ticks liveness every 100 ms and flushes the assignment log. The
//! token interceptor runs before any handler: a call without the right
//! `authorization: Bearer <token>` never reaches the state. With `ServiceOptions::tls` the
//! connections are TLS (rustls), and with a client CA a client without a certificate it signed
//! is refused in the handshake, before the token is even read.
//!
//! Besides the unary calls, a feeder may open one `Session` stream (`service::session`):
//! each message a heartbeat, acks and a work request, answered in order by the same handler
//! bodies (`Inner::heartbeat`, `Inner::ack`, `Inner::request_work`) with the same journal
//! wait, without the per-call HTTP/2 stream, headers and token check.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use hydrofeed_tfbridge::Piece;
use tonic::{Request, Response, Status};

use super::cluster::{Registration, Role, Roster};
use super::journal::{self, Entry, Journal};
use super::machine::{LivenessEvent, Machine, Work, WorkerCounters};
use super::proto;
use super::tls::ServerTls;
use super::token::Token;
use crate::{Error, Result};

mod commit;
mod held;
mod liveness;
mod run;
mod session;
#[cfg(test)]
mod session_tests;
#[cfg(test)]
mod tests;
use commit::GroupCommit;
use liveness::log_liveness;
pub use run::{spawn, spawn_journaled, Journaled, RunningService};

/// Settings of the service beyond the machine's.
#[derive(Debug, Clone)]
pub struct ServiceOptions {
    /// Parameter servers expected at reservation.
    pub ps: u32,
    /// Evaluators expected at reservation.
    pub evaluators: u32,
    /// How long, from start, the reservation may take.
    pub reservation_timeout: Duration,
    /// Heartbeat interval told to workers.
    pub heartbeat_interval: Duration,
    /// Assignment log (JSONL), appended to.
    pub log_path: Option<PathBuf>,
    /// The job's token.
    pub token: Token,
    /// TLS (`None`: plain HTTP/2).
    pub tls: Option<ServerTls>,
    /// Under a filter: the filter as written and each split's passing rows per unit
    /// (`FilterCounts`).
    pub filter_counts: Option<Arc<(String, Vec<Vec<u64>>)>>,
}

struct Inner {
    m: Machine,
    roster: Roster,
    log: Option<BufWriter<File>>,
    log_path: Option<PathBuf>,
    /// `--journal`: every change recorded before its call is answered.
    journal: Option<Journal>,
    /// The journal's group commit, the last record's sequence number and the generation
    /// whose file the group commit holds.
    commit: Option<Arc<GroupCommit>>,
    seq: u64,
    commit_gen: u64,
    /// The cluster spec's JSON, made once for every `WaitClusterSpec` (at 10,000 workers it
    /// is ~300 KB: making it per call was quadratic); cleared by each registration.
    cluster_json: Option<Arc<str>>,
    /// Sessions' requests told to wait, asked again when work may have come free (an epoch
    /// opened, the feed ended, a rank died and its rows went back): `service::held`.
    held: held::HeldRequests,
}

impl Inner {
    /// Appends `e` to the journal, if there is one; returns its sequence number, to wait for
    /// with [`Shared::durable`] before the call is answered (0 without a journal).
    fn record(&mut self, e: &Entry) -> Result<u64> {
        let (Some(j), Some(_)) = (self.journal.as_mut(), self.commit.as_ref()) else {
            return Ok(0);
        };
        let holding = j.holding();
        j.append(e)?;
        self.seq += 1;
        if !holding {
            self.announce()?;
        }
        Ok(self.seq)
    }

    /// Tells the group commit the last record written (with the journal's file when its
    /// generation changed).
    fn announce(&mut self) -> Result<()> {
        let (Some(j), Some(c)) = (self.journal.as_mut(), self.commit.as_ref()) else {
            return Ok(());
        };
        let file = if j.generation() != self.commit_gen {
            self.commit_gen = j.generation();
            Some(j.sync_handle()?)
        } else {
            None
        };
        c.written(self.seq, file);
        Ok(())
    }

    /// Keeps the journal's records until [`Inner::release`] (one write and one wakeup of
    /// the group commit for all of a session message's records).
    fn hold(&mut self) {
        if let Some(j) = self.journal.as_mut() {
            j.hold();
        }
    }

    /// Writes the records kept since [`Inner::hold`], hands them to the group commit, and
    /// sends the held requests' answers granted meanwhile ([`Inner::deliver`]).
    fn release(&mut self, first_seq: u64) -> Result<()> {
        let r = self.write_kept(first_seq);
        self.deliver(r.as_ref().err());
        r
    }

    fn write_kept(&mut self, first_seq: u64) -> Result<()> {
        let Some(j) = self.journal.as_mut() else {
            return Ok(());
        };
        j.release()?;
        if self.seq > first_seq {
            self.announce()?;
        }
        Ok(())
    }

    /// A heartbeat (`Heartbeat`, and every session message): whether the incarnation lives.
    fn heartbeat(&mut self, r: &proto::HeartbeatRequest, now: u64) -> Result<bool, Status> {
        let c = WorkerCounters {
            rows_read: r.rows_read,
            rows_decoded: r.rows_decoded,
            batches_written: r.batches_written,
            ring_bytes_used: r.ring_bytes_used,
        };
        self.m
            .heartbeat(r.rank, r.incarnation, proto::stage_of(r.stage), c, now)
            .map_err(status_of)
    }

    /// A work request (`RequestWork`, a session's request): the machine's answer and its
    /// journal record's sequence number, to wait for before answering.
    fn request_work(&mut self, r: &proto::WorkRequest, now: u64) -> Result<(u64, Work), Status> {
        let host = (!r.host.is_empty()).then_some(r.host.as_str());
        let w = self
            .m
            .request_work_after(r.rank, r.incarnation, host, r.known_lease, now)
            .map_err(status_of)?;
        let mut seq = 0;
        if let Work::Lease(l) = &w {
            let e = Entry::Grant {
                rank: r.rank,
                incarnation: r.incarnation,
                host: host.map(str::to_string),
                known: r.known_lease,
                lease: l.lease,
                now_ms: now,
            };
            seq = self.record(&e).map_err(status_of)?;
        }
        flush_log(self, false);
        Ok((seq, w))
    }

    /// An ack (`Ack`, each of a session message's acks): its journal record's sequence number.
    fn ack(&mut self, r: &proto::AckRequest, now: u64) -> Result<u64, Status> {
        let ranges: Vec<(u64, u64)> = if r.ranges.is_empty() {
            vec![(0, r.rows_acked)]
        } else {
            r.ranges.iter().map(|x| (x.offset, x.rows)).collect()
        };
        let before = (self.m.epoch(), self.m.finished());
        self.m
            .ack_ranges(r.rank, r.incarnation, r.lease, r.split, &ranges, now)
            .map_err(status_of)?;
        let freed = (self.m.epoch(), self.m.finished()) != before;
        let seq = self
            .record(&Entry::Ack {
                rank: r.rank,
                incarnation: r.incarnation,
                lease: r.lease,
                split: r.split,
                ranges,
                now_ms: now,
            })
            .map_err(status_of)?;
        commit::compact(self, now);
        if freed {
            // After the ack's record: the grants it allows follow it in the journal.
            self.grant_held(now);
        }
        flush_log(self, false);
        Ok(seq)
    }
}

/// The wire answer to a work request.
fn work_reply(w: Work) -> proto::WorkReply {
    use proto::work_reply::Kind;
    let kind = match w {
        Work::Lease(l) => Kind::Lease(proto::Lease {
            lease: l.lease,
            epoch: l.epoch,
            data_epoch: l.data_epoch,
            split: l.split,
            first_row: l.first_row,
            rows: l.rows,
            pad: l.pad,
            shuffle_seed: l.shuffle_seed,
            order: l.order.as_ref().map(proto::proto_order),
            job_seed: l.job_seed,
        }),
        Work::Wait { retry_ms } => Kind::WaitMs(retry_ms),
        Work::EndOfFeed { steps } => Kind::EndOfFeedSteps(steps),
    };
    proto::WorkReply { kind: Some(kind) }
}

/// State shared by the handlers, the ticker and the metrics endpoint.
pub struct Shared {
    inner: Mutex<Inner>,
    start: Instant,
    /// The clock's value at `start` (a coordinator recovered from its journal goes on from
    /// the last time recorded).
    clock_base_ms: u64,
    /// Whether every expected rank registered: `WaitClusterSpec` waits wake once, when it
    /// turns true (waking every waiter at each registration cost O(ranks^2) locks).
    complete: tokio::sync::watch::Sender<bool>,
    commit: Option<Arc<GroupCommit>>,
    opts: ServiceOptions,
    /// `Session` messages answered, and unary `RequestWork`, `Ack` and `Heartbeat` calls.
    traffic: [AtomicU64; 2],
    /// The longest a session's request told to wait is held (`session::HOLD_ENV`).
    hold: Duration,
}

impl Drop for Shared {
    fn drop(&mut self) {
        if let Some(c) = &self.commit {
            c.stop();
        }
    }
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared").finish_non_exhaustive()
    }
}

impl Shared {
    /// Wraps a machine (new or resumed).
    pub fn new(m: Machine, opts: ServiceOptions) -> Result<Arc<Self>> {
        Self::with_journal(m, None, opts)
    }

    /// Wraps a machine with a journal: a new one ([`Journal::create`]) or one a recovery
    /// returned with the machine, its roster and its clock.
    pub fn with_journal(
        m: Machine,
        journal: Option<Journaled>,
        opts: ServiceOptions,
    ) -> Result<Arc<Self>> {
        let w = m.config().workers;
        let log = match &opts.log_path {
            Some(p) => Some(BufWriter::new(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(p)
                    .map_err(|e| Error::Io {
                        loc: hydrofeed_error::Location {
                            path: p.display().to_string(),
                            ..Default::default()
                        },
                        source: e,
                    })?,
            )),
            None => None,
        };
        let hold = session::hold_for(u64::MAX).map_err(Error::InvalidArgument)?;
        let (tx, _) = tokio::sync::watch::channel(false);
        let (journal, roster, clock_base_ms) = match journal {
            Some(j) => (Some(j.journal), j.roster, j.now_ms),
            None => (None, Roster::new(w, opts.ps, opts.evaluators), 0),
        };
        let commit = match journal {
            Some(_) => Some(GroupCommit::start()?),
            None => None,
        };
        Ok(Arc::new(Self {
            inner: Mutex::new(Inner {
                m,
                roster,
                log,
                log_path: opts.log_path.clone(),
                journal,
                commit: commit.clone(),
                seq: 0,
                commit_gen: 0,
                cluster_json: None,
                held: Default::default(),
            }),
            start: Instant::now(),
            clock_base_ms,
            complete: tx,
            commit,
            opts,
            traffic: Default::default(),
            hold,
        }))
    }

    /// Counts a feeder's steady-state message: a session's (`true`) or a unary call.
    fn count(&self, session: bool) {
        self.traffic[usize::from(!session)].fetch_add(1, Ordering::Relaxed);
    }

    /// `(session messages, unary RequestWork + Ack + Heartbeat calls)` since start: which
    /// protocol the feeders speak.
    pub fn traffic(&self) -> (u64, u64) {
        let [s, u] = &self.traffic;
        (s.load(Ordering::Relaxed), u.load(Ordering::Relaxed))
    }

    fn now_ms(&self) -> u64 {
        self.clock_base_ms + self.start.elapsed().as_millis() as u64
    }

    /// Waits until journal record `seq` is durable ([`Inner::record`]).
    async fn durable(&self, seq: u64) -> std::result::Result<(), Status> {
        match &self.commit {
            Some(c) => c.durable(seq).await,
            None => Ok(()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A handler that panicked left the machine as it was before the call (every method
        // validates before it mutates), so a poisoned lock is still usable.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The sessions' requests held now (told to wait, not answered yet).
    #[cfg(test)]
    pub(crate) fn held_requests(&self) -> usize {
        self.lock().held.waiting()
    }

    /// Runs `f` on the machine (metrics, state, tests).
    pub fn with_machine<T>(&self, f: impl FnOnce(&Machine) -> T) -> T {
        f(&self.lock().m)
    }

    /// Runs `f` on the machine, mutably (`hydrofeed launch` sets the batch size late).
    pub fn with_machine_mut<T>(&self, f: impl FnOnce(&mut Machine) -> T) -> T {
        f(&mut self.lock().m)
    }

    /// `rank`'s trainer is alive (its supervisor says so): see [`Machine::keep_alive`].
    pub fn keep_alive(&self, rank: u32) -> Result<bool> {
        let now = self.now_ms();
        self.lock().m.keep_alive(rank, now)
    }

    /// Liveness tick and log flush; the service calls it every 100 ms. The events are logged
    /// after the lock is let go (`service/liveness.rs`).
    pub fn tick(&self) {
        let now = self.now_ms();
        let events = {
            let mut g = self.lock();
            let events = g.m.tick(now);
            let mut dead = false;
            for ev in &events {
                if let LivenessEvent::Dead { rank, .. } = ev {
                    dead = true;
                    if let Err(e) = g.record(&Entry::Dead {
                        rank: *rank,
                        now_ms: now,
                    }) {
                        tracing::error!("journal: {e}");
                    }
                }
            }
            if dead {
                // Rows of the dead may go to held requests: asked again once for them all.
                g.grant_held(now);
            }
            flush_log(&mut g, true);
            events
        };
        log_liveness(&events);
    }

    /// Seconds since start.
    pub fn uptime(&self) -> f64 {
        self.start.elapsed().as_secs_f64()
    }
}

fn flush_log(g: &mut Inner, flush: bool) {
    let recs = g.m.drain_log();
    let Some(w) = g.log.as_mut() else { return };
    let mut res = Ok(());
    for r in &recs {
        res = res.and_then(|_| {
            serde_json::to_writer(&mut *w, r).map_err(std::io::Error::other)?;
            w.write_all(b"\n")
        });
    }
    if flush {
        res = res.and_then(|_| w.flush());
    }
    if let Err(e) = res {
        // The log is for replay, not for correctness: say so loudly once, stop writing it.
        tracing::error!(
            "assignment log {}: write failed ({e}); assignments are no longer logged",
            g.log_path
                .as_ref()
                .map(|p| p.display().to_string())
                .unwrap_or_default()
        );
        g.log = None;
    }
}

/// The body of `GET /metrics`: the machine's counters now.
fn metrics_body(sh: Arc<Shared>) -> impl Fn() -> String + Send + Sync + 'static {
    move || {
        let now = sh.uptime();
        let mut s = sh.with_machine(|m| super::metrics::render(m, now, (now * 1000.0) as u64));
        super::metrics::render_traffic(&mut s, sh.traffic());
        s
    }
}

/// Maps a feeder error to a gRPC status, keeping the message.
pub fn status_of(e: Error) -> Status {
    let msg = e.to_string();
    match e {
        Error::InvalidArgument(_) => Status::invalid_argument(msg),
        Error::Timeout { .. } => Status::deadline_exceeded(msg),
        Error::PeerLost(_) => Status::aborted(msg),
        Error::Coordinator(_) => Status::failed_precondition(msg),
        _ => Status::internal(msg),
    }
}

/// `TF_CONFIG` from the cluster spec's JSON: the text [`crate::cluster::tf_config_json`]
/// makes, without making the spec's JSON again.
fn tf_config_of(cluster_json: &str, role: Role, index: u32) -> String {
    let task = serde_json::json!({"task": {"type": role.task_type(), "index": index}}).to_string();
    format!("{{\"cluster\":{cluster_json},{}", &task[1..])
}

fn role_of(r: i32) -> Role {
    match proto::Role::try_from(r).unwrap_or(proto::Role::Unspecified) {
        proto::Role::Unspecified | proto::Role::Worker => Role::Worker,
        proto::Role::Chief => Role::Chief,
        proto::Role::Ps => Role::Ps,
        proto::Role::Evaluator => Role::Evaluator,
    }
}

/// The handlers.
#[derive(Debug, Clone)]
pub struct CoordService {
    shared: Arc<Shared>,
}

#[tonic::async_trait]
impl proto::coordinator_server::Coordinator for CoordService {
    async fn register(
        &self,
        req: Request<proto::RegisterRequest>,
    ) -> Result<Response<proto::RegisterReply>, Status> {
        let r = req.into_inner();
        let now = self.shared.now_ms();
        let (seq, rank, incarnation, cfg, num_splits, total_rows, complete) = {
            let mut g = self.shared.lock();
            let reg = Registration {
                rank: r.rank,
                host: r.host.clone(),
                port: r.port,
                gpus: r.gpus,
                role: role_of(r.role),
            };
            let consumed: Vec<Piece> = r.consumed.iter().map(proto::piece_of).collect();
            let (rank, incarnation) = {
                let Inner { m, roster, .. } = &mut *g;
                journal::register(m, roster, &reg, &consumed, now).map_err(status_of)?
            };
            g.cluster_json = None;
            let seq = g
                .record(&Entry::Register {
                    reg,
                    consumed: consumed
                        .iter()
                        .map(|p| (p.lease, p.split, p.rows))
                        .collect(),
                    now_ms: now,
                })
                .map_err(status_of)?;
            let cfg = g.m.config().clone();
            let (num_splits, total_rows) = (g.m.split_rows().len() as u32, g.m.total_rows());
            let complete = g.roster.is_complete();
            (
                seq,
                rank,
                incarnation,
                cfg,
                num_splits,
                total_rows,
                complete,
            )
        };
        self.shared.durable(seq).await?;
        if complete {
            self.shared.complete.send_replace(true);
        }
        tracing::info!(
            rank,
            host = r.host,
            port = r.port,
            incarnation,
            "registered"
        );
        Ok(Response::new(proto::RegisterReply {
            rank,
            incarnation,
            num_workers: cfg.workers,
            batch_size: cfg.batch_size,
            epochs: cfg.epochs,
            heartbeat_interval_ms: self.shared.opts.heartbeat_interval.as_millis() as u64,
            num_splits,
            total_rows,
        }))
    }

    async fn wait_cluster_spec(
        &self,
        req: Request<proto::WaitClusterSpecRequest>,
    ) -> Result<Response<proto::ClusterSpecReply>, Status> {
        let r = req.into_inner();
        let res_deadline = (self
            .shared
            .start
            .checked_add(self.shared.opts.reservation_timeout))
        .unwrap_or_else(|| Instant::now() + Duration::from_secs(100 * 365 * 24 * 3600));
        // A client's timeout is any u64: one past the reservation's end is the reservation's.
        let asked = if r.timeout_ms > 0 {
            Instant::now()
                .checked_add(Duration::from_millis(r.timeout_ms))
                .unwrap_or(res_deadline)
        } else {
            res_deadline
        };
        let deadline = asked.min(res_deadline);
        let mut rx = self.shared.complete.subscribe();
        loop {
            {
                let mut g = self.shared.lock();
                if g.roster.is_complete() {
                    let cluster = match &g.cluster_json {
                        Some(c) => c.clone(),
                        None => {
                            let spec = g.roster.spec().map_err(status_of)?;
                            let c: Arc<str> = serde_json::to_string(&spec)
                                .expect("spec serialises")
                                .into();
                            g.cluster_json = Some(c.clone());
                            c
                        }
                    };
                    let (role, index) = g.roster.task_of(r.rank).map_err(status_of)?;
                    drop(g);
                    return Ok(Response::new(proto::ClusterSpecReply {
                        tf_config_json: tf_config_of(&cluster, role, index),
                        cluster_json: cluster.to_string(),
                    }));
                }
                let now = Instant::now();
                if now >= deadline {
                    let secs = if deadline == res_deadline {
                        self.shared.opts.reservation_timeout.as_secs_f64()
                    } else {
                        r.timeout_ms as f64 / 1000.0
                    };
                    let e = g.roster.timeout_error(secs);
                    tracing::error!("{e}");
                    return Err(status_of(e));
                }
            }
            let left = deadline.saturating_duration_since(Instant::now());
            let _ = tokio::time::timeout(left, rx.changed()).await;
        }
    }

    async fn request_work(
        &self,
        req: Request<proto::WorkRequest>,
    ) -> Result<Response<proto::WorkReply>, Status> {
        self.shared.count(false);
        let now = self.shared.now_ms();
        let (seq, w) = self.shared.lock().request_work(&req.into_inner(), now)?;
        self.shared.durable(seq).await?;
        Ok(Response::new(work_reply(w)))
    }

    async fn ack(
        &self,
        req: Request<proto::AckRequest>,
    ) -> Result<Response<proto::AckReply>, Status> {
        self.shared.count(false);
        let now = self.shared.now_ms();
        let (seq, epoch) = {
            let mut g = self.shared.lock();
            (g.ack(&req.into_inner(), now)?, g.m.epoch())
        };
        self.shared.durable(seq).await?;
        Ok(Response::new(proto::AckReply { epoch }))
    }

    async fn skipped(
        &self,
        req: Request<proto::SkippedRequest>,
    ) -> Result<Response<proto::SkippedReply>, Status> {
        let r = req.into_inner();
        let now = self.shared.now_ms();
        let range = crate::SkippedRange {
            data_epoch: r.data_epoch,
            path: r.path,
            split: r.split,
            start: r.start,
            end: r.end,
            reason: r.reason,
        };
        tracing::warn!(
            rank = r.rank,
            "skipped rows [{}, {}) of {} (split {}, data epoch {}): {}; padded",
            range.start,
            range.end,
            range.path,
            range.split,
            range.data_epoch,
            range.reason
        );
        let seq = {
            let mut g = self.shared.lock();
            g.m.skipped(r.rank, r.incarnation, range.clone(), now)
                .map_err(status_of)?;
            let seq = g
                .record(&Entry::Skipped {
                    rank: r.rank,
                    incarnation: r.incarnation,
                    range,
                    now_ms: now,
                })
                .map_err(status_of)?;
            flush_log(&mut g, false);
            seq
        };
        self.shared.durable(seq).await?;
        Ok(Response::new(proto::SkippedReply {}))
    }

    async fn heartbeat(
        &self,
        req: Request<proto::HeartbeatRequest>,
    ) -> Result<Response<proto::HeartbeatReply>, Status> {
        self.shared.count(false);
        let now = self.shared.now_ms();
        let alive = self.shared.lock().heartbeat(&req.into_inner(), now)?;
        Ok(Response::new(proto::HeartbeatReply { alive }))
    }

    type SessionStream = session::Replies;

    async fn session(
        &self,
        req: Request<tonic::Streaming<proto::SessionRequest>>,
    ) -> Result<Response<Self::SessionStream>, Status> {
        Ok(Response::new(session::serve(
            self.shared.clone(),
            req.into_inner(),
        )))
    }

    async fn get_state(
        &self,
        _req: Request<proto::GetStateRequest>,
    ) -> Result<Response<proto::StateReply>, Status> {
        let st = self.shared.lock().m.state();
        Ok(Response::new(proto::StateReply {
            state_json: st.to_json(),
        }))
    }

    async fn filter_counts(
        &self,
        _req: Request<proto::FilterCountsRequest>,
    ) -> Result<Response<proto::FilterCountsReply>, Status> {
        let Some(c) = &self.shared.opts.filter_counts else {
            return Err(Status::not_found(
                "this job reads its input without a filter",
            ));
        };
        let (filter, counts) = c.as_ref();
        Ok(Response::new(proto::FilterCountsReply {
            filter: filter.clone(),
            units: counts.iter().map(|u| u.len() as u32).collect(),
            pass: counts.iter().flatten().copied().collect(),
        }))
    }

    async fn ping(
        &self,
        _req: Request<proto::PingRequest>,
    ) -> Result<Response<proto::PingReply>, Status> {
        Ok(Response::new(proto::PingReply {}))
    }

    async fn metrics(
        &self,
        _req: Request<proto::MetricsRequest>,
    ) -> Result<Response<proto::MetricsReply>, Status> {
        let now = self.shared.now_ms();
        let mut r = self.shared.with_machine(|m| metrics_reply(m, now));
        (r.session_messages, r.unary_calls) = self.shared.traffic();
        Ok(Response::new(r))
    }
}

pub use crate::proto::metrics_reply;

/// The token check every call passes first.
#[derive(Clone)]
pub struct CheckToken(Token);

impl tonic::service::Interceptor for CheckToken {
    fn call(&mut self, req: Request<()>) -> Result<Request<()>, Status> {
        let Some(v) = req.metadata().get("authorization") else {
            return Err(Status::unauthenticated(
                "no `authorization` metadata: every coordinator call needs `authorization: Bearer \
                 <token>` (the job's token file, or HYDROFEED_TOKEN)",
            ));
        };
        let presented = v
            .to_str()
            .unwrap_or("")
            .strip_prefix("Bearer ")
            .unwrap_or("");
        if !self.0.matches(presented) {
            return Err(Status::unauthenticated(
                "wrong token: this coordinator belongs to another job, or the token file / \
                 HYDROFEED_TOKEN is stale",
            ));
        }
        Ok(req)
    }
}
