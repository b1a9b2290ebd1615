//! `hydrofeed gen`: writes a synthetic MNIST-shaped dataset (see [`hydrofeed_format::gen`]), or
//! with `--images` an ImageNet-like one of JPEGs (see [`hydrofeed_format::gen_images`]).

use std::path::PathBuf;

use hydrofeed_format::gen::{write_dataset, GenOptions};
use hydrofeed_format::gen_images::{write_image_dataset, ImageGenOptions};
use hydrofeed_format::split::Format;
use hydrofeed_format::tfrecord::Compression;

use crate::read_args::FormatArg;

/// TFRecord compression of `hydrofeed gen`.
#[derive(Debug, Clone, Copy, Default, clap::ValueEnum)]
pub enum GenCompression {
    /// Plain records.
    #[default]
    None,
    /// GZIP.
    Gzip,
    /// ZLIB.
    Zlib,
}

/// Arguments of `hydrofeed gen`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Output format: `image` is a `fixed_size_list<float32, 784>` in Parquet, a `list<float>`
    /// of 784 in ORC (ORC has no fixed-size list), an `array<float>` in Avro, a float list of
    /// a tf.train.Example in TFRecord.
    #[arg(long, value_enum)]
    pub format: FormatArg,
    /// Total rows.
    #[arg(long, default_value_t = 60_000)]
    pub rows: u64,
    /// Output directory (created if needed).
    #[arg(long)]
    pub out: PathBuf,
    /// Number of files.
    #[arg(long, default_value_t = 1)]
    pub files: usize,
    /// Seed of the values.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// TFRecord compression.
    #[arg(long, value_enum, default_value_t = GenCompression::None)]
    pub compression: GenCompression,
    /// ImageNet-like JPEGs instead (about 500x375, quality 90, some grayscale and progressive):
    /// Parquet `image` binary + `label` int64, or TFRecord tf.train.Example with
    /// `image/encoded` + `image/class/label` as ImageNet's TFRecords. `--rows` defaults to 60000
    /// here too: about 7 GB; give fewer.
    #[arg(long, conflicts_with = "compression")]
    pub images: bool,
}

/// Runs `hydrofeed gen`.
pub fn run(args: Args) -> anyhow::Result<()> {
    let files = if args.images {
        let opts = ImageGenOptions {
            format: Format::from(args.format),
            rows: args.rows,
            files: args.files,
            seed: args.seed,
        };
        write_image_dataset(&args.out, &opts)?
    } else {
        write_mnist(&args)?
    };
    let bytes: u64 = files
        .iter()
        .filter_map(|f| std::fs::metadata(f).ok())
        .map(|m| m.len())
        .sum();
    println!(
        "wrote {} rows in {} files ({:.1} MB) to {}",
        args.rows,
        files.len(),
        bytes as f64 / 1e6,
        args.out.display()
    );
    Ok(())
}

fn write_mnist(args: &Args) -> anyhow::Result<Vec<std::path::PathBuf>> {
    let opts = GenOptions {
        format: Format::from(args.format),
        rows: args.rows,
        files: args.files,
        seed: args.seed,
        compression: match args.compression {
            GenCompression::None => Compression::None,
            GenCompression::Gzip => Compression::Gzip,
            GenCompression::Zlib => Compression::Zlib,
        },
    };
    Ok(write_dataset(&args.out, &opts)?)
}
