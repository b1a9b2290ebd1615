//! Unit tests of the HDFS storage that need no cluster: NameNode reachability errors, the
//! Hadoop configuration keys, WebHDFS parsing, error mapping and URI paths. The tests against
//! a running MiniDFSCluster are in `feeder/format/tests/hdfs.rs`.

use super::conf::{connect_wait, rpc_addresses, HadoopConf};
use super::webhdfs::{dechunk, parse_block_locations};
use super::*;

/// `f` on a thread; `None` if it did not finish within `secs` (left running).
fn within<T: Send + 'static>(secs: u64, f: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(secs)).ok()
}

#[test]
fn unreachable_namenode_fails_fast_naming_address_and_source() {
    // Port 9 (discard) on loopback: nothing listens, the kernel refuses at once.
    let e = within(10, || {
        HdfsStorage::new("hdfs://127.0.0.1:9/x").and_then(|s| s.stat("/x").map(|_| ()))
    })
    .expect("an unreachable NameNode must fail within 10 s")
    .unwrap_err();
    let m = e.to_string();
    assert!(
        m.contains("127.0.0.1:9") && m.contains("connection refused") && m.contains("the URI"),
        "{m}"
    );
    assert!(m.contains("--hdfs-timeout"), "{m}");
    let e = within(10, || {
        HdfsStorage::new("hdfs://no-such-namenode.invalid:8020/x")
            .and_then(|s| s.stat("/x").map(|_| ()))
    })
    .expect("an unknown host must fail within 10 s")
    .unwrap_err();
    let m = e.to_string();
    assert!(
        m.contains("no-such-namenode.invalid:8020") && m.contains("unknown host"),
        "{m}"
    );
}

#[test]
fn namenode_addresses_name_their_conf_keys() {
    let mut o = HashMap::new();
    o.insert("dfs.ha.namenodes.ns".to_string(), "a,b".to_string());
    o.insert(
        "dfs.namenode.rpc-address.ns.a".to_string(),
        "h1:8020".to_string(),
    );
    let conf = HadoopConf::load(Some("/nonexistent"), &o);
    assert_eq!(
        rpc_addresses(&conf, "ns", "the URI"),
        vec![(
            "h1:8020".to_string(),
            "dfs.namenode.rpc-address.ns.a".to_string()
        )]
    );
    assert_eq!(
        rpc_addresses(&conf, "nn", "fs.defaultFS"),
        vec![("nn:8020".to_string(), "fs.defaultFS".to_string())]
    );
    o.insert("ipc.client.connect.max.retries".into(), "3".into());
    o.insert("ipc.client.connect.retry.interval".into(), "500".into());
    let conf = HadoopConf::load(Some("/nonexistent"), &o);
    if std::env::var_os(CONNECT_TIMEOUT_ENV).is_none() {
        assert_eq!(connect_wait(&conf), Duration::from_millis(1500));
    }
}

#[test]
fn parses_webhdfs_block_locations() {
    let body = br#"{"BlockLocations":{"BlockLocation":[
        {"hosts":["dn1","dn2"],"length":1048576,"offset":0,"names":["a:1"]},
        {"hosts":["dn3"],"length":10,"offset":1048576}]}}"#;
    let v = parse_block_locations(body).unwrap();
    assert_eq!(v.len(), 2);
    assert_eq!(
        v[0],
        BlockLocation {
            offset: 0,
            len: 1 << 20,
            hosts: vec!["dn1".into(), "dn2".into()]
        }
    );
    assert_eq!(v[1].offset, 1 << 20);
    assert!(parse_block_locations(b"{}").is_err());
}

#[test]
fn dechunks() {
    assert_eq!(
        dechunk(b"3\r\nabc\r\n2;x=y\r\nde\r\n0\r\n\r\n").unwrap(),
        b"abcde"
    );
    assert!(dechunk(b"5\r\nab").is_err());
    assert!(dechunk(b"zz\r\n").is_err());
}

