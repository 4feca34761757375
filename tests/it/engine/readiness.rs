//! `derived_readiness` (`analytics.md` §2) against hand-computed days: a month of nights,
//! activity days, workouts, heart-rate and HRV samples and a profile pushed through the real
//! push API, queried through the real aggregate endpoint, and compared with the scores this
//! file computes itself from the formulas of the engine's module docs
//! (`src/engine/plan/readiness/mod.rs`), written out again here in the most direct way. Also:
//! the days before the baseline holds 7 nights are null; a night pushed late changes exactly
//! the days it feeds; a short window reads its baseline from before it; weekly means,
//! `recovery_zone = 'Green'`, and the Parquet answer holding the JSON answer's table.

use std::collections::BTreeMap;

use axum::http::StatusCode;
use chrono::{Duration, NaiveDate};
use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::datatypes::{DataType, Date32Type, Float64Type, Int64Type};
use serde_json::{Value, json};

use crate::support::{self, TestApp};

const DAYS: i64 = 30;
/// Days without a night in the first push (night 10 arrives late).
const MISSING: [i64; 3] = [3, 4, 10];
/// Nights without their own HRV: the HRV samples inside them count.
const HRV_FROM_SAMPLES: [i64; 2] = [15, 22];
/// Nights without their own resting heart rate: the day's activity one counts.
const RHR_FROM_ACTIVITY: [i64; 2] = [12, 18];
/// 220 − 34: the profile's birth date 1990-05-17 makes the user 34 in March 2025.
const HR_MAX: f64 = 186.0;

fn day(i: i64) -> NaiveDate {
    NaiveDate::from_ymd_opt(2025, 3, 1).unwrap() + Duration::days(i)
}

/// Night `i`, ending on day `i`: 8 h in bed, from 23:00 the evening before for the first 20
/// nights and from 01:30 after that (a later chronotype).
struct Night {
    start: chrono::NaiveDateTime,
    end: chrono::NaiveDateTime,
    total: i64,
    efficiency: f64,
    hrv: Option<f64>,
    rhr: Option<f64>,
}

fn night(i: i64) -> Night {
    let start = if i < 20 {
        (day(i) - Duration::days(1)).and_hms_opt(23, 0, 0).unwrap()
    } else {
        day(i).and_hms_opt(1, 30, 0).unwrap()
    };
    let total = 25_200 + (i % 4) * 900;
    Night {
        start,
        end: start + Duration::hours(8),
        total,
        efficiency: total as f64 / 28_800.0 * 100.0,
        hrv: (!HRV_FROM_SAMPLES.contains(&i)).then(|| (40 + (i % 5) * 5 + i % 7) as f64),
        rhr: (!RHR_FROM_ACTIVITY.contains(&i)).then(|| (48 + (i % 3) * 2 + i % 2) as f64),
    }
}

fn utc(t: chrono::NaiveDateTime) -> String {
    format!("{}+00:00", t.format("%Y-%m-%dT%H:%M:%S"))
}

fn night_json(i: i64) -> Value {
    let n = night(i);
    let mut v = json!({
        "id": format!("n{i}"), "bedtime_start": utc(n.start), "bedtime_stop": utc(n.end),
        "state": "confirmed", "type": "long_sleep", "duration": 28_800, "total": n.total,
        "awake": 28_800 - n.total, "light": n.total - 11_700, "rem": 6_300, "deep": 5_400,
        "latency": 600, "efficiency": n.efficiency, "timezone_offset": 0
    });
    if let Some(h) = n.hrv {
        v["average_hrv"] = json!(h);
    }
    if let Some(r) = n.rhr {
        v["hr_resting"] = json!(r as i64);
    }
    v
}

/// Day `i`'s activity: minutes of low, medium and high intensity (the push's `low`, `medium`,
/// `high` are minutes) and a resting heart rate.
fn activity(i: i64) -> (i64, i64, i64, f64) {
    (30 + i % 5, 10 * (i % 3), 5 * (i % 2), 57.5 + (i % 4) as f64)
}

