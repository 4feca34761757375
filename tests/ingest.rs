//! Ingest contract tests: push bodies round-trip through Arrow batches to the getters' JSON,
//! every validation rule rejects at the right location, and the demo generator is
//! deterministic, valid and realistic where the brief asks (overlaps, changing offsets).

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

#[test]
fn every_table_and_family_round_trips() {
    let body = full_body();
    let parsed = parse_push(&body, &user(), now()).unwrap();
    let user_id = Uuid::nil();
    for table in [
        Table::Sleep,
        Table::Activity,
        Table::Workout,
        Table::Body,
        Table::Meal,
    ] {
        let key = wearhouse::ingest::push_key(table);
        let rendered =
            render_summaries(table, &batches_of(&parsed, Dataset::Table(table)), user_id);
        let pushed = body[key].as_array().unwrap();
        assert_eq!(rendered.len(), pushed.len(), "{key}");
        assert_round_trip(&pushed[0], &rendered[0], key);
        assert_eq!(rendered[0]["source"]["provider"], "manual");
        assert_eq!(rendered[0]["source"]["type"], "app");
        assert_eq!(rendered[0]["source"]["name"], "Manual");
        assert_eq!(rendered[0]["created_at"], "2025-03-10T12:00:00Z");
        assert_eq!(rendered[0]["user_id"], user_id.to_string());
        assert_eq!(rendered[0]["calendar_date"], "2025-03-02", "{key}");
    }
    let profile = render_profile(
        &batches_of(&parsed, Dataset::Table(Table::Profile)),
        user_id,
    )
    .unwrap();
    assert_round_trip(&body["profile"], &profile, "profile");
    assert_eq!(profile["id"], "manual");
    for (name, samples) in body["timeseries"].as_object().unwrap() {
        let res = resource(name).unwrap();
        let rendered = render_samples(res, &batches_of(&parsed, Dataset::Timeseries(res)));
        assert_eq!(rendered.len(), 1, "{name}");
        assert_round_trip(&samples[0], &rendered[0], name);
        assert_eq!(rendered[0]["unit"], res.unit);
    }
    let counts = parsed.counts();
    assert_eq!(counts["sleep"], 1);
    assert_eq!(counts["timeseries"]["note"], 1);
}

#[test]
fn a_rendered_record_can_be_pushed_back_unchanged() {
    let parsed = parse_push(&full_body(), &user(), now()).unwrap();
    let sleep = render_summaries(
        Table::Sleep,
        &batches_of(&parsed, Dataset::Table(Table::Sleep)),
        Uuid::nil(),
    );
    let again = parse_push(
        &json!({"provider": "manual", "sleep": sleep}),
        &user(),
        now(),
    )
    .unwrap();
    let twice = render_summaries(
        Table::Sleep,
        &batches_of(&again, Dataset::Table(Table::Sleep)),
        Uuid::nil(),
    );
    assert_eq!(sleep[0]["id"], twice[0]["id"]);
    assert_eq!(sleep[0]["sleep_stream"], twice[0]["sleep_stream"]);
    assert_eq!(sleep[0]["bedtime_start"], twice[0]["bedtime_start"]);
}

