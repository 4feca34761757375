//! One timeseries sample of a push body to one row of its resource.
//!
//! A sample is `{timestamp, start?, end?, timezone_offset, type, unit, value, ...}` with the
//! fields of its family (`crate::schema::Family`). Decisions where the spec is silent:
//! - `start` is an alias of `timestamp` (interval samples render both); when both are given they
//!   must be the same instant. `end` and `start` are accepted on interval families only.
//! - `duration` is derived as `end − start`; given alone it yields `end`; given with `end` it
//!   must agree within a second.
//! - `unit`, when given, must be the resource's unit; it is always stored as the resource's unit.
//! - `timezone_offset` is seconds east of UTC, or a zone string (`+HH:MM`, IANA) resolved at the
//!   sample's instant; absent, null (the engine applies the user's fallback zone at query time).
//! - Which members a sample must give (`timestamp`, `type` on the typed resources, the measured
//!   values) is `sample_rules.rs`'s table, checked first, before any member is read: the OpenAPI
//!   document states the same table.
//! - Note `tags` is an array of strings, stored as its JSON text; `content` (or the
//!   reference's `value`, the same text) is required.
//! - `source_workout_id` and `source_sport` are per-sample fields.

use serde_json::Value;

use super::columns::{Cell, Row};
use super::context::offset_cell;
use super::dates::{EARLIEST, LATEST};
use super::fields::sample_range;
use super::pulled_samples::{PulledSample, SampleTags};
use super::sample_rules;
use super::summary::zone;
use super::zone::MAX_OFFSET;
use crate::schema::{Family, INGESTED_AT, Resource, SOURCE_COLUMNS, timeseries_schema};
use crate::validation::read::{self, Obj, at};
use crate::validation::{Loc, Violation};

/// The longest sample interval accepted, in seconds (a leap year).
pub(super) const MAX_DURATION: f64 = 366.0 * 86_400.0;

const STRING_FIELDS: [&str; 8] = [
    "type",
    "delivery_mode",
    "delivery_form",
    "bolus_purpose",
    "sensor_location",
    "intensity",
    "content",
    "source_workout_id",
];

/// The keys a push may carry on a sample of `family`: its stored fields (less the source and
/// ingestion columns, which come from the body), plus `start` on interval families.
pub(crate) fn accepted_keys(family: Family) -> Vec<String> {
    let mut keys: Vec<String> = timeseries_schema(family)
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .filter(|k| k != INGESTED_AT && !SOURCE_COLUMNS.contains(&k.as_str()))
        .collect();
    if family.is_interval() {
        keys.push("start".to_owned());
    }
    if family == Family::Note {
        // The reference's name for the note's text (answered alongside `content`).
        keys.push("value".to_owned());
    }
    keys
}

/// What the samples of one resource are checked against, computed once per resource rather
/// than once per sample: the members they may carry ([`accepted_keys`]) and must give
/// ([`sample_rules::required`]).
pub(crate) struct Rules {
    resource: Resource,
    keys: Vec<String>,
    required: Vec<sample_rules::Required>,
    /// Whether `type` is among `required` (the typed resources).
    needs_type: bool,
    /// The string members of [`STRING_FIELDS`] the resource accepts.
    strings: Vec<&'static str>,
}

impl Rules {
    /// The rules of `resource`'s samples.
    pub(crate) fn new(resource: Resource) -> Self {
        let required = sample_rules::required(resource);
        let keys = accepted_keys(resource.family);
        let strings = STRING_FIELDS
            .into_iter()
            .filter(|f| keys.iter().any(|k| k == f))
            .collect();
        Rules {
            resource,
            keys,
            needs_type: required.iter().any(|r| r.field == "type"),
            required,
            strings,
        }
    }

    /// The resource.
    pub(crate) fn resource(&self) -> Resource {
        self.resource
    }

    fn accepts(&self, key: &str) -> bool {
        self.keys.iter().any(|a| a == key)
    }
}

