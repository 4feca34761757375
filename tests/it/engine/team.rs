//! `POST /aggregate/v1/team/query` (`analytics.md` §5) over a cohort of 20 users in five zones,
//! with overlapping providers (two on some days, one on others, none for some users), one
//! user's ingestion start inside the window, all pushed through the push API:
//! - seeded random queries against the per-user endpoint: a query split by user answers
//!   exactly the per-user answers stacked with the user's id as a key; a query across users
//!   answers the per-user answers combined (counts and sums added, extremes taken, means
//!   weighted by their counts);
//! - the cross-user aggregates every function has (mean, median, stddev, newest, oldest...)
//!   against an independent pandas computation over the pushed rows
//!   (`tests/python/team_reference.py`);
//! - the `users` selector, the 422s of the team dialect, the per-team concurrency limit, the
//!   Parquet answer, and that another team's users are never read.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use axum::body::Body;
use axum::http::Request;
use chrono::{Duration, NaiveDate};
use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::compute::concat_batches;
use datafusion::arrow::datatypes::{DataType, Float64Type};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{Value, json};

use crate::support::{TestApp, assert_422_at};

/// A 422's location as the answer spells it.
fn loc(parts: Value) -> Vec<Value> {
    parts.as_array().expect("a list").clone()
}

const ZONES: [&str; 5] = [
    "UTC",
    "America/New_York",
    "Asia/Tokyo",
    "Europe/Berlin",
    "Australia/Adelaide",
];
const USERS: usize = 20;
const DAYS: i64 = 6;
/// Best first: the requests' `provider_priority_overrides`. Both are rings: the source type
/// ranks before the provider (§3.5), so two of one type leave the choice to the overrides.
const PROVIDERS: [&str; 2] = ["ultrahuman", "oura"];
const FUNCS: [&str; 9] = [
    "mean", "median", "count", "min", "max", "sum", "stddev", "newest", "oldest",
];
/// The functions whose per-user answers combine into the cross-user one.
const COMBINABLE: [&str; 5] = ["mean", "count", "min", "max", "sum"];
const COUNT: &str = "count.heartrate.value";

fn first_day() -> NaiveDate {
    NaiveDate::from_ymd_opt(2025, 3, 1).unwrap()
}

fn timeframe() -> Value {
    let anchor = first_day() + Duration::days(DAYS - 1);
    json!({"anchor": anchor.to_string(), "past": {"value": 10, "unit": "day"}})
}

/// A cohort member as the test knows it.
struct Member {
    id: String,
    client: String,
    zone: &'static str,
    ingestion_start: Option<NaiveDate>,
}

/// The cohort and every sample pushed for it (as the pandas reference reads them).
struct Cohort {
    members: Vec<Member>,
    rows: Vec<Value>,
}

/// Creates the cohort and pushes its heart rate: every 20 minutes (offset by the user's index
/// in seconds, so no two users' samples share a local instant), each provider on its own
/// random days, integer values (sums are exact in any order).
async fn cohort(app: &TestApp, rng: &mut ChaCha8Rng) -> Cohort {
    let mut members = Vec::new();
    let mut rows = Vec::new();
    for u in 0..USERS {
        let zone = ZONES[u % ZONES.len()];
        let client = format!("member-{u:02}");
        let ingestion_start = (u == 3).then(|| first_day() + Duration::days(2));
        let mut body = json!({"client_user_id": client, "fallback_time_zone": zone});
        if let Some(d) = ingestion_start {
            body["ingestion_start"] = json!(d.to_string());
        }
        let a = app.post("/v2/user/", body).await;
        assert_eq!(a.status, 200, "{}", a.json);
        let id = a.json["user_id"].as_str().unwrap().to_owned();
        // Every seventh user has no data: it contributes nothing, and must not break anything.
        let providers: &[&str] = match u % 7 {
            6 => &[],
            0 | 3 => &PROVIDERS[1..],
            _ => &PROVIDERS,
        };
        for provider in providers {
            let days: Vec<i64> = (0..DAYS).filter(|_| rng.gen_bool(0.7)).collect();
            let base = first_day().and_hms_opt(0, 0, 0).unwrap().and_utc();
            let mut samples = Vec::new();
            for d in days {
                for slot in 0..72 {
                    let at = base
                        + Duration::days(d)
                        + Duration::minutes(slot * 20)
                        + Duration::seconds(u as i64);
                    let value = f64::from(rng.gen_range(45..170));
                    let timestamp = at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
                    samples.push(json!({"timestamp": timestamp, "value": value, "unit": "bpm"}));
                    rows.push(json!({"user_id": id, "provider": provider,
                                     "timestamp": timestamp, "value": value}));
                }
            }
            if samples.is_empty() {
                continue;
            }
            let push = json!({"provider": provider, "timeseries": {"heartrate": samples}});
            let a = app.post(&format!("/v2/user/{id}/data"), push).await;
            assert_eq!(a.status, 200, "{}", a.json);
        }
        members.push(Member {
            id,
            client,
            zone,
            ingestion_start,
        });
    }
    Cohort { members, rows }
}

