//! HDFS storage against a real Hadoop MiniDFSCluster (tests/minidfs, started once per test
//! binary): files are copied in with Hadoop's own client, then read back through
//! `HdfsStorage` (hdfs-native) and compared byte for byte with the local copy; block
//! locations, errors (not found, permission denied), viewfs, and the TFRecord reader over
//! hdfs:// against the same files read locally.

#[path = "common/minidfs.rs"]
mod minidfs;

use std::path::Path;
use std::sync::Arc;

use hydrofeed_format::gen::{self, GenOptions};
use hydrofeed_format::split::{Format, SplitUnit};
use hydrofeed_format::tfrecord::{self, read_file, Compression};
use hydrofeed_format::Error;
use hydrofeed_format::ReadOptions;
use hydrofeed_storage::hdfs::HdfsStorage;
use hydrofeed_storage::{local::LocalStorage, open_storage, Storage};
use minidfs::MiniDfs;

const MIB: usize = 1 << 20;

/// Tests share one cluster (read); the fault test stops DataNodes and so runs alone (write).
static FAULTS: std::sync::RwLock<()> = std::sync::RwLock::new(());

fn storage(dfs: &MiniDfs) -> HdfsStorage {
    HdfsStorage::builder(dfs.uri("/"))
        .with_config_dir(dfs.conf_dir.to_str().unwrap())
        .build()
        .unwrap()
}

/// Seeded bytes that differ at every offset (a misplaced range shows).
fn pattern(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed;
    (0..len)
        .map(|_| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (x >> 33) as u8
        })
        .collect()
}

/// Puts `data` at `path` with Hadoop's client, once per test binary per path.
fn put_bytes(dfs: &MiniDfs, dir: &Path, path: &str, data: &[u8], perm: Option<&str>) {
    let local = dir.join(path.trim_start_matches('/').replace('/', "_"));
    std::fs::write(&local, data).unwrap();
    dfs.put(&local, path, perm);
}

