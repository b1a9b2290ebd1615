//! One-node producer without a coordinator (`hydrofeed serve`): reads an input with the format
//! readers and feeds one trainer through a ring.
//!
//! Flow: plan the input; bind the socket; accept one trainer; read its `Hello` control message
//! (the batch size it wants); then for each epoch, read through the [`crate::pipeline`]: the
//! splits in plan order (`PlanOrder`: one split per decode thread at a time, within the
//! read-ahead budget) or the fixed order of one rank ([`crate::stream`], `--shuffle-buffer`),
//! into the one `EpochWriter`: schema once, then batches of exactly the asked size (the last
//! of an epoch possibly shorter), `EndOfSplit` after the batch holding a split's last row,
//! `EndOfEpoch`, finally `EndOfFeed`.
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

use crossbeam_channel::Sender;
use hydrofeed_ipc::RingConfig;

use crate::pipeline::{decode_pool, Budget, EpochWriter, Event, PlanOrder, Rows, Tag};
use crate::stream::{read_segment, StreamCtx};
use crate::writer::{accept, bind, encoder, hello, Writer};
use crate::{Error, Result};
use hydrofeed_coord::order::{chunk_range, OrderSpec, Segment};
use hydrofeed_coord::OrderLease;
use hydrofeed_format::{self as format, Plan, ReadOptions};
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

/// Reads epoch `epoch` in the fixed order of one rank into `tx`: its chunk, then the rest
/// (fewer than one batch of rows), so that every row is read once per epoch.
fn read_epoch_ordered(
    ctx: &StreamCtx<'_>,
    order: ServeOrder,
    epoch: u32,
    batch_size: usize,
    tx: &Sender<Event>,
) {
    let total: u64 = ctx.plan.splits.iter().map(|s| s.rows).sum();
    let b = batch_size as u64;
    let tag = Tag {
        lease: 0,
        split: u32::MAX,
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
        let r = read_segment(ctx, &o, batch_size, |batch, permit| {
            open = tx.send(Event::Rows(Rows { tag, batch, permit })).is_ok();
            open
        });
        if let Err(e) = r {
            let _ = tx.send(Event::Failed(e));
            return;
        }
        if !open {
            return;
        }
    }
}

/// The largest split `serve` plans (compressed bytes): small enough that the decode threads
/// share a file's row groups, stripes or blocks, large enough that opening a split is rare.
const SPLIT_BYTES: u64 = 16 << 20;

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
    let (asked, _) = hello(&mut producer, opts.accept_timeout)?;
    let batch_size = asked.unwrap_or(opts.batch_size);
    let mut w = Writer::builder(producer, encoder(&plan)?)
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
    let mut ew = EpochWriter::new(w, batch_size);
    let result = feed(&mut ew, &storage, &plan, &read, opts);
    let mut w = ew.into_writer();
    w.finish(&result);
    drop(listener);
    result.map(|()| w.into_report())
}

