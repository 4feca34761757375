//! Ingest contract tests: push bodies round-trip through Arrow batches to the getters' JSON,
//! every validation rule rejects at the right location (the demo generator's tests are
//! `sync/demo_generator.rs`, beside the pulls that run it).
//!
//! `main.rs` holds the shared fixture (a push body with every table and timeseries family);
//! each concern is one module.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests: a panic is the failure report

use chrono::{DateTime, Utc};
use datafusion::arrow::record_batch::RecordBatch;
use serde_json::{Value, json};
use uuid::Uuid;
use wearhouse::ingest::{PushBatches, PushUser, parse_push};
use wearhouse::render::{render_grouped, render_profile, render_samples, render_summaries};
use wearhouse::schema::{Dataset, Table, resource};
use wearhouse::validation::Loc;

fn now() -> DateTime<Utc> {
    "2025-03-10T12:00:00Z".parse().unwrap()
}

fn user() -> PushUser {
    PushUser {
        fallback_time_zone: Some(chrono_tz::Europe::Berlin),
        user_id: Uuid::nil(),
    }
}

/// The committed push body (one record of every table, samples of every family), in the
/// reference's wire shapes.
fn full_body() -> Value {
    crate::support::full_push()
}

fn batches_of(parsed: &PushBatches, dataset: Dataset) -> Vec<RecordBatch> {
    parsed
        .batches
        .iter()
        .filter(|(d, _)| *d == dataset)
        .map(|(_, b)| b.clone())
        .collect()
}

/// Pushed and rendered values agree: numbers numerically, date-times as instants.
fn same(pushed: &Value, rendered: &Value) -> bool {
    match (pushed, rendered) {
        (Value::Number(a), Value::Number(b)) => a.as_f64() == b.as_f64(),
        (Value::String(a), Value::String(b)) if a != b => {
            match (
                DateTime::parse_from_rfc3339(a),
                DateTime::parse_from_rfc3339(b),
            ) {
                (Ok(x), Ok(y)) => x == y,
                _ => false,
            }
        }
        (Value::Object(a), Value::Object(b)) => {
            a.iter().all(|(k, v)| b.get(k).is_some_and(|w| same(v, w)))
        }
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same(x, y))
        }
        (a, b) => a == b,
    }
}

fn assert_round_trip(pushed: &Value, rendered: &Value, what: &str) {
    for (key, value) in pushed.as_object().unwrap() {
        if what.starts_with("profile") && key == "wheelchair_use" && *value == Value::Bool(false) {
            // The reference's profile admits only `true` or absence (issue 42).
            assert!(
                rendered.get(key).is_none(),
                "{what}.{key}: false is rendered"
            );
            continue;
        }
        let got = rendered.get(key).unwrap_or(&Value::Null);
        assert!(
            same(value, got),
            "{what}.{key}: pushed {value}, rendered {got}"
        );
    }
}

mod one_pass;
mod round_trip;
mod validation;
