//! The seam between a pull and ingest: what a connector made of a provider's answer, as a
//! typed push body.
//!
//! A connector (`crate::sync`) normalises a provider's documents into the records of a push
//! body (`data-model.md`'s wire names) and hands them over as a [`PulledBody`]. The envelope is
//! typed: the provider and source type, which table each record belongs to ([`Table`], not a
//! member name), the profile as at most one record, the samples by resource, and the provider
//! document each summary record was made from *beside* the record
//! ([`PulledRecord::document`], kept for the raw getters) rather than smuggled inside it.
//!
//! Decision: the records' own members stay JSON objects in the push wire format, and so do
//! the samples of the sparse series; a dense series travels as [`TypedSamples`], the same
//! members typed (`pulled_samples.rs`), rendered as the wire's objects by
//! [`PulledBody::to_json`]. [`parse_pulled`] validates them with the push API's own rules (`summary.rs`,
//! `sample.rs`), in the order and at the locations a pushed body's violations have
//! (`["body", "sleep", 3, "bedtime_start"]`), so pulled and pushed data have one validation
//! path and a connector cannot store what a client could not push. A second, typed model of
//! every record would be a second definition of the wire to keep in step with the first.
//!
//! [`PulledBody::drop_record`] removes the record a violation names, for a pull that keeps
//! the records ingest admits and logs the others (`crate::sync::screen`).

use chrono::{DateTime, Utc};
use serde_json::{Map, Value};

use super::fields::push_key;
use super::pulled_samples::PulledSamples;
use super::push::{Documents, PushBatches, PushUser, assemble};
use super::push_body::{Collected, SampleSink, add_part, root, unknown_resource};
use crate::schema::{Table, resource};
use crate::validation::{Invalid, Loc};

/// A connector's answer as the push body it stands for.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PulledBody {
    /// The provider's catalogue slug.
    pub provider: String,
    /// The source type (`ring`, `watch`, `automatic`, ...); `None`: the provider's default.
    pub source_type: Option<String>,
    /// The summary records per table, in body order; [`Table::Profile`] is
    /// [`PulledBody::profile`].
    pub tables: Vec<(Table, Vec<PulledRecord>)>,
    /// The profile, when the pull has one.
    pub profile: Option<PulledRecord>,
    /// The samples per resource name (`heartrate`), in body order.
    pub timeseries: Vec<(String, PulledSamples)>,
}

/// One summary record and the provider document it was made from.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PulledRecord {
    /// The record's members, in the push wire format.
    pub fields: Map<String, Value>,
    /// The provider's document, as its API answered it; `None` keeps no raw payload.
    pub document: Option<Value>,
}

impl PulledRecord {
    /// `fields` (a JSON object; anything else is an empty record, which ingest refuses) made
    /// from `document`.
    pub fn new(fields: Value, document: Option<Value>) -> Self {
        let fields = match fields {
            Value::Object(map) => map,
            _ => Map::new(),
        };
        PulledRecord { fields, document }
    }
}

/// A record made from no document the raw getters keep.
impl From<Value> for PulledRecord {
    fn from(fields: Value) -> Self {
        PulledRecord::new(fields, None)
    }
}

impl PulledBody {
    /// An empty body of `provider` with source type `source_type`.
    pub fn new(provider: &str, source_type: &str) -> Self {
        PulledBody {
            provider: provider.to_owned(),
            source_type: Some(source_type.to_owned()),
            ..PulledBody::default()
        }
    }

    /// The records of `table`, if the body has a list of them.
    pub fn records(&self, table: Table) -> Option<&[PulledRecord]> {
        self.tables
            .iter()
            .find(|(t, _)| *t == table)
            .map(|(_, r)| r.as_slice())
    }

    /// The push body it stands for, without the documents: what a client would push for the
    /// same data (tests compare it with their expected bodies).
    pub fn to_json(&self) -> Value {
        let mut body = self.head();
        if !self.timeseries.is_empty() {
            let series = self
                .timeseries
                .iter()
                .map(|(name, samples)| (name.clone(), Value::Array(samples.to_json(name))));
            body.insert("timeseries".into(), Value::Object(series.collect()));
        }
        Value::Object(body)
    }

