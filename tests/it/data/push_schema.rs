//! The OpenAPI document states what the push enforces on timeseries samples (issue 35,
//! defect 3): for every resource, the push body's sample schema requires exactly the members
//! a push is refused without. Checked by pushing: a sample with every member the schema lists
//! is stored; without a required member it is a 422 `missing` at that member; without any
//! other member it is stored; with only the required ones it is stored.
//!
//! A required member with an alias (`timestamp` or `start`) is an `anyOf` of `required`
//! lists: without all of its names the push is refused, without one of them it is stored.

use axum::http::StatusCode;
use futures::StreamExt;
use serde_json::{Map, Value, json};

use crate::support::{Answer, TestApp, assert_422_at};

/// What the document says of one resource's pushed samples.
struct ItemSchema {
    /// Member name → its schema.
    properties: Map<String, Value>,
    /// Members listed in `required`.
    required: Vec<String>,
    /// Members given under one of several names, each as its names (the reported one first).
    alternatives: Vec<Vec<String>>,
}

fn names(list: &Value) -> Vec<String> {
    list.as_array()
        .map(|a| a.iter().map(|n| n.as_str().unwrap().to_owned()).collect())
        .unwrap_or_default()
}

impl ItemSchema {
    /// Reads an item schema: an object, or `allOf` of an object and `anyOf`s of `required`.
    fn read(item: &Value) -> ItemSchema {
        let (object, rest): (&Value, &[Value]) = match item["allOf"].as_array() {
            Some(parts) => (&parts[0], &parts[1..]),
            None => (item, &[]),
        };
        assert_eq!(object["type"], "object", "{item}");
        assert_eq!(
            object["additionalProperties"],
            json!(false),
            "the parser refuses other members: {item}"
        );
        let alternatives = rest
            .iter()
            .map(|part| {
                let any_of = part["anyOf"].as_array().unwrap_or_else(|| panic!("{item}"));
                any_of
                    .iter()
                    .map(|one| {
                        let required = names(&one["required"]);
                        assert_eq!(required.len(), 1, "{item}");
                        required[0].clone()
                    })
                    .collect()
            })
            .collect();
        ItemSchema {
            properties: object["properties"].as_object().unwrap().clone(),
            required: names(&object["required"]),
            alternatives,
        }
    }

    /// A valid value for member `name`, from its schema.
    fn value_of(&self, name: &str) -> Value {
        let schema = &self.properties[name];
        let types: Vec<&str> = match &schema["type"] {
            Value::String(t) => vec![t.as_str()],
            Value::Array(ts) => ts.iter().map(|t| t.as_str().unwrap()).collect(),
            other => panic!("{name}: no type: {other}"),
        };
        if let Some(first) = schema["enum"].as_array().and_then(|e| e.first()) {
            return first.clone();
        }
        match name {
            "timestamp" | "start" => return json!("2025-03-02T07:00:00Z"),
            "end" => return json!("2025-03-02T07:01:00Z"),
            "duration" => return json!(60.0),
            _ => {}
        }
        if types.contains(&"integer") {
            json!(3600)
        } else if types.contains(&"number") {
            let value = match (schema["minimum"].as_f64(), schema["maximum"].as_f64()) {
                (Some(lo), Some(hi)) => (lo + hi) / 2.0,
                (Some(lo), None) => lo + 1.0,
                (None, Some(hi)) => hi - 1.0,
                (None, None) => 1.0,
            };
            json!(value)
        } else if types.contains(&"array") {
            json!(["a"])
        } else {
            assert!(types.contains(&"string"), "{name}: {schema}");
            json!("a")
        }
    }

    /// A sample giving every member the schema lists.
    fn full(&self) -> Map<String, Value> {
        self.properties
            .keys()
            .map(|name| (name.clone(), self.value_of(name)))
            .collect()
    }
}

/// Pushes one sample of `resource`; answers the status and the answer.
async fn push(
    app: &TestApp,
    user: &str,
    resource: &str,
    sample: &Map<String, Value>,
) -> (StatusCode, Answer) {
    let body = json!({"provider": "manual", "timeseries": {resource: [sample]}});
    let a = app.post(&format!("/v2/user/{user}/data"), body).await;
    (a.status, a)
}

