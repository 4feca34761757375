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
        Table::MenstrualCycle => "menstrual_cycle",
    }
}

/// Where a column lives on the wire: a path of object keys (`heart_rate.avg_bpm`), and the
/// factor from the wire's unit to the column's (`column = wire × factor`: activity intensities
/// travel in minutes and are stored in seconds).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Wire {
    /// Dot-separated keys from the record to the value.
    pub(crate) path: &'static str,
    /// Column value per wire unit.
    pub(crate) factor: f64,
}

const fn w(path: &'static str) -> Option<Wire> {
    Some(Wire { path, factor: 1.0 })
}

const fn scaled(path: &'static str, factor: f64) -> Option<Wire> {
    Some(Wire { path, factor })
}

/// The wire place of a column: the reference service's field names and nesting
/// (`data-model.md` §Wire names). `None` for the columns the record code reads and renders
/// itself (indexes kept as dates, hypnogram, heart-rate zones, zones).
pub(crate) fn wire(table: Table, column: &'static str) -> Option<Wire> {
    match (table, column) {
        (_, "id") => None,
        (Table::Sleep, c) => sleep_wire(c),
        (Table::Activity, c) => activity_wire(c),
        (Table::Workout, c) => workout_wire(c),
        (Table::Body, "weight_kilogram") => w("weight"),
        (Table::Body, "fat_mass_percentage") => w("fat"),
        (Table::Meal, c) => meal_wire(c),
        (Table::Profile, "height_centimeter") => w("height"),
        (_, c) => w(c),
    }
}

fn sleep_wire(column: &'static str) -> Option<Wire> {
    match column {
        "session_start" => w("bedtime_start"),
        "session_end" => w("bedtime_stop"),
        "duration_second" => w("duration"),
        "stage_asleep_second" => w("total"),
        "stage_awake_second" => w("awake"),
        "stage_light_second" => w("light"),
        "stage_rem_second" => w("rem"),
        "stage_deep_second" => w("deep"),
        "latency_second" => w("latency"),
        "heart_rate_minimum" => w("hr_lowest"),
        "heart_rate_mean" => w("hr_average"),
        "heart_rate_maximum" => w("hr_highest"),
        "heart_rate_resting" => w("hr_resting"),
        "heart_rate_dip" => w("hr_dip"),
        "hrv_mean_rmssd" => w("average_hrv"),
        "hrv_mean_sdnn" => w("hrv_sdnn"),
        "skin_temperature_delta" => w("temperature_delta"),
        // Read from, and rendered as, `timezone_offset` by the sleep code.
        "time_zone" => None,
        other => w(other),
    }
}

fn activity_wire(column: &'static str) -> Option<Wire> {
    match column {
        "date" => None,
        "distance_meter" => w("distance"),
        "intensity_low_second" => scaled("low", 60.0),
        "intensity_medium_second" => scaled("medium", 60.0),
        "intensity_high_second" => scaled("high", 60.0),
        "heart_rate_mean" => w("heart_rate.avg_bpm"),
        "heart_rate_minimum" => w("heart_rate.min_bpm"),
        "heart_rate_maximum" => w("heart_rate.max_bpm"),
        "heart_rate_resting" => w("heart_rate.resting_bpm"),
        "heart_rate_mean_walking" => w("heart_rate.avg_walking_bpm"),
        "time_zone_offset" => w("timezone_offset"),
        other => w(other),
    }
}

fn workout_wire(column: &'static str) -> Option<Wire> {
    match column {
        "session_start" => w("time_start"),
        "session_end" => w("time_end"),
        "sport_name" => w("sport.name"),
        "sport_slug" => w("sport.slug"),
        "duration_active_second" => w("moving_time"),
        "heart_rate_mean" => w("average_hr"),
        "heart_rate_maximum" => w("max_hr"),
        c if c.starts_with("heart_rate_zone_") => None,
        "distance_meter" => w("distance"),
        "elevation_gain_meter" => w("total_elevation_gain"),
        "elevation_maximum_meter" => w("elev_high"),
        "elevation_minimum_meter" => w("elev_low"),
        "speed_mean" => w("average_speed"),
        "speed_maximum" => w("max_speed"),
        "power_mean" => w("average_watts"),
        "power_maximum" => w("max_watts"),
        "power_weighted_mean" => w("weighted_average_watts"),
        "map_polyline" => w("map.polyline"),
        "map_summary_polyline" => w("map.summary_polyline"),
        "external_id" => w("provider_id"),
        other => w(other),
    }
}

