//! The journal: records round trip, a torn tail or a bad checksum is dropped (never misread),
//! and a machine recovered from a journal equals the one that wrote it, across compactions.

use super::*;
use crate::cluster::Role;
use crate::order::OrderSpec;
use crate::{Config, SplitInfo};

fn splits() -> Vec<SplitInfo> {
    [1u64, 700, 37, 250, 5, 777, 409]
        .iter()
        .enumerate()
        .map(|(i, &r)| SplitInfo::new(i as u32, r))
        .collect()
}

fn cfg(order: bool) -> Config {
    Config {
        epochs: 3,
        seed: 7,
        order: order.then(OrderSpec::default),
        ..Config::new(3, 16)
    }
}

fn reg(rank: u32) -> Registration {
    Registration {
        rank: Some(rank),
        host: format!("node-{rank}"),
        port: 0,
        gpus: vec![],
        role: Role::Worker,
    }
}

fn sample() -> Vec<Entry> {
    vec![
        Entry::Register {
            reg: reg(1),
            consumed: vec![(3, 4, 5)],
            now_ms: 9,
        },
        Entry::Grant {
            rank: 1,
            incarnation: 2,
            host: Some("h".into()),
            known: Some(0),
            lease: 12,
            now_ms: 10,
        },
        Entry::Ack {
            rank: 1,
            incarnation: 2,
            lease: 12,
            split: 3,
            ranges: vec![(0, 64), (100, 3)],
            now_ms: 11,
        },
        Entry::Skipped {
            rank: 1,
            incarnation: 2,
            range: crate::SkippedRange {
                data_epoch: 0,
                path: "part-1.parquet".into(),
                split: 3,
                start: 100,
                end: 200,
                reason: "row group 1: bad page".into(),
            },
            now_ms: 12,
        },
        Entry::Dead {
            rank: 0,
            now_ms: 12,
        },
    ]
}

#[test]
fn records_round_trip() {
    let bytes: Vec<u8> = sample().iter().flat_map(encode).collect();
    let d = decode_all(&bytes);
    assert_eq!(d.entries, sample());
    assert_eq!(d.valid_len, bytes.len() as u64);
    assert!(d.dropped.is_none());
}

/// A crash mid-write leaves any prefix of the last record: every such cut drops exactly that
/// record and keeps the ones before.
#[test]
fn a_torn_tail_is_dropped_never_misread() {
    let e = sample();
    let whole: Vec<u8> = e[..3].iter().flat_map(encode).collect();
    let last = encode(&e[3]);
    for cut in 0..last.len() {
        let mut bytes = whole.clone();
        bytes.extend_from_slice(&last[..cut]);
        let d = decode_all(&bytes);
        assert_eq!(d.entries, e[..3], "cut at {cut}");
        assert_eq!(d.valid_len, whole.len() as u64);
        assert_eq!(d.dropped.is_some(), cut > 0, "cut at {cut}");
    }
}

/// A flipped byte anywhere in a record (header or payload) is caught: the records before it
/// are kept, it and the rest are dropped, naming the byte offset.
#[test]
fn a_checksum_mismatch_ends_the_journal_there() {
    let e = sample();
    let first = encode(&e[0]).len();
    let bytes: Vec<u8> = e.iter().flat_map(encode).collect();
    let second = encode(&e[1]).len();
    for i in first..first + second {
        let mut b = bytes.clone();
        b[i] ^= 0x20;
        let d = decode_all(&b);
        assert_eq!(d.entries, e[..1], "byte {i}");
        let why = d.dropped.unwrap();
        assert!(why.contains(&format!("byte offset {first}")), "{why}");
    }
}

/// What the service does with a journal: each call on the machine, recorded.
struct Svc {
    m: Machine,
    roster: Roster,
    j: Journal,
    now: u64,
    /// Records after which the journal compacts.
    max_records: u64,
    /// Compactions made with a lease outstanding.
    with_leases: u32,
}

impl Svc {
    fn register(&mut self, rank: u32) -> u64 {
        self.now += 1;
        let (_, inc) = register(&mut self.m, &mut self.roster, &reg(rank), &[], self.now).unwrap();
        self.j
            .append(&Entry::Register {
                reg: reg(rank),
                consumed: vec![],
                now_ms: self.now,
            })
            .unwrap();
        inc
    }

    fn work(&mut self, rank: u32, inc: u64, known: u64) -> Work {
        self.now += 1;
        let w = self
            .m
            .request_work_after(rank, inc, None, Some(known), self.now)
            .unwrap();
        if let Work::Lease(l) = &w {
            self.j
                .append(&Entry::Grant {
                    rank,
                    incarnation: inc,
                    host: None,
                    known: Some(known),
                    lease: l.lease,
                    now_ms: self.now,
                })
                .unwrap();
        }
        w
    }

