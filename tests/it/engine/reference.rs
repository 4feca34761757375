//! A deliberately simple row-by-row reference evaluator of `aggregate-dsl.md` §3: it walks the
//! rows of the scenario maps, computes floating time with chrono, buckets with calendar
//! arithmetic, filters with three-valued logic, prioritises by filtering rows, and renders
//! §4.2 JSON. It shares nothing with the engine but the typed request and the sleep-score
//! formula (unit-tested on its own).

use std::cmp::Ordering;
use std::collections::BTreeMap;

use chrono::{Duration, NaiveDate, NaiveDateTime, Offset, TimeZone, Timelike};
use serde_json::{Map, Value, json};
use wearhouse::engine::macros::{ScoreInputs, awakenings, sleep_score, trailing_awake_seconds};
use wearhouse::engine::{
    Func, GroupBy, Operand, Query, QuerySource, SelectKind, SubArg, Subquery, UserContext,
    ValidRequest, ValueMacro,
};
use wearhouse::providers::{SOURCE_TYPE_PRIORITY, effective_priority};
use wearhouse::schema::{Dataset, Table};

use super::calendar::{part, trunc, window};
use super::data::{Data, Row, Val};
use super::reference_where::truth;

/// A reference value.
#[derive(Debug, Clone, PartialEq)]
pub enum RV {
    Null,
    I(i64),
    F(f64),
    S(String),
    B(bool),
    Floating(NaiveDateTime),
    Date(NaiveDate),
    Utc(NaiveDateTime),
}

pub fn cmp_rv(a: &RV, b: &RV) -> Option<Ordering> {
    use RV::*;
    match (a, b) {
        (I(x), I(y)) => Some(x.cmp(y)),
        (I(x), F(y)) => (*x as f64).partial_cmp(y),
        (F(x), I(y)) => x.partial_cmp(&(*y as f64)),
        (F(x), F(y)) => x.partial_cmp(y),
        (S(x), S(y)) => Some(x.cmp(y)),
        (B(x), B(y)) => Some(x.cmp(y)),
        (Floating(x), Floating(y)) | (Utc(x), Utc(y)) => Some(x.cmp(y)),
        (Date(x), Date(y)) => Some(x.cmp(y)),
        _ => None,
    }
}

/// Sort order of group keys: ascending, nulls last.
fn key_order(a: &[RV], b: &[RV]) -> Ordering {
    for (x, y) in a.iter().zip(b) {
        let o = match (x, y) {
            (RV::Null, RV::Null) => Ordering::Equal,
            (RV::Null, _) => Ordering::Greater,
            (_, RV::Null) => Ordering::Less,
            _ => cmp_rv(x, y).unwrap_or(Ordering::Equal),
        };
        if o != Ordering::Equal {
            return o;
        }
    }
    Ordering::Equal
}

fn utc(us: i64) -> NaiveDateTime {
    chrono::DateTime::from_timestamp_micros(us)
        .unwrap()
        .naive_utc()
}

pub struct Ctx<'a> {
    user: &'a UserContext,
    source: &'a QuerySource,
}

