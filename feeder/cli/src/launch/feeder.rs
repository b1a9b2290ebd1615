//! The feeder child: its `hydrofeed feeder` command line (the first one, and the one that
//! replaces a feeder that died), the restart notice and backoff, and the error that names a
//! feeder that failed by itself.

use std::path::Path;
use std::process::{Command, ExitStatus};
use std::thread;
use std::time::Duration;

use anyhow::Context;
use indicatif::ProgressBar;

use hydrofeed_coord::service;
use hydrofeed_coord::token::{Token, TOKEN_ENV};

use super::certs::{self, JobTls};
use super::children::{describe, Job};
use super::Args;

/// The `hydrofeed feeder` command of the job (`rejoin`: it replaces one that died).
#[allow(clippy::too_many_arguments)]
pub(super) fn feeder_command(
    args: &Args,
    addr: &str,
    token: &Token,
    tls: Option<&JobTls>,
    dir: &Path,
    ports: &[u32],
    from_trainers: bool,
    rejoin: bool,
) -> anyhow::Result<Command> {
    let exe = std::env::current_exe().context("finding the hydrofeed executable")?;
    let mut feeder = Command::new(exe);
    feeder
        .arg("feeder")
        .args(["--input", &args.input, "--coordinator", addr])
        .arg("--socket-dir")
        .arg(dir)
        .args(["--trainers", &ports.len().to_string()])
        .arg("--ranks")
        .arg(
            (0..ports.len())
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
        .env(TOKEN_ENV, token.as_str());
    certs::clear_env(&mut feeder);
    if let Some(t) = tls {
        t.feeder_args(&mut feeder);
    }
    if let Some(c) = &args.columns {
        feeder.arg("--columns").arg(c.join(","));
    }
    if let Some(f) = args.format {
        let v = clap::ValueEnum::to_possible_value(&f).map(|v| v.get_name().to_string());
        if let Some(v) = v {
            feeder.args(["--format", &v]);
        }
    }
    if let Some(a) = args.feeder_metrics {
        feeder.args(["--metrics", &a.to_string()]);
    }
    if args.skip_errors {
        feeder.arg("--skip-errors");
    }
    if let Some(s) = &args.schema {
        feeder.arg("--schema").arg(s);
    }
    if from_trainers {
        feeder.arg("--batch-size-from-trainers");
    }
    if rejoin {
        feeder.arg("--rejoin");
    }
    Ok(feeder)
}

/// Says that the feeder died and will be restarted (the `k`-th time of `of`), after a backoff
/// of 250 ms doubling with each restart (a feeder that crashes again at once is not hammered).
pub(super) fn restart_feeder(
    job: &mut Job,
    s: ExitStatus,
    k: u32,
    of: u32,
    pb: &ProgressBar,
) -> anyhow::Result<()> {
    let pid = job.children[0].1.id();
    job.drain_output(Some(0));
    pb.suspend(|| {
        eprintln!(
            "hydrofeed launch: the feeder (pid {pid}) was {}; restarting it ({k} of {of}): the \
             trainers re-attach and report what they read, the rows they did not read are \
             handed out again",
            describe(s)
        )
    });
    thread::sleep(Duration::from_millis(250 << (k - 1).min(4)));
    Ok(())
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
pub(super) fn trainer_stalled(job: &mut Job, s: ExitStatus) -> anyhow::Error {
    job.drain_output(Some(0));
    let line = job.children[0].2.lock().ok().and_then(|t| {
        t.iter()
            .rev()
            .find(|l| l.contains(" took no batch for "))
            .cloned()
    });
    let Some(line) = line else {
        let tail = job.tail(0);
        return anyhow::anyhow!(
            "a trainer took no batch for --stall-timeout (the feeder {}); stopped every \
             trainer{tail}",
            describe(s)
        );
    };
    let what = line.trim_start_matches("Error: ").to_string();
    let rank = what
        .strip_prefix("trainer rank ")
        .and_then(|r| r.split(' ').next())
        .and_then(|r| r.parse::<usize>().ok())
        .filter(|r| r + 1 < job.children.len());
    let tail = rank.map(|r| job.tail(r + 1)).unwrap_or_default();
    anyhow::anyhow!("{what}; stopped every trainer and the feeder{tail}")
}

/// The error for a feeder that failed: its status, each rank's last stage, its last lines.
pub(super) fn feeder_failed(
    job: &mut Job,
    svc: &service::RunningService,
    s: ExitStatus,
) -> anyhow::Error {
    let stages = svc.shared.with_machine(|m| {
        m.ranks()
            .iter()
            .enumerate()
            .map(|(r, i)| format!("rank {r}: {}", i.stage.as_str()))
            .collect::<Vec<_>>()
            .join(", ")
    });
    let pid = job.children[0].1.id();
    let tail = job.tail(0);
    anyhow::anyhow!(
        "the feeder (pid {pid}) failed: {}; last stages reported: {stages}; stopped every \
         trainer{tail}",
        describe(s)
    )
}