/// Workouts every sixth day at 18:00, seconds in zones 1–6.
const ZONES: [f64; 6] = [60.0, 300.0, 900.0, 1_200.0, 600.0, 120.0];

fn push_body(nights: &[i64], with_rest: bool) -> Value {
    let mut body = json!({
        "provider": "manual",
        "source": {"type": "app", "app_id": "com.example", "device_id": "phone-1"},
        "sleep": nights.iter().map(|i| night_json(*i)).collect::<Vec<_>>(),
    });
    if !with_rest {
        return body;
    }
    body["activity"] = (0..DAYS)
        .map(|i| {
            let (low, medium, high, rhr) = activity(i);
            json!({"date": format!("{}T00:00:00+00:00", day(i)), "low": low, "medium": medium,
                   "high": high, "heart_rate": {"resting_bpm": rhr}, "timezone_offset": 0})
        })
        .collect();
    body["workouts"] = (0..DAYS)
        .filter(|i| i % 6 == 0)
        .map(|i| {
            let at = day(i).and_hms_opt(18, 0, 0).unwrap();
            json!({"id": format!("w{i}"), "time_start": utc(at),
                   "time_end": utc(at + Duration::minutes(55)), "hr_zones": ZONES,
                   "sport": {"name": "Running", "slug": "running"}})
        })
        .collect();
    // Day 20: 31 samples a minute apart at 170 bpm, then one at 100 bpm ten minutes later.
    let mut hr: Vec<Value> = (0..31)
        .map(|m| {
            let t = day(20).and_hms_opt(17, 0, 0).unwrap() + Duration::minutes(m);
            json!({"timestamp": utc(t), "timezone_offset": 0, "unit": "bpm", "value": 170.0})
        })
        .collect();
    let last = day(20).and_hms_opt(17, 40, 0).unwrap();
    hr.push(json!({"timestamp": utc(last), "timezone_offset": 0, "unit": "bpm", "value": 100.0}));
    // HRV samples inside the nights without HRV (mean 55), and one outside (ignored).
    let mut hrv = Vec::new();
    for i in HRV_FROM_SAMPLES {
        let n = night(i);
        for (h, v) in [(2, 50.0), (4, 60.0)] {
            hrv.push(json!({"timestamp": utc(n.start + Duration::hours(h)),
                            "timezone_offset": 0, "unit": "ms", "value": v}));
        }
        hrv.push(json!({"timestamp": utc(n.end + Duration::hours(5)),
                        "timezone_offset": 0, "unit": "ms", "value": 100.0}));
    }
    body["timeseries"] = json!({"heartrate": hr, "hrv": hrv});
    body["profile"] = json!({"birth_date": "1990-05-17", "updated_at": "2025-01-01T00:00:00Z",
                             "created_at": "2025-01-01T00:00:00Z"});
    body
}

// ---- The formulas, written out again -------------------------------------------------------

fn sleep_score(n: &Night) -> i64 {
    let total = n.total as f64;
    let parts = 40.0 * (total / 28_800.0).min(1.0)
        + 20.0 * n.efficiency / 100.0
        + 10.0 // latency 600 s ≤ 15 min
        + 10.0 * (5_400.0 / total / 0.20).min(1.0)
        + 10.0 * (6_300.0 / total / 0.25).min(1.0);
    // No hypnogram: the awakenings weight (10) is left out of the 100.
    (100.0 * parts / 90.0).round() as i64
}

