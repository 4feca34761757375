//! Oura API v2 documents to one push body (`data-model.md`), source `{"type": "ring"}`.
//!
//! | Oura | push body |
//! |---|---|
//! | `sleep` | `sleep` rows; its `hrv` samples → `timeseries.hrv` (ms) |
//! | `daily_activity` | `activity` rows |
//! | `workout` | `workouts` rows |
//! | `heartrate` | `timeseries.heartrate` (bpm) |
//! | `daily_spo2` | `timeseries.blood_oxygen` (%) |
//! | `personal_info` | `profile` |
//!
//! Oura's record ids are kept as `id` (workouts also as `provider_id`) so a re-pull replaces;
//! instants keep the offset Oura gave them and each record's `timezone_offset` is that offset in
//! seconds. A document that does not read as its documented shape is skipped, counted and
//! logged; its neighbours are kept.
//!
//! Decisions where the documentation is silent:
//! - Sleep periods of type `deleted` (deleted by the user) and `rest` (rejected by the user as
//!   falsely detected) are not sleep: they are left out, not counted as malformed. Types
//!   `sleep` and `late_nap` (user-confirmed naps) become `acknowledged_nap`, `long_sleep` stays;
//!   without a type, ingest derives it from the duration.
//! - Sleep rows and HRV samples: see `sleep.rs`.
//! - Activity: `distance` is Oura's `equivalent_walking_distance` (the only distance it
//!   gives); `duration_active_second` is low + medium + high activity time; the intensities
//!   travel in minutes as the wire has them; the offset is that of the day's `timestamp`
//!   (04:00 local). Ingest derives activity ids from the day, so Oura's id is carried but not
//!   kept.
//! - Workouts: `sport.slug` is Oura's `activity`, `sport.name` the same in words
//!   (`strength_training` → `Strength training`); `title` is the user's `label`.
//! - Heart-rate samples are UTC instants without the wearer's offset, so `timezone_offset` is
//!   left out; `type` is Oura's sample `source` (`awake`, `rest`, `sleep`, `workout`, `live`,
//!   `session`).
//! - SpO2 is one daily average: one `blood_oxygen` sample at 00:00 UTC of its `day`; days
//!   without a value have no sample.
//! - Profile: `height` is in metres (the documentation names no unit; recorded responses give
//!   `1.8`) and becomes centimetres; `biological_sex` becomes `sex` when it is `female`, `male`
//!   or `other`; age, weight and e-mail are not kept.

use chrono::{DateTime, FixedOffset, SecondsFormat};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::sleep::{self, Sleep};
use crate::ingest::{PulledRecord, PulledSample, TypedSamples};
use crate::schema::Table;
use crate::sync::Pulled;
use crate::sync::body::with_payload;
pub(super) use crate::sync::body::{num, put};

/// A push body being filled, part by part.
#[derive(Debug, Default)]
pub(crate) struct Body {
    sleep: Vec<PulledRecord>,
    activity: Vec<PulledRecord>,
    workouts: Vec<PulledRecord>,
    heartrate: TypedSamples,
    hrv: Vec<Value>,
    blood_oxygen: Vec<Value>,
    profile: Option<PulledRecord>,
    skipped: usize,
}

#[derive(Debug, Deserialize)]
struct DailyActivity {
    id: String,
    day: chrono::NaiveDate,
    timestamp: DateTime<FixedOffset>,
    total_calories: f64,
    active_calories: f64,
    steps: i64,
    equivalent_walking_distance: Option<f64>,
    sedentary_time: Option<i64>,
    low_activity_time: i64,
    medium_activity_time: i64,
    high_activity_time: i64,
}

#[derive(Debug, Deserialize)]
struct Workout {
    id: String,
    activity: String,
    start_datetime: DateTime<FixedOffset>,
    end_datetime: DateTime<FixedOffset>,
    label: Option<String>,
    calories: Option<f64>,
    distance: Option<f64>,
}

