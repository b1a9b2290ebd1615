//! The [`Roster`] of a job (TFoS and TonY call gathering it the "reservation"): every process
//! of the job registers its rank (or asks for one), host, port, GPUs and role; once all are
//! in, the coordinator builds the cluster spec and each rank's `TF_CONFIG`.
//!
//! Ranks: `0..workers` are the data ranks (role `chief` or `worker`; they get leases), then
//! `ps` parameter servers, then `evaluators`. Evaluators are not in the cluster spec, as
//! TensorFlow expects; they get a `TF_CONFIG` whose task type is `evaluator`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::{Error, Result};

/// Role of a process in a TensorFlow cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// A training worker (gets data).
    #[default]
    Worker,
    /// The chief worker (gets data; at most one; writes checkpoints).
    Chief,
    /// A parameter server (no data).
    Ps,
    /// An evaluator (no data, not in the cluster spec).
    Evaluator,
}

impl Role {
    /// Task type name in `TF_CONFIG`.
    pub fn task_type(self) -> &'static str {
        match self {
            Role::Worker => "worker",
            Role::Chief => "chief",
            Role::Ps => "ps",
            Role::Evaluator => "evaluator",
        }
    }
}

/// What a process registers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Registration {
    /// Requested rank; `None` asks for the first free rank of its role.
    pub rank: Option<u32>,
    /// Host name or address.
    pub host: String,
    /// Port its TensorFlow server listens on.
    pub port: u32,
    /// GPU ids it uses.
    pub gpus: Vec<u32>,
    /// Role.
    pub role: Role,
}

/// The cluster spec: task type -> `host:port` list, indexed by task index.
pub type ClusterSpec = BTreeMap<String, Vec<String>>;

/// The registrations of one job, by rank.
#[derive(Debug, Clone)]
pub struct Roster {
    workers: u32,
    ps: u32,
    evaluators: u32,
    ranks: Vec<Option<Registration>>,
}

impl Roster {
    /// Expects `workers` data ranks, `ps` parameter servers and `evaluators` evaluators.
    pub fn new(workers: u32, ps: u32, evaluators: u32) -> Self {
        let n = (workers + ps + evaluators) as usize;
        Self {
            workers,
            ps,
            evaluators,
            ranks: vec![None; n],
        }
    }

    fn range_of(&self, role: Role) -> std::ops::Range<u32> {
        match role {
            Role::Worker | Role::Chief => 0..self.workers,
            Role::Ps => self.workers..self.workers + self.ps,
            Role::Evaluator => self.workers + self.ps..self.workers + self.ps + self.evaluators,
        }
    }

    /// Registers a process; returns its rank. Registering a rank again from the same host
    /// (a restarted process) replaces the old registration; from another host it is refused
    /// unless [`Roster::register_replacing`] says the old holder is gone.
    pub fn register(&mut self, reg: Registration) -> Result<u32> {
        self.register_replacing(reg, |_| false)
    }

    /// Like [`Roster::register`], but a rank whose holder `gone(rank)` (declared dead by
    /// the coordinator) may be taken over from another host: a rescheduled worker.
    pub fn register_replacing(
        &mut self,
        reg: Registration,
        gone: impl Fn(u32) -> bool,
    ) -> Result<u32> {
        let range = self.range_of(reg.role);
        if reg.role == Role::Chief {
            if let Some(c) = self.ranks.iter().flatten().find(|r| r.role == Role::Chief) {
                if reg.rank != c.rank || c.host != reg.host {
                    let at = self
                        .ranks
                        .iter()
                        .position(|s| s.as_ref() == Some(c))
                        .unwrap_or(0);
                    return Err(Error::Coordinator(format!(
                        "a chief is already registered (rank {at} on {}); {} asked to be chief too",
                        c.host, reg.host
                    )));
                }
            }
        }
        let rank = match reg.rank {
            Some(r) => {
                if !range.contains(&r) {
                    return Err(Error::Coordinator(format!(
                        "{} asked for rank {r} as {}, but {} ranks are {}..{}",
                        reg.host,
                        reg.role.task_type(),
                        reg.role.task_type(),
                        range.start,
                        range.end
                    )));
                }
                if let Some(old) = &self.ranks[r as usize] {
                    if old.host != reg.host && !gone(r) {
                        return Err(Error::Coordinator(format!(
                            "rank {r} is already registered by {}:{}; {}:{} asked for it too",
                            old.host, old.port, reg.host, reg.port
                        )));
                    }
                }
                r
            }
            None => match range.clone().find(|&r| self.ranks[r as usize].is_none()) {
                Some(r) => r,
                None => {
                    return Err(Error::Coordinator(format!(
                        "no free {} rank for {}: all {} are taken",
                        reg.role.task_type(),
                        reg.host,
                        range.len()
                    )))
                }
            },
        };
        let mut reg = reg;
        reg.rank = Some(rank);
        self.ranks[rank as usize] = Some(reg);
        Ok(rank)
    }

