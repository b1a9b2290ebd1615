//! The ring writer shared by `serve` and the feeder daemon: encodes frames into ring
//! reservations (halving a batch that does not fit, waiting out a full ring with a stall
//! timeout), reads the trainer's control messages (acks, bye), and the socket handshake
//! (`bind`, `accept`, `hello`).

use std::ops::ControlFlow;
use std::path::Path;
use std::time::{Duration, Instant};

use arrow_array::RecordBatch;
use arrow_buffer::{Buffer, MutableBuffer};
use hydrofeed_ipc::{AttachError, ControlError, Listener, Producer, ReserveError, RingConfig};
use hydrofeed_tfbridge::{
    error_frame, marker, Control, Encoded, ErrorCode, FeedReport, FillPart, FrameEncoder,
    FrameError, FrameKind, FrameMeta, Piece,
};

use crate::serve::ServeReport;
use crate::{Error, Result};
use hydrofeed_error::Location;
use hydrofeed_format::{Gather, Plan, Rowset};

/// Short wait used for every ring operation, so peer death and stalls are seen promptly.
pub(crate) const TICK: Duration = Duration::from_millis(100);

/// With an ack sink, the writer reads the control channel at least this often while it writes
/// (a ring that stays full but drains within `TICK` would otherwise never be polled, and the
/// coordinator would see the trainer's acks only at the next epoch barrier). With the
/// trainer's own 50 ms ack interval, the coordinator's acked rows lag the trainer's
/// consumption by at most about 100 ms plus one `Ack` call.
pub(crate) const ACK_POLL: Duration = Duration::from_millis(50);

/// The pieces of the first `rows` rows of `pieces` (in order), and those of the rest.
pub(crate) fn split_pieces(pieces: &[Piece], mut rows: u64) -> (Vec<Piece>, Vec<Piece>) {
    let (mut head, mut tail) = (Vec::new(), Vec::new());
    for p in pieces {
        if rows >= p.rows {
            rows -= p.rows;
            head.push(*p);
        } else if rows > 0 {
            head.push(Piece { rows, ..*p });
            tail.push(Piece {
                rows: p.rows - rows,
                ..*p
            });
            rows = 0;
        } else {
            tail.push(*p);
        }
    }
    (head, tail)
}

/// Called with the sequence number of every `Ack` control message and the trainer's figures
/// that came with it (the daemon forwards the acked rows to the coordinator and serves the
/// figures as metrics); an error stops the feed.
pub(crate) type AckSink = Box<dyn FnMut(u64, Option<FeedReport>) -> Result<()> + Send>;

/// Called while waiting for ring space with how long this wait has lasted (zero once a frame
/// went in): the daemon's heartbeat stage.
pub(crate) type WaitHook = Box<dyn Fn(Duration) + Send>;

/// The writing side: encodes frames and puts them into the ring. Shared by `serve` and the
/// feeder daemon (`crate::daemon`); made with [`Writer::builder`].
pub(crate) struct Writer {
    producer: Producer,
    enc: FrameEncoder,
    seq: u64,
    stall: Duration,
    report: ServeReport,
    peer: u32,
    /// Who the trainer is in messages ("trainer", "trainer rank 3").
    who: String,
    /// Where trainer acks go (`None` in `serve`: acks are ignored).
    on_ack: Option<AckSink>,
    on_wait: Option<WaitHook>,
    /// The trainer said `Bye` (it stops reading on purpose).
    bye: bool,
    /// When the control channel was last read.
    last_poll: Instant,
    /// Frames the trainer's hand-out count (in the ring's header) covered when last forwarded.
    handed: u64,
    /// The placeholder values of gathered batches ([`Gathered`]), never touched.
    zeros: Buffer,
}

/// Settings of a [`Writer`]: the stall timeout, the batch size it reports, the ack sink and
/// the wait hook.
pub(crate) struct WriterBuilder {
    producer: Producer,
    enc: FrameEncoder,
    stall: Duration,
    batch_size: usize,
    who: String,
    on_ack: Option<AckSink>,
    on_wait: Option<WaitHook>,
}

impl WriterBuilder {
    /// Who the trainer is in messages (default `trainer`; the daemon: `trainer rank R`).
    pub(crate) fn trainer(mut self, who: String) -> Self {
        self.who = who;
        self
    }

    /// How long a full ring may stay full before the feed fails naming the trainer (default:
    /// no limit).
    pub(crate) fn stall_timeout(mut self, d: Duration) -> Self {
        self.stall = d;
        self
    }

