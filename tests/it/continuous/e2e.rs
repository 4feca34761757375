//! Continuous queries against the real binary (issue 40): SIGKILL at random (seeded) moments
//! while data arrives, at least once in the middle of an evaluation, and two processes on one
//! PostgreSQL database and one bucket. After quiescence each result table equals a fresh
//! per-user query, and each change was announced exactly once: no (bucket, row) in two
//! delivered events, and each bucket's last announced row is its final row. Deliveries are
//! verified by the independent `standardwebhooks` check.

//!
//! The SIGKILL test is [`sigkill`], the two processes [`two_processes`]; the shared checks are
//! here.

mod sigkill;
mod two_processes;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use sqlx::Row;

use crate::events::support::{self as events_support, Receiver, assert_verified};
use wearhouse::store::metadata::MetadataStore;

/// The event type under test.
const CHANGED: &str = "continuous_query.result_table.changed";
/// How long quiescence may take (a dead runner's leases expire after 3 s).
const QUIET: Duration = Duration::from_secs(40);

/// Heart-rate samples of `days` days from 2025-03-01, one a minute, only the minutes `m` with
/// `m % slices == slice` (so every push touches every day); integer values, so each mean is
/// exact whatever order the rows are summed in.
fn samples(days: i64, (slice, slices): (i64, i64), salt: i64) -> Value {
    let base = chrono::DateTime::parse_from_rfc3339("2025-03-01T00:00:00Z").unwrap();
    let hr: Vec<Value> = (0..days * 1440)
        .filter(|m| m % slices == slice)
        .map(|m| {
            let at = (base + chrono::Duration::minutes(m))
                .to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
            let bpm = 45 + (m * 7919 + salt * 131) % 110;
            json!({"timestamp": at, "value": bpm as f64, "unit": "bpm"})
        })
        .collect();
    json!({"provider": "oura", "timeseries": {"heartrate": hr}})
}

/// `method path` at `base` with `key`; the JSON answer, which must be a 200.
async fn call(
    http: &reqwest::Client,
    (base, key): (&str, &str),
    method: reqwest::Method,
    path: &str,
    body: Option<&Value>,
) -> Value {
    let mut request = http
        .request(method.clone(), format!("{base}{path}"))
        .header("x-service-api-key", key);
    if let Some(body) = body {
        request = request.json(body);
    }
    let answer = request.send().await.unwrap();
    let status = answer.status();
    let text = answer.text().await.unwrap();
    assert_eq!(status, 200, "{method} {path}: {text}");
    serde_json::from_str(&text).unwrap()
}

async fn get(http: &reqwest::Client, at: (&str, &str), path: &str) -> Value {
    call(http, at, reqwest::Method::GET, path, None).await
}

async fn post(http: &reqwest::Client, at: (&str, &str), path: &str, body: &Value) -> Value {
    call(http, at, reqwest::Method::POST, path, Some(body)).await
}

/// Every stored `continuous_query.result_table.changed` event, oldest first.
async fn stored_events(http: &reqwest::Client, at: (&str, &str)) -> Vec<Value> {
    let (mut out, mut cursor) = (Vec::new(), None::<String>);
    loop {
        let mut path = format!("/v2/team/events?limit=100&event_type={CHANGED}");
        if let Some(c) = &cursor {
            path.push_str(&format!("&next_cursor={c}"));
        }
        let page = get(http, at, &path).await;
        out.extend(page["events"].as_array().unwrap().iter().cloned());
        match page["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => return out,
        }
    }
}

/// The user's result table of `query` and the per-user endpoint's fresh answer to `definition`
/// over all of 2025.
async fn table_and_fresh(
    http: &reqwest::Client,
    at: (&str, &str),
    (user, query): (&str, &str),
    definition: &Value,
) -> (Value, Value) {
    let path = format!("/aggregate/v1/user/{user}/continuous_query/{query}/result_table");
    let table = get(http, at, &path).await["table"].clone();
    let body = json!({
        "timeframe": {"type": "relative", "anchor": "2025-12-31", "past": {"value": 1, "unit": "year"}},
        "queries": [definition]
    });
    let path = format!("/aggregate/v1/user/{user}/query");
    let fresh = post(http, at, &path, &body).await["results"][0]["table"].clone();
    (table, fresh)
}