fn component(x: Option<f64>, baseline: &[f64], sign: f64) -> Option<f64> {
    let x = x?;
    if baseline.len() < 2 {
        return None;
    }
    let n = baseline.len() as f64;
    let mean = baseline.iter().sum::<f64>() / n;
    let sd = (baseline.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
    Some((50.0 + sign * 25.0 * (x - mean) / sd.max(1.0)).clamp(0.0, 100.0))
}

fn hrv_of(i: i64) -> f64 {
    night(i).hrv.unwrap_or(55.0)
}
fn rhr_of(i: i64) -> f64 {
    night(i).rhr.unwrap_or(activity(i).3)
}

fn trimp(i: i64) -> f64 {
    let (low, medium, high, _) = activity(i);
    let mut t = low as f64 + 2.0 * medium as f64 + 3.0 * high as f64;
    if i % 6 == 0 {
        let w: f64 = ZONES.iter().enumerate().map(|(z, s)| z as f64 * s).sum();
        t = t.max(w / 60.0);
    }
    if i == 20 {
        // ⌊10·170/186⌋ − 4 = 5 for 30 one-minute gaps and one 10-minute gap capped at 5.
        assert_eq!((10.0f64 * 170.0 / HR_MAX).floor() - 4.0, 5.0);
        t = t.max(30.0 * 5.0 + 5.0 * 5.0);
    }
    t
}

/// The expected row of day `i` given the days that have nights.
fn expected(i: i64, nights: &[i64]) -> Value {
    let baseline: Vec<i64> = nights
        .iter()
        .copied()
        .filter(|n| (i - 21..i).contains(n))
        .collect();
    if baseline.len() < 7 {
        return json!([day(i).to_string(), null, null, null, null, null, null, null]);
    }
    let mut from_noon: Vec<i64> = baseline
        .iter()
        .map(|n| {
            let nt = night(*n);
            let mid = nt.start + (nt.end - nt.start) / 2;
            let s = i64::from(chrono::Timelike::num_seconds_from_midnight(&mid.time()));
            (s + 43_200) % 86_400
        })
        .collect();
    from_noon.sort();
    let k = from_noon.len();
    let median = if k % 2 == 1 {
        from_noon[k / 2]
    } else {
        (from_noon[k / 2 - 1] + from_noon[k / 2]) / 2
    };
    let mid = (median + 43_200) % 86_400;
    let chronotype = if mid >= 17 * 3600 || mid <= 3 * 3600 + 1800 {
        "lark"
    } else if mid <= 6 * 3600 {
        "third"
    } else {
        "owl"
    };
    let t = trimp(i);
    let strain = (21.0 * (1.0 + t / 30.0).ln() / (1.0f64 + 800.0 / 30.0).ln()).min(21.0);
    let strain = (strain * 10.0).round() / 10.0;
    let strain_zone = match strain.floor() as i64 {
        ..=6 => "Low",
        7..=13 => "Moderate",
        14..=17 => "High",
        _ => "Very High",
    };
    if !nights.contains(&i) {
        return json!([
            day(i).to_string(),
            chronotype,
            null,
            null,
            null,
            null,
            strain,
            strain_zone
        ]);
    }
    let hrvs: Vec<f64> = baseline.iter().map(|n| hrv_of(*n)).collect();
    let rhrs: Vec<f64> = baseline.iter().map(|n| rhr_of(*n)).collect();
    let sleep = sleep_score(&night(i));
    let s_hrv = component(Some(hrv_of(i)), &hrvs, 1.0).unwrap();
    let s_rhr = component(Some(rhr_of(i)), &rhrs, -1.0).unwrap();
    let recovery = (0.5 * s_hrv + 0.25 * s_rhr + 0.25 * sleep as f64).round() as i64;
    let zone = match recovery {
        ..=33 => "Red",
        34..=66 => "Amber",
        _ => "Green",
    };
    json!([
        day(i).to_string(),
        chronotype,
        sleep,
        recovery,
        zone,
        100 - recovery,
        strain,
        strain_zone
    ])
}

// ---- Running it ----------------------------------------------------------------------------

const COLUMNS: [&str; 7] = [
    "chronotype",
    "sleep_score",
    "recovery_score",
    "recovery_zone",
    "stress_score",
    "strain_score",
    "strain_zone",
];

fn rows_query(anchor: i64, past: i64) -> Value {
    let mut select = vec![json!({"index": "derived_readiness"})];
    select.extend(COLUMNS.iter().map(|c| json!({"derived_readiness": c})));
    json!({
        "timeframe": {"anchor": day(anchor).to_string(), "past": {"value": past, "unit": "day"}},
        "queries": [{"select": select}]
    })
}

/// The answer's rows as arrays in [`COLUMNS`] order after the index.
fn rows_of(table: &Value) -> BTreeMap<String, Value> {
    let dates = table["timestamp"].as_array().unwrap();
    (0..dates.len())
        .map(|r| {
            let mut row = vec![dates[r].clone()];
            row.extend(COLUMNS.iter().map(|c| table[*c][r].clone()));
            (dates[r].as_str().unwrap().to_owned(), Value::Array(row))
        })
        .collect()
}

fn check(got: &BTreeMap<String, Value>, nights: &[i64], days: std::ops::Range<i64>) {
    assert_eq!(got.len(), days.clone().count(), "{got:?}");
    for i in days {
        let want = expected(i, nights);
        let row = &got[&day(i).to_string()];
        if let Err(diff) = super::same(row, &want, &format!("day {i}")) {
            panic!("{diff}\n got  {row}\n want {want}");
        }
    }
}

/// A month of the fixture's data pushed for one user (night 10 missing, arriving late in one test).
pub async fn pushed() -> (TestApp, String, Vec<i64>) {
    let app = TestApp::new().await;
    let id = app.user("readiness").await;
    let nights: Vec<i64> = (0..DAYS).filter(|i| !MISSING.contains(i)).collect();
    let a = app
        .post(&format!("/v2/user/{id}/data"), push_body(&nights, true))
        .await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.json);
    (app, id, nights)
}

