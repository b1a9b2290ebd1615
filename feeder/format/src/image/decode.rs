//! One image: bytes to RGB pixels (libjpeg-turbo for JPEG, the `png` crate for PNG, `image-webp`
//! for WebP), then resize (`fast_image_resize`), crop and flip into the output row.

use fast_image_resize as fr;

use super::{exif, region, row_random, Filter, ImageSpec, Resize};

/// Decoded RGB pixels, row-major, 3 bytes a pixel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decoded {
    /// Rows.
    pub height: u32,
    /// Columns.
    pub width: u32,
    /// `height * width * 3` bytes.
    pub pixels: Vec<u8>,
}

/// Decodes `data` (JPEG, PNG or WebP, told by its first bytes) to RGB. `target`, when given,
/// lets a JPEG be decoded at the smallest DCT scale (1/2, 1/4 or 1/8, rounded up as libjpeg
/// does, as Pillow's `draft()` chooses it) whose size still covers it. An image declaring more
/// than `max_pixels` pixels is refused before anything is allocated for it.
pub fn decode_image(
    data: &[u8],
    max_pixels: u64,
    target: Option<Resize>,
) -> Result<Decoded, String> {
    match Kind::of(data) {
        Some(Kind::Jpeg) => decode_jpeg(data, max_pixels, target),
        Some(Kind::Png) => decode_png(data, max_pixels),
        Some(Kind::Webp) => decode_webp(data, max_pixels),
        None => Err(format!(
            "not a JPEG, PNG or WebP image ({})",
            first_bytes(data)
        )),
    }
}

/// The kinds of image the feeder knows, told by their first bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Jpeg,
    Png,
    Webp,
}

impl Kind {
    fn of(data: &[u8]) -> Option<Self> {
        if data.starts_with(&[0xFF, 0xD8, 0xFF]) {
            Some(Kind::Jpeg)
        } else if data.starts_with(b"\x89PNG\r\n\x1a\n") {
            Some(Kind::Png)
        } else if data.len() >= 12 && &data[..4] == b"RIFF" && &data[8..12] == b"WEBP" {
            Some(Kind::Webp)
        } else {
            None
        }
    }
}

/// `data`'s size and first bytes, for an error about what it is.
fn first_bytes(data: &[u8]) -> String {
    let head: Vec<String> = data.iter().take(8).map(|b| format!("{b:02x}")).collect();
    format!(
        "{} bytes, starting {}",
        data.len(),
        if head.is_empty() {
            "empty".to_string()
        } else {
            head.join(" ")
        }
    )
}

/// Whether the random choice `r` of a row flips its image under `spec`: the feeder's decode
/// and the plan of a GPU decode ([`gpu_plan`]) draw it alike.
fn flips(spec: &ImageSpec, r: u64) -> bool {
    spec.flip && (super::mix(r) >> 63) == 1
}

fn check_pixels(kind: &str, w: u64, h: u64, max_pixels: u64) -> Result<(), String> {
    if w == 0 || h == 0 {
        return Err(format!("{kind} declares an empty image ({w}x{h})"));
    }
    if w * h > max_pixels {
        return Err(format!(
            "{kind} declares {w}x{h} = {} pixels, over the limit of {max_pixels} \
             (a decompression bomb? raise it with maxpixels:N)",
            w * h
        ));
    }
    Ok(())
}

/// The DCT scale denominator (1, 2, 4 or 8) for an image of `w` x `h` decoded toward `target`.
pub(crate) fn jpeg_scale(w: u32, h: u32, target: Option<Resize>) -> u32 {
    let scaled = |n: u32, d: u32| n.div_ceil(d);
    let fits = |d: u32| match target {
        None => d == 1,
        Some(Resize::Shorter(s)) => scaled(w.min(h), d) >= s,
        Some(Resize::Exact(th, tw)) => scaled(w, d) >= tw && scaled(h, d) >= th,
    };
    [8, 4, 2].into_iter().find(|&d| fits(d)).unwrap_or(1)
}