/// One random team query and the selector it runs with.
#[derive(Debug, Clone)]
struct Case {
    /// Group keys other than the user's, as the per-user query has them.
    keys: Vec<Value>,
    /// The user key and its place among the team query's keys.
    user_key: Option<(usize, &'static str)>,
    funcs: Vec<&'static str>,
    filter: Option<&'static str>,
    /// `None`: every user; else the selected members' indices and which id names them.
    selected: Option<(Vec<usize>, &'static str)>,
}

fn random_case(rng: &mut ChaCha8Rng) -> Case {
    let mut pool = vec![
        json!({"date_trunc": {"value": 1, "unit": "day"}, "arg": {"index": "timeseries"}}),
        json!({"date_trunc": {"value": 6, "unit": "hour"}, "arg": {"index": "timeseries"}}),
        json!({"date_part": "weekday", "arg": {"index": "timeseries"}}),
        json!({"source": "source_provider"}),
    ];
    pool.shuffle(rng);
    let mut keys: Vec<Value> = pool.into_iter().take(rng.gen_range(0..=2)).collect();
    // At most one date_trunc a query.
    let mut truncs = 0;
    keys.retain(|k| {
        truncs += usize::from(k.get("date_trunc").is_some());
        k.get("date_trunc").is_none() || truncs == 1
    });
    let user_key = rng.gen_bool(0.5).then(|| {
        let which = if rng.gen_bool(0.5) {
            "user_id"
        } else {
            "client_user_id"
        };
        (rng.gen_range(0..=keys.len()), which)
    });
    let mut funcs = FUNCS.to_vec();
    funcs.shuffle(rng);
    funcs.truncate(rng.gen_range(1..=4));
    let filter = rng.gen_bool(0.3).then_some("value > 90");
    let selected = match rng.gen_range(0..3) {
        0 => None,
        n => {
            let mut picked: Vec<usize> = (0..USERS).filter(|_| rng.gen_bool(0.5)).collect();
            if picked.is_empty() {
                picked.push(1);
            }
            Some((
                picked,
                if n == 1 {
                    "user_ids"
                } else {
                    "client_user_ids"
                },
            ))
        }
    };
    Case {
        keys,
        user_key,
        funcs,
        filter,
        selected,
    }
}

fn aggregates(funcs: &[&str]) -> Vec<Value> {
    funcs
        .iter()
        .map(|f| json!({"func": f, "arg": {"timeseries": "heartrate", "field": "value"}}))
        .collect()
}

fn body(case: &Case, team: bool, funcs: &[&str], cohort: &Cohort) -> Value {
    let mut group_by = case.keys.clone();
    if team && let Some((at, which)) = case.user_key {
        group_by.insert(at, json!({"user": which}));
    }
    let mut select = Vec::new();
    if !group_by.is_empty() {
        select.push(json!({"group_key": "*"}));
    }
    select.extend(aggregates(funcs));
    let mut query = json!({"select": select, "group_by": group_by});
    if let Some(w) = case.filter {
        query["where"] = json!(w);
    }
    let mut body = json!({
        "timeframe": timeframe(),
        "queries": [query],
        "config": {"provider_priority_overrides": PROVIDERS},
    });
    if team && let Some((picked, which)) = &case.selected {
        let ids: Vec<&str> = picked
            .iter()
            .map(|&i| {
                let m = &cohort.members[i];
                if *which == "user_ids" {
                    m.id.as_str()
                } else {
                    m.client.as_str()
                }
            })
            .collect();
        body["users"] = json!({ *which: ids });
    }
    body
}

/// A JSON answer's one table as rows of (column, value), in the answer's order.
fn table_rows(answer: &Value) -> Vec<Vec<(String, Value)>> {
    let table = answer["results"][0]["table"].as_object().expect("a table");
    let n = table
        .values()
        .next()
        .map_or(0, |c| c.as_array().unwrap().len());
    (0..n)
        .map(|r| {
            table
                .iter()
                .map(|(name, col)| (name.clone(), col[r].clone()))
                .collect()
        })
        .collect()
}

/// Ascending, nulls last; numbers numerically, strings bytewise (the answer's key order).
fn cmp_value(a: &Value, b: &Value) -> Ordering {
    match (a, b) {
        (Value::Null, Value::Null) => Ordering::Equal,
        (Value::Null, _) => Ordering::Greater,
        (_, Value::Null) => Ordering::Less,
        (Value::Number(x), Value::Number(y)) => x.as_f64().unwrap().total_cmp(&y.as_f64().unwrap()),
        (Value::String(x), Value::String(y)) => x.cmp(y),
        _ => panic!("keys of different types: {a} {b}"),
    }
}

fn close(a: &Value, b: &Value) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => (x - y).abs() <= 1e-9 * x.abs().max(y.abs()).max(1.0),
        _ => a == b,
    }
}

