//! `hydrofeed bench coord`: how many assignments per second the coordinator sustains and what
//! it costs in CPU, (1) in-process against the state machine with many simulated feeders and
//! splits, heartbeats at a given rate, and (2) over real gRPC on loopback, with the
//! coordinator in a child process (`hydrofeed coordinator`) so its CPU is measured alone
//! (`getrusage(RUSAGE_CHILDREN)`). The ratio of (2) to (1) is the protocol's overhead.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;

use hydrofeed_coord::client::CoordClient;
use hydrofeed_coord::token::{Token, TOKEN_ENV};
use hydrofeed_coord::{mix64, Config, Machine, Registration, Role, SplitInfo, Stage, Work};

/// Arguments of `hydrofeed bench coord`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Simulated feeders (workers) in-process.
    #[arg(long, default_value_t = 1000)]
    pub feeders: u32,
    /// Splits in-process.
    #[arg(long, default_value_t = 1_000_000)]
    pub splits: u32,
    /// Heartbeats per feeder per second.
    #[arg(long, default_value_t = 1.0)]
    pub heartbeat_hz: f64,
    /// Rows per batch.
    #[arg(long, default_value_t = 256)]
    pub batch_size: u64,
    /// Feeders (client threads) of the gRPC run.
    #[arg(long, default_value_t = 16)]
    pub grpc_feeders: u32,
    /// Splits of the gRPC run.
    #[arg(long, default_value_t = 20_000)]
    pub grpc_splits: u32,
    /// Skip the gRPC run.
    #[arg(long)]
    pub no_grpc: bool,
    /// Skip the in-process run.
    #[arg(long)]
    pub no_in_process: bool,
    /// The gRPC run as before the open-loop load: `--grpc-feeders` threads asking as fast as
    /// answered until end of feed (the loopback call rate), instead of the open-loop load.
    #[arg(long)]
    pub grpc_closed_loop: bool,
    /// Periods per second of each open-loop feeder (a heartbeat, a lease and an ack each).
    #[arg(long, default_value_t = 1.0)]
    pub grpc_rate_hz: f64,
    /// Seconds each open-loop run is measured.
    #[arg(long, default_value_t = 10.0)]
    pub grpc_secs: f64,
    /// Open-loop runs at these feeder counts too (e.g. `1000,2500,5000,10000`), to find the
    /// largest count one coordinator core holds at p99 < `--p99-ms`.
    #[arg(long, value_delimiter = ',')]
    pub sweep: Vec<u32>,
    /// The open-loop feeders' protocol: `unary` (three calls a period) or `session` (one
    /// stream per feeder, one message a period). Absent: both, alternated at every count, so
    /// that one command compares them on the same machine at the same time.
    #[arg(long, value_enum)]
    pub protocol: Option<super::coord_load::Protocol>,
    /// The lease and ack p99 latency a sweep point must stay under.
    #[arg(long, default_value_t = 50.0)]
    pub p99_ms: f64,
    /// Seed of the synthetic plan.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

/// CPU seconds (user + system) and max RSS (KiB) of `who`.
fn rusage(who: libc::c_int) -> (f64, i64) {
    // SAFETY: getrusage writes a `rusage` into the zeroed struct we own; no other invariant.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(who, &mut ru);
        ru
    };
    let t = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
    (t(ru.ru_utime) + t(ru.ru_stime), ru.ru_maxrss)
}

/// A synthetic plan: rows per split uniform in 1,000..200,000, hosts dn0..dn63 (3 replicas).
fn plan(n: u32, seed: u64) -> Vec<SplitInfo> {
    (0..n)
        .map(|i| {
            let r = mix64(seed ^ u64::from(i));
            let h = (r >> 32) % 64;
            SplitInfo::new(i, 1000 + r % 199_000).with_hosts([
                format!("dn{h}"),
                format!("dn{}", (h + 1) % 64),
                format!("dn{}", (h + 2) % 64),
            ])
        })
        .collect()
}

