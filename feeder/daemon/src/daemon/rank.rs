//! The writer side of a rank ([`feed_rank`]): starts the rank's [`Reader`] (before the trainer
//! comes, where the batch size is the job's), takes the trainer, agrees the batch size, and
//! writes what it reads through the pipeline's [`EpochWriter`] (batches of the job's size with
//! their lineage, the markers), booking every batch for the trainer's acks, which go on to the
//! coordinator.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::thread;
use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;
use hydrofeed_coord::client::{CoordClient, Registered};
use hydrofeed_coord::{SkippedRange, Stage};
use hydrofeed_format::OnError;

use super::acks::AckBook;
use super::attach::{bind, take, Attached, Rejoin};
use super::batch_size::agree_batch_size;
use super::stats::RankStats;
use super::work::{metered, Asker, Reader, SkipSink, LEASES_IN_FLIGHT};
use super::{connect, lost_coordinator, note_lost, stop_or_lost, stop_requested, Feeder};
use crate::pipeline::{Budget, Ended, EpochWriter, Event};
use crate::writer::{self, Writer};
use crate::{Error, Result};

/// How often the writer looks for the trainer's last acks after the end of the feed.
const POLL: Duration = Duration::from_millis(20);

/// What one rank wrote: rows, batches, and the steps of the feed.
pub(super) type Fed = (u64, u64, u64);

