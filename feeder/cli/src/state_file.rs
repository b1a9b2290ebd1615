//! The one writer of state files (`--state-out` of `launch` and `coordinator`): atomic. The
//! text goes to a temporary file in the same directory, which is fsynced, renamed over the
//! target, and the directory fsynced: a reader (or a resume after a crash, a power cut, the
//! SIGKILL that follows a preemption's SIGTERM) sees the old file whole or the new one whole,
//! never half of one. `hydrofeed.save_state` does the same for the trainers' `feed.state()`.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use hydrofeed_coord::State;

/// Writes `state` to `path` atomically (see the module).
pub fn write_state(path: &Path, state: &State) -> anyhow::Result<()> {
    write_atomic(path, state.to_json().as_bytes())
}

/// Replaces `path` by `bytes` atomically: temporary file beside it, fsync, rename, fsync of
/// the directory. Errors name the file.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = path
        .file_name()
        .with_context(|| format!("{}: not a file name", path.display()))?;
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(".tmp-{}", std::process::id()));
    let tmp = dir.join(tmp_name);
    let r = (|| -> std::io::Result<()> {
        let mut f = File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        drop(f);
        std::fs::rename(&tmp, path)?;
        // The rename itself is durable once the directory is.
        File::open(&dir)?.sync_all()
    })();
    if r.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    r.with_context(|| format!("writing the state to {}", path.display()))
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
