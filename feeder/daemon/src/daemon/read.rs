//! The reader side of a rank: asks the coordinator for work and reads each lease on the
//! decode pool, passing the whole units before the lease's first row over unread.

use super::*;
use crate::stream::{read_segment, split_short, StreamCtx};
use hydrofeed_coord::OrderLease;
use hydrofeed_storage::{BlockLocation, FileStatus, RandomAccess};

/// What the reader sends the writer.
pub(super) enum Ev {
    Lease(Lease),
    Rows(u64, u32, RecordBatch),
    End(u64),
    Failed(Error),
}

/// What a rank's reader needs.
pub(super) struct ReadCtx {
    pub(super) storage: Arc<dyn Storage>,
    pub(super) plan: Arc<Plan>,
    pub(super) read: ReadOptions,
    pub(super) st: Arc<RankStats>,
    pub(super) pool: Arc<rayon::ThreadPool>,
    /// Bytes a fixed-order stream's windows may hold.
    pub(super) window_memory: usize,
}

/// Asks the coordinator for work and reads each lease on the decode pool, at most
/// `LEASES_IN_FLIGHT` leases at a time (so the next lease is read while the last one's batches
/// are still being written); rows of one lease stay in order (cumulative acks need that), rows
/// of two leases may interleave.
#[allow(clippy::too_many_arguments)]
pub(super) fn read_work(
    mut client: CoordClient,
    rank: u32,
    inc: u64,
    host: String,
    ctx: Arc<ReadCtx>,
    tx: Sender<Ev>,
    stop: Arc<AtomicBool>,
) {
    let (tokens, done) = bounded::<()>(LEASES_IN_FLIGHT);
    let st = ctx.st.clone();
    let mut waited: Option<Instant> = None;
    loop {
        if stop.load(Ordering::Relaxed) {
            return;
        }
        let w = match client.request_work(rank, inc, &host) {
            Ok(w) => w,
            Err(e) => {
                let _ = tx.send(Ev::Failed(e));
                return;
            }
        };
        match w {
            Work::Lease(l) => {
                if let Some(t) = waited.take() {
                    st.work_wait_ms
                        .fetch_add(t.elapsed().as_millis() as u64, Ordering::Relaxed);
                }
                if tx.send(Ev::Lease(l.clone())).is_err() {
                    return;
                }
                if let Some(o) = &l.order {
                    // The fixed order: the rank's segments are one stream, read in order here.
                    if let Err(e) = read_stream(&ctx, &l, o, &tx) {
                        let _ = tx.send(Ev::Failed(e));
                        return;
                    }
                    continue;
                }
                // Blocks while LEASES_IN_FLIGHT leases are being read.
                if tokens.send(()).is_err() {
                    return;
                }
                let (c, tx2, done2) = (ctx.clone(), tx.clone(), done.clone());
                ctx.pool.spawn(move || {
                    if let Err(e) = read_lease(&c.storage, &c.plan, &c.read, &l, &c.st, &tx2) {
                        let _ = tx2.send(Ev::Failed(e));
                    }
                    let _ = done2.recv();
                });
            }
            Work::Wait { retry_ms } => {
                st.set_reader(Stage::WaitingWork);
                waited.get_or_insert_with(Instant::now);
                // Unparked early by the writer when it forwards an ack.
                thread::park_timeout(Duration::from_millis(retry_ms.clamp(5, 200)));
            }
            Work::EndOfFeed { steps } => {
                // Every lease's rows were consumed and acked before end-of-feed, so the pool
                // holds no reads of ours any more.
                let _ = tx.send(Ev::End(steps));
                return;
            }
        }
    }
}

/// The storage a rank's readers use: `storage`, with every read counted against `st` (bytes,
/// time blocked) and staged: `reading` while a read is in flight, `decoding` otherwise. The
/// readers' own loop cannot tell the two apart: one `next()` of a split reader both fetches
/// bytes and decodes them.
pub(super) fn metered(storage: &Arc<dyn Storage>, st: &Arc<RankStats>) -> Arc<dyn Storage> {
    Arc::new(Metered {
        inner: storage.clone(),
        st: st.clone(),
    })
}

struct Metered {
    inner: Arc<dyn Storage>,
    st: Arc<RankStats>,
}

struct MeteredFile {
    inner: Arc<dyn RandomAccess>,
    st: Arc<RankStats>,
}

impl Storage for Metered {
    fn stat(&self, path: &str) -> Result<FileStatus> {
        self.inner.stat(path)
    }
    fn list(&self, dir: &str) -> Result<Vec<FileStatus>> {
        self.inner.list(dir)
    }
    fn open(&self, path: &str) -> Result<Arc<dyn RandomAccess>> {
        Ok(Arc::new(MeteredFile {
            inner: self.inner.open(path)?,
            st: self.st.clone(),
        }))
    }
    fn block_locations(&self, path: &str) -> Result<Vec<BlockLocation>> {
        self.inner.block_locations(path)
    }
    fn scheme(&self) -> &'static str {
        self.inner.scheme()
    }
}

