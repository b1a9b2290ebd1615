//! Delta Lake deletion vectors: the rows of a data file a `DELETE`, `UPDATE` or `MERGE` removed
//! without rewriting the file (Delta's protocol, "Deletion Vectors").
//!
//! An `add` action's `deletionVector` names the vector: stored in a file beside the table
//! (`u`: a path prefix and a UUID, Z85-encoded; `p`: an absolute path) at `offset`, framed as
//! a 4-byte big-endian length, the data, and a big-endian CRC-32 of the data; or inline in the
//! log (`i`: the data itself, Z85-encoded). The data is a magic number (1681511377,
//! little-endian) and a 64-bit Roaring bitmap in its portable serialization (the `roaring`
//! crate's `RoaringTreemap`: a count of 32-bit bitmaps, each with its key). Each set bit is
//! the index of a deleted row in the data file (0 is the file's first row).
//!
//! A vector whose framing, checksum, magic number or cardinality is wrong is a `DataError`
//! naming the vector's file (or the data file, for an inline vector) and the offset.

use std::sync::Arc;

use roaring::RoaringTreemap;

use hydrofeed_storage::Storage;

use crate::io::loc;
use crate::{Error, Result};

/// Magic number of a serialized deletion vector (`RoaringBitmapArray`, portable format).
const MAGIC: u32 = 1_681_511_377;

/// Z85's alphabet (ZeroMQ RFC 32), in value order.
const Z85: &[u8; 85] =
    b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#";

/// Z85-decodes `s` (a multiple of 5 characters: 4 bytes each, big-endian).
fn z85(s: &str) -> Option<Vec<u8>> {
    let b = s.as_bytes();
    if !b.len().is_multiple_of(5) {
        return None;
    }
    let mut out = Vec::with_capacity(b.len() / 5 * 4);
    for chunk in b.chunks(5) {
        let mut v: u64 = 0;
        for &c in chunk {
            let d = Z85.iter().position(|&z| z == c)? as u64;
            v = v * 85 + d;
        }
        out.extend_from_slice(&u32::try_from(v).ok()?.to_be_bytes());
    }
    Some(out)
}

/// Z85-encodes `b` (a multiple of 4 bytes): the inverse of [`z85`].
fn z85_encode(b: &[u8]) -> String {
    let mut s = String::with_capacity(b.len() / 4 * 5);
    for w in b.chunks(4) {
        let mut v = u32::from_be_bytes([w[0], w[1], w[2], w[3]]) as usize;
        let mut c = [0u8; 5];
        for k in (0..5).rev() {
            c[k] = Z85[v % 85];
            v /= 85;
        }
        s.extend(c.iter().map(|&b| b as char));
    }
    s
}

/// A deletion vector as an `add` action describes it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeletionVector {
    /// `u` (a file beside the table, by UUID), `p` (a file by absolute path), `i` (inline).
    pub storage_type: String,
    /// The UUID (with an optional path prefix), the path, or the inline data, as stored.
    pub path_or_inline_dv: String,
    /// Where the vector starts in its file (`u`, `p`).
    #[serde(default)]
    pub offset: Option<u64>,
    /// Bytes of the serialized vector.
    pub size_in_bytes: u64,
    /// Rows it deletes.
    pub cardinality: u64,
}

/// The rows of one data file that a deletion vector deletes (row indices from 0).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Deleted(RoaringTreemap);

impl Deleted {
    /// Rows deleted in `[start, end)`.
    pub fn count_in(&self, start: u64, end: u64) -> u64 {
        if end <= start {
            return 0;
        }
        self.0.range_cardinality(start..end)
    }

    /// Whether row `i` is deleted.
    pub fn contains(&self, i: u64) -> bool {
        self.0.contains(i)
    }

    /// Rows deleted.
    pub fn len(&self) -> u64 {
        self.0.len()
    }

    /// Whether no row is deleted.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The deleted rows of `rows`.
    pub fn from_rows(rows: impl IntoIterator<Item = u64>) -> Self {
        Self(rows.into_iter().collect())
    }

    /// Adds the rows `other` deletes (a file several delete files name).
    pub fn union_with(&mut self, other: &Deleted) {
        self.0 |= &other.0;
    }
}

impl DeletionVector {
    /// An inline vector (`i`) holding the rows of `deleted`: how rows deleted otherwise than by
    /// a Delta vector (Iceberg's delete files) reach the plan, which reads every vector alike.
    pub fn inline(deleted: &Deleted) -> Self {
        let mut data = MAGIC.to_le_bytes().to_vec();
        deleted
            .0
            .serialize_into(&mut data)
            .expect("serializing into a Vec cannot fail");
        let size_in_bytes = data.len() as u64;
        // Z85 takes whole 4-byte words; the bitmap's reader stops at its own end.
        while !data.len().is_multiple_of(4) {
            data.push(0);
        }
        DeletionVector {
            storage_type: "i".into(),
            path_or_inline_dv: z85_encode(&data),
            offset: None,
            size_in_bytes,
            cardinality: deleted.len(),
        }
    }

    /// The vector's file, for `u` and `p` vectors of a table at `root`.
    fn file(&self, root: &str) -> Option<String> {
        match self.storage_type.as_str() {
            "u" => {
                let s = &self.path_or_inline_dv;
                let cut = s.len().checked_sub(20)?;
                let (prefix, id) = (&s[..cut], &s[cut..]);
                let u = z85(id)?;
                let hex: String = u.iter().map(|b| format!("{b:02x}")).collect();
                let uuid = format!(
                    "{}-{}-{}-{}-{}",
                    &hex[0..8],
                    &hex[8..12],
                    &hex[12..16],
                    &hex[16..20],
                    &hex[20..32]
                );
                let root = root.trim_end_matches('/');
                Some(if prefix.is_empty() {
                    format!("{root}/deletion_vector_{uuid}.bin")
                } else {
                    format!("{root}/{prefix}/deletion_vector_{uuid}.bin")
                })
            }
            "p" => Some(self.path_or_inline_dv.clone()),
            _ => None,
        }
    }

