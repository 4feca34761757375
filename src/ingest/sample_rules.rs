//! What a push must give on one timeseries sample, per resource: the one table the push
//! parsers enforce (`sample.rs` for JSON bodies; `columnar.rs`, for Arrow and Parquet ones,
//! reads `type` and the measured columns from it) and the OpenAPI document states
//! (`push_schema::push_sample_schema`), so the two cannot drift.
//!
//! Decisions where the spec is silent:
//! - `timestamp` is required; on interval families `start` (its alias) gives it too.
//! - `type` is required on the samples the reference always types: cholesterol (`ldl`, `hdl`,
//!   `total`, `triglycerides`, which `cholesterol/<kind>` filters on), ige, igg and
//!   electrocardiogram_voltage.
//! - The measured values are required: `systolic` and `diastolic` on blood pressure, the note's
//!   text (`content`, or its alias `value`) on notes, `value` on every other family.
//! - Nothing else is: `unit` in particular may be left out (it is always the resource's).
//! - A member given as `null` counts as left out.

use crate::schema::{Family, Resource};

/// A member every sample must give, under its name or one of its aliases.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Required {
    /// The member's name: where its absence is reported.
    pub field: &'static str,
    /// Other names that give it as well.
    pub aliases: &'static [&'static str],
}

impl Required {
    const fn plain(field: &'static str) -> Required {
        Required {
            field,
            aliases: &[],
        }
    }

    /// The member's name and its aliases.
    pub fn names(&self) -> impl Iterator<Item = &'static str> {
        std::iter::once(self.field).chain(self.aliases.iter().copied())
    }
}

/// Resources whose samples the reference always types (the cholesterol kind, the antigen, the
/// lead).
const TYPED: [&str; 4] = ["cholesterol", "ige", "igg", "electrocardiogram_voltage"];

/// The members every sample of `resource` must give, in the order a push checks them.
pub fn required(resource: Resource) -> Vec<Required> {
    let family = resource.family;
    let mut out = vec![Required {
        field: "timestamp",
        aliases: if family.is_interval() {
            &["start"]
        } else {
            &[]
        },
    }];
    if TYPED.contains(&resource.name) {
        out.push(Required::plain("type"));
    }
    out.extend(measured(family).iter().map(|&field| Required {
        field,
        // The note's text is its `content`, which the reference answers as `value` too.
        aliases: if field == "content" { &["value"] } else { &[] },
    }));
    out
}

/// The measured members of a sample of `family`, each required: what a columnar push must
/// carry as columns besides the timestamp.
pub fn measured(family: Family) -> &'static [&'static str] {
    match family {
        Family::BloodPressure => &["systolic", "diastolic"],
        Family::Note => &["content"],
        Family::Discrete
        | Family::Interval
        | Family::Insulin
        | Family::Temperature
        | Family::WorkoutDuration => &["value"],
    }
}

/// Whether every sample of `resource` must give `field` (under its name or an alias).
pub fn requires(resource: Resource, field: &str) -> bool {
    required(resource).iter().any(|r| r.field == field)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::resource;

    fn fields(name: &str) -> Vec<&'static str> {
        required(resource(name).unwrap())
            .iter()
            .map(|r| r.field)
            .collect()
    }

    #[test]
    fn typed_resources_require_type_and_nothing_requires_unit() {
        assert_eq!(fields("heartrate"), ["timestamp", "value"]);
        assert_eq!(fields("cholesterol"), ["timestamp", "type", "value"]);
        assert_eq!(
            fields("electrocardiogram_voltage"),
            ["timestamp", "type", "value"]
        );
        assert_eq!(
            fields("blood_pressure"),
            ["timestamp", "systolic", "diastolic"]
        );
        assert_eq!(fields("note"), ["timestamp", "content"]);
        for r in crate::schema::RESOURCES {
            assert!(!requires(*r, "unit"), "{}", r.name);
        }
        let steps = required(resource("steps").unwrap());
        assert_eq!(steps[0].names().collect::<Vec<_>>(), ["timestamp", "start"]);
    }
}