    /// The members of the push body but the samples: provider, source, the summary parts and
    /// the profile.
    fn head(&self) -> Map<String, Value> {
        let mut body = Map::new();
        body.insert("provider".into(), self.provider.clone().into());
        if let Some(kind) = &self.source_type {
            let mut source = Map::new();
            source.insert("type".into(), kind.clone().into());
            body.insert("source".into(), Value::Object(source));
        }
        for (table, records) in &self.tables {
            let list = records.iter().map(|r| Value::Object(r.fields.clone()));
            body.insert(push_key(*table).into(), Value::Array(list.collect()));
        }
        if let Some(profile) = &self.profile {
            body.insert("profile".into(), Value::Object(profile.fields.clone()));
        }
        body
    }

    /// Reads a push body (the demo generator's) as a pulled one, each summary record its own
    /// document. Members that are not parts of a push body are refused by name.
    pub fn from_json(body: Value) -> Result<Self, String> {
        let Value::Object(obj) = body else {
            return Err("a push body is a JSON object".into());
        };
        let mut out = PulledBody::default();
        let own = |v: Value| PulledRecord::new(v.clone(), Some(v));
        for (key, value) in obj {
            match key.as_str() {
                "provider" => out.provider = value.as_str().unwrap_or_default().to_owned(),
                "source" => out.source_type = value["type"].as_str().map(str::to_owned),
                "profile" => out.profile = Some(own(value)),
                "timeseries" => {
                    let Value::Object(series) = value else {
                        return Err("`timeseries` is not an object".into());
                    };
                    for (name, samples) in series {
                        let Value::Array(samples) = samples else {
                            return Err(format!("`timeseries.{name}` is not a list"));
                        };
                        out.timeseries.push((name, samples.into()));
                    }
                }
                part => {
                    let table = Table::ALL
                        .into_iter()
                        .find(|t| push_key(*t) == part && *t != Table::Profile)
                        .ok_or_else(|| format!("`{part}` is not a part of a push body"))?;
                    let Value::Array(records) = value else {
                        return Err(format!("`{part}` is not a list"));
                    };
                    out.tables
                        .push((table, records.into_iter().map(own).collect()));
                }
            }
        }
        Ok(out)
    }

    /// Removes the record a violation's location names: `["body", <part>, i, ...]`,
    /// `["body", "timeseries", <resource>, i, ...]` or `["body", "profile", ...]`. `false`
    /// when it names no record (a body-level violation).
    pub fn drop_record(&mut self, loc: &[Loc]) -> bool {
        let key = |i: usize| match loc.get(i) {
            Some(Loc::Key(k)) => Some(k.as_str()),
            _ => None,
        };
        let index = |i: usize| match loc.get(i) {
            Some(Loc::Index(n)) => Some(*n),
            _ => None,
        };
        fn remove_at<T>(list: Option<&mut Vec<T>>, i: usize) -> bool {
            match list {
                Some(list) if i < list.len() => {
                    list.remove(i);
                    true
                }
                _ => false,
            }
        }
        match (key(0), key(1)) {
            (Some("body"), Some("profile")) => self.profile.take().is_some(),
            (Some("body"), Some("timeseries")) => {
                let (Some(name), Some(i)) = (key(2), index(3)) else {
                    return false;
                };
                let series = self.timeseries.iter_mut().find(|(n, _)| n == name);
                series.is_some_and(|(_, samples)| samples.remove(i))
            }
            (Some("body"), Some(part)) => {
                let list = self.tables.iter_mut().find(|(t, _)| push_key(*t) == part);
                match index(2) {
                    Some(i) => remove_at(list.map(|(_, records)| records), i),
                    None => false,
                }
            }
            _ => false,
        }
    }
}

