//! [`EpochWriter`]: the one write loop of every feed. Rows come in tagged with their lease and
//! split; batches of exactly the job's size go out (the last of an epoch may be shorter), each
//! with its lineage, then the markers: `EndOfSplit` after the batch holding a split's last row,
//! `EndOfEpoch` when the epoch changes or ends, `EndOfFeed` last.

use std::time::Duration;

use hydrofeed_format::{Gather, Rebatcher};
use hydrofeed_tfbridge::{FrameKind, Piece};

use super::{Event, Pull, Rows, Source, Tag};
use crate::serve::ServeReport;
use crate::writer::Writer;
use crate::{Error, Result};

/// How often the writer looks at the trainer (gone? said bye?) while it has nothing to write.
const POLL: Duration = Duration::from_millis(20);

/// Told of every batch written, with the sequence number of its last frame, its pieces (the
/// rows of each lease it holds, in order) and what was written so far: the daemon books them
/// for the trainer's acks.
pub(crate) type BatchSink = Box<dyn FnMut(u64, Vec<Piece>, &ServeReport) -> Result<()>>;

/// Why [`EpochWriter::run`] returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ended {
    /// The source has nothing more (the end of an epoch of `serve`).
    Exhausted,
    /// The coordinator's end of feed, with the steps every rank took.
    End(u64),
    /// [`EpochWriter::stop_when`] said stop: the rows pending are the caller's to drop.
    Stopped,
}

/// Cuts rows into batches of the job's size and writes them, with the feed's markers, through
/// a [`Writer`].
pub(crate) struct EpochWriter {
    w: Writer,
    batch_size: usize,
    /// Rows pending, cut into batches as pieces: a batch is written straight from them.
    pending: Rebatcher<Tag, Gather>,
    /// Split ends waiting for the batch that holds their last row.
    split_ends: Vec<(u32, u64)>,
    /// Rows the trainer already holds of its current batch (one cut in frames before the
    /// feeder restarted): the next batch completes it.
    short: usize,
    epoch: Option<u32>,
    /// `epoch` was begun and not ended.
    open: bool,
    last_split: u32,
    on_batch: Option<BatchSink>,
    /// Reads the trainer's control messages while idle (acks, bye).
    watch_control: bool,
    stop: Option<fn() -> bool>,
}

impl EpochWriter {
    /// Writes batches of `batch_size` rows through `w`.
    pub(crate) fn new(w: Writer, batch_size: usize) -> Self {
        Self {
            w,
            batch_size,
            pending: Rebatcher::default(),
            split_ends: Vec::new(),
            short: 0,
            epoch: None,
            open: false,
            last_split: u32::MAX,
            on_batch: None,
            watch_control: false,
            stop: None,
        }
    }

    /// Every batch is booked with `sink`, its frames carry their lineage, and the trainer's
    /// control channel is read while the writer waits for rows (the daemon).
    pub(crate) fn with_acks(mut self, sink: BatchSink) -> Self {
        self.on_batch = Some(sink);
        self.watch_control = true;
        self
    }

    /// [`Self::run`] returns [`Ended::Stopped`] once `stop` says so.
    pub(crate) fn stop_when(mut self, stop: fn() -> bool) -> Self {
        self.stop = Some(stop);
        self
    }

    /// The trainer re-attached in epoch `epoch` holding `epoch_rows` rows of it: the next batch
    /// completes the one it holds part of.
    pub(crate) fn resume_in(mut self, epoch: u32, epoch_rows: u64) -> Self {
        self.epoch = Some(epoch);
        self.open = true;
        self.short = (epoch_rows % self.batch_size as u64) as usize;
        self
    }

    /// The ring writer.
    pub(crate) fn writer(&mut self) -> &mut Writer {
        &mut self.w
    }

    /// What was written so far.
    pub(crate) fn report(&self) -> &ServeReport {
        self.w.report()
    }

    /// The ring writer, once the feed is over.
    pub(crate) fn into_writer(self) -> Writer {
        self.w
    }

    /// Whether an epoch was begun and not ended.
    pub(crate) fn in_epoch(&self) -> bool {
        self.open
    }

    /// The rows that follow are epoch `e`'s: an epoch still open that is not `e` ends first
    /// ([`Self::end_epoch`]).
    pub(crate) fn begin_epoch(&mut self, e: u32) -> Result<()> {
        if self.epoch == Some(e) && self.open {
            return Ok(());
        }
        if self.open {
            // Quotas are multiples of the batch size: nothing is pending here unless the
            // coordinator broke its contract; it goes short then.
            self.end_epoch()?;
        }
        // (A re-attached trainer's cut batch belongs to the epoch that ended.)
        self.short = 0;
        self.epoch = Some(e);
        self.open = true;
        Ok(())
    }