/// Writes the schema, `opts.epochs` epochs and the end of the feed.
fn feed(
    ew: &mut EpochWriter,
    storage: &Arc<dyn Storage>,
    plan: &Arc<Plan>,
    read: &ReadOptions,
    opts: &ServeOptions,
) -> Result<()> {
    ew.writer().put_schema()?;
    // One decode pool for every epoch: the lanes of the fixed order, the splits in flight of
    // the plan order.
    let pool = decode_pool(opts.decode_threads)?;
    // Units: a split per decode thread in the plan order; two windows (one read, one sent) in
    // the fixed order.
    let units = match opts.order {
        None => pool.current_num_threads(),
        Some(_) => 2,
    };
    let job_seed = opts.order.map_or(0, |o| o.seed);
    for epoch in 0..opts.epochs {
        ew.begin_epoch(epoch)?;
        // Image crops and flips follow the epoch (the fixed order sets its own in the stream).
        let epoch_read = format::image::for_epoch(read, job_seed, u64::from(epoch));
        let read: &ReadOptions = &epoch_read;
        // One budget per epoch: an epoch that ended closed its own.
        let budget = Budget::new(opts.read_ahead, units);
        match opts.order {
            None => {
                let mut src = PlanOrder::new(
                    storage.clone(),
                    plan.clone(),
                    read.clone(),
                    pool.clone(),
                    budget,
                );
                ew.run(&mut src)?;
            }
            Some(order) => {
                let (tx, mut rx) = crossbeam_channel::unbounded();
                let ctx = StreamCtx {
                    storage,
                    plan,
                    read,
                    pool: &pool,
                    budget: &budget,
                    on_skipped: None,
                    on_padded: None,
                    pad_source: Some(&|| crate::fill::first_readable(storage, plan, read, 0)),
                };
                let r = thread::scope(|s| {
                    let ctx = &ctx;
                    let reader = s.spawn(move || {
                        read_epoch_ordered(ctx, order, epoch, read.batch_rows, &tx);
                        // `tx` drops here: the writer's source is exhausted.
                    });
                    let r = ew.run(&mut rx);
                    // Stops the reader if the writer stopped first.
                    budget.close();
                    drop(rx);
                    let _ = reader.join();
                    r
                });
                r?;
            }
        }
        ew.end_epoch()?;
        if ew.writer().poll_control()? {
            tracing::info!("trainer said bye after epoch {epoch}");
            break;
        }
    }
    let rows = ew.report().rows;
    ew.end_feed(rows)
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
                capacity: 32 << 20, // holds a whole test feed: `drain` keeps every slot
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
                first: true,
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
                    spec: OrderSpec::new(500, 4),
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

    /// A shuffle buffer over Parquet of fixed-width columns (the rows the writer copies from
    /// the window's batches straight into the ring): each row arrives whole, with the values
    /// its id was generated with, every row once.
    #[test]
    fn shuffled_rows_written_straight_from_their_window_arrive_whole() {
        use hydrofeed_format::gen::mnist_rows;
        use hydrofeed_format::split::Format;
        let d = tempfile::tempdir().unwrap();
        let data = d.path().join("data");
        let gen = GenOptions {
            format: Format::Parquet,
            rows: 2000,
            files: 3,
            ..Default::default()
        };
        write_dataset(&data, &gen).unwrap();
        let sock = d.path().join("p.sock");
        let o = ServeOptions {
            order: Some(ServeOrder {
                seed: 9,
                spec: OrderSpec::new(300, 3),
            }),
            ..opts(&data, &sock, 1)
        };
        let server = thread::spawn(move || serve(&o));
        let frames = drain(&sock, 64);
        assert_eq!(server.join().unwrap().unwrap().rows, 2000);
        let mut ids = Vec::new();
        for f in &frames {
            if let Frame::Batch(_, b) = f {
                let id = b.column_by_name("id").unwrap().as_primitive::<Int64Type>();
                let want = mnist_rows(Format::Parquet, 0, 0, 0).schema();
                assert_eq!(b.schema(), want);
                for (r, &i) in id.values().iter().enumerate() {
                    let row = mnist_rows(Format::Parquet, 0, i as u64, 1);
                    assert_eq!(b.slice(r, 1), row, "row {r} of a batch: id {i}");
                }
                ids.extend(id.values().iter().copied());
            }
        }
        assert_ne!(ids, (0..2000).collect::<Vec<i64>>(), "not shuffled");
        ids.sort_unstable();
        assert_eq!(ids, (0..2000).collect::<Vec<i64>>());
    }

    /// Random crops and flips differ from one epoch to the next and repeat in a rerun: the
    /// epoch reaches the image spec.
    #[test]
    fn image_crops_follow_the_epoch_and_repeat_in_a_rerun() {
        use hydrofeed_format::gen_images::{write_image_dataset, ImageGenOptions};
        use hydrofeed_format::image::ImageSpec;
        let d = tempfile::tempdir().unwrap();
        let gen = ImageGenOptions {
            format: hydrofeed_format::split::Format::Parquet,
            rows: 24,
            files: 1,
            seed: 0,
        };
        write_image_dataset(&d.path().join("data"), &gen).unwrap();
        let run = |name: &str| {
            let sock = d.path().join(name);
            let mut o = opts(&d.path().join("data"), &sock, 2);
            o.read.images = ImageSpec::parse_all("image=resize:40,randcrop:32,flip").unwrap();
            let server = thread::spawn(move || serve(&o));
            let frames = drain(&sock, 8);
            assert_eq!(server.join().unwrap().unwrap().rows, 48);
            let mut pixels = [Vec::new(), Vec::new()];
            for f in &frames {
                if let Frame::Batch(m, b) = f {
                    let mut col = b.column_by_name("image").unwrap().clone();
                    for _ in 0..3 {
                        col = col.as_fixed_size_list().values().clone();
                    }
                    let px = col.as_primitive::<arrow_array::types::UInt8Type>();
                    pixels[m.epoch as usize].extend_from_slice(px.values());
                }
            }
            pixels
        };
        let a = run("a.sock");
        assert_eq!(a[0].len(), 24 * 32 * 32 * 3);
        assert_ne!(a[0], a[1], "epoch 1 repeated epoch 0's crops and flips");
        assert_eq!(run("b.sock"), a);
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
        // Only whole batches before the error: a short one would reach a static-shape
        // trainer before the cause does.
        let sizes: Vec<usize> = frames
            .iter()
            .filter_map(|f| match f {
                Frame::Batch(_, b) => Some(b.num_rows()),
                _ => None,
            })
            .collect();
        assert!(sizes.iter().all(|&n| n == 64), "batch sizes {sizes:?}");
        let ids = ids_of(&frames);
        assert!(
            (1500 - 64..1750).contains(&ids.len()),
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
        assert!(
            frames
                .iter()
                .all(|f| !matches!(f, Frame::Batch(_, b) if b.num_rows() != 50)),
            "a short batch before the error"
        );
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
                first: true,
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
