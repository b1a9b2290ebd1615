//! The values of a fixed-size list's flat pages ([`super::parquet_fixed`]), decoded here
//! rather than by the `parquet` crate's column reader, for the encodings writers use for
//! numbers: PLAIN, dictionary (PLAIN_DICTIONARY / RLE_DICTIONARY) and BYTE_STREAM_SPLIT.
//!
//! Why: that reader unpacks a page's dictionary indices into an index buffer, then gathers
//! them from the dictionary in a second pass, into a value buffer it first fills with zeros:
//! three passes over memory where one does, and most of the decode time of a dictionary-encoded
//! image column besides decompression. Here each bit-packed group of eight indices is unpacked
//! (one function per bit width, the width a constant) and gathered in the same step, straight
//! into the uninitialised buffer that becomes the Arrow array. Where the CPU has AVX-512 VBMI,
//! indices of up to 8 bits into 4-byte values go another way ([`Indices::read_planes`]): a
//! chunk's indices expanded to bytes, then looked up 64 at a time ([`super::parquet_simd`]).

use std::convert::Infallible;
use std::mem::MaybeUninit;

use bytes::Bytes;
use parquet::basic::Encoding;
use parquet::column::page::{Page, PageReader};

use super::parquet_simd::{self, Planes};

/// A number of a fixed-size list's items, as Parquet stores it (little-endian).
pub(crate) trait Native: Copy + Send + 'static {
    const SIZE: usize;
    /// The value of `b` (`SIZE` bytes).
    fn from_le(b: &[u8]) -> Self;
    /// Writes the value's `SIZE` bytes into `out`.
    fn to_le(self, out: &mut [u8]);
}

macro_rules! native {
    ($($t:ty),*) => {$(
        impl Native for $t {
            const SIZE: usize = std::mem::size_of::<$t>();
            fn from_le(b: &[u8]) -> Self {
                <$t>::from_le_bytes(b.try_into().unwrap_or_default())
            }
            fn to_le(self, out: &mut [u8]) {
                out.copy_from_slice(&self.to_le_bytes());
            }
        }
    )*};
}
native!(f32, f64, i32, i64);

/// Whether a column chunk holding `encoding` can be read here (RLE: the levels).
pub(crate) fn supported(encoding: Encoding) -> bool {
    matches!(
        encoding,
        Encoding::PLAIN
            | Encoding::PLAIN_DICTIONARY
            | Encoding::RLE_DICTIONARY
            | Encoding::RLE
            | Encoding::BYTE_STREAM_SPLIT
    )
}

/// Unpacks and gathers whole groups of eight dictionary indices: `src` holds the groups
/// (`bit width` bytes each) and at least 8 bytes more; `out.len()` is a multiple of 8. On an
/// index past the dictionary, returns it.
type Gather<T> = fn(&[u8], &Dict<T>, &mut [MaybeUninit<T>]) -> Result<(), u32>;

/// Bytes a group of 8 indices and the 8 bytes after it span, at the widest (32 bits).
const GROUP: usize = 40;

/// Values [`Indices::read_planes`] expands the indices of at a time (on the stack, a byte
/// each).
const CHUNK: usize = 2048;

/// Widths up to this many bits gather from a dictionary padded to `1 << bits` values, so that
/// no index can reach past it (dictionary pages are far smaller than a million values).
const PADDED_BITS: usize = 20;

/// A column chunk's dictionary.
struct Dict<T> {
    /// Its values, then copies of the first one up to `1 << bits` values for the current
    /// page's indices of `bits` bits.
    values: Vec<T>,
    /// How many values the dictionary page holds.
    len: usize,
    /// Its values as byte planes, for [`parquet_simd::lookup`] (built for the first page
    /// of indices of 1 to 8 bits, where that lookup runs here).
    planes: Option<Planes>,
}

impl<T: Native> Dict<T> {
    /// The value of index `i`, if the dictionary page holds one (not a padding copy).
    fn get(&self, i: u32) -> Option<T> {
        self.values[..self.len].get(i as usize).copied()
    }