    /// The batch size the feed writes (reported back in [`ServeReport::batch_size`]).
    pub(crate) fn batch_size(mut self, batch_size: usize) -> Self {
        self.batch_size = batch_size;
        self
    }

    /// Where the trainer's acks go; with one, the control channel is read at least every
    /// `ACK_POLL` while writing.
    pub(crate) fn on_ack(mut self, sink: AckSink) -> Self {
        self.on_ack = Some(sink);
        self
    }

    /// Called while waiting for ring space.
    pub(crate) fn on_wait(mut self, hook: WaitHook) -> Self {
        self.on_wait = Some(hook);
        self
    }

    /// The writer.
    pub(crate) fn build(self) -> Writer {
        let peer = self.producer.peer_pid();
        Writer {
            producer: self.producer,
            enc: self.enc,
            seq: 0,
            stall: self.stall,
            report: ServeReport {
                batch_size: self.batch_size,
                ..Default::default()
            },
            peer,
            who: self.who,
            on_ack: self.on_ack,
            on_wait: self.on_wait,
            bye: false,
            last_poll: Instant::now(),
            handed: 0,
            zeros: Buffer::from_vec(Vec::<u8>::new()),
        }
    }
}

impl Writer {
    /// A writer over an attached ring, encoding with `enc`.
    pub(crate) fn builder(producer: Producer, enc: FrameEncoder) -> WriterBuilder {
        WriterBuilder {
            producer,
            enc,
            stall: Duration::MAX,
            batch_size: 0,
            who: "trainer".into(),
            on_ack: None,
            on_wait: None,
        }
    }

    /// What was written so far.
    pub(crate) fn report(&self) -> &ServeReport {
        &self.report
    }

    /// What was written, once the feed is over.
    pub(crate) fn into_report(self) -> ServeReport {
        self.report
    }

    /// The sequence number the next frame gets (frames written so far).
    pub(crate) fn next_seq(&self) -> u64 {
        self.seq
    }

    /// Whether the trainer said `Bye` (it stopped reading on purpose).
    pub(crate) fn said_bye(&self) -> bool {
        self.bye
    }

    /// The trainer's pid.
    pub(crate) fn trainer_pid(&self) -> u32 {
        self.peer
    }

    /// The trainer's end still there, or [`Self::lost`] (after forwarding what it was handed).
    pub(crate) fn check_peer(&mut self) -> Result<()> {
        if self.producer.check_peer().is_err() {
            self.forward_handed()?;
            return Err(self.lost());
        }
        Ok(())
    }

    /// Acks what the trainer's code was handed, as the ring's header says (the trainer
    /// publishes it there as it hands batches out, so this needs no message from it and holds
    /// after it died): the frames up to it count as consumed.
    pub(crate) fn forward_handed(&mut self) -> Result<()> {
        let n = self.producer.peer_handed();
        if n > self.handed {
            self.handed = n;
            if let Some(f) = &mut self.on_ack {
                f(n - 1, None)?;
            }
        }
        Ok(())
    }

    /// Closes the producer's end: the trainer reads what is in the ring, then the end.
    pub(crate) fn close(&mut self) {
        self.producer.close();
    }

    /// Ends the feed after `r`: the trainer reads what is in the ring, then the end, preceded
    /// by an error frame when the feed failed (not when the trainer itself is gone).
    pub(crate) fn finish<T>(&mut self, r: &Result<T>) {
        match r {
            Ok(_) => self.close(),
            Err(Error::PeerLost(_)) => {}
            Err(e) => {
                self.error(e);
                self.close();
            }
        }
    }

    /// The schema frame, written once before the batches.
    pub(crate) fn put_schema(&mut self) -> Result<()> {
        let f = self
            .enc
            .schema_frame(self.meta(0, u32::MAX, 0))
            .map_err(|e| Error::external("frame encoding", e))?;
        self.put(&f)
    }

    pub(crate) fn lost(&self) -> Error {
        Error::PeerLost(format!(
            "{} (pid {}) is gone: it died or closed its end of the ring",
            self.who, self.peer
        ))
    }

    pub(crate) fn put(&mut self, f: &Encoded) -> Result<()> {
        self.put_filling(f, &mut |_, _| Ok(false))
    }

