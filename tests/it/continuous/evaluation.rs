//! Evaluation: the table stays equal to a fresh per-user query, events carry exactly the new
//! or changed rows (none for a repeated push, only the late bucket for a late sample), changes
//! inside the minimum gap are coalesced, and an existing user is evaluated in the background.

use chrono::{Duration, Utc};
use serde_json::{Value, json};

use super::{
    changes, daily_heart_rate, evaluate_at, fresh, heart_rate, push, registration, settle, table,
};
use crate::support::TestApp;
use wearhouse::continuous::Evaluation;

/// Days 1 and 2 of March 2025: 60 and 70 bpm on day 1, 80 on day 2.
fn first_push() -> Value {
    heart_rate(&[
        ("2025-03-01T08:00:00Z", 60.0),
        ("2025-03-01T09:00:00Z", 70.0),
        ("2025-03-02T08:00:00Z", 80.0),
    ])
}

fn column(table: &Value, name: &str) -> Vec<Value> {
    table[name]
        .as_array()
        .unwrap_or_else(|| panic!("no {name} in {table}"))
        .clone()
}

async fn register(app: &TestApp, slug: &str, body: Value) -> (String, String) {
    let a = app.post("/aggregate/v1/continuous_query", body).await;
    assert_eq!(a.status, 200, "{}", a.json);
    assert_eq!(a.json["slug"], slug);
    (
        a.json["team_id"].as_str().unwrap().to_owned(),
        a.json["id"].as_str().unwrap().to_owned(),
    )
}

#[tokio::test]
async fn changes_are_announced_once_and_the_table_always_equals_a_fresh_query() {
    let app = TestApp::new().await;
    let user = app.user("cq-1").await;
    let query = daily_heart_rate();
    // Data before the query exists: the backfill evaluates it.
    push(&app, &user, first_push()).await;
    register(&app, "daily-hr", registration("daily-hr", query.clone())).await;
    settle(&app).await;

    let t = table(&app, &user, "daily-hr").await;
    assert_eq!(t, fresh(&app, &user, &query).await);
    assert_eq!(
        column(&t, "group_key.0"),
        vec![json!("2025-03-01T00:00:00"), json!("2025-03-02T00:00:00")]
    );
    assert_eq!(
        column(&t, "mean.heartrate.value"),
        vec![json!(65.0), json!(80.0)]
    );
    let events = changes(&app, &user).await;
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0], t, "the first evaluation announces every row");

    // The same push again: nothing changes, nothing is announced.
    push(&app, &user, first_push()).await;
    settle(&app).await;
    assert_eq!(changes(&app, &user).await.len(), 1);
    assert_eq!(table(&app, &user, "daily-hr").await, t);

    // A new day: only that row.
    push(&app, &user, heart_rate(&[("2025-03-05T12:00:00Z", 90.0)])).await;
    settle(&app).await;
    let events = changes(&app, &user).await;
    assert_eq!(events.len(), 2, "{events:?}");
    assert_eq!(
        column(&events[1], "group_key.0"),
        vec![json!("2025-03-05T00:00:00")]
    );
    assert_eq!(column(&events[1], "max.heartrate.value"), vec![json!(90.0)]);
    let t = table(&app, &user, "daily-hr").await;
    assert_eq!(t, fresh(&app, &user, &query).await);

    // A late sample in an old bucket: only that bucket, with its new values.
    push(&app, &user, heart_rate(&[("2025-03-01T20:00:00Z", 100.0)])).await;
    settle(&app).await;
    let events = changes(&app, &user).await;
    assert_eq!(events.len(), 3, "{events:?}");
    let late = &events[2];
    assert_eq!(
        column(late, "group_key.0"),
        vec![json!("2025-03-01T00:00:00")]
    );
    assert_eq!(column(late, "max.heartrate.value"), vec![json!(100.0)]);
    assert_eq!(column(late, "count.heartrate.value"), vec![json!(3)]);
    let t = table(&app, &user, "daily-hr").await;
    assert_eq!(t, fresh(&app, &user, &query).await);
    assert_eq!(column(&t, "group_key.0").len(), 3);

    // The history shows each evaluation, newest first.
    let h = app
        .get(&format!(
            "/aggregate/v1/user/{user}/continuous_query/daily-hr/task_history?limit=2"
        ))
        .await;
    assert_eq!(h.status, 200, "{}", h.json);
    let page = h.json["data"].as_array().unwrap();
    assert_eq!(page.len(), 2);
    assert!(
        page.iter().all(|t| t["status"] == "completed"),
        "{}",
        h.json
    );
    let cursor = h.json["next_cursor"].as_str().expect("a second page");
    let h2 = app
        .get(&format!(
            "/aggregate/v1/user/{user}/continuous_query/daily-hr/task_history?limit=100&next_cursor={cursor}"
        ))
        .await;
    let rest = h2.json["data"].as_array().unwrap();
    assert!(!rest.is_empty(), "{}", h2.json);
    assert_eq!(h2.json["next_cursor"], Value::Null);
    let first_seen = page
        .iter()
        .chain(rest)
        .map(|t| t["scheduled_at"].as_str().unwrap().to_owned());
    let all: Vec<String> = first_seen.collect();
    let mut sorted = all.clone();
    sorted.sort_by(|a, b| b.cmp(a));
    assert_eq!(all, sorted, "newest first across pages");
}

