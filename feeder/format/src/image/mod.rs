//! Images decoded as part of reading: a binary column of JPEG or PNG bytes becomes a `uint8`
//! tensor column of one fixed shape `(H, W, 3)` (see docs/formats.md, Images).
//!
//! The spec, one per column, is `COLUMN=OP,OP,...` (several columns separated by `;`):
//!
//! - `resize:S[:FILTER]`: the shorter side to `S` pixels, the aspect ratio kept;
//! - `size:HxW[:FILTER]`: exactly `H` x `W` pixels;
//! - `crop:S` or `crop:HxW`: the center `H` x `W`; `randcrop:...`: a random one;
//! - `flip`: a random horizontal flip, one row in two;
//! - `seed:N`: the seed of the random choices (default: the job's seed, see [`for_epoch`]);
//! - `maxpixels:N`: the most pixels an image may declare (default 89478485, Pillow's);
//! - `exif`: the image turned upright by its EXIF orientation first, as Pillow's
//!   `ImageOps.exif_transpose` does (without it the orientation is ignored, as TensorFlow's
//!   `decode_jpeg` ignores it);
//! - `gpu`: decoded on the trainer's GPU (nvJPEG) instead: the feeder reads each JPEG's header,
//!   checks it and places the crop and the flip, and sends the encoded bytes with that plan
//!   (see [`plan_name`] and python/hydrofeed/images.py).
//!
//! `FILTER` is `nearest`, `bilinear` (default), `bicubic` or `lanczos`, each as Pillow defines
//! it. The output size must be fixed: a `crop` or a `size`. Random choices are a function of
//! (seed, epoch, split, row), so a run and its exact resume produce the same pixels. JPEGs are
//! decoded by libjpeg-turbo, at the smallest DCT scale (1/8, 1/4, 1/2) that still covers the
//! resize target, and under a crop only within the region the crop needs. JPEG, PNG and WebP
//! columns; binary, or a struct with a binary `bytes` field (Hugging Face `datasets`' layout).

mod column;
mod decode;
mod exif;
#[cfg(test)]
mod reader_tests;
mod region;
#[cfg(test)]
mod tests;

use std::borrow::Cow;
use std::fmt;

pub use column::{image_schema, plan_name, source_schema, tensor_type, ImageReader};
pub use decode::{decode_image, Decoded};

/// Pillow's `Image.MAX_IMAGE_PIXELS`: images declaring more pixels are refused.
pub const DEFAULT_MAX_PIXELS: u64 = 89_478_485;

/// A resampling filter, as Pillow names and defines it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Filter {
    /// Nearest neighbour.
    Nearest,
    /// Triangle filter (Pillow's `BILINEAR`, TensorFlow's `antialias=True` bilinear).
    #[default]
    Bilinear,
    /// Cubic convolution with a = -0.5 (Pillow's `BICUBIC`).
    Bicubic,
    /// Lanczos, 3 lobes (Pillow's `LANCZOS`).
    Lanczos,
}

impl Filter {
    fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "nearest" => Filter::Nearest,
            "bilinear" => Filter::Bilinear,
            "bicubic" => Filter::Bicubic,
            "lanczos" => Filter::Lanczos,
            _ => return None,
        })
    }

    /// The filter's name in a spec.
    pub fn name(self) -> &'static str {
        match self {
            Filter::Nearest => "nearest",
            Filter::Bilinear => "bilinear",
            Filter::Bicubic => "bicubic",
            Filter::Lanczos => "lanczos",
        }
    }
}

/// The resize step of a spec.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resize {
    /// The shorter side to this many pixels, the aspect ratio kept (rounded as Pillow's
    /// `ImageOps` does: the longer side `round(long * s / short)`).
    Shorter(u32),
    /// Exactly (height, width).
    Exact(u32, u32),
}

