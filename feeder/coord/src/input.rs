//! The input a [`State`] was made from, and a resume over an input that changed since.
//!
//! A state names its rows by split id and row, and the fixed order's position by stream
//! positions: both mean something only over the plan they were made from. So the state
//! carries an [`InputFingerprint`] (per file: its path below the input, size, modification
//! time and rows per split, and a digest of that listing). [`resume_over`] compares it with
//! the input of the resuming run: the same input resumes as saved; another is refused, naming
//! the first file that differs, unless the caller allows a changed input. Then the acked rows
//! of the files that did not change are carried to their split ids in the new plan (under the
//! fixed order, the acked rows are worked out from the saved stream positions first), changed
//! and new files are read whole, the rows of removed files are gone, and the rest of the epoch
//! is dealt by the ledger (the dynamic order); the fixed order takes over again at the next
//! epoch. Every acked row stays acked: nothing comes twice.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::hash::Hasher;

use serde::{Deserialize, Serialize};
use twox_hash::XxHash3_64;

use crate::ledger::Ledger;
use crate::order::{ChunkStream, EpochSeq, Segment};
use crate::{Error, OrderState, Result, State};

/// What an input was when a state was made from it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum InputFingerprint {
    /// Files listed under the input (a directory, a glob or one file).
    Files {
        /// xxHash3-64 (hex) of the listing below: two inputs with the same digest are the same.
        digest: String,
        /// In listing order (empty files included), which is split order.
        files: Vec<FileEntry>,
        /// The table snapshot the files are (a Delta table's live files at a version): a
        /// resume plans that snapshot again, whatever was committed since.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        table: Option<TableRef>,
        /// The filter the rows were planned under, as written: positions count the rows that
        /// pass it, so a resume must read under the same one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        filter: Option<String>,
    },
}

/// A table snapshot, as a state records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableRef {
    /// `"delta"`.
    pub kind: String,
    /// The table's identity (Delta: `metaData.id`).
    pub id: String,
    /// The version (Delta) read.
    pub version: u64,
}

/// One file of a [`InputFingerprint::Files`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileEntry {
    /// Path below the input root (the file's name for a single-file input).
    pub path: String,
    /// Bytes.
    pub size: u64,
    /// Modification time, ms since the Unix epoch (local files and HDFS both tell it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub modified_ms: Option<u64>,
    /// Rows of each of its splits, in split order.
    pub split_rows: Vec<u64>,
    /// Rows of the units (row groups, stripes) of each split that holds more than one, in
    /// split order (an empty list: one unit); empty when every split is one unit. The fixed
    /// order (version 2) cuts its lanes at unit starts, so a carried-over state needs them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub split_units: Vec<Vec<u64>>,
}

impl FileEntry {
    /// The same file as `other` (path, size, time, splits): what the digest covers.
    fn same_file(&self, other: &Self) -> bool {
        (&self.path, self.size, self.modified_ms, &self.split_rows)
            == (
                &other.path,
                other.size,
                other.modified_ms,
                &other.split_rows,
            )
    }
}

impl InputFingerprint {
    /// The fingerprint of `files` (listing order; `path` as listed, made relative to `root`).
    pub fn of_files(root: &str, files: Vec<FileEntry>) -> Self {
        let root = root.trim_end_matches('/');
        let files: Vec<FileEntry> = files
            .into_iter()
            .map(|mut f| {
                f.path = relative(root, &f.path);
                f
            })
            .collect();
        let mut h = XxHash3_64::with_seed(0);
        for f in &files {
            h.write(f.path.as_bytes());
            h.write_u8(0);
            h.write_u64(f.size);
            h.write_u64(f.modified_ms.unwrap_or(u64::MAX));
            h.write_u64(f.split_rows.len() as u64);
            for &r in &f.split_rows {
                h.write_u64(r);
            }
        }
        Self::Files {
            digest: format!("{:016x}", h.finish()),
            files,
            table: None,
            filter: None,
        }
    }

    /// The same fingerprint, of the rows that pass `filter`.
    pub fn with_filter(mut self, f: Option<String>) -> Self {
        match &mut self {
            Self::Files { filter, .. } => *filter = f,
        }
        self
    }

    /// The filter the rows were planned under.
    pub fn filter(&self) -> Option<&str> {
        match self {
            Self::Files { filter, .. } => filter.as_deref(),
        }
    }

    /// The same fingerprint, of the table snapshot `t`.
    pub fn with_table(self, t: Option<TableRef>) -> Self {
        match self {
            Self::Files {
                digest,
                files,
                filter,
                ..
            } => Self::Files {
                digest,
                files,
                table: t,
                filter,
            },
        }
    }

