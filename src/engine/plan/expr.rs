//! Per-row expressions of one query: the index in floating time, table columns, timeseries
//! fields, sources and macros as DataFusion `Expr`s, and the checked WHERE tree translated node
//! by node (never through SQL text).
//!
//! Decision: `source_workout_id` and `source_sport` do not exist on summary tables; there they
//! are null.

use chrono_tz::Tz;
use datafusion::arrow::datatypes::DataType;
use datafusion::common::{Column, ScalarValue};
use datafusion::logical_expr::{Between, Operator, binary_expr, case, cast, ident};
use datafusion::prelude::{Expr, in_list, lit};

use crate::schema::{Kind, TIMEZONE_OFFSET, Table};

use super::list_reduce::ListReduce;
use super::macros::{MacroArgs, SleepMacro};
use super::udf::{FloatingTime, floating_type};
use crate::engine::lang::request::{Operand, QuerySource, ValueMacro};
use crate::engine::lang::where_clause::{CmpOp, Literal, WhereExpr};
use crate::engine::time;

/// A column by exact name (names may contain dots).
pub fn column(name: &str) -> Expr {
    Expr::Column(Column::from_name(name))
}

/// Builds the per-row expressions of one query.
pub struct RowExprs<'a> {
    /// What the query reads.
    pub source: &'a QuerySource,
    /// The user's fallback zone.
    pub zone: Option<Tz>,
}