#[test]
fn derived_columns_are_filled() {
    let body = json!({
        "provider": "oura",
        "sleep": [{"bedtime_start": "2025-07-01T22:00:00Z", "bedtime_stop": "2025-07-02T05:00:00Z",
                   "light": 10000, "deep": 5000, "rem": 5000}],
        "activity": [{"date": "2025-07-01", "steps": 100}, {"date": "2025-07-02", "time_zone": "America/New_York"}],
        "timeseries": {"heartrate": [{"timestamp": "2025-07-01T22:00:00Z", "value": 60}],
                       "steps": [{"timestamp": "2025-07-01T22:00:00Z", "duration": 60, "value": 3}]}
    });
    let parsed = parse_push(&body, &user(), now()).unwrap();
    let sleep = render_summaries(
        Table::Sleep,
        &batches_of(&parsed, Dataset::Table(Table::Sleep)),
        Uuid::nil(),
    );
    let s = &sleep[0];
    assert_eq!(s["duration"], 25200);
    assert_eq!(s["total"], 20000);
    assert_eq!(s["type"], "long_sleep");
    assert_eq!(
        s["source"]["type"], "ring",
        "the catalogue's default source type"
    );
    // no zone on the record: the fallback zone (Berlin, summer) gives the offset
    assert_eq!(s["bedtime_stop"], "2025-07-02T07:00:00+02:00");
    assert!(Uuid::parse_str(s["id"].as_str().unwrap()).is_ok());
    let again = parse_push(&body, &user(), now()).unwrap();
    let sleep2 = render_summaries(
        Table::Sleep,
        &batches_of(&again, Dataset::Table(Table::Sleep)),
        Uuid::nil(),
    );
    assert_eq!(
        sleep2[0]["id"], s["id"],
        "ids are derived deterministically"
    );

    let act = render_summaries(
        Table::Activity,
        &batches_of(&parsed, Dataset::Table(Table::Activity)),
        Uuid::nil(),
    );
    assert_eq!(act[0]["time_zone_offset"], 7200);
    assert_eq!(act[1]["time_zone_offset"], -14400);
    assert_ne!(act[0]["id"], act[1]["id"]);
    let res = resource("steps").unwrap();
    let steps = render_samples(res, &batches_of(&parsed, Dataset::Timeseries(res)));
    assert_eq!(steps[0]["end"], "2025-07-02T00:01:00+02:00");
    assert_eq!(steps[0]["timezone_offset"], 7200);

    let no_fallback = parse_push(&body, &PushUser::default(), now()).unwrap();
    let sleep = render_summaries(
        Table::Sleep,
        &batches_of(&no_fallback, Dataset::Table(Table::Sleep)),
        Uuid::nil(),
    );
    assert_eq!(sleep[0]["bedtime_stop"], "2025-07-02T05:00:00Z");
}

fn with(path: &[&str], value: Value) -> Value {
    let mut body = full_body();
    let mut target = &mut body;
    for (i, seg) in path.iter().enumerate() {
        if i + 1 == path.len() {
            target
                .as_object_mut()
                .unwrap()
                .insert((*seg).to_owned(), value);
            break;
        }
        target = match seg.parse::<usize>() {
            Ok(n) => &mut target[n],
            Err(_) => &mut target[*seg],
        };
    }
    body
}

