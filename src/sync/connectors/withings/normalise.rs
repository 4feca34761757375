//! Withings Public API records to one push body (`data-model.md`), source `{"type": "scale"}`;
//! measure groups are read in `measures.rs`, workouts in `workouts.rs`.
//!
//! | Withings | push body |
//! |---|---|
//! | sleep summary (`getsummary` `series[]`) | `sleep` rows |
//! | sleep states (`sleep?action=get` `series[]`) | the night's `sleep_stream` hypnogram |
//! | activity (`getactivity` `activities[]`) | `activity` rows |
//! | workout (`getworkouts` `series[]`) | `workouts` rows |
//! | measure group (`getmeas` `measuregrps[]`) | `body` rows, `timeseries.weight` (kg), `timeseries.fat` (%), `timeseries.blood_pressure` (mmHg), `timeseries.heartrate` (bpm) |
//! | intraday activity (`getintradayactivity` `series{}`) | `timeseries.heartrate` (bpm) |
//!
//! Withings sends instants as unix seconds and, with each record (or with the `getmeas`
//! answer), the user's IANA `timezone`: instants travel in that zone's offset and each record's
//! `timezone_offset` is that offset in seconds. Withings' own ids (`id` of a sleep summary,
//! `grpid` of a measure group) are kept as `id` so a re-pull replaces. A record that does not
//! read as its documented shape is skipped, counted and logged; its neighbours are kept. With a
//! window, records whose instant lies outside it are left out (not counted).
//!
//! Decisions where the documentation is silent:
//! - Source type `scale`, the catalogue's for Withings: the push body has one source, and a
//!   Withings account's sleep mats and watches travel with it.
//! - A `timezone` that is absent or not an IANA name reads as UTC (logged, not skipped).
//! - Sleep: `duration` is `enddate − startdate`; `total` is `total_sleep_time`, else light +
//!   deep + rem; `awake` is `wakeupduration`; `latency` is `sleep_latency`; `hr_min`/`hr_max`
//!   are `hr_lowest`/`hr_highest`; `rr_average` is `respiratory_rate`; `sleep_efficiency`, a
//!   ratio in the reference, is made a percent (a value over 1 is taken as a percent already);
//!   `sleep_score` outside 1–100 is left out; the offset is that of `enddate`. No `type`:
//!   ingest derives it from the duration.
//! - Activity: `totalcalories` is `calories_total`, `calories` `calories_active`, `distance`
//!   metres as sent; `active` is `duration_active_second`; `soft`, `moderate` and `intense`
//!   (seconds) are the low, medium and high intensities; a heart rate of 0 (no reading) is left
//!   out; `time_zone` is the record's zone. A day is kept when its local day overlaps the
//!   window. Ingest derives activity ids from the day.

use chrono::{DateTime, FixedOffset, NaiveDate, SecondsFormat, TimeZone, Utc};
use chrono_tz::Tz;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use crate::ingest::PulledRecord;
use crate::schema::Table;
use crate::sync::body::with_payload;
pub(super) use crate::sync::body::{num, put};
use crate::sync::{Pulled, Window};

/// A push body being filled, part by part.
#[derive(Debug)]
pub(crate) struct Body {
    window: Option<Window>,
    sleep: Vec<PulledRecord>,
    activity: Vec<PulledRecord>,
    pub(super) workouts: Vec<PulledRecord>,
    pub(super) body: Vec<PulledRecord>,
    pub(super) weight: Vec<Value>,
    pub(super) fat: Vec<Value>,
    pub(super) blood_pressure: Vec<Value>,
    pub(super) heartrate: Vec<Value>,
    /// The sleep rows' spans, for their stages: (index in `sleep`, unix start, unix end).
    nights: Vec<(usize, i64, i64)>,
    skipped: usize,
}

/// The hypnogram interval of Withings' sleep states, in seconds (their boundaries fall on
/// minutes).
pub(crate) const STAGE_INTERVAL: i64 = 60;

/// The most hypnogram slots one night may have (two days a minute), against absurd spans.
const MAX_SLOTS: i64 = 2 * 24 * 60;

/// A `sleep?action=get` state segment.
#[derive(Debug, Deserialize)]
struct StateSegment {
    startdate: i64,
    enddate: i64,
    state: i64,
}

