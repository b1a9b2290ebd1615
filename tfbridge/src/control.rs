//! Control messages from the trainer to the producer, over the ring's control channel.
//!
//! Small JSON objects (the channel carries a few per run, never per batch):
//! - `Hello` right after attach: the batch size the trainer wants (the producer rebatches to
//!   it) and the trainer's pid, for log messages.
//! - `Results`: how many results the trainer handed to `batch_results` (TFoS inference mode).
//! - `Bye`: the trainer stops reading on purpose (the producer ends without an error).
//! - `Ack`: frames consumed so far (a few per second at most; `hydrofeed feeder` forwards them
//!   to the coordinator as row acks).

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
            },
            Control::Hello {
                batch_size: None,
                pid: 7,
            },
            Control::Results { count: 3 },
            Control::Bye,
        ] {
            assert_eq!(Control::from_bytes(&m.to_bytes()).unwrap(), m);
        }
        assert!(Control::from_bytes(b"{").is_err());
    }
}