#[test]
fn each_rule_rejects_at_its_location() {
    let cases: Vec<(Value, &[&str], &str)> = vec![
        (with(&["provider"], json!("nope")), &["provider"], "enum"),
        (with(&["extra"], json!(1)), &["extra"], "extra_forbidden"),
        (
            with(&["source", "type"], json!("toaster")),
            &["source", "type"],
            "enum",
        ),
        (
            with(&["sleep", "0", "bedtime_start"], json!("yesterday")),
            &["sleep", "0", "bedtime_start"],
            "value_error",
        ),
        (
            with(&["sleep", "0", "bedtime_start"], json!(null)),
            &["sleep", "0", "bedtime_start"],
            "missing",
        ),
        (
            with(
                &["sleep", "0", "bedtime_start"],
                json!("2025-03-02T08:00:00+01:00"),
            ),
            &["sleep", "0", "bedtime_stop"],
            "value_error",
        ),
        (
            with(&["sleep", "0", "hr_lowest"], json!(301)),
            &["sleep", "0", "hr_lowest"],
            "value_error",
        ),
        (
            with(&["sleep", "0", "hr_lowest"], json!("low")),
            &["sleep", "0", "hr_lowest"],
            "type_error",
        ),
        (
            with(&["sleep", "0", "efficiency"], json!(101.0)),
            &["sleep", "0", "efficiency"],
            "value_error",
        ),
        (
            with(&["sleep", "0", "deep"], json!(-1)),
            &["sleep", "0", "deep"],
            "value_error",
        ),
        (
            with(&["sleep", "0", "state"], json!("asleep")),
            &["sleep", "0", "state"],
            "enum",
        ),
        (
            with(&["sleep", "0", "timezone_offset"], json!("Mars/Base")),
            &["sleep", "0", "timezone_offset"],
            "value_error",
        ),
        (
            with(&["sleep", "0", "wake"], json!(1)),
            &["sleep", "0", "wake"],
            "extra_forbidden",
        ),
        (
            with(&["sleep", "0", "sleep_stream", "hypnogram"], json!([1, 9])),
            &["sleep", "0", "sleep_stream", "hypnogram", "1"],
            "value_error",
        ),
        (
            with(&["activity", "0", "date"], json!("2025-02-30")),
            &["activity", "0", "date"],
            "value_error",
        ),
        (
            with(&["activity", "0", "steps"], json!(12.5)),
            &["activity", "0", "steps"],
            "type_error",
        ),
        (
            with(
                &["workouts", "0", "session_end"],
                json!("2025-03-02T17:00:00+01:00"),
            ),
            &["workouts", "0", "session_end"],
            "value_error",
        ),
        (
            with(&["workouts", "0", "heart_rate_maximum"], json!(400)),
            &["workouts", "0", "heart_rate_maximum"],
            "value_error",
        ),
        (
            with(&["body", "0", "fat_mass_percentage"], json!(120.0)),
            &["body", "0", "fat_mass_percentage"],
            "value_error",
        ),
        (
            with(&["meals", "0", "calories"], json!(-5.0)),
            &["meals", "0", "calories"],
            "value_error",
        ),
        (
            with(&["profile", "sex"], json!("robot")),
            &["profile", "sex"],
            "enum",
        ),
        (
            with(&["profile", "birth_date"], json!("2999-01-01")),
            &["profile", "birth_date"],
            "value_error",
        ),
        (
            with(&["timeseries", "heart_rate"], json!([])),
            &["timeseries", "heart_rate"],
            "extra_forbidden",
        ),
        (
            with(&["timeseries", "heartrate", "0", "unit"], json!("bpm/s")),
            &["timeseries", "heartrate", "0", "unit"],
            "enum",
        ),
        (
            with(&["timeseries", "heartrate", "0", "value"], json!(350.0)),
            &["timeseries", "heartrate", "0", "value"],
            "value_error",
        ),
        (
            with(
                &["timeseries", "heartrate", "0", "end"],
                json!("2025-03-02T07:00:00Z"),
            ),
            &["timeseries", "heartrate", "0", "end"],
            "extra_forbidden",
        ),
        (
            with(
                &["timeseries", "steps", "0", "end"],
                json!("2025-03-02T08:00:00+01:00"),
            ),
            &["timeseries", "steps", "0", "end"],
            "value_error",
        ),
        (
            with(&["timeseries", "steps", "0", "duration"], json!(5.0)),
            &["timeseries", "steps", "0", "duration"],
            "value_error",
        ),
        (
            with(
                &["timeseries", "blood_pressure", "0", "systolic"],
                json!(null),
            ),
            &["timeseries", "blood_pressure", "0", "systolic"],
            "missing",
        ),
        (
            with(&["timeseries", "note", "0", "tags"], json!("mood")),
            &["timeseries", "note", "0", "tags"],
            "type_error",
        ),
        (
            json!({"provider": "manual", "timeseries": {"glucose": [{"timestamp": "2025-03-02T07:00:00Z", "value": 60.0}]}}),
            &["timeseries", "glucose", "0", "value"],
            "value_error",
        ),
        (json!([1, 2]), &[], "type_error"),
    ];
    for (body, path, kind) in cases {
        let err =
            parse_push(&body, &user(), now()).expect_err(&format!("{path:?} should be rejected"));
        let mut expected = vec![Loc::from("body")];
        expected.extend(
            path.iter()
                .map(|s| s.parse::<usize>().map_or(Loc::from(*s), Loc::from)),
        );
        assert_eq!(err.0.len(), 1);
        assert_eq!(err.0[0].loc, expected, "{}", err.0[0].msg);
        assert_eq!(err.0[0].kind, kind, "{path:?}: {}", err.0[0].msg);
    }
}

#[test]
fn grouped_samples_page_by_cursor() {
    let samples: Vec<Value> = (0..5)
        .map(|i| json!({"timestamp": format!("2025-03-02T07:0{i}:00Z"), "value": 60 + i}))
        .collect();
    let a = parse_push(
        &json!({"provider": "oura", "timeseries": {"heartrate": samples}}),
        &user(),
        now(),
    )
    .unwrap();
    let b = parse_push(
        &json!({"provider": "fitbit", "timeseries": {"heartrate": samples}}),
        &user(),
        now(),
    )
    .unwrap();
    let res = resource("heartrate").unwrap();
    let batches: Vec<RecordBatch> = a
        .batches
        .iter()
        .chain(&b.batches)
        .map(|(_, b)| b.clone())
        .collect();
    let mut seen = 0;
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let page = render_grouped(res, &batches, cursor.as_deref(), 4).unwrap();
        for (provider, groups) in page["groups"].as_object().unwrap() {
            assert!(provider == "oura" || provider == "fitbit");
            assert_eq!(groups[0]["source"]["provider"], provider.as_str());
            seen += groups[0]["data"].as_array().unwrap().len();
        }
        pages += 1;
        match page["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
    }
    assert_eq!((seen, pages), (10, 3));
    let err = render_grouped(res, &batches, Some("not-a-cursor"), 4).unwrap_err();
    assert_eq!(err.0[0].loc, vec![Loc::from("query"), Loc::from("cursor")]);
}

