//! Route-level tests of the service foundation through `router(state)` and `oneshot`: success,
//! 401 (missing and invalid key), 404 (unknown and another team's id) and the 422 rules.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use serde_json::{Value, json};
use support::{TestApp, assert_422_at};

const UNKNOWN: &str = "00000000-0000-4000-8000-000000000000";

/// Every route that takes a user id, with a body that would be valid.
fn user_routes() -> Vec<(&'static str, &'static str, Option<Value>)> {
    vec![
        ("GET", "/v2/user/{id}", None),
        (
            "PATCH",
            "/v2/user/{id}",
            Some(json!({"ingestion_start": "2024-01-01"})),
        ),
        ("DELETE", "/v2/user/{id}", None),
        ("PATCH", "/v2/user/{id}/info", Some(valid_info())),
        ("GET", "/v2/user/{id}/info/latest", None),
        ("GET", "/v2/user/providers/{id}", None),
    ]
}

fn valid_info() -> Value {
    json!({
        "first_name": "Ada", "last_name": "Lovelace", "email": "ada@example.com",
        "phone_number": "+1 415 555 0100", "gender": "female", "dob": "1985-12-10",
        "address": {"first_line": "1 Main St", "second_line": null, "zip_code": "94107",
                    "state": "CA", "city": "San Francisco"}
    })
}

#[tokio::test]
async fn every_route_rejects_missing_and_invalid_keys() {
    let app = TestApp::new().await;
    let mut routes = user_routes();
    routes.extend([
        ("POST", "/v2/user", Some(json!({"client_user_id": "x"}))),
        ("GET", "/v2/user", None),
        ("GET", "/v2/user/resolve/x", None),
        ("GET", "/v2/providers", None),
        ("GET", "/v2/team/source/priorities", None),
        (
            "PATCH",
            "/v2/team/source/priorities?data_type=sleep",
            Some(json!({"priorities": ["oura"]})),
        ),
    ]);
    for (method, template, body) in routes {
        let uri = template.replace("{id}", UNKNOWN);
        let a = app.send(method, &uri, None, body.clone()).await;
        assert_eq!(a.status, StatusCode::UNAUTHORIZED, "{method} {uri}");
        assert_eq!(
            a.json,
            json!({"detail": "Missing API key"}),
            "{method} {uri}"
        );
        let a = app.send(method, &uri, Some("wh_not-a-key"), body).await;
        assert_eq!(a.status, StatusCode::UNAUTHORIZED, "{method} {uri}");
        assert_eq!(
            a.json,
            json!({"detail": "Invalid API key"}),
            "{method} {uri}"
        );
    }
}

#[tokio::test]
async fn user_routes_answer_404_for_unknown_and_foreign_users_and_422_for_bad_uuids() {
    let app = TestApp::new().await;
    let foreign = app.foreign_user().await;
    for (method, template, body) in user_routes() {
        for id in [UNKNOWN, foreign.as_str()] {
            let uri = template.replace("{id}", id);
            let a = app.send(method, &uri, Some(&app.key), body.clone()).await;
            assert_eq!(
                a.status,
                StatusCode::NOT_FOUND,
                "{method} {uri}: {}",
                a.json
            );
            assert_eq!(a.json, json!({"detail": "User not found"}));
        }
        let uri = template.replace("{id}", "not-a-uuid");
        let a = app.send(method, &uri, Some(&app.key), body).await;
        assert_422_at(&a, &[json!("path"), json!("user_id")]);
    }
    // The other team still sees its user: the 404 was tenancy, not deletion.
    let a = app
        .send(
            "GET",
            &format!("/v2/user/{foreign}"),
            Some(&app.other_key),
            None,
        )
        .await;
    assert_eq!(a.status, StatusCode::OK);
}

