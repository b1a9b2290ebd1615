//! Image columns through `plan` and `open_split`: the tensor column, and bad rows raised or
//! skipped by position.

use std::sync::Arc;

use arrow_array::{
    Array, ArrayRef, BinaryArray, FixedSizeListArray, Int64Array, RecordBatch, StringArray,
    StructArray, UInt8Array,
};
use arrow_schema::{DataType, Field, Schema};
use hydrofeed_storage::{local::LocalStorage, Storage};

use super::ImageSpec;
use crate::{open_split, plan, Error, OnError, ReadOptions};

fn png_gray(w: u32, h: u32, v: u8) -> Vec<u8> {
    let mut out = Vec::new();
    let mut enc = png::Encoder::new(&mut out, w, h);
    enc.set_color(png::ColorType::Grayscale);
    let mut wr = enc.write_header().unwrap();
    wr.write_image_data(&vec![v; (w * h) as usize]).unwrap();
    wr.finish().unwrap();
    out
}

fn write(dir: &std::path::Path, images: Vec<Vec<u8>>) -> String {
    write_column(dir, Arc::new(BinaryArray::from_iter_values(images)))
}

/// A Parquet file of `id` (0, 1, ...) and `image` (`images`).
fn write_column(dir: &std::path::Path, images: ArrayRef) -> String {
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("image", images.data_type().clone(), true),
    ]));
    let n = images.len() as i64;
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![Arc::new(Int64Array::from_iter_values(0..n)), images],
    )
    .unwrap();
    let path = dir.join("part-0.parquet");
    let f = std::fs::File::create(&path).unwrap();
    let mut w = parquet::arrow::ArrowWriter::try_new(f, schema, None).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
    path.to_string_lossy().into_owned()
}

/// The `id` column (the first) of every batch.
fn ids(batches: &[RecordBatch]) -> Vec<i64> {
    batches
        .iter()
        .flat_map(|b| {
            let a = b.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
            a.values().to_vec()
        })
        .collect()
}

fn read(
    path: &str,
    on_error: OnError,
) -> crate::Result<(Vec<RecordBatch>, Vec<crate::SkippedRows>)> {
    read_spec(path, "image=size:6x8,crop:4x4", on_error)
}

#[test]
fn an_image_column_arrives_as_a_uint8_tensor() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        (0..5).map(|i| png_gray(10, 7, i * 10)).collect(),
    );
    let (batches, skipped) = read(&path, OnError::Raise).unwrap();
    assert!(skipped.is_empty());
    let b = &batches[0];
    assert_eq!(b.num_rows(), 5);
    assert_eq!(b.schema().field(1).data_type(), &super::tensor_type(4, 4));
    let col = b
        .column(1)
        .as_any()
        .downcast_ref::<FixedSizeListArray>()
        .unwrap();
    let rows = col.value(3);
    let px = rows
        .as_any()
        .downcast_ref::<FixedSizeListArray>()
        .unwrap()
        .value(2);
    let px = px
        .as_any()
        .downcast_ref::<FixedSizeListArray>()
        .unwrap()
        .value(1);
    let px = px.as_any().downcast_ref::<UInt8Array>().unwrap();
    assert_eq!(px.values().as_ref(), &[30, 30, 30]);
}

#[test]
fn a_bad_image_names_file_row_and_column_or_is_skipped_by_position() {
    let dir = tempfile::tempdir().unwrap();
    let mut images: Vec<Vec<u8>> = (0..6).map(|i| png_gray(10, 7, i * 10)).collect();
    images[4].truncate(40);
    let path = write(dir.path(), images);
    let e = read(&path, OnError::Raise).unwrap_err();
    assert!(matches!(e, Error::Data { .. }), "{e}");
    let msg = e.to_string();
    assert!(
        msg.contains("part-0.parquet") && msg.contains("row 4") && msg.contains("\"image\""),
        "{msg}"
    );
    let (batches, skipped) = read(&path, OnError::Skip).unwrap();
    assert_eq!(ids(&batches), [0, 1, 2, 3, 5]);
    assert_eq!(skipped.len(), 1);
    assert_eq!((skipped[0].start, skipped[0].end), (4, 5));
}

#[test]
fn a_column_that_is_not_binary_is_a_schema_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), vec![png_gray(8, 8, 1)]);
    let storage: Arc<dyn Storage> = Arc::new(LocalStorage);
    let opts = ReadOptions {
        images: vec![ImageSpec::parse("id=crop:2").unwrap()],
        ..Default::default()
    };
    let e = plan(&storage, &path, &opts).unwrap_err().to_string();
    assert!(
        e.contains("image column \"id\" is Int64, not binary") && e.contains("\"bytes\" field"),
        "{e}"
    );
}

#[test]
fn a_struct_of_bytes_and_path_is_decoded_under_its_name() {
    let dir = tempfile::tempdir().unwrap();
    let images: Vec<Vec<u8>> = (0..4).map(|i| png_gray(10, 7, i * 10)).collect();
    let mut bytes: Vec<Option<&[u8]>> = images.iter().map(|b| Some(b.as_slice())).collect();
    bytes[2] = None; // kept by path only
    let st = StructArray::from(vec![
        (
            Arc::new(Field::new("bytes", DataType::Binary, true)),
            Arc::new(BinaryArray::from(bytes)) as ArrayRef,
        ),
        (
            Arc::new(Field::new("path", DataType::Utf8, true)),
            Arc::new(StringArray::from(vec!["a.png", "b.png", "c.png", "d.png"])) as ArrayRef,
        ),
    ]);
    let path = write_column(dir.path(), Arc::new(st));
    let e = read(&path, OnError::Raise).unwrap_err().to_string();
    assert!(
        e.contains("row 2") && e.contains("\"bytes\" is null") && e.contains("c.png"),
        "{e}"
    );
    let (batches, skipped) = read(&path, OnError::Skip).unwrap();
    assert_eq!(skipped.len(), 1);
    let b = &batches[0];
    assert_eq!(b.schema().field(1).name(), "image");
    assert_eq!(b.schema().field(1).data_type(), &super::tensor_type(4, 4));
    assert_eq!(b.num_rows(), 3);
    let flat = b.column(1).to_data().child_data()[0].child_data()[0].child_data()[0].clone();
    let px = UInt8Array::from(flat);
    // Row 3 (the third kept): gray 30 everywhere.
    assert!(px.values()[2 * 48..].iter().all(|&v| v == 30));
}

