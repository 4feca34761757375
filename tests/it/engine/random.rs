//! Seeded generators: random datasets and random valid requests for the differential test,
//! and arbitrary JSON bodies and WHERE strings for the robustness test.

use std::collections::HashSet;

use rand::Rng;
use rand::seq::SliceRandom;
use serde_json::{Value, json};
use wearhouse::schema::{Dataset, Table, resource};

use super::data::{Data, Row, Val, day, sample, ts};

const PROVIDERS: [&str; 5] = ["oura", "apple_health_kit", "fitbit", "garmin", "zz_custom"];
const SOURCE_TYPES: [&str; 5] = ["ring", "watch", "phone", "insulin_pump", "app"];
const H: i64 = 3_600_000_000;

/// A valid `date_trunc` period: N = 1 half the time, else any allowed N (months 1–4 or 6).
fn random_period<R: Rng>(g: &mut R) -> (u32, &'static str) {
    let (unit, max) = [
        ("minute", 59),
        ("hour", 23),
        ("day", 30),
        ("week", 12),
        ("month", 6),
        ("year", 3),
    ][g.gen_range(0..6)];
    let v = if g.gen_bool(0.5) {
        1
    } else {
        g.gen_range(1..=max)
    };
    (if unit == "month" && v == 5 { 6 } else { v }, unit)
}

fn pick<'a, R: Rng>(g: &mut R, xs: &[&'a str]) -> &'a str {
    xs[g.gen_range(0..xs.len())]
}

fn offset<R: Rng>(g: &mut R) -> Option<i64> {
    [None, None, Some(0), Some(3600), Some(-18_000), Some(19_800)][g.gen_range(0..6)]
}

/// Random rows for sleep, activity, heartrate and steps between 2025-03-01 and 2025-04-10.
pub fn random_data<R: Rng>(g: &mut R) -> Data {
    let base = ts("2025-03-01T00:00:00");
    let mut ingest = (0..100_000i64).collect::<Vec<_>>();
    ingest.shuffle(g);
    let mut next = ingest.into_iter().map(|i| base + 50 * 24 * H + i * 1000);
    let mut data = Data::new();
    for (name, n) in [("heartrate", 300), ("steps", 120)] {
        let r = resource(name).unwrap();
        let mut keys = HashSet::new();
        let mut rows = Vec::new();
        for _ in 0..n {
            let t = base + g.gen_range(0..40 * 24 * 4) * H / 4;
            let k = g.gen_range(1..=5);
            let (p, st) = (pick(g, &PROVIDERS[..k]), pick(g, &SOURCE_TYPES));
            if !keys.insert((p, st, t)) {
                continue;
            }
            let mut row = sample(
                t,
                offset(g),
                g.gen_range(40..180) as f64 + if g.gen_bool(0.5) { 0.5 } else { 0.0 },
                p,
                st,
                next.next().unwrap(),
            );
            if name == "steps" {
                row.insert("duration".into(), Val::F(g.gen_range(60..3600) as f64));
            }
            if g.gen_bool(0.1) {
                row.remove("value");
            }
            if g.gen_bool(0.3) {
                row.insert(
                    "type".into(),
                    Val::S(pick(g, &["resting", "active"]).into()),
                );
            }
            rows.push(row);
        }
        data.insert(Dataset::Timeseries(r), rows);
    }
    let mut sleep = Vec::new();
    for i in 0..60 {
        let end = base + g.gen_range(0..40 * 24) * H + g.gen_range(0..60) * 60_000_000;
        let dur = g.gen_range(1..10) * 3600;
        let mut r = Row::new();
        r.insert("id".into(), Val::S(format!("s{i}")));
        r.insert("session_start".into(), Val::T(end - dur * 1_000_000));
        r.insert("session_end".into(), Val::T(end));
        if let Some(o) = offset(g) {
            r.insert("timezone_offset".into(), Val::I(o));
        }
        r.insert(
            "type".into(),
            Val::S(
                if dur >= 3 * 3600 {
                    "long_sleep"
                } else {
                    "short_sleep"
                }
                .into(),
            ),
        );
        r.insert(
            "state".into(),
            Val::S(pick(g, &["confirmed", "tentative"]).into()),
        );
        r.insert("duration_second".into(), Val::I(dur));
        r.insert("stage_asleep_second".into(), Val::I(dur * 8 / 10));
        r.insert("stage_deep_second".into(), Val::I(dur / 5));
        r.insert("stage_rem_second".into(), Val::I(dur / 6));
        if g.gen_bool(0.8) {
            r.insert("latency_second".into(), Val::I(g.gen_range(0..3000)));
        }
        if g.gen_bool(0.8) {
            r.insert(
                "efficiency".into(),
                Val::F(g.gen_range(600..990) as f64 / 10.0),
            );
        }
        r.insert("heart_rate_mean".into(), Val::I(g.gen_range(40..80)));
        if g.gen_bool(0.6) {
            let codes = (0..g.gen_range(1..40))
                .map(|_| [1i8, 2, 3, 4, -1][g.gen_range(0..5)])
                .collect();
            r.insert("hypnogram".into(), Val::L(codes));
            r.insert("hypnogram_interval_second".into(), Val::I(300));
        }
        r.insert("source_provider".into(), Val::S(pick(g, &PROVIDERS).into()));
        r.insert("source_type".into(), Val::S(pick(g, &SOURCE_TYPES).into()));
        r.insert("ingested_at".into(), Val::T(next.next().unwrap()));
        sleep.push(r);
    }
    data.insert(Dataset::Table(Table::Sleep), sleep);
    let mut act = Vec::new();
    for i in 0..60 {
        let mut r = Row::new();
        r.insert("id".into(), Val::S(format!("a{i}")));
        r.insert(
            "date".into(),
            Val::D(day("2025-03-01") + g.gen_range(0..40)),
        );
        if g.gen_bool(0.9) {
            r.insert("steps".into(), Val::I(g.gen_range(0..20_000)));
        }
        r.insert(
            "calories_total".into(),
            Val::F(g.gen_range(1500..3500) as f64 + 0.25),
        );
        r.insert("wheelchair_use".into(), Val::B(g.gen_bool(0.2)));
        r.insert("source_provider".into(), Val::S(pick(g, &PROVIDERS).into()));
        r.insert("source_type".into(), Val::S(pick(g, &SOURCE_TYPES).into()));
        r.insert("ingested_at".into(), Val::T(next.next().unwrap()));
        act.push(r);
    }
    data.insert(Dataset::Table(Table::Activity), act);
    data
}

