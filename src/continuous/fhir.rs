//! The FHIR R4 export of a continuous query (`export_preferences.fhir_observations`): every
//! evaluation that changed rows also emits `continuous_query.fhir_observations.changed`
//! events, built beside the `result_table.changed` ones and written in the same outbox
//! transaction (so each change is exported exactly once). Event `data`:
//! `[{query_id, query_slug, bundle}]`, the bundle a FHIR R4 `Bundle` of type `collection` whose
//! entries (`fullUrl: urn:uuid:<id>`) are Observations; a change with many rows is split over
//! several events of at most [`BUNDLE_BYTES`] of Observations each.
//!
//! One Observation per changed row and per aggregate column whose value is a number (nulls,
//! non-finite numbers and non-numeric aggregates such as `newest` of a string give none):
//! - `id`: UUID v5 (namespace: v5 of the URL `https://wearhouse.dev/fhir/Observation`) over
//!   `[query id, user id, [group-key values], column]`, so a changed row re-announces the same
//!   Observation, which a receiver upserts.
//! - `status` `final` (a later change re-sends it with the same id); `category`, `code`
//!   (LOINC where [`codes`] maps the column, always also the column in wearhouse's column
//!   code system, and a `text`); `method`: the aggregate function (FHIR's
//!   `observation-statistics` code where it has one, else wearhouse's aggregate code system);
//!   `valueQuantity` with the UCUM code where known (else the unit's text only); a `note` naming
//!   the query, column and bucket size.
//! - `subject`: `{reference: "Patient/<user id>", identifier: {value: <client_user_id>}}`. R4's
//!   Reference allows a reference and a logical identifier together; wearhouse serves no
//!   Patient resource, so the identifier is what a receiver matches on.
//!
//! Decisions where the spec is silent:
//! - Time: the bucket is floating local time, and a FHIR `dateTime` with a time needs an
//!   offset. Buckets of a day or longer become date-precision periods, `start` the bucket's
//!   first day and `end` its last (FHIR's end includes the whole of that day), so no offset is
//!   invented. Minute and hour buckets become `start`/`end` (the next bucket's start) instants
//!   with the offset of the user's fallback time zone at that local time (the earlier one of
//!   an ambiguous hour; the offset before a skipped hour); without a fallback zone `Z`, which is
//!   what the floating time of data without its own offset is.
//! - Group keys other than the bucket: each is one `group-key` extension
//!   (`https://wearhouse.dev/fhir/StructureDefinition/group-key`, sub-extensions `name` (what
//!   it groups by, e.g. `source_provider`), `column` and `value`, the value as a string; no
//!   `value` when null), part of the Observation's identity. `source_provider` and
//!   `source_type` also name the `device` (`{display: "oura, ring"}`), FHIR's place for what
//!   produced the value.

mod codes;
mod time;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, RecordBatch};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{
    DataType, Float64Type, Int64Type, TimeUnit, TimestampMicrosecondType,
};
use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};
use serde_json::{Map, Number, Value, json};
use uuid::Uuid;

use super::ContinuousError;
use super::event_data::{Entry, FhirObservations};
use super::shape::Shape;
use crate::engine::time::bucket_end;
use crate::engine::{Func, GroupBy, Operand, Period, Query, SelectKind, Unit};
use crate::events::{Event, EventType, EventUser};
use crate::store::metadata::User;
use crate::store::metadata::continuous::StoredQuery;
use time::{date, floating, instant, period_text};

/// Most bytes of Observations one event's bundle carries (events stay far below 1 MiB).
pub const BUNDLE_BYTES: usize = 256 * 1024;

const GROUP_KEY: &str = "https://wearhouse.dev/fhir/StructureDefinition/group-key";

/// A non-bucket group-key column.
struct KeyColumn {
    column: String,
    name: String,
    source: Option<&'static str>,
}

/// An aggregate column.
struct ValueColumn {
    column: String,
    func: Func,
    operand: Operand,
}

/// The `continuous_query.fhir_observations.changed` events of the `changed` rows of `query`
/// (validated as `q`, keyed as `shape`); none when no row gives an Observation.
pub fn fhir_events(
    query: &StoredQuery,
    user: &User,
    (q, shape): (&Query, &Shape),
    changed: &RecordBatch,
) -> Result<Vec<Event>, ContinuousError> {
    let observations = observations(query, user, (q, shape), changed)?;
    let mut events = Vec::new();
    let mut entries = Vec::new();
    let mut bytes = 0;
    for obs in observations {
        let size = serde_json::to_vec(&obs).map(|v| v.len()).unwrap_or(0);
        if !entries.is_empty() && bytes + size > BUNDLE_BYTES {
            events.push(event(query, user, std::mem::take(&mut entries)));
            bytes = 0;
        }
        bytes += size;
        let id = obs["id"].as_str().unwrap_or_default().to_owned();
        entries.push(Entry {
            full_url: format!("urn:uuid:{id}"),
            resource: obs,
        });
    }
    if !entries.is_empty() {
        events.push(event(query, user, entries));
    }
    Ok(events)
}

