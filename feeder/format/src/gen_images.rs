//! Synthetic ImageNet-like JPEG datasets (`hydrofeed gen --images`, image tests and the
//! `bench images` benchmark).
//!
//! Each row: `image`, the bytes of one JPEG, and `label` int64 in `0..1000`. The JPEGs are
//! shaped as ImageNet's training images are on average: about 500 x 375 (landscape, one in five
//! portrait, sizes varied by about +-12%), quality 90, 4:2:0 chroma subsampling, about one in ten
//! grayscale and one in ten progressive. The pixels are smooth colour gradients with a few
//! textured discs and rectangles and a grain of noise, so a JPEG of them holds about as many
//! bytes as a photograph of that size (100 to 150 KB); flat noise would be far larger, flat
//! colour far smaller, and either would decode at an untypical speed. Encoded by libjpeg-turbo
//! (the `turbojpeg` crate the reader decodes with). Every row depends only on `(seed, id)`
//! ([`image_row`]), so any file layout of the same rows holds the same bytes.
//!
//! Per format:
//! - Parquet: `image` binary, `label` int64 (uncompressed: JPEG bytes do not compress; 256-row
//!   row groups, about 30 MB each);
//! - TFRecord: `tf.train.Example` with the features of ImageNet's TFRecords (TensorFlow's
//!   `build_imagenet_data.py`): `image/encoded` (bytes), `image/class/label` (int64),
//!   `image/format` (`JPEG`), `image/height`, `image/width` (int64).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{ArrayRef, BinaryArray, Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use prost::Message;
use rayon::prelude::*;

use crate::split::Format;
use crate::tfrecord::{Example, Feature, RecordWriter};
use crate::{Error, Result};

/// Rows encoded (in parallel) and written per step; also the Parquet row group size.
const WRITE_ROWS: usize = 256;
/// JPEG quality of every image.
pub const QUALITY: i32 = 90;
/// Half the range of the per-pixel grain added to the shapes and gradients.
const GRAIN: i32 = 40;

/// What to generate.
#[derive(Debug, Clone)]
pub struct ImageGenOptions {
    /// Output format: Parquet or TFRecord.
    pub format: Format,
    /// Total rows.
    pub rows: u64,
    /// Number of files the rows are spread over (at least 1).
    pub files: usize,
    /// Seed of the images.
    pub seed: u64,
}

/// One generated row: the JPEG and what it was made as.
#[derive(Debug, Clone)]
pub struct ImageRow {
    /// The JPEG bytes.
    pub jpeg: Vec<u8>,
    /// The label, `0..1000`.
    pub label: i64,
    /// Pixel rows.
    pub height: u32,
    /// Pixel columns.
    pub width: u32,
    /// Encoded as one grayscale component.
    pub grayscale: bool,
    /// Encoded progressive.
    pub progressive: bool,
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `[lo, hi]`.
    fn range(&mut self, lo: i32, hi: i32) -> i32 {
        lo + (self.next() % (hi - lo + 1) as u64) as i32
    }
}

/// A shape drawn over the background: inside it, its colour plus a stripe texture.
struct Shape {
    disc: bool,
    cx: i32,
    cy: i32,
    rx: i32,
    ry: i32,
    color: [i32; 3],
    /// Stripe period in pixels and amplitude.
    period: i32,
    amp: i32,
}

impl Shape {
    fn contains(&self, x: i32, y: i32) -> bool {
        let (dx, dy) = (x - self.cx, y - self.cy);
        if self.disc {
            let (dx, dy) = (i64::from(dx), i64::from(dy));
            let (rx, ry) = (i64::from(self.rx), i64::from(self.ry));
            dx * dx * ry * ry + dy * dy * rx * rx <= rx * rx * ry * ry
        } else {
            dx.abs() <= self.rx && dy.abs() <= self.ry
        }
    }

    /// The texture at `(x, y)`: a triangle wave across the shape, diagonal.
    fn texture(&self, x: i32, y: i32) -> i32 {
        let p = (x + y).rem_euclid(self.period);
        let tri = (2 * p - self.period).abs(); // 0..=period
        self.amp * (2 * tri - self.period) / self.period
    }
}

