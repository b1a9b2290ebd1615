//! The reader side of a rank ([`Reader`]): asks the coordinator for work and reads it, within
//! the rank's [`Budget`]: each lease on the decode pool (a unit of the budget each, so at most
//! [`LEASES_IN_FLIGHT`] at a time), passing the whole units before its first row over unread;
//! the fixed order's segments as one stream. Every batch goes to the writer with the permit of
//! its bytes.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use crossbeam_channel::Sender;
use hydrofeed_coord::client::CoordClient;
use hydrofeed_coord::{Lease, OrderLease, SkippedRange, Stage, Work};
use hydrofeed_format::image::for_epoch;
use hydrofeed_format::split::Split;
use hydrofeed_format::{Gather, Plan, ReadOptions, SkippedRows};
use hydrofeed_storage::metered::Meter;
use hydrofeed_storage::Storage;

use super::stats::RankStats;
use crate::fill::{first_readable, within, Filled};
use crate::pipeline::{batch_bytes, Budget, Event, Place, Rows, Tag};
use crate::stream::{read_segment, split_short, StreamCtx};
use crate::{Error, Result};

/// Leases of one rank read at the same time (prefetch depth): the units of its budget.
pub(super) const LEASES_IN_FLIGHT: usize = 2;

/// What a rank's reader needs.
pub(super) struct Reader {
    /// The storage, metered against the rank's counters ([`metered`]).
    pub(super) storage: Arc<dyn Storage>,
    pub(super) plan: Arc<Plan>,
    /// `batch_rows` is the job's batch size.
    pub(super) read: ReadOptions,
    pub(super) st: Arc<RankStats>,
    pub(super) pool: Arc<rayon::ThreadPool>,
    /// The rank's bound: bytes of decoded batches and windows, leases in flight.
    pub(super) budget: Arc<Budget>,
    /// Where the rows skipped as corrupt and padded go (the coordinator).
    pub(super) report: Option<SkipSink>,
}

/// Tells the coordinator of rows skipped as corrupt and delivered as padding.
pub(super) type SkipSink = Arc<dyn Fn(&SkippedRange) -> Result<()> + Send + Sync>;

/// Where the reader asks for work.
pub(super) struct Asker {
    pub(super) client: CoordClient,
    pub(super) rank: u32,
    pub(super) inc: u64,
    pub(super) host: String,
    /// The last lease received (0: none), sent with each request.
    pub(super) known: u64,
}

impl Reader {
    /// Asks the coordinator for work until the end of the feed and reads it into `tx`: rows of
    /// one lease stay in order (cumulative acks need that), rows of two leases may interleave.
    pub(super) fn run(self: Arc<Self>, mut ask: Asker, tx: Sender<Event>, stop: Arc<AtomicBool>) {
        let st = self.st.clone();
        let mut waited: Option<Instant> = None;
        let mut epoch = None;
        loop {
            if stop.load(Ordering::Relaxed) {
                return;
            }
            let w =
                match ask
                    .client
                    .request_work_after(ask.rank, ask.inc, &ask.host, Some(ask.known))
                {
                    Ok(w) => w,
                    Err(e) => {
                        let _ = tx.send(Event::Failed(e));
                        return;
                    }
                };
            match w {
                Work::Lease(l) => {
                    ask.known = ask.known.max(l.lease);
                    if let Some(t) = waited.take() {
                        st.work_wait_ms
                            .fetch_add(t.elapsed().as_millis() as u64, Ordering::Relaxed);
                    }
                    if epoch.is_some_and(|e| e != l.epoch) && !self.drain_reads() {
                        return; // the rank ended
                    }
                    epoch = Some(l.epoch);
                    if tx.send(Event::Epoch(l.epoch)).is_err() {
                        return;
                    }
                    if let Some(o) = &l.order {
                        // The fixed order: the rank's segments are one stream, read in order here.
                        if let Err(e) = self.read_stream(&l, o, &tx) {
                            let _ = tx.send(Event::Failed(e));
                            return;
                        }
                        continue;
                    }
                    // Waits while LEASES_IN_FLIGHT leases are being read.
                    let Some(unit) = self.budget.unit() else {
                        return; // the rank ended
                    };
                    let (me, tx) = (self.clone(), tx.clone());
                    self.pool.spawn(move || {
                        if let Err(e) = me.read_lease(&l, &tx) {
                            let _ = tx.send(Event::Failed(e));
                        }
                        drop(unit);
                    });
                }
                Work::Wait { retry_ms } => {
                    st.set_reader(Stage::WaitingWork);
                    waited.get_or_insert_with(Instant::now);
                    // Unparked early by the writer when it forwards an ack.
                    thread::park_timeout(Duration::from_millis(retry_ms.clamp(5, 200)));
                }
                Work::EndOfFeed { steps } => {
                    // Every lease's rows were consumed and acked before end-of-feed, so the
                    // pool holds no reads of ours any more.
                    let _ = tx.send(Event::End(steps));
                    return;
                }
            }
        }
    }