/// Every batch of `path` read with one image spec, and the rows skipped.
fn read_spec(
    path: &str,
    spec: &str,
    on_error: OnError,
) -> crate::Result<(Vec<RecordBatch>, Vec<crate::SkippedRows>)> {
    let storage: Arc<dyn Storage> = Arc::new(LocalStorage);
    let opts = ReadOptions {
        images: vec![ImageSpec::parse(spec).unwrap()],
        on_error,
        ..Default::default()
    };
    let p = plan(&storage, path, &opts)?;
    let mut out = Vec::new();
    let mut skipped = Vec::new();
    for s in &p.splits {
        let mut r = open_split(&storage, &p, s, &opts)?;
        assert_eq!(r.schema(), p.schema);
        for b in r.by_ref() {
            out.push(b?);
        }
        skipped.extend(r.skipped_rows().iter().cloned());
    }
    Ok((out, skipped))
}

#[test]
fn with_gpu_the_bytes_travel_with_a_plan_from_the_header() {
    let dir = tempfile::tempdir().unwrap();
    let sizes = [(40, 30), (30, 40), (64, 48), (17, 50), (40, 30), (40, 30)];
    let images: Vec<Vec<u8>> = sizes
        .iter()
        .map(|&(w, h)| super::tests::jpeg(w, h))
        .collect();
    let path = write(dir.path(), images.clone());
    let spec = "image=resize:8,randcrop:6,flip,seed:3,gpu";
    let b = &read_spec(&path, spec, OnError::Raise).unwrap().0[0];
    let schema = b.schema();
    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    assert_eq!(names, ["id", "image", "image.plan"]);
    let md = schema.field(1).metadata();
    assert_eq!(md["hydrofeed.image.size"], "6x6");
    assert_eq!(md["hydrofeed.image.filter"], "bilinear");
    assert_eq!(
        md["hydrofeed.image.gpu"],
        "image=resize:8,randcrop:6x6,flip,seed:3,gpu"
    );
    let bytes = b.column(1).as_any().downcast_ref::<BinaryArray>().unwrap();
    for (i, img) in images.iter().enumerate() {
        assert_eq!(bytes.value(i), img.as_slice(), "row {i}'s bytes");
    }
    let plan = b
        .column(2)
        .as_any()
        .downcast_ref::<FixedSizeListArray>()
        .unwrap();
    let mut flips = 0;
    let mut places = std::collections::HashSet::new();
    for (i, &(w, h)) in sizes.iter().enumerate() {
        let (w, h) = (w as i32, h as i32);
        let p = plan.value(i);
        let p = p
            .as_any()
            .downcast_ref::<arrow_array::Int32Array>()
            .unwrap();
        let [ph, pw, rh, rw, top, left, flip] = p.values()[..] else {
            panic!("row {i}: plan {:?}", p.values())
        };
        assert_eq!((ph, pw), (h, w), "row {i}: the header's size");
        // The shorter side to 8, the longer rounded as the feeder's own resize does.
        let long = |l: i32, s: i32| (l * 8 + s / 2) / s;
        let want = if w <= h {
            (long(h, w), 8)
        } else {
            (8, long(w, h))
        };
        assert_eq!((rh, rw), want, "row {i}");
        assert!(
            top >= 0 && left >= 0 && top + 6 <= rh && left + 6 <= rw,
            "row {i}"
        );
        assert!(flip == 0 || flip == 1);
        flips += flip;
        places.insert((top, left));
    }
    assert!(places.len() > 1, "the crop is placed per row: {places:?}");
    assert!(
        flips > 0 && flips < 6,
        "one row in two flipped: {flips} of 6"
    );
    // A second read repeats the plan (the draws are the row's, not the thread's).
    let again = &read_spec(&path, spec, OnError::Raise).unwrap().0[0];
    assert_eq!(again.column(2), b.column(2));
}

#[test]
fn with_gpu_a_png_or_a_bad_header_is_the_rows_error_or_skipped_by_position() {
    let dir = tempfile::tempdir().unwrap();
    let mut images: Vec<Vec<u8>> = (0..5).map(|_| super::tests::jpeg(20, 20)).collect();
    images[1] = png_gray(20, 20, 9);
    images[3].truncate(10);
    let path = write(dir.path(), images);
    let spec = "image=crop:8,gpu";
    let e = read_spec(&path, spec, OnError::Raise)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("row 1") && e.contains("a PNG") && e.contains("gpu decodes JPEG only"),
        "{e}"
    );
    let (b, skipped) = read_spec(&path, spec, OnError::Skip).unwrap();
    assert_eq!(skipped.iter().map(|r| r.start).collect::<Vec<_>>(), [1, 3]);
    assert_eq!(ids(&b), [0, 2, 4]);
    assert!(ImageSpec::parse("image=crop:8,gpu,exif")
        .unwrap_err()
        .contains("exif"));
}
