//! A faster path for one common shape: a `FixedSizeList` of numbers with no nulls (the image
//! of an MNIST-like row, an embedding). The `parquet` crate's Arrow reader rebuilds such a
//! column through its generic list machinery (definition/repetition levels into validity
//! bitmaps and offsets, then checks every list's length), which is most of the decode time of
//! those files. Here the leaf column is read with the crate's column reader: the levels are only
//! checked (every value present, every record exactly `width` values) and the values buffer
//! becomes the list's child array as it is.
//!
//! Used only where the row group's column statistics say there are no nulls; a row group that
//! contradicts them is a data error naming it.

use std::sync::Arc;

use arrow_array::types::{Float32Type, Float64Type, Int32Type, Int64Type};
use arrow_array::{ArrayRef, ArrowPrimitiveType, FixedSizeListArray, PrimitiveArray};
use arrow_schema::{DataType, FieldRef};
use parquet::column::reader::{ColumnReader, ColumnReaderImpl};
use parquet::data_type::DataType as PqType;
use parquet::file::metadata::RowGroupMetaData;
use parquet::file::reader::{ChunkReader, RowGroupReader};
use parquet::file::serialized_reader::SerializedRowGroupReader;
use parquet::schema::types::SchemaDescriptor;

/// Whether root column `root` (with Arrow type `dt`) of this row group takes the fast path;
/// returns its leaf index.
pub(crate) fn eligible(
    schema: &SchemaDescriptor,
    rg: &RowGroupMetaData,
    root: usize,
    dt: &DataType,
) -> Option<usize> {
    let DataType::FixedSizeList(item, width) = dt else {
        return None;
    };
    if *width <= 0
        || !matches!(
            item.data_type(),
            DataType::Float32 | DataType::Float64 | DataType::Int32 | DataType::Int64
        )
    {
        return None;
    }
    let leaves: Vec<usize> = (0..schema.num_columns())
        .filter(|&l| schema.get_column_root_idx(l) == root)
        .collect();
    let [leaf] = leaves[..] else {
        return None;
    };
    let col = schema.column(leaf);
    let physical = match item.data_type() {
        DataType::Float32 => parquet::basic::Type::FLOAT,
        DataType::Float64 => parquet::basic::Type::DOUBLE,
        DataType::Int32 => parquet::basic::Type::INT32,
        _ => parquet::basic::Type::INT64,
    };
    if col.max_rep_level() != 1 || col.physical_type() != physical {
        return None;
    }
    let stats = rg.column(leaf).statistics()?;
    (stats.null_count_opt() == Some(0)).then_some(leaf)
}

enum Typed {
    F32(ColumnReaderImpl<parquet::data_type::FloatType>),
    F64(ColumnReaderImpl<parquet::data_type::DoubleType>),
    I32(ColumnReaderImpl<parquet::data_type::Int32Type>),
    I64(ColumnReaderImpl<parquet::data_type::Int64Type>),
}

/// Reads one fixed-size-list column of one row group, `n` rows at a time.
pub(crate) struct FixedListColumn {
    field: FieldRef,
    width: usize,
    reader: Typed,
    def: Vec<i16>,
    rep: Vec<i16>,
}

