//! A pulled body's samples: push-wire JSON objects, or typed samples for the dense series.
//!
//! A connector whose provider day holds thousands of samples (Garmin's heart rate every 15
//! seconds, Strava's streams, Google Health's heart rate every minute) builds them as
//! [`PulledSample`]s: the instant and the end as microseconds, the offset in seconds, the value
//! as a float, and what a run of samples shares (the workout they were recorded in, its sport,
//! their `type`) once, as [`SampleTags`] they refer to by index. Built as JSON objects they cost
//! about a microsecond each (a map with hashed keys, an RFC 3339 string, the workout's id and
//! sport copied into every sample), which put one Strava or Garmin day at 8–11 ms against the
//! 1 ms a day issue 37 asks of a normaliser.
//!
//! Typed samples are the push wire's samples and no more: [`PulledSamples::to_json`] renders
//! each as the object a client would push for it, and ingest admits them under the same rules
//! (`sample.rs`). A typed sample the fast path cannot admit with certainty (an instant near the
//! edges of the four-digit years, an offset or a value out of range, a member the resource does
//! not take) is rendered and parsed as JSON, so its violation is the one a pushed body gets, at
//! the same location: the typed path is a shortcut through the rules, not a second set of them.
//!
//! Decisions where the spec is silent:
//! - A typed sample renders its instants in RFC 3339 in its own offset (`Z` for a zero offset
//!   and for a sample without one), with the fraction of a second only when it has one; its unit
//!   is always its resource's; an integral value renders as an integer (`61`, not `61.0`).
//! - Members render in the order `timestamp, end, timezone_offset, type, unit, value,
//!   source_workout_id, source_sport`.

use chrono::{DateTime, FixedOffset, Offset, SecondsFormat, Utc};
use serde_json::{Map, Value};

use crate::schema::resource;

/// One resource's samples in a pulled body.
#[derive(Debug, Clone, PartialEq)]
pub enum PulledSamples {
    /// Push-wire sample objects, as a client would push them.
    Json(Vec<Value>),
    /// Typed samples.
    Typed(TypedSamples),
}

impl Default for PulledSamples {
    fn default() -> Self {
        PulledSamples::Json(Vec::new())
    }
}

impl From<Vec<Value>> for PulledSamples {
    fn from(samples: Vec<Value>) -> Self {
        PulledSamples::Json(samples)
    }
}

impl From<TypedSamples> for PulledSamples {
    fn from(samples: TypedSamples) -> Self {
        PulledSamples::Typed(samples)
    }
}

impl PulledSamples {
    /// How many samples.
    pub fn len(&self) -> usize {
        match self {
            PulledSamples::Json(samples) => samples.len(),
            PulledSamples::Typed(typed) => typed.samples.len(),
        }
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Removes the sample at `index`; `false` when there is none there.
    pub fn remove(&mut self, index: usize) -> bool {
        if index >= self.len() {
            return false;
        }
        match self {
            PulledSamples::Json(samples) => {
                samples.remove(index);
            }
            PulledSamples::Typed(typed) => {
                typed.samples.remove(index);
            }
        }
        true
    }

    /// The samples as the push body's list of `resource_name` would hold them.
    pub fn to_json(&self, resource_name: &str) -> Vec<Value> {
        match self {
            PulledSamples::Json(samples) => samples.clone(),
            PulledSamples::Typed(typed) => {
                let unit = resource(resource_name).map(|r| r.unit);
                typed
                    .samples
                    .iter()
                    .map(|s| sample_json(s, typed.tags_of(s), unit))
                    .collect()
            }
        }
    }
}

/// Typed samples of one resource and the tags they share.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TypedSamples {
    tags: Vec<SampleTags>,
    samples: Vec<PulledSample>,
}

impl TypedSamples {
    /// No samples.
    pub fn new() -> Self {
        TypedSamples::default()
    }

    /// Keeps `tags` for the samples that will refer to it; answers the index they refer to it
    /// by ([`PulledSample::tagged`]).
    pub fn add_tags(&mut self, tags: SampleTags) -> u32 {
        if let Some(i) = self.tags.iter().position(|t| *t == tags) {
            return i as u32;
        }
        self.tags.push(tags);
        (self.tags.len() - 1) as u32
    }

