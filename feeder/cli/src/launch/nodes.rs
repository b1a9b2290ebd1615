//! `launch --nnodes N --node-rank R --rdzv-endpoint HOST:PORT`: one job across nodes, with
//! torchrun's names. Node 0 runs the coordinator on the rendezvous endpoint (bound on every
//! address of the node), every node its feeder and its `--workers` trainers; node `R`'s local
//! rank `i` is global rank `R * workers + i`. torch's store listens on node 0 at PORT + 1 and
//! JAX's coordinator service at PORT + 2 (`MASTER_ADDR` / `JAX_COORDINATOR_ADDRESS` name the
//! rendezvous host).
//!
//! - The job token is not made here: every node reads the same one from `HYDROFEED_TOKEN` or
//!   `--token-file` (a secret the scheduler mounts); node 0's coordinator refuses any other.
//! - Gang start: the trainers start once every rank of every node registered, or the job fails
//!   after `--join-timeout` naming the nodes that did not join.
//! - A node that dies (no heartbeat from its ranks for `--dead-after`, or node 0's coordinator
//!   gone) is named on every other node; each stops its trainers (SIGINT: they ack what they
//!   read) and its feeder, and node 0 saves the state (`--state-out`). Collectives cannot
//!   shrink, so the job stops; with `--max-restarts K` the surviving nodes start again from
//!   that state (node 0 resumes its coordinator from it on the same endpoint) and wait for
//!   the whole group again; the scheduler restarts the dead node with the same command.
//!
//! The roster logic (which ranks are whose, which nodes are missing or dead) is pure and
//! unit-tested here; the processes are the single-node [`super::supervisor::Supervisor`]'s.

use std::cell::RefCell;
use std::net::{SocketAddr, ToSocketAddrs, UdpSocket};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context;

use hydrofeed_coord::client::CoordClient;
use hydrofeed_coord::input::InputFingerprint;
use hydrofeed_coord::proto::MetricsReply;
use hydrofeed_coord::service::{self, metrics_reply, RunningService, ServiceOptions};
use hydrofeed_coord::token::Token;
use hydrofeed_coord::{Config, Machine, SplitInfo, Stage};
use indicatif::ProgressBar;

use super::gpus::RankGpu;
use super::run_dir::RunDir;
use super::supervisor::{Job, Supervisor};
use super::{Args, Ended};

/// The multi-node arguments of `hydrofeed launch` (torchrun's names).
#[derive(Debug, Clone, clap::Args)]
pub struct NodeArgs {
    /// Nodes in the job (each runs `hydrofeed launch` with the same arguments and its own
    /// `--node-rank`); 1: this machine alone.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub nnodes: u32,
    /// This node's rank, 0 to nnodes - 1; node 0 runs the coordinator.
    #[arg(long, default_value_t = 0, env = "HYDROFEED_NODE_RANK")]
    pub node_rank: u32,
    /// HOST:PORT of node 0, where its coordinator listens (torch's store: PORT + 1, JAX's
    /// coordinator: PORT + 2).
    #[arg(long, value_name = "HOST:PORT")]
    pub rdzv_endpoint: Option<String>,
    /// The address other nodes reach this node at (its trainers' TF servers) [default: the
    /// address this node reaches the rendezvous endpoint from].
    #[arg(long)]
    pub local_addr: Option<String>,
    /// Seconds every node waits for the whole group to join before failing, naming the nodes
    /// that did not.
    #[arg(long, value_name = "SECONDS", default_value_t = 300.0)]
    pub join_timeout: f64,
    /// Times the whole group restarts from the saved state after a node died (torchrun's
    /// meaning); 0: a dead node ends the job.
    #[arg(long, default_value_t = 0)]
    pub max_restarts: u32,
    /// File holding the job token (the same on every node; default: `HYDROFEED_TOKEN`).
    #[arg(long)]
    pub token_file: Option<PathBuf>,
}

/// Where this node stands in the job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct NodePlan {
    pub(super) nnodes: u32,
    pub(super) node_rank: u32,
    /// Trainers on every node.
    pub(super) local: u32,
    /// The rendezvous host and port (node 0); `127.0.0.1` and 0 on one node.
    pub(super) rdzv_host: String,
    pub(super) rdzv_port: u16,
    /// This node's address as the others reach it.
    pub(super) local_addr: String,
}

