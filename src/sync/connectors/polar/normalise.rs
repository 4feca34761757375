//! Polar AccessLink documents to one push body (`data-model.md`), provider `polar`, source
//! `{"type": "watch"}` (the catalogue's source type for Polar).
//!
//! | Polar | push body |
//! |---|---|
//! | exercise (`/v3/exercises`) | `workouts` rows |
//! | night (`/v3/users/sleep`) + its nightly recharge | `sleep` rows |
//! | activity summary (`/v3/users/activities`) | `activity` rows |
//! | continuous heart rate (`/v3/users/continuous-heart-rate/{date}`) | `timeseries.heartrate` (bpm) |
//!
//! A document that does not read as its documented shape is skipped, counted and logged; its
//! neighbours are kept. Only records in the pull's window are kept (`mod.rs` says how each is
//! placed in it).
//!
//! Decisions where the documentation and `data-model.md` are silent:
//! - Workouts: `id` and `provider_id` are the exercise's hashed id; `start_time` is local, its
//!   offset `start_time_utc_offset` minutes; the end is the start plus the ISO 8601
//!   `duration`; `sport.slug` is Polar's `sport` in lower case (`RUNNING` → `running`),
//!   `sport.name` the same in words (`Running`); `calories` (kcal), `distance` (m) and the
//!   heart rate's `average` and `maximum` as given. Training load, energy sources, running
//!   index and the detailed sport are not kept, for want of a field.
//! - Sleep: a night's `id` is its `date` (Polar's "result date": one night a day); times as
//!   given (they carry offsets); `light`, `deep`, `rem` as given (seconds; `light` is N1 + N2),
//!   `total` their sum, `awake` the `total_interruption_duration`, `duration` end − start,
//!   `score` the `sleep_score` (1–100), `state` `confirmed` (Polar publishes finished nights),
//!   `timezone_offset` that of the night's end. The nightly recharge of the same date gives
//!   `hr_average` (`heart_rate_avg`), `average_hrv` (`heart_rate_variability_avg`, RMSSD ms)
//!   and `respiratory_rate` (`breathing_rate_avg`); its 5-minute samples are not kept.
//! - Activity: one row per day, `id` and `date` the day of `start_time` (Polar names it UTC in
//!   the schema and writes local times in its samples; the day is the same either way for a
//!   summary that starts at the day's first activity); `calories_total` (`calories`),
//!   `calories_active` (`active_calories`), `steps`, `distance` (`distance_from_steps`) and
//!   `duration_active_second` (`active_duration`). No offset: Polar gives none.
//! - Heart rate: `heart_rate.rs` (local device times placed with the day's offset).

use std::collections::HashMap;

use chrono::{DateTime, FixedOffset, NaiveDate, NaiveDateTime, NaiveTime, SecondsFormat, TimeZone};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::heart_rate::Zones;
use crate::ingest::PulledRecord;
use crate::schema::Table;
use crate::sync::body::{num, put, with_payload};
use crate::sync::{Pulled, Window};

/// Polar's documents of one pull, as its endpoints answered them.
#[derive(Debug, Clone, Default)]
pub struct Documents {
    /// `/v3/exercises` items.
    pub exercises: Vec<Value>,
    /// `/v3/users/sleep` `nights`.
    pub nights: Vec<Value>,
    /// `/v3/users/nightly-recharge` `recharges`.
    pub recharges: Vec<Value>,
    /// `/v3/users/activities` items.
    pub activities: Vec<Value>,
    /// `/v3/users/continuous-heart-rate/{date}` documents.
    pub heart_rate: Vec<Value>,
}

/// What the documents of a pull are normalised into.
#[derive(Debug, Clone, Copy, Default)]
pub struct Wanted {
    /// Sleep rows (nights with their recharges).
    pub sleep: bool,
    /// Workout rows.
    pub workouts: bool,
    /// Activity rows.
    pub activity: bool,
    /// `heartrate` samples.
    pub heartrate: bool,
}

#[derive(Debug, Deserialize)]
struct HeartRate {
    average: Option<i64>,
    maximum: Option<i64>,
}