/// Parses one sample of `rules`' resource. The source columns and `ingested_at` are the same
/// for every sample of a push: they are left to the batch (see `push_body.rs`).
pub(crate) fn parse(rules: &Rules, value: &Value, loc: &[Loc]) -> Result<Row, Violation> {
    let resource = rules.resource;
    let family = resource.family;
    let accepted = |k: &str| rules.accepts(k);
    let obj = read::object(value, loc)?;
    read::forbid_extra(obj, loc, accepted)?;
    for rule in &rules.required {
        let given = rule
            .names()
            .find(|name| obj.get(*name).is_some_and(|v| !v.is_null()));
        read::required(given, loc, rule.field)?;
    }
    let mut row = Row::default();

    let timestamp = read::instant(obj, "timestamp", loc)?;
    let start = read::instant(obj, "start", loc)?;
    let timestamp = match (timestamp, start) {
        (Some(t), Some(s)) if t != s => {
            return Err(
                Violation::value(at(loc, "start"), "start must equal timestamp")
                    .with_input(input(obj, "start")),
            );
        }
        (t, s) => read::required(t.or(s), loc, "timestamp")?,
    };
    row.set("timestamp", Cell::Micros(timestamp.timestamp_micros()));

    let zone = zone(obj, "timezone_offset", loc)?;
    row.set("timezone_offset", offset_cell(zone, timestamp));

    if let Some(unit) = read::string(obj, "unit", loc)? {
        read::one_of(unit, &[resource.unit], "unit", loc)?;
    }
    row.set("unit", Cell::Str(resource.unit.to_owned()));

    for &key in &rules.strings {
        row.set(key, Cell::opt_str(read::string(obj, key, loc)?));
    }
    row.set(
        "source_sport",
        Cell::opt_str(read::string(obj, "source_sport", loc)?),
    );

    if family.is_interval() {
        interval(obj, loc, family, timestamp.timestamp_micros(), &mut row)?;
    }
    let bounds = sample_range(resource.name, resource.unit);
    match family {
        Family::BloodPressure => {
            for key in ["systolic", "diastolic"] {
                let v = read::required(read::float(obj, key, loc)?, loc, key)?;
                read::in_range(v, bounds, obj, key, loc)?;
                row.set(key, Cell::Float(v));
            }
        }
        Family::Note => {
            let content = read::string(obj, "content", loc)?;
            let value = read::string(obj, "value", loc)?;
            if let (Some(c), Some(v)) = (content, value)
                && c != v
            {
                return Err(
                    Violation::value(at(loc, "value"), "value must equal content")
                        .with_input(input(obj, "value")),
                );
            }
            let text = read::required(content.or(value), loc, "content")?;
            row.set("content", Cell::Str(text.to_owned()));
            row.set("tags", tags(obj, loc)?);
        }
        _ => {
            let v = read::required(read::float(obj, "value", loc)?, loc, "value")?;
            read::in_range(v, bounds, obj, "value", loc)?;
            row.set("value", Cell::Float(v));
        }
    }
    Ok(row)
}

/// The microseconds a typed instant keeps from the edges of the four-digit years, so that
/// rendered in any offset it still reads as one ([`typed_row`]).
const EDGE_MICROS: i64 = 86_400 * 1_000_000;

