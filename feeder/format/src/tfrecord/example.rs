//! `tf.train.Example` messages: prost structs (for writing), schema inference, and a fast
//! decoder that walks the protobuf wire format straight into Arrow column builders without
//! materialising per-record structs.
//!
//! Arrow types (the rule): `float_list -> float32`, `int64_list -> int64`,
//! `bytes_list -> binary` (or `utf8` when a given schema asks for it), shaped by the length
//! the feature has in the inference sample:
//! - always 1 value: a scalar column (`label: int64`);
//! - always `n > 1` values: `fixed_size_list<T, n>` (a dense tensor);
//! - varying: `list<T>` (ragged).
//!
//! Every column is nullable: a record without the feature gives a null (zero-filled under a
//! fixed-size list). A later record whose length breaks a scalar or fixed-size column is a
//! `DataError` naming the record; pass a schema with `list<T>` to read such files.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use arrow_array::{
    ArrayRef, BinaryArray, FixedSizeListArray, Float32Array, Int64Array, ListArray, StringArray,
};
use arrow_buffer::{BooleanBufferBuilder, Buffer, NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType, Field, FieldRef, Schema, SchemaRef};

/// `tf.train.Example`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Example {
    /// The features.
    #[prost(message, optional, tag = "1")]
    pub features: Option<Features>,
}

/// `tf.train.Features`: name -> feature (a BTreeMap so that encoding is deterministic).
#[derive(Clone, PartialEq, prost::Message)]
pub struct Features {
    /// The features by name.
    #[prost(btree_map = "string, message", tag = "1")]
    pub feature: BTreeMap<String, Feature>,
}

/// `tf.train.Feature`: one of three lists.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Feature {
    /// Which list.
    #[prost(oneof = "Kind", tags = "1, 2, 3")]
    pub kind: Option<Kind>,
}

/// The `kind` oneof of `tf.train.Feature`.
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum Kind {
    /// `bytes_list`.
    #[prost(message, tag = "1")]
    BytesList(BytesList),
    /// `float_list`.
    #[prost(message, tag = "2")]
    FloatList(FloatList),
    /// `int64_list`.
    #[prost(message, tag = "3")]
    Int64List(Int64List),
}

/// `tf.train.BytesList`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct BytesList {
    /// Values.
    #[prost(bytes = "vec", repeated, tag = "1")]
    pub value: Vec<Vec<u8>>,
}

/// `tf.train.FloatList` (packed).
#[derive(Clone, PartialEq, prost::Message)]
pub struct FloatList {
    /// Values.
    #[prost(float, repeated, packed = "true", tag = "1")]
    pub value: Vec<f32>,
}

/// `tf.train.Int64List` (packed).
#[derive(Clone, PartialEq, prost::Message)]
pub struct Int64List {
    /// Values.
    #[prost(int64, repeated, packed = "true", tag = "1")]
    pub value: Vec<i64>,
}

impl Feature {
    /// A float feature.
    pub fn floats(v: Vec<f32>) -> Self {
        Feature {
            kind: Some(Kind::FloatList(FloatList { value: v })),
        }
    }
    /// An int64 feature.
    pub fn int64s(v: Vec<i64>) -> Self {
        Feature {
            kind: Some(Kind::Int64List(Int64List { value: v })),
        }
    }
    /// A bytes feature.
    pub fn bytes(v: Vec<Vec<u8>>) -> Self {
        Feature {
            kind: Some(Kind::BytesList(BytesList { value: v })),
        }
    }
}

impl Example {
    /// An example of named features.
    pub fn from_features(it: impl IntoIterator<Item = (String, Feature)>) -> Self {
        Example {
            features: Some(Features {
                feature: it.into_iter().collect(),
            }),
        }
    }
}

/// The element kind of a feature column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListKind {
    /// `bytes_list`.
    Bytes,
    /// `float_list`.
    Float,
    /// `int64_list`.
    Int64,
}

