//! Validation failures shared by every layer that checks client input (users, push API, query
//! language), and the two ways input is read: typed models decoded by serde ([`decode`](mod@decode)) for
//! every request body, and one precise hand-written reader ([`read`]) for the query language and
//! the push API. A [`Violation`] is one problem at one location; the HTTP layer renders a list of
//! them as the 422 body of `rest-conventions.md`:
//! `{"detail": [{"loc": ["body", "queries", 0, "where"], "msg": "...", "type": "value_error", "input": ...}]}`.

pub mod decode;
pub mod read;

pub use decode::{Checks, decode, decode_lenient, decode_strict};

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

impl Invalid {
    /// The same rejection echoing no input: for bodies that may hold secrets.
    pub fn without_inputs(mut self) -> Invalid {
        for v in &mut self.0 {
            v.input = None;
        }
        self
    }
}

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
