//! Ultrahuman daily metrics to one push body (`data-model.md`), provider `ultrahuman`, source
//! `{"type": "ring"}` (the catalogue's source type: the Ring AIR; the M1's glucose travels
//! under the same provider).
//!
//! | metric `type` | push body |
//! |---|---|
//! | `sleep` (+ the day's `sleep_rhr`, `avg_sleep_hrv`) | `sleep` rows, and the night's `body_temperature` is `temp` below |
//! | `hr` | `timeseries.heartrate` (bpm) |
//! | `hrv` | `timeseries.hrv` (ms) |
//! | `temp` | `timeseries.body_temperature` (°C, sensor location `skin`) |
//! | `spo2` | `timeseries.blood_oxygen` (%) |
//! | `glucose` | `timeseries.glucose` (mg/dL → mmol/L, 2 decimals) |
//! | `steps` | `activity` rows (the day's `total`) |
//! | `vo2_max` | `timeseries.vo2_max` (mL/kg/min), at the day's start |
//!
//! Instants are unix seconds; each travels as RFC 3339 in the answer's `latest_time_zone`
//! (its offset at that instant), with `timezone_offset` in seconds beside it. A metric entry
//! that is not `{"type", "object"}`, an object that does not read as its documented shape, or
//! a reading without a numeric `value` and `timestamp` is skipped, counted and logged; its
//! neighbours are kept.
//!
//! Decisions where the documentation and `data-model.md` are silent:
//! - Ultrahuman gives a sleep no id: a sleep is the night of the day it belongs to, so its `id`
//!   is that day (`2025-03-02`), and a re-pull of the night (or a revision of its times)
//!   replaces it. `duration` is `bedtime_end − bedtime_start`; the stages are `sleep_stages`'
//!   `stage_time` (seconds), `total` light + deep + REM; `efficiency` is
//!   `sleep_efficiency.percentage`; `score` is `sleep_score.score` (kept when 1–100);
//!   `skin_temperature` is `average_body_temperature.celsius` and `temperature_delta`
//!   `temperature_deviation.celsius`; the day's `sleep_rhr` is `hr_resting` (rounded) and its
//!   `avg_sleep_hrv` `average_hrv`. Every sleep is `confirmed` (Ultrahuman answers a night once
//!   it has scored it) and gets no `type`: ingest derives it from the duration.
//! - Ultrahuman does not say which statistic its HRV is; it is kept as the `hrv` it names, in
//!   ms.
//! - `steps.values` are readings of unstated meaning (per interval or running); only the
//!   day's `total` is kept, as the activity row of the day (`id` and `date` the day).
//! - Not kept, for want of a column: `recovery_index`, `movement_index`, `active_minutes`,
//!   `metabolic_score`, `night_rhr` (the night's resting heart rate already rides on the sleep
//!   row), the CGM's daily aggregates (average glucose, variability, HbA1c, time in target:
//!   computable from the samples), and the sleep's graphs and quick metrics.

use chrono::{DateTime, SecondsFormat, Utc};
use chrono_tz::Tz;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::{Day, Documents, SLUG, Wanted};
use crate::ingest::PulledRecord;
use crate::schema::Table;
use crate::sync::body::{mmol_per_litre, num, pulled, put, read_record, skip, with_payload};
use crate::sync::{Pulled, Window};

/// The provider and the members naming a record, in the malformed-record log.
const WHO: (&str, &[&str]) = (SLUG, &["type", "timestamp", "day_start_timestamp"]);

/// Seconds in a day: a day's metrics cover `[day_start_timestamp, + DAY)`.
const DAY: i64 = 86_400;

#[derive(Debug, Deserialize)]
struct Reading {
    value: f64,
    timestamp: i64,
}