#[derive(Debug, Deserialize)]
pub(super) struct Exercise {
    id: String,
    pub(super) start_time: NaiveDateTime,
    pub(super) start_time_utc_offset: i32,
    duration: String,
    calories: Option<f64>,
    distance: Option<f64>,
    heart_rate: Option<HeartRate>,
    sport: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(super) struct Night {
    date: NaiveDate,
    sleep_start_time: DateTime<FixedOffset>,
    pub(super) sleep_end_time: DateTime<FixedOffset>,
    light_sleep: Option<i64>,
    deep_sleep: Option<i64>,
    rem_sleep: Option<i64>,
    total_interruption_duration: Option<i64>,
    sleep_score: Option<i64>,
}

#[derive(Debug, Deserialize)]
struct Recharge {
    date: NaiveDate,
    heart_rate_avg: Option<i64>,
    heart_rate_variability_avg: Option<f64>,
    breathing_rate_avg: Option<f64>,
}

#[derive(Debug, Deserialize)]
struct Activity {
    start_time: String,
    calories: Option<f64>,
    active_calories: Option<f64>,
    steps: Option<i64>,
    distance_from_steps: Option<f64>,
    active_duration: Option<String>,
}

/// Normalises the documents of a pull into its push body, keeping what lies in `window`.
pub fn normalise(documents: &Documents, wanted: Wanted, window: &Window) -> Pulled {
    let mut body = Body::default();
    let zones = Zones::of(documents);
    if wanted.workouts {
        body.workouts(&documents.exercises, window);
    }
    if wanted.sleep {
        body.sleep(&documents.nights, &documents.recharges, window);
    }
    if wanted.activity {
        body.activity(&documents.activities, window);
    }
    if wanted.heartrate {
        body.heart_rate(&documents.heart_rate, &zones, window);
    }
    body.finish()
}

/// A push body being filled, part by part.
#[derive(Debug, Default)]
pub(super) struct Body {
    sleep: Vec<PulledRecord>,
    activity: Vec<PulledRecord>,
    workouts: Vec<PulledRecord>,
    pub(super) heartrate: Vec<Value>,
    skipped: usize,
}

/// An ISO 8601 duration (`PT2H44M`, `PT4S`, `PT1H0M12.5S`, `P1DT2H`) in whole seconds.
pub(super) fn iso_duration(text: &str) -> Option<i64> {
    let rest = text.strip_prefix('P')?;
    let (date, time) = rest.split_once('T').unwrap_or((rest, ""));
    let mut seconds = 0.0;
    let mut take = |part: &str, units: &[(char, f64)]| -> Option<()> {
        let mut number = String::new();
        for c in part.chars() {
            match units.iter().find(|(u, _)| *u == c) {
                Some((_, factor)) => {
                    seconds += number.parse::<f64>().ok()? * factor;
                    number.clear();
                }
                None if c.is_ascii_digit() || c == '.' => number.push(c),
                None => return None,
            }
        }
        number.is_empty().then_some(())
    };
    take(date, &[('D', 86_400.0)])?;
    take(time, &[('H', 3600.0), ('M', 60.0), ('S', 1.0)])?;
    (seconds.is_finite() && (!date.is_empty() || !time.is_empty())).then(|| seconds.round() as i64)
}

/// An instant as it travels: RFC 3339 in its own offset.
pub(super) fn stamp(at: DateTime<FixedOffset>) -> String {
    at.to_rfc3339_opts(SecondsFormat::AutoSi, false)
}

/// `RUNNING` → `Running`, `ROAD_RUNNING` → `Road running`.
fn sport_name(sport: &str) -> String {
    let words = sport.to_lowercase().replace('_', " ");
    let mut chars = words.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => words,
    }
}

/// The provider and the members naming a record, in the malformed-record log.
const WHO: (&str, &[&str]) = ("polar", &["id", "date"]);

impl Body {
    pub(super) fn read<'a, T: Deserialize<'a>>(
        &mut self,
        resource: &str,
        record: &'a Value,
    ) -> Option<T> {
        crate::sync::body::read_record(&mut self.skipped, WHO, resource, record)
    }

    fn malformed<T>(&mut self, resource: &str, record: &Value, why: &str) -> Option<T> {
        crate::sync::body::skip(&mut self.skipped, WHO, resource, record, why)
    }