/// Feeds one registered rank until the end of the feed: its trainer (`attached` when a
/// restarted feeder took it back before registering), its reader, its writer.
///
/// Where the batch size is the job's (not agreed among the trainers) and no trainer is attached
/// yet, the reader starts before the trainer comes: the first leases are read and decoded (within
/// the rank's memory budget) while the trainer starts up, and its ring is made ahead, so its
/// first batch waits for neither.
pub(super) fn feed_rank(
    f: &Feeder,
    st: &Arc<RankStats>,
    reg: &Registered,
    client: CoordClient,
    attached: Option<Attached>,
) -> Result<Fed> {
    let opts = &f.opts;
    let rank = reg.rank;
    let mut batch_size = reg.batch_size as usize;
    let early = attached.is_none() && !opts.batch_size_from_trainers;
    let enc = writer::encoder(&f.plan)?;
    let (attached, mut reading) = match attached {
        Some(a) => (Ok(a), None),
        None => {
            let listener = bind(opts, rank)?;
            let reading = early
                .then(|| ReaderRun::start(f, st, reg, batch_size))
                .transpose()?;
            (take(listener, opts, false), reading)
        }
    };
    let attached = match attached {
        Ok(a) => a,
        Err(e) => {
            if let Some(r) = reading {
                r.halt();
            }
            return Err(e);
        }
    };
    let Attached {
        listener,
        producer,
        asked,
        rejoin,
    } = attached;
    let mut told =
        format!("`--batch-size {batch_size}` of `hydrofeed launch` or `hydrofeed coordinator`");
    if opts.batch_size_from_trainers && rejoin.is_none() {
        batch_size = agree_batch_size(&opts.socket_dir, rank, asked, opts.accept_timeout)?;
        told = "what the other ranks' trainers asked for".into();
    }
    let book = Arc::new(Mutex::new(AckBook {
        frames: Default::default(),
        acked: Default::default(),
        client,
        rank,
        inc: reg.incarnation,
        st: st.clone(),
    }));
    // The trainer reads this rank's stage from its ring's header from now on.
    let status = producer.status_word();
    status.set(u32::from(st.stage().code()));
    let _ = st.ring_status.set(status);
    // The reader thread, woken by each forwarded ack: a reader told to wait for work (the end
    // of the feed and the epoch barrier wait for acks) asks again at once.
    let reader_thread: Arc<OnceLock<thread::Thread>> = Arc::new(OnceLock::new());
    let pid = producer.peer_pid();
    let mut w = Writer::builder(producer, enc)
        .stall_timeout(opts.stall_timeout)
        .batch_size(batch_size)
        .trainer(format!("trainer rank {rank}"))
        .on_ack(ack_sink(&book, &reader_thread, pid))
        .on_wait(wait_hook(st))
        .build();
    if let Some(a) = asked {
        if a != batch_size {
            let e = Error::InvalidArgument(format!(
                "rank {rank}: the trainer (pid {}) asked for batches of {a} rows, but the job's \
                 batch size is {batch_size} ({}: every rank takes the same steps); ask for \
                 {batch_size}, or leave the batch size unset",
                w.trainer_pid(),
                told
            ));
            w.error(&e);
            w.close();
            if let Some(r) = reading {
                r.halt();
            }
            // The trainer's mistake, and it was told: the rank ends as if its trainer left.
            return Err(Error::PeerLost(e.to_string()));
        }
    }
    let mut reading = match reading.take() {
        Some(r) => r,
        None => ReaderRun::start(f, st, reg, batch_size)?,
    };
    let _ = reader_thread.set(reading.thread.thread().clone());
    let mut ew = EpochWriter::new(w, batch_size)
        .with_acks(book_sink(&book, st))
        .stop_when(stop_or_lost);
    if let Some((e, r)) = rejoin.as_ref().and_then(|r| Some((resumed_epoch(r)?, r))) {
        ew = ew.resume_in(e, r.epoch_rows);
    }
    let mut r = write_rank(&mut ew, &mut reading.events, &book, opts.stall_timeout);
    if let Err(e) = &r {
        note_lost(e);
    }
    // Readers waiting for room or a unit stop; the reader thread at its next ask.
    reading.stop();
    let mut w = ew.into_writer();
    // Whatever ended the rank, what the trainer's code was handed is consumed (its hand-out
    // count is in the ring's header, also when it left without a last ack).
    // (Not to a coordinator that is gone: that would wait for it once more.)
    if !matches!(r, Err(Error::CoordinatorLost { .. })) {
        if let Err(e) = w.forward_handed() {
            tracing::warn!(rank, "forwarding the trainer's last hand-outs: {e}");
        }
    }
    if r.is_err() && w.said_bye() {
        // The trainer stopped reading on purpose (`terminate()`): what it acked is in the
        // coordinator's state; the rest goes to whoever resumes the job.
        tracing::info!(
            rank,
            "the trainer said bye after {} batches",
            w.report().batches
        );
        r = Ok(0);
    }
    reading.halt();
    w.finish(&r);
    drop(listener);
    r.map(|steps| (w.report().rows, w.report().batches, steps))
}

/// A rank's reader thread and what stops it.
struct ReaderRun {
    thread: thread::JoinHandle<()>,
    events: Receiver<Event>,
    stop: Arc<AtomicBool>,
    budget: Arc<Budget>,
}

impl ReaderRun {
    /// Starts the rank's reader: its leases read and decoded into batches of `batch_size` rows,
    /// within the rank's memory budget.
    fn start(f: &Feeder, st: &Arc<RankStats>, reg: &Registered, batch_size: usize) -> Result<Self> {
        let opts = &f.opts;
        let (rank, inc) = (reg.rank, reg.incarnation);
        let (tx, events) = crossbeam_channel::unbounded();
        let stop = Arc::new(AtomicBool::new(false));
        let mut read = opts.read.clone();
        read.batch_rows = batch_size;
        let budget = Budget::new(f.rank_memory(), LEASES_IN_FLIGHT);
        let report: Option<SkipSink> = if opts.read.on_error == OnError::Skip {
            let c = Mutex::new(connect(opts)?);
            Some(Arc::new(move |r: &SkippedRange| {
                c.lock()
                    .map_err(|_| Error::Internal("coordinator client poisoned".into()))?
                    .skipped(rank, inc, r)
            }))
        } else {
            None
        };
        let reader = Arc::new(Reader {
            storage: metered(&f.storage, st),
            plan: f.plan.clone(),
            read,
            st: st.clone(),
            pool: f.pool.clone(),
            budget: budget.clone(),
            report,
        });
        let ask = Asker {
            client: connect(opts)?,
            rank,
            inc,
            host: opts.host.clone(),
            known: 0,
        };
        let s = stop.clone();
        let thread = thread::Builder::new()
            .name(format!("hf-read{rank}"))
            .spawn(move || reader.run(ask, tx, s))
            .map_err(|e| Error::external("spawning a reader thread", e))?;
        Ok(Self {
            thread,
            events,
            stop,
            budget,
        })
    }

