//! The coordinator end to end: real gRPC on loopback (ephemeral ports), feeders as threads
//! with blocking clients, 3 workers over 7 splits of 1 to 10,000 rows, 2 epochs.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hydrofeed_coord::client::CoordClient;
use hydrofeed_coord::service::{self, RunningService, ServiceOptions};
use hydrofeed_coord::sim::{Sim, SimOptions};
use hydrofeed_coord::token::Token;
use hydrofeed_coord::{
    split_order, Config, LogKind, LogRecord, Machine, Registration, Remainder, Role, SplitInfo,
    Stage, State, Work,
};
use hydrofeed_error::Error;

const ROWS: [u64; 7] = [1, 10_000, 37, 2_500, 5, 777, 4_096];
const B: u64 = 32;
const SEED: u64 = 20_261_123;

fn splits() -> Vec<SplitInfo> {
    ROWS.iter()
        .enumerate()
        .map(|(i, &r)| SplitInfo::new(i as u32, r))
        .collect()
}

fn total() -> u64 {
    ROWS.iter().sum()
}

fn cfg(w: u32) -> Config {
    Config {
        epochs: 2,
        seed: SEED,
        stall_after_ms: 150,
        dead_after_ms: 400,
        ..Config::new(w, B)
    }
}

fn start(m: Machine, token: &Token, log: Option<std::path::PathBuf>) -> RunningService {
    let opts = ServiceOptions {
        ps: 0,
        evaluators: 0,
        reservation_timeout: Duration::from_secs(20),
        heartbeat_interval: Duration::from_millis(50),
        log_path: log,
        token: token.clone(),
        tls: None,
        filter_counts: None,
    };
    service::spawn(m, opts, "127.0.0.1:0".parse().unwrap(), None).unwrap()
}

/// What the trainers consumed, as feeders acked it.
#[derive(Default)]
struct Tally {
    /// (data epoch, split) -> acks per row.
    rows: HashMap<(u32, u32), Vec<u32>>,
    /// (training epoch, rank) -> rows.
    per_rank: HashMap<(u32, u32), u64>,
}

impl Tally {
    fn add(&mut self, l: &hydrofeed_coord::Lease, rank: u32, from: u64, to: u64) {
        *self.per_rank.entry((l.epoch, rank)).or_default() += to - from;
        if l.pad {
            return;
        }
        let (data_epoch, split) = (l.data_epoch, l.split);
        let v = self
            .rows
            .entry((data_epoch, split))
            .or_insert_with(|| vec![0; ROWS[split as usize] as usize]);
        for i in from..to {
            v[i as usize] += 1;
        }
    }

    /// Rows of `epoch` acked once; panics on any row acked twice.
    fn once(&self, epoch: u32) -> u64 {
        let mut n = 0;
        for s in 0..ROWS.len() as u32 {
            if let Some(v) = self.rows.get(&(epoch, s)) {
                for (i, &c) in v.iter().enumerate() {
                    assert!(c <= 1, "epoch {epoch} split {s} row {i} acked {c} times");
                    n += u64::from(c);
                }
            }
        }
        n
    }
}

