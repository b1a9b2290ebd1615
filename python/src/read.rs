//! `hydrofeed.read`: an input's batches as `pyarrow.RecordBatch`es, in this process.
//!
//! Planning the input and reading each batch may wait on storage (an HDFS NameNode or
//! DataNode, up to its deadline), so both run on a thread of their own through
//! [`crate::blocking`]: Ctrl-C is answered while they wait.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use arrow_array::RecordBatch;
use hydrofeed_format::split::Format;
use hydrofeed_format::{
    open_split, plan, OnError, OrcTimestamps, Plan, ReadOptions, Rebatcher, SkipStats, SkippedRows,
    SplitReader,
};
use hydrofeed_storage::{open_storage, Storage};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use pyo3_arrow::PyRecordBatch;

use crate::blocking::{self, Owner, Pending};
use crate::error;

struct State {
    next_split: usize,
    current: Option<Box<dyn SplitReader>>,
    /// How many of `current`'s skipped ranges are in `skipped` already.
    current_seen: usize,
    /// `batch_size`: rows carried over between splits.
    pending: Rebatcher,
    /// Every range of rows `on_error="skip"` left out so far, with the split it was in.
    skipped: Vec<(u32, String, SkippedRows)>,
    /// What the splits read to their end skipped (the current one's is its reader's).
    skip_totals: SkipStats,
}

/// The most ranges `Reader.skipped` lists (an input whose every row is bad would otherwise keep
/// a range a row); the rest are counted in `skipped_records` only.
const LISTED_SKIPS: usize = 10_000;

impl State {
    /// What was skipped so far: the splits read to their end, and the current one.
    fn skip_stats(&self) -> SkipStats {
        let now = self
            .current
            .as_ref()
            .map(|r| r.skipped())
            .unwrap_or_default();
        SkipStats {
            records: self.skip_totals.records + now.records,
            blocks: self.skip_totals.blocks + now.blocks,
        }
    }

    /// Ends the current split, its skip counts kept.
    fn end_split(&mut self) {
        self.skip_totals = self.skip_stats();
        self.current = None;
    }

    /// Takes the current split's (`split`'s) skipped ranges not yet taken into `skipped`.
    fn take_skips(&mut self, split: Option<&hydrofeed_format::split::Split>) {
        let (Some(r), Some(split)) = (self.current.as_ref(), split) else {
            return;
        };
        let all = r.skipped_rows();
        for s in &all[self.current_seen.min(all.len())..] {
            if self.skipped.len() < LISTED_SKIPS {
                self.skipped.push((split.id, split.path.clone(), s.clone()));
            }
        }
        self.current_seen = all.len();
    }
}

/// What a reader reads and where it stands: shared with the thread that reads a batch.
struct Source {
    storage: Arc<dyn Storage>,
    plan: Arc<Plan>,
    opts: ReadOptions,
    /// Rows per yielded batch across splits (`None`: the readers' batches as they come).
    batch_size: Option<usize>,
    state: Mutex<State>,
}

/// A batch being read, or read: what [`Source::next_batch`] returns.
type Next = hydrofeed_error::Result<Option<RecordBatch>>;

/// Iterator of `pyarrow.RecordBatch` over every split of an input, in plan order.
#[pyclass(module = "hydrofeed._native")]
pub struct Reader {
    source: Arc<Source>,
    /// Reads of `__next__` calls that a signal interrupted (Ctrl-C), oldest first: the next
    /// calls return their batches before reading on, so an interrupt that is caught loses no
    /// rows.
    interrupted: Mutex<VecDeque<Pending<Next>>>,
    owner: Owner,
}

pub(crate) fn parse_format(f: Option<&str>) -> PyResult<Option<Format>> {
    Ok(match f {
        None => None,
        Some("parquet") => Some(Format::Parquet),
        Some("orc") => Some(Format::Orc),
        Some("avro") => Some(Format::Avro),
        Some("tfrecord") => Some(Format::Tfrecord),
        Some(other) => {
            return Err(PyValueError::new_err(format!(
                "format={other:?}: expected 'parquet', 'orc', 'avro' or 'tfrecord'"
            )))
        }
    })
}

/// `orc_timestamps=`: how ORC timestamps of a writer's zone other than UTC are read.
pub(crate) fn parse_orc_timestamps(s: &str) -> PyResult<OrcTimestamps> {
    match s {
        "instant" => Ok(OrcTimestamps::Instant),
        "wall" => Ok(OrcTimestamps::Wall),
        other => Err(PyValueError::new_err(format!(
            "orc_timestamps={other:?}: expected 'instant' or 'wall'"
        ))),
    }
}