/// The pixels (RGB, row-major) of an image of `w` x `h` drawn from `rng`.
fn draw(rng: &mut Rng, w: i32, h: i32) -> Vec<u8> {
    let base: Vec<[i32; 3]> = (0..3)
        .map(|_| [rng.range(40, 215), rng.range(-90, 90), rng.range(-90, 90)])
        .collect();
    let shapes: Vec<Shape> = (0..rng.range(3, 7))
        .map(|_| Shape {
            disc: rng.next().is_multiple_of(2),
            cx: rng.range(0, w),
            cy: rng.range(0, h),
            rx: rng.range(15, w / 4),
            ry: rng.range(15, h / 4),
            color: [rng.range(0, 255), rng.range(0, 255), rng.range(0, 255)],
            period: rng.range(4, 24),
            amp: rng.range(5, 40),
        })
        .collect();
    let mut grain = Rng(rng.next());
    let mut px = Vec::with_capacity((w * h * 3) as usize);
    for y in 0..h {
        for x in 0..w {
            // The last shape containing the pixel is on top.
            let top = shapes.iter().rev().find(|s| s.contains(x, y));
            let g = grain.next();
            for (c, b) in base.iter().enumerate() {
                let v = match top {
                    Some(s) => s.color[c] + s.texture(x, y),
                    None => b[0] + b[1] * x / w + b[2] * y / h,
                };
                let noise = ((g >> (16 * c)) % (2 * GRAIN as u64 + 1)) as i32 - GRAIN;
                px.push((v + noise).clamp(0, 255) as u8);
            }
        }
    }
    px
}

/// Row `id` of the dataset of `seed`.
pub fn image_row(seed: u64, id: u64) -> Result<ImageRow> {
    let mut rng = Rng(seed ^ id.wrapping_mul(0xd1b5_4a32_d192_ed03));
    let label = (rng.next() % 1000) as i64;
    let portrait = rng.next().is_multiple_of(5);
    let (long, short) = (rng.range(440, 560), rng.range(330, 420));
    let (w, h) = if portrait {
        (short, long)
    } else {
        (long, short)
    };
    let grayscale = rng.next().is_multiple_of(10);
    let progressive = rng.next().is_multiple_of(10);
    let rgb = draw(&mut rng, w, h);
    let err = |e: turbojpeg::Error| Error::InvalidArgument(format!("JPEG encoder: {e}"));
    let mut enc = turbojpeg::Compressor::new().map_err(err)?;
    enc.set_quality(QUALITY).map_err(err)?;
    enc.set_progressive(progressive).map_err(err)?;
    let (pixels, format) = if grayscale {
        enc.set_subsamp(turbojpeg::Subsamp::Gray).map_err(err)?;
        // Luma as libjpeg computes it (ITU-R BT.601), so the gray image is the colour one's.
        let gray: Vec<u8> = rgb
            .chunks_exact(3)
            .map(|p| {
                let (r, g, b) = (u32::from(p[0]), u32::from(p[1]), u32::from(p[2]));
                ((19595 * r + 38470 * g + 7471 * b + 32768) >> 16) as u8
            })
            .collect();
        (gray, turbojpeg::PixelFormat::GRAY)
    } else {
        enc.set_subsamp(turbojpeg::Subsamp::Sub2x2).map_err(err)?;
        (rgb, turbojpeg::PixelFormat::RGB)
    };
    let image = turbojpeg::Image {
        pixels: pixels.as_slice(),
        width: w as usize,
        pitch: w as usize * format.size(),
        height: h as usize,
        format,
    };
    let jpeg = enc.compress_to_vec(image).map_err(err)?;
    Ok(ImageRow {
        jpeg,
        label,
        height: h as u32,
        width: w as u32,
        grayscale,
        progressive,
    })
}

/// The Arrow schema of the generated Parquet files.
pub fn image_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("image", DataType::Binary, false),
        Field::new("label", DataType::Int64, false),
    ]))
}

/// Rows `[first, first + n)`, encoded on the rayon pool.
pub fn image_rows(seed: u64, first: u64, n: usize) -> Result<Vec<ImageRow>> {
    (first..first + n as u64)
        .into_par_iter()
        .map(|id| image_row(seed, id))
        .collect()
}

/// The serialized `tf.train.Example` of one row (ImageNet's feature names).
pub fn image_example(row: &ImageRow) -> Vec<u8> {
    Example::from_features([
        (
            "image/encoded".to_string(),
            Feature::bytes(vec![row.jpeg.clone()]),
        ),
        (
            "image/class/label".to_string(),
            Feature::int64s(vec![row.label]),
        ),
        (
            "image/format".to_string(),
            Feature::bytes(vec![b"JPEG".to_vec()]),
        ),
        (
            "image/height".to_string(),
            Feature::int64s(vec![i64::from(row.height)]),
        ),
        (
            "image/width".to_string(),
            Feature::int64s(vec![i64::from(row.width)]),
        ),
    ])
    .encode_to_vec()
}

