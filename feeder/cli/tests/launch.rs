//! `hydrofeed launch` with trainers written in Rust (no Python): this test binary re-runs
//! itself as the trainer (`trainer_child`, active only when `HF_TRAINER_OUT` is set), attaching
//! to `HYDROFEED_FEED_SOCKET`, acking every frame, and logging the ids it got per step.

mod common;

use std::path::Path;
use std::process::Command;

use hydrofeed_format::gen::{write_dataset, GenOptions};
use hydrofeed_format::split::Format;

const BATCH: usize = 50;

/// The trainer (a no-op when run as a normal test).
#[test]
fn trainer_child() {
    let Ok(out) = std::env::var("HF_TRAINER_OUT") else {
        return;
    };
    let rank: u32 = std::env::var("HYDROFEED_RANK").unwrap().parse().unwrap();
    let mut lines = String::new();
    common::read_feed(BATCH as u64, |got| match got {
        common::Got::Batch(epoch, ids) => {
            let ids: Vec<String> = ids.iter().map(|v| v.to_string()).collect();
            lines.push_str(&format!("{epoch} {}\n", ids.join(",")));
        }
        common::Got::End(rows) => lines.push_str(&format!("end {rows}\n")),
    });
    std::fs::write(Path::new(&out).join(format!("rank-{rank}.txt")), lines).unwrap();
}

#[test]
fn three_rust_trainers_equal_steps_exactly_once() {
    let d = tempfile::tempdir().unwrap();
    let data = d.path().join("data");
    let rows = 2345u64;
    write_dataset(
        &data,
        &GenOptions {
            format: Format::Tfrecord,
            rows,
            files: 5,
            ..Default::default()
        },
    )
    .unwrap();
    let out = d.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let me = std::env::current_exe().unwrap();
    let r = Command::new(env!("CARGO_BIN_EXE_hydrofeed"))
        .args(["launch", "--workers", "3", "--epochs", "2", "--batch-size"])
        .arg(BATCH.to_string())
        .arg("--input")
        .arg(&data)
        .arg("--")
        .arg(&me)
        .args([
            "--exact",
            "trainer_child",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env("HF_TRAINER_OUT", &out)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&r.stderr);
    assert!(r.status.success(), "{stderr}");
    let steps_per_epoch = rows as usize / (3 * BATCH);
    let mut epochs: [Vec<i64>; 2] = [Vec::new(), Vec::new()];
    for rank in 0..3 {
        let text = std::fs::read_to_string(out.join(format!("rank-{rank}.txt"))).unwrap();
        let mut per_epoch = [0usize; 2];
        let mut end = None;
        for line in text.lines() {
            if let Some(s) = line.strip_prefix("end ") {
                end = Some(s.parse::<usize>().unwrap());
                continue;
            }
            let (e, ids) = line.split_once(' ').unwrap();
            let e: usize = e.parse().unwrap();
            let ids: Vec<i64> = ids.split(',').map(|v| v.parse().unwrap()).collect();
            assert_eq!(ids.len(), BATCH);
            per_epoch[e] += 1;
            epochs[e].extend(ids);
        }
        assert_eq!(per_epoch, [steps_per_epoch; 2], "rank {rank}");
        // End-of-feed carries the step count, the same for every rank.
        assert_eq!(end, Some(2 * steps_per_epoch), "rank {rank}");
    }
    for ids in &mut epochs {
        let n = ids.len();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), n, "a row delivered twice in one epoch");
        assert_eq!(n, steps_per_epoch * 3 * BATCH);
        assert!(ids.iter().all(|&i| (0..rows as i64).contains(&i)));
    }
    assert!(stderr.contains("dropped"), "{stderr}");
}
