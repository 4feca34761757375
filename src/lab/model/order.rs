//! Wire types of orders: the create request, the order as rendered (and stored as the row's
//! document), its events, results, and the list page.

use chrono::{DateTime, NaiveDate, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use super::catalogue::AddOn;
use super::enums::{ActivationType, Gender, Interpretation, Low, Method, Top};

/// The patient as the lab needs them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct PatientDetails {
    /// First name (letters, spaces, hyphen, apostrophe, period; 1–50).
    pub first_name: String,
    /// Last name (same rule).
    pub last_name: String,
    /// Date of birth (a past date).
    pub dob: NaiveDate,
    /// Gender.
    pub gender: Gender,
    /// Phone number.
    pub phone_number: String,
    /// E-mail address.
    pub email: String,
}

/// Where kits go and phlebotomists come.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct PatientAddress {
    /// Who receives the kit (default: the patient).
    #[serde(default)]
    pub receiver_name: Option<String>,
    /// Street address.
    pub first_line: String,
    /// Second line.
    #[serde(default)]
    pub second_line: Option<String>,
    /// City.
    pub city: String,
    /// State (two letters).
    pub state: String,
    /// ZIP code (five digits, optionally `-` and four).
    pub zip: String,
    /// Country (`US`).
    pub country: String,
    /// Phone number.
    #[serde(default)]
    pub phone_number: Option<String>,
}

/// The ordering physician.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Physician {
    /// First name.
    pub first_name: String,
    /// Last name.
    pub last_name: String,
    /// National Provider Identifier (10 digits).
    pub npi: String,
}

/// A consent the patient gave.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Consent {
    /// Kind (`terms-of-use`, `telehealth-informed-consent`, ...).
    pub consent_type: String,
    /// Version of the document consented to.
    #[serde(default)]
    pub version: Option<String>,
    /// When.
    #[serde(default)]
    pub time_of_consent: Option<DateTime<Utc>>,
}

/// The patient's health insurance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct HealthInsurance {
    /// Payor code.
    pub payor_code: String,
    /// Member id.
    pub member_id: String,
    /// Group id.
    #[serde(default)]
    pub group_id: Option<String>,
}

/// The lab tests of an order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct OrderSet {
    /// Lab tests (at least one, one collection method).
    pub lab_test_ids: Vec<Uuid>,
    /// Extra markers.
    #[serde(default)]
    pub add_on: Option<AddOn>,
}

/// `POST /v3/order`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct CreateOrder {
    /// The team's user.
    pub user_id: Uuid,
    /// The patient.
    pub patient_details: PatientDetails,
    /// The patient's address.
    pub patient_address: PatientAddress,
    /// The lab tests (or the deprecated `lab_test_id`).
    #[serde(default)]
    pub order_set: Option<OrderSet>,
    /// Deprecated: one lab test.
    #[serde(default)]
    pub lab_test_id: Option<Uuid>,
    /// Must equal the lab tests' method when given.
    #[serde(default)]
    pub collection_method: Option<Method>,
    /// Priority handling.
    #[serde(default)]
    pub priority: Option<bool>,
    /// A future date: the order waits (`scheduled`) until then.
    #[serde(default)]
    pub activate_by: Option<NaiveDate>,
    /// The ordering physician.
    #[serde(default)]
    pub physician: Option<Physician>,
    /// Health insurance.
    #[serde(default)]
    pub health_insurance: Option<HealthInsurance>,
    /// Consents.
    #[serde(default)]
    pub consents: Option<Vec<Consent>>,
}

/// `PATCH /v3/order/{id}`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PatchOrder {
    /// The new activation date (today or later).
    pub activate_by: NaiveDate,
}

/// One status change.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct OrderEvent {
    /// 1, 2, ... per order.
    pub id: i64,
    /// When.
    pub created_at: DateTime<Utc>,
    /// `<top>.<method>.<low>`.
    pub status: String,
}

