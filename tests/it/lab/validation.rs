//! Each 422 rule of the interface: paging (page < 1, size 0 and 101), radius 30, zip `1234`,
//! an unknown zip, notes of 1001 characters, timeouts just outside their ranges, and the
//! order's field rules. Each answer locates the problem and says what was wrong.

use serde_json::{Value, json};

use super::{order, order_body, sandbox_test, user};
use crate::support::{TestApp, assert_422_at};

fn q(name: &str) -> Vec<Value> {
    vec![json!("query"), json!(name)]
}

#[tokio::test]
async fn paging_limits_on_every_paged_list() {
    let app = TestApp::new().await;
    let key = app.key.clone();
    let test = sandbox_test(&app, &key, "walk_in_test").await;
    let lists = [
        ("GET", "/v3/lab_tests/markers".to_owned()),
        ("GET", format!("/v3/lab_tests/{test}/markers")),
        ("POST", "/v3/lab_tests/list_order_set_markers".to_owned()),
        ("GET", "/v3/orders".to_owned()),
    ];
    for (method, path) in &lists {
        for (param, value) in [
            ("page", "0"),
            ("page", "-1"),
            ("size", "0"),
            ("size", "101"),
            ("size", "x"),
        ] {
            let body = (*method == "POST").then(|| json!({}));
            let a = app
                .send(method, &format!("{path}?{param}={value}"), Some(&key), body)
                .await;
            assert_422_at(&a, &q(param));
        }
        let body = (*method == "POST").then(|| json!({}));
        let ok = app
            .send(method, &format!("{path}?page=1&size=100"), Some(&key), body)
            .await;
        assert_eq!(ok.status, 200, "{path}: {}", ok.json);
    }
    let a = app.get("/v3/lab_test?lab_test_limit=101").await;
    assert_422_at(&a, &q("lab_test_limit"));
}

#[tokio::test]
async fn area_rules() {
    let app = TestApp::new().await;
    for path in ["/v3/order/area/info", "/v3/order/psc/info"] {
        let extra = if path.ends_with("psc/info") {
            "&lab_id=1"
        } else {
            ""
        };
        let a = app
            .get(&format!("{path}?zip_code=85004&radius=30{extra}"))
            .await;
        assert_422_at(&a, &q("radius"));
        assert!(
            a.json["detail"][0]["msg"]
                .as_str()
                .unwrap()
                .contains("10, 20, 25, 50, 100")
        );
        let a = app.get(&format!("{path}?zip_code=1234{extra}")).await;
        assert_422_at(&a, &q("zip_code"));
        assert!(
            a.json["detail"][0]["msg"]
                .as_str()
                .unwrap()
                .contains("malformed")
        );
        let a = app.get(&format!("{path}?zip_code=00000{extra}")).await;
        assert_422_at(&a, &q("zip_code"));
        assert!(
            a.json["detail"][0]["msg"]
                .as_str()
                .unwrap()
                .contains("unknown zip code")
        );
        let a = app.get(&format!("{path}?zip_code=85004-1234{extra}")).await;
        assert_422_at(&a, &q("zip_code"));
        let a = app.get(&format!("{path}?radius=25{extra}")).await;
        assert_422_at(&a, &q("zip_code"));
    }
    assert_422_at(
        &app.get("/v3/order/area/info?zip_code=85004&labs=nolab")
            .await,
        &[json!("query"), json!("labs"), json!(0)],
    );
    assert_422_at(
        &app.get("/v3/order/psc/info?zip_code=85004&lab_id=9").await,
        &q("lab_id"),
    );
    let a = app
        .post(
            "/v3/order/phlebotomy/appointment/availability",
            json!({"first_line": "1", "city": "X", "state": "AZ", "zip_code": "1234"}),
        )
        .await;
    assert_422_at(&a, &[json!("body"), json!("zip_code")]);
    let a = app
        .send(
            "POST",
            "/v3/order/psc/appointment/availability?lab=quest&zip_code=85004&radius=30",
            Some(&app.key.clone()),
            None,
        )
        .await;
    assert_422_at(&a, &q("radius"));
}