/// A feeder: registers, waits for the cluster, takes leases and acks them in chunks of
/// `chunk` rows. With `stop_after`, it vanishes (no more calls, no heartbeats) after that many
/// acks, in the middle of a lease. Returns the end-of-feed step count.
fn feeder(
    addr: String,
    token: Token,
    rank: u32,
    tally: Arc<Mutex<Tally>>,
    stop_after: Option<usize>,
    host: String,
) -> Result<Option<u64>, Error> {
    let mut c = CoordClient::connect(&addr, &token, Duration::from_secs(5))?
        .with_call_timeout(Duration::from_secs(10));
    let reg = c.register(&Registration {
        rank: Some(rank),
        host,
        port: 2222,
        gpus: vec![],
        role: if rank == 0 { Role::Chief } else { Role::Worker },
    })?;
    assert_eq!(reg.rank, rank);
    assert_eq!(
        (reg.num_splits, reg.total_rows),
        (ROWS.len() as u32, total())
    );
    let (spec, tf) = c.wait_cluster_spec(rank, Duration::from_secs(10))?;
    assert_eq!(
        spec.values().map(Vec::len).sum::<usize>(),
        reg.num_workers as usize
    );
    let tf: serde_json::Value = serde_json::from_str(&tf).unwrap();
    assert_eq!(
        tf["task"]["type"],
        if rank == 0 { "chief" } else { "worker" }
    );
    let inc = reg.incarnation;
    let mut acks = 0;
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        assert!(
            Instant::now() < deadline,
            "rank {rank}: feed did not end within 60 s"
        );
        match c.request_work(rank, inc, "")? {
            Work::Lease(l) => {
                assert_eq!(
                    l.shuffle_seed,
                    hydrofeed_coord::shuffle_seed(SEED, l.epoch, rank)
                );
                assert_eq!(
                    l.job_seed, SEED,
                    "the job's seed crosses the wire with the lease"
                );
                let mut done = 0;
                while done < l.rows {
                    let to = (done + 300).min(l.rows);
                    if rank % 2 == 1 && to - done >= 2 {
                        // Odd ranks ack as a shuffling feeder would: pieces, out of order.
                        let mid = done + (to - done) / 2;
                        c.ack_ranges(rank, inc, l.lease, l.split, &[(mid, to - mid)])?;
                        c.ack_ranges(rank, inc, l.lease, l.split, &[(done, mid - done), (mid, 1)])?;
                    } else {
                        c.ack(rank, inc, l.lease, l.split, to)?;
                    }
                    tally
                        .lock()
                        .unwrap()
                        .add(&l, rank, l.first_row + done, l.first_row + to);
                    done = to;
                    acks += 1;
                    if stop_after.is_some_and(|n| acks >= n) && done < l.rows {
                        return Ok(None);
                    }
                }
            }
            Work::Wait { retry_ms } => {
                assert!(c.heartbeat(rank, inc, Stage::WaitingWork, Default::default())?);
                std::thread::sleep(Duration::from_millis(retry_ms));
            }
            Work::EndOfFeed { steps } => return Ok(Some(steps)),
        }
    }
}

fn run_feeders(
    svc: &RunningService,
    token: &Token,
    ranks: &[u32],
    tally: &Arc<Mutex<Tally>>,
    stop: impl Fn(u32) -> Option<usize>,
) -> Vec<std::thread::JoinHandle<Result<Option<u64>, Error>>> {
    ranks
        .iter()
        .map(|&r| {
            let (a, t, ta, s) = (svc.addr.to_string(), token.clone(), tally.clone(), stop(r));
            std::thread::spawn(move || feeder(a, t, r, ta, s, format!("node-{r}")))
        })
        .collect()
}

