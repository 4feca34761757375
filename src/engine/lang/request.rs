//! The validated request: typed, closed enums for every part of the language. Only
//! [`crate::engine::parse_request`] builds these, so a `ValidRequest` always satisfies §1–§2.

use chrono::NaiveDate;
use serde_json::Value;

use crate::schema::{Derived, Kind, Resource, Table};
use crate::validation::read::{Collect, at, closed, str_in};
use crate::validation::{Loc, Violation};

use super::align::Align;
use super::where_clause::WhereExpr;

/// A request that passed every rule of `aggregate-dsl.md` §1–§2 and the limits of §5.
#[derive(Debug, Clone, PartialEq)]
pub struct ValidRequest {
    /// The window the queries see.
    pub timeframe: Timeframe,
    /// The queries, in request order.
    pub queries: Vec<Query>,
    /// `config.provider_priority_overrides`, best first.
    pub priority_overrides: Vec<String>,
}

/// A relative timeframe: `[anchor − past, anchor + 1 day)` in floating time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeframe {
    /// The last day included, in the user's floating time.
    pub anchor: NaiveDate,
    /// How far back the window starts.
    pub past: Period,
}

/// A calendar period: `value` × `unit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Period {
    /// How many units (≥ 1).
    pub value: u32,
    /// The unit.
    pub unit: Unit,
}

/// A calendar unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Unit {
    /// 60 seconds.
    Minute,
    /// 60 minutes.
    Hour,
    /// A local calendar day.
    Day,
    /// A Monday-based week.
    Week,
    /// A calendar month.
    Month,
    /// A calendar year.
    Year,
}

impl Unit {
    /// Every unit with its wire name.
    pub const ALL: [(&'static str, Unit); 6] = [
        ("minute", Unit::Minute),
        ("hour", Unit::Hour),
        ("day", Unit::Day),
        ("week", Unit::Week),
        ("month", Unit::Month),
        ("year", Unit::Year),
    ];
}

/// What a query reads: one summary table, or samples of one or more timeseries resources.
#[derive(Debug, Clone, PartialEq)]
pub enum QuerySource {
    /// A summary table.
    Table(Table),
    /// One or more timeseries resources, concatenated (in first-mention order).
    Timeseries(Vec<Resource>),
    /// A table computed at query time from the stored ones (`analytics.md` §2).
    Derived(Derived),
}

/// One validated query.
#[derive(Debug, Clone, PartialEq)]
pub struct Query {
    /// The table or resources it reads.
    pub source: QuerySource,
    /// Output columns, in order (`group_key: "*"` already expanded).
    pub select: Vec<SelectItem>,
    /// Grouping expressions.
    pub group_by: Vec<GroupBy>,
    /// The row filter.
    pub filter: Option<WhereExpr>,
    /// Gap filling of the `date_trunc` buckets (`analytics.md` §1).
    pub align: Option<Align>,
}

impl Query {
    /// Whether provider prioritisation applies (§3.5): a `group_by` that does not name both
    /// `source_provider` and `source_type`. Never over a derived table: it has one row per
    /// day, computed from the inputs the priority already chose (`plan/readiness/`).
    pub fn prioritised(&self) -> bool {
        if matches!(self.source, QuerySource::Derived(_)) {
            return false;
        }
        let groups_by = |name: &str| {
            self.group_by
                .iter()
                .any(|g| matches!(g, GroupBy::Value(Operand::Source(s)) if *s == name))
        };
        let both = groups_by("source_provider") && groups_by("source_type");
        !self.group_by.is_empty() && !both
    }