impl NodePlan {
    /// One machine: the single-node `launch`.
    pub(super) fn single(local: u32) -> Self {
        Self {
            nnodes: 1,
            node_rank: 0,
            local,
            rdzv_host: "127.0.0.1".into(),
            rdzv_port: 0,
            local_addr: "127.0.0.1".into(),
        }
    }

    /// From the arguments; `local` trainers on each node.
    pub(super) fn from_args(a: &NodeArgs, local: u32) -> anyhow::Result<Self> {
        if a.nnodes == 1 {
            return Ok(Self::single(local));
        }
        anyhow::ensure!(
            a.node_rank < a.nnodes,
            "--node-rank {} is not below --nnodes {}",
            a.node_rank,
            a.nnodes
        );
        let ep = a
            .rdzv_endpoint
            .as_deref()
            .context("--nnodes above 1 needs --rdzv-endpoint HOST:PORT (node 0's address)")?;
        let (host, port) = split_endpoint(ep)?;
        let local_addr = match &a.local_addr {
            Some(l) => l.clone(),
            None => route_addr(ep)?,
        };
        Ok(Self {
            nnodes: a.nnodes,
            node_rank: a.node_rank,
            local,
            rdzv_host: host,
            rdzv_port: port,
            local_addr,
        })
    }

    pub(super) fn multi(&self) -> bool {
        self.nnodes > 1
    }

    /// Ranks of the whole job.
    pub(super) fn world(&self) -> u32 {
        self.nnodes * self.local
    }

    /// This node's global ranks.
    pub(super) fn ranks(&self) -> std::ops::Range<u32> {
        self.node_rank * self.local..(self.node_rank + 1) * self.local
    }

    /// The node a global rank runs on.
    pub(super) fn node_of(&self, rank: u32) -> u32 {
        rank / self.local.max(1)
    }

    /// The coordinator's address as the nodes dial it.
    pub(super) fn coordinator(&self) -> String {
        format!("{}:{}", self.rdzv_host, self.rdzv_port)
    }
}

/// `HOST:PORT` (a name, an IPv4 address, or `[v6]`).
pub(super) fn split_endpoint(ep: &str) -> anyhow::Result<(String, u16)> {
    let (host, port) = ep
        .rsplit_once(':')
        .with_context(|| format!("--rdzv-endpoint {ep:?} is not HOST:PORT"))?;
    let port: u16 = port
        .parse()
        .with_context(|| format!("--rdzv-endpoint {ep:?}: bad port"))?;
    anyhow::ensure!(
        port > 0 && port < 65534,
        "--rdzv-endpoint {ep:?}: the port and the two after it must be usable (torch's store \
         and JAX's coordinator listen there)"
    );
    let host = host.trim_start_matches('[').trim_end_matches(']');
    anyhow::ensure!(!host.is_empty(), "--rdzv-endpoint {ep:?}: no host");
    Ok((host.to_string(), port))
}

/// The local address this node reaches `ep` from (no packet is sent).
fn route_addr(ep: &str) -> anyhow::Result<String> {
    let to: SocketAddr = ep
        .to_socket_addrs()
        .with_context(|| format!("resolving --rdzv-endpoint {ep}"))?
        .next()
        .with_context(|| format!("--rdzv-endpoint {ep} resolves to no address"))?;
    let bind = if to.is_ipv4() { "0.0.0.0:0" } else { "[::]:0" };
    let s = UdpSocket::bind(bind)?;
    s.connect(to)
        .with_context(|| format!("no route to --rdzv-endpoint {ep}"))?;
    Ok(s.local_addr()?.ip().to_string())
}

/// The job token across nodes: `--token-file`, else `HYDROFEED_TOKEN`; never made here.
pub(super) fn shared_token(a: &NodeArgs) -> anyhow::Result<Token> {
    if let Some(p) = &a.token_file {
        return Token::read(p).with_context(|| format!("reading --token-file {}", p.display()));
    }
    Token::from_env()?.context(
        "a job across nodes needs the same token on every node: set HYDROFEED_TOKEN or \
         --token-file (from a secret the scheduler mounts)",
    )
}

