//! State-machine tests: fixed cases and property tests over random plans and schedules.

use hydrofeed_tfbridge::Piece;
use proptest::prelude::*;

use super::sim::{Sim, SimOptions};
use super::*;

fn splits(rows: &[u64]) -> Vec<SplitInfo> {
    rows.iter()
        .enumerate()
        .map(|(i, &r)| SplitInfo::new(i as u32, r))
        .collect()
}

fn cfg(w: u32, b: u64, epochs: u32, seed: u64, rem: Remainder) -> Config {
    Config {
        epochs,
        seed,
        remainder: rem,
        stall_after_ms: 40,
        dead_after_ms: 100,
        ..Config::new(w, b)
    }
}

/// Rows `rows` of `lease` (of `split`) a trainer read, as it reports them on rejoin.
fn piece(lease: u64, split: u32, rows: u64) -> Piece {
    Piece { lease, split, rows }
}

/// Checks the whole contract on a finished simulation.
fn check(sim: &Sim, rows: &[u64], c: &Config) -> Result<(), TestCaseError> {
    let t: u64 = rows.iter().sum();
    let wb = u64::from(c.workers) * c.batch_size;
    // End of feed after the same number of steps everywhere, equal to the quotas' sum.
    let steps = sim.end_steps();
    prop_assert!(
        steps.iter().all(|s| *s == steps[0]),
        "end steps differ: {steps:?}"
    );
    let total_steps: u64 = (0..c.epochs).map(|e| sim.quotas[&e] / c.batch_size).sum();
    prop_assert_eq!(steps[0], Some(total_steps));
    let mut carry = 0;
    for e in 0..c.epochs {
        let q = sim.quotas[&e];
        prop_assert_eq!(q % c.batch_size, 0);
        for r in 0..c.workers {
            let got = sim.per_rank.get(&(e, r)).copied().unwrap_or(0);
            prop_assert_eq!(
                got,
                q,
                "epoch {} rank {} acked {} rows, quota {}",
                e,
                r,
                got,
                q
            );
        }
        let fresh = t - carry;
        let want = match c.remainder {
            Remainder::Drop => fresh / wb,
            _ => fresh.div_ceil(wb),
        } * c.batch_size;
        prop_assert_eq!(q, want, "epoch {} quota", e);
        // Rows of data epoch e: each exactly once (drop: at most once, the rest dropped).
        let mut once = 0u64;
        for (s, &n) in rows.iter().enumerate() {
            if let Some(v) = sim.tally.get(&(e, s as u32)) {
                prop_assert!(
                    v.iter().all(|&x| x <= 1),
                    "epoch {} split {} row twice",
                    e,
                    s
                );
                once += v.iter().map(|&x| u64::from(x)).sum::<u64>();
            }
            let _ = n;
        }
        match c.remainder {
            Remainder::Drop => {
                prop_assert_eq!(once, u64::from(c.workers) * q);
            }
            Remainder::Pad | Remainder::Wrap => prop_assert_eq!(once, t),
        }
        carry = if c.remainder == Remainder::Wrap {
            u64::from(c.workers) * q - fresh
        } else {
            0
        };
    }
    let k = sim.m.counters();
    match c.remainder {
        Remainder::Drop => {
            prop_assert_eq!(k.rows_dropped, u64::from(c.epochs) * t - k.rows_acked);
            prop_assert_eq!(k.rows_padded + k.rows_wrapped, 0);
        }
        Remainder::Pad => {
            prop_assert_eq!(k.rows_padded, k.rows_acked - u64::from(c.epochs) * t);
            prop_assert_eq!(k.rows_dropped, 0);
        }
        Remainder::Wrap => {
            prop_assert_eq!(k.rows_dropped + k.rows_padded, 0);
        }
    }
    Ok(())
}

