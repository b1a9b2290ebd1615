//! The fixed order of an epoch: which rows each rank receives, and in which order, as a pure
//! function of (plan, seed, epoch, workers, batch size, shuffle buffer, cycle length). No I/O:
//! the coordinator deals [`Segment`]s of it, the feeder reads them, the tests expand them.
//! Design and the comparison with Mosaic Streaming, Grain and tf.data: `docs/arch/order.md`.
//!
//! 1. **Sequence.** The splits of data epoch `e` in their order ([`split_order`]), each in
//!    storage order, one after another: positions `0..T`.
//! 2. **Chunks.** Rank `r` of `W` owns positions `[r Q, (r + 1) Q)`, `Q = floor(T / (W B)) B`
//!    (equal steps); chunk `W` is the rest, fewer than `W B` rows (dropped).
//! 3. **Lanes.** A chunk is cut into at most `cycle` lanes, contiguous runs of the sequence:
//!    the feeder reads every lane sequentially, the lanes in parallel. Order version 2 (the
//!    default) cuts lanes only where a unit starts (a split, or a row group or stripe in one:
//!    [`EpochSeq::with_units`]), each cut at the unit start nearest to an equal share, so that
//!    no unit is read by two lanes (a chunk of fewer units has fewer lanes); version 1 cut
//!    lanes of equal rows, anywhere.
//! 4. **Windows.** With a shuffle buffer of `M` rows the chunk's stream is `K = ceil(L / M)`
//!    windows. Every lane is read from a seeded starting point to its end and then from its
//!    start (one seek per lane and epoch), and window `k` holds the `k`-th of `K` equal slices
//!    of every lane so read: every window mixes every lane, and no lane drifts from its start
//!    to its end across the epoch. Version 2 starts a lane at a seeded unit start of the lane
//!    (so the wrap re-reads nothing); version 1 at a seeded slice boundary. The window's rows
//!    (lanes concatenated in lane order) leave in a seeded permutation.
//!    Without a buffer a window is one block of about [`BLOCK_ROWS`] per lane (in lane order,
//!    not permuted): an interleave of the lanes.
//!
//! A position in a chunk's stream is therefore (window, offset): a stream resumes at any row
//! from `(epoch, chunk, position)`, and the state a rank needs is that triple.

use serde::{Deserialize, Serialize};

use crate::machine::{epoch_seed, mix64, split_order};

/// Rows per lane in a window without a shuffle buffer.
pub const BLOCK_ROWS: u64 = 512;

/// How an epoch's rows are ordered within each rank's share.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct OrderSpec {
    /// Rows a window holds and permutes (the shuffle buffer); 0: no permutation.
    pub buffer: u64,
    /// Lanes: sequential reads that every window mixes (the interleave's cycle length).
    pub cycle: u32,
    /// The order function's version ([`OrderSpec::VERSIONS`]): a state keeps the version it
    /// was dealt with (a state without one is version 1), so a resumed run deals the same
    /// streams whatever build resumes it.
    #[serde(default = "OrderSpec::first_version")]
    pub version: u32,
}

impl Default for OrderSpec {
    fn default() -> Self {
        Self::new(0, 8)
    }
}

impl OrderSpec {
    /// The version new runs deal: lanes and their starting points where units start.
    pub const VERSION: u32 = 2;
    /// The versions this build deals: 1, lanes of equal rows (a unit at a lane boundary is
    /// read by both lanes, and a lane's starting unit twice); 2, lanes cut where units (splits,
    /// row groups, stripes) start (every unit read once per epoch).
    pub const VERSIONS: [u32; 2] = [1, 2];

    /// The current version's order with a shuffle buffer of `buffer` rows and `cycle` lanes.
    pub fn new(buffer: u64, cycle: u32) -> Self {
        Self {
            buffer,
            cycle,
            version: Self::VERSION,
        }
    }

    fn first_version() -> u32 {
        1
    }

    /// Refuses a version this build does not deal, by name.
    pub fn check(&self) -> Result<(), String> {
        if Self::VERSIONS.contains(&self.version) {
            Ok(())
        } else {
            Err(format!(
                "order version {} is unknown to this build, which deals versions {:?}: the \
                 state or lease comes from a newer hydrofeed",
                self.version,
                Self::VERSIONS
            ))
        }
    }
}