#[derive(Clone, Copy, PartialEq)]
enum T {
    I,
    F,
    S,
    B,
    Time,
}

fn funcs(t: T) -> &'static [&'static str] {
    match t {
        T::I | T::F => &[
            "mean", "min", "max", "sum", "count", "median", "stddev", "oldest", "newest",
        ],
        T::S => &["count", "oldest", "newest", "min", "max"],
        T::B => &["count", "oldest", "newest"],
        T::Time => &["count", "min", "max", "oldest", "newest"],
    }
}

/// A random user context as the golden `user` object.
pub fn random_user<R: Rng>(g: &mut R) -> Value {
    let mut u = serde_json::Map::new();
    if let Some(z) = [None, Some("Europe/Berlin"), Some("America/New_York")][g.gen_range(0..3)] {
        u.insert("fallback_time_zone".into(), json!(z));
    }
    if g.gen_bool(0.2) {
        u.insert(
            "ingestion_start".into(),
            json!(format!("2025-03-{:02}", g.gen_range(1..20))),
        );
    }
    if g.gen_bool(0.2) {
        u.insert(
            "ingestion_end".into(),
            json!(format!("2025-03-{:02}", g.gen_range(15..31))),
        );
    }
    if g.gen_bool(0.3) {
        let mut p = PROVIDERS.to_vec();
        p.shuffle(g);
        u.insert(
            "team_priorities".into(),
            json!({"sleep": p[..2], "timeseries": p[1..4], "activity": p[..3]}),
        );
    }
    Value::Object(u)
}

/// A random valid request over the random data.
pub fn random_request<R: Rng>(g: &mut R) -> Value {
    request(g, false)
}

/// A random valid request whose WHERE pins at least one of its group keys to a value
/// (`k = v AND ...`), in either priority mode.
pub fn random_pinned_request<R: Rng>(g: &mut R) -> Value {
    loop {
        let body = request(g, true);
        let q = &body["queries"][0];
        if q.get("where").is_some() && q["group_by"].as_array().is_some_and(|k| !k.is_empty()) {
            return body;
        }
    }
}