    /// The registrations, by rank (a journal's compaction saves them).
    pub fn registrations(&self) -> Vec<Registration> {
        self.ranks.iter().flatten().cloned().collect()
    }

    /// Ranks not registered yet.
    pub fn missing(&self) -> Vec<u32> {
        (0..self.ranks.len() as u32)
            .filter(|&r| self.ranks[r as usize].is_none())
            .collect()
    }

    /// Whether every expected process registered.
    pub fn is_complete(&self) -> bool {
        self.ranks.iter().all(Option::is_some)
    }

    /// The registration of `rank`.
    pub fn get(&self, rank: u32) -> Option<&Registration> {
        self.ranks.get(rank as usize).and_then(Option::as_ref)
    }

    /// The error for a roster incomplete at the deadline: names the missing ranks and who came.
    pub fn timeout_error(&self, secs: f64) -> Error {
        let missing: Vec<String> = self
            .missing()
            .iter()
            .map(|&r| {
                let role = if r < self.workers {
                    "worker"
                } else if r < self.workers + self.ps {
                    "ps"
                } else {
                    "evaluator"
                };
                format!("{r} ({role})")
            })
            .collect();
        let came: Vec<String> = self
            .ranks
            .iter()
            .enumerate()
            .filter_map(|(r, s)| s.as_ref().map(|s| format!("{r} on {}:{}", s.host, s.port)))
            .collect();
        Error::Timeout {
            what: format!(
                "the reservation: missing ranks [{}] of {}; registered: [{}]",
                missing.join(", "),
                self.ranks.len(),
                came.join(", ")
            ),
            secs,
        }
    }

    /// The cluster spec (only once complete).
    pub fn spec(&self) -> Result<ClusterSpec> {
        if !self.is_complete() {
            return Err(Error::Coordinator(format!(
                "cluster spec asked for before every rank registered (missing {:?})",
                self.missing()
            )));
        }
        let mut spec = ClusterSpec::new();
        for reg in self.ranks.iter().flatten() {
            if reg.role != Role::Evaluator {
                spec.entry(reg.role.task_type().to_string())
                    .or_default()
                    .push(format!("{}:{}", reg.host, reg.port));
            }
        }
        Ok(spec)
    }

    /// `(task type, task index)` of a rank: chief 0; workers numbered in rank order skipping
    /// the chief; ps and evaluators from 0 in rank order.
    pub fn task_of(&self, rank: u32) -> Result<(Role, u32)> {
        let reg = self
            .get(rank)
            .ok_or_else(|| Error::Coordinator(format!("rank {rank} is not registered")))?;
        let index = self.ranks[..rank as usize]
            .iter()
            .flatten()
            .filter(|r| r.role == reg.role)
            .count() as u32;
        Ok((reg.role, index))
    }

    /// The `TF_CONFIG` JSON for a rank.
    pub fn tf_config(&self, rank: u32) -> Result<String> {
        let spec = self.spec()?;
        let (role, index) = self.task_of(rank)?;
        Ok(tf_config_json(&spec, role, index))
    }
}

