//! The batch size when `--batch-size` is not given: each rank's feeder writes what its
//! trainer asked for; once every rank did, `launch` checks that they agree, sets it on the
//! coordinator before any work is handed out, and tells the feeder.

use std::path::Path;

use anyhow::{bail, Context};
use indicatif::ProgressBar;

use hydrofeed_coord::service;

/// Batch size when no trainer asks for one and `--batch-size` is not given.
const DEFAULT_BATCH_SIZE: u64 = 256;

/// Without `--batch-size`: once every rank wrote what its trainer asked for, sets the job's
/// batch size on the coordinator (before any work was handed out) and tells the feeder.
/// `Ok(false)` while ranks are missing; an error naming the sizes when the trainers disagree.
pub(super) fn agree_batch_size(
    dir: &Path,
    n: u32,
    svc: &service::RunningService,
    pb: &ProgressBar,
) -> anyhow::Result<bool> {
    let mut asked = Vec::new();
    for r in 0..n {
        match std::fs::read_to_string(hydrofeed_feeder::daemon::asked_path(dir, r)) {
            Ok(s) => asked.push((r, s.trim().parse::<u64>().ok())),
            Err(_) => return Ok(false),
        }
    }
    let sizes: std::collections::BTreeSet<u64> = asked.iter().filter_map(|(_, b)| *b).collect();
    if sizes.len() > 1 {
        let who: Vec<String> = asked
            .iter()
            .filter_map(|(r, b)| b.map(|b| format!("rank {r} asks for {b} rows")))
            .collect();
        bail!(
            "the trainers asked for different batch sizes: {} (every rank takes the same steps): \
             make them ask the same size, or pass --batch-size",
            who.join(", ")
        );
    }
    let b = sizes.first().copied().unwrap_or(DEFAULT_BATCH_SIZE);
    svc.shared
        .with_machine_mut(|m| m.set_batch_size(b))
        .context("setting the batch size the trainers asked for")?;
    let p = hydrofeed_feeder::daemon::agreed_path(dir);
    let tmp = p.with_extension("tmp");
    std::fs::write(&tmp, b.to_string()).with_context(|| format!("{}", tmp.display()))?;
    std::fs::rename(&tmp, &p).with_context(|| format!("{}", p.display()))?;
    pb.set_length(
        svc.shared
            .with_machine(|m| m.total_rows() * u64::from(m.config().epochs)),
    );
    pb.suspend(|| {
        eprintln!(
            "hydrofeed launch: batch size {b} ({})",
            if sizes.is_empty() {
                "the default: no trainer asked for one"
            } else {
                "asked by the trainers"
            }
        )
    });
    Ok(true)
}
