//! Synthetic MNIST-shaped datasets in every format (`hydrofeed gen`, tests, benches).
//!
//! Each row: `id` int64 (0..N-1, unique: tests use it to prove exactly-once delivery),
//! `image` 784 float32 (about 80% zeros, the rest k/255 like MNIST pixels), `label` int64 0..9,
//! a function of `image` (the tenth of the pixels with the most ink), so models can learn it.
//! Values depend only on `(seed, id)`, so any file layout of the same rows holds the same data
//! and [`mnist_rows`] regenerates any range for comparison.
//!
//! Per format, `image` is 784 float32 in the format's list type:
//! - Parquet: `fixed_size_list<float32, 784>` (snappy, 16k-row row groups);
//! - ORC: `list<float>` (ORC has no fixed-size list; the vendored orc-rust writer's list
//!   support, `vendor/orc-rust`);
//! - Avro: `array<float>` (arrow-avro writer, uncompressed);
//! - TFRecord: `tf.train.Example` with `image` a float_list of 784, `label` and `id` int64_lists
//!   of 1 (plain, GZIP or ZLIB).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_array::{Array, ArrayRef, FixedSizeListArray, Float32Array, Int64Array};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use prost::Message;

use crate::split::Format;
use crate::tfrecord::{Compression, Example, Feature, RecordWriter};
use crate::{Error, Result};

/// Pixels per image.
pub const PIXELS: usize = 784;
/// Rows per batch written (and per Avro block).
const WRITE_ROWS: usize = 4096;

/// What to generate.
#[derive(Debug, Clone)]
pub struct GenOptions {
    /// Output format.
    pub format: Format,
    /// Total rows.
    pub rows: u64,
    /// Number of files the rows are spread over (at least 1).
    pub files: usize,
    /// Seed of the values.
    pub seed: u64,
    /// TFRecord compression.
    pub compression: Compression,
}

impl Default for GenOptions {
    fn default() -> Self {
        Self {
            format: Format::Parquet,
            rows: 1000,
            files: 1,
            seed: 0,
            compression: Compression::None,
        }
    }
}

#[inline]
fn splitmix(x: &mut u64) -> u64 {
    *x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *x;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The label and pixels of row `id`. The label is a function of the pixels, so a model can
/// learn it (the demo's loss falls): the band of [`PIXELS`]` / 10` consecutive pixels holding
/// the most ink (the first such band on a tie): a linear layer can represent it exactly.
pub fn mnist_row(seed: u64, id: u64, pixels: &mut Vec<f32>) -> i64 {
    let mut st = seed ^ id.wrapping_mul(0xd1b5_4a32_d192_ed03);
    // One draw before the pixels, as when the label was drawn at random: the pixels of a
    // (seed, id) stay what they were.
    let _ = splitmix(&mut st);
    pixels.clear();
    let mut i = 0;
    while i < PIXELS {
        let r = splitmix(&mut st);
        // Four pixels per draw: 16 bits each; one in five is ink.
        for k in 0..4 {
            if i + k >= PIXELS {
                break;
            }
            let v = (r >> (16 * k)) as u16;
            pixels.push(if v.is_multiple_of(5) {
                f32::from((v >> 8) as u8) / 255.0
            } else {
                0.0
            });
        }
        i += 4;
    }
    label_of(pixels)
}

/// The label of `pixels`: the index of the band of `PIXELS / 10` pixels with the largest sum.
fn label_of(pixels: &[f32]) -> i64 {
    let band = PIXELS / 10;
    let mut best = (0usize, f32::MIN);
    for (k, c) in pixels.chunks(band).take(10).enumerate() {
        let sum: f32 = c.iter().sum();
        if sum > best.1 {
            best = (k, sum);
        }
    }
    best.0 as i64
}

/// The Arrow schema of the generated data (every format writes it; ORC stores `image` as a
/// list, see the module doc).
pub fn mnist_schema(_format: Format) -> SchemaRef {
    let image = DataType::FixedSizeList(
        Arc::new(Field::new("item", DataType::Float32, false)),
        PIXELS as i32,
    );
    Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("image", image, false),
        Field::new("label", DataType::Int64, false),
    ]))
}

