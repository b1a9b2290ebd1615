//! The physical ceilings of `hydrofeed bench decode`, measured on this machine in the same
//! run: copying the decoded bytes once (`memcpy`), and decompressing each codec's payload
//! without decoding it (snappy: the Parquet files' pages; DEFLATE, the codec of ORC's zlib,
//! Avro's deflate and gzip: the gzip TFRecord files).

use std::io::Read;
use std::path::PathBuf;
use std::time::Instant;

use parquet::file::reader::{FileReader, SerializedFileReader};

/// Seconds of each pass of `pass` (which returns the bytes it produced), repeated until
/// `min_secs` went by (at least one pass).
pub fn passes(
    min_secs: f64,
    mut pass: impl FnMut() -> anyhow::Result<u64>,
) -> anyhow::Result<(u64, Vec<f64>)> {
    let t0 = Instant::now();
    let mut secs = Vec::new();
    let mut bytes = 0;
    while secs.is_empty() || t0.elapsed().as_secs_f64() < min_secs {
        let t = Instant::now();
        bytes = pass()?;
        secs.push(t.elapsed().as_secs_f64());
    }
    Ok((bytes, secs))
}

/// One copy of `bytes` bytes, in chunks of 64 MiB between two buffers larger than the caches.
pub fn memcpy(bytes: u64) -> impl FnMut() -> anyhow::Result<u64> {
    const CHUNK: usize = 64 << 20;
    let src = vec![1u8; CHUNK];
    let mut dst = vec![0u8; CHUNK];
    move || {
        let mut left = bytes as usize;
        while left > 0 {
            let n = left.min(CHUNK);
            dst[..n].copy_from_slice(&src[..n]);
            std::hint::black_box(&mut dst);
            left -= n;
        }
        Ok(bytes)
    }
}

/// Every page of every column of `files` read and decompressed (the parquet crate's page
/// reader, as its record reader does before decoding), not decoded.
pub fn parquet_pages(files: &[PathBuf]) -> impl FnMut() -> anyhow::Result<u64> + '_ {
    move || {
        let mut bytes = 0u64;
        for f in files {
            let r = SerializedFileReader::new(std::fs::File::open(f)?)?;
            for g in 0..r.num_row_groups() {
                let rg = r.get_row_group(g)?;
                for c in 0..rg.num_columns() {
                    for page in rg.get_column_page_reader(c)? {
                        bytes += page?.buffer().len() as u64;
                    }
                }
            }
        }
        Ok(bytes)
    }
}

/// Every gzip file of `files` inflated into a buffer, not parsed.
pub fn gunzip(files: &[PathBuf]) -> impl FnMut() -> anyhow::Result<u64> + '_ {
    let mut buf = vec![0u8; 1 << 20];
    move || {
        let mut bytes = 0u64;
        for f in files {
            let mut d =
                flate2::read::GzDecoder::new(std::io::BufReader::new(std::fs::File::open(f)?));
            loop {
                let n = d.read(&mut buf)?;
                if n == 0 {
                    break;
                }
                bytes += n as u64;
            }
        }
        Ok(bytes)
    }
}
