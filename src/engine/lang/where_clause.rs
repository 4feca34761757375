//! WHERE (§2.4): the string is parsed by `sqlparser` and every node is checked and translated
//! into a typed [`WhereExpr`]; nothing of the user's text ever reaches a SQL planner.
//!
//! Decisions where the spec is silent: identifiers may be quoted (`"value"`) or bare, both
//! case-sensitive; a unary minus is allowed on number literals only; comparing a column with
//! `NULL` is allowed and, as in SQL, never true; a string literal compared with a datetime may
//! also be a bare date (read as 00:00:00).

use chrono::{NaiveDate, NaiveDateTime};
use datafusion::sql::sqlparser::ast::{
    BinaryOperator, Expr as Sql, UnaryOperator, Value as SqlValue,
};
use datafusion::sql::sqlparser::dialect::GenericDialect;
use datafusion::sql::sqlparser::parser::Parser;
use datafusion::sql::sqlparser::tokenizer::Token;

use super::request::{Operand, ValueType};

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CmpOp {
    /// `=`
    Eq,
    /// `!=` or `<>`
    NotEq,
    /// `<`
    Lt,
    /// `<=`
    LtEq,
    /// `>`
    Gt,
    /// `>=`
    GtEq,
}

/// A checked literal, already converted to the type it is compared with.
#[derive(Debug, Clone, PartialEq)]
pub enum Literal {
    /// `NULL`
    Null,
    /// `TRUE` / `FALSE`
    Bool(bool),
    /// An integer.
    Int(i64),
    /// A float.
    Float(f64),
    /// A string.
    Str(String),
    /// A string read as a date.
    Date(NaiveDate),
    /// A string read as a naive (floating or UTC) datetime.
    DateTime(NaiveDateTime),
}

/// A checked WHERE expression.
#[derive(Debug, Clone, PartialEq)]
pub enum WhereExpr {
    /// A per-row value of the query's table.
    Column(Operand),
    /// A literal.
    Literal(Literal),
    /// `a op b`.
    Compare(CmpOp, Box<WhereExpr>, Box<WhereExpr>),
    /// `a AND b`.
    And(Box<WhereExpr>, Box<WhereExpr>),
    /// `a OR b`.
    Or(Box<WhereExpr>, Box<WhereExpr>),
    /// `NOT a`.
    Not(Box<WhereExpr>),
    /// `a IS [NOT] NULL` (the flag is `negated`).
    IsNull(Box<WhereExpr>, bool),
    /// `a [NOT] IN (list)`.
    InList(Box<WhereExpr>, Vec<WhereExpr>, bool),
    /// `a [NOT] BETWEEN low AND high`.
    Between(Box<WhereExpr>, Box<WhereExpr>, Box<WhereExpr>, bool),
}

/// Resolves an identifier to a per-row value and its type.
pub(crate) trait Resolve {
    /// The value named `ident`, if the query may use it.
    fn resolve(&self, ident: &str) -> Option<(Operand, ValueType)>;
    /// The names allowed, for messages.
    fn names(&self) -> Vec<String>;
}

#[derive(Debug, Clone, PartialEq)]
enum Ty {
    Null,
    Known(ValueType),
    StrLit(String),
}

/// Parses and checks `text`; the error is the message of a 422 at the `where` location.
pub(crate) fn parse_where(text: &str, resolver: &dyn Resolve) -> Result<WhereExpr, String> {
    let dialect = GenericDialect {};
    let mut parser = Parser::new(&dialect)
        .try_with_sql(text)
        .map_err(|e| format!("cannot parse where: {e}"))?;
    let sql = parser.parse_expr().map_err(|e| {
        let msg = e.to_string();
        if msg.contains("Line:") {
            format!("cannot parse where: {msg}")
        } else {
            // sqlparser gives no position at the end of input: name it.
            let end = text.chars().count() + 1;
            format!("cannot parse where: {msg} at character {end} (end of input)")
        }
    })?;
    let next = parser.peek_token();
    if next.token != Token::EOF {
        return Err(format!(
            "cannot parse where: unexpected {} at Line: {}, Column: {}; expected one boolean expression",
            next.token, next.span.start.line, next.span.start.column
        ));
    }
    let (expr, ty) = check(&sql, resolver)?;
    match ty {
        Ty::Known(ValueType::Bool) | Ty::Null => Ok(expr),
        _ => Err(format!("where must be a boolean expression, found `{sql}`")),
    }
}

