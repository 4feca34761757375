//! Withings workouts (`/v2/measure?action=getworkouts`, `body.series[]`) to `workouts` rows.
//! The shared rules are in `normalise.rs`.
//!
//! A workout has `id`, `category` (the sport, a code of the reference's table), `timezone`,
//! `startdate` and `enddate` (unix seconds) and `data{...}` with the `data_fields` asked for:
//! `calories` (active kcal), `distance` and `elevation` (m), `steps`, `hr_average`, `hr_min`,
//! `hr_max` (bpm), `pause_duration` (s).
//!
//! Decisions where the documentation is silent:
//! - `id` and `provider_id` are Withings' `id`; `sport.name` is the reference's name of the
//!   category, `sport.slug` that name in snake case; a code not in [`sport`]'s table is
//!   `Other`/`other` (logged).
//! - `moving_time` is `enddate − startdate` less `pause_duration`; heart rates of 0 (no
//!   reading) are left out. Withings' `hr_zone_0…3` (light, moderate, intense, maximal zones
//!   of its own) do not match the data model's zones (shares of the maximum heart rate), so
//!   they are not kept.
//! - A workout is kept when its start lies in the window (the `workouts` index).

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::normalise::{Body, instant, num, put, stamp, zone_of};

#[derive(Debug, Deserialize)]
struct Workout {
    id: u64,
    category: i64,
    timezone: Option<String>,
    startdate: i64,
    enddate: i64,
    #[serde(default)]
    data: WorkoutData,
}

#[derive(Debug, Default, Deserialize)]
struct WorkoutData {
    calories: Option<f64>,
    distance: Option<f64>,
    elevation: Option<f64>,
    steps: Option<i64>,
    hr_average: Option<f64>,
    hr_min: Option<f64>,
    hr_max: Option<f64>,
    pause_duration: Option<i64>,
}

/// The name and slug of a Withings workout category (the reference's table, its common part).
pub(super) fn sport(category: i64) -> Option<(&'static str, &'static str)> {
    Some(match category {
        1 => ("Walk", "walk"),
        2 => ("Run", "run"),
        3 => ("Hiking", "hiking"),
        4 => ("Skating", "skating"),
        5 => ("BMX", "bmx"),
        6 => ("Bicycling", "bicycling"),
        7 => ("Swimming", "swimming"),
        8 => ("Surfing", "surfing"),
        9 => ("Kitesurfing", "kitesurfing"),
        10 => ("Windsurfing", "windsurfing"),
        11 => ("Bodyboard", "bodyboard"),
        12 => ("Tennis", "tennis"),
        13 => ("Table tennis", "table_tennis"),
        14 => ("Squash", "squash"),
        15 => ("Badminton", "badminton"),
        16 => ("Lift weights", "lift_weights"),
        17 => ("Fitness", "fitness"),
        18 => ("Elliptical", "elliptical"),
        19 => ("Pilates", "pilates"),
        20 => ("Basket-ball", "basketball"),
        21 => ("Soccer", "soccer"),
        22 => ("Football", "football"),
        23 => ("Rugby", "rugby"),
        24 => ("Volley-ball", "volleyball"),
        25 => ("Waterpolo", "waterpolo"),
        26 => ("Horse riding", "horse_riding"),
        27 => ("Golf", "golf"),
        28 => ("Yoga", "yoga"),
        29 => ("Dancing", "dancing"),
        30 => ("Boxing", "boxing"),
        31 => ("Fencing", "fencing"),
        32 => ("Wrestling", "wrestling"),
        33 => ("Martial arts", "martial_arts"),
        34 => ("Skiing", "skiing"),
        35 => ("Snowboarding", "snowboarding"),
        36 => ("Other", "other"),
        187 => ("Rowing", "rowing"),
        188 => ("Zumba", "zumba"),
        191 => ("Baseball", "baseball"),
        192 => ("Handball", "handball"),
        193 => ("Hockey", "hockey"),
        194 => ("Ice hockey", "ice_hockey"),
        195 => ("Climbing", "climbing"),
        196 => ("Ice skating", "ice_skating"),
        272 => ("Multi-sport", "multi_sport"),
        306 => ("Indoor walk", "indoor_walk"),
        307 => ("Indoor running", "indoor_running"),
        308 => ("Indoor cycling", "indoor_cycling"),
        498 => ("Trail Running", "trail_running"),
        523 => ("Mountain Biking", "mountain_biking"),
        550 => ("HIIT", "hiit"),
        566 => ("Nordic Walking", "nordic_walking"),
        _ => return None,
    })
}

/// A heart rate worth keeping: a reading (not Withings' 0 for none), as an integer.
fn bpm(v: Option<f64>) -> Option<i64> {
    v.filter(|b| b.is_finite() && *b > 0.0)
        .map(|b| b.round() as i64)
}

impl Body {
    /// Workouts (`getworkouts` `series[]`).
    pub(crate) fn workouts(&mut self, series: &[Value]) {
        for record in series {
            let Some(w) = self.read::<Workout>("workouts", record) else {
                continue;
            };
            let zone = zone_of(w.timezone.as_deref());
            let (Some(start), Some(end)) = (instant(zone, w.startdate), instant(zone, w.enddate))
            else {
                self.malformed::<()>("workouts", record, "startdate or enddate out of range");
                continue;
            };
            if end < start {
                self.malformed::<()>("workouts", record, "enddate is before startdate");
                continue;
            }
            if !self.in_window(start) {
                continue;
            }
            let (name, slug) = sport(w.category).unwrap_or_else(|| {
                tracing::warn!(
                    provider = "withings",
                    category = w.category,
                    "a workout category not in the table: Other"
                );
                ("Other", "other")
            });
            let d = &w.data;
            let moving = (w.enddate - w.startdate) - d.pause_duration.unwrap_or(0).max(0);
            let mut row = Map::new();
            row.insert("id".into(), w.id.to_string().into());
            row.insert("time_start".into(), stamp(start).into());
            row.insert("time_end".into(), stamp(end).into());
            row.insert("sport".into(), json!({"name": name, "slug": slug}));
            put(&mut row, "moving_time", (moving >= 0).then_some(moving));
            put(&mut row, "calories", d.calories.map(num));
            put(&mut row, "distance", d.distance.map(num));
            put(&mut row, "total_elevation_gain", d.elevation.map(num));
            put(&mut row, "steps", d.steps);
            put(&mut row, "average_hr", bpm(d.hr_average));
            put(&mut row, "heart_rate_minimum", bpm(d.hr_min));
            put(&mut row, "max_hr", bpm(d.hr_max));
            row.insert("provider_id".into(), w.id.to_string().into());
            row.insert("time_zone".into(), zone.name().into());
            self.workouts
                .push(crate::sync::body::with_payload(Value::Object(row), record));
        }
    }
}
