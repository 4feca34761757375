//! Fitbit Web API documents to one push body (`data-model.md`), source `{"type": "watch"}`;
//! sleep logs are read in `sleep.rs`, body logs and the profile in `body.rs`.
//!
//! | Fitbit | push body |
//! |---|---|
//! | sleep log (v1.2) | `sleep` rows with the stage hypnogram (`sleep.rs`) |
//! | daily activity summary | `activity` rows |
//! | intraday steps (15 min) | `timeseries.steps` (count, interval samples) |
//! | intraday heart rate (1 min) | `timeseries.heartrate` (bpm) |
//! | weight and body-fat logs | `body` rows, `timeseries.weight` (kg), `timeseries.fat` (%) |
//! | profile | `profile` |
//!
//! Fitbit's local times are read in the user's zone (`zone.rs`): instants travel in their
//! local offset and each record's `timezone_offset` is that offset in seconds. Fitbit's own
//! ids (`logId`) are kept as `id` so a re-pull replaces. A document that does not read as its
//! documented shape is skipped, counted and logged; its neighbours are kept. With a window,
//! records whose instant lies outside it are left out (not counted).
//!
//! Decisions where the documentation is silent:
//! - Source type `watch`: the push body has one source, and no endpoint pulled here names the
//!   device (an Aria scale's weight logs also travel as `watch`; their `source` is not kept).
//! - Activity: `calories_active` is `activityCalories`; `distance` is the `total` entry of
//!   `distances` (km) in metres; `duration_active_second` is lightly + fairly + very active
//!   minutes; the intensities travel in minutes as the wire has them (low = lightly, medium =
//!   fairly, high = very active); `time_zone` is the user's zone (ingest derives the offset).
//!   Fitbit answers a zero summary for a day without data: a day with no steps and no active
//!   minute is left out. Ingest derives activity ids from the day.
//! - Intraday steps: 15-minute interval samples; intervals without steps are left out (Fitbit
//!   reports 0 both for still and for not worn; a sum over the day is unchanged).
//! - Heart rate: one sample per minute Fitbit has a reading for; no `type`.
//! - Body logs: one `body` row per weight log (its `fat` when it has one, else that of the fat
//!   log with the same `logId`), one per fat log no weight log shares its `logId` with;
//!   `bmi` is `body_mass_index`. Each weight and fat value is also a timeseries sample.
//! - Profile: `height` is in centimetres (metric) and rounded; `gender` `MALE`/`FEMALE`
//!   becomes `male`/`female`, `NA` `unknown`; `dateOfBirth` is `birth_date`.

use chrono::{DateTime, FixedOffset, NaiveDate, NaiveDateTime, NaiveTime, TimeDelta};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use super::sleep::{self, SleepLog};
use super::zone::{UserZone, offset, stamp};
use crate::ingest::PulledRecord;
use crate::schema::Table;
use crate::sync::body::with_payload;
pub(super) use crate::sync::body::{num, put};
use crate::sync::{Pulled, Window};

/// A push body being filled, part by part.
#[derive(Debug)]
pub(crate) struct Body {
    pub(super) zone: UserZone,
    window: Option<Window>,
    sleep: Vec<PulledRecord>,
    activity: Vec<PulledRecord>,
    pub(super) body: Vec<PulledRecord>,
    heartrate: Vec<Value>,
    steps: Vec<Value>,
    pub(super) weight: Vec<Value>,
    pub(super) fat: Vec<Value>,
    pub(super) profile: Option<PulledRecord>,
    skipped: usize,
}

#[derive(Debug, Deserialize)]
struct DaySummary {
    summary: Summary,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Summary {
    calories_out: f64,
    activity_calories: Option<f64>,
    steps: i64,
    distances: Option<Vec<Distance>>,
    floors: Option<i64>,
    sedentary_minutes: Option<i64>,
    lightly_active_minutes: i64,
    fairly_active_minutes: i64,
    very_active_minutes: i64,
    resting_heart_rate: Option<i64>,
}

#[derive(Debug, Deserialize)]
struct Distance {
    activity: String,
    distance: f64,
}

#[derive(Debug, Deserialize)]
struct Reading {
    time: NaiveTime,
    value: f64,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Intraday {
    dataset: Vec<Value>,
    dataset_interval: Option<i64>,
}

/// Rounds a float to the integer an int64 column holds; `None` for non-finite values.
pub(super) fn round(v: f64) -> Option<i64> {
    v.is_finite().then(|| v.round() as i64)
}

impl Body {
    /// An empty body whose local times are read in `zone`, cut to `window` when there is one.
    pub(crate) fn new(zone: UserZone, window: Option<Window>) -> Body {
        Body {
            zone,
            window,
            sleep: Vec::new(),
            activity: Vec::new(),
            body: Vec::new(),
            heartrate: Vec::new(),
            steps: Vec::new(),
            weight: Vec::new(),
            fat: Vec::new(),
            profile: None,
            skipped: 0,
        }
    }

    /// Reads one document, or counts and logs it as malformed.
    pub(super) fn read<T: DeserializeOwned>(
        &mut self,
        resource: &str,
        document: &Value,
    ) -> Option<T> {
        match T::deserialize(document) {
            Ok(t) => Some(t),
            Err(e) => self.malformed(resource, document, &e.to_string()),
        }
    }

    pub(super) fn malformed<T>(
        &mut self,
        resource: &str,
        document: &Value,
        why: &str,
    ) -> Option<T> {
        let id = document
            .get("logId")
            .map_or_else(|| "?".to_owned(), Value::to_string);
        tracing::warn!(
            provider = "fitbit",
            resource,
            id,
            error = why,
            "skipped a malformed provider record"
        );
        self.skipped += 1;
        None
    }

