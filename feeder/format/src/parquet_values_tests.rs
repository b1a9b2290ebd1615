//! Tests of [`super`]: every width, in pieces, with skips; indices past the dictionary.

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
        planes: None,
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
        planes: None,
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

#[test]
fn a_dictionary_of_one_value_decodes_at_width_zero() {
    // Writers give a dictionary of one value indices of 0 bits: RLE runs with no value bytes,
    // bit-packed groups of no bytes.
    let dict = padded(&[2.5f32], 0);
    let data = vec![0u8, 10 << 1, (3 << 1) | 1, 4 << 1];
    for piece in [1, 5, 38] {
        let mut ix = Indices::<f32>::new(Bytes::from(data.clone())).unwrap();
        let mut at = 0;
        while at < 38 {
            let k = piece.min(38 - at);
            let mut out = uninit(k);
            ix.read(&dict, &mut out).unwrap();
            assert_eq!(taken(&out), vec![2.5; k], "piece {piece}");
            at += k;
        }
    }
}
