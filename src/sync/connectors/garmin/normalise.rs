//! Garmin summaries to one push body (`data-model.md`), provider `garmin`, source
//! `{"type": "watch"}` (the catalogue's source type for Garmin).
//!
//! | Garmin | push body |
//! |---|---|
//! | daily summary (`dailies`) | `activity` rows; its `timeOffsetHeartRateSamples` → `timeseries.heartrate` (bpm) |
//! | sleep summary (`sleeps`) | `sleep` rows (`sleep.rs`); its `timeOffsetSleepSpo2` → `timeseries.blood_oxygen` (%) |
//! | activity summary (`activities`) | `workouts` rows |
//! | body composition summary (`bodyComps`) | `body` rows |
//! | stress details summary (`stressDetails`) | `timeseries.stress_level` (1–100) |
//!
//! Every instant is Garmin's unix seconds placed with the record's own offset
//! (`startTimeOffsetInSeconds`, `measurementTimeOffsetInSeconds`: the device's display time,
//! which Garmin warns is not a zone but is what the user saw). A document that does not read as
//! its documented shape is skipped, counted and logged; its neighbours are kept. No record is
//! cut by its own time: the pull window was applied to upload times (`mod.rs`).
//!
//! Decisions where the documentation and `data-model.md` are silent:
//! - Activity: one row per `calendarDate` (its `id` too: a day's summary is re-issued as the
//!   day fills); `calories_total` is `activeKilocalories` + `bmrKilocalories`,
//!   `calories_active` the former; `duration_active_second` is `activeTimeInSeconds`;
//!   moderate and vigorous intensity durations are the `medium` and `high` minutes (MET 3–6,
//!   above 6); the heart rate's minimum, maximum and resting as given, and its mean the mean of the
//!   day's samples (Garmin's `averageHeartRateInBeatsPerMinute` is a 7-day average), rounded to
//!   0.01. Stress and Body Battery aggregates are not kept, for want of a column.
//! - Heart rate: each sample stands for the 15 s before its offset; it is placed at
//!   `startTimeInSeconds` + offset. Stress: 3-minute values placed the same way; the negative
//!   codes (off wrist, motion, too little data, ...) are not values and are left out.
//! - Workouts: `id` the `summaryId`, `provider_id` the `activityId`; `sport.slug` is the
//!   `activityType` in lower case (`ROAD_BIKING` → `road_biking`), `sport.name` the same in
//!   words (`Road biking`); `title` the `activityName`; `calories` the `activeKilocalories`
//!   (which for activities include BMR, per the Activity API).
//! - Body: `id` the `summaryId`; `weight` in kg (`weightInGrams` / 1000); `fat`, water and BMI
//!   as given; muscle and bone mass, given in grams, as percentages of the weight, rounded to
//!   0.01.

use chrono::{DateTime, FixedOffset, SecondsFormat};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::ingest::{PulledRecord, PulledSample, TypedSamples};
use crate::schema::Table;
use crate::sync::Resource;
use crate::sync::body::{num, put, with_payload};
use crate::sync::{Pulled, body::MAX_OFFSET_SECONDS};

/// Garmin's summaries of one pull, as its endpoints answered them.
#[derive(Debug, Clone, Default)]
pub struct Documents {
    /// `dailies` items.
    pub dailies: Vec<Value>,
    /// `sleeps` items.
    pub sleeps: Vec<Value>,
    /// `activities` items.
    pub activities: Vec<Value>,
    /// `bodyComps` items.
    pub body_comps: Vec<Value>,
    /// `stressDetails` items.
    pub stress: Vec<Value>,
}

/// What the documents of a pull are normalised into.
#[derive(Debug, Clone, Copy, Default)]
pub struct Wanted {
    /// Sleep rows.
    pub sleep: bool,
    /// `blood_oxygen` samples (the nights').
    pub blood_oxygen: bool,
    /// Activity rows and `stress_level` samples.
    pub activity: bool,
    /// `heartrate` samples.
    pub heartrate: bool,
    /// Workout rows.
    pub workouts: bool,
    /// Body rows.
    pub body: bool,
}

