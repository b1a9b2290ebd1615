//! Dictionary indices of up to 8 bits into 4-byte values (float32, int32), 64 at a time with
//! AVX-512 VBMI where the CPU has it: bit-packed indices unpacked into bytes by a byte permute
//! and a multishift ([`unpack`]), and index bytes looked up as four byte planes of the
//! dictionary with byte permutes over two-register tables, the planes then interleaved back
//! into values ([`lookup`]).
//!
//! Why: [`super::parquet_values`]'s scalar gather costs a load, a shift and a store a value,
//! and is the decode's largest part after decompression on the columns this path exists for
//! (an image or embedding column of floats with a dictionary of at most 256 values: 8-bit
//! indices). Here 64 values take about 30 vector instructions. A dictionary of up to 256
//! values fits the 16 table registers (4 planes x 256 bytes); wider indices, 8-byte values and
//! CPUs without VBMI keep the scalar gather.

use std::mem::MaybeUninit;

use super::parquet_values::Native;

/// A dictionary's values as four byte planes of 256 bytes each (byte `b` of value `i` at
/// `256 * b + i`; slots past the dictionary hold zeros, and the bounds check keeps indices
/// off them).
pub(crate) struct Planes(Box<[u8; 1024]>);

impl Planes {
    /// The planes of `values` (the first 256 of them), where this CPU runs [`lookup`] and the
    /// values are 4 bytes wide.
    pub(crate) fn new<T: Native>(values: &[T]) -> Option<Self> {
        if T::SIZE != 4 || !available() {
            return None;
        }
        let mut p = Box::new([0u8; 1024]);
        let mut v = [0u8; 4];
        for (i, &value) in values.iter().take(256).enumerate() {
            value.to_le(&mut v);
            for (b, &byte) in v.iter().enumerate() {
                p[256 * b + i] = byte;
            }
        }
        Some(Self(p))
    }
}

/// Whether this CPU has the instructions [`unpack`] and [`lookup`] use (detected once; the
/// result cached).
pub(crate) fn available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bw")
            && std::arch::is_x86_feature_detected!("avx512vbmi")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// The whole groups of eight `bits`-bit indices (`bits` 1 to 8) at the start of `src`, one
/// byte each, into `out` (`out.len()` a multiple of 8; `src` holding at least
/// `out.len() / 8 * bits` bytes).
pub(crate) fn unpack(bits: usize, src: &[u8], out: &mut [u8]) {
    assert!((1..=8).contains(&bits) && out.len().is_multiple_of(8));
    assert!(src.len() >= out.len() / 8 * bits && available());
    #[cfg(target_arch = "x86_64")]
    // SAFETY: the CPU has the features and `src` holds every byte read (asserted above).
    unsafe {
        x86::unpack(bits, src, out)
    }
}