    /// The table snapshot, when the input is a table.
    pub fn table(&self) -> Option<&TableRef> {
        match self {
            Self::Files { table, .. } => table.as_ref(),
        }
    }

    fn files(&self) -> &[FileEntry] {
        match self {
            Self::Files { files, .. } => files,
        }
    }

    fn digest(&self) -> &str {
        match self {
            Self::Files { digest, .. } => digest,
        }
    }

    /// How `now` differs from `self`, file by file in path order (empty: the same input).
    pub fn changes(&self, now: &Self) -> Vec<Change> {
        if self.digest() == now.digest() && self.files() == now.files() {
            return Vec::new();
        }
        let was: BTreeMap<&str, &FileEntry> =
            self.files().iter().map(|f| (f.path.as_str(), f)).collect();
        let is: BTreeMap<&str, &FileEntry> =
            now.files().iter().map(|f| (f.path.as_str(), f)).collect();
        let mut paths: Vec<&str> = was.keys().chain(is.keys()).copied().collect();
        paths.sort_unstable();
        paths.dedup();
        paths
            .into_iter()
            .filter_map(|p| {
                let path = p.to_string();
                match (was.get(p), is.get(p)) {
                    (Some(_), None) => Some(Change::Missing { path }),
                    (None, Some(_)) => Some(Change::New { path }),
                    (Some(a), Some(b)) if a.size != b.size => Some(Change::Size {
                        path,
                        was: a.size,
                        now: b.size,
                    }),
                    (Some(a), Some(b)) if a.modified_ms != b.modified_ms => {
                        Some(Change::Modified { path })
                    }
                    (Some(a), Some(b)) if a.split_rows != b.split_rows => Some(Change::Splits {
                        path,
                        was: a.split_rows.iter().sum(),
                        now: b.split_rows.iter().sum(),
                    }),
                    (Some(a), Some(b)) if a.split_units != b.split_units => {
                        Some(Change::Units { path })
                    }
                    _ => None,
                }
            })
            .collect()
    }
}

fn relative(root: &str, path: &str) -> String {
    match path.strip_prefix(root) {
        Some(rest) if rest.starts_with('/') => rest.trim_start_matches('/').to_string(),
        Some("") | None => path.rsplit('/').next().unwrap_or(path).to_string(),
        Some(_) => path.to_string(),
    }
}

/// One way a file of the resumed input differs from the saved one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// In the saved input, not in this one (removed or renamed).
    Missing {
        /// Path below the input.
        path: String,
    },
    /// In this input only.
    New {
        /// Path below the input.
        path: String,
    },
    /// Another size.
    Size {
        /// Path below the input.
        path: String,
        /// Bytes then.
        was: u64,
        /// Bytes now.
        now: u64,
    },
    /// The same size, another modification time.
    Modified {
        /// Path below the input.
        path: String,
    },
    /// The same splits, their rows cut into other units (row groups or stripes then, the
    /// whole file now, or the reverse: a plan made by another build). The fixed order's lanes
    /// follow the units, so its saved positions would name other rows.
    Units {
        /// Path below the input.
        path: String,
    },
    /// The same bytes, cut into other splits (other read options).
    Splits {
        /// Path below the input.
        path: String,
        /// Rows then.
        was: u64,
        /// Rows now.
        now: u64,
    },
}

impl Change {
    /// The file's path below the input.
    pub fn path(&self) -> &str {
        match self {
            Self::Missing { path }
            | Self::New { path }
            | Self::Size { path, .. }
            | Self::Modified { path }
            | Self::Units { path }
            | Self::Splits { path, .. } => path,
        }
    }
}

impl fmt::Display for Change {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Missing { path } => write!(f, "{path}: missing (in the saved input, not now)"),
            Self::New { path } => write!(f, "{path}: new (not in the saved input)"),
            Self::Size { path, was, now } => {
                write!(f, "{path}: size changed ({was} bytes then, {now} now)")
            }
            Self::Modified { path } => write!(f, "{path}: modified (same size, new mtime)"),
            Self::Units { path } => write!(
                f,
                "{path}: planned into other units (the same rows, cut at other row groups or \
                 stripes: a plan of another build; the acked rows are kept when allowed)"
            ),
            Self::Splits { path, was, now } => write!(
                f,
                "{path}: planned into other splits ({was} rows then, {now} now: other read \
                 options)"
            ),
        }
    }
}

/// What [`resume_over`] decided.
#[derive(Debug, Clone)]
pub enum Resume {
    /// The input is the saved one (or the state has no fingerprint: see the note): resume the
    /// state as it is.
    AsSaved {
        /// Set when the input could not be checked (a version-1 state).
        note: Option<String>,
    },
    /// The input changed and a changed input was allowed: resume this state instead, made
    /// over the new plan.
    Replanned {
        /// The state over the new plan.
        state: Box<State>,
        /// What was re-planned, to print.
        note: String,
    },
}

