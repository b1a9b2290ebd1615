//! The producer side: [`FrameEncoder`] turns a stream's schema and batches into [`Encoded`]
//! frames whose payload parts still point at the batches' buffers (copied once, by
//! [`Encoded::write_to`], into the ring slot), keeping the reader's dictionaries in step
//! through commits; [`marker`] and [`error_frame`] make the frames without Arrow payload.

use arrow_array::RecordBatch;
use arrow_buffer::Buffer;
use arrow_data::ArrayData;
use arrow_ipc::writer::{IpcWriteOptions, StreamEncoder};
use arrow_ipc::MetadataVersion;
use arrow_schema::{ArrowError, DataType, SchemaRef};

use super::{
    ErrorCode, FrameError, FrameHeader, FrameKind, FrameMeta, Piece, ALIGN, HEADER_LEN, PIECE_LEN,
};

/// Asked for each payload part `i` of a frame being written: writes the part into the slot
/// itself (`Ok(true)`), or leaves it to be copied (`Ok(false)`).
pub type FillPart<'a> = dyn FnMut(usize, &mut [u8]) -> Result<bool, FrameError> + 'a;

/// A frame ready to be copied into a ring slot: header plus payload parts that still point at
/// the source batch's buffers.
#[derive(Debug, Clone)]
pub struct Encoded {
    header: FrameHeader,
    parts: Vec<Buffer>,
    inline: Vec<u8>,
    /// The lineage trailer (`header.lineage` pieces), after the payload.
    trailer: Vec<u8>,
    /// Which [`FrameEncoder::batch`] call made it (0: not a batch frame).
    token: u64,
}

impl Encoded {
    /// Total bytes of the frame (header + payload + lineage trailer).
    pub fn len(&self) -> usize {
        HEADER_LEN + self.header.payload_len as usize + self.trailer.len()
    }

    /// Attaches the frame's lineage: which rows of which leases it holds, in order. The
    /// trainer reads it back with [`lineage`](super::lineage) and reports it when it re-attaches to a
    /// restarted feeder, so rows it consumed after its last ack are not fed again.
    pub fn with_lineage(mut self, pieces: &[Piece]) -> Self {
        self.trailer = Vec::with_capacity(pieces.len() * PIECE_LEN);
        for p in pieces {
            self.trailer.extend_from_slice(&p.lease.to_le_bytes());
            self.trailer.extend_from_slice(&p.split.to_le_bytes());
            self.trailer.extend_from_slice(&p.rows.to_le_bytes());
        }
        self.header.lineage = pieces.len() as u32;
        self
    }

    /// Always false (a frame holds at least its header).
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The header.
    pub fn header(&self) -> &FrameHeader {
        &self.header
    }

    /// Copies the frame into `dst`, which must be exactly [`Encoded::len`] bytes. This is the
    /// one copy of the producer side.
    pub fn write_to(&self, dst: &mut [u8]) -> Result<(), FrameError> {
        self.write_filling(dst, &mut |_, _| Ok(false))
    }

    /// The payload's parts, in order (the encoded message, and buffers of the batch).
    pub fn parts(&self) -> &[Buffer] {
        &self.parts
    }

    /// As [`Encoded::write_to`], but `fill(i, slot)` is asked first for each payload part `i`
    /// ([`Encoded::parts`]) to write its bytes into `slot` itself (`Ok(true)`): a frame encoded
    /// from a placeholder batch gets its values written straight from where they are.
    pub fn write_filling(&self, dst: &mut [u8], fill: &mut FillPart<'_>) -> Result<(), FrameError> {
        if dst.len() != self.len() {
            return Err(FrameError::Size {
                need: self.len(),
                got: dst.len(),
            });
        }
        dst[..HEADER_LEN].copy_from_slice(&self.header.to_bytes());
        let mut at = HEADER_LEN;
        for (i, p) in self.parts.iter().enumerate() {
            let slot = &mut dst[at..at + p.len()];
            if !fill(i, slot)? {
                slot.copy_from_slice(p.as_slice());
            }
            at += p.len();
        }
        dst[at..at + self.inline.len()].copy_from_slice(&self.inline);
        at += self.inline.len();
        dst[at..at + self.trailer.len()].copy_from_slice(&self.trailer);
        Ok(())
    }

    /// The frame as one vector (tests, tools; costs a copy).
    pub fn to_vec(&self) -> Vec<u8> {
        let mut v = vec![0u8; self.len()];
        // Cannot fail: the length is right.
        let _ = self.write_to(&mut v);
        v
    }
}

