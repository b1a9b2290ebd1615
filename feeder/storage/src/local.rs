//! Local disk storage.

use std::sync::Arc;

use bytes::Bytes;

use super::{BlockLocation, FileStatus, RandomAccess, Storage};
use crate::{Error, Result};

/// Local file system.
#[derive(Debug, Default, Clone, Copy)]
pub struct LocalStorage;

/// Strips an optional `file://` prefix.
pub fn local_path(uri: &str) -> &str {
    uri.strip_prefix("file://").unwrap_or(uri)
}

pub(crate) fn map_io(path: &str, offset: Option<u64>, e: std::io::Error) -> Error {
    match e.kind() {
        std::io::ErrorKind::NotFound => Error::NotFound {
            path: path.to_string(),
        },
        std::io::ErrorKind::PermissionDenied => Error::PermissionDenied {
            path: path.to_string(),
        },
        _ => Error::Io {
            loc: hydrofeed_error::Location {
                path: path.to_string(),
                offset,
                ..Default::default()
            },
            source: e,
        },
    }
}

struct LocalFile {
    path: String,
    file: std::fs::File,
    len: u64,
}

impl RandomAccess for LocalFile {
    fn len(&self) -> u64 {
        self.len
    }

    fn read_at(&self, offset: u64, len: usize) -> Result<Bytes> {
        let end = offset.saturating_add(len as u64).min(self.len);
        let n = end.saturating_sub(offset) as usize;
        // Read into the vector's spare capacity: zeroing memory the read then overwrites cost
        // as much as the read's own copy (a stripe or column chunk is megabytes).
        let mut buf: Vec<u8> = Vec::with_capacity(n);
        while buf.len() < n {
            let at = offset + buf.len() as u64;
            match rustix::io::pread(&self.file, rustix::buffer::spare_capacity(&mut buf), at) {
                Ok(0) => {
                    let eof = std::io::Error::new(
                        std::io::ErrorKind::UnexpectedEof,
                        format!("the file ended at byte {at}, before byte {end}"),
                    );
                    return Err(map_io(&self.path, Some(at), eof));
                }
                Ok(_) => {}
                Err(rustix::io::Errno::INTR) => {}
                Err(e) => return Err(map_io(&self.path, Some(at), e.into())),
            }
        }
        buf.truncate(n);
        Ok(Bytes::from(buf))
    }

    fn read_into(&self, offset: u64, buf: &mut [u8]) -> Result<usize> {
        use std::os::unix::fs::FileExt;
        let end = offset.saturating_add(buf.len() as u64).min(self.len);
        let n = end.saturating_sub(offset) as usize;
        self.file
            .read_exact_at(&mut buf[..n], offset)
            .map_err(|e| map_io(&self.path, Some(offset), e))?;
        Ok(n)
    }

    fn path(&self) -> &str {
        &self.path
    }
}

/// A file's modification time in milliseconds since the Unix epoch (none where the file
/// system keeps none).
fn modified_ms(md: &std::fs::Metadata) -> Option<u64> {
    let t = md.modified().ok()?;
    let d = t.duration_since(std::time::UNIX_EPOCH).ok()?;
    u64::try_from(d.as_millis()).ok()
}

impl Storage for LocalStorage {
    fn stat(&self, path: &str) -> Result<FileStatus> {
        let p = local_path(path);
        let md = std::fs::metadata(p).map_err(|e| map_io(path, None, e))?;
        Ok(FileStatus {
            path: p.to_string(),
            len: md.len(),
            is_dir: md.is_dir(),
            modified_ms: modified_ms(&md),
        })
    }

    fn list(&self, dir: &str) -> Result<Vec<FileStatus>> {
        let p = local_path(dir);
        let mut out = Vec::new();
        for entry in std::fs::read_dir(p).map_err(|e| map_io(dir, None, e))? {
            let entry = entry.map_err(|e| map_io(dir, None, e))?;
            let md = entry.metadata().map_err(|e| map_io(dir, None, e))?;
            out.push(FileStatus {
                path: entry.path().to_string_lossy().into_owned(),
                len: md.len(),
                is_dir: md.is_dir(),
                modified_ms: modified_ms(&md),
            });
        }
        out.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(out)
    }

    fn open(&self, path: &str) -> Result<Arc<dyn RandomAccess>> {
        let p = local_path(path);
        let file = std::fs::File::open(p).map_err(|e| map_io(path, None, e))?;
        let md = file.metadata().map_err(|e| map_io(path, None, e))?;
        if md.is_dir() {
            return Err(Error::InvalidArgument(format!(
                "{path}: is a directory, expected a file"
            )));
        }
        Ok(Arc::new(LocalFile {
            path: p.to_string(),
            file,
            len: md.len(),
        }))
    }

    fn block_locations(&self, path: &str) -> Result<Vec<BlockLocation>> {
        let st = self.stat(path)?;
        Ok(vec![BlockLocation {
            offset: 0,
            len: st.len,
            hosts: vec!["localhost".to_string()],
        }])
    }

    fn scheme(&self) -> &'static str {
        "file"
    }
}