impl ListKind {
    fn name(self) -> &'static str {
        match self {
            ListKind::Bytes => "bytes_list",
            ListKind::Float => "float_list",
            ListKind::Int64 => "int64_list",
        }
    }
    fn tag(self) -> u64 {
        match self {
            ListKind::Bytes => 1,
            ListKind::Float => 2,
            ListKind::Int64 => 3,
        }
    }
}

/// Shape of a feature column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// One value per record.
    Scalar,
    /// Exactly `n` values per record.
    Fixed(usize),
    /// Any number of values.
    List,
}

/// A wire-level decoding problem (the caller adds file/offset).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WireError(pub String);

type WResult<T> = Result<T, WireError>;

fn werr<T>(s: impl Into<String>) -> WResult<T> {
    Err(WireError(s.into()))
}

#[inline]
fn varint(b: &[u8], p: &mut usize) -> WResult<u64> {
    let mut v = 0u64;
    let mut shift = 0;
    loop {
        let Some(&byte) = b.get(*p) else {
            return werr("truncated varint");
        };
        *p += 1;
        if shift == 63 && byte > 1 {
            return werr("varint overflows 64 bits");
        }
        v |= u64::from(byte & 0x7f) << shift;
        if byte < 0x80 {
            return Ok(v);
        }
        shift += 7;
        if shift > 63 {
            return werr("varint longer than 10 bytes");
        }
    }
}

#[inline]
fn len_delim<'a>(b: &'a [u8], p: &mut usize) -> WResult<&'a [u8]> {
    let n = varint(b, p)?;
    let end = (*p as u64).checked_add(n).filter(|&e| e <= b.len() as u64);
    let Some(end) = end else {
        return werr(format!(
            "length-delimited field of {n} bytes runs past its message"
        ));
    };
    let s = &b[*p..end as usize];
    *p = end as usize;
    Ok(s)
}

fn skip_field(b: &[u8], p: &mut usize, wire: u64) -> WResult<()> {
    match wire {
        0 => varint(b, p).map(|_| ()),
        1 => advance(b, p, 8),
        2 => len_delim(b, p).map(|_| ()),
        5 => advance(b, p, 4),
        w => werr(format!("unsupported wire type {w}")),
    }
}

fn advance(b: &[u8], p: &mut usize, n: usize) -> WResult<()> {
    if b.len() - *p < n {
        return werr("truncated fixed-width field");
    }
    *p += n;
    Ok(())
}

/// Calls `f(name, feature_bytes)` for each map entry of an `Example`.
fn for_each_feature<'a>(
    rec: &'a [u8],
    mut f: impl FnMut(&'a [u8], &'a [u8]) -> WResult<()>,
) -> WResult<()> {
    let mut p = 0;
    while p < rec.len() {
        let tag = varint(rec, &mut p)?;
        if tag == (1 << 3) | 2 {
            let feats = len_delim(rec, &mut p)?;
            let mut q = 0;
            while q < feats.len() {
                let tag = varint(feats, &mut q)?;
                if tag == (1 << 3) | 2 {
                    let entry = len_delim(feats, &mut q)?;
                    let (mut key, mut val): (&[u8], &[u8]) = (&[], &[]);
                    let mut r = 0;
                    while r < entry.len() {
                        let tag = varint(entry, &mut r)?;
                        match tag {
                            t if t == (1 << 3) | 2 => key = len_delim(entry, &mut r)?,
                            t if t == (2 << 3) | 2 => val = len_delim(entry, &mut r)?,
                            t => skip_field(entry, &mut r, t & 7)?,
                        }
                    }
                    f(key, val)?;
                } else {
                    skip_field(feats, &mut q, tag & 7)?;
                }
            }
        } else {
            skip_field(rec, &mut p, tag & 7)?;
        }
    }
    Ok(())
}

/// The kind and list body of a `Feature` (`None` for a feature with no list set).
fn feature_list(feat: &[u8]) -> WResult<Option<(ListKind, &[u8])>> {
    let mut p = 0;
    let mut out = None;
    while p < feat.len() {
        let tag = varint(feat, &mut p)?;
        let kind = match tag {
            t if t == (1 << 3) | 2 => Some(ListKind::Bytes),
            t if t == (2 << 3) | 2 => Some(ListKind::Float),
            t if t == (3 << 3) | 2 => Some(ListKind::Int64),
            _ => None,
        };
        match kind {
            // A oneof: the last one set wins.
            Some(k) => out = Some((k, len_delim(feat, &mut p)?)),
            None => skip_field(feat, &mut p, tag & 7)?,
        }
    }
    Ok(out)
}

