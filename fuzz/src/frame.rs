//! The trainer's frame decoder ([`FrameDecoder::decode`], what `hydrofeed.DataFeed` runs on
//! every ring slot) over hostile frames.
//!
//! Every input becomes a frame with a valid [`FrameHeader`] (magic, version, a known kind, a
//! payload length that matches), so decoding always gets past the header check and the Arrow
//! IPC parser sees the payload. The payload is either the input's bytes as they are, or one of
//! a few valid payloads (schema frame, batch frames with and without their dictionaries)
//! encoded once by [`FrameEncoder`] from batches with int, string, list, fixed-size list and
//! dictionary (also nested in a list) columns, edited and truncated as the input says.
//!
//! The frame sits in its own mapping next to an inaccessible guard page, as a slot at the end
//! of the ring does: a read past its end (or, placed the other way, before its start) faults.
//! Whatever decodes must be a valid batch (full Arrow validation), map to tensors without a
//! panic, and leave the decoder able to take the next valid frame or fail cleanly on it.
//!
//! Input layout (missing bytes read as 0):
//! - byte 0, flags: bits 0-1 the decoder's state before the frame (0: new, 1: schema seen,
//!   2-3: schema and the first batch, with its dictionaries, seen); bit 2 where the guard page
//!   is (0: right after the frame's 64-byte rounded end, 1: right before its start); bits 3-5
//!   the frame kind ([`KINDS`]); bit 6 the body (0: the input's bytes, 1: an edited template);
//!   bit 7 decode the dictionary-less batch frame after it.
//! - byte 1: bits 0-1 the template (and the header's row count: the template's rows); bits
//!   2-7 slack bytes after the payload (the header's length does not cover them).
//! - raw body: the rest of the input.
//! - template body: bytes 2-3 a truncation length (LE; kept whole when not shorter), then edits
//!   of 4 bytes each: `[op, offset lo, offset hi, value]`, the offset taken modulo the body's
//!   length ([`edit`]).

use std::ops::Deref;
use std::ptr::NonNull;
use std::sync::{Arc, OnceLock};

use arrow_array::builder::{
    FixedSizeListBuilder, Float32Builder, Int64Builder, ListBuilder, StringDictionaryBuilder,
};
use arrow_array::types::{Int16Type, Int32Type};
use arrow_array::{Array, ArrayRef, Int64Array, RecordBatch, StringArray};
use hydrofeed_tfbridge::{
    owned_buffer, to_tensor, Frame, FrameDecoder, FrameEncoder, FrameHeader, FrameKind, FrameMeta,
    HEADER_LEN,
};

/// Frame kinds by bits 3-5 of the flags byte: mostly the two that reach Arrow IPC.
pub const KINDS: [FrameKind; 8] = [
    FrameKind::Batch,
    FrameKind::Batch,
    FrameKind::Batch,
    FrameKind::Batch,
    FrameKind::Schema,
    FrameKind::Schema,
    FrameKind::Error,
    FrameKind::EndOfEpoch,
];

/// The valid frames the bodies are made from.
pub struct Templates {
    /// Schema frame, first batch (carries the dictionaries), second batch (same dictionaries:
    /// carries none), third batch (new dictionary values: carries them again), whole frames.
    pub frames: [Vec<u8>; 4],
    /// Rows of each.
    pub rows: [u64; 4],
}

fn batch(first: i64, rows: usize, words: &[&str]) -> RecordBatch {
    let id = Int64Array::from_iter_values((0..rows as i64).map(|i| first + i));
    let mut img = FixedSizeListBuilder::new(Float32Builder::new(), 2);
    let mut rag = ListBuilder::new(Int64Builder::new());
    let mut tag = StringDictionaryBuilder::<Int32Type>::new();
    let mut tags = ListBuilder::new(StringDictionaryBuilder::<Int16Type>::new());
    for i in 0..rows {
        img.values().append_slice(&[i as f32, -(i as f32)]);
        img.append(true);
        rag.append_value((0..i % 3).map(|v| Some(v as i64 * 1000)));
        tag.append_value(words[i % words.len()]);
        for w in words.iter().skip(i % 2).take(i % 3) {
            tags.values().append_value(w);
        }
        tags.append(true);
    }
    let name = StringArray::from_iter(
        (0..rows).map(|i| (i % 4 != 1).then(|| format!("row-{}", first + i as i64))),
    );
    RecordBatch::try_from_iter([
        ("id", Arc::new(id) as ArrayRef),
        ("image", Arc::new(img.finish()) as ArrayRef),
        ("ragged", Arc::new(rag.finish()) as ArrayRef),
        ("name", Arc::new(name) as ArrayRef),
        ("tag", Arc::new(tag.finish()) as ArrayRef),
        ("tags", Arc::new(tags.finish()) as ArrayRef),
    ])
    .expect("template batch")
}

