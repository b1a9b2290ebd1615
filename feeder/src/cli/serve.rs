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

/// The socket path, for the signal handler.
static SOCKET: std::sync::OnceLock<std::ffi::CString> = std::sync::OnceLock::new();

extern "C" fn on_signal(sig: libc::c_int) {
    if let Some(p) = SOCKET.get() {
        // SAFETY: `stat` and `unlink` are async-signal-safe; `p` is a valid C string that
        // lives for the whole program (a `OnceLock` set before the handler was installed);
        // `st` is plain old data written by `stat`.
        unsafe {
            let mut st: libc::stat = std::mem::zeroed();
            if libc::stat(p.as_ptr(), &mut st) == 0 && st.st_mode & libc::S_IFMT == libc::S_IFSOCK {
                libc::unlink(p.as_ptr());
            }
        }
    }
    // SAFETY: `_exit` is async-signal-safe.
    unsafe { libc::_exit(128 + sig) };
}

/// Ctrl-C and SIGTERM remove the socket file before exiting (the listener's own cleanup does
/// not run when a signal ends the process).
fn remove_socket_on_signals(socket: &std::path::Path) {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(socket.as_os_str().as_bytes()) else {
        return;
    };
    if SOCKET.set(c).is_err() {
        return;
    }
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: the handler only calls async-signal-safe functions (see there) and is a
        // valid `extern "C" fn(c_int)` for the whole program.
        unsafe {
            libc::signal(
                sig,
                on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t,
            );
        }
    }
}

/// Runs `hydrofeed serve`.
pub fn run(args: Args) -> anyhow::Result<()> {
    remove_socket_on_signals(&args.socket);
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