#[tokio::test]
async fn create_read_resolve_and_list_users() {
    let app = TestApp::new().await;
    let a = app
        .post(
            "/v2/user/",
            json!({"client_user_id": "u-1", "fallback_time_zone": "Europe/London",
            "fallback_birth_date": "1990-05-17", "ingestion_start": "2024-01-01"}),
        )
        .await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.json);
    let id = a.json["user_id"].as_str().unwrap().to_owned();
    assert_eq!(a.json["client_user_id"], "u-1");
    assert_eq!(a.json["fallback_time_zone"]["id"], "Europe/London");
    assert_eq!(a.json["fallback_time_zone"]["source_slug"], "manual");
    assert_eq!(a.json["fallback_birth_date"]["value"], "1990-05-17");
    assert_eq!(a.json["ingestion_start"], "2024-01-01");
    assert_eq!(a.json["ingestion_end"], Value::Null);
    assert_eq!(a.json["connected_sources"], json!([]));
    assert!(a.json["created_on"].as_str().unwrap().ends_with('Z'));

    let read = app.get(&format!("/v2/user/{id}")).await;
    assert_eq!(read.json, a.json);
    let resolved = app.get("/v2/user/resolve/u-1").await;
    assert_eq!(resolved.json, a.json);
    assert_eq!(
        app.get("/v2/user/resolve/nobody").await.status,
        StatusCode::NOT_FOUND
    );

    for i in 2..=5 {
        app.user(&format!("u-{i}")).await;
    }
    app.foreign_user().await;
    let page = app.get("/v2/user?offset=1&limit=2").await;
    assert_eq!(page.json["total"], 5);
    assert_eq!(page.json["offset"], 1);
    assert_eq!(page.json["limit"], 2);
    let ids: Vec<&str> = page.json["users"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["client_user_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["u-2", "u-3"]);
}

#[tokio::test]
async fn duplicate_client_user_id_answers_400_with_the_existing_user() {
    let app = TestApp::new().await;
    let first = app.post("/v2/user", json!({"client_user_id": "dup"})).await;
    let again = app.post("/v2/user", json!({"client_user_id": "dup"})).await;
    assert_eq!(again.status, StatusCode::BAD_REQUEST);
    let d = &again.json["detail"];
    assert_eq!(d["error_type"], "INVALID_REQUEST");
    assert_eq!(d["error_message"], "Client user id already exists.");
    assert_eq!(d["user_id"], first.json["user_id"]);
    assert_eq!(d["created_on"], first.json["created_on"]);
    // Another team may use the same client id.
    let theirs = app
        .send(
            "POST",
            "/v2/user",
            Some(&app.other_key),
            Some(json!({"client_user_id": "dup"})),
        )
        .await;
    assert_eq!(theirs.status, StatusCode::OK);
}

#[tokio::test]
async fn create_user_validation_rules() {
    let app = TestApp::new().await;
    let cases = [
        (json!({}), "client_user_id"),
        (json!({"client_user_id": 5}), "client_user_id"),
        (json!({"client_user_id": ""}), "client_user_id"),
        (
            json!({"client_user_id": "me@example.com"}),
            "client_user_id",
        ),
        (
            json!({"client_user_id": "+44 20 7946 0958"}),
            "client_user_id",
        ),
        (
            json!({"client_user_id": "u", "fallback_time_zone": "Mars/Olympus"}),
            "fallback_time_zone",
        ),
        (
            json!({"client_user_id": "u", "fallback_birth_date": "2023-02-29"}),
            "fallback_birth_date",
        ),
        (
            json!({"client_user_id": "u", "fallback_birth_date": "2999-01-01"}),
            "fallback_birth_date",
        ),
        (
            json!({"client_user_id": "u", "ingestion_start": "01/02/2024"}),
            "ingestion_start",
        ),
        (
            json!({"client_user_id": "u", "ingestion_start": "2024-02-02", "ingestion_end": "2024-02-01"}),
            "ingestion_end",
        ),
        (json!({"client_user_id": "u", "nickname": "x"}), "nickname"),
    ];
    for (body, field) in cases {
        let a = app.post("/v2/user", body.clone()).await;
        assert_422_at(&a, &[json!("body"), json!(field)]);
    }
    let a = app.post("/v2/user", json!(["not", "an", "object"])).await;
    assert_422_at(&a, &[json!("body")]);
}

#[tokio::test]
async fn malformed_json_wrong_content_type_and_oversized_bodies_answer_json_errors() {
    let app = TestApp::with_config(wearhouse::http::HttpConfig {
        body_limit: 1024,
        ..Default::default()
    })
    .await;
    let req = |ct: Option<&str>, body: &str| {
        let mut r = Request::builder()
            .method("POST")
            .uri("/v2/user")
            .header("x-service-api-key", &app.key);
        if let Some(ct) = ct {
            r = r.header("content-type", ct);
        }
        r.body(Body::from(body.to_owned())).unwrap()
    };
    let a = app
        .raw(req(Some("application/json"), "{\"client_user_id\": "))
        .await;
    assert_eq!(a.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(a.json["detail"][0]["type"], "json_invalid");
    let a = app.raw(req(Some("text/plain"), "{}")).await;
    assert_422_at(&a, &[json!("header"), json!("content-type")]);
    let a = app.raw(req(None, "{}")).await;
    assert_422_at(&a, &[json!("header"), json!("content-type")]);
    let a = app.raw(req(Some("application/json"), "")).await;
    assert_eq!(a.json["detail"][0]["type"], "missing");
    let big = format!("{{\"client_user_id\": \"{}\"}}", "x".repeat(4096));
    let a = app.raw(req(Some("application/json"), &big)).await;
    assert_eq!(a.status, StatusCode::PAYLOAD_TOO_LARGE);
    assert!(a.json["detail"].as_str().unwrap().contains("1024"));
}

#[tokio::test]
async fn patch_user_updates_clears_and_detects_conflicts() {
    let app = TestApp::new().await;
    let id = app.user("a").await;
    app.user("b").await;
    let uri = format!("/v2/user/{id}");
    let a = app.patch(&uri, json!({"client_user_id": "a2", "fallback_time_zone": "America/New_York", "ingestion_end": "2025-01-31"})).await;
    assert_eq!(a.status, StatusCode::NO_CONTENT);
    assert!(a.bytes.is_empty());
    let u = app.get(&uri).await.json;
    assert_eq!(u["client_user_id"], "a2");
    assert_eq!(u["fallback_time_zone"]["id"], "America/New_York");
    assert_eq!(u["ingestion_end"], "2025-01-31");

    let a = app.patch(&uri, json!({"fallback_time_zone": null})).await;
    assert_eq!(a.status, StatusCode::NO_CONTENT);
    let u = app.get(&uri).await.json;
    assert_eq!(u["fallback_time_zone"], Value::Null);
    assert_eq!(
        u["ingestion_end"], "2025-01-31",
        "absent fields are left alone"
    );

    let a = app.patch(&uri, json!({"client_user_id": "b"})).await;
    assert_eq!(a.status, StatusCode::CONFLICT);
    assert!(a.json["detail"].as_str().unwrap().contains("\"b\""));

    assert_422_at(
        &app.patch(&uri, json!({"ingestion_start": "2025-02-01"}))
            .await,
        &[json!("body"), json!("ingestion_end")],
    );
    assert_422_at(
        &app.patch(&uri, json!({"client_user_id": null})).await,
        &[json!("body"), json!("client_user_id")],
    );
    assert_422_at(
        &app.patch(&uri, json!({"fallback_time_zone": "UTC+1"}))
            .await,
        &[json!("body"), json!("fallback_time_zone")],
    );
    assert_422_at(
        &app.patch(&uri, json!({"team_id": UNKNOWN})).await,
        &[json!("body"), json!("team_id")],
    );
}

#[tokio::test]
async fn delete_user_removes_it_and_its_info() {
    let app = TestApp::new().await;
    let id = app.user("gone").await;
    assert_eq!(
        app.patch(&format!("/v2/user/{id}/info"), valid_info())
            .await
            .status,
        StatusCode::OK
    );
    let a = app
        .send("DELETE", &format!("/v2/user/{id}"), Some(&app.key), None)
        .await;
    assert_eq!(a.json, json!({"success": true}));
    assert_eq!(
        app.get(&format!("/v2/user/{id}")).await.status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        app.get(&format!("/v2/user/{id}/info/latest")).await.status,
        StatusCode::NOT_FOUND
    );
    // The client id stays taken during the undo window (`jobs_api.rs`: free again after it).
    assert_eq!(
        app.post("/v2/user", json!({"client_user_id": "gone"}))
            .await
            .status,
        StatusCode::BAD_REQUEST
    );
}

#[tokio::test]
async fn user_info_round_trips_and_each_rule_is_a_422() {
    let app = TestApp::new().await;
    let id = app.user("patient").await;
    let uri = format!("/v2/user/{id}/info");
    let latest = format!("/v2/user/{id}/info/latest");
    let none = app.get(&latest).await;
    assert_eq!(none.status, StatusCode::NOT_FOUND);
    assert_eq!(none.json, json!({"detail": "User info not found"}));

    let stored = app.patch(&uri, valid_info()).await;
    assert_eq!(stored.status, StatusCode::OK, "{}", stored.json);
    assert_eq!(stored.json["first_name"], "Ada");
    assert_eq!(stored.json["race"], Value::Null);
    assert_eq!(app.get(&latest).await.json, stored.json);

    let cases: [(&str, Value, &[&str]); 10] = [
        ("/first_name", json!("Ada 2"), &["first_name"]),
        ("/last_name", json!(""), &["last_name"]),
        ("/email", json!("ada at example.com"), &["email"]),
        ("/phone_number", json!("call me"), &["phone_number"]),
        ("/dob", json!("2999-01-01"), &["dob"]),
        ("/gender", json!(7), &["gender"]),
        (
            "/address/zip_code",
            json!("ABCDE"),
            &["address", "zip_code"],
        ),
        ("/address/state", json!("ZZ"), &["address", "state"]),
        ("/address/city", Value::Null, &["address", "city"]),
        (
            "/address/first_line",
            json!("   "),
            &["address", "first_line"],
        ),
    ];
    for (pointer, bad, path) in cases {
        let mut body = valid_info();
        *body.pointer_mut(pointer).unwrap() = bad;
        let mut loc = vec![json!("body")];
        loc.extend(path.iter().map(|p| json!(p)));
        assert_422_at(&app.patch(&uri, body).await, &loc);
    }
    let mut body = valid_info();
    body["ethnicity"] = json!("martian");
    assert_422_at(
        &app.patch(&uri, body).await,
        &[json!("body"), json!("ethnicity")],
    );
    let mut body = valid_info();
    body["medical_proxy"] = json!({"first_name": "Bob"});
    assert_422_at(
        &app.patch(&uri, body).await,
        &[json!("body"), json!("medical_proxy"), json!("last_name")],
    );
    // A rejected update leaves the stored details alone.
    assert_eq!(app.get(&latest).await.json, stored.json);
}

#[tokio::test]
async fn list_users_query_rules() {
    let app = TestApp::new().await;
    assert_422_at(
        &app.get("/v2/user?limit=0").await,
        &[json!("query"), json!("limit")],
    );
    assert_422_at(
        &app.get("/v2/user?limit=501").await,
        &[json!("query"), json!("limit")],
    );
    assert_422_at(
        &app.get("/v2/user?offset=-1").await,
        &[json!("query"), json!("offset")],
    );
    assert_422_at(
        &app.get("/v2/user?offset=abc").await,
        &[json!("query"), json!("offset")],
    );
    let a = app.get("/v2/user").await;
    assert_eq!(
        a.json,
        json!({"users": [], "total": 0, "offset": 0, "limit": 100})
    );
}

#[tokio::test]
async fn providers_catalogue_and_filter() {
    let app = TestApp::new().await;
    let all = app.get("/v2/providers/").await;
    assert_eq!(all.status, StatusCode::OK);
    let list = all.json.as_array().unwrap();
    for slug in [
        "oura",
        "fitbit",
        "garmin",
        "whoop_v2",
        "freestyle_libre",
        "apple_health_kit",
        "manual",
        "omron_ble",
    ] {
        let p = list
            .iter()
            .find(|p| p["slug"] == slug)
            .unwrap_or_else(|| panic!("{slug} missing"));
        for field in ["name", "description", "logo", "auth_type"] {
            assert!(p[field].is_string(), "{slug}.{field}");
        }
        assert!(!p["supported_resources"].as_array().unwrap().is_empty());
    }
    let rings = app.get("/v2/providers?source_type=ring").await.json;
    let slugs: Vec<&str> = rings
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["slug"].as_str().unwrap())
        .collect();
    assert!(
        slugs.contains(&"oura") && !slugs.contains(&"fitbit"),
        "{slugs:?}"
    );
    assert_422_at(
        &app.get("/v2/providers?source_type=toaster").await,
        &[json!("query"), json!("source_type")],
    );
}

#[tokio::test]
async fn user_providers_is_empty_until_linked_then_lists_connections() {
    let app = TestApp::new().await;
    let id = app.user("linked").await;
    let a = app.get(&format!("/v2/user/providers/{id}")).await;
    assert_eq!(a.json, json!({"providers": []}));
    let uuid: uuid::Uuid = id.parse().unwrap();
    app.state
        .meta
        .upsert_connection(
            uuid,
            "oura",
            wearhouse::store::metadata::ConnectionStatus::Connected,
        )
        .await
        .unwrap();
    let a = app.get(&format!("/v2/user/providers/{id}")).await;
    let p = &a.json["providers"][0];
    assert_eq!(p["slug"], "oura");
    assert_eq!(p["name"], "Oura");
    assert_eq!(p["status"], "connected");
    // Connected without an OAuth grant record (linking.md: connected, supported, scopes
    // granted), so available before any data arrives.
    assert_eq!(p["resource_availability"]["sleep"]["status"], "available");
    let user = app.get(&format!("/v2/user/{id}")).await.json;
    assert_eq!(user["connected_sources"][0]["source"]["slug"], "oura");
}

#[tokio::test]
async fn team_priorities_default_set_and_validate() {
    let app = TestApp::new().await;
    let a = app.get("/v2/team/source/priorities?data_type=sleep").await;
    assert_eq!(a.json[0]["configured"], false);
    assert_eq!(a.json[0]["priorities"][0], "oura");
    let uri = "/v2/team/source/priorities?data_type=sleep";
    let a = app
        .patch(uri, json!({"priorities": ["apple_health_kit", "oura"]}))
        .await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.json);
    let a = app.get(uri).await;
    assert_eq!(a.json[0]["priorities"], json!(["apple_health_kit", "oura"]));
    // Other teams and data types are unaffected.
    let theirs = app.send("GET", uri, Some(&app.other_key), None).await;
    assert_eq!(theirs.json[0]["configured"], false);
    assert_eq!(
        app.get("/v2/team/source/priorities?data_type=body")
            .await
            .json[0]["configured"],
        false
    );
    assert_eq!(
        app.get("/v2/team/source/priorities")
            .await
            .json
            .as_array()
            .unwrap()
            .len(),
        6
    );

    assert_422_at(
        &app.patch(uri, json!({"priorities": ["oura", "nokia"]}))
            .await,
        &[json!("body"), json!("priorities"), json!(1)],
    );
    assert_422_at(
        &app.patch(uri, json!({"priorities": ["oura", "oura"]}))
            .await,
        &[json!("body"), json!("priorities"), json!(1)],
    );
    assert_422_at(
        &app.patch(uri, json!({"priorities": "oura"})).await,
        &[json!("body"), json!("priorities")],
    );
    assert_422_at(
        &app.patch(
            "/v2/team/source/priorities?data_type=naps",
            json!({"priorities": []}),
        )
        .await,
        &[json!("query"), json!("data_type")],
    );
    assert_422_at(
        &app.patch("/v2/team/source/priorities", json!({"priorities": []}))
            .await,
        &[json!("query"), json!("data_type")],
    );
}

