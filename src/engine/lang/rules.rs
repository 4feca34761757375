//! The query-level rules of §2.5 and the output names of §4.1: which table a query reads, the
//! types of its values, which aggregates accept them, and where group keys may appear.
//!
//! Decisions where the spec is silent: without `group_by`, a query either aggregates every
//! select item over the whole window (one row, or none when the window is empty) or selects
//! rows; mixing the two is a 422. A query that names no table or resource is a 422.

use crate::schema::{Derived, Kind, QUERYABLE_SOURCES, Resource, Table};
use crate::validation::{Loc, Violation};

use super::parse_expr::{IndexOf, RawExpr};
use super::request::{
    Func, GroupBy, Operand, QuerySource, SelectItem, SelectKind, ValueMacro, ValueType,
};
use super::where_clause::Resolve;
use crate::validation::read::at;

/// The language type of a per-row value.
pub(crate) fn operand_type(op: &Operand, source: &QuerySource) -> ValueType {
    match op {
        Operand::Column(t, _, kind) => kind_type(*t, *kind),
        Operand::Derived(_, _, kind) => kind_type(Table::Activity, *kind),
        Operand::Field(_, f) => field_type(f),
        Operand::Index => match source {
            QuerySource::Table(Table::Activity | Table::Meal | Table::MenstrualCycle)
            | QuerySource::Derived(_) => ValueType::Date,
            QuerySource::Table(Table::Profile) => ValueType::Utc,
            _ => ValueType::Floating,
        },
        Operand::Source(_) => ValueType::Str,
        Operand::Macro(ValueMacro::Chronotype) => ValueType::Str,
        Operand::Macro(ValueMacro::AsleepAt | ValueMacro::AwakeAt) => ValueType::Floating,
        Operand::Macro(ValueMacro::Awakenings | ValueMacro::SleepScore) => ValueType::Int,
        Operand::Subquery(sq) => sq.output_type(),
        Operand::ElementField(_, k) => super::subquery::element_type(*k),
    }
}

fn kind_type(t: Table, k: Kind) -> ValueType {
    match k {
        Kind::Str => ValueType::Str,
        Kind::Int => ValueType::Int,
        Kind::Float => ValueType::Float,
        Kind::Bool => ValueType::Bool,
        Kind::Date => ValueType::Date,
        Kind::Instant if t == Table::Profile => ValueType::Utc,
        Kind::Instant => ValueType::Floating,
    }
}

/// The type of a timeseries field.
pub(crate) fn field_type(f: &str) -> ValueType {
    match f {
        "value" | "duration" | "systolic" | "diastolic" => ValueType::Float,
        "timezone_offset" => ValueType::Int,
        _ => ValueType::Str,
    }
}

/// The output name of a per-row value (§4.1).
pub(crate) fn operand_name(op: &Operand) -> String {
    match op {
        Operand::Column(_, c, _) | Operand::Derived(_, c, _) => (*c).to_owned(),
        Operand::Field(r, f) => format!("{}.{f}", r.name),
        Operand::Index => "timestamp".to_owned(),
        Operand::Source(s) => (*s).to_owned(),
        Operand::Macro(m) => m.name().to_owned(),
        Operand::Subquery(sq) => sq.name(),
        Operand::ElementField(f, _) => (*f).to_owned(),
    }
}

/// Decides the query's table or resources from every mention (rule 1).
pub(crate) fn resolve_source(
    exprs: &[(RawExpr, Vec<Loc>)],
    query_loc: &[Loc],
    out: &mut Vec<Violation>,
) -> Option<QuerySource> {
    let macros = exprs.iter().any(|(e, _)| {
        matches!(
            e,
            RawExpr::Operand(Operand::Macro(_), _) | RawExpr::Aggregate(_, Operand::Macro(_), ..)
        )
    });
    let mut table: Option<(Relation, &[Loc])> = None;
    let mut series: Vec<Resource> = Vec::new();
    let mut series_loc: Option<&[Loc]> = None;
    let mut ok = true;
    for (e, loc) in exprs {
        let (idx, field) = match e {
            RawExpr::Operand(op, idx) | RawExpr::Aggregate(_, op, idx, _) => (*idx, Some(op)),
            RawExpr::DateTrunc(_, idx, _) | RawExpr::DatePart(_, idx, _) => (Some(*idx), None),
            RawExpr::GroupKey(_) | RawExpr::User(_) => (None, None),
        };
        if let Some(Operand::Field(r, _)) = field
            && !series.contains(r)
        {
            series.push(*r);
        }
        let relation = match idx {
            Some(IndexOf::Table(t)) => Some(Relation::Table(t)),
            Some(IndexOf::Derived(d)) => Some(Relation::Derived(d)),
            Some(IndexOf::Timeseries) => {
                series_loc.get_or_insert(loc);
                None
            }
            None => None,
        };
        match (relation, table) {
            (Some(t), Some((first, _))) if first != t => {
                out.push(Violation::value(
                    loc.clone(),
                    mixed_tables(first, t, macros),
                ));
                ok = false;
            }
            (Some(t), _) => table = Some((t, loc)),
            (None, _) => {}
        }
    }
    if let (Some((t, _)), Some(loc)) = (table, series_loc) {
        out.push(Violation::value(loc.to_vec(), format!("query mixes the {} table with timeseries; a query reads one table or timeseries resources", t.name())));
        return None;
    }
    if !ok {
        return None;
    }
    match table {
        Some((Relation::Table(t), _)) => return Some(QuerySource::Table(t)),
        Some((Relation::Derived(d), _)) => return Some(QuerySource::Derived(d)),
        None => {}
    }
    if !series.is_empty() {
        return Some(QuerySource::Timeseries(series));
    }
    let msg = if series_loc.is_some() {
        "the timeseries index needs at least one timeseries field in the query to name its resources"
    } else {
        "the query names no table or timeseries resource; select or group by at least one column, field, index or macro"
    };
    out.push(Violation::value(at(query_loc, "select"), msg));
    None
}