    /// Whether the query aggregates (has a `group_by` or aggregate select items).
    pub fn aggregates(&self) -> bool {
        !self.group_by.is_empty()
            || self
                .select
                .iter()
                .any(|s| matches!(s.kind, SelectKind::Aggregate(..)))
    }
}

/// One output column.
#[derive(Debug, Clone, PartialEq)]
pub struct SelectItem {
    /// The output name (§4.1).
    pub name: String,
    /// What it computes.
    pub kind: SelectKind,
}

/// What a select item computes.
#[derive(Debug, Clone, PartialEq)]
pub enum SelectKind {
    /// A per-row value (row-level queries only).
    Value(Operand),
    /// An aggregate function over a per-row value.
    Aggregate(Func, Operand),
    /// The N-th group_by expression.
    GroupKey(usize),
}

/// A grouping expression.
#[derive(Debug, Clone, PartialEq)]
pub enum GroupBy {
    /// Bucket start of the index (§3.3).
    DateTrunc(Period),
    /// A calendar part of the index (§3.4).
    DatePart(DatePart),
    /// A per-row value.
    Value(Operand),
    /// The user a row belongs to: team queries only (`analytics.md` §5, `crate::team`).
    User(UserKey),
}

/// Which identifier of a user a team query's `{"user": ...}` group key holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UserKey {
    /// wearhouse's id of the user.
    UserId,
    /// The team's own id of the user.
    ClientUserId,
}

impl UserKey {
    /// Every key with its wire name.
    pub const ALL: [(&'static str, UserKey); 2] = [
        ("user_id", UserKey::UserId),
        ("client_user_id", UserKey::ClientUserId),
    ];
}

/// A per-row value.
#[derive(Debug, Clone, PartialEq)]
pub enum Operand {
    /// A summary-table column.
    Column(Table, &'static str, Kind),
    /// A column of a derived table.
    Derived(Derived, &'static str, Kind),
    /// A field of a timeseries resource.
    Field(Resource, &'static str),
    /// The index time of the query's table (§3.2).
    Index,
    /// A source attribute.
    Source(&'static str),
    /// A sleep value macro (§2.3).
    Macro(ValueMacro),
    /// A scalar-output subquery reducing one list column per row (`analytics.md` §3).
    Subquery(Box<super::subquery::Subquery>),
    /// A field of a list element (or the scalar element itself, named `element`): only in a
    /// subquery's where.
    ElementField(&'static str, Kind),
}

/// Sleep value macros (§2.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ValueMacro {
    /// lark / third / owl from the floating sleep midpoint.
    Chronotype,
    /// session_start + latency.
    AsleepAt,
    /// session_end − trailing awake time of the hypnogram.
    AwakeAt,
    /// Sleep-to-awake transitions of the hypnogram.
    Awakenings,
    /// The documented 0–100 model of [`crate::engine::plan::macros`].
    SleepScore,
}

impl ValueMacro {
    /// Every macro with its wire name.
    pub const ALL: [(&'static str, ValueMacro); 5] = [
        ("chronotype", ValueMacro::Chronotype),
        ("asleep_at", ValueMacro::AsleepAt),
        ("awake_at", ValueMacro::AwakeAt),
        ("awakenings", ValueMacro::Awakenings),
        ("sleep_score", ValueMacro::SleepScore),
    ];

    /// The wire name, also the output column name.
    pub fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(_, m)| *m == self)
            .map(|(n, _)| *n)
            .unwrap_or("")
    }
}

/// Aggregate functions (§3.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Func {
    /// Float64 mean.
    Mean,
    /// Minimum, same type.
    Min,
    /// Maximum, same type.
    Max,
    /// Int64 or Float64 sum.
    Sum,
    /// Non-null count.
    Count,
    /// Interpolated median.
    Median,
    /// Sample standard deviation.
    Stddev,
    /// Value at the earliest index time.
    Oldest,
    /// Value at the latest index time.
    Newest,
}

impl Func {
    /// Every function with its wire name.
    pub const ALL: [(&'static str, Func); 9] = [
        ("mean", Func::Mean),
        ("min", Func::Min),
        ("max", Func::Max),
        ("sum", Func::Sum),
        ("count", Func::Count),
        ("median", Func::Median),
        ("stddev", Func::Stddev),
        ("oldest", Func::Oldest),
        ("newest", Func::Newest),
    ];

    /// The wire name.
    pub fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(_, f)| *f == self)
            .map(|(n, _)| *n)
            .unwrap_or("")
    }

    /// Whether it accepts input of this type (§2.5 rule 6).
    pub fn accepts(self, t: ValueType) -> bool {
        use Func::*;
        match t {
            ValueType::Int | ValueType::Float => true,
            ValueType::Str => matches!(self, Count | Oldest | Newest | Min | Max),
            ValueType::Bool => matches!(self, Count | Oldest | Newest),
            ValueType::Date | ValueType::Floating | ValueType::Utc => {
                matches!(self, Count | Min | Max | Oldest | Newest)
            }
        }
    }
}

/// Calendar parts (§3.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DatePart {
    /// 0–59.
    Minute,
    /// 0–23.
    Hour,
    /// Day of month, 1–31.
    Day,
    /// ISO-8601 week, 1–53.
    Week,
    /// 1–12.
    Month,
    /// The year.
    Year,
    /// 1 = Monday … 7 = Sunday.
    Weekday,
    /// Weeks since the first Monday of the year, 0–53 (`%W`).
    WeekOfYear,
    /// 1–366.
    DayOfYear,
}

impl DatePart {
    /// Every part with its wire name.
    pub const ALL: [(&'static str, DatePart); 9] = [
        ("minute", DatePart::Minute),
        ("hour", DatePart::Hour),
        ("day", DatePart::Day),
        ("week", DatePart::Week),
        ("month", DatePart::Month),
        ("year", DatePart::Year),
        ("weekday", DatePart::Weekday),
        ("week_of_year", DatePart::WeekOfYear),
        ("day_of_year", DatePart::DayOfYear),
    ];
}

/// The type of a per-row value, as the language sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ValueType {
    /// Text.
    Str,
    /// Int64.
    Int,
    /// Float64.
    Float,
    /// Boolean.
    Bool,
    /// A local calendar date.
    Date,
    /// A floating (local, zone-less) datetime.
    Floating,
    /// A UTC instant (profile only).
    Utc,
}

impl ValueType {
    /// The name used in messages.
    pub fn describe(self) -> &'static str {
        match self {
            ValueType::Str => "string",
            ValueType::Int => "integer",
            ValueType::Float => "float",
            ValueType::Bool => "boolean",
            ValueType::Date => "date",
            ValueType::Floating => "datetime",
            ValueType::Utc => "UTC datetime",
        }
    }

