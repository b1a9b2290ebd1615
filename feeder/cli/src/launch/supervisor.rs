//! The supervisor of a job's children: starts the feeder, waits for the cluster spec, starts the
//! trainers, then polls until every trainer ended ([`Supervisor::tick`]): Ctrl-C, progress,
//! the batch size the trainers agree on, the feeder's exit (restarted, or named when it failed
//! by itself), each trainer's exit, the stop grace; and the summary line at the end. Dropping
//! it kills and reaps every child still running.

use std::io::IsTerminal;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, ExitStatus};
use std::sync::atomic::Ordering;
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use indicatif::ProgressBar;

use hydrofeed_coord::client::CoordClient;
use hydrofeed_coord::service::RunningService;
use hydrofeed_coord::token::{Token, TOKEN_ENV};
use hydrofeed_coord::Stage;
use hydrofeed_feeder::daemon::SKIPPED_LINE;
use hydrofeed_tfbridge::SOCKET_ENV;

use super::batch_size::agree_batch_size;
use super::certs::{self, JobTls};
use super::children::{describe, drain_output, free_ports, kill_all, ChildProc};
use super::feeder::{
    failed_by_itself, feeder_command, feeder_failed, restart_notice, trainer_stalled, FeederStart,
};
use super::gpus::{self, RankGpu};
use super::nodes::{dead_node, missing_message, missing_nodes, roster, Coord, NodeLost, NodePlan};
use super::TENSORBOARD_ENV;
use super::{
    Args, Ended, FIRST_SIGNAL, INTERRUPTS, PROGRESS_EVERY, REJOIN_ENV, REJOIN_TIMEOUT, STOP_GRACE,
};
use crate::feeder::TRAINER_STALLED_EXIT;

/// What supervising a job works with and never changes: its arguments, each rank's GPU, the
/// coordinator (address, token, TLS), the private directory and the progress bar.
#[derive(Clone, Copy)]
pub(super) struct Job<'a> {
    pub(super) args: &'a Args,
    /// One entry per rank.
    pub(super) gpus: &'a [RankGpu],
    /// The coordinator's address (`https://` under TLS).
    pub(super) addr: &'a str,
    pub(super) token: &'a Token,
    pub(super) tls: Option<&'a JobTls>,
    /// The private directory: sockets, TLS files, the batch size the trainers asked for.
    pub(super) dir: &'a Path,
    pub(super) coord: &'a Coord<'a>,
    /// This node in the job (one node: [`NodePlan::single`]).
    pub(super) node: &'a NodePlan,
    /// Passes over the input.
    pub(super) epochs: u32,
    /// Restarts of the whole group so far (`--max-restarts`).
    pub(super) restart: u32,
    pub(super) pb: &'a ProgressBar,
}

impl Job<'_> {
    /// Trainers (ranks) on this node.
    fn workers(&self) -> u32 {
        self.gpus.len() as u32
    }

    /// The global rank of this node's `i`-th trainer.
    pub(super) fn rank_of(&self, i: usize) -> u32 {
        self.node.ranks().start + i as u32
    }

    /// Without `--batch-size` (and not resuming, which keeps the state's), the trainers tell
    /// the batch size.
    pub(super) fn batch_size_from_trainers(&self) -> bool {
        self.args.batch_size.is_none() && self.args.resume.is_none()
    }
}

/// A trainer child and how it ended.
pub(super) struct Trainer {
    pub(super) rank: u32,
    pub(super) proc: ChildProc,
    status: Option<ExitStatus>,
    /// Killed after the stop grace.
    killed: bool,
}

/// The progress lines: when the trainers started, the epoch last reported, when the last
/// plain line went out.
struct Progress {
    t0: Instant,
    last_epoch: u32,
    last_line: Instant,
    /// stderr is not a terminal: a plain line every [`PROGRESS_EVERY`].
    plain: bool,
    /// Rows of every epoch, as planned when the trainers started.
    total: u64,
}

impl Progress {
    fn new(coord: &Coord<'_>) -> Self {
        Self {
            t0: Instant::now(),
            last_epoch: 0,
            last_line: Instant::now(),
            plain: !std::io::stderr().is_terminal(),
            total: coord.svc().map_or(0, |svc| {
                svc.shared
                    .with_machine(|m| m.total_rows() * u64::from(m.config().epochs))
            }),
        }
    }
}

