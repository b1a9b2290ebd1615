//! One-node producer without a coordinator (`hydrofeed serve`): reads an input with the format
//! readers and feeds one trainer through a ring.
//!
//! Flow: plan the input; bind the socket; accept one trainer; read its `Hello` control message
//! (the batch size it wants); then for each epoch, decode the splits on the decode pool (one
//! split per thread at a time, forwarded in plan order) and write frames (schema once, then batches of exactly the asked size, the last of an
//! epoch possibly shorter; `EndOfSplit` after the batch holding a split's last row,
//! `EndOfEpoch`, finally `EndOfFeed`) into the ring.
//!
//! Copies: readers are asked for batches of the trainer's batch size, so a batch goes to the
//! ring as it came out of the decoder (one copy, into the ring slot). Only a batch that
//! straddles two splits is first concatenated (a second copy, once per split boundary).
//!
//! Failures: a read error becomes an `Error` frame (the trainer raises `DataError` naming file
//! and offset) and `serve` exits with that error. A trainer that dies is noticed within about
//! 100 ms of the next ring operation (`ReserveError::PeerLost`, or the control channel
//! closing), and `serve` exits with `Error::PeerLost`. The ring is a memfd, so nothing is left
//! in /dev/shm either way; the socket file is removed when the listener drops.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use arrow_array::RecordBatch;
use crossbeam_channel::{bounded, Receiver, Sender};
use hydrofeed_ipc::RingConfig;
use hydrofeed_tfbridge::FrameKind;

use crate::stream::{read_segment, StreamCtx};
use crate::writer::{accept, bind, encoder, hello, Writer, TICK};
use crate::{Error, Result};
use hydrofeed_coord::order::{chunk_range, OrderSpec, Segment};
use hydrofeed_coord::OrderLease;
use hydrofeed_format::{self as format, Plan, ReadOptions, Rebatcher};
use hydrofeed_storage::{self as storage, Storage};

/// What `serve` does.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// Input path, directory or glob.
    pub input: String,
    /// Unix socket path trainers connect to.
    pub socket: PathBuf,
    /// Batch size when the trainer does not ask for one.
    pub batch_size: usize,
    /// Number of epochs (passes over the input).
    pub epochs: u32,
    /// Read options (columns, format, on_error); `batch_rows` is set to the batch size.
    pub read: ReadOptions,
    /// Ring geometry.
    pub ring: RingConfig,
    /// How long to wait for a trainer to connect.
    pub accept_timeout: Duration,
    /// How long the ring may stay full (trainer alive but not consuming) before giving up.
    pub stall_timeout: Duration,
    /// `Some`: every epoch in the fixed order of one rank (`hydrofeed_coord::order`): lanes
    /// read in parallel, windows permuted, seeded per epoch. `None`: splits in plan order.
    pub order: Option<ServeOrder>,
    /// Threads decoding splits (0: one per CPU).
    pub decode_threads: usize,
    /// Decoded bytes the splits read ahead of the one being forwarded may hold (plan order).
    pub read_ahead: usize,
}

/// The fixed order of `serve`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServeOrder {
    /// Seed of the split order and the permutations.
    pub seed: u64,
    /// Shuffle buffer and cycle length.
    pub spec: OrderSpec,
}

impl Default for ServeOptions {
    fn default() -> Self {
        Self {
            input: String::new(),
            socket: PathBuf::new(),
            batch_size: 256,
            epochs: 1,
            read: ReadOptions::default(),
            ring: RingConfig::default(),
            accept_timeout: Duration::from_secs(300),
            stall_timeout: Duration::from_secs(600),
            order: None,
            decode_threads: 0,
            read_ahead: 256 << 20,
        }
    }
}

/// What a finished `serve` did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServeReport {
    /// Rows written (all epochs).
    pub rows: u64,
    /// Batch frames written.
    pub batches: u64,
    /// Payload bytes written (frames, headers included).
    pub bytes: u64,
    /// The batch size used.
    pub batch_size: usize,
}

/// What the reader thread sends.
enum Event {
    Batch(u32, RecordBatch),
    SplitEnd(u32, u64),
    Failed(Error),
}

