//! A real Hadoop MiniDFSCluster for integration tests (`tests/minidfs/`, Maven).
//!
//! Include with `#[path = "common/minidfs.rs"] mod minidfs;` and call [`MiniDfs::shared`]:
//! the first call builds the Maven project (offline first, then online), takes an exclusive
//! `flock` on `/tmp/hydrofeed-minidfs.lock` (the ports 9000/9870 are fixed, so clusters of
//! different test processes, Rust or Python, run one at a time) and starts the cluster; later
//! calls get the same one. The lock is held by `flock(1)` wrapping the JVM, so it is released
//! exactly when the JVM exits.
//!
//! Shutdown: the JVM stops when its stdin closes, which the kernel does when this process exits
//! (normally, on panic or on SIGKILL), so a shared cluster needs no destructor. A cluster from
//! [`MiniDfs::start`] stops on drop: one line on stdin, then SIGKILL to its process group after
//! 60 s. The JVM also halts itself after `HYDROFEED_MINIDFS_MAX_SECS` (default 3600).
//!
//! When Maven cannot reach its repository (the jars are not in `~/.m2` and the network is
//! off), [`MiniDfs::shared`] returns `None` after printing why, and tests skip; set
//! `HYDROFEED_REQUIRE_MINIDFS=1` (CI) to make that a failure.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

/// The lock every MiniDFS user (Rust or Python) holds while its cluster runs.
pub const LOCK: &str = "/tmp/hydrofeed-minidfs.lock";
/// NameNode URI.
pub const URL: &str = "hdfs://127.0.0.1:9000";
/// Java 17 closes the JDK internals Hadoop's HTTP server (WebHDFS: Jersey/JAXB) reflects on.
pub const JAVA_OPENS: &[&str] = &[
    "--add-opens=java.base/java.lang=ALL-UNNAMED",
    "--add-opens=java.base/java.lang.reflect=ALL-UNNAMED",
    "--add-opens=java.base/java.util=ALL-UNNAMED",
    "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
];
/// How long to wait for another process's cluster to end (the lock).
const LOCK_WAIT_SECS: u64 = 900;
/// How long the cluster may take to start once the lock is held.
const START_SECS: u64 = 180;

/// A running cluster.
pub struct MiniDfs {
    child: Child,
    /// Commands in, answers out ("ok ..." / "error ..."), one at a time.
    control: Mutex<(Option<ChildStdin>, Receiver<String>)>,
    /// `hdfs://127.0.0.1:9000`.
    pub url: String,
    /// Directory holding the client `core-site.xml` (use as `HADOOP_CONF_DIR`).
    pub conf_dir: PathBuf,
    classpath: String,
}

fn project_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/minidfs")
}

/// Builds the Maven project; `Err(Some(msg))` when Maven cannot reach its repository (skip),
/// panics on any other failure.
fn build() -> Result<String, String> {
    let dir = project_dir();
    let cp_file = dir.join("target/classpath.txt");
    let args = [
        "-B",
        "-q",
        "compile",
        "dependency:build-classpath",
        "-Dmdep.outputFile=target/classpath.txt",
    ];
    let run = |offline: bool| {
        let mut c = Command::new("mvn");
        if offline {
            c.arg("-o");
        }
        c.args(args).current_dir(&dir).output()
    };
    let out = match run(true) {
        Ok(o) if o.status.success() => o,
        Ok(_) => match run(false) {
            Ok(o) => o,
            Err(e) => return Err(format!("cannot run mvn: {e}")),
        },
        Err(e) => return Err(format!("cannot run mvn (is Maven installed?): {e}")),
    };
    if !out.status.success() {
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let unreachable = [
            "Could not transfer",
            "Could not resolve",
            "UnknownHost",
            "Connection refused",
            "Network is unreachable",
            "offline mode",
        ]
        .iter()
        .any(|m| text.contains(m));
        if unreachable {
            return Err(format!(
                "Maven cannot reach its repository to fetch hadoop-minicluster:\n{}",
                tail(&text, 2000)
            ));
        }
        panic!("building {} failed:\n{}", dir.display(), tail(&text, 4000));
    }
    let cp =
        std::fs::read_to_string(&cp_file).unwrap_or_else(|e| panic!("{}: {e}", cp_file.display()));
    Ok(format!(
        "{}:{}",
        dir.join("target/classes").display(),
        cp.trim()
    ))
}

fn tail(s: &str, n: usize) -> &str {
    let mut i = s.len().saturating_sub(n);
    while !s.is_char_boundary(i) {
        i += 1;
    }
    &s[i..]
}

