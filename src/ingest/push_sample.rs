//! One pushed timeseries sample read member by member, without a JSON object.
//!
//! A JSON push of heart rate is almost all samples of one shape,
//! `{"timestamp": "<RFC 3339>", "timezone_offset": <seconds>, "unit": "<the resource's>",
//! "value": <number>}` (and `type` on the typed resources). Read into a `Value` each one cost an
//! ordered map with hashed keys, a `String` per key and per timestamp and their frees: most of
//! a JSON push's parse (issue 43). Here a sample's members are read into a reused list whose
//! names and strings borrow the body wherever it has no escapes, and a sample of that shape is
//! handed to [`sample::typed_row`], the same shortcut typed pulled samples take, which admits it
//! only when [`sample::parse`] would certainly admit it, into the same row.
//!
//! Anything else (another member, a member given twice, a type or value outside the shape, a
//! value the shortcut is not certain of) is rebuilt as the `Value` a JSON tree would hold (in
//! the body's order, a repeated name keeping the last value at the first one's position) and
//! goes through [`sample::parse`], so its row, or its violation with its location and input,
//! is exactly a whole-tree parse's. A test holds the two paths together.

use std::borrow::Cow;
use std::fmt;

use chrono::DateTime;
use serde::Deserialize;
use serde::de::value::{MapAccessDeserializer, SeqAccessDeserializer};
use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

use super::columns::Row;
use super::pulled_samples::{PulledSample, SampleTags};
use super::sample;
use super::zone::MAX_OFFSET;

/// A member's value as read: the shapes the shortcut takes without a `Value`.
#[derive(Debug)]
pub(crate) enum Raw<'de> {
    Str(Cow<'de, str>),
    Num(Number),
    Null,
    /// Anything else, as a JSON tree holds it.
    Other(Value),
}

impl From<Raw<'_>> for Value {
    fn from(raw: Raw<'_>) -> Value {
        match raw {
            Raw::Str(s) => Value::String(s.into_owned()),
            Raw::Num(n) => Value::Number(n),
            Raw::Null => Value::Null,
            Raw::Other(v) => v,
        }
    }
}

/// A sample's members in the body's order.
pub(crate) type Members<'de> = Vec<(Cow<'de, str>, Raw<'de>)>;

/// One element of a sample list: an object (its members left in the list handed to the seed)
/// or anything else, which [`sample::parse`] refuses.
pub(crate) enum Element {
    Object,
    Other(Value),
}

/// Reads one element of a sample list into `members` (cleared first).
pub(crate) struct SampleSeed<'a, 'de>(pub(crate) &'a mut Members<'de>);

impl<'de> DeserializeSeed<'de> for SampleSeed<'_, 'de> {
    type Value = Element;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Element, D::Error> {
        self.0.clear();
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for SampleSeed<'_, 'de> {
    type Value = Element;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a sample")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Element, A::Error> {
        while let Some(name) = map.next_key_seed(NameSeed)? {
            let raw = map.next_value_seed(RawSeed)?;
            self.0.push((name, raw));
        }
        Ok(Element::Object)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Element, A::Error> {
        Value::deserialize(SeqAccessDeserializer::new(seq)).map(Element::Other)
    }

    fn visit_bool<E>(self, v: bool) -> Result<Element, E> {
        Ok(Element::Other(Value::Bool(v)))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Element, E> {
        Ok(Element::Other(Value::from(v)))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Element, E> {
        Ok(Element::Other(Value::from(v)))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Element, E> {
        Ok(Element::Other(Value::from(v)))
    }

    fn visit_str<E>(self, v: &str) -> Result<Element, E> {
        Ok(Element::Other(Value::from(v)))
    }

    fn visit_unit<E>(self) -> Result<Element, E> {
        Ok(Element::Other(Value::Null))
    }
}

/// A member name, borrowed from the body when it can be.
struct NameSeed;

impl<'de> DeserializeSeed<'de> for NameSeed {
    type Value = Cow<'de, str>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_str(NameSeed)
    }
}

impl<'de> Visitor<'de> for NameSeed {
    type Value = Cow<'de, str>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a member name")
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Cow::Borrowed(v))
    }

    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Cow::Owned(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
        Ok(Cow::Owned(v))
    }
}

/// A member's value.
struct RawSeed;

impl<'de> DeserializeSeed<'de> for RawSeed {
    type Value = Raw<'de>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(RawSeed)
    }
}

impl<'de> Visitor<'de> for RawSeed {
    type Value = Raw<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Raw<'de>, E> {
        Ok(Raw::Str(Cow::Borrowed(v)))
    }