/// Reads epoch `epoch` in the fixed order of one rank: its chunk, then the rest (fewer than one
/// batch of rows), so that every row is read once per epoch.
fn read_epoch_ordered(
    storage: Arc<dyn Storage>,
    plan: Arc<Plan>,
    opts: ReadOptions,
    order: ServeOrder,
    pool: &rayon::ThreadPool,
    epoch: u32,
    tx: Sender<Event>,
) {
    let r = (|| -> Result<()> {
        let total: u64 = plan.splits.iter().map(|s| s.rows).sum();
        let b = opts.batch_rows as u64;
        let ctx = StreamCtx {
            storage: &storage,
            plan: &plan,
            read: &opts,
            pool,
            memory: usize::MAX,
            on_skipped: None,
        };
        for chunk in 0..=1 {
            let (from, to) = chunk_range(total, 1, b, chunk);
            let o = OrderLease {
                segment: Segment {
                    data_epoch: epoch,
                    workers: 1,
                    chunk,
                    from: 0,
                    to: to - from,
                },
                seed: order.seed,
                shuffle: true,
                batch_size: b,
                spec: order.spec,
            };
            let mut open = true;
            read_segment(&ctx, &o, opts.batch_rows, |batch| {
                open = tx.send(Event::Batch(u32::MAX, batch)).is_ok();
                open
            })?;
            if !open {
                break;
            }
        }
        Ok(())
    })();
    if let Err(e) = r {
        let _ = tx.send(Event::Failed(e));
    }
}

/// The largest split `serve` plans (compressed bytes): small enough that the decode threads
/// share a file's row groups, stripes or blocks, large enough that opening a split is rare.
const SPLIT_BYTES: u64 = 16 << 20;

/// Batches the split being forwarded may hold queued when the read-ahead budget is spent
/// (it never waits on the budget itself, so the forwarder always has something to take).
const FRONT_QUEUE: usize = 2;

/// The read-ahead of the plan order: decoded bytes held by the splits in flight, and which
/// split the forwarder is taking from. A split behind the front waits for room in the budget;
/// the front waits only while it has `FRONT_QUEUE` batches queued.
struct ReadAhead {
    budget: usize,
    state: std::sync::Mutex<AheadState>,
    changed: std::sync::Condvar,
}

#[derive(Default)]
struct AheadState {
    front: usize,
    bytes: usize,
    front_queued: usize,
    closed: bool,
}