    /// [`Writer::put`], with the parts `fill` writes itself ([`Encoded::write_filling`]).
    fn put_filling(&mut self, f: &Encoded, fill: &mut FillPart<'_>) -> Result<()> {
        let started = Instant::now();
        if self.on_ack.is_some() && self.last_poll.elapsed() >= ACK_POLL {
            self.poll_control()?;
        }
        loop {
            match self.producer.reserve(f.len(), TICK) {
                Ok(mut r) => {
                    if let Some(w) = &self.on_wait {
                        w(Duration::ZERO);
                    }
                    f.write_filling(&mut r, fill)
                        .map_err(|e| Error::external("frame encoding", e))?;
                    r.commit();
                    self.seq += 1;
                    self.report.bytes += f.len() as u64;
                    return Ok(());
                }
                Err(ReserveError::Timeout) => {
                    if let Some(w) = &self.on_wait {
                        w(started.elapsed());
                    }
                    if self.on_ack.is_some() {
                        // Acks free nothing in the ring, but the coordinator's epoch barrier
                        // waits for them: keep forwarding while the ring is full.
                        self.poll_control()?;
                    }
                    if started.elapsed() > self.stall {
                        // The trainer's failure, not the feeder's: a distinct error, so that
                        // `launch` names the trainer.
                        return Err(Error::Stalled {
                            who: format!("{} (pid {})", self.who, self.peer),
                            secs: self.stall.as_secs_f64(),
                        });
                    }
                }
                Err(ReserveError::PeerLost) | Err(ReserveError::Closed) => {
                    // Its last acks may still be queued on the control channel: forward them,
                    // and what its hand-out count says.
                    if self.on_ack.is_some() {
                        let _ = self.poll_control();
                        self.forward_handed()?;
                    }
                    return Err(self.lost());
                }
                Err(ReserveError::TooLarge) => {
                    return Err(Error::InvalidArgument(format!(
                        "a {}-byte frame does not fit the ring (max frame {} bytes)",
                        f.len(),
                        self.producer.max_frame()
                    )))
                }
            }
        }
    }

    pub(crate) fn meta(&self, epoch: u32, split: u32, rows: u64) -> FrameMeta {
        FrameMeta {
            epoch,
            split,
            seq: self.seq,
            rows,
        }
    }

    /// Writes one batch, halving it while it is larger than the ring's largest frame (a frame
    /// dropped that way is never committed, so its dictionaries do not count as sent). Each
    /// frame carries its share of `pieces` (the leases its rows belong to) as lineage.
    pub(crate) fn batch(
        &mut self,
        epoch: u32,
        split: u32,
        b: &RecordBatch,
        pieces: &[Piece],
    ) -> Result<()> {
        let meta = self.meta(epoch, split, 0);
        let f = self
            .enc
            .batch_within(b, meta, self.producer.max_frame())
            .map_err(|e| match e {
                FrameError::DictionaryTooLarge { .. } => Error::InvalidArgument(e.to_string()),
                e => Error::Internal(format!("frame encoding: {e}")),
            })?
            .with_lineage(pieces);
        if f.len() > self.producer.max_frame() && b.num_rows() > 1 {
            let half = b.num_rows() / 2;
            let (head, tail) = split_pieces(pieces, half as u64);
            self.batch(epoch, split, &b.slice(0, half), &head)?;
            return self.batch(epoch, split, &b.slice(half, b.num_rows() - half), &tail);
        }
        self.put_batch(&f, b.num_rows(), &mut |_, _| Ok(false))
    }

    /// Puts batch frame `f` of `rows` rows into the ring (with the parts `fill` writes itself),
    /// commits it and counts it.
    fn put_batch(&mut self, f: &Encoded, rows: usize, fill: &mut FillPart<'_>) -> Result<()> {
        self.put_filling(f, fill)?;
        self.enc
            .commit(f)
            .map_err(|e| Error::external("frame encoding", e))?;
        self.report.rows += rows as u64;
        self.report.batches += 1;
        Ok(())
    }

    /// Writes the rows of `g` as one batch, as [`Writer::batch`] does: the rows of one batch
    /// as they are; rows of several batches copied straight from them into the ring slot when
    /// every column is fixed-width ([`Gather::row_bytes`], see [`Gathered`]); otherwise the
    /// batch is made first.
    pub(crate) fn gathered(
        &mut self,
        epoch: u32,
        split: u32,
        g: &Gather,
        pieces: &[Piece],
    ) -> Result<()> {
        if let Some(b) = g.as_slice() {
            return self.batch(epoch, split, &b, pieces);
        }
        let meta = self.meta(epoch, split, 0);
        let Some(f) = Gathered::encode(&mut self.enc, g, meta, &mut self.zeros)? else {
            return self.batch(epoch, split, &g.materialize()?, pieces);
        };
        let f = f.with_lineage(pieces);
        if f.frame.len() > self.producer.max_frame() && g.num_rows() > 1 {
            let half = g.num_rows() / 2;
            let (head, tail) = split_pieces(pieces, half as u64);
            self.gathered(epoch, split, &g.slice(0, half), &head)?;
            return self.gathered(epoch, split, &g.slice(half, g.num_rows() - half), &tail);
        }
        self.put_batch(&f.frame, g.num_rows(), &mut |i, slot| f.fill(g, i, slot))
    }