/// Positions `[from, to)` of one chunk's stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Segment {
    /// Data epoch of the sequence.
    pub data_epoch: u32,
    /// Workers the sequence was cut for (a resumed run with another count keeps the old cut).
    pub workers: u32,
    /// Chunk (rank) of that cut; `workers` is the rest.
    pub chunk: u32,
    /// First position.
    pub from: u64,
    /// End position (exclusive).
    pub to: u64,
}

impl Segment {
    /// Rows.
    pub fn len(&self) -> u64 {
        self.to - self.from
    }

    /// No rows.
    pub fn is_empty(&self) -> bool {
        self.to <= self.from
    }
}

/// Rows `[first, first + rows)` of a split.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    /// Split id.
    pub split: u32,
    /// First row within the split.
    pub first: u64,
    /// Rows.
    pub rows: u64,
}

/// The rows of a data epoch in sequence order.
#[derive(Debug, Clone)]
pub struct EpochSeq {
    splits: Vec<u32>,
    ends: Vec<u64>,
    /// Every position after the first where a unit starts (a split, or a row group or stripe
    /// inside one): where version 2 of the order cuts and starts lanes.
    cuts: Vec<u64>,
}

impl EpochSeq {
    /// The sequence of `data_epoch`: splits shuffled by (seed, epoch) or in plan order.
    pub fn new(split_rows: &[u64], seed: u64, shuffle: bool, data_epoch: u32) -> Self {
        Self::with_units(split_rows, &[], seed, shuffle, data_epoch)
    }

    /// [`EpochSeq::new`] where split `s` is read in units of `units[s]` rows (a split without
    /// an entry, or with fewer than two, is one unit).
    pub fn with_units(
        split_rows: &[u64],
        units: &[Vec<u64>],
        seed: u64,
        shuffle: bool,
        data_epoch: u32,
    ) -> Self {
        let n = split_rows.len() as u32;
        let order = if shuffle {
            split_order(seed, data_epoch, n)
        } else {
            (0..n).collect()
        };
        let mut splits = Vec::with_capacity(order.len());
        let mut ends = Vec::with_capacity(order.len());
        let mut cuts = Vec::with_capacity(order.len());
        let mut at = 0;
        for s in order {
            let rows = split_rows[s as usize];
            if rows > 0 {
                if at > 0 {
                    cuts.push(at);
                }
                let u = units.get(s as usize).filter(|u| u.len() > 1);
                if let Some(u) = u.filter(|u| u.iter().sum::<u64>() == rows) {
                    let mut x = at;
                    for &r in &u[..u.len() - 1] {
                        x += r;
                        if r > 0 {
                            cuts.push(x);
                        }
                    }
                }
                at += rows;
                splits.push(s);
                ends.push(at);
            }
        }
        cuts.dedup();
        Self { splits, ends, cuts }
    }

    /// Rows in the sequence.
    pub fn total(&self) -> u64 {
        self.ends.last().copied().unwrap_or(0)
    }

    /// The positions in `(a, b)` where a unit starts.
    pub fn starts_within(&self, a: u64, b: u64) -> Vec<u64> {
        let i = self.cuts.partition_point(|&e| e <= a);
        self.cuts[i..]
            .iter()
            .copied()
            .take_while(|&e| e < b)
            .collect()
    }

    /// Appends the split spans of positions `[a, b)` to `out`.
    pub fn spans(&self, a: u64, b: u64, out: &mut Vec<Span>) {
        let mut at = a;
        let mut i = self.ends.partition_point(|&e| e <= a);
        while at < b && i < self.splits.len() {
            let start = if i == 0 { 0 } else { self.ends[i - 1] };
            let end = self.ends[i].min(b);
            out.push(Span {
                split: self.splits[i],
                first: at - start,
                rows: end - at,
            });
            at = end;
            i += 1;
        }
    }
}

/// Rows per rank of an epoch of `total` rows (a multiple of `batch`).
pub fn quota(total: u64, workers: u32, batch: u64) -> u64 {
    total / (u64::from(workers) * batch) * batch
}

