//! Strava API v3 documents to one push body (`data-model.md`), provider `strava`, source
//! `{"type": "app"}` (the catalogue's source type for Strava: the app records, or gathers from
//! whatever device the athlete uploads from).
//!
//! | Strava | push body |
//! |---|---|
//! | `SummaryActivity` | `workouts` rows |
//! | its `heartrate` stream | `timeseries.heartrate` (bpm), one sample per stream point (`streams.rs`) |
//! | its `distance` stream | `timeseries.distance` (m), one interval sample per step between points (`streams.rs`) |
//! | its `watts` stream | the workout's `average_watts` / `max_watts` when the summary has none |
//! | `/athlete` | `profile.sex` |
//!
//! Strava's activity id is kept as the workout's `id` and `provider_id`, so a re-pull replaces.
//! Strava gives `start_date` (UTC) and `start_date_local` (the athlete's wall clock, written
//! with a `Z` it does not mean): their difference, rounded to 15 minutes, is the activity's
//! offset, in which its instants travel and which is each row's `timezone_offset` in seconds.
//! An activity that does not read as its documented shape is skipped, counted and logged; its
//! neighbours are kept.
//!
//! Decisions where the documentation and `data-model.md` are silent:
//! - `time_end` is `start_date` + `elapsed_time`; `moving_time` is the active duration.
//! - Sport: `sport_type` (else the deprecated `type`) is the slug in snake case
//!   (`MountainBikeRide` → `mountain_bike_ride`) and the name in words (`Mountain bike ride`).
//! - Heart rates are rounded to whole bpm (the workout columns are integers).
//! - Not kept, for want of a field: `kilojoules` (work done, not energy spent: the summary has
//!   no calories), `cadence` (no series or column holds it), the athlete's name, weight, city,
//!   `device_watts`, `suffer_score`, kudos and achievements, and the map's full `polyline`
//!   (only the summary polyline is in the list answer).

use chrono::{DateTime, FixedOffset, SecondsFormat, TimeDelta, Utc};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::Wanted;
use super::streams;
use crate::ingest::{PulledRecord, TypedSamples};
use crate::schema::Table;
use crate::sync::Pulled;
use crate::sync::body::{clock_offset, num, put};

/// A push body being filled, part by part.
#[derive(Debug, Default)]
pub(super) struct Body {
    workouts: Vec<PulledRecord>,
    pub(super) heartrate: TypedSamples,
    pub(super) distance: TypedSamples,
    profile: Option<PulledRecord>,
    pub(super) skipped: usize,
}

#[derive(Debug, Deserialize)]
struct PolylineMap {
    summary_polyline: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Activity {
    id: i64,
    name: Option<String>,
    start_date: DateTime<Utc>,
    start_date_local: DateTime<Utc>,
    elapsed_time: i64,
    moving_time: Option<i64>,
    sport_type: Option<String>,
    #[serde(rename = "type")]
    kind: Option<String>,
    distance: Option<f64>,
    total_elevation_gain: Option<f64>,
    elev_high: Option<f64>,
    elev_low: Option<f64>,
    average_speed: Option<f64>,
    max_speed: Option<f64>,
    average_heartrate: Option<f64>,
    max_heartrate: Option<f64>,
    average_watts: Option<f64>,
    max_watts: Option<f64>,
    weighted_average_watts: Option<f64>,
    map: Option<PolylineMap>,
}

#[derive(Debug, Deserialize)]
struct Athlete {
    sex: Option<String>,
}

/// What the streams of an activity need of it.
#[derive(Debug, Clone)]
pub(super) struct Session {
    /// The activity id, as text.
    pub id: String,
    /// Its sport slug.
    pub sport: String,
    /// Its start.
    pub start: DateTime<Utc>,
    /// Its offset.
    pub zone: FixedOffset,
}

impl Session {
    /// The instant `seconds` after the start, as it travels: RFC 3339 in the activity's offset.
    pub fn at(&self, seconds: i64) -> String {
        (self.start + TimeDelta::seconds(seconds))
            .with_timezone(&self.zone)
            .to_rfc3339_opts(SecondsFormat::AutoSi, false)
    }
}

/// `MountainBikeRide` → (`mountain_bike_ride`, `Mountain bike ride`).
pub(super) fn sport(kind: &str) -> (String, String) {
    let mut slug = String::new();
    for (i, c) in kind.chars().enumerate() {
        if c.is_uppercase() && i > 0 {
            slug.push('_');
        }
        slug.extend(c.to_lowercase());
    }
    let words = slug.replace('_', " ");
    let mut chars = words.chars();
    let name = match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => words,
    };
    (slug, name)
}

