//! The one writer of state files (`--state-out` of `launch` and `coordinator`): atomic. The
//! text goes to a temporary file in the same directory, which is fsynced, renamed over the
//! target, and the directory fsynced: a reader (or a resume after a crash, a power cut, the
//! SIGKILL that follows a preemption's SIGTERM) sees the old file whole or the new one whole,
//! never half of one. `hydrofeed.save_state` does the same for the trainers' `feed.state()`.

use std::path::Path;

use anyhow::Context;
use hydrofeed_coord::State;

/// Writes `state` to `path` atomically (see the module).
pub fn write_state(path: &Path, state: &State) -> anyhow::Result<()> {
    write_atomic(path, state.to_json().as_bytes())
}

/// Replaces `path` by `bytes` atomically ([`hydrofeed_coord::atomic::write_atomic`]).
/// Errors name the file.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    hydrofeed_coord::atomic::write_atomic(path, bytes)
        .with_context(|| format!("writing the state to {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The file is replaced whole; no temporary file is left; a missing directory is an
    /// error naming the file.
    #[test]
    fn replaces_whole_and_leaves_nothing_behind() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("state.json");
        std::fs::write(&p, "stale from an earlier run").unwrap();
        write_atomic(&p, b"{\"a\": 1}").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "{\"a\": 1}");
        let names: Vec<_> = std::fs::read_dir(d.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("state.json")]);
        let e = write_atomic(&d.path().join("no/such/state.json"), b"{}").unwrap_err();
        assert!(format!("{e:#}").contains("no/such/state.json"), "{e:#}");
    }
}