fn in_process(a: &Args) -> anyhow::Result<serde_json::Value> {
    let (cpu0, _) = rusage(libc::RUSAGE_SELF);
    let t0 = Instant::now();
    let cfg = Config {
        seed: a.seed,
        ..Config::new(a.feeders, a.batch_size)
    };
    let mut m = Machine::new(plan(a.splits, a.seed), cfg)?;
    m.set_keep_log(false);
    let incs: Vec<u64> = (0..a.feeders)
        .map(|r| m.join(r, &format!("dn{}", r % 64), 0))
        .collect::<Result<_, _>>()?;
    let setup_s = t0.elapsed().as_secs_f64();
    let (cpu1, _) = rusage(libc::RUSAGE_SELF);

    // Assignments: every feeder in turn asks, then acks its lease whole; simulated time runs
    // at 1 ms per call, and heartbeats go out at heartbeat_hz per feeder.
    let t1 = Instant::now();
    let mut now: u64 = 0;
    let mut assignments = 0u64;
    let mut heartbeats = 0u64;
    let mut calls = 0u64;
    let hb_every_ms = if a.heartbeat_hz > 0.0 {
        (1000.0 / a.heartbeat_hz) as u64
    } else {
        u64::MAX
    };
    let mut next_hb = vec![0u64; a.feeders as usize];
    let mut ended = vec![false; a.feeders as usize];
    let mut left = a.feeders;
    let mut next_tick = 100;
    while left > 0 {
        for r in 0..a.feeders {
            if ended[r as usize] {
                continue;
            }
            now += 1;
            if now >= next_tick {
                m.tick(now);
                next_tick = now + 100;
            }
            if now >= next_hb[r as usize] {
                m.heartbeat(r, incs[r as usize], Stage::Reading, Default::default(), now)?;
                heartbeats += 1;
                calls += 1;
                next_hb[r as usize] = now + hb_every_ms;
            }
            calls += 1;
            match m.request_work(r, incs[r as usize], None, now)? {
                Work::Lease(l) => {
                    assignments += 1;
                    calls += 1;
                    m.ack(r, incs[r as usize], l.lease, l.split, l.rows, now)?;
                }
                Work::Wait { .. } => {}
                Work::EndOfFeed { .. } => {
                    ended[r as usize] = true;
                    left -= 1;
                }
            }
        }
    }
    let wall = t1.elapsed().as_secs_f64();
    let (cpu2, rss) = rusage(libc::RUSAGE_SELF);
    let cpu = cpu2 - cpu1;

    // Heartbeat cost alone.
    let n_hb = 2_000_000u64.max(u64::from(a.feeders) * 10);
    let t2 = Instant::now();
    for i in 0..n_hb {
        let r = (i % u64::from(a.feeders)) as u32;
        now += 1;
        m.heartbeat(
            r,
            incs[r as usize],
            Stage::Decoding,
            Default::default(),
            now,
        )?;
    }
    let hb_ns = t2.elapsed().as_secs_f64() * 1e9 / n_hb as f64;
    let k = m.counters();
    Ok(serde_json::json!({
        "feeders": a.feeders,
        "splits": a.splits,
        "rows": m.total_rows(),
        "setup_s": setup_s,
        "setup_cpu_s": cpu1 - cpu0,
        "assignments": assignments,
        "calls": calls,
        "heartbeats": heartbeats,
        "wall_s": wall,
        "cpu_s": cpu,
        "assignments_per_s": assignments as f64 / wall,
        "calls_per_s": calls as f64 / wall,
        "us_per_assignment_cpu": cpu * 1e6 / assignments as f64,
        "heartbeat_ns": hb_ns,
        "heartbeat_cpu_fraction_at_rate": hb_ns * 1e-9 * f64::from(a.feeders) * a.heartbeat_hz,
        "rows_dropped": k.rows_dropped,
        "maxrss_mib": rss as f64 / 1024.0,
    }))
}

/// A private temporary directory, removed on drop.
pub(crate) struct TempDir(pub(crate) std::path::PathBuf);

impl TempDir {
    pub(crate) fn new() -> std::io::Result<Self> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let p = std::env::temp_dir().join(format!(
            "hydrofeed-bench-coord-{}-{nanos}",
            std::process::id()
        ));
        std::fs::create_dir(&p)?;
        Ok(Self(p))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `hydrofeed coordinator` with `args` and the job token in its environment, in a child
/// process, with the address it listens on. Its stdout is drained from then on (it never
/// blocks on a full pipe); a child that prints no address is killed.
pub(super) fn spawn_coordinator<'a>(
    args: impl IntoIterator<Item = &'a std::ffi::OsStr>,
    token: &Token,
) -> anyhow::Result<(std::process::Child, String)> {
    let mut child = Command::new(std::env::current_exe()?)
        .arg("coordinator")
        .args(args)
        .env(TOKEN_ENV, token.as_str())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .context("starting `hydrofeed coordinator`")?;
    let mut out = BufReader::new(child.stdout.take().expect("piped"));
    let mut line = String::new();
    let read = out.read_line(&mut line);
    let addr = line
        .trim()
        .strip_prefix("hydrofeed coordinator listening on ")
        .map(str::to_string);
    let (Ok(_), Some(addr)) = (read, addr) else {
        let _ = child.kill();
        let _ = child.wait();
        anyhow::bail!("coordinator did not print its address (got {line:?})");
    };
    std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
    Ok((child, addr))
}