/// Every check of one resource; answers the mismatches found.
async fn check(app: &TestApp, user: &str, resource: &str, schema: &ItemSchema) -> Vec<String> {
    let mut wrong = Vec::new();
    let full = schema.full();
    let missing_at = |field: &str| {
        [
            json!("body"),
            json!("timeseries"),
            json!(resource),
            json!(0),
            json!(field),
        ]
    };
    let (status, a) = push(app, user, resource, &full).await;
    if status != StatusCode::OK {
        wrong.push(format!(
            "{resource}: every listed member: {status} {}",
            a.json
        ));
    }
    for name in schema.properties.keys() {
        let mut sample = full.clone();
        sample.remove(name);
        let (status, a) = push(app, user, resource, &sample).await;
        let required = schema.required.contains(name);
        match (required, status) {
            (true, StatusCode::UNPROCESSABLE_ENTITY) => {
                assert_422_at(&a, &missing_at(name));
                assert_eq!(a.json["detail"][0]["type"], "missing", "{}", a.json);
            }
            (false, StatusCode::OK) => {}
            _ => wrong.push(format!(
                "{resource}.{name}: schema says required={required}, push without it: {status} {}",
                a.json
            )),
        }
    }
    for names in &schema.alternatives {
        let mut sample = full.clone();
        for name in names {
            sample.remove(name);
        }
        let (status, a) = push(app, user, resource, &sample).await;
        if status == StatusCode::UNPROCESSABLE_ENTITY {
            assert_422_at(&a, &missing_at(&names[0]));
        } else {
            wrong.push(format!(
                "{resource}: without any of {names:?}: {status} {}",
                a.json
            ));
        }
    }
    // Only what is required: nothing else is.
    let minimal: Map<String, Value> = full
        .iter()
        .filter(|(name, _)| {
            schema.required.contains(name)
                || schema.alternatives.iter().any(|names| names[0] == **name)
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let (status, a) = push(app, user, resource, &minimal).await;
    if status != StatusCode::OK {
        wrong.push(format!(
            "{resource}: only the required members {:?}: {status} {}",
            minimal.keys().collect::<Vec<_>>(),
            a.json
        ));
    }
    wrong
}

#[tokio::test]
async fn every_push_sample_schema_requires_what_the_parser_requires() {
    let app = TestApp::new().await;
    let user = app.user("schema").await;
    let doc = app.get("/openapi.json").await.json;
    let push = &doc["paths"]["/v2/user/{user_id}/data"]["post"];
    let body = &push["requestBody"]["content"]["application/json"]["schema"];
    let body = match body["$ref"].as_str() {
        Some(r) => &doc["components"]["schemas"][r.trim_start_matches("#/components/schemas/")],
        None => body,
    };
    let series = &body["properties"]["timeseries"];
    assert_eq!(series["additionalProperties"], json!(false), "{series}");
    let items: Vec<(String, ItemSchema)> = series["properties"]
        .as_object()
        .unwrap_or_else(|| panic!("no resource listed: {series}"))
        .iter()
        .map(|(name, list)| (name.clone(), ItemSchema::read(&list["items"])))
        .collect();
    let listed: Vec<&str> = items.iter().map(|(n, _)| n.as_str()).collect();
    let known: Vec<&str> = wearhouse::schema::RESOURCES
        .iter()
        .map(|r| r.name)
        .collect();
    assert_eq!(listed.len(), known.len(), "{listed:?}");
    assert!(known.iter().all(|k| listed.contains(k)), "{listed:?}");

    // The reference's typed resources: the cases, stated outright.
    for (name, schema) in &items {
        let typed =
            ["electrocardiogram_voltage", "cholesterol", "ige", "igg"].contains(&name.as_str());
        assert_eq!(
            schema.required.contains(&"type".to_owned()),
            typed,
            "{name}"
        );
        assert!(!schema.required.contains(&"unit".to_owned()), "{name}");
    }

    // Resources are independent datasets: check a few at a time.
    let wrong: Vec<String> = futures::stream::iter(items.iter())
        .map(|(name, schema)| check(&app, &user, name, schema))
        .buffer_unordered(4)
        .flat_map(futures::stream::iter)
        .collect()
        .await;
    assert!(
        wrong.is_empty(),
        "schema and parser disagree:\n{}",
        wrong.join("\n")
    );
}