#[derive(Debug, Deserialize)]
struct Series {
    values: Vec<Value>,
    unit: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Steps {
    day_start_timestamp: i64,
    total: f64,
}

#[derive(Debug, Deserialize)]
struct DayValue {
    value: f64,
    day_start_timestamp: i64,
}

#[derive(Debug, Deserialize)]
struct Stage {
    #[serde(rename = "type")]
    kind: String,
    stage_time: i64,
}

#[derive(Debug, Deserialize)]
struct Score {
    score: Option<f64>,
}

#[derive(Debug, Deserialize)]
struct Percentage {
    percentage: Option<f64>,
}

#[derive(Debug, Deserialize)]
struct Celsius {
    celsius: Option<f64>,
}

#[derive(Debug, Deserialize)]
struct Sleep {
    bedtime_start: i64,
    bedtime_end: i64,
    #[serde(default)]
    sleep_stages: Vec<Stage>,
    sleep_score: Option<Score>,
    sleep_efficiency: Option<Percentage>,
    temperature_deviation: Option<Celsius>,
    average_body_temperature: Option<Celsius>,
}

/// A push body being filled, day by day.
#[derive(Debug)]
pub(super) struct Body {
    wanted: Wanted,
    window: Window,
    sleep: Vec<PulledRecord>,
    activity: Vec<PulledRecord>,
    heartrate: Vec<Value>,
    hrv: Vec<Value>,
    blood_oxygen: Vec<Value>,
    body_temperature: Vec<Value>,
    vo2_max: Vec<Value>,
    glucose: Vec<Value>,
    skipped: usize,
}

/// An instant as it travels, and its offset in seconds: RFC 3339 in the zone's offset then.
fn stamp(seconds: i64, zone: Tz) -> Option<(String, i32)> {
    let at = DateTime::<Utc>::from_timestamp(seconds, 0)?
        .with_timezone(&zone)
        .fixed_offset();
    let offset = at.offset().local_minus_utc();
    Some((at.to_rfc3339_opts(SecondsFormat::AutoSi, false), offset))
}

/// The answer's zone: its IANA name, else UTC.
fn zone_of(day: &Day) -> Tz {
    day.zone
        .as_deref()
        .and_then(|z| z.parse::<Tz>().ok())
        .unwrap_or(Tz::UTC)
}

/// The series a metric type fills, its unit on the wire, and any member its samples carry.
struct Kind {
    unit: &'static str,
    extra: Option<(&'static str, &'static str)>,
}

impl Body {
    pub(super) fn new(wanted: Wanted, window: Window) -> Body {
        Body {
            wanted,
            window,
            sleep: Vec::new(),
            activity: Vec::new(),
            heartrate: Vec::new(),
            hrv: Vec::new(),
            blood_oxygen: Vec::new(),
            body_temperature: Vec::new(),
            vo2_max: Vec::new(),
            glucose: Vec::new(),
            skipped: 0,
        }
    }

    /// Every day of the documents, in date order, into the body.
    pub(super) fn days(mut self, documents: &Documents) -> Pulled {
        for (date, day) in documents {
            self.day(date, day);
        }
        self.finish()
    }

    fn read<'a, T: Deserialize<'a>>(&mut self, resource: &str, record: &'a Value) -> Option<T> {
        read_record(&mut self.skipped, WHO, resource, record)
    }

    fn malformed<T>(&mut self, resource: &str, record: &Value, why: &str) -> Option<T> {
        skip(&mut self.skipped, WHO, resource, record, why)
    }

    /// Whether `[start, end)` overlaps the window.
    fn overlaps(&self, start: i64, end: i64) -> bool {
        start < self.window.end.timestamp() && end > self.window.start.timestamp()
    }

