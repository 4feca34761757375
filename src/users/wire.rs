//! The user resources as they travel: typed answers whose field names, types and nesting are
//! the reference SDK's models (`ClientFacingUser`, `ConnectedSourceClientFacing`,
//! `PaginatedUsersResponse`, `UserSuccessResponse`, `MetricsResult`), with their OpenAPI
//! schemas.

use chrono::{DateTime, NaiveDate, Utc};
use serde::{Serialize, Serializer};
use utoipa::ToSchema;
use uuid::Uuid;

use super::render_time;
use crate::providers;
use crate::store::metadata::{Connection, User};

/// Serialises an instant as the API renders every instant (RFC 3339, UTC, `Z`).
pub fn instant<S: Serializer>(t: &DateTime<Utc>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&render_time(*t))
}

/// A provider as a connection names it: display name, slug and logo URL.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct ProviderRef {
    /// Display name.
    pub name: String,
    /// Provider slug.
    pub slug: String,
    /// Logo URL.
    pub logo: String,
}

impl ProviderRef {
    /// The catalogue's entry for `slug` (a slug outside the catalogue names itself).
    pub fn of(slug: &str) -> ProviderRef {
        match providers::provider(slug) {
            Some(p) => ProviderRef {
                name: p.name.to_owned(),
                slug: p.slug.to_owned(),
                logo: p.logo.clone(),
            },
            None => ProviderRef {
                name: slug.to_owned(),
                slug: slug.to_owned(),
                logo: String::new(),
            },
        }
    }
}

/// One of the user's connections.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ConnectedSource {
    /// When the connection was made.
    #[serde(serialize_with = "instant")]
    pub created_on: DateTime<Utc>,
    /// The provider.
    pub provider: ProviderRef,
    /// Deprecated: the same as `provider`.
    pub source: ProviderRef,
}

/// The user's fallback time zone.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct FallbackTimeZone {
    /// IANA identifier.
    pub id: String,
    /// Where it came from (`manual`: set through the API).
    pub source_slug: String,
    /// When it was set.
    #[serde(serialize_with = "instant")]
    pub updated_at: DateTime<Utc>,
}

/// The user's fallback birth date.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct FallbackBirthDate {
    /// The date.
    pub value: NaiveDate,
    /// Where it came from (`manual`: set through the API).
    pub source_slug: String,
    /// When it was set.
    #[serde(serialize_with = "instant")]
    pub updated_at: DateTime<Utc>,
}

/// The User resource.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct UserResource {
    /// Service-assigned id.
    pub user_id: Uuid,
    /// Owning team.
    pub team_id: Uuid,
    /// The team's own id for the user.
    pub client_user_id: String,
    /// Creation time.
    #[serde(serialize_with = "instant")]
    pub created_on: DateTime<Utc>,
    /// The user's connections.
    pub connected_sources: Vec<ConnectedSource>,
    /// Zone for data without a zone of its own.
    pub fallback_time_zone: Option<FallbackTimeZone>,
    /// Birth date for providers that give no age.
    pub fallback_birth_date: Option<FallbackBirthDate>,
    /// Data before this day is not ingested.
    pub ingestion_start: Option<NaiveDate>,
    /// Data after this day is not ingested.
    pub ingestion_end: Option<NaiveDate>,
}

impl UserResource {
    /// The resource of `user` with its connections.
    pub fn new(user: &User, connections: &[Connection]) -> UserResource {
        UserResource {
            user_id: user.id,
            team_id: user.team_id,
            client_user_id: user.client_user_id.clone(),
            created_on: user.created_at,
            connected_sources: connections
                .iter()
                .map(|c| ConnectedSource {
                    created_on: c.created_at,
                    provider: ProviderRef::of(&c.provider),
                    source: ProviderRef::of(&c.provider),
                })
                .collect(),
            fallback_time_zone: user.fallback_time_zone.as_ref().map(|z| FallbackTimeZone {
                id: z.value.clone(),
                source_slug: "manual".into(),
                updated_at: z.updated_at,
            }),
            fallback_birth_date: user
                .fallback_birth_date
                .as_ref()
                .map(|b| FallbackBirthDate {
                    value: b.value,
                    source_slug: "manual".into(),
                    updated_at: b.updated_at,
                }),
            ingestion_start: user.ingestion_start,
            ingestion_end: user.ingestion_end,
        }
    }
}

/// One page of the team's users.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct UserPage {
    /// The users, oldest first.
    pub users: Vec<UserResource>,
    /// The team's users in all.
    pub total: i64,
    /// Users skipped.
    pub offset: i64,
    /// The page's size limit.
    pub limit: i64,
}

