//! Unit tests of the `tf.train.Example` decoder.

use super::*;
use arrow_array::Array;
use prost::Message;

fn ex(f: Vec<(&str, Feature)>) -> Vec<u8> {
    Example::from_features(f.into_iter().map(|(k, v)| (k.to_string(), v))).encode_to_vec()
}

#[test]
fn infer_and_decode() {
    let recs = [
        ex(vec![
            ("label", Feature::int64s(vec![3])),
            ("img", Feature::floats(vec![1.0, 2.0])),
            ("tags", Feature::bytes(vec![b"a".to_vec()])),
        ]),
        ex(vec![
            ("label", Feature::int64s(vec![-4])),
            ("img", Feature::floats(vec![3.0, 4.0])),
            ("tags", Feature::bytes(vec![b"b".to_vec(), b"cc".to_vec()])),
        ]),
        ex(vec![("img", Feature::floats(vec![5.0, 6.0]))]),
    ];
    let schema = infer_schema(recs.iter().map(|r| r.as_slice())).unwrap();
    assert_eq!(
        schema.field_with_name("label").unwrap().data_type(),
        &DataType::Int64
    );
    assert!(matches!(
        schema.field_with_name("img").unwrap().data_type(),
        DataType::FixedSizeList(_, 2)
    ));
    assert!(matches!(
        schema.field_with_name("tags").unwrap().data_type(),
        DataType::List(_)
    ));
    let mut d = ExampleDecoder::new(schema).unwrap();
    for r in &recs {
        d.push(r).unwrap();
    }
    // A record of the wrong length is rejected and leaves nothing behind.
    let bad = ex(vec![("img", Feature::floats(vec![1.0]))]);
    assert!(d.push(&bad).unwrap_err().0.contains("fixed_size_list of 2"));
    let cols = d.finish().unwrap();
    let img = cols[0]
        .as_any()
        .downcast_ref::<FixedSizeListArray>()
        .unwrap();
    assert_eq!(img.len(), 3);
    let label = cols[1].as_any().downcast_ref::<Int64Array>().unwrap();
    assert_eq!(label.value(1), -4);
    assert!(label.is_null(2));
    let tags = cols[2].as_any().downcast_ref::<ListArray>().unwrap();
    assert_eq!(tags.value_length(1), 2);
    assert!(tags.is_null(2));
}

#[test]
fn unpacked_encodings() {
    // float_list with two unpacked floats, int64_list with two unpacked varints.
    let mut fl = vec![0x0d];
    fl.extend(1.5f32.to_le_bytes());
    fl.push(0x0d);
    fl.extend(2.5f32.to_le_bytes());
    let il = vec![0x08, 0x05, 0x08, 0x07];
    let feat = |tag: u8, body: &[u8]| {
        let mut f = vec![tag, body.len() as u8];
        f.extend(body);
        f
    };
    let entry = |k: &str, f: Vec<u8>| {
        let mut e = vec![0x0a, k.len() as u8];
        e.extend(k.as_bytes());
        e.push(0x12);
        e.push(f.len() as u8);
        e.extend(f);
        let mut m = vec![0x0a, e.len() as u8];
        m.extend(e);
        m
    };
    let mut feats = entry("f", feat(0x12, &fl));
    feats.extend(entry("i", feat(0x1a, &il)));
    let mut rec = vec![0x0a, feats.len() as u8];
    rec.extend(feats);
    let schema = infer_schema([rec.as_slice()]).unwrap();
    let mut d = ExampleDecoder::new(schema).unwrap();
    d.push(&rec).unwrap();
    let cols = d.finish().unwrap();
    let f = cols[0]
        .as_any()
        .downcast_ref::<FixedSizeListArray>()
        .unwrap();
    let fv = f.values().as_any().downcast_ref::<Float32Array>().unwrap();
    assert_eq!(fv.values().as_ref(), &[1.5, 2.5]);
    let i = cols[1]
        .as_any()
        .downcast_ref::<FixedSizeListArray>()
        .unwrap();
    let iv = i.values().as_any().downcast_ref::<Int64Array>().unwrap();
    assert_eq!(iv.values().as_ref(), &[5, 7]);
}