    /// Waits until no lease of this rank is being read on the pool (every unit of the budget
    /// back), so the epoch's rows all reach the writer before the next epoch's first lease (the
    /// end-of-epoch frame follows every row of its epoch). `false`: the rank ended.
    fn drain_reads(&self) -> bool {
        let units: Option<Vec<_>> = (0..LEASES_IN_FLIGHT).map(|_| self.budget.unit()).collect();
        units.is_some()
    }

    /// Tells the coordinator that rows `g` of `split` (data epoch `data_epoch`) went out as
    /// padding.
    fn padded(&self, data_epoch: u32, split: &Split, g: SkippedRows) -> Result<()> {
        let Some(f) = &self.report else {
            return Ok(());
        };
        f(&SkippedRange {
            data_epoch,
            path: split.path.clone(),
            split: split.id,
            start: g.start,
            end: g.end,
            reason: g.reason,
        })
    }

    /// Readable rows of the plan other than `split`'s, to pad with.
    fn pad_rows(&self, split: u32) -> Result<arrow_array::RecordBatch> {
        first_readable(&self.storage, &self.plan, &self.read, split)
    }

    /// Reads a segment of the fixed order and sends its rows in stream order.
    fn read_stream(&self, l: &Lease, o: &OrderLease, tx: &Sender<Event>) -> Result<()> {
        let data_epoch = o.segment.data_epoch;
        let on_padded = |s: &Split, g: SkippedRows| self.padded(data_epoch, s, g);
        let pad_source = || self.pad_rows(u32::MAX);
        let sc = StreamCtx {
            storage: &self.storage,
            plan: &self.plan,
            read: &self.read,
            pool: &self.pool,
            budget: &self.budget,
            on_skipped: Some(&|split, n| self.st.skipped_in(&self.plan, split, n)),
            on_padded: Some(&on_padded),
            pad_source: Some(&pad_source),
        };
        // Storage reads say `reading` while they run (`metered`).
        self.st.set_reader(Stage::Decoding);
        let tag = Tag {
            lease: l.lease,
            split: l.split,
        };
        read_segment(&sc, o, self.read.batch_rows, |batch, permit| {
            self.st
                .rows_read
                .fetch_add(batch.num_rows() as u64, Ordering::Relaxed);
            tx.send(Event::Rows(Rows { tag, batch, permit })).is_ok()
        })
    }

