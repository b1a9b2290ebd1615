//! The job's private socket directory, `hydrofeed-launch-<pid>-<random>` under `$XDG_RUNTIME_DIR`
//! (else the temporary directory): created 0700 by this process, so a directory someone else
//! made beforehand at a predictable name is never used, and removed on every exit that runs code.
//!
//! A `launch` killed with SIGKILL (the OOM killer, a scheduler's hard kill) runs nothing: its
//! directory stays. Each directory holds `.lock`, a file its launch keeps locked (`flock`) for its
//! whole life; the kernel drops the lock when the process dies, however it dies. A new launch
//! removes the directories of its user under the same parent whose lock it can take: those whose
//! launch is gone. A process id is no test of that: ids are reused, and a launch in another PID
//! namespace (a container sharing `/tmp`) has an id this one cannot see.

use std::fs::{self, File};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};

/// The file a live launch holds locked, inside its directory.
const LOCK: &str = ".lock";

/// The job's private directory, removed on every exit; its lock held until then.
pub(super) struct RunDir {
    path: PathBuf,
    _lock: File,
}

impl RunDir {
    /// Removes what killed launches left under the parent, then creates a private directory
    /// named after `prefix`.
    pub(super) fn create(prefix: &str) -> anyhow::Result<Self> {
        let base = std::env::var_os("XDG_RUNTIME_DIR")
            .map(PathBuf::from)
            .filter(|p| p.is_absolute() && p.is_dir())
            .unwrap_or_else(std::env::temp_dir);
        for dir in remove_abandoned(&base, prefix) {
            eprintln!(
                "hydrofeed launch: removed {}, left by a launch that was killed",
                dir.display()
            );
        }
        create_private(&base, prefix)
    }

    /// Where it is.
    pub(super) fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for RunDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.path);
    }
}

fn uid() -> u32 {
    // SAFETY: getuid never fails and has no preconditions.
    unsafe { libc::getuid() }
}

/// `{prefix}-<pid>-<8 hex digits>`, as [`create_private`] names them.
fn is_run_dir_name(name: &str, prefix: &str) -> bool {
    let Some(rest) = name.strip_prefix(prefix).and_then(|r| r.strip_prefix('-')) else {
        return false;
    };
    let Some((pid, random)) = rest.split_once('-') else {
        return false;
    };
    !pid.is_empty()
        && pid.bytes().all(|b| b.is_ascii_digit())
        && random.len() == 8
        && random.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Removes the run directories under `base` that this user owns and no live launch holds;
/// returns them. A directory without a lock file (being created, or made by a release before
/// the lock) is left alone.
fn remove_abandoned(base: &Path, prefix: &str) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(base) else {
        return Vec::new();
    };
    let mut removed = Vec::new();
    for e in entries.flatten() {
        if !e
            .file_name()
            .to_str()
            .is_some_and(|n| is_run_dir_name(n, prefix))
        {
            continue;
        }
        let dir = e.path();
        match fs::symlink_metadata(&dir) {
            Ok(m) if m.is_dir() && m.uid() == uid() => {}
            _ => continue,
        }
        let Ok(lock) = File::options()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(dir.join(LOCK))
        else {
            continue;
        };
        // Held (until `lock` drops) while removing: another launch sweeping at the same time
        // skips it.
        if lock.try_lock().is_ok() && fs::remove_dir_all(&dir).is_ok() {
            removed.push(dir);
        }
    }
    removed
}

fn create_private(base: &Path, prefix: &str) -> anyhow::Result<RunDir> {
    use rand::RngCore;
    for _ in 0..16 {
        let dir = base.join(format!(
            "{prefix}-{}-{:08x}",
            std::process::id(),
            rand::rng().next_u32()
        ));
        match fs::DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => {
                let m = fs::symlink_metadata(&dir).with_context(|| format!("{}", dir.display()))?;
                anyhow::ensure!(
                    m.is_dir() && m.uid() == uid() && m.mode() & 0o077 == 0,
                    "{}: not a private directory of this user",
                    dir.display()
                );
                let lock = hold_lock(&dir)
                    .with_context(|| format!("locking {}", dir.join(LOCK).display()))?;
                return Ok(RunDir {
                    path: dir,
                    _lock: lock,
                });
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e).with_context(|| format!("creating {}", dir.display())),
        }
    }
    bail!(
        "could not create a private directory under {}",
        base.display()
    )
}

/// Creates `dir/.lock` already locked: the file is locked under another name, then renamed, so
/// a sweeping launch never finds it unlocked while this one lives.
fn hold_lock(dir: &Path) -> anyhow::Result<File> {
    let new = dir.join(".lock.new");
    let f = File::options()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&new)?;
    f.try_lock()?;
    fs::rename(&new, dir.join(LOCK))?;
    Ok(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_names_it_makes_are_run_dirs() {
        let p = "hydrofeed-launch";
        assert!(is_run_dir_name("hydrofeed-launch-123-0a1b2c3d", p));
        for other in [
            "hydrofeed-launch-123",
            "hydrofeed-launch--0a1b2c3d",
            "hydrofeed-launch-12x-0a1b2c3d",
            "hydrofeed-launch-123-0a1b2c3",
            "hydrofeed-launch-123-0a1b2c3g",
            "hydrofeed-launchx-123-0a1b2c3d",
            "hydrofeed-demo-70lvm_cj",
        ] {
            assert!(!is_run_dir_name(other, p), "{other}");
        }
    }

    #[test]
    fn a_held_directory_is_kept_and_an_abandoned_one_removed() {
        let base = tempfile::tempdir().unwrap();
        let live = create_private(base.path(), "t").unwrap();
        // What SIGKILL leaves: the directory and its lock file, the lock released.
        let gone = base.path().join("t-2-0a1b2c3d");
        fs::create_dir(&gone).unwrap();
        drop(hold_lock(&gone).unwrap());
        let foreign = base.path().join("t-1-0a1b2c3d");
        fs::create_dir(&foreign).unwrap(); // no lock file: not ours to judge
        assert_eq!(remove_abandoned(base.path(), "t"), vec![gone.clone()]);
        assert!(!gone.exists() && live.path().is_dir() && foreign.is_dir());
        assert!(remove_abandoned(base.path(), "t").is_empty());
    }
}