/// Number of values in a list body (for inference).
fn count_values(kind: ListKind, body: &[u8]) -> WResult<usize> {
    let mut n = 0;
    let mut p = 0;
    while p < body.len() {
        let tag = varint(body, &mut p)?;
        match (kind, tag) {
            (ListKind::Float, 0x0a) => {
                let s = len_delim(body, &mut p)?;
                if s.len() % 4 != 0 {
                    return werr("packed float_list length not a multiple of 4");
                }
                n += s.len() / 4;
            }
            (ListKind::Float, 0x0d) => {
                advance(body, &mut p, 4)?;
                n += 1;
            }
            (ListKind::Int64, 0x0a) => {
                let s = len_delim(body, &mut p)?;
                n += s.iter().filter(|&&b| b < 0x80).count();
            }
            (ListKind::Int64, 0x08) => {
                varint(body, &mut p)?;
                n += 1;
            }
            (ListKind::Bytes, 0x0a) => {
                len_delim(body, &mut p)?;
                n += 1;
            }
            (_, t) => skip_field(body, &mut p, t & 7)?,
        }
    }
    Ok(n)
}

/// What the inference sample saw of one feature.
#[derive(Debug, Clone)]
struct Seen {
    kind: ListKind,
    min: usize,
    max: usize,
}

/// Infers a schema from a sample of serialized `Example`s (see the module doc for the rule).
/// Columns are sorted by name (protobuf maps have no order). Errors name the sample record.
pub fn infer_schema<'a>(
    records: impl IntoIterator<Item = &'a [u8]>,
) -> Result<SchemaRef, (usize, WireError)> {
    let mut seen: BTreeMap<String, Seen> = BTreeMap::new();
    for (i, rec) in records.into_iter().enumerate() {
        for_each_feature(rec, |key, val| {
            let Some((kind, body)) = feature_list(val)? else {
                return Ok(());
            };
            let n = count_values(kind, body)?;
            let name = String::from_utf8_lossy(key).into_owned();
            match seen.get_mut(&name) {
                None => {
                    seen.insert(
                        name,
                        Seen {
                            kind,
                            min: n,
                            max: n,
                        },
                    );
                }
                Some(s) if s.kind != kind => {
                    return werr(format!(
                        "feature {name:?} is a {} here but a {} in earlier records",
                        kind.name(),
                        s.kind.name()
                    ))
                }
                Some(s) => {
                    s.min = s.min.min(n);
                    s.max = s.max.max(n);
                }
            }
            Ok(())
        })
        .map_err(|e| (i, e))?;
    }
    let fields: Vec<Field> = seen
        .into_iter()
        .map(|(name, s)| {
            let shape = match (s.min, s.max) {
                (1, 1) => Shape::Scalar,
                (a, b) if a == b && a > 1 => Shape::Fixed(a),
                _ => Shape::List,
            };
            Field::new(name, column_type(s.kind, shape), true)
        })
        .collect();
    Ok(Arc::new(Schema::new(fields)))
}

fn elem_type(kind: ListKind) -> DataType {
    match kind {
        ListKind::Bytes => DataType::Binary,
        ListKind::Float => DataType::Float32,
        ListKind::Int64 => DataType::Int64,
    }
}

/// The Arrow type of a column of `kind` and `shape`.
pub fn column_type(kind: ListKind, shape: Shape) -> DataType {
    let t = elem_type(kind);
    match shape {
        Shape::Scalar => t,
        Shape::Fixed(n) => {
            DataType::FixedSizeList(Arc::new(Field::new("item", t, false)), n as i32)
        }
        Shape::List => DataType::List(Arc::new(Field::new("item", t, false))),
    }
}

