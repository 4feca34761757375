//! Wire types of the catalogue: labs, markers with their expected results and LOINC, lab
//! tests, and the page shapes of the marker lists. Field names are the reference SDK's.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use super::enums::{LabTestStatus, MarkerType, Method};

/// A laboratory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Lab {
    /// Catalogue id.
    pub id: i64,
    /// Stable name (`quest`, `labcorp`, ...).
    pub slug: String,
    /// Display name.
    pub name: String,
    /// Street address.
    pub first_line_address: String,
    /// City.
    pub city: String,
    /// ZIP code.
    pub zipcode: String,
    /// How the lab's samples can be collected.
    pub collection_methods: Vec<Method>,
    /// Sample types it processes.
    pub sample_types: Vec<String>,
}

/// A LOINC term.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Loinc {
    /// The code's digits without the check digit's hyphen, as an integer.
    pub id: i64,
    /// Name.
    pub name: String,
    /// Slug of the name.
    pub slug: String,
    /// The LOINC code (`2093-3`).
    pub code: String,
    /// Unit (UCUM), when the result has one.
    pub unit: Option<String>,
}

/// One result a marker produces.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ExpectedResult {
    /// Catalogue id.
    pub id: i64,
    /// Name.
    pub name: String,
    /// Slug.
    pub slug: String,
    /// Lab.
    pub lab_id: i64,
    /// The lab's code for it.
    pub provider_id: String,
    /// Whether the result is always reported.
    pub required: bool,
    /// Its LOINC term.
    pub loinc: Loinc,
}

/// An orderable marker of one lab.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Marker {
    /// Catalogue id (unique across labs).
    pub id: i64,
    /// Name.
    pub name: String,
    /// Slug.
    pub slug: String,
    /// Description.
    pub description: String,
    /// Lab.
    pub lab_id: i64,
    /// The lab's order code.
    pub provider_id: String,
    /// `biomarker` or `panel`.
    #[serde(rename = "type")]
    pub kind: MarkerType,
    /// Unit of a biomarker's result.
    pub unit: Option<String>,
    /// List price, a decimal string (`"12.00"`).
    pub price: String,
    /// What it reports (a panel: each of its biomarkers).
    pub expected_results: Vec<ExpectedResult>,
    /// The marker's own LOINC term.
    pub loinc: Loinc,
}

/// A page of markers (`total`, `page`, `size`, `pages` = ceil(total / size)).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct MarkersPage {
    /// The page's markers.
    pub markers: Vec<Marker>,
    /// Markers in all pages.
    pub total: i64,
    /// This page (from 1).
    pub page: i64,
    /// Page size.
    pub size: i64,
    /// Number of pages.
    pub pages: i64,
}

/// What a lab test shows wherever it appears: in the catalogue ([`LabTest`]) and in an order
/// ([`OrderLabTest`](super::order::OrderLabTest), which sums up the order's set of tests in
/// it). Flattened into both, so the wire has these members at the top level, as the
/// reference's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct LabTestSummary {
    /// Id.
    pub id: Uuid,
    /// Slug of the name.
    pub slug: String,
    /// Name.
    pub name: String,
    /// Description.
    pub description: String,
    /// Main sample type (`serum`, `dried_blood_spot`, ...).
    pub sample_type: String,
    /// Collection method.
    pub method: Method,
    /// Sum of its markers' prices.
    pub price: f64,
    /// Whether it can be ordered (`status` is `active`).
    pub is_active: bool,
    /// Status.
    pub status: LabTestStatus,
    /// Whether the patient must fast.
    pub fasting: bool,
}

/// A team's orderable bundle of markers.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct LabTest {
    /// Id, name, method, price and status.
    #[serde(flatten)]
    pub summary: LabTestSummary,
    /// The lab.
    pub lab: Lab,
    /// Its markers.
    pub markers: Vec<Marker>,
    /// Whether it is one of the team's four sandbox tests.
    pub auto_generated: bool,
    /// Creation time.
    pub created_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
}

/// `POST /v3/lab_tests`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct CreateLabTest {
    /// Name (1–200 characters).
    pub name: String,
    /// Description (at most 2000 characters).
    pub description: String,
    /// Collection method.
    pub method: Method,
    /// Marker ids (at least one, all of one lab).
    pub marker_ids: Vec<i64>,
    /// The lab (default: the markers' lab).
    #[serde(default)]
    pub lab_slug: Option<String>,
    /// Whether the patient must fast.
    #[serde(default)]
    pub fasting: Option<bool>,
}

/// `PATCH /v3/lab_tests/{id}`.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PatchLabTest {
    /// New name.
    #[serde(default)]
    pub name: Option<String>,
    /// New description.
    #[serde(default)]
    pub description: Option<String>,
    /// New status.
    #[serde(default)]
    pub status: Option<LabTestStatus>,
}

/// `GET /v3/lab_test`: a cursor page of lab tests.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct LabTestPage {
    /// The page.
    pub data: Vec<LabTest>,
    /// The cursor of the next page, `null` on the last.
    pub next_cursor: Option<String>,
}

/// The add-on markers of an order set.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct AddOn {
    /// Marker ids.
    #[serde(default)]
    pub marker_ids: Option<Vec<i64>>,
    /// Markers by the lab's order code.
    #[serde(default)]
    pub provider_ids: Option<Vec<String>>,
}

/// `POST /v3/lab_tests/list_order_set_markers`.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
pub struct OrderSetMarkersRequest {
    /// Lab tests of the set.
    #[serde(default)]
    pub lab_test_ids: Option<Vec<Uuid>>,
    /// Add-on markers.
    #[serde(default)]
    pub add_on: Option<AddOn>,
    /// Lab account (accepted, unused: one account per lab here).
    #[serde(default)]
    pub lab_account_id: Option<Uuid>,
}
