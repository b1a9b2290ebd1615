//! Specs, decode, crop and flip; bad input. (Exactness against Pillow and TensorFlow:
//! python/tests/test_images.py.)

use super::decode::{decode_image, jpeg_scale, process, resized};
use super::{ImageSpec, Resize};

/// A PNG of `w` x `h` RGB pixels, pixel (x, y) = (x, y, x ^ y), written by the `png` crate.
fn png_rgb(w: u32, h: u32) -> Vec<u8> {
    let mut out = Vec::new();
    let mut enc = png::Encoder::new(&mut out, w, h);
    enc.set_color(png::ColorType::Rgb);
    enc.set_depth(png::BitDepth::Eight);
    let mut wr = enc.write_header().unwrap();
    let px: Vec<u8> = (0..h)
        .flat_map(|y| (0..w).flat_map(move |x| [x as u8, y as u8, (x ^ y) as u8]))
        .collect();
    wr.write_image_data(&px).unwrap();
    wr.finish().unwrap();
    out
}

pub(super) fn jpeg(w: usize, h: usize) -> Vec<u8> {
    let px: Vec<u8> = (0..h)
        .flat_map(|y| (0..w).flat_map(move |x| [(x * 3) as u8, (y * 2) as u8, 128]))
        .collect();
    let img = turbojpeg::Image {
        pixels: px.as_slice(),
        width: w,
        pitch: w * 3,
        height: h,
        format: turbojpeg::PixelFormat::RGB,
    };
    turbojpeg::compress(img, 90, turbojpeg::Subsamp::Sub2x2)
        .unwrap()
        .to_vec()
}

#[test]
fn spec_parses_and_prints_back() {
    let s = ImageSpec::parse("image=resize:256,randcrop:224,flip,seed:7").unwrap();
    assert_eq!(s.column, "image");
    assert_eq!(s.resize, Some(Resize::Shorter(256)));
    assert_eq!(s.crop, Some((224, 224)));
    assert!(s.random_crop && s.flip);
    assert_eq!(s.seed, 7);
    assert_eq!(s.out_size(), (224, 224));
    assert_eq!(ImageSpec::parse(&s.to_string()).unwrap(), s);
    let e = ImageSpec::parse("image=size:100x50:bicubic").unwrap();
    assert_eq!(e.out_size(), (100, 50));
    assert_eq!(ImageSpec::parse(&e.to_string()).unwrap(), e);
    let x = ImageSpec::parse("image=exif,crop:4").unwrap();
    assert!(x.exif);
    assert_eq!(ImageSpec::parse(&x.to_string()).unwrap(), x);
    assert_eq!(
        ImageSpec::parse_all("a=crop:3;b=size:2x2").unwrap().len(),
        2
    );
}

#[test]
fn bad_specs_are_refused_by_name() {
    for (text, says) in [
        ("resize:256", "COLUMN=OP"),
        ("image=resize:256", "one fixed size"),
        ("image=resize:0,crop:2", "not a size"),
        ("image=zoom:2,crop:2", "unknown operation \"zoom\""),
        ("image=resize:9:cubic,crop:2", "unknown filter"),
        ("image=size:4x4,crop:5", "larger than size"),
    ] {
        let e = ImageSpec::parse(text).unwrap_err();
        assert!(e.contains(says), "{text}: {e}");
    }
    assert!(ImageSpec::parse_all("a=crop:2;a=crop:3")
        .unwrap_err()
        .contains("twice"));
}

#[test]
fn png_decodes_exactly() {
    let d = decode_image(&png_rgb(40, 30), u64::MAX, None).unwrap();
    assert_eq!((d.width, d.height), (40, 30));
    assert_eq!(&d.pixels[(7 * 40 + 5) * 3..][..3], &[5, 7, 5 ^ 7]);
}

#[test]
fn jpeg_dct_scale_covers_the_target() {
    assert_eq!(jpeg_scale(500, 375, Some(Resize::Shorter(256))), 1);
    assert_eq!(jpeg_scale(1000, 750, Some(Resize::Shorter(256))), 2);
    assert_eq!(jpeg_scale(4000, 3000, Some(Resize::Shorter(256))), 8);
    assert_eq!(jpeg_scale(4000, 3000, None), 1);
    assert_eq!(jpeg_scale(800, 600, Some(Resize::Exact(100, 300))), 2);
    let d = decode_image(&jpeg(1000, 750), u64::MAX, Some(Resize::Shorter(256))).unwrap();
    assert_eq!((d.width, d.height), (500, 375));
    assert_eq!(resized(500, 375, Some(Resize::Shorter(256))), (256, 341));
    assert_eq!(resized(375, 500, Some(Resize::Shorter(256))), (341, 256));
}