    fn visit_str<E>(self, v: &str) -> Result<Raw<'de>, E> {
        Ok(Raw::Str(Cow::Owned(v.to_owned())))
    }

    fn visit_string<E>(self, v: String) -> Result<Raw<'de>, E> {
        Ok(Raw::Str(Cow::Owned(v)))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Raw<'de>, E> {
        Ok(Raw::Num(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Raw<'de>, E> {
        Ok(Raw::Num(v.into()))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Raw<'de>, E> {
        // As a JSON tree holds it: a float no JSON number names is `null`.
        Ok(Number::from_f64(v).map_or(Raw::Null, Raw::Num))
    }

    fn visit_unit<E>(self) -> Result<Raw<'de>, E> {
        Ok(Raw::Null)
    }

    fn visit_none<E>(self) -> Result<Raw<'de>, E> {
        Ok(Raw::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Raw<'de>, D::Error> {
        d.deserialize_any(RawSeed)
    }

    fn visit_bool<E>(self, v: bool) -> Result<Raw<'de>, E> {
        Ok(Raw::Other(Value::Bool(v)))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Raw<'de>, A::Error> {
        Value::deserialize(SeqAccessDeserializer::new(seq)).map(Raw::Other)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Raw<'de>, A::Error> {
        Value::deserialize(MapAccessDeserializer::new(map)).map(Raw::Other)
    }
}

/// The `Value` a JSON tree holds for `members`: in their order, a name given twice keeping the
/// last value at the first one's position. Empties `members`.
pub(crate) fn object(members: &mut Members<'_>) -> Value {
    let mut map = Map::with_capacity(members.len());
    for (name, raw) in members.drain(..) {
        map.insert(name.into_owned(), raw.into());
    }
    Value::Object(map)
}

/// The `type` tags of the last typed sample read, kept so that a run of samples of one type
/// shares one [`SampleTags`].
#[derive(Default)]
pub(crate) struct Kinds(Option<SampleTags>);

impl Kinds {
    fn of(&mut self, kind: &str) -> &SampleTags {
        let same = self
            .0
            .as_ref()
            .is_some_and(|t| t.kind.as_deref() == Some(kind));
        if !same {
            self.0 = Some(SampleTags {
                kind: Some(kind.to_owned()),
                ..SampleTags::default()
            });
        }
        self.0.get_or_insert_default()
    }
}

