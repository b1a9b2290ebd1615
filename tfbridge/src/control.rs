//! Control messages from the trainer to the producer, over the ring's control channel.
//!
//! Small JSON objects (the channel carries a few per run, never per batch):
//! - `Hello` right after attach: the batch size the trainer wants (the producer rebatches to
//!   it), the trainer's pid, for log messages, and whether this is its first attach.
//! - `Results`: how many results the trainer handed to `batch_results` (TFoS inference mode).
//! - `Bye`: the trainer stops reading on purpose (the producer ends without an error).
//! - `Ack`: frames consumed so far (a few per second at most; `hydrofeed feeder` forwards them
//!   to the coordinator as row acks), with the trainer's [`FeedReport`]: its steps, rows and
//!   wait for input, which the feeder serves as Prometheus metrics. The report is an optional
//!   field: a feeder that predates it ignores it (unknown fields are skipped), and an ack
//!   without it (an older trainer) is still an ack.
//! - `Rejoin`: after `Hello`, from a trainer re-attaching to a restarted feeder: where it is in
//!   the feed and the rows it consumed per lease (from the frames' lineage), so the coordinator
//!   counts them before it hands the rest out again.

use serde::{Deserialize, Serialize};

use crate::Piece;

/// A control message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Control {
    /// Sent once after attach.
    Hello {
        /// Rows per batch the trainer wants; `None`: the producer's default.
        batch_size: Option<u64>,
        /// The trainer's pid.
        pid: u32,
        /// The trainer's first attach (it read nothing before): a feeder restarted with
        /// `--rejoin` takes it without waiting for a `Rejoin` report. A re-attaching trainer
        /// (and one that predates the field) says `false`.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        first: bool,
    },
    /// Results handed back by the trainer.
    Results {
        /// How many.
        count: u64,
    },
    /// The trainer is done reading.
    Bye,
    /// The trainer consumed every frame up to and including `seq` (cumulative; the ring is
    /// FIFO). The feeder forwards the rows of those batches to the coordinator as acks.
    Ack {
        /// Sequence number of the last consumed frame.
        seq: u64,
        /// Where the trainer's time went so far (`None`: before its first batch, or a trainer
        /// that does not report).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        feed: Option<FeedReport>,
    },
    /// Sent after `Hello` by a trainer whose feeder died, to the feeder that replaces it.
    Rejoin {
        /// Epoch of the last batch the trainer read (`None`: it read none).
        epoch: Option<u32>,
        /// Whether it read that epoch's end-of-epoch frame.
        epoch_done: bool,
        /// Rows it read in that epoch (a batch cut by the restart is completed, not restarted).
        epoch_rows: u64,
        /// Every lease it read from since its last end of epoch, with the rows read (cumulative
        /// from the lease's first row). On the wire a `[lease, split, rows]` triple each.
        #[serde(with = "triples")]
        consumed: Vec<Piece>,
        /// More `Rejoin` messages follow (a long list travels in parts).
        more: bool,
    },
}

/// What a trainer reports with its acks: its figures since its first batch, cumulative (the
/// feeder takes differences). A trainer's word: the feeder refuses figures that cannot be
/// (waits longer than the time they are part of, counters going backwards, more batches than
/// rows, a utilisation above 100%).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct FeedReport {
    /// Batches handed to the training loop (its steps).
    pub batches: u64,
    /// Rows in those batches.
    pub rows: u64,
    /// Microseconds since the first batch was handed out.
    pub elapsed_us: u64,
    /// Microseconds of those the trainer waited for input: in `next()` on the ring, and for the
    /// copies to a GPU.
    pub wait_us: u64,
    /// The GPU's utilisation in percent, when batches go to a GPU and NVML answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_utilization: Option<u32>,
}

/// Leases per `Rejoin` message: keeps each message far below the control channel's limit
/// (a lease takes at most 60 bytes of JSON).
pub const REJOIN_LEASES_PER_MESSAGE: usize = 500;

/// `Rejoin.consumed` on the wire: each [`Piece`] a `[lease, split, rows]` JSON triple, not an
/// object, so trainers and feeders of other builds read each other's messages.
mod triples {
    use serde::{Deserialize, Deserializer, Serializer};

