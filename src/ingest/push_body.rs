//! One pass over a push body (serde visitors), so a big body never becomes one JSON tree:
//! timeseries samples are parsed one at a time, each read as its list of members
//! (`push_sample.rs`: the common shape admitted without a JSON object, anything else as the
//! small `Value` a tree holds), validated by `sample.rs` and appended straight to its
//! resource's Arrow builders, then dropped. Everything
//! else (provider, source, the summary parts, unknown members) is small and kept as `Value`s
//! for `push.rs` to validate as before.
//!
//! Violations keep the locations and order of a whole-tree parse: the pass only records the
//! first violation of each timeseries resource (then skips the rest of its samples unparsed),
//! and `push.rs` reports body-level and summary violations before any timeseries one, resources
//! in body order. Duplicate member names keep JSON-tree semantics (the last value wins, at the
//! first one's position). Malformed JSON anywhere is still a `json_invalid` error, whatever
//! came before it.

use std::fmt;

use serde::Deserialize;
use serde::de::value::SeqAccessDeserializer;
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use super::columns::BatchBuilder;
use super::context::internal;
use super::pulled_samples::{PulledSample, SampleTags, sample_json};
use super::push_sample::{self, Element, Members, SampleSeed};
use super::sample;
use crate::schema::{Dataset, INGESTED_AT, Resource, SOURCE_COLUMNS, resource};
use crate::validation::read;
use crate::validation::{Loc, Violation};

/// What one pass over a push body collected.
pub(crate) enum Collected {
    /// The body is not an object (rejected by `push.rs`).
    Other(Value),
    /// An object body.
    Object {
        /// Every member but the samples: `timeseries` is kept as a `null` placeholder so
        /// member order (for `extra_forbidden`) stays the body's.
        head: Map<String, Value>,
        /// The parsed `timeseries` member, when present and not null.
        series: Option<Result<Vec<ResourcePart>, Violation>>,
    },
}

/// One member of `timeseries`: its samples in Arrow builders, or its first violation.
pub(crate) struct ResourcePart {
    name: String,
    /// The resource and its samples (source columns left to the batch), or why not.
    pub(crate) samples: Result<(Resource, BatchBuilder), Violation>,
}

/// Reads a push body in one pass.
pub(crate) struct BodySeed;

impl<'de> DeserializeSeed<'de> for BodySeed {
    type Value = Collected;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Collected, D::Error> {
        d.deserialize_any(BodyVisitor)
    }
}

struct BodyVisitor;

pub(crate) fn root(key: &str) -> Vec<Loc> {
    vec![Loc::from("body"), Loc::from(key)]
}

impl<'de> Visitor<'de> for BodyVisitor {
    type Value = Collected;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a push body")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Collected, A::Error> {
        let mut head = Map::new();
        let mut series = None;
        while let Some(key) = map.next_key::<String>()? {
            if key == "timeseries" {
                series = map.next_value_seed(SeriesSeed)?;
                head.insert(key, Value::Null);
            } else {
                let value: Value = map.next_value()?;
                head.insert(key, value);
            }
        }
        Ok(Collected::Object { head, series })
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Collected, A::Error> {
        Value::deserialize(SeqAccessDeserializer::new(seq)).map(Collected::Other)
    }