/// Rows `[first_id, first_id + rows)` as a batch of [`mnist_schema`]`(format)`.
pub fn mnist_rows(format: Format, seed: u64, first_id: u64, rows: usize) -> RecordBatch {
    let mut ids = Vec::with_capacity(rows);
    let mut labels = Vec::with_capacity(rows);
    let mut pix = Vec::with_capacity(rows * PIXELS);
    let mut row = Vec::with_capacity(PIXELS);
    for id in first_id..first_id + rows as u64 {
        ids.push(id as i64);
        labels.push(mnist_row(seed, id, &mut row));
        pix.extend_from_slice(&row);
    }
    let schema = mnist_schema(format);
    let image: ArrayRef = Arc::new(FixedSizeListArray::new(
        Arc::new(Field::new("item", DataType::Float32, false)),
        PIXELS as i32,
        Arc::new(Float32Array::from(pix)),
        None,
    ));
    // The columns match the schema by construction.
    RecordBatch::try_new(
        schema,
        vec![
            Arc::new(Int64Array::from(ids)),
            image,
            Arc::new(Int64Array::from(labels)),
        ],
    )
    .unwrap_or_else(|e| unreachable!("mnist batch: {e}"))
}

/// The serialized `tf.train.Example` of one row.
pub fn mnist_example(id: u64, label: i64, pixels: &[f32]) -> Vec<u8> {
    Example::from_features([
        ("id".to_string(), Feature::int64s(vec![id as i64])),
        ("image".to_string(), Feature::floats(pixels.to_vec())),
        ("label".to_string(), Feature::int64s(vec![label])),
    ])
    .encode_to_vec()
}

fn io_err(path: &Path, e: impl std::fmt::Display) -> Error {
    Error::InvalidArgument(format!("{}: cannot write: {e}", path.display()))
}

/// File name of part `i` in `format`.
pub fn part_name(format: Format, i: usize, compression: Compression) -> String {
    let ext = match format {
        Format::Parquet => "parquet",
        Format::Orc => "orc",
        Format::Avro => "avro",
        Format::Tfrecord => match compression {
            Compression::None => "tfrecord",
            Compression::Gzip => "tfrecord.gz",
            Compression::Zlib => "tfrecord.zlib",
        },
    };
    format!("part-{i:05}.{ext}")
}

/// Writes the dataset into `dir` (created if needed), returning the files written.
/// File `i` holds rows `[i * rows / files, (i + 1) * rows / files)`.
pub fn write_dataset(dir: &Path, opts: &GenOptions) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).map_err(|e| io_err(dir, e))?;
    let files = opts.files.max(1);
    let mut out = Vec::with_capacity(files);
    for i in 0..files {
        let lo = opts.rows * i as u64 / files as u64;
        let hi = opts.rows * (i as u64 + 1) / files as u64;
        let path = dir.join(part_name(opts.format, i, opts.compression));
        write_file(&path, opts, lo, hi)?;
        out.push(path);
    }
    Ok(out)
}

