//! Google Health API data points to one push body (`data-model.md`), provider
//! `google_health`, source `{"type": "watch"}` (the catalogue's for it: Fitbit trackers and the
//! Pixel Watch, worn day and night).
//!
//! | Google Health | push body |
//! |---|---|
//! | `sleep` | `sleep` rows (`sleep.rs`) |
//! | `heart-rate` | `timeseries.heartrate` (bpm) |
//! | `heart-rate-variability` | `timeseries.hrv` (ms, RMSSD) |
//! | `oxygen-saturation` | `timeseries.blood_oxygen` (%) |
//! | `weight` (+ `body-fat` at the same instant) | `body` rows, `timeseries.weight` (kg) |
//! | `body-fat` | `timeseries.fat` (%), and the `fat` of the weigh-in at its instant |
//! | newest `height` | `profile.height` (cm) |
//! | daily roll-ups of `steps`, `distance`, `total-calories`, `active-energy-burned` | `activity` rows |
//!
//! Instants travel in the wearer's offset, which Google gives beside every instant
//! (`utcOffset`, a `google-duration` like `"-18000s"`), and each sample's `timezone_offset` is
//! it in seconds. A point that does not read as its documented shape is skipped, counted and
//! logged; its neighbours are kept.
//!
//! Decisions where the documentation and `data-model.md` are silent:
//! - Units: grams ÷ 1000 (kg), millimetres ÷ 1000 (m) and ÷ 10 (cm, rounded), kilocalories
//!   kept; int64 values come as JSON strings and are read as numbers.
//! - An HRV point without an RMSSD (only an SDNN) gives no `hrv` sample: the series is RMSSD.
//! - A weigh-in's `id` is its data point id (the last segment of `name`) when it has one, else
//!   `weight-<unix ms>` of its instant, so a re-pull replaces it.
//! - An activity day is the roll-up's civil start date; it carries no offset (a civil day has
//!   none). A day whose roll-ups hold no value at all gives no row.

use std::collections::BTreeMap;

use chrono::{DateTime, FixedOffset, NaiveDate, Offset as _, SecondsFormat, Utc};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::pull::Kind;
use crate::ingest::{PulledRecord, PulledSample, TypedSamples};
use crate::schema::Table;
use crate::sync::Pulled;
use crate::sync::body::MAX_OFFSET_SECONDS;
pub(super) use crate::sync::body::{num, put};

/// A push body being filled, part by part.
#[derive(Debug, Default)]
pub(crate) struct Body {
    pub(super) sleep: Vec<PulledRecord>,
    activity: Vec<PulledRecord>,
    body: Vec<PulledRecord>,
    heartrate: TypedSamples,
    hrv: TypedSamples,
    blood_oxygen: TypedSamples,
    weight: Vec<Value>,
    fat: Vec<Value>,
    profile: Option<PulledRecord>,
    skipped: usize,
}

/// `ObservationSampleTime`.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "camelCase")]
struct SampleTime {
    physical_time: DateTime<Utc>,
    #[serde(deserialize_with = "duration")]
    utc_offset: i64,
}

/// A sample point's member: its time and the value fields the mapping reads.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Sample {
    sample_time: SampleTime,
    #[serde(default, deserialize_with = "int64")]
    beats_per_minute: Option<i64>,
    root_mean_square_of_successive_differences_milliseconds: Option<f64>,
    percentage: Option<f64>,
    weight_grams: Option<f64>,
    #[serde(default, deserialize_with = "int64")]
    height_millimeters: Option<i64>,
}

/// A `google-duration` (`"3600s"`, `"-18000s"`, `"19800.5s"`) as whole seconds.
pub(super) fn duration<'de, D: serde::Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
    let text = String::deserialize(d)?;
    parse_duration(&text).ok_or_else(|| serde::de::Error::custom("not a google-duration"))
}

/// `"3600s"` → 3600; `None` for anything else, or beyond ±18 h.
pub(super) fn parse_duration(text: &str) -> Option<i64> {
    let seconds: f64 = text.strip_suffix('s')?.parse().ok()?;
    let whole = seconds.round() as i64;
    (seconds.is_finite() && whole.abs() <= MAX_OFFSET_SECONDS).then_some(whole)
}

