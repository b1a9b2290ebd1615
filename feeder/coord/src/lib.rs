//! The coordinator: hands row ranges of splits to feeders, keeps epochs, equal steps,
//! end-of-feed, liveness, the roster (cluster spec, `TF_CONFIG`) and resume state.
//!
//! Layers, each usable on its own:
//! - [`Machine`]: the pure state machine. No I/O, no clock (callers pass milliseconds), no
//!   threads; deterministic for a given sequence of calls. Most code wants this.
//! - [`Roster`] (in [`cluster`]): workers register (rank or auto, host, port, GPUs, role);
//!   the cluster spec and each rank's `TF_CONFIG` JSON.
//! - `service` (feature `grpc`): the gRPC service (`hydrofeed.coord.v1`, tonic) around both,
//!   with the shared-secret [`token`] check, the assignment log and the Prometheus endpoint.
//! - `client::CoordClient` (feature `grpc`): a blocking client for the feeder daemon and
//!   Python.
//! - `tls` (feature `grpc`): TLS on the control plane, `ServerTls` for the service (mutual
//!   with a client CA) and `ClientTls` for the client (flags or `HYDROFEED_TLS_*`).
//!
//! # Contract
//! - **Equal steps.** With `T` rows, `W` workers and batch size `B`, every rank receives
//!   exactly `S * B` rows in an epoch, `S = floor(T / (W B))` under [`Remainder::Drop`] and
//!   `ceil` under `Pad` / `Wrap` (under `Wrap`, `T` is the rows the epoch still owns after
//!   the previous epoch borrowed some; see `docs/arch/coord.md`). Work is leased as row ranges
//!   capped by the asking rank's remaining quota, so uneven splits never make uneven steps.
//! - **Exactly once.** Every row of an epoch is acked once (`drop`: at most once, the rest
//!   counted in `rows_dropped`). A dead rank's un-acked rows go back to the queue from its last
//!   acked row. Acking a row twice is detected and refused as an internal error.
//! - **Deterministic.** The split order of a data epoch depends on (seed, epoch) only; a
//!   rank's shuffle-buffer seed on (seed, epoch, rank). Which rank gets which range depends on
//!   who asks first (timing); the *set* of rows of an epoch does not.
//! - **End of feed** comes after the same number of steps on every rank.
//! - **Resume.** [`State`] (serde JSON) holds the acked rows; [`Machine::resume`] continues,
//!   with any worker count, and the two runs together ack exactly the epoch.
//!
//! ```
//! use hydrofeed_coord::{Config, Machine, SplitInfo, Work};
//! let splits = (0..3).map(|id| SplitInfo::new(id, 10 + u64::from(id))).collect();
//! let mut m = Machine::new(splits, Config::new(2, 4)).unwrap();
//! let inc = m.join(0, "host-a", 0).unwrap();
//! let Work::Lease(l) = m.request_work(0, inc, None, 0).unwrap() else { panic!() };
//! m.ack(0, inc, l.lease, l.split, l.rows, 1).unwrap();
//! ```

use serde::{Deserialize, Serialize};

pub mod atomic;
#[cfg(feature = "grpc")]
pub mod client;
pub mod cluster;
pub mod input;
pub mod journal;
mod ledger;
mod machine;
#[cfg(feature = "grpc")]
pub mod metrics;
pub mod order;
#[cfg(feature = "grpc")]
pub mod proto;
#[cfg(feature = "grpc")]
pub mod service;
pub mod sim;
#[cfg(feature = "grpc")]
pub mod tls;
pub mod token;

pub use hydrofeed_error::{Error, Result};

pub use cluster::{ClusterSpec, Registration, Role, Roster};
pub use ledger::{LedgerState, PartialSplit, SkippedRange};
pub use machine::{
    epoch_seed, mix64, shuffle_seed, split_order, Config, Counters, Lease, LivenessEvent, LogKind,
    LogRecord, Machine, OrderLease, RankInfo, Stage, Work, WorkerCounters, SEGMENT_SPLIT,
};
pub use order::{OrderSpec, Segment};

fn yes() -> bool {
    true
}

/// What to do with the rows that do not fill a last step on every worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum Remainder {
    /// Leave them out of the epoch (counted in `rows_dropped`).
    #[default]
    Drop,
    /// Fill the last steps with rows of the epoch again (counted in `rows_padded`).
    Pad,
    /// Fill the last steps with rows from the start of the next epoch's order, which that
    /// epoch then does not deliver again (counted in `rows_wrapped`).
    Wrap,
}