/// `TF_CONFIG` JSON: `{"cluster": spec, "task": {"type": role, "index": index}}`.
pub fn tf_config_json(spec: &ClusterSpec, role: Role, index: u32) -> String {
    tf_config_for(spec, role.task_type(), index, None)
}

/// `TF_CONFIG` JSON for a task of any type: `{"cluster": spec, "task": {"type": task_type,
/// "index": index}}`, with `"environment"` when given (TensorFlowOnSpark sets `"cloud"`).
///
/// The one place `TF_CONFIG` is built: `hydrofeed launch` through [`Roster::tf_config`],
/// the Spark integration through `hydrofeed._native.tf_config`.
pub fn tf_config_for(
    spec: &ClusterSpec,
    task_type: &str,
    index: u32,
    environment: Option<&str>,
) -> String {
    let mut v = serde_json::json!({
        "cluster": spec,
        "task": {"type": task_type, "index": index},
    });
    if let Some(env) = environment {
        v["environment"] = env.into();
    }
    v.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reg(rank: Option<u32>, host: &str, role: Role) -> Registration {
        Registration {
            rank,
            host: host.into(),
            port: 2222,
            gpus: vec![0],
            role,
        }
    }

    #[test]
    fn spec_and_tf_config() {
        let mut r = Roster::new(3, 1, 1);
        assert_eq!(r.register(reg(Some(0), "a", Role::Chief)).unwrap(), 0);
        assert_eq!(r.register(reg(None, "b", Role::Worker)).unwrap(), 1);
        assert_eq!(r.register(reg(None, "p", Role::Ps)).unwrap(), 3);
        assert!(r.spec().is_err());
        assert_eq!(r.missing(), vec![2, 4]);
        let msg = r.timeout_error(5.0).to_string();
        assert!(
            msg.contains("missing ranks [2 (worker), 4 (evaluator)]"),
            "{msg}"
        );
        assert_eq!(r.register(reg(None, "c", Role::Worker)).unwrap(), 2);
        assert_eq!(r.register(reg(None, "e", Role::Evaluator)).unwrap(), 4);
        let spec = r.spec().unwrap();
        assert_eq!(spec["chief"], vec!["a:2222"]);
        assert_eq!(spec["worker"], vec!["b:2222", "c:2222"]);
        assert_eq!(spec["ps"], vec!["p:2222"]);
        assert!(!spec.contains_key("evaluator"));
        let tc: serde_json::Value = serde_json::from_str(&r.tf_config(2).unwrap()).unwrap();
        assert_eq!(tc["task"]["type"], "worker");
        assert_eq!(tc["task"]["index"], 1);
        assert_eq!(tc["cluster"]["worker"][1], "c:2222");
        let tc: serde_json::Value = serde_json::from_str(&r.tf_config(4).unwrap()).unwrap();
        assert_eq!(tc["task"]["type"], "evaluator");
        assert_eq!(tc["task"]["index"], 0);
        // Conflicts are refused with names.
        let e = r
            .register(reg(Some(1), "zz", Role::Worker))
            .unwrap_err()
            .to_string();
        assert!(e.contains("rank 1 is already registered by b:2222"), "{e}");
        let e = r
            .register(reg(None, "x", Role::Worker))
            .unwrap_err()
            .to_string();
        assert!(e.contains("no free worker rank"), "{e}");
        let e = r
            .register(reg(Some(1), "zz", Role::Chief))
            .unwrap_err()
            .to_string();
        assert!(e.contains("a chief is already registered"), "{e}");
        // A restarted process on the same host takes its rank back; another host only once
        // the old holder is gone.
        assert_eq!(r.register(reg(Some(1), "b", Role::Worker)).unwrap(), 1);
        assert_eq!(
            r.register_replacing(reg(Some(1), "b2", Role::Worker), |r| r == 1)
                .unwrap(),
            1
        );
        assert_eq!(r.get(1).unwrap().host, "b2");
    }
}
