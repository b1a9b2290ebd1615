//! A table's columns by the table's names: each data file's own columns found by physical name
//! or by field id, read with the file's names and handed on under the table's.
//!
//! Delta Lake's column mapping and Iceberg's schema evolution both let a data file's column
//! names differ from the table's: Delta (`delta.columnMapping.mode` = `name`) names every
//! column in the files by a physical name the log records (`col-<uuid>`), or (`id`) by the
//! Parquet field id it records; Iceberg finds every column of a data file by its field id, so
//! that a rename never rewrites a file and a column dropped and added again under the same name
//! is a new column. [`TableColumns`] is what the table's metadata says (filled by
//! [`crate::delta`] and [`crate::iceberg`]); [`TableColumns::file`] resolves one data file's
//! schema into a [`FileColumns`] at planning time (the plan's splits carry it), and
//! [`FileColumns::reader`] renames and converts its batches where a split is opened.
//!
//! - A column the file lacks (added after the file was written) is all nulls, as both specs
//!   say; a required one the file lacks is refused naming the column and the file.
//! - A column of another type is read when the type is one the specs let a column widen to
//!   (`int` -> `long`, `float` -> `double`, a decimal's precision, same scale) or the same type
//!   stored another way (string, binary and timestamp encodings, dictionaries); anything else
//!   is refused naming the column and the file, never read wrong.
//! - Nested columns are resolved the same way (struct fields by name or id; list elements and
//!   map keys and values by position).

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{
    new_null_array, Array, ArrayRef, FixedSizeListArray, LargeListArray, ListArray, MapArray,
    RecordBatch, StructArray,
};
use arrow_schema::{DataType, Field, FieldRef, Fields, Schema, SchemaRef};

use crate::{Error, Result, SkipStats, SkippedRows, SplitReader};

#[path = "mapping_default.rs"]
mod default;
pub(crate) use default::default_array;

/// The field metadata key under which the parquet crate (and pyarrow) give a Parquet field id.
pub const FIELD_ID: &str = "PARQUET:field_id";

/// How a table's column is found in a data file.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Key {
    /// By the file's column name (Delta's physical name; a table's own name).
    Name(String),
    /// By the Parquet field id (Iceberg; Delta `id` mode).
    Id(i32),
}

/// A column of the table, as its metadata describes it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Column {
    /// The table's name of it.
    pub name: String,
    /// Where the files hold it (unused for list elements, map keys and values: by position).
    pub key: Key,
    /// Whether it may be null (a file lacking a non-nullable column is refused).
    pub nullable: bool,
    /// Its type.
    pub kind: Kind,
    /// The value of the data files written before it was added (Iceberg's `initial-default`,
    /// in the spec's JSON form); `None`: null there.
    pub default: Option<String>,
}

/// A table column's type.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Kind {
    /// A type without children, as Arrow gives it.
    Primitive(DataType),
    /// A struct of columns.
    Struct(Vec<Column>),
    /// A list of the element column.
    List(Box<Column>),
    /// A map of the key and value columns.
    Map(Box<Column>, Box<Column>),
}

impl Column {
    /// A column of `kind` named `name`, found by `key`.
    pub fn new(name: impl Into<String>, key: Key, nullable: bool, kind: Kind) -> Self {
        Self {
            name: name.into(),
            key,
            nullable,
            kind,
            default: None,
        }
    }

    /// The column with `default` (JSON) for the files written before it was added.
    pub fn with_default(self, default: Option<String>) -> Self {
        Self { default, ..self }
    }

    /// Its Arrow field (list elements named `element`, map entries `key_value`, as the parquet
    /// crate names them).
    pub fn field(&self) -> Field {
        Field::new(&self.name, self.data_type(), self.nullable)
    }

    fn data_type(&self) -> DataType {
        match &self.kind {
            Kind::Primitive(t) => t.clone(),
            Kind::Struct(cs) => DataType::Struct(cs.iter().map(Column::field).collect()),
            Kind::List(e) => DataType::List(Arc::new(e.field_named("element"))),
            Kind::Map(k, v) => {
                let entries = Field::new(
                    "key_value",
                    DataType::Struct(Fields::from(vec![
                        k.field_named("key"),
                        v.field_named("value"),
                    ])),
                    false,
                );
                DataType::Map(Arc::new(entries), false)
            }
        }
    }

