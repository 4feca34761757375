//! Unknown methods and unknown paths (issue 42, deliverable 3), over every route of the OpenAPI
//! document: a method a path does not serve answers 405 with the JSON error body and an `Allow`
//! header naming exactly the document's methods for it (HEAD listed with GET, which serves it);
//! a path no route serves answers 404 with the JSON body, also where a parameterised route's
//! template would otherwise catch it (a parameter's value outside its documented rules).

use std::collections::{BTreeMap, BTreeSet};

use crate::support::{Answer, TestApp};
use axum::http::StatusCode;
use serde_json::Value;

const METHODS: [&str; 5] = ["GET", "POST", "PUT", "PATCH", "DELETE"];

const AN_ID: &str = "0b7f3f8e-4d5a-4c57-9d0a-3c2e8c1a9f10";

/// A concrete path of a template: ids as UUIDs, other parameters as a plain word (`enums`
/// gives the first value the document admits for a parameter that has a list).
fn concrete_with(template: &str, enums: &BTreeMap<String, String>) -> String {
    template
        .split('/')
        .map(|segment| match segment.strip_prefix('{') {
            Some(name) => {
                let name = name.trim_end_matches('}');
                match enums.get(name) {
                    Some(value) => value.as_str(),
                    None if name.ends_with("id") => AN_ID,
                    None => "sleep",
                }
            }
            None => segment,
        })
        .collect::<Vec<_>>()
        .join("/")
}

fn concrete(template: &str) -> String {
    concrete_with(template, &BTreeMap::new())
}

/// The first enum value of each path parameter of `template` that has an enum.
fn enums_of(doc: &Value, template: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let item = doc["paths"][template].as_object().unwrap();
    for op in item.values() {
        for p in op["parameters"].as_array().into_iter().flatten() {
            if p["in"] == "path"
                && let Some(first) = p["schema"]["enum"].as_array().and_then(|v| v.first())
            {
                out.insert(
                    p["name"].as_str().unwrap().to_owned(),
                    first.as_str().unwrap().to_owned(),
                );
            }
        }
    }
    out
}

/// The document's paths with their methods, in upper case.
async fn documented(app: &TestApp) -> Vec<(String, BTreeSet<String>)> {
    let doc = app.get("/openapi.json").await.json;
    doc["paths"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(path, item)| {
            let methods = item
                .as_object()
                .unwrap()
                .keys()
                .filter(|m| METHODS.contains(&m.to_uppercase().as_str()))
                .map(|m| m.to_uppercase())
                .collect();
            (path.clone(), methods)
        })
        .collect()
}

fn allow(a: &Answer) -> BTreeSet<String> {
    a.headers
        .get_all("allow")
        .iter()
        .flat_map(|v| v.to_str().unwrap().split(','))
        .map(|m| m.trim().to_owned())
        .filter(|m| !m.is_empty())
        .collect()
}

fn has_detail(a: &Answer) -> bool {
    a.json["detail"].is_string()
        && a.headers
            .get("content-type")
            .is_some_and(|v| v.to_str().unwrap().starts_with("application/json"))
}

#[tokio::test]
async fn every_unserved_method_of_every_documented_path_is_405_with_allow() {
    let app = TestApp::new().await;
    let key = app.key.clone();
    let paths = documented(&app).await;
    let doc = app.get("/openapi.json").await.json;
    assert!(paths.len() > 50, "{}", paths.len());
    let mut wrong = Vec::new();
    let mut checked = 0;
    for (template, methods) in &paths {
        let uri = concrete_with(template, &enums_of(&doc, template));
        let mut expected = methods.clone();
        if expected.contains("GET") {
            expected.insert("HEAD".to_owned());
        }
        for method in METHODS.iter().chain(&["OPTIONS"]) {
            if methods.contains(*method) {
                continue;
            }
            checked += 1;
            let a = app.send(method, &uri, Some(&key), None).await;
            if a.status != StatusCode::METHOD_NOT_ALLOWED
                || !has_detail(&a)
                || allow(&a) != expected
            {
                wrong.push(format!(
                    "{method} {uri} ({template}): {} allow {:?}, expected {expected:?}; {}",
                    a.status,
                    allow(&a),
                    a.json
                ));
            }
        }
    }
    assert!(checked > 200, "{checked}");
    assert_none_wrong(&wrong);
}