/// How a schema field maps onto a feature: kind, shape, and whether bytes are UTF-8.
fn field_plan(f: &Field) -> Option<(ListKind, Shape, bool)> {
    fn elem(t: &DataType) -> Option<(ListKind, bool)> {
        match t {
            DataType::Float32 => Some((ListKind::Float, false)),
            DataType::Int64 => Some((ListKind::Int64, false)),
            DataType::Binary => Some((ListKind::Bytes, false)),
            DataType::Utf8 => Some((ListKind::Bytes, true)),
            _ => None,
        }
    }
    match f.data_type() {
        DataType::List(c) => elem(c.data_type()).map(|(k, u)| (k, Shape::List, u)),
        DataType::FixedSizeList(c, n) if *n > 0 => {
            elem(c.data_type()).map(|(k, u)| (k, Shape::Fixed(*n as usize), u))
        }
        t => elem(t).map(|(k, u)| (k, Shape::Scalar, u)),
    }
}

/// Checks that a (given) schema only uses types the decoder produces.
pub fn check_schema(schema: &Schema) -> Result<(), String> {
    for f in schema.fields() {
        if field_plan(f).is_none() {
            return Err(format!(
                "column {:?} has type {}; TFRecord columns must be float32, int64, binary or \
                 utf8, or a list / fixed_size_list of them",
                f.name(),
                f.data_type()
            ));
        }
    }
    Ok(())
}

/// Values of one column while a batch is built.
enum Values {
    Float(Vec<f32>),
    Int64(Vec<i64>),
    /// Offsets of each value (starting with 0) and the concatenated bytes.
    Bytes(Vec<i32>, Vec<u8>),
}

impl Values {
    fn len(&self) -> usize {
        match self {
            Values::Float(v) => v.len(),
            Values::Int64(v) => v.len(),
            Values::Bytes(o, _) => o.len() - 1,
        }
    }
    fn truncate(&mut self, n: usize) {
        match self {
            Values::Float(v) => v.truncate(n),
            Values::Int64(v) => v.truncate(n),
            Values::Bytes(o, d) => {
                o.truncate(n + 1);
                d.truncate(o[n] as usize);
            }
        }
    }
    fn push_defaults(&mut self, n: usize) {
        match self {
            Values::Float(v) => v.resize(v.len() + n, 0.0),
            Values::Int64(v) => v.resize(v.len() + n, 0),
            Values::Bytes(o, _) => {
                let last = *o.last().unwrap_or(&0);
                o.resize(o.len() + n, last);
            }
        }
    }

    /// Appends the values of a list body of the same kind.
    fn append(&mut self, body: &[u8]) -> WResult<()> {
        let mut p = 0;
        while p < body.len() {
            let tag = varint(body, &mut p)?;
            match (&mut *self, tag) {
                (Values::Float(v), 0x0a) => {
                    let s = len_delim(body, &mut p)?;
                    if s.len() % 4 != 0 {
                        return werr("packed float_list length not a multiple of 4");
                    }
                    // Sized first, then filled: a loop the compiler turns into a copy
                    // (`extend` over the chunks went value by value).
                    let start = v.len();
                    v.resize(start + s.len() / 4, 0.0);
                    for (d, c) in v[start..].iter_mut().zip(s.chunks_exact(4)) {
                        *d = f32::from_le_bytes([c[0], c[1], c[2], c[3]]);
                    }
                }
                (Values::Float(v), 0x0d) => {
                    let s = body
                        .get(p..p + 4)
                        .ok_or_else(|| WireError("truncated float".into()))?;
                    v.push(f32::from_le_bytes([s[0], s[1], s[2], s[3]]));
                    p += 4;
                }
                (Values::Int64(v), 0x0a) => {
                    let s = len_delim(body, &mut p)?;
                    let mut q = 0;
                    while q < s.len() {
                        v.push(varint(s, &mut q)? as i64);
                    }
                }
                (Values::Int64(v), 0x08) => v.push(varint(body, &mut p)? as i64),
                (Values::Bytes(o, d), 0x0a) => {
                    let s = len_delim(body, &mut p)?;
                    d.extend_from_slice(s);
                    let end = i32::try_from(d.len())
                        .map_err(|_| WireError("more than 2 GiB of bytes in one batch".into()))?;
                    o.push(end);
                }
                (_, t) => skip_field(body, &mut p, t & 7)?,
            }
        }
        Ok(())
    }
}