    pub(crate) fn marker(
        &mut self,
        kind: FrameKind,
        epoch: u32,
        split: u32,
        rows: u64,
    ) -> Result<()> {
        let f = marker(kind, self.meta(epoch, split, rows));
        self.put(&f)
    }

    /// Best effort: tells the trainer why the feed stops. Acks of a coordinator that is gone
    /// are no longer forwarded on the way (each would wait for it again, and fail the write).
    pub(crate) fn error(&mut self, e: &Error) {
        if matches!(e, Error::CoordinatorLost { .. }) {
            self.on_ack = None;
        }
        let code = match e {
            Error::Data { .. } | Error::Io { .. } | Error::Hdfs { .. } => ErrorCode::Data,
            Error::Schema { .. } => ErrorCode::Schema,
            Error::NotFound { .. } => ErrorCode::NotFound,
            Error::PermissionDenied { .. } => ErrorCode::PermissionDenied,
            Error::Timeout { .. } | Error::Stalled { .. } => ErrorCode::Timeout,
            Error::InvalidArgument(_) => ErrorCode::InvalidArgument,
            Error::CoordinatorLost { .. } | Error::Coordinator(_) => ErrorCode::Coordinator,
            _ => ErrorCode::Other,
        };
        let f = error_frame(
            code,
            &e.to_string(),
            self.meta(0, u32::MAX, 0),
            self.producer.max_frame(),
        );
        let _ = self.put(&f);
    }

    /// Reads control messages that arrived (results counts, bye); errors if the trainer left.
    pub(crate) fn poll_control(&mut self) -> Result<bool> {
        self.last_poll = Instant::now();
        if self.on_ack.is_some() {
            self.forward_handed()?;
        }
        loop {
            match self.producer.try_recv_control() {
                Ok(Some(m)) => match Control::from_bytes(&m) {
                    Ok(Control::Bye) => {
                        self.bye = true;
                        return Ok(true);
                    }
                    Ok(Control::Ack { seq, feed }) => {
                        if let Some(f) = &mut self.on_ack {
                            f(seq, feed)?;
                        }
                    }
                    Ok(c) => tracing::debug!(?c, "control message"),
                    Err(e) => tracing::warn!("{} (pid {}): {e}", self.who, self.peer),
                },
                Ok(None) => return Ok(false),
                Err(ControlError::PeerLost) => {
                    if self.on_ack.is_some() {
                        self.forward_handed()?;
                    }
                    return Err(self.lost());
                }
                Err(e) => {
                    tracing::debug!("control channel: {e}");
                    return Ok(false);
                }
            }
        }
    }
}

/// Waits up to `timeout` for the control messages `take` is after: it returns `Break` with the
/// result, `Continue(None)` for a message it used and wants more, `Continue(Some(m))` for a
/// message it does not expect (logged and skipped). `expected` names the message kind, `doing`
/// what the trainer is waiting to do ("send its batch size"), for errors.
pub(crate) fn await_control<T>(
    p: &mut Producer,
    timeout: Duration,
    expected: &str,
    doing: &str,
    mut take: impl FnMut(Control) -> ControlFlow<T, Option<Control>>,
) -> Result<T> {
    // A huge timeout (`--accept-timeout inf`) waits for ever instead of overflowing.
    let deadline = Instant::now().checked_add(timeout);
    loop {
        match p.wait_control(TICK) {
            Ok(Some(m)) => match Control::from_bytes(&m) {
                Ok(c) => match take(c) {
                    ControlFlow::Break(t) => return Ok(t),
                    ControlFlow::Continue(None) => {}
                    ControlFlow::Continue(Some(other)) => {
                        tracing::warn!("expected {expected} from the trainer, got {other:?}")
                    }
                },
                Err(e) => {
                    return Err(Error::InvalidArgument(format!(
                        "trainer (pid {}): {e}",
                        p.peer_pid()
                    )))
                }
            },
            Ok(None) => {}
            Err(ControlError::Timeout) => {}
            Err(e) => {
                return Err(Error::PeerLost(format!(
                    "trainer (pid {}) left before it could {doing}: {e}",
                    p.peer_pid()
                )))
            }
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return Err(Error::Timeout {
                what: format!("the trainer (pid {}) to {doing}", p.peer_pid()),
                secs: timeout.as_secs_f64(),
            });
        }
    }
}

