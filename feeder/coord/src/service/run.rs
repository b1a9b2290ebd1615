//! Running the coordinator's service: its listener, runtime thread, ticker, metrics endpoint
//! and shutdown.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use super::{metrics_body, CheckToken, CoordService, ServiceOptions, Shared};
use crate::cluster::Roster;
use crate::journal::Journal;
use crate::machine::Machine;
use crate::proto::coordinator_server::CoordinatorServer;
use crate::tls::causes;
use crate::{Error, Result};

/// A running coordinator service (on its own runtime thread).
#[derive(Debug)]
pub struct RunningService {
    /// The address it listens on.
    pub addr: SocketAddr,
    /// The address of the Prometheus endpoint, when asked for.
    pub metrics_addr: Option<SocketAddr>,
    /// Shared state.
    pub shared: Arc<Shared>,
    shutdown: Option<tokio::sync::watch::Sender<bool>>,
    thread: Option<std::thread::JoinHandle<Result<()>>>,
}

impl RunningService {
    /// Stops the service and waits for its thread (5 s at most for calls in flight).
    pub fn shutdown(mut self) -> Result<()> {
        self.stop()
    }

    fn stop(&mut self) -> Result<()> {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(true);
        }
        match self.thread.take() {
            Some(t) => t
                .join()
                .map_err(|_| Error::Internal("coordinator thread panicked".into()))?,
            None => Ok(()),
        }
    }

    /// Blocks until the service stops (Ctrl-C in the CLI).
    pub fn join(mut self) -> Result<()> {
        match self.thread.take() {
            Some(t) => t
                .join()
                .map_err(|_| Error::Internal("coordinator thread panicked".into()))?,
            None => Ok(()),
        }
    }
}