fn selected_members<'c>(case: &Case, cohort: &'c Cohort) -> Vec<&'c Member> {
    match &case.selected {
        None => cohort.members.iter().collect(),
        Some((picked, _)) => picked.iter().map(|&i| &cohort.members[i]).collect(),
    }
}

/// The team answer a query split by user must give: each user's per-user answer with the
/// user's id inserted among the keys, sorted by the keys.
fn stacked(case: &Case, per_user: &[(&Member, Value)]) -> Vec<Vec<(String, Value)>> {
    let (at, which) = case.user_key.unwrap();
    let n_keys = case.keys.len() + 1;
    let mut rows: Vec<Vec<(String, Value)>> = Vec::new();
    for (m, answer) in per_user {
        for row in table_rows(answer) {
            let mut keys: Vec<Value> = row[..case.keys.len()].iter().map(|c| c.1.clone()).collect();
            let id = if which == "user_id" { &m.id } else { &m.client };
            keys.insert(at, json!(id));
            let mut out: Vec<(String, Value)> = keys
                .into_iter()
                .enumerate()
                .map(|(i, v)| (format!("group_key.{i}"), v))
                .collect();
            out.extend(row[case.keys.len()..].iter().cloned());
            rows.push(out);
        }
    }
    rows.sort_by(|a, b| {
        (0..n_keys)
            .map(|i| cmp_value(&a[i].1, &b[i].1))
            .find(|o| o.is_ne())
            .unwrap_or(Ordering::Equal)
    });
    rows
}

/// The team answer's combinable columns of a query across users, from the per-user answers
/// (each asked with a `count`, added when the query has none): per key tuple, counts and sums added, extremes taken,
/// means weighted by counts.
fn combined(case: &Case, per_user: &[(&Member, Value)]) -> BTreeMap<String, BTreeMap<String, f64>> {
    let k = case.keys.len();
    // Per key tuple: each user's aggregate cells and its count.
    type Parts = Vec<(Vec<(String, Value)>, f64)>;
    let mut acc: BTreeMap<String, Parts> = BTreeMap::new();
    for (_, answer) in per_user {
        for row in table_rows(answer) {
            let key =
                serde_json::to_string(&row[..k].iter().map(|c| &c.1).collect::<Vec<_>>()).unwrap();
            let count = row
                .iter()
                .find(|c| c.0 == COUNT)
                .and_then(|c| c.1.as_f64())
                .unwrap();
            acc.entry(key).or_default().push((row[k..].to_vec(), count));
        }
    }
    let mut out = BTreeMap::new();
    for (key, parts) in acc {
        let mut cols = BTreeMap::new();
        let total: f64 = parts.iter().map(|p| p.1).sum();
        for (j, f) in case.funcs.iter().enumerate() {
            if !COMBINABLE.contains(f) {
                continue;
            }
            let vals: Vec<(f64, f64)> = parts
                .iter()
                .filter_map(|(row, c)| row[j].1.as_f64().map(|v| (v, *c)))
                .collect();
            if vals.is_empty() {
                continue;
            }
            let v = match *f {
                "count" | "sum" => vals.iter().map(|v| v.0).sum(),
                "min" => vals.iter().map(|v| v.0).fold(f64::INFINITY, f64::min),
                "max" => vals.iter().map(|v| v.0).fold(f64::NEG_INFINITY, f64::max),
                _ => vals.iter().map(|(m, c)| m * c).sum::<f64>() / total,
            };
            cols.insert(format!("{f}.heartrate.value"), v);
        }
        out.insert(key, cols);
    }
    out
}

