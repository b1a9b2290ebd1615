//! Reading a segment of the fixed order (`hydrofeed_coord::order`): the lanes of each window
//! are read in parallel on the decode pool, each lane sequentially (its reader stays open from
//! one window to the next, so a lane costs one open and at most one seek per epoch), and the
//! window's rows go out in the window's permutation.
//!
//! Memory: the stream's [`Budget`] (the feed's one bound) holds its windows: each window read
//! (or group of windows, without a shuffle buffer) takes a permit for its bytes, given back
//! once its rows are handed on, each batch of them with a permit of its own (at the budget's
//! front) until the writer takes it. One window is read while the previous one is sent, so a
//! stream holds two windows (`check_memory` refuses a shuffle buffer whose two windows do not
//! fit the budget) and the rows it handed out; a third is read ahead when three fit (the lanes
//! read as chains, `chains`). With a shuffle buffer, the batches of a window stay until its
//! last rows were written (the writer copies them from there), so up to one window more than
//! the permits count.

use std::sync::Arc;
use std::thread;

use arrow_array::RecordBatch;
use crossbeam_channel::bounded;
use hydrofeed_coord::order::{ChunkStream, EpochSeq, Span, Window};
use hydrofeed_coord::OrderLease;
use hydrofeed_error::Location;
use hydrofeed_format::image::for_epoch;
use hydrofeed_format::split::Split;
use hydrofeed_format::{Gather, Plan, ReadOptions, SkippedRows};
use hydrofeed_storage::Storage;

use self::chains::Chains;
use crate::fill::{within, Filled, PadSource};
use crate::pipeline::{batch_bytes, Budget, Permit, Place};
use crate::{Error, Result};

/// Rows a lane's reader decodes at a time, at most and at least: about its part of one window,
/// so that every window gives every lane about one batch to decode (lanes whose batch lasts
/// many windows would leave the others decoding alone in the windows where it runs out).
const LANE_BATCH_ROWS: (usize, usize) = (128, 8192);

mod chains;

/// What reading a segment needs.
pub struct StreamCtx<'a> {
    /// Where the files are.
    pub storage: &'a Arc<dyn Storage>,
    /// The plan the coordinator dealt (split ids index it).
    pub plan: &'a Plan,
    /// Columns, format and error policy.
    pub read: &'a ReadOptions,
    /// The decode pool the lanes run on.
    pub pool: &'a rayon::ThreadPool,
    /// The bound of the feed: the windows, and the rows handed out, hold its bytes; a window
    /// in flight holds one of its units.
    pub budget: &'a Arc<Budget>,
    /// Told `(split, records)` when a lane leaves a split's reader: the corrupt records it
    /// skipped (`--skip-errors`) after the rows it passed over to reach its first row.
    pub on_skipped: Option<&'a (dyn Fn(u32, u64) + Sync)>,
    /// Told each range of a span's rows that a reader skipped as corrupt (`--skip-errors`) and
    /// that went out as padding rows at their positions (rows of the split, from its first).
    pub on_padded: Option<OnPadded<'a>>,
    /// Readable rows to pad with when a whole split is unreadable (none: such a split fails).
    pub pad_source: Option<PadSource<'a>>,
}

/// Where a stream tells of rows skipped as corrupt and padded (rows of the split).
pub type OnPadded<'a> = &'a (dyn Fn(&Split, SkippedRows) -> Result<()> + Sync);

/// One lane's open reader and where it stands.
#[derive(Default)]
struct Lane<'a> {
    at: Option<(u32, u64)>,
    reader: Option<Filled<'a>>,
    carry: Option<RecordBatch>,
    /// Records the reader had skipped once it reached its first row.
    skipped_at_open: u64,
    /// Rows per decoded batch.
    batch_rows: usize,
}

impl<'a> Lane<'a> {
    /// Reports the records the current reader skipped past its first row, and closes it.
    fn close(&mut self, ctx: &StreamCtx<'a>) {
        if let (Some(r), Some((split, _)), Some(f)) = (self.reader.take(), self.at, ctx.on_skipped)
        {
            let n = r.skipped().records.saturating_sub(self.skipped_at_open);
            if n > 0 {
                f(split, n);
            }
        }
        self.carry = None;
    }

