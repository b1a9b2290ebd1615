//! Dictionary columns: through a small ring (the decoder must not pin the slot a dictionary
//! came in), across discarded frames (the encoder's dictionary state follows what was
//! committed), and larger than the ring (a clear error).

use std::sync::Arc;
use std::time::Duration;

use arrow_array::cast::AsArray;
use arrow_array::types::Int32Type;
use arrow_array::Array;
use arrow_array::{ArrayRef, DictionaryArray, Int64Array, RecordBatch, StringArray};
use arrow_buffer::{Buffer, MutableBuffer};
use hydrofeed_ipc::{heap_pair, RingConfig};
use hydrofeed_tfbridge::{
    owned_buffer, Encoded, Frame, FrameDecoder, FrameEncoder, FrameError, FrameMeta,
};

/// `rows` rows whose `tag` column is a dictionary over `values` (row i -> values[i % n]).
fn dict_batch(first: i64, rows: usize, values: &Arc<StringArray>) -> RecordBatch {
    let n = values.len() as i32;
    let keys = arrow_array::Int32Array::from_iter_values((0..rows as i32).map(|i| i % n));
    let tag = DictionaryArray::<Int32Type>::try_new(keys, values.clone() as ArrayRef).unwrap();
    let id = Int64Array::from_iter_values(first..first + rows as i64);
    RecordBatch::try_from_iter([
        ("id", Arc::new(id) as ArrayRef),
        ("tag", Arc::new(tag) as ArrayRef),
    ])
    .unwrap()
}

fn tags(b: &RecordBatch) -> Vec<String> {
    let d = b.column(1).as_dictionary::<Int32Type>();
    let v = d.values().as_string::<i32>();
    d.keys()
        .iter()
        .map(|k| v.value(k.unwrap() as usize).to_string())
        .collect()
}

/// A 64-byte aligned slot holding `f`, as a ring reservation would.
fn slot(f: &hydrofeed_tfbridge::Encoded) -> Buffer {
    let mut m = MutableBuffer::from_len_zeroed(f.len());
    f.write_to(m.as_slice_mut()).unwrap();
    owned_buffer(Buffer::from(m))
}

/// The dictionary travels in the first batch frame only (later batches share its values);
/// the decoder keeps it for them. It must keep its own copy: holding the first frame's slot
/// would pin every slot after it and the producer would wait for space forever.
#[test]
fn kept_dictionary_does_not_pin_the_ring() {
    let values = Arc::new(StringArray::from_iter_values(
        (0..50).map(|i| format!("category-{i}")),
    ));
    let schema = dict_batch(0, 1, &values).schema();
    let (mut prod, mut cons) = heap_pair(RingConfig {
        capacity: 64 << 10,
        max_frame: None,
    })
    .unwrap();
    let batches = 200usize;
    let rows = 100usize;
    let writer = std::thread::spawn(move || {
        let mut enc = FrameEncoder::new(schema).unwrap();
        let mut put = |enc: &mut FrameEncoder, f: Encoded| -> Result<(), String> {
            let mut r = prod
                .reserve(f.len(), Duration::from_secs(5))
                .map_err(|e| format!("reserve: {e}"))?;
            f.write_to(&mut r).unwrap();
            r.commit();
            enc.commit(&f).unwrap();
            Ok(())
        };
        let f = enc.schema_frame(FrameMeta::default()).unwrap();
        put(&mut enc, f)?;
        for i in 0..batches {
            let b = dict_batch((i * rows) as i64, rows, &values);
            let f = enc.batch(&b, FrameMeta::default()).unwrap();
            put(&mut enc, f)?;
        }
        Ok::<(), String>(())
    });
    let mut dec = FrameDecoder::new();
    let mut seen = 0usize;
    while let Some(slot) = cons.next(Duration::from_secs(10)).unwrap() {
        if let Frame::Batch(_, b) = dec.decode(&owned_buffer(slot)).unwrap() {
            let want: Vec<String> = (0..rows).map(|r| format!("category-{}", r % 50)).collect();
            assert_eq!(tags(&b), want);
            seen += b.num_rows();
        }
    }
    writer
        .join()
        .unwrap()
        .expect("the producer stalled: a slot stayed pinned");
    assert_eq!(seen, batches * rows);
}