    /// One day's entries.
    fn day(&mut self, date: &str, day: &Day) {
        let zone = zone_of(day);
        let mut entries: Vec<(&str, &Value)> = Vec::new();
        for entry in &day.entries {
            match (
                entry.get("type").and_then(Value::as_str),
                entry.get("object"),
            ) {
                (Some(kind), Some(object)) if !object.is_null() => entries.push((kind, object)),
                (Some(_), Some(_)) => {}
                _ => {
                    self.malformed::<()>("metric", entry, "not a {type, object} entry");
                }
            }
        }
        let of = |kind: &str| entries.iter().find(|(k, _)| *k == kind).map(|(_, o)| *o);
        let (rhr, hrv) = (of("sleep_rhr"), of("avg_sleep_hrv"));
        for &(kind, object) in &entries {
            let w = self.wanted;
            match kind {
                "sleep" if w.sleep => self.sleep_row(date, object, rhr, hrv, zone),
                "temp" if w.sleep => self.series(kind, object, zone, Kind::TEMPERATURE),
                "hr" if w.heartrate => self.series(kind, object, zone, Kind::HEART_RATE),
                "hrv" if w.hrv => self.series(kind, object, zone, Kind::HRV),
                "spo2" if w.blood_oxygen => self.series(kind, object, zone, Kind::SPO2),
                "glucose" if w.glucose => self.series(kind, object, zone, Kind::GLUCOSE),
                "steps" if w.activity => self.steps(date, object, zone),
                "vo2_max" if w.activity => self.vo2_max(object, zone),
                _ => {}
            }
        }
    }

    /// A series' readings in the window, as samples of `kind`'s resource.
    fn series(&mut self, metric: &str, object: &Value, zone: Tz, kind: Kind) {
        let Some(series) = self.read::<Series>(metric, object) else {
            return;
        };
        for reading in &series.values {
            let Some(r) = self.read::<Reading>(metric, reading) else {
                continue;
            };
            let Some((timestamp, offset)) = stamp(r.timestamp, zone) else {
                self.malformed::<()>(metric, reading, "timestamp out of range");
                continue;
            };
            if !contains(&self.window, r.timestamp) {
                continue;
            }
            let value = if kind.unit == "mmol/L" {
                let unit = series.unit.as_deref().unwrap_or("mg/dL");
                match mmol_per_litre(r.value, unit) {
                    Some(v) => v,
                    None => {
                        self.malformed::<()>(
                            metric,
                            reading,
                            "glucose unit is not mg/dL or mmol/L",
                        );
                        continue;
                    }
                }
            } else {
                r.value
            };
            let mut sample = Map::new();
            sample.insert("timestamp".into(), timestamp.into());
            sample.insert("timezone_offset".into(), offset.into());
            if let Some((k, v)) = kind.extra {
                sample.insert(k.into(), v.into());
            }
            sample.insert("unit".into(), kind.unit.into());
            sample.insert("value".into(), num(value));
            let into = match metric {
                "temp" => &mut self.body_temperature,
                "hr" => &mut self.heartrate,
                "hrv" => &mut self.hrv,
                "spo2" => &mut self.blood_oxygen,
                _ => &mut self.glucose,
            };
            into.push(Value::Object(sample));
        }
    }

    /// The night of `date`, with the day's resting heart rate and HRV.
    fn sleep_row(
        &mut self,
        date: &str,
        object: &Value,
        rhr: Option<&Value>,
        hrv: Option<&Value>,
        zone: Tz,
    ) {
        let Some(s) = self.read::<Sleep>("sleep", object) else {
            return;
        };
        if s.bedtime_end < s.bedtime_start {
            self.malformed::<()>("sleep", object, "bedtime_end is before bedtime_start");
            return;
        }
        let (Some((start, offset)), Some((end, _))) =
            (stamp(s.bedtime_start, zone), stamp(s.bedtime_end, zone))
        else {
            self.malformed::<()>("sleep", object, "bedtime out of range");
            return;
        };
        if !self.overlaps(s.bedtime_start, s.bedtime_end) {
            return;
        }
        let stage = |kind: &str| {
            s.sleep_stages
                .iter()
                .find(|st| st.kind == kind)
                .map(|st| st.stage_time)
        };
        let mut row = Map::new();
        row.insert("id".into(), date.into());
        row.insert("bedtime_start".into(), start.into());
        row.insert("bedtime_stop".into(), end.into());
        row.insert("state".into(), "confirmed".into());
        row.insert("duration".into(), (s.bedtime_end - s.bedtime_start).into());
        let (deep, light, rem) = (
            stage("deep_sleep"),
            stage("light_sleep"),
            stage("rem_sleep"),
        );
        if let (Some(d), Some(l), Some(r)) = (deep, light, rem) {
            row.insert("total".into(), (d + l + r).into());
        }
        put(&mut row, "awake", stage("awake"));
        put(&mut row, "light", light);
        put(&mut row, "rem", rem);
        put(&mut row, "deep", deep);
        let efficiency = s.sleep_efficiency.and_then(|e| e.percentage);
        put(&mut row, "efficiency", efficiency.map(num));
        let score = s
            .sleep_score
            .and_then(|s| s.score)
            .map(f64::round)
            .filter(|s| (1.0..=100.0).contains(s));
        put(&mut row, "score", score.map(|s| s as i64));
        let value = |v: Option<&Value>| v.and_then(|o| o.get("value")).and_then(Value::as_f64);
        put(
            &mut row,
            "hr_resting",
            value(rhr)
                .filter(|v| v.is_finite())
                .map(|v| v.round() as i64),
        );
        put(&mut row, "average_hrv", value(hrv).map(num));
        let celsius = |c: Option<Celsius>| c.and_then(|c| c.celsius).map(num);
        put(
            &mut row,
            "skin_temperature",
            celsius(s.average_body_temperature),
        );
        put(
            &mut row,
            "temperature_delta",
            celsius(s.temperature_deviation),
        );
        row.insert("timezone_offset".into(), offset.into());
        self.sleep.push(with_payload(Value::Object(row), object));
    }

