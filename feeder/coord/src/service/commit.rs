//! Group commit of the coordinator's journal. A call's record is written under the service's
//! lock; the call is answered once an `fdatasync` that began after the write has returned, so
//! an answer a feeder saw is on disk, as with one fsync per call. One thread runs the syncs,
//! each covering every record written while the previous one ran: N calls in flight cost one
//! fsync instead of N, and no fsync holds the service's lock (which serialised every call
//! behind the disk).

use std::fs::File;
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tonic::Status;

use super::Inner;
use crate::{Error, Result};

/// What the sync thread has made durable: every record up to `seq`, or the error that stopped
/// it. The error is sticky: after a failed fsync nothing written since can be promised.
#[derive(Debug, Clone, Default)]
struct Durable {
    seq: u64,
    error: Option<Arc<str>>,
}

/// Records written and not yet known durable.
#[derive(Default)]
struct Pending {
    /// The sequence number of the last record written.
    written: u64,
    /// The journal's current file (a second handle) and its path.
    file: Option<Arc<(File, PathBuf)>>,
    stop: bool,
}

/// Names the microseconds the journal's sync thread waits, after the first record it finds
/// unsynced, for more to share its `fdatasync` (default [`GATHER_US`]: none; at most 0.1 s).
/// Fewer syncs and wakeups for that much more latency; at 10,000 session feeders 1 ms
/// measured the same CPU per lease as none, within the shared machine's noise.
pub const GATHER_ENV: &str = "HYDROFEED_JOURNAL_GATHER_US";

/// The default of [`GATHER_ENV`].
const GATHER_US: u64 = 0;

/// [`GATHER_ENV`], or its default.
fn gather() -> Result<Duration> {
    let us = match std::env::var(GATHER_ENV) {
        Ok(v) => v.trim().parse::<u64>().map_err(|_| {
            Error::InvalidArgument(format!("{GATHER_ENV}={v:?}: not a number of microseconds"))
        })?,
        Err(_) => GATHER_US,
    };
    Ok(Duration::from_micros(us.min(100_000)))
}

/// The group commit of one journal.
pub(super) struct GroupCommit {
    /// How long the sync thread gathers records before a sync ([`gather`]).
    gather: Duration,
    pending: Mutex<Pending>,
    wake: Condvar,
    durable: tokio::sync::watch::Sender<Durable>,
}

impl std::fmt::Debug for GroupCommit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GroupCommit").finish_non_exhaustive()
    }
}

impl GroupCommit {
    /// Starts the sync thread; it ends after [`GroupCommit::stop`], with what was written
    /// made durable.
    pub(super) fn start() -> Result<Arc<Self>> {
        let (durable, _) = tokio::sync::watch::channel(Durable::default());
        let gc = Arc::new(Self {
            gather: gather()?,
            pending: Mutex::new(Pending::default()),
            wake: Condvar::new(),
            durable,
        });
        let me = gc.clone();
        std::thread::Builder::new()
            .name("hydrofeed-journal".into())
            .spawn(move || me.run())
            .map_err(|e| Error::Internal(format!("spawn the journal's sync thread: {e}")))?;
        Ok(gc)
    }

    fn lock(&self) -> MutexGuard<'_, Pending> {
        self.pending.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Record `seq` was written; `file` is the journal's file when it changed (a new
    /// generation) since the last record. Called under the service's lock, in order.
    pub(super) fn written(&self, seq: u64, file: Option<(File, PathBuf)>) {
        let mut p = self.lock();
        p.written = seq;
        if let Some(f) = file {
            p.file = Some(Arc::new(f));
        }
        drop(p);
        self.wake.notify_one();
    }

    /// Waits until record `seq` is durable (0: nothing to wait for).
    pub(super) async fn durable(&self, seq: u64) -> std::result::Result<(), Status> {
        if seq == 0 {
            return Ok(());
        }
        let mut rx = self.durable.subscribe();
        let d = rx
            .wait_for(|d| d.seq >= seq || d.error.is_some())
            .await
            .map_err(|_| Status::unavailable("the coordinator's journal stopped"))?
            .clone();
        match d.error {
            Some(e) if d.seq < seq => Err(Status::internal(e.to_string())),
            _ => Ok(()),
        }
    }

    /// Asks the sync thread to end once what was written is durable.
    pub(super) fn stop(&self) {
        self.lock().stop = true;
        self.wake.notify_one();
    }

    fn run(&self) {
        let mut synced = 0;
        loop {
            let (target, file) = {
                let mut p = self.lock();
                while p.written == synced && !p.stop {
                    p = self.wake.wait(p).unwrap_or_else(|e| e.into_inner());
                }
                if p.written == synced {
                    return;
                }
                if self.gather.is_zero() {
                    (p.written, p.file.clone())
                } else {
                    // Records written within `gather` of the first one waiting share its
                    // sync: fewer fdatasyncs, and fewer wakeups of the calls waiting.
                    drop(p);
                    std::thread::sleep(self.gather);
                    let p = self.lock();
                    (p.written, p.file.clone())
                }
            };
            // Records of an earlier generation than `file`'s were made durable by the
            // compaction that started it (its state and base record are fsynced in place).
            let res = file.as_ref().map_or(Ok(()), |f| {
                f.0.sync_data().map_err(|e| {
                    format!(
                        "journal {}: fdatasync failed ({e}); calls are no longer answered",
                        f.1.display()
                    )
                })
            });
            match res {
                Ok(()) => {
                    synced = target;
                    self.durable.send_modify(|d| d.seq = target);
                }
                Err(e) => {
                    tracing::error!("{e}");
                    self.durable.send_modify(|d| d.error = Some(e.into()));
                    return;
                }
            }
        }
    }
}

/// Records a compaction when the journal is due one (no lease outstanding, an epoch closed).
pub(super) fn compact(g: &mut Inner, now: u64) {
    let Inner {
        m, roster, journal, ..
    } = g;
    if let Some(j) = journal.as_mut() {
        let (t0, saving) = (Instant::now(), j.saving());
        match j.maybe_compact(m, roster, now, COMPACT_AFTER) {
            Ok(true) => tracing::info!(
                generation = j.generation(),
                epoch = m.epoch(),
                took_ms = t0.elapsed().as_millis() as u64,
                "journal compacted"
            ),
            Ok(false) if j.saving() && !saving => tracing::info!(
                epoch = m.epoch(),
                took_ms = t0.elapsed().as_millis() as u64,
                "journal: the machine copied, saved off the lock for the next generation"
            ),
            Ok(false) => {}
            Err(e) => tracing::error!("journal compaction: {e}"),
        }
    }
}

/// Records after which the journal is compacted at the next moment no lease is outstanding,
/// even within an epoch.
const COMPACT_AFTER: u64 = 100_000;
