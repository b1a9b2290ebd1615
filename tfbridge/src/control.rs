//! Control messages from the trainer to the producer, over the ring's control channel.
//!
//! Small JSON objects (the channel carries a few per run, never per batch):
//! - `Hello` right after attach: the batch size the trainer wants (the producer rebatches to
//!   it) and the trainer's pid, for log messages.
//! - `Results`: how many results the trainer handed to `batch_results` (TFoS inference mode).
//! - `Bye`: the trainer stops reading on purpose (the producer ends without an error).
//! - `Ack`: frames consumed so far (a few per second at most; `hydrofeed feeder` forwards them
//!   to the coordinator as row acks).
//! - `Rejoin`: after `Hello`, from a trainer re-attaching to a restarted feeder: where it is in
//!   the feed and the rows it consumed per lease (from the frames' lineage), so the coordinator
//!   counts them before it hands the rest out again.

use serde::{Deserialize, Serialize};

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
    },
    /// Sent after `Hello` by a trainer whose feeder died, to the feeder that replaces it.
    Rejoin {
        /// Epoch of the last batch the trainer read (`None`: it read none).
        epoch: Option<u32>,
        /// Whether it read that epoch's end-of-epoch frame.
        epoch_done: bool,
        /// Rows it read in that epoch (a batch cut by the restart is completed, not restarted).
        epoch_rows: u64,
        /// `[lease, split, rows read]` of every lease it read from since its last end of
        /// epoch (rows are cumulative from the lease's first row).
        consumed: Vec<(u64, u32, u64)>,
        /// More `Rejoin` messages follow (a long list travels in parts).
        more: bool,
    },
}

/// Leases per `Rejoin` message: keeps each message far below the control channel's limit
/// (a lease takes at most 60 bytes of JSON).
pub const REJOIN_LEASES_PER_MESSAGE: usize = 500;

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
            },
            Control::Hello {
                batch_size: None,
                pid: 7,
            },
            Control::Results { count: 3 },
            Control::Bye,
            Control::Rejoin {
                epoch: Some(2),
                epoch_done: false,
                epoch_rows: 640,
                consumed: vec![(u64::MAX, u32::MAX, u64::MAX); REJOIN_LEASES_PER_MESSAGE],
                more: true,
            },
        ] {
            assert!(m.to_bytes().len() < 64 * 1024);
            assert_eq!(Control::from_bytes(&m.to_bytes()).unwrap(), m);
        }
        assert!(Control::from_bytes(b"{").is_err());
    }
}