#[test]
fn center_crop_and_flip_take_the_right_pixels() {
    let data = png_rgb(10, 8);
    let spec = ImageSpec::parse("x=crop:4x6").unwrap();
    let mut out = vec![0u8; 4 * 6 * 3];
    process(&spec, &data, 0, 0, &mut out).unwrap();
    // top (8-4)/2 = 2, left (10-6)/2 = 2
    assert_eq!(&out[..3], &[2, 2, 0]);
    assert_eq!(&out[(3 * 6 + 5) * 3..][..3], &[7, 5, 7 ^ 5]);
    // With flip, each row is either as above or mirrored; over rows both occur.
    let spec = ImageSpec::parse("x=crop:4x6,flip").unwrap();
    let mut flipped = 0;
    for row in 0..64 {
        process(&spec, &data, 0, row, &mut out).unwrap();
        match out[0] {
            2 => {}
            7 => flipped += 1,
            v => panic!("first pixel x = {v}"),
        }
    }
    assert!(flipped > 10 && flipped < 54, "{flipped} of 64 flipped");
}

#[test]
fn random_choices_follow_seed_epoch_and_row() {
    let data = png_rgb(64, 64);
    let run = |text: &str, epoch: u64, row: u64| {
        let mut spec = ImageSpec::parse(text).unwrap();
        spec.epoch = epoch;
        let mut out = vec![0u8; 16 * 16 * 3];
        process(&spec, &data, 3, row, &mut out).unwrap();
        out
    };
    let a = "x=randcrop:16,flip,seed:1";
    assert_eq!(run(a, 0, 5), run(a, 0, 5));
    let rows: std::collections::HashSet<_> = (0..20).map(|r| run(a, 0, r)).collect();
    assert!(rows.len() > 10);
    assert!((0..10).any(|r| run(a, 1, r) != run(a, 0, r)));
    assert!((0..10).any(|r| run("x=randcrop:16,flip,seed:2", 0, r) != run(a, 0, r)));
}

#[test]
fn for_epoch_sets_the_epoch_and_the_job_seed_unless_the_spec_has_one() {
    let read = crate::ReadOptions {
        images: ImageSpec::parse_all("a=randcrop:8;b=randcrop:8,seed:5").unwrap(),
        ..Default::default()
    };
    let r = super::for_epoch(&read, 42, 3);
    assert_eq!((r.images[0].epoch, r.images[0].seed), (3, 42));
    assert_eq!((r.images[1].epoch, r.images[1].seed), (3, 5));
    assert_eq!(r.images[1].to_string(), "b=randcrop:8x8,seed:5");
    let plain = crate::ReadOptions::default();
    assert!(matches!(
        super::for_epoch(&plain, 1, 1),
        std::borrow::Cow::Borrowed(_)
    ));
}

#[test]
fn bad_images_are_refused_by_name() {
    let j = jpeg(64, 48);
    let e = decode_image(&j[..j.len() / 2], u64::MAX, None).unwrap_err();
    assert!(e.contains("JPEG"), "{e}");
    let p = png_rgb(64, 48);
    let e = decode_image(&p[..p.len() - 30], u64::MAX, None).unwrap_err();
    assert!(e.contains("PNG"), "{e}");
    let e = decode_image(b"GIF89a....", u64::MAX, None).unwrap_err();
    assert!(
        e.contains("not a JPEG, PNG or WebP") && e.contains("47 49 46"),
        "{e}"
    );
    let e = decode_image(&p, 1000, None).unwrap_err();
    assert!(
        e.contains("64x48 = 3072 pixels, over the limit of 1000"),
        "{e}"
    );
}