impl Drop for RunningService {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

/// A journal for the service, with the roster and clock that go with it.
#[derive(Debug)]
pub struct Journaled {
    /// The journal, open for appending.
    pub journal: Journal,
    /// The roster (recovered, or new).
    pub roster: Roster,
    /// The clock's value at start (the last time recorded, or 0).
    pub now_ms: u64,
}

/// Starts the service on `listen` (port 0: an ephemeral one) on a thread of its own with a
/// small multi-threaded runtime, over TLS when `opts.tls` says so; with `metrics`, also the
/// Prometheus endpoint (plain HTTP: it serves counters, no token, no state).
pub fn spawn(
    m: Machine,
    opts: ServiceOptions,
    listen: SocketAddr,
    metrics: Option<SocketAddr>,
) -> Result<RunningService> {
    spawn_journaled(m, None, opts, listen, metrics)
}

/// [`spawn`] with a journal (`hydrofeed coordinator --journal`).
pub fn spawn_journaled(
    m: Machine,
    journal: Option<Journaled>,
    opts: ServiceOptions,
    listen: SocketAddr,
    metrics: Option<SocketAddr>,
) -> Result<RunningService> {
    let server = match &opts.tls {
        Some(t) => tonic::transport::Server::builder()
            .tls_config(t.tonic())
            .map_err(|e| {
                Error::InvalidArgument(format!("TLS with {}: {}", t.cert(), causes(&e)))
            })?,
        None => tonic::transport::Server::builder(),
    };
    let shared = Shared::with_journal(m, journal, opts)?;
    let rt = match threads()? {
        1 => tokio::runtime::Builder::new_current_thread(),
        n => {
            let mut b = tokio::runtime::Builder::new_multi_thread();
            b.worker_threads(n);
            b
        }
    }
    .thread_name("hydrofeed-coord")
    .enable_all()
    .build()
    .map_err(|e| Error::Internal(format!("tokio runtime: {e}")))?;
    let (listener, metrics_listener) = rt.block_on(async {
        let l = bind(listen);
        let ml = match metrics {
            Some(a) => Some(tokio::net::TcpListener::bind(a).await),
            None => None,
        };
        (l, ml)
    });
    let listener =
        listener.map_err(|e| Error::InvalidArgument(format!("cannot listen on {listen}: {e}")))?;
    let metrics_listener = metrics_listener.transpose().map_err(|e| {
        Error::InvalidArgument(format!("cannot listen on {metrics:?} for metrics: {e}"))
    })?;
    let addr = listener
        .local_addr()
        .map_err(|e| Error::Internal(e.to_string()))?;
    let metrics_addr = match &metrics_listener {
        Some(l) => Some(l.local_addr().map_err(|e| Error::Internal(e.to_string()))?),
        None => None,
    };
    let (tx, rx) = tokio::sync::watch::channel(false);
    let sh = shared.clone();
    let thread = std::thread::Builder::new()
        .name("hydrofeed-coord".into())
        .spawn(move || -> Result<()> {
            rt.block_on(async move {
                let ticker = {
                    let sh = sh.clone();
                    tokio::spawn(async move {
                        let mut iv = tokio::time::interval(Duration::from_millis(100));
                        loop {
                            iv.tick().await;
                            sh.tick();
                        }
                    })
                };
                let metrics_task = metrics_listener
                    .map(|l| tokio::spawn(crate::metrics::serve(l, metrics_body(sh.clone()))));
                let token = sh.opts.token.clone();
                let svc = CoordinatorServer::with_interceptor(
                    CoordService { shared: sh.clone() },
                    CheckToken(token),
                );
                let incoming =
                    tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true));
                let stopped = |mut rx: tokio::sync::watch::Receiver<bool>| async move {
                    let _ = rx.wait_for(|v| *v).await;
                };
                let mut server = server;
                let server = server
                    .add_service(svc)
                    .serve_with_incoming_shutdown(incoming, stopped(rx.clone()));
                // Graceful shutdown waits for calls in flight (a WaitClusterSpec may block for
                // the reservation timeout): give them 5 s, then stop anyway.
                let force = async {
                    stopped(rx.clone()).await;
                    tokio::time::sleep(Duration::from_secs(5)).await;
                };
                let r = tokio::select! {
                    r = server => r,
                    () = force => Ok(()),
                };
                ticker.abort();
                if let Some(t) = metrics_task {
                    t.abort();
                }
                sh.tick();
                let (session, unary) = sh.traffic();
                tracing::info!(
                    "the feeders' traffic: {session} session messages, {unary} unary calls \
                     (work requests, acks, heartbeats)"
                );
                r.map_err(|e| Error::Internal(format!("coordinator server: {e}")))
            })
        })
        .map_err(|e| Error::Internal(format!("spawn: {e}")))?;
    Ok(RunningService {
        addr,
        metrics_addr,
        shared,
        shutdown: Some(tx),
        thread: Some(thread),
    })
}

/// Names the threads of the coordinator's runtime (default [`THREADS`]; 1: the thread that
/// runs the service, no worker pool). One thread saves cross-thread wakeups; at 10,000
/// session feeders it measured the same CPU per lease as two, within the shared machine's
/// noise (docs/arch/coord.md).
pub const THREADS_ENV: &str = "HYDROFEED_COORD_THREADS";

/// The default of [`THREADS_ENV`].
const THREADS: usize = 2;

/// [`THREADS_ENV`], or its default.
fn threads() -> Result<usize> {
    match std::env::var(THREADS_ENV) {
        Ok(v) => match v.trim().parse::<usize>() {
            Ok(n) if (1..=64).contains(&n) => Ok(n),
            _ => Err(Error::InvalidArgument(format!(
                "{THREADS_ENV}={v:?}: not a thread count from 1 to 64"
            ))),
        },
        Err(_) => Ok(THREADS),
    }
}

/// The accept queue asked for: 10,000 feeders starting at once connect faster than a busy
/// coordinator accepts, and an overflowing queue (tokio's default is 1,024) drops handshakes
/// and resets connections. The kernel caps it at `net.core.somaxconn` (4,096 by default).
const LISTEN_BACKLOG: u32 = 16_384;

/// Binds and listens on `addr` with [`LISTEN_BACKLOG`] (address reuse on, as tokio's
/// `TcpListener::bind` sets it).
fn bind(addr: SocketAddr) -> std::io::Result<tokio::net::TcpListener> {
    let s = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    s.set_reuseaddr(true)?;
    s.bind(addr)?;
    s.listen(LISTEN_BACKLOG)
}
