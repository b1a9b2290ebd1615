//! `hydrofeed bench coord`'s open-loop gRPC load at a small size, over unary calls and over
//! sessions in one command: the report holds its fields for both, and a rate the machine
//! cannot meet fails loudly. Speed is measured by the benchmark, never asserted here.

use std::process::Command;

fn bench(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_hydrofeed"))
        .args(["bench", "coord", "--no-in-process", "--json"])
        .args(args)
        .output()
        .expect("running hydrofeed bench coord")
}

/// The fields every run reports, with sane values.
fn check_run(run: &serde_json::Value, intended: std::ops::RangeInclusive<u64>) {
    assert_eq!(run["feeders"], 200, "{run}");
    assert_eq!(run["errors"], 0, "{run}");
    assert!(run["failure"].is_null(), "{run}");
    let n = run["intended_messages"].as_u64().unwrap();
    assert!(intended.contains(&n), "{run}");
    assert!(run["achieved_fraction"].as_f64().unwrap() >= 0.95, "{run}");
    assert!(run["leases"].as_u64().unwrap() > 0, "{run}");
    // One lease per feeder an epoch (the fixed order): an epoch closes every second, and a
    // feeder that asks for the next epoch's share before the slowest acked this one's gets it
    // at once (a rank goes one epoch ahead); only a feeder two epochs ahead waits (unary: told
    // to; a session's request: held until the epoch opens).
    let (waits, leases) = (
        run["waits"].as_u64().unwrap(),
        run["leases"].as_u64().unwrap(),
    );
    assert!(waits < leases / 4, "{run}");
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
    for k in [
        "coordinator_cores",
        "generator_cores",
        "messages_per_s",
        "coordinator_us_per_message",
        "coordinator_us_per_feeder_s",
    ] {
        assert!(run[k].as_f64().unwrap() > 0.0, "{k}: {run}");
    }
}

#[test]
fn both_protocols_report_their_fields() {
    let out = bench(&["--grpc-feeders", "200", "--grpc-secs", "3"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "bench failed: {err}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    let g = &v["grpc_open_loop"];
    assert_eq!(g["protocols"], serde_json::json!(["unary", "session"]));
    // 200 feeders, 3 calls a second each, from their phase (0 to 1 s) to 3 s.
    let unary = &g["run"]["unary"];
    assert_eq!(unary["protocol"], "unary");
    check_run(unary, 1500..=1700);
    // One message a second each (500-600), and a second request at a barrier where the
    // hold ran out: at most one a second more.
    let session = &g["run"]["session"];
    assert_eq!(session["protocol"], "session");
    check_run(session, 500..=1200);
    // A session message is each feeder's heartbeat, request and (from the second on) ack.
    let (msgs, acks) = (
        session["heartbeat_latency"]["n"].as_u64().unwrap(),
        session["ack_latency"]["n"].as_u64().unwrap(),
    );
    assert_eq!(msgs, session["answered_messages"].as_u64().unwrap());
    assert!(acks < msgs, "{session}");
    for p in ["unary", "session"] {
        assert!(g["meets_target"][p].is_boolean(), "{g}");
    }
    assert!(g["sweep"].as_array().unwrap().is_empty());
    assert_eq!(v["failures"], serde_json::json!([]));
}

#[test]
fn an_impossible_rate_fails_loudly() {
    // 200 feeders at 2,000 periods a second: 400 k session messages/s.
    let out = bench(&[
        "--grpc-feeders",
        "200",
        "--grpc-secs",
        "2",
        "--grpc-rate-hz",
        "2000",
        "--protocol",
        "session",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "an impossible rate passed: {err}");
    assert!(err.contains("intended messages/s answered"), "{err}");
    assert!(err.contains("< 95%"), "{err}");
    // The report is still printed, the run marked failed.
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    let run = &v["grpc_open_loop"]["run"]["session"];
    assert!(
        run["failure"].as_str().unwrap().contains("(session)"),
        "{run}"
    );
    assert_eq!(v["grpc_open_loop"]["meets_target"]["session"], false);
}