#[tokio::test]
async fn scores_match_the_hand_computed_days_and_a_late_night_changes_the_days_it_feeds() {
    let (app, id, mut nights) = pushed().await;
    let a = app
        .aggregate(&id, &rows_query(DAYS - 1, DAYS - 1), None)
        .await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.json);
    let before = rows_of(&a.json["results"][0]["table"]);
    check(&before, &nights, 0..DAYS);
    // Nights on days 0–2 and 5–7 only: the baseline holds 7 nights from day 9 on.
    for i in 0..9 {
        assert_eq!(before[&day(i).to_string()][3], Value::Null, "day {i}");
    }
    let day9 = &before[&day(9).to_string()];
    assert!(day9[3].is_i64() && day9[6].is_f64(), "{day9}");

    // Night 10 arrives late: day 10 gets its recovery, the days whose baseline holds it
    // (11–29) may change, the days before it do not.
    let a = app
        .post(&format!("/v2/user/{id}/data"), push_body(&[10], false))
        .await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.json);
    nights.push(10);
    nights.sort();
    let a = app
        .aggregate(&id, &rows_query(DAYS - 1, DAYS - 1), None)
        .await;
    let after = rows_of(&a.json["results"][0]["table"]);
    check(&after, &nights, 0..DAYS);
    for i in 0..10 {
        let d = day(i).to_string();
        assert_eq!(before[&d], after[&d], "day {i} changed");
    }
    assert_ne!(before[&day(10).to_string()], after[&day(10).to_string()]);
    let changed = (11..DAYS)
        .filter(|i| before[&day(*i).to_string()] != after[&day(*i).to_string()])
        .count();
    assert!(
        changed >= 10,
        "only {changed} days after the late night changed"
    );

    // A week's window reads its baselines from the three weeks before it.
    let a = app.aggregate(&id, &rows_query(DAYS - 1, 6), None).await;
    let week = rows_of(&a.json["results"][0]["table"]);
    check(&week, &nights, DAYS - 7..DAYS);
}

