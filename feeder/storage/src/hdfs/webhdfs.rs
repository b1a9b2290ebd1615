//! Block locations over WebHDFS (`GETFILEBLOCKLOCATIONS`, plain HTTP, simple auth), because
//! hdfs-native keeps a reader's located blocks private: a minimal HTTP/1.0 client with
//! deadlines, chunked-body decoding and the JSON answer's parser.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use super::HdfsStorage;
use crate::BlockLocation;

impl HdfsStorage {
    /// Block locations from WebHDFS, trying each NameNode HTTP address.
    pub(super) fn webhdfs_locations(
        &self,
        path: &str,
    ) -> std::result::Result<Vec<BlockLocation>, String> {
        let mut errors = Vec::new();
        let mut query = String::from("op=GETFILEBLOCKLOCATIONS");
        if let Some(u) = &self.user {
            query.push_str("&user.name=");
            query.push_str(&url_encode(u));
        }
        for addr in &self.http {
            let target = format!("/webhdfs/v1{}?{query}", url_encode_path(path));
            match http_get(addr, &target, self.timeout.min(Duration::from_secs(30))) {
                Ok((200, body)) => return parse_block_locations(&body),
                Ok((code, body)) => errors.push(format!(
                    "{addr}: HTTP {code}: {}",
                    String::from_utf8_lossy(&body)
                )),
                Err(e) => errors.push(format!("{addr}: {e}")),
            }
        }
        Err(if errors.is_empty() {
            "no NameNode HTTP address".to_string()
        } else {
            errors.join("; ")
        })
    }
}

fn url_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn url_encode_path(p: &str) -> String {
    p.split('/').map(url_encode).collect::<Vec<_>>().join("/")
}

/// A minimal HTTP/1.0 GET (no chunked encoding to handle), with deadlines on every step.
fn http_get(addr: &str, target: &str, timeout: Duration) -> std::io::Result<(u16, Vec<u8>)> {
    let sa = addr
        .to_socket_addrs()?
        .next()
        .ok_or_else(|| std::io::Error::other(format!("cannot resolve {addr}")))?;
    let mut s = TcpStream::connect_timeout(&sa, timeout)?;
    s.set_read_timeout(Some(timeout))?;
    s.set_write_timeout(Some(timeout))?;
    write!(
        s,
        "GET {target} HTTP/1.0\r\nHost: {addr}\r\nAccept: application/json\r\n\r\n"
    )?;
    let mut buf = Vec::new();
    s.take(64 << 20).read_to_end(&mut buf)?;
    let head_end = buf
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| std::io::Error::other("malformed HTTP response"))?;
    let head = String::from_utf8_lossy(&buf[..head_end]);
    let code = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| std::io::Error::other("malformed HTTP status line"))?;
    let body = &buf[head_end + 4..];
    let chunked = head.lines().any(|l| {
        let l = l.to_ascii_lowercase();
        l.starts_with("transfer-encoding:") && l.contains("chunked")
    });
    Ok((
        code,
        if chunked {
            dechunk(body)?
        } else {
            body.to_vec()
        },
    ))
}

/// Decodes a `Transfer-Encoding: chunked` body (servers may use it even for HTTP/1.0).
pub(super) fn dechunk(mut b: &[u8]) -> std::io::Result<Vec<u8>> {
    let bad = || std::io::Error::other("malformed chunked HTTP body");
    let mut out = Vec::new();
    loop {
        let eol = b.windows(2).position(|w| w == b"\r\n").ok_or_else(bad)?;
        let size_text = std::str::from_utf8(&b[..eol]).map_err(|_| bad())?;
        let size_text = size_text.split(';').next().unwrap_or("").trim();
        let size = usize::from_str_radix(size_text, 16).map_err(|_| bad())?;
        b = &b[eol + 2..];
        if size == 0 {
            return Ok(out);
        }
        if b.len() < size + 2 {
            return Err(bad());
        }
        out.extend_from_slice(&b[..size]);
        b = &b[size + 2..];
    }
}

pub(super) fn parse_block_locations(
    body: &[u8],
) -> std::result::Result<Vec<BlockLocation>, String> {
    let v: serde_json::Value =
        serde_json::from_slice(body).map_err(|e| format!("bad WebHDFS JSON: {e}"))?;
    let arr = v
        .pointer("/BlockLocations/BlockLocation")
        .and_then(|a| a.as_array())
        .ok_or_else(|| "WebHDFS answer without BlockLocations".to_string())?;
    arr.iter()
        .map(|b| {
            let num = |k: &str| {
                b.get(k)
                    .and_then(|x| x.as_u64())
                    .ok_or_else(|| format!("block without {k}"))
            };
            Ok(BlockLocation {
                offset: num("offset")?,
                len: num("length")?,
                hosts: b
                    .get("hosts")
                    .and_then(|h| h.as_array())
                    .map(|h| {
                        h.iter()
                            .filter_map(|x| x.as_str().map(str::to_string))
                            .collect()
                    })
                    .unwrap_or_default(),
            })
        })
        .collect()
}