    use crate::Piece;

    pub(super) fn serialize<S: Serializer>(v: &[Piece], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(v.iter().map(|p| (p.lease, p.split, p.rows)))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Piece>, D::Error> {
        let v = Vec::<(u64, u32, u64)>::deserialize(d)?;
        Ok(v.into_iter()
            .map(|(lease, split, rows)| Piece { lease, split, rows })
            .collect())
    }
}

impl Control {
    /// Encodes the message.
    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }

    /// Decodes a message.
    pub fn from_bytes(b: &[u8]) -> Result<Self, String> {
        serde_json::from_slice(b).map_err(|e| {
            format!(
                "bad control message {:?}: {e}",
                String::from_utf8_lossy(&b[..b.len().min(200)])
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roundtrip() {
        for m in [
            Control::Hello {
                batch_size: Some(100),
                pid: 7,
                first: true,
            },
            Control::Hello {
                batch_size: None,
                pid: 7,
                first: false,
            },
            Control::Results { count: 3 },
            Control::Bye,
            Control::Ack { seq: 9, feed: None },
            Control::Ack {
                seq: 9,
                feed: Some(FeedReport {
                    batches: 3,
                    rows: 300,
                    elapsed_us: u64::MAX,
                    wait_us: 5,
                    gpu_utilization: Some(87),
                }),
            },
            Control::Rejoin {
                epoch: Some(2),
                epoch_done: false,
                epoch_rows: 640,
                consumed: vec![
                    Piece {
                        lease: u64::MAX,
                        split: u32::MAX,
                        rows: u64::MAX,
                    };
                    REJOIN_LEASES_PER_MESSAGE
                ],
                more: true,
            },
        ] {
            assert!(m.to_bytes().len() < 64 * 1024);
            assert_eq!(Control::from_bytes(&m.to_bytes()).unwrap(), m);
        }
        assert!(Control::from_bytes(b"{").is_err());
    }

    /// `Rejoin` on the wire: `consumed` is a list of `[lease, split, rows]` triples (what
    /// trainers and feeders of earlier builds send and expect).
    #[test]
    fn rejoin_encoding_is_pinned() {
        let wire = br#"{"type":"rejoin","epoch":2,"epoch_done":false,"epoch_rows":640,"consumed":[[7,3,100],[18446744073709551615,4294967295,1]],"more":true}"#;
        let m = Control::Rejoin {
            epoch: Some(2),
            epoch_done: false,
            epoch_rows: 640,
            consumed: vec![
                Piece {
                    lease: 7,
                    split: 3,
                    rows: 100,
                },
                Piece {
                    lease: u64::MAX,
                    split: u32::MAX,
                    rows: 1,
                },
            ],
            more: true,
        };
        assert_eq!(m.to_bytes(), wire);
        assert_eq!(Control::from_bytes(wire).unwrap(), m);
    }

    /// The report is optional both ways: an ack of an older trainer (no `feed`) decodes, an
    /// ack without figures is sent as before, and fields a later version adds are skipped.
    #[test]
    fn acks_stay_compatible() {
        assert_eq!(
            Control::from_bytes(br#"{"type":"ack","seq":4}"#).unwrap(),
            Control::Ack { seq: 4, feed: None }
        );
        assert_eq!(
            Control::Ack { seq: 4, feed: None }.to_bytes(),
            br#"{"type":"ack","seq":4}"#
        );
        let later = br#"{"type":"ack","seq":4,"feed":{"batches":1,"rows":2,"elapsed_us":3,"wait_us":1,"new":[1]},"other":true}"#;
        match Control::from_bytes(later).unwrap() {
            Control::Ack {
                seq: 4,
                feed: Some(f),
            } => assert_eq!((f.rows, f.gpu_utilization), (2, None)),
            m => panic!("{m:?}"),
        }
        // Figures that are not counters are not an ack of this version.
        assert!(Control::from_bytes(br#"{"type":"ack","seq":4,"feed":{"batches":-1}}"#).is_err());
    }
}