/// A JPEG's header, read by `dec` and checked: the pixel limit, and the kinds refused by name
/// (CMYK, YCCK, lossless).
fn jpeg_header(
    dec: &mut turbojpeg::Decompressor,
    data: &[u8],
    max_pixels: u64,
) -> Result<turbojpeg::DecompressHeader, String> {
    let head = dec
        .read_header(data)
        .map_err(|e| format!("bad JPEG header: {e}"))?;
    check_pixels("JPEG", head.width as u64, head.height as u64, max_pixels)?;
    match head.colorspace {
        turbojpeg::Colorspace::CMYK | turbojpeg::Colorspace::YCCK => {
            return Err(format!(
                "{:?} JPEG is not supported (convert it to RGB or grayscale)",
                head.colorspace
            ))
        }
        _ => {}
    }
    if head.is_lossless {
        return Err("lossless JPEG is not supported".into());
    }
    Ok(head)
}

fn decode_jpeg(data: &[u8], max_pixels: u64, target: Option<Resize>) -> Result<Decoded, String> {
    let mut dec = turbojpeg::Decompressor::new().map_err(|e| format!("JPEG decoder: {e}"))?;
    let head = jpeg_header(&mut dec, data, max_pixels)?;
    let d = jpeg_scale(head.width as u32, head.height as u32, target);
    let factor = turbojpeg::ScalingFactor::new(1, d as usize);
    dec.set_scaling_factor(factor)
        .map_err(|e| format!("JPEG decoder: {e}"))?;
    let (w, h) = (factor.scale(head.width), factor.scale(head.height));
    let mut img = turbojpeg::Image {
        pixels: vec![0u8; w * h * 3],
        width: w,
        pitch: w * 3,
        height: h,
        format: turbojpeg::PixelFormat::RGB,
    };
    dec.decompress(data, img.as_deref_mut())
        .map_err(|e| format!("corrupt JPEG: {e}"))?;
    Ok(Decoded {
        height: h as u32,
        width: w as u32,
        pixels: img.pixels,
    })
}

fn decode_png(data: &[u8], max_pixels: u64) -> Result<Decoded, String> {
    // The first chunk is IHDR (width and height at bytes 16..24): the limit holds before the
    // decoder reads further.
    if data.len() >= 24 && &data[12..16] == b"IHDR" {
        let be = |b: &[u8]| u64::from(u32::from_be_bytes([b[0], b[1], b[2], b[3]]));
        check_pixels("PNG", be(&data[16..20]), be(&data[20..24]), max_pixels)?;
    }
    let mut dec = png::Decoder::new_with_limits(
        std::io::Cursor::new(data),
        png::Limits {
            bytes: (max_pixels as usize).saturating_mul(8),
        },
    );
    dec.set_transformations(png::Transformations::EXPAND);
    let mut reader = dec.read_info().map_err(|e| format!("bad PNG: {e}"))?;
    let info = reader.info();
    let (w, h) = (info.width, info.height);
    check_pixels("PNG", u64::from(w), u64::from(h), max_pixels)?;
    if info.bit_depth == png::BitDepth::Sixteen {
        return Err("16-bit PNG is not supported (write 8-bit samples)".into());
    }
    let mut buf = vec![0u8; reader.output_buffer_size()];
    let out = reader
        .next_frame(&mut buf)
        .map_err(|e| format!("corrupt PNG: {e}"))?;
    let n = (w as usize) * (h as usize);
    let channels = match out.color_type {
        png::ColorType::Grayscale => 1,
        png::ColorType::GrayscaleAlpha => 2,
        png::ColorType::Rgb => 3,
        png::ColorType::Rgba => 4,
        png::ColorType::Indexed => return Err("PNG palette was not expanded".into()),
    };
    let src = &buf[..n * channels];
    // To RGB as Pillow's convert("RGB"): gray replicated, alpha dropped (not composited).
    let pixels = match channels {
        3 => src.to_vec(),
        _ => {
            let mut px = Vec::with_capacity(n * 3);
            for p in src.chunks_exact(channels) {
                match channels {
                    1 | 2 => px.extend_from_slice(&[p[0], p[0], p[0]]),
                    _ => px.extend_from_slice(&p[..3]),
                }
            }
            px
        }
    };
    Ok(Decoded {
        height: h,
        width: w,
        pixels,
    })
}