#[test]
fn stat_list_and_every_byte_of_a_multi_block_file() {
    let Some(dfs) = MiniDfs::shared() else { return };
    let _shared = FAULTS.read().unwrap_or_else(|p| p.into_inner());
    let tmp = tempfile::tempdir().unwrap();
    let big = pattern(5 * MIB / 2 + 123, 1);
    let small = pattern(1000, 2);
    put_bytes(dfs, tmp.path(), "/raw/big.bin", &big, None);
    put_bytes(dfs, tmp.path(), "/raw/small.bin", &small, None);
    put_bytes(dfs, tmp.path(), "/raw/empty.bin", &[], None);
    let fs = storage(dfs);

    let st = fs.stat(&dfs.uri("/raw/big.bin")).unwrap();
    assert_eq!(
        (st.path.as_str(), st.len, st.is_dir),
        (dfs.uri("/raw/big.bin").as_str(), big.len() as u64, false)
    );
    assert!(fs.stat(&dfs.uri("/raw")).unwrap().is_dir);
    // A bare path and hdfs:/// (fs.defaultFS from conf_dir) name the same file.
    assert_eq!(fs.stat("/raw/small.bin").unwrap().len, 1000);
    assert_eq!(fs.stat("hdfs:///raw/small.bin").unwrap().len, 1000);

    let listed = fs.list(&dfs.uri("/raw")).unwrap();
    let mut hadoop = dfs.ls("/raw");
    hadoop.sort_by(|a, b| a.2.cmp(&b.2));
    assert_eq!(
        listed
            .iter()
            .map(|s| (s.len, s.is_dir, s.path.clone()))
            .collect::<Vec<_>>(),
        hadoop,
        "our listing differs from Hadoop's"
    );
    assert_eq!(listed.len(), 3);

    for read_ahead in [0, 64 << 10, MIB + 3, 4 * MIB] {
        let fs = HdfsStorage::builder(dfs.uri("/"))
            .with_config_dir(dfs.conf_dir.to_str().unwrap())
            .with_read_ahead(read_ahead)
            .build()
            .unwrap();
        let f = fs.open(&dfs.uri("/raw/big.bin")).unwrap();
        assert_eq!(f.len(), big.len() as u64);
        assert_eq!(f.path(), dfs.uri("/raw/big.bin"));
        // Every byte, in odd-sized chunks that straddle the 1 MiB block boundaries, as exact
        // ranges (`read_at`) and as a sequential walk (`read_seq`: the background-window path).
        for (chunk, seq) in [
            (5_001, false),
            (77_777, false),
            (5_001, true),
            (77_777, true),
        ] {
            let mut got = Vec::with_capacity(big.len());
            let mut off = 0u64;
            while off < f.len() {
                let b = if seq {
                    f.read_seq(off, chunk).unwrap()
                } else {
                    f.read_at(off, chunk).unwrap()
                };
                assert!(!b.is_empty());
                off += b.len() as u64;
                got.extend_from_slice(&b);
            }
            assert!(
                got == big,
                "read_ahead {read_ahead}, chunk {chunk}, sequential {seq}: bytes differ from the \
                 local copy"
            );
        }
        // Sequential with jumps back and forth (a reader that rereads headers).
        let mut off = 0usize;
        while off + 9000 < big.len() {
            assert_eq!(
                &f.read_at(off as u64, 9000).unwrap()[..],
                &big[off..off + 9000]
            );
            let back = off / 2;
            assert_eq!(
                &f.read_at(back as u64, 100).unwrap()[..],
                &big[back..back + 100]
            );
            off += 8_999 * 37;
        }
        // Ranged reads across a block boundary, backwards, and one large read of everything.
        for &(o, n) in &[
            (MIB - 5, 10),
            (2 * MIB - 1, 2),
            (10, 5),
            (0, big.len()),
            (MIB, MIB),
        ] {
            assert_eq!(
                &f.read_at(o as u64, n).unwrap()[..],
                &big[o..o + n],
                "range {o}+{n}"
            );
        }
        // Past the end: clipped, then empty.
        assert_eq!(f.read_at(big.len() as u64 - 3, 100).unwrap().len(), 3);
        assert!(f.read_at(big.len() as u64 + 10, 100).unwrap().is_empty());
    }
    let e = fs.open(&dfs.uri("/raw/empty.bin")).unwrap();
    assert!(e.is_empty() && e.read_at(0, 10).unwrap().is_empty());
    // Shared between threads: concurrent readers of one file see their own ranges.
    let f = fs.open(&dfs.uri("/raw/big.bin")).unwrap();
    std::thread::scope(|s| {
        for t in 0..4usize {
            let (f, big) = (Arc::clone(&f), &big);
            s.spawn(move || {
                for i in 0..20usize {
                    let o = (t * 600_007 + i * 31_337) % (big.len() - 5000);
                    assert_eq!(&f.read_at(o as u64, 5000).unwrap()[..], &big[o..o + 5000]);
                }
            });
        }
    });
}

#[test]
fn block_locations_name_the_datanodes() {
    let Some(dfs) = MiniDfs::shared() else { return };
    let _shared = FAULTS.read().unwrap_or_else(|p| p.into_inner());
    let tmp = tempfile::tempdir().unwrap();
    let data = pattern(5 * MIB / 2, 3);
    put_bytes(dfs, tmp.path(), "/blocks/three.bin", &data, None);
    let fs = storage(dfs);
    let blocks = fs.block_locations(&dfs.uri("/blocks/three.bin")).unwrap();
    let spans: Vec<(u64, u64)> = blocks.iter().map(|b| (b.offset, b.len)).collect();
    let m = MIB as u64;
    assert_eq!(
        spans,
        vec![(0, m), (m, m), (2 * m, m / 2)],
        "1 MiB blocks expected"
    );
    for b in &blocks {
        // dfs.replication defaults to 3 and the cluster has 3 DataNodes.
        assert_eq!(b.hosts.len(), 3, "{b:?}");
        assert!(
            b.hosts.iter().all(|h| h == "127.0.0.1" || h == "localhost"),
            "{b:?}"
        );
    }
    let e = fs.block_locations(&dfs.uri("/blocks")).unwrap_err();
    assert!(e.to_string().contains("is a directory"), "{e}");
}