fn remainder() -> impl Strategy<Value = Remainder> {
    prop_oneof![
        Just(Remainder::Drop),
        Just(Remainder::Pad),
        Just(Remainder::Wrap)
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    /// Random plans (zero-row and tiny splits included), shapes, policies and schedules.
    #[test]
    fn contract_holds(rows in proptest::collection::vec(prop_oneof![Just(0u64), 1u64..5, 1u64..300], 1..14),
                      w in 1u32..5, b in 1u64..20, epochs in 1u32..4, seed in any::<u64>(),
                      rem in remainder(), sched in any::<u64>()) {
        let c = cfg(w, b, epochs, seed, rem);
        let m = match Machine::new(splits(&rows), c.clone()) {
            Ok(m) => m,
            Err(_) => {
                // Refused only for the documented reasons.
                let t: u64 = rows.iter().sum();
                prop_assert!(t == 0 || t < u64::from(w) * b);
                return Ok(());
            }
        };
        let o = SimOptions { seed: sched, ack_rows: 40, shuffled_acks: sched % 2 == 0, ..Default::default() };
        let mut sim = Sim::new(m, o).unwrap();
        sim.run(2_000_000).unwrap();
        check(&sim, &rows, &c)?;
    }

    /// Ranks die at random points (un-acked leases lost) and re-join: nothing lost or
    /// duplicated, quotas still exact.
    #[test]
    fn death_requeues_from_last_ack(rows in proptest::collection::vec(1u64..400, 2..10),
                                    w in 2u32..5, b in 1u64..16, seed in any::<u64>(),
                                    rem in remainder(), sched in any::<u64>(),
                                    kills in proptest::collection::vec((10u64..3000, 0u32..5), 1..4),
                                    shuffled in any::<bool>()) {
        let c = cfg(w, b, 2, seed, rem);
        let Ok(m) = Machine::new(splits(&rows), c.clone()) else { return Ok(()) };
        // Acks are prefixes, or (shuffled) random pieces of random leases, as a feeder with a
        // shuffle buffer sends them.
        let o = SimOptions { seed: sched, ack_rows: 30, shuffled_acks: shuffled, ..Default::default() };
        let mut sim = Sim::new(m, o).unwrap();
        let mut kills = kills;
        kills.sort();
        let mut at = 0;
        let mut victims = Vec::new();
        for (when, victim) in kills {
            while at < when && !sim.done() {
                sim.step().unwrap();
                at += 1;
            }
            if sim.done() { break; }
            if !sim.m.finished() {
                victims.push(victim % w);
            }
            sim.kill(victim % w, 300);
        }
        sim.run(2_000_000).unwrap();
        check(&sim, &rows, &c)?;
        // Every death reported is a rank that was made silent, named with its host.
        for e in &sim.events {
            if let LivenessEvent::Dead { rank, host, .. } = e {
                prop_assert!(victims.contains(rank), "rank {} declared dead, never silenced", rank);
                prop_assert_eq!(host, &format!("host-{rank}"));
            }
        }
    }

    /// Stop mid-run, serialise the state, resume with another worker count: the two runs
    /// together ack every row of each epoch exactly once (drop: at most once + dropped).
    #[test]
    fn resume_with_other_worker_count(rows in proptest::collection::vec(1u64..300, 1..12),
                                      w in 1u32..5, w2 in 1u32..5, b in 1u64..12,
                                      seed in any::<u64>(), rem in remainder(),
                                      sched in any::<u64>(), stop_at in 1u64..3000) {
        let c = cfg(w, b, 2, seed, rem);
        let Ok(m) = Machine::new(splits(&rows), c.clone()) else { return Ok(()) };
        let t: u64 = rows.iter().sum();
        if rem == Remainder::Wrap && t < u64::from(w2) * b { return Ok(()); }
        let mut sim = Sim::new(m, SimOptions { seed: sched, ..Default::default() }).unwrap();
        for _ in 0..stop_at {
            if sim.done() { break; }
            sim.step().unwrap();
        }
        let st = State::from_json(&sim.m.state().to_json()).unwrap();
        prop_assert_eq!(&st, &sim.m.state());
        let c2 = cfg(w2, 999, 1, 0, Remainder::Drop);
        let m2 = Machine::resume(splits(&rows), c2, &st).unwrap();
        let mut sim2 = Sim::new(m2, SimOptions { seed: sched ^ 1, ..Default::default() }).unwrap();
        sim2.run(2_000_000).unwrap();
        let ends = sim2.end_steps();
        prop_assert!(ends.iter().all(|s| *s == ends[0]));
        // Union of acked rows per data epoch.
        for e in 0..2u32 {
            let mut once = 0u64;
            for s in 0..rows.len() as u32 {
                let a = sim.tally.get(&(e, s));
                let b2 = sim2.tally.get(&(e, s));
                for i in 0..rows[s as usize] as usize {
                    let n = a.map_or(0, |v| v[i]) + b2.map_or(0, |v| v[i]);
                    prop_assert!(n <= 1, "epoch {} split {} row {} acked {} times", e, s, i, n);
                    once += u64::from(n);
                }
            }
            if rem != Remainder::Drop {
                prop_assert_eq!(once, t, "epoch {}", e);
            }
        }
        if rem == Remainder::Drop {
            let k = sim2.m.counters();
            let acked: u64 = sim.m.counters().rows_acked + k.rows_acked;
            prop_assert_eq!(acked + k.rows_dropped, 2 * t);
        }
    }
}

#[test]
fn order_is_deterministic_per_seed_and_epoch() {
    let a = split_order(7, 0, 1000);
    assert_eq!(a, split_order(7, 0, 1000));
    assert_ne!(a, split_order(7, 1, 1000));
    assert_ne!(a, split_order(8, 0, 1000));
    let mut s = a.clone();
    s.sort_unstable();
    assert_eq!(s, (0..1000).collect::<Vec<_>>());
    // Pinned: the order is part of the resume contract.
    assert_eq!(split_order(42, 3, 8), split_order(42, 3, 8));
    assert_ne!(shuffle_seed(1, 0, 0), shuffle_seed(1, 0, 1));
    assert_ne!(shuffle_seed(1, 0, 0), shuffle_seed(1, 1, 0));
}

#[test]
fn batch_size_can_be_set_until_work_is_handed_out() {
    // `hydrofeed launch` without --batch-size: a placeholder of 1, then the trainers' size.
    let mut m = Machine::new(splits(&[1, 40, 9]), cfg(3, 1, 1, 0, Remainder::Drop)).unwrap();
    assert_eq!(m.quota(), 16);
    let inc = m.join(0, "h", 0).unwrap();
    m.set_batch_size(4).unwrap();
    assert_eq!((m.config().batch_size, m.quota()), (4, 16));
    m.set_batch_size(5).unwrap();
    assert_eq!(m.quota(), 15); // floor(50 / 15) = 3 steps of 5
                               // Not one step of 3 x 20 rows under drop: refused, the size stays.
    assert!(m.set_batch_size(20).is_err());
    assert_eq!(m.config().batch_size, 5);
    let Work::Lease(_) = m.request_work(0, inc, None, 0).unwrap() else {
        panic!("no lease")
    };
    assert!(m.set_batch_size(4).is_err(), "work was handed out");
}

#[test]
fn quota_caps_ranges_and_drop_counts() {
    // 3 workers, batch 4, 50 rows: S = floor(50/12) = 4, 16 rows each, 2 dropped.
    let mut m = Machine::new(splits(&[1, 40, 9]), cfg(3, 4, 1, 0, Remainder::Drop)).unwrap();
    assert_eq!(m.quota(), 16);
    let incs: Vec<u64> = (0..3).map(|r| m.join(r, "h", 0).unwrap()).collect();
    for r in 0..3 {
        let mut got = 0;
        while got < 16 {
            let Work::Lease(l) = m.request_work(r, incs[r as usize], None, 0).unwrap() else {
                panic!("no lease")
            };
            assert!(l.rows <= 16 - got);
            got += l.rows;
            m.ack(r, incs[r as usize], l.lease, l.split, l.rows, 0)
                .unwrap();
        }
        if r < 2 {
            assert_eq!(
                m.request_work(r, incs[r as usize], None, 0).unwrap(),
                Work::Wait { retry_ms: 50 }
            );
        }
    }
    assert!(m.finished());
    assert_eq!(m.counters().rows_dropped, 2);
    assert_eq!(
        m.request_work(0, incs[0], None, 0).unwrap(),
        Work::EndOfFeed { steps: 4 }
    );
    let log = m.drain_log();
    assert_eq!(
        log.iter()
            .filter(|r| r.kind == LogKind::Drop)
            .map(|r| r.rows)
            .sum::<u64>(),
        2
    );
}

#[test]
fn local_splits_are_preferred() {
    let s: Vec<SplitInfo> = (0..20)
        .map(|i| SplitInfo::new(i, 10).with_hosts([format!("dn{}", i % 4)]))
        .collect();
    let mut m = Machine::new(s, cfg(2, 10, 1, 3, Remainder::Drop)).unwrap();
    let i0 = m.join(0, "dn2", 0).unwrap();
    for _ in 0..5 {
        let Work::Lease(l) = m.request_work(0, i0, None, 0).unwrap() else {
            panic!()
        };
        assert_eq!(l.split % 4, 2, "split {} is not on dn2", l.split);
        m.ack(0, i0, l.lease, l.split, l.rows, 0).unwrap();
    }
    // Host given in the request overrides the registered one.
    let Work::Lease(l) = m.request_work(0, i0, Some("dn1"), 0).unwrap() else {
        panic!()
    };
    assert_eq!(l.split % 4, 1);
}

#[test]
fn stall_then_death_names_rank_host_stage() {
    let mut m = Machine::new(splits(&[100]), cfg(2, 10, 1, 0, Remainder::Drop)).unwrap();
    let i0 = m.join(0, "a", 0).unwrap();
    let i1 = m.join(1, "b", 0).unwrap();
    m.heartbeat(1, i1, Stage::WaitingRing, WorkerCounters::default(), 10)
        .unwrap();
    let Work::Lease(l) = m.request_work(1, i1, None, 10).unwrap() else {
        panic!()
    };
    m.ack(1, i1, l.lease, l.split, 7, 20).unwrap();
    m.heartbeat(1, i1, Stage::TrainerIdle, WorkerCounters::default(), 20)
        .unwrap();
    m.heartbeat(0, i0, Stage::Reading, WorkerCounters::default(), 65)
        .unwrap();
    assert_eq!(
        m.tick(65),
        vec![LivenessEvent::Stalled {
            rank: 1,
            host: "b".into(),
            stage: Stage::TrainerIdle,
            silent_ms: 45
        }]
    );
    assert!(
        m.tick(70).is_empty(),
        "a stall is reported once per silence"
    );
    m.heartbeat(0, i0, Stage::Reading, WorkerCounters::default(), 120)
        .unwrap();
    let ev = m.tick(121);
    assert_eq!(
        ev,
        vec![LivenessEvent::Dead {
            rank: 1,
            host: "b".into(),
            stage: Stage::TrainerIdle,
            silent_ms: 101,
            requeued_rows: 43
        }]
    );
    assert!(!m
        .heartbeat(1, i1, Stage::Reading, WorkerCounters::default(), 122)
        .unwrap());
    let e = m.request_work(1, i1, None, 122).unwrap_err().to_string();
    assert!(
        e.contains("rank 1 incarnation 1 (host b) was declared dead"),
        "{e}"
    );
    // The re-queued rows start at the last acked row.
    let Work::Lease(l0) = m.request_work(0, i0, None, 122).unwrap() else {
        panic!()
    };
    assert_eq!(
        (l0.split, l0.first_row, l0.rows),
        (l.split, l.first_row + 7, 43)
    );
}

#[test]
fn bad_acks_are_refused_with_names() {
    let mut m = Machine::new(splits(&[10, 10]), cfg(1, 5, 1, 0, Remainder::Drop)).unwrap();
    let i = m.join(0, "a", 0).unwrap();
    let Work::Lease(l) = m.request_work(0, i, None, 0).unwrap() else {
        panic!()
    };
    let e = m
        .ack(0, i, l.lease, l.split + 1, 1, 0)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains(&format!("lease {} is split {}", l.lease, l.split)),
        "{e}"
    );
    let e = m
        .ack(0, i, l.lease, l.split, l.rows + 1, 0)
        .unwrap_err()
        .to_string();
    assert!(e.contains("which has"), "{e}");
    let e = m.ack(0, i, 999, 0, 1, 0).unwrap_err().to_string();
    assert!(e.contains("lease 999"), "{e}");
    m.ack(0, i, l.lease, l.split, 2, 0).unwrap();
    m.ack(0, i, l.lease, l.split, 1, 0).unwrap(); // older ack: no effect
    assert_eq!(m.counters().rows_acked, 2);
    assert!(m.join(5, "x", 0).is_err());
}