    fn field_named(&self, name: &str) -> Field {
        Field::new(name, self.data_type(), self.nullable)
    }

    /// The column with every key by its own name, at every depth (a file without field ids of
    /// a table whose columns never changed).
    fn by_names(&self) -> Self {
        let kind = match &self.kind {
            Kind::Primitive(t) => Kind::Primitive(t.clone()),
            Kind::Struct(cs) => Kind::Struct(cs.iter().map(Column::by_names).collect()),
            Kind::List(e) => Kind::List(Box::new(e.by_names())),
            Kind::Map(k, v) => Kind::Map(Box::new(k.by_names()), Box::new(v.by_names())),
        };
        Self {
            key: Key::Name(self.name.clone()),
            kind,
            ..self.clone()
        }
    }
}

/// A table's columns (its partition columns left out: they are not in the data files).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TableColumns {
    /// The columns, in the table's order.
    pub columns: Vec<Column>,
    /// Whether a file without any field id is read by the table's names (an Iceberg table
    /// whose schema never changed); else such a file is refused.
    pub names_without_ids: bool,
    /// Iceberg's name mapping (`schema.name-mapping.default`): the field ids of a file written
    /// without them (imported files), by the names its columns had.
    pub name_mapping: Option<NameMapping>,
}

/// Iceberg's name mapping: for each field, its field id and every name it was written under.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, serde::Deserialize)]
pub struct NameMapping(pub Vec<MappedField>);

/// One field of a [`NameMapping`].
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Deserialize)]
pub struct MappedField {
    /// Its field id (`None`: a name the mapping knows no id for).
    #[serde(rename = "field-id", default)]
    pub field_id: Option<i32>,
    /// The names it was written under.
    #[serde(default)]
    pub names: Vec<String>,
    /// Its nested fields.
    #[serde(default)]
    pub fields: Vec<MappedField>,
}

impl NameMapping {
    /// `file` with the field ids the mapping gives its columns by name, nested fields
    /// included: a struct's fields by their names among the entry's `fields`, a list's element
    /// by the entry named `element`, a map's key and value by `key` and `value` (the spec's
    /// names, whatever the file calls them). A field the mapping does not name keeps no id, so
    /// the table finds no column in it (null, as the spec says).
    fn annotate(&self, file: &Schema) -> Schema {
        let fields: Vec<Field> = file
            .fields()
            .iter()
            .map(|f| annotate(f, mapped(&self.0, f.name())))
            .collect();
        Schema::new_with_metadata(fields, file.metadata().clone())
    }
}

/// The entry of `fields` written under `name`.
fn mapped<'a>(fields: &'a [MappedField], name: &str) -> Option<&'a MappedField> {
    fields.iter().find(|m| m.names.iter().any(|n| n == name))
}

/// `f` with the field id of `entry` (when it gives one), its children annotated by the
/// entry's nested fields.
fn annotate(f: &Field, entry: Option<&MappedField>) -> Field {
    let children: &[MappedField] = entry.map_or(&[], |e| e.fields.as_slice());
    let by_role = |child: &FieldRef, role: &str| Arc::new(annotate(child, mapped(children, role)));
    let data_type = match f.data_type() {
        DataType::Struct(fs) => DataType::Struct(
            fs.iter()
                .map(|c| Arc::new(annotate(c, mapped(children, c.name()))))
                .collect(),
        ),
        DataType::List(e) => DataType::List(by_role(e, "element")),
        DataType::LargeList(e) => DataType::LargeList(by_role(e, "element")),
        DataType::FixedSizeList(e, n) => DataType::FixedSizeList(by_role(e, "element"), *n),
        DataType::Map(entries, sorted) => {
            let kv = match entries.data_type() {
                DataType::Struct(kv) if kv.len() == 2 => DataType::Struct(Fields::from(vec![
                    by_role(&kv[0], "key"),
                    by_role(&kv[1], "value"),
                ])),
                t => t.clone(),
            };
            DataType::Map(
                Arc::new(entries.as_ref().clone().with_data_type(kv)),
                *sorted,
            )
        }
        t => t.clone(),
    };
    let mut md = f.metadata().clone();
    match entry.and_then(|e| e.field_id) {
        Some(id) => {
            md.insert(FIELD_ID.to_string(), id.to_string());
        }
        None => {
            md.remove(FIELD_ID);
        }
    }
    f.clone().with_data_type(data_type).with_metadata(md)
}

