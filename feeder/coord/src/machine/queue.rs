//! The queue of row ranges not handed out yet: one per data epoch, with a per-host index for
//! the HDFS-locality preference and a head for ranges that come back (the rest of a cut range,
//! the rows of a dead rank).

use std::collections::{HashMap, VecDeque};

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Range {
    pub(super) data_epoch: u32,
    pub(super) split: u32,
    pub(super) first: u64,
    pub(super) rows: u64,
}

/// Ranges not handed out yet. Entries are taken lazily: a taken entry becomes `None`, and
/// the per-host and re-queue indexes skip such entries when they reach them.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(super) struct Queue {
    pub(super) entries: Vec<Option<Range>>,
    pub(super) front: usize,
    pub(super) requeued: VecDeque<usize>,
    pub(super) by_host: HashMap<u32, VecDeque<usize>>,
    pub(super) live: usize,
}

impl Queue {
    pub(super) fn push_back(&mut self, r: Range, hosts: &[u32]) {
        let i = self.entries.len();
        self.entries.push(Some(r));
        self.live += 1;
        for h in hosts {
            self.by_host.entry(*h).or_default().push_back(i);
        }
    }

    /// Puts a range at the head (remainders of cut ranges, rows of dead ranks).
    pub(super) fn push_head(&mut self, r: Range, hosts: &[u32]) {
        let i = self.entries.len();
        self.entries.push(Some(r));
        self.live += 1;
        self.requeued.push_front(i);
        for h in hosts {
            self.by_host.entry(*h).or_default().push_front(i);
        }
    }

    pub(super) fn take(&mut self, host: Option<u32>) -> Option<Range> {
        if let Some(q) = host.and_then(|h| self.by_host.get_mut(&h)) {
            while let Some(i) = q.pop_front() {
                if let Some(r) = self.entries[i].take() {
                    self.live -= 1;
                    return Some(r);
                }
            }
        }
        while let Some(i) = self.requeued.pop_front() {
            if let Some(r) = self.entries[i].take() {
                self.live -= 1;
                return Some(r);
            }
        }
        while self.front < self.entries.len() {
            let i = self.front;
            self.front += 1;
            if let Some(r) = self.entries[i].take() {
                self.live -= 1;
                return Some(r);
            }
        }
        None
    }

    pub(super) fn drain(&mut self) -> Vec<Range> {
        let out = self.entries.drain(..).flatten().collect();
        *self = Queue::default();
        out
    }
}