/// An int64 as Google's JSON writes it (a string), or as a number.
pub(super) fn int64<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    match Option::<Value>::deserialize(d)? {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => s
            .parse()
            .map(Some)
            .map_err(|_| serde::de::Error::custom("not an int64")),
        Some(Value::Number(n)) => n
            .as_i64()
            .map(Some)
            .ok_or_else(|| serde::de::Error::custom("not an int64")),
        Some(_) => Err(serde::de::Error::custom("not an int64")),
    }
}

/// An instant as it travels: RFC 3339 in the wearer's offset (UTC when it is unreadable).
pub(super) fn stamp(at: DateTime<Utc>, offset: i64) -> String {
    let zone = i32::try_from(offset)
        .ok()
        .and_then(FixedOffset::east_opt)
        .unwrap_or_else(|| Utc.fix());
    at.with_timezone(&zone)
        .to_rfc3339_opts(SecondsFormat::AutoSi, true)
}

/// The data point id: the last segment of `name`.
pub(super) fn point_id(point: &Value) -> Option<&str> {
    point
        .get("name")
        .and_then(Value::as_str)
        .and_then(|n| n.rsplit('/').next())
        .filter(|id| !id.is_empty())
}

impl Body {
    /// Reads one point's `member`, or counts and logs the point as malformed.
    pub(super) fn read<'a, T: Deserialize<'a>>(
        &mut self,
        member: &str,
        point: &'a Value,
    ) -> Option<T> {
        let Some(inner) = point.get(member) else {
            return self.malformed(member, point, &format!("no `{member}` member"));
        };
        match T::deserialize(inner) {
            Ok(t) => Some(t),
            Err(e) => self.malformed(member, point, &e.to_string()),
        }
    }

    pub(super) fn malformed<T>(&mut self, member: &str, point: &Value, why: &str) -> Option<T> {
        tracing::warn!(
            provider = super::SLUG,
            resource = member,
            id = point_id(point).unwrap_or("?"),
            error = why,
            "skipped a malformed provider record"
        );
        self.skipped += 1;
        None
    }

    /// Heart-rate, HRV or SpO2 sample points into their series.
    pub(crate) fn samples(&mut self, kind: Kind, points: &[Value]) {
        for point in points {
            let Some(s) = self.read::<Sample>(kind.member, point) else {
                continue;
            };
            let value = match kind.member {
                "heartRate" => s.beats_per_minute.map(|b| b as f64),
                "heartRateVariability" => s.root_mean_square_of_successive_differences_milliseconds,
                _ => s.percentage,
            };
            let Some(value) = value.filter(|v| v.is_finite()) else {
                if kind.member != "heartRateVariability" {
                    self.malformed::<()>(kind.member, point, "no value");
                }
                continue;
            };
            let time = s.sample_time;
            let sample = PulledSample::at_instant(time.physical_time, value);
            // The offset is within ±18 h (`parse_duration`), so always an `i32`.
            let sample = match i32::try_from(time.utc_offset) {
                Ok(offset) => sample.in_offset(offset),
                Err(_) => sample,
            };
            match kind.member {
                "heartRate" => self.heartrate.push(sample),
                "heartRateVariability" => self.hrv.push(sample),
                _ => self.blood_oxygen.push(sample),
            }
        }
    }

    /// Weigh-ins (with the body fat measured at the same instant) into body rows and the
    /// `weight` series; body-fat points into the `fat` series.
    pub(crate) fn weights(&mut self, weights: &[Value], fats: &[Value]) {
        let mut fat_at: BTreeMap<DateTime<Utc>, f64> = BTreeMap::new();
        for point in fats {
            let Some(s) = self.read::<Sample>("bodyFat", point) else {
                continue;
            };
            let Some(pct) = s.percentage.filter(|p| (0.0..=100.0).contains(p)) else {
                self.malformed::<()>("bodyFat", point, "percentage missing or outside 0–100");
                continue;
            };
            fat_at.insert(s.sample_time.physical_time, pct);
            self.fat.push(json!({
                "timestamp": stamp(s.sample_time.physical_time, s.sample_time.utc_offset),
                "timezone_offset": s.sample_time.utc_offset,
                "unit": "%",
                "value": num(pct),
            }));
        }
        for point in weights {
            let Some(s) = self.read::<Sample>("weight", point) else {
                continue;
            };
            let Some(grams) = s.weight_grams.filter(|g| g.is_finite() && *g > 0.0) else {
                self.malformed::<()>("weight", point, "weightGrams missing or not positive");
                continue;
            };
            let (at, offset) = (s.sample_time.physical_time, s.sample_time.utc_offset);
            let kg = (grams / 10.0).round() / 100.0;
            let id = point_id(point).map_or_else(
                || format!("weight-{}", at.timestamp_millis()),
                str::to_owned,
            );
            let mut row = Map::new();
            row.insert("id".into(), id.into());
            row.insert("measured_at".into(), stamp(at, offset).into());
            row.insert("weight".into(), num(kg));
            put(&mut row, "fat", fat_at.get(&at).copied().map(num));
            self.body.push(Value::Object(row).into());
            self.weight.push(json!({
                "timestamp": stamp(at, offset), "timezone_offset": offset,
                "unit": "kg", "value": num(kg),
            }));
        }
    }

