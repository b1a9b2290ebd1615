//! `--batch-size-from-trainers`: the batch size each rank's trainer asked for, agreed with
//! `hydrofeed launch` through files in the private socket directory.

use std::path::{Path, PathBuf};
use std::thread;
use std::time::{Duration, Instant};

use super::stop_requested;
use crate::{Error, Result};

/// How often a rank looks for the agreed size.
const POLL: Duration = Duration::from_millis(20);

/// File in the socket directory where rank `r` writes the batch size its trainer asked for.
pub fn asked_path(dir: &Path, rank: u32) -> PathBuf {
    dir.join(format!("rank-{rank}.batch-size"))
}

/// File in the socket directory where `launch` writes the job's batch size.
pub fn agreed_path(dir: &Path) -> PathBuf {
    dir.join("batch-size")
}

/// `--batch-size-from-trainers`: writes what this rank's trainer asked for (`none` for no
/// size) and waits for the size `launch` set on the coordinator once every rank's trainer
/// attached. Files, not a protocol message: `launch` and this feeder share the private
/// socket directory, and the coordinator's protocol stays as it is.
pub(super) fn agree_batch_size(
    dir: &Path,
    rank: u32,
    asked: Option<usize>,
    timeout: Duration,
) -> Result<usize> {
    let io = |path: &Path, e: std::io::Error| Error::Io {
        loc: hydrofeed_error::Location {
            path: path.display().to_string(),
            ..Default::default()
        },
        source: e,
    };
    let p = asked_path(dir, rank);
    let tmp = p.with_extension("tmp");
    let text = asked.map_or_else(|| "none".to_string(), |a| a.to_string());
    std::fs::write(&tmp, text).map_err(|e| io(&tmp, e))?;
    std::fs::rename(&tmp, &p).map_err(|e| io(&p, e))?;
    let agreed = agreed_path(dir);
    let t0 = Instant::now();
    loop {
        match std::fs::read_to_string(&agreed) {
            Ok(s) => {
                return s.trim().parse::<usize>().map_err(|_| {
                    Error::Internal(format!("{}: not a batch size: {s:?}", agreed.display()))
                })
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(io(&agreed, e)),
        }
        if stop_requested() {
            return Err(Error::PeerLost(
                "stopped before the batch size was agreed".into(),
            ));
        }
        if t0.elapsed() > timeout {
            return Err(Error::Timeout {
                what: format!("the job's batch size in {}", agreed.display()),
                secs: timeout.as_secs_f64(),
            });
        }
        thread::sleep(POLL);
    }
}
