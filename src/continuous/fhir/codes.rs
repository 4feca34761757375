//! The terminology of the exported Observations: which LOINC code a result column gets, its
//! category, its UCUM unit, and how its aggregate function is coded.
//!
//! A column is LOINC coded only when its value still *is* the measured quantity: the mapping is
//! keyed by the column's underlying resource field or table column, and applies to `mean`,
//! `min`, `max`, `median`, `oldest` and `newest` (a value of the quantity), and to `sum` of an
//! additive one (steps). `count` and `stddev`, and `sum` of a non-additive quantity, are other
//! quantities: they keep the wearhouse column code only. Each code below was checked against
//! LOINC's name for it:
//!
//! | quantity | LOINC | LOINC name | from |
//! |---|---|---|---|
//! | body weight | 29463-7 | Body weight | `weight.value`, `body.weight_kilogram` |
//! | heart rate | 8867-4 | Heart rate | `heartrate.value`, `heart_rate_{mean,minimum,maximum}` of sleep, activity, workout |
//! | respiratory rate | 9279-1 | Respiratory rate | `respiratory_rate.value`, `sleep.respiratory_rate` |
//! | body temperature | 8310-5 | Body temperature | `body_temperature.value` |
//! | oxygen saturation | 59408-5 | Oxygen saturation in Arterial blood by Pulse oximetry | `blood_oxygen.value` |
//! | steps | 55423-8 | Number of steps in unspecified time Pedometer | `steps.value`, `activity.steps`, `workout.steps` |
//! | body height | 8302-2 | Body height | `profile.height_centimeter` |
//! | BMI | 39156-5 | Body mass index (BMI) [Ratio] | `body_mass_index.value`, `body.body_mass_index` |
//! | body fat | 41982-0 | Percentage of body fat Measured | `fat.value`, `body.fat_mass_percentage` |
//! | HRV (SDNN) | 80404-7 | R-R interval.standard deviation (Heart rate variability) | `sleep.hrv_mean_sdnn` |
//!
//! Left unmapped on purpose: the `hrv` timeseries holds RMSSD (`data-model.md`), not SDNN, so
//! 80404-7 would misstate it; `glucose` is stored in mmol/L while 2339-0 is *mass* per volume in
//! *blood*, and wearhouse's glucose is often a CGM's interstitial reading: no code fits every
//! row for sure. Resting and walking heart rates have codes of their own, not 8867-4.
//!
//! Category: `vital-signs` for an Observation carrying a vital-sign LOINC code (heart rate,
//! respiratory rate, body temperature, oxygen saturation, body weight, body height, BMI: the
//! FHIR R4 vital-signs profile's set), `activity` for every other one.

use crate::engine::{Func, Operand};
use crate::schema::Table;

/// LOINC's system URI.
pub const LOINC: &str = "http://loinc.org";
/// UCUM's system URI.
pub const UCUM: &str = "http://unitsofmeasure.org";
/// FHIR R4's observation categories.
pub const CATEGORY: &str = "http://terminology.hl7.org/CodeSystem/observation-category";
/// FHIR R4's statistic codes (`average`, `maximum`, ...).
pub const STATISTICS: &str = "http://hl7.org/fhir/observation-statistics";
/// Wearhouse's code system of result-table columns (code: the column name).
pub const COLUMN: &str = "https://wearhouse.dev/fhir/CodeSystem/column";
/// Wearhouse's code system of aggregate functions (code: the function's wire name).
pub const AGGREGATE: &str = "https://wearhouse.dev/fhir/CodeSystem/aggregate";

/// A quantity with a LOINC code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Measure {
    /// The LOINC code.
    pub loinc: &'static str,
    /// LOINC's name for it.
    pub display: &'static str,
    /// A vital sign of the FHIR R4 vital-signs profile.
    pub vital: bool,
    /// A sum of it is still it (steps).
    pub additive: bool,
}

const fn m(loinc: &'static str, display: &'static str, vital: bool, additive: bool) -> Measure {
    Measure {
        loinc,
        display,
        vital,
        additive,
    }
}