fn read_log(p: &std::path::Path) -> Vec<LogRecord> {
    std::fs::read_to_string(p)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// First appearance order of splits in the assignments of a data epoch.
fn first_seen(log: &[LogRecord], data_epoch: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for r in log
        .iter()
        .filter(|r| r.kind == LogKind::Assign && r.data_epoch == data_epoch && !r.pad)
    {
        if !out.contains(&r.split) {
            out.push(r.split);
        }
    }
    out
}

#[test]
fn three_workers_two_epochs_over_grpc() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("assign.jsonl");
    let token = Token::generate().unwrap();
    let svc = start(
        Machine::new(splits(), cfg(3)).unwrap(),
        &token,
        Some(log.clone()),
    );
    let tally = Arc::new(Mutex::new(Tally::default()));
    let hs = run_feeders(&svc, &token, &[0, 1, 2], &tally, |_| None);
    let steps: Vec<u64> = hs
        .into_iter()
        .map(|h| h.join().unwrap().unwrap().unwrap())
        .collect();

    // Equal steps: floor(17416 / (3 * 32)) = 181 per epoch, on every rank; end of feed at 362.
    let s = total() / (3 * B);
    assert_eq!(s, 181);
    assert_eq!(steps, vec![2 * s; 3]);
    let t = tally.lock().unwrap();
    for e in 0..2 {
        for r in 0..3 {
            assert_eq!(t.per_rank[&(e, r)], s * B, "epoch {e} rank {r}");
        }
        // Every row at most once, and all but the reported remainder.
        assert_eq!(t.once(e), 3 * s * B);
    }
    let k = svc.shared.with_machine(|m| m.counters());
    assert_eq!(k.rows_dropped, 2 * (total() - 3 * s * B));
    assert_eq!(k.rows_acked, 2 * 3 * s * B);
    drop(t);
    svc.shutdown().unwrap();

    // The assignment log replays the run: assignments per rank and epoch sum to the quota,
    // and drops to the reported remainder; splits are handed out in the epoch's order.
    let recs = read_log(&log);
    for e in 0..2u32 {
        for r in 0..3u32 {
            let rows: u64 = recs
                .iter()
                .filter(|x| x.kind == LogKind::Assign && x.epoch == e && x.rank == r)
                .map(|x| x.rows)
                .sum();
            assert_eq!(rows, s * B);
        }
        let order = split_order(SEED, e, ROWS.len() as u32);
        let seen = first_seen(&recs, e);
        assert_eq!(seen[..], order[..seen.len()], "epoch {e}");
    }
    let dropped: u64 = recs
        .iter()
        .filter(|x| x.kind == LogKind::Drop)
        .map(|x| x.rows)
        .sum();
    assert_eq!(dropped, k.rows_dropped);
    assert_ne!(split_order(SEED, 0, 7), split_order(SEED, 1, 7));
}

/// A whole job of `c` over [`splits`], simulated to its end with schedule seed 5.
fn simulated(c: Config) -> Sim {
    let mut sim = Sim::new(
        Machine::new(splits(), c).unwrap(),
        SimOptions {
            seed: 5,
            ..Default::default()
        },
    )
    .unwrap();
    sim.run(10_000_000).unwrap();
    sim
}

/// Same seed and schedule -> the same assignments, twice; another epoch -> another order.
#[test]
fn same_seed_same_order_other_epoch_other_order() {
    let run = |seed: u64| simulated(Config { seed, ..cfg(3) }).m.drain_log();
    let a = run(SEED);
    let b = run(SEED);
    assert_eq!(a, b);
    assert_ne!(
        first_seen(&a, 0),
        first_seen(&a, 1),
        "epochs 0 and 1 share an order"
    );
    assert_eq!(
        first_seen(&a, 0)[..],
        split_order(SEED, 0, 7)[..first_seen(&a, 0).len()]
    );
    let c = run(SEED + 1);
    assert_ne!(first_seen(&a, 0), first_seen(&c, 0));
}

/// `shuffle: false`: every epoch hands the splits out in plan order; the state keeps it.
#[test]
fn without_shuffle_every_epoch_follows_the_plan_order() {
    let mut sim = simulated(Config {
        shuffle: false,
        ..cfg(3)
    });
    assert!(!sim.m.state().shuffle);
    let log = sim.m.drain_log();
    for e in 0..2u32 {
        let seen = first_seen(&log, e);
        let plan: Vec<u32> = (0..seen.len() as u32).collect();
        assert_eq!(seen, plan, "epoch {e}");
    }
    let resumed = State::from_json(&sim.m.state().to_json()).unwrap();
    assert!(!resumed.shuffle);
}

