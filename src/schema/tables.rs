//! The summary tables of `data-model.md` (and `menstrual_cycle`, `analytics.md` §3): columns,
//! types, index and record key. List columns are described in `lists.rs`.

use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Field, SchemaRef};

use super::lists::{Element, ListColumn};
use super::{TIMEZONE_OFFSET, utc_timestamp, with_trailer};

/// A summary table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Table {
    /// One row per sleep session (index `session_end`).
    Sleep,
    /// One row per local calendar day per source (index `date`).
    Activity,
    /// One row per workout session (index `session_start`).
    Workout,
    /// One row per body measurement (index `measured_at`).
    Body,
    /// One row per meal (index `date`).
    Meal,
    /// The latest profile per provider (index `updated_at`, UTC).
    Profile,
    /// One row per menstrual cycle (index `period_start`), with list-of-struct columns.
    MenstrualCycle,
}

/// One column of a summary table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Column {
    /// Its name, in storage and in the query language.
    pub name: &'static str,
    /// Its kind of Arrow type.
    pub kind: Kind,
}

/// The Arrow types summary columns use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `Utf8`
    Str,
    /// `Int64`
    Int,
    /// `Float64`
    Float,
    /// `Boolean`
    Bool,
    /// `Date32`, a local calendar day
    Date,
    /// `Timestamp(Microsecond, "UTC")`
    Instant,
}

impl Kind {
    /// The Arrow type.
    pub fn data_type(self) -> DataType {
        match self {
            Kind::Str => DataType::Utf8,
            Kind::Int => DataType::Int64,
            Kind::Float => DataType::Float64,
            Kind::Bool => DataType::Boolean,
            Kind::Date => DataType::Date32,
            Kind::Instant => utc_timestamp(),
        }
    }
}

const fn c(name: &'static str, kind: Kind) -> Column {
    Column { name, kind }
}

use Kind::{Bool, Date, Float, Instant, Int, Str};

const SLEEP: &[Column] = &[
    c("id", Str),
    c("session_start", Instant),
    c("session_end", Instant),
    c("state", Str),
    c("type", Str),
    c("duration_second", Int),
    c("stage_asleep_second", Int),
    c("stage_awake_second", Int),
    c("stage_light_second", Int),
    c("stage_rem_second", Int),
    c("stage_deep_second", Int),
    c("latency_second", Int),
    c("heart_rate_minimum", Int),
    c("heart_rate_mean", Int),
    c("heart_rate_maximum", Int),
    c("heart_rate_resting", Int),
    c("heart_rate_dip", Float),
    c("efficiency", Float),
    c("hrv_mean_rmssd", Float),
    c("hrv_mean_sdnn", Float),
    c("skin_temperature", Float),
    c("skin_temperature_delta", Float),
    c("respiratory_rate", Float),
    c("score", Int),
    c("time_zone", Str),
];

const ACTIVITY: &[Column] = &[
    c("id", Str),
    c("date", Date),
    c("calories_total", Float),
    c("calories_active", Float),
    c("steps", Int),
    c("distance_meter", Float),
    c("floors_climbed", Int),
    c("duration_active_second", Int),
    c("intensity_sedentary_second", Int),
    c("intensity_low_second", Int),
    c("intensity_medium_second", Int),
    c("intensity_high_second", Int),
    c("heart_rate_mean", Float),
    c("heart_rate_minimum", Float),
    c("heart_rate_maximum", Float),
    c("heart_rate_resting", Float),
    c("heart_rate_mean_walking", Float),
    c("wheelchair_use", Bool),
    c("wheelchair_push", Int),
    c("time_zone", Str),
    c("time_zone_offset", Int),
];

