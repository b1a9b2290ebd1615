//! `hydrofeed feeder`: the per-node daemon. Registers one rank per local trainer with the
//! coordinator, serves each trainer a ring on `<socket-dir>/rank-<rank>.sock`, and feeds it the
//! row ranges the coordinator hands out (see `hydrofeed_feeder::daemon`).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;

use crate::read_args::ReadArgs;
use hydrofeed_coord::token::Token;
use hydrofeed_feeder::daemon::{own_usage, run_feeder, FeederOptions};

/// Arguments of `hydrofeed feeder`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Input: file, directory or glob (local path or hdfs:// URI); the same the coordinator
    /// planned.
    #[arg(long)]
    pub input: String,
    /// Coordinator address, `host:port` (`https://host:port`, or with `--tls-ca`: TLS).
    #[arg(long, env = "HYDROFEED_COORDINATOR")]
    pub coordinator: String,
    /// File holding the job token (else `HYDROFEED_TOKEN`).
    #[arg(long)]
    pub token_file: Option<PathBuf>,
    /// TLS to the coordinator: CA, client certificate and key.
    #[command(flatten)]
    pub tls: crate::tls::ClientArgs,
    /// Directory for the trainer sockets (`rank-<rank>.sock`).
    #[arg(long)]
    pub socket_dir: PathBuf,
    /// Number of local trainers (one rank each).
    #[arg(long, default_value_t = 1)]
    pub trainers: u32,
    /// Ranks to register, comma-separated (default: the coordinator picks).
    #[arg(long, value_delimiter = ',')]
    pub ranks: Option<Vec<u32>>,
    /// TF server port of each local trainer, comma-separated (for the cluster spec).
    #[arg(long, value_delimiter = ',')]
    pub trainer_ports: Option<Vec<u32>>,
    /// This host's name or address (locality, cluster spec).
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// Columns, format, corrupt records, schema: those the coordinator planned with.
    #[command(flatten)]
    pub read: ReadArgs,
    /// Memory budget in MiB: half for the rings, the rest for decoded batches in flight.
    #[arg(long, default_value_t = 512)]
    pub memory_mb: usize,
    /// Seconds to wait for each trainer to attach.
    #[arg(long, default_value_t = 300.0)]
    pub accept_timeout: f64,
    /// Seconds a trainer may leave its ring full before the feeder gives up.
    #[arg(long, default_value_t = 600.0)]
    pub stall_timeout: f64,
    /// Serve Prometheus text metrics on this address (`/metrics`).
    #[arg(long)]
    pub metrics: Option<SocketAddr>,
    /// Threads decoding splits, shared by all local trainers (0: one per CPU).
    #[arg(long, default_value_t = 0)]
    pub decode_threads: usize,
    /// A trainer that leaves before its end of feed ends only its rank (the feeder still exits
    /// with status 3 at the end); without it the feeder stops at once (status 3).
    #[arg(long)]
    pub keep_going: bool,
    /// Take the job's batch size from the trainers (`hydrofeed launch` without
    /// `--batch-size`): each rank writes what its trainer asked for into the socket directory
    /// and waits for the size `launch` agreed there.
    #[arg(long, hide = true)]
    pub batch_size_from_trainers: bool,
    /// This feeder replaces one that died (`hydrofeed launch` restarts it): each rank takes its
    /// trainer back first (it re-attaches and reports what it read after its last ack), then
    /// registers. Needs `--ranks`.
    #[arg(long, hide = true)]
    pub rejoin: bool,
    /// Seconds a call keeps trying a coordinator that does not answer (killed, restarting on
    /// its journal, its host down) before the feeder fails naming it and the stage (exit
    /// status 5, and every trainer gets the reason).
    #[arg(long, env = "HYDROFEED_COORDINATOR_TIMEOUT", default_value_t = 60.0)]
    pub coordinator_timeout: f64,
}

/// Exit status of a feeder whose trainer left before its end of feed (the trainer's own exit
/// status tells whether that was a crash or a clean early stop).
pub const TRAINER_LEFT_EXIT: i32 = 3;

/// Exit status of a feeder one of whose trainers took no batch for `--stall-timeout` (its ring
/// stayed full): the trainer's failure, which the message names (`trainer rank R (pid P)`).
pub const TRAINER_STALLED_EXIT: i32 = 4;

/// Exit status of a feeder that lost its coordinator: it did not answer for
/// `--coordinator-timeout` (killed, host down, port closed); the message names its address
/// and the stage.
pub const COORDINATOR_LOST_EXIT: i32 = 5;