/// How a column of encoded images is decoded: one column's spec.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageSpec {
    /// The column holding the encoded bytes (binary, large binary, or a struct with a binary
    /// `bytes` field, as Hugging Face `datasets` writes its `Image` feature).
    pub column: String,
    /// The resize, if any.
    pub resize: Option<Resize>,
    /// The resize filter.
    pub filter: Filter,
    /// The crop (height, width), if any.
    pub crop: Option<(u32, u32)>,
    /// Whether the crop's place is random (else centered).
    pub random_crop: bool,
    /// Random horizontal flip.
    pub flip: bool,
    /// Seed of the random choices.
    pub seed: u64,
    /// Whether `seed` was given (`seed:N`); else the job's seed replaces it ([`for_epoch`]).
    pub seed_given: bool,
    /// The epoch (set by the reader's caller, [`for_epoch`]): part of the random choices.
    pub epoch: u64,
    /// The most pixels (width x height) an image may declare.
    pub max_pixels: u64,
    /// Whether the EXIF orientation is applied (`exif`); else ignored.
    pub exif: bool,
    /// Whether the trainer decodes on its GPU (`gpu`): the feeder sends the bytes and a plan.
    pub gpu: bool,
}

impl ImageSpec {
    /// The output (height, width): the crop, else the exact size.
    pub fn out_size(&self) -> (u32, u32) {
        match (self.crop, self.resize) {
            (Some(c), _) => c,
            (None, Some(Resize::Exact(h, w))) => (h, w),
            _ => unreachable!("a parsed spec has a fixed size"),
        }
    }

    /// Parses one column's spec, `COLUMN=OP,OP,...` (see the module docs).
    pub fn parse(text: &str) -> Result<Self, String> {
        let bad = |why: String| format!("image spec {text:?}: {why}");
        let (column, ops) = text.split_once('=').ok_or_else(|| {
            bad("expected COLUMN=OP,OP,... (e.g. image=resize:256,crop:224,flip)".into())
        })?;
        let column = column.trim();
        if column.is_empty() {
            return Err(bad("no column name before '='".into()));
        }
        let mut spec = ImageSpec {
            column: column.to_string(),
            resize: None,
            filter: Filter::default(),
            crop: None,
            random_crop: false,
            flip: false,
            seed: 0,
            seed_given: false,
            epoch: 0,
            max_pixels: DEFAULT_MAX_PIXELS,
            exif: false,
            gpu: false,
        };
        for op in ops.split(',').map(str::trim).filter(|o| !o.is_empty()) {
            let mut parts = op.split(':');
            let name = parts.next().unwrap_or_default();
            let args: Vec<&str> = parts.collect();
            let arg = |i: usize| -> Result<&str, String> {
                args.get(i)
                    .copied()
                    .ok_or_else(|| bad(format!("{name} needs a value ({name}:...)")))
            };
            let filter_at = |i: usize| -> Result<Filter, String> {
                match args.get(i) {
                    None => Ok(Filter::default()),
                    Some(f) => Filter::parse(f).ok_or_else(|| {
                        bad(format!(
                            "unknown filter {f:?} (nearest, bilinear, bicubic, lanczos)"
                        ))
                    }),
                }
            };
            match name {
                "resize" => {
                    spec.resize = Some(Resize::Shorter(side(arg(0)?).map_err(bad)?));
                    spec.filter = filter_at(1)?;
                }
                "size" => {
                    let (h, w) = dims(arg(0)?).map_err(bad)?;
                    spec.resize = Some(Resize::Exact(h, w));
                    spec.filter = filter_at(1)?;
                }
                "crop" | "randcrop" => {
                    spec.crop = Some(dims(arg(0)?).map_err(bad)?);
                    spec.random_crop = name == "randcrop";
                }
                "flip" => spec.flip = true,
                "seed" => {
                    spec.seed = arg(0)?
                        .parse()
                        .map_err(|_| bad(format!("seed {:?} is not a number", args[0])))?;
                    spec.seed_given = true;
                }
                "maxpixels" => {
                    spec.max_pixels = arg(0)?
                        .parse()
                        .map_err(|_| bad(format!("maxpixels {:?} is not a number", args[0])))?
                }
                "exif" => spec.exif = true,
                "gpu" => spec.gpu = true,
                _ => {
                    return Err(bad(format!(
                        "unknown operation {name:?} (resize, size, crop, randcrop, flip, seed, \
                         maxpixels, exif, gpu)"
                    )))
                }
            }
        }
        if spec.gpu && spec.exif {
            return Err(bad(
                "exif is applied by the feeder's decode, not with gpu (drop one of them)".into(),
            ));
        }
        if spec.crop.is_none() && !matches!(spec.resize, Some(Resize::Exact(..))) {
            return Err(bad(
                "the output needs one fixed size: give crop:S, randcrop:S or size:HxW".into(),
            ));
        }
        if let (Some((ch, cw)), Some(Resize::Exact(h, w))) = (spec.crop, spec.resize) {
            if ch > h || cw > w {
                return Err(bad(format!("crop {ch}x{cw} is larger than size {h}x{w}")));
            }
        }
        Ok(spec)
    }

