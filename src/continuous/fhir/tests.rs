use std::sync::Arc;

use chrono::Utc;
use datafusion::arrow::array::{
    Float64Array, Int64Array, RecordBatch, StringArray, TimestampMicrosecondArray,
};
use datafusion::arrow::datatypes::{DataType, Field, Schema, TimeUnit};
use serde_json::{Value, json};
use uuid::Uuid;

use super::*;
use crate::engine::time::MICROS_PER_DAY;
use crate::engine::{Limits, parse_request};
use crate::events::envelope::MAX_BODY_BYTES;
use crate::store::metadata::users::Stamped;

const HOUR: i64 = 3_600_000_000;

fn query_of(group_by: Value) -> Query {
    let body = json!({
        "timeframe": {"type": "relative", "anchor": "2025-03-02", "past": {"value": 1, "unit": "day"}},
        "queries": [{
            "select": [
                {"group_key": "*"},
                {"func": "mean", "arg": {"timeseries": "heartrate", "field": "value"}},
                {"func": "count", "arg": {"timeseries": "heartrate", "field": "value"}}
            ],
            "group_by": group_by
        }]
    });
    let request = parse_request(&body, &Limits::default()).unwrap();
    request.queries[0].clone()
}

fn shape(q: &Query, period: Period) -> Shape {
    let keys: Vec<String> = (0..q.group_by.len())
        .map(|i| format!("group_key.{i}"))
        .collect();
    Shape::new(q, period, "group_key.0".to_owned(), keys)
}

fn stored() -> StoredQuery {
    let now = Utc::now();
    StoredQuery {
        id: Uuid::from_u128(7),
        team_id: Uuid::from_u128(1),
        slug: "hr".to_owned(),
        title: "hr".to_owned(),
        status: "active".to_owned(),
        definition: "{}".to_owned(),
        result_table_schema: "{}".to_owned(),
        resource_dependencies: "[]".to_owned(),
        created_at: now,
        updated_at: now,
    }
}

fn user(zone: Option<&str>) -> User {
    User {
        id: Uuid::from_u128(9),
        team_id: Uuid::from_u128(1),
        client_user_id: "client-9".to_owned(),
        created_at: Utc::now(),
        fallback_time_zone: zone.map(|z| Stamped {
            value: z.to_owned(),
            updated_at: Utc::now(),
        }),
        fallback_birth_date: None,
        ingestion_start: None,
        ingestion_end: None,
    }
}

/// Rows `(bucket µs, provider, mean, count)`.
fn batch(rows: &[(i64, Option<&str>, Option<f64>, i64)]) -> RecordBatch {
    let schema = Arc::new(Schema::new(vec![
        Field::new(
            "group_key.0",
            DataType::Timestamp(TimeUnit::Microsecond, None),
            true,
        ),
        Field::new("group_key.1", DataType::Utf8, true),
        Field::new("mean.heartrate.value", DataType::Float64, true),
        Field::new("count.heartrate.value", DataType::Int64, true),
    ]));
    RecordBatch::try_new(
        schema,
        vec![
            Arc::new(TimestampMicrosecondArray::from(
                rows.iter().map(|r| r.0).collect::<Vec<_>>(),
            )),
            Arc::new(StringArray::from(
                rows.iter().map(|r| r.1).collect::<Vec<_>>(),
            )),
            Arc::new(Float64Array::from(
                rows.iter().map(|r| r.2).collect::<Vec<_>>(),
            )),
            Arc::new(Int64Array::from(
                rows.iter().map(|r| r.3).collect::<Vec<_>>(),
            )),
        ],
    )
    .unwrap()
}

fn by_provider() -> Value {
    json!([
        {"date_trunc": {"value": 1, "unit": "day"}, "arg": {"index": "timeseries"}},
        {"source": "source_provider"}
    ])
}

const DAY_1: i64 = 20_148 * MICROS_PER_DAY; // 2025-03-01