/// The data model's stage code of a Withings sleep state: deep 1, light 2, REM 3, awake 4
/// (out of bed is awake); manual and unspecified are unknown (-1).
fn stage_code(state: i64) -> Option<i64> {
    match state {
        0 | 15 => Some(4),
        1 => Some(2),
        2 => Some(1),
        3 => Some(3),
        4 | 5 => Some(-1),
        _ => None,
    }
}

#[derive(Debug, Deserialize)]
struct SleepSummary {
    id: u64,
    startdate: i64,
    enddate: i64,
    timezone: Option<String>,
    #[serde(default)]
    data: SleepData,
}

#[derive(Debug, Default, Deserialize)]
struct SleepData {
    total_sleep_time: Option<i64>,
    lightsleepduration: Option<i64>,
    remsleepduration: Option<i64>,
    deepsleepduration: Option<i64>,
    wakeupduration: Option<i64>,
    sleep_latency: Option<i64>,
    sleep_efficiency: Option<f64>,
    hr_average: Option<f64>,
    hr_min: Option<f64>,
    hr_max: Option<f64>,
    rr_average: Option<f64>,
    sleep_score: Option<f64>,
}

#[derive(Debug, Deserialize)]
struct Activity {
    date: NaiveDate,
    timezone: Option<String>,
    steps: Option<i64>,
    distance: Option<f64>,
    soft: Option<i64>,
    moderate: Option<i64>,
    intense: Option<i64>,
    active: Option<i64>,
    calories: Option<f64>,
    totalcalories: Option<f64>,
    hr_average: Option<f64>,
    hr_min: Option<f64>,
    hr_max: Option<f64>,
}

/// The zone of a `timezone` field: its IANA zone, else UTC (logged).
pub(super) fn zone_of(name: Option<&str>) -> Tz {
    match name.map(str::parse::<Tz>) {
        Some(Ok(tz)) => tz,
        Some(Err(_)) | None => {
            tracing::warn!(
                provider = "withings",
                timezone = name,
                "no readable IANA timezone: instants read in UTC"
            );
            chrono_tz::UTC
        }
    }
}

/// The instant of unix seconds `at` in `zone`, with the zone's offset then.
pub(super) fn instant(zone: Tz, at: i64) -> Option<DateTime<FixedOffset>> {
    let utc = DateTime::<Utc>::from_timestamp(at, 0)?;
    Some(utc.with_timezone(&zone).fixed_offset())
}

/// An instant as the push body takes it: RFC 3339 with its offset.
pub(super) fn stamp(at: DateTime<FixedOffset>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Secs, false)
}

/// An instant's offset in seconds east of UTC.
pub(super) fn offset(at: DateTime<FixedOffset>) -> i32 {
    at.offset().local_minus_utc()
}

/// Rounds a float to the integer an int64 column holds; `None` for non-finite values.
fn round(v: f64) -> Option<i64> {
    v.is_finite().then(|| v.round() as i64)
}

/// A heart rate worth keeping: a reading (not Withings' 0 for none), as an integer.
fn bpm(v: Option<f64>) -> Option<i64> {
    v.filter(|b| *b > 0.0).and_then(round)
}

impl Body {
    /// An empty body, cut to `window` when there is one.
    pub(crate) fn new(window: Option<Window>) -> Body {
        Body {
            window,
            sleep: Vec::new(),
            activity: Vec::new(),
            workouts: Vec::new(),
            body: Vec::new(),
            weight: Vec::new(),
            fat: Vec::new(),
            blood_pressure: Vec::new(),
            heartrate: Vec::new(),
            nights: Vec::new(),
            skipped: 0,
        }
    }

    /// Reads one record, or counts and logs it as malformed.
    pub(super) fn read<T: DeserializeOwned>(
        &mut self,
        resource: &str,
        record: &Value,
    ) -> Option<T> {
        match T::deserialize(record) {
            Ok(t) => Some(t),
            Err(e) => self.malformed(resource, record, &e.to_string()),
        }
    }

    /// Counts and logs a malformed record.
    pub(super) fn malformed<T>(&mut self, resource: &str, record: &Value, why: &str) -> Option<T> {
        let id = ["id", "grpid", "date"]
            .iter()
            .find_map(|k| record.get(*k))
            .map_or_else(|| "?".to_owned(), Value::to_string);
        tracing::warn!(
            provider = "withings",
            resource,
            id,
            error = why,
            "skipped a malformed provider record"
        );
        self.skipped += 1;
        None
    }