async fn per_user_answers<'c>(
    app: &TestApp,
    case: &Case,
    funcs: &[&str],
    cohort: &'c Cohort,
) -> Vec<(&'c Member, Value)> {
    let mut out = Vec::new();
    for m in selected_members(case, cohort) {
        let a = app
            .post(
                &format!("/aggregate/v1/user/{}/query", m.id),
                body(case, false, funcs, cohort),
            )
            .await;
        assert_eq!(a.status, 200, "{}", a.json);
        out.push((m, a.json));
    }
    out
}

#[tokio::test]
async fn team_answers_equal_the_per_user_answers_combined() {
    let app = TestApp::new().await;
    let mut rng = ChaCha8Rng::seed_from_u64(41);
    let cohort = cohort(&app, &mut rng).await;
    let (mut split, mut across, mut nonempty) = (0, 0, 0);
    for n in 0..24 {
        let case = random_case(&mut rng);
        let team = app
            .post(
                "/aggregate/v1/team/query",
                body(&case, true, &case.funcs, &cohort),
            )
            .await;
        assert_eq!(team.status, 200, "case {n} {case:?}: {}", team.json);
        let got = table_rows(&team.json);
        nonempty += usize::from(!got.is_empty());
        if case.user_key.is_some() {
            split += 1;
            let per_user = per_user_answers(&app, &case, &case.funcs, &cohort).await;
            let want = stacked(&case, &per_user);
            assert_eq!(got, want, "case {n} {case:?}");
        } else {
            across += 1;
            let mut funcs = case.funcs.clone();
            if !funcs.contains(&"count") {
                funcs.push("count");
            }
            let per_user = per_user_answers(&app, &case, &funcs, &cohort).await;
            let want = combined(&case, &per_user);
            assert_eq!(got.len(), want.len(), "case {n} {case:?}: groups");
            for row in &got {
                let k = case.keys.len();
                let key = serde_json::to_string(&row[..k].iter().map(|c| &c.1).collect::<Vec<_>>())
                    .unwrap();
                let expected = want
                    .get(&key)
                    .unwrap_or_else(|| panic!("case {n}: unexpected group {key}"));
                for (name, v) in &row[k..] {
                    if let Some(e) = expected.get(name) {
                        assert!(
                            close(v, &json!(e)),
                            "case {n} {case:?} {key} {name}: {v} vs {e}"
                        );
                    }
                }
            }
            // Keys ascending, nulls last.
            for w in got.windows(2) {
                let order = (0..case.keys.len())
                    .map(|i| cmp_value(&w[0][i].1, &w[1][i].1))
                    .find(|o| o.is_ne());
                assert_eq!(order, Some(Ordering::Less), "case {n}: rows out of order");
            }
        }
    }
    assert!(split >= 6 && across >= 6, "{split} split, {across} across");
    assert!(nonempty >= 20, "only {nonempty} of 24 answers had rows");
}

#[tokio::test]
async fn cross_user_aggregates_match_pandas_over_the_pushed_rows() {
    let app = TestApp::new().await;
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let cohort = cohort(&app, &mut rng).await;
    let select: Vec<Value> = std::iter::once(json!({"group_key": 0}))
        .chain(aggregates(&FUNCS))
        .collect();
    let request = json!({
        "timeframe": timeframe(),
        "queries": [{"select": select,
                     "group_by": [{"date_trunc": {"value": 1, "unit": "day"}, "arg": {"index": "timeseries"}}]}],
        "config": {"provider_priority_overrides": PROVIDERS},
    });
    let a = app.post("/aggregate/v1/team/query", request.clone()).await;
    assert_eq!(a.status, 200, "{}", a.json);
    let users: Vec<Value> = cohort
        .members
        .iter()
        .map(|m| {
            json!({"user_id": m.id, "zone": m.zone,
                        "ingestion_start": m.ingestion_start.map(|d| d.to_string())})
        })
        .collect();
    let anchor = first_day() + Duration::days(DAYS - 1);
    let window = [
        (anchor - Duration::days(10)).to_string(),
        anchor.to_string(),
    ];
    let input =
        json!({"users": users, "rows": cohort.rows, "providers": PROVIDERS, "window": window});
    let out =
        crate::support::provision::run_python_with_input("team_reference.py", &input.to_string());
    let reference: BTreeMap<String, BTreeMap<String, Value>> = serde_json::from_str(&out).unwrap();
    let got = table_rows(&a.json);
    assert_eq!(got.len(), reference.len(), "days: {}", a.json);
    // Local days reach before the first UTC day (New York) and after the last (Tokyo).
    assert!(got.len() > DAYS as usize, "{}", a.json);
    for row in got {
        let day = row[0].1.as_str().unwrap()[..10].to_owned();
        let want = &reference[&day];
        for (name, v) in &row[1..] {
            let func = name.split('.').next().unwrap();
            assert!(
                close(v, &want[func]),
                "{day} {name}: {v} vs pandas {}",
                want[func]
            );
        }
    }
}

