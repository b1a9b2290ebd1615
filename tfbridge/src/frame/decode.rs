//! The consumer side: [`owned_buffer`] wraps a ring slot into an Arrow buffer without
//! copying, and [`FrameDecoder`] decodes frames into [`Frame`]s, slicing the arrays out of that
//! buffer. Every IPC message is checked against its body before arrow-rs reads it, and a panic
//! inside arrow-rs becomes a [`FrameError`].

use std::collections::HashMap;
use std::ops::Deref;
use std::panic::RefUnwindSafe;
use std::ptr::NonNull;
use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch};
use arrow_buffer::Buffer;
use arrow_ipc::convert::fb_to_schema;
use arrow_ipc::reader::{read_dictionary, RecordBatchDecoder};
use arrow_ipc::{root_as_message, MessageHeader};
use arrow_schema::{ArrowError, SchemaRef};

use super::{ErrorCode, FrameError, FrameHeader, FrameKind, FrameMeta, ALIGN, HEADER_LEN};

/// A decoded frame.
#[derive(Debug, Clone)]
pub enum Frame {
    /// The stream's schema (the decoder keeps it for the batches that follow).
    Schema(FrameMeta, SchemaRef),
    /// A batch whose arrays point into the frame's buffer.
    Batch(FrameMeta, RecordBatch),
    /// End of a split.
    EndOfSplit(FrameMeta),
    /// End of an epoch.
    EndOfEpoch(FrameMeta),
    /// End of the feed.
    EndOfFeed(FrameMeta),
    /// The producer's error.
    Error(FrameMeta, ErrorCode, String),
}

/// Decodes the frames of one stream, keeping its schema and dictionaries.
#[derive(Debug, Default)]
pub struct FrameDecoder {
    schema: Option<SchemaRef>,
    dicts: HashMap<i64, ArrayRef>,
}

/// The owner of a region of bytes that an Arrow [`Buffer`] borrows (a ring slot).
struct Owner<T>(T);

// The owner is only read through the Buffer and dropped; a panic cannot leave it half-updated.
impl<T> RefUnwindSafe for Owner<T> {}

/// Wraps `owner`'s bytes in an Arrow [`Buffer`] without copying. The bytes stay valid (and
/// `owner` alive) until the last Buffer or array sliced from it is dropped.
pub fn owned_buffer<T>(owner: T) -> Buffer
where
    T: Deref<Target = [u8]> + Send + Sync + 'static,
{
    let owner = Arc::new(Owner(owner));
    let bytes: &[u8] = &owner.0;
    let len = bytes.len();
    let ptr = NonNull::new(bytes.as_ptr() as *mut u8).unwrap_or(NonNull::dangling());
    // SAFETY: `ptr` points at `len` bytes that `owner` owns; `owner` moves into the Buffer's
    // allocation handle (an Arc), so the bytes stay valid and unchanged (Deref gives shared
    // access only, and a ring slot's bytes are never rewritten while it lives) for as long as any
    // Buffer sliced from this one exists. A moved `T` keeps pointing at the same bytes: the
    // slot/Vec owns heap or shared memory, not inline storage (checked by the tests).
    unsafe { Buffer::from_custom_allocation(ptr, len, owner) }
}

impl FrameDecoder {
    /// A decoder for a new stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// The schema, once the schema frame was seen.
    pub fn schema(&self) -> Option<&SchemaRef> {
        self.schema.as_ref()
    }

    /// Decodes one frame. `frame` is the whole slot (header included); batches slice their
    /// arrays out of it without copying.
    pub fn decode(&mut self, frame: &Buffer) -> Result<Frame, FrameError> {
        if !(frame.as_ptr() as usize).is_multiple_of(ALIGN) {
            return Err(FrameError::Corrupt(format!(
                "frame at {:p} is not {ALIGN}-byte aligned (ring slots are)",
                frame.as_ptr()
            )));
        }
        let h = FrameHeader::parse(frame.as_slice())?;
        self.decode_payload(frame, &h).map_err(|e| match e {
            FrameError::Corrupt(m) => FrameError::Corrupt(format!("{}: {m}", h.name())),
            FrameError::Arrow(e) => FrameError::Corrupt(format!("{}: arrow ipc: {e}", h.name())),
            e => e,
        })
    }