/// Rounds a float to the integer an int64 column holds; `None` for non-finite values.
fn round(v: f64) -> Option<i64> {
    v.is_finite().then(|| v.round() as i64)
}

impl Body {
    /// Counts and logs a malformed document.
    pub(super) fn malformed(&mut self, resource: &str, record: &Value, why: &str) {
        let id = record
            .get("id")
            .map_or_else(|| "?".into(), Value::to_string);
        tracing::warn!(
            provider = "strava",
            resource,
            id,
            error = why,
            "skipped a malformed provider record"
        );
        self.skipped += 1;
    }

    /// One activity, with its streams when they were read.
    pub(super) fn activity(&mut self, record: &Value, stream_set: Option<&Value>, wanted: Wanted) {
        let a = match Activity::deserialize(record) {
            Ok(a) => a,
            Err(e) => return self.malformed("activity", record, &e.to_string()),
        };
        if a.elapsed_time < 0 {
            return self.malformed("activity", record, "elapsed_time is negative");
        }
        let Some(kind) = a.sport_type.as_deref().or(a.kind.as_deref()) else {
            return self.malformed("activity", record, "neither sport_type nor type");
        };
        let Some(zone) = clock_offset(a.start_date, a.start_date_local.naive_utc())
            .and_then(|s| i32::try_from(s).ok())
            .and_then(FixedOffset::east_opt)
        else {
            return self.malformed("activity", record, "start_date_local is beyond ±18 h");
        };
        let (slug, name) = sport(kind);
        let session = Session {
            id: a.id.to_string(),
            sport: slug.clone(),
            start: a.start_date,
            zone,
        };
        let power = match stream_set {
            Some(set) => streams::samples(self, record, set, &session, wanted),
            None => None,
        };
        if !wanted.workouts {
            return;
        }
        let mut row = Map::new();
        row.insert("id".into(), session.id.clone().into());
        row.insert("time_start".into(), session.at(0).into());
        row.insert("time_end".into(), session.at(a.elapsed_time).into());
        put(&mut row, "title", a.name);
        row.insert("sport".into(), json!({"name": name, "slug": slug}));
        put(&mut row, "moving_time", a.moving_time);
        put(&mut row, "distance", a.distance.map(num));
        put(
            &mut row,
            "total_elevation_gain",
            a.total_elevation_gain.map(num),
        );
        put(&mut row, "elev_high", a.elev_high.map(num));
        put(&mut row, "elev_low", a.elev_low.map(num));
        put(&mut row, "average_speed", a.average_speed.map(num));
        put(&mut row, "max_speed", a.max_speed.map(num));
        put(&mut row, "average_hr", a.average_heartrate.and_then(round));
        put(&mut row, "max_hr", a.max_heartrate.and_then(round));
        let (mean, max) = match (a.average_watts, a.max_watts, power) {
            (None, None, Some((mean, max))) => (Some(mean), Some(max)),
            (mean, max, _) => (mean, max),
        };
        put(&mut row, "average_watts", mean.map(num));
        put(&mut row, "max_watts", max.map(num));
        put(
            &mut row,
            "weighted_average_watts",
            a.weighted_average_watts.map(num),
        );
        if let Some(polyline) = a.map.and_then(|m| m.summary_polyline)
            && !polyline.is_empty()
        {
            row.insert("map".into(), json!({ "summary_polyline": polyline }));
        }
        row.insert("provider_id".into(), session.id.into());
        row.insert("timezone_offset".into(), zone.local_minus_utc().into());
        self.workouts.push(Value::Object(row).into());
    }

    /// The athlete: the profile's sex (`M`, `F`); nothing else of it has a field.
    pub(super) fn athlete(&mut self, record: &Value) {
        let athlete = match Athlete::deserialize(record) {
            Ok(a) => a,
            Err(e) => return self.malformed("athlete", record, &e.to_string()),
        };
        let sex = match athlete.sex.as_deref() {
            Some("M") => "male",
            Some("F") => "female",
            _ => return,
        };
        self.profile = Some(json!({ "sex": sex }).into());
    }

    /// The push body, with only the parts that received records.
    pub(super) fn finish(self) -> Pulled {
        crate::sync::body::pulled(
            ("strava", "app"),
            vec![(Table::Workout, self.workouts)],
            self.profile,
            vec![
                ("heartrate", self.heartrate.into()),
                ("distance", self.distance.into()),
            ],
            self.skipped,
        )
    }
}