    /// Reads the rows `[first_row, first_row + rows)` of the lease's split.
    pub(super) fn read_lease(&self, l: &Lease, tx: &Sender<Event>) -> Result<()> {
        let (plan, st) = (&self.plan, &self.st);
        let split = plan.splits.get(l.split as usize).ok_or_else(|| {
            Error::Coordinator(format!(
                "lease {} names split {} but the plan has {}",
                l.lease,
                l.split,
                plan.splits.len()
            ))
        })?;
        // Opening, passing units over and decoding are `decoding`; the storage reads inside
        // them say `reading` while they run (`metered`).
        st.set_reader(Stage::Decoding);
        // Image crops and flips follow the job's seed and the data epoch (and the row).
        let read = for_epoch(&self.read, l.job_seed, u64::from(l.data_epoch));
        let mut raw = hydrofeed_format::open_split(&self.storage, plan, split, &read)?;
        // Whole units before the lease's first row are passed over unread; only the rest of
        // the head is decoded and dropped.
        let passed = raw.skip_rows(l.first_row);
        st.rows_passed.fetch_add(passed, Ordering::Relaxed);
        // Rows skipped as corrupt keep their positions (padding rows of the same epoch in
        // their place): the lease's rows after them are the rows the coordinator counts.
        let pad_source = || self.pad_rows(l.split);
        let mut reader = Filled::new(raw, split.rows, passed, Some(&pad_source));
        let mut reported = 0;
        let lease_end = l.first_row + l.rows;
        let (mut skip, mut left) = (l.first_row - passed, l.rows);
        // Records skipped before the lease's first row belong to another lease's range (the
        // readers re-decode a split's head): count only those after it.
        let mut skipped_before = (l.first_row == 0).then_some(0);
        let note_skips = |reader: &Filled<'_>, before: Option<u64>| {
            let n = reader.skipped().records - before.unwrap_or(0);
            if n > 0 {
                st.skipped_records.fetch_add(n, Ordering::Relaxed);
                if let Ok(mut f) = st.skipped_files.lock() {
                    f.insert(split.path.clone());
                }
            }
        };
        let tag = Tag {
            lease: l.lease,
            split: l.split,
        };
        while let Some(b) = reader.next() {
            let b = b?;
            let n = b.num_rows() as u64;
            if skip >= n {
                skip -= n;
                st.rows_skipped.fetch_add(n, Ordering::Relaxed);
                continue;
            }
            skipped_before.get_or_insert(reader.skipped().records);
            st.rows_skipped.fetch_add(skip, Ordering::Relaxed);
            let take = (n - skip).min(left);
            let batch = b.slice(skip as usize, take as usize);
            skip = 0;
            left -= take;
            st.rows_read.fetch_add(take, Ordering::Relaxed);
            // `None`: the rank ended; the writer reports why.
            let Some(permit) = self.budget.permit(batch_bytes(&batch), Place::Any) else {
                return Ok(());
            };
            let permit = Some(permit);
            for g in within(&reader.padded()[reported..], l.first_row, lease_end) {
                self.padded(l.data_epoch, split, g)?;
            }
            reported = reader.padded().len();
            let batch = Gather::from(batch);
            if tx.send(Event::Rows(Rows { tag, batch, permit })).is_err() {
                return Ok(()); // the writer is gone; it reports why
            }
            if left == 0 {
                note_skips(&reader, skipped_before);
                return Ok(());
            }
            st.set_reader(Stage::Decoding);
        }
        Err(split_short(split, l.first_row, l.rows, left))
    }
}

/// The storage a rank's readers use: `storage`, with every read counted against `st` (bytes,
/// time blocked) and staged: `reading` while a read is in flight, `decoding` otherwise. The
/// readers' own loop cannot tell the two apart: one `next()` of a split reader both fetches
/// bytes and decodes them.
pub(super) fn metered(storage: &Arc<dyn Storage>, st: &Arc<RankStats>) -> Arc<dyn Storage> {
    hydrofeed_storage::metered::metered(storage, st.clone())
}

