//! Wire types of area coverage: area info, patient service centres.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// How the sandbox labs bill an order: to the team (`client_bill`), the one billing this
/// service implements (insurance details are accepted on orders but not billed).
pub const SUPPORTED_BILL_TYPES: [&str; 1] = ["client_bill"];

/// The bill types, as the wire lists them.
pub fn supported_bill_types() -> Vec<String> {
    SUPPORTED_BILL_TYPES.map(str::to_owned).to_vec()
}

/// A point.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct LngLat {
    /// Longitude, degrees.
    pub lng: f64,
    /// Latitude, degrees.
    pub lat: f64,
}

/// A phlebotomy provider serving the area.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct PhlebotomyProviderInfo {
    /// Provider name.
    pub name: String,
    /// Service tiers (`appointment-ready`, `appointment-request`): the seed's name.
    pub tier: Vec<String>,
    /// The same values under the reference's name.
    pub service_types: Vec<String>,
}

/// Phlebotomy coverage of an area.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct PhlebotomyAreaInfo {
    /// Whether any provider serves the ZIP code.
    pub is_served: bool,
    /// The providers that do.
    pub providers: Vec<PhlebotomyProviderInfo>,
}

/// Patient service centres of one lab around a ZIP code.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct PscAreaInfoDetails {
    /// Whether an appointment at one of these centres can be booked through this API
    /// (`/v3/order/{order_id}/psc/appointment/book`): every sandbox centre takes bookings, so
    /// true when there is a centre within the radius.
    pub appointment_with_vital: bool,
    /// Centres within `radius` miles of the ZIP code's centroid.
    pub within_radius: i64,
    /// The radius, in miles, as a string.
    pub radius: String,
    /// Capabilities offered by at least one of those centres.
    pub capabilities: Vec<String>,
}

/// One lab's entry of `central_labs`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct PscAreaInfo {
    /// The centres.
    pub patient_service_centers: PscAreaInfoDetails,
    /// How orders at this lab can be billed ([`SUPPORTED_BILL_TYPES`]).
    pub supported_bill_types: Vec<String>,
    /// The lab's id.
    pub lab_id: i64,
}

/// `GET /v3/order/area/info`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct AreaInfo {
    /// The ZIP code asked about (five digits).
    pub zip_code: String,
    /// Phlebotomy coverage.
    pub phlebotomy: PhlebotomyAreaInfo,
    /// Per lab slug.
    pub central_labs: BTreeMap<String, PscAreaInfo>,
}

/// A centre's address and contact.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct LabLocationMetadata {
    /// Name.
    pub name: String,
    /// State (two letters).
    pub state: String,
    /// City.
    pub city: String,
    /// ZIP code.
    pub zip_code: String,
    /// Street address.
    pub first_line: String,
    /// Second address line.
    pub second_line: Option<String>,
    /// Phone number.
    pub phone_number: Option<String>,
}

/// One patient service centre with its distance.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct LabLocation {
    /// Address and contact.
    pub metadata: LabLocationMetadata,
    /// Great-circle distance from the ZIP code's centroid, whole miles (rounded).
    pub distance: i64,
    /// The lab's code for the centre.
    pub site_code: String,
    /// Where it is.
    pub location: LngLat,
    /// What it offers (`stat`, ...).
    pub capabilities: Vec<String>,
    /// How orders collected here can be billed ([`SUPPORTED_BILL_TYPES`]).
    pub supported_bill_types: Vec<String>,
}

/// `GET /v3/order/psc/info`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct PscInfo {
    /// The lab's id.
    pub lab_id: i64,
    /// The lab's slug.
    pub slug: String,
    /// The nearest centres within the radius, nearest first (at most 30).
    pub patient_service_centers: Vec<LabLocation>,
}
