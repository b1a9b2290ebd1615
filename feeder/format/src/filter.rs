//! Row filters (`--filter EXPR`, `filter=`): a small SQL predicate over columns and partition
//! values, parsed with `sqlparser`, bound to the input's schema, evaluated on Arrow batches with
//! SQL's three-valued logic, and checked against statistics to decide units without reading
//! them.
//!
//! The grammar (docs/formats.md, "Filters"): comparisons (`=`, `!=`/`<>`, `<`, `<=`, `>`, `>=`)
//! between a column and a literal (either side), `[NOT] IN (...)`, `[NOT] BETWEEN a AND b`,
//! `IS [NOT] NULL`, `IS [NOT] TRUE|FALSE`, `AND`, `OR`, `NOT`, parentheses, and a boolean column
//! on its own. Literals: numbers, `'strings'`, `TRUE`/`FALSE`, `NULL`, `DATE '...'`,
//! `TIMESTAMP '...'`. Column names are top-level columns or partition keys; an unquoted name
//! that matches no column exactly matches one that differs only in case (as Spark resolves
//! them); `"quoted"` or `` `quoted` `` names match exactly.
//!
//! Type coercion: the literal takes the column's type (a string literal is parsed as a date,
//! a timestamp, a decimal or a number when the column is one), except where that would change
//! the comparison: an integer column compared with a fractional literal or one out of its
//! range, and every `float32` column, are compared as `float64`; a decimal column compared
//! with a literal of more fractional digits is compared as `float64`. A literal that cannot
//! take the column's type is an error naming both.
//!
//! Nulls: a comparison with a null (a null value, or the literal `NULL`) is unknown, `AND` /
//! `OR` / `NOT` are Kleene's, and a row passes only when the whole predicate is true (SQL's
//! `WHERE`).

use std::sync::Arc;

use arrow::compute::kernels::cmp;
use arrow::compute::{and_kleene, cast_with_options, is_null, not, or_kleene};
use arrow_array::{Array, ArrayRef, BooleanArray, RecordBatch, Scalar, StringArray};
use arrow_schema::{DataType, Field, Schema};
use sqlparser::ast::{self, BinaryOperator, Expr as Sql, UnaryOperator, Value};
use sqlparser::dialect::GenericDialect;
use sqlparser::parser::Parser;

use crate::{Error, Result};

/// A filter as the user wrote it, parsed (columns not yet resolved).
#[derive(Debug, Clone, PartialEq)]
pub struct Filter {
    text: String,
    expr: Expr,
}

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl Op {
    /// The operator with its operands swapped (`1 < x` is `x > 1`).
    fn flip(self) -> Self {
        match self {
            Op::Lt => Op::Gt,
            Op::Le => Op::Ge,
            Op::Gt => Op::Lt,
            Op::Ge => Op::Le,
            o => o,
        }
    }
}

/// A literal as written.
#[derive(Debug, Clone, PartialEq)]
enum Lit {
    Null,
    Bool(bool),
    /// A number, as written (`12`, `-3.5`, `1e3`).
    Number(String),
    Str(String),
}

/// A column reference.
#[derive(Debug, Clone, PartialEq)]
struct Col {
    name: String,
    quoted: bool,
}

#[derive(Debug, Clone, PartialEq)]
enum Expr {
    Cmp(Col, Op, Lit),
    In(Col, Vec<Lit>),
    IsNull(Col),
    Const(Option<bool>),
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    Not(Box<Expr>),
}

fn bad(text: &str, detail: impl std::fmt::Display) -> Error {
    Error::InvalidArgument(format!("filter {text:?}: {detail}"))
}

impl Filter {
    /// Parses `text`; an error says what is not understood.
    pub fn parse(text: &str) -> Result<Self> {
        let mut p = Parser::new(&GenericDialect {})
            .try_with_sql(text)
            .map_err(|e| bad(text, e))?;
        let sql = p.parse_expr().map_err(|e| bad(text, e))?;
        if p.peek_token().token != sqlparser::tokenizer::Token::EOF {
            return Err(bad(
                text,
                format!("unexpected {} after the predicate", p.peek_token()),
            ));
        }
        let expr = lower(text, &sql)?;
        Ok(Self {
            text: text.to_string(),
            expr,
        })
    }

    /// The filter as written.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Resolves the columns against `schema` (the input's columns and partition keys, before
    /// projection) and gives every literal its column's type.
    pub fn bind(&self, schema: &Schema) -> Result<Bound> {
        let mut b = Binder {
            text: &self.text,
            schema,
            cols: Vec::new(),
        };
        let node = b.bind(&self.expr)?;
        Ok(Bound {
            text: self.text.clone(),
            node,
            cols: b.cols,
        })
    }
}