fn construct(e: &Sql) -> String {
    match e {
        Sql::Function(f) => format!("function call {}()", f.name),
        Sql::Like { .. } | Sql::ILike { .. } => "LIKE".into(),
        Sql::Cast { .. } => "cast".into(),
        Sql::Subquery(_) | Sql::Exists { .. } | Sql::InSubquery { .. } => "subquery".into(),
        Sql::BinaryOp { op, .. } => format!("operator {op}"),
        Sql::UnaryOp { op, .. } => format!("operator {op}"),
        Sql::CompoundIdentifier(_) => format!("qualified name {e}"),
        _ => format!("`{e}`"),
    }
}

fn unsupported(e: &Sql) -> String {
    format!(
        "unsupported construct in where: {}; allowed: comparisons, AND, OR, NOT, IS [NOT] NULL, \
         [NOT] IN (...), BETWEEN, literals and column names",
        construct(e)
    )
}

fn number(s: &str, negative: bool) -> Result<(WhereExpr, Ty), String> {
    let lit = if let Ok(i) = s.parse::<i64>() {
        Literal::Int(if negative { -i } else { i })
    } else {
        match s.parse::<f64>() {
            Ok(f) if f.is_finite() => Literal::Float(if negative { -f } else { f }),
            _ => return Err(format!("invalid number literal {s} in where")),
        }
    };
    let t = if matches!(lit, Literal::Int(_)) {
        ValueType::Int
    } else {
        ValueType::Float
    };
    Ok((WhereExpr::Literal(lit), Ty::Known(t)))
}

fn check(e: &Sql, r: &dyn Resolve) -> Result<(WhereExpr, Ty), String> {
    match e {
        Sql::Nested(inner) => check(inner, r),
        Sql::Identifier(id) => match r.resolve(&id.value) {
            Some((op, t)) => Ok((WhereExpr::Column(op), Ty::Known(t))),
            None => Err(format!(
                "unknown identifier \"{}\" in where; expected one of: {}",
                id.value,
                r.names().join(", ")
            )),
        },
        Sql::Value(v) => match &v.value {
            SqlValue::Number(n, _) => number(&n.to_string(), false),
            SqlValue::SingleQuotedString(s) => Ok((
                WhereExpr::Literal(Literal::Str(s.clone())),
                Ty::StrLit(s.clone()),
            )),
            SqlValue::Boolean(b) => Ok((
                WhereExpr::Literal(Literal::Bool(*b)),
                Ty::Known(ValueType::Bool),
            )),
            SqlValue::Null => Ok((WhereExpr::Literal(Literal::Null), Ty::Null)),
            other => Err(format!(
                "unsupported literal {other} in where; expected a number, a single-quoted string, TRUE, FALSE or NULL"
            )),
        },
        Sql::UnaryOp {
            op: UnaryOperator::Minus,
            expr,
        } => match expr.as_ref() {
            Sql::Value(v) => match &v.value {
                SqlValue::Number(n, _) => number(&n.to_string(), true),
                _ => Err(unsupported(e)),
            },
            _ => Err(unsupported(e)),
        },
        Sql::UnaryOp {
            op: UnaryOperator::Not,
            expr,
        } => {
            let (x, t) = check(expr, r)?;
            boolean(&t, expr)?;
            Ok((WhereExpr::Not(Box::new(x)), Ty::Known(ValueType::Bool)))
        }
        Sql::BinaryOp { left, op, right } => {
            let cmp = match op {
                BinaryOperator::Eq => Some(CmpOp::Eq),
                BinaryOperator::NotEq => Some(CmpOp::NotEq),
                BinaryOperator::Lt => Some(CmpOp::Lt),
                BinaryOperator::LtEq => Some(CmpOp::LtEq),
                BinaryOperator::Gt => Some(CmpOp::Gt),
                BinaryOperator::GtEq => Some(CmpOp::GtEq),
                _ => None,
            };
            if let Some(cmp) = cmp {
                let (a, b) = comparable(left, right, r)?;
                return Ok((
                    WhereExpr::Compare(cmp, Box::new(a), Box::new(b)),
                    Ty::Known(ValueType::Bool),
                ));
            }
            let logical = matches!(op, BinaryOperator::And | BinaryOperator::Or);
            if !logical {
                return Err(unsupported(e));
            }
            let (a, ta) = check(left, r)?;
            boolean(&ta, left)?;
            let (b, tb) = check(right, r)?;
            boolean(&tb, right)?;
            let (a, b) = (Box::new(a), Box::new(b));
            let x = if *op == BinaryOperator::And {
                WhereExpr::And(a, b)
            } else {
                WhereExpr::Or(a, b)
            };
            Ok((x, Ty::Known(ValueType::Bool)))
        }
        Sql::IsNull(x) | Sql::IsNotNull(x) => {
            let (a, _) = check(x, r)?;
            Ok((
                WhereExpr::IsNull(Box::new(a), matches!(e, Sql::IsNotNull(_))),
                Ty::Known(ValueType::Bool),
            ))
        }
        Sql::InList {
            expr,
            list,
            negated,
        } => {
            let mut items = Vec::with_capacity(list.len());
            let mut subject = None;
            for item in list {
                let (a, b) = comparable(expr, item, r)?;
                subject.get_or_insert(a);
                items.push(b);
            }
            let subject = match subject {
                Some(s) => s,
                None => check(expr, r)?.0,
            };
            Ok((
                WhereExpr::InList(Box::new(subject), items, *negated),
                Ty::Known(ValueType::Bool),
            ))
        }
        Sql::Between {
            expr,
            negated,
            low,
            high,
        } => {
            let (a, lo) = comparable(expr, low, r)?;
            let (_, hi) = comparable(expr, high, r)?;
            Ok((
                WhereExpr::Between(Box::new(a), Box::new(lo), Box::new(hi), *negated),
                Ty::Known(ValueType::Bool),
            ))
        }
        _ => Err(unsupported(e)),
    }
}

