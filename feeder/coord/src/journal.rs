//! The coordinator's journal (`hydrofeed coordinator --journal DIR`): every call that changes
//! the job (a registration, a lease granted, a batch of acks, a rank declared dead) is appended
//! as a record before the caller gets its answer, so a coordinator killed (`kill -9`, its host
//! down) and started again on the same directory continues the job: the same plan, ledgers,
//! epoch, order position, outstanding leases and incarnations. Feeders that kept trying it
//! (`--coordinator-timeout`) carry on exactly once.
//!
//! A directory holds `state.json` (a [`State`] whose `journal` names the generation of the
//! journal that follows it) and `journal-<generation>.log`. A record is
//! `[u32 length LE][u64 xxh3 of the payload LE][payload: one JSON Entry]`; the file is fsynced
//! after each call's records. A record cut short by a crash, or whose checksum does not match
//! (a torn tail), ends the journal there: it and anything after it are dropped (and the file
//! truncated), never misread. Recovery resumes the machine from `state.json`
//! ([`Machine::resume`]) and replays the records: the machine is deterministic, so the calls
//! replayed with their times give back the machine that wrote them.
//!
//! Compaction ([`Journal::compact`]) writes the next generation's file starting with a
//! [`Entry::Base`] (ranks, registrations, the next lease id), fsyncs it, writes `state.json`
//! atomically naming it, and removes the old files. When no lease is outstanding (an epoch
//! boundary under the barrier) the state holds everything the records did. Otherwise (ranks
//! inside the next epoch under the fixed order, feeders mid-lease: at thousands of ranks there
//! is no moment without a lease out) the whole machine is saved first, atomically, as
//! `machine-<generation>.json`, and the `Base` says so: recovery takes the machine from it
//! (leases, every rank's counts, the queues) and replays the records after it. A crash between
//! any two steps leaves a state and a journal that agree.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use hydrofeed_tfbridge::Piece;
use serde::{Deserialize, Serialize};
use twox_hash::XxHash3_64;

use crate::cluster::{Registration, Roster};
use crate::{Error, Machine, Result, State, Work};

/// Where a state stands in its journal: the generation of the journal file that follows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct JournalPos {
    /// `journal-<generation>.log` holds the calls after this state.
    pub generation: u64,
}

/// A rank as a compaction saves it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RankBase {
    /// Rank.
    pub rank: u32,
    /// Whether it ever joined.
    pub joined: bool,
    /// Whether its incarnation is alive.
    pub alive: bool,
    /// Its incarnation.
    pub incarnation: u64,
    /// Its host.
    pub host: String,
}

/// One record of the journal: a call that changed the job, with its time.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Entry {
    /// The first record of a generation: what the state does not hold.
    Base {
        /// The machine at this generation's start is in `machine-<generation>.json` (a
        /// compaction with leases outstanding); otherwise the state holds it.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        snapshot: bool,
        /// The next lease id.
        next_lease: u64,
        /// The service's clock.
        now_ms: u64,
        /// Each rank of the machine.
        ranks: Vec<RankBase>,
        /// The roster's registrations.
        roster: Vec<Registration>,
    },
    /// A registration (or a restarted feeder's, with what its trainer read).
    Register {
        /// The request.
        reg: Registration,
        /// `(lease, split, rows)` its trainer read after its last ack.
        consumed: Vec<(u64, u32, u64)>,
        /// Time.
        now_ms: u64,
    },
    /// A work request answered with a lease.
    Grant {
        /// Rank.
        rank: u32,
        /// Incarnation.
        incarnation: u64,
        /// Host given for locality.
        host: Option<String>,
        /// The last lease the feeder said it had.
        known: Option<u64>,
        /// The lease id it got (checked on replay).
        lease: u64,
        /// Time.
        now_ms: u64,
    },
    /// A batch of acks of one lease, as `(offset, rows)` ranges.
    Ack {
        /// Rank.
        rank: u32,
        /// Incarnation.
        incarnation: u64,
        /// Lease.
        lease: u64,
        /// Split.
        split: u32,
        /// Ranges.
        ranges: Vec<(u64, u64)>,
        /// Time.
        now_ms: u64,
    },
    /// Rows a feeder skipped as corrupt and padded (`--skip-errors`).
    Skipped {
        /// Rank.
        rank: u32,
        /// Incarnation.
        incarnation: u64,
        /// The range.
        range: crate::SkippedRange,
        /// Time.
        now_ms: u64,
    },
    /// A rank declared dead by silence.
    Dead {
        /// Rank.
        rank: u32,
        /// Time.
        now_ms: u64,
    },
}