impl TableColumns {
    /// The table's schema (its columns by the table's names).
    pub fn schema(&self) -> SchemaRef {
        Arc::new(Schema::new(
            self.columns.iter().map(Column::field).collect::<Vec<_>>(),
        ))
    }

    /// How the data file at `path`, of schema `file` (as its reader yields it), makes the
    /// table's columns; refused naming the column and the file where it cannot.
    pub fn file(&self, path: &str, file: &Schema) -> Result<Arc<FileColumns>> {
        let by_names;
        let mapped;
        let mut lookup = file;
        let columns = if self.columns.iter().any(|c| matches!(c.key, Key::Id(_)))
            && !has_ids(file.fields())
        {
            if let Some(m) = &self.name_mapping {
                mapped = m.annotate(file);
                lookup = &mapped;
                &self.columns
            } else if !self.names_without_ids {
                return Err(Error::Schema {
                    path: path.to_string(),
                    detail: "the data file carries no field ids (PARQUET:field_id) and the \
                             table's columns are found by them (its schema changed): cannot \
                             tell which of its columns is which"
                        .into(),
                });
            } else {
                by_names = self
                    .columns
                    .iter()
                    .map(Column::by_names)
                    .collect::<Vec<_>>();
                &by_names
            }
        } else {
            &self.columns
        };
        let mut from = Vec::with_capacity(columns.len());
        for c in columns {
            // Found in `lookup` (the file with the ids a name mapping gives), read from `file`:
            // the same columns at the same places.
            from.push(match find(lookup.fields(), &c.key) {
                Some(i) => {
                    // (Its nested fields' ids too are the mapping's: `lookup`'s.)
                    let f = lookup.field(i);
                    Some((i, resolve(path, &c.name, f.data_type(), c)?))
                }
                // Not in the file: its default there, or null.
                None if c.nullable || c.default.is_some() => None,
                None => return Err(missing_required(path, &c.name)),
            });
        }
        Ok(Arc::new(FileColumns {
            path: path.to_string(),
            logical: self.schema().fields().clone(),
            file: file.fields().clone(),
            from,
            defaults: columns.iter().map(|c| c.default.clone()).collect(),
        }))
    }
}

fn missing_required(path: &str, column: &str) -> Error {
    Error::Schema {
        path: path.to_string(),
        detail: format!(
            "the table's column {column:?} is required (not nullable) and the data file lacks \
             it: no value to read"
        ),
    }
}

/// Whether any field, at any depth, carries a field id.
fn has_ids(fields: &Fields) -> bool {
    fields.iter().any(|f| {
        f.metadata().contains_key(FIELD_ID)
            || match f.data_type() {
                DataType::Struct(fs) => has_ids(fs),
                DataType::List(c)
                | DataType::LargeList(c)
                | DataType::FixedSizeList(c, _)
                | DataType::Map(c, _) => has_ids(&Fields::from(vec![c.clone()])),
                _ => false,
            }
    })
}

/// The index of the field `key` finds.
fn find(fields: &Fields, key: &Key) -> Option<usize> {
    fields.iter().position(|f| match key {
        Key::Name(n) => f.name() == n,
        Key::Id(id) => {
            f.metadata()
                .get(FIELD_ID)
                .and_then(|v| v.trim().parse::<i32>().ok())
                == Some(*id)
        }
    })
}

/// How a file's array becomes the table's.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Conv {
    /// Already the table's type.
    Same,
    /// Cast to the table's type (a widening or another encoding of the same type).
    Cast,
    /// A struct: per table field, the file's child and its conversion (`None`: all nulls).
    Struct(Vec<Option<(usize, Conv)>>),
    /// A list (of any Arrow list type in the file): its elements'.
    List(Box<Conv>),
    /// A map: its keys' and its values'.
    Map(Box<Conv>, Box<Conv>),
}

