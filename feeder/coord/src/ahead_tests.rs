//! The fixed order across an epoch boundary: a rank that leased its share of an epoch is dealt
//! the next epoch's at once (no barrier hold), and the streams, equal steps, exactly-once,
//! deaths and the resume state hold as with the barrier.

use proptest::prelude::*;

use super::{full, joined, splits_of};
use crate::order::{expand, OrderSpec};
use crate::{Config, Lease, Machine, State, Work, SEGMENT_SPLIT};

/// A fixed-order machine whose ranks are declared dead after 20 ms of silence.
fn machine(rows: &[u64], w: u32, b: u64, epochs: u32, seed: u64, spec: OrderSpec) -> Machine {
    let cfg = Config {
        epochs,
        seed,
        order: Some(spec),
        stall_after_ms: 10,
        dead_after_ms: 20,
        ..Config::new(w, b)
    };
    Machine::new(splits_of(rows), cfg).unwrap()
}

/// Rank `r`'s whole stream of epoch `e` in a run of `w` workers.
fn stream(
    rows: &[u64],
    w: u32,
    b: u64,
    seed: u64,
    spec: OrderSpec,
    e: u32,
    r: u32,
) -> Vec<(u32, u64)> {
    full(rows, &[], w, b, seed, spec, e, r)
}

fn rows_of(rows: &[u64], l: &Lease) -> Vec<(u32, u64)> {
    let o = l.order.expect("a fixed-order lease");
    expand(
        rows,
        &[],
        o.seed,
        o.shuffle,
        o.spec,
        o.batch_size,
        &o.segment,
    )
}

/// The rank consumed everything it was dealt of epoch 0 while rank 1 has not started: its next
/// request is answered at once with its share of epoch 1 (with the barrier it was a wait),
/// whose acks do not close epoch 0; epoch 0 closes when rank 1 acks, and epoch 1 goes on from
/// where rank 0 got to.
#[test]
fn a_rank_done_with_its_share_is_dealt_the_next_epoch_at_once() {
    let (rows, spec, b) = ([300u64, 200, 500], OrderSpec::new(64, 3), 10);
    let mut m = machine(&rows, 2, b, 3, 7, spec);
    let i = joined(&mut m);
    let Work::Lease(l0) = m.request_work(0, i[0], None, 0).unwrap() else {
        panic!("no lease")
    };
    assert_eq!(l0.epoch, 0);
    m.ack(0, i[0], l0.lease, SEGMENT_SPLIT, l0.rows, 0).unwrap();
    let w = m.request_work(0, i[0], None, 0).unwrap();
    let Work::Lease(l1) = w else {
        panic!("rank 0 was not dealt epoch 1 before the others finished epoch 0: {w:?}")
    };
    assert_eq!((l1.epoch, l1.data_epoch, m.epoch()), (1, 1, 0));
    assert_eq!(rows_of(&rows, &l1), stream(&rows, 2, b, 7, spec, 1, 0));
    // Leased, nothing consumed there yet: the state is that of the barrier (version 2, no
    // next deal: the epoch is dealt afresh the same).
    let st = m.state();
    assert_eq!(st.version, 2);
    assert!(st.order.as_ref().unwrap().next.is_none());
    // Half of it consumed; never more than one epoch ahead.
    m.ack(0, i[0], l1.lease, SEGMENT_SPLIT, 250, 0).unwrap();
    assert_eq!(m.state().version, 3);
    assert_eq!(
        m.request_work(0, i[0], None, 0).unwrap(),
        Work::Wait { retry_ms: 50 }
    );
    assert_eq!((m.epoch(), m.steps_of(0), m.steps_of(1)), (0, 75, 0));
    let Work::Lease(k0) = m.request_work(1, i[1], None, 0).unwrap() else {
        panic!("no lease")
    };
    assert_eq!(k0.epoch, 0);
    m.ack(1, i[1], k0.lease, SEGMENT_SPLIT, k0.rows, 0).unwrap();
    assert_eq!(m.epoch(), 1, "epoch 0 closes when its last rank acked");
    assert_eq!(m.ranks()[0].acked, 250);
    m.ack(0, i[0], l1.lease, SEGMENT_SPLIT, l1.rows, 0).unwrap();
    assert_eq!(m.ranks()[0].acked, 500);
    let Work::Lease(l2) = m.request_work(0, i[0], None, 0).unwrap() else {
        panic!("no lease")
    };
    assert_eq!(
        (l2.epoch, rows_of(&rows, &l2)),
        (2, stream(&rows, 2, b, 7, spec, 2, 0))
    );
}

