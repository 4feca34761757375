//! Wire types of appointments: availability, booking, rescheduling, cancelling, and the
//! appointment itself.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use super::area::LngLat;
use super::enums::wire_enum;

wire_enum! {
    /// An appointment's status.
    AppointmentStatus {
        /// Confirmed by the provider.
        Confirmed = "confirmed",
        /// Waiting for the provider's confirmation.
        Pending = "pending",
        /// Reserved.
        Reserved = "reserved",
        /// In progress.
        InProgress = "in_progress",
        /// Completed.
        Completed = "completed",
        /// Cancelled.
        Cancelled = "cancelled",
    }
}

wire_enum! {
    /// An appointment's event status.
    EventStatus {
        /// Pending.
        Pending = "pending",
        /// Reserved.
        Reserved = "reserved",
        /// Scheduled.
        Scheduled = "scheduled",
        /// Completed.
        Completed = "completed",
        /// Cancelled.
        Cancelled = "cancelled",
        /// In progress.
        InProgress = "in_progress",
    }
}

wire_enum! {
    /// Where the sample is drawn.
    AppointmentType {
        /// At the patient's address.
        Phlebotomy = "phlebotomy",
        /// At a patient service centre.
        PatientServiceCenter = "patient_service_center",
    }
}

/// A US address.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct UsAddress {
    /// Street address.
    pub first_line: String,
    /// Second line.
    #[serde(default)]
    pub second_line: Option<String>,
    /// City.
    pub city: String,
    /// State (two letters).
    pub state: String,
    /// ZIP code.
    pub zip_code: String,
    /// Unit.
    #[serde(default)]
    pub unit: Option<String>,
    /// Access notes for the phlebotomist.
    #[serde(default)]
    pub access_notes: Option<String>,
}

/// One bookable slot.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct TimeSlot {
    /// Single-use key that books this slot; the prefix names the sandbox outcome.
    pub booking_key: String,
    /// Start (UTC).
    pub start: DateTime<Utc>,
    /// End (UTC).
    pub end: DateTime<Utc>,
    /// When the key stops working (one hour before the slot).
    pub expires_at: DateTime<Utc>,
    /// Price in dollars.
    pub price: f64,
    /// Priority slot.
    pub is_priority: bool,
    /// Places left.
    pub num_appointments_available: i64,
}

/// Where a PSC day's slots are.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct AppointmentLocation {
    /// Point.
    pub location: LngLat,
    /// Miles from the ZIP code's centroid.
    pub distance: i64,
    /// Address.
    pub address: UsAddress,
    /// Site code.
    pub code: String,
    /// Name.
    pub name: String,
    /// Time zone of the site.
    pub iana_timezone: Option<String>,
}

/// One day's slots.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct DaySlots {
    /// The centre, for PSC availability.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<AppointmentLocation>,
    /// The day (`YYYY-MM-DD`, local to `timezone`).
    pub date: String,
    /// Slots.
    pub slots: Vec<TimeSlot>,
}

/// Availability answer (named `AppointmentAvailability` in the OpenAPI document: a connection's
/// `Availability` has the name already).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[schema(as = AppointmentAvailability)]
pub struct Availability {
    /// Days with slots.
    pub slots: Vec<DaySlots>,
    /// The area's time zone.
    pub timezone: Option<String>,
}

/// `POST .../phlebotomy/appointment/book`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct BookRequest {
    /// The slot's key.
    pub booking_key: String,
    /// Notes for the phlebotomist (at most 1000 characters).
    #[serde(default)]
    pub appointment_notes: Option<String>,
    /// Return a pending appointment instead of waiting for confirmation.
    #[serde(default)]
    pub async_confirmation: bool,
    /// 1000–10000, default 2500 (async only).
    #[serde(default)]
    pub sync_confirmation_timeout_millisecond: Option<i64>,
    /// 60000–172800000, default 900000 (async only).
    #[serde(default)]
    pub async_confirmation_timeout_millisecond: Option<i64>,
    /// The appointment's time zone (default: the address's).
    #[serde(default)]
    pub iana_timezone: Option<String>,
}

/// `PATCH .../appointment/reschedule`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RescheduleRequest {
    /// The new slot's key.
    pub booking_key: String,
}

/// `PATCH .../appointment/cancel`. The reference SDK's PSC method sends the camel-case
/// `cancellationReasonId` and `note`; both spellings are accepted.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CancelRequest {
    /// One of `GET .../cancellation-reasons`.
    #[serde(alias = "cancellationReasonId")]
    pub cancellation_reason_id: String,
    /// Notes (at most 1000 characters).
    #[serde(default, alias = "note")]
    pub notes: Option<String>,
}

/// Why an appointment can be cancelled.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct CancellationReason {
    /// Id.
    pub id: String,
    /// Text.
    pub name: String,
    /// Whether the fee is refunded.
    pub is_refundable: bool,
}

/// One change of an appointment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct AppointmentEvent {
    /// When.
    pub created_at: DateTime<Utc>,
    /// The event status it moved to.
    pub status: EventStatus,
    /// Details (cancellation reason, slot, ...).
    pub data: Option<serde_json::Map<String, serde_json::Value>>,
}

/// An appointment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Appointment {
    /// Id.
    pub id: Uuid,
    /// User.
    pub user_id: Uuid,
    /// Order.
    pub order_id: Uuid,
    /// Where.
    pub address: UsAddress,
    /// Point.
    pub location: LngLat,
    /// Start (UTC).
    pub start_at: Option<DateTime<Utc>>,
    /// End (UTC).
    pub end_at: Option<DateTime<Utc>>,
    /// Time zone.
    pub iana_timezone: Option<String>,
    /// phlebotomy or patient_service_center.
    #[serde(rename = "type")]
    pub kind: AppointmentType,
    /// The provider.
    pub provider: String,
    /// Status.
    pub status: AppointmentStatus,
    /// The provider's id for it.
    pub provider_id: String,
    /// External id.
    pub external_id: Option<String>,
    /// Whether it can be rescheduled now.
    pub can_reschedule: bool,
    /// Event status.
    pub event_status: EventStatus,
    /// Extra data.
    pub event_data: Option<serde_json::Map<String, serde_json::Value>>,
    /// Changes, oldest first.
    pub events: Vec<AppointmentEvent>,
    /// Notes.
    pub appointment_notes: Option<String>,
}