    /// Parses several columns' specs separated by `;`.
    pub fn parse_all(text: &str) -> Result<Vec<Self>, String> {
        let specs: Vec<Self> = text
            .split(';')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(Self::parse)
            .collect::<Result<_, _>>()?;
        for (i, s) in specs.iter().enumerate() {
            if specs[..i].iter().any(|o| o.column == s.column) {
                return Err(format!("image spec {text:?}: column {:?} twice", s.column));
            }
        }
        Ok(specs)
    }
}

fn side(s: &str) -> Result<u32, String> {
    match s.parse::<u32>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!("{s:?} is not a size in pixels")),
    }
}

fn dims(s: &str) -> Result<(u32, u32), String> {
    match s.split_once('x') {
        Some((h, w)) => Ok((side(h)?, side(w)?)),
        None => {
            let n = side(s)?;
            Ok((n, n))
        }
    }
}

impl fmt::Display for ImageSpec {
    /// The spec as [`ImageSpec::parse`] reads it back (the epoch is not part of it).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}=", self.column)?;
        let mut ops: Vec<String> = Vec::new();
        let filter = if self.filter == Filter::default() {
            String::new()
        } else {
            format!(":{}", self.filter.name())
        };
        match self.resize {
            Some(Resize::Shorter(s)) => ops.push(format!("resize:{s}{filter}")),
            Some(Resize::Exact(h, w)) => ops.push(format!("size:{h}x{w}{filter}")),
            None => {}
        }
        if let Some((h, w)) = self.crop {
            let op = if self.random_crop { "randcrop" } else { "crop" };
            ops.push(format!("{op}:{h}x{w}"));
        }
        if self.flip {
            ops.push("flip".into());
        }
        if self.seed_given {
            ops.push(format!("seed:{}", self.seed));
        }
        if self.max_pixels != DEFAULT_MAX_PIXELS {
            ops.push(format!("maxpixels:{}", self.max_pixels));
        }
        if self.exif {
            ops.push("exif".into());
        }
        if self.gpu {
            ops.push("gpu".into());
        }
        f.write_str(&ops.join(","))
    }
}

/// `read` as epoch `epoch` of a job seeded `job_seed` reads it: each image spec's epoch set, and
/// its seed the job's where the spec gives none (`seed:N`), so random crops and flips differ
/// from one epoch and one job seed to the next, and repeat in an exact resume. Borrowed as it
/// is when no column is an image.
pub fn for_epoch(
    read: &crate::ReadOptions,
    job_seed: u64,
    epoch: u64,
) -> Cow<'_, crate::ReadOptions> {
    if read.images.is_empty() {
        return Cow::Borrowed(read);
    }
    let mut read = read.clone();
    for spec in &mut read.images {
        spec.epoch = epoch;
        if !spec.seed_given {
            spec.seed = job_seed;
        }
    }
    Cow::Owned(read)
}

/// The random choices for one row: 64 bits from (seed, epoch, split, row) by SplitMix64.
pub(crate) fn row_random(seed: u64, epoch: u64, split: u32, row: u64) -> u64 {
    let mut z = seed;
    for v in [epoch, u64::from(split), row] {
        z = mix(z ^ v.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    }
    z
}

fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}