mod generator {
    use super::*;

    fn end() -> NaiveDate {
        NaiveDate::from_ymd_opt(2025, 4, 15).unwrap()
    }

    #[test]
    fn same_seed_same_bytes_and_different_seed_differs() {
        for provider in ["oura", "fitbit", "freestyle_libre", "apple_health_kit"] {
            let a = demo::generate(provider, Persona::Regular, 7, end(), 5).unwrap();
            let b = demo::generate(provider, Persona::Regular, 7, end(), 5).unwrap();
            let c = demo::generate(provider, Persona::Regular, 8, end(), 5).unwrap();
            assert_eq!(
                serde_json::to_string(&a).unwrap(),
                serde_json::to_string(&b).unwrap(),
                "{provider}"
            );
            assert_ne!(
                serde_json::to_string(&a).unwrap(),
                serde_json::to_string(&c).unwrap(),
                "{provider}"
            );
        }
        assert!(demo::generate("garmin", Persona::Regular, 7, end(), 5).is_err());
        assert!(demo::is_demo_provider("oura") && !demo::is_demo_provider("manual"));
    }

    #[test]
    fn every_generated_body_passes_parse_push() {
        for persona in [Persona::Regular, Persona::Traveller] {
            for provider in ["oura", "fitbit", "freestyle_libre", "apple_health_kit"] {
                let bodies = demo::generate(provider, persona, 3, end(), 30).unwrap();
                assert!(bodies.len() >= 25, "{provider}: {} bodies", bodies.len());
                let mut rows = 0;
                for body in &bodies {
                    let parsed = parse_push(body, &PushUser::default(), now())
                        .unwrap_or_else(|e| panic!("{provider} {persona:?}: {:?}", e.0));
                    rows += parsed.total_rows();
                }
                assert!(rows > 30 * 20, "{provider}: only {rows} rows");
            }
        }
    }

    fn nights(provider: &str) -> Vec<(DateTime<Utc>, DateTime<Utc>)> {
        demo::generate(provider, Persona::Regular, 11, end(), 30)
            .unwrap()
            .iter()
            .flat_map(|b| b["sleep"].as_array().cloned().unwrap_or_default())
            .map(|s| {
                let t = |k: &str| s[k].as_str().unwrap().parse::<DateTime<Utc>>().unwrap();
                (t("bedtime_start"), t("bedtime_stop"))
            })
            .collect()
    }

    #[test]
    fn ring_and_watch_see_the_same_nights() {
        let ring = nights("oura");
        let watch = nights("apple_health_kit");
        assert!(ring.len() >= 20 && watch.len() >= 20);
        let overlapping = ring
            .iter()
            .filter(|(s, e)| {
                watch
                    .iter()
                    .any(|(ws, we)| ws < e && s < we && (*ws - *s).num_minutes().abs() < 45)
            })
            .count();
        assert!(
            overlapping * 10 >= ring.len() * 8,
            "{overlapping} of {} nights overlap",
            ring.len()
        );
    }

    #[test]
    fn the_travellers_offsets_change() {
        let offsets = |persona| -> std::collections::BTreeSet<i64> {
            demo::generate("apple_health_kit", persona, 5, end(), 60)
                .unwrap()
                .iter()
                .flat_map(|b| {
                    b["timeseries"]["heartrate"]
                        .as_array()
                        .cloned()
                        .unwrap_or_default()
                })
                .filter_map(|s| s["timezone_offset"].as_i64())
                .collect()
        };
        let traveller = offsets(Persona::Traveller);
        assert!(traveller.len() >= 3, "trip and DST: {traveller:?}");
        let regular = offsets(Persona::Regular);
        assert!(regular.len() <= 2, "{regular:?}");
    }
}
