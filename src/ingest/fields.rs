//! Which JSON field feeds which column (`data-model.md`: the bracketed names differ from the
//! columns; where the spec names no JSON field the column name is the field), the push key of
//! each table, and the sane range and allowed values of every field.

use crate::schema::Table;

/// The push-body and getter key of a table (`sleep`, `activity`, `workouts`, `body`, `meals`,
/// `profile`).
pub fn push_key(table: Table) -> &'static str {
    match table {
        Table::Sleep => "sleep",
        Table::Activity => "activity",
        Table::Workout => "workouts",
        Table::Body => "body",
        Table::Meal => "meals",
        Table::Profile => "profile",
    }
}

/// The JSON field of a column.
pub(crate) fn json_name(table: Table, column: &'static str) -> &'static str {
    if table != Table::Sleep {
        return column;
    }
    match column {
        "session_start" => "bedtime_start",
        "session_end" => "bedtime_stop",
        "duration_second" => "duration",
        "stage_asleep_second" => "total",
        "stage_awake_second" => "awake",
        "stage_light_second" => "light",
        "stage_rem_second" => "rem",
        "stage_deep_second" => "deep",
        "latency_second" => "latency",
        "heart_rate_minimum" => "hr_lowest",
        "heart_rate_mean" => "hr_average",
        "heart_rate_maximum" => "hr_highest",
        "heart_rate_resting" => "hr_resting",
        "heart_rate_dip" => "hr_dip",
        "hrv_mean_rmssd" => "average_hrv",
        "hrv_mean_sdnn" => "hrv_sdnn",
        "skin_temperature_delta" => "temperature_delta",
        "time_zone" => "timezone_offset",
        other => other,
    }
}

/// Fields the getters render that a push may carry but that are not stored from the record:
/// accepted and ignored, so a getter's output can be pushed back unchanged.
pub(crate) const READ_ONLY: &[&str] = &[
    "user_id",
    "calendar_date",
    "source",
    "created_at",
    "updated_at",
];

/// Source types accepted on push: the catalogue's closed list.
pub use crate::providers::SOURCE_TYPES;

/// The allowed values of enumerated string columns.
pub(crate) fn allowed_values(table: Table, column: &str) -> Option<&'static [&'static str]> {
    match (table, column) {
        (Table::Sleep, "state") => Some(&["tentative", "confirmed"]),
        (Table::Sleep, "type") => {
            Some(&["long_sleep", "short_sleep", "acknowledged_nap", "unknown"])
        }
        (Table::Profile, "gender") => Some(&["female", "male", "other", "unknown"]),
        (Table::Profile, "sex") => Some(&["female", "male", "other"]),
        _ => None,
    }
}

const ANY: (f64, f64) = (f64::NEG_INFINITY, f64::INFINITY);
const NON_NEGATIVE: (f64, f64) = (0.0, f64::INFINITY);
const PERCENT: (f64, f64) = (0.0, 100.0);
const HEART_RATE: (f64, f64) = (0.0, 300.0);

/// The sane range of a numeric column; everything not listed is a non-negative quantity.
pub(crate) fn range(column: &str) -> (f64, f64) {
    match column {
        c if c.starts_with("heart_rate_zone_") => NON_NEGATIVE,
        "heart_rate_dip" => (-100.0, 100.0),
        c if c.starts_with("heart_rate_") => HEART_RATE,
        "efficiency" => PERCENT,
        c if c.ends_with("_percentage") => PERCENT,
        "score" => (1.0, 100.0),
        "hrv_mean_rmssd" | "hrv_mean_sdnn" => (0.0, 1000.0),
        "skin_temperature" => (20.0, 45.0),
        "skin_temperature_delta" => (-10.0, 10.0),
        "respiratory_rate" => (0.0, 100.0),
        "time_zone_offset" => (-64800.0, 64800.0),
        "elevation_maximum_meter" | "elevation_minimum_meter" => (-500.0, 9000.0),
        "height_centimeter" => (0.0, 300.0),
        "weight_kilogram" | "lean_body_mass_kilogram" => (0.0, 700.0),
        "body_mass_index" => (0.0, 200.0),
        "waist_circumference_centimeter" => (0.0, 500.0),
        _ => NON_NEGATIVE,
    }
}

/// The sane range of a timeseries value, by resource and unit.
pub(crate) fn sample_range(resource: &str, unit: &str) -> (f64, f64) {
    match (resource, unit) {
        ("body_temperature_delta", _) => (-10.0, 10.0),
        ("electrocardiogram_voltage", _) => ANY,
        (_, "bpm") => HEART_RATE,
        (_, "mmol/L") => (0.0, 50.0),
        (_, "%") | (_, "0-100") => PERCENT,
        (_, "°C") => (20.0, 45.0),
        (_, "mmHg") => (0.0, 400.0),
        ("hrv", _) => (0.0, 1000.0),
        _ => NON_NEGATIVE,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sleep_fields_use_their_json_names_and_others_the_column() {
        assert_eq!(json_name(Table::Sleep, "session_start"), "bedtime_start");
        assert_eq!(json_name(Table::Sleep, "time_zone"), "timezone_offset");
        assert_eq!(json_name(Table::Workout, "session_start"), "session_start");
        let names: std::collections::HashSet<_> = Table::Sleep
            .columns()
            .iter()
            .map(|c| json_name(Table::Sleep, c.name))
            .collect();
        assert_eq!(names.len(), Table::Sleep.columns().len());
    }

    #[test]
    fn ranges_follow_the_quantity() {
        assert_eq!(range("heart_rate_mean"), HEART_RATE);
        assert_eq!(range("heart_rate_zone_3"), NON_NEGATIVE);
        assert_eq!(range("fat_mass_percentage"), PERCENT);
        assert_eq!(sample_range("glucose", "mmol/L"), (0.0, 50.0));
        assert_eq!(sample_range("steps", "count"), NON_NEGATIVE);
    }
}