    fn visit_bool<E>(self, v: bool) -> Result<Collected, E> {
        Ok(Collected::Other(Value::Bool(v)))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Collected, E> {
        Ok(Collected::Other(Value::from(v)))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Collected, E> {
        Ok(Collected::Other(Value::from(v)))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Collected, E> {
        Ok(Collected::Other(Value::from(v)))
    }

    fn visit_str<E>(self, v: &str) -> Result<Collected, E> {
        Ok(Collected::Other(Value::from(v)))
    }

    fn visit_unit<E>(self) -> Result<Collected, E> {
        Ok(Collected::Other(Value::Null))
    }
}

/// The `timeseries` member: `None` when null.
struct SeriesSeed;

impl<'de> DeserializeSeed<'de> for SeriesSeed {
    type Value = Option<Result<Vec<ResourcePart>, Violation>>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        let value = d.deserialize_any(SeriesVisitor)?;
        Ok(match value {
            Series::Null => None,
            Series::Parts(parts) => Some(Ok(parts)),
            Series::Other(v) => Some(Err(read::object(&v, &root("timeseries"))
                .err()
                .unwrap_or_else(|| {
                    Violation::value(root("timeseries"), "Input should be an object")
                }))),
        })
    }
}

enum Series {
    Null,
    Parts(Vec<ResourcePart>),
    Other(Value),
}

struct SeriesVisitor;

impl<'de> Visitor<'de> for SeriesVisitor {
    type Value = Series;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object of sample lists")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Series, A::Error> {
        let mut parts: Vec<ResourcePart> = Vec::new();
        while let Some(name) = map.next_key::<String>()? {
            let mut loc = root("timeseries");
            loc.push(Loc::from(name.as_str()));
            let samples = match resource(&name) {
                Some(res) => map.next_value_seed(SamplesSeed { resource: res, loc })?,
                None => {
                    map.next_value::<IgnoredAny>()?;
                    Err(unknown_resource(loc))
                }
            };
            add_part(&mut parts, name, samples);
        }
        Ok(Series::Parts(parts))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Series, A::Error> {
        Value::deserialize(SeqAccessDeserializer::new(seq)).map(Series::Other)
    }

    fn visit_bool<E>(self, v: bool) -> Result<Series, E> {
        Ok(Series::Other(Value::Bool(v)))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Series, E> {
        Ok(Series::Other(Value::from(v)))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Series, E> {
        Ok(Series::Other(Value::from(v)))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Series, E> {
        Ok(Series::Other(Value::from(v)))
    }

    fn visit_str<E>(self, v: &str) -> Result<Series, E> {
        Ok(Series::Other(Value::from(v)))
    }

    fn visit_unit<E>(self) -> Result<Series, E> {
        Ok(Series::Null)
    }
}

/// One resource's sample list.
struct SamplesSeed {
    resource: Resource,
    loc: Vec<Loc>,
}

pub(crate) type Samples = Result<(Resource, BatchBuilder), Violation>;

impl<'de> DeserializeSeed<'de> for SamplesSeed {
    type Value = Samples;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Samples, D::Error> {
        d.deserialize_any(self)
    }
}

impl SamplesSeed {
    fn not_a_list(&self, value: Value) -> Samples {
        Err(read::array(&value, &self.loc)
            .err()
            .unwrap_or_else(|| Violation::value(self.loc.clone(), "Input should be an array")))
    }
}

/// The columns every sample of a push shares, filled once per batch.
const SHARED: [&str; 5] = [
    SOURCE_COLUMNS[0],
    SOURCE_COLUMNS[1],
    SOURCE_COLUMNS[2],
    SOURCE_COLUMNS[3],
    INGESTED_AT,
];

/// One resource's samples on their way into Arrow builders: each validated by `sample.rs`
/// at its location (`[..., <resource>, <index>]`) and appended, one at a time.
pub(crate) struct SampleSink {
    rules: sample::Rules,
    builder: BatchBuilder,
    loc: Vec<Loc>,
    index: usize,
    /// The `type` of the last sample read with [`SampleSink::push_members`].
    kinds: push_sample::Kinds,
}

impl SampleSink {
    /// A sink for `resource`'s list at `loc`.
    pub(crate) fn new(resource: Resource, loc: Vec<Loc>) -> Self {
        let schema = Dataset::Timeseries(resource).schema();
        SampleSink {
            rules: sample::Rules::new(resource),
            builder: BatchBuilder::with_constants(schema, &SHARED),
            loc,
            index: 0,
            kinds: push_sample::Kinds::default(),
        }
    }

    /// Validates and appends the next sample; its violation otherwise.
    pub(crate) fn push(&mut self, value: &Value) -> Result<(), Violation> {
        self.loc.push(Loc::Index(self.index));
        let parsed = sample::parse(&self.rules, value, &self.loc)
            .and_then(|row| self.builder.push(row).map_err(internal));
        self.loc.pop();
        self.index += 1;
        parsed
    }

    /// Validates and appends the next sample, read as its members (`push_sample.rs`): straight
    /// to the builders when it has the common shape, else as the object a JSON tree holds.
    /// Empties `members`.
    pub(crate) fn push_members(&mut self, members: &mut Members<'_>) -> Result<(), Violation> {
        match push_sample::shortcut(&self.rules, members, &mut self.kinds) {
            Some(row) => {
                members.clear();
                self.index += 1;
                self.builder.push(row).map_err(internal)
            }
            None => self.push(&push_sample::object(members)),
        }
    }

    /// Validates and appends the next typed sample (`tags`: the tags it carries): straight to
    /// the builders when `sample::typed_row` admits it, else as its JSON rendering, which
    /// [`SampleSink::push`] admits or refuses as a pushed sample.
    pub(crate) fn push_typed(
        &mut self,
        typed: &PulledSample,
        tags: Option<&SampleTags>,
    ) -> Result<(), Violation> {
        match sample::typed_row(&self.rules, typed, tags) {
            Some(row) => {
                self.index += 1;
                self.builder.push(row).map_err(internal)
            }
            None => self.push(&sample_json(typed, tags, Some(self.rules.resource().unit))),
        }
    }

    /// The resource and its samples.
    pub(crate) fn finish(self) -> (Resource, BatchBuilder) {
        (self.rules.resource(), self.builder)
    }
}

/// The violation of a `timeseries` member that names no resource.
pub(crate) fn unknown_resource(loc: Vec<Loc>) -> Violation {
    Violation::new(loc, "extra_forbidden", "Unknown timeseries resource")
}

/// Adds a resource's list to the parts; a name given twice keeps the last list at the first
/// one's position, as a JSON tree does.
pub(crate) fn add_part(parts: &mut Vec<ResourcePart>, name: String, samples: Samples) {
    match parts.iter_mut().find(|p| p.name == name) {
        Some(part) => part.samples = samples,
        None => parts.push(ResourcePart { name, samples }),
    }
}

impl<'de> Visitor<'de> for SamplesSeed {
    type Value = Samples;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of samples")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Samples, A::Error> {
        let mut sink = SampleSink::new(self.resource, self.loc);
        // One list of members for every sample, its names and strings borrowed from the body.
        let mut members = Members::new();
        while let Some(element) = seq.next_element_seed(SampleSeed(&mut members))? {
            let pushed = match element {
                Element::Object => sink.push_members(&mut members),
                Element::Other(value) => sink.push(&value),
            };
            if let Err(violation) = pushed {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                return Ok(Err(violation));
            }
        }
        Ok(Ok(sink.finish()))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Samples, A::Error> {
        let value = Value::deserialize(serde::de::value::MapAccessDeserializer::new(map))?;
        Ok(self.not_a_list(value))
    }

    fn visit_bool<E>(self, v: bool) -> Result<Samples, E> {
        Ok(self.not_a_list(Value::Bool(v)))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Samples, E> {
        Ok(self.not_a_list(Value::from(v)))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Samples, E> {
        Ok(self.not_a_list(Value::from(v)))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Samples, E> {
        Ok(self.not_a_list(Value::from(v)))
    }

    fn visit_str<E>(self, v: &str) -> Result<Samples, E> {
        Ok(self.not_a_list(Value::from(v)))
    }

    fn visit_unit<E>(self) -> Result<Samples, E> {
        Ok(self.not_a_list(Value::Null))
    }
}