fn request<R: Rng>(g: &mut R, pin: bool) -> Value {
    let (source, mut values): (&str, Vec<(Value, T)>) = match g.gen_range(0..5) {
        0 => (
            "sleep",
            vec![
                (json!({"sleep": "efficiency"}), T::F),
                (json!({"sleep": "duration_second"}), T::I),
                (json!({"sleep": "latency_second"}), T::I),
                (json!({"sleep": "type"}), T::S),
                (json!({"sleep": "session_start"}), T::Time),
                (json!({"value_macro": "chronotype"}), T::S),
                (json!({"value_macro": "sleep_score"}), T::I),
                (json!({"value_macro": "awakenings"}), T::I),
                (json!({"value_macro": "awake_at"}), T::Time),
                (
                    json!({"value_macro": "asleep_at", "version": "automatic"}),
                    T::Time,
                ),
                (json!({"index": "sleep"}), T::Time),
                (json!({"sleep": "state"}), T::S),
                (json!({"sleep": "heart_rate_mean"}), T::I),
                (json!({"sleep": "stage_deep_second"}), T::I),
                (json!({"sleep": "session_end"}), T::Time),
                (json!({"sleep": "id"}), T::S),
                // Scalar-output subqueries over the hypnogram's stage codes (analytics.md §3).
                (
                    json!({"select": {"func": "count", "arg": null}, "from": {"unnest": {"sleep": "hypnogram"}}, "where": "element = 4"}),
                    T::I,
                ),
                (
                    json!({"select": {"func": "max", "arg": {"element": true}}, "from": {"unnest": {"sleep": "hypnogram"}}}),
                    T::I,
                ),
                (
                    json!({"select": {"func": "mean", "arg": {"element": true}}, "from": {"unnest": {"sleep": "hypnogram"}}, "where": "element IN (1, 2, 3) OR element < 0"}),
                    T::F,
                ),
                (
                    json!({"select": {"func": "newest", "arg": {"element": true}}, "from": {"unnest": {"sleep": "hypnogram"}}, "where": "NOT element BETWEEN 2 AND 3"}),
                    T::I,
                ),
            ],
        ),
        1 => (
            "activity",
            vec![
                (json!({"activity": "steps"}), T::I),
                (json!({"activity": "calories_total"}), T::F),
                (json!({"activity": "wheelchair_use"}), T::B),
                (json!({"index": "activity"}), T::Time),
                (json!({"activity": "id"}), T::S),
            ],
        ),
        2 => (
            "timeseries",
            vec![
                (json!({"timeseries": "heartrate", "field": "value"}), T::F),
                (json!({"timeseries": "heartrate", "field": "type"}), T::S),
                (
                    json!({"timeseries": "heartrate", "field": "timezone_offset"}),
                    T::I,
                ),
                (json!({"index": "timeseries"}), T::Time),
            ],
        ),
        3 => (
            "timeseries",
            vec![
                (json!({"timeseries": "heartrate", "field": "value"}), T::F),
                (json!({"timeseries": "steps", "field": "value"}), T::F),
                (json!({"timeseries": "steps", "field": "duration"}), T::F),
                (json!({"index": "timeseries"}), T::Time),
                (
                    json!({"timeseries": "heartrate", "field": "timezone_offset"}),
                    T::I,
                ),
            ],
        ),
        _ => (
            "timeseries",
            vec![
                (json!({"timeseries": "steps", "field": "value"}), T::F),
                (json!({"timeseries": "steps", "field": "duration"}), T::F),
                (
                    json!({"timeseries": "steps", "field": "timezone_offset"}),
                    T::I,
                ),
                (json!({"timeseries": "steps", "field": "type"}), T::S),
            ],
        ),
    };
    values.push((json!({"source": "source_provider"}), T::S));
    values.push((json!({"source": "source_type"}), T::S));
    if g.gen_bool(0.3) {
        // Never set in the data: a group key that is null in every row.
        values.push((json!({"source": "source_app_id"}), T::S));
    }
    let index = if source == "timeseries" {
        "timeseries"
    } else {
        source
    };
    let mut query = serde_json::Map::new();
    let mut pinned: Vec<String> = Vec::new();
    if g.gen_bool(0.8) {
        let mut group_by = Vec::new();
        if g.gen_bool(0.7) {
            let (v, unit) = random_period(g);
            group_by
                .push(json!({"date_trunc": {"value": v, "unit": unit}, "arg": {"index": index}}));
        }
        if g.gen_bool(0.3) {
            let p = [
                "minute",
                "hour",
                "day",
                "week",
                "month",
                "year",
                "weekday",
                "week_of_year",
                "day_of_year",
            ][g.gen_range(0..9)];
            group_by.push(json!({"date_part": p, "arg": {"index": index}}));
        }
        // Group keys over every field, of every type (the index itself is not a group key).
        for _ in 0..g.gen_range(0..3) {
            let candidates: Vec<&(Value, T)> = values
                .iter()
                .filter(|(v, _)| v.get("index").is_none() && v.get("select").is_none())
                .collect();
            let v = candidates[g.gen_range(0..candidates.len())].0.clone();
            if !group_by.contains(&v) {
                group_by.push(v);
            }
        }
        // Pinned requests favour `timezone_offset`, an Int32 field the plan casts: a pin on it
        // makes an expression constant, the class issue 13 found mis-planned.
        let offset = values.iter().find(|(v, _)| v["field"] == "timezone_offset");
        if let Some((v, _)) = offset.filter(|_| pin && g.gen_bool(0.5))
            && !group_by.contains(v)
        {
            group_by.push(v.clone());
        }
        // Both priority modes: grouping by provider and source type turns priority off.
        if g.gen_bool(0.15) {
            for s in ["source_provider", "source_type"] {
                let v = json!({"source": s});
                if !group_by.contains(&v) {
                    group_by.push(v);
                }
            }
        }
        pinned = pins(g, &group_by, source, pin);
        let mut select = vec![];
        if !group_by.is_empty() {
            select.push(if g.gen_bool(0.5) {
                json!({"group_key": "*"})
            } else {
                json!({"group_key": g.gen_range(0..group_by.len())})
            });
        }
        let mut seen = HashSet::new();
        for _ in 0..g.gen_range(1..5) {
            let (v, t) = values[g.gen_range(0..values.len())].clone();
            let f = pick(g, funcs(t));
            if seen.insert((f, v.to_string())) {
                select.push(json!({"func": f, "arg": v}));
            }
        }
        let names_table = |v: &Value| {
            ["source", "group_key", "date_trunc", "date_part", "index"]
                .iter()
                .all(|k| v.get(k).is_none())
        };
        let named = group_by.iter().any(names_table)
            || select.iter().any(|s| s.get("arg").is_some_and(names_table));
        if !named {
            select.push(json!({"func": "count", "arg": values[0].0}));
        }
        query.insert("select".into(), json!(select));
        if let Some(align) = random_align(g, &group_by, &select) {
            query.insert("align".into(), align);
        }
        if !group_by.is_empty() || g.gen_bool(0.5) {
            query.insert("group_by".into(), json!(group_by));
        }
    } else {
        let mut select = vec![];
        let mut seen = HashSet::new();
        for _ in 0..g.gen_range(1..5) {
            let v = values[g.gen_range(0..values.len())].0.clone();
            if seen.insert(v.to_string()) {
                select.push(v);
            }
        }
        if select
            .iter()
            .all(|v| v.get("source").is_some() || v.get("index").is_some())
        {
            select.push(values[0].0.clone());
        }
        query.insert("select".into(), json!(select));
    }
    let mut conditions = pinned;
    if g.gen_bool(0.5) {
        conditions.push(format!("({})", random_where(g, source)));
    }
    conditions.shuffle(g);
    if !conditions.is_empty() {
        query.insert("where".into(), json!(conditions.join(" AND ")));
    }
    let (unit, v) = [
        ("day", g.gen_range(1..45)),
        ("week", g.gen_range(1..7)),
        ("month", g.gen_range(1..3)),
        ("hour", g.gen_range(1..80)),
        ("year", 1),
    ][g.gen_range(0..5)];
    let mut body = json!({
        "timeframe": {"anchor": format!("2025-{:02}-{:02}", g.gen_range(3..5), g.gen_range(1..29)), "past": {"value": v, "unit": unit}},
        "queries": [Value::Object(query)],
    });
    if g.gen_bool(0.3) {
        let mut p = PROVIDERS.to_vec();
        p.shuffle(g);
        body["config"] = json!({"provider_priority_overrides": p[..g.gen_range(0..4)]});
    }
    body
}

