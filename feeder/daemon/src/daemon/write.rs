//! The writer side of a rank: attaches (or re-attaches) the trainer, cuts the leases' rows
//! into batches of the job's size with their lineage, writes frames and markers into the ring,
//! and forwards the trainer's acks to the coordinator.

use super::*;

/// Batches written but not yet acked, and per-lease acked rows.
pub(super) struct AckBook {
    /// `(last frame seq, the batch's pieces: rows of one lease each)`.
    pub(super) frames: VecDeque<(u64, Vec<Piece>)>,
    pub(super) acked: HashMap<u64, u64>,
    pub(super) client: CoordClient,
    pub(super) rank: u32,
    pub(super) inc: u64,
    pub(super) st: Arc<RankStats>,
}

impl AckBook {
    /// The trainer's figures that came with an ack (refused ones are counted, and warned
    /// about once).
    fn report(&mut self, feed: Option<FeedReport>, pid: u32) {
        let mut t = self.st.trainer();
        if let Err(why) = t.ack(Instant::now(), feed) {
            if t.refused == 1 {
                tracing::warn!(
                    rank = self.rank,
                    "the trainer (pid {pid}) reported figures that cannot be ({why}: {feed:?}); \
                     its reports are ignored until they can be"
                );
            }
        }
    }

    fn ack(&mut self, seq: u64) -> Result<()> {
        let mut touched: Vec<(u64, u32)> = Vec::new();
        while self.frames.front().is_some_and(|(s, _)| *s <= seq) {
            let (_, pieces) = self.frames.pop_front().unwrap_or_default();
            self.st.batches_acked.fetch_add(1, Ordering::Relaxed);
            for Piece { lease, split, rows } in pieces {
                *self.acked.entry(lease).or_default() += rows;
                self.st.rows_acked.fetch_add(rows, Ordering::Relaxed);
                if !touched.contains(&(lease, split)) {
                    touched.push((lease, split));
                }
            }
        }
        for (lease, split) in touched {
            let n = self.acked[&lease];
            self.client.ack(self.rank, self.inc, lease, split, n)?;
        }
        Ok(())
    }
}

/// A trainer attached to a rank's ring, before any batch.
pub(super) struct Attached {
    pub(super) listener: Listener,
    pub(super) producer: Producer,
    /// The batch size its `Hello` asked for.
    pub(super) asked: Option<usize>,
    /// What a re-attaching trainer reported (`--rejoin`).
    pub(super) rejoin: Option<Rejoin>,
}

/// Where a trainer that re-attaches to a restarted feeder is in the feed.
#[derive(Debug, Default)]
pub(super) struct Rejoin {
    pub(super) epoch: Option<u32>,
    pub(super) epoch_done: bool,
    pub(super) epoch_rows: u64,
    pub(super) consumed: Vec<Piece>,
}

/// Binds `rank`'s socket, takes its trainer's attach and `Hello` (and with `rejoin`, its
/// `Rejoin` report).
pub(super) fn attach(opts: &FeederOptions, rank: u32, rejoin: bool) -> Result<Attached> {
    let socket = opts.socket_dir.join(format!("rank-{rank}.sock"));
    let ring_bytes = (opts.memory_budget / 2 / opts.trainers as usize).clamp(8 << 20, 64 << 20);
    let listener = writer::bind(
        &socket,
        RingConfig {
            capacity: ring_bytes,
            max_frame: None,
        },
    )?;
    tracing::info!(rank, socket = %socket.display(), "waiting for the trainer");
    let mut producer = writer::accept(&listener, opts.accept_timeout)?;
    let asked = writer::hello(&mut producer, opts.accept_timeout)?;
    let rejoin = if rejoin {
        Some(rejoin_report(&mut producer, opts.accept_timeout)?)
    } else {
        None
    };
    Ok(Attached {
        listener,
        producer,
        asked,
        rejoin,
    })
}

/// Reads the `Rejoin` message(s) of a trainer re-attaching to a restarted feeder.
pub(super) fn rejoin_report(p: &mut Producer, timeout: Duration) -> Result<Rejoin> {
    let mut r = Rejoin::default();
    writer::await_control(
        p,
        timeout,
        "Rejoin",
        "say where it was in the feed (stage: rejoin)",
        |c| match c {
            Control::Rejoin {
                epoch,
                epoch_done,
                epoch_rows,
                consumed,
                more,
            } => {
                r.epoch = epoch;
                r.epoch_done = epoch_done;
                r.epoch_rows = epoch_rows;
                r.consumed.extend(consumed);
                if more {
                    ControlFlow::Continue(None)
                } else {
                    ControlFlow::Break(std::mem::take(&mut r))
                }
            }
            other => ControlFlow::Continue(Some(other)),
        },
    )
}