#[derive(Debug, Deserialize)]
struct HeartRate<'a> {
    timestamp: &'a str,
    bpm: f64,
    source: Option<&'a str>,
}

#[derive(Debug, Deserialize)]
struct SpO2Average {
    average: Option<f64>,
}

#[derive(Debug, Deserialize)]
struct DailySpO2 {
    id: String,
    day: chrono::NaiveDate,
    spo2_percentage: Option<SpO2Average>,
}

#[derive(Debug, Deserialize)]
struct PersonalInfo {
    height: Option<f64>,
    biological_sex: Option<String>,
}

/// An instant as it travels: RFC 3339 in the offset Oura gave.
pub(super) fn stamp(at: DateTime<FixedOffset>) -> String {
    at.to_rfc3339_opts(SecondsFormat::AutoSi, false)
}

pub(super) fn offset(at: DateTime<FixedOffset>) -> i32 {
    at.offset().local_minus_utc()
}

/// Rounds a float to the integer an int64 column holds; `None` for non-finite values.
pub(super) fn round(v: f64) -> Option<i64> {
    v.is_finite().then(|| v.round() as i64)
}

impl Body {
    /// Reads one document, or counts and logs it as malformed.
    fn read<'a, T: Deserialize<'a>>(&mut self, resource: &str, document: &'a Value) -> Option<T> {
        match T::deserialize(document) {
            Ok(t) => Some(t),
            Err(e) => self.malformed(resource, document, &e.to_string()),
        }
    }

    fn malformed<T>(&mut self, resource: &str, document: &Value, why: &str) -> Option<T> {
        let id = document.get("id").and_then(Value::as_str).unwrap_or("?");
        tracing::warn!(
            provider = "oura",
            resource,
            id,
            error = why,
            "skipped a malformed provider record"
        );
        self.skipped += 1;
        None
    }

    /// Sleep periods: rows when `rows`, their HRV samples when `hrv`.
    pub(crate) fn sleep(&mut self, documents: &[Value], rows: bool, hrv: bool) {
        for document in documents {
            let Some(s) = self.read::<Sleep>("sleep", document) else {
                continue;
            };
            if s.bedtime_end < s.bedtime_start {
                self.malformed::<()>("sleep", document, "bedtime_end is before bedtime_start");
                continue;
            }
            let kind = match s.kind.as_deref() {
                Some("deleted" | "rest") => continue,
                Some("long_sleep") => Some("long_sleep"),
                Some("sleep" | "late_nap") => Some("acknowledged_nap"),
                _ => None,
            };
            if hrv && let Some(sample) = &s.hrv {
                self.hrv.extend(sleep::samples(sample, "ms"));
            }
            if rows {
                let row = sleep::row(&s, kind);
                self.sleep.push(with_payload(row, document));
            }
        }
    }

    /// Daily activity summaries.
    pub(crate) fn activity(&mut self, documents: &[Value]) {
        for document in documents {
            let Some(a) = self.read::<DailyActivity>("daily_activity", document) else {
                continue;
            };
            let mut row = Map::new();
            row.insert("id".into(), a.id.into());
            row.insert("date".into(), a.day.to_string().into());
            row.insert("calories_total".into(), num(a.total_calories));
            row.insert("calories_active".into(), num(a.active_calories));
            row.insert("steps".into(), a.steps.into());
            put(&mut row, "distance", a.equivalent_walking_distance.map(num));
            let active = a.low_activity_time + a.medium_activity_time + a.high_activity_time;
            row.insert("duration_active_second".into(), active.into());
            put(&mut row, "intensity_sedentary_second", a.sedentary_time);
            row.insert("low".into(), minutes(a.low_activity_time));
            row.insert("medium".into(), minutes(a.medium_activity_time));
            row.insert("high".into(), minutes(a.high_activity_time));
            row.insert("timezone_offset".into(), offset(a.timestamp).into());
            self.activity
                .push(with_payload(Value::Object(row), document));
        }
    }

