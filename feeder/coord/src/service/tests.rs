//! Service tests that need its private parts: the cluster-complete signal, the cached
//! `TF_CONFIG`, and the journal's group commit.

use std::sync::Arc;
use std::time::Duration;

use proto::coordinator_server::Coordinator;

use super::commit::GroupCommit;
use super::*;
use crate::cluster::{tf_config_json, ClusterSpec};
use crate::{Config, SplitInfo};

fn service(workers: u32) -> CoordService {
    let splits = (0..4).map(|i| SplitInfo::new(i, 10)).collect();
    let m = Machine::new(splits, Config::new(workers, 1)).unwrap();
    let opts = options(Token::generate().unwrap());
    CoordService {
        shared: Shared::new(m, opts).unwrap(),
    }
}

/// The options of a test's service: no parameter servers or evaluators, plain HTTP/2.
pub(super) fn options(token: Token) -> ServiceOptions {
    ServiceOptions {
        ps: 0,
        evaluators: 0,
        reservation_timeout: Duration::from_secs(60),
        heartbeat_interval: Duration::from_secs(1),
        log_path: None,
        token,
        tls: None,
        filter_counts: None,
    }
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

async fn register(s: &CoordService, rank: u32) {
    s.register(Request::new(proto::RegisterRequest {
        rank: Some(rank),
        host: format!("h{rank}"),
        port: 2222,
        gpus: vec![],
        role: proto::Role::Worker as i32,
        consumed: vec![],
    }))
    .await
    .unwrap();
}

/// Waiting ranks wake once, when the last rank registers, not at every registration (which
/// made a 10,000-rank start quadratic).
#[test]
fn cluster_waiters_wake_once_when_complete() {
    let s = service(3);
    rt().block_on(async {
        let mut rx = s.shared.complete.subscribe();
        register(&s, 0).await;
        register(&s, 1).await;
        assert!(!rx.has_changed().unwrap());
        register(&s, 2).await;
        assert!(rx.has_changed().unwrap());
        assert!(*rx.borrow_and_update());
        let spec = s
            .wait_cluster_spec(Request::new(proto::WaitClusterSpecRequest {
                rank: 1,
                timeout_ms: 1000,
            }))
            .await
            .unwrap()
            .into_inner();
        let want: ClusterSpec = [(
            "worker".to_string(),
            vec!["h0:2222".into(), "h1:2222".into(), "h2:2222".into()],
        )]
        .into();
        assert_eq!(spec.cluster_json, serde_json::to_string(&want).unwrap());
        assert_eq!(spec.tf_config_json, tf_config_json(&want, Role::Worker, 1));
    });
}

/// The `TF_CONFIG` made from the cached cluster JSON is the text the roster makes.
#[test]
fn tf_config_from_cluster_json_is_the_rosters() {
    let spec: ClusterSpec = [
        ("chief".to_string(), vec!["a:1".to_string()]),
        ("worker".to_string(), vec!["b:2".into(), "c:\"3".into()]),
    ]
    .into();
    let json = serde_json::to_string(&spec).unwrap();
    for (role, index) in [(Role::Chief, 0), (Role::Worker, 1), (Role::Ps, 7)] {
        assert_eq!(
            tf_config_of(&json, role, index),
            tf_config_json(&spec, role, index)
        );
    }
}

/// A record is durable once a sync after its write returned; many records, one wait each.
#[test]
fn group_commit_answers_after_sync() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("journal-1.log");
    let f = std::fs::File::create(&p).unwrap();
    let gc = GroupCommit::start().unwrap();
    rt().block_on(async {
        gc.durable(0).await.unwrap();
        gc.written(1, Some((f, p.clone())));
        for seq in 2..=100 {
            gc.written(seq, None);
        }
        tokio::time::timeout(Duration::from_secs(10), gc.durable(100))
            .await
            .unwrap()
            .unwrap();
        gc.durable(7).await.unwrap();
    });
    gc.stop();
}

/// A failed fsync fails the calls waiting on it and every later one, naming the file.
#[test]
fn group_commit_error_is_sticky() {
    let (_r, w) = std::io::pipe().unwrap();
    // fdatasync on a pipe fails (EINVAL).
    let f = std::fs::File::from(std::os::fd::OwnedFd::from(w));
    let gc: Arc<GroupCommit> = GroupCommit::start().unwrap();
    rt().block_on(async {
        gc.written(1, Some((f, "/jobs/j/journal-1.log".into())));
        let e = tokio::time::timeout(Duration::from_secs(10), gc.durable(1))
            .await
            .unwrap()
            .unwrap_err();
        assert_eq!(e.code(), tonic::Code::Internal);
        assert!(e.message().contains("/jobs/j/journal-1.log"), "{e:?}");
        gc.written(2, None);
        assert!(gc.durable(2).await.is_err());
    });
}