#[test]
fn each_numeric_cell_is_one_observation_with_a_stable_id() {
    let q = query_of(by_provider());
    let s = shape(&q, q_period(&q));
    let rows = batch(&[
        (DAY_1, Some("oura"), Some(65.5), 2),
        (DAY_1 + MICROS_PER_DAY, Some("oura"), None, 0),
    ]);
    let obs = observations(&stored(), &user(None), (&q, &s), &rows).unwrap();
    // Day 1: mean and count; day 2: count only (the null mean gives none).
    assert_eq!(obs.len(), 3, "{obs:#?}");
    let mean = &obs[0];
    assert_eq!(mean["code"]["coding"][0]["code"], "8867-4");
    assert_eq!(mean["code"]["coding"][1]["code"], "mean.heartrate.value");
    assert_eq!(mean["category"][0]["coding"][0]["code"], "vital-signs");
    assert_eq!(mean["valueQuantity"]["value"], json!(65.5));
    assert_eq!(mean["valueQuantity"]["code"], "/min");
    assert_eq!(mean["method"]["coding"][0]["code"], "average");
    assert_eq!(
        mean["effectivePeriod"],
        json!({"start": "2025-03-01", "end": "2025-03-01"})
    );
    assert_eq!(mean["device"]["display"], "oura");
    assert_eq!(mean["subject"]["identifier"]["value"], "client-9");
    let count = &obs[1];
    assert_eq!(count["code"]["coding"].as_array().unwrap().len(), 1);
    assert_eq!(count["category"][0]["coding"][0]["code"], "activity");
    assert_eq!(count["valueQuantity"]["value"], json!(2));
    // The same row again (a changed value) keeps its ids; other rows and columns differ.
    let again = observations(
        &stored(),
        &user(None),
        (&q, &s),
        &batch(&[(DAY_1, Some("oura"), Some(70.0), 3)]),
    )
    .unwrap();
    assert_eq!(again[0]["id"], mean["id"]);
    assert_eq!(again[1]["id"], count["id"]);
    let ids: std::collections::HashSet<&str> =
        obs.iter().map(|o| o["id"].as_str().unwrap()).collect();
    assert_eq!(ids.len(), 3);
    // Another provider on the same day is another Observation.
    let other = observations(
        &stored(),
        &user(None),
        (&q, &s),
        &batch(&[(DAY_1, Some("garmin"), Some(65.5), 2)]),
    )
    .unwrap();
    assert_ne!(other[0]["id"], mean["id"]);
}

fn q_period(q: &Query) -> Period {
    match q.group_by[0] {
        GroupBy::DateTrunc(p) => p,
        _ => panic!("no date_trunc"),
    }
}

#[test]
fn sub_day_buckets_carry_the_fallback_zones_offset() {
    let q = query_of(json!([
        {"date_trunc": {"value": 1, "unit": "hour"}, "arg": {"index": "timeseries"}},
        {"source": "source_provider"}
    ]));
    let s = shape(&q, q_period(&q));
    let rows = batch(&[(DAY_1 + 8 * HOUR, None, Some(60.0), 1)]);
    let berlin = observations(&stored(), &user(Some("Europe/Berlin")), (&q, &s), &rows).unwrap();
    assert_eq!(
        berlin[0]["effectivePeriod"],
        json!({"start": "2025-03-01T08:00:00+01:00", "end": "2025-03-01T09:00:00+01:00"})
    );
    // A null group key: no value in its extension, no device.
    assert!(berlin[0].get("device").is_none());
    assert_eq!(
        berlin[0]["extension"][0]["extension"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    let utc = observations(&stored(), &user(None), (&q, &s), &rows).unwrap();
    assert_eq!(utc[0]["effectivePeriod"]["start"], "2025-03-01T08:00:00Z");
}

#[test]
fn weeks_end_on_their_last_day() {
    let q = query_of(json!([
        {"date_trunc": {"value": 1, "unit": "week"}, "arg": {"index": "timeseries"}},
        {"source": "source_provider"}
    ]));
    let s = shape(&q, q_period(&q));
    // 2025-03-03 is a Monday.
    let rows = batch(&[(DAY_1 + 2 * MICROS_PER_DAY, Some("oura"), Some(60.0), 1)]);
    let obs = observations(&stored(), &user(None), (&q, &s), &rows).unwrap();
    assert_eq!(
        obs[0]["effectivePeriod"],
        json!({"start": "2025-03-03", "end": "2025-03-09"})
    );
}

#[test]
fn many_rows_are_split_over_events_under_the_body_limit() {
    let q = query_of(by_provider());
    let s = shape(&q, q_period(&q));
    let rows: Vec<(i64, Option<&str>, Option<f64>, i64)> = (0..2_000)
        .map(|i| (DAY_1 + i * MICROS_PER_DAY, Some("oura"), Some(60.0), 1))
        .collect();
    let events = fhir_events(&stored(), &user(None), (&q, &s), &batch(&rows)).unwrap();
    assert!(events.len() > 1, "{}", events.len());
    let mut total = 0;
    for e in &events {
        assert_eq!(e.event_type, EventType::ContinuousQueryFhirObservations);
        let body = e.envelope(Uuid::from_u128(1));
        assert!(body.len() < MAX_BODY_BYTES, "{}", body.len());
        let bundle = &e.data[0]["bundle"];
        assert_eq!(bundle["type"], "collection");
        for entry in bundle["entry"].as_array().unwrap() {
            let id = entry["resource"]["id"].as_str().unwrap();
            assert_eq!(entry["fullUrl"], format!("urn:uuid:{id}"));
            total += 1;
        }
    }
    assert_eq!(total, 4_000);
    let none = fhir_events(&stored(), &user(None), (&q, &s), &batch(&[])).unwrap();
    assert!(none.is_empty());
}
