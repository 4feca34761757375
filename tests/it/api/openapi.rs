//! `/openapi.json` describes every endpoint: every request body and every 2xx answer with a
//! body has a schema, every `$ref` resolves, and no schema is a bare object unless it says it
//! is free-form.

use serde_json::Value;

use crate::support::TestApp;

/// Collects every `$ref` under `value`.
fn refs<'a>(value: &'a Value, out: &mut Vec<&'a str>) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                match (k.as_str(), v) {
                    ("$ref", Value::String(r)) => out.push(r),
                    _ => refs(v, out),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| refs(v, out)),
        _ => {}
    }
}

/// A schema says something: a type, a reference, a composition or an enum.
fn described(schema: &Value) -> bool {
    [
        "type",
        "$ref",
        "oneOf",
        "anyOf",
        "allOf",
        "enum",
        "properties",
        "items",
    ]
    .iter()
    .any(|k| schema.get(k).is_some())
}

#[tokio::test]
async fn every_route_has_request_and_answer_schemas() {
    let app = TestApp::new().await;
    let doc = app.get("/openapi.json").await.json;
    assert_eq!(doc["openapi"].as_str().unwrap().get(..3), Some("3.1"));
    let mut missing = Vec::new();
    let mut operations = 0;
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            if !["get", "post", "put", "patch", "delete"].contains(&method.as_str()) {
                continue;
            }
            operations += 1;
            let name = format!("{} {path}", method.to_uppercase());
            // The reference's operations not served here answer only their documented 501.
            if op["tags"]
                .as_array()
                .is_some_and(|t| t.contains(&"unserved".into()))
            {
                if !described(&op["responses"]["501"]["content"]["application/json"]["schema"]) {
                    missing.push(format!("{name}: 501 answer"));
                }
                continue;
            }
            if let Some(body) = op.get("requestBody") {
                let content = body["content"].as_object().unwrap();
                if content.is_empty() || !content.values().all(|c| described(&c["schema"])) {
                    missing.push(format!("{name}: request body"));
                }
            } else if ["post", "patch", "put"].contains(&method.as_str())
                && !NO_BODY.contains(&name.as_str())
            {
                missing.push(format!("{name}: no request body documented"));
            }
            let responses = op["responses"].as_object().unwrap();
            let success: Vec<_> = responses
                .iter()
                .filter(|(status, _)| status.starts_with('2'))
                .collect();
            if success.is_empty() {
                missing.push(format!("{name}: no 2xx answer"));
            }
            for (status, answer) in success {
                if status == "204" {
                    continue;
                }
                match answer.get("content").and_then(Value::as_object) {
                    Some(content) if content.values().all(|c| described(&c["schema"])) => {}
                    _ => missing.push(format!("{name}: {status} answer")),
                }
            }
        }
    }
    assert!(operations >= 30, "{operations} operations");
    assert!(missing.is_empty(), "undescribed: {missing:#?}");

    let mut all = Vec::new();
    refs(&doc, &mut all);
    let schemas = doc["components"]["schemas"].as_object().unwrap();
    for r in &all {
        let name = r.strip_prefix("#/components/schemas/").unwrap_or(r);
        assert!(schemas.contains_key(name), "dangling reference {r}");
    }
    for name in [
        "ClientSleepResponse",
        "UserResource",
        "UserInfo",
        "ValidationError",
    ] {
        assert!(schemas.contains_key(name), "no component {name}");
    }
}

/// Schemas that are a bare object (no members, no value schema) without a description saying
/// they are free-form: `described` is whether the node holding this one has a description.
fn bare_objects(value: &Value, at: &str, described: bool, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            let is_object = match map.get("type") {
                Some(Value::String(t)) => t == "object",
                Some(Value::Array(ts)) => ts.iter().any(|t| t == "object"),
                _ => false,
            };
            let has_description = map.get("description").is_some_and(|d| d != "");
            let shaped = [
                "properties",
                "additionalProperties",
                "oneOf",
                "anyOf",
                "allOf",
                "$ref",
            ]
            .iter()
            .any(|k| map.contains_key(*k));
            if is_object && !shaped && !has_description && !described {
                out.push(at.to_owned());
            }
            for (k, v) in map {
                bare_objects(v, &format!("{at}/{k}"), has_description, out);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                bare_objects(v, &format!("{at}/{i}"), described, out);
            }
        }
        _ => {}
    }
}

/// No schema is a bare `Object`, except a free-form one whose description says what it holds.
#[tokio::test]
async fn no_schema_is_a_bare_object_without_saying_so() {
    let app = TestApp::new().await;
    let doc = app.get("/openapi.json").await.json;
    let mut bare = Vec::new();
    bare_objects(&doc["paths"], "#/paths", false, &mut bare);
    bare_objects(&doc["components"], "#/components", false, &mut bare);
    assert!(bare.is_empty(), "bare objects: {bare:#?}");
}

/// Operations that take no body by design.
const NO_BODY: &[&str] = &[
    "POST /v2/user/undo_delete",
    "POST /v2/user/refresh/{user_id}",
    "POST /v2/link/code/create",
    "POST /v2/team/keys/{key_id}/revoke",
    "POST /v2/team/webhooks/{id}/rotate_secret",
    "POST /v2/team/webhooks/{id}/replay",
    "POST /v2/team/events/test",
    "POST /v3/order/psc/appointment/availability",
    "POST /v3/order/{order_id}/cancel",
    "POST /v3/order/{order_id}/test",
    "POST /v2/user/{user_id}/sign_in_token",
];

/// The reference SDK's header is the key's alias, and the document says so.
#[tokio::test]
async fn the_reference_api_key_header_authenticates() {
    let app = TestApp::new().await;
    let request = |key: &str| {
        axum::http::Request::builder()
            .uri("/v2/user/metrics")
            .header("x-vital-api-key", key)
            .body(axum::body::Body::empty())
            .unwrap()
    };
    let ok = app.raw(request(&app.key)).await;
    assert_eq!(ok.status, 200, "{}", ok.json);
    assert_eq!(ok.json["number_of_users"], 0);
    let bad = app.raw(request("wh_not_a_key")).await;
    assert_eq!(bad.status, 401);
    assert_eq!(bad.json["detail"], "Invalid API key");
    let doc = app.get("/openapi.json").await.json;
    let scheme = &doc["components"]["securitySchemes"]["api_key"];
    assert!(
        scheme["description"]
            .as_str()
            .unwrap()
            .contains("x-vital-api-key"),
        "{scheme}"
    );
}