/// The SQL syntax tree as the filter's own, or what in it is not supported.
fn lower(text: &str, e: &Sql) -> Result<Expr> {
    let unsupported = |what: &str| {
        bad(
            text,
            format!("{what} is not supported (in `{e}`); see docs/formats.md"),
        )
    };
    Ok(match e {
        Sql::Nested(inner) => lower(text, inner)?,
        Sql::Identifier(_) | Sql::CompoundIdentifier(_) => {
            Expr::Cmp(column(text, e)?, Op::Eq, Lit::Bool(true))
        }
        Sql::Value(_) | Sql::TypedString(_) => match literal(text, e)? {
            Lit::Null => Expr::Const(None),
            Lit::Bool(b) => Expr::Const(Some(b)),
            _ => return Err(unsupported("a literal on its own")),
        },
        Sql::UnaryOp {
            op: UnaryOperator::Not,
            expr,
        } => Expr::Not(Box::new(lower(text, expr)?)),
        Sql::BinaryOp { left, op, right } => match op {
            BinaryOperator::And => {
                Expr::And(Box::new(lower(text, left)?), Box::new(lower(text, right)?))
            }
            BinaryOperator::Or => {
                Expr::Or(Box::new(lower(text, left)?), Box::new(lower(text, right)?))
            }
            op => {
                let op = match op {
                    BinaryOperator::Eq => Op::Eq,
                    BinaryOperator::NotEq => Op::Ne,
                    BinaryOperator::Lt => Op::Lt,
                    BinaryOperator::LtEq => Op::Le,
                    BinaryOperator::Gt => Op::Gt,
                    BinaryOperator::GtEq => Op::Ge,
                    _ => return Err(unsupported(&format!("the operator {op}"))),
                };
                match (is_column(left), is_column(right)) {
                    (true, false) => Expr::Cmp(column(text, left)?, op, literal(text, right)?),
                    (false, true) => {
                        Expr::Cmp(column(text, right)?, op.flip(), literal(text, left)?)
                    }
                    (true, true) => return Err(unsupported("comparing two columns")),
                    (false, false) => return Err(unsupported("a comparison without a column")),
                }
            }
        },
        Sql::IsNull(x) => Expr::IsNull(column(text, x)?),
        Sql::IsNotNull(x) => Expr::Not(Box::new(Expr::IsNull(column(text, x)?))),
        Sql::IsTrue(x) | Sql::IsNotFalse(x) | Sql::IsFalse(x) | Sql::IsNotTrue(x) => {
            // Never unknown: `x IS TRUE` is false where `x` is null.
            let c = column(text, x)?;
            let v = matches!(e, Sql::IsTrue(_) | Sql::IsNotTrue(_));
            let is = Expr::And(
                Box::new(Expr::Not(Box::new(Expr::IsNull(c.clone())))),
                Box::new(Expr::Cmp(c, Op::Eq, Lit::Bool(v))),
            );
            if matches!(e, Sql::IsTrue(_) | Sql::IsFalse(_)) {
                is
            } else {
                Expr::Not(Box::new(is))
            }
        }
        Sql::In {
            expr,
            target: ast::InTarget::List(list),
            negated,
            ..
        } => {
            let c = column(text, expr)?;
            let lits = list
                .iter()
                .map(|l| literal(text, l))
                .collect::<Result<Vec<_>>>()?;
            if lits.is_empty() {
                return Err(bad(text, "IN () needs at least one value"));
            }
            let i = Expr::In(c, lits);
            if *negated {
                Expr::Not(Box::new(i))
            } else {
                i
            }
        }
        Sql::Between {
            expr,
            negated,
            low,
            high,
        } => {
            let c = column(text, expr)?;
            let b = Expr::And(
                Box::new(Expr::Cmp(c.clone(), Op::Ge, literal(text, low)?)),
                Box::new(Expr::Cmp(c, Op::Le, literal(text, high)?)),
            );
            if *negated {
                Expr::Not(Box::new(b))
            } else {
                b
            }
        }
        _ => return Err(unsupported("this expression")),
    })
}

fn is_column(e: &Sql) -> bool {
    match e {
        Sql::Nested(x) => is_column(x),
        Sql::Identifier(_) | Sql::CompoundIdentifier(_) => true,
        _ => false,
    }
}