/// WebP by `image-webp` (lossy with libwebp's default "fancy" chroma upsampling); alpha
/// dropped as Pillow's `convert("RGB")` drops it. Animated WebP is refused.
fn decode_webp(data: &[u8], max_pixels: u64) -> Result<Decoded, String> {
    let mut dec = image_webp::WebPDecoder::new(std::io::Cursor::new(data))
        .map_err(|e| format!("bad WebP: {e}"))?;
    let (w, h) = dec.dimensions();
    check_pixels("WebP", u64::from(w), u64::from(h), max_pixels)?;
    if dec.is_animated() {
        return Err("animated WebP is not supported".into());
    }
    let n = (w as usize) * (h as usize);
    let channels = if dec.has_alpha() { 4 } else { 3 };
    let mut buf = vec![0u8; n * channels];
    dec.read_image(&mut buf)
        .map_err(|e| format!("corrupt WebP: {e}"))?;
    if channels == 3 {
        return Ok(Decoded {
            height: h,
            width: w,
            pixels: buf,
        });
    }
    let mut pixels = Vec::with_capacity(n * 3);
    for p in buf.chunks_exact(4) {
        pixels.extend_from_slice(&p[..3]);
    }
    Ok(Decoded {
        height: h,
        width: w,
        pixels,
    })
}

/// The size a resize gives an image of `w` x `h`: (height, width).
pub(crate) fn resized(w: u32, h: u32, resize: Option<Resize>) -> (u32, u32) {
    let scale = |long: u32, short: u32, s: u32| {
        ((u64::from(long) * u64::from(s) + u64::from(short) / 2) / u64::from(short)).max(1) as u32
    };
    match resize {
        None => (h, w),
        Some(Resize::Exact(th, tw)) => (th, tw),
        Some(Resize::Shorter(s)) if w <= h => (scale(h, w, s), s),
        Some(Resize::Shorter(s)) => (s, scale(w, h, s)),
    }
}

/// The `oh` x `ow` crop at (`top`, `left`) of an image resized to `rh` x `rw`, from `img`: the
/// window of that image's decoded `full` (width, height) pixels whose top left is `origin`
/// (all of it at (0, 0), or the region a region decode read). Only the crop's part is resized
/// (a crop box in source pixels, the filter windows reaching past it into the image as they
/// would in the whole resize), so a 256 -> 224 crop resizes a third fewer pixels than resizing
/// the whole image and cropping it.
fn resize_crop(
    img: ImageView<'_>,
    (ox, oy): (u32, u32),
    (fw, fh): (u32, u32),
    (rh, rw): (u32, u32),
    (top, left, oh, ow): (u32, u32, u32, u32),
    filter: Filter,
    out: &mut [u8],
) -> Result<(), String> {
    if (fh, fw) == (rh, rw) {
        let (iw, ow) = (img.width as usize, ow as usize);
        let left = (left - ox) as usize;
        let rows = (top - oy) as usize..(top - oy + oh) as usize;
        for (y, dst) in rows.zip(out.chunks_exact_mut(ow * 3)) {
            dst.copy_from_slice(&img.pixels[(y * iw + left) * 3..][..ow * 3]);
        }
        return Ok(());
    }
    let src = fr::images::ImageRef::new(img.width, img.height, img.pixels, fr::PixelType::U8x3)
        .map_err(|e| format!("resize: {e}"))?;
    let mut dst = fr::images::Image::from_slice_u8(ow, oh, out, fr::PixelType::U8x3)
        .map_err(|e| format!("resize: {e}"))?;
    let alg = match filter {
        Filter::Nearest => fr::ResizeAlg::Nearest,
        Filter::Bilinear => fr::ResizeAlg::Convolution(fr::FilterType::Bilinear),
        Filter::Bicubic => fr::ResizeAlg::Convolution(fr::FilterType::CatmullRom),
        Filter::Lanczos => fr::ResizeAlg::Convolution(fr::FilterType::Lanczos3),
    };
    let (sx, sy) = (f64::from(fw) / f64::from(rw), f64::from(fh) / f64::from(rh));
    // The box ends inside the image: rounding may put `(left + ow) * sx` past its edge.
    let (x, y) = (
        f64::from(left) * sx - f64::from(ox),
        f64::from(top) * sy - f64::from(oy),
    );
    let opts = fr::ResizeOptions::new().resize_alg(alg).crop(
        x,
        y,
        (f64::from(ow) * sx).min(f64::from(img.width) - x),
        (f64::from(oh) * sy).min(f64::from(img.height) - y),
    );
    RESIZER
        .with_borrow_mut(|r| r.resize(&src, &mut dst, &opts))
        .map_err(|e| format!("resize: {e}"))
}

