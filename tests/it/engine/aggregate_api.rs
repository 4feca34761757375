//! The aggregate endpoint and demo connections over the router: a demo ring and watch fill a
//! user's history, queries answer JSON or a Parquet tarball, and every refusal has its status.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::io::Read;

use axum::http::StatusCode;
use chrono::Utc;
use serde_json::{Value, json};
use support::{TestApp, assert_422_at};

async fn demo_user(app: &TestApp, providers: &[&str], days: u32) -> String {
    let id = app.user("demo-user").await;
    for provider in providers {
        let a = app.demo_connect(&id, provider, days).await;
        assert_eq!(a.json["success"], true);
    }
    id
}

fn daily_heart_rate(days: u32) -> Value {
    json!({
        "timeframe": {"type": "relative", "anchor": Utc::now().date_naive().to_string(), "past": {"value": days, "unit": "day"}},
        "queries": [{
            "select": [{"group_key": "*"},
                       {"func": "mean", "arg": {"timeseries": "heartrate", "field": "value"}},
                       {"func": "count", "arg": {"timeseries": "heartrate", "field": "value"}},
                       {"func": "max", "arg": {"timeseries": "heartrate", "field": "value"}}],
            "group_by": [{"date_trunc": {"value": 1, "unit": "day"}, "arg": {"index": "timeseries"}}]
        }, {
            "select": [{"group_key": "*"},
                       {"func": "count", "arg": {"sleep": "duration_second"}},
                       {"func": "newest", "arg": {"value_macro": "chronotype"}}],
            "group_by": [{"source": "source_provider"}, {"source": "source_type"}]
        }]
    })
}

