//! The columnar push (issue 19): one timeseries' rows as an Arrow IPC stream or a Parquet file,
//! stored as a JSON push of the same samples is, validated by the same rules, all or nothing.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use axum::body::Body;
use axum::http::Request;
use datafusion::arrow::array::{
    ArrayRef, Float32Array, Float64Array, Int32Array, RecordBatch, StringArray,
    TimestampNanosecondArray,
};
use datafusion::arrow::datatypes::{Field, Schema};
use datafusion::arrow::ipc::writer::StreamWriter;
use serde_json::{Value, json};

use crate::support::{Answer, TestApp, assert_422_at};

const ARROW: &str = "application/vnd.apache.arrow.stream";
const PARQUET: &str = "application/vnd.apache.parquet";
/// 2025-01-01T00:00:00Z in nanoseconds.
const T0_NS: i64 = 1_735_689_600_000_000_000;
const WINDOW: &str = "start_date=2024-12-31&end_date=2025-01-03";

fn arrow_bytes(batch: &RecordBatch) -> Vec<u8> {
    let mut out = Vec::new();
    let mut writer = StreamWriter::try_new(&mut out, &batch.schema()).unwrap();
    writer.write(batch).unwrap();
    writer.finish().unwrap();
    drop(writer);
    out
}

fn parquet_bytes(batch: &RecordBatch) -> Vec<u8> {
    let mut out = Vec::new();
    let mut writer = parquet::arrow::ArrowWriter::try_new(&mut out, batch.schema(), None).unwrap();
    writer.write(batch).unwrap();
    writer.close().unwrap();
    out
}

fn batch(columns: Vec<(&str, ArrayRef)>) -> RecordBatch {
    let fields: Vec<Field> = columns
        .iter()
        .map(|(n, a)| Field::new(*n, a.data_type().clone(), true))
        .collect();
    let arrays = columns.into_iter().map(|(_, a)| a).collect();
    RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays).unwrap()
}

/// `n` heart-rate samples a minute apart: zone-less nanosecond timestamps and `float32` values,
/// as a notebook's DataFrame would hand them over.
fn heart_rate(n: usize) -> RecordBatch {
    batch(vec![
        (
            "timestamp",
            Arc::new(TimestampNanosecondArray::from_iter_values(
                (0..n as i64).map(|i| T0_NS + i * 60_000_000_000),
            )),
        ),
        (
            "value",
            Arc::new(Float32Array::from_iter_values(
                (0..n).map(|i| 50.0 + (i % 40) as f32),
            )),
        ),
        (
            "timezone_offset",
            Arc::new(Int32Array::from_iter_values((0..n).map(|_| 3600))),
        ),
    ])
}

async fn push(app: &TestApp, user: &str, query: &str, content_type: &str, body: Vec<u8>) -> Answer {
    let req = Request::builder()
        .method("POST")
        .uri(format!("/v2/user/{user}/data?{query}"))
        .header("x-service-api-key", &app.key)
        .header("content-type", content_type)
        .body(Body::from(body))
        .unwrap();
    app.raw(req).await
}

async fn samples(app: &TestApp, user: &str, resource: &str) -> Value {
    let a = app
        .get(&format!("/v2/timeseries/{user}/{resource}?{WINDOW}"))
        .await;
    assert_eq!(a.status, 200, "{}", a.json);
    a.json
}

#[tokio::test]
async fn arrow_and_parquet_pushes_store_what_the_same_json_push_stores() {
    let app = TestApp::new().await;
    let rows = heart_rate(500);
    let by_json = app.user("by-json").await;
    let hr: Vec<Value> = (0..500)
        .map(|i| {
            let at = chrono::DateTime::from_timestamp(1_735_689_600 + i * 60, 0).unwrap();
            json!({"timestamp": at.to_rfc3339(), "value": 50.0 + (i % 40) as f64,
                   "timezone_offset": 3600, "unit": "bpm"})
        })
        .collect();
    let a = app
        .post(
            &format!("/v2/user/{by_json}/data"),
            json!({"provider": "oura", "timeseries": {"heartrate": hr}}),
        )
        .await;
    assert_eq!(a.status, 200, "{}", a.json);
    let expected = samples(&app, &by_json, "heartrate").await;
    assert_eq!(expected.as_array().unwrap().len(), 500);

    for (content_type, body) in [(ARROW, arrow_bytes(&rows)), (PARQUET, parquet_bytes(&rows))] {
        let user = app.user(&format!("by-{content_type}")).await;
        let a = push(
            &app,
            &user,
            "resource=heartrate&provider=oura",
            content_type,
            body,
        )
        .await;
        assert_eq!(a.status, 200, "{content_type}: {}", a.json);
        assert_eq!(a.json["stored"], json!({"timeseries": {"heartrate": 500}}));
        assert_eq!(
            samples(&app, &user, "heartrate").await,
            expected,
            "{content_type}"
        );
        let providers = app.get(&format!("/v2/user/providers/{user}")).await;
        assert_eq!(
            providers.json["providers"][0]["slug"], "oura",
            "{content_type}"
        );
    }
}