impl Ctx<'_> {
    pub fn table(&self) -> Option<Table> {
        match self.source {
            QuerySource::Table(t) => Some(*t),
            _ => None,
        }
    }

    pub fn floating(&self, row: &Row, us: i64) -> NaiveDateTime {
        let t = utc(us);
        let offset = match (row.get("timezone_offset"), self.user.fallback_time_zone) {
            (Some(Val::I(o)), _) => *o,
            (_, Some(tz)) => i64::from(tz.offset_from_utc_datetime(&t).fix().local_minus_utc()),
            _ => 0,
        };
        t + Duration::seconds(offset)
    }

    pub fn instant(&self, row: &Row, name: &str) -> RV {
        match row.get(name) {
            Some(Val::T(us)) if self.table() == Some(Table::Profile) => RV::Utc(utc(*us)),
            Some(Val::T(us)) => RV::Floating(self.floating(row, *us)),
            _ => RV::Null,
        }
    }

    /// The index as a floating datetime (dates at midnight).
    pub fn index_time(&self, row: &Row) -> NaiveDateTime {
        match self.index(row) {
            RV::Floating(t) | RV::Utc(t) => t,
            RV::Date(d) => d.and_hms_opt(0, 0, 0).unwrap(),
            other => panic!("index {other:?}"),
        }
    }

    pub fn index(&self, row: &Row) -> RV {
        match self.table() {
            None => self.instant(row, "timestamp"),
            Some(t) => self.column(row, t.index_column()),
        }
    }

    pub fn column(&self, row: &Row, name: &str) -> RV {
        match row.get(name) {
            None => RV::Null,
            Some(Val::T(_)) => self.instant(row, name),
            Some(Val::D(d)) => RV::Date(
                NaiveDate::from_ymd_opt(1970, 1, 1).unwrap() + Duration::days(i64::from(*d)),
            ),
            Some(Val::I(i)) => RV::I(*i),
            Some(Val::F(f)) => RV::F(*f),
            Some(Val::S(s)) => RV::S(s.clone()),
            Some(Val::B(b)) => RV::B(*b),
            Some(Val::L(_)) => RV::Null,
        }
    }

    pub fn operand(&self, row: &Row, op: &Operand) -> RV {
        match op {
            Operand::Column(_, name, _) | Operand::Derived(_, name, _) => self.column(row, name),
            Operand::Field(r, f) => match row.get("resource") {
                Some(Val::S(res)) if res != r.name => RV::Null,
                _ => self.column(row, f),
            },
            Operand::Index => self.index(row),
            Operand::Source(s) => self.column(row, s),
            Operand::Macro(m) => self.sleep_macro(row, *m),
            Operand::Subquery(sq) => self.subquery(row, sq),
            Operand::ElementField(f, _) => self.column(row, f),
        }
    }

    /// A subquery over a list of scalars (the hypnogram, the one list the scenarios hold):
    /// the elements passing the where, reduced; oldest/newest are the first/last of them.
    pub fn subquery(&self, row: &Row, sq: &Subquery) -> RV {
        let list = match row.get(sq.list.name) {
            Some(Val::L(l)) => l.clone(),
            _ => Vec::new(),
        };
        let kept: Vec<RV> = list
            .iter()
            .map(|x| {
                let mut e = Row::new();
                e.insert("element".into(), Val::I(i64::from(*x)));
                e
            })
            .filter(|e| {
                sq.filter
                    .as_ref()
                    .is_none_or(|w| truth(&self.where_value(e, w)) == Some(true))
            })
            .map(|e| self.column(&e, "element"))
            .collect();
        match (sq.func, sq.arg) {
            (Func::Count, _) | (_, SubArg::Elements) => RV::I(kept.len() as i64),
            (Func::Oldest, _) => kept.first().cloned().unwrap_or(RV::Null),
            (Func::Newest, _) => kept.last().cloned().unwrap_or(RV::Null),
            (f, _) => {
                let rows: Vec<Row> = kept
                    .iter()
                    .map(|v| {
                        let mut e = Row::new();
                        if let RV::I(i) = v {
                            e.insert("element".into(), Val::I(*i));
                        }
                        e
                    })
                    .collect();
                let refs: Vec<&Row> = rows.iter().collect();
                agg(
                    f,
                    self,
                    &refs,
                    &Operand::ElementField("element", wearhouse::schema::Kind::Int),
                )
            }
        }
    }

    pub fn sleep_macro(&self, row: &Row, m: ValueMacro) -> RV {
        let int = |k: &str| match row.get(k) {
            Some(Val::I(i)) => Some(*i),
            _ => None,
        };
        let hyp = match row.get("hypnogram") {
            Some(Val::L(l)) => Some(l.clone()),
            _ => None,
        };
        let (RV::Floating(start), RV::Floating(end)) = (
            self.instant(row, "session_start"),
            self.instant(row, "session_end"),
        ) else {
            return RV::Null;
        };
        match m {
            ValueMacro::Chronotype => {
                let mid = start + (end - start) / 2;
                let secs = i64::from(mid.num_seconds_from_midnight());
                RV::S(
                    if secs >= 17 * 3600 || secs <= 3 * 3600 + 1800 {
                        "lark"
                    } else if secs <= 6 * 3600 {
                        "third"
                    } else {
                        "owl"
                    }
                    .into(),
                )
            }
            ValueMacro::AsleepAt => {
                RV::Floating(start + Duration::seconds(int("latency_second").unwrap_or(0)))
            }
            ValueMacro::AwakeAt => RV::Floating(
                end - Duration::seconds(trailing_awake_seconds(
                    hyp.as_deref(),
                    int("hypnogram_interval_second"),
                )),
            ),
            ValueMacro::Awakenings => awakenings(hyp.as_deref()).map_or(RV::Null, RV::I),
            ValueMacro::SleepScore => sleep_score(ScoreInputs {
                duration: int("duration_second"),
                asleep: int("stage_asleep_second"),
                efficiency: match row.get("efficiency") {
                    Some(Val::F(f)) => Some(*f),
                    _ => None,
                },
                latency: int("latency_second"),
                deep: int("stage_deep_second"),
                rem: int("stage_rem_second"),
                awakenings: awakenings(hyp.as_deref()),
            })
            .map_or(RV::Null, RV::I),
        }
    }
}

