//! Peloton workouts (`/api/user/{id}/workouts?joins=ride`, `data[]`) to `workouts` rows of one
//! push body (`data-model.md`), source `{"type": "exercise_machine"}`.
//!
//! | Peloton | `workouts` row |
//! |---|---|
//! | `id` | `id` and `provider_id`: a re-pull replaces |
//! | `start_time`, `end_time` (unix s) | `time_start`, `time_end` (UTC) |
//! | `end_time − start_time` | `moving_time` (s) |
//! | `fitness_discipline` | `sport.name`, `sport.slug` ([`sport`]) |
//! | `ride.title` | `title` |
//! | `total_work` (J) ÷ `moving_time` | `average_watts` (W), when there was work |
//!
//! A record that does not read as that shape (no string `id`, a `start_time` that is not a
//! number, an end before its start) is skipped, counted and logged; its neighbours are kept.
//! Workouts still in progress (`end_time` null) and those starting outside the window are left
//! out, not counted.
//!
//! Decisions where the community's notes are silent:
//! - Source type `exercise_machine`, the catalogue's for Peloton: the push body has one source,
//!   and the few classes taken in Peloton's phone app travel with it.
//! - Instants are written in UTC: the list gives no offset of its own.
//! - `total_work` is the class's output in joules (the web app shows it in kJ); its mean over
//!   the workout's seconds is the mean power, kept to 0.1 W. A `total_work` of 0 (yoga,
//!   meditation: nothing measured) gives no power.
//! - A discipline not in [`sport`]'s table keeps Peloton's own slug, its words capitalised as
//!   the name (logged).

use chrono::{DateTime, SecondsFormat, Utc};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::ingest::PulledRecord;
use crate::schema::Table;
use crate::sync::body::{num, put};
use crate::sync::{Pulled, Window};

/// A push body being filled.
#[derive(Debug)]
pub(crate) struct Body {
    window: Option<Window>,
    workouts: Vec<PulledRecord>,
    skipped: usize,
}

#[derive(Debug, Deserialize)]
struct Workout {
    id: String,
    start_time: i64,
    end_time: Option<i64>,
    fitness_discipline: Option<String>,
    total_work: Option<f64>,
    ride: Option<Ride>,
}

#[derive(Debug, Deserialize)]
struct Ride {
    title: Option<String>,
}

/// The name and slug of a Peloton `fitness_discipline`.
pub(super) fn sport(discipline: &str) -> Option<(&'static str, &'static str)> {
    Some(match discipline {
        "cycling" => ("Indoor cycling", "indoor_cycling"),
        "running" => ("Running", "running"),
        "walking" => ("Walking", "walking"),
        "strength" => ("Strength training", "strength_training"),
        "yoga" => ("Yoga", "yoga"),
        "meditation" => ("Meditation", "meditation"),
        "stretching" => ("Stretching", "stretching"),
        "cardio" => ("Cardio", "cardio"),
        "bike_bootcamp" => ("Bike bootcamp", "bike_bootcamp"),
        "circuit" => ("Tread bootcamp", "tread_bootcamp"),
        "caesar" => ("Rowing", "rowing"),
        "caesar_bootcamp" => ("Row bootcamp", "row_bootcamp"),
        _ => return None,
    })
}

/// An instant as the push body takes it: RFC 3339 in UTC.
fn stamp(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// Words of a slug, the first capitalised (`bike_bootcamp` → `Bike bootcamp`).
fn words(slug: &str) -> String {
    let spaced = slug.replace('_', " ");
    let mut chars = spaced.chars();
    chars.next().map_or_else(String::new, |first| {
        first.to_uppercase().chain(chars).collect()
    })
}

impl Body {
    /// An empty body, cut to `window` when there is one.
    pub(crate) fn new(window: Option<Window>) -> Body {
        Body {
            window,
            workouts: Vec::new(),
            skipped: 0,
        }
    }

    /// Counts and logs a malformed record.
    fn malformed(&mut self, record: &Value, why: &str) {
        let who = ("peloton", ["id"].as_slice());
        crate::sync::body::skip::<()>(&mut self.skipped, who, "workouts", record, why);
    }

    /// Workouts (a workouts page's `data[]`).
    pub(crate) fn workouts(&mut self, data: &[Value]) {
        for record in data {
            let w = match Workout::deserialize(record) {
                Ok(w) => w,
                Err(e) => {
                    self.malformed(record, &e.to_string());
                    continue;
                }
            };
            let Some(end_time) = w.end_time else {
                continue;
            };
            let (Some(start), Some(end)) = (
                DateTime::<Utc>::from_timestamp(w.start_time, 0),
                DateTime::<Utc>::from_timestamp(end_time, 0),
            ) else {
                self.malformed(record, "start_time or end_time out of range");
                continue;
            };
            if end < start {
                self.malformed(record, "end_time is before start_time");
                continue;
            }
            if self.window.is_some_and(|win| !win.contains(start)) {
                continue;
            }
            let discipline = w.fitness_discipline.as_deref().unwrap_or("other");
            let (name, slug) = match sport(discipline) {
                Some((name, slug)) => (name.to_owned(), slug.to_owned()),
                None => {
                    tracing::warn!(
                        provider = "peloton",
                        discipline,
                        "a fitness discipline not in the table: kept as Peloton names it"
                    );
                    (words(discipline), discipline.to_owned())
                }
            };
            let moving = end_time - w.start_time;
            let power = w
                .total_work
                .filter(|j| j.is_finite() && *j > 0.0 && moving > 0)
                .map(|j| (j / moving as f64 * 10.0).round() / 10.0);
            let title = w.ride.and_then(|r| r.title).filter(|t| !t.is_empty());
            let mut row = Map::new();
            row.insert("id".into(), w.id.clone().into());
            row.insert("time_start".into(), stamp(start).into());
            row.insert("time_end".into(), stamp(end).into());
            put(&mut row, "title", title);
            row.insert("sport".into(), json!({"name": name, "slug": slug}));
            row.insert("moving_time".into(), moving.into());
            put(&mut row, "average_watts", power.map(num));
            row.insert("provider_id".into(), w.id.into());
            self.workouts
                .push(crate::sync::body::with_payload(Value::Object(row), record));
        }
    }

    /// The push body, with only the parts that received records.
    pub(crate) fn finish(self) -> Pulled {
        crate::sync::body::pulled(
            ("peloton", "exercise_machine"),
            vec![(Table::Workout, self.workouts)],
            None,
            Vec::new(),
            self.skipped,
        )
    }
}