#[tokio::test]
async fn booking_limits_notes_timeouts_and_zone() {
    let app = TestApp::new().await;
    let u = user(&app, "limits").await;
    let o = order(&app, &u, "at_home_phlebotomy").await;
    let id = o["id"].as_str().unwrap();
    let path = format!("/v3/order/{id}/phlebotomy/appointment/book");
    let cases = [
        (
            json!({"appointment_notes": "n".repeat(1001)}),
            "appointment_notes",
        ),
        (
            json!({"async_confirmation": true, "sync_confirmation_timeout_millisecond": 999}),
            "sync_confirmation_timeout_millisecond",
        ),
        (
            json!({"async_confirmation": true, "sync_confirmation_timeout_millisecond": 10001}),
            "sync_confirmation_timeout_millisecond",
        ),
        (
            json!({"async_confirmation": true, "async_confirmation_timeout_millisecond": 59999}),
            "async_confirmation_timeout_millisecond",
        ),
        (
            json!({"async_confirmation": true, "async_confirmation_timeout_millisecond": 172800001}),
            "async_confirmation_timeout_millisecond",
        ),
        (
            json!({"iana_timezone": "Mars/Olympus Mons"}),
            "iana_timezone",
        ),
        (json!({"async_confirmation": "yes"}), "async_confirmation"),
    ];
    for (extra, field) in cases {
        let mut body = json!({"booking_key": "sbx_confirm_unknown"});
        for (k, v) in extra.as_object().unwrap() {
            body[k] = v.clone();
        }
        let a = app.post(&path, body).await;
        assert_422_at(&a, &[json!("body"), json!(field)]);
    }
    // Exactly at the limits the body is valid (and the unknown key is what fails: 400).
    let edge = json!({"booking_key": "sbx_confirm_unknown", "appointment_notes": "n".repeat(1000),
        "async_confirmation": true, "sync_confirmation_timeout_millisecond": 1000,
        "async_confirmation_timeout_millisecond": 172800000});
    let a = app.post(&path, edge).await;
    assert_eq!(a.status, 400, "{}", a.json);
    assert!(
        a.json["detail"]
            .as_str()
            .unwrap()
            .contains("unknown booking key")
    );
    let a = app.post(&path, json!({})).await;
    assert_422_at(&a, &[json!("body"), json!("booking_key")]);
    assert_eq!(a.json["detail"][0]["type"], "missing");
    // Cancellation notes and reason.
    let c = format!("/v3/order/{id}/phlebotomy/appointment/cancel");
    let a = app
        .patch(
            &c,
            json!({"cancellation_reason_id": "duplicate", "notes": "n".repeat(1001)}),
        )
        .await;
    assert_422_at(&a, &[json!("body"), json!("notes")]);
    let a = app
        .patch(&c, json!({"cancellation_reason_id": "bored"}))
        .await;
    assert_422_at(&a, &[json!("body"), json!("cancellation_reason_id")]);
}