fn column(text: &str, e: &Sql) -> Result<Col> {
    match e {
        Sql::Nested(x) => column(text, x),
        Sql::Identifier(i) => Ok(Col {
            name: i.value.clone(),
            quoted: i.quote_style.is_some(),
        }),
        Sql::CompoundIdentifier(parts) => Err(bad(
            text,
            format!(
                "`{e}`: fields of nested columns cannot be filtered on (a top-level column or \
                 partition key is needed; quote a name holding a dot: \"{}\")",
                parts
                    .iter()
                    .map(|p| p.value.as_str())
                    .collect::<Vec<_>>()
                    .join(".")
            ),
        )),
        other => Err(bad(text, format!("`{other}`: expected a column name"))),
    }
}

fn literal(text: &str, e: &Sql) -> Result<Lit> {
    let not_lit = || bad(text, format!("`{e}`: expected a literal"));
    match e {
        Sql::Nested(x) => literal(text, x),
        Sql::Value(v) => match &v.value {
            Value::Null => Ok(Lit::Null),
            Value::Boolean(b) => Ok(Lit::Bool(*b)),
            Value::Number(n, _) => Ok(Lit::Number(n.to_string())),
            Value::SingleQuotedString(s) => Ok(Lit::Str(s.clone())),
            _ => Err(not_lit()),
        },
        Sql::TypedString(t) => match &t.value.value {
            Value::SingleQuotedString(s) => Ok(Lit::Str(s.clone())),
            _ => Err(not_lit()),
        },
        Sql::UnaryOp {
            op: op @ (UnaryOperator::Minus | UnaryOperator::Plus),
            expr,
        } => match literal(text, expr)? {
            Lit::Number(n) if *op == UnaryOperator::Minus => {
                Ok(Lit::Number(match n.strip_prefix('-') {
                    Some(pos) => pos.to_string(),
                    None => format!("-{n}"),
                }))
            }
            Lit::Number(n) => Ok(Lit::Number(n)),
            _ => Err(not_lit()),
        },
        _ => Err(not_lit()),
    }
}

/// A filter bound to a schema: ready to evaluate on batches and statistics.
#[derive(Debug, Clone)]
pub struct Bound {
    text: String,
    node: Node,
    /// The columns it reads, by name as in the schema, in first-use order.
    cols: Vec<Field>,
}

/// A comparison's operands as evaluated: the column cast to `ty` (when it is not that type
/// already) against the literal, one value of `ty`.
#[derive(Debug, Clone)]
struct Operand {
    col: usize,
    /// The type the comparison is made in (`None`: the column's own).
    cast: Option<DataType>,
    /// One value (null for the literal `NULL`).
    lit: ArrayRef,
}

#[derive(Debug, Clone)]
enum Node {
    Cmp(Operand, Op),
    IsNull(usize),
    Const(Option<bool>),
    And(Box<Node>, Box<Node>),
    Or(Box<Node>, Box<Node>),
    Not(Box<Node>),
}

struct Binder<'a> {
    text: &'a str,
    schema: &'a Schema,
    cols: Vec<Field>,
}

