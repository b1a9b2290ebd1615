//! The open-loop gRPC load of `hydrofeed bench coord`: a coordinator in one child process
//! (`hydrofeed coordinator`, journal on) and, in another (`hydrofeed bench coord-load`, hidden),
//! N simulated feeders on one tokio runtime, one HTTP/2 connection each. Every feeder sends at
//! a pinned rate: per period a heartbeat, a `RequestWork` and an `Ack` of the lease it got (a
//! second `RequestWork` when it got none: an epoch barrier's wait), spread evenly over the
//! period with each feeder at its own phase. Latency runs from each call's scheduled send
//! time, so a late reply delays the next call without hiding its own lateness (no coordinated
//! omission). The run fails when fewer than 95% of the intended calls were answered in time.
//!
//! With `--protocol session` each feeder holds one `Session` stream instead: per period one
//! message carrying the ack of the lease it holds and a work request (the heartbeat is
//! implied), and, when the answer was a wait (an epoch barrier), one more request half a
//! period later. A message counts as a call in the report (`*_messages`).

use std::io::Write;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use tokio::time::Instant;

use hydrofeed_coord::proto::{self, coordinator_client::CoordinatorClient};
use hydrofeed_coord::token::{Token, TOKEN_ENV};
use tonic::codegen::tokio_stream::wrappers::ReceiverStream;

use crate::coordinator::raise_nofile;

/// The share of the intended calls that must be answered for a run to count.
pub const MIN_ACHIEVED: f64 = 0.95;

/// How the simulated feeders speak to the coordinator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Protocol {
    /// Three unary calls per period: `Heartbeat`, `RequestWork`, `Ack`.
    Unary,
    /// One `Session` stream per feeder: one message per period (ack + request).
    Session,
}

impl Protocol {
    /// The name used on the command line and in the report.
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Unary => "unary",
            Protocol::Session => "session",
        }
    }
}

/// Arguments of `hydrofeed bench coord-load` (started by `hydrofeed bench coord`).
#[derive(Debug, clap::Args)]
pub struct LoadArgs {
    /// The coordinator's address (`host:port`).
    #[arg(long)]
    pub addr: String,
    /// The coordinator's process id (its CPU is read from `/proc/PID/stat`).
    #[arg(long)]
    pub coord_pid: u32,
    /// Simulated feeders, one connection each.
    #[arg(long)]
    pub feeders: u32,
    /// Periods per second of each feeder (1: one heartbeat, one lease and one ack a second).
    #[arg(long, default_value_t = 1.0)]
    pub rate_hz: f64,
    /// Seconds measured.
    #[arg(long, default_value_t = 10.0)]
    pub secs: f64,
    /// Unary calls or one session stream per feeder.
    #[arg(long, value_enum, default_value_t = Protocol::Unary)]
    pub protocol: Protocol,
}

/// Latencies in microseconds, sorted on demand.
#[derive(Default)]
struct Lat(Vec<u32>);

impl Lat {
    fn add(&mut self, d: Duration) {
        self.0.push(d.as_micros().min(u128::from(u32::MAX)) as u32);
    }

    fn summary(&mut self) -> serde_json::Value {
        self.0.sort_unstable();
        let q = |p: f64| -> f64 {
            if self.0.is_empty() {
                return 0.0;
            }
            let i = ((self.0.len() as f64 * p).ceil() as usize).clamp(1, self.0.len()) - 1;
            f64::from(self.0[i]) / 1000.0
        };
        serde_json::json!({
            "n": self.0.len(),
            "p50_ms": q(0.50),
            "p99_ms": q(0.99),
            "p999_ms": q(0.999),
            "max_ms": q(1.0),
        })
    }
}

/// What one feeder measured.
#[derive(Default)]
struct Tally {
    lease: Lat,
    ack: Lat,
    heartbeat: Lat,
    /// Session messages: the lease latency of replies held at a barrier (from the end of the
    /// hold) and of the others; and how late the generator sent each message after its
    /// scheduled time (its own lag, inside every latency above).
    lease_held: Lat,
    lease_unheld: Lat,
    send_lag: Lat,
    /// Calls scheduled inside the window and answered before its end plus the grace.
    answered: u64,
    errors: u64,
    first_error: Option<String>,
    leases: u64,
    waits: u64,
    /// Messages scheduled beyond one per period (a session's second request at a barrier).
    extra: u64,
}