/// Encodes one stream: the schema frame, then batch frames.
///
/// Dictionaries travel in the batch frames, each one only when it differs from the one the
/// reader holds. Encoding is transactional: a batch frame counts as delivered, and its
/// dictionaries as held by the reader, only once [`FrameEncoder::commit`] says it was put
/// into the ring. A frame that is dropped instead (a producer that splits a batch too large
/// for the ring) changes nothing; the next frame carries every dictionary the reader may lack.
pub struct FrameEncoder {
    schema: SchemaRef,
    inner: StreamEncoder,
    /// Whether any column holds a dictionary (else there is no state to keep).
    has_dicts: bool,
    /// The batch of the last committed frame, zero rows: its dictionaries are the reader's.
    committed: RecordBatch,
    /// The latest encoded batch frame not committed yet: its token and batch (zero rows).
    pending: Option<(u64, RecordBatch)>,
    /// `inner` recorded dictionaries of a frame that was not committed: rebuild it from
    /// `committed` before the next frame.
    ahead: bool,
    next_token: u64,
}

impl std::fmt::Debug for FrameEncoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FrameEncoder")
            .field("schema", &self.schema)
            .field("ahead", &self.ahead)
            .finish()
    }
}

fn write_options() -> Result<IpcWriteOptions, ArrowError> {
    IpcWriteOptions::try_new(ALIGN, false, MetadataVersion::V5)
}

fn has_dictionary(dt: &DataType) -> bool {
    match dt {
        DataType::Dictionary(..) => true,
        DataType::List(f)
        | DataType::LargeList(f)
        | DataType::ListView(f)
        | DataType::LargeListView(f)
        | DataType::FixedSizeList(f, _)
        | DataType::Map(f, _) => has_dictionary(f.data_type()),
        DataType::Struct(fs) => fs.iter().any(|f| has_dictionary(f.data_type())),
        DataType::Union(fs, _) => fs.iter().any(|(_, f)| has_dictionary(f.data_type())),
        DataType::RunEndEncoded(_, v) => has_dictionary(v.data_type()),
        _ => false,
    }
}

/// `(column path, bytes of its dictionary values)` of every dictionary in `data` (of type
/// `dt`), nested ones included.
fn dictionary_sizes(path: &str, dt: &DataType, data: &ArrayData, out: &mut Vec<(String, usize)>) {
    let children: Vec<(String, &DataType)> = match dt {
        DataType::Dictionary(_, values) => {
            if let Some(v) = data.child_data().first() {
                let bytes = v
                    .get_slice_memory_size()
                    .unwrap_or_else(|_| v.get_buffer_memory_size());
                out.push((path.to_string(), bytes));
                dictionary_sizes(path, values, v, out);
            }
            return;
        }
        DataType::List(f)
        | DataType::LargeList(f)
        | DataType::ListView(f)
        | DataType::LargeListView(f)
        | DataType::FixedSizeList(f, _)
        | DataType::Map(f, _) => vec![(format!("{path}.{}", f.name()), f.data_type())],
        DataType::Struct(fs) => fs
            .iter()
            .map(|f| (format!("{path}.{}", f.name()), f.data_type()))
            .collect(),
        _ => return,
    };
    for ((p, t), d) in children.iter().zip(data.child_data()) {
        dictionary_sizes(p, t, d, out);
    }
}

impl FrameEncoder {
    /// A new stream of batches of `schema`. Call [`FrameEncoder::schema_frame`] once first.
    pub fn new(schema: SchemaRef) -> Result<Self, FrameError> {
        let inner = StreamEncoder::try_new_with_options(&schema, write_options()?)?;
        let has_dicts = schema
            .fields()
            .iter()
            .any(|f| has_dictionary(f.data_type()));
        Ok(Self {
            committed: RecordBatch::new_empty(schema.clone()),
            schema,
            inner,
            has_dicts,
            pending: None,
            ahead: false,
            next_token: 1,
        })
    }

    /// The stream's schema.
    pub fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    /// The schema frame (the schema message followed by an empty batch, which the decoder
    /// ignores: arrow-ipc's stream encoder writes the schema with the first batch). It starts
    /// the stream over: the reader holds no dictionaries after it.
    pub fn schema_frame(&mut self, meta: FrameMeta) -> Result<Encoded, FrameError> {
        self.inner = StreamEncoder::try_new_with_options(&self.schema, write_options()?)?;
        let empty = RecordBatch::new_empty(self.schema.clone());
        let parts = self.inner.encode(&empty)?;
        self.committed = empty;
        self.pending = None;
        self.ahead = false;
        Ok(Self::assemble(FrameKind::Schema, meta, parts, 0))
    }