#[tokio::test]
async fn pushes_inside_the_minimum_gap_are_one_evaluation_announcing_their_union() {
    let app = TestApp::new().await;
    let user = app.user("cq-gap").await;
    let mut body = registration("gapped", daily_heart_rate());
    body["scheduling_preferences"] = json!({"minimum_gap_duration_second": 1800});
    let (team, query) = register(&app, "gapped", body).await;
    push(&app, &user, first_push()).await;
    let t0 = chrono::SubsecRound::trunc_subsecs(Utc::now(), 6);
    assert!(matches!(
        evaluate_at(&app, (&team, &query), &user, t0).await,
        Evaluation::Done {
            changed_rows: 2,
            events: 1
        }
    ));

    // 50 pushes, one sample each, over 50 days after the first two.
    for day in 0..50 {
        let at = (chrono::NaiveDate::from_ymd_opt(2025, 3, 10).unwrap() + Duration::days(day))
            .and_hms_opt(12, 0, 0)
            .unwrap()
            .and_utc()
            .to_rfc3339();
        push(&app, &user, heart_rate(&[(&at, 50.0 + day as f64)])).await;
    }
    // Inside the gap: the evaluation waits for its end.
    let early = evaluate_at(&app, (&team, &query), &user, t0 + Duration::minutes(10)).await;
    assert_eq!(early, Evaluation::Wait(t0 + Duration::seconds(1800)));
    // The 50 changes wait in one pending evaluation job for the pair.
    let mut conn = app.state.meta.reader().await.unwrap();
    let pending: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM jobs WHERE kind = 'continuous.evaluate' AND state = 'pending'",
    )
    .fetch_one(&mut *conn)
    .await
    .unwrap();
    drop(conn);
    assert_eq!(pending, 1);

    let after = t0 + Duration::seconds(1801);
    assert_eq!(
        evaluate_at(&app, (&team, &query), &user, after).await,
        Evaluation::Done {
            changed_rows: 50,
            events: 1
        }
    );
    let events = changes(&app, &user).await;
    assert_eq!(events.len(), 2);
    assert_eq!(events[1]["group_key.0"].as_array().unwrap().len(), 50);
    assert_eq!(events[1]["max.heartrate.value"][49], json!(99.0));
    assert_eq!(
        table(&app, &user, "gapped").await,
        fresh(&app, &user, &daily_heart_rate()).await
    );
    // Nothing left: a further run is skipped.
    assert_eq!(
        evaluate_at(&app, (&team, &query), &user, after + Duration::hours(1)).await,
        Evaluation::Skipped("no change waiting")
    );
}

