//! `hydrofeed bench coord`'s open-loop gRPC load at a small size: the report holds its fields,
//! and a rate the machine cannot meet fails loudly. Speed is measured by the benchmark, never
//! asserted here.

use std::process::Command;

fn bench(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_hydrofeed"))
        .args(["bench", "coord", "--no-in-process", "--json"])
        .args(args)
        .output()
        .expect("running hydrofeed bench coord")
}

#[test]
fn open_loop_report_has_its_fields() {
    let out = bench(&["--grpc-feeders", "200", "--grpc-secs", "3"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "bench failed: {err}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    let g = &v["grpc_open_loop"];
    let run = &g["run"];
    assert_eq!(run["feeders"], 200);
    assert_eq!(run["errors"], 0, "{run}");
    // 200 feeders, 3 calls a second each, from their phase (0 to 1 s) to 3 s.
    let intended = run["intended_calls"].as_u64().unwrap();
    assert!((1500..=1700).contains(&intended), "{run}");
    assert!(run["achieved_fraction"].as_f64().unwrap() >= 0.95, "{run}");
    assert!(run["leases"].as_u64().unwrap() > 0, "{run}");
    // Two leases per feeder an epoch: barriers are met within 3 s.
    assert!(run["waits"].as_u64().unwrap() > 0, "{run}");
    for k in ["lease_latency", "ack_latency", "heartbeat_latency"] {
        let l = &run[k];
        assert!(l["n"].as_u64().unwrap() > 0, "{k}: {l}");
        let (p50, p99, p999) = (
            l["p50_ms"].as_f64().unwrap(),
            l["p99_ms"].as_f64().unwrap(),
            l["p999_ms"].as_f64().unwrap(),
        );
        assert!(0.0 < p50 && p50 <= p99 && p99 <= p999, "{k}: {l}");
    }
    for k in ["coordinator_cores", "generator_cores", "calls_per_s"] {
        assert!(run[k].as_f64().unwrap() > 0.0, "{k}: {run}");
    }
    assert!(g["meets_target"].is_boolean());
    assert!(g["sweep"].as_array().unwrap().is_empty());
}

#[test]
fn an_impossible_rate_fails_loudly() {
    // 200 feeders at 2,000 periods a second: 1.2 M calls/s.
    let out = bench(&[
        "--grpc-feeders",
        "200",
        "--grpc-secs",
        "2",
        "--grpc-rate-hz",
        "2000",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "an impossible rate passed: {err}");
    assert!(err.contains("intended calls/s answered"), "{err}");
    assert!(err.contains("< 95%"), "{err}");
    assert!(out.stdout.is_empty());
}
