//! The lanes of a segment read as chains: each lane reads its part of one group of windows after
//! another as a task of its own on the decode pool, and goes on to the next group as soon as
//! that group is admitted, without waiting for the other lanes to finish the current one.
//!
//! Rejected: every group read by one `par_iter` over the lanes (a barrier a group). With eight
//! lanes on two decode threads the threads waited for the slowest lane at every group's end,
//! and the fixed order ran 10-15% below the dynamic one on this machine.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use arrow_array::RecordBatch;
use hydrofeed_coord::order::Window;

use super::{Lane, StreamCtx};
use crate::Result;

/// One lane's rows of every window of a group, window by window.
type LaneParts = Vec<Vec<RecordBatch>>;

/// The windows of a group, each with its rows (lanes in order).
pub(super) type GroupRows = Vec<(Window, Vec<RecordBatch>)>;

/// A group of windows admitted to be read.
struct Group {
    windows: Arc<Vec<Window>>,
    /// Rows a lane's reader decodes at a time in this group.
    batch_rows: usize,
    parts: Vec<Option<Result<LaneParts>>>,
    /// Lanes still reading it.
    left: usize,
}

#[derive(Default)]
struct State {
    /// Groups admitted and not taken yet, oldest first; `groups[0]` is group `base`.
    groups: VecDeque<Group>,
    base: u64,
    /// Each lane's next group.
    next: Vec<u64>,
    /// Whether a task of the lane is on the pool.
    running: Vec<bool>,
    stop: bool,
}

/// The lanes of a segment and the groups admitted for them (see the module doc).
pub(super) struct Chains<'c, 'a> {
    ctx: &'c StreamCtx<'a>,
    lanes: Vec<Mutex<Lane<'a>>>,
    st: Mutex<State>,
    changed: Condvar,
}

impl<'c, 'a> Chains<'c, 'a> {
    /// `lanes` lanes, none reading yet.
    pub(super) fn new(ctx: &'c StreamCtx<'a>, lanes: usize) -> Self {
        Self {
            ctx,
            lanes: (0..lanes).map(|_| Mutex::new(Lane::default())).collect(),
            st: Mutex::new(State {
                next: vec![0; lanes],
                running: vec![false; lanes],
                ..State::default()
            }),
            changed: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.st.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Groups admitted and not taken.
    pub(super) fn pending(&self) -> usize {
        self.lock().groups.len()
    }

    /// Admits the next group; `spawn(j)` is called for each lane that has no task on the pool
    /// (it must run [`Chains::run_lane`]`(j)`).
    pub(super) fn admit(&self, windows: Vec<Window>, batch_rows: usize, spawn: impl Fn(usize)) {
        let idle: Vec<usize> = {
            let mut st = self.lock();
            let n = self.lanes.len();
            st.groups.push_back(Group {
                windows: Arc::new(windows),
                batch_rows,
                parts: (0..n).map(|_| None).collect(),
                left: n,
            });
            let idle: Vec<usize> = (0..n).filter(|&j| !st.running[j]).collect();
            for &j in &idle {
                st.running[j] = true;
            }
            idle
        };
        for j in idle {
            spawn(j);
        }
    }

    /// Lane `j`'s task: reads its part of each admitted group in turn, until none is left.
    pub(super) fn run_lane(&self, j: usize) {
        loop {
            let (g, windows, batch_rows) = {
                let mut st = self.lock();
                let g = st.next[j];
                let at = (g - st.base) as usize;
                if st.stop || at >= st.groups.len() {
                    st.running[j] = false;
                    return;
                }
                let grp = &st.groups[at];
                (g, grp.windows.clone(), grp.batch_rows)
            };
            let got = {
                let mut lane = self.lanes[j].lock().unwrap_or_else(|p| p.into_inner());
                lane.batch_rows = batch_rows;
                windows
                    .iter()
                    .map(|w| {
                        let mut v = Vec::new();
                        lane.read(self.ctx, &w.lanes[j], &mut v).map(|_| v)
                    })
                    .collect::<Result<LaneParts>>()
            };
            // Before the part is recorded, so that `take` gets the windows without a copy.
            drop(windows);
            let mut st = self.lock();
            let failed = got.is_err();
            let at = (g - st.base) as usize;
            let grp = &mut st.groups[at];
            grp.parts[j] = Some(got);
            grp.left -= 1;
            st.next[j] = g + 1;
            if failed {
                st.stop = true;
                st.running[j] = false;
            }
            self.changed.notify_all();
            if failed {
                return;
            }
        }
    }

    /// Waits for the oldest admitted group to be read and takes it: each window with its rows
    /// (lanes in order); `None` when no group is admitted.
    pub(super) fn take(&self) -> Option<Result<GroupRows>> {
        let mut st = self.lock();
        loop {
            let front = st.groups.front()?;
            if front.left == 0 {
                break;
            }
            if st.stop {
                // A lane failed (maybe in a later group): lanes stopped, this group may never
                // be read whole. Its error is the stream's.
                let failed = st.groups.iter_mut().flat_map(|g| g.parts.iter_mut());
                for part in failed {
                    if let Some(Err(_)) = part {
                        if let Some(Err(e)) = part.take() {
                            return Some(Err(e));
                        }
                    }
                }
            }
            st = self.changed.wait(st).unwrap_or_else(|p| p.into_inner());
        }
        let grp = st.groups.pop_front()?;
        st.base += 1;
        drop(st);
        // (Each lane let go of them before recording its part.)
        let windows = Arc::try_unwrap(grp.windows).unwrap_or_else(|w| (*w).clone());
        let mut rows: Vec<Vec<RecordBatch>> = vec![Vec::new(); windows.len()];
        for part in grp.parts {
            match part {
                Some(Ok(of_lane)) => {
                    for (i, v) in of_lane.into_iter().enumerate() {
                        rows[i].extend(v);
                    }
                }
                Some(Err(e)) => return Some(Err(e)),
                None => unreachable!("a group is taken once every lane read it"),
            }
        }
        Some(Ok(windows.into_iter().zip(rows).collect()))
    }

    /// No lane starts another group; the ones reading finish theirs.
    pub(super) fn stop(&self) {
        self.lock().stop = true;
        self.changed.notify_all();
    }

    /// Closes every lane's reader (once no task runs).
    pub(super) fn close(self) {
        for lane in self.lanes {
            lane.into_inner()
                .unwrap_or_else(|p| p.into_inner())
                .close(self.ctx);
        }
    }
}