/// CPU seconds (user + system) of process `pid`, from `/proc/PID/stat`.
pub fn proc_cpu(pid: u32) -> anyhow::Result<f64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .with_context(|| format!("reading /proc/{pid}/stat"))?;
    // Fields after the command name (which may hold spaces), from field 3 on.
    let rest = s.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = rest.split_whitespace().collect();
    anyhow::ensure!(f.len() > 13, "short /proc/{pid}/stat");
    let ticks: f64 = f[11].parse::<f64>()? + f[12].parse::<f64>()?;
    // SAFETY: sysconf reads a constant of the system; no memory is involved.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    Ok(ticks / hz.max(1.0))
}

/// CPU seconds (user + system) of this process.
fn self_cpu() -> f64 {
    // SAFETY: getrusage writes a `rusage` into the zeroed struct we own; no other invariant.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut ru);
        ru
    };
    let t = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
    t(ru.ru_utime) + t(ru.ru_stime)
}

type Client = CoordinatorClient<
    tonic::service::interceptor::InterceptedService<tonic::transport::Channel, Auth>,
>;

/// Adds the job's token to every call.
#[derive(Clone)]
struct Auth(tonic::metadata::MetadataValue<tonic::metadata::Ascii>);

impl tonic::service::Interceptor for Auth {
    fn call(&mut self, mut r: tonic::Request<()>) -> Result<tonic::Request<()>, tonic::Status> {
        r.metadata_mut().insert("authorization", self.0.clone());
        Ok(r)
    }
}

async fn connect(addr: &str, auth: Auth) -> anyhow::Result<Client> {
    let ch = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))?
        .tcp_nodelay(true)
        .connect_timeout(Duration::from_secs(30))
        .connect()
        .await
        .with_context(|| format!("connecting to the coordinator at {addr}"))?;
    Ok(CoordinatorClient::with_interceptor(ch, auth))
}

/// How long a call (or a session message) may wait for its answer.
const CALL_TIMEOUT: Duration = Duration::from_secs(10);

fn req<T>(msg: T) -> tonic::Request<T> {
    let mut r = tonic::Request::new(msg);
    r.set_timeout(CALL_TIMEOUT);
    r
}

/// Feeders joining at once (connected, registration not yet answered).
const JOINING: usize = 256;

/// Registers rank `r`; returns its incarnation.
async fn register(c: &mut Client, r: u32) -> anyhow::Result<u64> {
    let reg = c
        .register(req(proto::RegisterRequest {
            rank: Some(r),
            host: format!("dn{}", r % 64),
            port: 2222,
            gpus: vec![],
            role: proto::Role::Worker as i32,
            consumed: vec![],
        }))
        .await
        .with_context(|| format!("registering rank {r}"))?
        .into_inner();
    Ok(reg.incarnation)
}

/// Waits until every rank registered.
async fn wait_cluster(c: &mut Client, r: u32) -> anyhow::Result<()> {
    let mut w = tonic::Request::new(proto::WaitClusterSpecRequest {
        rank: r,
        timeout_ms: 300_000,
    });
    w.set_timeout(Duration::from_secs(310));
    c.wait_cluster_spec(w)
        .await
        .with_context(|| format!("rank {r} waiting for the cluster"))?;
    Ok(())
}