/// The row of a typed sample of `rules`' resource when [`parse`] would certainly admit its
/// JSON rendering (`pulled_samples::sample_json`), built without rendering it; `None`
/// otherwise, and the caller parses the rendering for its violation. The row is the one
/// [`parse`] makes of the rendering, cell for cell (a test holds them together).
pub(crate) fn typed_row(
    rules: &Rules,
    sample: &PulledSample,
    tags: Option<&SampleTags>,
) -> Option<Row> {
    let resource = rules.resource;
    let family = resource.family;
    let accepted = |k: &str| rules.accepts(k);
    let value_family = !matches!(family, Family::BloodPressure | Family::Note);
    let in_years = |t: i64| {
        (EARLIEST.timestamp_micros() + EDGE_MICROS..LATEST.timestamp_micros() - EDGE_MICROS)
            .contains(&t)
    };
    let fits = value_family
        && in_years(sample.at)
        && sample
            .offset
            .is_none_or(|o| i64::from(o).abs() <= MAX_OFFSET)
        && sample
            .end
            .is_none_or(|e| family.is_interval() && e >= sample.at && in_years(e))
        && tags.is_none_or(|t| t.members().all(|(k, _)| accepted(k)))
        && (!rules.needs_type || tags.is_some_and(|t| t.kind.is_some()));
    let (lo, hi) = sample_range(resource.name, resource.unit);
    // `+ 0.0` makes a negative zero the zero its JSON rendering (`0`) reads back as.
    let value = sample.value + 0.0;
    if !(fits && value.is_finite() && value >= lo && value <= hi) {
        return None;
    }
    let tag = |key: &str| tags.and_then(|t| t.get(key));
    let mut row = Row::with_capacity(8 + rules.strings.len());
    row.add("timestamp", Cell::Micros(sample.at));
    row.add(
        "timezone_offset",
        sample
            .offset
            .map_or(Cell::Null, |o| Cell::Int(i64::from(o))),
    );
    row.add("unit", Cell::Str(resource.unit.to_owned()));
    for &key in &rules.strings {
        row.add(key, Cell::opt_str(tag(key)));
    }
    row.add("source_sport", Cell::opt_str(tag("source_sport")));
    if family.is_interval() {
        row.add("end", sample.end.map_or(Cell::Null, Cell::Micros));
        let duration = sample.end.map(|e| (e - sample.at) as f64 / 1e6);
        row.add("duration", duration.map_or(Cell::Null, Cell::Float));
    }
    row.add("value", Cell::Float(value));
    Some(row)
}

fn interval(
    obj: &Obj,
    loc: &[Loc],
    family: Family,
    start: i64,
    row: &mut Row,
) -> Result<(), Violation> {
    let end = read::instant(obj, "end", loc)?.map(|t| t.timestamp_micros());
    let has_duration = family != Family::Note;
    let duration = if has_duration {
        read::float(obj, "duration", loc)?
    } else {
        None
    };
    if let Some(d) = duration {
        read::in_range(d, (0.0, MAX_DURATION), obj, "duration", loc)?;
    }
    let end = match (end, duration) {
        (Some(e), _) if e < start => {
            return Err(
                Violation::value(at(loc, "end"), "end must not be before timestamp")
                    .with_input(input(obj, "end")),
            );
        }
        (Some(e), Some(d)) if ((e - start) as f64 / 1e6 - d).abs() > 1.0 => {
            return Err(
                Violation::value(at(loc, "duration"), "duration must equal end - start")
                    .with_input(input(obj, "duration")),
            );
        }
        (Some(e), _) => Some(e),
        (None, Some(d)) => Some(start + (d * 1e6).round() as i64),
        (None, None) => None,
    };
    row.set("end", end.map_or(Cell::Null, Cell::Micros));
    if has_duration {
        let derived = end.map(|e| (e - start) as f64 / 1e6);
        row.set("duration", derived.map_or(Cell::Null, Cell::Float));
    }
    Ok(())
}

fn input(obj: &Obj, key: &str) -> Value {
    obj.get(key).cloned().unwrap_or_default()
}

fn tags(obj: &Obj, loc: &[Loc]) -> Result<Cell, Violation> {
    let Some(value) = obj.get("tags").filter(|v| !v.is_null()) else {
        return Ok(Cell::Null);
    };
    let ok = value
        .as_array()
        .is_some_and(|a| a.iter().all(Value::is_string));
    if !ok {
        return Err(Violation::new(
            at(loc, "tags"),
            "type_error",
            "Input should be an array of strings",
        )
        .with_input(value.clone()));
    }
    Ok(Cell::Str(value.to_string()))
}