#[test]
fn drop_refuses_inputs_smaller_than_one_step() {
    let e = Machine::new(splits(&[3]), cfg(2, 2, 1, 0, Remainder::Drop))
        .unwrap_err()
        .to_string();
    assert!(e.contains("not one full step"), "{e}");
    let mut m = Machine::new(splits(&[3]), cfg(2, 2, 1, 0, Remainder::Pad)).unwrap();
    assert_eq!(m.quota(), 2);
    let mut sim = Sim::new(
        std::mem::replace(
            &mut m,
            Machine::new(splits(&[1]), Config::new(1, 1)).unwrap(),
        ),
        SimOptions::default(),
    )
    .unwrap();
    sim.run(100_000).unwrap();
    assert_eq!(sim.m.counters().rows_padded, 1);
}

/// Under wrap, rows of this epoch that come back from a dead rank go before the next epoch's
/// rows, even when the locality preference would pick one of the latter.
#[test]
fn wrap_requeued_rows_go_before_next_epoch_rows() {
    let s: Vec<SplitInfo> = (0..3)
        .map(|i| SplitInfo::new(i, 10).with_hosts([format!("h{i}")]))
        .collect();
    let order = split_order(5, 0, 3);
    let mut m = Machine::new(s, cfg(2, 4, 2, 5, Remainder::Wrap)).unwrap();
    assert_eq!(m.quota(), 16); // ceil(30 / 8) = 4 steps
    let i0 = m.join(0, "x", 0).unwrap();
    let i1 = m.join(1, "x", 0).unwrap();
    let lease = |m: &mut Machine, r: u32, i: u64| match m.request_work(r, i, None, 0).unwrap() {
        Work::Lease(l) => l,
        w => panic!("{w:?}"),
    };
    let a = lease(&mut m, 0, i0); // 10 rows of order[0], never acked
    assert_eq!((a.split, a.rows), (order[0], 10));
    for _ in 0..2 {
        let l = lease(&mut m, 1, i1);
        m.ack(1, i1, l.lease, l.split, l.rows, 0).unwrap();
    }
    let b = lease(&mut m, 0, i0); // the 4 rows left of order[2]
    assert_eq!((b.split, b.rows, b.data_epoch), (order[2], 4, 0));
    let c = lease(&mut m, 0, i0); // 2 rows wrapped from epoch 1
    assert_eq!((c.rows, c.data_epoch), (2, 1));
    // Rank 0 dies; it comes back on the host of order[1], whose epoch-0 rows are all acked
    // but whose epoch-1 rows are queued.
    m.heartbeat(1, i1, Stage::WaitingWork, WorkerCounters::default(), 1_000)
        .unwrap();
    let ev = m.tick(1_000);
    assert!(
        matches!(
            ev[..],
            [LivenessEvent::Dead {
                rank: 0,
                requeued_rows: 16,
                ..
            }]
        ),
        "{ev:?}"
    );
    let i0 = m.join(0, &format!("h{}", order[1]), 1_000).unwrap();
    let mut got = 0;
    while got < 16 {
        let l = lease(&mut m, 0, i0);
        if got < 14 {
            assert_eq!(
                l.data_epoch, 0,
                "epoch-1 rows before epoch-0 rows came back: {l:?}"
            );
        }
        got += l.rows;
        m.ack(0, i0, l.lease, l.split, l.rows, 1_000).unwrap();
    }
    assert_eq!(m.epoch(), 1);
    assert_eq!(m.counters().rows_dropped, 0);
}

