//! Validation failures shared by every layer that checks client input (users, push API, query
//! language). A [`Violation`] is one problem at one location; the HTTP layer renders a list of
//! them as the 422 body of `rest-conventions.md`:
//! `{"detail": [{"loc": ["body", "queries", 0, "where"], "msg": "...", "type": "value_error", "input": ...}]}`.

use serde::Serialize;
use serde_json::Value;

/// One segment of a location: an object key or an array index.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(untagged)]
pub enum Loc {
    /// An object member.
    Key(String),
    /// An array element.
    Index(usize),
}

impl From<&str> for Loc {
    fn from(key: &str) -> Self {
        Loc::Key(key.to_owned())
    }
}

impl From<String> for Loc {
    fn from(key: String) -> Self {
        Loc::Key(key)
    }
}

impl From<usize> for Loc {
    fn from(index: usize) -> Self {
        Loc::Index(index)
    }
}

/// One validation failure.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Violation {
    /// Where: starts with `body`, `query` or `path`.
    pub loc: Vec<Loc>,
    /// What was wrong and what was expected, as a sentence.
    pub msg: String,
    /// The error family: `value_error`, `missing`, `extra_forbidden`, `type_error`,
    /// `json_invalid`, ...
    #[serde(rename = "type")]
    #[schema(value_type = String)]
    pub kind: &'static str,
    /// The offending input, when there is one worth echoing.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<serde_json::Value>)]
    pub input: Option<Value>,
}

impl Violation {
    /// A `value_error` at `loc`.
    pub fn value(loc: Vec<Loc>, msg: impl Into<String>) -> Self {
        Violation {
            loc,
            msg: msg.into(),
            kind: "value_error",
            input: None,
        }
    }

    /// A failure of the given kind at `loc`.
    pub fn new(loc: Vec<Loc>, kind: &'static str, msg: impl Into<String>) -> Self {
        Violation {
            loc,
            msg: msg.into(),
            kind,
            input: None,
        }
    }

    /// Attaches the offending input.
    pub fn with_input(mut self, input: Value) -> Self {
        self.input = Some(input);
        self
    }
}

/// A non-empty list of violations: the request is rejected as a whole.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("invalid input: {}", .0.first().map(|v| v.msg.as_str()).unwrap_or("unknown"))]
pub struct Invalid(pub Vec<Violation>);

impl From<Violation> for Invalid {
    fn from(v: Violation) -> Self {
        Invalid(vec![v])
    }
}

/// Builds a location from heterogeneous segments: `loc!["body", "queries", 0, "where"]`.
#[macro_export]
macro_rules! loc {
    ($($seg:expr),* $(,)?) => {
        vec![$($crate::validation::Loc::from($seg)),*]
    };
}

/// Reads the members of one JSON object, collecting a violation for every problem instead of
/// stopping at the first, so a client sees all its mistakes at once.
#[derive(Debug)]
pub struct ObjectReader<'a> {
    map: Option<&'a serde_json::Map<String, Value>>,
    loc: Vec<Loc>,
    /// The violations found so far.
    pub violations: Vec<Violation>,
}

impl<'a> ObjectReader<'a> {
    /// Starts reading `value`, which must be an object, located at `loc`.
    pub fn new(value: &'a Value, loc: Vec<Loc>) -> Self {
        let mut violations = Vec::new();
        let map = value.as_object();
        if map.is_none() {
            violations.push(
                Violation::new(loc.clone(), "model_type", "Input should be an object")
                    .with_input(value.clone()),
            );
        }
        ObjectReader {
            map,
            loc,
            violations,
        }
    }

    /// The location of a member.
    pub fn loc_of(&self, key: &str) -> Vec<Loc> {
        let mut loc = self.loc.clone();
        loc.push(Loc::from(key));
        loc
    }

    /// Rejects members outside `allowed` (`extra_forbidden`).
    pub fn deny_unknown(&mut self, allowed: &[&str]) {
        let Some(map) = self.map else { return };
        for (key, value) in map {
            if !allowed.contains(&key.as_str()) {
                let v = Violation::new(self.loc_of(key), "extra_forbidden", format!(
                    "Extra inputs are not permitted: unknown field {key:?}; expected one of: {}",
                    allowed.join(", ")
                ))
                .with_input(value.clone());
                self.violations.push(v);
            }
        }
    }

    /// The raw member: `None` when absent, `Some(Value::Null)` when null.
    pub fn raw(&self, key: &str) -> Option<&'a Value> {
        self.map.and_then(|m| m.get(key))
    }

    /// Records a violation at a member.
    pub fn fail(&mut self, key: &str, kind: &'static str, msg: impl Into<String>) {
        let input = self.raw(key).cloned();
        let mut v = Violation::new(self.loc_of(key), kind, msg);
        v.input = input;
        self.violations.push(v);
    }

    /// A string member. Absent or null gives `None`; a required one records `missing`.
    pub fn string(&mut self, key: &str, required: bool) -> Option<&'a str> {
        match self.raw(key) {
            Some(Value::String(s)) => Some(s.as_str()),
            None | Some(Value::Null) => {
                if required && self.map.is_some() {
                    self.violations.push(Violation::new(
                        self.loc_of(key),
                        "missing",
                        "Field required",
                    ));
                }
                None
            }
            Some(_) => {
                self.fail(key, "string_type", "Input should be a valid string");
                None
            }
        }
    }

    /// A `YYYY-MM-DD` date member that is a real calendar date.
    pub fn date(&mut self, key: &str, required: bool) -> Option<chrono::NaiveDate> {
        let s = self.string(key, required)?;
        match chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d") {
            Ok(d) if s.len() == 10 => Some(d),
            _ => {
                self.fail(
                    key,
                    "date_from_datetime_parsing",
                    format!("Input should be a valid date in the format YYYY-MM-DD, got {s:?}"),
                );
                None
            }
        }
    }

    /// Finishes: the violations, if any, as one rejection.
    pub fn finish(self) -> Result<(), Invalid> {
        if self.violations.is_empty() {
            Ok(())
        } else {
            Err(Invalid(self.violations))
        }
    }
}