/// The conversion of a file's `ft` to the table column `c` (`name`: its dotted path).
fn resolve(path: &str, name: &str, ft: &DataType, c: &Column) -> Result<Conv> {
    let want = c.data_type();
    if ft == &want {
        return Ok(Conv::Same);
    }
    let refuse = |why: &str| Error::Schema {
        path: path.to_string(),
        detail: format!("column {name:?} is {ft} in the data file but {want} in the table: {why}"),
    };
    match (&c.kind, ft) {
        (Kind::Primitive(t), ft) => {
            if same_or_wider(ft, t) {
                Ok(Conv::Cast)
            } else {
                Err(refuse(
                    "not a widening the table format allows (int to long, float to double, a \
                     decimal's precision)",
                ))
            }
        }
        (Kind::Struct(cs), DataType::Struct(fs)) => {
            let mut out = Vec::with_capacity(cs.len());
            for child in cs {
                let dotted = format!("{name}.{}", child.name);
                out.push(match find(fs, &child.key) {
                    Some(i) => Some((i, resolve(path, &dotted, fs[i].data_type(), child)?)),
                    None if child.nullable => None,
                    None => return Err(missing_required(path, &dotted)),
                });
            }
            Ok(Conv::Struct(out))
        }
        (
            Kind::List(e),
            DataType::List(f) | DataType::LargeList(f) | DataType::FixedSizeList(f, _),
        ) => Ok(Conv::List(Box::new(resolve(
            path,
            &format!("{name}.element"),
            f.data_type(),
            e,
        )?))),
        (Kind::Map(k, v), DataType::Map(entries, _)) => {
            let DataType::Struct(kv) = entries.data_type() else {
                return Err(refuse("a map whose entries are not a struct"));
            };
            if kv.len() != 2 {
                return Err(refuse("a map whose entries are not key and value"));
            }
            Ok(Conv::Map(
                Box::new(resolve(path, &format!("{name}.key"), kv[0].data_type(), k)?),
                Box::new(resolve(
                    path,
                    &format!("{name}.value"),
                    kv[1].data_type(),
                    v,
                )?),
            ))
        }
        _ => Err(refuse("another kind of column")),
    }
}

/// Whether a file's values of type `ft` are values of the table's `t`: the same type stored
/// another way, or a widening Iceberg and Delta allow.
fn same_or_wider(ft: &DataType, t: &DataType) -> bool {
    use DataType as T;
    let int = |t: &T| match t {
        T::Int8 => Some(8),
        T::Int16 => Some(16),
        T::Int32 => Some(32),
        T::Int64 => Some(64),
        _ => None,
    };
    let float = |t: &T| match t {
        T::Float16 => Some(16),
        T::Float32 => Some(32),
        T::Float64 => Some(64),
        _ => None,
    };
    let decimal = |t: &T| match *t {
        T::Decimal32(p, s) | T::Decimal64(p, s) | T::Decimal128(p, s) | T::Decimal256(p, s) => {
            Some((p, s))
        }
        _ => None,
    };
    let string = |t: &T| matches!(t, T::Utf8 | T::LargeUtf8 | T::Utf8View);
    let binary = |t: &T| matches!(t, T::Binary | T::LargeBinary | T::BinaryView);
    if let T::Dictionary(_, v) = ft {
        return v.as_ref() == t || same_or_wider(v, t);
    }
    match (ft, t) {
        (T::Null, _) => true,
        (a, b) if int(a).is_some() && int(b).is_some() => int(a) <= int(b),
        (a, b) if float(a).is_some() && float(b).is_some() => float(a) <= float(b),
        (a, b) if decimal(a).is_some() && decimal(b).is_some() => {
            let ((p1, s1), (p2, s2)) = (
                decimal(a).unwrap_or_default(),
                decimal(b).unwrap_or_default(),
            );
            s1 == s2 && p1 <= p2
        }
        (a, b) if string(a) && string(b) => true,
        (a, b) if binary(a) && binary(b) => true,
        (T::Timestamp(..), T::Timestamp(..)) => true,
        (T::Date32 | T::Date64, T::Date32 | T::Date64) => true,
        (T::Time32(_) | T::Time64(_), T::Time32(_) | T::Time64(_)) => true,
        (T::FixedSizeBinary(a), T::FixedSizeBinary(b)) => a == b,
        _ => false,
    }
}

/// One data file's columns as the table's: resolved at planning time, carried by its splits.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FileColumns {
    path: String,
    /// The table's columns (top level).
    logical: Fields,
    /// The file's columns (top level), as its reader yields them.
    file: Fields,
    /// Per table column: the file's column and its conversion (`None`: the file lacks it).
    from: Vec<Option<(usize, Conv)>>,
    /// Per table column: its default (JSON) where the file lacks it.
    defaults: Vec<Option<String>>,
}

