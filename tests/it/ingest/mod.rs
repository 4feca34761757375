//! Ingest contract tests: push bodies round-trip through Arrow batches to the getters' JSON,
//! every validation rule rejects at the right location, and the demo generator is
//! deterministic, valid and realistic where the brief asks (overlaps, changing offsets).
//!
//! `main.rs` holds the shared fixture (a push body with every table and timeseries family);
//! each concern is one module.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests: a panic is the failure report

use chrono::{DateTime, NaiveDate, Utc};
use datafusion::arrow::record_batch::RecordBatch;
use serde_json::{Value, json};
use uuid::Uuid;
use wearhouse::ingest::demo::{self, Persona};
use wearhouse::ingest::{
    PushBatches, PushUser, parse_push, render_grouped, render_profile, render_samples,
    render_summaries,
};
use wearhouse::schema::{Dataset, Table, resource};
use wearhouse::validation::Loc;

fn now() -> DateTime<Utc> {
    "2025-03-10T12:00:00Z".parse().unwrap()
}

fn user() -> PushUser {
    PushUser {
        fallback_time_zone: Some(chrono_tz::Europe::Berlin),
    }
}

fn full_body() -> Value {
    json!({
        "provider": "manual",
        "source": {"type": "app", "app_id": "com.example", "device_id": "phone-1"},
        "sleep": [{
            "id": "s1", "bedtime_start": "2025-03-01T23:10:00+01:00", "bedtime_stop": "2025-03-02T07:05:00+01:00",
            "state": "confirmed", "type": "long_sleep", "duration": 28500, "total": 25200, "awake": 3300,
            "light": 13000, "rem": 6200, "deep": 6000, "latency": 600, "hr_lowest": 48, "hr_average": 55,
            "hr_highest": 80, "hr_resting": 50, "hr_dip": 12.5, "efficiency": 88.4, "average_hrv": 45.5,
            "hrv_sdnn": 60.25, "skin_temperature": 34.5, "temperature_delta": -0.25, "respiratory_rate": 14.5,
            "score": 81, "timezone_offset": "+01:00",
            "sleep_stream": {"hypnogram": [4, 2, 2, 1, 1, 3, 2, 4], "interval": 300}
        }],
        "activity": [{
            "date": "2025-03-02", "calories_total": 2300.5, "calories_active": 500.5, "steps": 9000,
            "distance_meter": 7000.5, "floors_climbed": 8, "duration_active_second": 3600,
            "intensity_sedentary_second": 30000, "intensity_low_second": 8000, "intensity_medium_second": 2000,
            "intensity_high_second": 600, "heart_rate_mean": 70.5, "heart_rate_minimum": 48.5,
            "heart_rate_maximum": 150.5, "heart_rate_resting": 52.5, "heart_rate_mean_walking": 95.5,
            "wheelchair_use": false, "wheelchair_push": 0, "time_zone": "Europe/Berlin", "time_zone_offset": 3600
        }],
        "workouts": [{
            "id": "w1", "session_start": "2025-03-02T18:00:00+01:00", "session_end": "2025-03-02T18:45:00+01:00",
            "title": "Evening run", "sport_name": "Running", "sport_slug": "running", "duration_active_second": 2700,
            "heart_rate_mean": 150, "heart_rate_minimum": 100, "heart_rate_maximum": 182,
            "heart_rate_zone_1": 60.5, "heart_rate_zone_2": 300.5, "heart_rate_zone_3": 900.5,
            "heart_rate_zone_4": 1200.5, "heart_rate_zone_5": 200.5, "heart_rate_zone_6": 38.5,
            "distance_meter": 8000.5, "calories": 600.5, "elevation_gain_meter": 50.5,
            "elevation_maximum_meter": 120.5, "elevation_minimum_meter": 70.5, "speed_mean": 2.96,
            "speed_maximum": 4.5, "power_source": "watch", "power_mean": 210.5, "power_maximum": 400.5,
            "power_weighted_mean": 220.5, "steps": 7000, "map_polyline": "abc", "map_summary_polyline": "ab",
            "external_id": "ext-1", "time_zone": "Europe/Berlin"
        }],
        "body": [{
            "id": "b1", "measured_at": "2025-03-02T07:30:00+01:00", "weight_kilogram": 72.5,
            "fat_mass_percentage": 18.5, "water_percentage": 55.5, "muscle_mass_percentage": 40.5,
            "visceral_fat_index": 6.5, "bone_mass_percentage": 4.5, "body_mass_index": 22.5,
            "lean_body_mass_kilogram": 59.5, "waist_circumference_centimeter": 80.5, "time_zone": "+01:00"
        }],
        "meals": [{
            "id": "m1", "date": "2025-03-02", "name": "Lunch", "calories": 650.5, "carbohydrate_gram": 80.5,
            "protein_gram": 30.5, "total_fat_gram": 20.5, "sodium_milligram": 900.5, "vitamin_c_milligram": 15.5,
            "selenium_microgram": 20.5
        }],
        "profile": {"height_centimeter": 178, "birth_date": "1990-05-17", "wheelchair_use": false,
                    "gender": "male", "sex": "male",
                    "created_at": "2025-01-01T00:00:00Z", "updated_at": "2025-03-01T00:00:00Z"},
        "timeseries": {
            "heartrate": [{"timestamp": "2025-03-02T07:00:00+01:00", "timezone_offset": 3600, "type": "resting", "unit": "bpm", "value": 55.5}],
            "steps": [{"timestamp": "2025-03-02T09:00:00+01:00", "start": "2025-03-02T09:00:00+01:00",
                       "end": "2025-03-02T09:15:00+01:00", "duration": 900.0, "timezone_offset": 3600, "type": null,
                       "unit": "count", "value": 1200.0, "source_workout_id": "w1", "source_sport": "running"}],
            "insulin_injection": [{"timestamp": "2025-03-02T12:00:00+01:00", "end": "2025-03-02T12:00:30+01:00",
                       "timezone_offset": 3600, "unit": "unit", "value": 4.5, "delivery_mode": "bolus",
                       "delivery_form": "pen", "bolus_purpose": "meal"}],
            "blood_pressure": [{"timestamp": "2025-03-02T08:00:00+01:00", "timezone_offset": 3600, "unit": "mmHg",
                       "systolic": 120.5, "diastolic": 80.5}],
            "body_temperature": [{"timestamp": "2025-03-02T08:00:00+01:00", "end": "2025-03-02T08:01:00+01:00",
                       "timezone_offset": 3600, "unit": "°C", "value": 36.75, "sensor_location": "armpit"}],
            "workout_duration": [{"timestamp": "2025-03-02T18:00:00+01:00", "end": "2025-03-02T18:45:00+01:00",
                       "timezone_offset": 3600, "unit": "min", "value": 45.5, "intensity": "high"}],
            "note": [{"timestamp": "2025-03-02T20:00:00+01:00", "end": "2025-03-02T20:00:00+01:00",
                       "timezone_offset": 3600, "content": "felt great", "tags": ["mood", "run"]}]
        }
    })
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
        let got = rendered.get(key).unwrap_or(&Value::Null);
        assert!(
            same(value, got),
            "{what}.{key}: pushed {value}, rendered {got}"
        );
    }
}

mod generator;
mod one_pass;
mod round_trip;
mod validation;