#[test]
fn a_bomb_is_refused_by_the_pixel_limit() {
    // A PNG header declaring 60000 x 60000 pixels, and a JPEG whose SOF0 says the same.
    let mut png_bomb = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut ihdr = b"IHDR".to_vec();
    ihdr.extend_from_slice(&60000u32.to_be_bytes());
    ihdr.extend_from_slice(&60000u32.to_be_bytes());
    ihdr.extend_from_slice(&[8, 2, 0, 0, 0]);
    png_bomb.extend_from_slice(&13u32.to_be_bytes());
    png_bomb.extend_from_slice(&ihdr);
    png_bomb.extend_from_slice(&crc32fast::hash(&ihdr).to_be_bytes());
    let e = decode_image(&png_bomb, super::DEFAULT_MAX_PIXELS, None).unwrap_err();
    assert!(e.contains("60000x60000"), "{e}");
    let mut j = jpeg(16, 16);
    let sof = j.windows(2).position(|w| w == [0xFF, 0xC0]).unwrap();
    j[sof + 5..sof + 7].copy_from_slice(&60000u16.to_be_bytes());
    j[sof + 7..sof + 9].copy_from_slice(&60000u16.to_be_bytes());
    let e = decode_image(&j, super::DEFAULT_MAX_PIXELS, None).unwrap_err();
    assert!(e.contains("60000x60000"), "{e}");
}

/// Resizing only the crop's part gives the pixels of resizing the whole image and cropping it
/// (within 1 level: the same filter windows, the crop box's offsets rounded once more).
#[test]
fn the_crop_alone_resized_is_the_whole_resized_and_cropped() {
    use fast_image_resize as fr;
    let rows = crate::gen_images::image_rows(5, 0, 24).unwrap();
    for (filter, alg) in [
        ("bilinear", fr::FilterType::Bilinear),
        ("bicubic", fr::FilterType::CatmullRom),
        ("lanczos", fr::FilterType::Lanczos3),
    ] {
        let spec = ImageSpec::parse(&format!("x=resize:256:{filter},randcrop:224")).unwrap();
        for (row, r) in rows.iter().enumerate() {
            let img = decode_image(&r.jpeg, u64::MAX, spec.resize).unwrap();
            let (rh, rw) = resized(img.width, img.height, spec.resize);
            let src =
                fr::images::ImageRef::new(img.width, img.height, &img.pixels, fr::PixelType::U8x3)
                    .unwrap();
            let mut whole = fr::images::Image::new(rw, rh, fr::PixelType::U8x3);
            let opts = fr::ResizeOptions::new().resize_alg(fr::ResizeAlg::Convolution(alg));
            fr::Resizer::new().resize(&src, &mut whole, &opts).unwrap();
            let whole = whole.into_vec();
            let mut out = vec![0u8; 224 * 224 * 3];
            process(&spec, &r.jpeg, 0, row as u64, &mut out).unwrap();
            let r = super::row_random(spec.seed, spec.epoch, 0, row as u64);
            let t = (r % u64::from(rh - 224 + 1)) as usize;
            let l = ((r >> 32) % u64::from(rw - 224 + 1)) as usize;
            let mut best = 0u8;
            for y in 0..224 {
                let a = &whole[((t + y) * rw as usize + l) * 3..][..224 * 3];
                let b = &out[y * 224 * 3..][..224 * 3];
                for (p, q) in a.iter().zip(b) {
                    best = best.max(p.abs_diff(*q));
                }
            }
            assert!(best <= 1, "{filter}, row {row}: differs by {best}");
        }
    }
}

/// `jpeg` with an `Exif` APP1 segment holding orientation `o`, in either TIFF byte order.
fn with_orientation(jpeg: &[u8], o: u16, little: bool) -> Vec<u8> {
    let u16b = |v: u16| {
        if little {
            v.to_le_bytes()
        } else {
            v.to_be_bytes()
        }
    };
    let u32b = |v: u32| {
        if little {
            v.to_le_bytes()
        } else {
            v.to_be_bytes()
        }
    };
    let mut tiff: Vec<u8> = if little {
        b"II*\0".to_vec()
    } else {
        b"MM\0*".to_vec()
    };
    tiff.extend(u32b(8));
    tiff.extend(u16b(2)); // two entries: another tag first, then Orientation
    for (tag, value) in [(0x010F_u16, 0_u16), (0x0112, o)] {
        tiff.extend(u16b(tag));
        tiff.extend(u16b(3));
        tiff.extend(u32b(1));
        tiff.extend(u16b(value));
        tiff.extend([0, 0]);
    }
    tiff.extend(u32b(0));
    let mut app1 = b"Exif\0\0".to_vec();
    app1.extend(tiff);
    let mut out = jpeg[..2].to_vec();
    out.extend([0xFF, 0xE1]);
    out.extend(((app1.len() + 2) as u16).to_be_bytes());
    out.extend(app1);
    out.extend(&jpeg[2..]);
    out
}