/// `{"success": true}`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Success {
    /// Always true on a 2xx answer.
    pub success: bool,
}

/// The team's counts (`GET /v2/user/metrics`).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TeamMetrics {
    /// The team.
    pub team_id: Uuid,
    /// Its users.
    pub number_of_users: i64,
    /// Its users' connections.
    pub number_of_connected_sources: i64,
    /// Connections in an error state.
    pub number_of_errored_connected_sources: i64,
}

/// The `detail` of the 400 answering a `client_user_id` already in use.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct DuplicateUser {
    /// `INVALID_REQUEST`.
    pub error_type: String,
    /// `Client user id already exists.`
    pub error_message: String,
    /// The user who has that id.
    pub user_id: Uuid,
    /// When that user was created.
    #[serde(serialize_with = "instant")]
    pub created_on: DateTime<Utc>,
}

/// A US postal address: `zip_code` and the reference's `zip` carry the same value.
#[derive(Debug, Clone, Default, Serialize, serde::Deserialize, ToSchema)]
pub struct Address {
    /// Street and number.
    pub first_line: String,
    /// Apartment, suite, ...
    pub second_line: Option<String>,
    /// Five digits, optionally `-` and four more.
    pub zip_code: String,
    /// The same as `zip_code` (the reference's name).
    pub zip: String,
    /// Two-letter US state code.
    pub state: String,
    /// City.
    pub city: String,
    /// `US`.
    pub country: String,
}

/// The patient's medical proxy (the reference's `GuarantorDetails`).
#[derive(Debug, Clone, Serialize, serde::Deserialize, ToSchema)]
pub struct MedicalProxy {
    /// Given name.
    pub first_name: String,
    /// Family name.
    pub last_name: String,
    /// Postal address (absent only on details stored before it was required).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address: Option<Address>,
    /// Phone number.
    #[serde(default)]
    pub phone_number: Option<String>,
    /// E-mail address.
    #[serde(default)]
    pub email: Option<String>,
    /// Relationship to the patient.
    #[serde(default)]
    pub relationship: Option<String>,
    /// Household income.
    #[serde(default)]
    pub household_income: Option<u64>,
    /// Household size.
    #[serde(default)]
    pub household_size: Option<u64>,
}

/// Race (non-exhaustive on output).
#[derive(Debug, Clone, Serialize, serde::Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
#[allow(missing_docs)]
pub enum Race {
    AfricanAmericanOrBlack,
    Asian,
    IndigenousNativeAmericanAlaskaNative,
    Other,
    PacificIslanderOrHawaiian,
    WhiteCaucasian,
}

/// Ethnicity (non-exhaustive on output).
#[derive(Debug, Clone, Serialize, serde::Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
#[allow(missing_docs)]
pub enum Ethnicity {
    Hispanic,
    NonHispanic,
    AshkenaziJewish,
    Other,
}

/// Sexual orientation (non-exhaustive on output).
#[derive(Debug, Clone, Serialize, serde::Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
#[allow(missing_docs)]
pub enum SexualOrientation {
    LesbianGayOrHomosexual,
    HeterosexualOrStraight,
    Bisexual,
    DontKnow,
    Other,
}

/// Gender identity (non-exhaustive on output).
#[derive(Debug, Clone, Serialize, serde::Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
#[allow(missing_docs)]
pub enum GenderIdentity {
    Male,
    Female,
    FemaleToMaleFtmTransgenderMaleTransMan,
    MaleToFemaleMtfTransgenderFemaleTransWoman,
    Genderqueer,
    Other,
}

/// The patient details (`PATCH /v2/user/{user_id}/info` takes and answers them; the rules are
/// in [`super::info`]).
#[derive(Debug, Clone, Serialize, serde::Deserialize, ToSchema)]
pub struct UserInfo {
    /// Given name.
    pub first_name: String,
    /// Family name.
    pub last_name: String,
    /// E-mail address.
    pub email: String,
    /// Phone number.
    pub phone_number: String,
    /// Gender, in the lab's vocabulary.
    pub gender: String,
    /// Date of birth.
    pub dob: NaiveDate,
    /// Postal address.
    pub address: Address,
    /// Medical proxy.
    #[serde(default)]
    pub medical_proxy: Option<MedicalProxy>,
    /// Race.
    #[serde(default)]
    pub race: Option<Race>,
    /// Ethnicity.
    #[serde(default)]
    pub ethnicity: Option<Ethnicity>,
    /// Sexual orientation.
    #[serde(default)]
    pub sexual_orientation: Option<SexualOrientation>,
    /// Gender identity.
    #[serde(default)]
    pub gender_identity: Option<GenderIdentity>,
}