/// The lab test as the order shows it (the reference's `ClientFacingLabTest`): an order of
/// several tests shows the first one's identity and status, the names and descriptions of all
/// of them, their total price and whether any needs fasting.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct OrderLabTest {
    /// The (first) lab test's id, slug, sample type and status; the set's names joined with
    /// ` + `, its descriptions joined with a space, its total price, and whether any test of
    /// it needs fasting.
    #[serde(flatten)]
    pub summary: super::catalogue::LabTestSummary,
    /// The lab (null in documents written before it was kept).
    #[serde(default)]
    pub lab: Option<super::catalogue::Lab>,
    /// The markers of the set, each once (null in documents written before they were kept).
    #[serde(default)]
    pub markers: Option<Vec<super::catalogue::Marker>>,
}

/// A kit's shipment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Shipment {
    /// Id.
    pub id: Uuid,
    /// Outbound tracking number.
    pub outbound_tracking_number: Option<String>,
    /// Outbound tracking URL.
    pub outbound_tracking_url: Option<String>,
    /// Inbound tracking number.
    pub inbound_tracking_number: Option<String>,
    /// Inbound tracking URL.
    pub inbound_tracking_url: Option<String>,
    /// Outbound courier.
    pub outbound_courier: Option<String>,
    /// Inbound courier.
    pub inbound_courier: Option<String>,
    /// Notes.
    pub notes: Option<String>,
    /// Creation time.
    pub created_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
}

/// Method-specific data of an order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct OrderDetailsData {
    /// Id.
    pub id: Uuid,
    /// Testkit orders: the shipment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shipment: Option<Shipment>,
    /// Appointment orders: the current appointment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub appointment_id: Option<Uuid>,
    /// Creation time.
    pub created_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
}

/// `details` of an order: `{type: <method>, data}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct OrderDetails {
    /// The method.
    #[serde(rename = "type")]
    pub kind: Method,
    /// Its data.
    pub data: OrderDetailsData,
}

/// One order of a transaction.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct TransactionOrder {
    /// The order.
    pub id: Uuid,
    /// Creation time.
    pub created_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
    /// Its low-level status.
    pub low_level_status: Low,
    /// When it got it.
    pub low_level_status_created_at: DateTime<Utc>,
    /// `initial`.
    pub origin: String,
}

/// The order transaction (an order and its redraws).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct OrderTransaction {
    /// Id.
    pub id: Uuid,
    /// `active`.
    pub status: String,
    /// Its orders.
    pub orders: Vec<TransactionOrder>,
}

/// An order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Order {
    /// Id.
    pub id: Uuid,
    /// Team.
    pub team_id: Uuid,
    /// User.
    pub user_id: Uuid,
    /// Patient.
    pub patient_details: PatientDetails,
    /// Address.
    pub patient_address: PatientAddress,
    /// The lab test (or set).
    pub lab_test: OrderLabTest,
    /// The lab tests of the set.
    pub lab_test_ids: Vec<Uuid>,
    /// Add-on marker ids.
    pub add_on_marker_ids: Vec<i64>,
    /// The lab's id.
    pub lab_id: i64,
    /// Method-specific details.
    pub details: OrderDetails,
    /// The sample's barcode id.
    pub sample_id: String,
    /// Notes.
    pub notes: String,
    /// Creation time.
    pub created_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
    /// High-level status.
    pub status: Top,
    /// Current low-level status.
    pub low_level_status: Low,
    /// Status changes, oldest first.
    pub events: Vec<OrderEvent>,
    /// The newest entry of `events` (the reference's `last_event`); kept by
    /// [`Order::note_last_event`] wherever `events` changes, and on every read of a stored order.
    #[serde(default)]
    pub last_event: Option<OrderEvent>,
    /// Priority handling.
    pub priority: bool,
    /// Activation date of a scheduled order.
    pub activate_by: Option<NaiveDate>,
    /// `current` or `scheduled`.
    pub activation_type: ActivationType,
    /// Physician.
    pub physician: Option<Physician>,
    /// Health insurance.
    pub health_insurance: Option<HealthInsurance>,
    /// The reference's id of a stored health insurance: always null (the insurance is inline).
    #[serde(default)]
    pub health_insurance_id: Option<Uuid>,
    /// The reference's deprecated requisition URL: always null (`GET .../requisition/pdf`).
    #[serde(default)]
    pub requisition_form_url: Option<String>,
    /// The reference's shipping details of unregistered testkit orders: always null (every
    /// order here has a user and a patient address).
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub shipping_details: Option<serde_json::Value>,
    /// Consents.
    pub consents: Vec<Consent>,
    /// Overall interpretation once results arrived.
    pub interpretation: Option<Interpretation>,
    /// Whether any result is critical.
    pub is_critical: bool,
    /// Whether the order has an Advance Beneficiary Notice form: never, as no order here is
    /// billed to Medicare.
    pub has_abn: bool,
    /// `initial`.
    pub origin: String,
    /// The transaction.
    pub order_transaction: OrderTransaction,
}

