//! A compaction with leases outstanding, saved off the service's lock. Saving the whole
//! machine (megabytes of JSON at 10,000 ranks, and its fsyncs) in the lock held every call
//! for tens of milliseconds. Instead, in the lock, the machine and roster are copied and the
//! position in the journal noted; a thread writes `machine-<G+1>.json`, the new generation's
//! `base` record and its state (`state-<G+1>.json.next`), all fsynced; a later call, in the
//! lock, switches: `journal-<G+1>.log` gets the `base` and the records written since the copy
//! (they replay on the saved machine to the one now), then the prepared state is renamed over
//! `state.json`. Until the rename the old generation is complete, so a crash at any step
//! recovers; files of a switch that never happened are removed at the next one.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::thread::JoinHandle;

use super::{base_of, encode, io, machine_path, state_path, write_atomic, Journal, JournalPos};
use crate::cluster::Roster;
use crate::{Error, Machine, Result};

/// Names of the states prepared for a switch start so.
pub(super) const PREPARED: &str = "state-";

/// A compaction being saved.
#[derive(Debug)]
pub(super) struct Saving {
    generation: u64,
    /// Where the copy stands in the current generation: its file's bytes and the records kept
    /// ([`Journal::hold`]) then, in the order they reach the file.
    at: u64,
    /// Records appended before the copy.
    records: u64,
    epoch: u32,
    thread: JoinHandle<Result<Vec<u8>>>,
}

fn prepared_path(dir: &Path, generation: u64) -> PathBuf {
    dir.join(format!("{PREPARED}{generation}.json.next"))
}

/// Writes `machine-<generation>.json`, atomically and durably.
pub(super) fn save_machine(dir: &Path, generation: u64, m: &Machine) -> Result<()> {
    let bytes = serde_json::to_vec(m)
        .map_err(|e| Error::Internal(format!("the machine does not serialise: {e}")))?;
    write_atomic(&machine_path(dir, generation), &bytes)
}

impl Journal {
    /// Copies the machine and roster and starts saving them for the next generation.
    pub(super) fn start_saving(&mut self, m: &Machine, roster: &Roster, now_ms: u64) -> Result<()> {
        let generation = self.generation + 1;
        let held = self.held.as_ref().map_or(0, |b| b.len() as u64);
        let (m, roster, dir) = (m.clone(), roster.clone(), self.dir.clone());
        let epoch = m.epoch();
        let thread = std::thread::Builder::new()
            .name("hydrofeed-journal-save".into())
            .spawn(move || {
                save_machine(&dir, generation, &m)?;
                let mut st = m.state();
                st.journal = Some(JournalPos { generation });
                write_atomic(&prepared_path(&dir, generation), st.to_json().as_bytes())?;
                Ok(encode(&base_of(&m, &roster, now_ms, true)))
            })
            .map_err(|e| Error::Internal(format!("spawn the journal's saving thread: {e}")))?;
        self.saving = Some(Saving {
            generation,
            at: self.len + held,
            records: self.records,
            epoch,
            thread,
        });
        Ok(())
    }

    /// Switches to the generation being saved once it is: its log with the `base` record and
    /// the records since the copy, then its state. Returns whether it switched.
    pub(super) fn finish_saved(&mut self) -> Result<bool> {
        if !self.saving.as_ref().is_some_and(|s| s.thread.is_finished()) {
            return Ok(false);
        }
        let s = self.saving.take().expect("checked above");
        let base = s
            .thread
            .join()
            .map_err(|_| Error::Internal("the journal's saving thread panicked".into()))??;
        // The records since the copy: in the file past `at`, or still kept (then the part of
        // the kept bytes before `at` is the copy's, and dropped).
        let mut tail = Vec::new();
        if s.at < self.len {
            let p = super::log_path(&self.dir, self.generation);
            let mut f = File::open(&p).map_err(|e| io(&p, e))?;
            f.seek(SeekFrom::Start(s.at))
                .and_then(|_| f.take(self.len - s.at).read_to_end(&mut tail))
                .map_err(|e| io(&p, e))?;
        } else if let Some(buf) = &mut self.held {
            buf.drain(..((s.at - self.len) as usize).min(buf.len()));
        }
        let file = Self::new_log(&self.dir, s.generation, &[&base, &tail])?;
        std::fs::rename(
            prepared_path(&self.dir, s.generation),
            state_path(&self.dir),
        )
        .and_then(|()| File::open(&self.dir)?.sync_all())
        .map_err(|e| io(&self.dir, e))?;
        self.generation = s.generation;
        self.file = file;
        self.len = (base.len() + tail.len()) as u64;
        self.records -= s.records;
        self.compacted_epoch = s.epoch;
        self.remove_others();
        Ok(true)
    }
}