/// The job's children and what their supervision has seen so far.
pub(super) struct Supervisor<'a> {
    job: Job<'a>,
    feeder: ChildProc,
    /// By rank; empty until every rank's cluster spec is known.
    trainers: Vec<Trainer>,
    /// Each rank's TF server port.
    ports: Vec<u32>,
    /// torch.distributed's store (rank 0) and JAX's coordinator service (process 0).
    rendezvous: Vec<u32>,
    feeder_status: Option<ExitStatus>,
    /// Feeder restarts so far (at most `--feeder-restarts`).
    restarts: u32,
    /// Whether the batch size is settled (given, resumed, or agreed by the trainers).
    agreed: bool,
    /// Why and since when the trainers are being stopped.
    stop: Option<(Ended, Instant)>,
    progress: Progress,
    /// Another node stopped: this node's trainers are being stopped, then the job ends.
    lost: Option<NodeLost>,
    /// Since when the coordinator did not answer (a remote node), and when the roster was
    /// last looked at.
    unreachable: Option<Instant>,
    last_roster: Instant,
    /// The coordinator said the feed finished: nodes are no longer watched.
    finished_seen: bool,
}

impl<'a> Supervisor<'a> {
    /// Picks the ports and starts the feeder.
    pub(super) fn start(job: Job<'a>) -> anyhow::Result<Self> {
        let ports = free_ports(job.workers())?;
        // torch's store and JAX's coordinator: beside the rendezvous endpoint across nodes.
        let rendezvous = match job.node.multi() {
            true => (1..=2).map(|k| u32::from(job.node.rdzv_port) + k).collect(),
            false => free_ports(2)?,
        };
        let cmd = feeder_command(&job, &ports, FeederStart::First)?;
        let feeder = ChildProc::spawn("the feeder".into(), "[feeder]", cmd, job.pb)
            .context("starting the feeder")?;
        Ok(Self {
            job,
            feeder,
            trainers: Vec::new(),
            ports,
            rendezvous,
            feeder_status: None,
            restarts: 0,
            agreed: !job.batch_size_from_trainers(),
            stop: None,
            progress: Progress::new(job.coord),
            lost: None,
            unreachable: None,
            last_roster: Instant::now(),
            finished_seen: false,
        })
    }

    /// Starts the trainers once the feeder registered every rank, then supervises them until
    /// every one ended.
    pub(super) fn run(&mut self) -> anyhow::Result<Ended> {
        let tf_configs = self.wait_cluster_spec()?;
        if self.job.node.multi() {
            self.job.pb.suspend(|| {
                eprintln!(
                    "hydrofeed launch: node {} of {}: every node joined; starting ranks {:?}",
                    self.job.node.node_rank,
                    self.job.node.nnodes,
                    self.job.node.ranks()
                )
            });
        }
        self.start_trainers(&tf_configs)?;
        // Time and rates count from the trainers' start.
        self.progress = Progress::new(self.job.coord);
        loop {
            if let Some(ended) = self.tick()? {
                return Ok(ended);
            }
            thread::sleep(Duration::from_millis(50));
        }
    }

