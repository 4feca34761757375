//! Every `/v3` route: 401 without or with a wrong key, 404 for an unknown id and for another
//! team's id (answered exactly alike), and a tour that gets a success from each.

use serde_json::{Value, json};

use super::{order_body, sandbox_test, user};
use crate::support::TestApp;

const NIL: &str = "00000000-0000-4000-8000-000000000000";

fn book_body() -> Value {
    json!({"booking_key": "sbx_confirm_x"})
}

/// (method, path with `{id}` for an id, body).
fn routes() -> Vec<(&'static str, &'static str, Option<Value>)> {
    let address =
        json!({"first_line": "1 A St", "city": "Phoenix", "state": "AZ", "zip_code": "85004"});
    vec![
        ("GET", "/v3/lab_tests/labs", None),
        ("GET", "/v3/lab_tests/markers", None),
        (
            "POST",
            "/v3/lab_tests",
            Some(
                json!({"name": "n", "description": "d", "method": "walk_in_test", "marker_ids": [1001]}),
            ),
        ),
        ("GET", "/v3/lab_tests", None),
        ("GET", "/v3/lab_test", None),
        ("GET", "/v3/lab_tests/{id}", None),
        ("PATCH", "/v3/lab_tests/{id}", Some(json!({"name": "x"}))),
        ("GET", "/v3/lab_tests/{id}/markers", None),
        (
            "POST",
            "/v3/lab_tests/list_order_set_markers",
            Some(json!({})),
        ),
        ("GET", "/v3/order/area/info?zip_code=85004", None),
        ("GET", "/v3/order/psc/info?zip_code=85004&lab_id=1", None),
        ("POST", "/v3/order", Some(json!({}))),
        ("GET", "/v3/order/{id}", None),
        (
            "PATCH",
            "/v3/order/{id}",
            Some(json!({"activate_by": "2099-01-01"})),
        ),
        ("POST", "/v3/order/{id}/cancel", None),
        ("GET", "/v3/orders", None),
        ("POST", "/v3/order/{id}/test?final_status=completed", None),
        ("GET", "/v3/order/{id}/result", None),
        ("GET", "/v3/order/{id}/requisition/pdf", None),
        (
            "POST",
            "/v3/order/phlebotomy/appointment/availability",
            Some(address),
        ),
        (
            "POST",
            "/v3/order/psc/appointment/availability?lab=quest&zip_code=85004",
            None,
        ),
        (
            "POST",
            "/v3/order/{id}/phlebotomy/appointment/book",
            Some(book_body()),
        ),
        (
            "POST",
            "/v3/order/{id}/psc/appointment/book",
            Some(book_body()),
        ),
        (
            "PATCH",
            "/v3/order/{id}/phlebotomy/appointment/reschedule",
            Some(json!({"booking_key": "k"})),
        ),
        (
            "PATCH",
            "/v3/order/{id}/psc/appointment/reschedule",
            Some(json!({"booking_key": "k"})),
        ),
        (
            "PATCH",
            "/v3/order/{id}/phlebotomy/appointment/cancel",
            Some(json!({"cancellation_reason_id": "duplicate"})),
        ),
        (
            "PATCH",
            "/v3/order/{id}/psc/appointment/cancel",
            Some(json!({"cancellation_reason_id": "duplicate"})),
        ),
        ("GET", "/v3/order/{id}/phlebotomy/appointment", None),
        ("GET", "/v3/order/{id}/psc/appointment", None),
        (
            "GET",
            "/v3/order/phlebotomy/appointment/cancellation-reasons",
            None,
        ),
        (
            "GET",
            "/v3/order/psc/appointment/cancellation-reasons",
            None,
        ),
    ]
}

#[tokio::test]
async fn every_route_answers_401_without_a_valid_key() {
    let app = TestApp::new().await;
    for (method, path, body) in routes() {
        let path = path.replace("{id}", NIL);
        let a = app.send(method, &path, None, body.clone()).await;
        assert_eq!(a.status, 401, "{method} {path}: {}", a.json);
        assert_eq!(a.json["detail"], "Missing API key", "{method} {path}");
        let a = app.send(method, &path, Some("not-a-key"), body).await;
        assert_eq!(a.status, 401, "{method} {path}");
        assert_eq!(a.json["detail"], "Invalid API key", "{method} {path}");
    }
}