#[test]
fn missing_files_and_refused_access_are_typed_errors_naming_the_path() {
    let Some(dfs) = MiniDfs::shared() else { return };
    let _shared = FAULTS.read().unwrap_or_else(|p| p.into_inner());
    let tmp = tempfile::tempdir().unwrap();
    let fs = storage(dfs);
    let missing = dfs.uri("/nope/missing.bin");
    for e in [
        fs.stat(&missing).unwrap_err(),
        fs.open(&missing).map(|_| ()).unwrap_err(),
        fs.list(&missing).unwrap_err(),
        fs.block_locations(&missing).unwrap_err(),
    ] {
        assert!(
            matches!(&e, Error::NotFound { path } if *path == missing),
            "{e:?}"
        );
        assert!(!e.is_retryable());
    }

    // The cluster's superuser (whoever runs the JVM) owns these; "alice" may not read them.
    put_bytes(
        dfs,
        tmp.path(),
        "/private/secret.bin",
        b"secret",
        Some("600"),
    );
    let fs = storage(dfs);
    fs.set_permission(&dfs.uri("/private"), 0o700).unwrap();
    let alice = HdfsStorage::builder(dfs.uri("/"))
        .with_config_dir(dfs.conf_dir.to_str().unwrap())
        .with_user("alice")
        .build()
        .unwrap();
    let secret = dfs.uri("/private/secret.bin");
    let e = alice.open(&secret).map(|_| ()).unwrap_err();
    assert!(
        matches!(&e, Error::PermissionDenied { path } if *path == secret),
        "{e:?}"
    );
    let e = alice.list(&dfs.uri("/private")).unwrap_err();
    assert!(matches!(&e, Error::PermissionDenied { .. }), "{e:?}");
    assert_eq!(
        fs.open(&secret).unwrap().read_at(0, 100).unwrap(),
        &b"secret"[..]
    );

    // A URI of another file system is refused, not silently read from this one.
    let e = fs.stat("hdfs://otherhost:9000/raw").unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e:?}");
    let e = fs.open(&dfs.uri("/private")).map(|_| ()).unwrap_err();
    assert!(e.to_string().contains("is a directory"), "{e}");
}

#[test]
fn our_writer_and_hadoop_agree() {
    let Some(dfs) = MiniDfs::shared() else { return };
    let _shared = FAULTS.read().unwrap_or_else(|p| p.into_inner());
    let fs = storage(dfs);
    let data = pattern(3 * MIB / 2, 4);
    fs.write_file(&dfs.uri("/written/ours.bin"), data.clone().into())
        .unwrap();
    assert_eq!(
        dfs.ls("/written"),
        vec![(data.len() as u64, false, dfs.uri("/written/ours.bin"))]
    );
    assert_eq!(
        &fs.open(&dfs.uri("/written/ours.bin"))
            .unwrap()
            .read_at(0, data.len())
            .unwrap()[..],
        &data[..]
    );
    assert!(fs.delete(&dfs.uri("/written"), true).unwrap());
    assert!(matches!(
        fs.stat(&dfs.uri("/written")),
        Err(Error::NotFound { .. })
    ));
}

