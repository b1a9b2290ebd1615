//! A faster path for one common shape: a `FixedSizeList` of numbers with no nulls (the image
//! of an MNIST-like row, an embedding). The `parquet` crate's Arrow reader rebuilds such a
//! column through its generic list machinery (definition/repetition levels into validity
//! bitmaps and offsets, then checks every list's length), which is most of the decode time of
//! those files; even its column reader expands every level (784 per row of an image) to find
//! where rows end.
//!
//! Here the leaf column's pages pass through [`FlatPages`]: their levels are checked run by
//! run, without expanding them (every value present, every row exactly `width` values), and
//! cut off the page, whose values [`super::parquet_values`] decodes straight into the buffer
//! that becomes the list's child array.
//!
//! Used only where the row group's column statistics say there are no nulls and the levels
//! are RLE-encoded; a page that contradicts them is a data error naming the row group.

use std::collections::VecDeque;
use std::sync::Arc;

use arrow_array::types::{Float32Type, Float64Type, Int32Type, Int64Type};
use arrow_array::{ArrayRef, ArrowPrimitiveType, FixedSizeListArray, PrimitiveArray, RecordBatch};
use arrow_schema::{DataType, FieldRef, SchemaRef};
use parquet::arrow::arrow_reader::ParquetRecordBatchReader;
use parquet::basic::{Encoding, Type as PhysicalType};
use parquet::column::page::{Page, PageMetadata, PageReader};
use parquet::errors::ParquetError;
use parquet::file::metadata::RowGroupMetaData;
use parquet::file::page_index::offset_index::OffsetIndexMetaData;
use parquet::file::reader::{ChunkReader, RowGroupReader};
use parquet::file::serialized_reader::SerializedRowGroupReader;
use parquet::schema::types::SchemaDescriptor;

use super::parquet_values::{run_value, varint, Native, Values};

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
    // Values decoded here (PLAIN, dictionary, BYTE_STREAM_SPLIT) with RLE levels; others
    // (DELTA_BINARY_PACKED, levels in the long-deprecated BIT_PACKED) are the crate's reader's.
    if !rg
        .column(leaf)
        .encodings()
        .all(super::parquet_values::supported)
    {
        return None;
    }
    let stats = rg.column(leaf).statistics()?;
    (stats.null_count_opt() == Some(0)).then_some(leaf)
}

enum Typed {
    F32(Values<f32>),
    F64(Values<f64>),
    I32(Values<i32>),
    I64(Values<i64>),
}

/// Reads one fixed-size-list column of one row group, `n` rows at a time.
pub(crate) struct FixedListColumn {
    field: FieldRef,
    width: usize,
    reader: Typed,
}

impl FixedListColumn {
    /// Opens leaf `leaf` of the row group for the list field `field`. With the row group's
    /// offset index, [`FixedListColumn::read`] passes over whole pages without their bytes.
    pub(crate) fn open<R: ChunkReader + 'static>(
        chunks: Arc<R>,
        rg: &RowGroupMetaData,
        offset_index: Option<&[OffsetIndexMetaData]>,
        leaf: usize,
        field: FieldRef,
    ) -> Result<Self, String> {
        let DataType::FixedSizeList(_, width) = field.data_type() else {
            return Err(format!("column {} is not a fixed-size list", field.name()));
        };
        let width = *width as usize;
        let props = Arc::new(parquet::file::properties::ReaderProperties::builder().build());
        let rgr = SerializedRowGroupReader::new(chunks, rg, offset_index, props)
            .map_err(|e| e.to_string())?;
        let descr = rg.column(leaf).column_descr();
        let pages = FlatPages {
            inner: rgr
                .get_column_page_reader(leaf)
                .map_err(|e| e.to_string())?,
            rows: RowCheck::new(width, descr.max_def_level()),
            located: offset_index.is_some(),
        };
        let pages: Box<dyn PageReader> = Box::new(pages);
        let reader = match descr.physical_type() {
            PhysicalType::FLOAT => Typed::F32(Values::new(pages)),
            PhysicalType::DOUBLE => Typed::F64(Values::new(pages)),
            PhysicalType::INT32 => Typed::I32(Values::new(pages)),
            PhysicalType::INT64 => Typed::I64(Values::new(pages)),
            _ => return Err(format!("column {}: unexpected physical type", field.name())),
        };
        Ok(Self {
            field,
            width,
            reader,
        })
    }

    /// The rows `pieces` name, (rows to pass over, rows to read) from where the last read
    /// stopped, as one `FixedSizeListArray`: the rows passed over are not built, whole pages
    /// of them not read where the offset index locates them.
    pub(crate) fn read(&mut self, pieces: &[(usize, usize)]) -> Result<ArrayRef, String> {
        let item = match self.field.data_type() {
            DataType::FixedSizeList(item, _) => item.clone(),
            _ => return Err("not a fixed-size list".into()),
        };
        let w = self.width;
        let values: ArrayRef = match &mut self.reader {
            Typed::F32(r) => read_values::<_, Float32Type>(r, w, pieces),
            Typed::F64(r) => read_values::<_, Float64Type>(r, w, pieces),
            Typed::I32(r) => read_values::<_, Int32Type>(r, w, pieces),
            Typed::I64(r) => read_values::<_, Int64Type>(r, w, pieces),
        }
        .map_err(|e| format!("column {}: {e}", self.field.name()))?;
        let arr = FixedSizeListArray::try_new(item, self.width as i32, values, None)
            .map_err(|e| format!("column {}: {e}", self.field.name()))?;
        Ok(Arc::new(arr))
    }
}