/// Sequence positions `[a, b)` of a chunk.
pub fn chunk_range(total: u64, workers: u32, batch: u64, chunk: u32) -> (u64, u64) {
    let q = quota(total, workers, batch);
    if chunk < workers {
        (u64::from(chunk) * q, u64::from(chunk + 1) * q)
    } else {
        (u64::from(workers) * q, total)
    }
}

/// Cuts the rows of `parts` (in order) into `workers` shares of `quota` rows and a rest:
/// how a resumed epoch deals what is left when the worker count changed (or the ranks
/// stopped at different steps). Returns (shares, rest, quota).
pub fn recut(
    parts: &[Segment],
    workers: u32,
    batch: u64,
) -> (Vec<Vec<Segment>>, Vec<Segment>, u64) {
    let total: u64 = parts.iter().map(Segment::len).sum();
    let q = quota(total, workers, batch);
    let mut shares = vec![Vec::new(); workers as usize];
    let mut rest = Vec::new();
    let (mut rank, mut room) = (0usize, q);
    for p in parts {
        let mut p = *p;
        while !p.is_empty() {
            if rank >= shares.len() || q == 0 {
                rest.push(p);
                break;
            }
            let take = p.len().min(room);
            if take > 0 {
                shares[rank].push(Segment {
                    to: p.from + take,
                    ..p
                });
                p.from += take;
                room -= take;
            }
            if room == 0 {
                rank += 1;
                room = q;
            }
        }
    }
    (shares, rest, q)
}

/// The stream of one chunk: its lanes, windows and permutations.
#[derive(Debug, Clone)]
pub struct ChunkStream {
    start: u64,
    lanes: Vec<(u64, u64)>,
    windows: u64,
    /// Where each lane starts reading: version 1, a slice index (window units); version 2,
    /// rows from the lane's start (a unit start).
    shifts: Vec<u64>,
    starts: Vec<u64>,
    seed: u64,
    permute: bool,
    version: u32,
}

/// The rows of one window, lane by lane.
#[derive(Debug, Clone)]
pub struct Window {
    /// Index of the window in its chunk.
    pub index: u64,
    /// Stream position of its first row.
    pub start: u64,
    /// Rows.
    pub rows: u64,
    /// Split spans of every lane, in read order; the window's rows are these, lane after
    /// lane, before the permutation.
    pub lanes: Vec<Vec<Span>>,
}

impl Window {
    /// Every (split, row) of the window, lane after lane (before the permutation): it costs
    /// memory per row.
    pub fn rows(&self) -> Vec<(u32, u64)> {
        self.lanes
            .iter()
            .flatten()
            .flat_map(|p| (p.first..p.first + p.rows).map(move |r| (p.split, r)))
            .collect()
    }
}

/// Chunk-relative lane bounds: version 1, `cycle` lanes of equal rows; version 2, at most
/// `cycle` lanes cut at the unit starts `cuts` (chunk-relative, in `(0, len)`), each at the
/// one nearest to an equal share.
fn cut_lanes(len: u64, cycle: u64, version: u32, cuts: &[u64]) -> Vec<(u64, u64)> {
    let mut bounds: Vec<u64> = if version == 1 {
        (1..cycle).map(|j| len * j / cycle).collect()
    } else {
        (1..cycle)
            .filter_map(|j| {
                let t = len * j / cycle;
                let i = cuts.partition_point(|&c| c < t);
                let below = i.checked_sub(1).map(|i| cuts[i]);
                let above = cuts.get(i).copied();
                match (below, above) {
                    (Some(b), Some(a)) => Some(if t - b <= a - t { b } else { a }),
                    (b, a) => b.or(a),
                }
            })
            .collect()
    };
    bounds.dedup();
    let mut lanes = Vec::with_capacity(bounds.len() + 1);
    let mut at = 0;
    for b in bounds.into_iter().chain([len]) {
        lanes.push((at, b));
        at = b;
    }
    lanes
}