    /// Pads the values for indices of `bits` bits (see [`PADDED_BITS`]), and makes their
    /// planes for [`Indices::read_planes`] if those indices have 1 to 8 bits.
    fn pad(&mut self, bits: usize) {
        if (1..=8).contains(&bits) && self.planes.is_none() {
            self.planes = Planes::new(&self.values[..self.len]);
        }
        if let Some(&first) = self.values.first() {
            if bits <= PADDED_BITS && self.values.len() < 1 << bits {
                self.values.resize(1 << bits, first);
            }
        }
    }
}

/// The values of one column chunk's flat pages (levels checked and cut off).
pub(crate) struct Values<T: Native> {
    pages: Box<dyn PageReader>,
    dict: Dict<T>,
    page: Option<PageValues<T>>,
}

/// What is left of the current data page.
struct PageValues<T> {
    body: Body<T>,
    left: usize,
}

enum Body<T> {
    Plain {
        buf: Bytes,
        at: usize,
    },
    /// BYTE_STREAM_SPLIT: byte `k` of value `i` at `k * n + i`.
    Split {
        buf: Bytes,
        n: usize,
        at: usize,
    },
    Dict(Indices<T>),
}

/// Parquet's RLE / bit-packed hybrid of dictionary indices, where a read stopped.
struct Indices<T> {
    buf: Bytes,
    /// The next run's header.
    at: usize,
    bits: usize,
    /// The gather of this width (`None`: wider than [`PADDED_BITS`]).
    gather: Option<Gather<T>>,
    /// Values left in the current RLE run, and its index.
    repeat: usize,
    index: u32,
    /// Values left in the current bit-packed run; where its next group starts, and how many
    /// of that group's values were taken already.
    packed: usize,
    group: usize,
    in_group: usize,
}

fn cut(what: &str) -> String {
    format!("a data page's {what} cut short")
}

/// The header of a run of Parquet's RLE / bit-packed hybrid at `at` (a ULEB128 varint),
/// for dictionary indices and levels alike; `what` names the data in errors.
#[inline]
pub(crate) fn varint(buf: &[u8], at: &mut usize, what: &str) -> Result<u64, String> {
    // Most run headers are one byte.
    if let Some(&b) = buf.get(*at).filter(|&&b| b & 0x80 == 0) {
        *at += 1;
        return Ok(u64::from(b));
    }
    let mut v: u64 = 0;
    for shift in (0..64).step_by(7) {
        let b = *buf.get(*at).ok_or_else(|| format!("{what} cut short"))?;
        *at += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Ok(v);
        }
    }
    Err(format!("a run header of {what} is not a varint"))
}

/// The value of an RLE run: its little-endian bytes (at most four are read: a run value is
/// at most 32 bits). One load for each width, not a loop over the bytes.
pub(crate) fn run_value(bytes: &[u8]) -> u32 {
    match *bytes {
        [] => 0,
        [a] => u32::from(a),
        [a, b] => u32::from(u16::from_le_bytes([a, b])),
        [a, b, c] => u32::from_le_bytes([a, b, c, 0]),
        [a, b, c, d, ..] => u32::from_le_bytes([a, b, c, d]),
    }
}

fn le64(s: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&s[at..at + 8]);
    u64::from_le_bytes(w)
}

/// The eight `BW`-bit values of the group at the start of `s` (which holds `BW + 8` bytes):
/// from one 64-bit load up to 8 bits, one 128-bit value up to 16.
#[inline(always)]
fn unpack<const BW: usize>(s: &[u8]) -> [u32; 8] {
    let mut idx = [0u32; 8];
    if BW == 0 {
        return idx;
    }
    let mask = (1u64 << BW) - 1;
    if BW <= 8 {
        let w = le64(s, 0);
        for (i, v) in idx.iter_mut().enumerate() {
            *v = ((w >> (i * BW)) & mask) as u32;
        }
    } else if BW <= 16 {
        let w = u128::from(le64(s, 0)) | (u128::from(le64(s, 8)) << 64);
        for (i, v) in idx.iter_mut().enumerate() {
            *v = ((w >> (i * BW)) as u64 & mask) as u32;
        }
    } else {
        for (i, v) in idx.iter_mut().enumerate() {
            let bit = i * BW;
            *v = ((le64(s, bit / 8) >> (bit % 8)) & mask) as u32;
        }
    }
    idx
}