#[test]
fn open_storage_dispatches_hdfs_and_viewfs() {
    let Some(dfs) = MiniDfs::shared() else { return };
    let _shared = FAULTS.read().unwrap_or_else(|p| p.into_inner());
    let tmp = tempfile::tempdir().unwrap();
    let data = pattern(MIB + 17, 5);
    put_bytes(dfs, tmp.path(), "/mounted/data/a.bin", &data, None);

    let s = open_storage(&dfs.uri("/mounted")).unwrap();
    assert_eq!(s.scheme(), "hdfs");
    assert_eq!(
        s.stat(&dfs.uri("/mounted/data/a.bin")).unwrap().len,
        data.len() as u64
    );

    // viewfs: /data of viewfs://cluster is /mounted/data on the MiniDFS NameNode.
    let v = HdfsStorage::builder("viewfs://cluster/")
        .with_config_dir(dfs.conf_dir.to_str().unwrap())
        .with_config(
            "fs.viewfs.mounttable.cluster.link./data",
            dfs.uri("/mounted/data"),
        )
        .with_config("fs.viewfs.mounttable.cluster.linkFallback", dfs.uri("/"))
        .build()
        .unwrap();
    assert_eq!(v.scheme(), "viewfs");
    let listed = v.list("viewfs://cluster/data").unwrap();
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0].path, "viewfs://cluster/data/a.bin");
    let f = v.open("viewfs://cluster/data/a.bin").unwrap();
    assert!(f.read_at(0, data.len()).unwrap() == data);
    // No WebHDFS for viewfs: blocks from the block size, hosts unknown.
    let blocks = v.block_locations("viewfs://cluster/data/a.bin").unwrap();
    assert_eq!(blocks.iter().map(|b| b.len).sum::<u64>(), data.len() as u64);
    assert_eq!(blocks.len(), 2);
}

#[test]
fn tfrecord_over_hdfs_matches_local() {
    let Some(dfs) = MiniDfs::shared() else { return };
    let _shared = FAULTS.read().unwrap_or_else(|p| p.into_inner());
    let tmp = tempfile::tempdir().unwrap();
    for compression in [Compression::None, Compression::Gzip] {
        let opts = GenOptions {
            format: Format::Tfrecord,
            rows: 1200, // ~3.8 MB of 784-float images: several HDFS blocks
            files: 2,
            seed: 11,
            compression,
        };
        let dir = tmp.path().join(format!("{compression:?}"));
        let files = gen::write_dataset(&dir, &opts).unwrap();
        let hdfs: Arc<dyn Storage> = Arc::new(storage(dfs));
        let local: Arc<dyn Storage> = Arc::new(LocalStorage);
        let mut ids = Vec::new();
        for f in &files {
            let name = f.file_name().unwrap().to_str().unwrap();
            let remote = format!("/tfrecord/{compression:?}/{name}");
            dfs.put(f, &remote, None);
            let uri = dfs.uri(&remote);
            let ropts = ReadOptions {
                batch_rows: 100,
                ..Default::default()
            };
            let (ls, lb, lskip) = read_file(&local, f.to_str().unwrap(), &ropts).unwrap();
            let (hs, hb, hskip) = read_file(&hdfs, &uri, &ropts).unwrap();
            assert_eq!(ls, hs);
            assert_eq!(lb, hb, "{uri}: batches differ from the local read");
            assert_eq!(format!("{lskip:?}"), format!("{hskip:?}"));
            for b in &hb {
                ids.extend(gen::verify_batch(b, opts.seed).unwrap());
            }

            // Byte-range splits (plain files only) read from HDFS cover every row once.
            let st = hdfs.stat(&uri).unwrap();
            let sopts = ReadOptions {
                batch_rows: 64,
                split_bytes: 700_000,
                ..Default::default()
            };
            let (schema, splits) = tfrecord::plan_file(&hdfs, &st, &sopts, 0).unwrap();
            if compression == Compression::None {
                assert!(splits.len() > 1, "{uri}: {} splits", splits.len());
                assert!(splits
                    .iter()
                    .all(|s| matches!(s.unit, SplitUnit::Bytes { .. })));
            }
            let mut rows = 0;
            for s in &splits {
                for b in tfrecord::open(&hdfs, s, &schema, &sopts).unwrap() {
                    let b = b.unwrap();
                    gen::verify_batch(&b, opts.seed).unwrap();
                    rows += b.num_rows();
                }
            }
            assert_eq!(
                rows,
                hb.iter().map(|b| b.num_rows()).sum::<usize>(),
                "{uri}"
            );
        }
        ids.sort_unstable();
        assert_eq!(ids, (0..opts.rows as i64).collect::<Vec<_>>());
    }
}

