//! A bound filter judged on a unit's statistics: the truth values it can take there.

use arrow::compute::cast_with_options;
use arrow_array::{Array, ArrayRef};
use arrow_schema::DataType;

use super::{compare, Node, Op};

/// What a predicate can be on the rows of a unit, from its statistics: a set of `TRUE`,
/// `FALSE` and `UNKNOWN` (null).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Possible(u8);

impl Possible {
    const T: u8 = 1;
    const F: u8 = 2;
    const N: u8 = 4;
    const ALL: Possible = Possible(7);

    /// No row of the unit passes.
    pub fn none_pass(self) -> bool {
        self.0 & Self::T == 0
    }

    /// Every row of the unit passes.
    pub fn all_pass(self) -> bool {
        self.0 == Self::T
    }

    fn has(self, v: u8) -> bool {
        self.0 & v != 0
    }
}

/// Statistics of one column over a unit (a row group, a stripe, a file, a partition), as
/// single values of the column's type; `None`: not known.
#[derive(Debug, Clone, Default)]
pub struct ColumnStats {
    /// A lower bound of the non-null values.
    pub min: Option<ArrayRef>,
    /// An upper bound of the non-null values.
    pub max: Option<ArrayRef>,
    /// Nulls among the unit's rows.
    pub nulls: Option<u64>,
}

/// `a op b` on single values (`None`: unknown, e.g. a cast that failed).
fn holds(a: &ArrayRef, op: Op, b: &ArrayRef) -> Option<bool> {
    let r = compare(a.as_ref(), op, b).ok()?;
    (r.len() == 1 && r.is_valid(0)).then(|| r.value(0))
}

pub(super) fn possible(n: &Node, rows: u64, stats: &[Option<ColumnStats>]) -> Possible {
    use Possible as P;
    match n {
        Node::Const(Some(true)) => P(P::T),
        Node::Const(Some(false)) => P(P::F),
        Node::Const(None) => P(P::N),
        Node::IsNull(i) => match stats[*i].as_ref().and_then(|s| s.nulls) {
            Some(0) => P(P::F),
            Some(n) if n >= rows => P(P::T),
            _ => P(P::T | P::F),
        },
        Node::Cmp(o, op) => {
            if o.lit.is_null(0) {
                return P(P::N);
            }
            let Some(s) = stats[o.col].as_ref() else {
                return P::ALL;
            };
            let mut out = match s.nulls {
                Some(0) => 0,
                Some(n) if n >= rows => return P(P::N),
                _ => P::N,
            };
            let bound = |v: &Option<ArrayRef>| -> Option<ArrayRef> {
                let v = v.as_ref()?;
                if v.len() != 1 || v.is_null(0) {
                    return None;
                }
                match &o.cast {
                    Some(t) => cast_with_options(v, t, &Default::default())
                        .ok()
                        .filter(|c| c.is_valid(0)),
                    None => Some(v.clone()),
                }
            };
            let (lo, mut hi) = (bound(&s.min), bound(&s.max));
            let target = o.lit.data_type();
            if matches!(
                target,
                DataType::Float16 | DataType::Float32 | DataType::Float64
            ) {
                // NaN orders above every number and is left out of statistics' maxima.
                hi = None;
            }
            let lit = &o.lit;
            // `None`: not known, so possible.
            let t = |x: Option<bool>| x.unwrap_or(true);
            let (can_t, can_f) = match op {
                Op::Eq => (
                    t(lo.as_ref().and_then(|l| holds(l, Op::Le, lit)))
                        && t(hi.as_ref().and_then(|h| holds(h, Op::Ge, lit))),
                    !(lo.as_ref().and_then(|l| holds(l, Op::Eq, lit)) == Some(true)
                        && hi.as_ref().and_then(|h| holds(h, Op::Eq, lit)) == Some(true)),
                ),
                Op::Ne => (
                    !(lo.as_ref().and_then(|l| holds(l, Op::Eq, lit)) == Some(true)
                        && hi.as_ref().and_then(|h| holds(h, Op::Eq, lit)) == Some(true)),
                    t(lo.as_ref().and_then(|l| holds(l, Op::Le, lit)))
                        && t(hi.as_ref().and_then(|h| holds(h, Op::Ge, lit))),
                ),
                Op::Lt => (
                    t(lo.as_ref().and_then(|l| holds(l, Op::Lt, lit))),
                    t(hi.as_ref().and_then(|h| holds(h, Op::Ge, lit))),
                ),
                Op::Le => (
                    t(lo.as_ref().and_then(|l| holds(l, Op::Le, lit))),
                    t(hi.as_ref().and_then(|h| holds(h, Op::Gt, lit))),
                ),
                Op::Gt => (
                    t(hi.as_ref().and_then(|h| holds(h, Op::Gt, lit))),
                    t(lo.as_ref().and_then(|l| holds(l, Op::Le, lit))),
                ),
                Op::Ge => (
                    t(hi.as_ref().and_then(|h| holds(h, Op::Ge, lit))),
                    t(lo.as_ref().and_then(|l| holds(l, Op::Lt, lit))),
                ),
            };
            if can_t {
                out |= P::T;
            }
            if can_f {
                out |= P::F;
            }
            P(out)
        }
        Node::Not(a) => {
            let a = possible(a, rows, stats);
            let mut out = a.0 & P::N;
            if a.has(P::T) {
                out |= P::F;
            }
            if a.has(P::F) {
                out |= P::T;
            }
            P(out)
        }
        Node::And(a, b) => {
            let (a, b) = (possible(a, rows, stats), possible(b, rows, stats));
            let mut out = 0;
            if a.has(P::T) && b.has(P::T) {
                out |= P::T;
            }
            if a.has(P::F) || b.has(P::F) {
                out |= P::F;
            }
            if (a.has(P::N) && b.has(P::T | P::N)) || (b.has(P::N) && a.has(P::T)) {
                out |= P::N;
            }
            P(out)
        }
        Node::Or(a, b) => {
            let (a, b) = (possible(a, rows, stats), possible(b, rows, stats));
            let mut out = 0;
            if a.has(P::T) || b.has(P::T) {
                out |= P::T;
            }
            if a.has(P::F) && b.has(P::F) {
                out |= P::F;
            }
            if (a.has(P::N) && b.has(P::F | P::N)) || (b.has(P::N) && a.has(P::F)) {
                out |= P::N;
            }
            P(out)
        }
    }
}