#[tokio::test]
async fn the_parquet_table_holds_what_the_json_table_does() {
    use datafusion::arrow::array::{AsArray, Float64Array};
    use datafusion::arrow::datatypes::TimestampMicrosecondType;
    let app = TestApp::new().await;
    let user = app.user("cq-pq").await;
    push(&app, &user, first_push()).await;
    register(&app, "pq", registration("pq", daily_heart_rate())).await;
    settle(&app).await;
    let req = axum::http::Request::get(format!(
        "/aggregate/v1/user/{user}/continuous_query/pq/result_table"
    ))
    .header("x-service-api-key", &app.key)
    .header("accept", "application/vnd.apache.parquet")
    .body(axum::body::Body::empty())
    .unwrap();
    let a = app.raw(req).await;
    assert_eq!(a.status, 200);
    assert_eq!(a.headers["content-type"], "application/vnd.apache.parquet");
    let reader =
        datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(
            bytes::Bytes::from(a.bytes),
        )
        .unwrap()
        .build()
        .unwrap();
    let batches: Vec<_> = reader.collect::<Result<_, _>>().unwrap();
    let b = &batches[0];
    let days = b
        .column_by_name("group_key.0")
        .unwrap()
        .as_primitive::<TimestampMicrosecondType>();
    let means = b
        .column_by_name("mean.heartrate.value")
        .unwrap()
        .as_any()
        .downcast_ref::<Float64Array>()
        .unwrap();
    let json = table(&app, &user, "pq").await;
    assert_eq!(b.num_rows(), json["group_key.0"].as_array().unwrap().len());
    for i in 0..b.num_rows() {
        let day = chrono::DateTime::from_timestamp_micros(days.value(i))
            .unwrap()
            .naive_utc();
        assert_eq!(
            json["group_key.0"][i],
            json!(day.format("%Y-%m-%dT%H:%M:%S").to_string())
        );
        assert_eq!(json["mean.heartrate.value"][i], json!(means.value(i)));
    }
    // An unsupported Accept is a 406 naming what is supported.
    let req = axum::http::Request::get(format!(
        "/aggregate/v1/user/{user}/continuous_query/pq/result_table"
    ))
    .header("x-service-api-key", &app.key)
    .header("accept", "text/csv")
    .body(axum::body::Body::empty())
    .unwrap();
    let a = app.raw(req).await;
    assert_eq!(a.status, 406);
    assert!(
        a.json["detail"]
            .as_str()
            .unwrap()
            .contains("application/vnd.apache.parquet")
    );
}

#[tokio::test]
async fn an_archived_query_is_no_longer_evaluated_but_its_table_stays() {
    let app = TestApp::new().await;
    let user = app.user("cq-arch").await;
    push(&app, &user, first_push()).await;
    let (team, query) = register(&app, "arch", registration("arch", daily_heart_rate())).await;
    settle(&app).await;
    let before = table(&app, &user, "arch").await;
    let a = app
        .send(
            "DELETE",
            "/aggregate/v1/continuous_query/arch",
            Some(&app.key.clone()),
            None,
        )
        .await;
    assert_eq!(a.status, 200, "{}", a.json);
    assert_eq!(a.json["status"], "archived");
    push(&app, &user, heart_rate(&[("2025-03-07T12:00:00Z", 99.0)])).await;
    assert_eq!(
        evaluate_at(&app, (&team, &query), &user, Utc::now()).await,
        Evaluation::Skipped("the query is archived")
    );
    assert_eq!(table(&app, &user, &query).await, before);
    assert_eq!(changes(&app, &user).await.len(), 1);
    // The slug is free again.
    let again = app
        .post(
            "/aggregate/v1/continuous_query",
            registration("arch", daily_heart_rate()),
        )
        .await;
    assert_eq!(again.status, 200, "{}", again.json);
}