    pub(super) fn in_window(&self, at: DateTime<FixedOffset>) -> bool {
        self.window.is_none_or(|w| w.contains(at.to_utc()))
    }

    /// Sleep summaries (`getsummary` `series[]`).
    pub(crate) fn sleep(&mut self, series: &[Value]) {
        for record in series {
            let Some(s) = self.read::<SleepSummary>("sleep", record) else {
                continue;
            };
            let zone = zone_of(s.timezone.as_deref());
            let (Some(start), Some(end)) = (instant(zone, s.startdate), instant(zone, s.enddate))
            else {
                self.malformed::<()>("sleep", record, "startdate or enddate out of range");
                continue;
            };
            if end < start {
                self.malformed::<()>("sleep", record, "enddate is before startdate");
                continue;
            }
            if !self.in_window(end) {
                continue;
            }
            let d = &s.data;
            let mut row = Map::new();
            row.insert("id".into(), s.id.to_string().into());
            row.insert("bedtime_start".into(), stamp(start).into());
            row.insert("bedtime_stop".into(), stamp(end).into());
            row.insert("duration".into(), (s.enddate - s.startdate).into());
            let stages = match (
                d.lightsleepduration,
                d.deepsleepduration,
                d.remsleepduration,
            ) {
                (Some(l), Some(dp), Some(r)) => Some(l + dp + r),
                _ => None,
            };
            put(&mut row, "total", d.total_sleep_time.or(stages));
            put(&mut row, "awake", d.wakeupduration);
            put(&mut row, "light", d.lightsleepduration);
            put(&mut row, "rem", d.remsleepduration);
            put(&mut row, "deep", d.deepsleepduration);
            put(&mut row, "latency", d.sleep_latency);
            put(&mut row, "hr_lowest", bpm(d.hr_min));
            put(&mut row, "hr_average", bpm(d.hr_average));
            put(&mut row, "hr_highest", bpm(d.hr_max));
            let efficiency = d
                .sleep_efficiency
                .filter(|e| e.is_finite() && *e >= 0.0)
                .map(|e| if e <= 1.0 { e * 100.0 } else { e });
            put(&mut row, "efficiency", efficiency.map(num));
            put(
                &mut row,
                "respiratory_rate",
                d.rr_average.filter(|r| *r > 0.0).map(num),
            );
            let score = d
                .sleep_score
                .and_then(round)
                .filter(|s| (1..=100).contains(s));
            put(&mut row, "score", score);
            row.insert("timezone_offset".into(), offset(end).into());
            self.nights.push((self.sleep.len(), s.startdate, s.enddate));
            self.sleep.push(with_payload(Value::Object(row), record));
        }
    }

    /// The spans (unix seconds) of the sleep rows kept so far, for [`Body::stages`]: (night,
    /// start, end).
    pub(crate) fn nights(&self) -> Vec<(usize, i64, i64)> {
        self.nights.clone()
    }

    /// A night's sleep states (`sleep?action=get` `series[]`) as its hypnogram: one code a
    /// minute from `bedtime_start`, each minute the state of the segment it starts in (-1 where
    /// no segment says). A night with no readable segment gets none; a state Withings does not
    /// document drops the night's hypnogram (logged), not the night.
    pub(crate) fn stages(&mut self, night: usize, segments: &[Value]) {
        let Some(&(index, start, end)) = self.nights.iter().find(|(i, _, _)| *i == night) else {
            return;
        };
        let slots = (end - start) / STAGE_INTERVAL;
        if slots <= 0 || slots > MAX_SLOTS {
            return;
        }
        let mut codes = vec![-1_i64; slots as usize];
        let mut painted = false;
        for record in segments {
            let Some(seg) = self.read::<StateSegment>("sleep", record) else {
                continue;
            };
            let Some(code) = stage_code(seg.state) else {
                tracing::warn!(
                    provider = "withings",
                    state = seg.state,
                    "dropped a sleep hypnogram with an undocumented state"
                );
                return;
            };
            let from = (seg.startdate - start).div_euclid(STAGE_INTERVAL).max(0);
            let to = (seg.enddate - start).div_euclid(STAGE_INTERVAL).min(slots);
            for slot in from..to {
                codes[slot as usize] = code;
                painted = true;
            }
        }
        if let (true, Some(row)) = (painted, self.sleep.get_mut(index)) {
            row.fields.insert(
                "sleep_stream".into(),
                json!({"hypnogram": codes, "interval": STAGE_INTERVAL}),
            );
        }
    }