/// An ALIGN clause, most of the time the query allows one (a `date_trunc`, no `date_part`,
/// every group key selected): any mode, no cap or a cap of one to three periods, in the
/// period's unit or, for days, in hours.
fn random_align<R: Rng>(g: &mut R, group_by: &[Value], select: &[Value]) -> Option<Value> {
    let trunc = group_by.iter().find_map(|k| k.get("date_trunc"))?;
    let allowed = group_by.iter().all(|k| k.get("date_part").is_none())
        && select.first() == Some(&json!({"group_key": "*"}));
    if !allowed || !g.gen_bool(0.7) {
        return None;
    }
    let mode = ["carry_forward", "carry_backward", "carry_nearest"][g.gen_range(0..3)];
    let mut carry = json!({"mode": mode});
    if g.gen_bool(0.75) {
        let (value, unit) = (trunc["value"].as_u64()?, trunc["unit"].as_str()?);
        let k = g.gen_range(1..=3);
        let cap = if unit == "day" && g.gen_bool(0.3) {
            json!({"value": value * k * 24, "unit": "hour"})
        } else {
            json!({"value": value * k, "unit": unit})
        };
        carry[if mode == "carry_nearest" {
            "span"
        } else {
            "max_age"
        }] = cap;
    }
    Some(json!({"carry": carry}))
}