/// Decoded RGB pixels borrowed: rows of `width * 3` bytes.
#[derive(Clone, Copy)]
struct ImageView<'a> {
    width: u32,
    height: u32,
    pixels: &'a [u8],
}

impl Decoded {
    fn view(&self) -> ImageView<'_> {
        ImageView {
            width: self.width,
            height: self.height,
            pixels: &self.pixels,
        }
    }
}

thread_local! {
    /// Each decode thread's resizer (its buffers kept from one image to the next).
    static RESIZER: std::cell::RefCell<fr::Resizer> = std::cell::RefCell::new(fr::Resizer::new());
    /// Each decode thread's region decoder and the buffer it decodes into, kept from one image
    /// to the next: a libjpeg-turbo handle and a few hundred KB of fresh pages an image were
    /// allocated, faulted in and freed again.
    static REGION: std::cell::RefCell<Option<(region::Decoder, Vec<u8>)>> =
        const { std::cell::RefCell::new(None) };
}

/// The crop's (top, left) in an image resized to `rh` x `rw`: centered, or placed by `r`.
fn crop_place(spec: &ImageSpec, (rh, rw): (u32, u32), r: u64) -> Result<(u32, u32), String> {
    let (oh, ow) = spec.out_size();
    if rh < oh || rw < ow {
        return Err(format!(
            "image is {rh}x{rw} after the resize, smaller than the crop {oh}x{ow}"
        ));
    }
    Ok(if spec.random_crop {
        (
            (r % u64::from(rh - oh + 1)) as u32,
            ((r >> 32) % u64::from(rw - ow + 1)) as u32,
        )
    } else {
        ((rh - oh) / 2, (rw - ow) / 2)
    })
}

/// The crop of a JPEG decoded from only the region it needs (see [`region`]), or `None` where
/// a whole decode serves: not a JPEG, no crop, an EXIF turn to apply, a kind the whole decode
/// refuses or names (CMYK, lossless, a bad header), a region hardly smaller than the image, or
/// the `nearest` filter (`fast_image_resize` picks its pixels from the crop box's fractional
/// offset, which moving the box by the region's origin rounds otherwise: not the same pixels).
pub(crate) fn region_crop(
    spec: &ImageSpec,
    data: &[u8],
    r: u64,
    out: &mut [u8],
) -> Result<bool, String> {
    if spec.crop.is_none()
        || spec.filter == Filter::Nearest
        || !data.starts_with(&[0xFF, 0xD8, 0xFF])
        || (spec.exif && exif::orientation(data) != 1)
    {
        return Ok(false);
    }
    REGION.with_borrow_mut(|slot| {
        let (dec, buf) = match slot {
            Some(s) => s,
            None => slot.insert((region::Decoder::new()?, Vec::new())),
        };
        let done = region_crop_with(spec, data, r, dec, buf, out);
        if buf.capacity() > KEPT_REGION_BYTES {
            *buf = Vec::new(); // a large image's region is not kept past it
        }
        done
    })
}

