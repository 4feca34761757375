//! Unknown methods and unknown paths (issue 42, deliverable 3), over every route of the OpenAPI
//! document: a method a path does not serve answers 405 with the JSON error body and an `Allow`
//! header naming exactly the document's methods for it (HEAD listed with GET, which serves it);
//! a path no route serves answers 404 with the JSON body, also where a parameterised route's
//! template would otherwise catch it.

use std::collections::BTreeSet;

use crate::support::{Answer, TestApp};
use axum::http::StatusCode;

const METHODS: [&str; 5] = ["GET", "POST", "PUT", "PATCH", "DELETE"];

/// A concrete path of a template: ids as UUIDs, other parameters as a plain word.
fn concrete(template: &str) -> String {
    template
        .split('/')
        .map(|segment| match segment.strip_prefix('{') {
            Some(name) if name.ends_with("id}") => "0b7f3f8e-4d5a-4c57-9d0a-3c2e8c1a9f10",
            Some(_) => "sleep",
            None => segment,
        })
        .collect::<Vec<_>>()
        .join("/")
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
    assert!(paths.len() > 50, "{}", paths.len());
    let mut wrong = Vec::new();
    let mut checked = 0;
    for (template, methods) in &paths {
        let uri = concrete(template);
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
    assert!(
        wrong.is_empty(),
        "{} wrong:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
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