extern "C" fn on_stop_signal(sig: libc::c_int) {
    static SEEN: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if SEEN.swap(true, std::sync::atomic::Ordering::SeqCst) {
        // A second signal: leave now.
        // SAFETY: `_exit` is async-signal-safe.
        unsafe { libc::_exit(128 + sig) };
    }
    hydrofeed_feeder::daemon::request_stop();
}

/// SIGTERM and SIGINT end the feed gracefully ([`hydrofeed_feeder::daemon::request_stop`]): the trainers
/// get end-of-feed and their last acks reach the coordinator. A second signal exits at once.
fn stop_on_signals() {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: the handler does an atomic swap, an atomic store or `_exit`, all
        // async-signal-safe; it is a valid `extern "C" fn(c_int)` for the whole program.
        unsafe {
            libc::signal(
                sig,
                on_stop_signal as extern "C" fn(libc::c_int) as libc::sighandler_t,
            );
        }
    }
}

/// Runs `hydrofeed feeder`.
pub fn run(args: Args) -> anyhow::Result<()> {
    if args.read.snapshot.is_none() {
        // A table's newest snapshot may not be the one the coordinator planned: its splits
        // would name other files. The coordinator prints the one to read.
        let storage = hydrofeed_storage::open_storage(&args.input)?;
        if hydrofeed_format::delta::is_table(&storage, &args.input)
            || hydrofeed_format::iceberg::is_table(&storage, &args.input)
        {
            anyhow::bail!(
                "{} is a table: pass --snapshot with the version the coordinator planned (it \
                 prints \"start the feeders with --snapshot N\"), so that every feeder reads \
                 the coordinator's files whatever is committed meanwhile",
                args.input
            );
        }
    }
    let token = match &args.token_file {
        Some(p) => Token::read(p)?,
        None => Token::from_env()?.context(
            "no token: pass --token-file or set HYDROFEED_TOKEN (the coordinator prints where \
             it wrote it)",
        )?,
    };
    let opts = FeederOptions {
        input: args.input,
        coordinator: args.coordinator,
        token,
        tls: args.tls.load()?,
        socket_dir: args.socket_dir,
        trainers: args.trainers,
        ranks: args.ranks,
        trainer_ports: args.trainer_ports.unwrap_or_default(),
        host: args.host,
        read: args.read.options()?,
        memory_budget: args.memory_mb.max(16) << 20,
        accept_timeout: super::secs("--accept-timeout", args.accept_timeout)?
            .max(Duration::from_millis(100)),
        stall_timeout: super::secs("--stall-timeout", args.stall_timeout)?
            .max(Duration::from_millis(100)),
        metrics: args.metrics,
        decode_threads: args.decode_threads,
        keep_going: args.keep_going,
        batch_size_from_trainers: args.batch_size_from_trainers,
        rejoin: args.rejoin,
        coordinator_timeout: super::secs("--coordinator-timeout", args.coordinator_timeout)?,
    };
    stop_on_signals();
    let t0 = std::time::Instant::now();
    let r = match run_feeder(&opts) {
        Ok(r) => r,
        Err(e @ hydrofeed_error::Error::PeerLost(_)) => {
            return Err(super::Exit::new(TRAINER_LEFT_EXIT, e.to_string()).into())
        }
        Err(e @ hydrofeed_error::Error::CoordinatorLost { .. }) => {
            return Err(super::Exit::new(COORDINATOR_LOST_EXIT, e.to_string()).into())
        }
        Err(e @ hydrofeed_error::Error::Stalled { .. }) => {
            return Err(super::Exit::new(TRAINER_STALLED_EXIT, e.to_string()).into())
        }
        Err(e) => return Err(e.into()),
    };
    let mb = |b: u64| b as f64 / 1e6;
    for k in r.ranks {
        eprintln!(
            "hydrofeed feeder: rank {}: {} rows in {} batches, {} steps; {:.1} MB read from \
             storage, {:.1} MB into the ring",
            k.rank,
            k.rows,
            k.batches,
            k.steps,
            mb(k.storage_bytes),
            mb(k.ring_bytes)
        );
    }
    let (cpu, rss) = own_usage();
    let wall = t0.elapsed().as_secs_f64();
    // Cores used: the decode pool's work plus the writers', over the feeder's life.
    eprintln!(
        "hydrofeed feeder: cpu {cpu:.3} s, max RSS {rss:.1} MiB; {wall:.2} s wall, {:.2} cores used",
        cpu / wall.max(1e-9)
    );
    Ok(())
}