    /// Each rank's `TF_CONFIG`, once the feeder registered every rank.
    fn wait_cluster_spec(&mut self) -> anyhow::Result<Vec<String>> {
        let job = self.job;
        let mut client = CoordClient::connect_tls(
            job.addr,
            job.token,
            Duration::from_secs(10),
            job.tls.map(|t| &t.client),
        )?;
        let mut tf_configs = Vec::new();
        let wait = if job.node.multi() {
            Duration::from_secs_f64(job.args.nodes.join_timeout)
        } else {
            Duration::from_secs(120)
        };
        let t0 = Instant::now();
        for rank in job.node.ranks() {
            loop {
                if let Some(s) = self.feeder.try_wait()? {
                    return Err(feeder_failed(&self.feeder, job.coord.svc(), s));
                }
                if INTERRUPTS.load(Ordering::SeqCst) > 0 {
                    bail!("interrupted before the trainers started");
                }
                match client.wait_cluster_spec(rank, Duration::from_millis(500)) {
                    Ok((_, tf)) => {
                        tf_configs.push(tf);
                        break;
                    }
                    Err(hydrofeed_error::Error::Timeout { .. }) if t0.elapsed() < wait => {}
                    Err(e) if job.node.multi() => {
                        let m = job.coord.metrics()?;
                        let roster: Vec<String> =
                            m.workers.iter().map(|w| w.host.clone()).collect();
                        let missing = missing_nodes(job.node, &roster);
                        if missing.is_empty() {
                            return Err(e.into());
                        }
                        bail!(missing_message(
                            job.node,
                            &missing,
                            job.args.nodes.join_timeout
                        ));
                    }
                    Err(e) => return Err(e.into()),
                }
            }
        }
        Ok(tf_configs)
    }

    fn start_trainers(&mut self, tf_configs: &[String]) -> anyhow::Result<()> {
        for (i, tf) in tf_configs.iter().enumerate() {
            let rank = self.job.rank_of(i) as usize;
            let c = self.trainer_command(i, tf);
            let proc = ChildProc::spawn(
                format!("trainer rank {rank}"),
                &format!("[rank {rank}]"),
                c,
                self.job.pb,
            )
            .with_context(|| {
                format!("starting trainer rank {rank}: {:?}", self.job.args.command)
            })?;
            self.trainers.push(Trainer {
                rank: rank as u32,
                proc,
                status: None,
                killed: false,
            });
        }
        Ok(())
    }

    /// The trainer command of this node's `i`-th trainer, its cluster spec `tf`.
    fn trainer_command(&self, i: usize, tf: &str) -> Command {
        let (job, args) = (self.job, self.job.args);
        let rank = job.rank_of(i);
        let n = job.node.world();
        let epochs = job.epochs;
        let mut c = Command::new(&args.command[0]);
        c.args(&args.command[1..])
            .env("TF_CONFIG", tf)
            .env(SOCKET_ENV, job.dir.join(format!("rank-{rank}.sock")))
            .env("HYDROFEED_RANK", rank.to_string())
            .env("HYDROFEED_NUM_WORKERS", n.to_string())
            .env("HYDROFEED_EPOCHS", epochs.to_string())
            .env("HYDROFEED_COORDINATOR", job.addr)
            .env(TOKEN_ENV, job.token.as_str())
            .env("PYTHONUNBUFFERED", "1");
        certs::clear_env(&mut c);
        if let Some(t) = job.tls {
            t.trainer_env(&mut c);
        }
        // As torchrun sets them (init_process_group(backend) then needs no arguments), and
        // JAX's distributed coordinates (hydrofeed.jax.initialize() passes them on).
        let node = job.node;
        c.env("RANK", rank.to_string())
            .env("LOCAL_RANK", i.to_string())
            .env("WORLD_SIZE", n.to_string())
            .env("LOCAL_WORLD_SIZE", job.workers().to_string())
            .env("GROUP_RANK", node.node_rank.to_string())
            .env("NODE_RANK", node.node_rank.to_string())
            .env("MASTER_ADDR", &node.rdzv_host)
            .env("MASTER_PORT", self.rendezvous[0].to_string())
            .env(
                "JAX_COORDINATOR_ADDRESS",
                format!("{}:{}", node.rdzv_host, self.rendezvous[1]),
            )
            .env("HYDROFEED_RESTART", self.job.restart.to_string())
            .env("TORCHELASTIC_RESTART_COUNT", self.job.restart.to_string())
            .env("JAX_NUM_PROCESSES", n.to_string())
            .env("JAX_PROCESS_ID", rank.to_string());
        if let Some(g) = &job.gpus[i] {
            gpus::place(&mut c, g);
        }
        if args.feeder_restarts > 0 {
            // A killed feeder is restarted: the trainer waits for the new one.
            c.env(REJOIN_ENV, REJOIN_TIMEOUT.as_secs().to_string());
        }
        // The chief alone writes the feed's TensorBoard scalars.
        match &args.tensorboard {
            Some(d) if rank == 0 => c.env(TENSORBOARD_ENV, d),
            _ => c.env_remove(TENSORBOARD_ENV),
        };
        c
    }