#[test]
fn a_restarted_feeder_reports_what_its_trainer_read_and_only_the_rest_comes_again() {
    // 1 worker, batch 10, one split of 100 rows: the feeder took a lease of all 100, its trainer
    // read 37 rows but only 20 were acked before the feeder died.
    let mut m = Machine::new(splits(&[100]), cfg(1, 10, 1, 0, Remainder::Drop)).unwrap();
    let inc = m.join(0, "h", 0).unwrap();
    let Work::Lease(l) = m.request_work(0, inc, None, 0).unwrap() else {
        panic!("no lease")
    };
    assert_eq!((l.first_row, l.rows), (0, 100));
    m.ack(0, inc, l.lease, l.split, 20, 0).unwrap();
    // The new feeder registers with the trainer's report (a stale lease id is skipped).
    let inc2 = m
        .rejoin(0, "h", 1, &[piece(l.lease, l.split, 37), piece(999, 0, 5)])
        .unwrap();
    assert_eq!(inc2, inc + 1);
    assert_eq!(m.counters().rows_acked, 37);
    // The rest, rows 37..100, comes again, once.
    let Work::Lease(l2) = m.request_work(0, inc2, None, 2).unwrap() else {
        panic!("no lease")
    };
    assert_eq!((l2.split, l2.first_row, l2.rows), (0, 37, 63));
    m.ack(0, inc2, l2.lease, l2.split, 63, 3).unwrap();
    assert!(m.finished());
    assert_eq!(m.counters().rows_acked, 100);
}

