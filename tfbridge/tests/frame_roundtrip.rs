//! Frames: encode into an aligned slot, decode without copying, and refuse bad bytes.

use std::sync::Arc;

use arrow_array::builder::{
    FixedSizeListBuilder, Float32Builder, Int64Builder, ListBuilder, StringDictionaryBuilder,
};
use arrow_array::types::Int32Type;
use arrow_array::{ArrayRef, Float64Array, Int64Array, RecordBatch, StringArray};
use arrow_buffer::{Buffer, MutableBuffer};
use hydrofeed_tfbridge::{
    error_frame, marker, owned_buffer, to_tensor, ErrorCode, Frame, FrameDecoder, FrameEncoder,
    FrameError, FrameKind, FrameMeta, Tensor, HEADER_LEN,
};
use proptest::prelude::*;

/// A 64-byte aligned slot holding `f`, as a ring reservation would.
fn slot(f: &hydrofeed_tfbridge::Encoded) -> Buffer {
    let mut m = MutableBuffer::from_len_zeroed(f.len());
    f.write_to(m.as_slice_mut()).unwrap();
    assert_eq!(m.as_ptr() as usize % 64, 0);
    owned_buffer(Buffer::from(m))
}

/// One generated row: id, image, ragged values, name.
type Row = (i64, Vec<f32>, Vec<i64>, Option<String>);

fn batch(rows: &[Row], dim: i32) -> RecordBatch {
    let id = Int64Array::from_iter_values(rows.iter().map(|r| r.0));
    let mut img = FixedSizeListBuilder::new(Float32Builder::new(), dim);
    let mut rag = ListBuilder::new(Int64Builder::new());
    for r in rows {
        img.values().append_slice(&r.1);
        img.append(true);
        rag.append_value(r.2.iter().map(|v| Some(*v)));
    }
    let s = StringArray::from_iter(rows.iter().map(|r| r.3.clone()));
    let mut dict = StringDictionaryBuilder::<Int32Type>::new();
    for r in rows {
        dict.append_value(format!("k{}", r.0 % 3));
    }
    RecordBatch::try_from_iter([
        ("id", Arc::new(id) as ArrayRef),
        ("image", Arc::new(img.finish()) as ArrayRef),
        ("ragged", Arc::new(rag.finish()) as ArrayRef),
        ("name", Arc::new(s) as ArrayRef),
        ("tag", Arc::new(dict.finish()) as ArrayRef),
    ])
    .unwrap()
}

fn in_slot(slot: &Buffer, p: *const u8) -> bool {
    let start = slot.as_ptr() as usize;
    (start..start + slot.len()).contains(&(p as usize))
}