    fn decode_payload(&mut self, frame: &Buffer, h: &FrameHeader) -> Result<Frame, FrameError> {
        let meta = h.meta();
        let payload = frame.slice_with_length(HEADER_LEN, h.payload_len as usize);
        match h.kind() {
            Some(FrameKind::Schema) => {
                // A new stream: forget the old one's dictionaries first, then keep the ones
                // this frame carries (empty ones, which the encoder counts as sent).
                self.dicts.clear();
                self.schema = None;
                let schema = self.read_guarded(&payload, true)?.0.ok_or_else(|| {
                    FrameError::Corrupt("schema frame without a schema message".into())
                })?;
                self.schema = Some(schema.clone());
                Ok(Frame::Schema(meta, schema))
            }
            Some(FrameKind::Batch) => {
                let batch = self.read_guarded(&payload, false)?.1.ok_or_else(|| {
                    FrameError::Corrupt("batch frame without a record batch message".into())
                })?;
                if batch.num_rows() as u64 != h.rows {
                    return Err(FrameError::Corrupt(format!(
                        "frame header says {} rows, batch has {}",
                        h.rows,
                        batch.num_rows()
                    )));
                }
                Ok(Frame::Batch(meta, batch))
            }
            Some(FrameKind::EndOfSplit) => Ok(Frame::EndOfSplit(meta)),
            Some(FrameKind::EndOfEpoch) => Ok(Frame::EndOfEpoch(meta)),
            Some(FrameKind::EndOfFeed) => Ok(Frame::EndOfFeed(meta)),
            Some(FrameKind::Error) => Ok(Frame::Error(
                meta,
                ErrorCode::from_u32(h.code),
                String::from_utf8_lossy(payload.as_slice()).into_owned(),
            )),
            None => Err(FrameError::Corrupt(format!(
                "unknown frame kind {}",
                h.kind
            ))),
        }
    }