fn boolean(t: &Ty, e: &Sql) -> Result<(), String> {
    match t {
        Ty::Known(ValueType::Bool) | Ty::Null => Ok(()),
        _ => Err(format!("type mismatch in where: `{e}` is not a boolean")),
    }
}

/// Checks two operands of a comparison and converts string literals to the other side's type.
fn comparable(a: &Sql, b: &Sql, r: &dyn Resolve) -> Result<(WhereExpr, WhereExpr), String> {
    let (x, tx) = check(a, r)?;
    let (y, ty) = check(b, r)?;
    let mismatch = || format!("type mismatch in where: cannot compare `{a}` with `{b}`");
    match (&tx, &ty) {
        (Ty::Null, _) | (_, Ty::Null) => Ok((x, y)),
        (Ty::StrLit(_), Ty::StrLit(_)) => Ok((x, y)),
        (Ty::Known(p), Ty::Known(q)) if p == q || (p.is_numeric() && q.is_numeric()) => Ok((x, y)),
        (Ty::Known(t), Ty::StrLit(s)) => Ok((x, coerce(*t, s).ok_or_else(mismatch)?)),
        (Ty::StrLit(s), Ty::Known(t)) => Ok((coerce(*t, s).ok_or_else(mismatch)?, y)),
        _ => Err(mismatch()),
    }
}

fn coerce(t: ValueType, s: &str) -> Option<WhereExpr> {
    let lit = match t {
        ValueType::Str => Literal::Str(s.to_owned()),
        ValueType::Date => Literal::Date(NaiveDate::parse_from_str(s, "%Y-%m-%d").ok()?),
        ValueType::Floating | ValueType::Utc => Literal::DateTime(
            NaiveDateTime::parse_from_str(s, "%Y-%m-%dT%H:%M:%S%.f")
                .or_else(|_| NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M:%S%.f"))
                .ok()
                .or_else(|| {
                    NaiveDate::parse_from_str(s, "%Y-%m-%d")
                        .ok()?
                        .and_hms_opt(0, 0, 0)
                })?,
        ),
        _ => return None,
    };
    Some(WhereExpr::Literal(lit))
}
