//! The `Session` stream over real gRPC: a job run over sessions only (every split's rows
//! acked once per epoch, equal steps, the barrier crossed, end of feed), the token refused on
//! open, acks batched in one message each counted once, and a dropped stream's lease
//! reclaimed by the dead-after rule and finished by another feeder.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tonic::codegen::tokio_stream::wrappers::ReceiverStream;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::Channel;

use super::*;
use crate::proto::coordinator_client::CoordinatorClient;
use crate::{Config, SplitInfo};

/// Adds the bearer token it holds to every call.
#[derive(Clone)]
struct Bearer(String);

impl tonic::service::Interceptor for Bearer {
    fn call(&mut self, mut r: Request<()>) -> Result<Request<()>, Status> {
        let v = format!("Bearer {}", self.0).parse().unwrap();
        r.metadata_mut().insert("authorization", v);
        Ok(r)
    }
}

type Client = CoordinatorClient<InterceptedService<Channel, Bearer>>;

/// 6 splits of 10 rows.
fn splits() -> Vec<SplitInfo> {
    (0..6).map(|i| SplitInfo::new(i, 10)).collect()
}

/// `workers` ranks over [`splits`], batch 10: 2 steps per rank and epoch when `workers` is 3,
/// each split one lease.
fn config(workers: u32, epochs: u32, dead_after_ms: u64) -> Config {
    Config {
        epochs,
        stall_after_ms: dead_after_ms / 2,
        dead_after_ms,
        ..Config::new(workers, 10)
    }
}

/// A coordinator of `m`, with `journal` when given; and its token.
fn coordinator_with(m: Machine, journal: Option<Journaled>) -> (RunningService, String) {
    let token = Token::generate().unwrap();
    let secret = token.as_str().to_string();
    let opts = super::tests::options(token);
    let addr = "127.0.0.1:0".parse().unwrap();
    (
        spawn_journaled(m, journal, opts, addr, None).unwrap(),
        secret,
    )
}

fn coordinator(workers: u32, epochs: u32, dead_after_ms: u64) -> (RunningService, String) {
    let m = Machine::new(splits(), config(workers, epochs, dead_after_ms)).unwrap();
    coordinator_with(m, None)
}

async fn client(addr: std::net::SocketAddr, token: &str) -> Client {
    let ch = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect()
        .await
        .unwrap();
    CoordinatorClient::with_interceptor(ch, Bearer(token.to_string()))
}

async fn register(c: &mut Client, rank: u32) -> u64 {
    c.register(proto::RegisterRequest {
        rank: Some(rank),
        host: format!("h{rank}"),
        port: 2222,
        ..Default::default()
    })
    .await
    .unwrap()
    .into_inner()
    .incarnation
}

/// One feeder's open session.
struct Session {
    rank: u32,
    incarnation: u64,
    tx: tokio::sync::mpsc::Sender<proto::SessionRequest>,
    rx: tonic::Streaming<proto::SessionReply>,
}

impl Session {
    async fn open(c: &mut Client, rank: u32, incarnation: u64) -> Result<Self, Status> {
        let (tx, rx) = tokio::sync::mpsc::channel(4);
        let rx = c.session(ReceiverStream::new(rx)).await?.into_inner();
        Ok(Self {
            rank,
            incarnation,
            tx,
            rx,
        })
    }

    /// Sends a message (the heartbeat, `acks`, a request when `work`) and takes its reply.
    async fn send(&mut self, acks: Vec<proto::AckRequest>, work: bool) -> proto::SessionReply {
        let msg = self.message(acks, work);
        self.tx.send(msg).await.unwrap();
        self.rx
            .message()
            .await
            .unwrap()
            .expect("a reply per message")
    }