/// Read throughput of one file from MiniDFS vs the same file on local disk, in the same run
/// (ratios, not absolute speeds, are the result: these machines are shared and noisy).
/// `cargo test -p hydrofeed-format --release --test hdfs -- --ignored --nocapture bench`
#[test]
#[ignore = "benchmark: run explicitly with --ignored --nocapture"]
fn bench_hdfs_read_vs_local() {
    let Some(dfs) = MiniDfs::shared() else { return };
    let _shared = FAULTS.read().unwrap_or_else(|p| p.into_inner());
    let tmp = tempfile::tempdir().unwrap();
    let size = 64 * MIB;
    let data = pattern(size, 9);
    let local_path = tmp.path().join("bench.bin");
    std::fs::write(&local_path, &data).unwrap();
    dfs.put(&local_path, "/bench/bench.bin", None);
    let uri = dfs.uri("/bench/bench.bin");

    let measure = |name: &str, f: &Arc<dyn hydrofeed_storage::RandomAccess>, chunk: usize| {
        let mut best = f64::MAX;
        for _ in 0..3 {
            let t = std::time::Instant::now();
            let mut off = 0u64;
            let mut sum = 0u64;
            while off < f.len() {
                let b = f.read_at(off, chunk).unwrap();
                sum = sum.wrapping_add(b[b.len() - 1] as u64);
                off += b.len() as u64;
            }
            assert_eq!(off, size as u64);
            std::hint::black_box(sum);
            best = best.min(t.elapsed().as_secs_f64());
        }
        let mbs = size as f64 / best / 1e6;
        println!("{name:<44} {chunk:>8} B reads: {mbs:>8.1} MB/s");
        mbs
    };
    let local = LocalStorage.open(local_path.to_str().unwrap()).unwrap();
    let base = measure("local disk (page cache)", &local, 64 << 10);
    let mk = |ra: usize| {
        HdfsStorage::builder(dfs.uri("/"))
            .with_config_dir(dfs.conf_dir.to_str().unwrap())
            .with_read_ahead(ra)
            .build()
            .unwrap()
            .open(&uri)
            .unwrap()
    };
    for (name, ra, chunk) in [
        ("hdfs, 4 MiB read-ahead", 4 * MIB, 64 << 10),
        ("hdfs, no read-ahead", 0, 64 << 10),
        ("hdfs, no read-ahead", 0, 4 * MIB),
        ("hdfs, 16 MiB reads", 4 * MIB, 16 * MIB),
    ] {
        let v = measure(name, &mk(ra), chunk);
        println!("{:<44} ratio to local: {:.3}", "", v / base);
    }
}

/// Configuration discovery as Hadoop users expect it, checked in a child process (environment
/// variables are process-wide): `HADOOP_CONF_DIR` supplies `fs.defaultFS` for `hdfs:///p`, and
/// `HADOOP_USER_NAME` picks the user.
#[test]
fn hadoop_conf_dir_and_user_from_the_environment() {
    let Some(dfs) = MiniDfs::shared() else { return };
    let _shared = FAULTS.read().unwrap_or_else(|p| p.into_inner());
    let tmp = tempfile::tempdir().unwrap();
    put_bytes(dfs, tmp.path(), "/envconf/open.bin", b"0123456789", None);
    put_bytes(dfs, tmp.path(), "/envconf/closed.bin", b"x", Some("600"));
    for (user, expect) in [("", "ok"), ("alice", "denied")] {
        let mut cmd = std::process::Command::new(std::env::current_exe().unwrap());
        cmd.args([
            "--exact",
            "env_child",
            "--include-ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("HADOOP_CONF_DIR", &dfs.conf_dir)
        .env("HF_ENV_CHILD", expect);
        if user.is_empty() {
            cmd.env_remove("HADOOP_USER_NAME");
        } else {
            cmd.env("HADOOP_USER_NAME", user);
        }
        let out = cmd.output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout).to_string()
            + &String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "child as {user:?} failed:\n{text}");
        assert!(text.contains("1 passed"), "{text}");
    }
}

