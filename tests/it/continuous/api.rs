//! Registration: the continuous rules and the per-user endpoint's 422s located under
//! `body.query`, the dry run, get/list/patch/archive by id or slug, 409 on a taken slug, and
//! one team's queries and users invisible to another.

use serde_json::{Value, json};

use super::{daily_heart_rate, registration};
use crate::support::{TestApp, assert_422_at};

const BASE: &str = "/aggregate/v1/continuous_query";

#[tokio::test]
async fn registrations_break_no_rule() {
    let app = TestApp::new().await;
    let q = daily_heart_rate();
    let cases: Vec<(Value, Vec<Value>)> = vec![
        (
            json!({"title": "t", "query": q}),
            vec![json!("body"), json!("slug")],
        ),
        (
            registration("Bad_Slug", q.clone()),
            vec![json!("body"), json!("slug")],
        ),
        (
            registration("a--b", q.clone()),
            vec![json!("body"), json!("slug")],
        ),
        (
            json!({"slug": "s", "title": "x".repeat(51), "query": q}),
            vec![json!("body"), json!("title")],
        ),
        (
            json!({"slug": "s", "title": "t", "query": q,
                   "scheduling_preferences": {"minimum_gap_duration_second": 60}}),
            vec![
                json!("body"),
                json!("scheduling_preferences"),
                json!("minimum_gap_duration_second"),
            ],
        ),
        (
            json!({"slug": "s", "title": "t", "query": q, "color": "red"}),
            vec![json!("body"), json!("color")],
        ),
        // Two date_trunc group keys.
        (
            registration(
                "s",
                json!({
                    "select": [{"group_key": "*"}, {"func": "mean", "arg": {"timeseries": "heartrate", "field": "value"}}],
                    "group_by": [
                        {"date_trunc": {"value": 1, "unit": "day"}, "arg": {"index": "timeseries"}},
                        {"date_trunc": {"value": 1, "unit": "hour"}, "arg": {"index": "timeseries"}}
                    ]
                }),
            ),
            vec![json!("body"), json!("query"), json!("group_by")],
        ),
        // No date_trunc at all.
        (
            registration(
                "s",
                json!({
                    "select": [{"func": "mean", "arg": {"timeseries": "heartrate", "field": "value"}}]
                }),
            ),
            vec![json!("body"), json!("query"), json!("group_by")],
        ),
        // A group key not selected.
        (
            registration(
                "s",
                json!({
                    "select": [{"group_key": 0}, {"func": "mean", "arg": {"sleep": "efficiency"}}],
                    "group_by": [
                        {"date_trunc": {"value": 1, "unit": "week"}, "arg": {"index": "sleep"}},
                        {"source": "source_provider"}
                    ]
                }),
            ),
            vec![json!("body"), json!("query"), json!("select")],
        ),
        // The engine's own rules, located under body.query.
        (
            registration(
                "s",
                json!({
                    "select": [{"group_key": "*"}, {"func": "avg", "arg": {"sleep": "efficiency"}}],
                    "group_by": [{"date_trunc": {"value": 1, "unit": "day"}, "arg": {"index": "sleep"}}]
                }),
            ),
            vec![json!("body"), json!("query"), json!("select"), json!(1)],
        ),
    ];
    for (body, loc) in cases {
        let a = app.post(BASE, body.clone()).await;
        assert_eq!(a.status, 422, "{body}: {}", a.json);
        let locs: Vec<&Value> = a.json["detail"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| &v["loc"])
            .collect();
        assert!(
            locs.iter()
                .any(|l| l.as_array().is_some_and(|l| l.starts_with(&loc))),
            "{body}: expected a violation at {loc:?}, got {}",
            a.json
        );
    }
    assert_eq!(
        app.get(BASE).await.json["data"],
        json!([]),
        "nothing registered"
    );
}