    /// One look at everything; `Some` once every trainer ended.
    fn tick(&mut self) -> anyhow::Result<Option<Ended>> {
        self.on_interrupts()?;
        self.keep_alive();
        let finished = self.report_progress();
        if !self.agreed {
            let job = self.job;
            if let Some(svc) = job.coord.svc() {
                self.agreed = agree_batch_size(job.dir, job.workers(), svc, job.pb)?;
            }
        }
        self.check_nodes()?;
        // The feeder first: a trainer that failed because its feeder failed names the feeder.
        self.check_feeder()?;
        self.check_trainers(finished)?;
        self.kill_after_grace();
        if self.trainers.iter().all(|t| t.status.is_some()) {
            let ended = self.finish()?;
            if let Some(lost) = self.lost.take() {
                return Err(lost.into());
            }
            return Ok(Some(ended));
        }
        Ok(None)
    }

    fn interrupted(&self) -> bool {
        matches!(self.stop, Some((Ended::Interrupted, _)))
    }

    /// Each rank whose trainer runs is alive, whatever its feeder does: a feeder killed while
    /// its trainer is busy (an evaluation, a checkpoint) is restarted and taken back, however
    /// long the trainer takes to re-attach.
    fn keep_alive(&self) {
        let Some(svc) = self.job.coord.svc() else {
            return;
        };
        for t in self.trainers.iter().filter(|t| t.status.is_none()) {
            let _ = svc.shared.keep_alive(t.rank);
        }
    }

    /// The state as it is now, to `--state-out` (a preemption: the SIGKILL may follow soon).
    fn save_state_now(&self) {
        let (Some(p), Some(svc)) = (&self.job.args.state_out, self.job.coord.svc()) else {
            return;
        };
        let st = svc.shared.with_machine(|m| m.state());
        match crate::state_file::write_state(p, &st) {
            Ok(()) => self.job.pb.suspend(|| {
                eprintln!(
                    "hydrofeed launch: state saved to {} (again once the trainers exited)",
                    p.display()
                )
            }),
            Err(e) => self.job.pb.suspend(|| eprintln!("hydrofeed launch: {e:#}")),
        }
    }

    /// Ctrl-C or SIGTERM: the first saves the state at once, signals the trainers (SIGINT, or
    /// SIGTERM after a SIGTERM: their handlers checkpoint within `--grace`) and ends the feed;
    /// the second kills.
    fn on_interrupts(&mut self) -> anyhow::Result<()> {
        let interrupts = INTERRUPTS.load(Ordering::SeqCst);
        if interrupts >= 2 {
            return Err(crate::Exit::new(
                130,
                "interrupted twice: killed every trainer and the feeder",
            )
            .into());
        }
        if interrupts == 1 && !self.interrupted() {
            self.save_state_now();
            let (sig, name) = match FIRST_SIGNAL.load(Ordering::SeqCst) {
                libc::SIGTERM => (libc::SIGTERM, "SIGTERM"),
                _ => (libc::SIGINT, "SIGINT"),
            };
            let grace = self.job.args.grace;
            self.job.pb.suspend(|| {
                eprintln!(
                    "hydrofeed launch: interrupted: stopping the trainers ({name}, {grace} s to \
                     exit) and ending the feed; Ctrl-C again to kill them"
                )
            });
            for t in &mut self.trainers {
                t.proc.signal(sig);
            }
            self.feeder.signal(libc::SIGTERM);
            self.stop = Some((Ended::Interrupted, Instant::now()));
        }
        Ok(())
    }

