//! The reader side of a rank: asks the coordinator for work and reads each lease on the
//! decode pool, passing the whole units before the lease's first row over unread.

use super::*;
use crate::stream::{read_segment, split_short, StreamCtx};
use hydrofeed_coord::OrderLease;

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
                st.set(Stage::WaitingWork);
                waited.get_or_insert_with(Instant::now);
                thread::sleep(Duration::from_millis(retry_ms.clamp(5, 200)));
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
    ctx.st.set(Stage::Reading);
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
    st.set(Stage::Reading);
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
        st.set(Stage::Decoding);
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
        st.set(Stage::Reading);
    }
    Err(split_short(split, l.first_row, l.rows, left))
}