/// A rank that dies inside the next epoch keeps its share there: its next incarnation goes on
/// from the acked row of that epoch, and nobody else's stream moves.
#[test]
fn a_rank_dead_inside_the_next_epoch_resumes_its_own_stream_there() {
    let (rows, spec, b) = ([300u64, 200, 500], OrderSpec::new(64, 3), 10);
    let mut m = machine(&rows, 2, b, 2, 5, spec);
    let i = joined(&mut m);
    let Work::Lease(l0) = m.request_work(0, i[0], None, 0).unwrap() else {
        panic!()
    };
    m.ack(0, i[0], l0.lease, SEGMENT_SPLIT, l0.rows, 0).unwrap();
    let Work::Lease(l1) = m.request_work(0, i[0], None, 0).unwrap() else {
        panic!()
    };
    m.ack(0, i[0], l1.lease, SEGMENT_SPLIT, 120, 1).unwrap();
    m.heartbeat(1, i[1], crate::Stage::Reading, Default::default(), 100)
        .unwrap();
    let ev = m.tick(100);
    assert!(
        matches!(ev.last(), Some(crate::LivenessEvent::Dead { rank: 0, .. })),
        "{ev:?}"
    );
    let i0 = m.join(0, "h", 100).unwrap();
    let Work::Lease(again) = m.request_work(0, i0, None, 100).unwrap() else {
        panic!()
    };
    assert_eq!((again.epoch, again.first_row, again.rows), (1, 120, 380));
    let Work::Lease(k0) = m.request_work(1, i[1], None, 100).unwrap() else {
        panic!()
    };
    assert_eq!(rows_of(&rows, &k0), stream(&rows, 2, b, 5, spec, 0, 1));
}

/// A lease being read: its rows, and how many were consumed.
type Held = (Lease, Vec<(u32, u64)>, usize);