/// A node of the job stopped: named on every node. With `--max-restarts` left, the group
/// starts again from the saved state.
#[derive(Debug)]
pub(super) struct NodeLost(pub(super) String);

impl std::fmt::Display for NodeLost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for NodeLost {}

/// The nodes none of whose ranks registered yet, with the ranks missing: `roster[r]` is rank
/// `r`'s host ("" until it registered).
pub(super) fn missing_nodes(plan: &NodePlan, roster: &[String]) -> Vec<(u32, Vec<u32>)> {
    let mut out: Vec<(u32, Vec<u32>)> = Vec::new();
    for (r, host) in roster.iter().enumerate() {
        let r = r as u32;
        if host.is_empty() {
            let n = plan.node_of(r);
            match out.last_mut() {
                Some((m, ranks)) if *m == n => ranks.push(r),
                _ => out.push((n, vec![r])),
            }
        }
    }
    out
}

/// The sentence for nodes that did not join in time.
pub(super) fn missing_message(plan: &NodePlan, missing: &[(u32, Vec<u32>)], secs: f64) -> String {
    let named: Vec<String> = missing
        .iter()
        .map(|(n, r)| format!("node {n} (ranks {r:?})"))
        .collect();
    format!(
        "the job did not start: {} of {} nodes did not join the rendezvous at {} within \
         --join-timeout {secs} s: {}",
        missing.len(),
        plan.nnodes,
        plan.coordinator(),
        named.join(", ")
    )
}

/// The first other node with a rank that registered and is no longer alive: `(node, its dead
/// ranks, their host)`. `workers` holds `(rank, host, alive)`.
pub(super) fn dead_node(
    plan: &NodePlan,
    workers: &[(u32, String, bool)],
) -> Option<(u32, Vec<u32>, String)> {
    let mut dead: Option<(u32, Vec<u32>, String)> = None;
    for (r, host, alive) in workers {
        let n = plan.node_of(*r);
        if host.is_empty() || *alive || n == plan.node_rank {
            continue;
        }
        match &mut dead {
            Some((m, ranks, _)) if *m == n => ranks.push(*r),
            None => dead = Some((n, vec![*r], host.clone())),
            Some(_) => {}
        }
    }
    dead
}

/// A remote node's client and its last metrics, with when they were fetched.
type Remote = (CoordClient, Option<(Instant, MetricsReply)>);

/// How a node's supervisor sees the coordinator: in this process (node 0) or over the network.
pub(super) enum Coord<'a> {
    Local(&'a RunningService),
    /// The client and the last metrics with when they were fetched.
    Remote(Box<RefCell<Remote>>),
}

/// How often a remote node asks the coordinator for the roster.
const ROSTER_EVERY: Duration = Duration::from_millis(500);

impl Coord<'_> {
    pub(super) fn svc(&self) -> Option<&RunningService> {
        match self {
            Coord::Local(s) => Some(s),
            Coord::Remote(_) => None,
        }
    }

    /// The coordinator's metrics (remote: at most [`ROSTER_EVERY`] old).
    pub(super) fn metrics(&self) -> anyhow::Result<MetricsReply> {
        match self {
            Coord::Local(s) => Ok(s.shared.with_machine(|m| metrics_reply(m, 0))),
            Coord::Remote(c) => {
                let mut c = c.borrow_mut();
                if let Some((t, m)) = &c.1 {
                    if t.elapsed() < ROSTER_EVERY {
                        return Ok(m.clone());
                    }
                }
                let m = c.0.metrics()?;
                c.1 = Some((Instant::now(), m.clone()));
                Ok(m)
            }
        }
    }

    /// `(epoch, rows acked, finished)`.
    pub(super) fn progress(&self) -> (u32, u64, bool) {
        match self {
            Coord::Local(s) => s
                .shared
                .with_machine(|m| (m.epoch(), m.counters().rows_acked, m.finished())),
            Coord::Remote(_) => self
                .metrics()
                .map(|m| (m.epoch, m.rows_acked, m.finished))
                .unwrap_or_default(),
        }
    }
}

/// `(rank, host, alive)` of every rank in `m`.
pub(super) fn roster(m: &MetricsReply) -> Vec<(u32, String, bool)> {
    m.workers
        .iter()
        .map(|w| (w.rank, w.host.clone(), w.alive))
        .collect()
}