#[tokio::test]
async fn the_users_selector_the_team_dialect_and_the_concurrency_limit() {
    let app = TestApp::new().await;
    let theirs = app.foreign_user().await;
    let ours = app.user("ours").await;
    let hr = json!([{"timestamp": "2025-03-05T10:00:00Z", "value": 60.0, "unit": "bpm"}]);
    for user in [&ours, &theirs] {
        let key = if *user == ours {
            app.key.clone()
        } else {
            app.other_key.clone()
        };
        let a = app
            .send(
                "POST",
                &format!("/v2/user/{user}/data"),
                Some(&key),
                Some(json!({"provider": "oura", "timeseries": {"heartrate": hr}})),
            )
            .await;
        assert_eq!(a.status, 200, "{}", a.json);
    }
    let query = |group_by: Value, extra: Value| {
        let mut body = json!({
            "timeframe": timeframe(),
            "queries": [{"select": [{"group_key": "*"},
                                    {"func": "count", "arg": {"timeseries": "heartrate", "field": "value"}}],
                         "group_by": group_by}],
        });
        if let Value::Object(o) = extra {
            body.as_object_mut().unwrap().extend(o);
        }
        body
    };
    // Only the key's team is read: one user, one sample.
    let a = app
        .post(
            "/aggregate/v1/team/query",
            query(json!([{"user": "client_user_id"}]), json!({})),
        )
        .await;
    assert_eq!(a.status, 200, "{}", a.json);
    assert_eq!(
        a.json["results"][0]["table"],
        json!({"group_key.0": ["ours"], COUNT: [1]})
    );
    // 422s, each at its place: another team's user (named), an unknown id, a malformed
    // selector; a user key naming neither id, or in the per-user dialect; a row-level team
    // query; ALIGN without a user key.
    let by_user = json!([{"user": "user_id"}]);
    let rows = json!({"timeframe": timeframe(),
        "queries": [{"select": [{"timeseries": "heartrate", "field": "value"}]}]});
    let mut aligned = query(
        json!([{"date_trunc": {"value": 1, "unit": "day"}, "arg": {"index": "timeseries"}}]),
        json!({}),
    );
    aligned["queries"][0]["align"] = json!({"carry": {"mode": "carry_forward"}});
    let team_path = "/aggregate/v1/team/query".to_owned();
    let refused = [
        (
            team_path.clone(),
            query(by_user.clone(), json!({"users": {"user_ids": [theirs]}})),
            json!(["body", "users", "user_ids"]),
        ),
        (
            team_path.clone(),
            query(by_user.clone(), json!({"users": {"user_ids": ["nope"]}})),
            json!(["body", "users", "user_ids", 0]),
        ),
        (
            team_path.clone(),
            query(by_user.clone(), json!({"users": {"everyone": true}})),
            json!(["body", "users"]),
        ),
        (
            team_path.clone(),
            query(json!([{"user": "email"}]), json!({})),
            json!(["body", "queries", 0, "group_by", 0, "user"]),
        ),
        (
            format!("/aggregate/v1/user/{ours}/query"),
            query(by_user.clone(), json!({})),
            json!(["body", "queries", 0, "group_by", 0]),
        ),
        (
            team_path.clone(),
            rows,
            json!(["body", "queries", 0, "select"]),
        ),
        (
            team_path,
            aligned.clone(),
            json!(["body", "queries", 0, "align"]),
        ),
    ];
    for (path, body, at) in refused {
        let a = app.post(&path, body).await;
        assert_422_at(&a, &loc(at));
    }
    let a = app
        .post(
            "/aggregate/v1/team/query",
            query(by_user.clone(), json!({"users": {"user_ids": [theirs]}})),
        )
        .await;
    assert!(a.json.to_string().contains(&theirs), "{}", a.json);
    // With a user key, ALIGN fills each user's gaps as the per-user query does.
    aligned["queries"][0]["group_by"]
        .as_array_mut()
        .unwrap()
        .push(json!({"user": "user_id"}));
    let a = app.post("/aggregate/v1/team/query", aligned).await;
    assert_eq!(a.status, 200, "{}", a.json);
    assert_eq!(a.json["results"][0]["table"]["group_key.1"], json!([ours]));
    // The team's concurrency limit: with every slot taken, a 429 with Retry-After.
    let team = app.team().await;
    let limit = app.state.config.team_query_concurrency;
    let slots: Vec<_> = (0..limit)
        .map(|_| app.state.team_queries.enter(team.id, limit).unwrap())
        .collect();
    let a = app
        .post(
            "/aggregate/v1/team/query",
            query(json!([{"user": "user_id"}]), json!({})),
        )
        .await;
    assert_eq!(a.status, 429, "{}", a.json);
    assert!(a.headers.contains_key("retry-after"), "{:?}", a.headers);
    drop(slots);
    let a = app
        .post(
            "/aggregate/v1/team/query",
            query(json!([{"user": "user_id"}]), json!({})),
        )
        .await;
    assert_eq!(a.status, 200, "{}", a.json);
}