/// Each rank reads its leases in order and acks them in random steps until it consumed
/// `stop[r]` rows over the run (`None`: to the end of the feed). Appends each rank's rows to
/// `out[epoch][rank]`.
fn drive(
    m: &mut Machine,
    incs: &[u64],
    rows: &[u64],
    stop: Option<&[u64]>,
    rng: &mut u64,
    out: &mut Vec<Vec<Vec<(u32, u64)>>>,
) {
    let w = incs.len();
    let mut held: Vec<Option<Held>> = vec![None; w];
    let mut taken = vec![0u64; w];
    loop {
        let mut progress = false;
        for r in 0..w {
            let left = stop.map_or(u64::MAX, |s| s[r] - taken[r]);
            if left == 0 {
                continue;
            }
            if held[r].is_none() {
                if let Work::Lease(l) = m.request_work(r as u32, incs[r], None, 0).unwrap() {
                    let v = rows_of(rows, &l);
                    assert_eq!(v.len() as u64, l.rows);
                    held[r] = Some((l, v, 0));
                }
            }
            let Some((l, v, done)) = held[r].as_mut() else {
                continue;
            };
            *rng = crate::mix64(*rng);
            let n = ((1 + *rng % 97) as usize)
                .min(v.len() - *done)
                .min(left.min(usize::MAX as u64) as usize);
            let e = l.epoch as usize;
            if out.len() <= e {
                out.resize(e + 1, vec![Vec::new(); w]);
            }
            out[e][r].extend_from_slice(&v[*done..*done + n]);
            *done += n;
            taken[r] += n as u64;
            m.ack(r as u32, incs[r], l.lease, SEGMENT_SPLIT, *done as u64, 0)
                .unwrap();
            if *done == v.len() {
                held[r] = None;
            }
            progress = true;
        }
        if !progress {
            return;
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Ranks stopped at different points of a two-epoch boundary (some inside the next epoch,
    /// some still in the current one) and resumed from the state, with the same workers or
    /// others: every row of every epoch consumed at most once, at most `W B` rows of an epoch
    /// not consumed (the dropped rest), equal steps in each epoch of the resumed run; with the
    /// same workers and a saved deal that goes on, each rank's streams are the uninterrupted
    /// run's. A state with a rank inside the next epoch is version 3.
    #[test]
    fn ranks_stopped_across_an_epoch_boundary_resume_exactly_once(
        rows in prop::collection::vec(1u64..300, 1..7),
        w in 1u32..4, w2 in 1u32..4, b in 1u64..5, buffer in 0u64..40, cycle in 1u32..4,
        seed: u64, cuts in prop::collection::vec(0.0f64..2.0, 3),
    ) {
        let spec = OrderSpec::new(buffer, cycle);
        let total: u64 = rows.iter().sum();
        prop_assume!(total >= u64::from(w.max(w2)) * b);
        let q = crate::order::quota(total, w, b);
        let mut rng = seed;
        let mut m = machine(&rows, w, b, 3, seed, spec);
        let incs = joined(&mut m);
        let stop: Vec<u64> = (0..w as usize).map(|r| ((q as f64) * cuts[r]) as u64).collect();
        let mut before = Vec::new();
        drive(&mut m, &incs, &rows, Some(&stop), &mut rng, &mut before);
        let st = State::from_json(&m.state().to_json()).unwrap();
        let next = st.order.as_ref().and_then(|o| o.next.as_ref());
        prop_assert_eq!(st.version, if next.is_some() { 3 } else { 2 });
        let mut m2 = Machine::resume(splits_of(&rows), Config::new(w2, 1), &st).unwrap();
        let incs2 = joined(&mut m2);
        let mut after = Vec::new();
        drive(&mut m2, &incs2, &rows, None, &mut rng, &mut after);
        prop_assert!(m2.finished());
        let all = rows.iter().sum::<u64>() as usize;
        for e in 0..3usize {
            let mut seen: Vec<(u32, u64)> = before.get(e).into_iter().flatten().flatten().copied()
                .chain(after.get(e).into_iter().flatten().flatten().copied()).collect();
            seen.sort_unstable();
            let n = seen.len();
            seen.dedup();
            prop_assert_eq!(seen.len(), n, "epoch {}: a row came twice", e);
            // Each of the (at most two) deals of an epoch drops under one step of rows.
            let most = 2 * u64::from(w.max(w2)) * b;
            prop_assert!(((all - n) as u64) < most, "epoch {}: {} of {} rows", e, n, all);
            if e >= st.epoch as usize {
                if let Some(v) = after.get(e) {
                    let per: Vec<usize> = v.iter().map(Vec::len).collect();
                    prop_assert!(per.windows(2).all(|p| p[0] == p[1]), "epoch {}: {:?}", e, per);
                }
            }
        }
        let goes_on = w2 == w && m2.resume_note().is_none();
        if goes_on {
            for e in 0..3usize {
                for r in 0..w as usize {
                    let mut s = before.get(e).map(|v| v[r].clone()).unwrap_or_default();
                    s.extend_from_slice(after.get(e).map_or(&[][..], |v| &v[r]));
                    prop_assert_eq!(&s, &stream(&rows, w, b, seed, spec, e as u32, r as u32));
                }
            }
        }
    }
}

/// An epoch a resume over a changed input deals by the ledger (ranges of splits, read two at a
/// time by a feeder) keeps the barrier: a rank done with its share there waits, and is dealt
/// the next epoch (the fixed order's again) when the epoch closes.
#[test]
fn an_epoch_dealt_by_the_ledger_keeps_the_barrier() {
    let (rows, spec, b) = ([300u64, 200, 500], OrderSpec::new(64, 3), 10);
    let m = machine(&rows, 2, b, 2, 7, spec);
    let mut st = m.state();
    let o = st.order.as_mut().unwrap();
    (o.by_ledger, o.ranks, o.rest) = (true, Vec::new(), Vec::new());
    let mut m = Machine::resume(splits_of(&rows), Config::new(2, 1), &st).unwrap();
    let i = joined(&mut m);
    let w = loop {
        match m.request_work(0, i[0], None, 0).unwrap() {
            Work::Lease(l) if l.epoch == 0 => {
                assert!(l.order.is_none(), "dealt by the ledger: split ranges");
                m.ack(0, i[0], l.lease, l.split, l.rows, 0).unwrap();
            }
            w => break w,
        }
    };
    assert_eq!(
        w,
        Work::Wait { retry_ms: 50 },
        "rank 0 went ahead of a ledger epoch"
    );
    while let Work::Lease(l) = m.request_work(1, i[1], None, 0).unwrap() {
        m.ack(1, i[1], l.lease, l.split, l.rows, 0).unwrap();
    }
    assert_eq!(m.epoch(), 1);
    let Work::Lease(l) = m.request_work(0, i[0], None, 0).unwrap() else {
        panic!("no lease in epoch 1")
    };
    assert_eq!(
        (l.epoch, rows_of(&rows, &l)),
        (1, stream(&rows, 2, b, 7, spec, 1, 0))
    );
}