pub(crate) fn parse_on_error(s: &str) -> PyResult<OnError> {
    match s {
        "raise" => Ok(OnError::Raise),
        "skip" => Ok(OnError::Skip),
        other => Err(PyValueError::new_err(format!(
            "on_error={other:?}: expected 'raise' or 'skip'"
        ))),
    }
}

impl Source {
    /// The next batch of a split as the reader yields it.
    fn next_read(&self, st: &mut State) -> hydrofeed_error::Result<Option<RecordBatch>> {
        loop {
            if let Some(r) = st.current.as_mut() {
                let next = r.next();
                let split = st.next_split.checked_sub(1).map(|i| &self.plan.splits[i]);
                st.take_skips(split);
                match next {
                    Some(Ok(b)) if b.num_rows() == 0 => continue,
                    Some(Ok(b)) => return Ok(Some(b)),
                    Some(Err(e)) => {
                        st.end_split();
                        st.next_split = self.plan.splits.len();
                        return Err(e);
                    }
                    None => st.end_split(),
                }
            }
            let Some(split) = self.plan.splits.get(st.next_split) else {
                return Ok(None);
            };
            st.next_split += 1;
            st.current = Some(open_split(&self.storage, &self.plan, split, &self.opts)?);
            st.current_seen = 0;
        }
    }

    fn next_batch(&self) -> hydrofeed_error::Result<Option<RecordBatch>> {
        let mut st = self.state.lock().map_err(|_| {
            hydrofeed_error::Error::Internal("reader poisoned by an earlier panic".into())
        })?;
        let Some(n) = self.batch_size else {
            return self.next_read(&mut st);
        };
        while st.pending.rows() < n {
            match self.next_read(&mut st)? {
                Some(b) => st.pending.push(b),
                None => break,
            }
        }
        st.pending.take(n)
    }

    /// The next batch when it needs no reading (`batch_size` rows are rebatched already), so
    /// no thread is started for it; `None` when it needs reading, or another call is reading.
    fn ready(&self, py: Python<'_>) -> Option<Next> {
        let n = self.batch_size?;
        let mut st = self.state.try_lock().ok()?;
        if st.pending.rows() < n {
            return None;
        }
        let pending = &mut st.pending;
        // Not a blocking call (it only concatenates rows already in memory, so it needs no
        // Ctrl-C check and no thread of its own), but no reason to hold the GIL either.
        Some(py.detach(|| pending.take(n)))
    }
}

impl Reader {
    /// `f` of the reader's state; a read in flight holds it, so it is waited for without the
    /// GIL.
    fn with_state<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&State) -> T + Send,
    ) -> PyResult<T> {
        let source = &self.source;
        py.detach(|| source.state.lock().map(|st| f(&st)).map_err(|_| ()))
            .map_err(|_| PyRuntimeError::new_err("reader poisoned by an earlier panic"))
    }

    /// The next batch. It is read on a thread of its own, so Ctrl-C is answered while it
    /// reads (a read from HDFS may wait up to its deadline); a read that a signal interrupted
    /// goes on, and the next call returns its batch.
    fn next_batch(&self, py: Python<'_>) -> PyResult<Next> {
        let earlier = self
            .interrupted
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pop_front();
        let read = match earlier {
            Some(read) => read,
            None => {
                if let Some(b) = self.source.ready(py) {
                    return Ok(b);
                }
                let source = Arc::clone(&self.source);
                blocking::spawn("the next batch of hydrofeed.read", move || {
                    source.next_batch()
                })?
            }
        };
        match read.wait(py) {
            Ok(b) => Ok(b),
            Err(e) => {
                // Interrupted (Ctrl-C): the read goes on; a later call collects its batch.
                self.interrupted
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push_back(read);
                Err(e)
            }
        }
    }
}