    /// The bar, a line at each new epoch and (not on a terminal) every [`PROGRESS_EVERY`].
    /// Whether the coordinator finished the feed.
    fn report_progress(&mut self) -> bool {
        let (pb, p) = (self.job.pb, &mut self.progress);
        let (epoch, acked, finished) = self.job.coord.progress();
        pb.set_position(acked);
        pb.set_message(format!("epoch {epoch}"));
        let secs = p.t0.elapsed().as_secs_f64();
        if epoch != p.last_epoch {
            let last_epoch = p.last_epoch;
            pb.suspend(|| {
                eprintln!(
                    "hydrofeed launch: epoch {last_epoch} done: {acked} rows acked so far, {:.0} rows/s",
                    acked as f64 / secs.max(1e-9)
                )
            });
            p.last_epoch = epoch;
            p.last_line = Instant::now();
        } else if p.plain && p.last_line.elapsed() >= PROGRESS_EVERY {
            eprintln!(
                "hydrofeed launch: {:.0} s: epoch {epoch}, {acked}/{} rows acked, {:.0} rows/s",
                secs,
                p.total,
                acked as f64 / secs.max(1e-9)
            );
            p.last_line = Instant::now();
        }
        finished
    }

    /// The feeder's exit: restarted after a signal (not while stopping, only once the batch
    /// size is agreed, within `--feeder-restarts`), else an error naming the stalled trainer
    /// or the feeder when it failed by itself.
    fn check_feeder(&mut self) -> anyhow::Result<()> {
        if self.feeder_status.is_some() {
            return Ok(());
        }
        self.feeder_status = self.feeder.try_wait()?;
        let Some(s) = self.feeder_status else {
            return Ok(());
        };
        let restart = s.signal().is_some()
            && self.stop.is_none()
            && self.agreed
            && self.restarts < self.job.args.feeder_restarts
            && self.trainers.iter().any(|t| t.status.is_none());
        if restart {
            self.restarts += 1;
            let of = self.job.args.feeder_restarts;
            restart_notice(&self.feeder, s, self.restarts, of, self.job.pb);
            let cmd = feeder_command(&self.job, &self.ports, FeederStart::Rejoin)?;
            self.feeder = ChildProc::spawn("the feeder".into(), "[feeder]", cmd, self.job.pb)
                .context("restarting the feeder")?;
            self.feeder_status = None;
        } else if s.code() == Some(TRAINER_STALLED_EXIT) {
            return Err(trainer_stalled(&self.feeder, &self.trainers, s));
        } else if failed_by_itself(s) && self.stop.is_none() {
            return Err(feeder_failed(&self.feeder, self.job.coord.svc(), s));
        }
        Ok(())
    }

    /// Each trainer's exit: a failure ends the job naming it (or the feeder, when that failed
    /// by itself); exit 0 before the end of the feed ends the feed on the other ranks.
    fn check_trainers(&mut self, finished: bool) -> anyhow::Result<()> {
        let interrupted = self.interrupted();
        for t in &mut self.trainers {
            if t.status.is_some() {
                continue;
            }
            let Some(s) = t.proc.try_wait()? else {
                continue;
            };
            t.status = Some(s);
            let rank = t.rank;
            if !s.success() && !interrupted && !t.killed {
                // What the dead trainer was handed is in its ring's header: the feeder acks
                // it once it sees the trainer gone. Wait for that (bounded) before the job
                // ends and its state is taken, or the last batches handed out come again.
                if let Some(svc) = self.job.coord.svc() {
                    await_trainer_gone(svc, &mut self.feeder, rank);
                }
                if let Some(fs) = self.feeder.try_wait()? {
                    if failed_by_itself(fs) {
                        return Err(feeder_failed(&self.feeder, self.job.coord.svc(), fs));
                    }
                }
                let pid = t.proc.pid();
                let tail = t.proc.tail();
                bail!(
                    "trainer rank {rank} (pid {pid}) failed: {}; stopped the other trainers and \
                     the feeder{tail}",
                    describe(s)
                );
            }
            if s.success() && self.stop.is_none() && !finished {
                self.job.pb.suspend(|| {
                    eprintln!(
                        "hydrofeed launch: trainer rank {rank} exited 0 before the end of the \
                         feed: ending the feed on the other ranks"
                    )
                });
                self.feeder.signal(libc::SIGTERM);
                self.stop = Some((Ended::Early(rank), Instant::now()));
            }
        }
        Ok(())
    }

