//! The values of a fixed-size list's flat pages ([`super::parquet_fixed`]), decoded here
//! rather than by the `parquet` crate's column reader, for the encodings writers use for
//! numbers: PLAIN, dictionary (PLAIN_DICTIONARY / RLE_DICTIONARY) and BYTE_STREAM_SPLIT.
//!
//! Why: that reader unpacks a page's dictionary indices into an index buffer, then gathers
//! them from the dictionary in a second pass, into a value buffer it first fills with zeros:
//! three passes over memory where one does, and most of the decode time of a dictionary-encoded
//! image column besides decompression. Here each bit-packed group of eight indices is unpacked
//! (one function per bit width, the width a constant) and gathered in the same step, straight
//! into the uninitialised buffer that becomes the Arrow array.

use std::mem::MaybeUninit;

use bytes::Bytes;
use parquet::basic::Encoding;
use parquet::column::page::{Page, PageReader};

/// A number of a fixed-size list's items, as Parquet stores it (little-endian).
pub(crate) trait Native: Copy + Send + 'static {
    const SIZE: usize;
    /// The value of `b` (`SIZE` bytes).
    fn from_le(b: &[u8]) -> Self;
}

macro_rules! native {
    ($($t:ty),*) => {$(
        impl Native for $t {
            const SIZE: usize = std::mem::size_of::<$t>();
            fn from_le(b: &[u8]) -> Self {
                <$t>::from_le_bytes(b.try_into().unwrap_or_default())
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
}

impl<T: Native> Dict<T> {
    /// The value of index `i`, if the dictionary page holds one (not a padding copy).
    fn get(&self, i: u32) -> Option<T> {
        self.values[..self.len].get(i as usize).copied()
    }

    /// Pads the values for indices of `bits` bits (see [`PADDED_BITS`]).
    fn pad(&mut self, bits: usize) {
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

    /// The group at byte `at`, with the 8 bytes after it (zeros past the page).
    fn padded(&self, at: usize) -> [u8; 40] {
        let mut g = [0u8; 40];
        let have = &self.buf[at.min(self.buf.len())..];
        let n = have.len().min(40);
        g[..n].copy_from_slice(&have[..n]);
        g
    }

    /// Decodes the next `out.len()` indices' values.
    fn read(&mut self, dict: &Dict<T>, out: &mut [MaybeUninit<T>]) -> Result<(), String> {
        let mut o = 0;
        while o < out.len() {
            if self.repeat > 0 {
                let k = self.repeat.min(out.len() - o);
                let v = dict
                    .get(self.index)
                    .ok_or_else(|| out_of_range(self.index, dict.len))?;
                // Whole groups of 8 stores where `out` has room past the run: the slots past
                // its end are written again by the runs after it (this call fills `out` from
                // front to back), and a short run is one or two vector stores, not a loop with
                // a tail.
                let span = k.next_multiple_of(8);
                if o + span <= out.len() {
                    let eight = [MaybeUninit::new(v); 8];
                    for c in out[o..o + span].chunks_exact_mut(8) {
                        c.copy_from_slice(&eight);
                    }
                } else {
                    out[o..o + k].fill(MaybeUninit::new(v));
                }
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

    /// `out.len()` values (at most what the bit-packed run holds) from the bit-packed run.
    fn read_packed(&mut self, dict: &Dict<T>, out: &mut [MaybeUninit<T>]) -> Result<(), String> {
        let err = |i| out_of_range(i, dict.len);
        let mut o = 0;
        while o < out.len() {
            let want = out.len() - o;
            if self.in_group == 0 && want >= 8 {
                // Whole groups read in place while the page holds 8 bytes past them.
                let mut groups = want / 8;
                let room = self.buf.len() - self.group;
                if groups * self.bits + 8 > room {
                    groups = room.saturating_sub(8) / self.bits.max(1);
                }
                if groups > 0 {
                    let n = groups * 8;
                    let src = &self.buf[self.group..];
                    match self.gather {
                        Some(gather) => gather(src, dict, &mut out[o..o + n]),
                        None => gather_wide(self.bits, src, 0, dict, &mut out[o..o + n]),
                    }
                    .map_err(err)?;
                    self.group += groups * self.bits;
                    o += n;
                    continue;
                }
            }
            // A group begun, or the run's last values: decoded one by one, and only those.
            let g = self.padded(self.group);
            let k = (8 - self.in_group).min(want);
            gather_wide(self.bits, &g, self.in_group, dict, &mut out[o..o + k]).map_err(err)?;
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
mod tests {
    use super::*;

    /// The hybrid encoding of `idx` at `bits` bits: bit-packed groups of 8 (the last one
    /// padded with zeros), with one RLE run of `run` copies of `idx[0]` in front.
    fn encode(idx: &[u32], bits: usize, run: usize) -> Vec<u8> {
        let mut out = vec![bits as u8];
        if run > 0 {
            out.push((run as u8) << 1);
            out.extend_from_slice(&idx[0].to_le_bytes()[..bits.div_ceil(8)]);
        }
        let groups = idx.len().div_ceil(8);
        out.push(((groups as u8) << 1) | 1);
        let mut packed = vec![0u8; groups * bits];
        for (i, &v) in idx.iter().enumerate() {
            for b in 0..bits {
                if v >> b & 1 == 1 {
                    let bit = i * bits + b;
                    packed[bit / 8] |= 1 << (bit % 8);
                }
            }
        }
        out.extend_from_slice(&packed);
        out
    }

    fn padded(values: &[f32], bits: usize) -> Dict<f32> {
        let mut d = Dict {
            values: values.to_vec(),
            len: values.len(),
        };
        d.pad(bits);
        d
    }

    fn padded_to<T: Native>(mut d: Dict<T>, bits: usize) -> Dict<T> {
        d.pad(bits);
        d
    }

    fn uninit(n: usize) -> Vec<MaybeUninit<f32>> {
        vec![MaybeUninit::uninit(); n]
    }

    fn taken(v: &[MaybeUninit<f32>]) -> Vec<f32> {
        // SAFETY: the tests read only slots the decoder wrote.
        v.iter().map(|s| unsafe { s.assume_init() }).collect()
    }

    #[test]
    fn run_values_are_their_little_endian_bytes() {
        let bytes = [0x11u8, 0x22, 0x33, 0x44, 0x55];
        let want = [0, 0x11, 0x2211, 0x33_2211, 0x4433_2211, 0x4433_2211];
        for (n, w) in want.iter().enumerate() {
            assert_eq!(run_value(&bytes[..n]), *w, "{n} bytes");
        }
    }

    #[test]
    fn every_width_decodes_in_pieces_and_skips() {
        for bits in (1..=24usize).chain([32]) {
            let len = (1usize << bits.min(10)) - 1;
            let values: Vec<f32> = (0..len).map(|i| i as f32 * 0.5).collect();
            let dict = padded(&values, bits);
            let idx: Vec<u32> = (0..203u32).map(|i| (i * 7919) % len as u32).collect();
            let data = encode(&idx, bits, 5);
            let want: Vec<f32> = std::iter::repeat_n(values[idx[0] as usize], 5)
                .chain(idx.iter().map(|&i| values[i as usize]))
                .collect();
            // Read in pieces of every size from 1 to 19, with skips between.
            for piece in 1..20 {
                let mut ix = Indices::<f32>::new(Bytes::from(data.clone())).unwrap();
                let mut at = 0;
                while at < want.len() {
                    let k = piece.min(want.len() - at);
                    let mut out = uninit(k);
                    ix.read(&dict, &mut out).unwrap();
                    assert_eq!(taken(&out), want[at..at + k], "bits {bits} piece {piece}");
                    at += k;
                    let s = (piece / 3).min(want.len() - at);
                    ix.skip(s).unwrap();
                    at += s;
                }
            }
        }
    }

    #[test]
    fn indices_past_the_dictionary_and_cut_pages_are_errors() {
        let dict = padded(&[1.0f32, 2.0, 3.0], 2);
        let data = encode(&[0, 1, 2, 3, 0, 1, 2, 0, 1], 2, 0);
        let mut ix = Indices::<f32>::new(Bytes::from(data.clone())).unwrap();
        let err = ix.read(&dict, &mut uninit(9)).unwrap_err();
        assert!(
            err.contains("dictionary index 3 in a dictionary of 3"),
            "{err}"
        );
        let mut rle = Indices::<f32>::new(Bytes::from(vec![2, 8, 7])).unwrap();
        let err = rle.read(&dict, &mut uninit(4)).unwrap_err();
        assert!(err.contains("dictionary index 7"), "{err}");
        // A page ending inside a run header, and one of more values than its runs hold.
        let mut cut = Indices::<f32>::new(Bytes::from(vec![2, 0x81])).unwrap();
        assert!(cut
            .read(&dict, &mut uninit(1))
            .unwrap_err()
            .contains("cut short"));
        let mut short = Indices::<f32>::new(Bytes::from(vec![2, 4, 1])).unwrap();
        let err = short.read(&dict, &mut uninit(3)).unwrap_err();
        assert!(err.contains("cut short"), "{err}");
        assert!(Indices::<f32>::new(Bytes::from(vec![33])).is_err());
        // 8-bit indices, into 4- and 8-byte values: a group holding one past the dictionary.
        let data = encode(&[0, 1, 2, 0, 1, 2, 200, 0, 1, 2, 0], 8, 0);
        let mut ix = Indices::<f32>::new(Bytes::from(data.clone())).unwrap();
        let err = ix
            .read(&padded(&[1.0, 2.0, 3.0], 8), &mut uninit(11))
            .unwrap_err();
        assert!(
            err.contains("dictionary index 200 in a dictionary of 3"),
            "{err}"
        );
        let wide = Dict {
            values: vec![1.0f64, 2.0, 3.0],
            len: 3,
        };
        let mut wide = padded_to(wide, 8);
        let mut ix = Indices::<f64>::new(Bytes::from(data)).unwrap();
        let mut out = vec![MaybeUninit::uninit(); 11];
        let err = ix.read(&wide, &mut out).unwrap_err();
        assert!(err.contains("dictionary index 200"), "{err}");
        wide.len = 201;
        wide.values[200] = 9.0;
        let mut ix =
            Indices::<f64>::new(Bytes::from(encode(&[0, 1, 2, 200, 0, 1, 2, 0], 8, 0))).unwrap();
        let mut out = vec![MaybeUninit::uninit(); 8];
        ix.read(&wide, &mut out).unwrap();
        // SAFETY: `read` wrote all 8.
        let got: Vec<f64> = out.iter().map(|s| unsafe { s.assume_init() }).collect();
        assert_eq!(got, [1.0, 2.0, 3.0, 9.0, 1.0, 2.0, 3.0, 1.0]);
    }
}