fn rows_strategy() -> impl Strategy<Value = (i32, Vec<Row>)> {
    (1i32..6).prop_flat_map(|dim| {
        let row = (
            any::<i64>(),
            proptest::collection::vec(
                any::<f32>().prop_filter("nan", |v| !v.is_nan()),
                dim as usize,
            ),
            proptest::collection::vec(any::<i64>(), 0..5),
            proptest::option::of("[a-zé]{0,6}"),
        );
        (Just(dim), proptest::collection::vec(row, 0..40))
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn roundtrip((dim, rows) in rows_strategy(), slices in proptest::collection::vec((0usize..40, 0usize..40), 1..4), epoch in 0u32..5, split in 0u32..9) {
        let b = batch(&rows, dim);
        let mut enc = FrameEncoder::new(b.schema()).unwrap();
        let mut dec = FrameDecoder::new();
        let s = slot(&enc.schema_frame(FrameMeta { seq: 0, ..Default::default() }).unwrap());
        match dec.decode(&s).unwrap() {
            Frame::Schema(m, sch) => { prop_assert_eq!(m.seq, 0); prop_assert_eq!(&sch, &b.schema()); }
            other => prop_assert!(false, "{other:?}"),
        }
        for (i, (off, len)) in slices.into_iter().enumerate() {
            let off = off.min(b.num_rows());
            let len = len.min(b.num_rows() - off);
            let part = b.slice(off, len);
            let meta = FrameMeta { epoch, split, seq: i as u64 + 1, rows: 0 };
            let f = enc.batch(&part, meta).unwrap();
            prop_assert_eq!(f.header().rows, len as u64);
            let s = slot(&f);
            let Frame::Batch(m, got) = dec.decode(&s).unwrap() else { panic!("not a batch") };
            prop_assert_eq!(m, FrameMeta { rows: len as u64, ..meta });
            prop_assert_eq!(&got, &part);
            if len > 0 {
                // Zero copy: the decoded arrays point into the slot, 64-byte aligned.
                let Tensor::Dense(d) = to_tensor(got.column(1)).unwrap() else { panic!() };
                prop_assert!(in_slot(&s, d.data.as_ptr()));
                prop_assert_eq!(d.data.as_ptr() as usize % 64, 0);
                prop_assert_eq!(d.shape, vec![len, dim as usize]);
                let Tensor::Ragged(r) = to_tensor(got.column(2)).unwrap() else { panic!() };
                prop_assert!(in_slot(&s, r.row_splits.data.as_ptr()));
                prop_assert_eq!(r.row_splits.data.typed_data::<i32>()[0], 0);
                let Tensor::Dense(id) = to_tensor(got.column(0)).unwrap() else { panic!() };
                prop_assert!(in_slot(&s, id.data.as_ptr()));
            }
        }
    }

    #[test]
    fn garbage_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..400), keep_header in any::<bool>()) {
        let b = batch(&[(1, vec![1.0], vec![2], None)], 1);
        let mut enc = FrameEncoder::new(b.schema()).unwrap();
        let mut dec = FrameDecoder::new();
        dec.decode(&slot(&enc.schema_frame(FrameMeta::default()).unwrap())).unwrap();
        let good = enc.batch(&b, FrameMeta::default()).unwrap().to_vec();
        let mut bad = if keep_header { good[..HEADER_LEN].to_vec() } else { Vec::new() };
        bad.extend_from_slice(&bytes);
        if keep_header {
            // A valid header announcing exactly these bytes: the IPC parser gets them.
            bad[32..40].copy_from_slice(&(bytes.len() as u64).to_le_bytes());
        }
        let mut m = MutableBuffer::from_len_zeroed(bad.len());
        m.as_slice_mut().copy_from_slice(&bad);
        let _ = dec.decode(&Buffer::from(m));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    /// A valid frame header over a corrupted Arrow IPC payload (bytes changed anywhere in the
    /// metadata or the body): the decoder returns an error naming the frame, or a batch; it
    /// never panics.
    #[test]
    fn corrupt_body_is_an_error(
        (dim, rows) in rows_strategy(),
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
    ) {
        let b = batch(&rows, dim);
        let mut enc = FrameEncoder::new(b.schema()).unwrap();
        let mut dec = FrameDecoder::new();
        dec.decode(&slot(&enc.schema_frame(FrameMeta::default()).unwrap())).unwrap();
        let meta = FrameMeta { seq: 7, ..Default::default() };
        let mut bytes = enc.batch(&b, meta).unwrap().to_vec();
        let payload = bytes.len() - HEADER_LEN;
        for (at, v) in edits {
            bytes[HEADER_LEN + at.index(payload)] = v;
        }
        let mut m = MutableBuffer::from_len_zeroed(bytes.len());
        m.as_slice_mut().copy_from_slice(&bytes);
        let frame = Buffer::from(m);
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| dec.decode(&frame))) {
            Err(_) => prop_assert!(false, "decoder panicked"),
            Ok(Ok(_)) => {}
            Ok(Err(e)) => {
                let msg = e.to_string();
                prop_assert!(msg.contains("frame 7"), "error does not name the frame: {msg}");
            }
        }
    }
}