impl Wanted {
    /// What a pull of `resources` wants.
    pub fn of(resources: &std::collections::BTreeSet<Resource>) -> Wanted {
        let has = |r| resources.contains(&r);
        Wanted {
            sleep: has(Resource::Sleep),
            blood_oxygen: has(Resource::BloodOxygen),
            activity: has(Resource::Activity),
            heartrate: has(Resource::Heartrate),
            workouts: has(Resource::Workouts),
            body: has(Resource::Body),
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Activity {
    summary_id: String,
    activity_id: Option<Value>,
    activity_name: Option<String>,
    activity_type: Option<String>,
    start_time_in_seconds: i64,
    start_time_offset_in_seconds: i32,
    duration_in_seconds: i64,
    distance_in_meters: Option<f64>,
    active_kilocalories: Option<f64>,
    average_heart_rate_in_beats_per_minute: Option<f64>,
    max_heart_rate_in_beats_per_minute: Option<f64>,
    average_speed_in_meters_per_second: Option<f64>,
    max_speed_in_meters_per_second: Option<f64>,
    total_elevation_gain_in_meters: Option<f64>,
    steps: Option<i64>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct BodyComp {
    summary_id: String,
    measurement_time_in_seconds: i64,
    measurement_time_offset_in_seconds: i32,
    weight_in_grams: f64,
    body_fat_in_percent: Option<f64>,
    body_water_in_percent: Option<f64>,
    body_mass_index: Option<f64>,
    muscle_mass_in_grams: Option<f64>,
    bone_mass_in_grams: Option<f64>,
}

/// Normalises the documents of a pull into its push body.
pub fn normalise(documents: &Documents, wanted: Wanted) -> Pulled {
    let mut body = Body::default();
    if wanted.activity || wanted.heartrate {
        body.dailies(&documents.dailies, wanted);
    }
    if wanted.sleep || wanted.blood_oxygen {
        body.sleeps(&documents.sleeps, wanted);
    }
    if wanted.workouts {
        body.workouts(&documents.activities);
    }
    if wanted.body {
        body.body_comps(&documents.body_comps);
    }
    if wanted.activity {
        body.stress(&documents.stress);
    }
    body.finish()
}

/// A push body being filled, part by part.
#[derive(Debug, Default)]
pub(super) struct Body {
    pub(super) sleep: Vec<PulledRecord>,
    pub(super) activity: Vec<PulledRecord>,
    workouts: Vec<PulledRecord>,
    body: Vec<PulledRecord>,
    pub(super) heartrate: TypedSamples,
    pub(super) blood_oxygen: TypedSamples,
    pub(super) stress_level: TypedSamples,
    skipped: usize,
}

/// The zone of a Garmin offset in seconds; `None` beyond ±18 h.
pub(super) fn zone(offset: i32) -> Option<FixedOffset> {
    (i64::from(offset).abs() <= MAX_OFFSET_SECONDS)
        .then(|| FixedOffset::east_opt(offset))
        .flatten()
}

/// Unix seconds in `zone`, as an instant travels: RFC 3339 in that offset.
pub(super) fn stamp(seconds: i64, zone: FixedOffset) -> Option<String> {
    let at = DateTime::from_timestamp(seconds, 0)?.with_timezone(&zone);
    Some(at.to_rfc3339_opts(SecondsFormat::AutoSi, false))
}

/// A `{"<offset seconds>": value}` map's samples, in offset order; entries whose key is not
/// an integer or whose value is not a finite number are left out. Read straight from the
/// document (a `deserialize_with` of the summaries' sample maps), without a copy of the map.
pub(super) fn samples<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<(i64, f64)>, D::Error> {
    use serde::de::{Error, MapAccess, Visitor};
    use std::fmt;
    /// A key: its offset when it reads as an integer (read in place, not copied).
    struct Offset(Option<i64>);
    impl<'de> Deserialize<'de> for Offset {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct Key;
            impl Visitor<'_> for Key {
                type Value = Offset;
                fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                    f.write_str("an offset in seconds")
                }
                fn visit_str<E: Error>(self, key: &str) -> Result<Offset, E> {
                    Ok(Offset(key.trim().parse().ok()))
                }
            }
            d.deserialize_str(Key)
        }
    }
    struct Samples;
    impl<'de> Visitor<'de> for Samples {
        type Value = Vec<(i64, f64)>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("an object of offsets to values")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut out = Vec::with_capacity(map.size_hint().unwrap_or(0));
            while let Some(Offset(offset)) = map.next_key()? {
                let value: Value = map.next_value()?;
                if let (Some(offset), Some(v)) = (offset, value.as_f64())
                    && v.is_finite()
                {
                    out.push((offset, v));
                }
            }
            out.sort_by_key(|(k, _)| *k);
            Ok(out)
        }
    }
    d.deserialize_map(Samples)
}

/// Rounded to 0.01.
pub(super) fn hundredths(v: f64) -> f64 {
    (v * 100.0).round() / 100.0
}

/// `ROAD_BIKING` → `Road biking`.
fn sport_name(kind: &str) -> String {
    let words = kind.to_lowercase().replace('_', " ");
    let mut chars = words.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => words,
    }
}

/// The provider and the members naming a record, in the malformed-record log.
const WHO: (&str, &[&str]) = ("garmin", &["summaryId"]);

impl Body {
    pub(super) fn read<'a, T: Deserialize<'a>>(
        &mut self,
        resource: &str,
        record: &'a Value,
    ) -> Option<T> {
        crate::sync::body::read_record(&mut self.skipped, WHO, resource, record)
    }

    pub(super) fn malformed<T>(&mut self, resource: &str, record: &Value, why: &str) -> Option<T> {
        crate::sync::body::skip(&mut self.skipped, WHO, resource, record, why)
    }

