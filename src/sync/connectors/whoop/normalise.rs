//! WHOOP API v2 records to one push body (`data-model.md`), provider `whoop_v2`, source
//! `{"type": "automatic"}` (the catalogue's source type for WHOOP: a strap worn day and night,
//! recording without the user's doing).
//!
//! | WHOOP | push body |
//! |---|---|
//! | `sleep` (+ its `recovery`) | `sleep` rows (`sleep.rs`) |
//! | `recovery` | `timeseries.hrv` (ms), `heartrate` (bpm, type `resting`), `blood_oxygen` (%), `body_temperature` (°C, skin) (`sleep.rs`) |
//! | `cycle` | `activity` rows |
//! | `workout` | `workouts` rows |
//! | `measurement/body` | `profile.height`, one `body` row (weight) |
//!
//! WHOOP's ids are kept as `id` (workouts also as `provider_id`) so a re-pull replaces. WHOOP
//! gives UTC instants and, beside them, the wearer's `timezone_offset` (`±hh:mm` or `Z`):
//! instants travel in that offset and each record's `timezone_offset` is it in seconds. A record
//! that does not read as its documented shape is skipped, counted and logged; its neighbours are
//! kept. Records not scored yet (`PENDING_SCORE`) or not scorable (`UNSCORABLE`) carry no
//! `score`: they keep what they have (a sleep or workout its times) or, with nothing to say
//! (a cycle), are left out without counting as malformed.
//!
//! Decisions where the documentation and `data-model.md` are silent:
//! - Energy: WHOOP's `kilojoule` becomes kilocalories (÷ 4.184), to 2 decimals. A cycle's is
//!   everything the wearer spent, so it is the day's `calories_total`; a workout's its
//!   `calories`.
//! - Activity: a cycle runs from one sleep onset to the next, so its day is the local calendar
//!   day the wearer wakes into: that of `start` + 12 hours in the cycle's offset (a cycle begun
//!   at 23:10 counts for the next day, one begun at 00:30 for that day). Its average and
//!   maximum heart rate are the day's `heart_rate.avg_bpm` / `max_bpm`. An ongoing cycle (no
//!   `end`) is kept with what it has so far; a later pull replaces it (activity is keyed by
//!   day).
//! - Workouts: `sport.slug` is WHOOP's `sport_name`, `sport.name` the same in words
//!   (`functional_fitness` → `Functional fitness`); `altitude_gain_meter` is the elevation gain;
//!   WHOOP's zones 0–5 are shares of the maximum heart rate (< 50 %, 50–60, 60–70, 70–80, 80–90,
//!   ≥ 90 %), exactly the data model's `heart_rate_zone_1` … `_6`, so `zone_durations` become
//!   `hr_zones` in seconds.
//! - Not kept, for want of a field: strain (cycles, workouts), the recovery score, sleep need,
//!   consistency, disturbances and cycle counts, `percent_recorded`, `altitude_change_meter`,
//!   the body measurement's `max_heart_rate`, and the basic profile (name and e-mail).
//! - The body measurement has no time: its height becomes the profile's (centimetres) and its
//!   weight one `body` row with the fixed id `body_measurement`, measured at the pull's end, so
//!   each historical pull replaces the last rather than adding a row.

use chrono::{DateTime, FixedOffset, SecondsFormat, TimeDelta, Utc};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::ingest::PulledRecord;
use crate::schema::Table;
use crate::sync::Pulled;
use crate::sync::body::with_payload;
pub(super) use crate::sync::body::{num, put};

/// kJ per kcal (the thermochemical calorie).
const KJ_PER_KCAL: f64 = 4.184;

/// The fixed id of the body row the body measurement becomes.
pub(super) const BODY_ROW_ID: &str = "body_measurement";

/// A push body being filled, part by part.
#[derive(Debug, Default)]
pub(crate) struct Body {
    pub(super) sleep: Vec<PulledRecord>,
    activity: Vec<PulledRecord>,
    workouts: Vec<PulledRecord>,
    body: Vec<PulledRecord>,
    pub(super) heartrate: Vec<Value>,
    pub(super) hrv: Vec<Value>,
    pub(super) blood_oxygen: Vec<Value>,
    pub(super) body_temperature: Vec<Value>,
    profile: Option<PulledRecord>,
    skipped: usize,
}