impl RandomAccess for MeteredFile {
    fn len(&self) -> u64 {
        self.inner.len()
    }
    fn read_at(&self, offset: u64, len: usize) -> Result<bytes::Bytes> {
        let t0 = Instant::now();
        self.st.storage_started();
        let r = self.inner.read_at(offset, len);
        let n = r.as_ref().map_or(0, |b| b.len() as u64);
        self.st.storage_ended(n, t0.elapsed());
        r
    }
    fn read_into(&self, offset: u64, buf: &mut [u8]) -> Result<usize> {
        // The inner file's own (local files: straight into `buf`), metered the same way.
        let t0 = Instant::now();
        self.st.storage_started();
        let r = self.inner.read_into(offset, buf);
        let n = r.as_ref().map_or(0, |n| *n as u64);
        self.st.storage_ended(n, t0.elapsed());
        r
    }
    fn path(&self) -> &str {
        self.inner.path()
    }
}

/// Reads a segment of the fixed order and sends its rows in stream order.
fn read_stream(ctx: &ReadCtx, l: &Lease, o: &OrderLease, tx: &Sender<Ev>) -> Result<()> {
    let sc = StreamCtx {
        storage: &ctx.storage,
        plan: &ctx.plan,
        read: &ctx.read,
        pool: &ctx.pool,
        memory: ctx.window_memory,
        on_skipped: Some(&|split, n| ctx.st.skipped_in(&ctx.plan, split, n)),
    };
    // Storage reads say `reading` while they run (`metered`).
    ctx.st.set_reader(Stage::Decoding);
    read_segment(&sc, o, ctx.read.batch_rows, |b| {
        ctx.st
            .rows_read
            .fetch_add(b.num_rows() as u64, Ordering::Relaxed);
        tx.send(Ev::Rows(l.lease, l.split, b)).is_ok()
    })
}

/// Reads the rows `[first_row, first_row + rows)` of the lease's split.
pub(super) fn read_lease(
    storage: &Arc<dyn Storage>,
    plan: &Plan,
    read: &ReadOptions,
    l: &Lease,
    st: &RankStats,
    tx: &Sender<Ev>,
) -> Result<()> {
    let split = plan.splits.get(l.split as usize).ok_or_else(|| {
        Error::Coordinator(format!(
            "lease {} names split {} but the plan has {}",
            l.lease,
            l.split,
            plan.splits.len()
        ))
    })?;
    // Opening, passing units over and decoding are `decoding`; the storage reads inside them
    // say `reading` while they run (`metered`).
    st.set_reader(Stage::Decoding);
    let mut reader = hydrofeed_format::open_split(storage, plan, split, read)?;
    // Whole units before the lease's first row are passed over unread; only the rest of the
    // head is decoded and dropped.
    let passed = reader.skip_rows(l.first_row);
    st.rows_passed.fetch_add(passed, Ordering::Relaxed);
    let (mut skip, mut left) = (l.first_row - passed, l.rows);
    // Records skipped before the lease's first row belong to another lease's range (the
    // readers re-decode a split's head): count only those after it.
    let mut skipped_before = (l.first_row == 0).then_some(0);
    let note_skips = |reader: &dyn SplitReader, before: Option<u64>| {
        let n = reader.skipped().records - before.unwrap_or(0);
        if n > 0 {
            st.skipped_records.fetch_add(n, Ordering::Relaxed);
            if let Ok(mut f) = st.skipped_files.lock() {
                f.insert(split.path.clone());
            }
        }
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
        let piece = b.slice(skip as usize, take as usize);
        skip = 0;
        left -= take;
        st.rows_read.fetch_add(take, Ordering::Relaxed);
        if tx.send(Ev::Rows(l.lease, l.split, piece)).is_err() {
            return Ok(()); // the writer is gone; it reports why
        }
        if left == 0 {
            note_skips(reader.as_ref(), skipped_before);
            return Ok(());
        }
        st.set_reader(Stage::Decoding);
    }
    Err(split_short(split, l.first_row, l.rows, left))
}

#[cfg(test)]
mod tests {
    use super::*;
    use hydrofeed_format::gen::{write_dataset, GenOptions};
    use hydrofeed_format::split::Format;
    use hydrofeed_format::tfrecord::Compression;

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
            inner: storage::open_storage("/").unwrap(),
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
        let lease = Lease {
            lease: 1,
            epoch: 0,
            data_epoch: 0,
            split: 0,
            first_row: 0,
            rows: plan.splits[0].rows,
            pad: false,
            shuffle_seed: 0,
            order: None,
        };
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
        read_lease(&storage, &plan, &read, &lease, &st, &tx).unwrap();
        done.store(true, Ordering::SeqCst);
        drop(rx);
        sampler.join().unwrap()
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