#[tokio::test]
async fn one_written_out_day() {
    // Day 9 (2025-03-10): baseline nights 0, 1, 2, 5, 6, 7, 8 (7 nights).
    // HRV 40, 46, 52, 45, 51, 50, 56 → mean 48.5714, sd 5.2870; night 9: 40 + 20 + 2 = 62 →
    //   z = 2.5399, 50 + 25·z = 113.5 → S_hrv = 100.
    // RHR 48, 51, 52, 53, 48, 51, 52 → mean 50.7143, sd 1.9760; night 9: 48 + 0 + 1 = 49 →
    //   z = −0.8675, S_rhr = 50 + 21.688 = 71.688.
    // Sleep: total 25 200 + 900 = 26 100, efficiency 90.625 →
    //   100·(40·0.90625 + 20·0.90625 + 10 + 10 + 10·0.96552)/90 = 93.37 → 93.
    // Recovery: 0.5·100 + 0.25·71.688 + 0.25·93 = 91.17 → 91 (Green), stress 9.
    // Load: activity 30 + 4 = 34 min low, 0 medium, 5 min high → 34 + 3·5 = 49 weighted min;
    //   21·ln(1 + 49/30)/ln(1 + 800/30) = 6.124 → 6.1 (Low).
    let want = json!(["2025-03-10", "lark", 93, 91, "Green", 9, 6.1, "Low"]);
    let nights: Vec<i64> = (0..DAYS).filter(|i| !MISSING.contains(i)).collect();
    assert_eq!(expected(9, &nights), want);
    let (app, id, _) = pushed().await;
    let a = app.aggregate(&id, &rows_query(9, 1), None).await;
    let got = rows_of(&a.json["results"][0]["table"]);
    assert_eq!(got[&day(9).to_string()], want);
}

#[tokio::test]
async fn weekly_means_green_days_and_the_parquet_answer() {
    let (app, id, nights) = pushed().await;
    let body = json!({
        "timeframe": {"anchor": day(DAYS - 1).to_string(), "past": {"value": DAYS - 1, "unit": "day"}},
        "queries": [{
            "select": [{"group_key": 0},
                       {"func": "mean", "arg": {"derived_readiness": "recovery_score"}},
                       {"func": "max", "arg": {"derived_readiness": "strain_score"}},
                       {"func": "count", "arg": {"derived_readiness": "recovery_zone"}}],
            "group_by": [{"date_trunc": {"value": 1, "unit": "week"}, "arg": {"index": "derived_readiness"}}]
        }, {
            "select": [{"derived_readiness": "date"}, {"derived_readiness": "recovery_score"}],
            "where": "recovery_zone = 'Green' AND date >= '2025-03-10'"
        }, {
            "select": [{"group_key": 0}, {"func": "count", "arg": {"derived_readiness": "date"}}],
            "group_by": [{"derived_readiness": "recovery_zone"}]
        }]
    });
    let a = app.aggregate(&id, &body, None).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.json);
    let all: Vec<Value> = (0..DAYS).map(|i| expected(i, &nights)).collect();
    // Weekly means: weeks start on Monday; 2025-03-03 is one.
    let weekly = &a.json["results"][0]["table"];
    let monday = |i: i64| {
        let d = day(i);
        d - Duration::days(i64::from(
            chrono::Datelike::weekday(&d).num_days_from_monday(),
        ))
    };
    let mut weeks: BTreeMap<NaiveDate, Vec<&Value>> = BTreeMap::new();
    for (i, row) in all.iter().enumerate() {
        weeks.entry(monday(i as i64)).or_default().push(row);
    }
    let keys: Vec<String> = weeks.keys().map(|d| format!("{d}T00:00:00")).collect();
    assert_eq!(weekly["group_key.0"], json!(keys));
    for (w, rows) in weeks.values().enumerate() {
        let rec: Vec<f64> = rows.iter().filter_map(|r| r[3].as_f64()).collect();
        let mean = (!rec.is_empty()).then(|| rec.iter().sum::<f64>() / rec.len() as f64);
        let got = weekly["mean.recovery_score"][w].as_f64();
        match (got, mean) {
            (Some(g), Some(m)) => assert!((g - m).abs() < 1e-9, "week {w}: {g} != {m}"),
            (g, m) => assert_eq!(g, m, "week {w}"),
        }
        let max = rows.iter().filter_map(|r| r[6].as_f64()).reduce(f64::max);
        assert_eq!(weekly["max.strain_score"][w].as_f64(), max, "week {w}");
        assert_eq!(
            weekly["count.recovery_zone"][w],
            json!(rec.len()),
            "week {w}"
        );
    }
    // WHERE over the derived columns.
    let green: Vec<Value> = all
        .iter()
        .filter(|r| r[4] == "Green" && r[0].as_str().unwrap() >= "2025-03-10")
        .map(|r| r[0].clone())
        .collect();
    assert!(!green.is_empty());
    assert_eq!(a.json["results"][1]["table"]["date"], json!(green));
    // Group by a derived column: null zones (unscored days, days without a night) group last.
    let zones = &a.json["results"][2]["table"];
    let names = zones["group_key.0"].as_array().unwrap();
    assert_eq!(names.last(), Some(&Value::Null));
    let counted: i64 = zones["count.date"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_i64().unwrap())
        .sum();
    assert_eq!(counted, DAYS);

    // The same request as Parquet: every member holds its JSON table.
    let p = app
        .aggregate(&id, &body, Some("application/vnd.service.tar+gzip+parquet"))
        .await;
    assert_eq!(p.status, StatusCode::OK);
    let mut members = 0;
    for (q, batches) in support::parquet_members(&p.bytes).into_iter().enumerate() {
        let mut table = serde_json::Map::new();
        for batch in batches {
            for (f, c) in batch.schema().fields().iter().zip(batch.columns()) {
                let cells = table.entry(f.name().clone()).or_insert(json!([]));
                let cells = cells.as_array_mut().unwrap();
                for r in 0..c.len() {
                    cells.push(cell(c.as_ref(), r));
                }
            }
        }
        assert_eq!(
            Value::Object(table),
            a.json["results"][q]["table"],
            "query {q}"
        );
        members += 1;
    }
    assert_eq!(members, 3);
}