/// Parses and validates a pulled body as [`super::parse_push`] does a pushed one (the same
/// rules, violations and batches), keeping each summary record's document as its raw payload.
pub fn parse_pulled(
    body: &PulledBody,
    user: &PushUser,
    now: DateTime<Utc>,
) -> Result<PushBatches, Invalid> {
    let mut head = body.head();
    let mut series = None;
    if !body.timeseries.is_empty() {
        head.insert("timeseries".into(), Value::Null);
        let mut parts = Vec::new();
        for (name, samples) in &body.timeseries {
            let mut loc = root("timeseries");
            loc.push(Loc::from(name.as_str()));
            let part = match resource(name) {
                None => Err(unknown_resource(loc)),
                Some(res) => {
                    let mut sink = SampleSink::new(res, loc);
                    let pushed = match samples {
                        PulledSamples::Json(samples) => {
                            samples.iter().try_for_each(|s| sink.push(s))
                        }
                        PulledSamples::Typed(typed) => typed
                            .samples()
                            .iter()
                            .try_for_each(|s| sink.push_typed(s, typed.tags_of(s))),
                    };
                    pushed.map(|()| sink.finish())
                }
            };
            add_part(&mut parts, name.clone(), part);
        }
        series = Some(Ok(parts));
    }
    assemble(
        Collected::Object { head, series },
        user,
        now,
        Documents::Pulled(body),
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::ingest::parse_push;
    use serde_json::json;

    fn now() -> DateTime<Utc> {
        "2026-01-01T00:00:00Z".parse().unwrap()
    }

    fn body() -> PulledBody {
        let workout = |id: &str, start: &str, end: &str| {
            PulledRecord::new(
                json!({"id": id, "time_start": start, "time_end": end}),
                Some(json!({"provider_id": id})),
            )
        };
        PulledBody {
            tables: vec![(
                Table::Workout,
                vec![
                    workout(
                        "w1",
                        "2025-03-01T10:00:00+01:00",
                        "2025-03-01T11:00:00+01:00",
                    ),
                    workout(
                        "w2",
                        "2025-03-01T14:00:00+01:00",
                        "2025-03-01T15:00:00+01:00",
                    ),
                ],
            )],
            timeseries: vec![(
                "heartrate".into(),
                vec![json!({"timestamp": "2025-03-01T10:00:00Z", "unit": "bpm", "value": 61})]
                    .into(),
            )],
            ..PulledBody::new("oura", "ring")
        }
    }

    #[test]
    fn a_pulled_body_parses_as_its_push_body_does() {
        let pulled = parse_pulled(&body(), &PushUser::default(), now()).unwrap();
        let pushed = parse_push(&body().to_json(), &PushUser::default(), now()).unwrap();
        assert_eq!(
            pulled.counts(),
            json!({"workouts": 2, "timeseries": {"heartrate": 1}})
        );
        assert_eq!(pulled.batches.len(), pushed.batches.len());
        for ((d1, b1), (d2, b2)) in pulled.batches.iter().zip(&pushed.batches) {
            assert_eq!(d1, d2);
            assert_eq!(b1, b2);
        }
        // A pushed record is its own payload; a pulled one keeps its provider document.
        let docs: Vec<_> = pulled.raw.iter().map(|r| r.doc["data"].clone()).collect();
        assert_eq!(
            docs,
            [json!({"provider_id": "w1"}), json!({"provider_id": "w2"})]
        );
        assert_eq!(pushed.raw[0].doc["data"]["id"], "w1");
    }

    #[test]
    fn violations_sit_where_a_pushed_body_has_them_and_name_the_record_to_drop() {
        let mut bad = body();
        bad.tables[0].1[1]
            .fields
            .insert("time_end".into(), json!("not a time"));
        bad.timeseries
            .push(("no_such_resource".into(), PulledSamples::default()));
        let err = parse_pulled(&bad, &PushUser::default(), now()).unwrap_err();
        let pushed = parse_push(&bad.to_json(), &PushUser::default(), now()).unwrap_err();
        assert_eq!(err.0[0].loc, pushed.0[0].loc);
        assert!(bad.drop_record(&err.0[0].loc));
        assert_eq!(bad.records(Table::Workout).unwrap().len(), 1);
        let err = parse_pulled(&bad, &PushUser::default(), now()).unwrap_err();
        assert_eq!(
            err.0[0].loc,
            vec![
                Loc::from("body"),
                Loc::from("timeseries"),
                Loc::from("no_such_resource")
            ]
        );
        assert!(
            !bad.drop_record(&err.0[0].loc),
            "a whole resource is no record"
        );
    }

    /// Every typed sample, admitted or refused, fares as its JSON rendering does when pushed:
    /// the same batches, or the same violations at the same locations.
    #[test]
    fn typed_samples_fare_as_their_json_rendering_pushed() {
        use crate::ingest::{PulledSample, SampleTags, TypedSamples};
        let at = "2025-03-01T10:00:00Z".parse::<DateTime<Utc>>().unwrap();
        let us = at.timestamp_micros();
        let ride = SampleTags {
            source_workout_id: Some("w1".into()),
            source_sport: Some("ride".into()),
            ..SampleTags::default()
        };
        let ldl = SampleTags {
            kind: Some("ldl".into()),
            ..SampleTags::default()
        };
        let plain = PulledSample::new(us, 61.0);
        let far = DateTime::parse_from_rfc3339("9999-12-31T23:30:00Z").unwrap();
        let cases: Vec<(&str, PulledSample, Option<SampleTags>)> = vec![
            ("heartrate", plain, None),
            ("heartrate", plain.in_offset(3600), Some(ride.clone())),
            ("heartrate", PulledSample::new(us + 1_500, 61.25), None),
            ("heartrate", PulledSample::new(us, -0.0), None),
            ("heartrate", PulledSample::new(us, 301.0), None),
            ("heartrate", PulledSample::new(us, f64::NAN), None),
            ("heartrate", plain.in_offset(19 * 3600), None),
            ("heartrate", plain.ending(us + 60_000_000), None),
            ("heartrate", plain.in_offset(-18 * 3600), Some(ldl.clone())),
            ("heartrate", PulledSample::new(i64::MAX, 61.0), None),
            (
                "heartrate",
                PulledSample::at_instant(far.to_utc(), 61.0).in_offset(3600),
                None,
            ),
            ("distance", plain.ending(us + 5_250_000), Some(ride.clone())),
            ("distance", plain.ending(us - 1), None),
            ("distance", plain.in_offset(-25_200), None),
            ("distance", PulledSample::new(us, -1.0), None),
            ("cholesterol", plain, Some(ldl.clone())),
            ("cholesterol", plain, None),
            ("stress_level", PulledSample::new(us, 101.0), None),
            ("blood_pressure", plain, None),
        ];
        let mut fast_rows = 0;
        for (i, (name, sample, tags)) in cases.into_iter().enumerate() {
            // A valid sample first, where the resource has one without tags, so that the
            // violation's index is the case's.
            let lead = !matches!(name, "cholesterol" | "blood_pressure");
            let mut typed = TypedSamples::new();
            if lead {
                typed.push(plain);
            }
            let sample = match tags {
                Some(tags) => sample.tagged(typed.add_tags(tags)),
                None => sample,
            };
            typed.push(sample);
            let rules = super::super::sample::Rules::new(resource(name).unwrap());
            let fast = super::super::sample::typed_row(&rules, &sample, typed.tags_of(&sample));
            fast_rows += usize::from(fast.is_some());
            let body = PulledBody {
                timeseries: vec![(name.into(), typed.into())],
                ..PulledBody::new("oura", "ring")
            };
            let pulled = parse_pulled(&body, &PushUser::default(), now());
            let pushed = parse_push(&body.to_json(), &PushUser::default(), now());
            match (pulled, pushed) {
                (Ok(pulled), Ok(pushed)) => {
                    assert_eq!(
                        pulled.batches, pushed.batches,
                        "case {i}: {name} {sample:?}"
                    );
                }
                (Err(pulled), Err(pushed)) => {
                    assert_eq!(pulled, pushed, "case {i}: {name} {sample:?}");
                    let index = Loc::Index(usize::from(lead));
                    assert_eq!(pulled.0[0].loc[3], index, "case {i}");
                }
                (pulled, pushed) => panic!(
                    "case {i}: {name} {sample:?}: pulled {:?}, pushed {:?}",
                    pulled.err(),
                    pushed.err()
                ),
            }
        }
        // The admitted cases took the typed path, not the rendering: the comparison above held
        // the typed rows to the parsed ones.
        assert_eq!(fast_rows, 7);
    }

    #[test]
    fn a_push_body_reads_back_as_pulled_with_its_records_as_documents() {
        let json = body().to_json();
        let back = PulledBody::from_json(json.clone()).unwrap();
        assert_eq!(back.to_json(), json);
        let first = &back.records(Table::Workout).unwrap()[0];
        assert_eq!(first.document, Some(Value::Object(first.fields.clone())));
        let err = PulledBody::from_json(json!({"provider": "oura", "sleeps": []})).unwrap_err();
        assert!(err.contains("sleeps"), "{err}");
    }
}