    /// Appends the rows of `spans` (in order) to `out`.
    fn read(
        &mut self,
        ctx: &StreamCtx<'a>,
        spans: &[Span],
        out: &mut Vec<RecordBatch>,
    ) -> Result<()> {
        for p in spans {
            if self.at != Some((p.split, p.first)) || self.reader.is_none() {
                self.open(ctx, p)?;
            }
            let mut left = p.rows;
            while left > 0 {
                let b = match self.carry.take() {
                    Some(b) => b,
                    None => self.next(ctx, p, left)?,
                };
                let n = b.num_rows() as u64;
                if n <= left {
                    left -= n;
                    out.push(b);
                } else {
                    out.push(b.slice(0, left as usize));
                    self.carry = Some(b.slice(left as usize, (n - left) as usize));
                    left = 0;
                }
            }
            self.at = Some((p.split, p.first + p.rows));
            // The span's positions that went out as padding: named to the coordinator.
            if let (Some(f), Some(r)) = (ctx.on_padded, &self.reader) {
                for g in within(r.padded(), p.first, p.first + p.rows) {
                    f(&ctx.plan.splits[p.split as usize], g)?;
                }
            }
        }
        Ok(())
    }

    fn next(&mut self, ctx: &StreamCtx<'a>, p: &Span, left: u64) -> Result<RecordBatch> {
        match self.reader.as_mut().and_then(|r| r.next()) {
            Some(b) => b,
            None => Err(split_short(
                &ctx.plan.splits[p.split as usize],
                p.first,
                p.rows,
                left,
            )),
        }
    }

    /// Opens the span's split at its first row: whole units before it are passed over
    /// unread, the rest of the head is decoded and dropped.
    fn open(&mut self, ctx: &StreamCtx<'a>, p: &Span) -> Result<()> {
        let split = ctx.plan.splits.get(p.split as usize).ok_or_else(|| {
            Error::Coordinator(format!(
                "the order names split {} but the plan has {}: the feeder's input is not the \
                 coordinator's",
                p.split,
                ctx.plan.splits.len()
            ))
        })?;
        self.close(ctx);
        let mut read = ctx.read.clone();
        read.batch_rows = self.batch_rows;
        let mut r = hydrofeed_format::open_split(ctx.storage, ctx.plan, split, &read)?;
        let passed = r.skip_rows(p.first);
        let mut skip = p.first - passed;
        self.reader = Some(Filled::new(r, split.rows, passed, ctx.pad_source));
        self.at = Some((p.split, p.first));
        while skip > 0 {
            let b = self.next(ctx, p, skip)?;
            let n = b.num_rows() as u64;
            if n <= skip {
                skip -= n;
            } else {
                self.carry = Some(b.slice(skip as usize, (n - skip) as usize));
                skip = 0;
            }
        }
        self.skipped_at_open = self.reader.as_ref().map_or(0, |r| r.skipped().records);
        Ok(())
    }
}

/// The error of a split that ended `left` rows before the end of rows `[first, first + rows)`
/// that the plan promised (a file changed since it was planned, or records skipped).
pub(crate) fn split_short(split: &Split, first: u64, rows: u64, left: u64) -> Error {
    Error::Data {
        loc: Location {
            path: split.path.clone(),
            split: Some(split.id),
            ..Default::default()
        },
        format: split.format.name(),
        detail: format!(
            "split ended {left} rows short of rows [{first}, {}) (the plan counted {} rows)",
            first + rows,
            split.rows
        ),
    }
}