/// What node 0 needs to start the group again from a state: the splits, the configuration
/// (the state's order), the input's fingerprint.
pub(super) struct Again {
    pub(super) splits: Vec<SplitInfo>,
    pub(super) cfg: Config,
    pub(super) input: InputFingerprint,
}

/// How long node 0's coordinator stays up after its job ended, so every other node reads the
/// end (or the dead node) from it.
const LINGER: Duration = Duration::from_secs(2);

/// Node 0: the coordinator on the rendezvous endpoint, this node's feeder and trainers; after a
/// lost node, the state saved and (within `--max-restarts`) the group started again from it.
pub(super) fn run_leader(
    args: &Args,
    gpus: &[RankGpu],
    node: &NodePlan,
    m: Machine,
    again: Again,
    filter_counts: Option<std::sync::Arc<(String, Vec<Vec<u64>>)>>,
) -> anyhow::Result<()> {
    let token = shared_token(&args.nodes)?;
    let bind: SocketAddr = format!("0.0.0.0:{}", node.rdzv_port).parse()?;
    // This node's own children dial it on the loopback.
    let addr = super::coordinator_url(args, format_args!("127.0.0.1:{}", node.rdzv_port));
    let names = [node.rdzv_host.as_str(), "127.0.0.1", "localhost"];
    let mut next = Some(m);
    let mut restart = 0;
    loop {
        let m = next.take().context("no machine to start")?;
        let epochs = m.config().epochs;
        let dir = RunDir::create("hydrofeed-launch")?;
        let tls = super::job_tls(args, dir.path(), &names)?;
        let server = tls.as_ref().map(|t| t.server.clone());
        let svc = spawn_on(m, &token, filter_counts.clone(), bind, server)?;
        if let Some(p) = &args.state_out {
            crate::state_file::write_state(p, &svc.shared.with_machine(|m| m.state()))?;
        }
        eprintln!(
            "hydrofeed launch: node 0 of {}: coordinator on {bind}; waiting for every node \
             (--join-timeout {} s)",
            node.nnodes, args.nodes.join_timeout
        );
        let coord = Coord::Local(&svc);
        let pb = ProgressBar::hidden();
        let job = Job {
            args,
            gpus,
            addr: &addr,
            token: &token,
            tls: tls.as_ref(),
            dir: dir.path(),
            coord: &coord,
            node,
            epochs,
            restart,
            pb: &pb,
        };
        let (result, lost) = supervise(job);
        drop(dir);
        if lost {
            await_others_stopped(&svc, node, args.grace);
        }
        let state = svc.shared.with_machine(|m| m.state());
        let saved = match &args.state_out {
            Some(p) => {
                crate::state_file::write_state(p, &state)?;
                format!("; state saved to {}", p.display())
            }
            None => String::new(),
        };
        std::thread::sleep(LINGER);
        let _ = svc.shutdown();
        match result {
            Err(e) if lost && restart < args.nodes.max_restarts => {
                restart += 1;
                eprintln!(
                    "hydrofeed launch: {e}{saved}; restarting the group from that state ({restart} \
                     of --max-restarts {})",
                    args.nodes.max_restarts
                );
                let mut m = Machine::resume(again.splits.clone(), again.cfg.clone(), &state)?;
                m.set_input(again.input.clone());
                next = Some(m);
            }
            Err(e) if lost => return Err(anyhow::anyhow!("{e}; the job stopped{saved}")),
            Err(e) => return Err(e),
            Ok(ended) => return ended_ok(ended, &saved),
        }
    }
}

/// The coordinator of node 0 on `bind` (retried a moment: the group's previous one may still
/// hold the port).
fn spawn_on(
    m: Machine,
    token: &Token,
    filter_counts: Option<std::sync::Arc<(String, Vec<Vec<u64>>)>>,
    bind: SocketAddr,
    tls: Option<hydrofeed_coord::tls::ServerTls>,
) -> anyhow::Result<RunningService> {
    let opts = ServiceOptions {
        ps: 0,
        evaluators: 0,
        reservation_timeout: Duration::from_secs(120),
        heartbeat_interval: Duration::from_secs(1),
        log_path: None,
        token: token.clone(),
        tls,
        filter_counts,
    };
    service::spawn(m, opts, bind, None)
        .with_context(|| format!("starting the coordinator on {bind}"))
}