#[derive(Debug, Deserialize)]
struct CycleScore {
    kilojoule: Option<f64>,
    average_heart_rate: Option<i64>,
    max_heart_rate: Option<i64>,
}

#[derive(Debug, Deserialize)]
struct Cycle {
    id: i64,
    start: DateTime<FixedOffset>,
    timezone_offset: String,
    score: Option<CycleScore>,
}

#[derive(Debug, Deserialize)]
struct ZoneDurations {
    zone_zero_milli: i64,
    zone_one_milli: i64,
    zone_two_milli: i64,
    zone_three_milli: i64,
    zone_four_milli: i64,
    zone_five_milli: i64,
}

#[derive(Debug, Deserialize)]
struct WorkoutScore {
    average_heart_rate: Option<i64>,
    max_heart_rate: Option<i64>,
    kilojoule: Option<f64>,
    distance_meter: Option<f64>,
    altitude_gain_meter: Option<f64>,
    zone_durations: Option<ZoneDurations>,
}

#[derive(Debug, Deserialize)]
struct Workout {
    id: String,
    start: DateTime<FixedOffset>,
    end: DateTime<FixedOffset>,
    timezone_offset: String,
    sport_name: String,
    score: Option<WorkoutScore>,
}

#[derive(Debug, Deserialize)]
struct BodyMeasurement {
    height_meter: Option<f64>,
    weight_kilogram: Option<f64>,
}

/// WHOOP's time zone designator (`-05:00`, `+05:30`, `Z`) as an offset.
pub(super) fn zone(tzd: &str) -> Option<FixedOffset> {
    if tzd == "Z" {
        return FixedOffset::east_opt(0);
    }
    let (sign, rest) = match tzd.as_bytes().first()? {
        b'+' => (1, &tzd[1..]),
        b'-' => (-1, &tzd[1..]),
        _ => return None,
    };
    let (h, m) = rest.split_once(':')?;
    if h.len() != 2 || m.len() != 2 {
        return None;
    }
    let seconds = h.parse::<i32>().ok()? * 3600 + m.parse::<i32>().ok()? * 60;
    FixedOffset::east_opt(sign * seconds)
}

/// An instant as it travels: RFC 3339 in the wearer's offset.
pub(super) fn stamp(at: DateTime<FixedOffset>, zone: FixedOffset) -> String {
    at.with_timezone(&zone)
        .to_rfc3339_opts(SecondsFormat::AutoSi, false)
}

/// Milliseconds as whole seconds.
pub(super) fn seconds(millis: i64) -> i64 {
    millis.div_euclid(1000)
}

/// Kilojoules as kilocalories, to 2 decimals; `None` for non-finite values.
fn kcal(kj: f64) -> Option<Value> {
    let v = (kj / KJ_PER_KCAL * 100.0).round() / 100.0;
    v.is_finite().then(|| num(v))
}

/// Rounds a float to the integer an int64 column holds; `None` for non-finite values.
pub(super) fn round(v: f64) -> Option<i64> {
    v.is_finite().then(|| v.round() as i64)
}

/// The provider and the members naming a record, in the malformed-record log.
const WHO: (&str, &[&str]) = ("whoop_v2", &["id"]);

impl Body {
    /// Reads one record, or counts and logs it as malformed.
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

    /// A record's offset, or `None` (counted as malformed) when its designator is unreadable.
    pub(super) fn zone_of(
        &mut self,
        resource: &str,
        record: &Value,
        tzd: &str,
    ) -> Option<FixedOffset> {
        match zone(tzd) {
            Some(z) => Some(z),
            None => self.malformed(resource, record, "timezone_offset is not ±hh:mm or Z"),
        }
    }

