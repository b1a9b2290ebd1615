//! `hydrofeed serve`: feed one trainer on this node from an input, without a coordinator.

use std::path::PathBuf;
use std::time::Duration;

use hydrofeed_ipc::RingConfig;

use crate::read_args::ReadArgs;
use hydrofeed_coord::OrderSpec;
use hydrofeed_feeder::serve::{serve, ServeOptions, ServeOrder};

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
    /// Mix rows across files: the fixed order of one rank, this many rows permuted at a time
    /// (docs/arch/order.md). Without it, splits are read in plan order.
    #[arg(long)]
    pub shuffle_buffer: Option<u64>,
    /// Lanes every window of the shuffle buffer mixes (with --shuffle-buffer).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1024), requires = "shuffle_buffer")]
    pub cycle_length: Option<u32>,
    /// Seed of the order (with --shuffle-buffer); each epoch has its own order.
    #[arg(long, default_value_t = 0, requires = "shuffle_buffer")]
    pub seed: u64,
    /// Columns, format, corrupt records, schema.
    #[command(flatten)]
    pub read: ReadArgs,
    /// Ring capacity in MiB.
    #[arg(long, default_value_t = 64)]
    pub ring_mb: usize,
    /// Seconds to wait for a trainer to connect.
    #[arg(long, default_value_t = 300.0)]
    pub accept_timeout: f64,
    /// Seconds the ring may stay full before the trainer counts as stalled.
    #[arg(long, default_value_t = 600.0)]
    pub stall_timeout: f64,
    /// Threads decoding splits (0: one per CPU). Splits are decoded in parallel and handed
    /// to the trainer in plan order.
    #[arg(long, default_value_t = 0)]
    pub decode_threads: usize,
    /// MiB of decoded batches the threads may read ahead of the split being handed out.
    #[arg(long, default_value_t = 256)]
    pub read_ahead_mb: usize,
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
        read: args.read.options()?,
        ring: RingConfig {
            capacity: args.ring_mb.max(1) << 20,
            max_frame: None,
        },
        accept_timeout: super::secs("--accept-timeout", args.accept_timeout)?
            .max(Duration::from_millis(100)),
        stall_timeout: super::secs("--stall-timeout", args.stall_timeout)?
            .max(Duration::from_millis(100)),
        order: args.shuffle_buffer.map(|buffer| ServeOrder {
            seed: args.seed,
            spec: OrderSpec::new(
                buffer,
                args.cycle_length.unwrap_or(OrderSpec::default().cycle),
            ),
        }),
        decode_threads: args.decode_threads,
        read_ahead: args.read_ahead_mb.max(1) << 20,
    };
    let r = serve(&opts)?;
    eprintln!(
        "hydrofeed serve: {} rows in {} batches of {} ({} bytes)",
        r.rows, r.batches, r.batch_size, r.bytes
    );
    Ok(())
}