#[tokio::test]
async fn source_columns_interval_and_pressure_families_are_read_from_the_rows() {
    let app = TestApp::new().await;
    let user = app.user("columns").await;
    // Steps with a duration only: `end` is derived; the source comes from constant columns.
    let n = 3;
    let steps = batch(vec![
        (
            "timestamp",
            Arc::new(TimestampNanosecondArray::from_iter_values(
                (0..n).map(|i| T0_NS + i * 3_600_000_000_000),
            )),
        ),
        (
            "duration",
            Arc::new(Float64Array::from(vec![60.0, 120.0, 30.0])),
        ),
        (
            "value",
            Arc::new(Float64Array::from(vec![100.0, 250.0, 40.0])),
        ),
        (
            "source_provider",
            Arc::new(StringArray::from(vec!["fitbit"; 3])),
        ),
        ("source_type", Arc::new(StringArray::from(vec!["watch"; 3]))),
    ]);
    let a = push(
        &app,
        &user,
        "resource=steps",
        PARQUET,
        parquet_bytes(&steps),
    )
    .await;
    assert_eq!(a.status, 200, "{}", a.json);
    let got = samples(&app, &user, "steps").await;
    assert_eq!(got[1]["end"], "2025-01-01T01:02:00Z");
    assert_eq!(got[1]["value"], 250.0);
    assert_eq!(got[0]["unit"], "count");

    let bp = batch(vec![
        (
            "timestamp",
            Arc::new(TimestampNanosecondArray::from(vec![T0_NS])),
        ),
        ("systolic", Arc::new(Float64Array::from(vec![121.0]))),
        ("diastolic", Arc::new(Float64Array::from(vec![79.0]))),
    ]);
    let a = push(
        &app,
        &user,
        "resource=blood_pressure&provider=omron",
        ARROW,
        arrow_bytes(&bp),
    )
    .await;
    assert_eq!(a.status, 200, "{}", a.json);
    let got = samples(&app, &user, "blood_pressure").await;
    assert_eq!(
        (got[0]["systolic"].clone(), got[0]["diastolic"].clone()),
        (json!(121.0), json!(79.0))
    );
}

#[tokio::test]
async fn every_rule_answers_422_at_its_column_and_row_and_stores_nothing() {
    let app = TestApp::new().await;
    let user = app.user("refused").await;
    let hr = heart_rate(10);
    let hr_schema = hr.schema();
    let with = |name: &str, array: ArrayRef| {
        let mut columns: Vec<(&str, ArrayRef)> = hr_schema
            .fields()
            .iter()
            .zip(hr.columns())
            .filter(|(f, _)| f.name() != name)
            .map(|(f, c)| (f.name().as_str(), c.clone()))
            .collect();
        columns.push((name, array));
        arrow_bytes(&batch(columns))
    };
    let q = "resource=heartrate&provider=oura";
    let mut nulls: Vec<Option<f64>> = vec![Some(60.0); 10];
    nulls[5] = None;
    let mut high = vec![60.0; 10];
    high[7] = 900.0;
    let cases: Vec<(&str, Vec<u8>, Vec<Value>)> = vec![
        (
            q,
            with("value", Arc::new(Float64Array::from(nulls))),
            vec![json!("body"), json!("value"), json!(5)],
        ),
        (
            q,
            with("value", Arc::new(Float64Array::from(high))),
            vec![json!("body"), json!("value"), json!(7)],
        ),
        (
            q,
            with("value", Arc::new(StringArray::from(vec!["60"; 10]))),
            vec![json!("body"), json!("value")],
        ),
        (
            q,
            with("colour", Arc::new(StringArray::from(vec!["red"; 10]))),
            vec![json!("body"), json!("colour")],
        ),
        (
            q,
            with(
                "unit",
                Arc::new(StringArray::from(vec![
                    "bpm", "bpm", "mmHg", "bpm", "bpm", "bpm", "bpm", "bpm", "bpm", "bpm",
                ])),
            ),
            vec![json!("body"), json!("unit"), json!(2)],
        ),
        (
            q,
            with(
                "source_provider",
                Arc::new(StringArray::from(vec!["fitbit"; 10])),
            ),
            vec![json!("query"), json!("provider")],
        ),
        (
            q,
            with(
                "timezone_offset",
                Arc::new(Int32Array::from(vec![90_000; 10])),
            ),
            vec![json!("body"), json!("timezone_offset"), json!(0)],
        ),
        (
            q,
            with(
                "ingested_at",
                Arc::new(TimestampNanosecondArray::from(vec![T0_NS; 10])),
            ),
            vec![json!("body"), json!("ingested_at")],
        ),
        (
            "resource=heartrate",
            arrow_bytes(&hr),
            vec![json!("query"), json!("provider")],
        ),
        (
            "resource=heartrate&provider=myspace",
            arrow_bytes(&hr),
            vec![json!("query"), json!("provider")],
        ),
        (
            "provider=oura",
            arrow_bytes(&hr),
            vec![json!("query"), json!("resource")],
        ),
        (
            "resource=note&provider=oura",
            arrow_bytes(&hr),
            vec![json!("query"), json!("resource")],
        ),
        (q, b"not arrow at all".to_vec(), vec![json!("body")]),
    ];
    let mut mixed: Vec<&str> = vec!["oura"; 10];
    mixed[4] = "fitbit";
    let mixed = with("source_provider", Arc::new(StringArray::from(mixed)));
    let a = push(&app, &user, "resource=heartrate", ARROW, mixed).await;
    assert_422_at(&a, &[json!("body"), json!("source_provider"), json!(4)]);
    for (query, body, loc) in cases {
        let a = push(&app, &user, query, ARROW, body).await;
        assert_422_at(&a, &loc);
    }
    let a = push(&app, &user, q, "text/csv", arrow_bytes(&hr)).await;
    assert_422_at(&a, &[json!("header"), json!("content-type")]);
    let a = push(&app, &user, q, PARQUET, arrow_bytes(&hr)).await;
    assert_422_at(&a, &[json!("body")]);
    // Nothing of any refused push was stored.
    assert_eq!(samples(&app, &user, "heartrate").await, json!([]));
}