    /// Physiological cycles: one activity row per scored cycle.
    pub(crate) fn cycles(&mut self, records: &[Value]) {
        for record in records {
            let Some(c) = self.read::<Cycle>("cycle", record) else {
                continue;
            };
            let Some(tz) = self.zone_of("cycle", record, &c.timezone_offset) else {
                continue;
            };
            let Some(score) = c.score else {
                continue;
            };
            let day = (c.start.with_timezone(&tz) + TimeDelta::hours(12)).date_naive();
            let mut row = Map::new();
            row.insert("id".into(), c.id.to_string().into());
            row.insert("date".into(), day.to_string().into());
            put(&mut row, "calories_total", score.kilojoule.and_then(kcal));
            let mut hr = Map::new();
            put(&mut hr, "avg_bpm", score.average_heart_rate);
            put(&mut hr, "max_bpm", score.max_heart_rate);
            if !hr.is_empty() {
                row.insert("heart_rate".into(), Value::Object(hr));
            }
            row.insert("timezone_offset".into(), tz.local_minus_utc().into());
            self.activity.push(with_payload(Value::Object(row), record));
        }
    }

    /// Workouts.
    pub(crate) fn workouts(&mut self, records: &[Value]) {
        for record in records {
            let Some(w) = self.read::<Workout>("workout", record) else {
                continue;
            };
            if w.end < w.start {
                self.malformed::<()>("workout", record, "end is before start");
                continue;
            }
            let Some(tz) = self.zone_of("workout", record, &w.timezone_offset) else {
                continue;
            };
            let mut row = Map::new();
            row.insert("id".into(), w.id.clone().into());
            row.insert("time_start".into(), stamp(w.start, tz).into());
            row.insert("time_end".into(), stamp(w.end, tz).into());
            row.insert(
                "sport".into(),
                json!({"name": sport_name(&w.sport_name), "slug": w.sport_name}),
            );
            if let Some(s) = w.score {
                put(&mut row, "calories", s.kilojoule.and_then(kcal));
                put(&mut row, "distance", s.distance_meter.map(num));
                put(
                    &mut row,
                    "total_elevation_gain",
                    s.altitude_gain_meter.map(num),
                );
                put(&mut row, "average_hr", s.average_heart_rate);
                put(&mut row, "max_hr", s.max_heart_rate);
                if let Some(z) = s.zone_durations {
                    let zones = [
                        z.zone_zero_milli,
                        z.zone_one_milli,
                        z.zone_two_milli,
                        z.zone_three_milli,
                        z.zone_four_milli,
                        z.zone_five_milli,
                    ];
                    row.insert("hr_zones".into(), zones.map(seconds).to_vec().into());
                }
            }
            row.insert("provider_id".into(), w.id.into());
            row.insert("timezone_offset".into(), tz.local_minus_utc().into());
            self.workouts.push(with_payload(Value::Object(row), record));
        }
    }

    /// The body measurement, read at `at`: the profile's height and a body row of the weight.
    pub(crate) fn body_measurement(&mut self, document: &Value, at: DateTime<Utc>) {
        let Some(m) = self.read::<BodyMeasurement>("body_measurement", document) else {
            return;
        };
        let height = m.height_meter.and_then(|h| round(h * 100.0));
        if let Some(cm) = height {
            self.profile = Some(with_payload(json!({ "height": cm }), document));
        }
        if let Some(kg) = m.weight_kilogram.filter(|w| w.is_finite()) {
            let row = json!({
                "id": BODY_ROW_ID,
                "measured_at": at.to_rfc3339_opts(SecondsFormat::AutoSi, true),
                "weight": num(kg),
            });
            self.body.push(with_payload(row, document));
        }
    }

    /// The push body, with only the parts that received records.
    pub(crate) fn finish(self) -> Pulled {
        crate::sync::body::pulled(
            ("whoop_v2", "automatic"),
            vec![
                (Table::Sleep, self.sleep),
                (Table::Activity, self.activity),
                (Table::Workout, self.workouts),
                (Table::Body, self.body),
            ],
            self.profile,
            vec![
                ("heartrate", self.heartrate.into()),
                ("hrv", self.hrv.into()),
                ("blood_oxygen", self.blood_oxygen.into()),
                ("body_temperature", self.body_temperature.into()),
            ],
            self.skipped,
        )
    }
}

/// `functional_fitness` → `Functional fitness`.
fn sport_name(slug: &str) -> String {
    let words = slug.replace('_', " ");
    let mut chars = words.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => words,
    }
}