    /// The instant of a local time, or the record counted as malformed.
    pub(super) fn instant(
        &mut self,
        resource: &str,
        document: &Value,
        local: NaiveDateTime,
    ) -> Option<DateTime<FixedOffset>> {
        match self.zone.resolve(local) {
            Some(at) => Some(at),
            None => self.malformed(resource, document, "a local time the user's zone skips"),
        }
    }

    pub(super) fn in_window(&self, at: DateTime<FixedOffset>) -> bool {
        self.window.is_none_or(|w| w.contains(at.to_utc()))
    }

    /// Sleep logs (v1.2) of a date-range answer.
    pub(crate) fn sleep(&mut self, logs: &[Value]) {
        for document in logs {
            let Some(log) = self.read::<SleepLog>("sleep", document) else {
                continue;
            };
            let (Some(start), Some(end)) = (
                self.instant("sleep", document, log.start_time),
                self.instant("sleep", document, log.end_time),
            ) else {
                continue;
            };
            if end < start {
                self.malformed::<()>("sleep", document, "endTime is before startTime");
                continue;
            }
            if self.in_window(end) {
                let row = sleep::row(&log, &self.zone, start, end);
                self.sleep.push(with_payload(row, document));
            }
        }
    }

    /// One day's activity summary.
    pub(crate) fn activity(&mut self, day: NaiveDate, document: &Value) {
        let Some(DaySummary { summary: s }) = self.read::<DaySummary>("activity", document) else {
            return;
        };
        let active = s.lightly_active_minutes + s.fairly_active_minutes + s.very_active_minutes;
        if s.steps == 0 && active == 0 {
            tracing::debug!(%day, "Fitbit day without activity data");
            return;
        }
        let mut row = Map::new();
        row.insert("date".into(), day.to_string().into());
        row.insert("calories_total".into(), num(s.calories_out));
        put(&mut row, "calories_active", s.activity_calories.map(num));
        row.insert("steps".into(), s.steps.into());
        let total = s
            .distances
            .iter()
            .flatten()
            .find(|d| d.activity == "total")
            .map(|d| d.distance * 1000.0);
        put(&mut row, "distance", total.and_then(round));
        put(&mut row, "floors_climbed", s.floors);
        row.insert("duration_active_second".into(), (active * 60).into());
        put(
            &mut row,
            "intensity_sedentary_second",
            s.sedentary_minutes.map(|m| m * 60),
        );
        row.insert("low".into(), s.lightly_active_minutes.into());
        row.insert("medium".into(), s.fairly_active_minutes.into());
        row.insert("high".into(), s.very_active_minutes.into());
        if let Some(resting) = s.resting_heart_rate {
            row.insert("heart_rate".into(), json!({"resting_bpm": resting}));
        }
        row.insert("time_zone".into(), self.zone.label().into());
        self.activity
            .push(with_payload(Value::Object(row), document));
    }

    /// The readings of one day's intraday answer under `member`, as (instant, value).
    fn readings(
        &mut self,
        resource: &str,
        day: NaiveDate,
        document: &Value,
        member: &str,
    ) -> (Vec<(DateTime<FixedOffset>, f64)>, Option<i64>) {
        let Some(intraday) = document.get(member) else {
            tracing::warn!(
                provider = "fitbit",
                resource,
                %day,
                "no intraday dataset (does the app have intraday access?)"
            );
            return (Vec::new(), None);
        };
        let Some(intraday) = self.read::<Intraday>(resource, intraday) else {
            return (Vec::new(), None);
        };
        let mut out = Vec::new();
        for item in &intraday.dataset {
            let Some(r) = self.read::<Reading>(resource, item) else {
                continue;
            };
            if !r.value.is_finite() || r.value < 0.0 {
                self.malformed::<()>(resource, item, "value is not a non-negative number");
                continue;
            }
            let Some(at) = self.instant(resource, item, day.and_time(r.time)) else {
                continue;
            };
            if self.in_window(at) {
                out.push((at, r.value));
            }
        }
        (out, intraday.dataset_interval)
    }

    /// One day's intraday heart rate (1 min).
    pub(crate) fn heartrate(&mut self, day: NaiveDate, document: &Value) {
        let (readings, _) = self.readings("heartrate", day, document, "activities-heart-intraday");
        for (at, bpm) in readings {
            if bpm > 300.0 {
                self.malformed::<()>("heartrate", &json!({"time": stamp(at)}), "bpm over 300");
                continue;
            }
            self.heartrate.push(json!({
                "timestamp": stamp(at),
                "timezone_offset": offset(at),
                "unit": "bpm",
                "value": num(bpm),
            }));
        }
    }

    /// One day's intraday steps (15 min).
    pub(crate) fn steps(&mut self, day: NaiveDate, document: &Value) {
        let (readings, interval) =
            self.readings("steps", day, document, "activities-steps-intraday");
        let step = TimeDelta::minutes(interval.filter(|m| *m > 0).unwrap_or(15));
        for (at, count) in readings.into_iter().filter(|(_, v)| *v > 0.0) {
            self.steps.push(json!({
                "timestamp": stamp(at),
                "end": stamp(at + step),
                "timezone_offset": offset(at),
                "unit": "count",
                "value": num(count),
            }));
        }
    }

    /// The push body, with only the parts that received records.
    pub(crate) fn finish(self) -> Pulled {
        crate::sync::body::pulled(
            ("fitbit", "watch"),
            vec![
                (Table::Sleep, self.sleep),
                (Table::Activity, self.activity),
                (Table::Body, self.body),
            ],
            self.profile,
            vec![
                ("heartrate", self.heartrate.into()),
                ("steps", self.steps.into()),
                ("weight", self.weight.into()),
                ("fat", self.fat.into()),
            ],
            self.skipped,
        )
    }
}