    /// The newest height: the profile's, in centimetres.
    pub(crate) fn height(&mut self, point: &Value) {
        let Some(s) = self.read::<Sample>("height", point) else {
            return;
        };
        match s.height_millimeters.filter(|mm| *mm > 0) {
            Some(mm) => {
                let cm = (mm as f64 / 10.0).round() as i64;
                self.profile = Some(json!({ "height": cm }).into());
            }
            None => {
                self.malformed::<()>("height", point, "heightMillimeters missing");
            }
        }
    }

    /// Daily roll-ups into one activity row per civil day.
    pub(crate) fn activity(&mut self, rollups: &[(String, Vec<Value>)]) {
        let mut days: BTreeMap<NaiveDate, Map<String, Value>> = BTreeMap::new();
        for (data_type, points) in rollups {
            for point in points {
                let Some(day) = civil_date(point.get("civilStartTime")) else {
                    self.malformed::<()>(data_type, point, "no readable civilStartTime");
                    continue;
                };
                let Some((field, value)) = rollup_value(data_type, point) else {
                    continue;
                };
                days.entry(day).or_default().insert(field.into(), value);
            }
        }
        for (day, mut row) in days {
            row.insert("date".into(), day.to_string().into());
            self.activity.push(Value::Object(row).into());
        }
    }

    /// The push body, with only the parts that received records.
    pub(crate) fn finish(self) -> Pulled {
        crate::sync::body::pulled(
            (super::SLUG, "watch"),
            vec![
                (Table::Sleep, self.sleep),
                (Table::Activity, self.activity),
                (Table::Body, self.body),
            ],
            self.profile,
            vec![
                ("heartrate", self.heartrate.into()),
                ("hrv", self.hrv.into()),
                ("blood_oxygen", self.blood_oxygen.into()),
                ("weight", self.weight.into()),
                ("fat", self.fat.into()),
            ],
            self.skipped,
        )
    }
}

/// A `CivilDateTime`'s date.
fn civil_date(civil: Option<&Value>) -> Option<NaiveDate> {
    let date = civil?.get("date")?;
    let part = |k: &str| date.get(k).and_then(Value::as_u64);
    NaiveDate::from_ymd_opt(
        i32::try_from(part("year")?).ok()?,
        u32::try_from(part("month")?).ok()?,
        u32::try_from(part("day")?).ok()?,
    )
}

/// The activity field and value a roll-up point of `data_type` gives, if it holds one.
fn rollup_value(data_type: &str, point: &Value) -> Option<(&'static str, Value)> {
    let int = |v: &Value| match v {
        Value::String(s) => s.parse::<i64>().ok(),
        other => other.as_i64(),
    };
    match data_type {
        "steps" => Some(("steps", int(point.get("steps")?.get("countSum")?)?.into())),
        "distance" => {
            let mm = int(point.get("distance")?.get("millimetersSum")?)?;
            Some(("distance", num(mm as f64 / 1000.0)))
        }
        "total-calories" => {
            let kcal = point.get("totalCalories")?.get("kcalSum")?.as_f64()?;
            Some(("calories_total", num((kcal * 100.0).round() / 100.0)))
        }
        "active-energy-burned" => {
            let kcal = point.get("activeEnergyBurned")?.get("kcalSum")?.as_f64()?;
            Some(("calories_active", num((kcal * 100.0).round() / 100.0)))
        }
        _ => None,
    }
}
