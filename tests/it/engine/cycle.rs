//! The `menstrual_cycle` table and scalar-output subqueries over list columns (issue 39,
//! `analytics.md` §3): push (JSON and columnar) and getter round trips in the reference's shape,
//! subquery answers against values computed here from the pushed fixture, the same answers in
//! JSON and Parquet, a grouped query with an outer aggregate, and every subquery rule's 422.

mod push;
mod refusals;
mod subquery;

use serde_json::{Value, json};

use crate::support::{Answer, TestApp};

/// The provider the fixture comes from.
pub const PROVIDER: &str = "apple_health_kit";
/// The aggregate timeframe covering the fixture.
pub const TIMEFRAME: &str = r#"{"anchor": "2025-03-31", "past": {"value": 3, "unit": "month"}}"#;

fn day(d: &str, extra: Value) -> Value {
    let mut v = json!({"date": d});
    for (k, x) in extra.as_object().unwrap() {
        v[k] = x.clone();
    }
    v
}

/// Three cycles: two complete with entries in every kind of list (and a null
/// `protection_used`), one predicted with no end and empty lists.
pub fn cycles() -> Value {
    let flow = |d: &str, f: &str| day(d, json!({"flow": f}));
    let bbt = |d: &str, v: f64| day(d, json!({"value": v}));
    json!([
        {
            "period_start": "2025-01-03", "period_end": "2025-01-07", "cycle_end": "2025-01-30",
            "is_predicted": false,
            "menstrual_flow": [flow("2025-01-03", "light"), flow("2025-01-04", "heavy"),
                               flow("2025-01-05", "heavy"), flow("2025-01-06", "medium"),
                               flow("2025-01-07", "light")],
            "cervical_mucus": [day("2025-01-14", json!({"quality": "egg_white"})),
                               day("2025-01-15", json!({"quality": "watery"}))],
            "intermenstrual_bleeding": [{"date": "2025-01-20"}],
            "contraceptive": [day("2025-01-03", json!({"type": "oral"}))],
            "detected_deviations": [],
            "ovulation_test": [day("2025-01-15", json!({"test_result": "negative"})),
                               day("2025-01-16", json!({"test_result": "luteinizing_hormone_surge"}))],
            "home_pregnancy_test": [day("2025-01-29", json!({"test_result": "negative"}))],
            "home_progesterone_test": [],
            "sexual_activity": [day("2025-01-12", json!({"protection_used": true})),
                                day("2025-01-16", json!({"protection_used": null}))],
            "basal_body_temperature": [bbt("2025-01-03", 36.31), bbt("2025-01-08", 36.22),
                                       bbt("2025-01-15", 36.18), bbt("2025-01-17", 36.71),
                                       bbt("2025-01-22", 36.84)]
        },
        {
            "period_start": "2025-01-31", "period_end": "2025-02-04", "cycle_end": "2025-02-27",
            "menstrual_flow": [flow("2025-01-31", "medium"), flow("2025-02-01", "heavy"),
                               flow("2025-02-02", "medium"), flow("2025-02-03", "unspecified")],
            "detected_deviations": [day("2025-02-20", json!({"deviation": "irregular_menstrual_cycles"}))],
            "home_progesterone_test": [day("2025-02-21", json!({"test_result": "positive"}))],
            "basal_body_temperature": [bbt("2025-02-01", 36.4), bbt("2025-02-05", 36.25),
                                       bbt("2025-02-12", 36.12), bbt("2025-02-14", 36.66),
                                       bbt("2025-02-19", 36.9), bbt("2025-02-25", 36.75)]
        },
        {"period_start": "2025-02-28", "is_predicted": true}
    ])
}

/// A user with the fixture pushed as JSON.
pub async fn user_with_cycles(app: &TestApp, name: &str) -> String {
    let user = app.user(name).await;
    let a = app
        .post(
            &format!("/v2/user/{user}/data"),
            json!({"provider": PROVIDER, "menstrual_cycle": cycles()}),
        )
        .await;
    assert_eq!(a.status, 200, "{}", a.json);
    assert_eq!(a.json["stored"], json!({"menstrual_cycle": 3}));
    user
}

/// The getter's answer over the fixture's months.
pub async fn getter(app: &TestApp, user: &str) -> Answer {
    app.get(&format!(
        "/v2/summary/menstrual_cycle/{user}?start_date=2025-01-01&end_date=2025-03-31"
    ))
    .await
}

/// Runs one aggregate body with `queries` over the fixture's timeframe.
pub async fn query(app: &TestApp, user: &str, queries: Value, accept: Option<&str>) -> Answer {
    let body = json!({
        "timeframe": serde_json::from_str::<Value>(TIMEFRAME).unwrap(),
        "queries": queries,
    });
    let req = axum::http::Request::builder()
        .method("POST")
        .uri(format!("/aggregate/v1/user/{user}/query"))
        .header("x-service-api-key", &app.key)
        .header("content-type", "application/json");
    let req = match accept {
        Some(a) => req.header("accept", a),
        None => req,
    };
    app.raw(req.body(axum::body::Body::from(body.to_string())).unwrap())
        .await
}