const WORKOUT: &[Column] = &[
    c("id", Str),
    c("session_start", Instant),
    c("session_end", Instant),
    c("title", Str),
    c("sport_name", Str),
    c("sport_slug", Str),
    c("duration_active_second", Int),
    c("heart_rate_mean", Int),
    c("heart_rate_minimum", Int),
    c("heart_rate_maximum", Int),
    c("heart_rate_zone_1", Float),
    c("heart_rate_zone_2", Float),
    c("heart_rate_zone_3", Float),
    c("heart_rate_zone_4", Float),
    c("heart_rate_zone_5", Float),
    c("heart_rate_zone_6", Float),
    c("distance_meter", Float),
    c("calories", Float),
    c("elevation_gain_meter", Float),
    c("elevation_maximum_meter", Float),
    c("elevation_minimum_meter", Float),
    c("speed_mean", Float),
    c("speed_maximum", Float),
    c("power_source", Str),
    c("power_mean", Float),
    c("power_maximum", Float),
    c("power_weighted_mean", Float),
    c("steps", Int),
    c("map_polyline", Str),
    c("map_summary_polyline", Str),
    c("external_id", Str),
    c("time_zone", Str),
];

const BODY: &[Column] = &[
    c("id", Str),
    c("measured_at", Instant),
    c("weight_kilogram", Float),
    c("fat_mass_percentage", Float),
    c("water_percentage", Float),
    c("muscle_mass_percentage", Float),
    c("visceral_fat_index", Float),
    c("bone_mass_percentage", Float),
    c("body_mass_index", Float),
    c("lean_body_mass_kilogram", Float),
    c("waist_circumference_centimeter", Float),
    c("time_zone", Str),
];

const MEAL: &[Column] = &[
    c("id", Str),
    c("date", Date),
    c("name", Str),
    c("calories", Float),
    c("carbohydrate_gram", Float),
    c("protein_gram", Float),
    c("alcohol_gram", Float),
    c("water_gram", Float),
    c("fibre_gram", Float),
    c("sugar_gram", Float),
    c("cholesterol_gram", Float),
    c("saturated_fat_gram", Float),
    c("monounsaturated_fat_gram", Float),
    c("polyunsaturated_fat_gram", Float),
    c("omega3_fat_gram", Float),
    c("omega6_fat_gram", Float),
    c("total_fat_gram", Float),
    c("sodium_milligram", Float),
    c("potassium_milligram", Float),
    c("calcium_milligram", Float),
    c("phosphorus_milligram", Float),
    c("magnesium_milligram", Float),
    c("iron_milligram", Float),
    c("zinc_milligram", Float),
    c("fluoride_milligram", Float),
    c("chloride_milligram", Float),
    c("vitamin_a_milligram", Float),
    c("vitamin_b1_milligram", Float),
    c("riboflavin_milligram", Float),
    c("niacin_milligram", Float),
    c("pantothenic_acid_milligram", Float),
    c("vitamin_b6_milligram", Float),
    c("biotin_microgram", Float),
    c("vitamin_b12_microgram", Float),
    c("vitamin_c_milligram", Float),
    c("vitamin_d_microgram", Float),
    c("vitamin_e_milligram", Float),
    c("vitamin_k_microgram", Float),
    c("folic_acid_microgram", Float),
    c("chromium_microgram", Float),
    c("copper_milligram", Float),
    c("iodine_microgram", Float),
    c("manganese_milligram", Float),
    c("molybdenum_microgram", Float),
    c("selenium_microgram", Float),
];

const PROFILE: &[Column] = &[
    c("id", Str),
    c("height_centimeter", Int),
    c("birth_date", Date),
    c("wheelchair_use", Bool),
    c("gender", Str),
    c("sex", Str),
    c("created_at", Instant),
    c("updated_at", Instant),
];

impl Table {
    /// Every summary table, in a fixed order.
    pub const ALL: [Table; 7] = [
        Table::Sleep,
        Table::Activity,
        Table::Workout,
        Table::Body,
        Table::Meal,
        Table::Profile,
        Table::MenstrualCycle,
    ];