#[test]
fn dead_worker_rows_are_reassigned_from_last_ack() {
    let token = Token::generate().unwrap();
    let svc = start(Machine::new(splits(), cfg(3)).unwrap(), &token, None);
    let tally = Arc::new(Mutex::new(Tally::default()));
    // Rank 2 vanishes after 3 acks, mid-lease.
    let mut hs = run_feeders(&svc, &token, &[0, 1, 2], &tally, |r| (r == 2).then_some(3));
    let h2 = hs.pop().unwrap();
    assert_eq!(h2.join().unwrap().unwrap(), None);
    let acked_before = tally
        .lock()
        .unwrap()
        .per_rank
        .get(&(0, 2))
        .copied()
        .unwrap_or(0);
    assert!(acked_before > 0);
    // The coordinator names it dead after 400 ms of silence.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let m = svc
            .shared
            .with_machine(|m| (m.ranks()[2].alive, m.counters().deaths));
        if m == (false, 1) {
            break;
        }
        assert!(Instant::now() < deadline, "rank 2 was not declared dead");
        std::thread::sleep(Duration::from_millis(20));
    }
    // A replacement on another host takes rank 2 (a new incarnation); the feed completes.
    let (a, t, ta) = (svc.addr.to_string(), token.clone(), tally.clone());
    hs.push(std::thread::spawn(move || {
        feeder(a, t, 2, ta, None, "node-2-rescheduled".into())
    }));
    let steps: Vec<u64> = hs
        .into_iter()
        .map(|h| h.join().unwrap().unwrap().unwrap())
        .collect();
    let s = total() / (3 * B);
    assert_eq!(steps, vec![2 * s; 3]);
    let t = tally.lock().unwrap();
    for e in 0..2 {
        for r in 0..3 {
            assert_eq!(t.per_rank[&(e, r)], s * B, "epoch {e} rank {r}");
        }
        assert_eq!(t.once(e), 3 * s * B, "epoch {e}: rows lost or duplicated");
    }
    let m = svc
        .shared
        .with_machine(|m| (m.counters(), m.ranks()[2].incarnation));
    assert_eq!(m.0.deaths, 1);
    assert_eq!(m.1, 2);
    svc.shutdown().unwrap();
}

#[test]
fn resume_with_two_workers_instead_of_three() {
    let token = Token::generate().unwrap();
    let svc = start(Machine::new(splits(), cfg(3)).unwrap(), &token, None);
    let tally = Arc::new(Mutex::new(Tally::default()));
    // All three stop after 6 acks each (mid-epoch 0, mid-lease).
    let hs = run_feeders(&svc, &token, &[0, 1, 2], &tally, |_| Some(6));
    for h in hs {
        assert_eq!(h.join().unwrap().unwrap(), None);
    }
    let mut c =
        CoordClient::connect(&svc.addr.to_string(), &token, Duration::from_secs(5)).unwrap();
    let st = c.state().unwrap();
    drop(c);
    svc.shutdown().unwrap();
    assert_eq!(st.epoch, 0);
    let first_run = tally.lock().unwrap().once(0);
    assert!(first_run > 0 && first_run < total());

    // The state travels as JSON; the new run has 2 workers.
    let st = State::from_json(&st.to_json()).unwrap();
    let svc = start(
        Machine::resume(splits(), cfg(2), &st).unwrap(),
        &token,
        None,
    );
    let hs = run_feeders(&svc, &token, &[0, 1], &tally, |_| None);
    let steps: Vec<u64> = hs
        .into_iter()
        .map(|h| h.join().unwrap().unwrap().unwrap())
        .collect();
    assert_eq!(steps[0], steps[1]);
    let k = svc.shared.with_machine(|m| m.counters());
    let t = tally.lock().unwrap();
    // Epoch 0: the union of both runs is the epoch, minus the reported drop.
    let rest0 = total() - first_run;
    let s0 = rest0 / (2 * B);
    let s1 = total() / (2 * B);
    assert_eq!(steps[0], s0 + s1);
    assert_eq!(t.once(0), first_run + 2 * s0 * B);
    assert_eq!(t.once(1), 2 * s1 * B);
    assert_eq!(
        k.rows_dropped,
        (rest0 - 2 * s0 * B) + (total() - 2 * s1 * B)
    );
    assert_eq!(t.once(0) + t.once(1) + k.rows_dropped, 2 * total());
    svc.shutdown().unwrap();
}