    /// Trainers still running [`STOP_GRACE`] after they were told to stop (`--grace` after a
    /// signal) are killed.
    fn kill_after_grace(&mut self) {
        let Some((why, since)) = &self.stop else {
            return;
        };
        let grace = match why {
            Ended::Interrupted => Duration::from_secs_f64(self.job.args.grace),
            _ => STOP_GRACE,
        };
        if since.elapsed() > grace {
            for t in &mut self.trainers {
                if t.status.is_none() && !t.killed {
                    t.proc.signal(libc::SIGKILL);
                    t.killed = true;
                }
            }
        }
    }

    /// Every trainer ended: waits a moment for the feeder, then says how the job ended.
    fn finish(&mut self) -> anyhow::Result<Ended> {
        // Give the feeder a moment to forward the last acks and leave.
        let t = Instant::now();
        while self.feeder_status.is_none() && t.elapsed() < Duration::from_secs(10) {
            self.feeder_status = self.feeder.try_wait()?;
            thread::sleep(Duration::from_millis(20));
        }
        drain_output(std::iter::once(&self.feeder).chain(self.trainers.iter().map(|t| &t.proc)));
        let ended = self.stop.map_or(Ended::Done, |(e, _)| e);
        let killed: Vec<u32> = self
            .trainers
            .iter()
            .filter(|t| t.killed)
            .map(|t| t.rank)
            .collect();
        if !killed.is_empty() && !matches!(ended, Ended::Interrupted) {
            bail!(
                "rank(s) {killed:?} did not stop within {} s after the feed ended; killed them",
                STOP_GRACE.as_secs()
            );
        }
        if matches!(ended, Ended::Interrupted) {
            return Ok(ended);
        }
        if let Some(s) = self.feeder_status {
            if failed_by_itself(s) {
                return Err(feeder_failed(&self.feeder, self.job.coord.svc(), s));
            }
        }
        let line = self.summary(ended);
        self.job.pb.suspend(|| eprintln!("{line}"));
        Ok(ended)
    }

    /// Across nodes: another node whose ranks stopped heartbeating (or, seen from another
    /// node, node 0's coordinator gone) stops this node's trainers (SIGINT: they ack what they
    /// read) and its feeder; once they ended the job ends naming that node ([`NodeLost`]).
    fn check_nodes(&mut self) -> anyhow::Result<()> {
        let node = self.job.node;
        if !node.multi()
            || self.stop.is_some()
            || self.finished_seen
            || self.trainers.is_empty()
            || self.last_roster.elapsed() < Duration::from_millis(250)
        {
            return Ok(());
        }
        self.last_roster = Instant::now();
        let why = match self.job.coord.metrics() {
            Ok(m) if m.finished => {
                self.finished_seen = true;
                None
            }
            Ok(m) => {
                self.unreachable = None;
                dead_node(node, &roster(&m)).map(|(n, ranks, host)| {
                    format!(
                        "node {n} (ranks {ranks:?} at {host}) died: no heartbeat for \
                         --dead-after {} s",
                        self.job.args.dead_after
                    )
                })
            }
            Err(e) => {
                let since = *self.unreachable.get_or_insert_with(Instant::now);
                (since.elapsed() > NODE0_SILENCE).then(|| {
                    format!(
                        "node 0 (the coordinator at {}) is gone: {e:#}",
                        node.coordinator()
                    )
                })
            }
        };
        let Some(why) = why else {
            return Ok(());
        };
        let msg = format!(
            "node {}: {why}; stopping this node's trainers and feeder (collectives cannot \
             shrink)",
            node.node_rank
        );
        self.job.pb.suspend(|| eprintln!("hydrofeed launch: {msg}"));
        self.save_state_now();
        for t in &mut self.trainers {
            t.proc.signal(libc::SIGINT);
        }
        self.feeder.signal(libc::SIGTERM);
        self.stop = Some((Ended::Interrupted, Instant::now()));
        self.lost = Some(NodeLost(msg));
        Ok(())
    }

