//! Fitbit weight and body-fat logs (`/1/user/-/body/log/{weight,fat}/date/{start}/{end}.json`)
//! to `body` rows and `weight`/`fat` samples, and the profile (`/1/user/-/profile.json`) to
//! `profile`. The mapping rules are in `normalise.rs`.

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, FixedOffset, NaiveDate, NaiveTime};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::normalise::{Body, num, put, round};
use super::zone::{offset, stamp};

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct WeightLog {
    log_id: u64,
    date: NaiveDate,
    time: NaiveTime,
    weight: f64,
    bmi: Option<f64>,
    fat: Option<f64>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct FatLog {
    log_id: u64,
    date: NaiveDate,
    time: NaiveTime,
    fat: f64,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct User {
    height: Option<f64>,
    gender: Option<String>,
    date_of_birth: Option<NaiveDate>,
}

#[derive(Debug, Deserialize)]
struct Profile {
    user: User,
}

impl Body {
    /// Weight and body-fat logs of the date-range answers.
    pub(crate) fn body_logs(&mut self, weights: &[Value], fats: &[Value]) {
        let mut fat_logs: Vec<(FatLog, DateTime<FixedOffset>, &Value)> = Vec::new();
        for document in fats {
            let Some(f) = self.read::<FatLog>("fat", document) else {
                continue;
            };
            if !(0.0..=100.0).contains(&f.fat) {
                self.malformed::<()>("fat", document, "fat outside 0–100 %");
                continue;
            }
            if let Some(at) = self.instant("fat", document, f.date.and_time(f.time)) {
                fat_logs.push((f, at, document));
            }
        }
        let fat_of: HashMap<u64, f64> =
            fat_logs.iter().map(|(f, _, _)| (f.log_id, f.fat)).collect();
        let mut weighed = HashSet::new();
        for document in weights {
            let Some(w) = self.read::<WeightLog>("weight", document) else {
                continue;
            };
            if !(w.weight.is_finite() && w.weight > 0.0 && w.weight <= 700.0) {
                self.malformed::<()>("weight", document, "weight outside 0–700 kg");
                continue;
            }
            let Some(at) = self.instant("weight", document, w.date.and_time(w.time)) else {
                continue;
            };
            weighed.insert(w.log_id);
            if !self.in_window(at) {
                continue;
            }
            let fat = w
                .fat
                .filter(|f| (0.0..=100.0).contains(f))
                .or_else(|| fat_of.get(&w.log_id).copied());
            self.body_row(w.log_id, at, (Some(w.weight), fat, w.bmi), document);
        }
        for (f, at, document) in fat_logs {
            if !weighed.contains(&f.log_id) && self.in_window(at) {
                self.body_row(f.log_id, at, (None, Some(f.fat), None), document);
            }
        }
    }

    fn body_row(
        &mut self,
        id: u64,
        at: DateTime<FixedOffset>,
        (weight, fat, bmi): (Option<f64>, Option<f64>, Option<f64>),
        document: &Value,
    ) {
        let mut row = Map::new();
        row.insert("id".into(), id.to_string().into());
        row.insert("measured_at".into(), stamp(at).into());
        put(&mut row, "weight", weight.map(num));
        put(&mut row, "fat", fat.map(num));
        put(&mut row, "body_mass_index", bmi.map(num));
        row.insert("time_zone".into(), self.zone.label().into());
        self.body.push(crate::sync::body::with_payload(
            Value::Object(row),
            document,
        ));
        let sample = |unit: &str, value: f64| {
            json!({
                "timestamp": stamp(at),
                "timezone_offset": offset(at),
                "unit": unit,
                "value": num(value),
            })
        };
        if let Some(w) = weight {
            self.weight.push(sample("kg", w));
        }
        if let Some(f) = fat {
            self.fat.push(sample("%", f));
        }
    }

    /// The profile document `{"user": {...}}`.
    pub(crate) fn profile(&mut self, document: &Value) {
        let Some(Profile { user }) = self.read::<Profile>("profile", document) else {
            return;
        };
        let mut profile = Map::new();
        put(
            &mut profile,
            "height",
            user.height.filter(|h| *h > 0.0).and_then(round),
        );
        put(
            &mut profile,
            "birth_date",
            user.date_of_birth.map(|d| d.to_string()),
        );
        let gender = user.gender.map(|g| match g.to_ascii_uppercase().as_str() {
            "MALE" => "male",
            "FEMALE" => "female",
            _ => "unknown",
        });
        put(&mut profile, "gender", gender);
        if !profile.is_empty() {
            self.profile = Some(crate::sync::body::with_payload(
                Value::Object(profile),
                document,
            ));
        }
    }
}