/// The child of `hadoop_conf_dir_and_user_from_the_environment` (does nothing on its own).
#[test]
#[ignore = "run by hadoop_conf_dir_and_user_from_the_environment"]
fn env_child() {
    let Ok(expect) = std::env::var("HF_ENV_CHILD") else {
        return;
    };
    let s = open_storage("hdfs:///envconf").unwrap();
    let listed = s.list("hdfs:///envconf").unwrap();
    assert_eq!(
        listed.iter().map(|f| f.path.as_str()).collect::<Vec<_>>(),
        [
            "hdfs://127.0.0.1:9000/envconf/closed.bin",
            "hdfs://127.0.0.1:9000/envconf/open.bin"
        ]
    );
    let f = s.open("hdfs:///envconf/open.bin").unwrap();
    assert_eq!(&f.read_at(2, 3).unwrap()[..], b"234");
    let closed = s.open("hdfs:///envconf/closed.bin").map(|_| ());
    match expect.as_str() {
        "ok" => closed.unwrap(),
        _ => assert!(
            matches!(&closed, Err(Error::PermissionDenied { path }) if path == "hdfs://127.0.0.1:9000/envconf/closed.bin"),
            "{closed:?}"
        ),
    }
}

#[test]
fn reads_survive_a_dead_datanode_and_fail_cleanly_with_none_left() {
    let Some(dfs) = MiniDfs::shared() else { return };
    let _alone = FAULTS.write().unwrap_or_else(|p| p.into_inner());
    let tmp = tempfile::tempdir().unwrap();
    let data = pattern(3 * MIB + 99, 6);
    put_bytes(dfs, tmp.path(), "/faults/a.bin", &data, None);
    let uri = dfs.uri("/faults/a.bin");
    let fs = HdfsStorage::builder(dfs.uri("/"))
        .with_config_dir(dfs.conf_dir.to_str().unwrap())
        .with_read_ahead(0)
        .with_timeout(std::time::Duration::from_secs(30))
        .build()
        .unwrap();
    // Opened while all three replicas are up: the block list names a DataNode that then dies.
    let f = fs.open(&uri).unwrap();
    dfs.control("stop-datanode");
    let mut got = Vec::new();
    while (got.len() as u64) < f.len() {
        got.extend_from_slice(&f.read_at(got.len() as u64, 256 << 10).unwrap());
    }
    assert!(got == data, "bytes differ after a DataNode died");

    dfs.control("stop-datanode");
    dfs.control("stop-datanode");
    let e = f.read_at(MIB as u64 + 5, 1000).unwrap_err();
    let text = e.to_string();
    assert!(e.is_retryable(), "{e:?}");
    assert!(text.contains(&uri), "{text}");
    assert!(text.contains("byte offset 1048581"), "{text}");

    dfs.control("restart-datanodes");
    let f = fs.open(&uri).unwrap();
    assert!(f.read_at(0, data.len()).unwrap() == data);
}

/// `RandomAccess` as a parquet `ChunkReader`: footer and column-chunk reads are random access,
/// the opposite of TFRecord's sequential pattern.
struct Chunks(Arc<dyn hydrofeed_storage::RandomAccess>);

impl parquet::file::reader::Length for Chunks {
    fn len(&self) -> u64 {
        self.0.len()
    }
}

impl parquet::file::reader::ChunkReader for Chunks {
    type T = tfrecord::framing::RangeReader;
    fn get_read(&self, start: u64) -> parquet::errors::Result<Self::T> {
        Ok(tfrecord::framing::RangeReader::new(self.0.clone(), start))
    }
    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<bytes::Bytes> {
        self.0
            .read_at(start, length)
            .map_err(|e| parquet::errors::ParquetError::External(Box::new(e)))
    }
}

fn read_parquet(f: Arc<dyn hydrofeed_storage::RandomAccess>) -> Vec<arrow_array::RecordBatch> {
    parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(Chunks(f))
        .unwrap()
        .with_batch_size(1000)
        .build()
        .unwrap()
        .map(|b| b.unwrap())
        .collect()
}