impl Binder<'_> {
    fn bind(&mut self, e: &Expr) -> Result<Node> {
        Ok(match e {
            Expr::Cmp(c, op, lit) => {
                let i = self.column(c)?;
                Node::Cmp(self.operand(i, lit)?, *op)
            }
            Expr::In(c, lits) => {
                let i = self.column(c)?;
                let mut it = lits.iter();
                let first = it.next().ok_or_else(|| bad(self.text, "IN () is empty"))?;
                let mut n = Node::Cmp(self.operand(i, first)?, Op::Eq);
                for l in it {
                    n = Node::Or(
                        Box::new(n),
                        Box::new(Node::Cmp(self.operand(i, l)?, Op::Eq)),
                    );
                }
                n
            }
            Expr::IsNull(c) => Node::IsNull(self.column(c)?),
            Expr::Const(v) => Node::Const(*v),
            Expr::And(a, b) => Node::And(Box::new(self.bind(a)?), Box::new(self.bind(b)?)),
            Expr::Or(a, b) => Node::Or(Box::new(self.bind(a)?), Box::new(self.bind(b)?)),
            Expr::Not(a) => Node::Not(Box::new(self.bind(a)?)),
        })
    }

    /// The index (in `cols`) of column `c`, resolved in the schema.
    fn column(&mut self, c: &Col) -> Result<usize> {
        let fields = self.schema.fields();
        let found = match fields.iter().find(|f| f.name() == &c.name) {
            Some(f) => Some(f),
            None if !c.quoted => {
                let mut m = fields
                    .iter()
                    .filter(|f| f.name().eq_ignore_ascii_case(&c.name));
                match (m.next(), m.next()) {
                    (Some(f), None) => Some(f),
                    (Some(a), Some(b)) => {
                        return Err(bad(
                            self.text,
                            format!(
                                "{:?} matches both {:?} and {:?}: quote the name to say which",
                                c.name,
                                a.name(),
                                b.name()
                            ),
                        ))
                    }
                    _ => None,
                }
            }
            None => None,
        };
        let f = found.ok_or_else(|| {
            bad(
                self.text,
                format!(
                    "no column {:?}; the columns are {:?}",
                    c.name,
                    fields.iter().map(|f| f.name().as_str()).collect::<Vec<_>>()
                ),
            )
        })?;
        if let Some(i) = self.cols.iter().position(|x| x.name() == f.name()) {
            return Ok(i);
        }
        self.cols.push(f.as_ref().clone());
        Ok(self.cols.len() - 1)
    }

    /// Column `i` against `lit`, in the type the comparison is made in.
    fn operand(&self, i: usize, lit: &Lit) -> Result<Operand> {
        let f = &self.cols[i];
        let ty = f.data_type();
        let value_ty = match ty {
            DataType::Dictionary(_, v) => v.as_ref(),
            t => t,
        };
        let wrong = |why: &str| {
            bad(
                self.text,
                format!(
                    "column {:?} ({ty}) compared with {}: {why}",
                    f.name(),
                    show(lit)
                ),
            )
        };
        let (cast, text): (Option<DataType>, Option<String>) = match lit {
            Lit::Null => (None, None),
            Lit::Bool(b) => match value_ty {
                DataType::Boolean => (None, Some(b.to_string())),
                _ => return Err(wrong("a boolean needs a boolean column")),
            },
            Lit::Number(n) => {
                let f64_of = || {
                    n.parse::<f64>()
                        .map_err(|e| wrong(&format!("not a number: {e}")))
                };
                match value_ty {
                    t if t.is_integer() => match n.parse::<i128>() {
                        Ok(v) if fits(t, v) => (None, Some(n.clone())),
                        Ok(v) if i64::try_from(v).is_ok() && t != &DataType::UInt64 => {
                            (Some(DataType::Int64), Some(n.clone()))
                        }
                        _ => (Some(DataType::Float64), Some(f64_of()?.to_string())),
                    },
                    DataType::Float64 => (None, Some(f64_of()?.to_string())),
                    DataType::Float16 | DataType::Float32 => {
                        (Some(DataType::Float64), Some(f64_of()?.to_string()))
                    }
                    DataType::Decimal32(_, s)
                    | DataType::Decimal64(_, s)
                    | DataType::Decimal128(_, s)
                    | DataType::Decimal256(_, s) => {
                        let digits = n
                            .split_once('.')
                            .map(|(_, d)| d.trim_end_matches('0').len())
                            .unwrap_or(0);
                        if n.contains(['e', 'E']) || digits as i64 > i64::from(*s) {
                            (Some(DataType::Float64), Some(f64_of()?.to_string()))
                        } else {
                            (None, Some(n.clone()))
                        }
                    }
                    _ => return Err(wrong("a number needs a numeric column")),
                }
            }
            Lit::Str(s) => match value_ty {
                DataType::Utf8
                | DataType::LargeUtf8
                | DataType::Utf8View
                | DataType::Binary
                | DataType::LargeBinary
                | DataType::BinaryView
                | DataType::Date32
                | DataType::Date64
                | DataType::Timestamp(_, _) => (None, Some(s.clone())),
                t if t.is_numeric() => (None, Some(s.clone())),
                DataType::Boolean => (None, Some(s.clone())),
                _ => return Err(wrong("this column type cannot be compared")),
            },
        };
        let target = cast.clone().unwrap_or_else(|| value_ty.clone());
        if !comparable(&target) {
            return Err(wrong("this column type cannot be compared"));
        }
        let lit = match text {
            None => arrow_array::new_null_array(&target, 1),
            Some(t) => {
                let s: ArrayRef = Arc::new(StringArray::from(vec![t]));
                let opts = arrow::compute::CastOptions {
                    safe: false,
                    ..Default::default()
                };
                cast_with_options(&s, &target, &opts).map_err(|e| wrong(&e.to_string()))?
            }
        };
        // A dictionary column is compared through its values (the cmp kernels unpack it).
        let cast = match (cast, ty) {
            (None, DataType::Dictionary(..)) => None,
            (c, _) => c,
        };
        Ok(Operand { col: i, cast, lit })
    }
}