/// Checks the input of a resuming run (`now`) against the one `state` was made from. Refuses
/// a changed input, naming the first file that differs, unless `allow_changed`; then returns
/// the state carried over to the new plan (see the module docs).
pub fn resume_over(state: &State, now: &InputFingerprint, allow_changed: bool) -> Result<Resume> {
    let Some(saved) = &state.input else {
        return Ok(Resume::AsSaved {
            note: Some(format!(
                "the state (version {}) carries no input fingerprint: the input cannot be \
                 checked against the one it was saved from",
                state.version
            )),
        });
    };
    if saved.filter() != now.filter() {
        let show = |f: Option<&str>| match f {
            Some(f) => format!("--filter {f:?}"),
            None => "no filter".to_string(),
        };
        return Err(Error::Coordinator(format!(
            "the state was saved reading with {}, this run reads with {}: its positions count \
             the rows that pass the saved one; resume with the same filter",
            show(saved.filter()),
            show(now.filter())
        )));
    }
    let changes = saved.changes(now);
    if changes.is_empty() {
        return Ok(Resume::AsSaved { note: None });
    }
    if !allow_changed {
        let more = match changes.len() {
            1 => String::new(),
            n => format!(" (and {} more file(s))", n - 1),
        };
        return Err(Error::Coordinator(format!(
            "the input changed since the state was saved: {}{more}; resuming would deliver \
             rows of other files at the saved positions. Resume over the saved input, or pass \
             --allow-changed-input to resume exactly once over the files that did not change \
             (changed and new files are read whole, removed ones are gone)",
            changes[0]
        )));
    }
    let state = Box::new(replan(state, saved, now)?);
    let names: Vec<String> = changes.iter().map(ToString::to_string).collect();
    let note = format!(
        "input changed since the state was saved; re-planned {} file(s): {}. The acked rows of \
         the other files are kept; the rest of epoch {} is dealt by the ledger{}",
        changes.len(),
        names.join("; "),
        state.epoch,
        if state.order.is_some() {
            ", and the fixed order resumes at the next epoch"
        } else {
            ""
        }
    );
    Ok(Resume::Replanned { state, note })
}

/// `state` carried over from the plan of `saved` to the plan of `now`.
fn replan(state: &State, saved: &InputFingerprint, now: &InputFingerprint) -> Result<State> {
    let old_rows: Vec<u64> = saved
        .files()
        .iter()
        .flat_map(|f| f.split_rows.iter().copied())
        .collect();
    if old_rows.len() != state.splits as usize || old_rows.iter().sum::<u64>() != state.total_rows {
        return Err(Error::Coordinator(format!(
            "state's input fingerprint lists {} splits / {} rows, its plan {} / {}: the state \
             is damaged",
            old_rows.len(),
            old_rows.iter().sum::<u64>(),
            state.splits,
            state.total_rows
        )));
    }
    // Acked intervals by data epoch and old split.
    let mut acked: BTreeMap<u32, HashMap<u32, Vec<(u64, u64)>>> = BTreeMap::new();
    for ls in &state.ledgers {
        let l = Ledger::from_state(ls, &old_rows)
            .map_err(|e| Error::Coordinator(format!("state, data epoch {}: {e}", ls.data_epoch)))?;
        let m = acked.entry(ls.data_epoch).or_default();
        for (s, &n) in old_rows.iter().enumerate() {
            let s = s as u32;
            let mut at = 0;
            let mut v = Vec::new();
            for (a, b) in l.gaps(s, n) {
                if a > at {
                    v.push((at, a));
                }
                at = b;
            }
            if at < n {
                v.push((at, n));
            }
            if !v.is_empty() {
                m.entry(s).or_default().extend(v);
            }
        }
    }
    if let Some(os) = state.order.as_ref().filter(|o| !o.by_ledger) {
        if !state.finished {
            let old_units: Vec<Vec<u64>> = saved
                .files()
                .iter()
                .flat_map(|f| {
                    (0..f.split_rows.len())
                        .map(|i| f.split_units.get(i).cloned().unwrap_or_default())
                })
                .collect();
            for (d, m) in fixed_acked(state, os, &old_rows, &old_units) {
                let e = acked.entry(d).or_default();
                for (s, v) in m {
                    e.entry(s).or_default().extend(v);
                }
            }
        }
    }
    // Old split id -> new split id, for the files that did not change.
    let mut new_first = HashMap::new();
    let mut at = 0u32;
    for f in now.files() {
        new_first.insert(f.path.as_str(), (at, f));
        at += f.split_rows.len() as u32;
    }
    let new_rows: Vec<u64> = now
        .files()
        .iter()
        .flat_map(|f| f.split_rows.iter().copied())
        .collect();
    let mut map = HashMap::new();
    let mut old_at = 0u32;
    for f in saved.files() {
        if let Some(&(first, g)) = new_first.get(f.path.as_str()) {
            if g.same_file(f) {
                for i in 0..f.split_rows.len() as u32 {
                    map.insert(old_at + i, first + i);
                }
            }
        }
        old_at += f.split_rows.len() as u32;
    }
    let mut ledgers = Vec::new();
    for (d, m) in acked {
        let mut l = Ledger::new(new_rows.len());
        let mut splits: Vec<_> = m.into_iter().collect();
        splits.sort_unstable_by_key(|(s, _)| *s);
        for (s, mut v) in splits {
            let Some(&t) = map.get(&s) else { continue };
            v.sort_unstable();
            for (a, b) in merge(v) {
                l.add(t, a, b, new_rows[t as usize]).map_err(|(a, b)| {
                    Error::Coordinator(format!(
                        "state, data epoch {d}: split {s} rows [{a}, {b}) acked twice"
                    ))
                })?;
            }
        }
        ledgers.push(l.to_state(d));
    }
    Ok(State {
        splits: new_rows.len() as u32,
        total_rows: new_rows.iter().sum(),
        ledgers,
        order: state.order.as_ref().map(|o| OrderState {
            spec: o.spec,
            workers: o.workers,
            ranks: Vec::new(),
            rest: Vec::new(),
            by_ledger: true,
            next: None,
        }),
        input: Some(now.clone()),
        ..state.clone()
    })
}