impl ReadAhead {
    fn new(budget: usize) -> Self {
        Self {
            budget,
            state: Default::default(),
            changed: Default::default(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, AheadState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Waits until split `i` may queue a batch of `bytes`; false once the forwarder is gone.
    fn reserve(&self, i: usize, bytes: usize) -> bool {
        let mut st = self.lock();
        loop {
            if st.closed {
                return false;
            }
            let fits = st.bytes + bytes <= self.budget;
            if (i == st.front && (fits || st.front_queued < FRONT_QUEUE)) || (i > st.front && fits)
            {
                st.bytes += bytes;
                if i == st.front {
                    st.front_queued += 1;
                }
                return true;
            }
            st = self.changed.wait(st).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// The forwarder took a batch of `bytes` from the front.
    fn release(&self, bytes: usize) {
        let mut st = self.lock();
        st.bytes = st.bytes.saturating_sub(bytes);
        st.front_queued = st.front_queued.saturating_sub(1);
        self.changed.notify_all();
    }

    /// The forwarder moves on to split `front`, whose batches already queued count as the
    /// front's.
    fn advance(&self, front: usize, queued: usize) {
        let mut st = self.lock();
        st.front = front;
        st.front_queued = queued;
        self.changed.notify_all();
    }

    fn close(&self) {
        self.lock().closed = true;
        self.changed.notify_all();
    }
}

/// A decoded batch's bytes as the read-ahead counts them.
fn batch_bytes(ev: &Event) -> usize {
    match ev {
        Event::Batch(_, b) => b.get_array_memory_size(),
        _ => 0,
    }
}

/// Reads epoch `epoch` in plan order with up to one split per decode thread in flight: each
/// split's batches go into a channel of their own, and the forwarder hands them on split by
/// split, so the trainer sees the plan's order. The splits ahead of the one being forwarded
/// hold at most `read_ahead` decoded bytes between them (`ReadAhead`). Every split in flight
/// has a thread of its own (at most `threads` are spawned), so none waits behind another.
fn read_epoch(
    storage: Arc<dyn Storage>,
    plan: Arc<Plan>,
    opts: ReadOptions,
    pool: &rayon::ThreadPool,
    read_ahead: usize,
    tx: Sender<Event>,
) {
    let threads = pool.current_num_threads().max(1);
    let ahead = Arc::new(ReadAhead::new(read_ahead));
    let mut queue: std::collections::VecDeque<Receiver<Event>> = Default::default();
    let mut next = 0usize;
    'splits: for front in 0.. {
        while queue.len() < threads && next < plan.splits.len() {
            let (stx, srx) = crossbeam_channel::unbounded();
            let (s, p, o, a, i) = (
                storage.clone(),
                plan.clone(),
                opts.clone(),
                ahead.clone(),
                next,
            );
            pool.spawn(move || read_split(&s, &p, &o, i, &a, &stx));
            queue.push_back(srx);
            next += 1;
        }
        let Some(srx) = queue.pop_front() else {
            break; // every split forwarded
        };
        ahead.advance(front, srx.len());
        // The split's channel closes after its `SplitEnd` or `Failed`.
        for ev in srx.iter() {
            if let Event::Batch(..) = ev {
                ahead.release(batch_bytes(&ev));
            }
            let failed = matches!(ev, Event::Failed(_));
            if tx.send(ev).is_err() || failed {
                break 'splits; // the writer is gone, or the first error ends the epoch
            }
        }
    }
    // Splits still in flight (an error, or the trainer left) stop at their next batch.
    ahead.close();
}

/// Reads split `i` of the plan into `tx`: its batches, then `SplitEnd`, or `Failed`. Stops
/// early when the forwarder has gone (an error in an earlier split, or the trainer left).
fn read_split(
    storage: &Arc<dyn Storage>,
    plan: &Plan,
    opts: &ReadOptions,
    i: usize,
    ahead: &ReadAhead,
    tx: &Sender<Event>,
) {
    let split = &plan.splits[i];
    let reader = match format::open_split(storage, plan, split, opts) {
        Ok(r) => r,
        Err(e) => {
            let _ = tx.send(Event::Failed(e));
            return;
        }
    };
    let mut rows = 0u64;
    for b in reader {
        match b {
            Ok(b) if b.num_rows() == 0 => {}
            Ok(b) => {
                rows += b.num_rows() as u64;
                let ev = Event::Batch(split.id, b);
                if !ahead.reserve(i, batch_bytes(&ev)) || tx.send(ev).is_err() {
                    return;
                }
            }
            Err(e) => {
                let _ = tx.send(Event::Failed(e));
                return;
            }
        }
    }
    let _ = tx.send(Event::SplitEnd(split.id, rows));
}

/// Runs a feed: plan, accept one trainer, stream `epochs` passes, end-of-feed.
pub fn serve(opts: &ServeOptions) -> Result<ServeReport> {
    let storage = storage::open_storage(&opts.input)?;
    // Splits of at most SPLIT_BYTES, so that a file is decoded by several threads at once.
    let mut planned = opts.read.clone();
    planned.split_bytes = planned.split_bytes.min(SPLIT_BYTES);
    let plan = Arc::new(format::plan(&storage, &opts.input, &planned)?);
    tracing::info!(
        splits = plan.splits.len(),
        rows = plan.total_rows(),
        "planned {}",
        opts.input
    );
    let listener = bind(&opts.socket, opts.ring)?;
    let mut producer = accept(&listener, opts.accept_timeout)?;
    let asked = hello(&mut producer, opts.accept_timeout)?;
    let batch_size = asked.unwrap_or(opts.batch_size);
    let enc = encoder(&plan)?;
    let mut w = Writer::builder(producer, enc)
        .stall_timeout(opts.stall_timeout)
        .batch_size(batch_size)
        .build();
    if batch_size == 0 {
        let e = Error::InvalidArgument("batch size 0".into());
        w.error(&e);
        return Err(e);
    }
    let mut read = opts.read.clone();
    read.batch_rows = batch_size;
    let result = feed(&mut w, &storage, &plan, &read, opts);
    match &result {
        Ok(()) => w.close(),
        Err(Error::PeerLost(_)) => {}
        Err(e) => {
            w.error(e);
            w.close();
        }
    }
    // Wait (bounded) for the trainer to drain and detach, so its last frames are not lost to
    // an early exit of ours (the ring outlives us anyway: the trainer holds the memfd).
    drop(listener);
    result.map(|()| w.into_report())
}

fn feed(
    w: &mut Writer,
    storage: &Arc<dyn Storage>,
    plan: &Arc<Plan>,
    read: &ReadOptions,
    opts: &ServeOptions,
) -> Result<()> {
    let (epochs, order) = (opts.epochs, opts.order);
    w.put_schema()?;
    let bs = read.batch_rows;
    // One decode pool for every epoch: the lanes of the fixed order, the splits in flight of
    // the plan order.
    let pool = Arc::new(
        rayon::ThreadPoolBuilder::new()
            .num_threads(opts.decode_threads)
            .thread_name(|i| format!("hf-decode{i}"))
            .build()
            .map_err(|e| Error::external("starting the decode pool", e))?,
    );
    for epoch in 0..epochs {
        let (tx, rx): (Sender<Event>, Receiver<Event>) = bounded(4);
        let (s, p, o) = (storage.clone(), plan.clone(), read.clone());
        let (pool, read_ahead) = (pool.clone(), opts.read_ahead);
        let reader = thread::Builder::new()
            .name(format!("hf-read-e{epoch}"))
            .spawn(move || match order {
                Some(ord) => read_epoch_ordered(s, p, o, ord, &pool, epoch, tx),
                None => read_epoch(s, p, o, &pool, read_ahead, tx),
            })
            .map_err(|e| Error::external("spawning the reader thread", e))?;
        let r = write_epoch(w, &rx, epoch, bs);
        drop(rx); // unblocks the reader if we stop early
        let _ = reader.join();
        r?;
        let rows = w.report().rows;
        w.marker(FrameKind::EndOfEpoch, epoch, u32::MAX, rows)?;
        if w.poll_control()? {
            tracing::info!("trainer said bye after epoch {epoch}");
            break;
        }
    }
    w.marker(
        FrameKind::EndOfFeed,
        epochs.saturating_sub(1),
        u32::MAX,
        w.report().rows,
    )
}

fn write_epoch(w: &mut Writer, rx: &Receiver<Event>, epoch: u32, bs: usize) -> Result<()> {
    // Rows of the next batch, and split ends waiting for the batch holding their last row.
    let mut pending = Rebatcher::default();
    let mut pending_ends: Vec<(u32, u64)> = Vec::new();
    let mut last_split = u32::MAX;
    let flush = |w: &mut Writer,
                 pending: &mut Rebatcher,
                 ends: &mut Vec<(u32, u64)>,
                 split: u32|
     -> Result<()> {
        if let Some(b) = pending.take(bs)? {
            w.batch(epoch, split, &b, &[])?;
        }
        for (s, rows) in ends.drain(..) {
            w.marker(FrameKind::EndOfSplit, epoch, s, rows)?;
        }
        Ok(())
    };
    loop {
        let ev = match rx.recv_timeout(TICK) {
            Ok(ev) => ev,
            Err(crossbeam_channel::RecvTimeoutError::Timeout) => {
                // Reading is slow: still notice a trainer that went away.
                w.check_peer()?;
                continue;
            }
            Err(crossbeam_channel::RecvTimeoutError::Disconnected) => break,
        };
        match ev {
            Event::Batch(split, b) => {
                last_split = split;
                pending.push(b);
                while pending.rows() >= bs {
                    flush(w, &mut pending, &mut pending_ends, split)?;
                }
            }
            Event::SplitEnd(split, rows) => {
                pending_ends.push((split, rows));
                if pending.is_empty() {
                    flush(w, &mut pending, &mut pending_ends, split)?;
                }
            }
            Event::Failed(e) => {
                // Rows read before the error still reach the trainer, then the error.
                flush(w, &mut pending, &mut pending_ends, last_split)?;
                return Err(e);
            }
        }
    }
    flush(w, &mut pending, &mut pending_ends, last_split)
}

/// Whether `p` is an existing socket left by a dead server (tests, launchers).
pub fn stale_socket(p: &Path) -> bool {
    std::os::unix::net::UnixStream::connect(p).is_err() && p.exists()
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use arrow_array::cast::AsArray;
    use arrow_array::types::Int64Type;
    use hydrofeed_ipc::connect;
    use hydrofeed_tfbridge::{owned_buffer, Control, ErrorCode, Frame, FrameDecoder};

    use super::*;
    use hydrofeed_format::gen::{write_dataset, GenOptions};

    fn dataset(dir: &Path, rows: u64, files: usize) {
        write_dataset(
            dir,
            &GenOptions {
                format: hydrofeed_format::split::Format::Tfrecord,
                rows,
                files,
                ..Default::default()
            },
        )
        .unwrap();
    }

    fn opts(input: &Path, sock: &Path, epochs: u32) -> ServeOptions {
        ServeOptions {
            input: input.display().to_string(),
            socket: sock.to_path_buf(),
            epochs,
            ring: RingConfig {
                capacity: 32 << 20, // holds a whole test feed: `drain` keeps every lease
                max_frame: None,
            },
            accept_timeout: Duration::from_secs(20),
            stall_timeout: Duration::from_secs(20),
            ..Default::default()
        }
    }

    /// Reads every frame until the ring closes.
    fn drain(sock: &Path, batch: u64) -> Vec<Frame> {
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut c = loop {
            match connect(sock, Duration::from_secs(1)) {
                Ok(c) => break c,
                Err(_) if Instant::now() < deadline => thread::sleep(Duration::from_millis(20)),
                Err(e) => panic!("connect: {e}"),
            }
        };
        c.send_control(
            &Control::Hello {
                batch_size: Some(batch),
                pid: 1,
            }
            .to_bytes(),
        )
        .unwrap();
        let mut dec = FrameDecoder::new();
        let mut out = Vec::new();
        loop {
            match c.next(Duration::from_secs(20)) {
                Ok(Some(l)) => out.push(dec.decode(&owned_buffer(l)).unwrap()),
                Ok(None) => break,
                Err(e) => panic!("after {} frames ({:?}): {e}", out.len(), out.last()),
            }
        }
        out
    }

    /// `--shuffle-buffer`: every row once per epoch, mixed across files, another order each
    /// epoch, the same order for the same seed.
    #[test]
    fn shuffle_buffer_mixes_every_epoch_and_repeats_with_the_seed() {
        let d = tempfile::tempdir().unwrap();
        dataset(&d.path().join("data"), 3000, 4);
        let run = |name: &str, seed: u64| {
            let sock = d.path().join(name);
            let o = ServeOptions {
                order: Some(ServeOrder {
                    seed,
                    spec: OrderSpec {
                        buffer: 500,
                        cycle: 4,
                    },
                }),
                ..opts(&d.path().join("data"), &sock, 2)
            };
            let server = thread::spawn(move || serve(&o));
            let frames = drain(&sock, 100);
            assert_eq!(server.join().unwrap().unwrap().rows, 6000);
            let mut ids = [Vec::new(), Vec::new()];
            for f in &frames {
                if let Frame::Batch(m, b) = f {
                    let col = b.column_by_name("id").unwrap().as_primitive::<Int64Type>();
                    ids[m.epoch as usize].extend(col.values().iter().copied());
                }
            }
            ids
        };
        let ids = run("a.sock", 3);
        for e in &ids {
            let mut sorted = e.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, (0..3000).collect::<Vec<i64>>());
            // Mixed across the 4 files (750 ids each): every batch of 100 holds several.
            let files: usize = e
                .chunks(100)
                .map(|c| {
                    let mut f: Vec<i64> = c.iter().map(|x| x / 750).collect();
                    f.sort_unstable();
                    f.dedup();
                    f.len()
                })
                .min()
                .unwrap();
            assert!(files >= 3, "a batch from {files} files");
        }
        assert_ne!(ids[0], ids[1]);
        assert_eq!(run("b.sock", 3), ids);
        assert_ne!(run("c.sock", 4)[0], ids[0]);
    }

    #[test]
    fn rebatches_across_files_and_marks_epochs() {
        let d = tempfile::tempdir().unwrap();
        dataset(&d.path().join("data"), 1000, 3);
        let sock = d.path().join("s.sock");
        let o = opts(&d.path().join("data"), &sock, 2);
        let server = thread::spawn(move || serve(&o));
        let frames = drain(&sock, 128);
        let report = server.join().unwrap().unwrap();
        assert_eq!(report.rows, 2000);
        assert!(!sock.exists(), "socket file left behind");
        assert!(matches!(frames[0], Frame::Schema(..)));
        let mut ids = [Vec::new(), Vec::new()];
        let mut sizes = Vec::new();
        let (mut split_ends, mut epoch_ends, mut feed_ends) = (0, 0, 0);
        let mut seq = 0;
        for f in &frames {
            match f {
                Frame::Schema(m, _) => assert_eq!(m.seq, 0),
                Frame::Batch(m, b) => {
                    seq += 1;
                    assert_eq!(m.seq, seq);
                    sizes.push(b.num_rows());
                    let col = b.column_by_name("id").unwrap().as_primitive::<Int64Type>();
                    ids[m.epoch as usize].extend(col.values().iter().copied());
                }
                Frame::EndOfSplit(m) => {
                    seq += 1;
                    assert_eq!(m.seq, seq);
                    split_ends += 1;
                }
                Frame::EndOfEpoch(_) => {
                    seq += 1;
                    epoch_ends += 1;
                }
                Frame::EndOfFeed(m) => {
                    seq += 1;
                    assert_eq!(m.rows, 2000);
                    feed_ends += 1;
                }
                Frame::Error(..) => panic!("{f:?}"),
            }
        }
        let want: Vec<i64> = (0..1000).collect();
        assert_eq!(ids[0], want);
        assert_eq!(ids[1], want);
        // 1000 = 7 * 128 + 104 per epoch, whatever the file boundaries.
        let per_epoch: Vec<usize> = [vec![128; 7], vec![104]].concat();
        assert_eq!(sizes, [per_epoch.clone(), per_epoch].concat());
        assert_eq!((epoch_ends, feed_ends), (2, 1));
        assert!(
            split_ends >= 6,
            "{split_ends} split ends for 3 files x 2 epochs"
        );
        assert!(matches!(frames.last(), Some(Frame::EndOfFeed(_))));
    }

    /// Splits decoded in parallel reach the trainer in plan order, and an error in one split
    /// ends the feed after exactly the rows before it: none of a later split, decoded ahead,
    /// slips in.
    #[test]
    fn parallel_decode_keeps_plan_order_and_stops_at_the_first_error() {
        let d = tempfile::tempdir().unwrap();
        let data = d.path().join("data");
        dataset(&data, 3000, 12); // 250 rows a file
        let mut files: Vec<PathBuf> = std::fs::read_dir(&data)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        let ids_of = |frames: &[Frame]| -> Vec<i64> {
            let mut ids = Vec::new();
            for f in frames {
                if let Frame::Batch(_, b) = f {
                    let col = b.column_by_name("id").unwrap().as_primitive::<Int64Type>();
                    ids.extend(col.values().iter().copied());
                }
            }
            ids
        };
        // A read-ahead of one byte: the splits behind the front wait, the front never does.
        for (threads, read_ahead) in [(1, 256 << 20), (4, 256 << 20), (4, 1)] {
            let sock = d.path().join(format!("ok{threads}-{read_ahead}.sock"));
            let o = ServeOptions {
                decode_threads: threads,
                read_ahead,
                ..opts(&data, &sock, 2)
            };
            let server = thread::spawn(move || serve(&o));
            let frames = drain(&sock, 64);
            assert_eq!(server.join().unwrap().unwrap().rows, 6000);
            let want: Vec<i64> = (0..3000).chain(0..3000).collect();
            assert_eq!(
                ids_of(&frames),
                want,
                "{threads} threads, {read_ahead} B ahead"
            );
        }
        let bad = &files[6];
        let mut bytes = std::fs::read(bad).unwrap();
        let at = bytes.len() / 2;
        bytes[at] ^= 0x55;
        std::fs::write(bad, bytes).unwrap();
        let sock = d.path().join("bad.sock");
        let o = ServeOptions {
            decode_threads: 4,
            ..opts(&data, &sock, 1)
        };
        let server = thread::spawn(move || serve(&o));
        let frames = drain(&sock, 64);
        let err = server.join().unwrap().unwrap_err();
        assert!(
            err.to_string().contains(&bad.display().to_string()),
            "{err}"
        );
        assert!(
            matches!(frames.last(), Some(Frame::Error(..))),
            "{:?}",
            frames.last()
        );
        let ids = ids_of(&frames);
        assert!(
            (1500..1750).contains(&ids.len()),
            "{} rows before the error in rows 1500..1750",
            ids.len()
        );
        assert_eq!(ids, (0..ids.len() as i64).collect::<Vec<_>>());
    }

    #[test]
    fn corrupt_input_becomes_an_error_frame() {
        let d = tempfile::tempdir().unwrap();
        let data = d.path().join("data");
        dataset(&data, 300, 1);
        let f = std::fs::read_dir(&data)
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path();
        let mut bytes = std::fs::read(&f).unwrap();
        let at = bytes.len() / 2;
        bytes[at] ^= 0x55;
        std::fs::write(&f, bytes).unwrap();
        let sock = d.path().join("s.sock");
        let o = opts(&data, &sock, 1);
        let server = thread::spawn(move || serve(&o));
        let frames = drain(&sock, 50);
        let err = server.join().unwrap().unwrap_err();
        assert!(matches!(err, Error::Data { .. }), "{err}");
        let Some(Frame::Error(_, code, msg)) = frames.last() else {
            panic!("last frame {:?}", frames.last())
        };
        assert_eq!(*code, ErrorCode::Data);
        assert!(
            msg.contains(&f.display().to_string()) && msg.contains("byte offset"),
            "{msg}"
        );
        let rows: usize = frames
            .iter()
            .map(|f| {
                if let Frame::Batch(_, b) = f {
                    b.num_rows()
                } else {
                    0
                }
            })
            .sum();
        assert!(rows > 0 && rows < 300, "{rows} rows before the error");
    }

    #[test]
    fn trainer_gone_is_peer_lost() {
        let d = tempfile::tempdir().unwrap();
        dataset(&d.path().join("data"), 3000, 1);
        let sock = d.path().join("s.sock");
        let o = opts(&d.path().join("data"), &sock, 5);
        let server = thread::spawn(move || serve(&o));
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut c = loop {
            match connect(&sock, Duration::from_secs(1)) {
                Ok(c) => break c,
                Err(_) if Instant::now() < deadline => thread::sleep(Duration::from_millis(20)),
                Err(e) => panic!("connect: {e}"),
            }
        };
        c.send_control(
            &Control::Hello {
                batch_size: Some(100),
                pid: 1,
            }
            .to_bytes(),
        )
        .unwrap();
        let _first = c.next(Duration::from_secs(20)).unwrap().unwrap();
        drop(_first);
        drop(c);
        let t0 = Instant::now();
        let err = server.join().unwrap().unwrap_err();
        assert!(matches!(err, Error::PeerLost(_)), "{err}");
        assert!(t0.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn plan_input_lists_directories_and_projects() {
        let d = tempfile::tempdir().unwrap();
        dataset(&d.path().join("data"), 100, 2);
        std::fs::write(d.path().join("data/_SUCCESS"), b"").unwrap();
        let storage = storage::open_storage("/").unwrap();
        let p = format::plan(
            &storage,
            &d.path().join("data").display().to_string(),
            &ReadOptions {
                columns: Some(vec!["label".into()]),
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(p.total_rows(), 100);
        assert_eq!(p.schema.fields().len(), 1);
        assert!(p.splits.iter().all(|s| !s.path.ends_with("_SUCCESS")));
        let missing = format::plan(&storage, "/nonexistent/x", &ReadOptions::default());
        assert!(matches!(missing, Err(Error::NotFound { .. })));
    }
}