impl Meter for RankStats {
    fn started(&self) {
        self.storage_started();
    }
    fn ended(&self, bytes: u64, took: Duration) {
        self.storage_ended(bytes, took);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hydrofeed_format::gen::{write_dataset, GenOptions};
    use hydrofeed_format::split::Format;
    use hydrofeed_format::tfrecord::Compression;
    use hydrofeed_storage::{BlockLocation, FileStatus, RandomAccess};

    /// Local files whose reads raise a flag while they run and take `delay` longer.
    struct Probe {
        inner: Arc<dyn Storage>,
        in_read: Arc<AtomicBool>,
        delay: Duration,
    }

    struct ProbeFile {
        inner: Arc<dyn RandomAccess>,
        in_read: Arc<AtomicBool>,
        delay: Duration,
    }

    impl Storage for Probe {
        fn stat(&self, path: &str) -> Result<FileStatus> {
            self.inner.stat(path)
        }
        fn list(&self, dir: &str) -> Result<Vec<FileStatus>> {
            self.inner.list(dir)
        }
        fn open(&self, path: &str) -> Result<Arc<dyn RandomAccess>> {
            Ok(Arc::new(ProbeFile {
                inner: self.inner.open(path)?,
                in_read: self.in_read.clone(),
                delay: self.delay,
            }))
        }
        fn block_locations(&self, path: &str) -> Result<Vec<BlockLocation>> {
            self.inner.block_locations(path)
        }
        fn scheme(&self) -> &'static str {
            "file"
        }
    }

    impl RandomAccess for ProbeFile {
        fn len(&self) -> u64 {
            self.inner.len()
        }
        fn read_at(&self, offset: u64, len: usize) -> Result<bytes::Bytes> {
            self.in_read.store(true, Ordering::SeqCst);
            thread::sleep(self.delay);
            let b = self.inner.read_at(offset, len);
            self.in_read.store(false, Ordering::SeqCst);
            b
        }
        fn path(&self) -> &str {
            self.inner.path()
        }
    }

    /// A lease of the whole of split 0 of `plan`, under the job seed `job_seed`.
    fn whole_split(plan: &Plan, job_seed: u64) -> Lease {
        Lease {
            lease: 1,
            epoch: 0,
            data_epoch: 0,
            split: 0,
            first_row: 0,
            rows: plan.splits[0].rows,
            pad: false,
            shuffle_seed: 0,
            order: None,
            job_seed,
        }
    }

    /// A reader of `plan` through `storage`, with one decode thread and no memory bound.
    fn reader_of(
        storage: Arc<dyn Storage>,
        plan: Plan,
        read: ReadOptions,
        st: Arc<RankStats>,
    ) -> Reader {
        Reader {
            storage,
            plan: Arc::new(plan),
            read,
            st,
            pool: crate::pipeline::decode_pool(1).unwrap(),
            budget: Budget::new(usize::MAX, 1),
            report: None,
        }
    }

    /// The stage a lease's read shows while a storage read runs, and while none does.
    fn stages(delay: Duration) -> (Vec<Stage>, Vec<Stage>) {
        let dir = tempfile::tempdir().unwrap();
        let opts = GenOptions {
            format: Format::Tfrecord,
            rows: 1500,
            compression: Compression::Gzip,
            ..Default::default()
        };
        write_dataset(dir.path(), &opts).unwrap();
        let in_read = Arc::new(AtomicBool::new(false));
        let probe: Arc<dyn Storage> = Arc::new(Probe {
            inner: hydrofeed_storage::open_storage("/").unwrap(),
            in_read: in_read.clone(),
            delay,
        });
        let input = dir.path().display().to_string();
        let read = ReadOptions {
            batch_rows: 100,
            ..Default::default()
        };
        let plan = hydrofeed_format::plan(&probe, &input, &read).unwrap();
        let st = Arc::new(RankStats::default());
        let storage = metered(&probe, &st);
        let lease = whole_split(&plan, 0);
        let (tx, rx) = crossbeam_channel::unbounded();
        let done = Arc::new(AtomicBool::new(false));
        let sampler = {
            let (st, done, in_read) = (st.clone(), done.clone(), in_read.clone());
            thread::spawn(move || {
                let (mut inside, mut outside) = (Vec::new(), Vec::new());
                while !done.load(Ordering::SeqCst) {
                    let reading = in_read.load(Ordering::SeqCst);
                    let s = st.stage();
                    if reading == in_read.load(Ordering::SeqCst) {
                        if reading { &mut inside } else { &mut outside }.push(s);
                    }
                    thread::sleep(Duration::from_micros(200));
                }
                (inside, outside)
            })
        };
        let reader = reader_of(storage, plan, read, st.clone());
        reader.read_lease(&lease, &tx).unwrap();
        done.store(true, Ordering::SeqCst);
        drop(rx);
        sampler.join().unwrap()
    }

