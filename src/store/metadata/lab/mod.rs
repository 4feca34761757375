//! The lab tables (`migrations/0004_lab.sql`): lab tests, orders, idempotency keys, booking
//! keys, appointments and imported patient service centres. Free functions over a connection,
//! so the lab domain composes a change and its events in one transaction.

pub mod appointments;
pub mod booking_keys;
pub mod idempotency;
pub mod lab_tests;
pub mod orders;
pub mod physicians;
pub mod pscs;

use super::MetadataError;

/// Decodes a JSON column.
pub(crate) fn from_json<T: serde::de::DeserializeOwned>(
    column: &'static str,
    raw: String,
) -> Result<T, MetadataError> {
    serde_json::from_str(&raw).map_err(|_| MetadataError::Corrupt { column, value: raw })
}

/// Encodes a JSON column (the lab's types always serialise).
pub(crate) fn to_json<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_default()
}
