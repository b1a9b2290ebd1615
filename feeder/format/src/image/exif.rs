//! EXIF orientation (`exif` in a spec): the Orientation tag (0x0112) of IFD0 read from a JPEG's
//! APP1 segment, a PNG's `eXIf` chunk or a WebP's `EXIF` chunk, and the decoded pixels turned
//! upright as Pillow's `ImageOps.exif_transpose` turns them.
//!
//! Only the one tag is read, in a few dozen lines, rather than through an EXIF crate that parses
//! every tag into owned values: the feeder needs nothing else from EXIF, and a malformed or
//! missing EXIF block means orientation 1 (upright), as it does to Pillow and browsers.

use super::Decoded;

/// The EXIF orientation of an encoded image, 1 to 8; 1 (as stored) where there is none, or it
/// cannot be read.
pub fn orientation(data: &[u8]) -> u8 {
    let tiff = if data.starts_with(&[0xFF, 0xD8]) {
        jpeg_exif(data)
    } else if data.starts_with(b"\x89PNG\r\n\x1a\n") {
        png_exif(data)
    } else if data.len() >= 12 && &data[..4] == b"RIFF" && &data[8..12] == b"WEBP" {
        webp_exif(data)
    } else {
        None
    };
    tiff.and_then(tiff_orientation)
        .filter(|o| (1..=8).contains(o))
        .unwrap_or(1)
}

/// Whether orientation `o` swaps width and height (a quarter turn, a transpose).
pub fn swaps_sides(o: u8) -> bool {
    o >= 5
}

/// The TIFF block of a JPEG's first `Exif` APP1 segment, looked for before the scan.
fn jpeg_exif(data: &[u8]) -> Option<&[u8]> {
    let mut i = 2;
    loop {
        while data.get(i) == Some(&0xFF) && data.get(i + 1) == Some(&0xFF) {
            i += 1; // fill bytes
        }
        let marker = *data.get(i + 1)?;
        if data[i] != 0xFF || marker == 0xDA || marker == 0xD9 {
            return None; // the scan (or the end) before any EXIF
        }
        let len = usize::from(u16::from_be_bytes([*data.get(i + 2)?, *data.get(i + 3)?]));
        let body = data.get(i + 4..i + 2 + len)?;
        if marker == 0xE1 && body.starts_with(b"Exif\0\0") {
            return Some(&body[6..]);
        }
        i += 2 + len;
    }
}

/// The TIFF block of a PNG's `eXIf` chunk (before `IDAT`, where the PNG spec puts it).
fn png_exif(data: &[u8]) -> Option<&[u8]> {
    let mut i = 8;
    loop {
        let len = u32::from_be_bytes(data.get(i..i + 4)?.try_into().ok()?) as usize;
        let kind = data.get(i + 4..i + 8)?;
        let body = data.get(i + 8..i + 8 + len)?;
        match kind {
            b"eXIf" => return Some(body),
            b"IDAT" | b"IEND" => return None,
            _ => i += 12 + len,
        }
    }
}

/// The TIFF block of a WebP's `EXIF` chunk (extended format only).
fn webp_exif(data: &[u8]) -> Option<&[u8]> {
    let mut i = 12;
    loop {
        let kind = data.get(i..i + 4)?;
        let len = u32::from_le_bytes(data.get(i + 4..i + 8)?.try_into().ok()?) as usize;
        let body = data.get(i + 8..i + 8 + len)?;
        if kind == b"EXIF" {
            // Some writers keep JPEG's "Exif\0\0" prefix; the TIFF header follows it.
            return Some(body.strip_prefix(b"Exif\0\0").unwrap_or(body));
        }
        i += 8 + len + (len & 1);
    }
}

/// The Orientation entry of IFD0 in a TIFF block (byte order `II` or `MM`).
fn tiff_orientation(tiff: &[u8]) -> Option<u8> {
    let little = match tiff.get(..4)? {
        b"II*\0" => true,
        b"MM\0*" => false,
        _ => return None,
    };
    let u16_at = |at: usize| -> Option<u16> {
        let b: [u8; 2] = tiff.get(at..at + 2)?.try_into().ok()?;
        Some(if little {
            u16::from_le_bytes(b)
        } else {
            u16::from_be_bytes(b)
        })
    };
    let b: [u8; 4] = tiff.get(4..8)?.try_into().ok()?;
    let ifd = if little {
        u32::from_le_bytes(b)
    } else {
        u32::from_be_bytes(b)
    } as usize;
    let entries = usize::from(u16_at(ifd)?);
    (0..entries).find_map(|k| {
        let e = ifd + 2 + 12 * k;
        // Tag 0x0112, type SHORT (3), the value in the entry's first two value bytes.
        (u16_at(e)? == 0x0112 && u16_at(e + 2)? == 3).then(|| u16_at(e + 8).map(|v| v as u8))?
    })
}

/// `img` turned upright for EXIF orientation `o`, as Pillow's `exif_transpose` does:
/// 2 mirror, 3 rotate 180, 4 flip, 5 transpose, 6 rotate 90 clockwise, 7 transverse,
/// 8 rotate 90 counter-clockwise.
pub fn apply(img: Decoded, o: u8) -> Decoded {
    if !(2..=8).contains(&o) {
        return img;
    }
    let (w, h) = (img.width as usize, img.height as usize);
    let (ow, oh) = if swaps_sides(o) { (h, w) } else { (w, h) };
    let mut out = vec![0u8; w * h * 3];
    for y in 0..h {
        let src = &img.pixels[y * w * 3..][..w * 3];
        for (x, px) in src.chunks_exact(3).enumerate() {
            let (dx, dy) = match o {
                2 => (w - 1 - x, y),
                3 => (w - 1 - x, h - 1 - y),
                4 => (x, h - 1 - y),
                5 => (y, x),
                6 => (h - 1 - y, x),
                7 => (h - 1 - y, w - 1 - x),
                _ => (y, w - 1 - x),
            };
            out[(dy * ow + dx) * 3..][..3].copy_from_slice(px);
        }
    }
    Decoded {
        height: oh as u32,
        width: ow as u32,
        pixels: out,
    }
}