#[test]
fn a_report_after_the_rank_was_declared_dead_is_refused() {
    let mut m = Machine::new(splits(&[100]), cfg(1, 10, 1, 0, Remainder::Drop)).unwrap();
    let inc = m.join(0, "h", 0).unwrap();
    let Work::Lease(l) = m.request_work(0, inc, None, 0).unwrap() else {
        panic!("no lease")
    };
    // Silent past dead_after (100 ms): its rows are queued again.
    assert!(!m.tick(500).is_empty());
    let e = m
        .rejoin(0, "h", 501, &[piece(l.lease, l.split, 37)])
        .unwrap_err();
    assert!(e.to_string().contains("declared dead"), "{e}");
    assert!(e.to_string().contains("feeder came back: the rows"), "{e}");
    // Without a report (the trainer read nothing un-acked) the rank comes back as usual.
    m.rejoin(0, "h", 502, &[]).unwrap();
}

#[test]
fn a_rank_kept_alive_by_its_supervisor_takes_its_restarted_feeder_back_however_late() {
    // The feeder died right after the lease; its trainer is busy 5x dead_after (100 ms) before
    // it re-attaches, and its supervisor keeps the rank alive meanwhile.
    let mut m = Machine::new(splits(&[100]), cfg(1, 10, 1, 0, Remainder::Drop)).unwrap();
    let inc = m.join(0, "h", 0).unwrap();
    let Work::Lease(l) = m.request_work(0, inc, None, 0).unwrap() else {
        panic!("no lease")
    };
    for now in (50..=500).step_by(50) {
        assert!(m.keep_alive(0, now).unwrap());
        assert!(m.tick(now).is_empty(), "at {now} ms");
    }
    let inc2 = m
        .rejoin(0, "h", 501, &[piece(l.lease, l.split, 37)])
        .unwrap();
    assert_eq!(m.counters().rows_acked, 37);
    assert_eq!(m.counters().deaths, 0);
    // Without keep-alives (the node is gone) the rank dies by silence as before, and stays dead.
    assert!(!m.tick(1_000).is_empty());
    assert!(!m.keep_alive(0, 1_001).unwrap());
    assert!(m.request_work(0, inc2, None, 1_002).is_err());
}