    fn ack(&mut self, rank: u32, inc: u64, l: &crate::Lease, off: u64, rows: u64) {
        self.now += 1;
        // Every other ack comes as a session message's: its records kept and written at once,
        // the compaction asked for in between.
        let session = self.now.is_multiple_of(2);
        if session {
            self.j.hold();
        }
        self.m
            .ack_ranges(rank, inc, l.lease, l.split, &[(off, rows)], self.now)
            .unwrap();
        self.j
            .append(&Entry::Ack {
                rank,
                incarnation: inc,
                lease: l.lease,
                split: l.split,
                ranges: vec![(off, rows)],
                now_ms: self.now,
            })
            .unwrap();
        self.j.sync().unwrap();
        let out = self.m.outstanding();
        let compacted = self
            .j
            .maybe_compact(&self.m, &self.roster, self.now, self.max_records)
            .unwrap();
        if compacted && out > 0 {
            self.with_leases += 1;
        }
        if session {
            self.j.release().unwrap();
            self.j.sync().unwrap();
        }
    }
}

/// Leases outstanding and each rank's incarnation and rows of the epoch (none once finished:
/// there is no epoch then).
/// A rank's `(joined, alive, incarnation, assigned, acked)`.
type RankView = (bool, bool, u64, u64, u64);

fn outstanding_view(m: &Machine) -> (usize, Vec<RankView>) {
    let f = !m.finished();
    (
        m.outstanding(),
        m.ranks()
            .iter()
            .map(|r| {
                let (a, k) = if f { (r.assigned, r.acked) } else { (0, 0) };
                (r.joined, r.alive, r.incarnation, a, k)
            })
            .collect(),
    )
}

/// A job driven for a while (leases, partial acks, a death, compactions at epoch boundaries),
/// stopped at many points: recovering the directory gives the machine that wrote it (state,
/// leases outstanding, ranks), and it goes on to the same end.
#[test]
fn replay_equals_the_machine() {
    for order in [false, true] {
        for stop_at in [1usize, 5, 17, 40, 90, 1000] {
            drive_and_recover(order, stop_at, 1_000_000);
        }
    }
}

/// The journal compacts every few records whatever is outstanding (ranks mid-lease, ranks
/// inside the next epoch under the fixed order): the machine is saved beside the new
/// generation, and recovering at any point gives the machine that wrote it.
#[test]
fn a_journal_compacts_with_leases_outstanding_and_recovers_the_machine() {
    for order in [false, true] {
        let mut with_leases = 0;
        for stop_at in [5usize, 17, 40, 90, 1000] {
            with_leases += drive_and_recover(order, stop_at, 7);
        }
        assert!(
            with_leases > 3,
            "order {order}: {with_leases} compactions with a lease outstanding"
        );
    }
}

/// Drives a job `stop_at` calls (compacting after `max_records` records), recovers its
/// directory and compares; returns the compactions made with a lease outstanding.
fn drive_and_recover(order: bool, stop_at: usize, max_records: u64) -> u32 {
    {
        {
            let d = tempfile::tempdir().unwrap();
            let m = Machine::new(splits(), cfg(order)).unwrap();
            let roster = Roster::new(3, 0, 0);
            let j = Journal::create(d.path(), &m, &roster, 0).unwrap();
            let mut s = Svc {
                m,
                roster,
                j,
                now: 0,
                max_records,
                with_leases: 0,
            };
            let mut incs: Vec<u64> = (0..3).map(|r| s.register(r)).collect();
            let mut known = [0u64; 3];
            let mut steps = 0usize;
            let mut held: Vec<Option<(crate::Lease, u64)>> = vec![None; 3];
            let mut ended = [false; 3];
            while steps < stop_at && !ended.iter().all(|&e| e) {
                steps += 1;
                let r = steps % 3;
                if steps == 11 {
                    // A feeder padded rows it could not read.
                    s.now += 1;
                    let range = crate::SkippedRange {
                        data_epoch: 0,
                        path: "part-1".into(),
                        split: 1,
                        start: 3,
                        end: 9,
                        reason: "corrupt".into(),
                    };
                    s.m.skipped(0, incs[0], range.clone(), s.now).unwrap();
                    s.j.append(&Entry::Skipped {
                        rank: 0,
                        incarnation: incs[0],
                        range,
                        now_ms: s.now,
                    })
                    .unwrap();
                    continue;
                }
                if steps == 23 {
                    // Rank 2 goes silent and is declared dead; it registers again.
                    s.now += 1;
                    s.m.declare_dead(2);
                    s.j.append(&Entry::Dead {
                        rank: 2,
                        now_ms: s.now,
                    })
                    .unwrap();
                    held[2] = None;
                    incs[2] = s.register(2);
                    known[2] = 0;
                    continue;
                }
                match held[r].take() {
                    Some((l, done)) => {
                        let n = (l.rows - done).min(40);
                        s.ack(r as u32, incs[r], &l, done, n);
                        if done + n < l.rows {
                            held[r] = Some((l, done + n));
                        }
                    }
                    None => match s.work(r as u32, incs[r], known[r]) {
                        Work::Lease(l) => {
                            known[r] = l.lease;
                            held[r] = Some((l, 0));
                        }
                        Work::Wait { .. } => {}
                        Work::EndOfFeed { .. } => ended[r] = true,
                    },
                }
            }
            s.j.sync().unwrap();
            let want = (s.m.state(), outstanding_view(&s.m));
            let rec = recover(
                d.path(),
                |st| Machine::resume(splits(), cfg(order), st),
                Roster::new(3, 0, 0),
            )
            .unwrap();
            assert!(rec.dropped.is_none());
            let got = (rec.machine.state(), outstanding_view(&rec.machine));
            assert_eq!(got, want, "order {order}, stopped after {stop_at} calls");
            assert_eq!(rec.roster.registrations(), s.roster.registrations());
            assert_eq!(rec.machine.next_lease_id(), s.m.next_lease_id());
            let saved = d
                .path()
                .join(format!("machine-{}.json", rec.journal.generation()));
            if saved.exists() {
                // From a saved machine the replay gives it whole: queues, leases, counts (less
                // what calls not journaled change: a rank's last stage and when it was heard).
                let whole = |m: &Machine| {
                    let mut v = serde_json::to_value(m).unwrap();
                    for r in v["ranks"].as_array_mut().unwrap() {
                        let r = r.as_object_mut().unwrap();
                        for k in ["last_seen_ms", "stage", "counters", "stalled"] {
                            r.remove(k);
                        }
                    }
                    v
                };
                assert_eq!(whole(&rec.machine), whole(&s.m), "order {order}, {stop_at}");
            }
            s.with_leases
        }
    }
}

