// Licensed to the Apache Software Foundation (ASF) under one
// or more contributor license agreements.  See the NOTICE file
// distributed with this work for additional information
// regarding copyright ownership.  The ASF licenses this file
// to you under the Apache License, Version 2.0 (the
// "License"); you may not use this file except in compliance
// with the License.  You may obtain a copy of the License at
//
//   http://www.apache.org/licenses/LICENSE-2.0
//
// Unless required by applicable law or agreed to in writing,
// software distributed under the License is distributed on an
// "AS IS" BASIS, WITHOUT WARRANTIES OR CONDITIONS OF ANY
// KIND, either express or implied.  See the License for the
// specific language governing permissions and limitations
// under the License.

use crate::errors::AvroError;
use arrow_schema::ArrowError;
#[cfg(any(
    feature = "deflate",
    feature = "zstd",
    feature = "bzip2",
    feature = "xz"
))]
use std::io::{Read, Write};

/// The metadata key used for storing the JSON encoded [`CompressionCodec`]
pub const CODEC_METADATA_KEY: &str = "avro.codec";

#[derive(Debug, Copy, Clone, Eq, PartialEq)]
/// Supported compression codecs for Avro data
///
/// Avro supports multiple compression formats for data blocks.
/// This enum represents the compression codecs available in this implementation.
pub enum CompressionCodec {
    /// Deflate compression (RFC 1951)
    Deflate,
    /// Snappy compression
    Snappy,
    /// ZStandard compression
    ZStandard,
    /// Bzip2 compression
    Bzip2,
    /// Xz compression
    Xz,
}

#[cfg(feature = "deflate")]
thread_local! {
    /// This thread's libdeflate decompressor, kept from block to block.
    static INFLATE: std::cell::RefCell<libdeflater::Decompressor> =
        std::cell::RefCell::new(libdeflater::Decompressor::new());
}

/// A raw DEFLATE block inflated whole by libdeflate (1.3-1.7x `flate2`'s streaming decoder on
/// Avro's blocks of a few rows: no stream state made a block, no reads in pieces). The size
/// is not stored, so `out` grows (doubling) until the block fits; its bytes are zeroed only
/// when it grows, since it keeps its capacity: a steady file's blocks fill it without a memset.
#[cfg(feature = "deflate")]
fn inflate_into(block: &[u8], out: &mut Vec<u8>) -> Result<(), AvroError> {
    let mut size = out.capacity().max(block.len().saturating_mul(4)).max(1 << 12);
    INFLATE.with(|d| {
        let mut d = d.borrow_mut();
        loop {
            out.resize(size, 0);
            match d.deflate_decompress(block, out) {
                Ok(n) => {
                    out.truncate(n);
                    return Ok(());
                }
                Err(libdeflater::DecompressionError::InsufficientSpace) => {
                    size = size.checked_mul(2).ok_or_else(|| {
                        AvroError::ParseError("a deflate block past the address space".into())
                    })?;
                }
                Err(libdeflater::DecompressionError::BadData) => {
                    return Err(AvroError::ParseError(format!(
                        "a deflate block of {} bytes is not valid DEFLATE data",
                        block.len()
                    )))
                }
            }
        }
    })
}

impl CompressionCodec {
    /// [`CompressionCodec::decompress`] into `out` (its old contents replaced), reusing its
    /// capacity.
    pub(crate) fn decompress_into(&self, block: &[u8], out: &mut Vec<u8>) -> Result<(), AvroError> {
        match self {
            #[cfg(feature = "deflate")]
            CompressionCodec::Deflate => inflate_into(block, out),
            _ => {
                *out = self.decompress(block)?;
                Ok(())
            }
        }
    }

    #[allow(unused_variables)]
    pub(crate) fn decompress(&self, block: &[u8]) -> Result<Vec<u8>, AvroError> {
        match self {
            #[cfg(feature = "deflate")]
            CompressionCodec::Deflate => {
                let mut out = Vec::new();
                inflate_into(block, &mut out)?;
                Ok(out)
            }
            #[cfg(not(feature = "deflate"))]
            CompressionCodec::Deflate => Err(AvroError::ParseError(
                "Deflate codec requires deflate feature".to_string(),
            )),
            #[cfg(feature = "snappy")]
            CompressionCodec::Snappy => {
                // Each compressed block is followed by the 4-byte, big-endian CRC32
                // checksum of the uncompressed data in the block.
                let crc = &block[block.len() - 4..];
                let block = &block[..block.len() - 4];

                let mut decoder = snap::raw::Decoder::new();
                let decoded = decoder
                    .decompress_vec(block)
                    .map_err(|e| AvroError::External(Box::new(e)))?;

                let checksum = crc::Crc::<u32>::new(&crc::CRC_32_ISO_HDLC).checksum(&decoded);
                if checksum != u32::from_be_bytes(crc.try_into().unwrap()) {
                    return Err(AvroError::ParseError("Snappy CRC mismatch".to_string()));
                }
                Ok(decoded)
            }
            #[cfg(not(feature = "snappy"))]
            CompressionCodec::Snappy => Err(AvroError::ParseError(
                "Snappy codec requires snappy feature".to_string(),
            )),

            #[cfg(feature = "zstd")]
            CompressionCodec::ZStandard => {
                let mut decoder = zstd::Decoder::new(block)?;
                let mut out = Vec::new();
                decoder
                    .read_to_end(&mut out)
                    .map_err(|e| AvroError::External(Box::new(e)))?;
                Ok(out)
            }
            #[cfg(not(feature = "zstd"))]
            CompressionCodec::ZStandard => Err(AvroError::ParseError(
                "ZStandard codec requires zstd feature".to_string(),
            )),
            #[cfg(feature = "bzip2")]
            CompressionCodec::Bzip2 => {
                let mut decoder = bzip2::read::BzDecoder::new(block);
                let mut out = Vec::new();
                decoder
                    .read_to_end(&mut out)
                    .map_err(|e| AvroError::External(Box::new(e)))?;
                Ok(out)
            }
            #[cfg(not(feature = "bzip2"))]
            CompressionCodec::Bzip2 => Err(AvroError::ParseError(
                "Bzip2 codec requires bzip2 feature".to_string(),
            )),
            #[cfg(feature = "xz")]
            CompressionCodec::Xz => {
                let mut decoder = xz::read::XzDecoder::new(block);
                let mut out = Vec::new();
                decoder
                    .read_to_end(&mut out)
                    .map_err(|e| AvroError::External(Box::new(e)))?;
                Ok(out)
            }
            #[cfg(not(feature = "xz"))]
            CompressionCodec::Xz => Err(AvroError::ParseError(
                "XZ codec requires xz feature".to_string(),
            )),
        }
    }