/// A run stopped after 30 of its 100 steps resumes with 70 steps left in that epoch (under
/// drop and pad, whatever the remainder), the next epoch whole; a state saved at an epoch's
/// end resumes at the next epoch with all its steps; a fresh machine says nothing.
#[test]
fn a_resumed_machine_tells_the_steps_left_in_its_first_epoch() {
    for (rem, rows) in [(Remainder::Drop, [100, 101]), (Remainder::Pad, [100, 99])] {
        let mut m = Machine::new(splits(&rows), cfg(1, 2, 3, 0, rem)).unwrap();
        assert_eq!((m.quota(), m.resumed_at()), (200, None));
        let inc = m.join(0, "h", 0).unwrap();
        let Work::Lease(l) = m.request_work(0, inc, None, 0).unwrap() else {
            panic!("no lease")
        };
        assert!(l.rows >= 60);
        m.ack(0, inc, l.lease, l.split, 60, 0).unwrap();
        let st = m.state();
        let r = Machine::resume(splits(&rows), cfg(1, 9, 1, 0, rem), &st).unwrap();
        assert_eq!(r.resumed_at(), Some((0, 70)), "{rem:?}");
        // Epoch 0 done: the state resumes at epoch 1, every step of it ahead.
        m.ack(0, inc, l.lease, l.split, l.rows, 0).unwrap();
        while m.epoch() == 0 {
            let Work::Lease(l) = m.request_work(0, inc, None, 0).unwrap() else {
                panic!("no lease")
            };
            m.ack(0, inc, l.lease, l.split, l.rows, 0).unwrap();
        }
        let r = Machine::resume(splits(&rows), cfg(1, 9, 1, 0, rem), &m.state()).unwrap();
        assert_eq!(r.resumed_at(), Some((1, 100)), "{rem:?}");
    }
}