fn meal_wire(column: &'static str) -> Option<Wire> {
    Some(match column {
        "date" => return None,
        "name" => return w("name"),
        "calories" => return w("energy.value"),
        "carbohydrate_gram" => return w("macros.carbs"),
        "saturated_fat_gram" => return w("macros.fats.saturated"),
        "monounsaturated_fat_gram" => return w("macros.fats.monounsaturated"),
        "polyunsaturated_fat_gram" => return w("macros.fats.polyunsaturated"),
        "omega3_fat_gram" => return w("macros.fats.omega3"),
        "omega6_fat_gram" => return w("macros.fats.omega6"),
        "total_fat_gram" => return w("macros.fats.total"),
        // The reference gives sodium and potassium in grams, vitamins A, B12, D and K in
        // micrograms and folic acid in milligrams; the columns keep their own units.
        "sodium_milligram" => Wire {
            path: "micros.minerals.sodium",
            factor: 1000.0,
        },
        "potassium_milligram" => Wire {
            path: "micros.minerals.potassium",
            factor: 1000.0,
        },
        "vitamin_a_milligram" => Wire {
            path: "micros.vitamins.vitamin_a",
            factor: 0.001,
        },
        "folic_acid_microgram" => Wire {
            path: "micros.vitamins.folic_acid",
            factor: 1000.0,
        },
        other => return meal_nutrient(other),
    })
}

/// Macros in grams and the remaining micros, whose wire unit is the column's.
fn meal_nutrient(column: &'static str) -> Option<Wire> {
    const MACROS: [(&str, &str); 6] = [
        ("protein_gram", "macros.protein"),
        ("alcohol_gram", "macros.alcohol"),
        ("water_gram", "macros.water"),
        ("fibre_gram", "macros.fibre"),
        ("sugar_gram", "macros.sugar"),
        ("cholesterol_gram", "macros.cholesterol"),
    ];
    const MICROS: [(&str, &str); 21] = [
        ("calcium_milligram", "micros.minerals.calcium"),
        ("phosphorus_milligram", "micros.minerals.phosphorus"),
        ("magnesium_milligram", "micros.minerals.magnesium"),
        ("iron_milligram", "micros.minerals.iron"),
        ("zinc_milligram", "micros.minerals.zinc"),
        ("fluoride_milligram", "micros.minerals.fluoride"),
        ("chloride_milligram", "micros.minerals.chloride"),
        ("vitamin_b1_milligram", "micros.vitamins.vitamin_b1"),
        ("riboflavin_milligram", "micros.vitamins.riboflavin"),
        ("niacin_milligram", "micros.vitamins.niacin"),
        (
            "pantothenic_acid_milligram",
            "micros.vitamins.pantothenic_acid",
        ),
        ("vitamin_b6_milligram", "micros.vitamins.vitamin_b6"),
        ("biotin_microgram", "micros.vitamins.biotin"),
        ("vitamin_b12_microgram", "micros.vitamins.vitamin_b12"),
        ("vitamin_c_milligram", "micros.vitamins.vitamin_c"),
        ("vitamin_d_microgram", "micros.vitamins.vitamin_d"),
        ("vitamin_e_milligram", "micros.vitamins.vitamin_e"),
        ("vitamin_k_microgram", "micros.vitamins.vitamin_k"),
        ("chromium_microgram", "micros.trace_elements.chromium"),
        ("copper_milligram", "micros.trace_elements.copper"),
        ("iodine_microgram", "micros.trace_elements.iodine"),
    ];
    const TRACE: [(&str, &str); 3] = [
        ("manganese_milligram", "micros.trace_elements.manganese"),
        ("molybdenum_microgram", "micros.trace_elements.molybdenum"),
        ("selenium_microgram", "micros.trace_elements.selenium"),
    ];
    MACROS
        .iter()
        .chain(MICROS.iter())
        .chain(TRACE.iter())
        .find(|(c, _)| *c == column)
        .map_or(w(column), |(_, path)| w(path))
}

/// Members the getters render that a push may carry but that are not stored from the record:
/// accepted and ignored, so a getter's output can be pushed back unchanged.
pub(crate) fn read_only(table: Table, key: &str) -> bool {
    const ALL: [&str; 5] = [
        "user_id",
        "calendar_date",
        "source",
        "created_at",
        "updated_at",
    ];
    let own: &[&str] = match table {
        Table::Sleep | Table::Body => &["date"],
        Table::Workout => &[],
        Table::Activity => &[],
        Table::Meal => &[
            "timestamp",
            "provider_id",
            "priority_id",
            "source_id",
            "source_app_id",
            "source_device_id",
            "data",
        ],
        Table::Profile => &[],
        Table::MenstrualCycle => &[
            "source_provider",
            "source_type",
            "source_app_id",
            "source_device_id",
        ],
    };
    ALL.contains(&key) || own.contains(&key)
}

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
    fn columns_follow_the_reference_names_and_no_two_share_a_place() {
        assert_eq!(wire(Table::Sleep, "session_start"), w("bedtime_start"));
        assert_eq!(wire(Table::Workout, "session_start"), w("time_start"));
        assert_eq!(
            wire(Table::Activity, "heart_rate_mean"),
            w("heart_rate.avg_bpm")
        );
        assert_eq!(
            wire(Table::Activity, "intensity_low_second"),
            scaled("low", 60.0)
        );
        for table in Table::ALL {
            let paths: Vec<_> = table
                .columns()
                .iter()
                .filter_map(|c| wire(table, c.name))
                .map(|w| w.path)
                .collect();
            let unique: std::collections::HashSet<_> = paths.iter().collect();
            assert_eq!(unique.len(), paths.len(), "{table:?}");
        }
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