#[tokio::test]
async fn the_dry_run_answers_the_schema_and_dependencies() {
    let app = TestApp::new().await;
    let a = app
        .post(
            &format!("{BASE}/validate"),
            json!({"query": daily_heart_rate()}),
        )
        .await;
    assert_eq!(a.status, 200, "{}", a.json);
    assert_eq!(
        a.json["result_table_schema"],
        json!({"group_key.0": "datetime", "mean.heartrate.value": "float64",
               "max.heartrate.value": "float64", "count.heartrate.value": "int64"})
    );
    assert_eq!(a.json["resource_dependencies"], json!(["heartrate"]));
    // Its order is the select's.
    let keys: Vec<&String> = a.json["result_table_schema"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(keys[0], "group_key.0");
    let bad = app
        .post(
            &format!("{BASE}/validate"),
            json!({"query": {"select": [{"group_key": "*"}]}}),
        )
        .await;
    assert_eq!(bad.status, 422, "{}", bad.json);
    assert_eq!(
        app.get(BASE).await.json["data"],
        json!([]),
        "a dry run registers nothing"
    );
}

#[tokio::test]
async fn queries_are_managed_by_id_or_slug_and_invisible_to_other_teams() {
    let app = TestApp::new().await;
    let mut body = registration(
        "sleepy",
        json!({
            "select": [{"group_key": "*"}, {"func": "mean", "arg": {"sleep": "efficiency"}}],
            "group_by": [{"date_trunc": {"value": 1, "unit": "week"}, "arg": {"index": "sleep"}}]
        }),
    );
    body["export_preferences"] =
        json!({"data_events": {"enabled": false}, "fhir_observations": false});
    let a = app.post(BASE, body.clone()).await;
    assert_eq!(a.status, 200, "{}", a.json);
    let id = a.json["id"].as_str().unwrap().to_owned();
    assert_eq!(a.json["status"], "active");
    assert_eq!(a.json["resource_dependencies"], json!(["sleep"]));
    assert_eq!(
        a.json["export_preferences"]["data_events"]["enabled"],
        false
    );
    assert_eq!(
        a.json["scheduling_preferences"]["minimum_gap_duration_second"],
        Value::Null
    );
    // A second active query with the slug is refused.
    assert_eq!(app.post(BASE, body).await.status, 409);

    let by_slug = app.get(&format!("{BASE}/sleepy")).await;
    assert_eq!(by_slug.status, 200);
    assert_eq!(by_slug.json["id"], id.as_str());
    let patched = app
        .patch(
            &format!("{BASE}/{id}"),
            json!({"title": "Weekly sleep", "scheduling_preferences": {"minimum_gap_duration_second": 3600}}),
        )
        .await;
    assert_eq!(patched.status, 200, "{}", patched.json);
    assert_eq!(patched.json["title"], "Weekly sleep");
    assert_eq!(
        patched.json["scheduling_preferences"]["minimum_gap_duration_second"],
        3600
    );
    // Only title and scheduling change.
    let refused = app
        .patch(
            &format!("{BASE}/{id}"),
            json!({"query": daily_heart_rate()}),
        )
        .await;
    assert_422_at(&refused, &[json!("body"), json!("query")]);
    assert_eq!(
        app.get(&format!("{BASE}/{id}")).await.json["title"],
        "Weekly sleep"
    );

    let list = app.get(BASE).await;
    assert_eq!(list.json["data"].as_array().unwrap().len(), 1);

    // Another team sees none of it.
    let theirs = |method: &'static str, path: String| {
        let key = app.other_key.clone();
        let app = &app;
        async move { app.send(method, &path, Some(&key), None).await }
    };
    assert_eq!(theirs("GET", format!("{BASE}/{id}")).await.status, 404);
    assert_eq!(theirs("GET", format!("{BASE}/sleepy")).await.status, 404);
    assert_eq!(theirs("DELETE", format!("{BASE}/{id}")).await.status, 404);
    assert_eq!(theirs("GET", BASE.to_owned()).await.json["data"], json!([]));
    // Nor are other teams' users reachable through it.
    let foreign = app.foreign_user().await;
    let t = app
        .get(&format!(
            "/aggregate/v1/user/{foreign}/continuous_query/{id}/result_table"
        ))
        .await;
    assert_eq!(t.status, 404, "{}", t.json);
    // A user of ours before any evaluation: no table yet.
    let ours = app.user("cq-api").await;
    let t = app
        .get(&format!(
            "/aggregate/v1/user/{ours}/continuous_query/{id}/result_table"
        ))
        .await;
    assert_eq!(t.status, 404, "{}", t.json);
    let h = app
        .get(&format!(
            "/aggregate/v1/user/{ours}/continuous_query/{id}/task_history?next_cursor=zz"
        ))
        .await;
    assert_422_at(&h, &[json!("query"), json!("next_cursor")]);
    let missing = app.get(&format!("{BASE}/no-such-query")).await;
    assert_eq!(missing.status, 404);
}