    /// Daily activity (`getactivity` `activities[]`).
    pub(crate) fn activity(&mut self, activities: &[Value]) {
        for record in activities {
            let Some(a) = self.read::<Activity>("activity", record) else {
                continue;
            };
            let zone = zone_of(a.timezone.as_deref());
            if !self.day_in_window(zone, a.date) {
                continue;
            }
            let mut row = Map::new();
            row.insert("date".into(), a.date.to_string().into());
            put(&mut row, "calories_total", a.totalcalories.map(num));
            put(&mut row, "calories_active", a.calories.map(num));
            put(&mut row, "steps", a.steps);
            put(&mut row, "distance", a.distance.map(num));
            put(&mut row, "duration_active_second", a.active);
            put(&mut row, "intensity_low_second", a.soft);
            put(&mut row, "intensity_medium_second", a.moderate);
            put(&mut row, "intensity_high_second", a.intense);
            let mut hr = Map::new();
            put(&mut hr, "avg_bpm", bpm(a.hr_average));
            put(&mut hr, "min_bpm", bpm(a.hr_min));
            put(&mut hr, "max_bpm", bpm(a.hr_max));
            if !hr.is_empty() {
                row.insert("heart_rate".into(), Value::Object(hr));
            }
            row.insert("time_zone".into(), zone.name().into());
            self.activity.push(with_payload(Value::Object(row), record));
        }
    }

    /// Whether the local day `date` in `zone` overlaps the window.
    fn day_in_window(&self, zone: Tz, date: NaiveDate) -> bool {
        let Some(w) = self.window else {
            return true;
        };
        let local_midnight = |d: NaiveDate| {
            d.and_hms_opt(0, 0, 0)
                .and_then(|t| zone.from_local_datetime(&t).earliest())
                .map(|t| t.with_timezone(&Utc))
        };
        match (
            local_midnight(date),
            date.succ_opt().and_then(local_midnight),
        ) {
            (Some(start), Some(end)) => start < w.end && end > w.start,
            _ => true,
        }
    }

    /// A watch's intraday heart rate (`getintradayactivity` `series`: unix seconds as keys),
    /// in the zone `timezone` names. An entry without a heart rate (a minute of another field)
    /// or with Withings' 0 (no reading) is left out; an instant already read (a scale's pulse)
    /// is kept once.
    pub(crate) fn intraday(&mut self, series: &[(String, Value)], timezone: Option<&str>) {
        let zone = zone_of(timezone);
        let mut seen: std::collections::HashSet<String> = self
            .heartrate
            .iter()
            .filter_map(|s| s["timestamp"].as_str().map(str::to_owned))
            .collect();
        for (key, entry) in series {
            let beat = match entry.get("heart_rate") {
                None | Some(Value::Null) => continue,
                Some(v) => v.as_f64(),
            };
            let Some(beat) = beat else {
                self.malformed::<()>("heartrate", entry, "heart_rate is not a number");
                continue;
            };
            if beat == 0.0 {
                continue;
            }
            if !(1.0..=300.0).contains(&beat) {
                self.malformed::<()>("heartrate", entry, "heart_rate outside 1–300 bpm");
                continue;
            }
            let Some(at) = key.parse::<i64>().ok().and_then(|s| instant(zone, s)) else {
                self.malformed::<()>("heartrate", entry, "the key is not unix seconds");
                continue;
            };
            if !self.in_window(at) || !seen.insert(stamp(at)) {
                continue;
            }
            self.heartrate.push(Body::sample(at, "bpm", beat));
        }
    }

    /// A timeseries sample at `at`.
    pub(super) fn sample(at: DateTime<FixedOffset>, unit: &str, value: f64) -> Value {
        json!({
            "timestamp": stamp(at),
            "timezone_offset": offset(at),
            "unit": unit,
            "value": num(value),
        })
    }

    /// The push body, with only the parts that received records.
    pub(crate) fn finish(self) -> Pulled {
        crate::sync::body::pulled(
            ("withings", "scale"),
            vec![
                (Table::Sleep, self.sleep),
                (Table::Activity, self.activity),
                (Table::Workout, self.workouts),
                (Table::Body, self.body),
            ],
            None,
            vec![
                ("weight", self.weight.into()),
                ("fat", self.fat.into()),
                ("blood_pressure", self.blood_pressure.into()),
                ("heartrate", self.heartrate.into()),
            ],
            self.skipped,
        )
    }
}