/// After a lost node, node 0 waits (at most `--grace` + 5 s) until the ranks of the other
/// nodes left, so what their trainers read is acked before the state is taken.
fn await_others_stopped(svc: &RunningService, node: &NodePlan, grace: f64) {
    let t0 = Instant::now();
    let most = Duration::from_secs_f64(grace.min(30.0) + 5.0);
    while t0.elapsed() < most {
        let busy = svc.shared.with_machine(|m| {
            m.ranks().iter().enumerate().any(|(r, i)| {
                node.node_of(r as u32) != 0 && i.alive && i.stage != Stage::TrainerGone
            })
        });
        if !busy {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// This node's feeder and trainers under `job`, to their end (the supervisor dropped, so they
/// are gone); whether that end is a lost node.
fn supervise(job: Job<'_>) -> (anyhow::Result<Ended>, bool) {
    let mut supervisor = None;
    let result = Supervisor::start(job).and_then(|s| supervisor.insert(s).run());
    drop(supervisor);
    let lost = matches!(&result, Err(e) if e.downcast_ref::<NodeLost>().is_some());
    (result, lost)
}

/// A node other than 0: this node's feeder and trainers against node 0's coordinator; after a
/// lost node, within `--max-restarts`, again once node 0's coordinator starts the group anew.
pub(super) fn run_member(args: &Args, gpus: &[RankGpu], node: &NodePlan) -> anyhow::Result<()> {
    let token = shared_token(&args.nodes)?;
    let addr = super::coordinator_url(args, node.coordinator());
    let join = Duration::from_secs_f64(args.nodes.join_timeout);
    let mut restart = 0;
    loop {
        // The directory first: it holds this node's certificates, signed by the job's CA.
        let dir = RunDir::create("hydrofeed-launch")?;
        let tls = super::job_tls(args, dir.path(), &["localhost"])?;
        let client = await_group(&addr, &token, node, join, tls.as_ref().map(|t| &t.client))?;
        let mut client = client;
        let epochs = client.state()?.epochs;
        let coord = Coord::Remote(Box::new(RefCell::new((client, None))));
        let pb = ProgressBar::hidden();
        let job = Job {
            args,
            gpus,
            addr: &addr,
            token: &token,
            tls: tls.as_ref(),
            dir: dir.path(),
            coord: &coord,
            node,
            epochs,
            restart,
            pb: &pb,
        };
        let (result, lost) = supervise(job);
        drop(dir);
        match result {
            Err(e) if lost && restart < args.nodes.max_restarts => {
                restart += 1;
                eprintln!(
                    "hydrofeed launch: {e}; waiting for node 0 to restart the group ({restart} of \
                     --max-restarts {})",
                    args.nodes.max_restarts
                );
            }
            Err(e) => return Err(e),
            Ok(ended) => return ended_ok(ended, ""),
        }
    }
}

/// Connects to node 0 and waits until its coordinator has a group this node's ranks have not
/// joined yet (a restarted group's, not the one that lost a node); fails after `join`.
fn await_group(
    addr: &str,
    token: &Token,
    node: &NodePlan,
    join: Duration,
    tls: Option<&hydrofeed_coord::tls::ClientTls>,
) -> anyhow::Result<CoordClient> {
    let t0 = Instant::now();
    let mut client = CoordClient::connect_retrying(addr, token, Duration::from_secs(5), tls, join)
        .with_context(|| {
            format!(
                "node {}: node 0's coordinator at {addr} did not answer within --join-timeout \
                 {} s",
                node.node_rank,
                join.as_secs_f64()
            )
        })?
        .with_retry(Duration::ZERO)
        .with_call_timeout(Duration::from_secs(3));
    loop {
        match client.metrics() {
            Ok(m) => {
                anyhow::ensure!(
                    m.workers.len() as u32 == node.world(),
                    "node {}: node 0's job has {} ranks, this node counts {} (--nnodes {} × {} \
                     trainers): every node needs the same --workers or number of --gpus",
                    node.node_rank,
                    m.workers.len(),
                    node.world(),
                    node.nnodes,
                    node.local
                );
                let fresh = m
                    .workers
                    .iter()
                    .filter(|w| node.ranks().contains(&w.rank))
                    .all(|w| w.host.is_empty());
                if fresh {
                    return Ok(client);
                }
            }
            Err(e) if t0.elapsed() > join => {
                return Err(anyhow::anyhow!(
                    "node {}: node 0's coordinator at {addr}: {e}",
                    node.node_rank
                ))
            }
            Err(_) => {}
        }
        anyhow::ensure!(
            t0.elapsed() < join,
            "node {}: node 0 at {addr} did not start a new group within --join-timeout {} s",
            node.node_rank,
            join.as_secs_f64()
        );
        std::thread::sleep(ROSTER_EVERY);
    }
}

/// The exit of a node whose trainers ended without a lost node.
fn ended_ok(ended: Ended, saved: &str) -> anyhow::Result<()> {
    match ended {
        Ended::Done | Ended::Early(_) => Ok(()),
        Ended::Interrupted => Err(crate::Exit::new(
            130,
            format!("interrupted: stopped this node's trainers and feeder{saved}"),
        )
        .into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(nnodes: u32, node_rank: u32, local: u32) -> NodePlan {
        NodePlan {
            nnodes,
            node_rank,
            local,
            rdzv_host: "n0".into(),
            rdzv_port: 29400,
            local_addr: "n1".into(),
        }
    }

    #[test]
    fn global_ranks_are_node_major() {
        let p = plan(3, 2, 2);
        assert_eq!(p.world(), 6);
        assert_eq!(p.ranks(), 4..6);
        assert_eq!(
            (0..6).map(|r| p.node_of(r)).collect::<Vec<_>>(),
            [0, 0, 1, 1, 2, 2]
        );
    }

    #[test]
    fn endpoints_parse_and_bad_ones_are_named() {
        assert_eq!(split_endpoint("n0:29400").unwrap(), ("n0".into(), 29400));
        assert_eq!(split_endpoint("[::1]:5").unwrap(), ("::1".into(), 5));
        for bad in ["n0", "n0:x", ":1", "n0:65535"] {
            let e = split_endpoint(bad).unwrap_err().to_string();
            assert!(e.contains(bad), "{e}");
        }
    }

    #[test]
    fn missing_nodes_are_named_with_their_ranks() {
        let p = plan(3, 0, 2);
        let roster: Vec<String> = ["a", "a", "", "", "c", ""]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let m = missing_nodes(&p, &roster);
        assert_eq!(m, vec![(1, vec![2, 3]), (2, vec![5])]);
        let msg = missing_message(&p, &m, 5.0);
        assert!(msg.contains("2 of 3 nodes"), "{msg}");
        assert!(
            msg.contains("node 1 (ranks [2, 3]), node 2 (ranks [5])"),
            "{msg}"
        );
        assert!(missing_nodes(&p, &vec!["a".to_string(); 6]).is_empty());
    }

    #[test]
    fn a_dead_node_is_another_node_with_a_registered_rank_not_alive() {
        let p = plan(3, 1, 2);
        let w = |r: u32, h: &str, alive: bool| (r, h.to_string(), alive);
        // Not yet registered, or alive: nobody is dead.
        let ok = [w(0, "a", true), w(1, "", false), w(2, "b", true)];
        assert_eq!(dead_node(&p, &ok), None);
        // This node's own dead rank is its feeder's business, not a lost node.
        assert_eq!(dead_node(&p, &[w(2, "b", false)]), None);
        let lost = [w(0, "a", true), w(4, "c", false), w(5, "c", false)];
        assert_eq!(dead_node(&p, &lost), Some((2, vec![4, 5], "c".into())));
    }

    #[test]
    fn one_node_is_the_single_node_launch() {
        let a = NodeArgs {
            nnodes: 1,
            node_rank: 0,
            rdzv_endpoint: None,
            local_addr: None,
            join_timeout: 1.0,
            max_restarts: 0,
            token_file: None,
        };
        assert_eq!(NodePlan::from_args(&a, 4).unwrap(), NodePlan::single(4));
        let e = NodePlan::from_args(&NodeArgs { nnodes: 2, ..a }, 4).unwrap_err();
        assert!(e.to_string().contains("--rdzv-endpoint"), "{e}");
    }
}