fn io_err(path: &Path, e: impl std::fmt::Display) -> Error {
    Error::InvalidArgument(format!("{}: cannot write: {e}", path.display()))
}

/// Writes the dataset into `dir` (created if needed), returning the files written. File `i`
/// holds rows `[i * rows / files, (i + 1) * rows / files)`, named as `gen`'s parts are.
pub fn write_image_dataset(dir: &Path, opts: &ImageGenOptions) -> Result<Vec<PathBuf>> {
    if !matches!(opts.format, Format::Parquet | Format::Tfrecord) {
        return Err(Error::InvalidArgument(format!(
            "gen --images writes Parquet or TFRecord, not {:?}",
            opts.format
        )));
    }
    std::fs::create_dir_all(dir).map_err(|e| io_err(dir, e))?;
    let files = opts.files.max(1);
    let mut out = Vec::with_capacity(files);
    for i in 0..files {
        let lo = opts.rows * i as u64 / files as u64;
        let hi = opts.rows * (i as u64 + 1) / files as u64;
        let name = crate::gen::part_name(opts.format, i, crate::tfrecord::Compression::None);
        let path = dir.join(name);
        write_file(&path, opts, lo, hi)?;
        out.push(path);
    }
    Ok(out)
}

fn write_file(path: &Path, opts: &ImageGenOptions, lo: u64, hi: u64) -> Result<()> {
    let file = File::create(path).map_err(|e| io_err(path, e))?;
    let steps = (lo..hi).step_by(WRITE_ROWS).map(|first| {
        let n = (hi - first).min(WRITE_ROWS as u64) as usize;
        (first, n)
    });
    if opts.format == Format::Parquet {
        use parquet::arrow::ArrowWriter;
        use parquet::basic::Compression as PqCompression;
        use parquet::file::properties::WriterProperties;
        let props = WriterProperties::builder()
            .set_compression(PqCompression::UNCOMPRESSED)
            .set_dictionary_enabled(false)
            .set_max_row_group_row_count(Some(WRITE_ROWS))
            .build();
        let mut w =
            ArrowWriter::try_new(file, image_schema(), Some(props)).map_err(|e| io_err(path, e))?;
        for (first, n) in steps {
            let rows = image_rows(opts.seed, first, n)?;
            let images: ArrayRef = Arc::new(BinaryArray::from_iter_values(
                rows.iter().map(|r| r.jpeg.as_slice()),
            ));
            let labels: ArrayRef =
                Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.label)));
            let batch = RecordBatch::try_new(image_schema(), vec![images, labels])
                .map_err(|e| io_err(path, e))?;
            w.write(&batch).map_err(|e| io_err(path, e))?;
            w.flush().map_err(|e| io_err(path, e))?;
        }
        w.close().map_err(|e| io_err(path, e))?;
    } else {
        let mut w = RecordWriter::new(BufWriter::with_capacity(1 << 20, file));
        for (first, n) in steps {
            for row in image_rows(opts.seed, first, n)? {
                w.write_record(&image_example(&row))
                    .map_err(|e| io_err(path, e))?;
            }
        }
        w.into_inner().flush().map_err(|e| io_err(path, e))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_seeded_jpegs_of_the_stated_shape() {
        let a = image_row(7, 3).unwrap();
        let b = image_row(7, 3).unwrap();
        assert_eq!(a.jpeg, b.jpeg);
        assert_ne!(a.jpeg, image_row(8, 3).unwrap().jpeg);
        let rows = image_rows(1, 0, 40).unwrap();
        for r in &rows {
            let head = turbojpeg::read_header(&r.jpeg).unwrap();
            assert_eq!(
                (head.width, head.height),
                (r.width as usize, r.height as usize)
            );
            assert_eq!(head.colorspace == turbojpeg::Colorspace::Gray, r.grayscale);
            assert!((0..1000).contains(&r.label));
            assert!(r.width.min(r.height) >= 330 && r.width.max(r.height) <= 560);
        }
        assert!(rows.iter().any(|r| r.grayscale) && rows.iter().any(|r| r.progressive));
        let kb = rows.iter().map(|r| r.jpeg.len()).sum::<usize>() / rows.len() / 1000;
        assert!((60..=200).contains(&kb), "{kb} KB on average");
    }

    #[test]
    fn other_formats_are_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let opts = ImageGenOptions {
            format: Format::Orc,
            rows: 1,
            files: 1,
            seed: 0,
        };
        let e = write_image_dataset(dir.path(), &opts).unwrap_err();
        assert!(e.to_string().contains("Parquet or TFRecord"), "{e}");
    }
}
