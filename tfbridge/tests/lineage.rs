//! Lineage: the `(lease, split, rows)` pieces a batch frame carries after its Arrow payload.

use std::sync::Arc;

use arrow_array::{ArrayRef, Int64Array, RecordBatch};
use arrow_buffer::{Buffer, MutableBuffer};
use hydrofeed_tfbridge::{
    lineage, owned_buffer, Frame, FrameDecoder, FrameEncoder, FrameError, FrameHeader, FrameMeta,
    Piece, HEADER_LEN, PIECE_LEN,
};
use proptest::prelude::*;

fn slot(bytes: &[u8]) -> Buffer {
    let mut m = MutableBuffer::from_len_zeroed(bytes.len());
    m.as_slice_mut().copy_from_slice(bytes);
    owned_buffer(Buffer::from(m))
}

fn ids(n: i64) -> RecordBatch {
    RecordBatch::try_from_iter([(
        "id",
        Arc::new(Int64Array::from_iter_values(0..n)) as ArrayRef,
    )])
    .unwrap()
}

fn pieces() -> impl Strategy<Value = Vec<Piece>> {
    proptest::collection::vec(
        (any::<u64>(), any::<u32>(), any::<u64>()).prop_map(|(lease, split, rows)| Piece {
            lease,
            split,
            rows,
        }),
        0..50,
    )
}

proptest! {
    /// Any pieces round-trip, and the batch decodes as if they were not there.
    #[test]
    fn lineage_roundtrips_and_leaves_the_batch_alone(p in pieces(), n in 0i64..200) {
        let b = ids(n);
        let mut enc = FrameEncoder::new(b.schema()).unwrap();
        let mut dec = FrameDecoder::new();
        dec.decode(&slot(&enc.schema_frame(FrameMeta::default()).unwrap().to_vec())).unwrap();
        let f = enc.batch(&b, FrameMeta::default()).unwrap().with_lineage(&p);
        let bytes = f.to_vec();
        prop_assert_eq!(bytes.len(), HEADER_LEN + f.header().payload_len as usize + p.len() * PIECE_LEN);
        let h = FrameHeader::parse(&bytes).unwrap();
        prop_assert_eq!(h.lineage as usize, p.len());
        prop_assert_eq!(lineage(&bytes, &h), p);
        match dec.decode(&slot(&bytes)).unwrap() {
            Frame::Batch(_, got) => prop_assert_eq!(got, b),
            other => prop_assert!(false, "{other:?}"),
        }
    }

    /// A lineage count that does not fit the frame is refused by the header check, whatever it
    /// says; the trailer is never read outside the frame.
    #[test]
    fn a_lineage_count_past_the_frame_is_refused(count in any::<u32>(), cut in 0usize..64) {
        let b = ids(3);
        let mut enc = FrameEncoder::new(b.schema()).unwrap();
        let f = enc.batch(&b, FrameMeta::default()).unwrap().with_lineage(&[Piece { lease: 1, split: 2, rows: 3 }]);
        let mut bytes = f.to_vec();
        bytes[48..52].copy_from_slice(&count.to_le_bytes());
        let keep = bytes.len() - cut.min(PIECE_LEN);
        bytes.truncate(keep);
        let room = bytes.len() - HEADER_LEN - f.header().payload_len as usize;
        match FrameHeader::parse(&bytes) {
            Ok(h) => {
                prop_assert!(h.lineage as usize * PIECE_LEN <= room);
                prop_assert_eq!(lineage(&bytes, &h).len(), h.lineage as usize);
            }
            Err(FrameError::Corrupt(m)) => {
                prop_assert!(count as usize * PIECE_LEN > room);
                prop_assert!(m.contains("lineage"), "{}", m);
            }
            Err(e) => prop_assert!(false, "{e}"),
        }
    }
}