impl RowExprs<'_> {
    fn table(&self) -> Option<Table> {
        match self.source {
            QuerySource::Table(t) => Some(*t),
            QuerySource::Timeseries(_) | QuerySource::Derived(_) => None,
        }
    }

    fn multi(&self) -> bool {
        matches!(self.source, QuerySource::Timeseries(rs) if rs.len() > 1)
    }

    /// An instant column in floating time (profile instants stay UTC).
    pub fn instant(&self, name: &str) -> Expr {
        match self.table() {
            Some(Table::Profile) => ident(name),
            Some(t) if !t.has_timezone_offset() => {
                FloatingTime::call(self.zone, ident(name), lit(ScalarValue::Int32(None)))
            }
            _ => FloatingTime::call(self.zone, ident(name), ident(TIMEZONE_OFFSET)),
        }
    }

    /// The index as a floating timestamp: what windows, buckets and ordering use.
    pub fn index_ts(&self) -> Expr {
        if let QuerySource::Derived(d) = self.source {
            return cast(ident(d.index_column()), floating_type());
        }
        match self.table() {
            None => self.instant("timestamp"),
            Some(t @ (Table::Activity | Table::Meal | Table::MenstrualCycle | Table::Profile)) => {
                cast(ident(t.index_column()), floating_type())
            }
            Some(t) => self.instant(t.index_column()),
        }
    }

    /// The index as it is output: a date, a floating datetime or (profile) a UTC datetime.
    pub fn index_out(&self) -> Expr {
        if let QuerySource::Derived(d) = self.source {
            return ident(d.index_column());
        }
        match self.table() {
            Some(t @ (Table::Activity | Table::Meal | Table::MenstrualCycle | Table::Profile)) => {
                ident(t.index_column())
            }
            _ => self.index_ts(),
        }
    }

    /// A per-row value in its output type.
    pub fn operand(&self, op: &Operand) -> Expr {
        match op {
            Operand::Column(_, name, Kind::Instant) => self.instant(name),
            Operand::Column(_, name, _) | Operand::Derived(_, name, _) => ident(*name),
            Operand::Field(r, f) => {
                let base = self.field(f);
                if self.multi() {
                    case(ident("resource"))
                        .when(lit(r.name), base)
                        .end()
                        .unwrap_or_else(|_| lit(ScalarValue::Null))
                } else {
                    base
                }
            }
            Operand::Index => self.index_out(),
            Operand::Source(s)
                if !matches!(self.source, QuerySource::Timeseries(_))
                    && matches!(*s, "source_workout_id" | "source_sport") =>
            {
                lit(ScalarValue::Utf8(None))
            }
            Operand::Source(s) => ident(*s),
            Operand::Macro(m) => self.sleep_macro(*m),
            Operand::Subquery(sq) => {
                let predicate = sq.filter.as_ref().map(|w| self.where_expr(w));
                ListReduce::call(sq, predicate, ident(sq.list.name))
            }
            // Only a subquery's where names element fields: a column of its element batch.
            Operand::ElementField(f, _) => column(f),
        }
    }

    fn field(&self, f: &str) -> Expr {
        if f == "timezone_offset" {
            cast(ident(f), DataType::Int64)
        } else {
            ident(f)
        }
    }

    fn sleep_macro(&self, m: ValueMacro) -> Expr {
        let start = || self.instant("session_start");
        let end = || self.instant("session_end");
        let args = match m {
            ValueMacro::Chronotype => MacroArgs::Chronotype(start(), end()),
            ValueMacro::AsleepAt => MacroArgs::AsleepAt(start(), ident("latency_second")),
            ValueMacro::AwakeAt => MacroArgs::AwakeAt(
                end(),
                ident("hypnogram"),
                ident("hypnogram_interval_second"),
            ),
            ValueMacro::Awakenings => MacroArgs::Awakenings(ident("hypnogram")),
            ValueMacro::SleepScore => MacroArgs::SleepScore(
                [
                    "duration_second",
                    "stage_asleep_second",
                    "efficiency",
                    "latency_second",
                    "stage_deep_second",
                    "stage_rem_second",
                    "hypnogram",
                ]
                .into_iter()
                .map(ident)
                .collect(),
            ),
        };
        SleepMacro::call(args)
    }

    /// A checked WHERE tree as an expression. Timeseries fields are the row's own field
    /// (whatever its resource); instants compare in floating time (profile: UTC wall time).
    pub fn where_expr(&self, w: &WhereExpr) -> Expr {
        let b = |x: &WhereExpr| Box::new(self.where_expr(x));
        match w {
            WhereExpr::Column(Operand::Field(_, f)) => self.field(f),
            WhereExpr::Column(Operand::Column(Table::Profile, name, Kind::Instant)) => {
                cast(ident(*name), floating_type())
            }
            WhereExpr::Column(op) => self.operand(op),
            WhereExpr::Literal(l) => literal(l),
            WhereExpr::Compare(op, a, c) => {
                binary_expr(self.where_expr(a), cmp(*op), self.where_expr(c))
            }
            WhereExpr::And(a, c) => self.where_expr(a).and(self.where_expr(c)),
            WhereExpr::Or(a, c) => self.where_expr(a).or(self.where_expr(c)),
            WhereExpr::Not(a) => Expr::Not(b(a)),
            WhereExpr::IsNull(a, false) => Expr::IsNull(b(a)),
            WhereExpr::IsNull(a, true) => Expr::IsNotNull(b(a)),
            WhereExpr::InList(a, list, negated) => in_list(
                self.where_expr(a),
                list.iter().map(|x| self.where_expr(x)).collect(),
                *negated,
            ),
            WhereExpr::Between(a, lo, hi, negated) => {
                Expr::Between(Between::new(b(a), *negated, b(lo), b(hi)))
            }
        }
    }
}

fn cmp(op: CmpOp) -> Operator {
    match op {
        CmpOp::Eq => Operator::Eq,
        CmpOp::NotEq => Operator::NotEq,
        CmpOp::Lt => Operator::Lt,
        CmpOp::LtEq => Operator::LtEq,
        CmpOp::Gt => Operator::Gt,
        CmpOp::GtEq => Operator::GtEq,
    }
}

/// A floating timestamp literal.
pub fn floating_lit(micros: i64) -> Expr {
    lit(ScalarValue::TimestampMicrosecond(Some(micros), None))
}

fn literal(l: &Literal) -> Expr {
    match l {
        Literal::Null => lit(ScalarValue::Null),
        Literal::Bool(b) => lit(*b),
        Literal::Int(i) => lit(*i),
        Literal::Float(f) => lit(*f),
        Literal::Str(s) => lit(s.as_str()),
        Literal::Date(d) => {
            let days =
                time::micros(d.and_time(chrono::NaiveTime::MIN)).div_euclid(time::MICROS_PER_DAY);
            lit(ScalarValue::Date32(i32::try_from(days).ok()))
        }
        Literal::DateTime(t) => floating_lit(time::micros(*t)),
    }
}