#[tokio::test]
async fn a_deleted_users_tables_vanish_with_it() {
    let app = TestApp::new().await;
    let user = app.user("cq-gone").await;
    push(&app, &user, first_push()).await;
    let (team, query) = register(&app, "gone", registration("gone", daily_heart_rate())).await;
    settle(&app).await;
    let files = |dir: &std::path::Path| -> usize {
        walk(dir)
            .iter()
            .filter(|p| p.to_string_lossy().contains("/_cq/"))
            .count()
    };
    let health = app.dir.path().join("health");
    assert_eq!(files(&health), 0, "a two-row table is kept inline");
    let before = table(&app, &user, "gone").await;

    // Deleted: invisible at once, back with the undo.
    let (team_id, user_id) = (team.parse().unwrap(), user.parse().unwrap());
    let hour = std::time::Duration::from_secs(3600);
    assert!(
        wearhouse::data::delete_user(&app.state.meta, team_id, user_id, hour)
            .await
            .unwrap()
    );
    let hidden = app
        .get(&format!(
            "/aggregate/v1/user/{user}/continuous_query/gone/result_table"
        ))
        .await;
    assert_eq!(hidden.status, 404, "{}", hidden.json);
    let undone = app
        .post(&format!("/v2/user/undo_delete?user_id={user}"), json!({}))
        .await;
    assert_eq!(undone.status, 200, "{}", undone.json);
    assert_eq!(table(&app, &user, "gone").await, before);

    // Deleted for good: its table, state and history go with its data.
    let now = std::time::Duration::ZERO;
    assert!(
        wearhouse::data::delete_user(&app.state.meta, team_id, user_id, now)
            .await
            .unwrap()
    );
    settle(&app).await;
    assert_eq!(files(&health), 0);
    let mut conn = app.state.meta.reader().await.unwrap();
    for table in ["continuous_query_users", "continuous_query_tasks"] {
        let left: i64 =
            sqlx::query_scalar(&format!("SELECT COUNT(*) FROM {table} WHERE user_id = $1"))
                .bind(&user)
                .fetch_one(&mut *conn)
                .await
                .unwrap();
        assert_eq!(left, 0, "{table}");
    }
    drop(conn);
    assert_eq!(
        evaluate_at(&app, (&team, &query), &user, Utc::now()).await,
        Evaluation::Skipped("no such query, user or change")
    );
}

#[tokio::test]
async fn a_changed_setting_the_query_reads_re_evaluates_the_table() {
    let app = TestApp::new().await;
    let user = app.user("cq-settings").await;
    let query = daily_heart_rate();
    push(&app, &user, first_push()).await;
    register(&app, "settings", registration("settings", query.clone())).await;
    settle(&app).await;
    assert_eq!(
        column(&table(&app, &user, "settings").await, "group_key.0").len(),
        2
    );

    // A new client user id reads nothing the query reads: no evaluation.
    let tasks = || async {
        let h = app
            .get(&format!(
                "/aggregate/v1/user/{user}/continuous_query/settings/task_history?limit=100"
            ))
            .await;
        h.json["data"].as_array().unwrap().len()
    };
    let before = tasks().await;
    let a = app
        .patch(
            &format!("/v2/user/{user}"),
            json!({"client_user_id": "cq-renamed"}),
        )
        .await;
    assert_eq!(a.status, 204, "{}", a.json);
    settle(&app).await;
    assert_eq!(tasks().await, before);

    // Data before 2 March is no longer read: day 1 leaves the table, which again equals a
    // fresh query. (A row leaving is not announced: events carry new or changed rows.)
    let a = app
        .patch(
            &format!("/v2/user/{user}"),
            json!({"ingestion_start": "2025-03-02"}),
        )
        .await;
    assert_eq!(a.status, 204, "{}", a.json);
    settle(&app).await;
    assert_eq!(tasks().await, before + 1);
    let t = table(&app, &user, "settings").await;
    assert_eq!(t, fresh(&app, &user, &query).await);
    assert_eq!(
        column(&t, "group_key.0"),
        vec![json!("2025-03-02T00:00:00")]
    );
    assert_eq!(changes(&app, &user).await.len(), 1);

    // And back: day 1 returns, announced as a new row.
    let a = app
        .patch(
            &format!("/v2/user/{user}"),
            json!({"ingestion_start": null}),
        )
        .await;
    assert_eq!(a.status, 204, "{}", a.json);
    settle(&app).await;
    let t = table(&app, &user, "settings").await;
    assert_eq!(t, fresh(&app, &user, &query).await);
    assert_eq!(column(&t, "group_key.0").len(), 2);
    let events = changes(&app, &user).await;
    assert_eq!(events.len(), 2, "{events:?}");
    assert_eq!(
        column(&events[1], "group_key.0"),
        vec![json!("2025-03-01T00:00:00")]
    );
}