impl Entry {
    fn now_ms(&self) -> u64 {
        match self {
            Entry::Base { now_ms, .. }
            | Entry::Register { now_ms, .. }
            | Entry::Grant { now_ms, .. }
            | Entry::Ack { now_ms, .. }
            | Entry::Skipped { now_ms, .. }
            | Entry::Dead { now_ms, .. } => *now_ms,
        }
    }
}

const HEAD: usize = 12;

/// Largest record accepted when reading (a length beyond it is a torn or corrupt header).
const MAX_RECORD: usize = 64 << 20;

/// Encodes one record.
pub fn encode(e: &Entry) -> Vec<u8> {
    let payload = serde_json::to_vec(e).expect("Entry serialises");
    let mut out = Vec::with_capacity(HEAD + payload.len());
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.extend_from_slice(&XxHash3_64::oneshot(&payload).to_le_bytes());
    out.extend_from_slice(&payload);
    out
}

/// What [`decode_all`] read: the entries, and where the valid part ends.
#[derive(Debug)]
pub struct Decoded {
    /// Entries, in order.
    pub entries: Vec<Entry>,
    /// Bytes of whole, valid records.
    pub valid_len: u64,
    /// Why reading stopped before the end (a torn or corrupt tail), with its byte offset.
    pub dropped: Option<String>,
}

/// Reads records until the end or the first one that is cut short, fails its checksum or does
/// not parse: that one and the rest are a torn tail, reported in `dropped`, never returned.
pub fn decode_all(bytes: &[u8]) -> Decoded {
    let mut at = 0usize;
    let mut entries = Vec::new();
    let mut dropped = None;
    while at < bytes.len() {
        let rest = &bytes[at..];
        if rest.len() < HEAD {
            dropped = Some(format!("a record header cut short at byte offset {at}"));
            break;
        }
        let len = u32::from_le_bytes(rest[..4].try_into().expect("4 bytes")) as usize;
        let sum = u64::from_le_bytes(rest[4..12].try_into().expect("8 bytes"));
        if len > MAX_RECORD || rest.len() < HEAD + len {
            dropped = Some(format!(
                "a record of {len} bytes cut short at byte offset {at}"
            ));
            break;
        }
        let payload = &rest[HEAD..HEAD + len];
        if XxHash3_64::oneshot(payload) != sum {
            dropped = Some(format!("a checksum mismatch at byte offset {at}"));
            break;
        }
        match serde_json::from_slice(payload) {
            Ok(e) => entries.push(e),
            Err(e) => {
                dropped = Some(format!("an unreadable record at byte offset {at}: {e}"));
                break;
            }
        }
        at += HEAD + len;
    }
    Decoded {
        entries,
        valid_len: at as u64,
        dropped,
    }
}

/// The coordinator's journal directory, open for appending.
#[derive(Debug)]
pub struct Journal {
    dir: PathBuf,
    generation: u64,
    file: File,
    /// Records since the last compaction.
    records: u64,
    /// Epoch at the last compaction.
    compacted_epoch: u32,
    /// Records kept to be written at once ([`Journal::hold`]).
    held: Option<Vec<u8>>,
    /// Bytes in the current generation's file.
    len: u64,
    /// A compaction whose machine is being saved off the service's lock.
    saving: Option<snapshot::Saving>,
}

fn io(path: &Path, e: std::io::Error) -> Error {
    Error::Io {
        loc: hydrofeed_error::Location {
            path: path.display().to_string(),
            ..Default::default()
        },
        source: e,
    }
}

/// `state.json` of a journal directory.
pub fn state_path(dir: &Path) -> PathBuf {
    dir.join("state.json")
}

fn log_path(dir: &Path, generation: u64) -> PathBuf {
    dir.join(format!("journal-{generation}.log"))
}

/// Writes `bytes` to `path` atomically ([`crate::atomic::write_atomic`]).
fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    crate::atomic::write_atomic(path, bytes).map_err(|e| io(path, e))
}

fn machine_path(dir: &Path, generation: u64) -> PathBuf {
    dir.join(format!("machine-{generation}.json"))
}

/// The `Base` entry of a machine and roster now (`snapshot`: the machine is saved beside it).
fn base_of(m: &Machine, roster: &Roster, now_ms: u64, snapshot: bool) -> Entry {
    Entry::Base {
        snapshot,
        next_lease: m.next_lease_id(),
        now_ms,
        ranks: m
            .ranks()
            .iter()
            .enumerate()
            .map(|(i, r)| RankBase {
                rank: i as u32,
                joined: r.joined,
                alive: r.alive,
                incarnation: r.incarnation,
                host: r.host.clone(),
            })
            .collect(),
        roster: roster.registrations(),
    }
}