/// The most a decode thread keeps of its region buffer between images (a 1024 x 1024 RGB
/// region; ImageNet's images need about a third of it).
const KEPT_REGION_BYTES: usize = 3 << 20;

fn region_crop_with(
    spec: &ImageSpec,
    data: &[u8],
    r: u64,
    dec: &mut region::Decoder,
    buf: &mut Vec<u8>,
    out: &mut [u8],
) -> Result<bool, String> {
    let Some(head) = dec.header(data) else {
        return Ok(false);
    };
    check_pixels(
        "JPEG",
        u64::from(head.width),
        u64::from(head.height),
        spec.max_pixels,
    )?;
    let d = jpeg_scale(head.width, head.height, spec.resize);
    let (fw, fh) = (head.width.div_ceil(d), head.height.div_ceil(d));
    let (rh, rw) = resized(fw, fh, spec.resize);
    let (top, left) = crop_place(spec, (rh, rw), r)?;
    let (oh, ow) = spec.out_size();
    // The filter's reach past the crop box, in source pixels, and two more for rounding.
    let support = match spec.filter {
        Filter::Nearest | Filter::Bilinear => 1.0,
        Filter::Bicubic => 2.0,
        Filter::Lanczos => 3.0,
    };
    let span = |start: u32, len: u32, scale: f64, full: u32| {
        let margin = support * scale.max(1.0) + 2.0;
        let lo = (f64::from(start) * scale - margin).floor().max(0.0) as u32;
        let hi = (f64::from(start + len) * scale + margin).ceil() as u32;
        (lo, hi.min(full))
    };
    let (sx, sy) = (f64::from(fw) / f64::from(rw), f64::from(fh) / f64::from(rh));
    let (x0, x1) = span(left, ow, sx, fw);
    let (y0, y1) = span(top, oh, sy, fh);
    // The rows below the region are skipped unread (libjpeg-turbo's skip to the end of the
    // image reads no further), so a stream cut short there would pass unnoticed, and a row be
    // refused or not by where an epoch's crop falls: a stream that does not end in its
    // end-of-image marker is decoded to its last row, where libjpeg finds the cut.
    let y1 = if y1 < fh && !data.ends_with(&[0xFF, 0xD9]) {
        fh
    } else {
        y1
    };
    // The left edge on a scaled iMCU boundary, as libjpeg-turbo requires.
    let mcu = head.mcu_width.div_ceil(d);
    let x0 = x0 / mcu * mcu;
    if u64::from(x1 - x0) * u64::from(y1 - y0) * 10 > u64::from(fw) * u64::from(fh) * 9 {
        return Ok(false);
    }
    let (w, h) = (x1 - x0, y1 - y0);
    let n = w as usize * h as usize * 3;
    if buf.len() < n {
        buf.resize(n, 0); // grows once a thread; the decode writes every byte it returns
    }
    dec.decode(data, d, (x0, y0, w, h), &mut buf[..n])?;
    let img = ImageView {
        width: w,
        height: h,
        pixels: &buf[..n],
    };
    resize_crop(
        img,
        (x0, y0),
        (fw, fh),
        (rh, rw),
        (top, left, oh, ow),
        spec.filter,
        out,
    )?;
    Ok(true)
}