impl ChunkStream {
    /// The stream of `chunk` of the sequence cut for `workers` ranks of `batch` rows.
    pub fn new(
        seq: &EpochSeq,
        spec: OrderSpec,
        seed: u64,
        data_epoch: u32,
        workers: u32,
        batch: u64,
        chunk: u32,
    ) -> Self {
        let (a, b) = chunk_range(seq.total(), workers, batch, chunk);
        let len = b - a;
        let cycle = u64::from(spec.cycle.max(1)).min(len.max(1));
        let cuts: Vec<u64> = seq.starts_within(a, b).iter().map(|&c| c - a).collect();
        let lanes = cut_lanes(len, cycle, spec.version, &cuts);
        let permute = spec.buffer > 0;
        let target = if permute {
            spec.buffer
        } else {
            BLOCK_ROWS * cycle
        };
        let windows = len.div_ceil(target).max(1);
        let seed = mix64(
            epoch_seed(seed, data_epoch)
                ^ mix64(u64::from(workers) << 32 | u64::from(chunk))
                ^ 0x6f72_6465_7200_0000,
        );
        let shifts = lanes
            .iter()
            .enumerate()
            .map(|(j, &(la, lb))| {
                let r = mix64(seed ^ mix64(j as u64));
                match (permute, spec.version) {
                    (false, _) => 0,
                    (true, 1) => r % windows,
                    (true, _) => {
                        // A unit start of the lane, its own start included.
                        let i0 = cuts.partition_point(|&c| c <= la);
                        let i1 = cuts.partition_point(|&c| c < lb);
                        match r % (1 + (i1 - i0) as u64) {
                            0 => 0,
                            i => cuts[i0 + i as usize - 1] - la,
                        }
                    }
                }
            })
            .collect();
        let mut s = Self {
            start: a,
            lanes,
            windows,
            shifts,
            starts: Vec::new(),
            seed,
            permute,
            version: spec.version,
        };
        let mut starts = Vec::with_capacity(windows as usize + 1);
        let mut at = 0;
        starts.push(0);
        for k in 0..windows {
            at += (0..s.lanes.len())
                .map(|j| s.slice(j, k).iter().map(|p| p.1).sum::<u64>())
                .sum::<u64>();
            starts.push(at);
        }
        s.starts = starts;
        s
    }

    /// Rows in the stream.
    pub fn len(&self) -> u64 {
        self.starts.last().copied().unwrap_or(0)
    }

    /// No rows.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether windows leave in a permutation (a shuffle buffer), not as read.
    pub fn permutes(&self) -> bool {
        self.permute
    }

    /// Windows in the stream.
    pub fn windows(&self) -> u64 {
        self.windows
    }

    /// The window holding stream position `pos` (`pos < len`).
    pub fn window_of(&self, pos: u64) -> u64 {
        (self.starts.partition_point(|&s| s <= pos) - 1) as u64
    }

    /// The (chunk-relative first row, rows) parts of lane `j` in window `k`, in read order:
    /// two where the lane wraps from its end to its start inside the window.
    fn slice(&self, j: usize, k: u64) -> [(u64, u64); 2] {
        let (a, b) = self.lanes[j];
        let l = b - a;
        if self.version == 1 {
            let t = (k + self.shifts[j]) % self.windows;
            let (x, y) = (l * t / self.windows, l * (t + 1) / self.windows);
            return [(a + x, y - x), (a, 0)];
        }
        // Rows [x, y) of the lane read from its starting point, wrapping at its end.
        let (x, y) = (l * k / self.windows, l * (k + 1) / self.windows);
        let (x, y) = (x + self.shifts[j], y + self.shifts[j]);
        if y <= l {
            [(a + x, y - x), (a, 0)]
        } else if x >= l {
            [(a + x - l, y - x), (a, 0)]
        } else {
            [(a + x, l - x), (a, y - l)]
        }
    }

    /// Window `k`: its position and the split spans of every lane.
    pub fn window(&self, seq: &EpochSeq, k: u64) -> Window {
        let lanes = (0..self.lanes.len())
            .map(|j| {
                let mut v = Vec::new();
                for (a, n) in self.slice(j, k) {
                    if n > 0 {
                        seq.spans(self.start + a, self.start + a + n, &mut v);
                    }
                }
                v
            })
            .collect();
        Window {
            index: k,
            start: self.starts[k as usize],
            rows: self.starts[k as usize + 1] - self.starts[k as usize],
            lanes,
        }
    }