#[test]
fn missing_worker_at_reservation_is_named() {
    let token = Token::generate().unwrap();
    let opts = ServiceOptions {
        ps: 0,
        evaluators: 0,
        reservation_timeout: Duration::from_millis(800),
        heartbeat_interval: Duration::from_millis(50),
        log_path: None,
        token: token.clone(),
        tls: None,
        filter_counts: None,
    };
    let svc = service::spawn(
        Machine::new(splits(), cfg(3)).unwrap(),
        opts,
        "127.0.0.1:0".parse().unwrap(),
        None,
    )
    .unwrap();
    let mut c =
        CoordClient::connect(&svc.addr.to_string(), &token, Duration::from_secs(5)).unwrap();
    for (rank, host) in [(0, "node-a"), (1, "node-b")] {
        let reg = Registration {
            rank: Some(rank),
            host: host.into(),
            port: 2222,
            gpus: vec![0],
            role: Role::Worker,
        };
        c.register(&reg).unwrap();
    }
    let t0 = Instant::now();
    let e = c.wait_cluster_spec(0, Duration::from_secs(10)).unwrap_err();
    assert!(
        t0.elapsed() < Duration::from_secs(5),
        "waited {:?}",
        t0.elapsed()
    );
    let msg = e.to_string();
    assert!(matches!(e, Error::Timeout { .. }), "{e:?}");
    assert!(msg.contains("missing ranks [2 (worker)] of 3"), "{msg}");
    assert!(msg.contains("0 on node-a:2222, 1 on node-b:2222"), "{msg}");
    svc.shutdown().unwrap();
}

#[test]
fn wrong_token_is_refused() {
    let token = Token::generate().unwrap();
    let svc = start(Machine::new(splits(), cfg(3)).unwrap(), &token, None);
    let other = Token::generate().unwrap();
    let mut c =
        CoordClient::connect(&svc.addr.to_string(), &other, Duration::from_secs(5)).unwrap();
    let reg = Registration {
        rank: None,
        host: "intruder".into(),
        port: 1,
        gpus: vec![],
        role: Role::Worker,
    };
    let e = c.register(&reg).unwrap_err().to_string();
    assert!(
        e.contains("unauthenticated") && e.contains("wrong token"),
        "{e}"
    );
    let e = c.state().unwrap_err().to_string();
    assert!(e.contains("wrong token"), "{e}");
    // Nothing reached the state.
    assert!(svc
        .shared
        .with_machine(|m| m.ranks().iter().all(|r| !r.joined)));
    // The right token works.
    let mut ok =
        CoordClient::connect(&svc.addr.to_string(), &token, Duration::from_secs(5)).unwrap();
    assert_eq!(ok.register(&reg).unwrap().rank, 0);
    svc.shutdown().unwrap();
}

#[test]
fn unreachable_coordinator_is_a_clear_error() {
    // A port nobody listens on (bound then closed).
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    drop(l);
    let e = CoordClient::connect(&addr, &Token::generate().unwrap(), Duration::from_secs(2))
        .unwrap_err();
    assert!(
        matches!(e, Error::PeerLost(_) | Error::Timeout { .. }),
        "{e:?}"
    );
    assert!(e.to_string().contains(&addr), "{e}");
}

