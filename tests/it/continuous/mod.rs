//! Continuous queries (issue 40, `analytics.md` §4) against the in-process app: registration
//! and its rules, tenancy, the result table kept equal to a fresh per-user query after every
//! change, events carrying exactly the new or changed rows, coalescing inside the minimum gap,
//! task history, the Parquet table, the FHIR R4 export.

mod api;
mod e2e;
mod evaluation;
mod fhir;
mod store;

use std::time::Duration;

use serde_json::{Value, json};
use uuid::Uuid;

use crate::support::TestApp;
use wearhouse::continuous::evaluate::Payload;
use wearhouse::continuous::{Evaluation, evaluate};

/// Daily heart rate: mean, max and count per day.
pub fn daily_heart_rate() -> Value {
    json!({
        "select": [
            {"group_key": "*"},
            {"func": "mean", "arg": {"timeseries": "heartrate", "field": "value"}},
            {"func": "max", "arg": {"timeseries": "heartrate", "field": "value"}},
            {"func": "count", "arg": {"timeseries": "heartrate", "field": "value"}}
        ],
        "group_by": [{"date_trunc": {"value": 1, "unit": "day"}, "arg": {"index": "timeseries"}}]
    })
}

/// A registration body for `query` under `slug`.
pub fn registration(slug: &str, query: Value) -> Value {
    json!({"slug": slug, "title": "Daily heart rate", "query": query})
}

/// A push of heart-rate samples `(RFC 3339 instant, bpm)`.
pub fn heart_rate(samples: &[(&str, f64)]) -> Value {
    let hr: Vec<Value> = samples
        .iter()
        .map(|(t, v)| json!({"timestamp": t, "value": v, "unit": "bpm"}))
        .collect();
    json!({"provider": "oura", "timeseries": {"heartrate": hr}})
}

/// Pushes `body` for `user` and announces it (the `events.push` job's work), which records the
/// change for continuous queries.
pub async fn push(app: &TestApp, user: &str, body: Value) {
    let a = app.post(&format!("/v2/user/{user}/data"), body).await;
    assert_eq!(a.status, 200, "{}", a.json);
    let id: Uuid = user.parse().unwrap();
    wearhouse::data::announce::announce(&app.state.meta, &app.state.health, id, chrono::Utc::now())
        .await
        .unwrap();
}

/// Evaluates (query, user) at `now`, as the job does.
pub async fn evaluate_at(
    app: &TestApp,
    (team, query): (&str, &str),
    user: &str,
    now: chrono::DateTime<chrono::Utc>,
) -> Evaluation {
    let p = Payload {
        team: team.parse().unwrap(),
        query: query.parse().unwrap(),
        user: user.parse().unwrap(),
    };
    evaluate(
        &app.state.meta,
        &app.state.health,
        &app.state.engine,
        p,
        now,
    )
    .await
    .unwrap()
}

/// Runs the app's job runner until no continuous-query, announcing or erasing job is due
/// (panics after a minute).
pub async fn settle(app: &TestApp) {
    let registry = wearhouse::app::job_registry(&app.state);
    let config = crate::jobs::support::config("cq", Duration::from_secs(30));
    let runner = wearhouse::jobs::Runner::new(app.state.meta.clone(), registry, config).spawn();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true);
        let mut conn = app.state.meta.reader().await.unwrap();
        let busy: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM jobs WHERE (kind LIKE 'continuous.%' OR kind IN ('events.push', 'store.delete_user')) \
             AND ((state = 'pending' AND run_at <= $1) OR state = 'running')",
        )
        .bind(now)
        .fetch_one(&mut *conn)
        .await
        .unwrap();
        drop(conn);
        if busy == 0 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "jobs still due after a minute"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    runner.shutdown().await;
}

/// Every `event_type` event of `user`, oldest first: each event's one `data` item.
pub async fn event_items(app: &TestApp, user: &str, event_type: &str) -> Vec<Value> {
    let a = app
        .get(&format!(
            "/v2/team/events?user_id={user}&event_type={event_type}&limit=100"
        ))
        .await;
    assert_eq!(a.status, 200, "{}", a.json);
    a.json["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            assert_eq!(e["event_type"], event_type, "{e}");
            assert_eq!(e["user_id"], user, "{e}");
            let data = e["data"].as_array().unwrap();
            assert_eq!(data.len(), 1, "{e}");
            data[0].clone()
        })
        .collect()
}

/// The `continuous_query.result_table.changed` events of `user`, oldest first: each event's
/// changed rows, as `{column: [...]}`.
pub async fn changes(app: &TestApp, user: &str) -> Vec<Value> {
    event_items(app, user, "continuous_query.result_table.changed")
        .await
        .into_iter()
        .map(|item| item["data"].clone())
        .collect()
}

/// The user's result table (`{column: [...]}`).
pub async fn table(app: &TestApp, user: &str, query: &str) -> Value {
    let a = app
        .get(&format!(
            "/aggregate/v1/user/{user}/continuous_query/{query}/result_table"
        ))
        .await;
    assert_eq!(a.status, 200, "{}", a.json);
    a.json["table"].clone()
}

/// The per-user endpoint's answer to `query` over every day of 2025.
pub async fn fresh(app: &TestApp, user: &str, query: &Value) -> Value {
    let body = json!({
        "timeframe": {"type": "relative", "anchor": "2025-12-31", "past": {"value": 1, "unit": "year"}},
        "queries": [query]
    });
    let a = app
        .post(&format!("/aggregate/v1/user/{user}/query"), body)
        .await;
    assert_eq!(a.status, 200, "{}", a.json);
    a.json["results"][0]["table"].clone()
}