    /// [`FrameDecoder::read_messages`], with arrow-rs panics turned into errors. The messages
    /// are checked before arrow-rs sees them (every buffer inside the body, sane counts), but
    /// arrow-rs still asserts on some inconsistent bodies (a validity buffer shorter than its
    /// node, say) instead of returning an error; a corrupt frame must not take the trainer
    /// down. The decoder's state is unchanged by a panic: dictionaries are stored last.
    fn read_guarded(
        &mut self,
        payload: &Buffer,
        schema_frame: bool,
    ) -> Result<(Option<SchemaRef>, Option<RecordBatch>), FrameError> {
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            self.read_messages(payload, schema_frame)
        }));
        r.unwrap_or_else(|p| {
            let why = p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "no message".into());
            Err(FrameError::Corrupt(format!(
                "arrow ipc could not read the payload: {why}"
            )))
        })
    }

    /// Walks the IPC messages of a payload. Returns the schema (if a schema message came) and
    /// the record batch (the last one, if any).
    fn read_messages(
        &mut self,
        payload: &Buffer,
        schema_frame: bool,
    ) -> Result<(Option<SchemaRef>, Option<RecordBatch>), FrameError> {
        let bytes = payload.as_slice();
        let mut at = 0usize;
        let mut schema_out = None;
        let mut batch_out = None;
        while at + 8 <= bytes.len() {
            let mut word = u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap_or([0; 4]));
            let mut prefix = 4;
            if word == 0xFFFF_FFFF {
                word = u32::from_le_bytes(bytes[at + 4..at + 8].try_into().unwrap_or([0; 4]));
                prefix = 8;
            }
            let meta_len = word as usize;
            if meta_len == 0 {
                break; // end-of-stream marker
            }
            let meta_start = at + prefix;
            let meta_end = meta_start
                .checked_add(meta_len)
                .filter(|&e| e <= bytes.len())
                .ok_or_else(|| {
                    FrameError::Corrupt(format!(
                        "IPC message at payload offset {at} claims {meta_len} metadata bytes, \
                         {} remain",
                        bytes.len() - meta_start
                    ))
                })?;
            let msg = root_as_message(&bytes[meta_start..meta_end]).map_err(|e| {
                FrameError::Corrupt(format!("IPC message at payload offset {at}: {e}"))
            })?;
            let body_len = usize::try_from(msg.bodyLength()).unwrap_or(usize::MAX);
            let body_end = meta_end
                .checked_add(body_len)
                .filter(|&e| e <= bytes.len())
                .ok_or_else(|| {
                    FrameError::Corrupt(format!(
                        "IPC message at payload offset {at} claims a {body_len}-byte body, {} \
                         remain",
                        bytes.len() - meta_end
                    ))
                })?;
            let body = payload.slice_with_length(meta_end, body_len);
            let version = msg.version();
            match msg.header_type() {
                MessageHeader::Schema => {
                    let fb = msg
                        .header_as_schema()
                        .ok_or_else(|| FrameError::Corrupt("unreadable schema message".into()))?;
                    schema_out = Some(Arc::new(fb_to_schema(fb)));
                }
                MessageHeader::DictionaryBatch => {
                    let schema = schema_out
                        .clone()
                        .or_else(|| self.schema.clone())
                        .ok_or(FrameError::NoSchema)?;
                    let d = msg.header_as_dictionary_batch().ok_or_else(|| {
                        FrameError::Corrupt("unreadable dictionary batch message".into())
                    })?;
                    let rb = d.data().ok_or_else(|| {
                        FrameError::Corrupt("dictionary batch message without data".into())
                    })?;
                    check_batch(rb, body_len, at)?;
                    // Dictionaries are kept for the batches that follow, so they get their
                    // own copy: a view into this frame would keep its slot, and so every
                    // later slot of the ring, from being reclaimed (the ring frees in order).
                    let owned = Buffer::from_slice_ref(body.as_slice());
                    read_dictionary(&owned, d, &schema, &mut self.dicts, &version)
                        .map_err(|e| at_offset(at, e))?;
                }
                MessageHeader::RecordBatch => {
                    if !schema_frame {
                        let schema = self.schema.clone().ok_or(FrameError::NoSchema)?;
                        let rb = msg.header_as_record_batch().ok_or_else(|| {
                            FrameError::Corrupt("unreadable record batch message".into())
                        })?;
                        check_batch(rb, body_len, at)?;
                        let batch =
                            RecordBatchDecoder::try_new(&body, rb, schema, &self.dicts, &version)
                                .and_then(|d| d.with_require_alignment(true).read_record_batch())
                                .map_err(|e| at_offset(at, e))?;
                        batch_out = Some(batch);
                    }
                }
                other => {
                    return Err(FrameError::Corrupt(format!(
                        "unexpected IPC message {other:?} in a frame"
                    )))
                }
            }
            at = body_end;
        }
        Ok((schema_out, batch_out))
    }
}

fn at_offset(at: usize, e: ArrowError) -> FrameError {
    FrameError::Corrupt(format!("IPC message at payload offset {at}: {e}"))
}

/// Checks a record (or dictionary) batch message against its body before arrow-rs reads it:
/// no compression (frames are written without), counts that are not negative, null counts
/// within their node, every buffer inside the body.
fn check_batch(
    rb: arrow_ipc::RecordBatch<'_>,
    body_len: usize,
    at: usize,
) -> Result<(), FrameError> {
    let bad = |what: String| {
        Err(FrameError::Corrupt(format!(
            "IPC message at payload offset {at}: {what}"
        )))
    };
    if rb.compression().is_some() {
        return bad("compressed body (frames are written uncompressed)".into());
    }
    if rb.length() < 0 {
        return bad(format!("negative row count {}", rb.length()));
    }
    for (i, n) in rb.nodes().iter().flatten().enumerate() {
        if n.length() < 0 || n.null_count() < 0 || n.null_count() > n.length() {
            return bad(format!(
                "field node {i} has length {} and null count {}",
                n.length(),
                n.null_count()
            ));
        }
    }
    for (i, b) in rb.buffers().iter().flatten().enumerate() {
        let end = u64::try_from(b.offset())
            .ok()
            .zip(u64::try_from(b.length()).ok())
            .and_then(|(o, l)| o.checked_add(l));
        // The format aligns every buffer to 8 bytes (frames: 64); arrow-rs asserts on less.
        if end.is_none_or(|e| e > body_len as u64) || b.offset() % 8 != 0 {
            return bad(format!(
                "buffer {i} at {} of {} bytes is misaligned or outside the {body_len}-byte body",
                b.offset(),
                b.length()
            ));
        }
    }
    Ok(())
}
