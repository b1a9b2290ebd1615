//! proptest: random sequences of reserve/commit/commit_len/abort, next and out-of-order slot
//! releases, checked against a model of the framing (64-byte records, padding at the end of
//! the ring, in-order reclamation). Reservations use a zero timeout, so the model also decides
//! exactly when the ring is full.
#![cfg(not(loom))]

use hydrofeed_ipc::layout::record_size;
use hydrofeed_ipc::{NextError, ReserveError, RingConfig, Slot};
use proptest::prelude::*;
use std::collections::VecDeque;
use std::time::Duration;

#[derive(Debug, Clone)]
enum Op {
    /// Reserve `len`; then 0: commit, 1: commit_len(len / 2), 2: abort.
    Send(usize, u8),
    /// `next()` and hold the slot.
    Take,
    /// Drop the held slot at this index (modulo the count).
    Release(usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0usize..1200, 0u8..3).prop_map(|(l, a)| Op::Send(l, a)),
        3 => Just(Op::Take),
        3 => any::<usize>().prop_map(Op::Release),
    ]
}

#[derive(Debug, Clone, Copy)]
enum Rec {
    Pad { end: u64 },
    Data { end: u64, len: usize, tag: u8 },
}

#[derive(Default)]
struct Model {
    cap: u64,
    max_frame: usize,
    head: u64,
    tail: u64,
    /// Published, not yet read.
    published: VecDeque<Rec>,
    /// Read, not yet reclaimed: (start, end, released).
    outstanding: VecDeque<(u64, u64, bool)>,
    read: u64,
}

impl Model {
    fn reserve(&mut self, len: usize) -> Result<u64, ReserveError> {
        if len > self.max_frame {
            return Err(ReserveError::TooLarge);
        }
        let rec = record_size(len) as u64;
        let off = self.head % self.cap;
        if self.cap - off < rec {
            let pad = self.cap - off;
            if self.head + pad - self.tail > self.cap {
                return Err(ReserveError::Timeout);
            }
            self.head += pad;
            self.published.push_back(Rec::Pad { end: self.head });
        }
        if self.head + rec - self.tail > self.cap {
            return Err(ReserveError::Timeout);
        }
        Ok(self.head)
    }

    fn commit(&mut self, len: usize, tag: u8) {
        self.head += record_size(len) as u64;
        self.published.push_back(Rec::Data {
            end: self.head,
            len,
            tag,
        });
    }

    fn take(&mut self) -> Option<(usize, u8)> {
        while let Some(r) = self.published.pop_front() {
            let start = self.read;
            match r {
                Rec::Pad { end } => {
                    self.read = end;
                    if self.outstanding.is_empty() {
                        self.tail = end;
                    } else {
                        self.outstanding.push_back((start, end, true));
                    }
                }
                Rec::Data { end, len, tag } => {
                    self.read = end;
                    self.outstanding.push_back((start, end, false));
                    return Some((len, tag));
                }
            }
        }
        None
    }

    fn release(&mut self, start: u64) {
        let i = self.outstanding.iter().position(|s| s.0 == start).unwrap();
        self.outstanding[i].2 = true;
        while let Some(&(_, end, true)) = self.outstanding.front() {
            self.tail = end;
            self.outstanding.pop_front();
        }
    }
}

fn pattern(tag: u8, i: usize) -> u8 {
    tag.wrapping_add((i % 251) as u8)
}

fn run(ops: Vec<Op>, memfd: bool, capacity: usize) -> Result<(), TestCaseError> {
    let cfg = RingConfig {
        capacity,
        max_frame: Some(1000),
    };
    let (mut p, mut c) = if memfd {
        hydrofeed_ipc::memfd_pair(cfg).unwrap()
    } else {
        hydrofeed_ipc::heap_pair(cfg).unwrap()
    };
    let mut m = Model {
        cap: capacity as u64,
        max_frame: 1000,
        ..Model::default()
    };
    let mut held: Vec<(Slot, u64, u8)> = Vec::new();
    let mut tag = 0u8;
    for op in ops {
        match op {
            Op::Send(len, action) => {
                let want = m.reserve(len);
                let got = p.reserve(len, Duration::ZERO);
                prop_assert_eq!(got.as_ref().err().copied(), want.err(), "reserve({})", len);
                if let Ok(mut r) = got {
                    prop_assert_eq!(r.as_ptr() as usize % 64, 0);
                    prop_assert_eq!(r.len(), len);
                    tag = tag.wrapping_add(1);
                    for (i, b) in r.iter_mut().enumerate() {
                        *b = pattern(tag, i);
                    }
                    match action {
                        0 => {
                            r.commit();
                            m.commit(len, tag);
                        }
                        1 => {
                            r.commit_len(len / 2);
                            m.commit(len / 2, tag);
                        }
                        _ => {} // dropped without a commit: aborted
                    }
                }
            }
            Op::Take => {
                let start = m.read;
                let want = m.take();
                let got = c.next(Duration::ZERO);
                match (want, got) {
                    (None, Err(NextError::Timeout)) => {}
                    (Some((len, tag)), Ok(Some(l))) => {
                        prop_assert_eq!(l.len(), len);
                        prop_assert_eq!(l.as_ptr() as usize % 64, 0);
                        for (i, b) in l.iter().enumerate() {
                            prop_assert_eq!(*b, pattern(tag, i), "byte {} of frame {}", i, tag);
                        }
                        // The slot's position: after any padding that `take` skipped.
                        let slot_start = m.outstanding.back().unwrap().0;
                        let _ = start;
                        held.push((l, slot_start, tag));
                    }
                    (w, g) => prop_assert!(false, "next: model {:?}, ring {:?}", w, g),
                }
            }
            Op::Release(i) => {
                if !held.is_empty() {
                    let (l, start, tag) = held.swap_remove(i % held.len());
                    for (i, b) in l.iter().enumerate() {
                        prop_assert_eq!(*b, pattern(tag, i), "held frame {} changed", tag);
                    }
                    drop(l);
                    m.release(start);
                }
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn framing_matches_model_heap(ops in proptest::collection::vec(op(), 1..120)) {
        run(ops, false, 4096)?;
    }

    #[test]
    fn framing_matches_model_memfd(ops in proptest::collection::vec(op(), 1..120)) {
        run(ops, true, 8192)?;
    }
}