/// `pad` and `wrap` over gRPC: ceil steps, every row of an epoch exactly once, extra rows
/// counted.
#[test]
fn pad_and_wrap_over_grpc() {
    for rem in [Remainder::Pad, Remainder::Wrap] {
        let token = Token::generate().unwrap();
        let svc = start(
            Machine::new(
                splits(),
                Config {
                    remainder: rem,
                    ..cfg(3)
                },
            )
            .unwrap(),
            &token,
            None,
        );
        let tally = Arc::new(Mutex::new(Tally::default()));
        let hs = run_feeders(&svc, &token, &[0, 1, 2], &tally, |_| None);
        let steps: Vec<u64> = hs
            .into_iter()
            .map(|h| h.join().unwrap().unwrap().unwrap())
            .collect();
        let t = tally.lock().unwrap();
        let k = svc.shared.with_machine(|m| m.counters());
        let s0 = total().div_ceil(3 * B); // 182
        let extra = 3 * s0 * B - total(); // 56 rows short of the last step
        match rem {
            Remainder::Pad => {
                assert_eq!(steps, vec![2 * s0; 3]);
                assert_eq!(t.once(0), total());
                assert_eq!(t.once(1), total());
                assert_eq!(k.rows_padded, 2 * extra);
            }
            _ => {
                // Epoch 0 borrows `extra` rows of epoch 1's order; epoch 1 owns the rest.
                let s1 = (total() - extra).div_ceil(3 * B);
                assert_eq!(steps, vec![s0 + s1; 3]);
                assert_eq!(t.once(0), total());
                assert_eq!(t.once(1), total());
                let extra1 = 3 * s1 * B - (total() - extra);
                assert_eq!(k.rows_wrapped, extra + extra1);
                assert_eq!(t.once(2), extra1, "rows of the epoch after the last");
            }
        }
        for e in 0..2 {
            assert_eq!(t.per_rank[&(e, 0)], t.per_rank[&(e, 1)]);
            assert_eq!(t.per_rank[&(e, 1)], t.per_rank[&(e, 2)]);
        }
        drop(t);
        svc.shutdown().unwrap();
    }
}

