//! The reference's timeseries names over HTTP: `body_weight` and `body_fat` as aliases of
//! `weight` and `fat`, `cholesterol/<kind>` as the samples of one `type`, `hypnogram` as the
//! sleep table's stage samples; and an open-ended window answering promptly.

use axum::http::StatusCode;
use serde_json::{Value, json};

use crate::support::{TestApp, assert_422_at, full_push};

const WINDOW: &str = "start_date=2025-03-01&end_date=2025-03-03";

async fn user_with_series(app: &TestApp) -> String {
    let id = app.user("series").await;
    let sample = |minute: u32, value: f64, kind: &str| json!({"timestamp": format!("2025-03-02T08:{minute:02}:00Z"), "value": value, "type": kind});
    let mut body = full_push();
    body["timeseries"]["cholesterol"] = json!([
        sample(0, 2.5, "ldl"),
        sample(1, 1.4, "hdl"),
        sample(2, 5.1, "total"),
    ]);
    body["timeseries"]["weight"] = json!([{"timestamp": "2025-03-02T07:00:00Z", "value": 72.5}]);
    body["timeseries"]["fat"] = json!([{"timestamp": "2025-03-02T07:00:00Z", "value": 18.5}]);
    let a = app.post(&format!("/v2/user/{id}/data"), body).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.json);
    id
}

fn values(answer: &Value) -> Vec<f64> {
    answer
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["value"].as_f64().unwrap())
        .collect()
}

#[tokio::test]
async fn reference_names_serve_their_samples() {
    let app = TestApp::new().await;
    let id = user_with_series(&app).await;
    let get = |path: String| {
        let app = &app;
        async move { app.get(&path).await }
    };
    let ldl = get(format!("/v2/timeseries/{id}/cholesterol/ldl?{WINDOW}")).await;
    assert_eq!(ldl.status, StatusCode::OK, "{}", ldl.json);
    assert_eq!(values(&ldl.json), [2.5]);
    assert_eq!(ldl.json[0]["type"], "ldl");
    let all = get(format!("/v2/timeseries/{id}/cholesterol?{WINDOW}")).await;
    assert_eq!(values(&all.json), [2.5, 1.4, 5.1]);
    let grouped = get(format!("/v2/timeseries/{id}/cholesterol/grouped?{WINDOW}")).await;
    assert_eq!(
        grouped.json["groups"]["manual"][0]["data"]
            .as_array()
            .unwrap()
            .len(),
        3
    );
    assert_eq!(
        values(
            &get(format!("/v2/timeseries/{id}/body_weight?{WINDOW}"))
                .await
                .json
        ),
        [72.5]
    );
    assert_eq!(
        values(
            &get(format!("/v2/timeseries/{id}/body_fat?{WINDOW}"))
                .await
                .json
        ),
        [18.5]
    );

    // The hypnogram: the pushed sleep's eight stages as samples, in order.
    let stages = get(format!("/v2/timeseries/{id}/hypnogram?{WINDOW}")).await;
    assert_eq!(stages.status, StatusCode::OK, "{}", stages.json);
    assert_eq!(
        values(&stages.json),
        [4.0, 2.0, 2.0, 1.0, 1.0, 3.0, 2.0, 4.0]
    );
    assert_eq!(stages.json[0]["start"], "2025-03-01T23:10:00+01:00");
    assert_eq!(stages.json[0]["end"], "2025-03-01T23:15:00+01:00");
    let grouped = get(format!("/v2/timeseries/{id}/hypnogram/grouped?{WINDOW}")).await;
    let groups = &grouped.json["groups"]["manual"];
    assert_eq!(groups[0]["source"]["provider"], "manual");
    assert_eq!(groups[0]["data"].as_array().unwrap().len(), 8);
    assert_eq!(grouped.json["next_cursor"], Value::Null);

    assert_422_at(
        &get(format!("/v2/timeseries/{id}/cholesterol/vldl?{WINDOW}")).await,
        &[json!("path"), json!("kind")],
    );
}

#[tokio::test]
async fn typed_resources_require_their_type() {
    let app = TestApp::new().await;
    let id = app.user("untyped").await;
    let body = json!({"provider": "manual", "timeseries": {"cholesterol": [
        {"timestamp": "2025-03-02T08:00:00Z", "value": 2.5}]}});
    assert_422_at(
        &app.post(&format!("/v2/user/{id}/data"), body).await,
        &[
            json!("body"),
            json!("timeseries"),
            json!("cholesterol"),
            json!(0),
            json!("type"),
        ],
    );
}

/// A window with no end is read up to a year past now, not to the end of time.
#[tokio::test]
async fn an_open_ended_window_answers_promptly() {
    let app = TestApp::new().await;
    let id = user_with_series(&app).await;
    let started = std::time::Instant::now();
    let a = app
        .get(&format!(
            "/v2/timeseries/{id}/cholesterol?start_date=2025-03-01"
        ))
        .await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.json);
    assert_eq!(values(&a.json).len(), 3);
    assert!(
        started.elapsed() < std::time::Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
}