#[test]
fn http_addresses_from_config() {
    let mut o = HashMap::new();
    let c = HadoopConf::load(Some("/nonexistent"), &o);
    assert_eq!(c.http_addresses("nn1:9000"), vec!["nn1:9870"]);
    o.insert("dfs.ha.namenodes.ns".to_string(), "a, b".to_string());
    o.insert(
        "dfs.namenode.http-address.ns.a".to_string(),
        "h1:50070".to_string(),
    );
    o.insert(
        "dfs.namenode.http-address.ns.b".to_string(),
        "h2:50070".to_string(),
    );
    o.insert(
        "dfs.namenode.http-address".to_string(),
        "0.0.0.0:9871".to_string(),
    );
    let c = HadoopConf::load(Some("/nonexistent"), &o);
    assert_eq!(c.http_addresses("ns"), vec!["h1:50070", "h2:50070"]);
    assert_eq!(c.http_addresses("nn1:9000"), vec!["nn1:9871"]);
}

#[test]
fn maps_errors() {
    let e = map_hdfs("hdfs://x/a", HdfsError::FileNotFound("/a".into()));
    assert!(matches!(e, Error::NotFound { ref path } if path == "hdfs://x/a"));
    let e = map_hdfs(
        "hdfs://x/a",
        HdfsError::RPCError(
            "org.apache.hadoop.security.AccessControlException".into(),
            "no".into(),
        ),
    );
    assert!(matches!(e, Error::PermissionDenied { .. }));
    let e = map_hdfs(
        "hdfs://x/a",
        HdfsError::RPCError(
            "org.apache.hadoop.ipc.StandbyException".into(),
            "standby".into(),
        ),
    );
    assert!(
        e.is_retryable() && e.to_string().contains("hdfs://x/a"),
        "{e}"
    );
    let e = map_hdfs(
        "hdfs://x/a",
        HdfsError::IOError(std::io::ErrorKind::ConnectionRefused.into()),
    );
    assert!(e.is_retryable());
    let e = map_hdfs("hdfs://x/a", HdfsError::UnsupportedFeature("ec".into()));
    assert!(!e.is_retryable());
}

#[test]
fn uri_paths() {
    let s = HdfsStorage::builder("hdfs://127.0.0.1:1/x")
        .with_config_dir("/nonexistent")
        .build()
        .unwrap();
    assert_eq!(s.base(), "hdfs://127.0.0.1:1");
    assert_eq!(s.hdfs_path("hdfs://127.0.0.1:1/a/b").unwrap(), "/a/b");
    assert_eq!(s.hdfs_path("hdfs:///a/b").unwrap(), "/a/b");
    assert_eq!(s.hdfs_path("/a").unwrap(), "/a");
    assert!(s.hdfs_path("hdfs://other:1/a").is_err());
    assert!(s.hdfs_path("viewfs://127.0.0.1:1/a").is_err());
    // hdfs:/// needs fs.defaultFS; s3:// is not ours.
    let e = HdfsStorage::builder("hdfs:///a")
        .with_config_dir("/nonexistent")
        .with_config("fs.defaultFS", "file:///")
        .build()
        .unwrap_err();
    assert!(
        matches!(&e, Error::InvalidArgument(m) if m.contains("fs.defaultFS")),
        "{e}"
    );
    let s2 = HdfsStorage::builder("hdfs:///a")
        .with_config_dir("/nonexistent")
        .with_config("fs.defaultFS", "hdfs://nn.example:8020")
        .build()
        .unwrap();
    assert_eq!(s2.base(), "hdfs://nn.example:8020");
    assert!(HdfsStorage::builder("s3://b/a").build().is_err());
    // Nothing listens on port 1 (hdfs-native keeps retrying the connection): a retryable
    // error naming the path, within the deadline.
    let s = HdfsStorage::builder("hdfs://127.0.0.1:1/")
        .with_config_dir("/nonexistent")
        .with_timeout(Duration::from_secs(2))
        .build()
        .unwrap();
    let e = s.stat("hdfs://127.0.0.1:1/a").unwrap_err();
    assert!(
        e.to_string().contains("hdfs://127.0.0.1:1/a") && e.is_retryable(),
        "{e}"
    );
}
