//! The demo data generator: deterministic synthetic push bodies for the demo-capable providers
//! (oura, fitbit, freestyle_libre, apple_health_kit), for users connected in demo mode, tests
//! and benches.
//!
//! Bodies are `serde_json::Value`s in exactly the push shape (one per provider and day), so they
//! go through [`parse_push`](crate::ingest::parse_push) like any client's data. The same
//! (provider, persona, seed, dates) always yield the same bytes: every number comes from a
//! ChaCha8 generator seeded by (seed, date, purpose).
//!
//! The user's life (zone, nights, sleep stages, steps, workouts, meals) is derived from
//! (seed, persona, date) only, never from the provider, so a ring and a watch of one user see
//! the same nights and a CGM sees the meals the watch's day had. Each provider adds its own
//! sampling and noise and skips about one day in twenty (device not worn or charging).
//!
//! Decisions: days are local calendar days in the persona's zone of that day; the night of a
//! day is the one ending on its morning; the profile is in the first body of a range.

mod bodies;
mod plan;
mod records;

use chrono::{Duration, NaiveDate};
use serde_json::Value;

use crate::providers;

/// The longest range generated in one call (about three years).
pub const MAX_DAYS: u32 = 1100;

/// Whose life the data describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Persona {
    /// Lives in London (DST in late March and late October), sleeps later at weekends,
    /// trains about twice a week.
    Regular,
    /// Lives in Berlin and spends 8 of every 42 days in New York: offsets change on each trip
    /// and at both zones' DST changes.
    Traveller,
    /// Lives in Denver, trains most days, lower resting heart rate.
    Athlete,
}

impl Persona {
    /// Every persona.
    pub const ALL: [Persona; 3] = [Persona::Regular, Persona::Traveller, Persona::Athlete];

    /// The persona's name in requests and storage (`regular`, `traveller`, `athlete`).
    pub fn name(self) -> &'static str {
        match self {
            Persona::Regular => "regular",
            Persona::Traveller => "traveller",
            Persona::Athlete => "athlete",
        }
    }

    /// The persona named `name` (see [`Persona::name`]).
    pub fn from_name(name: &str) -> Option<Persona> {
        Persona::ALL.into_iter().find(|p| p.name() == name)
    }
}

/// Why no data could be generated.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DemoError {
    /// The slug is not a provider of the catalogue.
    #[error("unknown provider {0:?}")]
    UnknownProvider(String),
    /// The provider exists but has no demo mode.
    #[error("provider {0:?} has no demo data")]
    NotDemoProvider(String),
    /// `days` is 0 or above [`MAX_DAYS`].
    #[error("days must be between 1 and {MAX_DAYS}, got {0}")]
    DayCount(u32),
}

/// Whether connecting the provider in demo mode generates data.
pub fn is_demo_provider(slug: &str) -> bool {
    providers::provider(slug).is_some_and(|p| p.demo)
}

/// Generates push bodies for `days` local days ending `end` (inclusive), oldest first; days the
/// device was not worn have no body.
pub fn generate(
    provider: &str,
    persona: Persona,
    seed: u64,
    end: NaiveDate,
    days: u32,
) -> Result<Vec<Value>, DemoError> {
    let Some(entry) = providers::provider(provider) else {
        return Err(DemoError::UnknownProvider(provider.to_owned()));
    };
    if !entry.demo {
        return Err(DemoError::NotDemoProvider(provider.to_owned()));
    }
    if days == 0 || days > MAX_DAYS {
        return Err(DemoError::DayCount(days));
    }
    let first = end - Duration::days(i64::from(days) - 1);
    let mut out = Vec::with_capacity(days as usize);
    for date in first.iter_days().take(days as usize) {
        let spec = bodies::Spec {
            provider: entry.slug,
            persona,
            seed,
            date,
            with_profile: out.is_empty(),
        };
        out.extend(bodies::body(&spec));
    }
    Ok(out)
}