/// The template frames, encoded once.
pub fn templates() -> &'static Templates {
    static T: OnceLock<Templates> = OnceLock::new();
    T.get_or_init(|| {
        let b1 = batch(0, 5, &["cat", "dog", "emu"]);
        let b2 = batch(5, 3, &["cat", "dog", "emu"]);
        let b3 = batch(8, 4, &["yak", "gnu"]);
        let mut enc = FrameEncoder::new(b1.schema()).expect("encoder");
        let meta = |seq| FrameMeta {
            seq,
            ..Default::default()
        };
        let f0 = enc.schema_frame(meta(0)).expect("schema frame");
        let mut frames = vec![f0.to_vec()];
        let mut rows = vec![0];
        for (i, b) in [&b1, &b2, &b3].into_iter().enumerate() {
            let f = enc.batch(b, meta(i as u64 + 1)).expect("batch frame");
            enc.commit(&f).expect("commit");
            frames.push(f.to_vec());
            rows.push(b.num_rows() as u64);
        }
        Templates {
            frames: frames.try_into().expect("4 frames"),
            rows: rows.try_into().expect("4 counts"),
        }
    })
}

/// A frame in its own mapping, with an inaccessible page right after its (64-byte rounded)
/// end or right before its start. Derefs to the frame's bytes; unmapped on drop.
pub struct Guarded {
    map: NonNull<u8>,
    map_len: usize,
    frame: NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping is owned by this value alone and only read after construction.
unsafe impl Send for Guarded {}
// SAFETY: as above; shared access is read-only.
unsafe impl Sync for Guarded {}

const PAGE: usize = 4096;

impl Guarded {
    /// `bytes` in a fresh mapping, 64-byte aligned, guard page after (`guard_before` false)
    /// or before it.
    pub fn new(bytes: &[u8], guard_before: bool) -> Guarded {
        let room = bytes.len().div_ceil(64) * 64;
        let pages = room.div_ceil(PAGE).max(1);
        let map_len = (pages + 2) * PAGE;
        // SAFETY: a fresh anonymous mapping; checked below.
        let map = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert!(map != libc::MAP_FAILED, "mmap of {map_len} bytes failed");
        let map = map.cast::<u8>();
        // SAFETY: the pages between the two guard pages lie inside the mapping.
        let rc = unsafe {
            libc::mprotect(
                map.add(PAGE).cast(),
                pages * PAGE,
                libc::PROT_READ | libc::PROT_WRITE,
            )
        };
        assert_eq!(rc, 0, "mprotect failed");
        let at = if guard_before {
            PAGE
        } else {
            PAGE + pages * PAGE - room
        };
        // SAFETY: `[at, at + len)` lies in the read-write pages (len <= room).
        let frame = unsafe {
            let p = map.add(at);
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), p, bytes.len());
            NonNull::new_unchecked(p)
        };
        Guarded {
            // SAFETY: mmap succeeded, so not null.
            map: unsafe { NonNull::new_unchecked(map) },
            map_len,
            frame,
            len: bytes.len(),
        }
    }
}

impl Deref for Guarded {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: `len` initialised bytes at `frame`, mapped until drop.
        unsafe { std::slice::from_raw_parts(self.frame.as_ptr(), self.len) }
    }
}

impl Drop for Guarded {
    fn drop(&mut self) {
        // SAFETY: the whole mapping made in `new`; nothing borrows it any more (the Buffer
        // holding this value is gone).
        unsafe { libc::munmap(self.map.as_ptr().cast(), self.map_len) };
    }
}

/// Applies one 4-byte edit to `body`. Ops (`op % 8`): set a byte, flip a bit, write a large
/// u32 (`u32::MAX - value`), write a large or negative i64, insert a byte, remove a byte, write
/// a small u32 (`value`), copy 8 bytes from the offset to a nearby one (`value * 8` further).
pub fn edit(body: &mut Vec<u8>, e: [u8; 4]) {
    if body.is_empty() {
        if e[0] % 8 == 4 {
            body.push(e[3]);
        }
        return;
    }
    let n = body.len();
    let at = u16::from_le_bytes([e[1], e[2]]) as usize % n;
    let v = e[3];
    let put = |body: &mut Vec<u8>, bytes: &[u8]| {
        let end = (at + bytes.len()).min(body.len());
        body[at..end].copy_from_slice(&bytes[..end - at]);
    };
    match e[0] % 8 {
        0 => body[at] = v,
        1 => body[at] ^= 1 << (v % 8),
        2 => put(body, &(u32::MAX - v as u32).to_le_bytes()),
        3 => {
            let x = if v & 1 == 0 {
                i64::MAX - (v >> 1) as i64
            } else {
                -((v >> 1) as i64) - 1
            };
            put(body, &x.to_le_bytes())
        }
        4 => body.insert(at, v),
        5 => {
            body.remove(at);
        }
        6 => put(body, &(v as u32).to_le_bytes()),
        _ => {
            let to = (at + 8 * (v as usize + 1)) % n;
            let chunk: Vec<u8> = body[at..(at + 8).min(n)].to_vec();
            let end = (to + chunk.len()).min(n);
            body[to..end].copy_from_slice(&chunk[..end - to]);
        }
    }
}

