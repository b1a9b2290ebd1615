//! The feeder's one error type. Every variant that concerns input names the file, and where it
//! applies the split and the byte offset (or row group / stripe / block).

use std::fmt;

/// Where in a file a problem was found.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Location {
    /// File path or URI.
    pub path: String,
    /// Split id in the plan, when reading a split.
    pub split: Option<u32>,
    /// Byte offset in the file, when known.
    pub offset: Option<u64>,
    /// Format-specific unit: "row group 3", "stripe 1", "block at 4096", "record 17".
    pub unit: Option<String>,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.path)?;
        if let Some(s) = self.split {
            write!(f, ", split {s}")?;
        }
        if let Some(u) = &self.unit {
            write!(f, ", {u}")?;
        }
        if let Some(o) = self.offset {
            write!(f, ", byte offset {o}")?;
        }
        Ok(())
    }
}

/// Errors of the feeder.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file or directory does not exist.
    #[error("{path}: no such file or directory")]
    NotFound {
        /// The path that was asked for.
        path: String,
    },
    /// Access to a file was refused.
    #[error("{path}: permission denied")]
    PermissionDenied {
        /// The path that was asked for.
        path: String,
    },
    /// An I/O error while reading a file.
    #[error("{loc}: I/O error: {source}")]
    Io {
        /// Where it happened.
        loc: Location,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// Corrupt, truncated or undecodable input.
    #[error("{loc}: {format} data error: {detail}")]
    Data {
        /// Where it happened.
        loc: Location,
        /// "parquet", "orc", "avro", "tfrecord".
        format: &'static str,
        /// What was wrong.
        detail: String,
    },
    /// A schema that does not match the expected one, or a projection naming a missing column.
    #[error("{path}: schema error: {detail}")]
    Schema {
        /// The file whose schema is wrong.
        path: String,
        /// What was wrong.
        detail: String,
    },
    /// HDFS (namenode or datanode) error.
    #[error("hdfs {path}: {detail}")]
    Hdfs {
        /// The path being accessed.
        path: String,
        /// What went wrong.
        detail: String,
        /// Whether retrying may succeed (connection errors, standby namenode).
        retryable: bool,
    },
    /// A wait exceeded its deadline.
    #[error("timed out after {secs:.1}s waiting for {what}")]
    Timeout {
        /// What was awaited, naming peer and stage.
        what: String,
        /// The deadline in seconds.
        secs: f64,
    },
    /// A trainer took nothing from its ring for the stall timeout: the ring stayed full while
    /// the trainer lives. The trainer's failure, not the feeder's: it stopped calling `next()`,
    /// or one of its steps took longer than that.
    #[error(
        "{who} took no batch for {secs:.1}s (stage: trainer not consuming): its ring stayed \
         full; it stopped calling next(), or one step took longer than that (--stall-timeout)"
    )]
    Stalled {
        /// The trainer: rank (where known) and pid.
        who: String,
        /// The stall timeout in seconds.
        secs: f64,
    },
    /// The peer process (trainer, feeder or coordinator) is gone.
    #[error("peer lost: {0}")]
    PeerLost(String),
    /// Coordinator protocol or state error.
    #[error("coordinator: {0}")]
    Coordinator(String),
    /// The coordinator did not answer for the whole retry window (`--coordinator-timeout`):
    /// killed, its host down, its port closed. Names its address and what the caller was
    /// doing.
    #[error("coordinator at {addr} unreachable for {secs:.0} s while {stage}: {detail}")]
    CoordinatorLost {
        /// The coordinator's address, as the caller dialled it.
        addr: String,
        /// What the caller was doing: "requesting a lease", "acking (lease 12)", ...
        stage: String,
        /// How long it tried, in seconds.
        secs: f64,
        /// The last failure (the transport's error, or the call's deadline).
        detail: String,
    },
    /// Bad argument or configuration.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// A library or the system failed at something that is not about the input: starting a
    /// thread or a runtime, an Arrow kernel. What was being done, and the library's error.
    #[error("{context}: {source}")]
    External {
        /// What was being done ("spawning the reader thread", "frame encoding").
        context: String,
        /// The library's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// An internal invariant broke: a bug, please report it.
    #[error("internal error, please report: {0}")]
    Internal(String),
}

impl Error {
    /// Whether retrying the same operation may succeed.
    pub fn is_retryable(&self) -> bool {
        match self {
            Error::Hdfs { retryable, .. } => *retryable,
            Error::Io { source, .. } => matches!(
                source.kind(),
                std::io::ErrorKind::Interrupted
                    | std::io::ErrorKind::TimedOut
                    | std::io::ErrorKind::ConnectionReset
                    | std::io::ErrorKind::ConnectionAborted
            ),
            Error::Timeout { .. } => true,
            _ => false,
        }
    }

    /// An [`Error::External`]: `context` is what was being done.
    pub fn external(
        context: impl Into<String>,
        source: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> Self {
        Error::External {
            context: context.into(),
            source: source.into(),
        }
    }

    /// A `Data` error at a location.
    pub fn data(loc: Location, format: &'static str, detail: impl Into<String>) -> Self {
        Error::Data {
            loc,
            format,
            detail: detail.into(),
        }
    }
}

/// Result with the feeder's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// `Err` naming the CPU features this build was compiled to use (see `.cargo/config.toml`:
/// x86-64-v3) that the running CPU lacks; checked first by the `hydrofeed` binary and the Python
/// extension, so that such a CPU gets this message instead of an illegal-instruction crash.
pub fn check_cpu() -> std::result::Result<(), String> {
    #[cfg(target_arch = "x86_64")]
    {
        // x86-64-v3's features beyond the baseline: (name, built with it, this CPU has it).
        macro_rules! features {
            ($($f:tt),*) => {
                [$(($f, cfg!(target_feature = $f), std::arch::is_x86_feature_detected!($f))),*]
            };
        }
        cpu_missing(&features!(
            "avx", "avx2", "bmi1", "bmi2", "fma", "f16c", "lzcnt", "movbe"
        ))
    }
    #[cfg(not(target_arch = "x86_64"))]
    Ok(())
}

/// The check of [`check_cpu`] over `(feature, built with it, the running CPU has it)`.
#[cfg(target_arch = "x86_64")]
fn cpu_missing(features: &[(&str, bool, bool)]) -> std::result::Result<(), String> {
    let missing: Vec<&str> = features
        .iter()
        .filter(|(_, used, has)| *used && !has)
        .map(|(f, _, _)| *f)
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    Err(format!(
        "this build of hydrofeed uses CPU features this CPU lacks ({}): it targets x86-64-v3 \
         (AVX2, BMI2, FMA: Intel from 2013, AMD from 2015); build it for this CPU with \
         RUSTFLAGS=\"-C target-cpu=x86-64\" make build develop",
        missing.join(", ")
    ))
}

#[cfg(all(test, target_arch = "x86_64"))]
mod cpu_tests {
    use super::*;

    #[test]
    fn this_cpu_runs_this_build() {
        check_cpu().unwrap();
    }

    #[test]
    fn a_cpu_without_the_features_the_build_uses_is_refused_by_name() {
        let built = cfg!(target_feature = "avx2");
        let e = cpu_missing(&[("fma", built, true), ("avx2", built, false)]);
        if built {
            let e = e.unwrap_err();
            assert!(e.contains("(avx2)") && e.contains("x86-64-v3"), "{e}");
        } else {
            e.unwrap(); // a baseline build asks nothing of the CPU
        }
        assert!(cpu_missing(&[("avx2", true, true)]).is_ok());
        assert!(cpu_missing(&[("avx2", false, false)]).is_ok());
    }
}