    /// Tells the reader to stop: readers waiting for room or a unit stop at once, the reader
    /// thread at its next ask.
    fn stop(&self) {
        self.budget.close();
        self.stop.store(true, Ordering::Relaxed);
    }

    /// Stops the reader and waits for it (its events, unread, are dropped first).
    fn halt(self) {
        self.stop();
        drop(self.events);
        self.thread.thread().unpark();
        let _ = self.thread.join();
    }
}

/// The epoch a re-attached trainer is in the middle of (its end-of-epoch frame still to come
/// unless it read it).
fn resumed_epoch(r: &Rejoin) -> Option<u32> {
    r.epoch.filter(|_| !r.epoch_done)
}

fn lock(book: &Mutex<AckBook>) -> Result<MutexGuard<'_, AckBook>> {
    book.lock()
        .map_err(|_| Error::Internal("ack book poisoned".into()))
}

/// Where the trainer's acks go: the book (and on to the coordinator); each wakes the reader.
fn ack_sink(
    book: &Arc<Mutex<AckBook>>,
    reader: &Arc<OnceLock<thread::Thread>>,
    pid: u32,
) -> writer::AckSink {
    let (b, r) = (book.clone(), reader.clone());
    Box::new(move |seq, feed| {
        let mut b = lock(&b)?;
        b.report(feed, pid);
        b.ack(seq)?;
        if let Some(t) = r.get() {
            t.unpark();
        }
        Ok(())
    })
}

/// Every batch written goes into the book, waiting for its ack; the counters follow.
fn book_sink(book: &Arc<Mutex<AckBook>>, st: &Arc<RankStats>) -> crate::pipeline::BatchSink {
    let (b, st) = (book.clone(), st.clone());
    Box::new(move |last_seq, pieces, report| {
        st.batches.store(report.batches, Ordering::Relaxed);
        st.bytes.store(report.bytes, Ordering::Relaxed);
        lock(&b)?.frames.push_back((last_seq, pieces));
        Ok(())
    })
}

/// The rank's stage while the writer waits for ring space.
fn wait_hook(st: &Arc<RankStats>) -> writer::WaitHook {
    let s = st.clone();
    Box::new(move |waited| {
        if waited.is_zero() {
            s.ring_wait(None);
            return;
        }
        let (since_ack, step) = {
            let t = s.trainer();
            (t.since_ack(Instant::now()), t.mean_step())
        };
        s.ring_wait(Some(ring_stage(waited, since_ack, step)));
        s.ring_wait_ms.fetch_add(100, Ordering::Relaxed);
    })
}

/// Writes the schema, then what the reader sends until the end of the feed (or a stop), then
/// waits (at most `stall`) for the trainer's last acks; the steps of the feed.
fn write_rank(
    ew: &mut EpochWriter,
    rx: &mut Receiver<Event>,
    book: &Mutex<AckBook>,
    stall: Duration,
) -> Result<u64> {
    ew.writer().put_schema()?;
    let (steps, stopped) = match ew.run(rx)? {
        Ended::End(steps) => (steps, stop_requested()),
        // Another rank lost the coordinator: this one ends with the same reason.
        Ended::Stopped if !stop_requested() => {
            ew.discard();
            return Err(lost_coordinator()
                .unwrap_or_else(|| Error::Internal("stopped without a reason".into())));
        }
        // Stopped early: the batches written so far are this rank's steps.
        Ended::Stopped => (ew.report().batches, true),
        Ended::Exhausted => {
            return Err(Error::Internal(
                "the reader thread stopped without end-of-feed".into(),
            ))
        }
    };
    if stopped {
        // Rows of a partial batch are not sent: un-acked, they go to whoever resumes.
        ew.discard();
    } else if ew.in_epoch() {
        ew.end_epoch()?;
    }
    ew.end_feed(steps)?;
    await_last_acks(ew.writer(), book, stall)?;
    Ok(steps)
}