impl Journal {
    /// Starts a journal in `dir` for a machine that is not recovered from it (a new job, or a
    /// `--resume`): generation 1 (or the one after what the directory held), its state written.
    pub fn create(dir: &Path, m: &Machine, roster: &Roster, now_ms: u64) -> Result<Self> {
        std::fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
        let generation = std::fs::read_to_string(state_path(dir))
            .ok()
            .and_then(|t| State::from_json(&t).ok())
            .and_then(|s| s.journal)
            .map_or(1, |p| p.generation + 1);
        let (file, len) = Self::start_generation(dir, generation, m, roster, now_ms, false)?;
        let mut j = Self {
            dir: dir.to_path_buf(),
            generation,
            file,
            records: 0,
            compacted_epoch: m.epoch(),
            held: None,
            len,
            saving: None,
        };
        j.publish(m)?;
        Ok(j)
    }

    fn start_generation(
        dir: &Path,
        generation: u64,
        m: &Machine,
        roster: &Roster,
        now_ms: u64,
        snapshot: bool,
    ) -> Result<(File, u64)> {
        if snapshot {
            snapshot::save_machine(dir, generation, m)?;
        }
        let base = encode(&base_of(m, roster, now_ms, snapshot));
        let f = Self::new_log(dir, generation, &[&base])?;
        Ok((f, base.len() as u64))
    }