    /// The index of the tags that give `type` `kind` and nothing else, kept on first use (a
    /// series typed per sample, e.g. heart rates `rest` or `workout`).
    pub fn kind(&mut self, kind: &str) -> u32 {
        let found = self.tags.iter().position(|t| {
            t.kind.as_deref() == Some(kind)
                && t.source_workout_id.is_none()
                && t.source_sport.is_none()
        });
        match found {
            Some(i) => i as u32,
            None => self.add_tags(SampleTags {
                kind: Some(kind.to_owned()),
                ..SampleTags::default()
            }),
        }
    }

    /// Appends a sample.
    pub fn push(&mut self, sample: PulledSample) {
        self.samples.push(sample);
    }

    /// The samples, in order.
    pub fn samples(&self) -> &[PulledSample] {
        &self.samples
    }

    /// How many samples.
    pub fn len(&self) -> usize {
        self.samples.len()
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.samples.is_empty()
    }

    /// The tags `sample` refers to, if any (an index no tags have reads as none).
    pub fn tags_of(&self, sample: &PulledSample) -> Option<&SampleTags> {
        sample.tags.and_then(|i| self.tags.get(i as usize))
    }
}

impl Extend<PulledSample> for TypedSamples {
    fn extend<I: IntoIterator<Item = PulledSample>>(&mut self, samples: I) {
        self.samples.extend(samples);
    }
}

/// One sample: `timestamp`, `end`, `timezone_offset` and `value` of the push wire, typed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PulledSample {
    /// The instant (`timestamp`), in microseconds since the Unix epoch.
    pub at: i64,
    /// The end of an interval sample, in microseconds since the Unix epoch.
    pub end: Option<i64>,
    /// `timezone_offset`, seconds east of UTC; `None` leaves the user's zone to the query.
    pub offset: Option<i32>,
    /// The measured value.
    pub value: f64,
    /// The index of the [`SampleTags`] of its series it carries, if any.
    pub tags: Option<u32>,
}

impl PulledSample {
    /// A sample of `value` at `at` (microseconds since the epoch), without offset, end or tags.
    pub fn new(at: i64, value: f64) -> Self {
        PulledSample {
            at,
            end: None,
            offset: None,
            value,
            tags: None,
        }
    }

    /// A sample of `value` at Unix second `seconds`; `None` when the instant overflows.
    pub fn at_second(seconds: i64, value: f64) -> Option<Self> {
        Some(PulledSample::new(seconds.checked_mul(1_000_000)?, value))
    }

    /// The sample at `instant`.
    pub fn at_instant(instant: DateTime<Utc>, value: f64) -> Self {
        PulledSample::new(instant.timestamp_micros(), value)
    }

    /// With `timezone_offset` `seconds` east of UTC.
    pub fn in_offset(self, seconds: i32) -> Self {
        PulledSample {
            offset: Some(seconds),
            ..self
        }
    }

    /// With its end at `end` (microseconds since the epoch).
    pub fn ending(self, end: i64) -> Self {
        PulledSample {
            end: Some(end),
            ..self
        }
    }

    /// Carrying the tags of index `tags` (from [`TypedSamples::add_tags`]).
    pub fn tagged(self, tags: u32) -> Self {
        PulledSample {
            tags: Some(tags),
            ..self
        }
    }
}

/// What a run of samples shares: the push wire's `type`, `source_workout_id` and
/// `source_sport`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SampleTags {
    /// `type`.
    pub kind: Option<String>,
    /// `source_workout_id`: the workout the samples were recorded in.
    pub source_workout_id: Option<String>,
    /// `source_sport`: that workout's sport slug.
    pub source_sport: Option<String>,
}

impl SampleTags {
    /// The members given, as (wire name, value).
    pub(crate) fn members(&self) -> impl Iterator<Item = (&'static str, &str)> {
        [
            ("type", &self.kind),
            ("source_workout_id", &self.source_workout_id),
            ("source_sport", &self.source_sport),
        ]
        .into_iter()
        .filter_map(|(k, v)| v.as_deref().map(|v| (k, v)))
    }