/// The trainer's last acks come after it read end-of-feed: forward them before leaving, so the
/// coordinator's final state holds every consumed row.
fn await_last_acks(w: &mut Writer, book: &Mutex<AckBook>, stall: Duration) -> Result<()> {
    let t0 = Instant::now();
    while !lock(book)?.frames.is_empty() {
        match w.poll_control() {
            // Bye: the trainer stopped reading; what it did not ack was not consumed.
            Ok(true) => break,
            Ok(false) => {}
            Err(_) => break, // gone: its last acks were sent or are lost with it
        }
        if w.check_peer().is_err() || t0.elapsed() > stall {
            break;
        }
        thread::sleep(POLL);
    }
    Ok(())
}

/// The stage of a writer that has waited `waited` for ring space: `waiting for ring space` (the
/// trainer is slower than the feeder) or `trainer not consuming`. `since_ack`: how long ago the
/// trainer last acked a batch; `step`: its mean time per step (both from its acks, when it
/// sends them).
///
/// A slow trainer frees ring space about once per step, so a writer waits about one of its
/// steps for each frame: that is `waiting for ring space`, however long the step. Only a
/// trainer that took nothing (acked nothing) for four of its steps, and at least a second, is
/// `not consuming`. A trainer that sends no figures is judged by the wait alone (a second).
pub(super) fn ring_stage(
    waited: Duration,
    since_ack: Option<Duration>,
    step: Option<Duration>,
) -> Stage {
    let patience = step.map_or(IDLE_AFTER, |s| s.saturating_mul(4).max(IDLE_AFTER));
    let quiet = since_ack.map_or(waited, |a| a.min(waited));
    if quiet > patience {
        Stage::TrainerIdle
    } else {
        Stage::WaitingRing
    }
}

/// The least time without a batch taken before a trainer counts as not consuming.
const IDLE_AFTER: Duration = Duration::from_secs(1);

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    /// A trainer that takes a batch every 2 s while the ring stays full is slow, not idle; one
    /// that took nothing for four of its steps (at least 1 s) is not consuming.
    #[test]
    fn a_slow_trainer_is_waited_for_and_a_stopped_one_is_named() {
        // Slow: each put waits about one of its steps, and it acks every step.
        assert_eq!(
            ring_stage(2500 * MS, Some(100 * MS), Some(2000 * MS)),
            Stage::WaitingRing
        );
        assert_eq!(
            ring_stage(5000 * MS, Some(5000 * MS), Some(2000 * MS)),
            Stage::WaitingRing
        );
        // Stopped: nothing acked for four steps, and at least a second.
        assert_eq!(
            ring_stage(9000 * MS, Some(9000 * MS), Some(2000 * MS)),
            Stage::TrainerIdle
        );
        assert_eq!(
            ring_stage(1500 * MS, Some(1500 * MS), Some(10 * MS)),
            Stage::TrainerIdle
        );
        assert_eq!(
            ring_stage(500 * MS, Some(500 * MS), Some(10 * MS)),
            Stage::WaitingRing
        );
        // A trainer that sends no figures: the wait alone.
        assert_eq!(ring_stage(500 * MS, None, None), Stage::WaitingRing);
        assert_eq!(ring_stage(1500 * MS, None, None), Stage::TrainerIdle);
    }
}