fn gather<T: Native, const BW: usize>(
    src: &[u8],
    dict: &Dict<T>,
    out: &mut [MaybeUninit<T>],
) -> Result<(), u32> {
    // Padded: every index of BW bits is in bounds (no check per value).
    let values = &dict.values[..1 << BW];
    for (g, o) in out.chunks_exact_mut(8).enumerate() {
        let idx = unpack::<BW>(&src[g * BW..g * BW + BW + 8]);
        // The bitwise or of the indices bounds their maximum without a branch per index.
        if idx.iter().fold(0, |m, &i| m | i) as usize >= dict.len {
            let max = idx.iter().fold(0, |m, &i| m.max(i));
            if max as usize >= dict.len {
                return Err(max);
            }
        }
        for (slot, &i) in o.iter_mut().zip(&idx) {
            slot.write(values[i as usize]);
        }
    }
    Ok(())
}

/// The values of indices `first..first + out.len()` of `src`, each unpacked and checked on
/// its own, the width read at run time: [`gather`] for widths past [`PADDED_BITS`], and
/// the values of a group begun or cut short.
fn gather_wide<T: Native>(
    bits: usize,
    src: &[u8],
    first: usize,
    dict: &Dict<T>,
    out: &mut [MaybeUninit<T>],
) -> Result<(), u32> {
    let mask = (1u64 << bits) - 1;
    for (j, slot) in (first..).zip(out) {
        let bit = j * bits;
        let i = ((le64(src, bit / 8) >> (bit % 8)) & mask) as u32;
        slot.write(dict.get(i).ok_or(i)?);
    }
    Ok(())
}

fn gather_for<T: Native>(bits: usize) -> Option<Gather<T>> {
    macro_rules! widths {
        ($($w:literal)*) => {
            match bits {
                $($w => Some(gather::<T, $w> as Gather<T>),)*
                _ => None,
            }
        };
    }
    widths!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20)
}

/// The first `k` slots of `rest` (the part of a buffer not written yet) set to `v`: whole
/// blocks of `W` stores where `rest` has room past the run (the slots past its end are written
/// again by the runs after it, as buffers here are filled from front to back), so a short run
/// is one or two vector stores, not a loop with a tail or a `memset` call.
#[inline(always)]
fn fill_run<V: Copy, const W: usize>(rest: &mut [V], k: usize, v: V) {
    let span = k.next_multiple_of(W);
    if span <= rest.len() {
        let block = [v; W];
        for c in rest[..span].chunks_exact_mut(W) {
            c.copy_from_slice(&block);
        }
    } else {
        rest[..k].fill(v);
    }
}

fn out_of_range(index: u32, len: usize) -> String {
    format!("dictionary index {index} in a dictionary of {len} values")
}

impl<T: Native> Indices<T> {
    fn new(buf: Bytes) -> Result<Self, String> {
        let bits = usize::from(*buf.first().ok_or_else(|| cut("bit width"))?);
        if bits > 32 {
            return Err(format!("dictionary indices of {bits} bits (at most 32)"));
        }
        let gather = gather_for::<T>(bits);
        Ok(Self {
            buf,
            at: 1,
            bits,
            gather,
            repeat: 0,
            index: 0,
            packed: 0,
            group: 0,
            in_group: 0,
        })
    }