impl FileColumns {
    /// The file's columns to read for the table's columns of `schema` (a projection of the
    /// table's, by its names), in `schema`'s order, those the file lacks left out.
    pub fn file_schema(&self, schema: &Schema) -> Result<SchemaRef> {
        let mut fields = Vec::new();
        for f in schema.fields() {
            if let Some((i, _)) = self.source(f.name())? {
                fields.push(self.file[*i].clone());
            }
        }
        Ok(Arc::new(Schema::new(fields)))
    }

    /// Whether every table column is the file's column of the same name and type: the file
    /// reads as the table (what a filter's page pruning, by the file's names, needs).
    pub fn is_identity(&self) -> bool {
        self.from.len() == self.logical.len()
            && self.from.iter().zip(&self.logical).all(
                |(c, t)| matches!(c, Some((i, Conv::Same)) if self.file[*i].name() == t.name()),
            )
    }

    /// Where the table's column `name` comes from.
    fn source(&self, name: &str) -> Result<&Option<(usize, Conv)>> {
        Ok(&self.from[self.index(name)?])
    }

    fn index(&self, name: &str) -> Result<usize> {
        self.logical
            .iter()
            .position(|f| f.name() == name)
            .ok_or_else(|| {
                Error::Internal(format!("{}: the table has no column {name:?}", self.path))
            })
    }

    /// The one-row array the table's column `f` takes where the file lacks it (its default),
    /// or `None` (nulls).
    fn fill(&self, f: &Field) -> Result<Option<ArrayRef>> {
        let Some(text) = &self.defaults[self.index(f.name())?] else {
            return Ok(None);
        };
        let bad = |e: String| Error::Schema {
            path: self.path.clone(),
            detail: format!("the default of column {:?}: {e}", f.name()),
        };
        let v: serde_json::Value = serde_json::from_str(text).map_err(|e| bad(e.to_string()))?;
        default_array(f.data_type(), &v).map(Some).map_err(bad)
    }

    /// `inner` (yielding [`Self::file_schema`] of `schema`) with its batches as `schema`:
    /// columns renamed and converted, those the file lacks as nulls.
    pub fn reader(
        &self,
        inner: Box<dyn SplitReader>,
        schema: SchemaRef,
    ) -> Result<Box<dyn SplitReader>> {
        let mut cols = Vec::with_capacity(schema.fields().len());
        let mut fills = Vec::with_capacity(schema.fields().len());
        let mut at = 0;
        for f in schema.fields() {
            cols.push(match self.source(f.name())? {
                Some((_, conv)) => {
                    at += 1;
                    fills.push(None);
                    Some((at - 1, conv.clone()))
                }
                None => {
                    fills.push(self.fill(f)?);
                    None
                }
            });
        }
        Ok(Box::new(Mapped {
            inner,
            schema,
            cols,
            fills,
            path: self.path.clone(),
        }))
    }
}

/// A split reader whose batches are the table's columns (see [`FileColumns::reader`]).
struct Mapped {
    inner: Box<dyn SplitReader>,
    schema: SchemaRef,
    /// Per output column: the inner batch's column and its conversion, or `None` (nulls, or
    /// `fills`' value).
    cols: Vec<Option<(usize, Conv)>>,
    /// Per output column the file lacks: its default, one row (`None`: nulls).
    fills: Vec<Option<ArrayRef>>,
    path: String,
}

impl Mapped {
    fn as_table(&self, b: RecordBatch) -> Result<RecordBatch> {
        let n = b.num_rows();
        let mut out: Vec<ArrayRef> = Vec::with_capacity(self.cols.len());
        for ((f, c), fill) in self.schema.fields().iter().zip(&self.cols).zip(&self.fills) {
            out.push(match (c, fill) {
                (None, None) => new_null_array(f.data_type(), n),
                (None, Some(one)) => {
                    let zeros = arrow_array::UInt32Array::from(vec![0u32; n]);
                    arrow::compute::take(one, &zeros, None).map_err(|e| self.error(f.name(), e))?
                }
                (Some((i, conv)), _) => {
                    let a = b.columns().get(*i).ok_or_else(|| {
                        Error::Internal(format!("{}: reader yielded no column {i}", self.path))
                    })?;
                    convert(a, conv, f.data_type()).map_err(|e| self.error(f.name(), e))?
                }
            });
        }
        RecordBatch::try_new_with_options(
            self.schema.clone(),
            out,
            &arrow_array::RecordBatchOptions::new().with_row_count(Some(n)),
        )
        .map_err(|e| Error::Schema {
            path: self.path.clone(),
            detail: format!("its columns as the table's: {e}"),
        })
    }