    /// The last line on a node other than 0: its ranks' steps and the job's rows acked.
    fn remote_summary(&self, secs: f64) -> String {
        let m = self.job.coord.metrics().unwrap_or_default();
        let ranks = self.job.node.ranks();
        let steps = m
            .workers
            .iter()
            .filter(|w| ranks.contains(&w.rank))
            .map(|w| w.steps)
            .max()
            .unwrap_or(0);
        format!(
            "hydrofeed launch: node {} of {}: ranks {ranks:?}, {} rows acked by the job in \
             {secs:.1} s, {steps} steps per worker",
            self.job.node.node_rank, self.job.node.nnodes, m.rows_acked
        )
    }

    /// The last line: workers, rows acked and dropped, time and rate, steps per worker, what
    /// `--skip-errors` skipped, and why the feed stopped early.
    fn summary(&self, ended: Ended) -> String {
        let secs = self.progress.t0.elapsed().as_secs_f64();
        let Some(svc) = self.job.coord.svc() else {
            return self.remote_summary(secs);
        };
        let c = svc.shared.with_machine(|m| m.counters());
        let (steps, finished) = svc.shared.with_machine(|m| (m.steps_done(), m.finished()));
        let early = match ended {
            Ended::Early(r) => {
                format!(" (stopped before the end of the feed: trainer rank {r} exited 0 first)")
            }
            _ if !finished => " (stopped before the end of the feed)".to_string(),
            _ => String::new(),
        };
        let skipped = if self.job.args.read.skip_errors {
            let line = self
                .feeder
                .find_line(|l| l.strip_prefix(SKIPPED_LINE).map(str::to_string));
            let ranges = svc
                .shared
                .with_machine(|m| padded_ranges(m.skipped_ranges()));
            format!(
                ", skipped {}{ranges}",
                line.unwrap_or_else(|| "0 corrupt records".into())
            )
        } else {
            String::new()
        };
        format!(
            "hydrofeed launch: {} workers, {} rows acked ({} dropped) in {:.1} s = {:.0} rows/s, \
             {} steps per worker{skipped}{early}",
            self.job.workers(),
            c.rows_acked,
            c.rows_dropped,
            secs,
            c.rows_acked as f64 / secs.max(1e-9),
            steps,
        )
    }
}

/// How long node 0's coordinator may not answer before another node names it gone.
const NODE0_SILENCE: Duration = Duration::from_secs(3);

/// How long a failed trainer's feeder gets to ack what that trainer was handed.
const TRAINER_GONE_WAIT: Duration = Duration::from_secs(3);

/// Waits until the feeder says `rank`'s trainer is gone (its hand-outs acked), the feeder
/// exited, or [`TRAINER_GONE_WAIT`] passed.
fn await_trainer_gone(svc: &RunningService, feeder: &mut ChildProc, rank: u32) {
    let t0 = Instant::now();
    while t0.elapsed() < TRAINER_GONE_WAIT {
        let gone = svc.shared.with_machine(|m| {
            m.ranks()
                .get(rank as usize)
                .is_none_or(|r| !r.alive || r.stage == Stage::TrainerGone)
        });
        if gone || !matches!(feeder.try_wait(), Ok(None)) {
            return;
        }
        thread::sleep(Duration::from_millis(20));
    }
    tracing::warn!(
        rank,
        "the feeder did not report trainer rank {rank} gone within {} s: batches it handed \
         out after its last ack may come again on resume",
        TRAINER_GONE_WAIT.as_secs()
    );
}

/// The rows skipped as corrupt and delivered as padding, as the summary names them.
fn padded_ranges(r: &[hydrofeed_coord::SkippedRange]) -> String {
    if r.is_empty() {
        return String::new();
    }
    let rows: u64 = r.iter().map(|x| x.end - x.start).sum();
    let named: Vec<String> = r
        .iter()
        .map(|x| {
            format!(
                "{} rows [{}, {}) of split {} in epoch {} ({})",
                x.path, x.start, x.end, x.split, x.data_epoch, x.reason
            )
        })
        .collect();
    format!(
        "; {rows} rows skipped and padded with rows of the same epoch: {}",
        named.join("; ")
    )
}

impl Drop for Supervisor<'_> {
    fn drop(&mut self) {
        let mut all: Vec<&mut ChildProc> = std::iter::once(&mut self.feeder)
            .chain(self.trainers.iter_mut().map(|t| &mut t.proc))
            .collect();
        kill_all(&mut all);
    }
}
