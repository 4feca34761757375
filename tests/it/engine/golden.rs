//! Golden query files, through the router: `testdata/queries/NAME.json` holds
//! `{"dataset", "user"?, "request"}`. Each case gets its own service (a team, a user with the
//! case's settings, the scenario's batches in its health store), its request is posted to
//! `/aggregate/v1/user/{id}/query`, and insta compares the snapshot
//! `snapshots/it__engine__golden__case@NAME.json.snap`:
//!
//! - `status` and `body`: the HTTP answer, so a 422's body is the real error mapping's;
//! - `plans`: per query, the physical plan's operator tree (names only, indented), so a plan that
//!   silently stops using the bucket operator, or gains a sort or a repartition, shows in the diff.
//!
//! A failing case prints a diff; `INSTA_UPDATE=always cargo test --test it golden` (or
//! `cargo insta review`) rewrites the snapshots for review.

use std::collections::HashMap;

use axum::body::Body;
use axum::http::Request;
use serde_json::{Value, json};
use uuid::Uuid;
use wearhouse::engine::{Limits, UserContext, explain_analyze, parse_request};

use super::data::batches;
use super::scenarios::scenario;
use crate::support::TestApp;

pub fn user_context(v: Option<&Value>) -> UserContext {
    let mut ctx = UserContext::default();
    let Some(v) = v else { return ctx };
    if let Some(z) = v.get("fallback_time_zone").and_then(Value::as_str) {
        ctx.fallback_time_zone = Some(z.parse().unwrap());
    }
    let date = |k: &str| v.get(k).and_then(Value::as_str).map(|s| s.parse().unwrap());
    ctx.ingestion_start = date("ingestion_start");
    ctx.ingestion_end = date("ingestion_end");
    if let Some(p) = v.get("team_priorities").and_then(Value::as_object) {
        ctx.team_priorities = p
            .iter()
            .map(|(k, v)| {
                (
                    k.clone(),
                    v.as_array()
                        .unwrap()
                        .iter()
                        .map(|s| s.as_str().unwrap().to_owned())
                        .collect(),
                )
            })
            .collect();
    }
    ctx
}

/// A service holding the case's scenario for one user set up as the case says; the user's id.
async fn service_for(case: &Value) -> (TestApp, String) {
    let app = TestApp::new().await;
    let settings = case.get("user").cloned().unwrap_or_else(|| json!({}));
    let mut new_user = json!({"client_user_id": "golden"});
    for field in ["fallback_time_zone", "ingestion_start", "ingestion_end"] {
        if let Some(v) = settings.get(field) {
            new_user[field] = v.clone();
        }
    }
    let created = app.post("/v2/user", new_user).await;
    assert_eq!(created.status, 200, "{}", created.json);
    let user = created.json["user_id"].as_str().unwrap().to_owned();
    if let Some(priorities) = settings.get("team_priorities").and_then(Value::as_object) {
        for (data_type, order) in priorities {
            let uri = format!("/v2/team/source/priorities?data_type={data_type}");
            let set = app.patch(&uri, json!({"priorities": order})).await;
            assert_eq!(set.status, 200, "{data_type}: {}", set.json);
        }
    }
    let team: Uuid = created.json["team_id"].as_str().unwrap().parse().unwrap();
    let id: Uuid = user.parse().unwrap();
    let data = scenario(case["dataset"].as_str().unwrap());
    for (dataset, parts) in batches(&data) {
        for batch in parts.into_iter().filter(|b| b.num_rows() > 0) {
            app.state
                .health
                .write(team, id, dataset, batch)
                .await
                .unwrap();
        }
    }
    (app, user)
}

/// The operator tree of every query's physical plan (names, indented as the plan nests), from
/// the engine's EXPLAIN ANALYZE over the same inputs. Empty when the request is invalid.
async fn plans(case: &Value) -> Vec<Vec<String>> {
    let limits = Limits::default();
    let Ok(req) = parse_request(&case["request"], &limits) else {
        return Vec::new();
    };
    let inputs: HashMap<_, _> = batches(&scenario(case["dataset"].as_str().unwrap()));
    let ctx = user_context(case.get("user"));
    let Ok(report) = explain_analyze(&req, &ctx, inputs, &limits).await else {
        return Vec::new();
    };
    let mut plans: Vec<Vec<String>> = Vec::new();
    for line in report.lines().skip(1) {
        if line.starts_with("query ") {
            plans.push(Vec::new());
        } else if let Some(plan) = plans.last_mut() {
            let indent = line.len() - line.trim_start().len();
            let name: String = line[indent..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                plan.push(format!("{}{name}", &line[..indent]));
            }
        }
    }
    plans
}

/// The case's snapshot: the HTTP answer and the physical plans.
async fn run_case(case: &Value) -> Value {
    let (app, user) = service_for(case).await;
    let request = Request::builder()
        .method("POST")
        .uri(format!("/aggregate/v1/user/{user}/query"))
        .header("x-service-api-key", &app.key)
        .header("content-type", "application/json")
        .body(Body::from(case["request"].to_string()))
        .unwrap();
    let answer = app.raw(request).await;
    let status = answer.status.as_u16();
    assert!(
        status == 200 || status == 422,
        "{status}: {}",
        String::from_utf8_lossy(&answer.bytes)
    );
    json!({"status": status, "body": answer.json, "plans": plans(case).await})
}

pub fn check_all() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let mut cases = 0;
    insta::glob!("../../../testdata/queries", "*.json", |path| {
        let case: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        insta::assert_json_snapshot!("case", runtime.block_on(run_case(&case)));
        cases += 1;
    });
    assert!(cases >= 40, "only {cases} golden cases");
}