#[allow(clippy::too_many_arguments)] // the rank's parts, each owned elsewhere
pub(super) fn feed_rank(
    opts: &FeederOptions,
    reg: &hydrofeed_coord::client::Registered,
    plan: &Arc<Plan>,
    storage: &Arc<dyn Storage>,
    st: &Arc<RankStats>,
    client: CoordClient,
    pool: &Arc<rayon::ThreadPool>,
    attached: Option<Attached>,
) -> Result<(u64, u64, u64)> {
    let (rank, inc) = (reg.rank, reg.incarnation);
    let mut bs = reg.batch_size as usize;
    let Attached {
        listener,
        producer,
        asked,
        rejoin,
    } = match attached {
        Some(a) => a,
        None => attach(opts, rank, false)?,
    };
    let mut told = "`--batch-size {bs}` of `hydrofeed launch` or `hydrofeed coordinator`";
    if opts.batch_size_from_trainers && rejoin.is_none() {
        bs = agree_batch_size(&opts.socket_dir, rank, asked, opts.accept_timeout)?;
        told = "what the other ranks' trainers asked for";
    }
    let book = Arc::new(Mutex::new(AckBook {
        frames: VecDeque::new(),
        acked: HashMap::new(),
        client,
        rank,
        inc,
        st: st.clone(),
    }));
    // The trainer reads this rank's stage from its ring's header from now on.
    let status = producer.status_word();
    status.set(u32::from(st.stage().code()));
    let _ = st.ring_status.set(status);
    let pid = producer.peer_pid();
    // The reader thread, woken by each forwarded ack: a reader told to wait for work (the end
    // of the feed and the epoch barrier wait for acks) asks again at once.
    let reader_thread: Arc<OnceLock<thread::Thread>> = Arc::new(OnceLock::new());
    let on_ack: writer::AckSink = {
        let (b, r) = (book.clone(), reader_thread.clone());
        Box::new(move |seq, feed| {
            let mut b = b
                .lock()
                .map_err(|_| Error::Internal("ack book poisoned".into()))?;
            b.report(feed, pid);
            b.ack(seq)?;
            if let Some(t) = r.get() {
                t.unpark();
            }
            Ok(())
        })
    };
    let on_wait: writer::WaitHook = {
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
    };
    let mut w = Writer::builder(producer, writer::encoder(plan)?)
        .stall_timeout(opts.stall_timeout)
        .batch_size(bs)
        .trainer(format!("trainer rank {rank}"))
        .on_ack(on_ack)
        .on_wait(on_wait)
        .build();
    if let Some(a) = asked {
        if a != bs {
            let e = Error::InvalidArgument(format!(
                "rank {rank}: the trainer (pid {}) asked for batches of {a} rows, but the job's \
                 batch size is {bs} ({}: every rank takes the same steps); ask for {bs}, or leave \
                 the batch size unset",
                w.trainer_pid(),
                told.replace("{bs}", &bs.to_string())
            ));
            w.error(&e);
            w.close();
            // The trainer's mistake, and it was told: the rank ends as if its trainer left.
            return Err(Error::PeerLost(e.to_string()));
        }
    }
    let (tx, rx) = bounded(CHANNEL_BATCHES);
    let reader_stop = Arc::new(AtomicBool::new(false));
    let reader = {
        let c = connect(opts)?;
        let mut read = opts.read.clone();
        read.batch_rows = bs;
        let ctx = Arc::new(ReadCtx {
            storage: metered(storage, st),
            plan: plan.clone(),
            read,
            st: st.clone(),
            pool: pool.clone(),
            window_memory: opts.memory_budget / 2 / opts.trainers as usize,
        });
        let (stop, host) = (reader_stop.clone(), opts.host.clone());
        thread::Builder::new()
            .name(format!("hf-read{rank}"))
            .spawn(move || read_work(c, rank, inc, host, ctx, tx, stop))
            .map_err(|e| Error::external("spawning a reader thread", e))?
    };
    let _ = reader_thread.set(reader.thread().clone());
    let mut r = write_rank(
        &mut w,
        &rx,
        bs,
        &book,
        st,
        opts.stall_timeout,
        rejoin.as_ref(),
    );
    reader_stop.store(true, Ordering::Relaxed);
    drop(rx);
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
    let _ = reader.join();
    match &r {
        Ok(_) => w.close(),
        Err(Error::PeerLost(_)) => {}
        Err(e) => {
            w.error(e);
            w.close();
        }
    }
    drop(listener);
    r.map(|steps| (w.report().rows, w.report().batches, steps))
}