fn rows_of(q: &Query, data: &Data) -> Vec<Row> {
    match &q.source {
        QuerySource::Table(t) => data.get(&Dataset::Table(*t)).cloned().unwrap_or_default(),
        // The random requests never read a derived table (`readiness.rs` tests it by hand).
        QuerySource::Derived(_) => Vec::new(),
        QuerySource::Timeseries(rs) => rs
            .iter()
            .flat_map(|r| {
                let rows = data
                    .get(&Dataset::Timeseries(*r))
                    .cloned()
                    .unwrap_or_default();
                let multi = rs.len() > 1;
                rows.into_iter().map(move |mut row| {
                    if multi {
                        row.insert("resource".into(), Val::S(r.name.into()));
                    }
                    row
                })
            })
            .collect(),
    }
}

fn agg(f: Func, ctx: &Ctx<'_>, rows: &[&Row], op: &Operand) -> RV {
    let vals: Vec<(RV, &Row)> = rows
        .iter()
        .map(|r| (ctx.operand(r, op), *r))
        .filter(|(v, _)| *v != RV::Null)
        .collect();
    let nums = || {
        vals.iter()
            .map(|(v, _)| match v {
                RV::I(i) => *i as f64,
                RV::F(f) => *f,
                _ => f64::NAN,
            })
            .collect::<Vec<f64>>()
    };
    if vals.is_empty() {
        return if f == Func::Count { RV::I(0) } else { RV::Null };
    }
    match f {
        Func::Count => RV::I(vals.len() as i64),
        Func::Mean => RV::F(nums().iter().sum::<f64>() / vals.len() as f64),
        Func::Sum => match vals[0].0 {
            RV::I(_) => RV::I(
                vals.iter()
                    .map(|(v, _)| if let RV::I(i) = v { *i } else { 0 })
                    .sum(),
            ),
            _ => RV::F(nums().iter().sum()),
        },
        Func::Min | Func::Max => {
            let mut best = vals[0].0.clone();
            for (v, _) in &vals[1..] {
                let o = cmp_rv(v, &best).unwrap();
                if (f == Func::Min && o == Ordering::Less)
                    || (f == Func::Max && o == Ordering::Greater)
                {
                    best = v.clone();
                }
            }
            best
        }
        Func::Median => {
            let mut x = nums();
            x.sort_by(|a, b| a.partial_cmp(b).unwrap());
            let n = x.len();
            RV::F(if n % 2 == 1 {
                x[n / 2]
            } else {
                (x[n / 2 - 1] + x[n / 2]) / 2.0
            })
        }
        Func::Stddev => {
            let x = nums();
            if x.len() < 2 {
                return RV::Null;
            }
            let mean = x.iter().sum::<f64>() / x.len() as f64;
            RV::F((x.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (x.len() - 1) as f64).sqrt())
        }
        Func::Oldest | Func::Newest => {
            let ing = |r: &Row| {
                if let Some(Val::T(t)) = r.get("ingested_at") {
                    *t
                } else {
                    0
                }
            };
            let best = vals
                .iter()
                .max_by(|(_, a), (_, b)| {
                    let t = ctx.index_time(a).cmp(&ctx.index_time(b));
                    let t = if f == Func::Oldest { t.reverse() } else { t };
                    t.then(ing(a).cmp(&ing(b)))
                })
                .unwrap();
            best.0.clone()
        }
    }
}