    /// `samples` placed from `start` in `zone`, pushed onto `into`; values outside `keep` are
    /// left out.
    pub(super) fn series(
        into: &mut TypedSamples,
        (start, zone): (i64, FixedOffset),
        samples: &[(i64, f64)],
        keep: fn(f64) -> bool,
    ) {
        let offset = zone.local_minus_utc();
        for &(at, value) in samples {
            // An instant past what a date-time names is left out, as a stamp of it could not be.
            let at = start
                .checked_add(at)
                .filter(|at| DateTime::from_timestamp(*at, 0).is_some());
            let sample = at.and_then(|at| PulledSample::at_second(at, value));
            if let Some(sample) = sample.filter(|_| keep(value)) {
                into.push(sample.in_offset(offset));
            }
        }
    }

    /// Activity summaries: workout rows.
    fn workouts(&mut self, records: &[Value]) {
        for record in records {
            let Some(a) = self.read::<Activity>("activities", record) else {
                continue;
            };
            let tz = zone(a.start_time_offset_in_seconds);
            let end = a.start_time_in_seconds.checked_add(a.duration_in_seconds);
            let times = tz.and_then(|tz| {
                Some((
                    stamp(a.start_time_in_seconds, tz)?,
                    stamp(end?, tz)?,
                    tz.local_minus_utc(),
                ))
            });
            let Some((start, end, offset)) = times.filter(|_| a.duration_in_seconds >= 0) else {
                self.malformed::<()>("activities", record, "unreadable start, offset or duration");
                continue;
            };
            let mut row = Map::new();
            row.insert("id".into(), a.summary_id.clone().into());
            row.insert("time_start".into(), start.into());
            row.insert("time_end".into(), end.into());
            put(&mut row, "title", a.activity_name);
            if let Some(kind) = a.activity_type.filter(|k| !k.trim().is_empty()) {
                row.insert(
                    "sport".into(),
                    json!({"name": sport_name(&kind), "slug": kind.to_lowercase()}),
                );
            }
            put(&mut row, "calories", a.active_kilocalories.map(num));
            put(&mut row, "distance", a.distance_in_meters.map(num));
            put(
                &mut row,
                "average_hr",
                a.average_heart_rate_in_beats_per_minute.map(num),
            );
            put(
                &mut row,
                "max_hr",
                a.max_heart_rate_in_beats_per_minute.map(num),
            );
            put(
                &mut row,
                "total_elevation_gain",
                a.total_elevation_gain_in_meters.map(num),
            );
            put(
                &mut row,
                "average_speed",
                a.average_speed_in_meters_per_second.map(num),
            );
            put(
                &mut row,
                "max_speed",
                a.max_speed_in_meters_per_second.map(num),
            );
            put(&mut row, "steps", a.steps);
            let provider_id = match a.activity_id {
                Some(Value::Number(n)) => n.to_string(),
                Some(Value::String(s)) if !s.is_empty() => s,
                _ => a.summary_id,
            };
            row.insert("provider_id".into(), provider_id.into());
            row.insert("timezone_offset".into(), offset.into());
            self.workouts.push(with_payload(Value::Object(row), record));
        }
    }

    /// Body composition summaries: body rows.
    fn body_comps(&mut self, records: &[Value]) {
        for record in records {
            let Some(b) = self.read::<BodyComp>("bodyComps", record) else {
                continue;
            };
            let at = zone(b.measurement_time_offset_in_seconds)
                .and_then(|tz| stamp(b.measurement_time_in_seconds, tz));
            let Some(at) = at.filter(|_| b.weight_in_grams.is_finite() && b.weight_in_grams > 0.0)
            else {
                self.malformed::<()>("bodyComps", record, "unreadable time, offset or weight");
                continue;
            };
            let share =
                |grams: Option<f64>| grams.map(|g| num(hundredths(g / b.weight_in_grams * 100.0)));
            let mut row = Map::new();
            row.insert("id".into(), b.summary_id.clone().into());
            row.insert("measured_at".into(), at.into());
            row.insert("weight".into(), num(b.weight_in_grams / 1000.0));
            put(&mut row, "fat", b.body_fat_in_percent.map(num));
            put(
                &mut row,
                "water_percentage",
                b.body_water_in_percent.map(num),
            );
            put(&mut row, "body_mass_index", b.body_mass_index.map(num));
            put(
                &mut row,
                "muscle_mass_percentage",
                share(b.muscle_mass_in_grams),
            );
            put(
                &mut row,
                "bone_mass_percentage",
                share(b.bone_mass_in_grams),
            );
            self.body.push(with_payload(Value::Object(row), record));
        }
    }

    /// The push body, with only the parts that received records.
    pub(super) fn finish(self) -> Pulled {
        crate::sync::body::pulled(
            (super::SLUG, "watch"),
            vec![
                (Table::Sleep, self.sleep),
                (Table::Activity, self.activity),
                (Table::Workout, self.workouts),
                (Table::Body, self.body),
            ],
            None,
            vec![
                ("heartrate", self.heartrate.into()),
                ("blood_oxygen", self.blood_oxygen.into()),
                ("stress_level", self.stress_level.into()),
            ],
            self.skipped,
        )
    }
}