fn event(query: &StoredQuery, user: &User, entries: Vec<Entry>) -> Event {
    Event::new(
        EventType::ContinuousQueryFhirObservations,
        Some(EventUser::of(user)),
        &FhirObservations::of(query, entries),
    )
}

/// Every Observation of `changed`, row by row, columns in select order.
pub fn observations(
    query: &StoredQuery,
    user: &User,
    (q, shape): (&Query, &Shape),
    changed: &RecordBatch,
) -> Result<Vec<Value>, ContinuousError> {
    let column = |name: &str| {
        changed
            .column_by_name(name)
            .cloned()
            .ok_or_else(|| ContinuousError::Table(format!("no column {name:?}")))
    };
    let buckets = column(&shape.bucket_column)?;
    let DataType::Timestamp(TimeUnit::Microsecond, _) = buckets.data_type() else {
        return Err(ContinuousError::Table(
            "the bucket is not a timestamp".into(),
        ));
    };
    let buckets = buckets.as_primitive::<TimestampMicrosecondType>().clone();
    let (keys, values) = columns(q, shape);
    let key_arrays: Vec<ArrayRef> = keys
        .iter()
        .map(|k| column(&k.column))
        .collect::<Result<_, _>>()?;
    let formatters: Vec<ArrayFormatter> = key_arrays
        .iter()
        .map(|a| ArrayFormatter::try_new(a.as_ref(), &FormatOptions::default()))
        .collect::<Result<_, _>>()?;
    let numbers: Vec<Option<ArrayRef>> = values
        .iter()
        .map(|v| column(&v.column).map(|a| numeric(&a)))
        .collect::<Result<_, _>>()?;
    let zone = user.fallback_zone();
    let mut out = Vec::new();
    for row in 0..changed.num_rows() {
        if buckets.is_null(row) {
            continue;
        }
        let start = buckets.value(row);
        let key_values: Vec<Option<String>> = key_arrays
            .iter()
            .zip(&formatters)
            .map(|(a, f)| (!a.is_null(row)).then(|| f.value(row).to_string()))
            .collect();
        let row_ctx = Row {
            query,
            user,
            keys: &keys,
            key_values: &key_values,
            start,
            period: (shape.period, zone),
        };
        for (v, array) in values.iter().zip(&numbers) {
            if let Some(value) = array.as_ref().and_then(|a| number(a, row)) {
                out.push(row_ctx.observation(v, value));
            }
        }
    }
    Ok(out)
}

/// The non-bucket group keys and the aggregate columns of `q`, in select order.
fn columns(q: &Query, shape: &Shape) -> (Vec<KeyColumn>, Vec<ValueColumn>) {
    let mut keys = Vec::new();
    let mut values = Vec::new();
    for item in &q.select {
        match &item.kind {
            SelectKind::GroupKey(_) if item.name == shape.bucket_column => {}
            SelectKind::GroupKey(i) => {
                let (name, source) = match q.group_by.get(*i) {
                    Some(GroupBy::Value(Operand::Source(s))) => ((*s).to_owned(), Some(*s)),
                    Some(GroupBy::Value(op)) => (operand_label(op), None),
                    Some(GroupBy::DatePart(p)) => (
                        format!("date_part.{}", format!("{p:?}").to_lowercase()),
                        None,
                    ),
                    Some(GroupBy::DateTrunc(_) | GroupBy::User(_)) | None => {
                        (item.name.clone(), None)
                    }
                };
                keys.push(KeyColumn {
                    column: item.name.clone(),
                    name,
                    source,
                });
            }
            SelectKind::Aggregate(func, operand) => values.push(ValueColumn {
                column: item.name.clone(),
                func: *func,
                operand: operand.clone(),
            }),
            SelectKind::Value(_) => {}
        }
    }
    (keys, values)
}

/// What an operand reads, for people: `heartrate.value`, `body.weight_kilogram`.
fn operand_label(op: &Operand) -> String {
    match op {
        Operand::Field(r, f) => format!("{}.{f}", r.name),
        Operand::Column(t, c, _) => format!("{}.{c}", t.name()),
        Operand::Derived(_, c, _) => (*c).to_owned(),
        Operand::Source(s) => (*s).to_owned(),
        Operand::Index => "timestamp".to_owned(),
        Operand::Macro(m) => m.name().to_owned(),
        Operand::Subquery(sq) => sq.name(),
        Operand::ElementField(f, _) => (*f).to_owned(),
    }
}

/// A numeric column as Int64 (integers) or Float64; `None` when it is not numeric.
fn numeric(array: &ArrayRef) -> Option<ArrayRef> {
    let t = array.data_type();
    let target = if t.is_integer() && *t != DataType::UInt64 {
        DataType::Int64
    } else if t.is_numeric() {
        DataType::Float64
    } else {
        return None;
    };
    cast(array, &target).ok()
}

/// Row `row` of a column [`numeric`] made, as a JSON number (none for null or non-finite).
fn number(array: &ArrayRef, row: usize) -> Option<Number> {
    if array.is_null(row) {
        return None;
    }
    match array.data_type() {
        DataType::Int64 => Some(Number::from(array.as_primitive::<Int64Type>().value(row))),
        _ => Number::from_f64(array.as_primitive::<Float64Type>().value(row)),
    }
}