/// One feeder's open loop from `t0` to `end` (calls scheduled before `end` count).
async fn unary_feeder(
    mut c: Client,
    r: u32,
    inc: u64,
    t0: Instant,
    period: Duration,
    end: Instant,
    grace: Instant,
) -> Tally {
    let mut t = Tally::default();
    let step = period / 3;
    let mut held: Option<(u64, u32, u64)> = None;
    let mut k: u32 = 0;
    loop {
        let at = t0 + step * k;
        if at >= end {
            break;
        }
        tokio::time::sleep_until(at).await;
        let what = k % 3;
        k += 1;
        let res: Result<(), tonic::Status> = match (what, held) {
            (0, _) => c
                .heartbeat(req(proto::HeartbeatRequest {
                    rank: r,
                    incarnation: inc,
                    stage: proto::Stage::Reading as i32,
                    ..Default::default()
                }))
                .await
                .map(|_| t.heartbeat.add(at.elapsed())),
            (2, Some((lease, split, rows))) => c
                .ack(req(proto::AckRequest {
                    rank: r,
                    incarnation: inc,
                    lease,
                    split,
                    rows_acked: rows,
                    ranges: Vec::new(),
                }))
                .await
                .map(|_| {
                    held = None;
                    t.ack.add(at.elapsed());
                }),
            _ => c
                .request_work(req(proto::WorkRequest {
                    rank: r,
                    incarnation: inc,
                    host: String::new(),
                    known_lease: None,
                }))
                .await
                .map(|w| {
                    t.lease.add(at.elapsed());
                    match w.into_inner().kind {
                        Some(proto::work_reply::Kind::Lease(l)) => {
                            t.leases += 1;
                            held = Some((l.lease, l.split, l.rows));
                        }
                        _ => t.waits += 1,
                    }
                }),
        };
        t.count(res.map_err(|s| s.to_string()), r, grace);
    }
    linger(grace, c).await;
    t
}

/// Keeps a feeder's connection (and session) open until the measured answers' deadline: the
/// feeders whose window ended do not close their connections while others' answers are still
/// measured (thousands of streams closing at once, inside the last barrier's answers, is the
/// bench's end, not the coordinator's steady state).
async fn linger<T>(until: Instant, conn: T) {
    tokio::time::sleep_until(until).await;
    drop(conn);
}

impl Tally {
    /// Counts one answer (in time when before `grace`) or one error.
    fn count(&mut self, res: Result<(), String>, r: u32, grace: Instant) {
        match res {
            Ok(()) if Instant::now() <= grace => self.answered += 1,
            Ok(()) => {}
            Err(s) => {
                self.errors += 1;
                if self.first_error.is_none() {
                    self.first_error = Some(format!("rank {r}: {s}"));
                }
            }
        }
    }
}

/// A feeder's way to the coordinator.
enum Link {
    Unary(Client),
    Session(Box<Session>),
}

/// An open session: the messages' sender and the replies (the client keeps the connection).
struct Session {
    tx: tokio::sync::mpsc::Sender<proto::SessionRequest>,
    replies: tonic::Streaming<proto::SessionReply>,
    _client: Client,
}

async fn open_session(mut c: Client) -> Result<Link, tonic::Status> {
    let (tx, rx) = tokio::sync::mpsc::channel(2);
    let replies = c.session(ReceiverStream::new(rx)).await?.into_inner();
    Ok(Link::Session(Box::new(Session {
        tx,
        replies,
        _client: c,
    })))
}

/// One feeder's open loop over its session from `t0` to `end`: at each period's start one
/// message (the ack of the lease held, a request), and half a period later a second request
/// when the first was answered with a wait.
async fn session_feeder(
    s: Session,
    r: u32,
    inc: u64,
    t0: Instant,
    period: Duration,
    end: Instant,
    grace: Instant,
) -> Tally {
    let mut t = Tally::default();
    let Session {
        tx,
        mut replies,
        _client,
    } = s;
    let mut held: Option<(u64, u32, u64)> = None;
    let mut extra: Option<Instant> = None;
    let mut free = t0;
    let mut k: u32 = 0;
    loop {
        let main = t0 + period * k;
        let at = match extra.take() {
            Some(x) if x < main => x,
            _ => {
                k += 1;
                main
            }
        };
        if at >= end {
            break;
        }
        let is_extra = at != main;
        t.extra += u64::from(is_extra);
        tokio::time::sleep_until(at).await;
        // A message due while the last one was held at a barrier goes when that one was
        // answered: the feeder could not send it sooner, and the hold is not latency.
        let at = at.max(free);
        t.send_lag.add(at.elapsed());
        let acks: Vec<proto::AckRequest> = held
            .take()
            .map(|(lease, split, rows)| proto::AckRequest {
                rank: r,
                incarnation: inc,
                lease,
                split,
                rows_acked: rows,
                ranges: Vec::new(),
            })
            .into_iter()
            .collect();
        let acked = !acks.is_empty();
        let msg = proto::SessionRequest {
            heartbeat: Some(proto::HeartbeatRequest {
                rank: r,
                incarnation: inc,
                stage: proto::Stage::Reading as i32,
                ..Default::default()
            }),
            acks,
            work: Some(proto::WorkRequest {
                rank: r,
                incarnation: inc,
                host: String::new(),
                known_lease: None,
            }),
        };
        if tx.send(msg).await.is_err() {
            t.count(Err("the session closed".into()), r, grace);
            break;
        }
        let reply = match tokio::time::timeout(CALL_TIMEOUT, replies.message()).await {
            Ok(Ok(Some(reply))) => Ok(reply),
            Ok(Ok(None)) => Err("the session ended".to_string()),
            Ok(Err(s)) => Err(s.to_string()),
            Err(_) => Err(format!("no reply within {CALL_TIMEOUT:?}")),
        }
        .and_then(|reply| match reply.error {
            Some(e) => Err(format!("{}: {}", e.stage, e.message)),
            None => Ok(reply),
        });
        let res = reply.map(|reply| {
            let hold = Duration::from_millis(u64::from(reply.held_ms));
            if !hold.is_zero() {
                free = Instant::now();
            }
            let d = at.elapsed().saturating_sub(hold);
            t.heartbeat.add(d);
            t.lease.add(d);
            if hold.is_zero() {
                t.lease_unheld.add(d);
            } else {
                t.lease_held.add(d);
            }
            if acked {
                t.ack.add(d);
            }
            match reply.work.and_then(|w| w.kind) {
                Some(proto::work_reply::Kind::Lease(l)) => {
                    t.leases += 1;
                    held = Some((l.lease, l.split, l.rows));
                }
                _ => {
                    t.waits += 1;
                    if !is_extra {
                        extra = Some(at + period / 2);
                    }
                }
            }
        });
        let broken = res.is_err();
        t.count(res, r, grace);
        if broken {
            break;
        }
    }
    linger(grace, (tx, replies, _client)).await;
    t
}

