//! Harness-agnostic fuzz targets: one function per decoder, taking arbitrary bytes as a whole
//! file, plus the trainer's frame decoder ([`frame()`]) and both ends of the ring ([`ring()`]).
//! They must never panic, hang or allocate without bound; errors are fine.
//!
//! libFuzzer entry points live in `fuzz_targets/` (`make fuzz` builds them with coverage
//! instrumentation on stable); the tests below run every target over its seeds ([`seeds`]) and
//! deterministic mutations of them, and `src/bin/replay.rs` runs a target over files.
//!
//! Panics: the readers and the frame decoder turn a panic inside a third-party decoder into an
//! error on purpose ([`panics`]); only a panic that escapes a target is a crash.

pub mod frame;
pub mod panics;
pub mod ring;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use arrow_schema::SchemaRef;
use bytes::Bytes;
use hydrofeed_format::tfrecord::Compression;
use hydrofeed_format::{self as format, OnError, ReadOptions, SplitReader};
use hydrofeed_format::gen::{write_dataset, GenOptions};
use hydrofeed_format::split::{Format, Split};
use hydrofeed_storage::{BlockLocation, FileStatus, RandomAccess, Storage};
use hydrofeed_error::{Error, Result};

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
    #[allow(clippy::new_ret_no_self)] // the storage comes with the file's status
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

/// Frame target: a valid frame header over a hostile Arrow IPC payload, decoded by the
/// trainer's [`FrameDecoder`](hydrofeed_tfbridge::FrameDecoder) (see [`frame`](mod@frame)).
pub fn frame(data: &[u8]) {
    let _ = frame::frame(data);
}

/// Ring target: both ends of a memfd ring against a hostile peer (see [`ring`](mod@ring)).
pub fn ring(data: &[u8]) {
    ring::ring(data);
}

/// The targets, by name.
pub const TARGETS: [&str; 6] = ["tfrecord", "parquet", "orc", "avro", "frame", "ring"];

/// A target by name.
pub fn target(name: &str) -> Option<fn(&[u8])> {
    match name {
        "tfrecord" => Some(tfrecord),
        "parquet" => Some(parquet),
        "orc" => Some(orc),
        "avro" => Some(avro),
        "frame" => Some(frame),
        "ring" => Some(ring),
        _ => None,
    }
}