/// The row of a sample of the common shape (see the module docs), when
/// [`sample::typed_row`] admits it; `None` for anything else, which the caller parses whole.
pub(crate) fn shortcut(
    rules: &sample::Rules,
    members: &Members<'_>,
    kinds: &mut Kinds,
) -> Option<Row> {
    let mut at = None;
    let mut value = None;
    let mut unit = false;
    let mut offset: Option<Option<i32>> = None;
    let mut kind: Option<Option<&str>> = None;
    for (name, raw) in members {
        match (name.as_ref(), raw) {
            ("timestamp", Raw::Str(s)) if at.is_none() => {
                at = Some(DateTime::parse_from_rfc3339(s).ok()?.timestamp_micros());
            }
            // A negative zero is left to the tree's parse, which keeps its sign
            // (`typed_row` stores the zero a typed sample's rendering reads back as).
            ("value", Raw::Num(n)) if value.is_none() => {
                value = Some(n.as_f64().filter(|v| *v != 0.0 || v.is_sign_positive())?);
            }
            ("unit", raw) if !unit => {
                unit = true;
                match raw {
                    Raw::Null => {}
                    Raw::Str(s) if s == rules.resource().unit => {}
                    _ => return None,
                }
            }
            ("timezone_offset", raw) if offset.is_none() => {
                offset = Some(match raw {
                    Raw::Null => None,
                    Raw::Num(n) => Some(
                        n.as_i64()
                            .filter(|s| s.abs() <= MAX_OFFSET)
                            .and_then(|s| i32::try_from(s).ok())?,
                    ),
                    _ => return None,
                });
            }
            ("type", raw) if kind.is_none() => {
                kind = Some(match raw {
                    Raw::Null => None,
                    Raw::Str(s) => Some(s.as_ref()),
                    _ => return None,
                });
            }
            _ => return None,
        }
    }
    let mut typed = PulledSample::new(at?, value?);
    typed.offset = offset.flatten();
    let tags = kind.flatten().map(|k| kinds.of(k));
    sample::typed_row(rules, &typed, tags)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::resource;
    use crate::validation::{Loc, Violation};

    /// A sample read as members, by the shortcut where it applies (the `bool`), else parsed
    /// whole as the object the members rebuild; the rebuilt object is also returned.
    fn via_members(
        rules: &sample::Rules,
        text: &str,
        loc: &[Loc],
    ) -> (Result<Row, Violation>, bool, Value) {
        let mut de = serde_json::Deserializer::from_str(text);
        let mut members = Members::new();
        let element = SampleSeed(&mut members).deserialize(&mut de).unwrap();
        match element {
            Element::Object => {
                let fast = shortcut(rules, &members, &mut Kinds::default());
                let tree = object(&mut members);
                match fast {
                    Some(row) => (Ok(row), true, tree),
                    None => (sample::parse(rules, &tree, loc), false, tree),
                }
            }
            Element::Other(value) => (sample::parse(rules, &value, loc), false, value),
        }
    }

    /// Every sample, of the common shape or not, admitted or refused, reads as a JSON tree of
    /// it parses: the same row cell for cell, or the same violation with its location and
    /// input; and the members rebuild exactly the tree.
    #[test]
    fn a_sample_read_as_members_fares_as_its_json_tree() {
        let cases: &[(&str, &str, bool)] = &[
            // (resource, sample, whether the shortcut takes it)
            (
                "heartrate",
                r#"{"timestamp": "2025-03-01T10:00:00+00:00", "timezone_offset": 0, "unit": "bpm", "value": 61.5}"#,
                true,
            ),
            (
                "heartrate",
                r#"{"value": 61, "timestamp": "2025-03-01T11:00:00.123456789+01:00"}"#,
                true,
            ),
            (
                "heartrate",
                r#"{"timestamp": "2025-03-01T10:00:00Z", "timezone_offset": null, "unit": null, "value": 0}"#,
                true,
            ),
            (
                "heartrate",
                r#"{"timestamp": "2025-03-01T10:00:00Z", "timezone_offset": -64800, "value": 300}"#,
                true,
            ),
            (
                "heartrate",
                r#"{"time\u0073tamp": "2025-03-01T10:00:00Z", "value": 1e2}"#,
                true,
            ),
            (
                "heartrate",
                r#"{"timestamp": "2025-03-01T10:00:00Z", "value": -0.0}"#,
                false,
            ),
            // Outside the shape: parsed whole, admitted or refused as a tree is.
            (
                "heartrate",
                r#"{"timestamp": "2025-03-01T10:00:00Z", "timezone_offset": "+01:00", "value": 61}"#,
                false,
            ),
            (
                "heartrate",
                r#"{"timestamp": "2025-03-01T10:00:00Z", "timezone_offset": 3600.0, "value": 61}"#,
                false,
            ),
            (
                "heartrate",
                r#"{"timestamp": "2025-03-01T10:00:00Z", "timezone_offset": 64801, "value": 61}"#,
                false,
            ),
            (
                "heartrate",
                r#"{"timestamp": "2025-03-01T10:00:00Z", "unit": "count/min", "value": 61}"#,
                false,
            ),
            (
                "heartrate",
                r#"{"timestamp": "2025-03-01T10:00:00Z", "value": 301}"#,
                false,
            ),
            (
                "heartrate",
                r#"{"timestamp": "2025-03-01T10:00:00Z", "value": "61"}"#,
                false,
            ),
            (
                "heartrate",
                r#"{"timestamp": "2025-03-01T10:00:00Z", "value": null}"#,
                false,
            ),
            (
                "heartrate",
                r#"{"timestamp": "2025-03-01 10:00:00", "value": 61}"#,
                false,
            ),
            (
                "heartrate",
                r#"{"timestamp": 1740823200, "value": 61}"#,
                false,
            ),
            ("heartrate", r#"{"value": 61}"#, false),
            (
                "heartrate",
                r#"{"timestamp": "0000-01-01T00:30:00+01:00", "value": 61}"#,
                false,
            ),
            (
                "heartrate",
                r#"{"timestamp": "2025-03-01T10:00:00Z", "value": 61, "value": 70}"#,
                false,
            ),
            (
                "heartrate",
                r#"{"timestamp": "2025-03-01T10:00:00Z", "value": 61, "timestamp": "2025-03-02T10:00:00Z"}"#,
                false,
            ),
            (
                "heartrate",
                r#"{"timestamp": "2025-03-01T10:00:00Z", "value": 61, "note": [1, {"a": true}]}"#,
                false,
            ),
            (
                "heartrate",
                r#"{"timestamp": "2025-03-01T10:00:00Z", "value": 61, "source_sport": "ride"}"#,
                false,
            ),
            (
                "heartrate",
                r#"{"timestamp": "2025-03-01T10:00:00Z", "value": 61, "type": "resting"}"#,
                true,
            ),
            ("heartrate", r#"[1, 2]"#, false),
            ("heartrate", r#""a sample""#, false),
            ("heartrate", r#"null"#, false),
            // Interval and typed resources.
            (
                "distance",
                r#"{"timestamp": "2025-03-01T10:00:00Z", "timezone_offset": 3600, "unit": "m", "value": 12.5}"#,
                true,
            ),
            (
                "distance",
                r#"{"timestamp": "2025-03-01T10:00:00Z", "end": "2025-03-01T10:01:00Z", "value": 12.5}"#,
                false,
            ),
            (
                "cholesterol",
                r#"{"timestamp": "2025-03-01T10:00:00Z", "type": "ldl", "value": 2.5}"#,
                true,
            ),
            (
                "cholesterol",
                r#"{"timestamp": "2025-03-01T10:00:00Z", "value": 2.5}"#,
                false,
            ),
            (
                "cholesterol",
                r#"{"timestamp": "2025-03-01T10:00:00Z", "type": 7, "value": 2.5}"#,
                false,
            ),
            (
                "blood_pressure",
                r#"{"timestamp": "2025-03-01T10:00:00Z", "systolic": 120, "diastolic": 80}"#,
                false,
            ),
        ];
        for (name, text, fast) in cases {
            let rules = sample::Rules::new(resource(name).unwrap());
            let loc = [Loc::from("body"), Loc::from(*name), Loc::Index(0)];
            let tree: Value = serde_json::from_str(text).unwrap();
            let (read, took, rebuilt) = via_members(&rules, text, &loc);
            assert_eq!(rebuilt, tree, "{text}: the members rebuild the tree");
            assert_eq!(took, *fast, "{text}: shortcut taken");
            match (read, sample::parse(&rules, &tree, &loc)) {
                // Debug-printed, so that a float's sign and every bit of it count.
                (Ok(a), Ok(b)) => assert_eq!(format!("{:?}", a.0), format!("{:?}", b.0), "{text}"),
                (Err(a), Err(b)) => assert_eq!(a, b, "{text}"),
                (a, b) => panic!("{text}: read as members {a:?}, as a tree {b:?}"),
            }
        }
    }

    /// A run of typed samples of one type shares one set of tags; a new type makes new ones.
    #[test]
    fn a_run_of_one_type_shares_its_tags() {
        let mut kinds = Kinds::default();
        let first: *const SampleTags = kinds.of("ldl");
        assert_eq!(kinds.of("ldl") as *const SampleTags, first);
        assert_eq!(kinds.of("hdl").kind.as_deref(), Some("hdl"));
        assert_eq!(kinds.of("ldl").kind.as_deref(), Some("ldl"));
    }
}