    /// Workouts.
    pub(crate) fn workouts(&mut self, documents: &[Value]) {
        for document in documents {
            let Some(w) = self.read::<Workout>("workout", document) else {
                continue;
            };
            if w.end_datetime < w.start_datetime {
                self.malformed::<()>("workout", document, "end_datetime is before start_datetime");
                continue;
            }
            let mut row = Map::new();
            row.insert("id".into(), w.id.clone().into());
            row.insert("time_start".into(), stamp(w.start_datetime).into());
            row.insert("time_end".into(), stamp(w.end_datetime).into());
            put(&mut row, "title", w.label);
            row.insert(
                "sport".into(),
                json!({"name": sport_name(&w.activity), "slug": w.activity}),
            );
            put(&mut row, "calories", w.calories.map(num));
            put(&mut row, "distance", w.distance.map(num));
            row.insert("provider_id".into(), w.id.into());
            row.insert("timezone_offset".into(), offset(w.start_datetime).into());
            self.workouts
                .push(with_payload(Value::Object(row), document));
        }
    }

    /// Heart-rate samples.
    pub(crate) fn heartrate(&mut self, documents: &[Value]) {
        for document in documents {
            let Some(h) = self.read::<HeartRate>("heartrate", document) else {
                continue;
            };
            if !(0.0..=300.0).contains(&h.bpm) {
                self.malformed::<()>("heartrate", document, "bpm outside 0–300");
                continue;
            }
            let Ok(at) = DateTime::parse_from_rfc3339(h.timestamp) else {
                self.malformed::<()>("heartrate", document, "timestamp is not RFC 3339");
                continue;
            };
            // In UTC, without an offset: Oura's heart rates are UTC instants.
            let mut sample = PulledSample::at_instant(at.to_utc(), h.bpm);
            if let Some(kind) = h.source {
                sample = sample.tagged(self.heartrate.kind(kind));
            }
            self.heartrate.push(sample);
        }
    }

    /// Daily SpO2 averages.
    pub(crate) fn spo2(&mut self, documents: &[Value]) {
        for document in documents {
            let Some(d) = self.read::<DailySpO2>("daily_spo2", document) else {
                continue;
            };
            let Some(average) = d.spo2_percentage.and_then(|p| p.average) else {
                tracing::debug!(id = d.id, "Oura daily_spo2 without an average");
                continue;
            };
            self.blood_oxygen.push(json!({
                "timestamp": format!("{}T00:00:00Z", d.day),
                "unit": "%",
                "value": num(average),
            }));
        }
    }

    /// The personal info document.
    pub(crate) fn personal_info(&mut self, document: &Value) {
        let Some(p) = self.read::<PersonalInfo>("personal_info", document) else {
            return;
        };
        let mut profile = Map::new();
        put(
            &mut profile,
            "height",
            p.height.and_then(|m| round(m * 100.0)),
        );
        let sex = p.biological_sex.map(|s| s.to_ascii_lowercase());
        put(
            &mut profile,
            "sex",
            sex.filter(|s| matches!(s.as_str(), "female" | "male" | "other")),
        );
        if !profile.is_empty() {
            self.profile = Some(with_payload(Value::Object(profile), document));
        }
    }

    /// The push body, with only the parts that received records.
    pub(crate) fn finish(self) -> Pulled {
        crate::sync::body::pulled(
            ("oura", "ring"),
            vec![
                (Table::Sleep, self.sleep),
                (Table::Activity, self.activity),
                (Table::Workout, self.workouts),
            ],
            self.profile,
            vec![
                ("heartrate", self.heartrate.into()),
                ("hrv", self.hrv.into()),
                ("blood_oxygen", self.blood_oxygen.into()),
            ],
            self.skipped,
        )
    }
}

/// Seconds as the minutes the wire's activity intensities travel in.
fn minutes(seconds: i64) -> Value {
    num(seconds as f64 / 60.0)
}

/// `strength_training` → `Strength training`.
fn sport_name(slug: &str) -> String {
    let words = slug.replace('_', " ");
    let mut chars = words.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => words,
    }
}