#[tokio::test]
async fn every_id_route_answers_404_for_unknown_and_foreign_ids_alike() {
    let app = TestApp::new().await;
    // The other team's lab test and order.
    let other = app.other_key.clone();
    let theirs = app.foreign_user().await;
    let their_test = sandbox_test(&app, &other, "walk_in_test").await;
    let created = app
        .send(
            "POST",
            "/v3/order",
            Some(&other),
            Some(order_body(&theirs, &their_test)),
        )
        .await;
    assert_eq!(created.status, 200, "{}", created.json);
    let their_order = created.json["order"]["id"].as_str().unwrap().to_owned();
    for (method, path, body) in routes() {
        if !path.contains("{id}") {
            continue;
        }
        let foreign = if path.starts_with("/v3/lab_tests/") {
            their_test.clone()
        } else {
            their_order.clone()
        };
        let unknown = app
            .send(
                method,
                &path.replace("{id}", NIL),
                Some(&app.key.clone()),
                body.clone(),
            )
            .await;
        let other_team = app
            .send(
                method,
                &path.replace("{id}", &foreign),
                Some(&app.key.clone()),
                body,
            )
            .await;
        assert_eq!(unknown.status, 404, "{method} {path}: {}", unknown.json);
        assert_eq!(
            other_team.status, 404,
            "{method} {path}: {}",
            other_team.json
        );
        assert_eq!(
            unknown.json, other_team.json,
            "{method} {path}: ids must leak nothing"
        );
        assert!(
            unknown.json["detail"]
                .as_str()
                .unwrap()
                .ends_with("not found")
        );
    }
    // The owner still sees it.
    let own = app
        .send(
            "GET",
            &format!("/v3/order/{their_order}"),
            Some(&other),
            None,
        )
        .await;
    assert_eq!(own.status, 200);
}