impl MiniDfs {
    /// The cluster shared by every test of this process, started on first use; `None` (after
    /// printing why) when Maven cannot fetch Hadoop.
    pub fn shared() -> Option<&'static MiniDfs> {
        static SHARED: OnceLock<Result<MiniDfs, String>> = OnceLock::new();
        match SHARED.get_or_init(MiniDfs::start) {
            Ok(m) => Some(m),
            Err(why) => {
                if std::env::var_os("HYDROFEED_REQUIRE_MINIDFS").is_some() {
                    panic!("MiniDFS required but unavailable: {why}");
                }
                eprintln!("SKIPPED: no MiniDFS cluster: {why}");
                None
            }
        }
    }

    /// Builds and starts a new cluster (waits for the lock); `Err` only when Maven cannot
    /// reach its repository. Panics if the cluster does not come up.
    pub fn start() -> Result<MiniDfs, String> {
        let classpath = build()?;
        let work =
            Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("minidfs-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&work);
        std::fs::create_dir_all(&work).unwrap();
        let stderr_path = work.join("stderr.log");
        let stderr = std::fs::File::create(&stderr_path).unwrap();
        let mut child = {
            use std::os::unix::process::CommandExt;
            let mut c = Command::new("flock");
            c.args([
                "-x",
                "-w",
                &LOCK_WAIT_SECS.to_string(),
                LOCK,
                "java",
                "-Xmx1g",
            ])
            .args(JAVA_OPENS)
            .arg("-cp")
            .arg(&classpath)
            .arg("hydrofeed.MiniDfs")
            .arg(&work)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
            // Own process group: drop kills flock and the JVM together, nothing else.
            .process_group(0);
            c.spawn()
                .map_err(|e| format!("cannot start flock/java: {e}"))?
        };
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line.trim().to_string()).is_err() {
                    break;
                }
            }
        });
        let deadline = std::time::Instant::now() + Duration::from_secs(LOCK_WAIT_SECS + START_SECS);
        let ready = loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match rx.recv_timeout(left) {
                Ok(l) if l == "Ready!" => break Ok(()),
                Ok(_) => continue,
                Err(e) => break Err(e),
            }
        };
        let stdin = child.stdin.take();
        let mut dfs = MiniDfs {
            child,
            control: Mutex::new((stdin, rx)),
            url: URL.to_string(),
            conf_dir: work.clone(),
            classpath,
        };
        match ready {
            Ok(()) => Ok(dfs),
            Err(e) => {
                let status = dfs.child.try_wait().ok().flatten();
                dfs.kill();
                let log = std::fs::read_to_string(&stderr_path).unwrap_or_default();
                panic!(
                    "MiniDFS did not print Ready! ({e:?}, exit status {status:?}); stderr:\n{}",
                    tail(&log, 6000)
                );
            }
        }
    }

    fn kill(&mut self) {
        // kill(1) on the process group (its id is the child's pid: process_group(0) above).
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.child.id())])
            .status();
        let _ = self.child.wait();
    }

    /// Sends a control command to the cluster ("stop-datanode", "restart-datanodes") and waits
    /// (at most 180 s) for its answer.
    pub fn control(&self, cmd: &str) {
        let mut c = self.control.lock().unwrap_or_else(|p| p.into_inner());
        let stdin = c.0.as_mut().expect("cluster stdin");
        writeln!(stdin, "{cmd}")
            .and_then(|_| stdin.flush())
            .expect("write to MiniDfs");
        let answer =
            c.1.recv_timeout(Duration::from_secs(180))
                .unwrap_or_else(|e| panic!("no answer from MiniDfs to {cmd:?}: {e:?}"));
        assert_eq!(answer, format!("ok {cmd}"), "MiniDfs {cmd:?}");
    }

    /// Runs a MiniDfs client command (`put`, `ls`, `chmod`) with Hadoop's own client.
    fn java(&self, args: &[&str]) -> String {
        let out = Command::new("timeout")
            .args(["120", "java", "-cp", &self.classpath, "hydrofeed.MiniDfs"])
            .args(args)
            .env("HYDROFEED_HDFS_URL", &self.url)
            .output()
            .expect("java");
        assert!(
            out.status.success(),
            "MiniDfs {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    /// Copies a local file to `path` (an absolute HDFS path) with Hadoop's client; `perm` is
    /// octal, e.g. "600".
    pub fn put(&self, local: &Path, path: &str, perm: Option<&str>) {
        let local = local.to_str().unwrap();
        match perm {
            Some(p) => self.java(&["put", local, path, p]),
            None => self.java(&["put", local, path]),
        };
    }

    /// `(len, is_dir, uri)` of the children of `path`, listed by Hadoop's client.
    pub fn ls(&self, path: &str) -> Vec<(u64, bool, String)> {
        self.java(&["ls", path])
            .lines()
            .map(|l| {
                let f: Vec<&str> = l.split('\t').collect();
                (f[0].parse().unwrap(), f[1] == "true", f[2].to_string())
            })
            .collect()
    }

    /// `hdfs://127.0.0.1:9000` + `path`.
    pub fn uri(&self, path: &str) -> String {
        format!("{}{path}", self.url)
    }
}

impl Drop for MiniDfs {
    fn drop(&mut self) {
        let stdin = self.control.get_mut().map(|c| c.0.take()).unwrap_or(None);
        if let Some(mut stdin) = stdin {
            let _ = stdin.write_all(b"stop\n");
        }
        for _ in 0..600 {
            if let Ok(Some(_)) = self.child.try_wait() {
                let _ = std::fs::remove_dir_all(&self.conf_dir);
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        self.kill();
        let _ = std::fs::remove_dir_all(&self.conf_dir);
    }
}