#[tokio::test]
async fn demo_ring_and_watch_answer_json_and_parquet() {
    let app = TestApp::new().await;
    let id = demo_user(&app, &["oura", "apple_health_kit"], 7).await;
    let providers = app.get(&format!("/v2/user/providers/{id}")).await;
    let slugs: Vec<&str> = providers.json["providers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["slug"].as_str().unwrap())
        .collect();
    assert_eq!(slugs.len(), 2, "{slugs:?}");
    assert!(slugs.contains(&"oura") && slugs.contains(&"apple_health_kit"));
    let oura = providers.json["providers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["slug"] == "oura")
        .unwrap();
    assert_eq!(oura["status"], "connected");
    assert_eq!(
        oura["resource_availability"]["sleep"]["status"],
        "available"
    );
    assert_eq!(
        oura["resource_availability"]["heartrate"]["status"],
        "available"
    );

    let body = daily_heart_rate(6);
    let a = app.aggregate(&id, &body, None).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.json);
    let table = &a.json["results"][0]["table"];
    let days = table["group_key.0"].as_array().unwrap();
    assert!((5..=7).contains(&days.len()), "{table}");
    for (i, mean) in table["mean.heartrate.value"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
    {
        let mean = mean.as_f64().unwrap();
        assert!(
            (35.0..=130.0).contains(&mean),
            "day {i}: mean heart rate {mean}"
        );
        assert!(table["count.heartrate.value"][i].as_i64().unwrap() > 0);
    }
    // Both sources are present when grouping by provider and source type (priority off).
    let by_source = &a.json["results"][1]["table"];
    let providers: Vec<&str> = by_source["group_key.0"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(providers.contains(&"oura"), "{by_source}");
    assert!(
        by_source["newest.chronotype"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| ["lark", "third", "owl"].contains(&c.as_str().unwrap()))
    );

    for accept in [
        Some("*/*"),
        Some("application/json"),
        Some("text/html, application/json;q=0.9"),
    ] {
        let again = app.aggregate(&id, &body, accept).await;
        assert_eq!(again.json, a.json, "{accept:?}");
    }

    let tar = app
        .aggregate(&id, &body, Some("application/vnd.service.tar+gzip+parquet"))
        .await;
    assert_eq!(tar.status, StatusCode::OK);
    assert_eq!(
        tar.headers["content-type"],
        "application/vnd.service.tar+gzip+parquet"
    );
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(tar.bytes.as_slice()));
    let mut names = Vec::new();
    for entry in archive.entries().unwrap() {
        let mut entry = entry.unwrap();
        names.push(entry.path().unwrap().display().to_string());
        let mut bytes = Vec::new();
        entry.read_to_end(&mut bytes).unwrap();
        let reader =
            datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(
                bytes::Bytes::from(bytes),
            )
            .unwrap()
            .build()
            .unwrap();
        let rows: usize = reader.map(|b| b.unwrap().num_rows()).sum();
        let query_index: usize = names
            .last()
            .unwrap()
            .trim_end_matches(".parquet")
            .parse()
            .unwrap();
        let json_rows = a.json["results"][query_index]["table"]
            .as_object()
            .unwrap()
            .values()
            .next()
            .unwrap()
            .as_array()
            .unwrap()
            .len();
        assert_eq!(rows, json_rows, "{}", names.last().unwrap());
    }
    assert_eq!(names, ["0.parquet", "1.parquet"]);
}

#[tokio::test]
async fn refusals_have_their_statuses() {
    let app = TestApp::new().await;
    let id = app.user("q").await;
    let body = daily_heart_rate(3);
    let a = app.aggregate(&id, &body, Some("text/csv")).await;
    assert_eq!(a.status, StatusCode::NOT_ACCEPTABLE);
    assert!(
        a.json["detail"]
            .as_str()
            .unwrap()
            .contains("application/vnd.service.tar+gzip+parquet")
    );

    let foreign = app.foreign_user().await;
    assert_eq!(
        app.aggregate(&foreign, &body, None).await.status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        app.aggregate("00000000-0000-4000-8000-000000000000", &body, None)
            .await
            .status,
        StatusCode::NOT_FOUND
    );
    assert_422_at(
        &app.aggregate("nope", &body, None).await,
        &[json!("path"), json!("user_id")],
    );
    let a = app
        .send(
            "POST",
            &format!("/aggregate/v1/user/{id}/query"),
            None,
            Some(body.clone()),
        )
        .await;
    assert_eq!(a.status, StatusCode::UNAUTHORIZED);

    let mut bad = body.clone();
    bad["queries"][0]["select"][1]["func"] = json!("avg");
    assert_422_at(
        &app.aggregate(&id, &bad, None).await,
        &[
            json!("body"),
            json!("queries"),
            json!(0),
            json!("select"),
            json!(1),
            json!("func"),
        ],
    );
    let mut bad = body.clone();
    bad["extra"] = json!(1);
    assert_eq!(
        app.aggregate(&id, &bad, None).await.status,
        StatusCode::UNPROCESSABLE_ENTITY
    );

    let mut huge = body.clone();
    huge["queries"][0]["where"] = json!("x".repeat(1_100_000));
    let a = app.aggregate(&id, &huge, None).await;
    assert_eq!(a.status, StatusCode::PAYLOAD_TOO_LARGE, "{}", a.json);

    // An empty history answers empty tables, not an error.
    let a = app.aggregate(&id, &body, None).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.json);
    assert_eq!(a.json["results"][0]["table"]["group_key.0"], json!([]));
}

#[tokio::test]
async fn a_query_past_its_time_limit_answers_504() {
    let mut config = wearhouse::http::HttpConfig::default();
    config.query_limits.timeout = std::time::Duration::ZERO;
    let app = TestApp::with_config(config).await;
    let id = demo_user(&app, &["apple_health_kit"], 3).await;
    let a = app.aggregate(&id, &daily_heart_rate(3), None).await;
    assert_eq!(a.status, StatusCode::GATEWAY_TIMEOUT, "{}", a.json);
    assert!(a.json["detail"].is_string());
}

#[tokio::test]
async fn demo_connect_validates_its_body() {
    let app = TestApp::new().await;
    let id = app.user("d").await;
    let uri = "/v2/link/connect/demo";
    assert_422_at(
        &app.post(uri, json!({"user_id": id, "provider": "garmin"}))
            .await,
        &[json!("body"), json!("provider")],
    );
    assert_422_at(
        &app.post(uri, json!({"user_id": id, "provider": "nokia"}))
            .await,
        &[json!("body"), json!("provider")],
    );
    assert_422_at(
        &app.post(uri, json!({"user_id": id, "provider": "oura", "days": 0}))
            .await,
        &[json!("body"), json!("days")],
    );
    assert_422_at(
        &app.post(
            uri,
            json!({"user_id": id, "provider": "oura", "persona": "pirate"}),
        )
        .await,
        &[json!("body"), json!("persona")],
    );
    assert_422_at(
        &app.post(uri, json!({"user_id": "x", "provider": "oura"}))
            .await,
        &[json!("body"), json!("user_id")],
    );
    assert_422_at(
        &app.post(uri, json!({"provider": "oura"})).await,
        &[json!("body"), json!("user_id")],
    );
    let foreign = app.foreign_user().await;
    assert_eq!(
        app.post(uri, json!({"user_id": foreign, "provider": "oura"}))
            .await
            .status,
        StatusCode::NOT_FOUND
    );
}