    /// The day's steps total as its activity row.
    fn steps(&mut self, date: &str, object: &Value, zone: Tz) {
        let Some(s) = self.read::<Steps>("steps", object) else {
            return;
        };
        let Some((_, offset)) = stamp(s.day_start_timestamp, zone) else {
            self.malformed::<()>("steps", object, "day_start_timestamp out of range");
            return;
        };
        if !self.overlaps(s.day_start_timestamp, s.day_start_timestamp + DAY) {
            return;
        }
        if !s.total.is_finite() || s.total < 0.0 {
            self.malformed::<()>("steps", object, "total is not a count");
            return;
        }
        let row = json!({
            "id": date,
            "date": date,
            "steps": s.total.round() as i64,
            "timezone_offset": offset,
        });
        self.activity.push(with_payload(row, object));
    }

    /// The day's VO2 max estimate, at the day's start.
    fn vo2_max(&mut self, object: &Value, zone: Tz) {
        let Some(v) = self.read::<DayValue>("vo2_max", object) else {
            return;
        };
        let Some((timestamp, offset)) = stamp(v.day_start_timestamp, zone) else {
            self.malformed::<()>("vo2_max", object, "day_start_timestamp out of range");
            return;
        };
        if !self.overlaps(v.day_start_timestamp, v.day_start_timestamp + DAY) {
            return;
        }
        self.vo2_max.push(json!({
            "timestamp": timestamp,
            "timezone_offset": offset,
            "unit": "mL/kg/min",
            "value": num(v.value),
        }));
    }

    fn finish(self) -> Pulled {
        pulled(
            (SLUG, "ring"),
            vec![(Table::Sleep, self.sleep), (Table::Activity, self.activity)],
            None,
            vec![
                ("heartrate", self.heartrate.into()),
                ("hrv", self.hrv.into()),
                ("blood_oxygen", self.blood_oxygen.into()),
                ("body_temperature", self.body_temperature.into()),
                ("vo2_max", self.vo2_max.into()),
                ("glucose", self.glucose.into()),
            ],
            self.skipped,
        )
    }
}

impl Kind {
    const HEART_RATE: Kind = Kind {
        unit: "bpm",
        extra: None,
    };
    const HRV: Kind = Kind {
        unit: "ms",
        extra: None,
    };
    const TEMPERATURE: Kind = Kind {
        unit: "°C",
        extra: Some(("sensor_location", "skin")),
    };
    const SPO2: Kind = Kind {
        unit: "%",
        extra: None,
    };
    const GLUCOSE: Kind = Kind {
        unit: "mmol/L",
        extra: None,
    };
}

/// Whether the instant `seconds` (unix) lies in the window.
fn contains(window: &Window, seconds: i64) -> bool {
    DateTime::<Utc>::from_timestamp(seconds, 0).is_some_and(|at| window.contains(at))
}