/// What one mention of a table names: a stored table or a derived one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Relation {
    Table(Table),
    Derived(Derived),
}

impl Relation {
    fn name(self) -> &'static str {
        match self {
            Relation::Table(t) => t.name(),
            Relation::Derived(d) => d.name(),
        }
    }
}

/// The message of rule 1 for two tables. With a value macro in the query, it says that macros
/// belong to the sleep table and names the derived table's own columns (`derived_readiness` has
/// `chronotype` and `sleep_score`).
fn mixed_tables(first: Relation, then: Relation, macros: bool) -> String {
    let mut msg = format!(
        "query mixes tables {} and {}; every column, macro and index of one query must belong to one table",
        first.name(),
        then.name()
    );
    if let (Relation::Derived(d), Relation::Table(Table::Sleep))
    | (Relation::Table(Table::Sleep), Relation::Derived(d)) = (first, then)
        && macros
    {
        msg.push_str(&format!(
            " (value macros are the sleep table's; {} has its own columns: {})",
            d.name(),
            d.columns()
                .iter()
                .map(|c| c.name)
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    msg
}

/// Checks rule 6 for one aggregate and names it.
pub(crate) fn check_aggregate(
    f: Func,
    op: &Operand,
    source: &QuerySource,
    loc: &[Loc],
    out: &mut Vec<Violation>,
) -> bool {
    let t = operand_type(op, source);
    let ok = f.accepts(t);
    if !ok {
        let allowed: Vec<&str> = Func::ALL
            .iter()
            .filter(|(_, g)| g.accepts(t))
            .map(|(n, _)| *n)
            .collect();
        out.push(Violation::value(
            at(loc, "func"),
            format!(
                "{} cannot aggregate {} ({}); allowed for this type: {}",
                f.name(),
                operand_name(op),
                t.describe(),
                allowed.join(", ")
            ),
        ));
    }
    ok
}

/// The output name of a select item.
pub(crate) fn item_name(kind: &SelectKind) -> String {
    match kind {
        SelectKind::Value(op) => operand_name(op),
        SelectKind::Aggregate(f, op) => format!("{}.{}", f.name(), operand_name(op)),
        SelectKind::GroupKey(n) => format!("group_key.{n}"),
    }
}

/// Rules 3 and 7 over the finished select list.
pub(crate) fn check_select(
    select: &[(SelectItem, Vec<Loc>)],
    group_by: &[GroupBy],
    out: &mut Vec<Violation>,
) {
    let aggregates = select
        .iter()
        .any(|(s, _)| matches!(s.kind, SelectKind::Aggregate(..)));
    for (i, (item, loc)) in select.iter().enumerate() {
        match &item.kind {
            SelectKind::Value(Operand::Subquery(_)) if !group_by.is_empty() => out.push(Violation::value(loc.clone(), format!("the subquery {} is inside a grouped query: wrap it in an outer aggregate, e.g. {{\"func\": \"mean\", \"arg\": <the subquery>}}", item.name))),
            SelectKind::Value(_) if !group_by.is_empty() => out.push(Violation::value(loc.clone(), format!("{} must be an aggregate or a group key because the query has a group_by", item.name))),
            SelectKind::Value(_) if aggregates => out.push(Violation::value(loc.clone(), format!("{} is a row value but other select items aggregate; add a group_by or aggregate it", item.name))),
            _ => {}
        }
        if select[..i].iter().any(|(s, _)| s.name == item.name) {
            out.push(Violation::value(
                loc.clone(),
                format!(
                    "duplicate output column name \"{}\"; every select item needs a distinct name",
                    item.name
                ),
            ));
        }
    }
}

/// Identifiers a WHERE may use: the table's columns (or the resources' fields) and the sources.
pub(crate) struct WhereScope<'a>(pub &'a QuerySource);

impl Resolve for WhereScope<'_> {
    fn resolve(&self, ident: &str) -> Option<(Operand, ValueType)> {
        if let Some(s) = QUERYABLE_SOURCES.iter().find(|s| **s == ident) {
            return Some((Operand::Source(s), ValueType::Str));
        }
        match self.0 {
            QuerySource::Table(t) => t.column(ident).map(|c| {
                let op = Operand::Column(*t, c.name, c.kind);
                let ty = operand_type(&op, self.0);
                (op, ty)
            }),
            QuerySource::Timeseries(rs) => rs.iter().find_map(|r| {
                let f = r.family.fields().iter().find(|f| **f == ident)?;
                Some((Operand::Field(*r, f), field_type(f)))
            }),
            QuerySource::Derived(d) => d.column(ident).map(|c| {
                let op = Operand::Derived(*d, c.name, c.kind);
                let ty = operand_type(&op, self.0);
                (op, ty)
            }),
        }
    }

    fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = match self.0 {
            QuerySource::Table(t) => t.columns().iter().map(|c| c.name.to_owned()).collect(),
            QuerySource::Timeseries(rs) => rs
                .iter()
                .flat_map(|r| r.family.fields().iter().map(|f| (*f).to_owned()))
                .collect(),
            QuerySource::Derived(d) => d.columns().iter().map(|c| c.name.to_owned()).collect(),
        };
        names.extend(QUERYABLE_SOURCES.iter().map(|s| (*s).to_owned()));
        let mut seen = std::collections::HashSet::new();
        names.retain(|n| seen.insert(n.clone()));
        names
    }
}