/// Waits for the trainer's `Hello`; returns the batch size it asked for, and whether this is
/// the trainer's first attach.
pub(crate) fn hello(p: &mut Producer, timeout: Duration) -> Result<(Option<usize>, bool)> {
    await_control(p, timeout, "Hello", "send its batch size", |c| match c {
        Control::Hello {
            batch_size, first, ..
        } => ControlFlow::Break((batch_size.map(|b| b as usize), first)),
        other => ControlFlow::Continue(Some(other)),
    })
}

pub(crate) fn accept(l: &Listener, timeout: Duration) -> Result<Producer> {
    // One call with the whole timeout: the handshake runs inside `accept`, and a short
    // timeout that expires mid-handshake would reset a trainer that is connecting.
    l.accept(timeout).map_err(|e| match e {
        AttachError::Timeout => Error::Timeout {
            what: format!("a trainer to connect to {}", l.path().display()),
            secs: timeout.as_secs_f64(),
        },
        e => Error::PeerLost(format!(
            "attaching the trainer at {}: {e}",
            l.path().display()
        )),
    })
}

/// Binds the trainer socket and makes the trainer's ring now (`Listener::prepare`: its pages
/// allocated before the trainer connects, not between its connect and its first batch).
pub(crate) fn bind(socket: &Path, ring: RingConfig) -> Result<Listener> {
    let listener = Listener::bind(socket, ring).map_err(|e| Error::Io {
        loc: Location {
            path: socket.display().to_string(),
            ..Default::default()
        },
        source: std::io::Error::other(e.to_string()),
    })?;
    listener
        .prepare()
        .map_err(|e| Error::external(format!("making the ring of {}", socket.display()), e))?;
    Ok(listener)
}

/// The frame of a [`Gather`]'s rows, encoded from a placeholder batch of its layout: the
/// parts that are a column's values are written straight from the rows' batches.
pub(crate) struct Gathered {
    frame: Encoded,
    /// Each payload part's column, for the parts that are a column's values.
    column_of: Vec<Option<usize>>,
    widths: Vec<usize>,
}

impl Gathered {
    /// Encodes the frame of `g`'s rows without making their batch; `None` when a column is
    /// not fixed-width, or the encoder copied a placeholder instead of passing it on (the
    /// frame is dropped uncommitted: the caller makes the batch). `zeros` is the placeholder
    /// memory, grown as needed.
    pub(crate) fn encode(
        enc: &mut FrameEncoder,
        g: &Gather,
        meta: FrameMeta,
        zeros: &mut Buffer,
    ) -> Result<Option<Gathered>> {
        let Some(widths) = g.row_bytes() else {
            return Ok(None);
        };
        let need = g.placeholder_bytes(&widths);
        if zeros.len() < need {
            // Zeroed pages that nothing writes or reads: they cost address space, not memory.
            *zeros = MutableBuffer::from_len_zeroed(need.next_power_of_two()).into();
        }
        let (layout, holders) = g.placeholder(&widths, zeros)?;
        let frame = enc
            .batch(&layout, meta)
            .map_err(|e| Error::Internal(format!("frame encoding: {e}")))?;
        let mut column_of = vec![None; frame.parts().len()];
        for (c, h) in holders.iter().enumerate().filter(|(_, h)| !h.is_empty()) {
            let same = |p: &Buffer| p.as_ptr() == h.as_ptr() && p.len() == h.len();
            match frame.parts().iter().position(same) {
                Some(i) => column_of[i] = Some(c),
                None => return Ok(None),
            }
        }
        Ok(Some(Gathered {
            frame,
            column_of,
            widths,
        }))
    }

    fn with_lineage(mut self, pieces: &[Piece]) -> Self {
        self.frame = self.frame.with_lineage(pieces);
        self
    }

    /// Writes payload part `i` into `slot` when it is a column's values (`Ok(true)`).
    fn fill(&self, g: &Gather, i: usize, slot: &mut [u8]) -> std::result::Result<bool, FrameError> {
        match self.column_of[i] {
            Some(c) => g
                .fill(c, self.widths[c], slot)
                .map(|()| true)
                .map_err(|e| FrameError::Fill(e.to_string())),
            None => Ok(false),
        }
    }
}

/// The frame encoder for a plan's schema.
pub(crate) fn encoder(plan: &Plan) -> Result<FrameEncoder> {
    FrameEncoder::new(plan.schema.clone()).map_err(|e| Error::external("frame encoder", e))
}

#[cfg(test)]
#[path = "writer_tests.rs"]
mod tests;