pub(super) fn write_rank(
    w: &mut Writer,
    rx: &Receiver<Ev>,
    bs: usize,
    book: &Arc<Mutex<AckBook>>,
    st: &RankStats,
    stall: Duration,
    rejoin: Option<&Rejoin>,
) -> Result<u64> {
    w.put_schema()?;
    // A trainer that re-attached is in the middle of an epoch (its end-of-epoch frame still
    // to come unless it read it), maybe in the middle of a batch that was cut in frames.
    let mut epoch: Option<u32> = rejoin.filter(|r| !r.epoch_done).and_then(|r| r.epoch);
    // Rows of the next batch, each piece tagged with its (lease, split).
    let mut pending: Rebatcher<(u64, u32)> = Rebatcher::default();
    // Rows the trainer already holds of its current batch (one cut in frames before a
    // restart): the next batch completes it.
    let mut short = match (rejoin, epoch) {
        (Some(r), Some(_)) => (r.epoch_rows % bs as u64) as usize,
        _ => 0,
    };
    let mut last_split = u32::MAX;
    let flush = |w: &mut Writer,
                 pending: &mut Rebatcher<(u64, u32)>,
                 short: &mut usize,
                 epoch: u32,
                 split: u32|
     -> Result<()> {
        if let Some((b, tags)) = pending.take_tagged(bs - *short)? {
            *short = 0;
            let pieces: Vec<Piece> = tags
                .into_iter()
                .map(|((lease, split), rows)| Piece {
                    lease,
                    split,
                    rows: rows as u64,
                })
                .collect();
            w.batch(epoch, split, &b, &pieces)?;
            st.batches.store(w.report().batches, Ordering::Relaxed);
            st.bytes.store(w.report().bytes, Ordering::Relaxed);
            let last = w.next_seq() - 1;
            book.lock()
                .map_err(|_| Error::Internal("ack book poisoned".into()))?
                .frames
                .push_back((last, pieces));
        }
        Ok(())
    };
    let steps = loop {
        if w.said_bye() {
            return Err(bye());
        }
        if stop_requested() {
            // Stopped early: the batches written so far are this rank's steps.
            break w.report().batches;
        }
        let ev = match rx.recv_timeout(POLL) {
            Ok(ev) => ev,
            Err(RecvTimeoutError::Timeout) => {
                if w.poll_control()? {
                    return Err(bye());
                }
                w.check_peer()?;
                continue;
            }
            Err(RecvTimeoutError::Disconnected) => {
                return Err(Error::Internal(
                    "the reader thread stopped without end-of-feed".into(),
                ))
            }
        };
        match ev {
            Ev::Lease(l) => {
                if epoch != Some(l.epoch) {
                    if let Some(e) = epoch {
                        // Quotas are multiples of the batch size: nothing is pending here
                        // unless the coordinator broke its contract; send it short then.
                        flush(w, &mut pending, &mut short, e, last_split)?;
                        let rows = w.report().rows;
                        w.marker(FrameKind::EndOfEpoch, e, u32::MAX, rows)?;
                    }
                    // (A re-attached trainer's cut batch belongs to the epoch that ended.)
                    short = 0;
                    epoch = Some(l.epoch);
                }
            }
            Ev::Rows(lease, split, b) => {
                last_split = split;
                let e = epoch.unwrap_or(0);
                pending.push_tagged(b, (lease, split));
                while pending.rows() >= bs - short {
                    flush(w, &mut pending, &mut short, e, split)?;
                }
            }
            Ev::End(steps) => break steps,
            Ev::Failed(e) => {
                let ep = epoch.unwrap_or(0);
                flush(w, &mut pending, &mut short, ep, last_split)?;
                return Err(e);
            }
        }
    };
    let e = epoch.unwrap_or(0);
    if stop_requested() {
        // Rows of a partial batch are not sent: un-acked, they go to whoever resumes.
        pending.clear();
    } else {
        flush(w, &mut pending, &mut short, e, last_split)?;
    }
    if epoch.is_some() && !stop_requested() {
        let rows = w.report().rows;
        w.marker(FrameKind::EndOfEpoch, e, u32::MAX, rows)?;
    }
    w.marker(FrameKind::EndOfFeed, e, u32::MAX, steps)?;
    // The trainer's last acks come after it read end-of-feed: forward them before leaving,
    // so the coordinator's final state holds every consumed row.
    let t0 = Instant::now();
    loop {
        let left = book
            .lock()
            .map_err(|_| Error::Internal("ack book poisoned".into()))?
            .frames
            .len();
        if left == 0 {
            break;
        }
        match w.poll_control() {
            Ok(true) => {
                // Bye: the trainer stopped reading; what it did not ack was not consumed.
                break;
            }
            Ok(false) => {}
            Err(_) => break, // gone: its last acks were sent or are lost with it
        }
        if w.check_peer().is_err() || t0.elapsed() > stall {
            break;
        }
        thread::sleep(POLL);
    }
    Ok(steps)
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

pub(super) fn bye() -> Error {
    Error::PeerLost("the trainer said bye".into())
}

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