/// The rows the fixed order's saved position counts as acked: every row of each data epoch
/// it dealt, less the rows of its segments (what the ranks had left, and the rest).
fn fixed_acked(
    state: &State,
    os: &OrderState,
    split_rows: &[u64],
    units: &[Vec<u64>],
) -> BTreeMap<u32, HashMap<u32, Vec<(u64, u64)>>> {
    // The next epoch's deal, when a rank was inside it: its rows less those segments were acked.
    let next = os
        .next
        .iter()
        .flat_map(|n| n.ranks.iter().flatten().chain(&n.rest));
    let segs: Vec<&Segment> = os
        .ranks
        .iter()
        .flatten()
        .chain(&os.rest)
        .chain(next)
        .collect();
    let mut epochs: Vec<u32> = segs.iter().map(|s| s.data_epoch).collect();
    if epochs.is_empty() {
        epochs.push(state.epoch);
    }
    epochs.sort_unstable();
    epochs.dedup();
    let mut out = BTreeMap::new();
    for d in epochs {
        let seq = EpochSeq::with_units(split_rows, units, state.seed, state.shuffle, d);
        let mut left: HashMap<u32, Vec<(u64, u64)>> = HashMap::new();
        for seg in segs.iter().filter(|s| s.data_epoch == d && !s.is_empty()) {
            let cs = ChunkStream::new(
                &seq,
                os.spec,
                state.seed,
                d,
                seg.workers,
                state.batch_size,
                seg.chunk,
            );
            for k in cs.window_of(seg.from)..=cs.window_of(seg.to - 1) {
                let w = cs.window(&seq, k);
                let whole = seg.from <= w.start && w.start + w.rows <= seg.to;
                if whole {
                    for p in w.lanes.iter().flatten() {
                        left.entry(p.split)
                            .or_default()
                            .push((p.first, p.first + p.rows));
                    }
                    continue;
                }
                let rows = w.rows();
                for (i, &j) in cs.permutation(k).iter().enumerate() {
                    let pos = w.start + i as u64;
                    if pos >= seg.from && pos < seg.to {
                        let (s, r) = rows[j as usize];
                        left.entry(s).or_default().push((r, r + 1));
                    }
                }
            }
        }
        let mut m = HashMap::new();
        for (s, &n) in split_rows.iter().enumerate() {
            let s = s as u32;
            let mut v = left.remove(&s).unwrap_or_default();
            v.sort_unstable();
            let mut done = Vec::new();
            let mut at = 0;
            for (a, b) in merge(v) {
                if a > at {
                    done.push((at, a));
                }
                at = at.max(b);
            }
            if at < n {
                done.push((at, n));
            }
            if !done.is_empty() {
                m.insert(s, done);
            }
        }
        out.insert(d, m);
    }
    out
}

/// Sorted intervals merged where they touch or overlap.
fn merge(v: Vec<(u64, u64)>) -> Vec<(u64, u64)> {
    let mut out: Vec<(u64, u64)> = Vec::with_capacity(v.len());
    for (a, b) in v {
        match out.last_mut() {
            Some(l) if a <= l.1 => l.1 = l.1.max(b),
            _ => out.push((a, b)),
        }
    }
    out
}