#[test]
fn exif_orientation_is_read_from_jpeg_app1() {
    let plain = jpeg(16, 8);
    assert_eq!(super::exif::orientation(&plain), 1);
    for o in 1..=8 {
        for little in [true, false] {
            let data = with_orientation(&plain, o, little);
            assert_eq!(super::exif::orientation(&data), o as u8, "{o} {little}");
        }
    }
    // A value out of range, or a truncated block, is upright.
    assert_eq!(
        super::exif::orientation(&with_orientation(&plain, 9, true)),
        1
    );
    let cut = with_orientation(&plain, 6, true);
    assert_eq!(super::exif::orientation(&cut[..30]), 1);
}

#[test]
fn exif_turns_the_image_upright() {
    // 3 wide, 2 high, pixel (x, y) = (x, y, 0).
    let img = super::Decoded {
        height: 2,
        width: 3,
        pixels: (0..2u8)
            .flat_map(|y| (0..3u8).flat_map(move |x| [x, y, 0]))
            .collect(),
    };
    let at = |d: &super::Decoded, x: usize, y: usize| -> (u8, u8) {
        let p = &d.pixels[(y * d.width as usize + x) * 3..];
        (p[0], p[1])
    };
    // (orientation, output width, the source pixel now at the top left, at the top right)
    for (o, w, tl, tr) in [
        (1, 3, (0, 0), (2, 0)),
        (2, 3, (2, 0), (0, 0)),
        (3, 3, (2, 1), (0, 1)),
        (4, 3, (0, 1), (2, 1)),
        (5, 2, (0, 0), (0, 1)),
        (6, 2, (0, 1), (0, 0)),
        (7, 2, (2, 1), (2, 0)),
        (8, 2, (2, 0), (2, 1)),
    ] {
        let d = super::exif::apply(img.clone(), o);
        assert_eq!(d.width, w, "{o}");
        assert_eq!(d.pixels.len(), 18);
        assert_eq!(at(&d, 0, 0), tl, "{o}");
        assert_eq!(at(&d, w as usize - 1, 0), tr, "{o}");
    }
}

#[test]
fn exif_in_a_spec_rotates_before_the_crop() {
    let data = with_orientation(&jpeg(32, 16), 6, true);
    let spec = ImageSpec::parse("image=exif,crop:32x16").unwrap();
    let mut out = vec![0u8; 32 * 16 * 3];
    process(&spec, &data, 0, 0, &mut out).unwrap();
    let plain = ImageSpec::parse("image=crop:16x32").unwrap();
    let mut flat = vec![0u8; 32 * 16 * 3];
    process(&plain, &data, 0, 0, &mut flat).unwrap();
    let rotated = super::exif::apply(
        super::Decoded {
            height: 16,
            width: 32,
            pixels: flat,
        },
        6,
    );
    assert_eq!(out, rotated.pixels);
}

#[test]
fn lossless_webp_decodes_exactly_and_its_exif_is_read() {
    let (w, h) = (23u32, 17u32);
    let px: Vec<u8> = (0..h)
        .flat_map(|y| (0..w).flat_map(move |x| [x as u8 * 9, y as u8 * 13, (x ^ y) as u8]))
        .collect();
    let encode = |exif: Option<Vec<u8>>| {
        let mut out = Vec::new();
        let mut enc = image_webp::WebPEncoder::new(&mut out);
        if let Some(e) = exif {
            enc.set_exif_metadata(e);
        }
        enc.encode(&px, w, h, image_webp::ColorType::Rgb8).unwrap();
        out
    };
    let d = decode_image(&encode(None), u64::MAX, None).unwrap();
    assert_eq!((d.width, d.height), (w, h));
    assert_eq!(d.pixels, px);
    // The TIFF block of `with_orientation`'s APP1 segment, as a WebP EXIF chunk.
    let app1 = with_orientation(&jpeg(8, 8), 8, false);
    let tiff = app1[12..].to_vec();
    assert_eq!(super::exif::orientation(&encode(Some(tiff))), 8);
    let e = decode_image(&encode(None), 100, None).unwrap_err();
    assert!(e.contains("WebP declares 23x17"), "{e}");
}