    /// The pixels a lease of `job_seed` gives under random crops and flips.
    fn lease_pixels(data: &std::path::Path, job_seed: u64) -> Vec<u8> {
        use arrow_array::cast::AsArray;
        let storage = hydrofeed_storage::open_storage("/").unwrap();
        let input = data.display().to_string();
        let read = ReadOptions {
            batch_rows: 8,
            images: hydrofeed_format::image::ImageSpec::parse_all(
                "image=resize:40,randcrop:32,flip",
            )
            .unwrap(),
            ..Default::default()
        };
        let plan = hydrofeed_format::plan(&storage, &input, &read).unwrap();
        let st = Arc::new(RankStats::default());
        let lease = whole_split(&plan, job_seed);
        let reader = reader_of(metered(&storage, &st), plan, read, st);
        let (tx, rx) = crossbeam_channel::unbounded();
        reader.read_lease(&lease, &tx).unwrap();
        drop(tx);
        let mut px = Vec::new();
        for e in rx {
            if let Event::Rows(r) = e {
                let mut col = r
                    .batch
                    .materialize()
                    .unwrap()
                    .column_by_name("image")
                    .unwrap()
                    .clone();
                for _ in 0..3 {
                    col = col.as_fixed_size_list().values().clone();
                }
                px.extend_from_slice(col.as_primitive::<arrow_array::types::UInt8Type>().values());
            }
        }
        px
    }

    /// A lease of the dynamic order carries the job's seed, and its image crops and flips
    /// follow it: jobs of other seeds crop otherwise, a rerun of the same seed the same.
    #[test]
    fn image_crops_of_a_lease_follow_the_jobs_seed() {
        use hydrofeed_format::gen_images::{write_image_dataset, ImageGenOptions};
        let d = tempfile::tempdir().unwrap();
        let gen = ImageGenOptions {
            format: Format::Parquet,
            rows: 16,
            files: 1,
            seed: 0,
        };
        write_image_dataset(&d.path().join("data"), &gen).unwrap();
        let a = lease_pixels(&d.path().join("data"), 1);
        assert_eq!(a.len(), 16 * 32 * 32 * 3);
        assert_ne!(
            lease_pixels(&d.path().join("data"), 2),
            a,
            "the job's seed did not reach the crops"
        );
        assert_eq!(lease_pixels(&d.path().join("data"), 1), a);
    }

    fn share(v: &[Stage], s: Stage) -> f64 {
        v.iter().filter(|x| **x == s).count() as f64 / v.len().max(1) as f64
    }

    /// A lease's read shows `reading` while the storage read runs and `decoding` while the
    /// reader decodes what it got: a slow disk and a slow decoder are told apart.
    #[test]
    fn storage_reads_are_reading_and_the_rest_is_decoding() {
        let (inside, outside) = stages(Duration::from_millis(40));
        assert!(
            inside.len() > 20 && outside.len() > 20,
            "{} {}",
            inside.len(),
            outside.len()
        );
        assert!(share(&inside, Stage::Reading) > 0.8, "{inside:?}");
        assert!(share(&outside, Stage::Decoding) > 0.8, "{outside:?}");
    }
}
