//! The feeder child: its `hydrofeed feeder` command line (the first one, and the one that
//! replaces a feeder that died), the restart notice and backoff, and the errors that name a
//! feeder that failed by itself or the trainer that stalled it.

use std::process::{Command, ExitStatus};
use std::thread;
use std::time::Duration;

use anyhow::Context;
use indicatif::ProgressBar;

use hydrofeed_coord::service;
use hydrofeed_coord::token::TOKEN_ENV;

use super::certs;
use super::children::{describe, ChildProc};
use super::supervisor::{Job, Trainer};

/// Which feeder of the job a command line starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum FeederStart {
    /// The job's first feeder: it takes the batch size from the trainers when the job has
    /// none ([`Job::batch_size_from_trainers`]).
    First,
    /// A feeder replacing one that died (`--rejoin`): the batch size was agreed by then.
    Rejoin,
}

/// The `hydrofeed feeder` command of `job`, serving one rank per TF server port in `ports`.
pub(super) fn feeder_command(
    job: &Job<'_>,
    ports: &[u32],
    start: FeederStart,
) -> anyhow::Result<Command> {
    let args = job.args;
    let exe = std::env::current_exe().context("finding the hydrofeed executable")?;
    let mut feeder = Command::new(exe);
    feeder
        .arg("feeder")
        .args(["--input", &args.input, "--coordinator", job.addr])
        .arg("--socket-dir")
        .arg(job.dir)
        .args(["--trainers", &ports.len().to_string()])
        .args(["--host", &job.node.local_addr])
        .arg("--ranks")
        .arg(
            job.node
                .ranks()
                .map(|r| r.to_string())
                .collect::<Vec<_>>()
                .join(","),
        )
        .arg("--trainer-ports")
        .arg(
            ports
                .iter()
                .map(|p| p.to_string())
                .collect::<Vec<_>>()
                .join(","),
        )
        .args(["--memory-mb", &args.memory_mb.to_string()])
        .args(["--stall-timeout", &args.stall_timeout.to_string()])
        // A trainer that leaves ends only its rank: `launch` decides from its exit status.
        .arg("--keep-going")
        .env(TOKEN_ENV, job.token.as_str());
    certs::clear_env(&mut feeder);
    if let Some(t) = job.tls {
        t.feeder_args(&mut feeder);
    }
    // The feeder plans with the same read flags: split ids and row counts must agree.
    feeder.args(args.read.to_args());
    if let Some(a) = args.feeder_metrics {
        feeder.args(["--metrics", &a.to_string()]);
    }
    match start {
        FeederStart::First if job.batch_size_from_trainers() => {
            feeder.arg("--batch-size-from-trainers");
        }
        FeederStart::First => {}
        FeederStart::Rejoin => {
            // Its trainer re-attaches when it next asks for a batch, which a long step (an
            // evaluation, a checkpoint) may put off: waited for as long as a full ring would be
            // (`launch` keeps the rank alive at the coordinator meanwhile).
            feeder.arg("--rejoin").args([
                "--accept-timeout",
                &args.stall_timeout.max(300.0).to_string(),
            ]);
        }
    }
    Ok(feeder)
}

/// Says that `feeder` died and will be restarted (the `k`-th time of `of`), after a backoff
/// of 250 ms doubling with each restart (a feeder that crashes again at once is not hammered).
pub(super) fn restart_notice(feeder: &ChildProc, s: ExitStatus, k: u32, of: u32, pb: &ProgressBar) {
    let pid = feeder.pid();
    feeder.drain_output();
    pb.suspend(|| {
        eprintln!(
            "hydrofeed launch: the feeder (pid {pid}) was {}; restarting it ({k} of {of}): the \
             trainers re-attach and report what they read, the rows they did not read are \
             handed out again",
            describe(s)
        )
    });
    thread::sleep(Duration::from_millis(250 << (k - 1).min(4)));
}

/// A feeder status that is its own failure, not "a trainer left" (the trainer's status tells)
/// nor "a trainer stopped taking batches" ([`trainer_stalled`]).
pub(super) fn failed_by_itself(s: ExitStatus) -> bool {
    !s.success()
        && s.code() != Some(crate::feeder::TRAINER_LEFT_EXIT)
        && s.code() != Some(crate::feeder::TRAINER_STALLED_EXIT)
}

/// The error for a feeder that ended because a trainer took no batch for `--stall-timeout`:
/// it names that trainer (from the feeder's last line: `trainer rank R (pid P) took no
/// batch ...`) with its own last lines, not the feeder.
pub(super) fn trainer_stalled(
    feeder: &ChildProc,
    trainers: &[Trainer],
    s: ExitStatus,
) -> anyhow::Error {
    feeder.drain_output();
    let line = feeder.find_line(|l| l.contains(" took no batch for ").then(|| l.clone()));
    let Some(line) = line else {
        let tail = feeder.tail();
        return anyhow::anyhow!(
            "a trainer took no batch for --stall-timeout (the feeder {}); stopped every \
             trainer{tail}",
            describe(s)
        );
    };
    let what = line.trim_start_matches("Error: ").to_string();
    let tail = what
        .strip_prefix("trainer rank ")
        .and_then(|r| r.split(' ').next())
        .and_then(|r| r.parse::<u32>().ok())
        .and_then(|r| trainers.iter().find(|t| t.rank == r))
        .map(|t| t.proc.tail())
        .unwrap_or_default();
    anyhow::anyhow!("{what}; stopped every trainer and the feeder{tail}")
}

/// The error for a feeder that failed: its status, each rank's last stage, its last lines.
pub(super) fn feeder_failed(
    feeder: &ChildProc,
    svc: Option<&service::RunningService>,
    s: ExitStatus,
) -> anyhow::Error {
    let stages = svc.map_or_else(
        || "(on node 0)".to_string(),
        |svc| {
            svc.shared.with_machine(|m| {
                m.ranks()
                    .iter()
                    .enumerate()
                    .map(|(r, i)| format!("rank {r}: {}", i.stage.as_str()))
                    .collect::<Vec<_>>()
                    .join(", ")
            })
        },
    );
    let pid = feeder.pid();
    let tail = feeder.tail();
    anyhow::anyhow!(
        "the feeder (pid {pid}) failed: {}; last stages reported: {stages}; stopped every \
         trainer{tail}",
        describe(s)
    )
}
