//! Splits: the unit of work the coordinator hands to feeders.

use serde::{Deserialize, Serialize};

/// Input formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// Apache Parquet.
    Parquet,
    /// Apache ORC.
    Orc,
    /// Avro object container files.
    Avro,
    /// TFRecord files of `tf.train.Example`.
    Tfrecord,
}

impl Format {
    /// Its name in output and errors (the serde name).
    pub fn name(self) -> &'static str {
        match self {
            Format::Parquet => "parquet",
            Format::Orc => "orc",
            Format::Avro => "avro",
            Format::Tfrecord => "tfrecord",
        }
    }
}

/// Which part of a file a split covers.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SplitUnit {
    /// Parquet row groups `[first, first + count)`.
    RowGroups {
        /// First row group.
        first: u32,
        /// Number of row groups.
        count: u32,
    },
    /// ORC stripes `[first, first + count)`.
    Stripes {
        /// First stripe.
        first: u32,
        /// Number of stripes.
        count: u32,
    },
    /// Byte range `[start, end)`: records (Avro blocks, TFRecord records) that *start* in the
    /// range belong to the split; readers resynchronise at `start`.
    Bytes {
        /// First byte.
        start: u64,
        /// One past the last byte.
        end: u64,
    },
}

/// One split of the plan.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Split {
    /// Index in the plan (stable for a given input listing).
    pub id: u32,
    /// File path or URI.
    pub path: String,
    /// Format of the file.
    pub format: Format,
    /// Which part of the file.
    pub unit: SplitUnit,
    /// Rows in the split.
    pub rows: u64,
    /// Bytes of the file the split covers (compressed, approximate for row groups).
    pub bytes: u64,
    /// Hive-style partition values (`key=value` directories above the file).
    #[serde(default)]
    pub partition: Vec<(String, String)>,
    /// Rows of each unit a reader can start at without reading the ones before (row groups,
    /// stripes), when the split holds more than one; empty: the split is one unit. The fixed
    /// order cuts its lanes only there, so that no unit is read twice.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub units: Vec<u64>,
}

/// The splits of one file, numbered from `first_id`, from each part's `(unit, rows, bytes)`
/// (no partition values: the listing adds them).
pub fn file_splits(
    path: &str,
    format: Format,
    first_id: u32,
    parts: impl IntoIterator<Item = (SplitUnit, u64, u64)>,
) -> Vec<Split> {
    parts
        .into_iter()
        .enumerate()
        .map(|(i, (unit, rows, bytes))| Split {
            id: first_id + i as u32,
            path: path.to_string(),
            format,
            unit,
            rows,
            bytes,
            partition: Vec::new(),
            units: Vec::new(),
        })
        .collect()
}
