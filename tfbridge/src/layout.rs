//! Arrow arrays to tensor layouts.
//!
//! - Primitive columns (ints, floats) become 1-D dense tensors over the Arrow values buffer.
//! - Fixed-size lists (nested any depth) of primitives become N-D dense tensors `(rows, n, ..)`
//!   over the child values buffer.
//! - Variable lists of primitives (or of fixed-size lists) become TF ragged:
//!   `values` + `row_splits` (the Arrow offsets, `int32` for `List`, `int64` for `LargeList`).
//! - Strings, binary and everything else stay Arrow ([`Tensor::Arrow`]).
//!
//! No copy is made except where the layouts differ: booleans (Arrow packs bits; tensors want
//! bytes) and list offsets that do not start at 0 (sliced arrays; never the case for arrays read
//! from a frame). Nulls have no dense representation: a column with nulls is an error
//! ([`LayoutError::Nulls`]) so a trainer never sees garbage where a value was missing.

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef};
use arrow_buffer::{Buffer, MutableBuffer};
use arrow_schema::DataType;

/// Element types of dense tensors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DType {
    /// bool (one byte per value).
    Bool,
    /// int8.
    I8,
    /// int16.
    I16,
    /// int32.
    I32,
    /// int64.
    I64,
    /// uint8.
    U8,
    /// uint16.
    U16,
    /// uint32.
    U32,
    /// uint64.
    U64,
    /// float16.
    F16,
    /// float32.
    F32,
    /// float64.
    F64,
}

impl DType {
    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            DType::Bool | DType::I8 | DType::U8 => 1,
            DType::I16 | DType::U16 | DType::F16 => 2,
            DType::I32 | DType::U32 | DType::F32 => 4,
            DType::I64 | DType::U64 | DType::F64 => 8,
        }
    }

    /// The numpy name ("float32", ...).
    pub fn numpy_name(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::I8 => "int8",
            DType::I16 => "int16",
            DType::I32 => "int32",
            DType::I64 => "int64",
            DType::U8 => "uint8",
            DType::U16 => "uint16",
            DType::U32 => "uint32",
            DType::U64 => "uint64",
            DType::F16 => "float16",
            DType::F32 => "float32",
            DType::F64 => "float64",
        }
    }

    /// The dtype of an Arrow primitive type.
    pub fn of(dt: &DataType) -> Option<DType> {
        Some(match dt {
            DataType::Boolean => DType::Bool,
            DataType::Int8 => DType::I8,
            DataType::Int16 => DType::I16,
            DataType::Int32 => DType::I32,
            DataType::Int64 => DType::I64,
            DataType::UInt8 => DType::U8,
            DataType::UInt16 => DType::U16,
            DataType::UInt32 => DType::U32,
            DataType::UInt64 => DType::U64,
            DataType::Float16 => DType::F16,
            DataType::Float32 => DType::F32,
            DataType::Float64 => DType::F64,
            _ => return None,
        })
    }
}

/// A dense tensor: `shape` elements of `dtype`, row-major, in `data` (exactly the bytes).
#[derive(Debug, Clone)]
pub struct Dense {
    /// Element type.
    pub dtype: DType,
    /// Shape; `shape[0]` is rows.
    pub shape: Vec<usize>,
    /// The bytes (a slice of the Arrow buffer, so of the frame, unless noted above).
    pub data: Buffer,
}

/// A ragged tensor (TF `RaggedTensor.from_row_splits`): row `i` is
/// `values[row_splits[i]..row_splits[i + 1]]`.
#[derive(Debug, Clone)]
pub struct Ragged {
    /// The flat values (`shape[0]` = total elements).
    pub values: Dense,
    /// `rows + 1` offsets, starting at 0.
    pub row_splits: Dense,
}

/// How one column is handed to a tensor library.
#[derive(Debug, Clone)]
pub enum Tensor {
    /// A dense N-D array.
    Dense(Dense),
    /// Values plus row splits.
    Ragged(Ragged),
    /// Left as Arrow (strings, binary, structs, nested ragged).
    Arrow(ArrayRef),
}

/// Why a column has no tensor layout.
#[derive(Debug, Clone, thiserror::Error)]
pub enum LayoutError {
    /// The column has nulls.
    #[error("column has {0} nulls; dense tensors cannot hold nulls (read it with to_arrow())")]
    Nulls(usize),
}

fn check_nulls(a: &dyn Array) -> Result<(), LayoutError> {
    match a.null_count() {
        0 => Ok(()),
        n => Err(LayoutError::Nulls(n)),
    }
}

/// Dense view of a primitive array (no nulls) or fixed-size lists of them; `None` if the type
/// has no dense layout.
fn dense(a: &dyn Array) -> Result<Option<Dense>, LayoutError> {
    match a.data_type() {
        DataType::Boolean => {
            check_nulls(a)?;
            let b = a.as_boolean();
            let mut out = MutableBuffer::new(b.len());
            for v in b.values().iter() {
                out.push(v as u8);
            }
            Ok(Some(Dense {
                dtype: DType::Bool,
                shape: vec![b.len()],
                data: out.into(),
            }))
        }
        DataType::FixedSizeList(_, n) => {
            check_nulls(a)?;
            let l = a.as_fixed_size_list();
            let n = *n as usize;
            // The child of a sliced array is the whole child: take our rows only.
            let child = l.values().slice(l.offset() * n, l.len() * n);
            let Some(mut inner) = dense(child.as_ref())? else {
                return Ok(None);
            };
            let mut shape = vec![l.len(), n];
            shape.extend_from_slice(&inner.shape[1..]);
            inner.shape = shape;
            Ok(Some(inner))
        }
        dt => {
            let Some(dtype) = DType::of(dt) else {
                return Ok(None);
            };
            check_nulls(a)?;
            let data = a.to_data();
            let width = dtype.size();
            let buf =
                data.buffers()[0].slice_with_length(data.offset() * width, data.len() * width);
            Ok(Some(Dense {
                dtype,
                shape: vec![a.len()],
                data: buf,
            }))
        }
    }
}