/// `hydrofeed coordinator` as users run it: split list in, address and metrics address out,
/// Prometheus text while feeding, assignment log and state file at the end, exit on its own.
#[test]
fn coordinator_cli_end_to_end() {
    use std::io::{BufRead, BufReader, Read, Write};
    let dir = tempfile::tempdir().unwrap();
    let splits_json: Vec<serde_json::Value> = ROWS
        .iter()
        .enumerate()
        .map(|(i, r)| serde_json::json!({"id": i, "rows": r, "hosts": [format!("node-{}", i % 2)]}))
        .collect();
    std::fs::write(
        dir.path().join("splits.json"),
        serde_json::to_vec(&splits_json).unwrap(),
    )
    .unwrap();
    let token = Token::generate().unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_hydrofeed"))
        .args([
            "coordinator",
            "--workers",
            "2",
            "--batch-size",
            "32",
            "--epochs",
            "2",
            "--seed",
            &SEED.to_string(),
        ])
        .args([
            "--remainder",
            "pad",
            "--metrics",
            "127.0.0.1:0",
            "--dead-after",
            "30",
        ])
        .arg("--splits")
        .arg(dir.path().join("splits.json"))
        .arg("--log")
        .arg(dir.path().join("log.jsonl"))
        .arg("--state-out")
        .arg(dir.path().join("state.json"))
        .env("HYDROFEED_TOKEN", token.as_str())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Kill the child if anything below panics.
    struct Reap(std::process::Child);
    impl Drop for Reap {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut child = Reap(child);
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    let addr = line
        .trim()
        .strip_prefix("hydrofeed coordinator listening on ")
        .unwrap()
        .to_string();
    line.clear();
    out.read_line(&mut line).unwrap();
    let murl = line
        .trim()
        .strip_prefix("metrics: http://")
        .unwrap()
        .to_string();
    let maddr = murl.strip_suffix("/metrics").unwrap().to_string();

    let tally = Arc::new(Mutex::new(Tally::default()));
    let hs: Vec<_> = (0..2u32)
        .map(|r| {
            let (a, t, ta) = (addr.clone(), token.clone(), tally.clone());
            std::thread::spawn(move || feeder(a, t, r, ta, None, format!("node-{r}")))
        })
        .collect();
    // Scrape while feeding (or just after).
    let mut s = std::net::TcpStream::connect(&maddr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let mut body = String::new();
    s.read_to_string(&mut body).unwrap();
    assert!(body.starts_with("HTTP/1.1 200 OK"), "{body}");
    assert!(
        body.contains("# TYPE hydrofeed_coord_rows_acked_total counter"),
        "{body}"
    );
    assert!(
        body.contains("hydrofeed_coord_worker_steps{rank=\"1\""),
        "{body}"
    );
    let steps: Vec<u64> = hs
        .into_iter()
        .map(|h| h.join().unwrap().unwrap().unwrap())
        .collect();
    assert_eq!(steps, vec![2 * total().div_ceil(64); 2]);

    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(st) = child.0.try_wait().unwrap() {
            break st;
        }
        assert!(
            Instant::now() < deadline,
            "coordinator did not exit after end of feed"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success());
    let mut rest = String::new();
    out.read_to_string(&mut rest).unwrap();
    assert!(rest.contains("end of feed: epoch 2"), "{rest}");
    let st =
        State::from_json(&std::fs::read_to_string(dir.path().join("state.json")).unwrap()).unwrap();
    assert!(st.finished);
    assert_eq!(
        st.rows_padded,
        2 * (2 * total().div_ceil(64) * 32 - total())
    );
    let recs = read_log(&dir.path().join("log.jsonl"));
    let assigned: u64 = recs
        .iter()
        .filter(|r| r.kind == LogKind::Assign)
        .map(|r| r.rows)
        .sum();
    assert_eq!(assigned, 2 * 2 * total().div_ceil(64) * 32);
    let t = tally.lock().unwrap();
    assert_eq!((t.once(0), t.once(1)), (total(), total()));
}

/// A resumed state fixes the split order: `--no-shuffle` against a state that shuffles is
/// refused by name, as `--seed`/`--epochs`/`--remainder` that differ are; a state written
/// without shuffle resumes with the flag.
#[test]
fn coordinator_cli_refuses_no_shuffle_against_a_shuffled_state() {
    let dir = tempfile::tempdir().unwrap();
    let splits_json: Vec<serde_json::Value> = ROWS
        .iter()
        .enumerate()
        .map(|(i, r)| serde_json::json!({"id": i, "rows": r}))
        .collect();
    let splits_path = dir.path().join("splits.json");
    std::fs::write(&splits_path, serde_json::to_vec(&splits_json).unwrap()).unwrap();
    let run = |state: &State, no_shuffle: bool| {
        let p = dir.path().join("state.json");
        std::fs::write(&p, state.to_json()).unwrap();
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_hydrofeed"));
        c.args(["coordinator", "--workers", "2", "--batch-size", "32"])
            .arg("--splits")
            .arg(&splits_path)
            .arg("--resume")
            .arg(&p)
            .arg("--token-file")
            .arg(dir.path().join("token"));
        if no_shuffle {
            c.arg("--no-shuffle");
        }
        c.env_remove("HYDROFEED_TOKEN")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let shuffled = Machine::new(splits(), Config::new(2, 32)).unwrap().state();
    let out = run(&shuffled, true).wait_with_output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--no-shuffle differs"), "{err}");
    // In plan order it resumes (and serves until killed).
    let plain = Machine::new(
        splits(),
        Config {
            shuffle: false,
            ..Config::new(2, 32)
        },
    )
    .unwrap()
    .state();
    let mut child = run(&plain, true);
    std::thread::sleep(Duration::from_millis(500));
    let still_running = child.try_wait().unwrap().is_none();
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        still_running,
        "a plan-order state with --no-shuffle must resume"
    );
}