/// WHERE atoms that pin some of the group keys to one value (`k = v`, `v = k` or
/// `k IN (v)`), a value the random data holds. A pinned key is constant after the filter, which
/// DataFusion's optimiser exploits (and once mis-planned: issue 13, item 0).
fn pins<R: Rng>(g: &mut R, group_by: &[Value], source: &str, always: bool) -> Vec<String> {
    if !always && !g.gen_bool(0.35) {
        return Vec::new();
    }
    let mut out = Vec::new();
    for key in group_by {
        let name = key
            .get("source")
            .or_else(|| key.get("field"))
            .or_else(|| key.get(source))
            .and_then(Value::as_str);
        let Some(name) = name else { continue };
        let Some(v) = pin_value(g, name, source) else {
            continue;
        };
        if out.is_empty() || g.gen_bool(0.5) {
            out.push(match g.gen_range(0..3) {
                0 => format!("{name} = {v}"),
                1 => format!("{v} = {name}"),
                _ => format!("{name} IN ({v})"),
            });
        }
    }
    out
}

/// A literal of a value `name` takes in the random data (or may: numbers are drawn from the
/// generator's ranges).
fn pin_value<R: Rng>(g: &mut R, name: &str, source: &str) -> Option<String> {
    let quoted = |x: &str| format!("'{x}'");
    Some(match name {
        "timezone_offset" => [0, 3600, -18_000, 19_800][g.gen_range(0..4)].to_string(),
        "type" if source == "sleep" => quoted(pick(g, &["long_sleep", "short_sleep"])),
        "type" => quoted(pick(g, &["resting", "active"])),
        "state" => quoted(pick(g, &["confirmed", "tentative"])),
        "source_provider" => quoted(pick(g, &PROVIDERS)),
        "source_type" => quoted(pick(g, &SOURCE_TYPES)),
        "source_app_id" => quoted("com.example"),
        "value" => format!(
            "{}{}",
            g.gen_range(40..180),
            if g.gen_bool(0.5) { ".5" } else { "" }
        ),
        "duration" => g.gen_range(60..3600).to_string(),
        "efficiency" => format!("{:.1}", f64::from(g.gen_range(600..990)) / 10.0),
        "duration_second" => (g.gen_range(1..10) * 3600).to_string(),
        "stage_deep_second" => (g.gen_range(1..10) * 720).to_string(),
        "latency_second" => g.gen_range(0..3000).to_string(),
        "heart_rate_mean" => g.gen_range(40..80).to_string(),
        "steps" => g.gen_range(0..20_000).to_string(),
        "calories_total" => format!("{}.25", g.gen_range(1500..3500)),
        "wheelchair_use" => pick(g, &["TRUE", "FALSE"]).to_owned(),
        "id" => quoted(&format!("{}{}", &source[..1], g.gen_range(0..60))),
        _ => return None,
    })
}