/// The frame (header and payload, plus slack) an input describes.
pub fn frame_of(data: &[u8]) -> (u8, Vec<u8>) {
    let t = templates();
    let at = |i: usize| data.get(i).copied().unwrap_or(0);
    let flags = at(0);
    let which = (at(1) & 3) as usize;
    let slack = (at(1) >> 2) as usize;
    let kind = KINDS[((flags >> 3) & 7) as usize];
    let body = if flags & 0x40 == 0 {
        data.get(2..).unwrap_or(&[]).to_vec()
    } else {
        let mut body = t.frames[which][HEADER_LEN..].to_vec();
        let cut = u16::from_le_bytes([at(2), at(3)]) as usize;
        body.truncate(cut);
        for e in data.get(4..).unwrap_or(&[]).chunks_exact(4).take(64) {
            edit(&mut body, [e[0], e[1], e[2], e[3]]);
        }
        body
    };
    // The template's header (as the encoder wrote it), with this frame's kind, rows and
    // payload length (offsets pinned by tfbridge's `header_layout_is_pinned`).
    let mut f = t.frames[which][..HEADER_LEN].to_vec();
    f[6..8].copy_from_slice(&(kind as u16).to_le_bytes());
    f[24..32].copy_from_slice(&t.rows[which].to_le_bytes());
    f[32..40].copy_from_slice(&(body.len() as u64).to_le_bytes());
    if kind == FrameKind::Error {
        f[40..44].copy_from_slice(&1u32.to_le_bytes());
    }
    f.extend_from_slice(&body);
    f.resize(f.len() + slack, 0xa5);
    debug_assert!(FrameHeader::parse(&f).is_ok(), "the frame header is valid");
    (flags, f)
}

/// Decodes a valid template frame, the way the trainer gets it.
fn decode_valid(dec: &mut FrameDecoder, i: usize) -> Frame {
    let f = owned_buffer(Guarded::new(&templates().frames[i], false));
    dec.decode(&f)
        .unwrap_or_else(|e| panic!("template frame {i} does not decode: {e}"))
}

/// What the trainer does with a decoded frame: every column must be valid Arrow (so no later
/// read goes outside its buffers) and map to a tensor or fail cleanly.
fn consume(f: &Frame) {
    if let Frame::Batch(_, b) = f {
        for (field, c) in b.schema().fields().iter().zip(b.columns()) {
            if let Err(e) = c.to_data().validate_full() {
                panic!(
                    "decoded column {:?} ({}) is not valid Arrow: {e}",
                    field.name(),
                    field.data_type()
                );
            }
            let _ = to_tensor(c);
        }
    }
}

/// The frame target: builds the frame, decodes it after the chosen state, checks the result.
/// Returns the decode result's error message, if any (tests look at it).
pub fn frame(data: &[u8]) -> Option<String> {
    let (flags, bytes) = frame_of(data);
    let mut dec = FrameDecoder::new();
    let state = flags & 3;
    if state >= 1 {
        decode_valid(&mut dec, 0);
    }
    if state >= 2 {
        consume(&decode_valid(&mut dec, 1));
    }
    let buf = owned_buffer(Guarded::new(&bytes, flags & 4 != 0));
    let r = dec.decode(&buf);
    if let Ok(f) = &r {
        consume(f);
    }
    let err = r.err().map(|e| e.to_string());
    if flags & 0x80 != 0 {
        // The next frame relies on the dictionaries the decoder holds: whatever the hostile
        // frame did to them, the result is an error or a valid batch.
        let f = owned_buffer(Guarded::new(&templates().frames[2], false));
        if let Ok(f) = dec.decode(&f) {
            consume(&f);
        }
    }
    err
}

/// Starting inputs: every template as a raw body and as an unedited template body, in every
/// decoder state, as batch and schema frames.
pub fn seeds() -> Vec<Vec<u8>> {
    let t = templates();
    let mut out = Vec::new();
    for which in 0..4u8 {
        for state in 0..3u8 {
            for kind in [0u8, 4] {
                let flags = state | (kind << 3);
                let mut raw = vec![flags, which];
                raw.extend_from_slice(&t.frames[which as usize][HEADER_LEN..]);
                out.push(raw);
                out.push(vec![flags | 0x40 | 0x80, which, 0xff, 0xff]);
            }
        }
    }
    out
}
