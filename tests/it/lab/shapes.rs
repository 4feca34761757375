//! The reference's models parse our answers (issue 42, shapes): every order answer (create, get,
//! list, cancel, update) validated against the reference's published OpenAPI components
//! (`testdata/reference/`) and parsed by its SDK's pydantic models, `last_event` being the newest
//! entry of `events`; `PATCH /v3/order/{id}` answers the `{order, status, message}` wrapper; a
//! profile's `wheelchair_use` is absent unless true.

use serde_json::{Value, json};

use super::{order, order_body, sandbox_test, user, walk};
use crate::support::{TestApp, full_push, reference};

/// One answer to check against the order components (`junction-openapi-models.json`).
pub(crate) fn case(name: &str, component: &str, sdk_model: &str, answer: &Value) -> Value {
    reference::case(name, component, Some(sdk_model), answer)
}

/// Checks `cases` against `junction-openapi-models.json`.
pub(crate) fn check_against_reference(cases: &[Value]) {
    reference::check("junction-openapi-models.json", cases);
}

/// `last_event` is present and equal to the newest entry of `events`.
fn assert_last_event(order: &Value) {
    let events = order["events"].as_array().unwrap();
    assert!(!events.is_empty(), "{order}");
    assert_eq!(order["last_event"], events[events.len() - 1], "{order}");
}

#[tokio::test]
async fn every_order_answer_parses_with_the_reference_models() {
    let app = TestApp::new().await;
    let key = app.key.clone();
    let u = user(&app, "shapes").await;
    let mut cases = Vec::new();

    // create
    let test = sandbox_test(&app, &key, "testkit").await;
    let created = app.post("/v3/order", order_body(&u, &test)).await;
    assert_eq!(created.status, 200, "{}", created.json);
    assert_last_event(&created.json["order"]);
    cases.push(case(
        "create",
        "PostOrderResponse",
        "PostOrderResponse",
        &created.json,
    ));

    // get, after several status changes: last_event follows
    let walked = order(&app, &u, "walk_in_test").await;
    let walked_id = walked["id"].as_str().unwrap();
    let a = walk(&app, walked_id, "appointment_scheduled").await;
    assert_eq!(a.status, 200, "{}", a.json);
    let got = app.get(&format!("/v3/order/{walked_id}")).await;
    assert_eq!(got.status, 200);
    assert!(
        got.json["events"].as_array().unwrap().len() > 1,
        "{}",
        got.json
    );
    assert_last_event(&got.json);
    assert_ne!(got.json["last_event"], got.json["events"][0]);
    cases.push(case(
        "get",
        "ClientFacingOrder",
        "ClientFacingOrder",
        &got.json,
    ));

    // update: a scheduled order's activation date, answered in the create/cancel wrapper
    let mut body = order_body(&u, &test);
    body["activate_by"] = json!("2099-06-01");
    let scheduled = app.post("/v3/order", body).await.json["order"].clone();
    let id = scheduled["id"].as_str().unwrap();
    let patched = app
        .patch(
            &format!("/v3/order/{id}"),
            json!({"activate_by": "2099-07-01"}),
        )
        .await;
    assert_eq!(patched.status, 200, "{}", patched.json);
    assert_eq!(patched.json["status"], "success");
    assert_eq!(patched.json["message"], "Order updated");
    assert_eq!(patched.json["order"]["activate_by"], "2099-07-01");
    assert_last_event(&patched.json["order"]);
    cases.push(case(
        "update",
        "PostOrderResponse",
        "PostOrderResponse",
        &patched.json,
    ));

    // cancel: the cancellation is the last event
    let cancelled = app
        .post(&format!("/v3/order/{walked_id}/cancel"), json!({}))
        .await;
    assert_eq!(cancelled.status, 200, "{}", cancelled.json);
    assert_last_event(&cancelled.json["order"]);
    assert!(
        cancelled.json["order"]["last_event"]["status"]
            .as_str()
            .unwrap()
            .ends_with("cancelled"),
        "{}",
        cancelled.json
    );
    cases.push(case(
        "cancel",
        "PostOrderResponse",
        "PostOrderResponse",
        &cancelled.json,
    ));

    // list
    let list = app.get("/v3/orders").await;
    assert_eq!(list.status, 200, "{}", list.json);
    let orders = list.json["orders"].as_array().unwrap();
    assert_eq!(orders.len(), 3, "{}", list.json);
    orders.iter().for_each(assert_last_event);
    cases.push(case(
        "list",
        "GetOrdersResponse",
        "GetOrdersResponse",
        &list.json,
    ));

    check_against_reference(&cases);
}

#[tokio::test]
async fn a_profile_carries_wheelchair_use_only_when_true() {
    let app = TestApp::new().await;
    let mut cases = Vec::new();
    for (client, wheelchair) in [("rolls", true), ("walks", false)] {
        let id = app.user(client).await;
        let mut body = full_push();
        body["profile"]["wheelchair_use"] = json!(wheelchair);
        let a = app.post(&format!("/v2/user/{id}/data"), body).await;
        assert_eq!(a.status, 200, "{}", a.json);
        let profile = app.get(&format!("/v2/summary/profile/{id}")).await;
        assert_eq!(profile.status, 200, "{}", profile.json);
        if wheelchair {
            assert_eq!(profile.json["wheelchair_use"], true, "{}", profile.json);
        } else {
            assert!(
                profile.json.get("wheelchair_use").is_none(),
                "{}",
                profile.json
            );
        }
        cases.push(case(
            client,
            "ClientFacingProfile",
            "ClientFacingProfile",
            &profile.json,
        ));
    }
    check_against_reference(&cases);
}
