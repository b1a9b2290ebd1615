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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
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
    /// Every row group of a Parquet file: a table's file planned from the row count its
    /// metadata records, without reading the footer (the reader finds the row groups when it
    /// opens the file, and refuses one whose footer holds another count).
    File,
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
    /// A table's columns as this file holds them (Delta column mapping, Iceberg field ids):
    /// the file is read by its own names and its batches carry the table's. Resolved from the
    /// table's metadata and the file's footer when the plan is made, or, for a split planned
    /// without the footer, when it is opened (`table`); not serialized.
    #[serde(skip)]
    pub columns: Option<std::sync::Arc<crate::mapping::FileColumns>>,
    /// A table's columns, where `columns` is left to be resolved when the split is opened (a
    /// file planned without reading its footer: [`SplitUnit::File`]).
    #[serde(skip)]
    pub table: Option<std::sync::Arc<crate::mapping::TableColumns>>,
    /// Rows of each unit a reader can start at without reading the ones before (row groups,
    /// stripes), when the split holds more than one; empty: the split is one unit. The fixed
    /// order cuts its lanes only there, so that no unit is read twice.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub units: Vec<u64>,
    /// Under a filter: the rows of each unit before it and the rows that pass it. `rows` and
    /// `units` then count the rows that pass, and positions in the split are theirs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filter: Option<SplitFilter>,
}

/// What a filter leaves of a split's units (all of them, one for a split of one unit).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SplitFilter {
    /// Rows of each unit, by the file's metadata.
    pub raw: Vec<u64>,
    /// Rows of each unit that pass the filter (and that no deletion vector deleted).
    pub pass: Vec<u64>,
    /// The file row the split starts at (the rows of the file's units before it): where a
    /// deletion vector's row indices are counted from.
    #[serde(default)]
    pub first_row: u64,
}

impl Split {
    /// Rows of each unit by the file's metadata (one unit: the split's rows), before any
    /// filter.
    pub fn raw_units(&self) -> Vec<u64> {
        match &self.filter {
            Some(f) => f.raw.clone(),
            None if self.units.is_empty() => vec![self.rows],
            None => self.units.clone(),
        }
    }

    /// The split's unit `u` alone (row group or stripe `first + u`), before any filter.
    pub fn unit_alone(&self, u: usize) -> Split {
        let raw = self.raw_units();
        let unit = match self.unit {
            SplitUnit::RowGroups { first, .. } => SplitUnit::RowGroups {
                first: first + u as u32,
                count: 1,
            },
            SplitUnit::Stripes { first, .. } => SplitUnit::Stripes {
                first: first + u as u32,
                count: 1,
            },
            SplitUnit::File => SplitUnit::File,
            SplitUnit::Bytes { start, end } => SplitUnit::Bytes { start, end },
        };
        Split {
            unit,
            rows: raw.get(u).copied().unwrap_or(0),
            units: Vec::new(),
            filter: None,
            ..self.clone()
        }
    }
}

/// Checks that a [`SplitUnit::File`] split's file holds the rows its table's metadata said
/// (`held`, by the footer's row groups): the plan's counts are what equal steps and exactly-once
/// are made of, so a file that disagrees is refused, never read with other counts.
pub(crate) fn check_file_rows(split: &Split, held: u64) -> crate::Result<()> {
    let said: u64 = split.raw_units().iter().sum();
    if said == held {
        return Ok(());
    }
    Err(crate::Error::Data {
        loc: crate::io::loc(&split.path, Some(split.id), None, Some("footer".into())),
        format: split.format.name(),
        detail: format!(
            "the table's metadata says the file holds {said} rows, its footer's row groups hold \
             {held}: the file is not the one the table committed (rewritten in place?)"
        ),
    })
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
            columns: None,
            table: None,
            units: Vec::new(),
            filter: None,
        })
        .collect()
}