#[tokio::test]
async fn the_parquet_answer_holds_the_json_answer() {
    let app = TestApp::new().await;
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let cohort = cohort(&app, &mut rng).await;
    let request = json!({
        "timeframe": timeframe(),
        "queries": [
            {"select": [{"group_key": "*"}, {"func": "mean", "arg": {"timeseries": "heartrate", "field": "value"}}],
             "group_by": [{"user": "client_user_id"},
                          {"date_trunc": {"value": 1, "unit": "day"}, "arg": {"index": "timeseries"}}]},
            {"select": [{"func": "median", "arg": {"timeseries": "heartrate", "field": "value"}}]}
        ],
    });
    let json_answer = app.post("/aggregate/v1/team/query", request.clone()).await;
    assert_eq!(json_answer.status, 200, "{}", json_answer.json);
    let req = Request::builder()
        .method("POST")
        .uri("/aggregate/v1/team/query")
        .header("x-service-api-key", &app.key)
        .header("content-type", "application/json")
        .header("accept", "application/vnd.service.tar+gzip+parquet");
    let tar = app
        .raw(req.body(Body::from(request.to_string())).unwrap())
        .await;
    assert_eq!(tar.status, 200);
    let mut members = 0;
    for (i, batches) in crate::support::parquet_members(&tar.bytes)
        .iter()
        .enumerate()
    {
        let table = concat_batches(&batches[0].schema(), batches).unwrap();
        let json_table = json_answer.json["results"][i]["table"].as_object().unwrap();
        let names: Vec<&str> = json_table.keys().map(String::as_str).collect();
        let schema = table.schema();
        let got: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
        assert_eq!(got, names, "query {i}");
        for (name, cells) in json_table {
            let column = table.column_by_name(name).unwrap();
            let cells = cells.as_array().unwrap();
            assert!(!cells.is_empty(), "query {i}: no rows");
            assert_eq!(column.len(), cells.len(), "query {i} {name}");
            for (r, cell) in cells.iter().enumerate() {
                let parquet = match column.data_type() {
                    DataType::Utf8 => json!(column.as_string::<i32>().value(r)),
                    DataType::Float64 => json!(column.as_primitive::<Float64Type>().value(r)),
                    _ => continue,
                };
                // Two runs (the JSON and the Parquet request) may add a mean in another order.
                assert!(
                    close(&parquet, cell),
                    "query {i} {name} row {r}: {parquet} {cell}"
                );
            }
        }
        members += 1;
    }
    assert_eq!(members, 2);
    let clients = &json_answer.json["results"][0]["table"]["group_key.0"];
    let distinct: std::collections::HashSet<&str> = clients
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    // Users without data (every seventh) have no rows; every other one has.
    assert_eq!(distinct.len(), cohort.members.len() - 2, "{clients}");
}