#[tokio::test]
async fn order_rules() {
    let app = TestApp::new().await;
    let key = app.key.clone();
    let u = user(&app, "rules").await;
    let phleb = sandbox_test(&app, &key, "at_home_phlebotomy").await;
    let walk_in = sandbox_test(&app, &key, "walk_in_test").await;
    let base = order_body(&u, &walk_in);
    let body_at = |path: &[&str]| -> Vec<Value> {
        std::iter::once(json!("body"))
            .chain(path.iter().map(|p| json!(p)))
            .collect()
    };
    let with = |path: &[&str], v: Value| {
        let mut b = base.clone();
        let mut at = &mut b;
        for p in &path[..path.len() - 1] {
            at = &mut at[*p];
        }
        at[path[path.len() - 1]] = v;
        b
    };
    let cases: Vec<(Value, Vec<Value>)> = vec![
        (
            with(&["patient_details", "first_name"], json!("R2-D2")),
            body_at(&["patient_details", "first_name"]),
        ),
        (
            with(&["patient_details", "email"], json!("not-mail")),
            body_at(&["patient_details", "email"]),
        ),
        (
            with(&["patient_details", "phone_number"], json!("12")),
            body_at(&["patient_details", "phone_number"]),
        ),
        (
            with(&["patient_details", "dob"], json!("2999-01-01")),
            body_at(&["patient_details", "dob"]),
        ),
        (
            with(&["patient_details", "dob"], json!("1985-02-30")),
            body_at(&["patient_details", "dob"]),
        ),
        (
            with(&["patient_details", "gender"], json!("robot")),
            body_at(&["patient_details", "gender"]),
        ),
        (
            with(&["patient_address", "zip"], json!("1234")),
            body_at(&["patient_address", "zip"]),
        ),
        (
            with(&["patient_address", "zip"], json!("00000")),
            body_at(&["patient_address", "zip"]),
        ),
        (
            with(&["patient_address", "zip"], json!("10001")),
            body_at(&["patient_address", "zip"]),
        ),
        (
            with(&["patient_address", "state"], json!("Arizona")),
            body_at(&["patient_address", "state"]),
        ),
        (
            with(&["patient_address", "country"], json!("DE")),
            body_at(&["patient_address", "country"]),
        ),
        (
            with(&["user_id"], json!("00000000-0000-4000-8000-000000000000")),
            body_at(&["user_id"]),
        ),
        (with(&["user_id"], json!("nope")), body_at(&["user_id"])),
        (
            with(&["order_set", "lab_test_ids"], json!([])),
            body_at(&["order_set", "lab_test_ids"]),
        ),
        (
            with(
                &["order_set", "lab_test_ids"],
                json!(["00000000-0000-4000-8000-000000000000"]),
            ),
            vec![
                json!("body"),
                json!("order_set"),
                json!("lab_test_ids"),
                json!(0),
            ],
        ),
        (
            with(&["order_set", "lab_test_ids"], json!([walk_in, phleb])),
            vec![
                json!("body"),
                json!("order_set"),
                json!("lab_test_ids"),
                json!(1),
            ],
        ),
        (
            with(&["collection_method"], json!("testkit")),
            body_at(&["collection_method"]),
        ),
        (
            with(&["activate_by"], json!("2001-01-01")),
            body_at(&["activate_by"]),
        ),
        (
            with(
                &["physician"],
                json!({"first_name": "A", "last_name": "B", "npi": "12"}),
            ),
            body_at(&["physician", "npi"]),
        ),
        (
            with(&["order_set", "add_on"], json!({"marker_ids": [99999]})),
            vec![
                json!("body"),
                json!("order_set"),
                json!("add_on"),
                json!("marker_ids"),
                json!(0),
            ],
        ),
    ];
    for (body, loc) in cases {
        let a = app.post("/v3/order", body.clone()).await;
        assert_422_at(&a, &loc);
    }
    // Both forms, or neither.
    let mut both = base.clone();
    both["lab_test_id"] = json!(walk_in);
    assert_422_at(
        &app.post("/v3/order", both).await,
        &body_at(&["lab_test_id"]),
    );
    let mut neither = base.clone();
    neither.as_object_mut().unwrap().remove("order_set");
    assert_422_at(
        &app.post("/v3/order", neither).await,
        &body_at(&["order_set"]),
    );
    // Phlebotomy needs a served ZIP code: 85004 is, Flagstaff is not.
    let mut far = order_body(&u, &phleb);
    far["patient_address"]["zip"] = json!("86001");
    let a = app.post("/v3/order", far).await;
    assert_422_at(&a, &body_at(&["patient_address", "zip"]));
    assert!(
        a.json["detail"][0]["msg"]
            .as_str()
            .unwrap()
            .contains("not served")
    );
    // An inactive lab test.
    app.patch(
        &format!("/v3/lab_tests/{walk_in}"),
        json!({"status": "inactive"}),
    )
    .await;
    let a = app.post("/v3/order", base.clone()).await;
    assert_422_at(
        &a,
        &[
            json!("body"),
            json!("order_set"),
            json!("lab_test_ids"),
            json!(0),
        ],
    );
    // Malformed JSON and a wrong content type.
    let a = app
        .raw(
            axum::http::Request::builder()
                .method("POST")
                .uri("/v3/order")
                .header("x-service-api-key", &key)
                .header("content-type", "application/json")
                .body(axum::body::Body::from("{not json"))
                .unwrap(),
        )
        .await;
    assert_eq!(a.status, 422);
    assert_eq!(a.json["detail"][0]["type"], "json_invalid");
    // The deprecated lab_test_id still works.
    app.patch(
        &format!("/v3/lab_tests/{walk_in}"),
        json!({"status": "active"}),
    )
    .await;
    let mut old = base.clone();
    old.as_object_mut().unwrap().remove("order_set");
    old["lab_test_id"] = json!(walk_in);
    assert_eq!(app.post("/v3/order", old).await.status, 200);
}