    /// The value given for the wire member `key`, if it is one of the tags.
    pub(crate) fn get(&self, key: &str) -> Option<&str> {
        self.members().find(|(k, _)| *k == key).map(|(_, v)| v)
    }
}

/// An instant as a typed sample renders it: RFC 3339 in `offset` (`Z` without one, or when it
/// is not an offset), `null` past what a date-time can name.
fn stamp(micros: i64, offset: Option<i32>) -> Value {
    let Some(at) = DateTime::from_timestamp_micros(micros) else {
        return Value::Null;
    };
    let zone = offset
        .and_then(FixedOffset::east_opt)
        .unwrap_or_else(|| Utc.fix());
    at.with_timezone(&zone)
        .to_rfc3339_opts(SecondsFormat::AutoSi, true)
        .into()
}

/// A number as JSON: integral values as integers (`61`, not `61.0`), as a provider's
/// documents write them; what connectors render their records' numbers with too.
pub(crate) fn number(v: f64) -> Value {
    if v.fract() == 0.0 && v.abs() < 9.0e15 {
        Value::from(v as i64)
    } else {
        Value::from(v)
    }
}

/// The push-wire object of a typed sample (see the module docs for its shape).
pub(crate) fn sample_json(
    sample: &PulledSample,
    tags: Option<&SampleTags>,
    unit: Option<&str>,
) -> Value {
    let mut obj = Map::new();
    obj.insert("timestamp".into(), stamp(sample.at, sample.offset));
    if let Some(end) = sample.end {
        obj.insert("end".into(), stamp(end, sample.offset));
    }
    if let Some(offset) = sample.offset {
        obj.insert("timezone_offset".into(), offset.into());
    }
    if let Some(kind) = tags.and_then(|t| t.kind.as_deref()) {
        obj.insert("type".into(), kind.into());
    }
    if let Some(unit) = unit {
        obj.insert("unit".into(), unit.into());
    }
    obj.insert("value".into(), number(sample.value));
    for (key, value) in tags.into_iter().flat_map(SampleTags::members) {
        if key != "type" {
            obj.insert(key.into(), value.into());
        }
    }
    Value::Object(obj)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn a_typed_sample_renders_as_the_object_a_client_would_push() {
        let mut typed = TypedSamples::new();
        let ride = typed.add_tags(SampleTags {
            source_workout_id: Some("13000000001".into()),
            source_sport: Some("ride".into()),
            ..SampleTags::default()
        });
        assert_eq!(
            typed.add_tags(SampleTags {
                source_workout_id: Some("13000000001".into()),
                source_sport: Some("ride".into()),
                ..SampleTags::default()
            }),
            ride,
            "equal tags are kept once"
        );
        let start = "2025-03-01T09:00:00Z".parse::<DateTime<Utc>>().unwrap();
        typed.push(
            PulledSample::at_instant(start, 12.5)
                .in_offset(3600)
                .ending(start.timestamp_micros() + 1_500_000)
                .tagged(ride),
        );
        typed.push(PulledSample::at_second(start.timestamp() + 1, 61.0).unwrap());
        let samples = PulledSamples::from(typed);
        assert_eq!(
            samples.to_json("distance"),
            [
                json!({"timestamp": "2025-03-01T10:00:00+01:00",
                       "end": "2025-03-01T10:00:01.500+01:00", "timezone_offset": 3600,
                       "unit": "m", "value": 12.5, "source_workout_id": "13000000001",
                       "source_sport": "ride"}),
                json!({"timestamp": "2025-03-01T09:00:01Z", "unit": "m", "value": 61}),
            ]
        );
        let mut samples = samples;
        assert!(samples.remove(0));
        assert!(!samples.remove(1));
        assert_eq!(samples.len(), 1);
    }

    #[test]
    fn an_instant_past_what_a_date_time_names_renders_as_null() {
        let far = PulledSample::new(i64::MAX, 1.0);
        assert_eq!(sample_json(&far, None, None)["timestamp"], Value::Null);
        let odd_offset = PulledSample::new(0, 1.0).in_offset(90_000);
        assert_eq!(
            sample_json(&odd_offset, None, None)["timestamp"],
            "1970-01-01T00:00:00Z"
        );
    }
}
