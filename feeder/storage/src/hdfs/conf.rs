//! The Hadoop configuration as far as we read it ourselves (hdfs-native reads its own copy):
//! NameNode RPC and HTTP addresses of a host or HA name service, how long to wait for an
//! unreachable NameNode, and the TCP probe that fails fast naming each address and the key
//! it came from.

use std::collections::HashMap;
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use super::CONNECT_TIMEOUT_ENV;
use crate::{Error, Result};

/// Deadline of one TCP connection attempt to a NameNode.
const PROBE_TIMEOUT: Duration = Duration::from_secs(3);

/// How long to keep trying an unreachable NameNode: [`CONNECT_TIMEOUT_ENV`], else the Hadoop
/// client's retry keys when the configuration sets them, else one attempt.
pub(super) fn connect_wait(conf: &HadoopConf) -> Duration {
    if let Some(s) = std::env::var(CONNECT_TIMEOUT_ENV)
        .ok()
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|v| v.is_finite() && *v >= 0.0)
    {
        return Duration::from_secs_f64(s);
    }
    match conf
        .get("ipc.client.connect.max.retries")
        .and_then(|v| v.trim().parse::<u64>().ok())
    {
        Some(n) => {
            let every = conf
                .get("ipc.client.connect.retry.interval")
                .and_then(|v| v.trim().parse::<u64>().ok())
                .unwrap_or(1000);
            Duration::from_millis(n.saturating_mul(every))
        }
        None => Duration::ZERO,
    }
}

/// The NameNode RPC addresses of `authority`, each with the configuration key (or URI) it
/// came from.
pub(super) fn rpc_addresses(
    conf: &HadoopConf,
    authority: &str,
    from: &str,
) -> Vec<(String, String)> {
    if let Some(nns) = conf.get(&format!("dfs.ha.namenodes.{authority}")) {
        return nns
            .split(',')
            .map(str::trim)
            .filter_map(|nn| {
                let key = format!("dfs.namenode.rpc-address.{authority}.{nn}");
                conf.get(&key).map(|a| (a, key))
            })
            .collect();
    }
    let addr = if authority.contains(':') {
        authority.to_string()
    } else {
        format!("{authority}:8020")
    };
    vec![(addr, from.to_string())]
}

/// Fails fast when none of the NameNode addresses accepts a TCP connection: names each
/// address, where it came from, and why (connection refused, unknown host, timed out). Retries
/// for `wait`. (An HA name service without addresses in the configuration has none: left to
/// hdfs-native, which reports that itself.)
pub(super) fn probe_namenodes(addrs: &[(String, String)], wait: Duration, uri: &str) -> Result<()> {
    let t0 = std::time::Instant::now();
    loop {
        let mut errors = Vec::new();
        for (addr, key) in addrs {
            let resolved = match addr.to_socket_addrs() {
                Ok(a) => a.collect::<Vec<_>>(),
                Err(e) => {
                    errors.push(format!("{addr} (from {key}): unknown host ({e})"));
                    continue;
                }
            };
            let mut why = format!("{addr} (from {key}): resolves to no address");
            for sa in resolved {
                match TcpStream::connect_timeout(&sa, PROBE_TIMEOUT) {
                    Ok(_) => return Ok(()),
                    Err(e) => {
                        let what = match e.kind() {
                            std::io::ErrorKind::ConnectionRefused => "connection refused".into(),
                            std::io::ErrorKind::TimedOut => {
                                format!("no answer within {} s", PROBE_TIMEOUT.as_secs())
                            }
                            _ => e.to_string(),
                        };
                        why = if sa.to_string() == *addr {
                            format!("{addr} (from {key}): {what}")
                        } else {
                            format!("{addr} (from {key}, {sa}): {what}")
                        };
                    }
                }
            }
            errors.push(why);
        }
        if t0.elapsed() >= wait {
            return Err(Error::Hdfs {
                path: uri.to_string(),
                detail: format!(
                    "cannot reach the NameNode: {}{}",
                    errors.join("; "),
                    if wait.is_zero() {
                        format!(
                            " (to wait for it, pass --hdfs-timeout SECONDS or set \
                             {CONNECT_TIMEOUT_ENV})"
                        )
                    } else {
                        format!(" (tried for {:.0} s)", wait.as_secs_f64())
                    }
                ),
                retryable: true,
            });
        }
        tracing::warn!(
            "cannot reach the NameNode yet ({}); retrying for up to {:.0} s",
            errors.join("; "),
            wait.saturating_sub(t0.elapsed()).as_secs_f64()
        );
        std::thread::sleep(Duration::from_secs(1).min(wait.saturating_sub(t0.elapsed())));
    }
}

