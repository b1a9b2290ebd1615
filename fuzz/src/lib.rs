//! Harness-agnostic fuzz targets: one function per decoder, taking arbitrary bytes as a whole
//! file. They must never panic, hang or allocate without bound; errors are fine.
//!
//! libFuzzer entry points live in `fuzz_targets/` (`cargo fuzz`, nightly); on stable, the tests
//! below run every target over generated seed files and deterministic mutations of them, and
//! `src/bin/replay.rs` runs a target over files.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use arrow_schema::SchemaRef;
use bytes::Bytes;
use hydrofeed_feeder::format::{self, OnError, ReadOptions, SplitReader};
use hydrofeed_feeder::split::Split;
use hydrofeed_feeder::storage::{BlockLocation, FileStatus, RandomAccess, Storage};
use hydrofeed_feeder::{Error, Result};

/// One file held in memory.
struct MemFile {
    path: String,
    data: Bytes,
}

impl RandomAccess for MemFile {
    fn len(&self) -> u64 {
        self.data.len() as u64
    }

    fn read_at(&self, offset: u64, len: usize) -> Result<Bytes> {
        let start = (offset as usize).min(self.data.len());
        let end = start.saturating_add(len).min(self.data.len());
        Ok(self.data.slice(start..end))
    }

    fn path(&self) -> &str {
        &self.path
    }
}

/// A storage of one in-memory file.
pub struct MemStorage {
    file: Arc<MemFile>,
}

impl MemStorage {
    /// Holds `data` as `path` (a fresh path per input, so no cache keyed by path can confuse
    /// two inputs).
    pub fn new(ext: &str, data: &[u8]) -> (Arc<dyn Storage>, FileStatus) {
        static N: AtomicU64 = AtomicU64::new(0);
        // SYNC: Relaxed, a unique counter; nothing else is ordered by it.
        let path = format!("mem://input-{}.{ext}", N.fetch_add(1, Ordering::Relaxed));
        let file = Arc::new(MemFile {
            path: path.clone(),
            data: Bytes::copy_from_slice(data),
        });
        let st = FileStatus {
            path,
            len: data.len() as u64,
            is_dir: false,
        };
        (Arc::new(MemStorage { file }), st)
    }
}

impl Storage for MemStorage {
    fn stat(&self, path: &str) -> Result<FileStatus> {
        if path != self.file.path {
            return Err(Error::NotFound {
                path: path.to_string(),
            });
        }
        Ok(FileStatus {
            path: path.to_string(),
            len: self.file.len(),
            is_dir: false,
        })
    }

    fn list(&self, dir: &str) -> Result<Vec<FileStatus>> {
        Err(Error::NotFound {
            path: dir.to_string(),
        })
    }

    fn open(&self, path: &str) -> Result<Arc<dyn RandomAccess>> {
        self.stat(path)?;
        Ok(self.file.clone())
    }

    fn block_locations(&self, path: &str) -> Result<Vec<BlockLocation>> {
        Ok(vec![BlockLocation {
            offset: 0,
            len: self.stat(path)?.len,
            hosts: vec![],
        }])
    }

    fn scheme(&self) -> &'static str {
        "mem"
    }
}

type PlanFile =
    fn(&Arc<dyn Storage>, &FileStatus, &ReadOptions, u32) -> Result<(SchemaRef, Vec<Split>)>;
type Open = fn(&Arc<dyn Storage>, &Split, &SchemaRef, &ReadOptions) -> Result<Box<dyn SplitReader>>;

/// Plans and drains every split of a file under both error policies.
fn drive(ext: &str, data: &[u8], plan_file: PlanFile, open: Open) {
    for on_error in [OnError::Raise, OnError::Skip] {
        let (storage, st) = MemStorage::new(ext, data);
        let opts = ReadOptions {
            on_error,
            split_bytes: 256,
            batch_rows: 64,
            ..Default::default()
        };
        let Ok((schema, splits)) = plan_file(&storage, &st, &opts, 0) else {
            continue;
        };
        for s in &splits {
            let Ok(reader) = open(&storage, s, &schema, &opts) else {
                continue;
            };
            // Bounded: a reader must end; a batch error ends this split.
            for b in reader.take(1 << 20) {
                if b.is_err() {
                    break;
                }
            }
        }
    }
}

/// TFRecord target (plain, or GZIP/ZLIB when the bytes start like those streams).
pub fn tfrecord(data: &[u8]) {
    drive(
        "tfrecord",
        data,
        format::tfrecord::plan_file,
        format::tfrecord::open,
    );
}

