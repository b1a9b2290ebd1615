//! The async bridge: one process-wide tokio runtime (two worker threads, `hydrofeed-hdfs`)
//! runs every hdfs-native future; [`Task`] and [`run`] wait for one on a channel with a
//! deadline, so a call works from any thread and never hangs forever.

use std::sync::OnceLock;
use std::time::Duration;

use crate::{Error, Result};

/// The process-wide runtime that runs hdfs-native's futures.
pub(super) fn runtime() -> Result<&'static tokio::runtime::Runtime> {
    static RT: OnceLock<std::result::Result<tokio::runtime::Runtime, String>> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("hydrofeed-hdfs")
            .enable_all()
            .build()
            .map_err(|e| e.to_string())
    })
    .as_ref()
    .map_err(|e| Error::external("cannot start the HDFS runtime", e.clone()))
}

/// A future running on the HDFS runtime; [`Task::wait`] collects its output.
pub(super) struct Task<T> {
    rx: std::sync::mpsc::Receiver<T>,
    pub(super) handle: tokio::task::JoinHandle<()>,
}

impl<T: Send + 'static> Task<T> {
    pub(super) fn spawn<F>(fut: F) -> Result<Self>
    where
        F: std::future::Future<Output = T> + Send + 'static,
    {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        let handle = runtime()?.spawn(async move {
            let _ = tx.send(fut.await);
        });
        Ok(Self { rx, handle })
    }

    /// Waits at most `timeout`; on timeout the task is aborted.
    pub(super) fn wait(self, timeout: Duration, what: impl FnOnce() -> String) -> Result<T> {
        match self.rx.recv_timeout(timeout) {
            Ok(v) => Ok(v),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                self.handle.abort();
                Err(Error::Timeout {
                    what: what(),
                    secs: timeout.as_secs_f64(),
                })
            }
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => Err(Error::Internal(format!(
                "HDFS task for {} ended without a result",
                what()
            ))),
        }
    }
}

/// Runs `fut` on the HDFS runtime and waits for it at most `timeout`.
pub(super) fn run<T, F>(timeout: Duration, what: impl FnOnce() -> String, fut: F) -> Result<T>
where
    T: Send + 'static,
    F: std::future::Future<Output = T> + Send + 'static,
{
    Task::spawn(fut)?.wait(timeout, what)
}