#[tokio::test]
async fn unknown_routes_and_methods_answer_json_and_every_response_has_a_request_id() {
    let app = TestApp::new().await;
    let a = app.get("/v2/nothing-here").await;
    assert_eq!(a.status, StatusCode::NOT_FOUND);
    assert!(a.json["detail"].is_string());
    assert!(a.headers.contains_key("x-request-id"));
    let a = app.send("PUT", "/v2/user", Some(&app.key), None).await;
    assert_eq!(a.status, StatusCode::METHOD_NOT_ALLOWED);
    assert!(a.json["detail"].is_string());
    let req = Request::builder()
        .uri("/health")
        .header("x-request-id", "trace-me-42")
        .body(Body::empty())
        .unwrap();
    let a = app.raw(req).await;
    assert_eq!(a.status, StatusCode::OK);
    assert_eq!(a.json, json!({"status": "ok"}));
    assert_eq!(a.headers["x-request-id"], "trace-me-42");
}

#[tokio::test]
async fn health_answers_503_when_the_database_is_gone() {
    let app = TestApp::new().await;
    app.state.meta.close().await;
    let a = app.send("GET", "/health", None, None).await;
    assert_eq!(a.status, StatusCode::SERVICE_UNAVAILABLE);
    // A request that needs the database gets the generic 500 with a request id, not the cause.
    let a = app.get("/v2/user").await;
    assert_eq!(a.status, StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(a.json["detail"], "Internal server error");
    assert_eq!(
        a.json["request_id"],
        a.headers["x-request-id"].to_str().unwrap()
    );
}

#[tokio::test]
async fn openapi_documents_every_served_route_and_nothing_else() {
    let app = TestApp::new().await;
    let doc = app.send("GET", "/openapi.json", None, None).await;
    assert_eq!(doc.status, StatusCode::OK);
    assert!(doc.json["openapi"].as_str().unwrap().starts_with("3.1"));
    let paths = doc.json["paths"].as_object().unwrap();
    let mut documented = Vec::new();
    for (path, item) in paths {
        for method in ["get", "post", "patch", "put", "delete"] {
            if item.get(method).is_some() {
                documented.push((method.to_uppercase(), path.clone()));
            }
        }
    }
    // Every documented operation is served (auth or validation may refuse it, routing does not).
    for (method, path) in &documented {
        let uri = path
            .replace("{user_id}", UNKNOWN)
            .replace("{client_user_id}", "c");
        let a = app.send(method, &uri, None, None).await;
        assert!(
            a.status != StatusCode::NOT_FOUND || a.json["detail"] != "Route not found",
            "{method} {path} is documented but not routed"
        );
        assert_ne!(a.status, StatusCode::METHOD_NOT_ALLOWED, "{method} {path}");
    }
    // Every route the service is known to serve is documented.
    let expected = [
        ("POST", "/v2/user"),
        ("GET", "/v2/user"),
        ("GET", "/v2/user/{user_id}"),
        ("PATCH", "/v2/user/{user_id}"),
        ("DELETE", "/v2/user/{user_id}"),
        ("GET", "/v2/user/resolve/{client_user_id}"),
        ("PATCH", "/v2/user/{user_id}/info"),
        ("GET", "/v2/user/{user_id}/info/latest"),
        ("GET", "/v2/user/providers/{user_id}"),
        ("GET", "/v2/providers"),
        ("GET", "/v2/team/source/priorities"),
        ("PATCH", "/v2/team/source/priorities"),
        ("POST", "/v2/user/{user_id}/data"),
        ("GET", "/v2/summary/sleep/{user_id}"),
        ("GET", "/v2/summary/activity/{user_id}"),
        ("GET", "/v2/summary/workouts/{user_id}"),
        ("GET", "/v2/summary/body/{user_id}"),
        ("GET", "/v2/summary/meal/{user_id}"),
        ("GET", "/v2/user/metrics"),
        ("POST", "/v2/user/undo_delete"),
        ("GET", "/v2/timeseries/{user_id}/cholesterol/{kind}"),
        ("GET", "/v2/summary/profile/{user_id}"),
        ("GET", "/v2/timeseries/{user_id}/{resource}"),
        ("GET", "/v2/timeseries/{user_id}/{resource}/grouped"),
        ("POST", "/v2/link/connect/demo"),
        ("POST", "/aggregate/v1/user/{user_id}/query"),
        ("GET", "/health"),
    ];
    for (method, path) in expected {
        assert!(
            documented.iter().any(|(m, p)| m == method && p == path),
            "{method} {path} undocumented"
        );
    }
    assert_eq!(
        doc.json["components"]["securitySchemes"]["api_key"]["name"],
        "x-service-api-key"
    );
    let docs = app.send("GET", "/docs", None, None).await;
    assert_eq!(docs.status, StatusCode::OK);
    assert!(String::from_utf8_lossy(&docs.bytes).contains("/v2/user/{user_id}"));
}

/// Every documented operation with a path parameter, called with that parameter set to a
/// percent-encoded byte that is not UTF-8 (and the others valid): a 422 located at the
/// parameter, in JSON, never a 500 or axum's plain-text 400. The reference's operations that
/// wearhouse does not serve (tag `unserved`) read no parameter: their documented 501 stands
/// for any path, and `surface_team::unserved` tests it.
#[tokio::test]
async fn malformed_path_segments_answer_422_at_the_parameter_on_every_route() {
    let app = TestApp::new().await;
    let user = app.user("path-probe").await;
    let doc = app.send("GET", "/openapi.json", None, None).await;
    let paths = doc.json["paths"].as_object().unwrap().clone();
    let mut probed = 0;
    for (path, item) in &paths {
        let names: Vec<&str> = path
            .split('/')
            .filter_map(|s| s.strip_prefix('{')?.strip_suffix('}'))
            .collect();
        for method in ["get", "post", "patch", "put", "delete"] {
            let Some(op) = item.get(method) else {
                continue;
            };
            if op["tags"]
                .as_array()
                .is_some_and(|t| t.contains(&json!("unserved")))
            {
                continue;
            }
            for bad in &names {
                let mut uri = path.clone();
                for name in &names {
                    let value = match *name {
                        _ if name == bad => "%FF",
                        "user_id" => user.as_str(),
                        "kind" => "sleep",
                        "resource" => "heartrate",
                        _ => "x",
                    };
                    uri = uri.replace(&format!("{{{name}}}"), value);
                }
                let method = method.to_uppercase();
                let body = (method != "GET" && method != "DELETE").then(|| json!({}));
                let a = app.send(&method, &uri, Some(&app.key), body).await;
                assert_eq!(
                    a.headers["content-type"],
                    "application/json",
                    "{method} {uri}: {}",
                    String::from_utf8_lossy(&a.bytes)
                );
                assert_422_at(&a, &[json!("path"), json!(bad)]);
                probed += 1;
            }
        }
    }
    // The user routes, summaries, timeseries, resolve, data and aggregate at least.
    assert!(probed >= 12, "only {probed} operations probed");
}

#[tokio::test]
async fn a_uri_over_the_limit_answers_414_with_a_json_detail() {
    let app = TestApp::new().await;
    let long = format!("/v2/user?client_user_id={}", "a".repeat(9000));
    let a = app.get(&long).await;
    assert_eq!(a.status, StatusCode::URI_TOO_LONG);
    let detail = a.json["detail"].as_str().unwrap();
    assert!(detail.contains("8192"), "{detail}");
    // Just under the limit is served as usual.
    let fits = format!("/v2/user?x={}", "a".repeat(8000));
    assert_eq!(app.get(&fits).await.status, StatusCode::OK);
}