async fn load(a: &LoadArgs) -> anyhow::Result<serde_json::Value> {
    let token = Token::from_env()?.with_context(|| format!("{TOKEN_ENV} is not set"))?;
    let auth = Auth(
        format!("Bearer {}", token.as_str())
            .parse()
            .context("the token is not ASCII")?,
    );
    let addr: Arc<str> = a.addr.as_str().into();
    // The join phase, paced: at most JOINING feeders between their connect and their
    // registration's answer. A connect returns once the kernel queued the handshake, before
    // the coordinator accepted it, so connects alone would flood its accept queue. The open
    // loop is the measured window after it; the cluster wait is not paced.
    let t_setup = Instant::now();
    let sem = Arc::new(tokio::sync::Semaphore::new(JOINING));
    let mut joins = tokio::task::JoinSet::new();
    for r in 0..a.feeders {
        let (addr, auth, sem) = (addr.clone(), auth.clone(), sem.clone());
        let protocol = a.protocol;
        joins.spawn(async move {
            let (mut c, reg) = {
                let _p = sem.acquire().await;
                let mut c = connect(&addr, auth).await?;
                let reg = register(&mut c, r).await?;
                (c, reg)
            };
            wait_cluster(&mut c, r).await?;
            // A session opens before the measured window, as a feeder's opens once.
            let link = match protocol {
                Protocol::Unary => Link::Unary(c),
                Protocol::Session => open_session(c)
                    .await
                    .with_context(|| format!("rank {r} opening its session"))?,
            };
            anyhow::Ok((r, link, reg))
        });
    }
    let mut ready = Vec::with_capacity(a.feeders as usize);
    while let Some(j) = joins.join_next().await {
        ready.push(j.context("a feeder task panicked")??);
    }
    let setup_s = t_setup.elapsed().as_secs_f64();
    let period = Duration::from_secs_f64(1.0 / a.rate_hz);
    let start = Instant::now() + Duration::from_millis(500);
    let window = Duration::from_secs_f64(a.secs);
    let end = start + window;
    let grace = end + Duration::from_secs(1);
    let n = f64::from(a.feeders);
    let mut tasks = tokio::task::JoinSet::new();
    for (r, link, inc) in ready {
        // Phases spread the feeders evenly over one period.
        let t0 = start + period.mul_f64(f64::from(r) / n);
        match link {
            Link::Unary(c) => tasks.spawn(unary_feeder(c, r, inc, t0, period, end, grace)),
            Link::Session(s) => tasks.spawn(session_feeder(*s, r, inc, t0, period, end, grace)),
        };
    }
    tokio::time::sleep_until(start).await;
    let (coord0, self0) = (proc_cpu(a.coord_pid)?, self_cpu());
    tokio::time::sleep_until(end).await;
    let (coord1, self1) = (proc_cpu(a.coord_pid)?, self_cpu());
    let mut all = Tally::default();
    let stop = tokio::time::timeout_at(grace + Duration::from_secs(10), async {
        while let Some(t) = tasks.join_next().await {
            let t = t.context("a feeder task panicked")?;
            all.lease.0.extend(t.lease.0);
            all.ack.0.extend(t.ack.0);
            all.heartbeat.0.extend(t.heartbeat.0);
            all.lease_held.0.extend(t.lease_held.0);
            all.lease_unheld.0.extend(t.lease_unheld.0);
            all.send_lag.0.extend(t.send_lag.0);
            all.answered += t.answered;
            all.errors += t.errors;
            all.leases += t.leases;
            all.waits += t.waits;
            all.extra += t.extra;
            if all.first_error.is_none() {
                all.first_error = t.first_error;
            }
        }
        anyhow::Ok(())
    })
    .await;
    if stop.is_err() {
        tasks.abort_all();
    }
    // Every feeder schedules its messages (3 calls, or 1 session message) a period from its
    // phase to `end`; a session's barrier requests are counted as they were scheduled.
    let per_period = match a.protocol {
        Protocol::Unary => 3.0,
        Protocol::Session => 1.0,
    };
    let intended: u64 = (0..a.feeders)
        .map(|r| {
            let off = period.mul_f64(f64::from(r) / n);
            let span = window.saturating_sub(off).as_secs_f64();
            (span / (period.as_secs_f64() / per_period)).ceil() as u64
        })
        .sum::<u64>()
        + all.extra;
    let secs = window.as_secs_f64();
    let coord_cpu = coord1 - coord0;
    let gen_cpu = self1 - self0;
    Ok(serde_json::json!({
        "protocol": a.protocol.name(),
        "feeders": a.feeders,
        "rate_hz": a.rate_hz,
        "window_s": secs,
        "setup_s": setup_s,
        "intended_messages": intended,
        "answered_messages": all.answered,
        "intended_messages_per_s": intended as f64 / secs,
        "messages_per_s": all.answered as f64 / secs,
        "achieved_fraction": all.answered as f64 / intended.max(1) as f64,
        "errors": all.errors,
        "first_error": all.first_error,
        "leases": all.leases,
        "waits": all.waits,
        "lease_latency": all.lease.summary(),
        "ack_latency": all.ack.summary(),
        "heartbeat_latency": all.heartbeat.summary(),
        "lease_latency_held": all.lease_held.summary(),
        "lease_latency_unheld": all.lease_unheld.summary(),
        "send_lag": all.send_lag.summary(),
        "coordinator_cpu_s": coord_cpu,
        "coordinator_cores": coord_cpu / secs,
        "coordinator_us_per_message": coord_cpu * 1e6 / all.answered.max(1) as f64,
        "coordinator_us_per_feeder_s": coord_cpu * 1e6 / (n * secs),
        "generator_cpu_s": gen_cpu,
        "generator_cores": gen_cpu / secs,
        "generator_unfinished": stop.is_err(),
    }))
}