    /// Reads the next run's header.
    #[inline(always)]
    fn next_run(&mut self) -> Result<(), String> {
        let header = varint(&self.buf, &mut self.at, "a data page's dictionary indices")?;
        let count = usize::try_from(header >> 1).map_err(|e| e.to_string())?;
        if count == 0 {
            return Err("an empty run of dictionary indices".into());
        }
        if header & 1 == 0 {
            let bytes = self.bits.div_ceil(8);
            let value = self
                .buf
                .get(self.at..self.at + bytes)
                .ok_or_else(|| cut("dictionary indices"))?;
            self.index = run_value(value);
            self.at += bytes;
            self.repeat = count;
        } else {
            // Writers may end the last run before its last group is whole.
            let len = count.saturating_mul(self.bits);
            let left = self.buf.len() - self.at;
            let len = if len <= left {
                self.packed = count * 8;
                len
            } else {
                self.packed = (left * 8).checked_div(self.bits).unwrap_or(count * 8);
                left
            };
            self.group = self.at;
            self.in_group = 0;
            self.at += len;
        }
        Ok(())
    }

    /// The current group with the 8 bytes after it: in place, or copied into `copy` (zeros
    /// past the page) for a group within [`GROUP`] bytes of the page's end.
    fn group_bytes<'a>(&'a self, copy: &'a mut [u8; GROUP]) -> &'a [u8] {
        match self.buf.get(self.group..self.group + GROUP) {
            Some(g) => g,
            None => {
                let have = &self.buf[self.group.min(self.buf.len())..];
                copy[..have.len()].copy_from_slice(have);
                copy
            }
        }
    }

    /// Decodes the next `out.len()` indices' values.
    fn read(&mut self, dict: &Dict<T>, out: &mut [MaybeUninit<T>]) -> Result<(), String> {
        // Width 0 (a dictionary of one value) has no bytes to unpack: the scalar path.
        if let Some(planes) = dict
            .planes
            .as_ref()
            .filter(|_| (1..=8).contains(&self.bits))
        {
            return self.read_planes(dict.len, planes, out);
        }
        let mut o = 0;
        while o < out.len() {
            if self.repeat > 0 {
                let k = self.repeat.min(out.len() - o);
                let v = dict
                    .get(self.index)
                    .ok_or_else(|| out_of_range(self.index, dict.len))?;
                fill_run::<_, 8>(&mut out[o..], k, MaybeUninit::new(v));
                self.repeat -= k;
                o += k;
            } else if self.packed > 0 {
                let k = self.packed.min(out.len() - o);
                self.read_packed(dict, &mut out[o..o + k])?;
                o += k;
            } else {
                self.next_run()?;
            }
        }
        Ok(())
    }

    /// [`Self::read`] with the dictionary's planes: the indices of up to [`CHUNK`] values
    /// expanded to bytes (runs filled, groups unpacked), then looked up 64 at a time.
    fn read_planes(
        &mut self,
        len: usize,
        planes: &Planes,
        out: &mut [MaybeUninit<T>],
    ) -> Result<(), String> {
        let mut idx = [0u8; CHUNK];
        for chunk in out.chunks_mut(CHUNK) {
            let idx = &mut idx[..chunk.len()];
            let mut o = 0;
            while o < idx.len() {
                if self.repeat > 0 {
                    let k = self.repeat.min(idx.len() - o);
                    // Checked here: a run's index may have more bits than the lookup's byte.
                    if self.index as usize >= len {
                        return Err(out_of_range(self.index, len));
                    }
                    fill_run::<_, 32>(&mut idx[o..], k, self.index as u8);
                    self.repeat -= k;
                    o += k;
                } else if self.packed > 0 {
                    let k = self.packed.min(idx.len() - o);
                    self.unpack_packed(&mut idx[o..o + k]);
                    o += k;
                } else {
                    self.next_run()?;
                }
            }
            parquet_simd::lookup(idx, planes, len, chunk).map_err(|i| out_of_range(i, len))?;
        }
        Ok(())
    }

    /// `out.len()` indices (at most what the bit-packed run holds; 8 bits or fewer) from the
    /// bit-packed run, a byte each.
    fn unpack_packed(&mut self, out: &mut [u8]) {
        let bits = self.bits;
        let mask = (1u64 << bits) - 1;
        let Ok(()) = self.walk_packed::<u8, Infallible>(
            out,
            0,
            |src, o| {
                parquet_simd::unpack(bits, src, o);
                Ok(())
            },
            |g, first, o| {
                for (j, slot) in (first..).zip(o) {
                    *slot = ((le64(g, j * bits / 8) >> (j * bits % 8)) & mask) as u8;
                }
                Ok(())
            },
        );
    }