    /// Exercises begun in the window.
    pub(super) fn workouts(&mut self, records: &[Value], window: &Window) {
        for record in records {
            let Some(e) = self.read::<Exercise>("exercise", record) else {
                continue;
            };
            let zone = FixedOffset::east_opt(e.start_time_utc_offset.saturating_mul(60));
            let start = zone.and_then(|z| z.from_local_datetime(&e.start_time).single());
            let (Some(start), Some(duration)) = (start, iso_duration(&e.duration)) else {
                self.malformed::<()>("exercise", record, "unreadable start or duration");
                continue;
            };
            if !window.contains(start.to_utc()) {
                continue;
            }
            let mut row = Map::new();
            row.insert("id".into(), e.id.clone().into());
            row.insert("time_start".into(), stamp(start).into());
            let end = start + chrono::Duration::seconds(duration);
            row.insert("time_end".into(), stamp(end).into());
            if let Some(sport) = &e.sport {
                let slug = sport.to_lowercase();
                row.insert(
                    "sport".into(),
                    json!({"name": sport_name(sport), "slug": slug}),
                );
            }
            put(&mut row, "calories", e.calories.map(num));
            put(&mut row, "distance", e.distance.map(num));
            if let Some(hr) = &e.heart_rate {
                put(&mut row, "average_hr", hr.average);
                put(&mut row, "max_hr", hr.maximum);
            }
            row.insert("provider_id".into(), e.id.into());
            row.insert(
                "timezone_offset".into(),
                start.offset().local_minus_utc().into(),
            );
            self.workouts.push(with_payload(Value::Object(row), record));
        }
    }

    /// Nights begun in the window, with their recharges.
    pub(super) fn sleep(&mut self, nights: &[Value], recharges: &[Value], window: &Window) {
        let by_date: HashMap<NaiveDate, Recharge> = recharges
            .iter()
            .filter_map(|r| self.read::<Recharge>("nightly_recharge", r))
            .map(|r| (r.date, r))
            .collect();
        for record in nights {
            let Some(n) = self.read::<Night>("sleep", record) else {
                continue;
            };
            if n.sleep_end_time < n.sleep_start_time {
                self.malformed::<()>("sleep", record, "sleep_end_time is before sleep_start_time");
                continue;
            }
            if !window.contains(n.sleep_start_time.to_utc()) {
                continue;
            }
            let mut row = Map::new();
            row.insert("id".into(), n.date.to_string().into());
            row.insert("bedtime_start".into(), stamp(n.sleep_start_time).into());
            row.insert("bedtime_stop".into(), stamp(n.sleep_end_time).into());
            row.insert("state".into(), "confirmed".into());
            let span = (n.sleep_end_time - n.sleep_start_time).num_seconds();
            row.insert("duration".into(), span.into());
            if let (Some(l), Some(d), Some(r)) = (n.light_sleep, n.deep_sleep, n.rem_sleep) {
                row.insert("total".into(), (l + d + r).into());
            }
            put(&mut row, "awake", n.total_interruption_duration);
            put(&mut row, "light", n.light_sleep);
            put(&mut row, "deep", n.deep_sleep);
            put(&mut row, "rem", n.rem_sleep);
            put(
                &mut row,
                "score",
                n.sleep_score.filter(|s| (1..=100).contains(s)),
            );
            if let Some(r) = by_date.get(&n.date) {
                put(&mut row, "hr_average", r.heart_rate_avg);
                put(
                    &mut row,
                    "average_hrv",
                    r.heart_rate_variability_avg.map(num),
                );
                put(&mut row, "respiratory_rate", r.breathing_rate_avg.map(num));
            }
            let offset = n.sleep_end_time.offset().local_minus_utc();
            row.insert("timezone_offset".into(), offset.into());
            self.sleep.push(with_payload(Value::Object(row), record));
        }
    }

    /// Activity days whose UTC midnight lies in the window.
    pub(super) fn activity(&mut self, records: &[Value], window: &Window) {
        for record in records {
            let Some(a) = self.read::<Activity>("activity", record) else {
                continue;
            };
            let day = a
                .start_time
                .get(..10)
                .and_then(|d| d.parse::<NaiveDate>().ok());
            let Some(day) = day else {
                self.malformed::<()>("activity", record, "start_time has no date");
                continue;
            };
            let midnight = day.and_time(NaiveTime::MIN).and_utc();
            if !window.contains(midnight) {
                continue;
            }
            let mut row = Map::new();
            row.insert("id".into(), day.to_string().into());
            row.insert("date".into(), day.to_string().into());
            put(&mut row, "calories_total", a.calories.map(num));
            put(&mut row, "calories_active", a.active_calories.map(num));
            put(&mut row, "steps", a.steps);
            put(&mut row, "distance", a.distance_from_steps.map(num));
            let active = a.active_duration.as_deref().and_then(iso_duration);
            put(&mut row, "duration_active_second", active);
            self.activity.push(with_payload(Value::Object(row), record));
        }
    }

    /// The push body, with only the parts that received records.
    pub(super) fn finish(self) -> Pulled {
        crate::sync::body::pulled(
            ("polar", "watch"),
            vec![
                (Table::Sleep, self.sleep),
                (Table::Activity, self.activity),
                (Table::Workout, self.workouts),
            ],
            None,
            vec![("heartrate", self.heartrate.into())],
            self.skipped,
        )
    }
}