fn grpc(a: &Args) -> anyhow::Result<serde_json::Value> {
    let dir = TempDir::new()?;
    let splits_path = dir.0.join("splits.json");
    let splits: Vec<serde_json::Value> = plan(a.grpc_splits, a.seed)
        .into_iter()
        .map(|s| serde_json::json!({"id": s.id, "rows": s.rows, "hosts": s.hosts}))
        .collect();
    std::fs::write(&splits_path, serde_json::to_vec(&splits)?)?;
    let token = Token::generate()?;
    let workers = a.grpc_feeders.to_string();
    let batch = a.batch_size.to_string();
    let (mut child, addr) = spawn_coordinator(
        [
            "--splits".as_ref(),
            splits_path.as_os_str(),
            "--workers".as_ref(),
            workers.as_ref(),
            "--batch-size".as_ref(),
            batch.as_ref(),
            "--listen".as_ref(),
            "127.0.0.1:0".as_ref(),
            "--token-file".as_ref(),
            dir.0.join("token").as_os_str(),
        ],
        &token,
    )?;
    let token = Arc::new(token);
    let hz = a.heartbeat_hz;
    let t0 = Instant::now();
    let hs: Vec<_> = (0..a.grpc_feeders)
        .map(|r| {
            let (addr, token) = (addr.clone(), token.clone());
            std::thread::spawn(move || -> hydrofeed_error::Result<(u64, u64)> {
                let mut c = CoordClient::connect_tls(&addr, &token, Duration::from_secs(10), None)?;
                let reg = c.register(&Registration {
                    rank: Some(r),
                    host: format!("dn{}", r % 64),
                    port: 2222,
                    gpus: vec![],
                    role: Role::Worker,
                })?;
                c.wait_cluster_spec(r, Duration::from_secs(60))?;
                let inc = reg.incarnation;
                let (mut n, mut calls) = (0u64, 0u64);
                let hb = if hz > 0.0 {
                    Duration::from_secs_f64(1.0 / hz)
                } else {
                    Duration::MAX
                };
                let mut last_hb = Instant::now();
                loop {
                    if last_hb.elapsed() >= hb {
                        c.heartbeat(r, inc, Stage::Reading, Default::default())?;
                        calls += 1;
                        last_hb = Instant::now();
                    }
                    calls += 1;
                    match c.request_work(r, inc, "")? {
                        Work::Lease(l) => {
                            c.ack(r, inc, l.lease, l.split, l.rows)?;
                            n += 1;
                            calls += 1;
                        }
                        Work::Wait { retry_ms } => {
                            std::thread::sleep(Duration::from_millis(retry_ms))
                        }
                        Work::EndOfFeed { .. } => return Ok((n, calls)),
                    }
                }
            })
        })
        .collect();
    let mut assignments = 0;
    let mut calls = 0;
    let mut err = None;
    for h in hs {
        match h.join() {
            Ok(Ok((n, c))) => {
                assignments += n;
                calls += c;
            }
            Ok(Err(e)) => err = Some(anyhow::anyhow!(e)),
            Err(_) => err = Some(anyhow::anyhow!("a feeder thread panicked")),
        }
    }
    let wall = t0.elapsed().as_secs_f64();
    // The coordinator exits once every rank got end-of-feed; give it 30 s.
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(s) = child.try_wait()? {
            break Some(s);
        }
        if Instant::now() > deadline || err.is_some() {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    if let Some(e) = err {
        return Err(e);
    }
    anyhow::ensure!(
        status.is_some_and(|s| s.success()),
        "coordinator did not exit cleanly: {status:?}"
    );
    // Not the child's max RSS: on Linux RUSAGE_CHILDREN's maxrss counts the forked copy of
    // this process before exec, so only the CPU time is meaningful here.
    let (child_cpu, _) = rusage(libc::RUSAGE_CHILDREN);
    Ok(serde_json::json!({
        "feeders": a.grpc_feeders,
        "splits": a.grpc_splits,
        "assignments": assignments,
        "calls": calls,
        "wall_s": wall,
        "assignments_per_s": assignments as f64 / wall,
        "calls_per_s": calls as f64 / wall,
        "coordinator_cpu_s": child_cpu,
        "coordinator_us_cpu_per_call": child_cpu * 1e6 / calls as f64,
    }))
}

/// The open-loop runs (`--grpc-feeders`, then each `--sweep` count, each protocol at each
/// count, their order alternated from one count to the next) into `v`. Fails after the report
/// is made when a run fell below 95% of its intended messages.
fn open_loop_report(a: &Args, v: &mut serde_json::Value) -> anyhow::Result<()> {
    use super::coord_load::{holds, open_loop, Protocol};
    let protocols = match a.protocol {
        Some(p) => vec![p],
        None => vec![Protocol::Unary, Protocol::Session],
    };
    let one_core = |p: &serde_json::Value| {
        holds(p, a.p99_ms) && p["coordinator_cores"].as_f64().unwrap_or(9.0) <= 1.0
    };
    let mut points = Vec::new();
    let mut failures = Vec::new();
    for (i, &n) in std::iter::once(&a.grpc_feeders).chain(&a.sweep).enumerate() {
        let mut order = protocols.clone();
        if i % 2 == 1 {
            order.reverse();
        }
        let mut point = serde_json::Map::new();
        for p in order {
            let r = open_loop(n, a.grpc_rate_hz, a.grpc_secs, p)?;
            eprintln!(
                "{n} feeders, {}: {:.0} of {:.0} messages/s, coordinator {:.2} cores ({:.1} us a \
                 message), lease p99 {} ms, ack p99 {} ms",
                p.name(),
                r["messages_per_s"].as_f64().unwrap_or(0.0),
                r["intended_messages_per_s"].as_f64().unwrap_or(0.0),
                r["coordinator_cores"].as_f64().unwrap_or(0.0),
                r["coordinator_us_per_message"].as_f64().unwrap_or(0.0),
                r["lease_latency"]["p99_ms"],
                r["ack_latency"]["p99_ms"]
            );
            if let Some(f) = r["failure"].as_str() {
                failures.push(f.to_string());
            }
            point.insert(p.name().into(), r);
        }
        points.push(serde_json::Value::Object(point));
    }
    let main = points.remove(0);
    let mut meets = serde_json::Map::new();
    let mut largest = serde_json::Map::new();
    for p in &protocols {
        let name = p.name();
        meets.insert(name.into(), one_core(&main[name]).into());
        // The largest measured count held on at most one coordinator core at the target p99.
        let n = std::iter::once(&main)
            .chain(&points)
            .map(|x| &x[name])
            .filter(|x| one_core(x))
            .filter_map(|x| x["feeders"].as_u64())
            .max();
        largest.insert(name.into(), n.into());
    }
    v["grpc_open_loop"] = serde_json::json!({
        "note": "coordinator and load generator are separate processes on the same machine and \
                 share its cores; generator_cores says what the load itself cost",
        "p99_target_ms": a.p99_ms,
        "protocols": protocols.iter().map(|p| p.name()).collect::<Vec<_>>(),
        "run": main,
        "meets_target": meets,
        "sweep": points,
        "largest_feeders_on_one_core_at_p99_target": largest,
    });
    v["failures"] = failures.clone().into();
    Ok(())
}

/// Runs `hydrofeed bench coord`.
pub fn run(a: Args) -> anyhow::Result<()> {
    anyhow::ensure!(
        a.feeders > 0 && a.splits > 0 && a.grpc_feeders > 0 && a.grpc_splits > 0,
        "sizes must be positive"
    );
    let ip = if a.no_in_process {
        None
    } else {
        Some(in_process(&a)?)
    };
    let mut v = serde_json::json!({
        "bench": "coord",
        "heartbeat_hz": a.heartbeat_hz,
        "batch_size": a.batch_size,
        "in_process": ip,
    });
    if a.no_grpc {
    } else if a.grpc_closed_loop {
        let g = grpc(&a)?;
        v["ratio_grpc_to_in_process_assignments_per_s"] = ip
            .as_ref()
            .map(|ip| {
                g["assignments_per_s"].as_f64().unwrap_or(0.0)
                    / ip["assignments_per_s"].as_f64().unwrap_or(1.0)
            })
            .into();
        v["grpc_loopback"] = g;
    } else {
        open_loop_report(&a, &mut v)?;
    }
    let mut o = std::io::stdout().lock();
    if a.json {
        writeln!(o, "{v}")?;
    } else {
        writeln!(o, "{}", serde_json::to_string_pretty(&v)?)?;
    }
    let failures: Vec<&str> = v["failures"]
        .as_array()
        .map(|f| f.iter().filter_map(|x| x.as_str()).collect())
        .unwrap_or_default();
    anyhow::ensure!(failures.is_empty(), "{}", failures.join("; "));
    Ok(())
}