/// The subset of the Hadoop configuration we read ourselves (hdfs-native reads its own copy).
pub(super) struct HadoopConf {
    map: HashMap<String, String>,
}

impl HadoopConf {
    /// `core-site.xml` then `hdfs-site.xml` from `dir`, `$HADOOP_CONF_DIR` or
    /// `$HADOOP_HOME/etc/hadoop`, then `overrides`: the same order as hdfs-native.
    pub(super) fn load(dir: Option<&str>, overrides: &HashMap<String, String>) -> Self {
        let dir = dir
            .map(str::to_string)
            .or_else(|| std::env::var("HADOOP_CONF_DIR").ok())
            .or_else(|| {
                std::env::var("HADOOP_HOME")
                    .ok()
                    .map(|h| format!("{h}/etc/hadoop"))
            });
        let mut map = HashMap::new();
        if let Some(dir) = dir {
            for f in ["core-site.xml", "hdfs-site.xml"] {
                let p = std::path::Path::new(&dir).join(f);
                if let Ok(text) = std::fs::read_to_string(&p) {
                    match roxmltree::Document::parse(&text) {
                        Ok(doc) => {
                            for prop in doc.descendants().filter(|n| n.has_tag_name("property")) {
                                let get = |tag: &str| {
                                    prop.children()
                                        .find(|c| c.has_tag_name(tag))
                                        .and_then(|c| c.text())
                                        .map(|t| t.trim().to_string())
                                };
                                if let (Some(k), Some(v)) = (get("name"), get("value")) {
                                    map.insert(k, v);
                                }
                            }
                        }
                        Err(e) => {
                            tracing::warn!(file = %p.display(), error = %e, "cannot parse Hadoop config")
                        }
                    }
                }
            }
        }
        map.extend(overrides.iter().map(|(k, v)| (k.clone(), v.clone())));
        Self { map }
    }

    pub(super) fn get(&self, k: &str) -> Option<String> {
        self.map.get(k).cloned()
    }

    /// NameNode HTTP addresses for `authority` (host:port or an HA name service).
    pub(super) fn http_addresses(&self, authority: &str) -> Vec<String> {
        if let Some(nns) = self.get(&format!("dfs.ha.namenodes.{authority}")) {
            return nns
                .split(',')
                .map(str::trim)
                .filter_map(|nn| self.get(&format!("dfs.namenode.http-address.{authority}.{nn}")))
                .collect();
        }
        let host = authority.rsplit_once(':').map_or(authority, |(h, _)| h);
        match self.get("dfs.namenode.http-address") {
            // 0.0.0.0 means "every interface": reach it through the RPC host.
            Some(a) => {
                let port = a.rsplit_once(':').map_or("9870", |(_, p)| p);
                match a.rsplit_once(':').map(|(h, _)| h) {
                    Some("0.0.0.0") | None => vec![format!("{host}:{port}")],
                    Some(h) if h == host || !authority.contains(':') => vec![format!("{h}:{port}")],
                    // The configured NameNode is another one than the URI names: guess.
                    Some(_) => vec![format!("{host}:{port}")],
                }
            }
            None => vec![format!("{host}:9870")],
        }
    }
}