    /// Writes what is pending (a short last batch) and `EndOfEpoch`.
    pub(crate) fn end_epoch(&mut self) -> Result<()> {
        self.flush()?;
        self.open = false;
        let rows = self.w.report().rows;
        self.w.marker(
            FrameKind::EndOfEpoch,
            self.epoch.unwrap_or(0),
            u32::MAX,
            rows,
        )
    }

    /// Writes `EndOfFeed` with `rows` (rows fed, or the coordinator's steps).
    pub(crate) fn end_feed(&mut self, rows: u64) -> Result<()> {
        self.w.marker(
            FrameKind::EndOfFeed,
            self.epoch.unwrap_or(0),
            u32::MAX,
            rows,
        )
    }

    /// Appends rows; writes every whole batch they complete.
    pub(crate) fn push(&mut self, rows: Rows) -> Result<()> {
        let Rows { tag, batch, permit } = rows;
        self.last_split = tag.split;
        self.pending.push_tagged(batch, tag);
        // The rows are the writer's now: their bytes go back to the readers.
        drop(permit);
        while self.pending.rows() >= self.batch_size - self.short {
            self.flush()?;
        }
        Ok(())
    }

    /// Split `split` ended after `rows` rows: its marker follows the batch holding its last
    /// row (at once when no row is pending).
    pub(crate) fn end_split(&mut self, split: u32, rows: u64) -> Result<()> {
        self.split_ends.push((split, rows));
        if self.pending.is_empty() {
            self.flush()?;
        }
        Ok(())
    }

    /// Drops the rows pending (a stopped feed: they were never sent, so never acked).
    pub(crate) fn discard(&mut self) {
        self.pending.clear();
    }

    /// Writes one batch of the pending rows (short when fewer are pending), then the split
    /// ends waiting for it.
    pub(crate) fn flush(&mut self) -> Result<()> {
        let epoch = self.epoch.unwrap_or(0);
        let n = self.batch_size - self.short;
        if let Some((parts, tags)) = self.pending.take_parts(n, |_, _| false) {
            self.short = 0;
            let pieces: Vec<Piece> = match self.on_batch {
                Some(_) => tags
                    .into_iter()
                    .map(|(t, rows)| Piece {
                        lease: t.lease,
                        split: t.split,
                        rows: rows as u64,
                    })
                    .collect(),
                None => Vec::new(),
            };
            let g = Gather::concat(parts);
            self.w.gathered(epoch, self.last_split, &g, &pieces)?;
            if let Some(sink) = &mut self.on_batch {
                sink(self.w.next_seq() - 1, pieces, self.w.report())?;
            }
        }
        for (s, rows) in std::mem::take(&mut self.split_ends) {
            self.w.marker(FrameKind::EndOfSplit, epoch, s, rows)?;
        }
        Ok(())
    }

    /// Writes what `src` hands out until it is exhausted, the coordinator ends the feed, or
    /// the stop hook fires. While no event comes, it still notices a trainer that went away
    /// (and, with acks, one that said bye: [`Error::PeerLost`]).
    pub(crate) fn run(&mut self, src: &mut dyn Source) -> Result<Ended> {
        loop {
            if self.watch_control && self.w.said_bye() {
                return Err(bye());
            }
            if self.stop.is_some_and(|stop| stop()) {
                return Ok(Ended::Stopped);
            }
            match src.pull(POLL) {
                Pull::Idle => {
                    if self.watch_control && self.w.poll_control()? {
                        return Err(bye());
                    }
                    self.w.check_peer()?;
                }
                Pull::Done => return Ok(Ended::Exhausted),
                Pull::Event(Event::Epoch(e)) => self.begin_epoch(e)?,
                Pull::Event(Event::Rows(r)) => self.push(r)?,
                Pull::Event(Event::SplitEnd(s, rows)) => self.end_split(s, rows)?,
                Pull::Event(Event::End(steps)) => return Ok(Ended::End(steps)),
                Pull::Event(Event::Failed(e)) => {
                    // The whole batches before the error went out; the rows of a short one
                    // do not (never sent, never acked: a resume reads them again). A trainer
                    // with static shapes sees the error at a batch boundary, not a short
                    // batch first.
                    self.discard();
                    self.split_ends.clear();
                    return Err(e);
                }
            }
        }
    }
}

/// The error of a trainer that said `Bye` (it stopped reading on purpose).
pub(crate) fn bye() -> Error {
    Error::PeerLost("the trainer said bye".into())
}
