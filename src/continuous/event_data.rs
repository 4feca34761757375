//! The `data` of the events a continuous query emits, as serde types: `continuous_query.changed`
//! (the rows that changed, as the query's JSON result) and
//! `continuous_query.fhir_observations` (the same rows as a FHIR `Bundle` of Observations).
//! Both are a list of one result, as `analytics.md` §4 gives them; fields are declared in the
//! order receivers have always got them (`serde_json` keeps it).

use serde::Serialize;
use serde_json::Value;
use uuid::Uuid;

use crate::store::metadata::continuous::StoredQuery;

/// One query's changed rows in a `continuous_query.changed` event.
#[derive(Debug, Clone, Serialize)]
pub struct QueryChanged<'a> {
    /// The query.
    pub query_id: Uuid,
    /// Its slug.
    pub query_slug: &'a str,
    /// The rows, as the query's JSON result (`table::to_json`).
    pub data: &'a Value,
}

impl<'a> QueryChanged<'a> {
    /// The event data of `query`'s changed rows `data`: a list of one.
    pub fn of(query: &'a StoredQuery, data: &'a Value) -> [QueryChanged<'a>; 1] {
        [QueryChanged {
            query_id: query.id,
            query_slug: &query.slug,
            data,
        }]
    }
}

/// One query's Observations in a `continuous_query.fhir_observations` event.
#[derive(Debug, Clone, Serialize)]
pub struct FhirObservations<'a> {
    /// The query.
    pub query_id: Uuid,
    /// Its slug.
    pub query_slug: &'a str,
    /// The Observations.
    pub bundle: Bundle,
}

impl<'a> FhirObservations<'a> {
    /// The event data of `query`'s Observations `entries`: a list of one.
    pub fn of(query: &'a StoredQuery, entries: Vec<Entry>) -> [FhirObservations<'a>; 1] {
        [FhirObservations {
            query_id: query.id,
            query_slug: &query.slug,
            bundle: Bundle {
                resource_type: "Bundle",
                kind: "collection",
                entry: entries,
            },
        }]
    }
}

/// A FHIR `Bundle` of type `collection`.
#[derive(Debug, Clone, Serialize)]
pub struct Bundle {
    /// `Bundle`.
    #[serde(rename = "resourceType")]
    pub resource_type: &'static str,
    /// `collection`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The Observations.
    pub entry: Vec<Entry>,
}

/// One entry of a [`Bundle`]: an Observation (a FHIR resource, built as JSON by `fhir.rs`)
/// under its `urn:uuid:` URL.
#[derive(Debug, Clone, Serialize)]
pub struct Entry {
    /// `urn:uuid:<the Observation's id>`.
    #[serde(rename = "fullUrl")]
    pub full_url: String,
    /// The Observation.
    pub resource: Value,
}