#[pymethods]
impl Reader {
    #[new]
    #[pyo3(signature = (path, columns=None, format=None, on_error="raise", batch_rows=65536, batch_size=None, schema=None, orc_timestamps="instant", snapshot=None, filter=None, images=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        path: &str,
        columns: Option<Vec<String>>,
        format: Option<&str>,
        on_error: &str,
        batch_rows: usize,
        batch_size: Option<usize>,
        schema: Option<pyo3_arrow::PySchema>,
        orc_timestamps: &str,
        snapshot: Option<String>,
        filter: Option<String>,
        images: Option<String>,
    ) -> PyResult<Self> {
        if batch_rows == 0 {
            return Err(PyValueError::new_err("batch_rows must be at least 1"));
        }
        if batch_size == Some(0) {
            return Err(PyValueError::new_err("batch_size must be at least 1"));
        }
        let opts = ReadOptions {
            columns,
            format: parse_format(format)?,
            on_error: parse_on_error(on_error)?,
            // The readers decode about `batch_size` rows at a time when it is given.
            batch_rows: batch_size.unwrap_or(batch_rows),
            schema: schema.map(|s| s.into_inner()),
            orc_timestamps: parse_orc_timestamps(orc_timestamps)?,
            snapshot: snapshot
                .as_deref()
                .map(hydrofeed_format::delta::SnapshotSpec::parse)
                .transpose()
                .map_err(|e| PyValueError::new_err(e.to_string()))?,
            filter: filter
                .as_deref()
                .map(hydrofeed_format::filter::Filter::parse)
                .transpose()
                .map_err(|e| PyValueError::new_err(e.to_string()))?,
            images: match images.as_deref() {
                Some(s) => hydrofeed_format::image::ImageSpec::parse_all(s)
                    .map_err(PyValueError::new_err)?,
                None => Vec::new(),
            },
            ..ReadOptions::default()
        };
        let path = path.to_string();
        let o = opts.clone();
        // Listing an HDFS directory, or waiting for its NameNode, may take long: on a thread of
        // its own, so Ctrl-C is answered meanwhile.
        let what = format!("planning the input {path}");
        let (storage, plan) = blocking::call(py, &what, move || -> hydrofeed_error::Result<_> {
            let storage = open_storage(&path)?;
            let plan = plan(&storage, &path, &o)?;
            Ok((storage, plan))
        })?
        .map_err(error::feeder)?;
        Ok(Self {
            source: Arc::new(Source {
                storage,
                plan: Arc::new(plan),
                opts,
                batch_size,
                state: Mutex::new(State {
                    next_split: 0,
                    current: None,
                    current_seen: 0,
                    pending: Rebatcher::default(),
                    skipped: Vec::new(),
                    skip_totals: SkipStats::default(),
                }),
            }),
            interrupted: Mutex::new(VecDeque::new()),
            owner: Owner::here(),
        })
    }

    /// The schema of the batches, as a `pyarrow.Schema`.
    #[getter]
    fn schema<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        pyo3_arrow::PySchema::new(self.source.plan.schema.clone()).into_pyarrow(py)
    }

    /// Total rows of the input (from the plan).
    #[getter]
    fn num_rows(&self) -> u64 {
        self.source.plan.total_rows()
    }

    /// Number of splits.
    #[getter]
    fn num_splits(&self) -> usize {
        self.source.plan.splits.len()
    }

    /// The rows `on_error="skip"` left out so far, a dict a range of them: `path`, `split` (its
    /// index in the plan), `start` and `end` (positions in the split as the plan counts its
    /// rows, `end` one past the last) and `reason` (the unit, its byte offset where known, and
    /// what was wrong with it). Records the plan could not count hold no position and are not
    /// here (an Avro block that cannot be framed, a TFRecord record with a bad CRC): they are
    /// in `skipped_blocks` and `skipped_records`. The first 10,000 ranges are listed, the rest
    /// only counted there. Empty under `on_error="raise"`.
    #[getter]
    fn skipped<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let ranges = self.with_state(py, |st| st.skipped.clone())?;
        ranges
            .into_iter()
            .map(|(split, path, r)| {
                let d = PyDict::new(py);
                d.set_item("path", path)?;
                d.set_item("split", split)?;
                d.set_item("start", r.start)?;
                d.set_item("end", r.end)?;
                d.set_item("reason", r.reason)?;
                Ok(d)
            })
            .collect()
    }

    /// Records (rows, TFRecord records) `on_error="skip"` left out so far, those of `skipped`
    /// and those the plan could not count.
    #[getter]
    fn skipped_records(&self, py: Python<'_>) -> PyResult<u64> {
        self.with_state(py, |st| st.skip_stats().records)
    }

    /// Units (row groups, stripes, Avro blocks) `on_error="skip"` left out so far.
    #[getter]
    fn skipped_blocks(&self, py: Python<'_>) -> PyResult<u64> {
        self.with_state(py, |st| st.skip_stats().blocks)
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.owner.check("hydrofeed.read iterator")?;
        let b = self.next_batch(py)?.map_err(error::feeder)?;
        match b {
            Some(b) => Ok(Some(PyRecordBatch::new(b).into_pyarrow(py)?)),
            None => Ok(None),
        }
    }
}