const WEIGHT: Measure = m("29463-7", "Body weight", true, false);
const HEART_RATE: Measure = m("8867-4", "Heart rate", true, false);
const RESPIRATORY_RATE: Measure = m("9279-1", "Respiratory rate", true, false);
const BODY_TEMPERATURE: Measure = m("8310-5", "Body temperature", true, false);
const OXYGEN_SATURATION: Measure = m(
    "59408-5",
    "Oxygen saturation in Arterial blood by Pulse oximetry",
    true,
    false,
);
const STEPS: Measure = m(
    "55423-8",
    "Number of steps in unspecified time Pedometer",
    false,
    true,
);
const HEIGHT: Measure = m("8302-2", "Body height", true, false);
const BMI: Measure = m("39156-5", "Body mass index (BMI) [Ratio]", true, false);
const BODY_FAT: Measure = m("41982-0", "Percentage of body fat Measured", false, false);
const HRV_SDNN: Measure = m(
    "80404-7",
    "R-R interval.standard deviation (Heart rate variability)",
    false,
    false,
);

/// The quantity an operand reads, when it has a LOINC code.
fn measure_of(operand: &Operand) -> Option<Measure> {
    match operand {
        Operand::Field(r, "value") => match r.name {
            "weight" => Some(WEIGHT),
            "heartrate" => Some(HEART_RATE),
            "respiratory_rate" => Some(RESPIRATORY_RATE),
            "body_temperature" => Some(BODY_TEMPERATURE),
            "blood_oxygen" => Some(OXYGEN_SATURATION),
            "steps" => Some(STEPS),
            "body_mass_index" => Some(BMI),
            "fat" => Some(BODY_FAT),
            _ => None,
        },
        Operand::Column(table, column, _) => match (table, *column) {
            (Table::Body, "weight_kilogram") => Some(WEIGHT),
            (Table::Body, "body_mass_index") => Some(BMI),
            (Table::Body, "fat_mass_percentage") => Some(BODY_FAT),
            (Table::Profile, "height_centimeter") => Some(HEIGHT),
            (Table::Sleep, "hrv_mean_sdnn") => Some(HRV_SDNN),
            (Table::Sleep, "respiratory_rate") => Some(RESPIRATORY_RATE),
            (Table::Activity | Table::Workout, "steps") => Some(STEPS),
            (
                Table::Sleep | Table::Activity | Table::Workout,
                "heart_rate_mean" | "heart_rate_minimum" | "heart_rate_maximum",
            ) => Some(HEART_RATE),
            _ => None,
        },
        _ => None,
    }
}

/// The LOINC coded quantity of `func` over `operand`: `None` when the function makes it
/// another quantity, or the operand has no mapping.
pub fn loinc(func: Func, operand: &Operand) -> Option<Measure> {
    let measure = measure_of(operand)?;
    match func {
        Func::Mean | Func::Min | Func::Max | Func::Median | Func::Oldest | Func::Newest => {
            Some(measure)
        }
        Func::Sum if measure.additive => Some(measure),
        Func::Sum | Func::Count | Func::Stddev => None,
    }
}

/// The category code of an Observation with this LOINC quantity (or none).
pub fn category(measure: Option<Measure>) -> (&'static str, &'static str) {
    match measure {
        Some(m) if m.vital => ("vital-signs", "Vital Signs"),
        _ => ("activity", "Activity"),
    }
}

/// The statistic code of `func` in FHIR's `observation-statistics`, where it has one.
pub fn statistic(func: Func) -> Option<(&'static str, &'static str)> {
    match func {
        Func::Mean => Some(("average", "Average")),
        Func::Min => Some(("minimum", "Minimum")),
        Func::Max => Some(("maximum", "Maximum")),
        Func::Sum => Some(("sum", "Sum")),
        Func::Count => Some(("count", "Count")),
        Func::Median => Some(("median", "Median")),
        Func::Stddev => Some(("std-dev", "Standard Deviation")),
        Func::Oldest | Func::Newest => None,
    }
}

/// A value's unit: its human text and, where UCUM has it, its UCUM code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnitOf {
    /// Shown to people.
    pub text: String,
    /// The UCUM code, if known.
    pub ucum: Option<&'static str>,
}

/// The unit of `func` over `operand`: counts are `{count}`; every other function keeps the
/// operand's unit (`None` when it has none, or it is not known).
pub fn unit(func: Func, operand: &Operand) -> Option<UnitOf> {
    if func == Func::Count {
        return Some(UnitOf {
            text: "count".to_owned(),
            ucum: Some("{count}"),
        });
    }
    let text = match operand {
        Operand::Field(r, "value") => r.unit,
        Operand::Field(_, "duration") => "s",
        Operand::Column(_, column, _) => column_unit(column)?,
        _ => return None,
    };
    Some(UnitOf {
        text: text.to_owned(),
        ucum: ucum(text),
    })
}