    /// The order in which window `k`'s rows leave: `perm[i]` is the index (lane after lane)
    /// of the `i`-th row out. The identity without a shuffle buffer.
    pub fn permutation(&self, k: u64) -> Vec<u32> {
        let n = self.starts[k as usize + 1] - self.starts[k as usize];
        let mut v: Vec<u32> = (0..n as u32).collect();
        if self.permute {
            let mut state = mix64(self.seed ^ mix64(k ^ 0x7065_726d));
            for i in (1..v.len()).rev() {
                state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
                let j = ((u128::from(mix64(state)) * (i as u128 + 1)) >> 64) as usize;
                v.swap(i, j);
            }
        }
        v
    }
}

/// Every (split, row) of a segment's stream positions, in stream order: for tests and the
/// quality benchmark (it costs memory per row).
pub fn expand(
    split_rows: &[u64],
    units: &[Vec<u64>],
    seed: u64,
    shuffle: bool,
    spec: OrderSpec,
    batch: u64,
    seg: &Segment,
) -> Vec<(u32, u64)> {
    let seq = EpochSeq::with_units(split_rows, units, seed, shuffle, seg.data_epoch);
    let cs = ChunkStream::new(
        &seq,
        spec,
        seed,
        seg.data_epoch,
        seg.workers,
        batch,
        seg.chunk,
    );
    let mut out = Vec::with_capacity(seg.len() as usize);
    if seg.is_empty() {
        return out;
    }
    for k in cs.window_of(seg.from)..=cs.window_of(seg.to - 1) {
        let w = cs.window(&seq, k);
        let rows = w.rows();
        for (i, &j) in cs.permutation(k).iter().enumerate() {
            let pos = w.start + i as u64;
            if pos >= seg.from && pos < seg.to {
                out.push(rows[j as usize]);
            }
        }
    }
    out
}

/// Mixing measures of one stream of row ids (`id` = the row's position in storage order).
#[derive(Debug, Default, Clone, Copy)]
pub struct Quality {
    /// Fraction of storage neighbours (`id`, `id + 1`), both in the stream, that are stream
    /// neighbours too.
    pub adjacent: f64,
    /// Mean distinct files per batch.
    pub files_per_batch: f64,
    /// Pearson correlation of stream position and id.
    pub corr: f64,
}

/// The [`Quality`] of a stream of ids cut into batches of `batch`; `file_of` names an id's file.
pub fn quality(ids: &[u64], file_of: &dyn Fn(u64) -> u32, batch: usize) -> Quality {
    let mut pos = vec![u32::MAX; ids.iter().max().map_or(0, |&m| m as usize + 1)];
    for (i, &x) in ids.iter().enumerate() {
        pos[x as usize] = i as u32;
    }
    let (mut pairs, mut adj) = (0u64, 0u64);
    for x in 0..pos.len().saturating_sub(1) {
        let (i, j) = (pos[x], pos[x + 1]);
        if i != u32::MAX && j != u32::MAX {
            pairs += 1;
            adj += u64::from(i.abs_diff(j) == 1);
        }
    }
    let files: Vec<f64> = ids
        .chunks(batch.max(1))
        .map(|c| {
            let mut f: Vec<u32> = c.iter().map(|&x| file_of(x)).collect();
            f.sort_unstable();
            f.dedup();
            f.len() as f64
        })
        .collect();
    let n = ids.len() as f64;
    let (mx, my) = (
        (n - 1.0) / 2.0,
        ids.iter().map(|&x| x as f64).sum::<f64>() / n,
    );
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (i, &y) in ids.iter().enumerate() {
        let (dx, dy) = (i as f64 - mx, y as f64 - my);
        sxy += dx * dy;
        sxx += dx * dx;
        syy += dy * dy;
    }
    Quality {
        adjacent: adj as f64 / pairs.max(1) as f64,
        files_per_batch: files.iter().sum::<f64>() / files.len().max(1) as f64,
        corr: if sxx * syy > 0.0 {
            sxy / (sxx * syy).sqrt()
        } else {
            0.0
        },
    }
}

#[cfg(test)]
#[path = "order_tests.rs"]
mod tests;