fn q_index_column(q: &Query) -> &'static str {
    match &q.source {
        QuerySource::Table(t) => t.index_column(),
        QuerySource::Timeseries(_) => "timestamp",
        QuerySource::Derived(d) => d.index_column(),
    }
}

fn rank(row: &Row, providers: &[String]) -> (usize, String, usize, String) {
    let s = |k: &str| {
        if let Some(Val::S(s)) = row.get(k) {
            s.clone()
        } else {
            String::new()
        }
    };
    let (st, p) = (s("source_type"), s("source_provider"));
    let st_rank = SOURCE_TYPE_PRIORITY
        .iter()
        .position(|x| *x == st)
        .unwrap_or(SOURCE_TYPE_PRIORITY.len());
    let p_rank = providers
        .iter()
        .position(|x| *x == p)
        .unwrap_or(providers.len());
    (st_rank, st, p_rank, p)
}

fn render(v: &RV) -> Value {
    match v {
        RV::Null => Value::Null,
        RV::I(i) => json!(i),
        RV::F(f) => serde_json::Number::from_f64(*f).map_or(Value::Null, Value::Number),
        RV::S(s) => json!(s),
        RV::B(b) => json!(b),
        RV::Floating(t) => json!(t.format("%Y-%m-%dT%H:%M:%S%.f").to_string()),
        RV::Utc(t) => json!(t.format("%Y-%m-%dT%H:%M:%S%.fZ").to_string()),
        RV::Date(d) => json!(d.format("%Y-%m-%d").to_string()),
    }
}