/// What the coordinator needs of a split: its id, its rows, and the hosts holding its blocks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SplitInfo {
    /// Split id (`0..n`, the index in the plan).
    pub id: u32,
    /// Rows in the split.
    pub rows: u64,
    /// Hosts holding its HDFS blocks (empty for local files): a feeder on one of them is
    /// preferred when it asks for work.
    pub hosts: Vec<String>,
}

impl SplitInfo {
    /// A split without locality hints.
    pub fn new(id: u32, rows: u64) -> Self {
        Self {
            id,
            rows,
            hosts: Vec::new(),
        }
    }

    /// Adds locality hints.
    pub fn with_hosts(mut self, hosts: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.hosts = hosts.into_iter().map(Into::into).collect();
        self
    }
}

/// The resumable position of a job: small, serde JSON. Rows in flight are not in it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct State {
    /// Layout version ([`State::VERSION`]).
    pub version: u32,
    /// Job seed.
    pub seed: u64,
    /// Whether split order is shuffled (states written before this field existed: yes).
    #[serde(default = "yes")]
    pub shuffle: bool,
    /// Epochs of the job.
    pub epochs: u32,
    /// Batch size.
    pub batch_size: u64,
    /// Remainder policy.
    pub remainder: Remainder,
    /// Splits in the plan (checked on resume).
    pub splits: u32,
    /// Rows in the plan (checked on resume).
    pub total_rows: u64,
    /// Current training epoch.
    pub epoch: u32,
    /// All epochs done.
    pub finished: bool,
    /// Steps per rank of the completed epochs.
    pub steps_done: u64,
    /// Rows dropped so far.
    pub rows_dropped: u64,
    /// Pad rows acked so far.
    pub rows_padded: u64,
    /// Rows wrapped so far.
    pub rows_wrapped: u64,
    /// Acked rows of the open data epochs (the current one, and the next under `wrap`).
    pub ledgers: Vec<LedgerState>,
    /// The fixed order's position (absent under the dynamic order).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order: Option<OrderState>,
    /// The input the state was made from (version 2; absent in version 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<input::InputFingerprint>,
    /// Where this state stands in the coordinator's journal (`--journal`): the journal file
    /// that follows it. Absent in a state not written by a journal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub journal: Option<journal::JournalPos>,
    /// Rows skipped as corrupt under `--skip-errors` (each delivered as a padding row, counted
    /// in `rows_padded`), per data epoch and split.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<SkippedRange>,
}

/// Where the fixed order stands: what each rank has left of the current epoch, a few
/// segments per rank (one, unless a resume recut the epoch), so a rank's position costs
/// about 80 bytes of JSON.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OrderState {
    /// Shuffle buffer and cycle length (a resumed run keeps them).
    pub spec: OrderSpec,
    /// Workers the current epoch was dealt to.
    pub workers: u32,
    /// Each rank's segments, from the first row its trainer has not acked.
    pub ranks: Vec<Vec<Segment>>,
    /// Rows of the epoch no rank receives (dropped when it closes).
    pub rest: Vec<Segment>,
    /// The current epoch is dealt by the ledger, not by positions (`ranks` and `rest` are
    /// empty): a resume over a changed input re-planned it (`input`); the fixed order takes
    /// over again at the next epoch.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub by_ledger: bool,
    /// The next epoch's deal, present when a rank was already inside it (a rank that leased
    /// its whole share of an epoch is dealt the next one's before the epoch closes): every
    /// rank's segments left there (a whole chunk for a rank that did not start it) and the
    /// rest. State version 3.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next: Option<NextDeal>,
}

/// The next epoch's deal of the fixed order, as a state saves it ([`OrderState::next`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NextDeal {
    /// Each rank's segments left in the next epoch.
    pub ranks: Vec<Vec<Segment>>,
    /// Rows of the next epoch no rank receives.
    pub rest: Vec<Segment>,
}

impl State {
    /// The layout version this build writes when no rank is inside the next epoch (it reads
    /// this one, 1, which has no input fingerprint, and [`State::VERSION_NEXT`]).
    pub const VERSION: u32 = 2;

    /// The layout version of a state whose fixed order holds the next epoch's deal
    /// ([`OrderState::next`]): a build that does not know that deal refuses the state by its
    /// version instead of dealing the next epoch again (its ranks' rows would come twice).
    pub const VERSION_NEXT: u32 = 3;

    /// The layout versions this build reads.
    pub const READS: [u32; 3] = [1, 2, 3];

    /// JSON text.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("State serialises")
    }

    /// Parses JSON text.
    pub fn from_json(s: &str) -> crate::Result<Self> {
        serde_json::from_str(s)
            .map_err(|e| crate::Error::Coordinator(format!("bad coordinator state JSON: {e}")))
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod input_tests;