/// Reads the stream positions of `o`'s segment and hands them to `emit` in order, in batches
/// of at most `batch_size` rows, each with the permit of its bytes (the caller drops it once
/// the rows are taken), with a shuffle buffer as gathers of the window's rows (the writer
/// copies them from the window's batches into the ring); stops early (`Ok`) when `emit`
/// returns `false` or the budget closed.
pub fn read_segment<'a>(
    ctx: &StreamCtx<'a>,
    o: &OrderLease,
    batch_size: usize,
    emit: impl FnMut(Gather, Option<Permit>) -> bool,
) -> Result<()> {
    let seg = o.segment;
    if seg.is_empty() {
        return Ok(());
    }
    o.spec.check().map_err(Error::Coordinator)?;
    // Image crops and flips follow the job's seed and the data epoch.
    let read = for_epoch(ctx.read, o.seed, u64::from(seg.data_epoch));
    let ctx = &StreamCtx {
        read: &read,
        ..*ctx
    };
    let seq = EpochSeq::with_units(
        &ctx.plan.split_rows(),
        &ctx.plan.split_units(),
        o.seed,
        o.shuffle,
        seg.data_epoch,
    );
    let cs = ChunkStream::new(
        &seq,
        o.spec,
        o.seed,
        seg.data_epoch,
        seg.workers,
        o.batch_size,
        seg.chunk,
    );
    if cs.len() < seg.to {
        return Err(Error::Coordinator(format!(
            "the order's chunk {} has {} rows here but the coordinator dealt rows up to {}: the \
             feeder's input is not the coordinator's",
            seg.chunk,
            cs.len(),
            seg.to
        )));
    }
    let (k0, k1) = (cs.window_of(seg.from), cs.window_of(seg.to - 1));
    let lane_rows = (cs.len() / cs.windows() / u64::from(o.spec.cycle.max(1))) as usize;
    let lane_rows = lane_rows.clamp(LANE_BATCH_ROWS.0, LANE_BATCH_ROWS.1);
    let mut out = Out {
        budget: ctx.budget,
        batch_size: batch_size.max(1),
        emit,
    };
    thread::scope(|s| {
        let (wtx, wrx) = bounded::<Result<Held>>(0);
        let (cs, seq) = (&cs, &seq);
        s.spawn(move || {
            let chains = Chains::new(ctx, cs.window(seq, k0).lanes.len());
            // Groups read ahead of the one being sent: one, and two (a lane that finished its
            // part of one group goes on with the next) once a group's bytes are known and
            // three groups fit the budget.
            let mut ahead = 1;
            ctx.pool.in_place_scope(|scope| {
                let (mut k, mut group) = (k0, 1u64);
                loop {
                    while k <= k1 && chains.pending() < ahead {
                        let ws: Vec<Window> = (k..=k1.min(k + group - 1))
                            .map(|k| cs.window(seq, k))
                            .collect();
                        k += ws.len() as u64;
                        let rows = (lane_rows * ws.len()).min(LANE_BATCH_ROWS.1);
                        let chains = &chains;
                        chains.admit(ws, rows, |j| scope.spawn(move |_| chains.run_lane(j)));
                    }
                    let Some(read) = chains.take() else { break };
                    let held = read.map(|windows| {
                        let bytes: usize =
                            windows.iter().flat_map(|(_, b)| b).map(batch_bytes).sum();
                        if !cs.permutes() {
                            group = group_size(bytes / windows.len(), ctx.budget.bytes());
                        }
                        let next = bytes / windows.len() * group as usize;
                        ahead = if next.saturating_mul(3) <= ctx.budget.bytes() {
                            2
                        } else {
                            1
                        };
                        // Waits while the rows handed on and these would not fit.
                        (windows, ctx.budget.permit(bytes, Place::Any))
                    });
                    let failed = !matches!(held, Ok((_, Some(_))));
                    if wtx.send(held).is_err() || failed {
                        break;
                    }
                }
                chains.stop();
            });
            chains.close();
        });
        let mut checked = false;
        for msg in wrx {
            let (windows, permit) = msg?;
            if permit.is_none() {
                return Ok(()); // the budget closed: the feed is over
            }
            // From here the rows are counted as they are handed on, each batch with its own
            // permit (the writer always gets the next: see `Place::Front`); the reader may read
            // the next group meanwhile.
            drop(permit);
            for (w, batches) in windows {
                if !checked {
                    checked = true;
                    check_memory(&batches, w.rows, o, ctx.budget.bytes())?;
                }
                let lo = seg.from.saturating_sub(w.start) as usize;
                let hi = (seg.to - w.start).min(w.rows) as usize;
                if lo < hi && !send_window(cs, &w, batches, lo, hi, &mut out)? {
                    return Ok(());
                }
            }
        }
        Ok(())
    })
}

/// Windows read in one go without a shuffle buffer (a window is a block of
/// [`BLOCK_ROWS`](hydrofeed_coord::order::BLOCK_ROWS) rows per lane): each lane reads its blocks
/// of several windows one after another, so the decode pool's threads wait for the slowest lane
/// once a group, not once a window. A group holds at most this many windows, and at most an
/// eighth of the budget (two groups are held: one read, one sent).
const MAX_WINDOW_GROUP: u64 = 8;

/// Windows the next group reads, from the bytes a window held.
fn group_size(window_bytes: usize, budget: usize) -> u64 {
    let fit = (budget / 8) / window_bytes.max(1);
    (fit as u64).clamp(1, MAX_WINDOW_GROUP)
}