/// Whether an epoch can close is decided without looking at every rank on every ack: ranks
/// that acked in rank order (as 10,000 feeders started at staggered phases do) cost the rule
/// a bounded number of looks each, in both orders, over several epochs.
#[test]
fn closing_an_epoch_looks_at_each_rank_a_bounded_number_of_times() {
    let w = 5_000u32;
    for order in [None, Some(crate::order::OrderSpec::default())] {
        let c = Config {
            order,
            ..cfg(w, 4, 3, 1, Remainder::Drop)
        };
        let mut m = Machine::new(splits(&vec![8; w as usize]), c).unwrap();
        let incs: Vec<u64> = (0..w).map(|r| m.join(r, "h", 0).unwrap()).collect();
        // Under the fixed order a rank done with its share is dealt the next epoch's: kept
        // here until that epoch opens.
        let mut ahead: Vec<Option<crate::Lease>> = vec![None; w as usize];
        for e in 0..3 {
            assert_eq!(m.epoch(), e);
            for r in 0..w {
                let inc = incs[r as usize];
                if let Some(l) = ahead[r as usize].take() {
                    m.ack(r, inc, l.lease, l.split, l.rows, 0).unwrap();
                }
                // Two leases a rank under the dynamic order (8 rows, splits of 8 rows, batches
                // of 4), one segment under the fixed order.
                while let Work::Lease(l) = m.request_work(r, inc, None, 0).unwrap() {
                    if l.epoch > e {
                        ahead[r as usize] = Some(l);
                        break;
                    }
                    m.ack(r, inc, l.lease, l.split, l.rows, 0).unwrap();
                }
            }
        }
        assert!(m.finished(), "{order:?}");
        let per_rank = m.ranks_inspected as f64 / f64::from(w * 3);
        assert!(
            per_rank <= 4.0,
            "{order:?}: {per_rank:.1} looks a rank an epoch"
        );
    }
}