/// Parquet target.
pub fn parquet(data: &[u8]) {
    drive(
        "parquet",
        data,
        format::parquet::plan_file,
        format::parquet::open,
    );
}

/// ORC target.
pub fn orc(data: &[u8]) {
    drive("orc", data, format::orc::plan_file, format::orc::open);
}

/// Avro target.
pub fn avro(data: &[u8]) {
    drive("avro", data, format::avro::plan_file, format::avro::open);
}

/// A target by name.
pub fn target(name: &str) -> Option<fn(&[u8])> {
    match name {
        "tfrecord" => Some(tfrecord),
        "parquet" => Some(parquet),
        "orc" => Some(orc),
        "avro" => Some(avro),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    //! Stable stand-in for a fuzzing run: seeds from `hydrofeed gen` (and TFRecord framing
    //! edge cases), each mutated deterministically (bit flips, byte overwrites, truncations,
    //! splices), fed to every target.

    use hydrofeed_feeder::format::tfrecord::Compression;
    use hydrofeed_feeder::gen::{write_dataset, GenOptions};
    use hydrofeed_feeder::split::Format;

    fn seeds(format: Format) -> Vec<Vec<u8>> {
        let comps: &[Compression] = if format == Format::Tfrecord {
            &[Compression::None, Compression::Gzip, Compression::Zlib]
        } else {
            &[Compression::None]
        };
        let mut out = Vec::new();
        for &compression in comps {
            let dir = std::env::temp_dir().join(format!(
                "hydrofeed-fuzz-seed-{}-{format:?}-{}",
                std::process::id(),
                compression.name()
            ));
            let opts = GenOptions {
                format,
                rows: 3,
                files: 1,
                seed: 1,
                compression,
            };
            for f in write_dataset(&dir, &opts).expect("gen seed") {
                out.push(std::fs::read(&f).expect("read seed"));
            }
            let _ = std::fs::remove_dir_all(&dir);
        }
        out
    }

    /// A tiny xorshift: deterministic mutations without a dependency.
    fn next(s: &mut u64) -> u64 {
        *s ^= *s << 13;
        *s ^= *s >> 7;
        *s ^= *s << 17;
        *s
    }

    fn mutate(seed: &[u8], s: &mut u64) -> Vec<u8> {
        let mut d = seed.to_vec();
        if d.is_empty() {
            return d;
        }
        for _ in 0..=(next(s) % 4) {
            let i = (next(s) % d.len() as u64) as usize;
            match next(s) % 5 {
                0 => d[i] ^= 1 << (next(s) % 8),
                1 => d[i] = next(s) as u8,
                2 => d.truncate(i),
                3 => {
                    let j = (next(s) % d.len().max(1) as u64) as usize;
                    let chunk: Vec<u8> = d[j.min(i)..j.max(i)].iter().copied().take(64).collect();
                    d.splice(i..i, chunk);
                }
                _ => {
                    // Large length prefixes are the classic decoder killer.
                    let v = (next(s) | 0xffff_0000).to_le_bytes();
                    let end = (i + 8).min(d.len());
                    d[i..end].copy_from_slice(&v[..end - i]);
                }
            }
            if d.is_empty() {
                break;
            }
        }
        d
    }

    fn run(format: Format, target: fn(&[u8]), extra: Vec<Vec<u8>>, rounds: usize) {
        let mut all = seeds(format);
        all.extend(extra);
        let mut s = 0x9e37_79b9_7f4a_7c15u64;
        for seed in &all {
            target(seed);
            for _ in 0..rounds {
                target(&mutate(seed, &mut s));
            }
        }
    }

    #[test]
    fn tfrecord_survives_mutations() {
        let mut edge = vec![
            vec![],
            vec![0; 12],
            vec![0xff; 40],
            vec![0x1f, 0x8b],
            vec![0x78, 0x9c],
        ];
        let mut f = Vec::new();
        hydrofeed_feeder::format::tfrecord::framing::frame(b"\x0a\x00", &mut f);
        edge.push(f);
        run(Format::Tfrecord, super::tfrecord, edge, 300);
    }

    #[test]
    fn parquet_survives_mutations() {
        run(
            Format::Parquet,
            super::parquet,
            vec![vec![], b"PAR1PAR1".to_vec()],
            150,
        );
    }

    #[test]
    fn orc_survives_mutations() {
        run(Format::Orc, super::orc, vec![vec![], b"ORC".to_vec()], 150);
    }

    #[test]
    fn avro_survives_mutations() {
        run(
            Format::Avro,
            super::avro,
            vec![vec![], b"Obj\x01".to_vec()],
            150,
        );
    }
}