    /// The name used in folders and in the query language (`{"sleep": C}`).
    pub fn name(self) -> &'static str {
        match self {
            Table::Sleep => "sleep",
            Table::Activity => "activity",
            Table::Workout => "workout",
            Table::Body => "body",
            Table::Meal => "meal",
            Table::Profile => "profile",
            Table::MenstrualCycle => "menstrual_cycle",
        }
    }

    /// Looks a table up by its query-language name.
    pub fn from_name(name: &str) -> Option<Table> {
        Table::ALL.into_iter().find(|t| t.name() == name)
    }

    /// The columns the query language may name, in storage order.
    pub fn columns(self) -> &'static [Column] {
        match self {
            Table::Sleep => SLEEP,
            Table::Activity => ACTIVITY,
            Table::Workout => WORKOUT,
            Table::Body => BODY,
            Table::Meal => MEAL,
            Table::Profile => PROFILE,
            Table::MenstrualCycle => super::lists::MENSTRUAL_CYCLE,
        }
    }

    /// The list columns (`lists.rs`): stored, reduced by subqueries, never selected as such.
    pub fn list_columns(self) -> &'static [ListColumn] {
        match self {
            Table::Sleep => super::lists::SLEEP_LISTS,
            Table::MenstrualCycle => super::lists::MENSTRUAL_CYCLE_LISTS,
            _ => &[],
        }
    }

    /// Looks a list column up by name.
    pub fn list_column(self, name: &str) -> Option<ListColumn> {
        self.list_columns().iter().copied().find(|c| c.name == name)
    }

    /// Looks a queryable column up by name.
    pub fn column(self, name: &str) -> Option<Column> {
        self.columns().iter().copied().find(|c| c.name == name)
    }

    /// The column that places a row in time (`aggregate-dsl.md` §3.2).
    pub fn index_column(self) -> &'static str {
        match self {
            Table::Sleep => "session_end",
            Table::Workout => "session_start",
            Table::Body => "measured_at",
            Table::Activity | Table::Meal => "date",
            Table::Profile => "updated_at",
            Table::MenstrualCycle => "period_start",
        }
    }

    /// Whether the index is a local calendar date rather than an instant.
    pub fn index_is_date(self) -> bool {
        matches!(self, Table::Activity | Table::Meal | Table::MenstrualCycle)
    }

    /// Whether rows carry a derived `timezone_offset` for floating time. Date-indexed tables
    /// are already local; profile times are UTC by definition.
    pub fn has_timezone_offset(self) -> bool {
        matches!(self, Table::Sleep | Table::Workout | Table::Body)
    }

    /// The storage schema: queryable columns, then internal ones (`timezone_offset`, the sleep
    /// hypnogram), then source and `ingested_at`.
    ///
    /// The hypnogram is a list of stage codes (1 deep, 2 light, 3 rem, 4 awake, 5 manual,
    /// −1 missing), one per `hypnogram_interval_second` (default 300) from `session_start`.
    pub fn schema(self) -> SchemaRef {
        // Built once per process: every read, write and plan asks for it.
        static SCHEMAS: [std::sync::OnceLock<SchemaRef>; Table::ALL.len()] =
            [const { std::sync::OnceLock::new() }; Table::ALL.len()];
        let i = Table::ALL.iter().position(|t| *t == self).unwrap_or(0);
        SCHEMAS[i].get_or_init(|| self.build_schema()).clone()
    }

    fn build_schema(self) -> SchemaRef {
        let mut fields: Vec<Field> = self
            .columns()
            .iter()
            .map(|col| Field::new(col.name, col.kind.data_type(), col.name != "id"))
            .collect();
        if self.has_timezone_offset() {
            fields.push(Field::new(TIMEZONE_OFFSET, DataType::Int32, true));
        }
        if self == Table::Sleep {
            let item = Arc::new(Field::new("item", DataType::Int8, true));
            fields.push(Field::new("hypnogram", DataType::List(item), true));
            fields.push(Field::new(
                "hypnogram_interval_second",
                DataType::Int64,
                true,
            ));
        } else {
            for list in self.list_columns() {
                if let Element::Struct(elements) = list.element {
                    fields.push(Field::new(
                        list.name,
                        ListColumn::struct_type(elements),
                        true,
                    ));
                }
            }
        }
        with_trailer(fields, false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_table_has_its_index_column_and_unique_names() {
        for t in Table::ALL {
            let schema = t.schema();
            assert!(schema.field_with_name(t.index_column()).is_ok(), "{t:?}");
            let names: std::collections::HashSet<_> =
                schema.fields().iter().map(|f| f.name().clone()).collect();
            assert_eq!(names.len(), schema.fields().len(), "{t:?} repeats a column");
            assert_eq!(Table::from_name(t.name()), Some(t));
        }
        assert!(Table::Sleep.column("efficency").is_none());
        assert_eq!(
            Table::Meal.column("calories").map(|c| c.kind),
            Some(Kind::Float)
        );
    }
}