    /// Creates `journal-<generation>.log` holding `parts`, durable with its directory entry.
    fn new_log(dir: &Path, generation: u64, parts: &[&[u8]]) -> Result<File> {
        let p = log_path(dir, generation);
        let mut f = File::create(&p).map_err(|e| io(&p, e))?;
        parts
            .iter()
            .try_for_each(|b| f.write_all(b))
            .and_then(|()| f.sync_data())
            .map_err(|e| io(&p, e))?;
        File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| io(dir, e))?;
        Ok(f)
    }

    /// Writes `state.json` naming this generation, then removes the other generations' files.
    fn publish(&mut self, m: &Machine) -> Result<()> {
        let mut st = m.state();
        st.journal = Some(JournalPos {
            generation: self.generation,
        });
        write_atomic(&state_path(&self.dir), st.to_json().as_bytes())?;
        self.remove_others();
        Ok(())
    }

    fn remove_others(&self) {
        let Ok(rd) = std::fs::read_dir(&self.dir) else {
            return;
        };
        let mine = format!("journal-{}.log", self.generation);
        let snapshot = format!("machine-{}.json", self.generation);
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let log = name.starts_with("journal-") && name.ends_with(".log") && name != mine;
            let old = name.starts_with("machine-") && name.ends_with(".json") && name != snapshot;
            // A state prepared by a switch that did not happen (overtaken, or cut by a crash).
            let prepared = name.starts_with(snapshot::PREPARED)
                && name.ends_with(".next")
                && self.saving.is_none();
            if log || old || prepared {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }

    /// Appends `e` (not yet durable: [`Journal::sync`] before answering the call); between
    /// [`Journal::hold`] and [`Journal::release`] it is kept and written with the others.
    pub fn append(&mut self, e: &Entry) -> Result<()> {
        self.records += 1;
        match &mut self.held {
            Some(buf) => {
                buf.extend_from_slice(&encode(e));
                Ok(())
            }
            None => {
                let p = log_path(&self.dir, self.generation);
                let b = encode(e);
                self.file.write_all(&b).map_err(|e| io(&p, e))?;
                self.len += b.len() as u64;
                Ok(())
            }
        }
    }

    /// Keeps the records appended from now on until [`Journal::release`], which writes them
    /// at once (a session message's acks and grant: one write, not one each).
    pub fn hold(&mut self) {
        self.held.get_or_insert_with(Vec::new);
    }

    /// Writes the records kept since [`Journal::hold`] and appends one by one again.
    pub fn release(&mut self) -> Result<()> {
        match self.held.take() {
            Some(buf) if !buf.is_empty() => {
                let p = log_path(&self.dir, self.generation);
                self.file.write_all(&buf).map_err(|e| io(&p, e))?;
                self.len += buf.len() as u64;
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// Whether records are being kept ([`Journal::hold`]).
    pub fn holding(&self) -> bool {
        self.held.is_some()
    }

    /// Makes what was appended durable (fsync).
    pub fn sync(&mut self) -> Result<()> {
        let p = log_path(&self.dir, self.generation);
        self.file.sync_data().map_err(|e| io(&p, e))
    }

    /// A second handle on the current generation's file, with its path: a group commit
    /// makes the appended records durable through it outside the service's lock (what
    /// [`Journal::sync`] does, on another thread, for many calls at once).
    pub fn sync_handle(&self) -> Result<(File, PathBuf)> {
        let p = log_path(&self.dir, self.generation);
        let f = self.file.try_clone().map_err(|e| io(&p, e))?;
        Ok((f, p))
    }

    /// Compacts when it is worth it: more than `max_records` records, or an epoch closed
    /// since the last compaction and no lease is outstanding (the state alone then holds what
    /// the records did: no machine to save, done at once). With leases outstanding the
    /// machine is copied and saved off the lock, and a later call switches to the new
    /// generation once it is saved (`journal_snapshot.rs`). Returns whether it switched.
    pub fn maybe_compact(
        &mut self,
        m: &Machine,
        roster: &Roster,
        now_ms: u64,
        max_records: u64,
    ) -> Result<bool> {
        if self.saving.is_some() {
            return self.finish_saved();
        }
        let closed = m.epoch() != self.compacted_epoch && m.outstanding() == 0;
        if self.records == 0 || !(closed || self.records >= max_records) {
            return Ok(false);
        }
        if m.outstanding() > 0 {
            self.start_saving(m, roster, now_ms)?;
            return Ok(false);
        }
        self.compact(m, roster, now_ms)?;
        Ok(true)
    }

    /// Starts the next generation from the machine now: the machine saved when a lease is
    /// outstanding, then its file with a `Base` record, then the state naming it, then the
    /// old files removed.
    pub fn compact(&mut self, m: &Machine, roster: &Roster, now_ms: u64) -> Result<()> {
        // A compaction being saved off the lock is overtaken: it named the next generation,
        // this one takes the one after (its files are removed at the next switch).
        let g = self.generation + if self.saving.take().is_some() { 2 } else { 1 };
        let snapshot = m.outstanding() > 0;
        let (file, len) = Self::start_generation(&self.dir, g, m, roster, now_ms, snapshot)?;
        self.generation = g;
        self.file = file;
        self.len = len;
        // Records kept for the old generation: the new one's state holds what they said.
        if let Some(buf) = &mut self.held {
            buf.clear();
        }
        self.records = 0;
        self.compacted_epoch = m.epoch();
        self.publish(m)
    }

    /// Whether a compaction's machine is being saved off the lock ([`Journal::maybe_compact`]).
    pub fn saving(&self) -> bool {
        self.saving.is_some()
    }

    /// The generation being appended to.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Records appended since the last compaction.
    pub fn records(&self) -> u64 {
        self.records
    }
}

/// A registration, as the service does it and as the journal replays it: the roster (a rank
/// declared dead may be taken over from another host), then the machine (a restarted feeder's
/// `consumed` counts as acks first). Returns the rank and its incarnation (1 for ranks
/// outside the data workers: parameter servers, evaluators).
pub fn register(
    m: &mut Machine,
    roster: &mut Roster,
    reg: &Registration,
    consumed: &[Piece],
    now_ms: u64,
) -> Result<(u32, u64)> {
    let w = m.config().workers;
    let dead: Vec<bool> = m.ranks().iter().map(|r| r.joined && !r.alive).collect();
    let gone = |r: u32| r < w && dead[r as usize];
    let rank = roster.register_replacing(reg.clone(), gone)?;
    let incarnation = if rank < w {
        m.rejoin(rank, &reg.host, now_ms, consumed)?
    } else {
        1
    };
    Ok((rank, incarnation))
}

/// What [`recover`] found.
#[derive(Debug)]
pub struct Recovered {
    /// The machine as the journal left it.
    pub machine: Machine,
    /// The roster.
    pub roster: Roster,
    /// The journal, open for appending after the last valid record.
    pub journal: Journal,
    /// The last time recorded (the service's clock goes on from it).
    pub now_ms: u64,
    /// Records replayed.
    pub replayed: usize,
    /// A torn tail dropped, with its byte offset.
    pub dropped: Option<String>,
}

/// Replays `entries` on `m` and `roster`. Errors name the record that does not replay.
pub fn replay(m: &mut Machine, roster: &mut Roster, entries: &[Entry]) -> Result<u64> {
    let mut now = 0;
    for (i, e) in entries.iter().enumerate() {
        now = now.max(e.now_ms());
        let bad = |what: String| Error::Coordinator(format!("journal record {i}: {what}"));
        match e {
            Entry::Base {
                next_lease,
                ranks,
                roster: regs,
                ..
            } => {
                for r in ranks {
                    m.restore_rank(r.rank, r.joined, r.alive, r.incarnation, &r.host)
                        .map_err(|e| bad(e.to_string()))?;
                }
                for reg in regs {
                    roster
                        .register(reg.clone())
                        .map_err(|e| bad(e.to_string()))?;
                }
                m.set_next_lease_id(*next_lease);
            }
            Entry::Register {
                reg,
                consumed,
                now_ms,
            } => {
                let pieces: Vec<Piece> = consumed
                    .iter()
                    .map(|&(lease, split, rows)| Piece { lease, split, rows })
                    .collect();
                register(m, roster, reg, &pieces, *now_ms).map_err(|e| bad(e.to_string()))?;
            }
            Entry::Grant {
                rank,
                incarnation,
                host,
                known,
                lease,
                now_ms,
            } => {
                let w = m
                    .request_work_after(*rank, *incarnation, host.as_deref(), *known, *now_ms)
                    .map_err(|e| bad(e.to_string()))?;
                match w {
                    Work::Lease(l) if l.lease == *lease => {}
                    w => {
                        return Err(bad(format!(
                            "rank {rank} was granted lease {lease}; the replay gives {w:?}"
                        )))
                    }
                }
            }
            Entry::Ack {
                rank,
                incarnation,
                lease,
                split,
                ranges,
                now_ms,
            } => m
                .ack_ranges(*rank, *incarnation, *lease, *split, ranges, *now_ms)
                .map_err(|e| bad(e.to_string()))?,
            Entry::Skipped {
                rank,
                incarnation,
                range,
                now_ms,
            } => m
                .skipped(*rank, *incarnation, range.clone(), *now_ms)
                .map_err(|e| bad(e.to_string()))?,
            Entry::Dead { rank, .. } => {
                m.declare_dead(*rank);
            }
        }
    }
    Ok(now)
}

/// Whether `dir` holds a journaled job to recover.
pub fn exists(dir: &Path) -> bool {
    state_path(dir).is_file()
}

/// Recovers the job in `dir`: `resume` makes the machine from the state (the caller's plan and
/// checks, as for `--resume`), then the journal of the state's generation is replayed; a torn
/// tail is dropped and the file cut there.
pub fn recover(
    dir: &Path,
    resume: impl FnOnce(&State) -> Result<Machine>,
    roster: Roster,
) -> Result<Recovered> {
    let sp = state_path(dir);
    let text = std::fs::read_to_string(&sp).map_err(|e| io(&sp, e))?;
    let st = State::from_json(&text)
        .map_err(|e| Error::Coordinator(format!("{}: {e}", sp.display())))?;
    let Some(pos) = st.journal else {
        return Err(Error::Coordinator(format!(
            "{}: a state without a journal position (not written by --journal)",
            sp.display()
        )));
    };
    let mut machine = resume(&st)?;
    let mut roster = roster;
    let lp = log_path(dir, pos.generation);
    let mut f = OpenOptions::new()
        .read(true)
        .write(true)
        .open(&lp)
        .map_err(|e| io(&lp, e))?;
    let mut bytes = Vec::new();
    f.read_to_end(&mut bytes).map_err(|e| io(&lp, e))?;
    let d = decode_all(&bytes);
    if let Some(Entry::Base { snapshot: true, .. }) = d.entries.first() {
        let mp = machine_path(dir, pos.generation);
        let saved = std::fs::read(&mp).map_err(|e| io(&mp, e))?;
        machine = Machine::restore(&saved, &machine)
            .map_err(|e| Error::Coordinator(format!("{}: {e}", mp.display())))?;
    }
    let now_ms = replay(&mut machine, &mut roster, &d.entries)
        .map_err(|e| Error::Coordinator(format!("{}: {e}", lp.display())))?;
    if d.dropped.is_some() {
        f.set_len(d.valid_len)
            .and_then(|()| f.sync_data())
            .map_err(|e| io(&lp, e))?;
    }
    f.seek(SeekFrom::End(0)).map_err(|e| io(&lp, e))?;
    let journal = Journal {
        dir: dir.to_path_buf(),
        generation: pos.generation,
        file: f,
        records: d.entries.len() as u64,
        compacted_epoch: st.epoch,
        held: None,
        len: d.valid_len,
        saving: None,
    };
    journal.remove_others();
    Ok(Recovered {
        machine,
        roster,
        journal,
        now_ms,
        replayed: d.entries.len(),
        dropped: d.dropped,
    })
}

#[path = "journal_snapshot.rs"]
mod snapshot;

#[cfg(test)]
#[path = "journal_tests.rs"]
mod tests;
