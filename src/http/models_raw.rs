//! The raw getters' answers (`GET /v2/summary/{part}/{user_id}/raw`), in the reference's
//! `RawSleepResponse`, `RawActivityResponse`, `RawWorkoutResponse`, `RawBodyResponse`,
//! `RawProfile` and `RawDevicesResponse` shapes (see `crate::data::raw` for what each member
//! holds). The getters render JSON; these types document it.

use serde::Serialize;
use serde_json::{Map, Value};
use utoipa::ToSchema;
use uuid::Uuid;

/// A provider as the raw answers name it: `{name, slug, logo}`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RawSource {
    /// Display name.
    pub name: String,
    /// Catalogue slug.
    pub slug: String,
    /// Logo URL.
    pub logo: String,
}

/// One record's payload as received (sleep, activity, body).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RawRecord {
    /// The record's index instant (what the date range filters on).
    pub timestamp: String,
    /// The provider's document as received, or the record as pushed.
    pub data: Map<String, Value>,
    /// The user.
    pub user_id: Uuid,
    /// The record's id (the provider's, the pushed one, or the derived one).
    pub provider_id: String,
    /// The provider's place in the catalogue (1-based).
    pub source_id: i64,
    /// The provider's place in the default priorities (1-based, 0: none).
    pub priority_id: i64,
    /// Derived from the user, part, provider and record id.
    pub id: Uuid,
    /// Always null: no device registry.
    pub source_device_id: Option<Uuid>,
    /// When it was received.
    pub created_at: String,
    /// When it was received.
    pub updated_at: String,
    /// The provider.
    pub source: RawSource,
}

/// A workout's sport: `{id, name, slug}`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RawSport {
    /// A number stable for the slug.
    pub id: i64,
    /// Display name.
    pub name: String,
    /// Slug.
    pub slug: String,
}

/// One workout's payload as received: a [`RawRecord`] with its sport.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RawWorkoutRecord {
    /// As [`RawRecord`].
    #[serde(flatten)]
    pub record: RawRecord,
    /// The sport's number.
    pub sport_id: i64,
    /// The sport.
    pub sport: RawSport,
}

/// `{"sleep": [...]}`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RawSleepResponse {
    /// Payloads, oldest first.
    pub sleep: Vec<RawRecord>,
}

/// `{"activity": [...]}`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RawActivityResponse {
    /// Payloads, oldest first.
    pub activity: Vec<RawRecord>,
}

/// `{"workouts": [...]}`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RawWorkoutResponse {
    /// Payloads, oldest first.
    pub workouts: Vec<RawWorkoutRecord>,
}

/// `{"body": [...]}`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RawBodyResponse {
    /// Payloads, oldest first.
    pub body: Vec<RawRecord>,
}

/// The newest profile payload (the reference's `ProfileInDb`).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RawProfileRecord {
    /// Derived from the user, provider and record id.
    pub id: Uuid,
    /// The provider's document as received, or the profile as pushed.
    pub data: Value,
    /// The user.
    pub user_id: Uuid,
    /// The provider's place in the catalogue (1-based).
    pub source_id: i64,
    /// The provider's place in the default priorities (1-based, 0: none).
    pub priority_id: i64,
    /// The provider.
    pub source: RawSource,
    /// When it was received.
    pub created_at: String,
    /// When it was received.
    pub updated_at: String,
}

/// `{"profile": {...}}`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RawProfile {
    /// The newest profile payload.
    pub profile: RawProfileRecord,
}

/// One device with its source as received (the reference's `RawDevice`).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RawDevice {
    /// `{"type", "app_id"?, "device_id"?}`: the source as pushed or pulled.
    pub data: Map<String, Value>,
    /// The device's own id at the source (its device id, else app id, else source type).
    pub provider_id: String,
    /// The user.
    pub user_id: Uuid,
    /// The provider's place in the catalogue (1-based).
    pub source_id: i64,
    /// The device's id (as `GET /v2/user/{user_id}/device` answers it).
    pub id: Uuid,
    /// The provider.
    pub source: RawSource,
}

/// `{"devices": [...]}`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RawDevicesResponse {
    /// The user's devices.
    pub devices: Vec<RawDevice>,
}
