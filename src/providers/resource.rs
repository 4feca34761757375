//! The kinds of data a connector can pull. They live in the catalogue, below `sync`, so that
//! `data` (introspection) and the catalogue name them without importing `sync`.

use serde::{Deserialize, Serialize};

/// A kind of data a connector can pull, named after the push-body part (or timeseries
/// resource) it fills.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Resource {
    /// Sleep sessions: the `sleep` table.
    Sleep,
    /// Daily activity summaries: the `activity` table.
    Activity,
    /// Workout sessions: the `workouts` table.
    Workouts,
    /// Heart-rate samples: the `heartrate` timeseries (bpm).
    Heartrate,
    /// Heart-rate variability samples: the `hrv` timeseries (ms, RMSSD).
    Hrv,
    /// Blood-oxygen saturation: the `blood_oxygen` timeseries (%).
    BloodOxygen,
    /// Glucose readings (a CGM's estimated glucose values): the `glucose` timeseries (mmol/L).
    Glucose,
    /// Body measurements (a scale's weigh-ins): the `body` table and the `weight` and `fat`
    /// timeseries.
    Body,
    /// The user's profile (not windowed: the latest the provider has).
    Profile,
}

impl Resource {
    /// Every resource, in the order a pull fetches them.
    pub const ALL: [Resource; 9] = [
        Resource::Sleep,
        Resource::Activity,
        Resource::Workouts,
        Resource::Heartrate,
        Resource::Hrv,
        Resource::BloodOxygen,
        Resource::Glucose,
        Resource::Body,
        Resource::Profile,
    ];
}
