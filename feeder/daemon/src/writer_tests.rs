use std::sync::Arc;

use arrow_array::{ArrayRef, StringArray};
use arrow_schema::{DataType, Field, Schema};
use hydrofeed_format::gen::mnist_rows;
use hydrofeed_format::split::Format;
use hydrofeed_tfbridge::{Frame, FrameDecoder};

use super::*;

/// `n` generated rows from `lo` (an id, 784 floats, a label) and, with `text`, a string.
fn rows(lo: usize, n: usize, text: bool) -> RecordBatch {
    let b = mnist_rows(Format::Parquet, 3, lo as u64, n);
    if !text {
        return b;
    }
    let mut fields: Vec<Field> = b.schema().fields().iter().map(|f| (**f).clone()).collect();
    fields.push(Field::new("name", DataType::Utf8, false));
    let mut columns: Vec<ArrayRef> = b.columns().to_vec();
    columns.push(Arc::new(StringArray::from_iter_values(
        (lo..lo + n).map(|i| format!("r{i}")),
    )));
    RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).unwrap()
}

/// Rows of three batches (two sliced) in a scrambled order.
fn scrambled(text: bool) -> Gather {
    let sources: Arc<[RecordBatch]> = Arc::from(vec![
        rows(0, 40, text).slice(5, 30),
        rows(40, 25, text),
        rows(65, 50, text).slice(10, 33),
    ]);
    let mut index = Vec::new();
    for k in 0..88usize {
        let j = (k * 37) % 88;
        let (b, r) = match j {
            j if j < 30 => (0, j),
            j if j < 55 => (1, j - 30),
            j => (2, j - 55),
        };
        index.push((b, r));
    }
    Gather::rows(sources, &index)
}

fn meta() -> FrameMeta {
    FrameMeta {
        epoch: 2,
        split: 7,
        seq: 11,
        rows: 0,
    }
}

/// Two encoders of the same stream, each past its schema frame.
fn encoders(g: &Gather) -> (FrameEncoder, FrameEncoder) {
    let schema = g.schema().unwrap();
    let mut a = FrameEncoder::new(schema.clone()).unwrap();
    let mut b = FrameEncoder::new(schema).unwrap();
    a.schema_frame(meta()).unwrap();
    b.schema_frame(meta()).unwrap();
    (a, b)
}

/// A gathered frame, written from the rows' batches into a slot, is byte for byte the frame
/// of the batch made from them, and decodes to that batch; every cut of it too.
#[test]
fn gathered_frames_are_the_frames_of_the_batch_they_would_make() {
    let all = scrambled(false);
    let mut zeros = Buffer::from_vec(Vec::<u8>::new());
    for (lo, n) in [(0, 88), (3, 1), (17, 40), (60, 28)] {
        let g = all.slice(lo, n);
        let (mut direct, mut made) = encoders(&g);
        let f = Gathered::encode(&mut direct, &g, meta(), &mut zeros)
            .unwrap()
            .expect("fixed-width columns are written straight");
        let mut slot = vec![0xa5u8; f.frame.len()];
        f.frame
            .write_filling(&mut slot, &mut |i, s| f.fill(&g, i, s))
            .unwrap();
        let batch = g.materialize().unwrap();
        let want = made.batch(&batch, meta()).unwrap().to_vec();
        assert_eq!(slot, want, "rows {lo}..{}", lo + n);
        let mut dec = FrameDecoder::new();
        let schema_frame = encoders(&g).0.schema_frame(meta()).unwrap().to_vec();
        dec.decode(&Buffer::from(schema_frame.as_slice())).unwrap();
        match dec.decode(&Buffer::from(slot.as_slice())).unwrap() {
            Frame::Batch(m, b) => {
                assert_eq!(m.rows, n as u64);
                assert_eq!(b, batch);
            }
            other => panic!("not a batch frame: {other:?}"),
        }
    }
    // The placeholder memory is only ever address space: nothing wrote into it.
    assert!(zeros.as_slice().iter().all(|&b| b == 0));
}

/// A column that is not fixed-width (a string) is not written straight: the batch is made.
#[test]
fn rows_with_a_string_column_are_made_into_their_batch() {
    let g = scrambled(true);
    let (mut enc, _) = encoders(&g);
    let mut zeros = Buffer::from_vec(Vec::<u8>::new());
    assert!(Gathered::encode(&mut enc, &g, meta(), &mut zeros)
        .unwrap()
        .is_none());
}