    /// Reads the vector of `data_file`, a file of the table at `root`.
    pub fn load(&self, storage: &Arc<dyn Storage>, root: &str, data_file: &str) -> Result<Deleted> {
        let (bytes, path, at) = match self.storage_type.as_str() {
            "i" => {
                let b = z85(&self.path_or_inline_dv).ok_or_else(|| {
                    bad(
                        data_file,
                        None,
                        "its inline deletion vector is not Z85".into(),
                    )
                })?;
                (b, data_file.to_string(), None)
            }
            "u" | "p" => {
                let path = self.file(root).ok_or_else(|| {
                    bad(
                        data_file,
                        None,
                        format!(
                            "its deletion vector's location {:?} is not a Z85 UUID",
                            self.path_or_inline_dv
                        ),
                    )
                })?;
                let off = self.offset.unwrap_or(1);
                let f = storage.open(&path)?;
                let need = 4 + self.size_in_bytes + 4;
                if off + need > f.len() {
                    return Err(bad(
                        &path,
                        Some(off),
                        format!(
                            "the deletion vector of {data_file} ({} bytes at {off}) runs past \
                             the file's end ({} bytes)",
                            self.size_in_bytes,
                            f.len()
                        ),
                    ));
                }
                let b = f.read_at(off, need as usize)?;
                let len = u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as u64;
                if len != self.size_in_bytes {
                    return Err(bad(
                        &path,
                        Some(off),
                        format!(
                            "the deletion vector of {data_file} is framed as {len} bytes, the \
                             log says {}",
                            self.size_in_bytes
                        ),
                    ));
                }
                let data = &b[4..4 + len as usize];
                let crc = &b[4 + len as usize..];
                let want = u32::from_be_bytes([crc[0], crc[1], crc[2], crc[3]]);
                if crc32fast::hash(data) != want {
                    return Err(bad(
                        &path,
                        Some(off),
                        format!("the deletion vector of {data_file} fails its CRC-32"),
                    ));
                }
                (data.to_vec(), path, Some(off))
            }
            other => {
                return Err(bad(
                    data_file,
                    None,
                    format!("a deletion vector of storage type {other:?} (known: u, p, i)"),
                ))
            }
        };
        if bytes.len() < 4 || u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]) != MAGIC
        {
            return Err(bad(
                &path,
                at,
                format!("the deletion vector of {data_file} lacks its magic number"),
            ));
        }
        let set = RoaringTreemap::deserialize_from(&bytes[4..]).map_err(|e| {
            bad(
                &path,
                at,
                format!("the deletion vector of {data_file} does not decode: {e}"),
            )
        })?;
        if set.len() != self.cardinality {
            return Err(bad(
                &path,
                at,
                format!(
                    "the deletion vector of {data_file} holds {} rows, the log says {}",
                    set.len(),
                    self.cardinality
                ),
            ));
        }
        Ok(Deleted(set))
    }
}

fn bad(path: &str, offset: Option<u64>, detail: String) -> Error {
    Error::data(
        loc(path, None, offset, Some("deletion vector".into())),
        "delta",
        detail,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn z85_decodes_the_rfc_example() {
        // ZeroMQ RFC 32: "HelloWorld" is these 8 bytes.
        assert_eq!(
            z85("HelloWorld").unwrap(),
            vec![0x86, 0x4F, 0xD2, 0x6F, 0xB5, 0x59, 0xF7, 0x5B]
        );
        assert!(z85("abc").is_none());
    }

    #[test]
    fn a_uuid_vector_names_its_file_beside_the_table() {
        let dv = DeletionVector {
            storage_type: "u".into(),
            path_or_inline_dv: "abVPINyls-HBSs9C[1<{.P".into(),
            offset: Some(1),
            size_in_bytes: 0,
            cardinality: 0,
        };
        let f = dv.file("/t/").unwrap();
        assert!(f.starts_with("/t/ab/deletion_vector_"), "{f}");
        assert_eq!(f.len(), "/t/ab/deletion_vector_".len() + 36 + 4);
    }

    #[test]
    fn an_inline_vector_decodes_and_its_cardinality_is_checked() {
        assert_eq!(
            z85_encode(&[0x86, 0x4F, 0xD2, 0x6F, 0xB5, 0x59, 0xF7, 0x5B]),
            "HelloWorld"
        );
        let set = Deleted::from_rows([3u64, 7, 1 << 33]);
        let storage: Arc<dyn Storage> = Arc::new(hydrofeed_storage::local::LocalStorage);
        let mut dv = DeletionVector::inline(&set);
        assert_eq!(dv.cardinality, 3);
        let d = dv.load(&storage, "/t", "/t/f.parquet").unwrap();
        assert_eq!(d, set);
        assert_eq!(d.count_in(0, 8), 2);
        assert!(d.contains(1 << 33) && !d.contains(4));
        dv.cardinality = 4;
        let e = dv.load(&storage, "/t", "/t/f.parquet").unwrap_err();
        assert!(
            e.to_string().contains("holds 3 rows, the log says 4"),
            "{e}"
        );
    }
}