/// Fixed-size list columns through [`FixedListColumn`], the other projected columns through
/// the parquet crate's reader, zipped batch by batch (both cut `batch_rows` rows of those
/// wanted: a row group from a row on, or the rows a filter's page statistics leave).
pub(crate) struct FixedRg {
    arrow: Option<ParquetRecordBatchReader>,
    /// (position among the projected roots, reader)
    cols: Vec<(usize, FixedListColumn)>,
    /// The row ranges `[from, to)` still to read, and the row the list readers are at.
    want: VecDeque<(u64, u64)>,
    at: u64,
    rows_left: usize,
    batch_rows: usize,
    /// The projected roots, in file order (what the parquet reader would yield).
    schema: SchemaRef,
}

impl FixedRg {
    /// `arrow` reads the other columns under the selection `want` makes (if any rows are
    /// passed over).
    pub(crate) fn new(
        arrow: Option<ParquetRecordBatchReader>,
        cols: Vec<(usize, FixedListColumn)>,
        want: Vec<(u64, u64)>,
        batch_rows: usize,
        schema: SchemaRef,
    ) -> Self {
        let want: VecDeque<(u64, u64)> = want.into_iter().filter(|(a, b)| a < b).collect();
        let rows_left = want.iter().map(|(a, b)| (b - a) as usize).sum();
        Self {
            arrow,
            cols,
            want,
            at: 0,
            rows_left,
            batch_rows,
            schema,
        }
    }

    /// The next `n` wanted rows as (rows to pass over, rows to read) pieces.
    fn pieces(&mut self, mut n: u64) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        while n > 0 {
            let Some(&(from, to)) = self.want.front() else {
                break;
            };
            let pass = from.saturating_sub(self.at);
            self.at += pass;
            let k = n.min(to - self.at);
            out.push((pass as usize, k as usize));
            self.at += k;
            n -= k;
            if self.at == to {
                self.want.pop_front();
            }
        }
        out
    }

    fn batch(&mut self) -> Result<RecordBatch, String> {
        let n = self.rows_left.min(self.batch_rows);
        let mut others = match self.arrow.as_mut() {
            Some(r) => {
                let b = r
                    .next()
                    .ok_or_else(|| format!("row group ended {} rows early", self.rows_left))?
                    .map_err(|e| e.to_string())?;
                if b.num_rows() != n {
                    return Err(format!("batch of {} rows, expected {n}", b.num_rows()));
                }
                b.columns().to_vec().into_iter()
            }
            None => Vec::new().into_iter(),
        };
        let pieces = self.pieces(n as u64);
        let mut fixed = Vec::with_capacity(self.cols.len());
        for (pos, c) in &mut self.cols {
            fixed.push((*pos, c.read(&pieces)?));
        }
        let mut fixed = fixed.into_iter().peekable();
        let mut cols = Vec::with_capacity(self.schema.fields().len());
        for i in 0..self.schema.fields().len() {
            match fixed.next_if(|(p, _)| *p == i) {
                Some((_, a)) => cols.push(a),
                None => cols.push(others.next().ok_or("missing column")?),
            }
        }
        self.rows_left -= n;
        RecordBatch::try_new_with_options(
            self.schema.clone(),
            cols,
            &arrow_array::RecordBatchOptions::new().with_row_count(Some(n)),
        )
        .map_err(|e| e.to_string())
    }
}