    #[allow(unused_variables)]
    pub(crate) fn compress(&self, data: &[u8]) -> Result<Vec<u8>, ArrowError> {
        match self {
            #[cfg(feature = "deflate")]
            CompressionCodec::Deflate => {
                let mut encoder =
                    flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
                encoder.write_all(data)?;
                let compressed = encoder.finish()?;
                Ok(compressed)
            }
            #[cfg(not(feature = "deflate"))]
            CompressionCodec::Deflate => Err(ArrowError::ParseError(
                "Deflate codec requires deflate feature".to_string(),
            )),

            #[cfg(feature = "snappy")]
            CompressionCodec::Snappy => {
                let mut encoder = snap::raw::Encoder::new();
                // Allocate and compress in one step for efficiency
                let mut compressed = encoder
                    .compress_vec(data)
                    .map_err(|e| ArrowError::ExternalError(Box::new(e)))?;
                // Compute CRC32 (ISO‑HDLC poly) of **uncompressed** data
                let crc_val = crc::Crc::<u32>::new(&crc::CRC_32_ISO_HDLC).checksum(data);
                compressed.extend_from_slice(&crc_val.to_be_bytes());
                Ok(compressed)
            }
            #[cfg(not(feature = "snappy"))]
            CompressionCodec::Snappy => Err(ArrowError::ParseError(
                "Snappy codec requires snappy feature".to_string(),
            )),

            #[cfg(feature = "zstd")]
            CompressionCodec::ZStandard => {
                let mut encoder = zstd::Encoder::new(Vec::new(), 0)
                    .map_err(|e| ArrowError::ExternalError(Box::new(e)))?;
                encoder.write_all(data)?;
                let compressed = encoder
                    .finish()
                    .map_err(|e| ArrowError::ExternalError(Box::new(e)))?;
                Ok(compressed)
            }
            #[cfg(not(feature = "zstd"))]
            CompressionCodec::ZStandard => Err(ArrowError::ParseError(
                "ZStandard codec requires zstd feature".to_string(),
            )),

            #[cfg(feature = "bzip2")]
            CompressionCodec::Bzip2 => {
                let mut encoder =
                    bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::default());
                encoder.write_all(data)?;
                let compressed = encoder.finish()?;
                Ok(compressed)
            }
            #[cfg(not(feature = "bzip2"))]
            CompressionCodec::Bzip2 => Err(ArrowError::ParseError(
                "Bzip2 codec requires bzip2 feature".to_string(),
            )),
            #[cfg(feature = "xz")]
            CompressionCodec::Xz => {
                let mut encoder = xz::write::XzEncoder::new(Vec::new(), 6);
                encoder.write_all(data)?;
                let compressed = encoder.finish()?;
                Ok(compressed)
            }
            #[cfg(not(feature = "xz"))]
            CompressionCodec::Xz => Err(ArrowError::ParseError(
                "XZ codec requires xz feature".to_string(),
            )),
        }
    }
}

#[cfg(all(test, feature = "deflate"))]
mod tests {
    use super::*;

    #[test]
    fn deflate_blocks_of_any_size_inflate_into_a_kept_buffer() {
        let mut out = Vec::new();
        // A block far past the first guess (4x its compressed size), then smaller ones into
        // the buffer it grew, then one of random bytes (stored blocks).
        let mut seed = 7u64;
        let noise: Vec<u8> = (0..100_000)
            .map(|_| {
                seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
                (seed >> 56) as u8
            })
            .collect();
        let blocks = [vec![0u8; 1 << 20], b"abc".repeat(1000), Vec::new(), noise];
        for data in &blocks {
            let block = CompressionCodec::Deflate.compress(data).unwrap();
            CompressionCodec::Deflate
                .decompress_into(&block, &mut out)
                .unwrap();
            assert_eq!(&out, data);
            assert_eq!(&CompressionCodec::Deflate.decompress(&block).unwrap(), data);
        }
    }

    #[test]
    fn a_corrupt_deflate_block_is_an_error() {
        let mut block = CompressionCodec::Deflate.compress(&[5u8; 5000]).unwrap();
        block[0] = 0xff;
        let err = CompressionCodec::Deflate
            .decompress_into(&block, &mut Vec::new())
            .unwrap_err();
        assert!(err.to_string().contains("not valid DEFLATE"), "{err}");
    }
}