    /// A batch frame; `meta.rows` is set from the batch. Call [`FrameEncoder::commit`] once
    /// the frame is in the ring; until then its dictionaries do not count as sent.
    pub fn batch(
        &mut self,
        batch: &RecordBatch,
        mut meta: FrameMeta,
    ) -> Result<Encoded, FrameError> {
        meta.rows = batch.num_rows() as u64;
        if self.ahead {
            // The last frame was not committed: start from what the reader holds. Encoding the
            // committed batch's zero-row slice records its dictionaries (same buffers) as sent.
            let mut inner = StreamEncoder::try_new_with_options(&self.schema, write_options()?)?;
            inner.encode(&self.committed)?;
            self.inner = inner;
            self.ahead = false;
        }
        let token = self.next_token;
        self.next_token += 1;
        self.pending = Some((token, batch.slice(0, 0)));
        // Until committed, `inner` may hold dictionaries the reader never got (and after an
        // error, any part of them).
        self.ahead = self.has_dicts;
        let parts = self.inner.encode(batch)?;
        Ok(Self::assemble(FrameKind::Batch, meta, parts, token))
    }

    /// [`FrameEncoder::batch`], refusing a batch whose dictionaries alone are larger than
    /// `max_frame` bytes with [`FrameError::DictionaryTooLarge`]: every frame of the batch, down
    /// to one row, carries them whole, so halving the batch cannot make it fit. A frame over
    /// `max_frame` for any other reason is returned as usual (the caller splits the batch).
    pub fn batch_within(
        &mut self,
        batch: &RecordBatch,
        meta: FrameMeta,
        max_frame: usize,
    ) -> Result<Encoded, FrameError> {
        let f = self.batch(batch, meta)?;
        if f.len() <= max_frame || !self.has_dicts {
            return Ok(f);
        }
        let mut sizes = Vec::new();
        for (field, col) in self.schema.fields().iter().zip(batch.columns()) {
            dictionary_sizes(field.name(), field.data_type(), &col.to_data(), &mut sizes);
        }
        let room = max_frame.saturating_sub(HEADER_LEN);
        let total: usize = sizes.iter().map(|s| s.1).sum();
        let too_large = match sizes.iter().max_by_key(|s| s.1) {
            Some((column, bytes)) if *bytes > room => Some((column.clone(), *bytes)),
            Some(_) if total > room => Some((
                sizes
                    .iter()
                    .map(|s| s.0.as_str())
                    .collect::<Vec<_>>()
                    .join("\", \""),
                total,
            )),
            _ => None,
        };
        match too_large {
            Some((column, bytes)) => Err(FrameError::DictionaryTooLarge {
                column,
                bytes,
                max_frame,
            }),
            None => Ok(f),
        }
    }

    /// Records that `frame` (the latest [`FrameEncoder::batch`] frame) was put into the ring:
    /// the reader now holds its dictionaries. Frames of other kinds need no commit (this is a
    /// no-op for them). Committing an older frame, or one twice, is an error.
    pub fn commit(&mut self, frame: &Encoded) -> Result<(), FrameError> {
        if frame.token == 0 {
            return Ok(());
        }
        match self.pending.take() {
            Some((token, batch)) if token == frame.token => {
                self.committed = batch;
                self.ahead = false;
                Ok(())
            }
            other => {
                self.pending = other;
                Err(FrameError::NotLatest)
            }
        }
    }

    fn assemble(kind: FrameKind, meta: FrameMeta, parts: Vec<Buffer>, token: u64) -> Encoded {
        let len: usize = parts.iter().map(|p| p.len()).sum();
        Encoded {
            header: FrameHeader::new(kind, meta, len as u64, 0),
            parts,
            inline: Vec::new(),
            trailer: Vec::new(),
            token,
        }
    }
}

/// An end marker (`EndOfSplit`, `EndOfEpoch`, `EndOfFeed`) without payload.
pub fn marker(kind: FrameKind, meta: FrameMeta) -> Encoded {
    Encoded {
        header: FrameHeader::new(kind, meta, 0, 0),
        parts: Vec::new(),
        inline: Vec::new(),
        trailer: Vec::new(),
        token: 0,
    }
}

/// An error frame carrying `message` (UTF-8). The message is cut (on a char boundary) to
/// `max_len - HEADER_LEN` bytes so it always fits a ring slot.
pub fn error_frame(code: ErrorCode, message: &str, meta: FrameMeta, max_len: usize) -> Encoded {
    let room = max_len.saturating_sub(HEADER_LEN);
    let mut end = message.len().min(room);
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    let inline = message.as_bytes()[..end].to_vec();
    Encoded {
        header: FrameHeader::new(FrameKind::Error, meta, inline.len() as u64, code as u32),
        parts: Vec::new(),
        inline,
        trailer: Vec::new(),
        token: 0,
    }
}