/// A success from every route, in the order a client meets them.
#[tokio::test]
async fn every_route_succeeds() {
    let app = TestApp::new().await;
    let u = user(&app, "tour").await;
    assert_eq!(
        app.get("/v3/lab_tests/labs")
            .await
            .json
            .as_array()
            .unwrap()
            .len(),
        4
    );
    assert_eq!(
        app.get("/v3/lab_tests/markers?lab_id=1&size=5").await.json["size"],
        5
    );
    let made = app
        .post("/v3/lab_tests", json!({"name": "Lipids", "description": "Lipid panel", "method": "at_home_phlebotomy", "marker_ids": [2132]}))
        .await;
    assert_eq!(made.status, 200, "{}", made.json);
    let test = made.json["id"].as_str().unwrap().to_owned();
    assert_eq!(
        app.get(&format!("/v3/lab_tests/{test}")).await.json["name"],
        "Lipids"
    );
    let patched = app
        .patch(
            &format!("/v3/lab_tests/{test}"),
            json!({"description": "All lipids"}),
        )
        .await;
    assert_eq!(
        patched.json["description"], "All lipids",
        "{}",
        patched.json
    );
    assert_eq!(
        app.get(&format!("/v3/lab_tests/{test}/markers")).await.json["total"],
        1
    );
    let set = app
        .post(
            "/v3/lab_tests/list_order_set_markers",
            json!({"lab_test_ids": [test], "add_on": {"marker_ids": [2001]}}),
        )
        .await;
    assert_eq!(set.json["total"], 2, "{}", set.json);
    assert_eq!(
        app.get("/v3/lab_test?lab_test_limit=2").await.json["data"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    assert_eq!(
        app.get("/v3/lab_tests")
            .await
            .json
            .as_array()
            .unwrap()
            .len(),
        5
    );
    assert_eq!(
        app.get("/v3/order/area/info?zip_code=85004").await.json["phlebotomy"]["is_served"],
        true
    );
    assert_eq!(
        app.get("/v3/order/psc/info?zip_code=85004&lab_id=4")
            .await
            .json["slug"],
        "sonora_quest"
    );

    let body = order_body(&u, &test);
    let created = app.post("/v3/order", body).await;
    assert_eq!(created.status, 200, "{}", created.json);
    let order = created.json["order"]["id"].as_str().unwrap().to_owned();
    assert_eq!(
        app.get(&format!("/v3/order/{order}")).await.json["id"],
        order.as_str()
    );
    assert_eq!(app.get("/v3/orders").await.json["total"], 1);

    let slots = app
        .post("/v3/order/phlebotomy/appointment/availability", json!({"first_line": "100 N 1st Ave", "city": "Phoenix", "state": "AZ", "zip_code": "85004"}))
        .await;
    assert_eq!(slots.status, 200, "{}", slots.json);
    let keys = super::appointments::keys(&slots.json, "sbx_confirm_");
    let booked = app
        .post(
            &format!("/v3/order/{order}/phlebotomy/appointment/book"),
            json!({"booking_key": keys[0]}),
        )
        .await;
    assert_eq!(booked.status, 200, "{}", booked.json);
    assert_eq!(booked.json["status"], "confirmed");
    assert_eq!(
        app.get(&format!("/v3/order/{order}/phlebotomy/appointment"))
            .await
            .json["status"],
        "confirmed"
    );
    let moved = app
        .patch(
            &format!("/v3/order/{order}/phlebotomy/appointment/reschedule"),
            json!({"booking_key": keys[1]}),
        )
        .await;
    assert_eq!(moved.status, 200, "{}", moved.json);
    assert_eq!(
        app.get("/v3/order/phlebotomy/appointment/cancellation-reasons")
            .await
            .status,
        200
    );
    let cancelled = app
        .patch(
            &format!("/v3/order/{order}/phlebotomy/appointment/cancel"),
            json!({"cancellation_reason_id": "customer_request", "notes": "moved away"}),
        )
        .await;
    assert_eq!(cancelled.json["status"], "cancelled", "{}", cancelled.json);
    let walked = super::walk(&app, &order, "appointment_scheduled").await;
    assert_eq!(walked.status, 200, "{}", walked.json);
    let walked = super::walk(&app, &order, "completed").await;
    assert_eq!(walked.json["status"], "completed", "{}", walked.json);
    assert!(
        !app.get(&format!("/v3/order/{order}/result")).await.json["results"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    let pdf = app.get(&format!("/v3/order/{order}/requisition/pdf")).await;
    assert_eq!(pdf.status, 200);
    assert!(pdf.bytes.starts_with(b"%PDF-"));

    // A scheduled order's activation date, an order cancellation, the PSC routes.
    let mut scheduled = order_body(&u, &test);
    scheduled["activate_by"] = json!("2099-01-01");
    let s = app.post("/v3/order", scheduled).await.json["order"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let p = app
        .patch(
            &format!("/v3/order/{s}"),
            json!({"activate_by": "2099-02-01"}),
        )
        .await;
    assert_eq!(p.json["order"]["activate_by"], "2099-02-01", "{}", p.json);
    let c = app
        .send(
            "POST",
            &format!("/v3/order/{s}/cancel"),
            Some(&app.key.clone()),
            None,
        )
        .await;
    assert_eq!(c.json["order"]["status"], "cancelled", "{}", c.json);
    assert_eq!(c.json["status"], "success", "{}", c.json);
    assert_eq!(c.json["message"], "Order cancelled", "{}", c.json);

    let walk_in = super::order(&app, &u, "walk_in_test").await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let psc = app
        .send(
            "POST",
            "/v3/order/psc/appointment/availability?lab=quest&zip_code=85004&radius=50",
            Some(&app.key.clone()),
            None,
        )
        .await;
    assert_eq!(psc.status, 200, "{}", psc.json);
    assert!(
        psc.json["slots"][0]["location"]["code"].is_string(),
        "{}",
        psc.json
    );
    let psc_keys = super::appointments::keys(&psc.json, "sbx_confirm_");
    let b = app
        .post(
            &format!("/v3/order/{walk_in}/psc/appointment/book"),
            json!({"booking_key": psc_keys[0]}),
        )
        .await;
    assert_eq!(b.json["type"], "patient_service_center", "{}", b.json);
    assert_eq!(
        app.get(&format!("/v3/order/{walk_in}/psc/appointment"))
            .await
            .json["id"],
        b.json["id"]
    );
    let r = app
        .patch(
            &format!("/v3/order/{walk_in}/psc/appointment/reschedule"),
            json!({"booking_key": psc_keys[1]}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.json);
    let c = app
        .patch(
            &format!("/v3/order/{walk_in}/psc/appointment/cancel"),
            json!({"cancellation_reason_id": "duplicate"}),
        )
        .await;
    assert_eq!(c.json["status"], "cancelled", "{}", c.json);
    assert_eq!(
        app.get("/v3/order/psc/appointment/cancellation-reasons")
            .await
            .json
            .as_array()
            .unwrap()
            .len(),
        5
    );
}
