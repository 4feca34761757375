//! Typed request bodies: a JSON value decoded into a lab request type, a decoding failure
//! answered as a 422 at the failing member's location (`["body", "patient_address", "zip"]`)
//! with serde's sentence ("unknown variant `x`, expected one of ...").

use serde::de::DeserializeOwned;
use serde_json::Value;

use super::LabError;
use crate::validation::{Loc, Violation};

/// Decodes `body` into `T`, or a 422 naming where and what.
pub fn body<T: DeserializeOwned>(body: Value) -> Result<T, LabError> {
    serde_path_to_error::deserialize(body).map_err(|e| {
        let mut loc = vec![Loc::from("body")];
        for segment in e.path().iter() {
            match segment {
                serde_path_to_error::Segment::Seq { index } => loc.push(Loc::Index(*index)),
                serde_path_to_error::Segment::Map { key } => loc.push(Loc::Key(key.clone())),
                serde_path_to_error::Segment::Enum { variant } => {
                    loc.push(Loc::Key(variant.clone()))
                }
                serde_path_to_error::Segment::Unknown => {}
            }
        }
        let msg = e.inner().to_string();
        // serde names a missing member at its parent: point at the member itself.
        let kind = if let Some(rest) = msg.strip_prefix("missing field `") {
            if let Some(field) = rest.split('`').next() {
                loc.push(Loc::Key(field.to_owned()));
            }
            "missing"
        } else if msg.starts_with("unknown field") {
            "extra_forbidden"
        } else {
            "value_error"
        };
        LabError::invalid(Violation::new(loc, kind, msg))
    })
}

/// A page number and size from their query values: page ≥ 1, size 1–100 (checked by the HTTP
/// layer), and the rows to skip.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Page {
    /// Page, from 1.
    pub page: i64,
    /// Size.
    pub size: i64,
}

impl Page {
    /// Rows before the page.
    pub fn offset(self) -> i64 {
        (self.page - 1).saturating_mul(self.size)
    }

    /// ceil(total / size).
    pub fn pages(self, total: i64) -> i64 {
        (total + self.size - 1) / self.size
    }
}