struct Column {
    field: FieldRef,
    kind: ListKind,
    shape: Shape,
    utf8: bool,
    values: Values,
    /// List offsets (Shape::List only), starting with 0.
    offsets: Vec<i32>,
    validity: BooleanBufferBuilder,
    nulls: usize,
    // Per-record state.
    row_start: usize,
    seen: bool,
}

/// Decodes serialized `Example`s into Arrow arrays of a schema (projection = the schema).
pub struct ExampleDecoder {
    schema: SchemaRef,
    cols: Vec<Column>,
    index: HashMap<Vec<u8>, usize>,
    rows: usize,
}

impl ExampleDecoder {
    /// A decoder producing `schema` (see [`check_schema`]).
    pub fn new(schema: SchemaRef) -> Result<Self, String> {
        check_schema(&schema)?;
        let mut cols = Vec::new();
        let mut index = HashMap::new();
        for (i, f) in schema.fields().iter().enumerate() {
            let (kind, shape, utf8) = field_plan(f).ok_or("unsupported type")?;
            index.insert(f.name().as_bytes().to_vec(), i);
            let values = match kind {
                ListKind::Float => Values::Float(Vec::new()),
                ListKind::Int64 => Values::Int64(Vec::new()),
                ListKind::Bytes => Values::Bytes(vec![0], Vec::new()),
            };
            cols.push(Column {
                field: f.clone(),
                kind,
                shape,
                utf8,
                values,
                offsets: vec![0],
                validity: BooleanBufferBuilder::new(1024),
                nulls: 0,
                row_start: 0,
                seen: false,
            });
        }
        Ok(Self {
            schema,
            cols,
            index,
            rows: 0,
        })
    }

    /// Rows decoded into the current batch.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Decodes one record and appends it as a row; on error nothing is appended.
    pub fn push(&mut self, rec: &[u8]) -> WResult<()> {
        for c in &mut self.cols {
            c.row_start = c.values.len();
            c.seen = false;
        }
        let r = self.decode(rec);
        if let Err(e) = r {
            for c in &mut self.cols {
                c.values.truncate(c.row_start);
            }
            return Err(e);
        }
        let mut bad = None;
        for c in &self.cols {
            let n = c.values.len() - c.row_start;
            let want = match c.shape {
                Shape::Scalar => Some(1),
                Shape::Fixed(k) => Some(k),
                Shape::List => None,
            };
            if let Some(k) = want.filter(|&k| c.seen && n != k) {
                let shape = if k == 1 {
                    "1 (scalar)".to_string()
                } else {
                    format!("fixed_size_list of {k}")
                };
                bad = Some(format!(
                    "feature {:?} has {n} values, the schema says {shape}; pass a schema with \
                     list<{}> to read it",
                    c.field.name(),
                    elem_type(c.kind)
                ));
                break;
            }
        }
        if let Some(msg) = bad {
            return self.reject(msg);
        }
        for c in &mut self.cols {
            if !c.seen {
                match c.shape {
                    Shape::Scalar => c.values.push_defaults(1),
                    Shape::Fixed(k) => c.values.push_defaults(k),
                    Shape::List => {}
                }
                c.nulls += 1;
            }
            c.validity.append(c.seen);
            if c.shape == Shape::List {
                let end = i32::try_from(c.values.len())
                    .map_err(|_| WireError("more than 2^31 values in one batch".into()))?;
                c.offsets.push(end);
            }
        }
        self.rows += 1;
        Ok(())
    }

    fn reject(&mut self, msg: String) -> WResult<()> {
        for c in &mut self.cols {
            c.values.truncate(c.row_start);
        }
        Err(WireError(msg))
    }

