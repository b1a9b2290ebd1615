//! `hydrofeed serve`: feed one trainer on this node from an input, without a coordinator.

use std::path::PathBuf;
use std::time::Duration;

use hydrofeed_ipc::RingConfig;

use crate::format::{OnError, ReadOptions};
use crate::serve::{serve, ServeOptions};
use crate::split::Format;

/// Input format (when file names do not tell).
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum ServeFormat {
    /// Apache Parquet.
    Parquet,
    /// Apache ORC.
    Orc,
    /// Avro object container files.
    Avro,
    /// TFRecord of tf.train.Example.
    Tfrecord,
}

/// Arguments of `hydrofeed serve`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Input: file, directory or glob (local path or hdfs:// URI).
    #[arg(long)]
    pub input: String,
    /// Unix socket the trainer connects to (also read from HYDROFEED_FEED_SOCKET).
    #[arg(long, env = "HYDROFEED_FEED_SOCKET")]
    pub socket: PathBuf,
    /// Rows per batch when the trainer does not ask for a size.
    #[arg(long, default_value_t = 256)]
    pub batch_size: usize,
    /// Passes over the input.
    #[arg(long, default_value_t = 1)]
    pub epochs: u32,
    /// Columns to read (comma separated); all by default.
    #[arg(long, value_delimiter = ',')]
    pub columns: Option<Vec<String>>,
    /// Input format.
    #[arg(long, value_enum)]
    pub format: Option<ServeFormat>,
    /// Skip corrupt records (counted and logged) instead of stopping with an error.
    #[arg(long)]
    pub skip_errors: bool,
    /// Ring capacity in MiB.
    #[arg(long, default_value_t = 64)]
    pub ring_mb: usize,
    /// Seconds to wait for a trainer to connect.
    #[arg(long, default_value_t = 300.0)]
    pub accept_timeout: f64,
    /// Seconds the ring may stay full before the trainer counts as stalled.
    #[arg(long, default_value_t = 600.0)]
    pub stall_timeout: f64,
}

/// The reader options that the `--columns`, `--format` and `--skip-errors` flags of
/// `hydrofeed serve` and `hydrofeed feeder` describe.
pub(crate) fn read_options(
    columns: Option<Vec<String>>,
    format: Option<ServeFormat>,
    skip_errors: bool,
) -> ReadOptions {
    ReadOptions {
        columns,
        format: format.map(|f| match f {
            ServeFormat::Parquet => Format::Parquet,
            ServeFormat::Orc => Format::Orc,
            ServeFormat::Avro => Format::Avro,
            ServeFormat::Tfrecord => Format::Tfrecord,
        }),
        on_error: if skip_errors {
            OnError::Skip
        } else {
            OnError::Raise
        },
        ..ReadOptions::default()
    }
}

/// Runs `hydrofeed serve`.
pub fn run(args: Args) -> anyhow::Result<()> {
    let opts = ServeOptions {
        input: args.input,
        socket: args.socket,
        batch_size: args.batch_size,
        epochs: args.epochs,
        read: read_options(args.columns, args.format, args.skip_errors),
        ring: RingConfig {
            capacity: args.ring_mb.max(1) << 20,
            max_frame: None,
        },
        accept_timeout: Duration::from_secs_f64(args.accept_timeout.max(0.1)),
        stall_timeout: Duration::from_secs_f64(args.stall_timeout.max(0.1)),
    };
    let r = serve(&opts)?;
    eprintln!(
        "hydrofeed serve: {} rows in {} batches of {} ({} bytes)",
        r.rows, r.batches, r.batch_size, r.bytes
    );
    Ok(())
}