impl Iterator for FixedRg {
    type Item = Result<RecordBatch, String>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.rows_left == 0 {
            return None;
        }
        let r = self.batch();
        if r.is_err() {
            self.rows_left = 0;
        }
        Some(r)
    }
}

/// The values of `pieces` (rows to pass over, rows to read) of the flat column as one Arrow
/// array.
fn read_values<T, A>(
    r: &mut Values<T>,
    width: usize,
    pieces: &[(usize, usize)],
) -> Result<ArrayRef, String>
where
    T: Native + arrow_buffer::ArrowNativeType,
    A: ArrowPrimitiveType<Native = T>,
{
    let rows: usize = pieces.iter().map(|&(_, k)| k).sum();
    let mut values = Vec::with_capacity(rows * width);
    for &(pass, k) in pieces {
        r.skip(pass * width)?;
        r.read_into(&mut values, k * width)?;
    }
    Ok(Arc::new(PrimitiveArray::<A>::new(
        arrow_buffer::ScalarBuffer::<T>::from(values),
        None,
    )))
}

/// A leaf's pages with their levels checked and cut off.
struct FlatPages {
    inner: Box<dyn PageReader>,
    rows: RowCheck,
    /// Pages located by the offset index: each starts a row, and its row count comes from the
    /// index, so whole pages may be passed over (their levels unchecked, their bytes unread).
    located: bool,
}

fn general(e: String) -> ParquetError {
    ParquetError::General(e)
}

impl FlatPages {
    fn flatten(&mut self, page: Page) -> Result<Page, String> {
        match page {
            Page::DataPage {
                buf,
                num_values,
                encoding,
                def_level_encoding,
                rep_level_encoding,
                ..
            } => {
                let n = num_values as usize;
                let mut at = 0;
                rle("repetition", rep_level_encoding)?;
                let rep = length_prefixed(&buf, &mut at)?;
                self.rows.repetition(rep, n)?;
                if self.rows.max_def > 0 {
                    rle("definition", def_level_encoding)?;
                    let def = length_prefixed(&buf, &mut at)?;
                    self.rows.definition(def, n)?;
                }
                Ok(Page::DataPage {
                    buf: buf.slice(at..),
                    num_values,
                    encoding,
                    def_level_encoding,
                    rep_level_encoding,
                    statistics: None,
                })
            }
            Page::DataPageV2 {
                buf,
                num_values,
                encoding,
                num_nulls,
                def_levels_byte_len,
                rep_levels_byte_len,
                is_compressed,
                ..
            } => {
                if num_nulls != 0 {
                    return Err(format!("a page holds {num_nulls} nulls"));
                }
                let n = num_values as usize;
                let (rep_len, def_len) =
                    (rep_levels_byte_len as usize, def_levels_byte_len as usize);
                if rep_len + def_len > buf.len() {
                    return Err(format!(
                        "levels of {} bytes in a page of {}",
                        rep_len + def_len,
                        buf.len()
                    ));
                }
                self.rows.repetition(&buf[..rep_len], n)?;
                if self.rows.max_def > 0 {
                    self.rows.definition(&buf[rep_len..rep_len + def_len], n)?;
                }
                Ok(Page::DataPageV2 {
                    buf: buf.slice(rep_len + def_len..),
                    num_values,
                    encoding,
                    num_nulls: 0,
                    num_rows: num_values,
                    def_levels_byte_len: 0,
                    rep_levels_byte_len: 0,
                    is_compressed,
                    statistics: None,
                })
            }
            dictionary @ Page::DictionaryPage { .. } => Ok(dictionary),
        }
    }
}

impl PageReader for FlatPages {
    fn get_next_page(&mut self) -> parquet::errors::Result<Option<Page>> {
        match self.inner.get_next_page()? {
            Some(page) => self.flatten(page).map(Some).map_err(general),
            None => self.rows.end().map(|()| None).map_err(general),
        }
    }