    /// `out.len()` values (at most what the bit-packed run holds) from the bit-packed run.
    fn read_packed(&mut self, dict: &Dict<T>, out: &mut [MaybeUninit<T>]) -> Result<(), String> {
        let (bits, gather) = (self.bits, self.gather);
        self.walk_packed(
            out,
            8,
            |src, o| match gather {
                Some(gather) => gather(src, dict, o),
                None => gather_wide(bits, src, 0, dict, o),
            },
            // Decoded one by one, and only those.
            |g, first, o| gather_wide(bits, g, first, dict, o),
        )
        .map_err(|i| out_of_range(i, dict.len))
    }

    /// Walks `out.len()` values (at most what the bit-packed run holds) of the bit-packed run:
    /// `whole(src, out)` for whole groups read in place, as many as the page holds with `slack`
    /// bytes after them (`src` from their first); `part(group, first, out)` for a group begun
    /// or the run's last values (`group`: its bytes and 8 more, `first`: the index in it).
    fn walk_packed<S, E>(
        &mut self,
        out: &mut [S],
        slack: usize,
        mut whole: impl FnMut(&[u8], &mut [S]) -> Result<(), E>,
        mut part: impl FnMut(&[u8], usize, &mut [S]) -> Result<(), E>,
    ) -> Result<(), E> {
        let mut o = 0;
        while o < out.len() {
            let want = out.len() - o;
            if self.in_group == 0 && want >= 8 {
                let room = self.buf.len() - self.group;
                let groups = (want / 8).min(room.saturating_sub(slack) / self.bits.max(1));
                if groups > 0 {
                    let n = groups * 8;
                    whole(&self.buf[self.group..], &mut out[o..o + n])?;
                    self.group += groups * self.bits;
                    o += n;
                    continue;
                }
            }
            let mut copy = [0u8; GROUP];
            let k = (8 - self.in_group).min(want);
            part(
                self.group_bytes(&mut copy),
                self.in_group,
                &mut out[o..o + k],
            )?;
            o += k;
            self.in_group += k;
            if self.in_group == 8 {
                self.in_group = 0;
                self.group += self.bits;
            }
        }
        self.packed -= out.len();
        Ok(())
    }

    /// Passes over the next `n` indices.
    fn skip(&mut self, mut n: usize) -> Result<(), String> {
        while n > 0 {
            if self.repeat > 0 {
                let k = self.repeat.min(n);
                self.repeat -= k;
                n -= k;
            } else if self.packed > 0 {
                let k = self.packed.min(n);
                let at = self.in_group + k;
                self.group += at / 8 * self.bits;
                self.in_group = at % 8;
                self.packed -= k;
                n -= k;
            } else {
                self.next_run()?;
            }
        }
        Ok(())
    }
}

impl<T: Native> Values<T> {
    /// The values of `pages` (a flat column's pages: no levels).
    pub(crate) fn new(pages: Box<dyn PageReader>) -> Self {
        Self {
            pages,
            dict: Dict {
                values: Vec::new(),
                len: 0,
                planes: None,
            },
            page: None,
        }
    }