#[test]
fn markers_and_errors() {
    let mut dec = FrameDecoder::new();
    let meta = FrameMeta {
        epoch: 2,
        split: 5,
        seq: 9,
        rows: 100,
    };
    for kind in [
        FrameKind::EndOfSplit,
        FrameKind::EndOfEpoch,
        FrameKind::EndOfFeed,
    ] {
        let f = marker(kind, meta);
        assert_eq!(f.len(), HEADER_LEN);
        match (kind, dec.decode(&slot(&f)).unwrap()) {
            (FrameKind::EndOfSplit, Frame::EndOfSplit(m))
            | (FrameKind::EndOfEpoch, Frame::EndOfEpoch(m))
            | (FrameKind::EndOfFeed, Frame::EndOfFeed(m)) => assert_eq!(m, meta),
            (k, other) => panic!("{k:?} decoded as {other:?}"),
        }
    }
    let msg = "/data/x.tfrecord, split 3, record 7, byte offset 4096: bad CRC ✓";
    let f = error_frame(ErrorCode::Data, msg, meta, 1 << 20);
    let Frame::Error(m, code, text) = dec.decode(&slot(&f)).unwrap() else {
        panic!()
    };
    assert_eq!((m, code, text.as_str()), (meta, ErrorCode::Data, msg));
    // Cut to fit a small slot, on a char boundary.
    let f = error_frame(ErrorCode::Data, msg, meta, HEADER_LEN + msg.len() - 1);
    let Frame::Error(_, _, text) = dec.decode(&slot(&f)).unwrap() else {
        panic!()
    };
    assert_eq!(text, &msg[..msg.len() - 3]);
}

#[test]
fn bad_frames_are_errors() {
    let b = RecordBatch::try_from_iter([(
        "x",
        Arc::new(Float64Array::from(vec![1.0, 2.0])) as ArrayRef,
    )])
    .unwrap();
    let mut enc = FrameEncoder::new(b.schema()).unwrap();
    let schema = enc.schema_frame(FrameMeta::default()).unwrap();
    let f = enc.batch(&b, FrameMeta::default()).unwrap();
    // Batch before schema.
    assert!(matches!(
        FrameDecoder::new().decode(&slot(&f)),
        Err(FrameError::NoSchema)
    ));
    let mut dec = FrameDecoder::new();
    dec.decode(&slot(&schema)).unwrap();
    let good = f.to_vec();
    let mk = |v: &[u8]| {
        let mut m = MutableBuffer::from_len_zeroed(v.len());
        m.as_slice_mut().copy_from_slice(v);
        Buffer::from(m)
    };
    let mut bad = good.clone();
    bad[0] = b'X';
    assert!(matches!(dec.decode(&mk(&bad)), Err(FrameError::Corrupt(_))));
    let mut bad = good.clone();
    bad[4] = 9;
    assert!(matches!(dec.decode(&mk(&bad)), Err(FrameError::Version(9))));
    assert!(matches!(
        dec.decode(&mk(&good[..good.len() - 8])),
        Err(FrameError::Corrupt(_))
    ));
    assert!(matches!(
        dec.decode(&mk(&good[..10])),
        Err(FrameError::Corrupt(_))
    ));
    // A misaligned slot is refused, not silently copied.
    let mut m = MutableBuffer::from_len_zeroed(good.len() + 8);
    m.as_slice_mut()[8..].copy_from_slice(&good);
    let shifted = Buffer::from(m).slice(8);
    assert!(dec.decode(&shifted).is_err());
    assert!(dec.decode(&mk(&good)).is_ok());
}

#[test]
fn header_layout_is_pinned() {
    use hydrofeed_tfbridge::FrameHeader;
    use std::mem::{offset_of, size_of};
    assert_eq!(size_of::<FrameHeader>(), 64);
    assert_eq!(offset_of!(FrameHeader, kind), 6);
    assert_eq!(offset_of!(FrameHeader, epoch), 8);
    assert_eq!(offset_of!(FrameHeader, split), 12);
    assert_eq!(offset_of!(FrameHeader, seq), 16);
    assert_eq!(offset_of!(FrameHeader, rows), 24);
    assert_eq!(offset_of!(FrameHeader, payload_len), 32);
    assert_eq!(offset_of!(FrameHeader, code), 40);
    // to_bytes writes the same layout as the in-memory struct (little-endian machine).
    let h = *error_frame(
        ErrorCode::Schema,
        "x",
        FrameMeta {
            epoch: 1,
            split: 2,
            seq: 3,
            rows: 4,
        },
        999,
    )
    .header();
    // SAFETY: FrameHeader is repr(C), 64 bytes of plain integers without padding.
    let raw: [u8; 64] = unsafe { std::mem::transmute(h) };
    assert_eq!(raw, h.to_bytes());
}