    /// Whether the next page is a dictionary; with page locations also its values (rows of
    /// the list times its width), so that a skip passes over whole pages. Without them the
    /// row and level counts are the list's, not the flat column's, and every data page must
    /// pass [`FlatPages::flatten`].
    fn peek_next_page(&mut self) -> parquet::errors::Result<Option<PageMetadata>> {
        let located = self.located && self.rows.at_row_start();
        let width = self.rows.width;
        Ok(self.inner.peek_next_page()?.map(|m| PageMetadata {
            num_rows: m
                .num_rows
                .filter(|_| located && !m.is_dict)
                .and_then(|r| r.checked_mul(width)),
            num_levels: None,
            is_dict: m.is_dict,
        }))
    }

    fn skip_next_page(&mut self) -> parquet::errors::Result<()> {
        if !(self.located && self.rows.at_row_start()) {
            return Err(general(
                "the pages of a fixed-size list without page locations are read, not skipped"
                    .into(),
            ));
        }
        self.inner.skip_next_page()
    }
}

impl Iterator for FlatPages {
    type Item = parquet::errors::Result<Page>;

    fn next(&mut self) -> Option<Self::Item> {
        self.get_next_page().transpose()
    }
}

/// Levels (`what`: repetition or definition) of a V1 data page must be RLE-encoded.
fn rle(what: &str, encoding: Encoding) -> Result<(), String> {
    if encoding != Encoding::RLE {
        return Err(format!("{what} levels encoded {encoding}, not RLE"));
    }
    Ok(())
}

/// The levels of a V1 data page at `at`: a 4-byte little-endian length, then that many bytes.
fn length_prefixed<'a>(buf: &'a [u8], at: &mut usize) -> Result<&'a [u8], String> {
    let len = buf
        .get(*at..*at + 4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
        .ok_or("a page cut short in its levels")?;
    let levels = buf
        .get(*at + 4..*at + 4 + len)
        .ok_or_else(|| format!("levels of {len} bytes past the end of a page"))?;
    *at += 4 + len;
    Ok(levels)
}

/// The rows the levels seen so far make: each exactly `width` values, every value present.
struct RowCheck {
    width: usize,
    max_def: i16,
    /// Values of the current row seen so far (`width`: the row is whole).
    at: usize,
}

impl RowCheck {
    fn new(width: usize, max_def: i16) -> Self {
        Self {
            width,
            max_def,
            at: 0,
        }
    }

    /// `count` repetition levels of `level`: a 0 starts a row, a 1 continues it.
    fn rep_run(&mut self, level: u32, count: usize) -> Result<(), String> {
        let w = self.width;
        match level {
            0 if self.at != 0 && self.at != w => Err(format!(
                "a row of {} values where the list holds {w}",
                self.at
            )),
            0 if count > 1 && w != 1 => Err(format!("a row of 1 value where the list holds {w}")),
            0 => {
                self.at = 1;
                Ok(())
            }
            1 if self.at == 0 || self.at + count > w => Err(format!(
                "a row of more than {w} values where the list holds {w}"
            )),
            1 => {
                self.at += count;
                Ok(())
            }
            other => Err(format!("repetition level {other} in a list of numbers")),
        }
    }

    /// Checks a page's `n` repetition levels.
    fn repetition(&mut self, levels: &[u8], n: usize) -> Result<(), String> {
        rle_runs(levels, 1, n, |level, count| self.rep_run(level, count))
    }

    /// Checks that a page's `n` definition levels are all the maximum (no nulls).
    fn definition(&mut self, levels: &[u8], n: usize) -> Result<(), String> {
        let max = self.max_def as u32;
        let bits = 32 - max.leading_zeros() as u8;
        rle_runs(levels, bits, n, |level, _| {
            (level == max).then_some(()).ok_or_else(|| {
                format!("a null (definition level {level} of {max}) where the statistics said none")
            })
        })
    }

    /// Whether the values seen so far end a row (a page passed over must start one).
    fn at_row_start(&self) -> bool {
        self.at == 0 || self.at == self.width
    }

    /// At the end of the column chunk: the last row is whole.
    fn end(&self) -> Result<(), String> {
        if self.at != 0 && self.at != self.width {
            return Err(format!(
                "the last row holds {} values where the list holds {}",
                self.at, self.width
            ));
        }
        Ok(())
    }
}