fn random_where<R: Rng>(g: &mut R, source: &str) -> String {
    let atoms: Vec<String> = match source {
        "sleep" => vec![
            format!("efficiency > {}", g.gen_range(60..100)),
            format!("duration_second <= {}", g.gen_range(1..10) * 3600),
            "latency_second IS NULL".into(),
            "latency_second IS NOT NULL".into(),
            "type = 'long_sleep'".into(),
            format!(
                "session_end >= '2025-03-{:02}T12:00:00'",
                g.gen_range(1..31)
            ),
            format!(
                "heart_rate_mean BETWEEN {} AND {}",
                g.gen_range(40..60),
                g.gen_range(55..80)
            ),
        ],
        "activity" => vec![
            format!("steps >= {}", g.gen_range(0..20000)),
            "wheelchair_use = TRUE".into(),
            format!("date < '2025-03-{:02}'", g.gen_range(1..31)),
            format!(
                "calories_total NOT BETWEEN 2000 AND {}",
                g.gen_range(2000..3500)
            ),
            "steps IS NULL".into(),
        ],
        _ => vec![
            format!("value > {}", g.gen_range(40..180)),
            format!("value <= {}.5", g.gen_range(40..180)),
            "type IN ('resting', 'active')".into(),
            "type IS NULL".into(),
            "timezone_offset <> 0".into(),
        ],
    };
    let mut all = atoms;
    all.push("source_provider IN ('oura', 'fitbit', 'zz_custom')".into());
    all.push("source_type NOT IN ('ring')".into());
    all.push("source_provider != 'garmin'".into());
    let a = all[g.gen_range(0..all.len())].clone();
    match g.gen_range(0..4) {
        0 => a,
        1 => format!("({a}) AND {}", all[g.gen_range(0..all.len())]),
        2 => format!("{a} OR NOT ({})", all[g.gen_range(0..all.len())]),
        _ => format!("NOT {a}"),
    }
}

/// A random request of the time-bucket operator's shape (one resource, one `date_trunc`
/// group key, the functions it computes over float fields, `count` over any field), to
/// compare that operator with the general plan and the reference.
pub fn random_bucket_request<R: Rng>(g: &mut R) -> Value {
    let resource = ["heartrate", "steps"][g.gen_range(0..2)];
    let floats: &[&str] = if resource == "steps" {
        &["value", "duration"]
    } else {
        &["value"]
    };
    let (v, unit) = random_period(g);
    let mut select = vec![if g.gen_bool(0.5) {
        json!({"group_key": "*"})
    } else {
        json!({"group_key": 0})
    }];
    let mut seen = HashSet::new();
    for _ in 0..g.gen_range(1..6) {
        let f = pick(
            g,
            &["mean", "min", "max", "sum", "count", "oldest", "newest"],
        );
        let field = if f == "count" && g.gen_bool(0.3) {
            "source_type"
        } else {
            pick(g, floats)
        };
        if seen.insert((f, field)) {
            select.push(json!({"func": f, "arg": {"timeseries": resource, "field": field}}));
        }
    }
    let mut query = json!({
        "select": select,
        "group_by": [{"date_trunc": {"value": v, "unit": unit}, "arg": {"index": "timeseries"}}],
    });
    if g.gen_bool(0.3) {
        query["where"] = json!(random_where(g, "timeseries"));
    }
    let (unit, v) = [
        ("day", g.gen_range(1..45)),
        ("week", g.gen_range(1..7)),
        ("month", g.gen_range(1..3)),
        ("hour", g.gen_range(1..80)),
    ][g.gen_range(0..4)];
    let mut body = json!({
        "timeframe": {"anchor": format!("2025-{:02}-{:02}", g.gen_range(3..5), g.gen_range(1..29)), "past": {"value": v, "unit": unit}},
        "queries": [query],
    });
    if g.gen_bool(0.4) {
        let mut p = PROVIDERS.to_vec();
        p.shuffle(g);
        body["config"] = json!({"provider_priority_overrides": p[..g.gen_range(0..4)]});
    }
    body
}
