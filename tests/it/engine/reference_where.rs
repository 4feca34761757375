//! WHERE in the reference evaluator: the checked tree evaluated row by row with SQL's
//! three-valued logic (NULL compares to nothing; `NOT NULL` is NULL; `IN` with a NULL item and
//! no match is NULL).

use std::cmp::Ordering;

use wearhouse::engine::{CmpOp, Literal, Operand, WhereExpr};
use wearhouse::schema::{Kind, Table};

use super::data::Row;
use super::reference::{Ctx, RV, cmp_rv};

impl Ctx<'_> {
    pub fn where_value(&self, row: &Row, w: &WhereExpr) -> RV {
        let b = |v: Option<bool>| v.map_or(RV::Null, RV::B);
        match w {
            WhereExpr::Column(Operand::Field(_, f)) => self.column(row, f),
            WhereExpr::Column(Operand::Column(Table::Profile, name, Kind::Instant)) => {
                match self.instant(row, name) {
                    RV::Utc(t) => RV::Floating(t),
                    other => other,
                }
            }
            WhereExpr::Column(op) => self.operand(row, op),
            WhereExpr::Literal(l) => match l {
                Literal::Null => RV::Null,
                Literal::Bool(x) => RV::B(*x),
                Literal::Int(i) => RV::I(*i),
                Literal::Float(f) => RV::F(*f),
                Literal::Str(s) => RV::S(s.clone()),
                Literal::Date(d) => RV::Date(*d),
                Literal::DateTime(t) => RV::Floating(*t),
            },
            WhereExpr::Compare(op, x, y) => {
                let (x, y) = (self.where_value(row, x), self.where_value(row, y));
                b(cmp_rv(&x, &y).map(|o| match op {
                    CmpOp::Eq => o == Ordering::Equal,
                    CmpOp::NotEq => o != Ordering::Equal,
                    CmpOp::Lt => o == Ordering::Less,
                    CmpOp::LtEq => o != Ordering::Greater,
                    CmpOp::Gt => o == Ordering::Greater,
                    CmpOp::GtEq => o != Ordering::Less,
                }))
            }
            WhereExpr::And(x, y) => b(and(
                truth(&self.where_value(row, x)),
                truth(&self.where_value(row, y)),
            )),
            WhereExpr::Or(x, y) => b(not(and(
                not(truth(&self.where_value(row, x))),
                not(truth(&self.where_value(row, y))),
            ))),
            WhereExpr::Not(x) => b(not(truth(&self.where_value(row, x)))),
            WhereExpr::IsNull(x, negated) => {
                RV::B((self.where_value(row, x) == RV::Null) != *negated)
            }
            WhereExpr::InList(x, list, negated) => {
                let v = self.where_value(row, x);
                let mut result = Some(false);
                for item in list {
                    match cmp_rv(&v, &self.where_value(row, item)) {
                        Some(Ordering::Equal) => {
                            result = Some(true);
                            break;
                        }
                        Some(_) => {}
                        None => result = None,
                    }
                }
                b(if *negated { not(result) } else { result })
            }
            WhereExpr::Between(x, lo, hi, negated) => {
                let v = self.where_value(row, x);
                let ge = cmp_rv(&v, &self.where_value(row, lo)).map(|o| o != Ordering::Less);
                let le = cmp_rv(&v, &self.where_value(row, hi)).map(|o| o != Ordering::Greater);
                let r = and(ge, le);
                b(if *negated { not(r) } else { r })
            }
        }
    }
}

pub fn truth(v: &RV) -> Option<bool> {
    match v {
        RV::B(b) => Some(*b),
        _ => None,
    }
}
fn not(v: Option<bool>) -> Option<bool> {
    v.map(|b| !b)
}
fn and(a: Option<bool>, b: Option<bool>) -> Option<bool> {
    match (a, b) {
        (Some(false), _) | (_, Some(false)) => Some(false),
        (Some(true), Some(true)) => Some(true),
        _ => None,
    }
}