/// Walks the first `n` levels of Parquet's RLE / bit-packed hybrid encoding (`bits` wide),
/// calling `f(level, count)` for each run (each value of a bit-packed group on its own).
fn rle_runs(
    data: &[u8],
    bits: u8,
    n: usize,
    mut f: impl FnMut(u32, usize) -> Result<(), String>,
) -> Result<(), String> {
    let bytes = usize::from(bits).div_ceil(8);
    let (mut at, mut left) = (0, n);
    while left > 0 {
        let header = varint(data, &mut at, "levels")?;
        let count = (header >> 1) as usize;
        if header & 1 == 0 {
            let value = data.get(at..at + bytes).ok_or("levels cut short")?;
            at += bytes;
            let level = run_value(value);
            if count == 0 {
                return Err("an empty level run".into());
            }
            let count = count.min(left);
            f(level, count)?;
            left -= count;
        } else {
            let values = count * 8;
            let len = count * usize::from(bits);
            let group = data.get(at..at + len).ok_or("levels cut short")?;
            at += len;
            if values == 0 {
                return Err("an empty level run".into());
            }
            let mask = (1u32 << bits) - 1;
            for i in 0..values.min(left) {
                let bit = i * usize::from(bits);
                let mut word = 0u32;
                for (k, b) in group[bit / 8..group.len().min(bit / 8 + 4)]
                    .iter()
                    .enumerate()
                {
                    word |= u32::from(*b) << (8 * k);
                }
                f((word >> (bit % 8)) & mask, 1)?;
            }
            left -= values.min(left);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `0, 1, 1, 1` twice, as one bit-packed group of eight 1-bit levels.
    const TWO_ROWS_PACKED: [u8; 2] = [0x03, 0xEE];

    /// One run of a single 0, then a run of `ones` 1s.
    fn row_as_runs(ones: u8) -> Vec<u8> {
        vec![0x02, 0x00, ones << 1, 0x01]
    }

    #[test]
    fn whole_rows_pass_in_runs_and_in_packed_groups() {
        let mut rows = RowCheck::new(4, 1);
        rows.repetition(&TWO_ROWS_PACKED, 8).unwrap();
        rows.repetition(&row_as_runs(3), 4).unwrap();
        rows.end().unwrap();
        // A row cut by a page boundary continues in the next page.
        let mut rows = RowCheck::new(4, 1);
        rows.repetition(&[0x02, 0x00, 0x02, 0x01], 2).unwrap();
        rows.repetition(&[0x04, 0x01], 2).unwrap();
        rows.end().unwrap();
    }

    #[test]
    fn rows_of_another_width_are_errors() {
        let short = RowCheck::new(5, 1)
            .repetition(&TWO_ROWS_PACKED, 8)
            .unwrap_err();
        assert!(
            short.contains("a row of 4 values where the list holds 5"),
            "{short}"
        );
        let long = RowCheck::new(3, 1)
            .repetition(&row_as_runs(3), 4)
            .unwrap_err();
        assert!(long.contains("more than 3 values"), "{long}");
        let mut rows = RowCheck::new(4, 1);
        rows.repetition(&row_as_runs(2), 3).unwrap();
        let end = rows.end().unwrap_err();
        assert!(end.contains("the last row holds 3 values"), "{end}");
        let first = RowCheck::new(4, 1)
            .repetition(&[0x02, 0x01], 1)
            .unwrap_err();
        assert!(first.contains("more than 4"), "{first}");
    }

    #[test]
    fn definition_levels_below_the_maximum_are_nulls() {
        let mut rows = RowCheck::new(4, 2);
        rows.definition(&[0x10, 0x02], 8).unwrap();
        // Eight 2-bit levels, packed: 2, 2, 2, 2, 2, 1, 2, 2.
        let err = rows.definition(&[0x03, 0xAA, 0xA6], 8).unwrap_err();
        assert!(err.contains("definition level 1 of 2"), "{err}");
        rows.definition(&[0x03, 0xAA, 0xAA], 8).unwrap();
    }

    #[test]
    fn cut_levels_are_errors_not_panics() {
        let mut rows = RowCheck::new(4, 1);
        for cut in [&[][..], &[0x03], &[0x06], &[0x80, 0x80]] {
            let err = rows.repetition(cut, 4).unwrap_err();
            assert!(err.contains("cut short"), "{cut:?}: {err}");
        }
        let mut at = 0;
        assert!(length_prefixed(&[9, 0, 0, 0, 1], &mut at)
            .unwrap_err()
            .contains("levels of 9 bytes past the end"));
        assert!(length_prefixed(&[1, 0], &mut at).is_err());
        assert_eq!(length_prefixed(&[1, 0, 0, 0, 7, 8], &mut at).unwrap(), &[7]);
        assert_eq!(at, 5);
    }
}