    /// Whether it is Int or Float.
    pub fn is_numeric(self) -> bool {
        matches!(self, ValueType::Int | ValueType::Float)
    }
}

/// Parses a `Period` object (`value` defaults to 1).
pub(crate) fn parse_period(v: &Value, loc: &[Loc], out: &mut Vec<Violation>) -> Option<Period> {
    let Some(obj) = v.as_object() else {
        out.push(Violation::new(
            loc.to_vec(),
            "type_error",
            "period must be an object {\"value\", \"unit\"}",
        ));
        return None;
    };
    let mut ok = true;
    for k in obj
        .keys()
        .filter(|k| !matches!(k.as_str(), "value" | "unit"))
    {
        out.push(Violation::new(
            at(loc, k.as_str()),
            "extra_forbidden",
            format!("unknown key \"{k}\"; expected value, unit"),
        ));
        ok = false;
    }
    let value = match obj.get("value") {
        None => Some(1),
        Some(n) => match n.as_u64().filter(|n| (1..=u64::from(u32::MAX)).contains(n)) {
            Some(n) => u32::try_from(n).ok(),
            None => {
                out.push(
                    Violation::value(at(loc, "value"), "value must be an integer ≥ 1")
                        .with_input(n.clone()),
                );
                None
            }
        },
    };
    let unit = str_in(obj, "unit", loc)
        .keep(out)
        .and_then(|u| closed(&Unit::ALL, "unit", u, at(loc, "unit")).keep(out));
    match (value, unit, ok) {
        (Some(value), Some(unit), true) => Some(Period { value, unit }),
        _ => None,
    }
}