    fn decode(&mut self, rec: &[u8]) -> WResult<()> {
        let cols = &mut self.cols;
        let index = &self.index;
        let mut hint = 0usize;
        for_each_feature(rec, |key, val| {
            // Features usually come in the same order in every record: try the next column
            // first, then the map.
            let ci = if cols
                .get(hint)
                .is_some_and(|c| c.field.name().as_bytes() == key)
            {
                hint
            } else {
                match index.get(key) {
                    Some(&i) => i,
                    None => return Ok(()),
                }
            };
            hint = ci + 1;
            let c = &mut cols[ci];
            if c.seen {
                // Duplicate map key: protobuf keeps the last one.
                c.values.truncate(c.row_start);
            }
            c.seen = true;
            match feature_list(val)? {
                None => Ok(()),
                Some((kind, body)) if kind == c.kind => c.values.append(body),
                Some((kind, _)) => werr(format!(
                    "feature {:?} is a {}, the schema expects a {} (tag {})",
                    c.field.name(),
                    kind.name(),
                    c.kind.name(),
                    c.kind.tag()
                )),
            }
        })
    }

    /// Takes the rows decoded so far as arrays of the schema, and starts a new batch.
    pub fn finish(&mut self) -> Result<Vec<ArrayRef>, String> {
        let mut out = Vec::with_capacity(self.cols.len());
        for c in &mut self.cols {
            let nulls = if c.nulls > 0 {
                Some(NullBuffer::new(c.validity.finish()))
            } else {
                c.validity = BooleanBufferBuilder::new(1024);
                None
            };
            c.nulls = 0;
            // The next batch starts with room for as many values as this one held (batches
            // are of one size), so its vectors are not grown by copying as rows arrive.
            let next = match &c.values {
                Values::Float(v) => Values::Float(Vec::with_capacity(v.len())),
                Values::Int64(v) => Values::Int64(Vec::with_capacity(v.len())),
                Values::Bytes(o, d) => {
                    let mut offs = Vec::with_capacity(o.len());
                    offs.push(0);
                    Values::Bytes(offs, Vec::with_capacity(d.len()))
                }
            };
            let values = std::mem::replace(&mut c.values, next);
            let elem_nulls = if c.shape == Shape::Scalar {
                nulls.clone()
            } else {
                None
            };
            let elems: ArrayRef = match values {
                Values::Float(v) => Arc::new(Float32Array::new(ScalarBuffer::from(v), elem_nulls)),
                Values::Int64(v) => Arc::new(Int64Array::new(ScalarBuffer::from(v), elem_nulls)),
                Values::Bytes(o, d) => {
                    // Offsets are monotonic by construction, so `new` cannot panic.
                    let offsets = OffsetBuffer::new(ScalarBuffer::from(o));
                    if c.utf8 {
                        Arc::new(
                            StringArray::try_new(offsets, Buffer::from_vec(d), elem_nulls)
                                .map_err(|e| format!("column {:?}: {e}", c.field.name()))?,
                        )
                    } else {
                        Arc::new(BinaryArray::new(offsets, Buffer::from_vec(d), elem_nulls))
                    }
                }
            };
            let arr: ArrayRef = match (c.shape, c.field.data_type()) {
                (Shape::Scalar, _) => elems,
                (Shape::Fixed(n), DataType::FixedSizeList(item, _)) => Arc::new(
                    FixedSizeListArray::try_new(item.clone(), n as i32, elems, nulls)
                        .map_err(|e| e.to_string())?,
                ),
                (Shape::List, DataType::List(item)) => {
                    let offs = std::mem::replace(&mut c.offsets, vec![0]);
                    Arc::new(
                        ListArray::try_new(
                            item.clone(),
                            OffsetBuffer::new(ScalarBuffer::from(offs)),
                            elems,
                            nulls,
                        )
                        .map_err(|e| e.to_string())?,
                    )
                }
                _ => return Err("internal: shape and type disagree".into()),
            };
            out.push(arr);
        }
        self.rows = 0;
        Ok(out)
    }

    /// The schema the decoder produces.
    pub fn schema(&self) -> &SchemaRef {
        &self.schema
    }
}

#[cfg(test)]
#[path = "example_tests.rs"]
mod tests;