fn splits<O: arrow_array::OffsetSizeTrait>(
    offsets: &arrow_buffer::OffsetBuffer<O>,
    dtype: DType,
) -> (Dense, usize, usize) {
    let first = offsets[0].as_usize();
    let last = offsets[offsets.len() - 1].as_usize();
    let data = if first == 0 {
        offsets.inner().inner().clone()
    } else {
        let mut out = MutableBuffer::new(offsets.len() * O::get_byte_width());
        for o in offsets.iter() {
            out.push(*o - O::usize_as(first));
        }
        out.into()
    };
    (
        Dense {
            dtype,
            shape: vec![offsets.len()],
            data,
        },
        first,
        last,
    )
}

/// The tensor layout of a column.
pub fn to_tensor(a: &ArrayRef) -> Result<Tensor, LayoutError> {
    match a.data_type() {
        DataType::List(_) | DataType::LargeList(_) => {
            check_nulls(a.as_ref())?;
            let (row_splits, first, last, values) = match a.data_type() {
                DataType::List(_) => {
                    let l = a.as_list::<i32>();
                    let (s, f, e) = splits(l.offsets(), DType::I32);
                    (s, f, e, l.values().clone())
                }
                _ => {
                    let l = a.as_list::<i64>();
                    let (s, f, e) = splits(l.offsets(), DType::I64);
                    (s, f, e, l.values().clone())
                }
            };
            let values = values.slice(first, last - first);
            match dense(values.as_ref())? {
                Some(values) => Ok(Tensor::Ragged(Ragged { values, row_splits })),
                None => Ok(Tensor::Arrow(a.clone())),
            }
        }
        _ => match dense(a.as_ref())? {
            Some(d) => Ok(Tensor::Dense(d)),
            None => Ok(Tensor::Arrow(a.clone())),
        },
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::builder::{FixedSizeListBuilder, Float32Builder, Int64Builder, ListBuilder};
    use arrow_array::{BooleanArray, Int32Array, StringArray};

    use super::*;

    #[test]
    fn primitive_is_a_view() {
        let a: ArrayRef = Arc::new(Int32Array::from(vec![1, 2, 3, 4]));
        let s = a.slice(1, 2);
        let Tensor::Dense(d) = to_tensor(&s).unwrap() else {
            panic!("not dense")
        };
        assert_eq!(d.dtype, DType::I32);
        assert_eq!(d.shape, vec![2]);
        assert_eq!(d.data.typed_data::<i32>(), &[2, 3]);
        let base = a.to_data().buffers()[0].as_ptr();
        // SAFETY: both pointers are in the same allocation (offset of one i32).
        assert_eq!(d.data.as_ptr(), unsafe { base.add(4) });
    }

    #[test]
    fn fixed_size_list_is_2d() {
        let mut b = FixedSizeListBuilder::new(Float32Builder::new(), 3);
        for r in 0..4 {
            for k in 0..3 {
                b.values().append_value((r * 3 + k) as f32);
            }
            b.append(true);
        }
        let a: ArrayRef = Arc::new(b.finish());
        let Tensor::Dense(d) = to_tensor(&a.slice(1, 2)).unwrap() else {
            panic!()
        };
        assert_eq!(d.shape, vec![2, 3]);
        assert_eq!(d.data.typed_data::<f32>(), &[3., 4., 5., 6., 7., 8.]);
    }

    #[test]
    fn list_is_ragged() {
        let mut b = ListBuilder::new(Int64Builder::new());
        b.append_value([Some(1), Some(2)]);
        b.append_value([]);
        b.append_value([Some(3)]);
        let a: ArrayRef = Arc::new(b.finish());
        let Tensor::Ragged(r) = to_tensor(&a).unwrap() else {
            panic!()
        };
        assert_eq!(r.row_splits.data.typed_data::<i32>(), &[0, 2, 2, 3]);
        assert_eq!(r.values.data.typed_data::<i64>(), &[1, 2, 3]);
        // Sliced: splits rebased, values cut.
        let Tensor::Ragged(r) = to_tensor(&a.slice(2, 1)).unwrap() else {
            panic!()
        };
        assert_eq!(r.row_splits.data.typed_data::<i32>(), &[0, 1]);
        assert_eq!(r.values.data.typed_data::<i64>(), &[3]);
    }

    #[test]
    fn strings_stay_arrow_bools_become_bytes_nulls_refused() {
        let s: ArrayRef = Arc::new(StringArray::from(vec!["a", "bc"]));
        assert!(matches!(to_tensor(&s).unwrap(), Tensor::Arrow(_)));
        let b: ArrayRef = Arc::new(BooleanArray::from(vec![true, false, true]));
        let Tensor::Dense(d) = to_tensor(&b).unwrap() else {
            panic!()
        };
        assert_eq!(d.data.as_slice(), &[1, 0, 1]);
        let n: ArrayRef = Arc::new(Int32Array::from(vec![Some(1), None]));
        assert!(matches!(to_tensor(&n), Err(LayoutError::Nulls(1))));
    }
}