/// Files `hydrofeed gen` writes in `format` (3 rows; TFRecord also GZIP and ZLIB).
fn generated(format: Format) -> Vec<Vec<u8>> {
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

/// Starting inputs of a target: generated files and framing edge cases for the readers,
/// encoded frames for `frame`, short programs for `ring`. The tests mutate them; the libFuzzer
/// binaries write them into their corpus ([`panics::init`]); the `seeds` binary writes them
/// anywhere.
pub fn seeds(name: &str) -> Vec<Vec<u8>> {
    match name {
        "tfrecord" => {
            let mut out = generated(Format::Tfrecord);
            out.extend([
                vec![],
                vec![0; 12],
                vec![0xff; 40],
                vec![0x1f, 0x8b],
                vec![0x78, 0x9c],
            ]);
            let mut f = Vec::new();
            format::tfrecord::framing::frame(b"\x0a\x00", &mut f);
            out.push(f);
            out
        }
        "parquet" => {
            let mut out = generated(Format::Parquet);
            out.extend([vec![], b"PAR1PAR1".to_vec()]);
            out
        }
        "orc" => {
            let mut out = generated(Format::Orc);
            out.extend([vec![], b"ORC".to_vec()]);
            out
        }
        "avro" => {
            let mut out = generated(Format::Avro);
            out.extend([vec![], b"Obj\x01".to_vec()]);
            out
        }
        "frame" => frame::seeds(),
        "ring" => ring::seeds(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    //! Stable stand-in for a fuzzing run: every target's seeds ([`super::seeds`]), each
    //! mutated deterministically (bit flips, byte overwrites, truncations, splices).

    /// A tiny xorshift: deterministic mutations without a dependency.
    fn next(s: &mut u64) -> u64 {
        *s ^= *s << 13;
        *s ^= *s >> 7;
        *s ^= *s << 17;
        *s
    }

    pub(crate) fn mutate(seed: &[u8], s: &mut u64) -> Vec<u8> {
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

    fn run(name: &str, rounds: usize) {
        let target = super::target(name).expect("target");
        let mut s = 0x9e37_79b9_7f4a_7c15u64;
        for seed in &super::seeds(name) {
            target(seed);
            for _ in 0..rounds {
                target(&mutate(seed, &mut s));
            }
        }
    }

    #[test]
    fn tfrecord_survives_mutations() {
        run("tfrecord", 300);
    }

    #[test]
    fn parquet_survives_mutations() {
        run("parquet", 150);
    }

    #[test]
    fn orc_survives_mutations() {
        run("orc", 150);
    }

    #[test]
    fn avro_survives_mutations() {
        run("avro", 150);
    }

    #[test]
    fn frame_survives_mutations() {
        run("frame", 60);
    }

    #[test]
    fn ring_survives_mutations() {
        run("ring", 100);
    }

    /// Inputs kept from fuzzing runs (`regressions/<target>/`, see README.md) stay harmless.
    /// An input named `open-*` is a crash not fixed yet: listed, not run.
    #[test]
    fn regressions() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("regressions");
        for name in super::TARGETS {
            let Ok(dir) = std::fs::read_dir(root.join(name)) else {
                continue;
            };
            let target = super::target(name).expect("target");
            for f in dir.flatten() {
                let path = f.path();
                if f.file_name().to_string_lossy().starts_with("open-") {
                    eprintln!("not run (open): {}", path.display());
                    continue;
                }
                target(&std::fs::read(&path).expect("read a regression input"));
            }
        }
    }

    /// The frame target's templates decode as they are, in the decoder state they need: the
    /// harness starts from frames the decoder takes.
    #[test]
    fn frame_templates_decode() {
        use crate::frame::{frame, KINDS};
        use hydrofeed_tfbridge::FrameKind;
        let batch = KINDS.iter().position(|k| *k == FrameKind::Batch).unwrap() as u8;
        let schema = KINDS.iter().position(|k| *k == FrameKind::Schema).unwrap() as u8;
        // Unedited template bodies (0x40), the whole length (0xffff).
        assert_eq!(frame(&[0x40 | schema << 3, 0, 0xff, 0xff]), None);
        for which in 1..4 {
            assert_eq!(
                frame(&[0x40 | 0x80 | 2 | batch << 3, which, 0xff, 0xff]),
                None
            );
        }
        // The first batch carries its dictionaries: it decodes after the schema alone.
        assert_eq!(frame(&[0x40 | 1 | batch << 3, 1, 0xff, 0xff]), None);
        // The second relies on them.
        assert!(frame(&[0x40 | 1 | batch << 3, 2, 0xff, 0xff]).is_some());
    }

    /// Edited and truncated template bodies get past the frame header every time: the errors
    /// come from the IPC messages or Arrow, never from the header check.
    #[test]
    fn frame_errors_come_from_the_payload() {
        let mut s = 0x2545_f491_4f6c_dd1du64;
        let (mut errors, mut ok) = (0, 0);
        for _ in 0..3000 {
            let mut input = vec![
                0x40 | 2 | (next(&mut s) as u8 % 2) << 3,
                next(&mut s) as u8 & 3,
            ];
            let cut = if next(&mut s).is_multiple_of(4) {
                next(&mut s) as u16 % 3000
            } else {
                u16::MAX
            };
            input.extend_from_slice(&cut.to_le_bytes());
            for _ in 0..=next(&mut s) % 4 {
                input.extend_from_slice(&(next(&mut s) as u32).to_le_bytes());
            }
            match crate::frame::frame(&input) {
                None => ok += 1,
                Some(e) => {
                    errors += 1;
                    for header_error in [
                        "magic",
                        "layout version",
                        "unknown frame kind",
                        "payload bytes but",
                    ] {
                        assert!(
                            !e.contains(header_error),
                            "header error {e:?} for {input:02x?}"
                        );
                    }
                }
            }
        }
        assert!(errors > 1000, "{errors} errors, {ok} decoded");
    }
}