    /// Takes the next page: a dictionary is kept, a data page becomes the current one.
    fn next_page(&mut self) -> Result<(), String> {
        let page = self
            .pages
            .get_next_page()
            .map_err(|e| e.to_string())?
            .ok_or("the column chunk ended before its rows")?;
        let (buf, n, encoding) = match page {
            Page::DictionaryPage {
                buf,
                num_values,
                encoding,
                ..
            } => {
                if !matches!(encoding, Encoding::PLAIN | Encoding::PLAIN_DICTIONARY) {
                    return Err(format!("a dictionary page encoded {encoding}"));
                }
                let n = num_values as usize;
                let bytes = buf
                    .get(..n * T::SIZE)
                    .ok_or_else(|| format!("a dictionary page of {n} values cut short"))?;
                self.dict = Dict {
                    values: bytes.chunks_exact(T::SIZE).map(T::from_le).collect(),
                    len: n,
                    planes: None,
                };
                return Ok(());
            }
            Page::DataPage {
                buf,
                num_values,
                encoding,
                ..
            }
            | Page::DataPageV2 {
                buf,
                num_values,
                encoding,
                ..
            } => (buf, num_values as usize, encoding),
        };
        if n == 0 {
            return Ok(());
        }
        let body = match encoding {
            Encoding::PLAIN if buf.len() >= n * T::SIZE => Body::Plain { buf, at: 0 },
            Encoding::BYTE_STREAM_SPLIT if buf.len() >= n * T::SIZE => {
                Body::Split { buf, n, at: 0 }
            }
            Encoding::PLAIN | Encoding::BYTE_STREAM_SPLIT => {
                return Err(format!(
                    "a data page of {n} values holds {} bytes",
                    buf.len()
                ))
            }
            Encoding::PLAIN_DICTIONARY | Encoding::RLE_DICTIONARY => {
                if self.dict.len == 0 {
                    return Err("a dictionary-encoded page without a dictionary page".into());
                }
                let ix = Indices::new(buf)?;
                self.dict.pad(ix.bits);
                Body::Dict(ix)
            }
            other => return Err(format!("a data page encoded {other}")),
        };
        self.page = Some(PageValues { body, left: n });
        Ok(())
    }

    /// Appends the next `n` values to `values`.
    pub(crate) fn read_into(&mut self, values: &mut Vec<T>, n: usize) -> Result<(), String> {
        values.reserve(n);
        let len = values.len();
        let out = &mut values.spare_capacity_mut()[..n];
        let mut done = 0;
        while done < n {
            let Some(page) = self.page.as_mut().filter(|p| p.left > 0) else {
                self.next_page()?;
                continue;
            };
            let k = page.left.min(n - done);
            let dst = &mut out[done..done + k];
            match &mut page.body {
                Body::Plain { buf, at } => {
                    let src = &buf[*at..*at + k * T::SIZE];
                    for (slot, b) in dst.iter_mut().zip(src.chunks_exact(T::SIZE)) {
                        slot.write(T::from_le(b));
                    }
                    *at += k * T::SIZE;
                }
                Body::Split { buf, n, at } => {
                    let mut v = [0u8; 8];
                    for (i, slot) in dst.iter_mut().enumerate() {
                        for (k, b) in v[..T::SIZE].iter_mut().enumerate() {
                            *b = buf[k * *n + *at + i];
                        }
                        slot.write(T::from_le(&v[..T::SIZE]));
                    }
                    *at += k;
                }
                Body::Dict(ix) => ix.read(&self.dict, dst)?,
            }
            page.left -= k;
            done += k;
        }
        // SAFETY: the loop above wrote each of the `n` slots past `len` (`done` reached `n`).
        unsafe { values.set_len(len + n) };
        Ok(())
    }

    /// Passes over the next `n` values: whole pages unread where the page reader knows
    /// their value counts (an offset index), the rest decoded no further than needed.
    pub(crate) fn skip(&mut self, mut n: usize) -> Result<(), String> {
        while n > 0 {
            let Some(page) = self.page.as_mut().filter(|p| p.left > 0) else {
                let next = self.pages.peek_next_page().map_err(|e| e.to_string())?;
                match next.and_then(|m| m.num_rows.filter(|&v| !m.is_dict && v <= n)) {
                    Some(v) => {
                        self.pages.skip_next_page().map_err(|e| e.to_string())?;
                        n -= v;
                    }
                    None => self.next_page()?,
                }
                continue;
            };
            let k = page.left.min(n);
            match &mut page.body {
                Body::Plain { at, .. } => *at += k * T::SIZE,
                Body::Split { at, .. } => *at += k,
                Body::Dict(ix) => ix.skip(k)?,
            }
            page.left -= k;
            n -= k;
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "parquet_values_tests.rs"]
mod tests;