#[tokio::test]
async fn order_list_and_lab_test_rules() {
    let app = TestApp::new().await;
    for (param, value) in [
        ("status", "shipped"),
        ("order_key", "price"),
        ("order_direction", "up"),
        ("order_type", "mail"),
        ("is_critical", "maybe"),
        ("interpretation", "odd"),
        ("order_activation_types", "later"),
        ("user_id", "x"),
        ("order_ids", "x"),
        ("order_transaction_id", "x"),
        ("start_date", "yesterday"),
        ("updated_end_date", "2025-13-01"),
    ] {
        let a = app.get(&format!("/v3/orders?{param}={value}")).await;
        assert_422_at(&a, &q(param));
    }
    let cases = [
        (
            json!({"name": "", "description": "d", "method": "walk_in_test", "marker_ids": [1001]}),
            "name",
        ),
        (
            json!({"name": "n", "description": "d", "method": "by_pigeon", "marker_ids": [1001]}),
            "method",
        ),
        (
            json!({"name": "n", "description": "d", "method": "walk_in_test", "marker_ids": []}),
            "marker_ids",
        ),
        (
            json!({"name": "n", "description": "d", "method": "walk_in_test", "marker_ids": [1001], "lab_slug": "nolab"}),
            "lab_slug",
        ),
        (
            json!({"name": "n", "description": "d", "method": "testkit", "marker_ids": [1001]}),
            "method",
        ),
    ];
    for (body, field) in cases {
        let a = app.post("/v3/lab_tests", body).await;
        assert_422_at(&a, &[json!("body"), json!(field)]);
    }
    let a = app.post("/v3/lab_tests", json!({"name": "n", "description": "d", "method": "walk_in_test", "marker_ids": [1001, 2001]})).await;
    assert_422_at(&a, &[json!("body"), json!("marker_ids"), json!(1)]);
    let a = app.post("/v3/lab_tests", json!({"name": "n", "description": "d", "method": "walk_in_test", "marker_ids": [424242]})).await;
    assert_422_at(&a, &[json!("body"), json!("marker_ids"), json!(0)]);
    let a = app.get("/v3/lab_tests/not-a-uuid").await;
    assert_422_at(&a, &[json!("path"), json!("lab_test_id")]);
    let a = app.get("/v3/order/not-a-uuid").await;
    assert_422_at(&a, &[json!("path"), json!("order_id")]);
    let a = app
        .send(
            "POST",
            "/v3/order/00000000-0000-4000-8000-000000000000/test?final_status=shipped",
            Some(&app.key.clone()),
            None,
        )
        .await;
    assert_422_at(&a, &q("final_status"));
}
