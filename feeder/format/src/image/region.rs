//! A JPEG decoded only within a region: libjpeg-turbo's partial decompression
//! (`tj3SetCroppingRegion`: `jpeg_crop_scanline` for the columns, `jpeg_skip_scanlines` for the
//! rows above and below), through `turbojpeg-sys`, since the `turbojpeg` crate does not wrap it.
//!
//! The columns outside the region skip the inverse DCT, upsampling and color conversion; the
//! rows above it are only entropy-decoded, and those below it are not read at all (a stream
//! that does not end in its end-of-image marker is decoded to its last row instead, so a
//! truncated image is still an error: `decode::region_crop`). Inside the region the pixels are
//! those of the whole decode (tests.rs compares them).

use std::ffi::CStr;

use turbojpeg_sys as raw;

/// A JPEG's header as read for a region decode.
pub(crate) struct Header {
    /// Full-size width and height.
    pub width: u32,
    pub height: u32,
    /// The iMCU width in full-size pixels (8 or 16): a region's left edge falls on a multiple of
    /// it, scaled.
    pub mcu_width: u32,
}

/// A TurboJPEG decompression handle.
pub(crate) struct Decoder(raw::tjhandle);

impl Drop for Decoder {
    fn drop(&mut self) {
        // SAFETY: the handle came from tj3Init and is destroyed once, here.
        unsafe { raw::tj3Destroy(self.0) }
    }
}

impl Decoder {
    pub fn new() -> Result<Self, String> {
        // SAFETY: tj3Init has no preconditions; a null result is checked.
        let h = unsafe { raw::tj3Init(raw::TJINIT_TJINIT_DECOMPRESS as i32) };
        if h.is_null() {
            return Err("JPEG decoder: could not be created".into());
        }
        Ok(Self(h))
    }

    fn error(&self) -> String {
        // SAFETY: the handle is live; TurboJPEG returns a NUL-terminated string it owns.
        unsafe { CStr::from_ptr(raw::tj3GetErrorStr(self.0)) }
            .to_string_lossy()
            .into_owned()
    }

    fn get(&self, param: raw::TJPARAM) -> i32 {
        // SAFETY: the handle is live; tj3Get only reads a parameter.
        unsafe { raw::tj3Get(self.0, param as i32) }
    }

    /// Reads `data`'s header; `None` for what a region decode leaves to the whole decode, which
    /// refuses or names it: a bad header, CMYK or YCCK, lossless JPEG, an unknown subsampling.
    ///
    /// A header that fails leaves the handle mid-header (`tj3DecompressHeader` returns from its
    /// error without aborting the decompression), where every later header read on it fails
    /// too: the handle is made anew then, or the thread's images after one bad one would all
    /// take the whole decode.
    pub fn header(&mut self, data: &[u8]) -> Option<Header> {
        // SAFETY: `data` is a live slice of `data.len()` bytes.
        let rc = unsafe { raw::tj3DecompressHeader(self.0, data.as_ptr(), data.len() as _) };
        if rc != 0 {
            if let Ok(fresh) = Self::new() {
                *self = fresh;
            }
            return None;
        }
        let colorspace = self.get(raw::TJPARAM_TJPARAM_COLORSPACE);
        if colorspace == raw::TJCS_TJCS_CMYK as i32
            || colorspace == raw::TJCS_TJCS_YCCK as i32
            || self.get(raw::TJPARAM_TJPARAM_LOSSLESS) != 0
        {
            return None;
        }
        // TurboJPEG's tjMCUWidth, by subsampling.
        let mcu_width = match self.get(raw::TJPARAM_TJPARAM_SUBSAMP) {
            raw::TJSAMP_TJSAMP_444
            | raw::TJSAMP_TJSAMP_GRAY
            | raw::TJSAMP_TJSAMP_440
            | raw::TJSAMP_TJSAMP_441 => 8,
            raw::TJSAMP_TJSAMP_422 | raw::TJSAMP_TJSAMP_420 => 16,
            raw::TJSAMP_TJSAMP_411 => 32,
            _ => return None,
        };
        Some(Header {
            width: self.get(raw::TJPARAM_TJPARAM_JPEGWIDTH) as u32,
            height: self.get(raw::TJPARAM_TJPARAM_JPEGHEIGHT) as u32,
            mcu_width,
        })
    }

    /// Decodes the region (`x`, `y`, `w`, `h`) of `data` at scale 1/`denom` (the region in scaled
    /// pixels, `x` a multiple of the scaled iMCU width) into `px`, RGB, exactly `w * h * 3`
    /// bytes.
    pub fn decode(
        &mut self,
        data: &[u8],
        denom: u32,
        (x, y, w, h): (u32, u32, u32, u32),
        px: &mut [u8],
    ) -> Result<(), String> {
        assert_eq!(px.len(), w as usize * h as usize * 3, "a region's buffer");
        let scale = raw::tjscalingfactor {
            num: 1,
            denom: denom as i32,
        };
        // SAFETY: the handle is live; the scaling factor is one libjpeg-turbo offers (1/1..1/8).
        if unsafe { raw::tj3SetScalingFactor(self.0, scale) } != 0 {
            return Err(format!("JPEG decoder: {}", self.error()));
        }
        let region = raw::tjregion {
            x: x as i32,
            y: y as i32,
            w: w as i32,
            h: h as i32,
        };
        // SAFETY: the handle is live and has read the header of `data`.
        if unsafe { raw::tj3SetCroppingRegion(self.0, region) } != 0 {
            return Err(format!("JPEG decoder: {}", self.error()));
        }
        // SAFETY: `px` holds `h` rows of `w * 3` bytes, the region's size in RGB, at pitch
        // `w * 3`; `data` is a live slice of `data.len()` bytes.
        let rc = unsafe {
            raw::tj3Decompress8(
                self.0,
                data.as_ptr(),
                data.len() as _,
                px.as_mut_ptr(),
                (w * 3) as i32,
                raw::TJPF_TJPF_RGB,
            )
        };
        if rc != 0 {
            return Err(format!("corrupt JPEG: {}", self.error()));
        }
        Ok(())
    }
}
