//! A worker's stage, as its heartbeats say, and its number in a ring's header.

use serde::{Deserialize, Serialize};

/// What a worker is doing, as its heartbeats say.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    /// Registered, nothing done yet.
    #[default]
    Starting,
    /// Reading bytes from storage.
    Reading,
    /// Decoding into Arrow.
    Decoding,
    /// Waiting for ring space: the trainer is slower than the feeder.
    WaitingRing,
    /// The trainer is not consuming (not attached, or stuck).
    TrainerIdle,
    /// Quota of the epoch done, waiting for the other ranks.
    WaitingWork,
    /// End of feed reached.
    Done,
    /// The rank's trainer is gone (it died or left before its end of feed); what it was
    /// handed is acked. `launch` waits for it before it takes the state of a failed job.
    TrainerGone,
}

impl Stage {
    /// Name used in logs and metrics.
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::Starting => "starting",
            Stage::Reading => "reading",
            Stage::Decoding => "decoding",
            Stage::WaitingRing => "waiting for ring space",
            Stage::TrainerIdle => "trainer not consuming",
            Stage::WaitingWork => "waiting for work",
            Stage::Done => "done",
            Stage::TrainerGone => "trainer gone",
        }
    }

    /// The stage's number in a ring's header (the word `hydrofeed feeder` publishes there for
    /// the trainer): fixed for good, so a trainer reads any feeder's; 0 means none.
    pub fn code(self) -> u8 {
        match self {
            Stage::Starting => 1,
            Stage::Reading => 2,
            Stage::Decoding => 3,
            Stage::WaitingRing => 4,
            Stage::TrainerIdle => 5,
            Stage::WaitingWork => 6,
            Stage::Done => 7,
            Stage::TrainerGone => 8,
        }
    }

    /// The stage of [`Stage::code`]'s number (`None`: none, or one this version does not know).
    pub fn from_code(c: u8) -> Option<Stage> {
        Some(match c {
            1 => Stage::Starting,
            2 => Stage::Reading,
            3 => Stage::Decoding,
            4 => Stage::WaitingRing,
            5 => Stage::TrainerIdle,
            6 => Stage::WaitingWork,
            7 => Stage::Done,
            8 => Stage::TrainerGone,
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::Stage;

    /// Every stage has its own number, 0 is none, and numbers this version does not know are
    /// none (a ring header is the other process's word).
    #[test]
    fn stage_codes_round_trip() {
        let known: Vec<Stage> = (0..=u8::MAX).filter_map(Stage::from_code).collect();
        assert_eq!(known.len(), 8);
        for s in known {
            assert_eq!(Stage::from_code(s.code()), Some(s));
        }
        assert_eq!(Stage::from_code(0), None);
    }
}
