//! [`RankStats`]: the counters and the stage of one rank, shared by its reader, writer,
//! heartbeat and the Prometheus endpoint; the skipped-records line of the feeder's exit.

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use hydrofeed_coord::Stage;
use hydrofeed_format::Plan;
use hydrofeed_ipc::StatusWord;

use super::figures::TrainerFigures;

/// Counters of one rank, shared with the heartbeat and metrics threads.
#[derive(Debug, Default)]
pub struct RankStats {
    /// Rank.
    pub rank: AtomicU64,
    /// Current stage (`Stage as u8`).
    pub stage: AtomicU8,
    /// Rows read (after skipping to the lease start).
    pub rows_read: AtomicU64,
    /// Rows decoded and dropped to reach lease starts (the head of a unit).
    pub rows_skipped: AtomicU64,
    /// Rows passed over without reading or decoding them to reach lease starts (whole row
    /// groups, stripes, blocks, records).
    pub rows_passed: AtomicU64,
    /// Batches written into the ring.
    pub batches: AtomicU64,
    /// Bytes written into the ring.
    pub bytes: AtomicU64,
    /// Rows acked by the trainer.
    pub rows_acked: AtomicU64,
    /// Batches acked by the trainer.
    pub batches_acked: AtomicU64,
    /// Seconds (ms) spent waiting for ring space.
    pub ring_wait_ms: AtomicU64,
    /// Seconds (ms) waiting for work at the epoch barrier.
    pub work_wait_ms: AtomicU64,
    /// Corrupt records skipped under `--skip-errors` inside the leases' row ranges.
    pub skipped_records: AtomicU64,
    /// Files those records were in.
    pub skipped_files: Mutex<BTreeSet<String>>,
    /// Fixed order: the most records any reader of a split skipped past its first row (a split
    /// is read by several lane runs, each epoch: a record is counted once).
    pub skipped_by_split: Mutex<HashMap<u32, u64>>,
    /// Bytes the readers got from storage (what the decoders asked for).
    pub storage_bytes: AtomicU64,
    /// Microseconds reader threads spent blocked in storage reads (summed over threads).
    pub storage_us: AtomicU64,
    /// Reader threads in a storage read now: the stage is `reading` while any is.
    in_storage: AtomicU32,
    /// What the readers are doing (`Stage as u8` index): the stage unless the writer waits
    /// for ring space (then the trainer is the bottleneck, whatever the readers do).
    reader_stage: AtomicU8,
    /// The writer waits for ring space.
    ring_waiting: AtomicBool,
    /// The ring's status word, once the trainer attached: the stage, for the trainer.
    pub(super) ring_status: OnceLock<StatusWord>,
    /// What the trainer reported with its acks.
    trainer: Mutex<TrainerFigures>,
}

/// Prefix of the line `hydrofeed feeder` prints at exit when records were skipped
/// (`launch` puts it in its summary).
pub const SKIPPED_LINE: &str = "hydrofeed feeder: skipped ";

/// Prints [`SKIPPED_LINE`] with the count and the files, if any record was skipped.
pub(super) fn report_skipped(stats: &[Arc<RankStats>]) {
    let n: u64 = stats
        .iter()
        .map(|s| s.skipped_records.load(Ordering::Relaxed))
        .sum();
    if n == 0 {
        return;
    }
    let mut files = BTreeSet::new();
    for s in stats {
        if let Ok(f) = s.skipped_files.lock() {
            files.extend(f.iter().cloned());
        }
    }
    let files: Vec<String> = files.into_iter().collect();
    eprintln!("{SKIPPED_LINE}{n} corrupt records in {}", files.join(", "));
}

pub(super) const STAGES: [Stage; 8] = [
    Stage::Starting,
    Stage::Reading,
    Stage::Decoding,
    Stage::WaitingRing,
    Stage::TrainerIdle,
    Stage::WaitingWork,
    Stage::Done,
    Stage::TrainerGone,
];

impl RankStats {
    /// Counts the records a fixed-order lane skipped in `split` (the most any run saw).
    pub(super) fn skipped_in(&self, plan: &Plan, split: u32, n: u64) {
        let Ok(mut m) = self.skipped_by_split.lock() else {
            return;
        };
        let seen = m.entry(split).or_insert(0);
        if n > *seen {
            self.skipped_records.fetch_add(n - *seen, Ordering::Relaxed);
            *seen = n;
            if let (Ok(mut f), Some(s)) =
                (self.skipped_files.lock(), plan.splits.get(split as usize))
            {
                f.insert(s.path.clone());
            }
        }
    }

    pub(super) fn set(&self, s: Stage) {
        let i = STAGES.iter().position(|x| *x == s).unwrap_or(0);
        self.stage.store(i as u8, Ordering::Relaxed);
        if let Some(w) = self.ring_status.get() {
            w.set(u32::from(s.code()));
        }
    }

    /// What the readers do now: the stage, unless the writer waits for ring space.
    pub(super) fn set_reader(&self, s: Stage) {
        let i = STAGES.iter().position(|x| *x == s).unwrap_or(0);
        self.reader_stage.store(i as u8, Ordering::Relaxed);
        if !self.ring_waiting.load(Ordering::Relaxed) {
            self.set(s);
        }
    }

    /// The writer waits for ring space (`Some`: in this stage) or got it (`None`: the stage
    /// is the readers' again).
    pub(super) fn ring_wait(&self, s: Option<Stage>) {
        match s {
            Some(s) => {
                self.ring_waiting.store(true, Ordering::Relaxed);
                self.set(s);
            }
            None => {
                if self.ring_waiting.swap(false, Ordering::Relaxed) {
                    let i = self.reader_stage.load(Ordering::Relaxed) as usize;
                    self.set(STAGES[i.min(STAGES.len() - 1)]);
                }
            }
        }
    }

    /// A storage read starts: the stage is `reading` until the last one in flight ends.
    pub(super) fn storage_started(&self) {
        self.in_storage.fetch_add(1, Ordering::Relaxed);
        self.set_reader(Stage::Reading);
    }

    /// A storage read of `bytes` that took `took` ended: back to `decoding` when it was the
    /// last in flight.
    pub(super) fn storage_ended(&self, bytes: u64, took: Duration) {
        self.storage_bytes.fetch_add(bytes, Ordering::Relaxed);
        self.storage_us
            .fetch_add(took.as_micros() as u64, Ordering::Relaxed);
        if self.in_storage.fetch_sub(1, Ordering::Relaxed) == 1 {
            self.set_reader(Stage::Decoding);
        }
    }

    /// The trainer's lock of figures (a poisoned one still holds valid figures).
    pub(super) fn trainer(&self) -> MutexGuard<'_, TrainerFigures> {
        self.trainer.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The current stage.
    pub fn stage(&self) -> Stage {
        STAGES[(self.stage.load(Ordering::Relaxed) as usize).min(STAGES.len() - 1)]
    }
}