    /// The message [`Session::send`] sends.
    fn message(&self, acks: Vec<proto::AckRequest>, work: bool) -> proto::SessionRequest {
        let (rank, incarnation) = (self.rank, self.incarnation);
        proto::SessionRequest {
            heartbeat: Some(proto::HeartbeatRequest {
                rank,
                incarnation,
                stage: proto::Stage::Reading as i32,
                ..Default::default()
            }),
            acks,
            work: work.then(|| proto::WorkRequest {
                rank,
                incarnation,
                ..Default::default()
            }),
        }
    }

    fn ack_of(&self, l: &proto::Lease) -> proto::AckRequest {
        proto::AckRequest {
            rank: self.rank,
            incarnation: self.incarnation,
            lease: l.lease,
            split: l.split,
            rows_acked: l.rows,
            ranges: vec![],
        }
    }
}

/// Rows acked: (epoch, split) -> the (first row, rows) ranges, and the leases a rank acked.
type Acked = Arc<Mutex<BTreeMap<(u32, u32), Vec<(u64, u64)>>>>;

/// What one feeder saw until end of feed.
#[derive(Debug, Default)]
struct Ran {
    steps: u64,
    rows_per_epoch: BTreeMap<u32, u64>,
    waits: u64,
}

/// Runs a feeder over its session until end of feed: each message acks the lease before and
/// asks for the next one.
async fn run(mut s: Session, acked: Acked) -> Ran {
    let mut ran = Ran::default();
    let mut held: Option<proto::Lease> = None;
    loop {
        let acks: Vec<_> = held.iter().map(|l| s.ack_of(l)).collect();
        let r = s.send(acks, true).await;
        assert!(r.error.is_none(), "rank {}: {:?}", s.rank, r.error);
        assert!(r.alive);
        if let Some(l) = held.take() {
            acked
                .lock()
                .unwrap()
                .entry((l.epoch, l.split))
                .or_default()
                .push((l.first_row, l.rows));
            *ran.rows_per_epoch.entry(l.epoch).or_default() += l.rows;
        }
        match r
            .work
            .and_then(|w| w.kind)
            .expect("an answer to the request")
        {
            proto::work_reply::Kind::Lease(l) => held = Some(l),
            proto::work_reply::Kind::WaitMs(_) => {
                ran.waits += 1;
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            proto::work_reply::Kind::EndOfFeedSteps(steps) => {
                ran.steps = steps;
                return ran;
            }
        }
    }
}

/// Every split's 10 rows acked exactly once in each of `epochs`.
fn assert_exactly_once(acked: &Acked, epochs: u32) {
    let acked = acked.lock().unwrap();
    for e in 0..epochs {
        for split in 0..6 {
            let mut r = acked.get(&(e, split)).cloned().unwrap_or_default();
            r.sort_unstable();
            let mut next = 0;
            for (first, rows) in &r {
                assert_eq!(*first, next, "epoch {e} split {split}: {r:?}");
                next = first + rows;
            }
            assert_eq!(next, 10, "epoch {e} split {split}: {r:?}");
        }
    }
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn a_job_over_sessions_only() {
    let (svc, token) = coordinator(3, 3, 30_000);
    let acked = Acked::default();
    let runs = rt().block_on(async {
        let mut tasks = Vec::new();
        for rank in 0..3 {
            let mut c = client(svc.addr, &token).await;
            let inc = register(&mut c, rank).await;
            let s = Session::open(&mut c, rank, inc).await.unwrap();
            tasks.push(tokio::spawn(run(s, acked.clone())));
        }
        let mut runs = Vec::new();
        for t in tasks {
            runs.push(t.await.unwrap());
        }
        runs
    });
    assert_exactly_once(&acked, 3);
    for r in &runs {
        // 60 rows, 3 ranks, batch 10: 2 steps an epoch, 20 rows each.
        assert_eq!(r.steps, 6, "{runs:?}");
        assert_eq!(
            r.rows_per_epoch,
            BTreeMap::from([(0, 20), (1, 20), (2, 20)]),
            "{runs:?}"
        );
    }
    svc.shared.with_machine(|m| {
        assert!(m.finished());
        assert_eq!(m.counters().rows_acked, 180);
    });
}

#[test]
fn a_wrong_token_is_refused_when_the_stream_opens() {
    let (svc, _) = coordinator(3, 1, 30_000);
    rt().block_on(async {
        let mut c = client(svc.addr, "not-the-token").await;
        let e = Session::open(&mut c, 0, 1).await.err().expect("refused");
        assert_eq!(e.code(), tonic::Code::Unauthenticated, "{e:?}");
        assert!(e.message().contains("wrong token"), "{e:?}");
    });
}

/// Two leases acked in one message count once each; the same acks sent again are refused
/// (the leases are done) and add nothing; a message without its heartbeat is refused, naming
/// it.
#[test]
fn acks_batched_in_one_message_count_once_each() {
    let (svc, token) = coordinator(3, 1, 30_000);
    rt().block_on(async {
        let mut c = client(svc.addr, &token).await;
        let inc = register(&mut c, 0).await;
        let mut s = Session::open(&mut c, 0, inc).await.unwrap();
        let mut leases = Vec::new();
        for _ in 0..2 {
            match s.send(vec![], true).await.work.and_then(|w| w.kind) {
                Some(proto::work_reply::Kind::Lease(l)) => leases.push(l),
                other => panic!("a lease, got {other:?}"),
            }
        }
        let acks: Vec<_> = leases.iter().map(|l| s.ack_of(l)).collect();
        let r = s.send(acks.clone(), false).await;
        assert!(r.error.is_none() && r.work.is_none(), "{r:?}");
        let rows: u64 = leases.iter().map(|l| l.rows).sum();
        assert_eq!(rows, 20);
        assert_eq!(svc.shared.with_machine(|m| m.counters().rows_acked), rows);
        // The same acks again: the leases are no longer outstanding, the first is refused as
        // the unary `Ack` refuses it, and nothing more is counted.
        let r = s.send(acks, true).await;
        let e = r.error.expect("refused");
        assert_eq!((e.stage.as_str(), e.acks_applied), ("ack", 0), "{e:?}");
        assert_eq!(e.code, tonic::Code::FailedPrecondition as i32);
        assert!(e.message.contains("not outstanding"), "{e:?}");
        assert!(r.work.is_none());
        assert_eq!(svc.shared.with_machine(|m| m.counters().rows_acked), rows);
        // A message without its heartbeat.
        s.tx.send(proto::SessionRequest::default()).await.unwrap();
        let r = s.rx.message().await.unwrap().unwrap();
        let e = r.error.expect("refused");
        assert_eq!(e.stage, "heartbeat");
        assert_eq!(e.code, tonic::Code::InvalidArgument as i32);
    });
}

/// A feeder that drops its stream holding a lease is still alive at once; past dead-after
/// it is declared dead, its lease's rows go back to the queue, and a feeder restarted under
/// its rank finishes the epoch with them.
#[test]
fn a_dropped_stream_is_reclaimed_after_dead_after() {
    let (svc, token) = coordinator(2, 1, 600);
    let acked = Acked::default();
    rt().block_on(async {
        let mut c1 = client(svc.addr, &token).await;
        let inc1 = register(&mut c1, 1).await;
        let mut s1 = Session::open(&mut c1, 1, inc1).await.unwrap();
        let Some(proto::work_reply::Kind::Lease(lost)) =
            s1.send(vec![], true).await.work.and_then(|w| w.kind)
        else {
            panic!("a lease");
        };
        drop(s1);
        let mut c0 = client(svc.addr, &token).await;
        let inc0 = register(&mut c0, 0).await;
        let s0 = Session::open(&mut c0, 0, inc0).await.unwrap();
        let r0 = tokio::spawn(run(s0, acked.clone()));
        tokio::time::sleep(Duration::from_millis(150)).await;
        assert_eq!(svc.shared.with_machine(|m| m.counters().deaths), 0);
        assert!(svc.shared.with_machine(|m| m.ranks()[1].alive));
        let t = std::time::Instant::now();
        while svc.shared.with_machine(|m| m.counters().deaths) == 0 {
            assert!(
                t.elapsed() < Duration::from_secs(10),
                "rank 1 never declared dead"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // Rank 0 kept its session talking: it is not the one declared dead.
        assert!(svc.shared.with_machine(|m| m.ranks()[0].alive));
        let inc = register(&mut c1, 1).await;
        assert!(inc > inc1);
        let s1 = Session::open(&mut c1, 1, inc).await.unwrap();
        let r1 = run(s1, acked.clone()).await;
        let r0 = r0.await.unwrap();
        assert_eq!((r0.steps, r1.steps), (3, 3));
        let mut again = acked.lock().unwrap()[&(0, lost.split)].clone();
        again.sort_unstable();
        assert_eq!(again, vec![(lost.first_row, lost.rows)]);
    });
    assert_exactly_once(&acked, 1);
    assert!(svc.shared.with_machine(|m| m.finished()));
}

/// The lease a reply carries.
fn lease_of(r: &proto::SessionReply) -> proto::Lease {
    match r.work.and_then(|w| w.kind) {
        Some(proto::work_reply::Kind::Lease(l)) => l,
        other => panic!("no lease: {other:?} ({r:?})"),
    }
}

/// Takes `s`'s quota of epoch 0 (3 leases of 10 rows), acking each with the next request;
/// returns the last lease, not acked.
async fn take_quota(s: &mut Session) -> proto::Lease {
    let mut held: Option<proto::Lease> = None;
    for _ in 0..3 {
        let acks = held.iter().map(|l| s.ack_of(l)).collect();
        held = Some(lease_of(&s.send(acks, true).await));
    }
    held.unwrap()
}

/// Ranks 0 and 1 of a 2-rank coordinator on sessions, rank 0 with its quota leased: the last
/// lease, not acked yet.
async fn at_the_barrier(svc: &RunningService, token: &str) -> (Session, Session, proto::Lease) {
    let mut open = Vec::new();
    for rank in 0..2 {
        let mut c = client(svc.addr, token).await;
        let inc = register(&mut c, rank).await;
        open.push(Session::open(&mut c, rank, inc).await.unwrap());
    }
    let (s1, mut s0) = (open.pop().unwrap(), open.pop().unwrap());
    let last = take_quota(&mut s0).await;
    (s0, s1, last)
}

/// A request at the epoch barrier is held, not answered "wait": the last rank's ack opens
/// the next epoch and the held request gets its lease, saying how long it was held.
#[test]
fn a_request_at_the_barrier_is_answered_when_the_epoch_opens() {
    let (svc, token) = coordinator(2, 2, 30_000);
    rt().block_on(async {
        let (mut s0, mut s1, last) = at_the_barrier(&svc, &token).await;
        let waiting = tokio::spawn(async move {
            let acks = vec![s0.ack_of(&last)];
            s0.send(acks, true).await
        });
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(!waiting.is_finished(), "answered at the barrier, not held");
        let last = take_quota(&mut s1).await;
        let acks = vec![s1.ack_of(&last)];
        assert_eq!(s1.send(acks, false).await.epoch, 1);
        let r = waiting.await.unwrap();
        assert_eq!(lease_of(&r).epoch, 1, "{r:?}");
        assert!(r.held_ms >= 200, "{r:?}");
    });
}

/// A held request is held until its lease is granted, not until its session's task next runs:
/// the time a granted answer waits for the coordinator to get to it (10,000 of them at once
/// when an epoch opens) is latency, not hold. The held answer is made by the session's own
/// function, left unpolled for 400 ms after the grant.
#[test]
fn a_request_is_held_until_its_grant_not_until_its_task_runs() {
    let (svc, token) = coordinator(2, 2, 30_000);
    rt().block_on(async {
        let (s0, mut s1, last) = at_the_barrier(&svc, &token).await;
        let msg = s0.message(vec![s0.ack_of(&last)], true);
        let held = super::session::answer(&svc.shared, &msg);
        tokio::pin!(held);
        let early = tokio::time::timeout(Duration::from_millis(100), &mut held).await;
        assert!(
            early.is_err(),
            "answered at the barrier, not held: {early:?}"
        );
        let last = take_quota(&mut s1).await;
        let acks = vec![s1.ack_of(&last)];
        assert_eq!(s1.send(acks, false).await.epoch, 1);
        tokio::time::sleep(Duration::from_millis(400)).await;
        let r = held.await;
        assert_eq!(lease_of(&r).epoch, 1, "{r:?}");
        assert!((100..400).contains(&r.held_ms), "{r:?}");
    });
}

/// Five requests held at the barrier are all answered with a lease of the next epoch when the
/// sixth rank's ack opens it (granted together, in the acking message's lock), and the
/// journal holds those grants after that ack: a coordinator recovered from it has the same
/// five leases outstanding in the same epoch.
#[test]
fn requests_held_at_the_barrier_are_granted_together_and_journaled_after_the_ack() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(6, 2, 30_000);
    let roster = Roster::new(6, 0, 0);
    let m = Machine::new(splits(), cfg.clone()).unwrap();
    let j = Journaled {
        journal: Journal::create(dir.path(), &m, &roster, 0).unwrap(),
        roster,
        now_ms: 0,
    };
    let (svc, secret) = coordinator_with(m, Some(j));
    let granted = rt().block_on(async {
        let mut open = Vec::new();
        for rank in 0..6 {
            let mut c = client(svc.addr, &secret).await;
            let inc = register(&mut c, rank).await;
            let mut s = Session::open(&mut c, rank, inc).await.unwrap();
            let l = lease_of(&s.send(vec![], true).await);
            assert_eq!((l.epoch, l.rows), (0, 10), "{l:?}");
            open.push((s, l));
        }
        let (mut last, last_lease) = open.pop().unwrap();
        let waiting: Vec<_> = open
            .into_iter()
            .map(|(mut s, l)| {
                tokio::spawn(async move {
                    let acks = vec![s.ack_of(&l)];
                    s.send(acks, true).await
                })
            })
            .collect();
        // Held from when the coordinator has them, which a loaded machine may delay past any
        // fixed sleep after they were sent: wait until all five are held, then hold on.
        let t = std::time::Instant::now();
        while svc.shared.held_requests() < 5 {
            assert!(
                t.elapsed() < Duration::from_secs(20),
                "{} of 5 requests held",
                svc.shared.held_requests()
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(
            waiting.iter().all(|w| !w.is_finished()),
            "answered at the barrier, not held"
        );
        let acks = vec![last.ack_of(&last_lease)];
        assert_eq!(last.send(acks, false).await.epoch, 1);
        let mut granted = Vec::new();
        for w in waiting {
            let r = w.await.unwrap();
            assert!(r.error.is_none() && r.held_ms >= 200, "{r:?}");
            let l = lease_of(&r);
            assert_eq!((l.epoch, r.epoch), (1, 1), "{r:?}");
            granted.push(l.split);
        }
        granted
    });
    granted.iter().for_each(|s| assert!(*s < 6));
    let mut distinct = granted.clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!(distinct.len(), 5, "{granted:?}");
    let want = svc.shared.with_machine(|m| (m.epoch(), m.outstanding()));
    assert_eq!(want, (1, 5));
    svc.shutdown().unwrap();
    let rec = journal::recover(
        dir.path(),
        |st| Machine::resume(splits(), cfg.clone(), st),
        Roster::new(6, 0, 0),
    )
    .unwrap();
    assert_eq!((rec.machine.epoch(), rec.machine.outstanding()), want);
}