/// A frame that was encoded and then thrown away (the producer splits a batch too large for
/// the ring) must not count as having sent its dictionary.
#[test]
fn discarded_frame_does_not_count_as_sent() {
    let v1 = Arc::new(StringArray::from(vec!["a", "b", "c"]));
    let v2 = Arc::new(StringArray::from(vec!["x", "y", "z"]));
    let b1 = dict_batch(0, 4, &v1);
    let b2 = dict_batch(4, 4, &v2);
    let mut enc = FrameEncoder::new(b1.schema()).unwrap();
    let mut dec = FrameDecoder::new();
    dec.decode(&slot(&enc.schema_frame(FrameMeta::default()).unwrap()))
        .unwrap();

    // Encoded, then discarded: the reader never sees it. Its halves share its dictionary.
    let _discarded = enc.batch(&b1, FrameMeta::default()).unwrap();
    let half = enc.batch(&b1.slice(0, 2), FrameMeta::default()).unwrap();
    let Frame::Batch(_, got) = dec.decode(&slot(&half)).expect("half of a split batch") else {
        panic!("not a batch")
    };
    assert_eq!(tags(&got), ["a", "b"]);

    // The reader now holds v1. A frame with v2 is discarded; the next frame with v2 must
    // carry it, or the reader decodes v2's keys against v1: wrong values, no error.
    let _discarded = enc.batch(&b2, FrameMeta::default()).unwrap();
    let f = enc.batch(&b2.slice(1, 3), FrameMeta::default()).unwrap();
    let Frame::Batch(_, got) = dec.decode(&slot(&f)).unwrap() else {
        panic!("not a batch")
    };
    assert_eq!(tags(&got), ["y", "z", "x"]);
}

/// Committed frames are remembered: an unchanged dictionary is not sent again.
#[test]
fn committed_dictionary_is_not_resent() {
    let v = Arc::new(StringArray::from_iter_values(
        (0..1000).map(|i| format!("a fairly long category name {i}")),
    ));
    let b = dict_batch(0, 10, &v);
    let mut enc = FrameEncoder::new(b.schema()).unwrap();
    let mut dec = FrameDecoder::new();
    let s = enc.schema_frame(FrameMeta::default()).unwrap();
    dec.decode(&slot(&s)).unwrap();
    let first = enc.batch(&b, FrameMeta::default()).unwrap();
    dec.decode(&slot(&first)).unwrap();
    enc.commit(&first).unwrap();
    let second = enc.batch(&b.slice(2, 5), FrameMeta::default()).unwrap();
    assert!(
        second.len() < first.len() / 4,
        "dictionary sent again: {} vs {} bytes",
        second.len(),
        first.len()
    );
    let Frame::Batch(_, got) = dec.decode(&slot(&second)).unwrap() else {
        panic!()
    };
    assert_eq!(tags(&got), tags(&b.slice(2, 5)));
    enc.commit(&second).unwrap();
    // Committing a frame twice, or one that is not the latest encoded, is refused.
    assert!(enc.commit(&first).is_err());
}

/// A dictionary that alone is larger than the ring's largest frame can never travel: the
/// error names the column and both sizes, instead of "frame too large" after halving the
/// batch down to one row.
#[test]
fn dictionary_larger_than_a_frame_is_a_clear_error() {
    let v = Arc::new(StringArray::from_iter_values(
        (0..20_000).map(|i| format!("{i:0>100}")),
    ));
    let b = dict_batch(0, 100, &v);
    let mut enc = FrameEncoder::new(b.schema()).unwrap();
    enc.schema_frame(FrameMeta::default()).unwrap();
    let max = 512 << 10;
    let err = enc
        .batch_within(&b.slice(0, 1), FrameMeta::default(), max)
        .unwrap_err();
    let FrameError::DictionaryTooLarge {
        ref column,
        bytes,
        max_frame,
    } = err
    else {
        panic!("{err}")
    };
    assert_eq!(column, "tag");
    assert!(bytes > 2_000_000, "{bytes}");
    assert_eq!(max_frame, max);
    let msg = err.to_string();
    assert!(
        msg.contains("\"tag\"") && msg.contains(&max.to_string()),
        "{msg}"
    );
    // A batch whose frame fits is encoded as usual.
    let small = dict_batch(0, 10, &Arc::new(StringArray::from(vec!["p", "q"])));
    let mut enc = FrameEncoder::new(small.schema()).unwrap();
    enc.schema_frame(FrameMeta::default()).unwrap();
    assert!(enc.batch_within(&small, FrameMeta::default(), max).is_ok());
}