    fn error(&self, column: &str, e: arrow_schema::ArrowError) -> Error {
        Error::Schema {
            path: self.path.clone(),
            detail: format!("column {column:?} as the table's type: {e}"),
        }
    }
}

/// `a` (a file's array) as the table's type `t`, by `conv`.
fn convert(
    a: &ArrayRef,
    conv: &Conv,
    t: &DataType,
) -> std::result::Result<ArrayRef, arrow_schema::ArrowError> {
    use arrow_schema::ArrowError;
    let wrong = || ArrowError::SchemaError(format!("{} where the plan has {t}", a.data_type()));
    match conv {
        Conv::Same => Ok(a.clone()),
        Conv::Cast => arrow::compute::cast(a, t),
        Conv::Struct(children) => {
            let DataType::Struct(fields) = t else {
                return Err(wrong());
            };
            let s = a.as_struct_opt().ok_or_else(wrong)?;
            let cols = fields
                .iter()
                .zip(children)
                .map(|(f, c)| match c {
                    None => Ok(new_null_array(f.data_type(), s.len())),
                    Some((i, conv)) => convert(s.column(*i), conv, f.data_type()),
                })
                .collect::<std::result::Result<Vec<_>, _>>()?;
            Ok(Arc::new(StructArray::try_new(
                fields.clone(),
                cols,
                s.nulls().cloned(),
            )?))
        }
        Conv::List(e) => {
            let DataType::List(field) = t else {
                return Err(wrong());
            };
            let values = |v: &ArrayRef| convert(v, e, field.data_type());
            match a.data_type() {
                DataType::List(_) => {
                    let l = a.as_list::<i32>();
                    Ok(Arc::new(ListArray::try_new(
                        field.clone(),
                        l.offsets().clone(),
                        values(l.values())?,
                        l.nulls().cloned(),
                    )?))
                }
                DataType::LargeList(_) => {
                    let l = a.as_list::<i64>();
                    let large = LargeListArray::try_new(
                        field.clone(),
                        l.offsets().clone(),
                        values(l.values())?,
                        l.nulls().cloned(),
                    )?;
                    arrow::compute::cast(&large, t)
                }
                DataType::FixedSizeList(_, n) => {
                    let l = a.as_fixed_size_list();
                    let fixed = FixedSizeListArray::try_new(
                        field.clone(),
                        *n,
                        values(l.values())?,
                        l.nulls().cloned(),
                    )?;
                    arrow::compute::cast(&fixed, t)
                }
                _ => Err(wrong()),
            }
        }
        Conv::Map(k, v) => {
            let DataType::Map(entries, sorted) = t else {
                return Err(wrong());
            };
            let DataType::Struct(kv) = entries.data_type() else {
                return Err(wrong());
            };
            let m = a.as_map_opt().ok_or_else(wrong)?;
            let keys = convert(m.keys(), k, kv[0].data_type())?;
            let values = convert(m.values(), v, kv[1].data_type())?;
            let e = StructArray::try_new(kv.clone(), vec![keys, values], None)?;
            Ok(Arc::new(MapArray::try_new(
                entries.clone(),
                m.offsets().clone(),
                e,
                m.nulls().cloned(),
                *sorted,
            )?))
        }
    }
}

impl Iterator for Mapped {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Self::Item> {
        let b = self.inner.next()?;
        Some(b.and_then(|b| self.as_table(b)))
    }
}

impl SplitReader for Mapped {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn skipped(&self) -> SkipStats {
        self.inner.skipped()
    }

    fn skipped_rows(&self) -> &[SkippedRows] {
        self.inner.skipped_rows()
    }

    fn skip_rows(&mut self, n: u64) -> u64 {
        self.inner.skip_rows(n)
    }
}

#[cfg(test)]
#[path = "mapping_tests.rs"]
mod tests;