/// A Parquet file written by pyarrow (an independent writer), several row groups spanning
/// several HDFS blocks, read with arrow-rs through `HdfsStorage` and through local disk.
#[test]
fn pyarrow_parquet_over_hdfs_matches_local() {
    let Some(dfs) = MiniDfs::shared() else { return };
    let _shared = FAULTS.read().unwrap_or_else(|p| p.into_inner());
    let tmp = tempfile::tempdir().unwrap();
    let local = tmp.path().join("pyarrow.parquet");
    let python = std::env::var("HYDROFEED_PYTHON").unwrap_or_else(|_| {
        concat!(env!("CARGO_MANIFEST_DIR"), "/../../.venv/bin/python").to_string()
    });
    let script = r#"
import sys, numpy as np, pyarrow as pa, pyarrow.parquet as pq
rng = np.random.default_rng(5)
n = 60_000
t = pa.table({
    "id": np.arange(n, dtype=np.int64),
    "x": rng.standard_normal(n).astype(np.float32),
    "blob": [rng.bytes(int(k)) for k in rng.integers(0, 80, n)],
    "tag": [("t%d" % (i % 97)) if i % 11 else None for i in range(n)],
})
pq.write_table(t, sys.argv[1], row_group_size=7_000, compression="snappy")
"#;
    let out = std::process::Command::new(&python)
        .args(["-c", script, local.to_str().unwrap()])
        .output()
        .unwrap_or_else(|e| panic!("{python}: {e}"));
    assert!(
        out.status.success(),
        "pyarrow: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let size = std::fs::metadata(&local).unwrap().len();
    assert!(
        size > 2 * MIB as u64,
        "{size} bytes: want several HDFS blocks"
    );
    dfs.put(&local, "/parquet/pyarrow.parquet", None);

    let expected = read_parquet(LocalStorage.open(local.to_str().unwrap()).unwrap());
    for read_ahead in [0, 256 << 10, 4 * MIB] {
        let fs = HdfsStorage::builder(dfs.uri("/"))
            .with_config_dir(dfs.conf_dir.to_str().unwrap())
            .with_read_ahead(read_ahead)
            .build()
            .unwrap();
        let got = read_parquet(fs.open(&dfs.uri("/parquet/pyarrow.parquet")).unwrap());
        assert_eq!(got, expected, "read_ahead {read_ahead}");
    }
    assert_eq!(expected.iter().map(|b| b.num_rows()).sum::<usize>(), 60_000);
}

/// Reads every split of `input`'s plan, in plan order.
fn read_plan(
    storage: &Arc<dyn Storage>,
    input: &str,
    opts: &ReadOptions,
) -> (hydrofeed_format::Plan, Vec<arrow_array::RecordBatch>) {
    let plan = hydrofeed_format::plan(storage, input, opts)
        .unwrap_or_else(|e| panic!("plan {input}: {e}"));
    let mut batches = Vec::new();
    for split in &plan.splits {
        for b in hydrofeed_format::open_split(storage, &plan, split, opts).unwrap() {
            batches.push(b.unwrap_or_else(|e| panic!("{input}: {e}")));
        }
    }
    (plan, batches)
}

/// All four formats, through the same `format::plan` / `open_split` a feeder uses, from a
/// directory on MiniDFS and from the same directory on local disk: the same splits and the
/// same batches. Files by our writer (`gen`, several HDFS blocks each) and by independent
/// writers (pyarrow Parquet and ORC, fastavro Avro).
#[test]
fn every_format_over_hdfs_matches_local() {
    let Some(dfs) = MiniDfs::shared() else { return };
    let _shared = FAULTS.read().unwrap_or_else(|p| p.into_inner());
    let tmp = tempfile::tempdir().unwrap();
    let hdfs: Arc<dyn Storage> = Arc::new(storage(dfs));
    let local: Arc<dyn Storage> = Arc::new(LocalStorage);

    let python = std::env::var("HYDROFEED_PYTHON").unwrap_or_else(|_| {
        concat!(env!("CARGO_MANIFEST_DIR"), "/../../.venv/bin/python").to_string()
    });
    let indep = tmp.path().join("indep");
    let script = r#"
import sys, os, numpy as np, pyarrow as pa, pyarrow.parquet as pq, pyarrow.orc as po, fastavro
out = sys.argv[1]
rng = np.random.default_rng(9)
n = 20_000
ids = np.arange(n, dtype=np.int64)
xs = rng.standard_normal(n)
tags = [("t%d" % (i % 31)) if i % 7 else None for i in range(n)]
for fmt in ("parquet", "orc", "avro"):
    os.makedirs(os.path.join(out, fmt), exist_ok=True)
t = pa.table({"id": ids, "x": xs, "tag": tags})
for k in range(2):
    part = t.slice(k * n // 2, n // 2)
    pq.write_table(part, os.path.join(out, "parquet", "part-%d.parquet" % k), row_group_size=3000, compression="zstd")
    po.write_table(part, os.path.join(out, "orc", "part-%d.orc" % k), stripe_size=64 * 1024, compression="zlib")
    schema = {"type": "record", "name": "r", "fields": [
        {"name": "id", "type": "long"}, {"name": "x", "type": "double"},
        {"name": "tag", "type": ["null", "string"]}]}
    recs = ({"id": int(i), "x": float(x), "tag": g} for i, x, g in zip(ids[k*n//2:(k+1)*n//2], xs[k*n//2:(k+1)*n//2], tags[k*n//2:(k+1)*n//2]))
    with open(os.path.join(out, "avro", "part-%d.avro" % k), "wb") as f:
        fastavro.writer(f, schema, recs, codec="deflate", sync_interval=16 * 1024)
"#;
    let out = std::process::Command::new(&python)
        .args(["-c", script, indep.to_str().unwrap()])
        .output()
        .unwrap_or_else(|e| panic!("{python}: {e}"));
    assert!(
        out.status.success(),
        "writers: {}",
        String::from_utf8_lossy(&out.stderr)
    );

    let mut cases: Vec<(String, std::path::PathBuf, usize)> = Vec::new();
    for format in [Format::Parquet, Format::Orc, Format::Avro, Format::Tfrecord] {
        let dir = tmp.path().join(format!("gen-{format:?}"));
        let opts = GenOptions {
            format,
            rows: 1500, // ~4.7 MB of 784-float images over 2 files: several HDFS blocks
            files: 2,
            seed: 3,
            compression: Compression::None,
        };
        gen::write_dataset(&dir, &opts).unwrap();
        cases.push((format!("gen-{format:?}"), dir, 1500));
    }
    for fmt in ["parquet", "orc", "avro"] {
        cases.push((format!("indep-{fmt}"), indep.join(fmt), 20_000));
    }

    for (name, dir, rows) in cases {
        let mut entries: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        for f in &entries {
            let file = f.file_name().unwrap().to_str().unwrap();
            dfs.put(f, &format!("/formats/{name}/{file}"), None);
        }
        let opts = ReadOptions {
            batch_rows: 500,
            split_bytes: 1 << 20,
            ..Default::default()
        };
        let (lplan, lbatches) = read_plan(&local, dir.to_str().unwrap(), &opts);
        let (hplan, hbatches) = read_plan(&hdfs, &dfs.uri(&format!("/formats/{name}")), &opts);
        assert_eq!(lplan.schema, hplan.schema, "{name}: schema");
        assert_eq!(lplan.splits.len(), hplan.splits.len(), "{name}: splits");
        assert_eq!(
            lplan
                .splits
                .iter()
                .map(|s| (s.rows, s.unit))
                .collect::<Vec<_>>(),
            hplan
                .splits
                .iter()
                .map(|s| (s.rows, s.unit))
                .collect::<Vec<_>>(),
            "{name}: split units and rows"
        );
        assert_eq!(hplan.total_rows(), rows as u64, "{name}: planned rows");
        assert_eq!(
            hbatches.iter().map(|b| b.num_rows()).sum::<usize>(),
            rows,
            "{name}: rows read"
        );
        assert_eq!(
            lbatches, hbatches,
            "{name}: batches from HDFS differ from local"
        );
    }
}
