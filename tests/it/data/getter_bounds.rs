//! Getters answer promptly whatever their window (issue 35, defect 1): a window reaching back
//! to year 0 costs what the user's data costs, a bound outside 0000-01-01..9999-12-31 is a 422
//! at its parameter, and a getter past the time limit answers 504.
//!
//! Before the fix, `start_date=-262143-01-01` kept a core busy for minutes and `0000-01-01`
//! for seconds per series: every request here waits at most [`PATIENCE`], so such a server
//! fails these tests instead of hanging them.

use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use serde_json::{Value, json};
use tower::ServiceExt;
use wearhouse::http::{AppState, HttpConfig, router};

use crate::support::{Answer, TestApp, assert_422_at, full_push};

/// How long a request may take here: generous, far above what the data costs.
const PATIENCE: Duration = Duration::from_secs(20);

async fn get(app: &TestApp, uri: &str) -> Answer {
    tokio::time::timeout(PATIENCE, app.get(uri))
        .await
        .unwrap_or_else(|_| panic!("no answer within {PATIENCE:?}: GET {uri}"))
}

/// The timestamps of a plain getter's samples.
fn timestamps(a: &Answer) -> Vec<String> {
    assert_eq!(a.status, StatusCode::OK, "{}", a.json);
    a.json
        .as_array()
        .unwrap_or_else(|| panic!("not an array: {}", a.json))
        .iter()
        .map(|s| s["timestamp"].as_str().unwrap().to_owned())
        .collect()
}

/// The values of a grouped getter's samples, every group's.
fn grouped_values(a: &Answer) -> Vec<f64> {
    assert_eq!(a.status, StatusCode::OK, "{}", a.json);
    let groups = a.json["groups"]
        .as_object()
        .unwrap_or_else(|| panic!("no groups: {}", a.json));
    groups
        .values()
        .flat_map(|g| g.as_array().unwrap())
        .flat_map(|g| g["data"].as_array().unwrap())
        .map(|s| s["value"].as_f64().unwrap())
        .collect()
}

/// Pushes heart rate at `timestamps`, value 60 + index.
async fn push_heart_rate(app: &TestApp, user: &str, timestamps: &[&str]) {
    let samples: Vec<Value> = timestamps
        .iter()
        .enumerate()
        .map(|(i, t)| json!({"timestamp": t, "value": 60 + i}))
        .collect();
    let body = json!({"provider": "manual", "timeseries": {"heartrate": samples}});
    let a = app.post(&format!("/v2/user/{user}/data"), body).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.json);
}

#[tokio::test]
async fn a_window_from_year_0_answers_the_data_at_once() {
    let app = TestApp::new().await;
    let with = app.user("with-data").await;
    let a = app
        .post(&format!("/v2/user/{with}/data"), full_push())
        .await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.json);
    // Decades apart, and one far past next year: the window's start, its gaps and an open end
    // cost nothing, and nothing is cut off.
    push_heart_rate(
        &app,
        &with,
        &["1905-06-01T00:00:00Z", "2999-01-01T00:00:00Z"],
    )
    .await;
    let without = app.user("without-data").await;

    let ancient = "start_date=0000-01-01";
    let plain = get(&app, &format!("/v2/timeseries/{with}/heartrate?{ancient}")).await;
    assert_eq!(
        timestamps(&plain),
        [
            "1905-06-01T00:00:00Z",
            "2025-03-02T07:00:00+01:00",
            "2999-01-01T00:00:00Z"
        ]
    );
    let grouped = get(
        &app,
        &format!("/v2/timeseries/{with}/heartrate/grouped?{ancient}&end_date=9999-12-31"),
    )
    .await;
    let mut values = grouped_values(&grouped);
    values.sort_by(f64::total_cmp);
    assert_eq!(values, [55.5, 60.0, 61.0]);
    let steps = get(&app, &format!("/v2/timeseries/{with}/steps?{ancient}")).await;
    assert_eq!(timestamps(&steps).len(), 1, "{}", steps.json);
    let sleep = get(&app, &format!("/v2/summary/sleep/{with}?{ancient}")).await;
    assert_eq!(sleep.status, StatusCode::OK, "{}", sleep.json);
    assert_eq!(sleep.json["sleep"].as_array().unwrap().len(), 1);
    let hypnogram = get(&app, &format!("/v2/timeseries/{with}/hypnogram?{ancient}")).await;
    assert_eq!(hypnogram.status, StatusCode::OK, "{}", hypnogram.json);

    for path in [
        format!("/v2/timeseries/{without}/heartrate?{ancient}"),
        format!("/v2/timeseries/{without}/cholesterol/ldl?{ancient}"),
        format!("/v2/timeseries/{without}/steps?{ancient}&end_date=9999-12-31"),
    ] {
        let a = get(&app, &path).await;
        assert_eq!(a.status, StatusCode::OK, "{path}: {}", a.json);
        assert_eq!(a.json, json!([]), "{path}");
    }
    let a = get(
        &app,
        &format!("/v2/timeseries/{without}/heartrate/grouped?{ancient}"),
    )
    .await;
    assert!(grouped_values(&a).is_empty(), "{}", a.json);
    let a = get(&app, &format!("/v2/summary/sleep/{without}?{ancient}")).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.json);
    assert_eq!(a.json["sleep"], json!([]));
}