/// One changed row.
struct Row<'a> {
    query: &'a StoredQuery,
    user: &'a User,
    keys: &'a [KeyColumn],
    key_values: &'a [Option<String>],
    start: i64,
    period: (Period, Option<chrono_tz::Tz>),
}

impl Row<'_> {
    /// The Observation of column `v` holding `value`.
    fn observation(&self, v: &ValueColumn, value: Number) -> Value {
        let measure = codes::loinc(v.func, &v.operand);
        let (cat_code, cat_display) = codes::category(measure);
        let func = v.func.name();
        let per = period_text(self.period.0);
        let label = operand_label(&v.operand);
        let mut coding = Vec::new();
        if let Some(m) = measure {
            coding.push(json!({"system": codes::LOINC, "code": m.loinc, "display": m.display}));
        }
        coding.push(json!({"system": codes::COLUMN, "code": v.column}));
        let text = match measure {
            Some(m) => format!("{} ({func} per {per})", m.display),
            None => format!("{func} of {label} per {per}"),
        };
        let method = match codes::statistic(v.func) {
            Some((code, display)) => {
                json!({"system": codes::STATISTICS, "code": code, "display": display})
            }
            None => json!({"system": codes::AGGREGATE, "code": func}),
        };
        let mut quantity = Map::new();
        quantity.insert("value".into(), Value::Number(value));
        if let Some(unit) = codes::unit(v.func, &v.operand) {
            quantity.insert("unit".into(), json!(unit.text));
            if let Some(code) = unit.ucum {
                quantity.insert("system".into(), json!(codes::UCUM));
                quantity.insert("code".into(), json!(code));
            }
        }
        let mut obs = Map::new();
        obs.insert("resourceType".into(), json!("Observation"));
        obs.insert("id".into(), json!(self.id(&v.column).to_string()));
        if !self.keys.is_empty() {
            obs.insert("extension".into(), Value::Array(self.key_extensions()));
        }
        obs.insert("status".into(), json!("final"));
        obs.insert(
            "category".into(),
            json!([{"coding": [{"system": codes::CATEGORY, "code": cat_code, "display": cat_display}]}]),
        );
        obs.insert("code".into(), json!({"coding": coding, "text": text}));
        obs.insert(
            "subject".into(),
            json!({
                "reference": format!("Patient/{}", self.user.id),
                "identifier": {"value": self.user.client_user_id}
            }),
        );
        obs.insert("effectivePeriod".into(), self.effective());
        obs.insert("valueQuantity".into(), Value::Object(quantity));
        let note = format!(
            "Continuous query \"{}\", column \"{}\": {func} of {label} per {per} of local time.",
            self.query.slug, v.column
        );
        obs.insert("note".into(), json!([{"text": note}]));
        obs.insert("method".into(), json!({"coding": [method], "text": func}));
        if let Some(device) = self.device() {
            obs.insert("device".into(), json!({"display": device}));
        }
        Value::Object(obs)
    }

    /// The Observation id of `column` of this row (see the module docs).
    fn id(&self, column: &str) -> Uuid {
        let namespace = Uuid::new_v5(
            &Uuid::NAMESPACE_URL,
            b"https://wearhouse.dev/fhir/Observation",
        );
        let mut keys = vec![json!(floating(self.start))];
        keys.extend(self.key_values.iter().map(|k| json!(k)));
        let name = json!([self.query.id, self.user.id, keys, column]).to_string();
        Uuid::new_v5(&namespace, name.as_bytes())
    }

    fn key_extensions(&self) -> Vec<Value> {
        self.keys
            .iter()
            .zip(self.key_values)
            .map(|(k, value)| {
                let mut parts = vec![
                    json!({"url": "name", "valueString": k.name}),
                    json!({"url": "column", "valueString": k.column}),
                ];
                if let Some(value) = value {
                    parts.push(json!({"url": "value", "valueString": value}));
                }
                json!({"url": GROUP_KEY, "extension": parts})
            })
            .collect()
    }

    /// `source_provider` and `source_type`, when they are group keys with values.
    fn device(&self) -> Option<String> {
        let named = |s: &str| {
            self.keys
                .iter()
                .zip(self.key_values)
                .find(|(k, _)| k.source == Some(s))
                .and_then(|(_, v)| v.clone())
        };
        let parts: Vec<String> = [named("source_provider"), named("source_type")]
            .into_iter()
            .flatten()
            .collect();
        (!parts.is_empty()).then(|| parts.join(", "))
    }

    fn effective(&self) -> Value {
        let (period, zone) = self.period;
        let end = bucket_end(self.start, period);
        match period.unit {
            Unit::Minute | Unit::Hour => json!({
                "start": instant(self.start, zone),
                "end": instant(end, zone),
            }),
            Unit::Day | Unit::Week | Unit::Month | Unit::Year => json!({
                "start": date(self.start),
                "end": date(end - 1),
            }),
        }
    }
}

#[cfg(test)]
mod tests;