#[tokio::test]
async fn unknown_paths_are_404_with_the_json_body() {
    let app = TestApp::new().await;
    let key = app.key.clone();
    let paths = documented(&app).await;
    let templates: BTreeSet<&str> = paths.iter().map(|(p, _)| p.as_str()).collect();
    // Unknown paths near every route: one more segment, and each literal segment replaced.
    let mut unknown = BTreeSet::new();
    for (template, _) in &paths {
        unknown.insert(format!("{}/no-such-thing", concrete(template)));
        let segments: Vec<&str> = template.split('/').collect();
        for (i, s) in segments.iter().enumerate() {
            if s.is_empty() || s.starts_with('{') {
                continue;
            }
            let mut other = segments.clone();
            other[i] = "no-such-thing";
            let other = other.join("/");
            // Unless a parameter of another template takes that segment.
            if !templates.iter().any(|t| matches(t, &other)) {
                unknown.insert(concrete(&other));
            }
        }
    }
    unknown.extend(["/", "/v2", "/v9/user", "/no/such/path"].map(String::from));
    let mut wrong = Vec::new();
    for uri in &unknown {
        if templates.iter().any(|t| matches(t, uri)) {
            continue;
        }
        for method in METHODS {
            let a = app.send(method, uri, Some(&key), None).await;
            if a.status != StatusCode::NOT_FOUND || !has_detail(&a) {
                wrong.push(format!("{method} {uri}: {} {}", a.status, a.json));
            }
        }
    }
    assert!(unknown.len() > 100, "{}", unknown.len());
    assert_none_wrong(&wrong);
}

/// Checks that no answer was wrong, listing those that were.
fn assert_none_wrong(wrong: &[String]) {
    assert!(
        wrong.is_empty(),
        "{} wrong:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

/// Whether `path` is an instance of `template` (a parameter takes any one segment).
fn matches(template: &str, path: &str) -> bool {
    let (t, p): (Vec<&str>, Vec<&str>) = (template.split('/').collect(), path.split('/').collect());
    t.len() == p.len() && t.iter().zip(&p).all(|(a, b)| a.starts_with('{') || a == b)
}

/// A parameterised route's template matches any segment, but a value outside the parameter's
/// documented rules (a UUID, an enum) is no path of the route: an unserved method there is a
/// 404 with no `Allow`, not a 405 (`GET /v2/user/{id}/device` met `DELETE
/// /v2/user/{user_id}/{provider}`). Served methods keep their answers (a malformed id is 422).
#[tokio::test]
async fn a_parameter_value_outside_its_rules_is_an_unknown_path() {
    let app = TestApp::new().await;
    let key = app.key.clone();
    let paths = documented(&app).await;
    let doc = app.get("/openapi.json").await.json;
    let mut wrong = Vec::new();
    let mut checked = 0;
    for (template, methods) in &paths {
        let enums = enums_of(&doc, template);
        for segment in template.split('/').filter(|s| s.starts_with('{')) {
            let name = segment.trim_matches(|c| c == '{' || c == '}');
            let ruled = enums.contains_key(name)
                || doc["paths"][template]
                    .as_object()
                    .unwrap()
                    .values()
                    .flat_map(|op| op["parameters"].as_array().into_iter().flatten())
                    .any(|p| p["name"] == name && p["schema"]["format"] == "uuid");
            if !ruled {
                continue;
            }
            let mut valid = enums.clone();
            valid.insert(name.to_owned(), "no-such-thing".to_owned());
            let uri = concrete_with(template, &valid);
            for method in METHODS.iter().filter(|m| !methods.contains(**m)) {
                checked += 1;
                let a = app.send(method, &uri, Some(&key), None).await;
                if a.status != StatusCode::NOT_FOUND || !has_detail(&a) || !allow(&a).is_empty() {
                    wrong.push(format!(
                        "{method} {uri}: {} {:?} {}",
                        a.status,
                        allow(&a),
                        a.json
                    ));
                }
            }
        }
    }
    assert!(checked > 100, "{checked}");
    assert_none_wrong(&wrong);
    // The cases that answered 405 before, and a served method's own answer.
    for (method, uri) in [
        ("GET", format!("/v2/user/{AN_ID}/device")),
        ("POST", format!("/v2/user/{AN_ID}/no_such_thing")),
        ("POST", "/v3/lab_tests/price_estimate".to_owned()),
        ("POST", "/v3/order/area".to_owned()),
    ] {
        let a = app.send(method, &uri, Some(&key), None).await;
        assert_eq!(
            a.status,
            StatusCode::NOT_FOUND,
            "{method} {uri}: {}",
            a.json
        );
        assert!(a.headers.get("allow").is_none(), "{method} {uri}");
    }
    let malformed = app.get("/v3/lab_tests/price_estimate").await;
    assert_eq!(malformed.status, StatusCode::UNPROCESSABLE_ENTITY);
    let served = app
        .send("GET", &format!("/v2/user/{AN_ID}/oura"), Some(&key), None)
        .await;
    assert_eq!(served.status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(allow(&served), BTreeSet::from(["DELETE".to_owned()]));
}