#[tokio::test]
async fn a_bound_outside_years_0000_to_9999_is_refused_at_its_parameter() {
    let app = TestApp::new().await;
    let with = app.user("with-data").await;
    let a = app
        .post(&format!("/v2/user/{with}/data"), full_push())
        .await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.json);
    let without = app.user("without-data").await;
    let start = [json!("query"), json!("start_date")];
    let end = [json!("query"), json!("end_date")];
    for user in [&with, &without] {
        for getter in [
            format!("/v2/timeseries/{user}/heartrate"),
            format!("/v2/timeseries/{user}/heartrate/grouped"),
            format!("/v2/timeseries/{user}/cholesterol/ldl"),
            format!("/v2/timeseries/{user}/hypnogram"),
            format!("/v2/summary/sleep/{user}"),
            format!("/v2/summary/workouts/{user}"),
        ] {
            for ancient in ["-262143-01-01", "-0001-12-31", "+10000-01-01"] {
                let a = get(&app, &format!("{getter}?start_date={ancient}")).await;
                assert_422_at(&a, &start);
            }
            let a = get(
                &app,
                &format!("{getter}?start_date=2025-01-01&end_date=+262142-12-31"),
            )
            .await;
            assert_422_at(&a, &end);
        }
    }
}

/// The same service over the same stores, with another configuration.
fn with_config(app: &TestApp, config: HttpConfig) -> AppState {
    AppState::new(app.state.meta.clone(), app.state.health.clone(), config).unwrap()
}

async fn get_from(state: &AppState, key: &str, uri: &str) -> Answer {
    let request = Request::builder()
        .uri(uri)
        .header("x-service-api-key", key)
        .body(Body::empty())
        .unwrap();
    let response = tokio::time::timeout(PATIENCE, router(state.clone()).oneshot(request))
        .await
        .unwrap_or_else(|_| panic!("no answer within {PATIENCE:?}: GET {uri}"))
        .unwrap();
    Answer::read(response).await
}

#[tokio::test]
async fn a_getter_past_the_time_limit_answers_504() {
    let app = TestApp::new().await;
    let user = app.user("dense").await;
    // 30,000 samples, one every 30 s: reading and measuring them takes well over a millisecond.
    let start = chrono::DateTime::parse_from_rfc3339("2025-03-01T00:00:00Z").unwrap();
    let samples: Vec<Value> = (0..30_000)
        .map(|i| {
            let at = start + chrono::Duration::seconds(30 * i);
            json!({"timestamp": at.to_rfc3339(), "value": 60 + i % 50})
        })
        .collect();
    let body = json!({"provider": "manual", "timeseries": {"heartrate": samples}});
    let a = app.post(&format!("/v2/user/{user}/data"), body).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.json);

    let mut tiny = HttpConfig::default();
    tiny.query_limits.timeout = Duration::from_millis(1);
    let hurried = with_config(&app, tiny);
    let window = "start_date=2025-03-01&end_date=2025-03-31";
    for getter in [
        format!("/v2/timeseries/{user}/heartrate?{window}"),
        format!("/v2/timeseries/{user}/heartrate/grouped?{window}&limit=10000"),
    ] {
        let a = get_from(&hurried, &app.key, &getter).await;
        let shown: String = a.json.to_string().chars().take(300).collect();
        assert_eq!(a.status, StatusCode::GATEWAY_TIMEOUT, "{getter}: {shown}");
        let detail = a.json["detail"].as_str().unwrap_or_default();
        assert!(detail.contains("1 ms"), "{getter}: {}", a.json);
    }
    // The same reads under the default limit answer the data.
    let relaxed = with_config(&app, HttpConfig::default());
    let a = get_from(
        &relaxed,
        &app.key,
        &format!("/v2/timeseries/{user}/heartrate?{window}"),
    )
    .await;
    assert_eq!(timestamps(&a).len(), 30_000);
}
