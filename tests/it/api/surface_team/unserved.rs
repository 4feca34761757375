//! The reference's operations wearhouse does not serve answer a documented 501 with a JSON
//! `detail` (never a bare 404 or 405), and every operation of the reference's API
//! (`testdata/reference/junction-operations.txt`) is in the OpenAPI document: served, or one of
//! those 501s.

use std::collections::BTreeMap;

use serde_json::Value;

use super::Live;

/// Whether our template serves the reference's path: literal segments equal, our parameter
/// taking the reference's parameter or, within its documented enum, its literal.
fn serves(doc: &Value, template: &str, method: &str, reference: &str) -> bool {
    let (ours, theirs): (Vec<&str>, Vec<&str>) = (
        template.split('/').collect(),
        reference.split('/').collect(),
    );
    let op = &doc["paths"][template][method];
    if op.is_null() || ours.len() != theirs.len() {
        return false;
    }
    ours.iter().zip(&theirs).all(|(o, t)| {
        let Some(name) = o.strip_prefix('{').map(|n| n.trim_end_matches('}')) else {
            return o == t;
        };
        if t.starts_with('{') {
            return true;
        }
        let allowed = op["parameters"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|p| p["name"] == name && p["in"] == "path")
            .and_then(|p| p["schema"]["enum"].as_array());
        allowed.is_some_and(|values| values.iter().any(|v| v == t))
    })
}

#[tokio::test]
async fn unserved_operations_answer_a_documented_501_and_every_reference_operation_is_listed() {
    let live = Live::start("warn");
    let doc = live.get("/openapi.json").await.json;
    let paths = doc["paths"].as_object().unwrap();

    // The unserved operations: each documented with its 501, each answering it.
    let mut unserved = BTreeMap::new();
    for (path, item) in paths {
        for (method, op) in item.as_object().unwrap() {
            if op["tags"]
                .as_array()
                .is_some_and(|t| t.contains(&"unserved".into()))
            {
                unserved.insert((method.to_uppercase(), path.clone()), op.clone());
            }
        }
    }
    assert!(unserved.len() >= 25, "{}", unserved.len());
    for ((method, path), op) in &unserved {
        assert_eq!(
            op["responses"]["501"]["content"]["application/json"]["schema"]["$ref"],
            "#/components/schemas/ErrorDetail",
            "{method} {path}"
        );
        let concrete = path
            .split('/')
            .map(|s| {
                if s.starts_with('{') {
                    uuid::Uuid::new_v4().to_string()
                } else {
                    s.to_owned()
                }
            })
            .collect::<Vec<_>>()
            .join("/");
        let a = live
            .call(method, &concrete, Some(&live.key.clone()), None)
            .await;
        assert_eq!(a.status, 501, "{method} {concrete}: {}", a.json);
        let detail = a.json["detail"].as_str().unwrap_or_default();
        assert!(
            detail.starts_with("Not implemented: "),
            "{method} {concrete}: {}",
            a.json
        );
        assert_eq!(op["description"], detail, "{method} {path}");
        let a = live.call(method, &concrete, None, None).await;
        assert_eq!(a.status, 401, "{method} {concrete}: {}", a.json);
    }
    // Another method on one of them is a 405 naming the served one.
    let a = live
        .call(
            "DELETE",
            "/v3/insurance/search/payor",
            Some(&live.key.clone()),
            None,
        )
        .await;
    assert_eq!(a.status, 405, "{}", a.json);
    let mut allow: Vec<&str> = a.headers["allow"]
        .to_str()
        .unwrap()
        .split(',')
        .map(str::trim)
        .collect();
    allow.sort_unstable();
    assert_eq!(allow, ["GET", "HEAD", "POST"]);

    // Every operation of the reference is in the document (or in flight elsewhere).
    let listed = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/testdata/reference/junction-operations.txt"
    ))
    .unwrap();
    let mut missing = Vec::new();
    let mut checked = 0;
    for line in listed
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let (method, path) = line.split_once(' ').unwrap();
        checked += 1;
        let method = method.to_lowercase();
        if paths.keys().any(|t| serves(&doc, t, &method, path)) {
            continue;
        }
        missing.push(line.to_owned());
    }
    assert!(checked > 200, "{checked}");
    assert!(
        missing.is_empty(),
        "not in the document:\n{}",
        missing.join("\n")
    );
}