/// The crop of the whole decoded image (turned upright first under `exif`), resized into
/// `out`.
pub(crate) fn whole_crop(
    spec: &ImageSpec,
    data: &[u8],
    r: u64,
    out: &mut [u8],
) -> Result<(), String> {
    let img = if spec.exif {
        // A quarter turn swaps the sides the DCT scale must cover.
        let o = exif::orientation(data);
        let target = match spec.resize {
            Some(Resize::Exact(h, w)) if exif::swaps_sides(o) => Some(Resize::Exact(w, h)),
            t => t,
        };
        exif::apply(decode_image(data, spec.max_pixels, target)?, o)
    } else {
        decode_image(data, spec.max_pixels, spec.resize)?
    };
    let (rh, rw) = resized(img.width, img.height, spec.resize);
    let (top, left) = crop_place(spec, (rh, rw), r)?;
    let (oh, ow) = spec.out_size();
    resize_crop(
        img.view(),
        (0, 0),
        (img.width, img.height),
        (rh, rw),
        (top, left, oh, ow),
        spec.filter,
        out,
    )
}

/// The number of values in one row's plan ([`gpu_plan`]).
pub(crate) const GPU_PLAN_LEN: usize = 7;

/// One row's plan for a decode on the trainer's GPU (`gpu`), from the JPEG's header alone:
/// `[height, width, resized height, resized width, crop top, crop left, flip]`, the crop placed
/// and the flip drawn as [`process`] does (the same `(seed, epoch, split, row)` draws), at full
/// scale (nvJPEG has no DCT scaling). A file that is not a JPEG, or a header the feeder's own
/// decode would refuse (the pixel limit, CMYK, lossless), is the row's error here, so the
/// trainer sees only images it can decode.
pub(crate) fn gpu_plan(
    spec: &ImageSpec,
    data: &[u8],
    split: u32,
    row: u64,
) -> Result<[i32; GPU_PLAN_LEN], String> {
    let kind = match Kind::of(data) {
        Some(Kind::Jpeg) => None,
        Some(Kind::Png) => Some(format!("a PNG ({} bytes)", data.len())),
        Some(Kind::Webp) => Some(format!("a WebP ({} bytes)", data.len())),
        None => Some(format!(
            "not an image the feeder knows ({})",
            first_bytes(data)
        )),
    };
    if let Some(kind) = kind {
        return Err(format!(
            "{kind}, not a JPEG: gpu decodes JPEG only (nvJPEG); without gpu the feeder \
             decodes PNG and WebP"
        ));
    }
    let mut dec = turbojpeg::Decompressor::new().map_err(|e| format!("JPEG decoder: {e}"))?;
    let head = jpeg_header(&mut dec, data, spec.max_pixels)?;
    let (w, h) = (head.width as u32, head.height as u32);
    let (rh, rw) = resized(w, h, spec.resize);
    let r = row_random(spec.seed, spec.epoch, split, row);
    let (top, left) = crop_place(spec, (rh, rw), r)?;
    let v = [h, w, rh, rw, top, left, u32::from(flips(spec, r))];
    let mut out = [0i32; GPU_PLAN_LEN];
    for (o, x) in out.iter_mut().zip(v) {
        *o = i32::try_from(x).map_err(|_| format!("a size of {x} pixels is out of range"))?;
    }
    Ok(out)
}

/// One row's image under `spec`: decoded (a JPEG's crop only from the region it needs,
/// [`region_crop`]), resized, cropped and flipped into `out` (exactly
/// `H * W * 3` bytes of the spec's output size). `(split, row)` place the row for the random
/// choices.
pub(crate) fn process(
    spec: &ImageSpec,
    data: &[u8],
    split: u32,
    row: u64,
    out: &mut [u8],
) -> Result<(), String> {
    let r = row_random(spec.seed, spec.epoch, split, row);
    if !region_crop(spec, data, r, out)? {
        whole_crop(spec, data, r, out)?;
    }
    if flips(spec, r) {
        let ow = spec.out_size().1 as usize;
        for line in out.chunks_exact_mut(ow * 3) {
            for i in 0..ow / 2 {
                let j = ow - 1 - i;
                let (a, b) = line.split_at_mut(j * 3);
                a[i * 3..i * 3 + 3].swap_with_slice(&mut b[..3]);
            }
        }
    }
    Ok(())
}