/// Runs `hydrofeed bench coord-load`: prints one JSON line.
pub fn run_load(a: LoadArgs) -> anyhow::Result<()> {
    anyhow::ensure!(
        a.feeders > 0 && a.rate_hz > 0.0 && a.secs > 0.0,
        "feeders, rate and seconds must be positive"
    );
    let limit = raise_nofile();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let mut v = rt.block_on(load(&a))?;
    v["nofile_limit"] = limit.into();
    // Dropping the runtime with 10,000 open connections takes a while; the process ends.
    let mut o = std::io::stdout().lock();
    writeln!(o, "{v}")?;
    o.flush()?;
    std::process::exit(0);
}

/// The coordinator of one open-loop run, in a child process; killed on drop.
struct Coordinator {
    child: std::process::Child,
    addr: String,
    _dir: super::coord::TempDir,
}

impl Drop for Coordinator {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `hydrofeed coordinator` for `feeders` ranks with the journal on, in its default
/// order (fixed): two splits per feeder, a rank's share of an epoch is one lease, so a 1 Hz
/// feeder acks an epoch's share and asks for the next every second: an epoch closes every
/// second. A rank done with its share is dealt the next epoch's at once (the fixed order's
/// rule), so its request is not held until the slowest rank acked.
fn start_coordinator(feeders: u32, secs: f64, token: &Token) -> anyhow::Result<Coordinator> {
    let dir = super::coord::TempDir::new()?;
    let splits_path = dir.0.join("splits.json");
    let splits: Vec<serde_json::Value> = (0..feeders.saturating_mul(2))
        .map(|i| serde_json::json!({"id": i, "rows": 4096, "hosts": [format!("dn{}", i % 64)]}))
        .collect();
    std::fs::write(&splits_path, serde_json::to_vec(&splits)?)?;
    let epochs = secs.ceil() as u32 * 2 + 10;
    let (workers, epochs) = (feeders.to_string(), epochs.to_string());
    let (journal, token_file) = (dir.0.join("journal"), dir.0.join("token"));
    let (child, addr) = super::coord::spawn_coordinator(
        [
            "--splits".as_ref(),
            splits_path.as_os_str(),
            "--workers".as_ref(),
            workers.as_ref(),
            "--batch-size".as_ref(),
            "256".as_ref(),
            "--epochs".as_ref(),
            epochs.as_ref(),
            "--listen".as_ref(),
            "127.0.0.1:0".as_ref(),
            "--reservation-timeout".as_ref(),
            "600".as_ref(),
            "--journal".as_ref(),
            journal.as_os_str(),
            "--token-file".as_ref(),
            token_file.as_os_str(),
        ],
        token,
    )?;
    Ok(Coordinator {
        child,
        addr,
        _dir: dir,
    })
}

/// One open-loop run of `feeders` speaking `protocol` against a fresh coordinator. A run
/// that answered fewer than 95% of the intended messages is returned with its `failure`
/// said; an error is a run that could not be made at all.
pub fn open_loop(
    feeders: u32,
    rate_hz: f64,
    secs: f64,
    protocol: Protocol,
) -> anyhow::Result<serde_json::Value> {
    let nofile = raise_nofile();
    let token = Token::generate()?;
    let coord = start_coordinator(feeders, secs, &token)?;
    let out = Command::new(std::env::current_exe()?)
        .args(["bench", "coord-load", "--addr", &coord.addr])
        .args(["--coord-pid", &coord.child.id().to_string()])
        .args(["--feeders", &feeders.to_string()])
        .args([
            "--rate-hz",
            &rate_hz.to_string(),
            "--secs",
            &secs.to_string(),
            "--protocol",
            protocol.name(),
        ])
        .env(TOKEN_ENV, token.as_str())
        .stderr(Stdio::inherit())
        .output()
        .context("running the load generator `hydrofeed bench coord-load`")?;
    drop(coord);
    anyhow::ensure!(
        out.status.success(),
        "the load generator failed ({}) at {feeders} feeders ({})",
        out.status,
        protocol.name()
    );
    let mut v: serde_json::Value =
        serde_json::from_slice(&out.stdout).context("reading the load generator's report")?;
    v["parent_nofile_limit"] = nofile.into();
    let f = v["achieved_fraction"].as_f64().unwrap_or(0.0);
    v["failure"] = (f < MIN_ACHIEVED)
        .then(|| {
            format!(
                "open-loop load of {feeders} feeders ({}) at {rate_hz} Hz: {:.0} of {:.0} intended \
                 messages/s answered ({:.1}% < {:.0}%); {} errors (first: {})",
                protocol.name(),
                v["messages_per_s"].as_f64().unwrap_or(0.0),
                v["intended_messages_per_s"].as_f64().unwrap_or(0.0),
                f * 100.0,
                MIN_ACHIEVED * 100.0,
                v["errors"],
                v["first_error"],
            )
        })
        .into();
    Ok(v)
}

/// Whether a run held the target latency (lease and ack p99 under `p99_ms`).
pub fn holds(v: &serde_json::Value, p99_ms: f64) -> bool {
    v["failure"].is_null()
        && ["lease_latency", "ack_latency"]
            .iter()
            .all(|k| v[k]["p99_ms"].as_f64().is_some_and(|p| p < p99_ms))
}
