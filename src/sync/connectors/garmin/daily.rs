//! A day's Garmin summaries: daily summaries (`dailies`) to `activity` rows and `heartrate`
//! samples, and stress details (`stressDetails`) to `stress_level` samples. The mapping and
//! its decisions are stated in `normalise.rs`.

use serde::Deserialize;
use serde_json::{Map, Value};

use super::normalise::{Body, Wanted, hundredths, samples, zone};
use crate::sync::body::{num, put, with_payload};

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Daily {
    calendar_date: chrono::NaiveDate,
    start_time_in_seconds: i64,
    start_time_offset_in_seconds: i32,
    steps: Option<i64>,
    distance_in_meters: Option<f64>,
    active_time_in_seconds: Option<i64>,
    active_kilocalories: Option<f64>,
    bmr_kilocalories: Option<f64>,
    moderate_intensity_duration_in_seconds: Option<f64>,
    vigorous_intensity_duration_in_seconds: Option<f64>,
    floors_climbed: Option<i64>,
    min_heart_rate_in_beats_per_minute: Option<i64>,
    max_heart_rate_in_beats_per_minute: Option<i64>,
    resting_heart_rate_in_beats_per_minute: Option<i64>,
    #[serde(default, deserialize_with = "samples")]
    time_offset_heart_rate_samples: Vec<(i64, f64)>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Stress {
    start_time_in_seconds: i64,
    start_time_offset_in_seconds: i32,
    #[serde(default, deserialize_with = "samples")]
    time_offset_stress_level_values: Vec<(i64, f64)>,
}

impl Body {
    /// Daily summaries: activity rows and their heart-rate samples, as `wanted` says.
    pub(super) fn dailies(&mut self, records: &[Value], wanted: Wanted) {
        for record in records {
            let Some(d) = self.read::<Daily>("dailies", record) else {
                continue;
            };
            let Some(tz) = zone(d.start_time_offset_in_seconds) else {
                self.malformed::<()>("dailies", record, "startTimeOffsetInSeconds out of range");
                continue;
            };
            if wanted.heartrate {
                let from = (d.start_time_in_seconds, tz);
                let hr = &d.time_offset_heart_rate_samples;
                Body::series(&mut self.heartrate, from, hr, |v| v > 0.0);
            }
            if !wanted.activity {
                continue;
            }
            let day = d.calendar_date.to_string();
            let mut row = Map::new();
            row.insert("id".into(), day.clone().into());
            row.insert("date".into(), day.into());
            let total = d.active_kilocalories.zip(d.bmr_kilocalories);
            put(&mut row, "calories_total", total.map(|(a, b)| num(a + b)));
            put(&mut row, "calories_active", d.active_kilocalories.map(num));
            put(&mut row, "steps", d.steps);
            put(&mut row, "distance", d.distance_in_meters.map(num));
            put(&mut row, "floors_climbed", d.floors_climbed);
            put(&mut row, "duration_active_second", d.active_time_in_seconds);
            let minutes = |s: Option<f64>| s.map(|s| num(s / 60.0));
            put(
                &mut row,
                "medium",
                minutes(d.moderate_intensity_duration_in_seconds),
            );
            put(
                &mut row,
                "high",
                minutes(d.vigorous_intensity_duration_in_seconds),
            );
            let mut hr = Map::new();
            put(&mut hr, "min_bpm", d.min_heart_rate_in_beats_per_minute);
            put(&mut hr, "max_bpm", d.max_heart_rate_in_beats_per_minute);
            put(
                &mut hr,
                "resting_bpm",
                d.resting_heart_rate_in_beats_per_minute,
            );
            let values: Vec<f64> = d
                .time_offset_heart_rate_samples
                .iter()
                .map(|(_, v)| *v)
                .filter(|v| *v > 0.0)
                .collect();
            if !values.is_empty() {
                let mean = values.iter().sum::<f64>() / values.len() as f64;
                hr.insert("avg_bpm".into(), num(hundredths(mean)));
            }
            if !hr.is_empty() {
                row.insert("heart_rate".into(), Value::Object(hr));
            }
            row.insert("timezone_offset".into(), tz.local_minus_utc().into());
            self.activity.push(with_payload(Value::Object(row), record));
        }
    }

    /// Stress details: `stress_level` samples, the negative codes left out.
    pub(super) fn stress(&mut self, records: &[Value]) {
        for record in records {
            let Some(s) = self.read::<Stress>("stressDetails", record) else {
                continue;
            };
            let Some(tz) = zone(s.start_time_offset_in_seconds) else {
                self.malformed::<()>("stressDetails", record, "offset out of range");
                continue;
            };
            let from = (s.start_time_in_seconds, tz);
            let values = &s.time_offset_stress_level_values;
            Body::series(&mut self.stress_level, from, values, |v| {
                (1.0..=100.0).contains(&v)
            });
        }
    }
}