/// The unit of a summary-table column, from its name (`data-model.md`).
fn column_unit(column: &str) -> Option<&'static str> {
    let by_suffix = [
        ("_second", "s"),
        ("_meter", "m"),
        ("_kilogram", "kg"),
        ("_centimeter", "cm"),
        ("_percentage", "%"),
        ("_milligram", "mg"),
        ("_microgram", "µg"),
        ("_gram", "g"),
    ];
    if let Some((_, u)) = by_suffix.iter().find(|(s, _)| column.ends_with(s)) {
        return Some(u);
    }
    if column.starts_with("heart_rate_zone_") {
        return Some("s");
    }
    match column {
        c if c.starts_with("heart_rate_") && c != "heart_rate_dip" => Some("bpm"),
        c if c.starts_with("hrv_") => Some("ms"),
        c if c.starts_with("calories") => Some("kcal"),
        c if c.starts_with("skin_temperature") => Some("°C"),
        c if c.starts_with("speed_") => Some("m/s"),
        c if c.starts_with("power_") => Some("W"),
        "respiratory_rate" => Some("breaths/min"),
        "steps" | "floors_climbed" | "wheelchair_push" => Some("count"),
        "efficiency" | "heart_rate_dip" => Some("%"),
        "body_mass_index" => Some("kg/m2"),
        _ => None,
    }
}

/// The UCUM code of a stored unit; `None` for units UCUM has no code for here (scores,
/// indexes, FSU).
fn ucum(unit: &str) -> Option<&'static str> {
    Some(match unit {
        "bpm" | "breaths/min" => "/min",
        "°C" => "Cel",
        "%" => "%",
        "kg" => "kg",
        "g" => "g",
        "mg" => "mg",
        "µg" => "ug",
        "ms" => "ms",
        "s" => "s",
        "min" => "min",
        "m" => "m",
        "cm" => "cm",
        "m/s" => "m/s",
        "W" => "W",
        "kcal" => "kcal",
        "mL" => "mL",
        "L" => "L",
        "L/min" => "L/min",
        "mL/kg/min" => "mL/kg/min",
        "mmol/L" => "mmol/L",
        "mmHg" => "mm[Hg]",
        "mV" => "mV",
        "kg/m2" => "kg/m2",
        "count" => "{count}",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::{Kind, resource};

    fn field(name: &str) -> Operand {
        Operand::Field(resource(name).unwrap(), "value")
    }

    #[test]
    fn values_of_a_quantity_are_loinc_coded_and_other_statistics_are_not() {
        let hr = field("heartrate");
        for f in [Func::Mean, Func::Max, Func::Min, Func::Median, Func::Newest] {
            assert_eq!(loinc(f, &hr).map(|m| m.loinc), Some("8867-4"));
        }
        for f in [Func::Count, Func::Stddev, Func::Sum] {
            assert_eq!(loinc(f, &hr), None, "{f:?}");
        }
        // Steps add up.
        assert_eq!(
            loinc(Func::Sum, &field("steps")).map(|m| m.loinc),
            Some("55423-8")
        );
        // RMSSD and glucose stay uncoded.
        assert_eq!(loinc(Func::Mean, &field("hrv")), None);
        assert_eq!(loinc(Func::Mean, &field("glucose")), None);
        let sdnn = Operand::Column(Table::Sleep, "hrv_mean_sdnn", Kind::Float);
        assert_eq!(loinc(Func::Mean, &sdnn).map(|m| m.loinc), Some("80404-7"));
    }

    #[test]
    fn categories_follow_the_vital_sign_codes() {
        let w = loinc(Func::Mean, &field("weight"));
        assert_eq!(category(w).0, "vital-signs");
        assert_eq!(category(loinc(Func::Sum, &field("steps"))).0, "activity");
        assert_eq!(category(loinc(Func::Count, &field("weight"))).0, "activity");
    }

    #[test]
    fn units_are_ucum_where_known() {
        let hr = unit(Func::Mean, &field("heartrate")).unwrap();
        assert_eq!((hr.text.as_str(), hr.ucum), ("bpm", Some("/min")));
        let n = unit(Func::Count, &field("heartrate")).unwrap();
        assert_eq!(n.ucum, Some("{count}"));
        let t = unit(Func::Max, &field("body_temperature")).unwrap();
        assert_eq!(t.ucum, Some("Cel"));
        assert_eq!(unit(Func::Mean, &field("stress_level")).unwrap().ucum, None);
        let kg = Operand::Column(Table::Body, "weight_kilogram", Kind::Float);
        assert_eq!(unit(Func::Mean, &kg).unwrap().ucum, Some("kg"));
    }
}