/// Whether integer `v` is a value of integer type `t`.
fn fits(t: &DataType, v: i128) -> bool {
    let (lo, hi): (i128, i128) = match t {
        DataType::Int8 => (i8::MIN.into(), i8::MAX.into()),
        DataType::Int16 => (i16::MIN.into(), i16::MAX.into()),
        DataType::Int32 => (i32::MIN.into(), i32::MAX.into()),
        DataType::Int64 => (i64::MIN.into(), i64::MAX.into()),
        DataType::UInt8 => (0, u8::MAX.into()),
        DataType::UInt16 => (0, u16::MAX.into()),
        DataType::UInt32 => (0, u32::MAX.into()),
        DataType::UInt64 => (0, u64::MAX.into()),
        _ => return false,
    };
    (lo..=hi).contains(&v)
}

/// Types the comparison kernels order.
fn comparable(t: &DataType) -> bool {
    t.is_primitive()
        || matches!(
            t,
            DataType::Boolean
                | DataType::Utf8
                | DataType::LargeUtf8
                | DataType::Utf8View
                | DataType::Binary
                | DataType::LargeBinary
                | DataType::BinaryView
        )
}

fn show(l: &Lit) -> String {
    match l {
        Lit::Null => "NULL".into(),
        Lit::Bool(b) => b.to_string().to_uppercase(),
        Lit::Number(n) => n.clone(),
        Lit::Str(s) => format!("'{s}'"),
    }
}

impl Bound {
    /// The filter as written.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The columns it reads (as in the schema it was bound to).
    pub fn columns(&self) -> &[Field] {
        &self.cols
    }

    /// Which rows of `batch` pass: true where the predicate is true (false where it is false
    /// or unknown). `batch` holds every column of [`Bound::columns`], found by name.
    pub fn eval(&self, batch: &RecordBatch) -> Result<BooleanArray> {
        let cols = self
            .cols
            .iter()
            .map(|f| {
                batch.column_by_name(f.name()).cloned().ok_or_else(|| {
                    Error::Internal(format!("filter: the batch has no column {:?}", f.name()))
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let v = eval(&self.node, &cols, batch.num_rows())
            .map_err(|e| Error::external(format!("evaluating the filter {:?}", self.text), e))?;
        Ok(match v.null_count() {
            0 => v,
            _ => arrow::compute::prep_null_mask_filter(&v),
        })
    }

    /// What the predicate can be on a unit of `rows` rows whose columns have the statistics
    /// `stats` gives (by column name; `None`: nothing known).
    pub fn possible(&self, rows: u64, stats: &dyn Fn(&Field) -> Option<ColumnStats>) -> Possible {
        let stats: Vec<Option<ColumnStats>> = self.cols.iter().map(stats).collect();
        possible(&self.node, rows, &stats)
    }
}

fn eval(
    n: &Node,
    cols: &[ArrayRef],
    rows: usize,
) -> std::result::Result<BooleanArray, arrow_schema::ArrowError> {
    Ok(match n {
        Node::Cmp(o, op) => {
            let col = match &o.cast {
                Some(t) => cast_with_options(&cols[o.col], t, &Default::default())?,
                None => cols[o.col].clone(),
            };
            compare(&col, *op, &o.lit)?
        }
        Node::IsNull(i) => is_null(&cols[*i])?,
        Node::Const(v) => BooleanArray::from(vec![*v; rows]),
        Node::And(a, b) => and_kleene(&eval(a, cols, rows)?, &eval(b, cols, rows)?)?,
        Node::Or(a, b) => or_kleene(&eval(a, cols, rows)?, &eval(b, cols, rows)?)?,
        Node::Not(a) => not(&eval(a, cols, rows)?)?,
    })
}

fn compare(
    col: &dyn Array,
    op: Op,
    lit: &ArrayRef,
) -> std::result::Result<BooleanArray, arrow_schema::ArrowError> {
    let s = Scalar::new(lit.clone());
    match op {
        Op::Eq => cmp::eq(&col, &s),
        Op::Ne => cmp::neq(&col, &s),
        Op::Lt => cmp::lt(&col, &s),
        Op::Le => cmp::lt_eq(&col, &s),
        Op::Gt => cmp::gt(&col, &s),
        Op::Ge => cmp::gt_eq(&col, &s),
    }
}

#[path = "filter_stats.rs"]
mod stats;
use stats::possible;
pub use stats::{ColumnStats, Possible};

#[cfg(test)]
#[path = "filter_tests.rs"]
mod tests;