/// The §4.2 JSON body the engine must produce.
pub fn evaluate(req: &ValidRequest, user: &UserContext, data: &Data) -> Value {
    let (start, end) = window(req, user);
    let mut results = Vec::new();
    for q in &req.queries {
        let ctx = Ctx {
            user,
            source: &q.source,
        };
        let all = rows_of(q, data);
        let rows: Vec<&Row> = all
            .iter()
            .filter(|r| {
                let t = ctx.index_time(r);
                t >= start && t < end
            })
            .filter(|r| {
                q.filter
                    .as_ref()
                    .is_none_or(|w| truth(&ctx.where_value(r, w)) == Some(true))
            })
            .collect();
        let mut table: Vec<Vec<RV>> = vec![Vec::new(); q.select.len()];
        if !q.aggregates() {
            let mut rows = rows.clone();
            let s = |r: &Row, k: &str| {
                if let Some(Val::S(s)) = r.get(k) {
                    s.clone()
                } else {
                    String::new()
                }
            };
            let tie = |r: &Row| s(r, "id") + &s(r, "resource");
            let raw = |r: &Row| match r.get(q_index_column(q)) {
                Some(Val::T(t)) => *t,
                Some(Val::D(d)) => i64::from(*d),
                _ => 0,
            };
            rows.sort_by(|a, b| {
                ctx.index_time(a)
                    .cmp(&ctx.index_time(b))
                    .then(s(a, "source_provider").cmp(&s(b, "source_provider")))
                    .then(s(a, "source_type").cmp(&s(b, "source_type")))
                    .then(tie(a).cmp(&tie(b)))
                    .then(raw(a).cmp(&raw(b)))
            });
            for r in rows {
                for (c, item) in q.select.iter().enumerate() {
                    if let SelectKind::Value(op) = &item.kind {
                        table[c].push(ctx.operand(r, op));
                    }
                }
            }
        } else {
            let mut groups: Vec<(Vec<RV>, Vec<&Row>)> = Vec::new();
            for r in &rows {
                let key: Vec<RV> = q
                    .group_by
                    .iter()
                    .map(|g| match g {
                        GroupBy::DateTrunc(p) => {
                            RV::Floating(trunc(ctx.index_time(r), p.value, p.unit))
                        }
                        GroupBy::DatePart(p) => RV::I(part(ctx.index_time(r), *p)),
                        GroupBy::Value(op) => ctx.operand(r, op),
                        GroupBy::User(_) => unreachable!("per-user queries have no user keys"),
                    })
                    .collect();
                match groups.iter_mut().find(|(k, _)| *k == key) {
                    Some((_, members)) => members.push(r),
                    None => groups.push((key, vec![r])),
                }
            }
            if q.prioritised() {
                let data_type = wearhouse::engine::data_type_of(match &q.source {
                    QuerySource::Table(t) => Dataset::Table(*t),
                    QuerySource::Timeseries(rs) => Dataset::Timeseries(rs[0]),
                    QuerySource::Derived(_) => unreachable!("a derived table is never prioritised"),
                });
                let team = user
                    .team_priorities
                    .get(data_type)
                    .cloned()
                    .unwrap_or_default();
                let mut providers: Vec<String> = Vec::new();
                for p in req
                    .priority_overrides
                    .iter()
                    .cloned()
                    .chain(effective_priority(&team))
                {
                    if !providers.contains(&p) {
                        providers.push(p);
                    }
                }
                for (_, members) in &mut groups {
                    let best = members.iter().map(|r| rank(r, &providers)).min().unwrap();
                    members.retain(|r| rank(r, &providers) == best);
                }
            }
            let rows: Vec<(Vec<RV>, Vec<RV>)> = groups
                .iter()
                .map(|(key, members)| {
                    let cells = q
                        .select
                        .iter()
                        .map(|item| match &item.kind {
                            SelectKind::GroupKey(n) => key[*n].clone(),
                            SelectKind::Aggregate(f, op) => agg(*f, &ctx, members, op),
                            SelectKind::Value(_) => RV::Null,
                        })
                        .collect();
                    (key.clone(), cells)
                })
                .collect();
            let now = user.now.map(|n| {
                let utc = n.naive_utc();
                match (ctx.table(), user.fallback_time_zone) {
                    (Some(Table::Profile), _) | (_, None) => utc,
                    (_, Some(z)) => {
                        utc + Duration::seconds(i64::from(
                            z.offset_from_utc_datetime(&utc).fix().local_minus_utc(),
                        ))
                    }
                }
            });
            let mut rows = super::reference_align::align(q, rows, (start, end), now);
            rows.sort_by(|a, b| key_order(&a.0, &b.0));
            for (_, cells) in rows {
                for (c, v) in cells.into_iter().enumerate() {
                    table[c].push(v);
                }
            }
        }
        let mut t = Map::new();
        for (c, item) in q.select.iter().enumerate() {
            t.insert(
                item.name.clone(),
                Value::Array(table[c].iter().map(render).collect()),
            );
        }
        results.push(json!({"table": t}));
    }
    let _: BTreeMap<(), ()> = BTreeMap::new();
    json!({"results": results})
}
