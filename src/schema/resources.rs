//! The timeseries resources (`aggregate-dsl.md` §2.2, `data-model.md` units): which family each
//! belongs to, and so which fields it has, and the unit its values are stored in.

/// A timeseries family: resources of one family share a storage schema and a field set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Family {
    /// Point samples with a `value` (heart rate, glucose, ...).
    Discrete,
    /// Samples over an interval with `duration` and `value` (steps, calories, ...).
    Interval,
    /// Insulin injections.
    Insulin,
    /// Blood pressure: `systolic` and `diastolic`, no `value`.
    BloodPressure,
    /// Body temperatures with a `sensor_location`.
    Temperature,
    /// Workout duration with an `intensity`.
    WorkoutDuration,
    /// Free-text notes with `content` and `tags`.
    Note,
}

impl Family {
    /// Every family, in a fixed order.
    pub const ALL: [Family; 7] = [
        Family::Discrete,
        Family::Interval,
        Family::Insulin,
        Family::BloodPressure,
        Family::Temperature,
        Family::WorkoutDuration,
        Family::Note,
    ];

    /// The fields a query may name on a resource of this family, common ones first.
    pub fn fields(self) -> &'static [&'static str] {
        /// The common fields every family starts with, then the family's own.
        macro_rules! common_and {
            ($($field:literal),*) => {
                &["source_provider", "source_type", "source_app_id", "source_workout_id",
                  "source_sport", "timezone_offset", "type", $($field),*]
            };
        }
        match self {
            Family::Discrete => common_and!("value"),
            Family::Interval => common_and!("duration", "value"),
            Family::Insulin => common_and!(
                "duration",
                "value",
                "delivery_mode",
                "delivery_form",
                "bolus_purpose"
            ),
            Family::BloodPressure => common_and!("systolic", "diastolic"),
            Family::Temperature => common_and!("duration", "value", "sensor_location"),
            Family::WorkoutDuration => common_and!("duration", "value", "intensity"),
            Family::Note => common_and!("content", "tags"),
        }
    }

    /// Whether samples of this family span an interval (`end`, `duration`).
    pub fn is_interval(self) -> bool {
        !matches!(self, Family::Discrete | Family::BloodPressure)
    }
}

/// One timeseries resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Resource {
    /// The resource name used in paths, push bodies and queries.
    pub name: &'static str,
    /// Its family.
    pub family: Family,
    /// The unit values are stored in.
    pub unit: &'static str,
}

const fn r(name: &'static str, family: Family, unit: &'static str) -> Resource {
    Resource { name, family, unit }
}

use Family::{BloodPressure, Discrete, Insulin, Interval, Note, Temperature, WorkoutDuration};

/// Every timeseries resource, in the order of `aggregate-dsl.md` §2.2.
pub const RESOURCES: &[Resource] = &[
    r("glucose", Discrete, "mmol/L"),
    r("heartrate", Discrete, "bpm"),
    r("hrv", Discrete, "ms"),
    r("ige", Discrete, "FSU"),
    r("igg", Discrete, "FSU"),
    r("cholesterol", Discrete, "mmol/L"),
    r("weight", Discrete, "kg"),
    r("fat", Discrete, "%"),
    r("blood_oxygen", Discrete, "%"),
    r("electrocardiogram_voltage", Discrete, "mV"),
    r("respiratory_rate", Discrete, "breaths/min"),
    r("stress_level", Discrete, "0-100"),
    r("steps", Interval, "count"),
    r("distance", Interval, "m"),
    r("vo2_max", Interval, "mL/kg/min"),
    r("heart_rate_alert", Interval, "count"),
    r("stand_hour", Interval, "count"),
    r("sleep_breathing_disturbance", Interval, "count"),
    r("water", Interval, "mL"),
    r("caffeine", Interval, "g"),
    r("mindfulness_minutes", Interval, "min"),
    r("calories_active", Interval, "kcal"),
    r("floors_climbed", Interval, "count"),
    r("calories_basal", Interval, "kcal"),
    r("afib_burden", Interval, "%"),
    r("stand_duration", Interval, "min"),
    r("sleep_apnea_alert", Interval, "count"),
    r("wheelchair_push", Interval, "count"),
    r("forced_expiratory_volume_1", Interval, "L"),
    r("forced_vital_capacity", Interval, "L"),
    r("peak_expiratory_flow_rate", Interval, "L/min"),
    r("inhaler_usage", Interval, "count"),
    r("fall", Interval, "count"),
    r("uv_exposure", Interval, "index"),
    r("daylight_exposure", Interval, "min"),
    r("handwashing", Interval, "count"),
    r("basal_body_temperature", Interval, "°C"),
    r("body_mass_index", Interval, "index"),
    r("lean_body_mass", Interval, "kg"),
    r("waist_circumference", Interval, "cm"),
    r("heart_rate_recovery_one_minute", Interval, "count"),
    r("workout_swimming_stroke", Interval, "count"),
    r("workout_distance", Interval, "m"),
    r("carbohydrates", Interval, "g"),
    r("insulin_injection", Insulin, "unit"),
    r("blood_pressure", BloodPressure, "mmHg"),
    r("body_temperature", Temperature, "°C"),
    r("body_temperature_delta", Temperature, "°C"),
    r("workout_duration", WorkoutDuration, "min"),
    r("note", Note, "count"),
];

/// Looks a resource up by name.
pub fn resource(name: &str) -> Option<Resource> {
    RESOURCES.iter().copied().find(|r| r.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resource_names_are_unique_and_found() {
        for (i, a) in RESOURCES.iter().enumerate() {
            assert_eq!(resource(a.name), Some(*a));
            assert!(
                RESOURCES[i + 1..].iter().all(|b| b.name != a.name),
                "{}",
                a.name
            );
        }
        assert_eq!(
            resource("heartrate").map(|r| r.family),
            Some(Family::Discrete)
        );
        assert_eq!(
            resource("blood_pressure").map(|r| r.family.is_interval()),
            Some(false)
        );
        assert!(resource("heart_rate").is_none());
    }
}