/// Writes rows `[lo, hi)` into one file.
pub fn write_file(path: &Path, opts: &GenOptions, lo: u64, hi: u64) -> Result<()> {
    let file = File::create(path).map_err(|e| io_err(path, e))?;
    let batches = (lo..hi).step_by(WRITE_ROWS).map(|first| {
        let n = (hi - first).min(WRITE_ROWS as u64) as usize;
        (first, n)
    });
    match opts.format {
        Format::Parquet => {
            use parquet::arrow::ArrowWriter;
            use parquet::basic::Compression as PqCompression;
            use parquet::file::properties::WriterProperties;
            let props = WriterProperties::builder()
                .set_compression(PqCompression::SNAPPY)
                .set_max_row_group_row_count(Some(16 * 1024))
                .build();
            let mut w = ArrowWriter::try_new(file, mnist_schema(Format::Parquet), Some(props))
                .map_err(|e| io_err(path, e))?;
            for (first, n) in batches {
                w.write(&mnist_rows(Format::Parquet, opts.seed, first, n))
                    .map_err(|e| io_err(path, e))?;
            }
            w.close().map_err(|e| io_err(path, e))?;
        }
        Format::Orc => {
            let mut w = orc_rust::ArrowWriterBuilder::new(file, mnist_schema(Format::Orc))
                .with_stripe_byte_size(16 << 20)
                .try_build()
                .map_err(|e| io_err(path, e))?;
            for (first, n) in batches {
                w.write(&mnist_rows(Format::Orc, opts.seed, first, n))
                    .map_err(|e| io_err(path, e))?;
            }
            w.close().map_err(|e| io_err(path, e))?;
        }
        Format::Avro => {
            let schema = mnist_schema(Format::Avro);
            let mut w =
                arrow_avro::writer::AvroWriter::new(BufWriter::new(file), (*schema).clone())
                    .map_err(|e| io_err(path, e))?;
            for (first, n) in batches {
                w.write(&mnist_rows(Format::Avro, opts.seed, first, n))
                    .map_err(|e| io_err(path, e))?;
            }
            w.finish().map_err(|e| io_err(path, e))?;
            w.into_inner().flush().map_err(|e| io_err(path, e))?;
        }
        Format::Tfrecord => {
            let buf = BufWriter::with_capacity(1 << 20, file);
            let sink: Box<dyn Write> = match opts.compression {
                Compression::None => Box::new(buf),
                Compression::Gzip => Box::new(flate2::write::GzEncoder::new(
                    buf,
                    flate2::Compression::default(),
                )),
                Compression::Zlib => Box::new(flate2::write::ZlibEncoder::new(
                    buf,
                    flate2::Compression::default(),
                )),
            };
            let mut w = RecordWriter::new(sink);
            let mut row = Vec::with_capacity(PIXELS);
            for id in lo..hi {
                let label = mnist_row(opts.seed, id, &mut row);
                w.write_record(&mnist_example(id, label, &row))
                    .map_err(|e| io_err(path, e))?;
            }
            // Dropping a flate2 encoder finishes the stream; flush first to see errors.
            let mut sink = w.into_inner();
            sink.flush().map_err(|e| io_err(path, e))?;
            drop(sink);
        }
    }
    Ok(())
}

/// Checks that a batch read back holds rows of the generated data: for every row, `label` and
/// `image` equal what `(seed, id)` generates. Returns the ids seen, in order.
pub fn verify_batch(batch: &RecordBatch, seed: u64) -> std::result::Result<Vec<i64>, String> {
    let col = |name: &str| {
        batch
            .column_by_name(name)
            .ok_or_else(|| format!("no column {name:?} in {:?}", batch.schema()))
    };
    let ids = col("id")?;
    let ids = ids
        .as_any()
        .downcast_ref::<Int64Array>()
        .ok_or("id is not int64")?;
    let labels = col("label")?;
    let labels = labels
        .as_any()
        .downcast_ref::<Int64Array>()
        .ok_or("label is not int64")?;
    let image = col("image")?;
    let mut row = Vec::with_capacity(PIXELS);
    let mut out = Vec::with_capacity(ids.len());
    for r in 0..batch.num_rows() {
        let id = ids.value(r);
        let label = mnist_row(seed, id as u64, &mut row);
        if labels.value(r) != label {
            return Err(format!(
                "row {r} (id {id}): label {} != {label}",
                labels.value(r)
            ));
        }
        let got: Vec<f32> = if let Some(l) = image.as_any().downcast_ref::<FixedSizeListArray>() {
            let v = l.value(r);
            v.as_any()
                .downcast_ref::<Float32Array>()
                .ok_or("image items not float32")?
                .values()
                .to_vec()
        } else if let Some(l) = image.as_any().downcast_ref::<arrow_array::ListArray>() {
            let v = l.value(r);
            v.as_any()
                .downcast_ref::<Float32Array>()
                .ok_or("image items not float32")?
                .values()
                .to_vec()
        } else {
            return Err(format!("image has unexpected type {}", image.data_type()));
        };
        if got != row {
            return Err(format!("row {r} (id {id}): image differs"));
        }
        out.push(id);
    }
    Ok(out)
}