impl Order {
    /// Sets `last_event` to the newest entry of `events`.
    pub fn note_last_event(&mut self) {
        self.last_event = self.events.last().cloned();
    }
}

/// The answer of `POST /v3/order`, `PATCH /v3/order/{order_id}` and
/// `POST /v3/order/{order_id}/cancel` (the reference's `PostOrderResponse`): the order,
/// `success` and what was done.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct OrderResponse {
    /// The order.
    pub order: Order,
    /// `success`.
    pub status: String,
    /// `Order submitted`, `Order updated`, `Order cancelled`.
    pub message: String,
}

/// `GET /v3/orders`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct OrdersPage {
    /// The page.
    pub orders: Vec<Order>,
    /// Orders matching the filters.
    pub total: i64,
    /// This page.
    pub page: i64,
    /// Page size.
    pub size: i64,
}

/// One biomarker's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct BiomarkerResult {
    /// Name.
    pub name: String,
    /// Slug.
    pub slug: String,
    /// The value as text; parse by `type`.
    pub result: String,
    /// `numeric` or `comment`.
    #[serde(rename = "type")]
    pub result_type: String,
    /// Unit.
    pub unit: Option<String>,
    /// When measured.
    pub timestamp: DateTime<Utc>,
    /// Notes.
    pub notes: Option<String>,
    /// Reference range as text.
    pub reference_range: Option<String>,
    /// Lower reference bound.
    pub min_range_value: Option<f64>,
    /// Upper reference bound.
    pub max_range_value: Option<f64>,
    /// Above the range.
    pub is_above_max_range: bool,
    /// Below the range.
    pub is_below_min_range: bool,
    /// normal, abnormal, critical.
    pub interpretation: Interpretation,
    /// LOINC code.
    pub loinc: String,
    /// LOINC slug.
    pub loinc_slug: String,
    /// The lab's code.
    pub provider_id: String,
}

/// Results metadata.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ResultsMetadata {
    /// Age at collection, whole years.
    pub age: String,
    /// Date of birth.
    pub dob: String,
    /// Patient name.
    pub patient: String,
    /// The lab.
    pub laboratory: String,
    /// Report date.
    pub date_reported: String,
    /// Collection date.
    pub date_collected: Option<String>,
    /// The sample id.
    pub specimen_number: String,
    /// `partial` or `final`.
    pub status: String,
    /// Overall interpretation.
    pub interpretation: Interpretation,
}

/// `GET /v3/order/{id}/result`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct OrderResults {
    /// Metadata, `null` before any result.
    pub metadata: Option<ResultsMetadata>,
    /// The results (empty before `partial_results`).
    pub results: Vec<BiomarkerResult>,
}