/// One Parquet cell as the JSON answer writes it.
fn cell(c: &dyn Array, r: usize) -> Value {
    if c.is_null(r) {
        return Value::Null;
    }
    match c.data_type() {
        DataType::Int64 => json!(c.as_primitive::<Int64Type>().value(r)),
        DataType::Float64 => json!(c.as_primitive::<Float64Type>().value(r)),
        DataType::Utf8 => json!(c.as_string::<i32>().value(r)),
        DataType::Date32 => {
            let d = c.as_primitive::<Date32Type>().value(r);
            json!(
                (NaiveDate::from_ymd_opt(1970, 1, 1).unwrap() + Duration::days(d.into()))
                    .to_string()
            )
        }
        DataType::Timestamp(_, None) => {
            let us = c
                .as_primitive::<datafusion::arrow::datatypes::TimestampMicrosecondType>()
                .value(r);
            let t = chrono::DateTime::from_timestamp_micros(us)
                .unwrap()
                .naive_utc();
            json!(t.format("%Y-%m-%dT%H:%M:%S").to_string())
        }
        other => panic!("unexpected Parquet type {other}"),
    }
}

#[tokio::test]
async fn readiness_refusals_name_the_table() {
    let app = TestApp::new().await;
    let id = app.user("refusals").await;
    let tf = json!({"anchor": "2025-03-30", "past": {"value": 7, "unit": "day"}});
    for (query, needle) in [
        (
            json!({"select": [{"derived_readiness": "recovery"}]}),
            "unknown derived_readiness column",
        ),
        (
            json!({"select": [{"derived_readiness": "sleep_score"}, {"value_macro": "chronotype"}]}),
            "value macros are the sleep table's",
        ),
        (
            json!({"select": [{"func": "mean", "arg": {"derived_readiness": "recovery_zone"}}]}),
            "mean cannot aggregate recovery_zone",
        ),
        (
            json!({"select": [{"derived_readiness": "sleep_score"}], "where": "score > 3"}),
            "score",
        ),
    ] {
        let body = json!({"timeframe": tf, "queries": [query]});
        let a = query_json(&app, &id, &body).await;
        assert_eq!(a.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", a.json);
        assert!(a.json.to_string().contains(needle), "{needle}: {}", a.json);
    }
}

async fn query_json(app: &TestApp, id: &str, body: &Value) -> support::Answer {
    app.aggregate(id, body, None).await
}