/// Windows read and held: each window with its rows, and the permit of their bytes.
type Held = (chains::GroupRows, Option<Permit>);

/// Where a stream's rows go: batches of at most `batch_size` rows, each with its permit.
struct Out<'a, F> {
    budget: &'a Arc<Budget>,
    batch_size: usize,
    emit: F,
}

impl<F: FnMut(Gather, Option<Permit>) -> bool> Out<'_, F> {
    /// Hands `rows` (of `bytes`) on; `false` when the receiver stopped or the budget closed.
    fn send(&mut self, rows: Gather, bytes: usize) -> bool {
        match self.budget.permit(bytes, Place::Front) {
            Some(p) => (self.emit)(rows, Some(p)),
            None => false,
        }
    }
}

/// Sends rows `[lo, hi)` of a window in its permutation; `false` when `emit` stopped.
fn send_window<F: FnMut(Gather, Option<Permit>) -> bool>(
    cs: &ChunkStream,
    w: &Window,
    batches: Vec<RecordBatch>,
    lo: usize,
    hi: usize,
    out: &mut Out<'_, F>,
) -> Result<bool> {
    if !cs.permutes() {
        // No shuffle buffer: the lanes' batches as they are, cut to [lo, hi).
        let mut at = 0usize;
        for b in &batches {
            let n = b.num_rows();
            let (a, z) = (lo.max(at), hi.min(at + n));
            if a < z {
                let b = b.slice(a - at, z - a);
                let bytes = batch_bytes(&b);
                if !out.send(Gather::from(b), bytes) {
                    return Ok(false);
                }
            }
            at += n;
        }
        return Ok(true);
    }
    let perm = cs.permutation(w.index);
    // The rows stay in the lanes' batches: the writer copies each batch's rows from them into
    // the ring (making the batch first would copy every row once more).
    let mut index: Vec<(usize, usize)> = Vec::with_capacity(w.rows as usize);
    for (i, b) in batches.iter().enumerate() {
        index.extend((0..b.num_rows()).map(|r| (i, r)));
    }
    // Each batch of rows counts its share of the window's bytes while it is on its way (the
    // window's batches live until its last rows were written: a stream holds up to one window
    // more than its permits count, see the module doc).
    let row_bytes = batches.iter().map(batch_bytes).sum::<usize>() / (w.rows as usize).max(1);
    let sources: Arc<[RecordBatch]> = Arc::from(batches);
    for chunk in perm[lo..hi].chunks(out.batch_size) {
        let idx: Vec<(usize, usize)> = chunk.iter().map(|&j| index[j as usize]).collect();
        if !out.send(Gather::rows(sources.clone(), &idx), chunk.len() * row_bytes) {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Refuses a shuffle buffer whose two windows do not fit the memory the stream may use
/// (bytes per row measured on a copy of the window's first rows).
fn check_memory(batches: &[RecordBatch], rows: u64, o: &OrderLease, memory: usize) -> Result<()> {
    if o.spec.buffer == 0 || rows == 0 {
        return Ok(());
    }
    let mut idx = Vec::new();
    for (i, b) in batches.iter().enumerate() {
        let room = 1024 - idx.len();
        idx.extend((0..b.num_rows()).map(|r| (i, r)).take(room));
    }
    let refs: Vec<&RecordBatch> = batches.iter().collect();
    let sample = arrow_select::interleave::interleave_record_batch(&refs, &idx)
        .map_err(|e| Error::external("sizing a window's rows", e))?;
    let n = idx.len();
    let per_row = sample.get_array_memory_size() as f64 / n.max(1) as f64;
    let bytes = (per_row * rows as f64) as usize;
    if bytes.saturating_mul(2) > memory {
        return Err(Error::InvalidArgument(format!(
            "the shuffle buffer does not fit: a window of {rows} rows (--shuffle-buffer {}) holds \
             {} MiB, and a rank holds two (one read, one sent) = {} MiB, over its \
             {} MiB of the memory budget; lower --shuffle-buffer or raise --memory-mb \
             (serve: --read-ahead-mb)",
            o.spec.buffer,
            bytes >> 20,
            bytes.saturating_mul(2) >> 20,
            memory >> 20
        )));
    }
    Ok(())
}

#[cfg(test)]
#[path = "stream_tests.rs"]
mod tests;