impl FixedListColumn {
    /// Opens leaf `leaf` of the row group for the list field `field`.
    pub(crate) fn open<R: ChunkReader + 'static>(
        chunks: Arc<R>,
        rg: &RowGroupMetaData,
        leaf: usize,
        field: FieldRef,
    ) -> Result<Self, String> {
        let DataType::FixedSizeList(_, width) = field.data_type() else {
            return Err(format!("column {} is not a fixed-size list", field.name()));
        };
        let width = *width as usize;
        let props = Arc::new(parquet::file::properties::ReaderProperties::builder().build());
        let rgr =
            SerializedRowGroupReader::new(chunks, rg, None, props).map_err(|e| e.to_string())?;
        let reader = match rgr.get_column_reader(leaf).map_err(|e| e.to_string())? {
            ColumnReader::FloatColumnReader(r) => Typed::F32(r),
            ColumnReader::DoubleColumnReader(r) => Typed::F64(r),
            ColumnReader::Int32ColumnReader(r) => Typed::I32(r),
            ColumnReader::Int64ColumnReader(r) => Typed::I64(r),
            _ => return Err(format!("column {}: unexpected physical type", field.name())),
        };
        Ok(Self {
            field,
            width,
            reader,
            def: Vec::new(),
            rep: Vec::new(),
        })
    }

    /// Passes over the next `rows` rows without building them (the parquet crate's
    /// `skip_records`: pages are decompressed, values are not copied).
    pub(crate) fn skip(&mut self, rows: usize) -> Result<(), String> {
        if rows == 0 {
            return Ok(());
        }
        let skipped = match &mut self.reader {
            Typed::F32(r) => r.skip_records(rows),
            Typed::F64(r) => r.skip_records(rows),
            Typed::I32(r) => r.skip_records(rows),
            Typed::I64(r) => r.skip_records(rows),
        }
        .map_err(|e| e.to_string())?;
        if skipped != rows {
            return Err(format!(
                "column {}: passed over {skipped} rows of the {rows} asked for",
                self.field.name()
            ));
        }
        Ok(())
    }

    /// The next `rows` rows as a `FixedSizeListArray`.
    pub(crate) fn read(&mut self, rows: usize) -> Result<ArrayRef, String> {
        let item = match self.field.data_type() {
            DataType::FixedSizeList(item, _) => item.clone(),
            _ => return Err("not a fixed-size list".into()),
        };
        let values: ArrayRef = match &mut self.reader {
            Typed::F32(r) => {
                read_values::<_, Float32Type>(r, rows, self.width, &mut self.def, &mut self.rep)?
            }
            Typed::F64(r) => {
                read_values::<_, Float64Type>(r, rows, self.width, &mut self.def, &mut self.rep)?
            }
            Typed::I32(r) => {
                read_values::<_, Int32Type>(r, rows, self.width, &mut self.def, &mut self.rep)?
            }
            Typed::I64(r) => {
                read_values::<_, Int64Type>(r, rows, self.width, &mut self.def, &mut self.rep)?
            }
        };
        let arr = FixedSizeListArray::try_new(item, self.width as i32, values, None)
            .map_err(|e| format!("column {}: {e}", self.field.name()))?;
        Ok(Arc::new(arr))
    }
}

fn read_values<T, A>(
    r: &mut ColumnReaderImpl<T>,
    rows: usize,
    width: usize,
    def: &mut Vec<i16>,
    rep: &mut Vec<i16>,
) -> Result<ArrayRef, String>
where
    T: PqType,
    A: ArrowPrimitiveType<Native = T::T>,
    T::T: arrow_buffer::ArrowNativeType,
{
    let n = rows * width;
    def.clear();
    rep.clear();
    let mut values: Vec<T::T> = Vec::with_capacity(n);
    let (records, got, levels) = r
        .read_records(rows, Some(def), Some(rep), &mut values)
        .map_err(|e| e.to_string())?;
    if records != rows || got != n || levels != n {
        return Err(format!(
            "expected {rows} rows of {width} values without nulls, read {records} rows, \
             {got} values, {levels} levels (the column statistics said no nulls)"
        ));
    }
    // Exactly `width` values per row: a row starts (repetition level 0) at every multiple of
    // `width` and nowhere else.
    if rep.len() != n
        || rep
            .chunks_exact(width)
            .any(|c| c[0] != 0 || c[1..].contains(&0))
    {
        return Err(format!("a row does not hold exactly {width} values"));
    }
    Ok(Arc::new(PrimitiveArray::<A>::new(
        arrow_buffer::ScalarBuffer::<T::T>::from(values),
        None,
    )))
}
