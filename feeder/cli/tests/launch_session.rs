//! The feeder speaks the coordinator's `Session` stream: under `hydrofeed launch` (two Rust
//! trainers, this test binary run again as each), the coordinator's count of the feeders'
//! steady-state traffic, logged when it stops, holds session messages and no unary work
//! request, ack or heartbeat; every row still goes out once per epoch.

mod common;

use std::path::Path;
use std::process::Command;

use hydrofeed_format::gen::{write_dataset, GenOptions};
use hydrofeed_format::split::Format;

const BATCH: u64 = 25;

/// The trainer (a no-op when run as a normal test): writes the ids it got, one per line.
#[test]
fn session_trainer_child() {
    let Ok(out) = std::env::var("HF_SESSION_OUT") else {
        return;
    };
    let rank = std::env::var("HYDROFEED_RANK").unwrap();
    let mut ids = String::new();
    common::read_feed(BATCH, |got| {
        if let common::Got::Batch(epoch, b) = got {
            for id in b {
                ids.push_str(&format!("{epoch} {id}\n"));
            }
        }
    });
    std::fs::write(Path::new(&out).join(format!("rank-{rank}.txt")), ids).unwrap();
}

/// `(session messages, unary calls)` from the coordinator's last log line about them.
fn traffic(stderr: &str) -> Option<(u64, u64)> {
    let line = stderr
        .lines()
        .rev()
        .find(|l| l.contains("the feeders' traffic: "))?;
    let rest = line.split("the feeders' traffic: ").nth(1)?;
    let mut n = rest
        .split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty())
        .map(|s| s.parse::<u64>().unwrap());
    Some((n.next()?, n.next()?))
}

#[test]
fn launch_feeds_over_sessions_not_unary_calls() {
    let d = tempfile::tempdir().unwrap();
    let data = d.path().join("data");
    let rows = 1000u64;
    let gen = GenOptions {
        format: Format::Tfrecord,
        rows,
        files: 4,
        ..Default::default()
    };
    write_dataset(&data, &gen).unwrap();
    let out = d.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let me = std::env::current_exe().unwrap();
    let r = Command::new(env!("CARGO_BIN_EXE_hydrofeed"))
        .args(["launch", "--workers", "2", "--epochs", "2", "--batch-size"])
        .arg(BATCH.to_string())
        .arg("--input")
        .arg(&data)
        .arg("--")
        .arg(&me)
        .args(["--exact", "session_trainer_child", "--nocapture"])
        .env("HF_SESSION_OUT", &out)
        .env("HYDROFEED_LOG", "warn,hydrofeed_coord=info")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&r.stderr);
    assert!(r.status.success(), "{stderr}");
    let (session, unary) = traffic(&stderr).unwrap_or_else(|| panic!("no traffic line: {stderr}"));
    assert!(session > 0, "no session message: {stderr}");
    assert_eq!(unary, 0, "the feeder made unary calls: {stderr}");
    let mut per_epoch = [Vec::new(), Vec::new()];
    for rank in 0..2 {
        let text = std::fs::read_to_string(out.join(format!("rank-{rank}.txt"))).unwrap();
        for line in text.lines() {
            let (e, id) = line.split_once(' ').unwrap();
            per_epoch[e.parse::<usize>().unwrap()].push(id.parse::<i64>().unwrap());
        }
    }
    for ids in &mut per_epoch {
        ids.sort_unstable();
        let n = ids.len();
        ids.dedup();
        assert_eq!(ids.len(), n, "a row delivered twice in one epoch");
        assert_eq!(
            n as u64, rows,
            "every row once per epoch (1000 = 2 x 25 x 20)"
        );
    }
}