/// A torn record at the end of the journal file is dropped by recovery and the file cut there,
/// so the records appended after it are read by the next recovery.
#[test]
fn recovery_cuts_a_torn_tail() {
    let d = tempfile::tempdir().unwrap();
    let m = Machine::new(splits(), cfg(false)).unwrap();
    let roster = Roster::new(3, 0, 0);
    let mut j = Journal::create(d.path(), &m, &roster, 0).unwrap();
    let mut m = m;
    let mut roster = roster;
    register(&mut m, &mut roster, &reg(0), &[], 1).unwrap();
    j.append(&Entry::Register {
        reg: reg(0),
        consumed: vec![],
        now_ms: 1,
    })
    .unwrap();
    j.sync().unwrap();
    let log = d.path().join(format!("journal-{}.log", j.generation()));
    drop(j);
    let torn = encode(&Entry::Dead { rank: 0, now_ms: 2 });
    let mut f = OpenOptions::new().append(true).open(&log).unwrap();
    f.write_all(&torn[..torn.len() - 3]).unwrap();
    drop(f);
    let resume = |st: &State| Machine::resume(splits(), cfg(false), st);
    let rec = recover(d.path(), resume, Roster::new(3, 0, 0)).unwrap();
    assert!(
        rec.dropped.as_deref().unwrap().contains("cut short"),
        "{:?}",
        rec.dropped
    );
    assert!(
        rec.machine.ranks()[0].alive,
        "the torn Dead record was not applied"
    );
    let mut j = rec.journal;
    j.append(&Entry::Dead { rank: 0, now_ms: 3 }).unwrap();
    j.sync().unwrap();
    drop(j);
    let rec = recover(d.path(), resume, Roster::new(3, 0, 0)).unwrap();
    assert!(rec.dropped.is_none());
    assert!(!rec.machine.ranks()[0].alive);
}

/// Records kept between `hold` and `release` reach the file only at `release`, all of them,
/// in order, readable as if appended one by one.
#[test]
fn held_records_are_written_together_at_release() {
    let d = tempfile::tempdir().unwrap();
    let m = Machine::new(splits(), cfg(false)).unwrap();
    let roster = Roster::new(3, 0, 0);
    let mut j = Journal::create(d.path(), &m, &roster, 0).unwrap();
    let log = d.path().join(format!("journal-{}.log", j.generation()));
    let before = std::fs::metadata(&log).unwrap().len();
    j.hold();
    assert!(j.holding());
    for e in sample() {
        j.append(&e).unwrap();
    }
    assert_eq!(
        std::fs::metadata(&log).unwrap().len(),
        before,
        "written before release"
    );
    j.release().unwrap();
    assert!(!j.holding());
    let bytes = std::fs::read(&log).unwrap();
    let d = decode_all(&bytes);
    assert_eq!(d.entries[1..], sample()[..], "after the base record");
}