/// A JPEG's crop decoded from only its region is the crop of the whole decode, pixel for pixel
/// (the resize's filter windows lie inside the region; its crop box only moves by the region's
/// origin).
#[test]
fn the_region_decode_is_the_whole_decode() {
    let rows = crate::gen_images::image_rows(7, 0, 40).unwrap();
    for text in [
        "x=randcrop:200x150",
        "x=resize:256,randcrop:224",
        "x=resize:256:lanczos,crop:224",
        "x=resize:100,randcrop:80",
        "x=resize:40:bicubic,randcrop:32x24",
        "x=size:300x200,randcrop:100",
    ] {
        let spec = ImageSpec::parse(text).unwrap();
        let mut used = 0;
        for (row, r) in rows.iter().enumerate() {
            let rnd = super::row_random(9, 0, 0, row as u64);
            let (oh, ow) = spec.out_size();
            let mut whole = vec![0u8; oh as usize * ow as usize * 3];
            super::decode::whole_crop(&spec, &r.jpeg, rnd, &mut whole).unwrap();
            let mut part = vec![7u8; whole.len()];
            if super::decode::region_crop(&spec, &r.jpeg, rnd, &mut part).unwrap() {
                used += 1;
                assert!(whole == part, "{text}, row {row}");
            }
        }
        assert!(used > 0, "{text}: no row took the region decode");
    }
    let nearest = ImageSpec::parse("x=size:300x200:nearest,randcrop:100").unwrap();
    let mut out = vec![0u8; 100 * 100 * 3];
    assert!(!super::decode::region_crop(&nearest, &rows[0].jpeg, 1, &mut out).unwrap());
}

/// A JPEG cut short below its crop's region is as much an error as one cut inside it: whether
/// a row is refused must not depend on where an epoch's random crop falls.
#[test]
fn a_jpeg_cut_short_below_the_region_is_an_error() {
    let rows = crate::gen_images::image_rows(7, 0, 8).unwrap();
    let spec = ImageSpec::parse("x=resize:256,crop:224").unwrap();
    let (oh, ow) = spec.out_size();
    let mut cut_rows = 0;
    for (row, r) in rows.iter().enumerate() {
        let mut out = vec![0u8; oh as usize * ow as usize * 3];
        if !super::decode::region_crop(&spec, &r.jpeg, 1, &mut out).unwrap() {
            continue;
        }
        // The last 1% of the stream (its end-of-image marker with it): rows below the crop.
        let cut = &r.jpeg[..r.jpeg.len() * 99 / 100];
        let got = super::decode::region_crop(&spec, cut, 1, &mut out);
        assert!(
            got.as_ref().is_err_and(|e| e.contains("JPEG")),
            "row {row}: {got:?}"
        );
        let whole = super::decode::whole_crop(&spec, cut, 1, &mut out);
        assert!(whole.is_err(), "row {row}: {whole:?}");
        cut_rows += 1;
    }
    assert!(cut_rows > 0, "no row took the region decode");
}

/// A decode thread keeps its region decoder from one image to the next: after a bad image the
/// next good one on the same thread still takes the region decode, with the same pixels (a
/// failed header left the handle mid-header, and every later image of the thread took the
/// whole decode).
#[test]
fn a_bad_jpeg_leaves_its_thread_the_region_decode() {
    let spec = ImageSpec::parse("x=crop:16").unwrap();
    let good = jpeg(32, 32);
    let (oh, ow) = spec.out_size();
    let mut want = vec![0u8; oh as usize * ow as usize * 3];
    assert!(super::decode::region_crop(&spec, &good, 0, &mut want).unwrap());
    let sos = good.windows(2).position(|w| w == [0xFF, 0xDA]).unwrap();
    let no_scan = &good[..sos];
    let truncated = &good[..good.len() * 3 / 4];
    let mut noise = good.clone();
    for (i, b) in noise[200..264].iter_mut().enumerate() {
        *b = (i * 37 % 251) as u8;
    }
    for bad in [no_scan, truncated, &noise[..], b"\xFF\xD8\xFFnot a jpeg"] {
        let mut out = vec![0u8; want.len()];
        assert!(process(&spec, bad, 0, 0, &mut out).is_err());
        let mut again = vec![7u8; want.len()];
        let got = super::decode::region_crop(&spec, &good, 0, &mut again);
        assert!(got == Ok(true), "after {:?}: {got:?}", &bad[..8]);
        assert!(again == want);
    }
}