/// Files of result tables under the test's health store.
fn result_files(app: &TestApp) -> Vec<std::path::PathBuf> {
    walk(&app.dir.path().join("health"))
        .into_iter()
        .filter(|p| p.to_string_lossy().contains("/_cq/"))
        .collect()
}

#[tokio::test]
async fn a_table_past_the_inline_limit_is_a_parquet_file_replaced_at_each_change() {
    let app = TestApp::new().await;
    let user = app.user("cq-big").await;
    // 10,000 one-minute buckets: ~320 KB as IPC, past the 256 KiB kept inline.
    let start = chrono::DateTime::parse_from_rfc3339("2025-03-01T00:00:00Z").unwrap();
    let samples: Vec<(String, f64)> = (0..10_000)
        .map(|i| {
            let t = start + Duration::minutes(i);
            (t.to_rfc3339(), 50.0 + (i % 90) as f64)
        })
        .collect();
    let refs: Vec<(&str, f64)> = samples.iter().map(|(t, v)| (t.as_str(), *v)).collect();
    push(&app, &user, heart_rate(&refs)).await;
    let mut query = daily_heart_rate();
    query["group_by"][0]["date_trunc"] = json!({"value": 1, "unit": "minute"});
    register(&app, "minutely", registration("minutely", query.clone())).await;
    settle(&app).await;
    let first = result_files(&app);
    assert_eq!(first.len(), 1, "{first:?}");
    let t = table(&app, &user, "minutely").await;
    assert_eq!(column(&t, "group_key.0").len(), 10_000);
    assert_eq!(t, fresh(&app, &user, &query).await);
    let announced = changes(&app, &user).await.len();

    // A late value in one old minute: one row announced, the file replaced by a new one.
    push(&app, &user, heart_rate(&[("2025-03-02T10:00:30Z", 199.0)])).await;
    settle(&app).await;
    let events = changes(&app, &user).await;
    assert_eq!(events.len(), announced + 1);
    let last = events.last().unwrap();
    assert_eq!(
        column(last, "group_key.0"),
        vec![json!("2025-03-02T10:00:00")]
    );
    assert_eq!(column(last, "max.heartrate.value"), vec![json!(199.0)]);
    let second = result_files(&app);
    assert_eq!(second.len(), 1, "{second:?}");
    assert_ne!(first, second, "a new file under a new name");
    assert_eq!(
        table(&app, &user, "minutely").await,
        fresh(&app, &user, &query).await
    );
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

/// A demo Oura pull's heart rate is its nights' samples (`sync::connectors::demo::generator`),
/// so how many local days a three-day history touches depends on the user's random zone and the
/// hour the test runs at: at least one night has always ended inside the window's 48 hours or more. The
/// table is therefore compared with the per-user query over a timeframe wide enough for any
/// zone, not over the table's own first and last day (which could not catch a day missing at
/// either end).
#[tokio::test]
async fn a_provider_pull_is_evaluated_like_a_push() {
    let app = TestApp::new().await;
    register(&app, "pulled", registration("pulled", daily_heart_rate())).await;
    let user = app.user("cq-pull").await;
    // The demo Oura connection's historical pull writes through the pull path.
    app.demo_connect(&user, "oura", 3).await;
    settle(&app).await;
    let t = table(&app, &user, "pulled").await;
    let days = column(&t, "group_key.0");
    assert!(!days.is_empty(), "at least one night was pulled: {t}");
    // Every local day the stored nights touch, in any zone: from a week before today (UTC) to
    // two days after it.
    let anchor = (chrono::Utc::now() + chrono::Duration::days(2)).date_naive();
    let body = json!({
        "timeframe": {"anchor": anchor.to_string(), "past": {"value": 9, "unit": "day"}},
        "queries": [daily_heart_rate()]
    });
    let a = app
        .post(&format!("/aggregate/v1/user/{user}/query"), body)
        .await;
    assert_eq!(a.status, 200, "{}", a.json);
    assert_eq!(a.json["results"][0]["table"], t);
    let announced: usize = changes(&app, &user)
        .await
        .iter()
        .map(|e| column(e, "group_key.0").len())
        .sum();
    assert!(
        announced >= days.len(),
        "every row announced: {announced} < {}",
        days.len()
    );
}
