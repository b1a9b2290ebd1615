use std::sync::Arc;

use arrow_array::builder::{FixedSizeListBuilder, Float32Builder};
use arrow_array::{Array, Int64Array, RecordBatch, StringArray};
use arrow_buffer::MutableBuffer;
use arrow_schema::{DataType, Field, Schema};

use super::*;
use crate::rebatch::tests::nested_floats;
use crate::rebatch::Rowset;

/// `n` rows from `lo`: an int64 id, a nested fixed-size list of floats (2 x 3 per row), and
/// (with `text`) a string.
fn rows(lo: usize, n: usize, text: bool) -> RecordBatch {
    let image = nested_floats(lo, n);
    let mut fields = vec![
        Field::new("id", DataType::Int64, false),
        Field::new("image", image.data_type().clone(), false),
    ];
    let mut columns: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from_iter_values(lo as i64..(lo + n) as i64)),
        Arc::new(image),
    ];
    if text {
        fields.push(Field::new("name", DataType::Utf8, false));
        columns.push(Arc::new(StringArray::from_iter_values(
            (lo..lo + n).map(|i| format!("row {i}")),
        )));
    }
    RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).unwrap()
}

/// Sources that start mid-batch (sliced), and a shuffled index over them.
fn sources(text: bool) -> (Arc<[RecordBatch]>, Vec<(usize, usize)>) {
    let s: Arc<[RecordBatch]> = Arc::from(vec![
        rows(0, 10, text).slice(3, 7),
        rows(10, 5, text),
        rows(15, 9, text).slice(1, 6),
    ]);
    let mut index: Vec<(usize, usize)> = s
        .iter()
        .enumerate()
        .flat_map(|(i, b)| (0..b.num_rows()).map(move |r| (i, r)))
        .collect();
    // A fixed permutation, with some consecutive rows left together.
    index.reverse();
    index.swap(0, 7);
    index.swap(3, 11);
    (s, index)
}

fn interleaved(s: &[RecordBatch], index: &[(usize, usize)]) -> RecordBatch {
    let refs: Vec<&RecordBatch> = s.iter().collect();
    arrow_select::interleave::interleave_record_batch(&refs, index).unwrap()
}

#[test]
fn gathered_rows_are_arrows_interleave_of_them_cut_anywhere() {
    for text in [false, true] {
        let (s, index) = sources(text);
        let want = interleaved(&s, &index);
        let g = Gather::rows(s.clone(), &index);
        assert_eq!(g.num_rows(), index.len());
        assert_eq!(g.materialize().unwrap(), want, "text: {text}");
        // Cut in three and put together again, in a new gather.
        let parts = vec![g.slice(0, 5), g.slice(5, 1), g.slice(6, g.num_rows() - 6)];
        assert_eq!(parts[1].materialize().unwrap(), want.slice(5, 1));
        assert_eq!(Gather::concat(parts).materialize().unwrap(), want);
    }
}

#[test]
fn whole_batches_and_their_slices_glue_without_interleaving() {
    let (a, b) = (rows(0, 300, true), rows(300, 200, true));
    let g = Gather::concat(vec![
        Gather::from(a.clone()).slice(100, 200),
        Gather::from(b.clone()),
    ]);
    // Two runs: materialized by gluing them.
    assert_eq!(g.slices().count(), 2);
    let want = arrow_select::concat::concat_batches(&a.schema(), &[a.slice(100, 200), b]).unwrap();
    assert_eq!(g.materialize().unwrap(), want);
    // One run is a slice of its batch: no copy.
    let one = Gather::from(a.clone()).slice(7, 9);
    assert_eq!(one.as_slice().unwrap(), a.slice(7, 9));
    assert!(g.as_slice().is_none());
}

#[test]
fn fixed_width_columns_fill_the_bytes_their_batch_would_hold() {
    let (s, index) = sources(false);
    let g = Gather::rows(s.clone(), &index).slice(2, 15);
    let want = interleaved(&s, &index).slice(2, 15);
    let widths = g.row_bytes().expect("fixed-width columns");
    assert_eq!(widths, [8, 24]);
    let zeros: Buffer = MutableBuffer::from_len_zeroed(g.placeholder_bytes(&widths)).into();
    let (layout, holders) = g.placeholder(&widths, &zeros).unwrap();
    assert_eq!(layout.schema(), want.schema());
    assert_eq!(layout.num_rows(), 15);
    for (c, w) in widths.iter().enumerate() {
        assert_eq!(holders[c].len(), 15 * w);
        let mut bytes = vec![0u8; 15 * w];
        g.fill(c, *w, &mut bytes).unwrap();
        let filled = fixed_array(want.schema().field(c).data_type(), 15, Buffer::from(bytes));
        assert_eq!(&filled.unwrap(), want.column(c), "column {c}");
    }
    // A wrong length is refused, not overrun.
    assert!(g.fill(0, 8, &mut [0u8; 8]).is_err());
}

#[test]
fn strings_and_nulls_are_not_filled() {
    let (s, index) = sources(true);
    assert!(Gather::rows(s, &index).row_bytes().is_none());
    let mut with_null = FixedSizeListBuilder::new(Float32Builder::new(), 2);
    with_null.values().append_slice(&[1.0, 2.0]);
    with_null.append(true);
    with_null.values().append_slice(&[0.0, 0.0]);
    with_null.append(false);
    let a = with_null.finish();
    let schema = Arc::new(Schema::new(vec![Field::new(
        "v",
        a.data_type().clone(),
        true,
    )]));
    let b = RecordBatch::try_new(schema, vec![Arc::new(a)]).unwrap();
    assert!(Gather::from(b).row_bytes().is_none());
}