/// The values of indices `idx` into `out` (4-byte values, as many as `idx`). On an index of
/// `len` or more, returns the largest such index of its block of 64, having written the
/// slots before that block.
pub(crate) fn lookup<T>(
    idx: &[u8],
    planes: &Planes,
    len: usize,
    out: &mut [MaybeUninit<T>],
) -> Result<(), u32> {
    assert!(std::mem::size_of::<T>() == 4 && out.len() == idx.len() && available());
    #[cfg(target_arch = "x86_64")]
    // SAFETY: the CPU has the features (asserted above); `out` has a 4-byte slot for each
    // index read.
    unsafe {
        x86::lookup(idx, &planes.0, len, out.as_mut_ptr().cast())
    }
    #[cfg(not(target_arch = "x86_64"))]
    unreachable!("no vector lookup on this architecture")
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    /// For qword `q`, bytes `q * bits ..` of the loaded groups: group `q` of 8 indices.
    const fn place(bits: usize) -> [u8; 64] {
        let mut a = [0u8; 64];
        let mut i = 0;
        while i < 64 {
            let at = (i / 8) * bits + i % 8;
            a[i] = if at < 63 { at } else { 63 } as u8;
            i += 1;
        }
        a
    }

    /// For each byte of a qword, the bit its index starts at: `j * bits`.
    const fn shifts(bits: usize) -> [u8; 64] {
        let mut a = [0u8; 64];
        let mut i = 0;
        while i < 64 {
            a[i] = ((i % 8) * bits) as u8;
            i += 1;
        }
        a
    }

    /// [`place`] and [`shifts`] of each width, 0 to 8.
    const PLACE: [[[u8; 64]; 2]; 9] = {
        let mut a = [[[0u8; 64]; 2]; 9];
        let mut bits = 0;
        while bits <= 8 {
            a[bits] = [place(bits), shifts(bits)];
            bits += 1;
        }
        a
    };

    /// Index bytes in the order the planes' unpacking leaves them: position `16l + 4r + j`
    /// (128-bit lane `l`, result register `r`, dword `j`) takes index `16r + 4l + j`.
    const TRANSPOSE: [u8; 64] = {
        let mut a = [0u8; 64];
        let mut p = 0;
        while p < 64 {
            let (l, r, j) = (p / 16, (p / 4) % 4, p % 4);
            a[p] = (16 * r + 4 * l + j) as u8;
            p += 1;
        }
        a
    };

    #[inline]
    #[target_feature(enable = "avx512f")]
    fn load(a: &[u8; 64]) -> __m512i {
        // SAFETY: `a` holds the 64 bytes read.
        unsafe { _mm512_loadu_si512(a.as_ptr().cast()) }
    }

    /// Mask of the low `n` lanes (`n` <= 64).
    fn low(n: usize) -> u64 {
        if n >= 64 {
            u64::MAX
        } else {
            (1u64 << n) - 1
        }
    }

    /// See [`super::unpack`].
    #[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
    pub(super) fn unpack(bits: usize, src: &[u8], out: &mut [u8]) {
        let place = load(&PLACE[bits][0]);
        let shifts = load(&PLACE[bits][1]);
        let mask = _mm512_set1_epi8(((1u16 << bits) - 1) as u8 as i8);
        for (c, o) in out.chunks_mut(64).enumerate() {
            let k = o.len();
            // SAFETY: the masked load reads the `k / 8 * bits` bytes of these groups, which
            // `src` holds (the caller's); the masked store writes the `k` bytes of `o`.
            unsafe {
                let at = src.as_ptr().add(c * 8 * bits);
                let raw = _mm512_maskz_loadu_epi8(low(k / 8 * bits), at.cast());
                let idx = if bits == 8 {
                    raw
                } else {
                    let placed = _mm512_permutexvar_epi8(place, raw);
                    _mm512_and_si512(_mm512_multishift_epi64_epi8(shifts, placed), mask)
                };
                _mm512_mask_storeu_epi8(o.as_mut_ptr().cast(), low(k), idx);
            }
        }
    }

    /// See [`super::lookup`]: `out` has room for `idx.len()` values of 4 bytes.
    #[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
    pub(super) unsafe fn lookup(
        idx: &[u8],
        planes: &[u8; 1024],
        len: usize,
        out: *mut u32,
    ) -> Result<(), u32> {
        let transpose = load(&TRANSPOSE);
        // Indices of `len` or more are possible only where the dictionary is shorter than 256.
        let bound = (len < 256).then(|| _mm512_set1_epi8(len as u8 as i8));
        let mut tables = [_mm512_setzero_si512(); 16];
        for (k, t) in tables.iter_mut().enumerate() {
            // SAFETY: the 64 bytes at `64 * k` (k < 16) of the 1024.
            *t = unsafe { _mm512_loadu_si512(planes.as_ptr().add(64 * k).cast()) };
        }
        for (c, chunk) in idx.chunks(64).enumerate() {
            let k = chunk.len();
            // SAFETY: the masked load reads the `k` bytes of `chunk`.
            let idx = unsafe { _mm512_maskz_loadu_epi8(low(k), chunk.as_ptr().cast()) };
            if let Some(bound) = bound {
                let past = _mm512_mask_cmpge_epu8_mask(low(k), idx, bound);
                if past != 0 {
                    let max = (0..k)
                        .filter(|i| past >> i & 1 == 1)
                        .map(|i| chunk[i])
                        .max();
                    return Err(u32::from(max.unwrap_or(0)));
                }
            }
            let idx = _mm512_permutexvar_epi8(transpose, idx);
            let high = _mm512_movepi8_mask(idx);
            // Plane `b`: tables `4b, 4b + 1` hold its values 0..128, `4b + 2, 4b + 3` the rest.
            let mut p = [_mm512_setzero_si512(); 4];
            for (b, plane) in p.iter_mut().enumerate() {
                let lo = _mm512_permutex2var_epi8(tables[4 * b], idx, tables[4 * b + 1]);
                let hi = _mm512_permutex2var_epi8(tables[4 * b + 2], idx, tables[4 * b + 3]);
                *plane = _mm512_mask_blend_epi8(high, lo, hi);
            }
            let [p0, p1, p2, p3] = p;
            let w01lo = _mm512_unpacklo_epi8(p0, p1);
            let w01hi = _mm512_unpackhi_epi8(p0, p1);
            let w23lo = _mm512_unpacklo_epi8(p2, p3);
            let w23hi = _mm512_unpackhi_epi8(p2, p3);
            let rows = [
                _mm512_unpacklo_epi16(w01lo, w23lo),
                _mm512_unpackhi_epi16(w01lo, w23lo),
                _mm512_unpacklo_epi16(w01hi, w23hi),
                _mm512_unpackhi_epi16(w01hi, w23hi),
            ];
            for (r, row) in rows.into_iter().enumerate() {
                let m = low(k.saturating_sub(16 * r).min(16)) as u16;
                if m != 0 {
                    // SAFETY: the masked store writes values `64c + 16r ..` below
                    // `idx.len()`, for which `out` has room (the caller's).
                    unsafe { _mm512_mask_storeu_epi32(out.add(64 * c + 16 * r).cast(), m, row) };
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `idx` bit-packed at `bits` bits, LSB first (Parquet's order), with 8 bytes of slack.
    fn pack(idx: &[u32], bits: usize) -> Vec<u8> {
        let mut out = vec![0u8; idx.len() * bits / 8 + 8];
        for (i, &v) in idx.iter().enumerate() {
            for b in 0..bits {
                if v >> b & 1 == 1 {
                    let bit = i * bits + b;
                    out[bit / 8] |= 1 << (bit % 8);
                }
            }
        }
        out
    }

    #[test]
    fn gathers_every_width_and_length_as_the_dictionary_holds() {
        if !available() {
            eprintln!("no AVX-512 VBMI on this CPU: the scalar gather runs instead");
            return;
        }
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for bits in 1..=8usize {
            let len = 1usize << bits;
            let values: Vec<f32> = (0..len).map(|i| (i as f32 + 0.25) * -3.5).collect();
            let planes = Planes::new(&values).expect("planes where the gather runs");
            for n in (8..=200).step_by(8) {
                let idx: Vec<u32> = (0..n).map(|_| (next() % len as u64) as u32).collect();
                let mut bytes = vec![0u8; n];
                unpack(bits, &pack(&idx, bits)[..n / 8 * bits], &mut bytes);
                let want: Vec<u8> = idx.iter().map(|&i| i as u8).collect();
                assert_eq!(bytes, want, "bits {bits}, {n} indices");
                // Looked up in pieces of every length mod 64 (a block's tail).
                let mut out = vec![MaybeUninit::<f32>::uninit(); n + 3];
                let cut = n * 7 / 13;
                lookup(&bytes[..cut], &planes, len, &mut out[..cut]).unwrap();
                lookup(&bytes[cut..], &planes, len, &mut out[cut..n]).unwrap();
                // SAFETY: `lookup` wrote the first `n`.
                let got: Vec<f32> = out[..n]
                    .iter()
                    .map(|v| unsafe { v.assume_init() })
                    .collect();
                let want: Vec<f32> = idx.iter().map(|&i| values[i as usize]).collect();
                assert_eq!(got, want, "bits {bits}, {n} values");
            }
        }
    }

    #[test]
    fn an_index_past_a_short_dictionary_is_returned() {
        if !available() {
            eprintln!("no AVX-512 VBMI on this CPU: the scalar gather runs instead");
            return;
        }
        let values = [1i32, -2, 3];
        let planes = Planes::new(&values).unwrap();
        for bad in [3u8, 17, 200, 255] {
            // The bad index in the second block of 64, at its last slot of 71.
            let mut idx: Vec<u8> = (0..71).map(|i| i % 3).collect();
            idx[70] = bad;
            let mut out = vec![MaybeUninit::<i32>::uninit(); 71];
            assert_eq!(
                lookup(&idx, &planes, 3, &mut out),
                Err(u32::from(bad)),
                "index {bad}"
            );
            // The same indices fit a dictionary holding the bad one.
            let mut wide: Vec<i32> = (0..256).collect();
            wide[..3].copy_from_slice(&values);
            let planes = Planes::new(&wide).unwrap();
            lookup(&idx, &planes, 256, &mut out).unwrap();
            // SAFETY: `lookup` wrote all 71.
            let got: Vec<i32> = out.iter().map(|v| unsafe { v.assume_init() }).collect();
            assert_eq!(got[70], i32::from(bad));
            assert_eq!(got[..6], [1, -2, 3, 1, -2, 3]);
        }
    }
}
