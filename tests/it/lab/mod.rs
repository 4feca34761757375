//! Laboratory testing (issue 17): the `/v3` routes in process (`oneshot` on a SQLite store) and,
//! for the asynchronous booking across a restart, through the real binary.
//!
//! - [`routes`]: every route's success, 401 and 404 (unknown and another team's id);
//! - [`validation`]: each 422 rule of the interface;
//! - [`catalogue`], [`area`]: markers and paging, lab tests, area info against hand-computed
//!   distances, PSC import;
//! - [`orders`]: creation rules, idempotency, transitions, cancellation, results, the PDF;
//! - [`list`]: every filter, sort and page of `GET /v3/orders`;
//! - [`appointments`]: availability, the four booking paths, reschedule, cancel;
//! - [`shapes`]: our order and profile answers parsed by the reference's published models;
//! - [`bench_scenario`]: the bench's seeding and self-checks, small.

mod appointments;
mod area;
mod bench_scenario;
mod catalogue;
mod list;
mod orders;
mod routes;
pub(crate) mod shapes;
mod validation;

use serde_json::{Value, json};

use crate::support::{Answer, TestApp};

/// A user of the app's first team.
pub async fn user(app: &TestApp, client_user_id: &str) -> String {
    app.user(client_user_id).await
}

/// The id of the team's sandbox lab test of `method`.
pub async fn sandbox_test(app: &TestApp, key: &str, method: &str) -> String {
    let a = app.send("GET", "/v3/lab_tests", Some(key), None).await;
    assert_eq!(a.status, 200, "{}", a.json);
    a.json
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["method"] == method && t["auto_generated"] == true)
        .unwrap_or_else(|| panic!("no sandbox {method} test: {}", a.json))["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// A valid order body for `user` of lab test `test`, at a Phoenix address (85004, served by
/// phlebotomy).
pub fn order_body(user: &str, test: &str) -> Value {
    json!({
        "user_id": user,
        "patient_details": {
            "first_name": "Ada", "last_name": "Lovelace", "dob": "1985-12-10",
            "gender": "female", "phone_number": "+16025550123", "email": "ada@example.com"
        },
        "patient_address": {
            "first_line": "100 N 1st Ave", "city": "Phoenix", "state": "AZ",
            "zip": "85004", "country": "US"
        },
        "order_set": {"lab_test_ids": [test]}
    })
}

/// Creates an order of the team's sandbox test of `method`; the order JSON.
pub async fn order(app: &TestApp, user: &str, method: &str) -> Value {
    let key = app.key.clone();
    let test = sandbox_test(app, &key, method).await;
    let a = app.post("/v3/order", order_body(user, &test)).await;
    assert_eq!(a.status, 200, "{}", a.json);
    assert_eq!(a.json["status"], "success");
    assert_eq!(a.json["message"], "Order submitted");
    a.json["order"].clone()
}

/// Walks an order with the sandbox test route.
pub async fn walk(app: &TestApp, order: &str, to: &str) -> Answer {
    app.send(
        "POST",
        &format!("/v3/order/{order}/test?final_status={to}"),
        Some(&app.key.clone()),
        None,
    )
    .await
}

/// The low-level status of an order JSON (`<top>.<method>.<low>` of its last event).
pub fn low(order: &Value) -> String {
    order["events"]
        .as_array()
        .and_then(|e| e.last())
        .and_then(|e| e["status"].as_str())
        .and_then(|s| s.rsplit('.').next())
        .unwrap()
        .to_owned()
}