/// The rows of a columnar table `{column: [...]}`: (bucket, the row as `{column: value}`).
fn rows(table: &Value) -> Vec<(String, BTreeMap<String, Value>)> {
    let columns = table
        .as_object()
        .unwrap_or_else(|| panic!("not a table: {table}"));
    let n = columns
        .values()
        .next()
        .map_or(0, |c| c.as_array().unwrap().len());
    (0..n)
        .map(|i| {
            let row: BTreeMap<String, Value> = columns
                .iter()
                .map(|(name, values)| (name.clone(), values[i].clone()))
                .collect();
            (row["group_key.0"].to_string(), row)
        })
        .collect()
}

/// Checks the announcements (`events`, stored order) against the final tables by (query id,
/// user id): no row of a (query, user, bucket) announced twice, and every bucket's last
/// announced row is its final row (every final row announced, none that is gone). Answers the
/// rows announced.
fn check_announcements(events: &[Value], finals: &HashMap<(String, String), Value>) -> usize {
    let mut seen = BTreeSet::new();
    let mut last = BTreeMap::new();
    for event in events {
        let user = event["user_id"].as_str().unwrap().to_owned();
        for item in event["data"].as_array().unwrap() {
            let query = item["query_id"].as_str().unwrap().to_owned();
            for (bucket, row) in rows(&item["data"]) {
                let text = serde_json::to_string(&row).unwrap();
                let key = (query.clone(), user.clone(), bucket.clone());
                assert!(
                    seen.insert((key.clone(), text)),
                    "{key:?} announced twice with the same row {row:?}"
                );
                last.insert(key, row);
            }
        }
    }
    let mut finals_seen = 0;
    for ((query, user), table) in finals {
        for (bucket, row) in rows(table) {
            let key = (query.clone(), user.clone(), bucket);
            assert_eq!(last.get(&key), Some(&row), "last announced row of {key:?}");
            finals_seen += 1;
        }
    }
    assert_eq!(
        last.len(),
        finals_seen,
        "an announced bucket is not in a table"
    );
    seen.len()
}

/// Waits until no continuous-query, announcing or delivery job is pending or running; panics
/// on a failed one, or after `QUIET`.
async fn quiesce(meta: &MetadataStore) {
    let deadline = Instant::now() + QUIET;
    loop {
        let jobs = sqlx::query(
            "SELECT kind, state, last_error FROM jobs WHERE kind LIKE 'continuous.%' \
             OR kind IN ('events.push', 'webhook.deliver')",
        )
        .fetch_all(&mut *meta.reader().await.unwrap())
        .await
        .unwrap();
        let mut busy = 0;
        for job in &jobs {
            let text = |c: &str| job.get::<Option<String>, _>(c).unwrap_or_default();
            assert_ne!(
                text("state"),
                "failed",
                "{} failed: {}",
                text("kind"),
                text("last_error")
            );
            busy += usize::from(text("state") == "pending" || text("state") == "running");
        }
        if busy == 0 {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{busy} jobs still busy after {QUIET:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Every delivery of `rx` of a changed event, one per event id (a delivery cut by a kill is
/// sent again with the same id), once each of `stored` arrived; all signed with `secret`.
async fn delivered(rx: &Receiver, stored: &[Value], secret: &str) -> Vec<events_support::Received> {
    let ids: BTreeSet<String> = stored
        .iter()
        .map(|e| e["id"].as_str().unwrap().to_owned())
        .collect();
    let got = rx
        .wait_for(QUIET, "every changed event delivered", |got| {
            let arrived: BTreeSet<String> = got.iter().map(|r| r.id()).collect();
            ids.is_subset(&arrived)
        })
        .await;
    let got: Vec<_> = got
        .into_iter()
        .filter(|r| r.event_type() == CHANGED)
        .collect();
    assert_verified(secret, &got);
    let mut once = BTreeMap::new();
    for r in got {
        assert!(
            ids.contains(&r.id()),
            "delivered {} was never stored",
            r.id()
        );
        if let Some(first) = once.get(&r.id()) {
            let first: &events_support::Received = first;
            assert_eq!(first.body, r.body, "a resent delivery differs");
        } else {
            once.insert(r.id(), r);
        }
    }
    once.into_values().collect()
}

/// The flags every server of these tests runs with: webhooks to the local receiver, and a dead
/// runner's jobs taken over after 3 s.
const FLAGS: &[&str] = &["--webhook-allow-private", "--job-lease-secs", "3"];
