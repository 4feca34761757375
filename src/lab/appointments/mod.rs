//! Appointments: availability ([`slots`]), booking with the interface's `async_confirmation`
//! semantics, the asynchronous wait as a durable job ([`confirm`]), reschedule, cancel, get.
//!
//! Booking (`service-interface.md` §Appointment status):
//! - `async_confirmation` false waits for the provider: confirmed → the confirmed appointment;
//!   refused or silent (past [`SYNC_PROVIDER_LIMIT`]) → [`LabError::ProviderFailed`] (500 with a
//!   `detail` naming the failure) and no appointment;
//! - true waits at most `sync_confirmation_timeout_millisecond`: an answer inside it is final
//!   (confirmed, or cancelled for a refusal); otherwise the `pending` appointment is answered and
//!   a `lab.appointment.confirm` job, written in the same transaction, keeps waiting until
//!   `async_confirmation_timeout_millisecond` after the booking: confirmed → `confirmed` /
//!   `scheduled`, else `cancelled`. Being a job row, the wait survives restarts.
//!
//! Every booking and change writes the appointment, walks the order (appointment_pending,
//! appointment_scheduled, appointment_cancelled) and emits `labtest.appointment.*` and
//! `labtest.order.updated` in one transaction.

mod book;
pub mod confirm;
pub mod slots;
pub mod validate;

pub use book::book;

use chrono::{DateTime, Duration, Utc};
use sqlx::AnyConnection;
use uuid::Uuid;

use super::LabError;
use super::model::appointment::{
    Appointment, AppointmentEvent, AppointmentStatus, AppointmentType, CancelRequest,
    CancellationReason, EventStatus, RescheduleRequest,
};
use super::model::enums::{Low, Method};
use super::model::order::Order;
use super::orders;
use super::states;
use crate::events::{Event, EventType, EventUser, outbox};
use crate::loc;
use crate::store::metadata::lab::appointments::{self as store, AppointmentRow};
use crate::store::metadata::lab::booking_keys;
use crate::store::metadata::{MetadataStore, User};
use crate::validation::Violation;
use slots::SlotRecord;

/// The job kind of the asynchronous wait.
pub const CONFIRM_JOB: &str = "lab.appointment.confirm";

/// The cancellation reasons: (id, text, refundable).
pub const REASONS: [(&str, &str, bool); 5] = [
    ("customer_request", "The patient asked to cancel", true),
    (
        "patient_unavailable",
        "The patient is not available at that time",
        true,
    ),
    ("wrong_address", "The address is wrong", true),
    ("duplicate", "The appointment was booked twice", true),
    (
        "late_cancellation",
        "Cancelled less than 24 hours before the slot",
        false,
    ),
];

/// `GET .../appointment/cancellation-reasons`.
pub fn reasons() -> Vec<CancellationReason> {
    REASONS
        .iter()
        .map(|(id, name, refundable)| CancellationReason {
            id: (*id).to_owned(),
            name: (*name).to_owned(),
            is_refundable: *refundable,
        })
        .collect()
}

/// The order method an appointment type serves.
fn method_of(kind: AppointmentType) -> Method {
    match kind {
        AppointmentType::Phlebotomy => Method::Phlebotomy,
        AppointmentType::PatientServiceCenter => Method::WalkIn,
    }
}

fn event_of(
    status: EventStatus,
    at: DateTime<Utc>,
    data: Option<serde_json::Map<String, serde_json::Value>>,
) -> AppointmentEvent {
    AppointmentEvent {
        created_at: at,
        status,
        data,
    }
}

fn data(pairs: &[(&str, String)]) -> Option<serde_json::Map<String, serde_json::Value>> {
    Some(
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), serde_json::Value::String(v.clone())))
            .collect(),
    )
}

/// Decodes a stored appointment.
pub fn from_row(row: &AppointmentRow) -> Result<Appointment, LabError> {
    serde_json::from_str(&row.document)
        .map_err(|e| LabError::Corrupt(format!("appointment document: {e}")))
}

/// Whether an appointment is still active (pending or confirmed).
fn active(a: &Appointment) -> bool {
    matches!(
        a.status,
        AppointmentStatus::Pending | AppointmentStatus::Confirmed
    )
}

/// Writes an appointment, the order walked to `order_to` (when legal and not already there),
/// and their events.
pub(crate) async fn write(
    conn: &mut AnyConnection,
    row: &mut AppointmentRow,
    appt: &mut Appointment,
    created: bool,
    user: &User,
    order_to: &[Low],
    now: DateTime<Utc>,
) -> Result<usize, LabError> {
    let mut order = orders::load(&mut *conn, row.team_id, row.order_id).await?;
    let mut steps = 0;
    for target in order_to {
        if let Some(path) = states::path(
            order.lab_test.summary.method,
            order.low_level_status,
            *target,
        ) && !path.is_empty()
        {
            steps += orders::apply_steps(&mut order, &path, now)?;
        }
    }
    order.details.data.appointment_id = Some(appt.id);
    order.details.data.updated_at = now;
    appt.can_reschedule =
        active(appt) && appt.start_at.is_some_and(|s| s - Duration::hours(1) > now);
    row.status = appt.status.as_str().to_owned();
    row.document = serde_json::to_string(&*appt).unwrap_or_default();
    row.updated_at = now;
    store::upsert(&mut *conn, row).await?;
    let mut deliveries = orders::save_changed(&mut *conn, user, &order, steps, now).await?;
    let event_type = if created {
        EventType::AppointmentCreated
    } else {
        EventType::AppointmentUpdated
    };
    let event = Event::new(event_type, Some(EventUser::of(user)), &*appt);
    deliveries += outbox::enqueue(conn, row.team_id, &[event], now)
        .await?
        .deliveries;
    Ok(deliveries)
}

/// The booking key `key` of `team`, checked: known, of this appointment type, unused, not
/// expired (each failure a 400 saying which).
async fn check_key(
    meta: &MetadataStore,
    team: Uuid,
    key: &str,
    kind: AppointmentType,
    now: DateTime<Utc>,
) -> Result<SlotRecord, LabError> {
    let k = booking_keys::get(&mut *meta.reader().await?, team, key)
        .await?
        .ok_or_else(|| LabError::NotAllowed(format!("unknown booking key {key:?}")))?;
    if k.kind != kind.as_str() {
        return Err(LabError::NotAllowed(format!(
            "booking key {key:?} is for a {} appointment, not {kind}",
            k.kind
        )));
    }
    if k.used_at.is_some() {
        return Err(LabError::NotAllowed(format!(
            "booking key {key:?} was already used"
        )));
    }
    if k.expires_at <= now {
        return Err(LabError::NotAllowed(format!(
            "booking key {key:?} expired at {}",
            crate::users::render_time(k.expires_at)
        )));
    }
    serde_json::from_str(&k.slot).map_err(|e| LabError::Corrupt(format!("booking key slot: {e}")))
}

/// Consumes a checked key (400 if a concurrent request used it first).
async fn use_key(meta: &MetadataStore, key: &str, now: DateTime<Utc>) -> Result<(), LabError> {
    if booking_keys::mark_used(&mut *meta.writer().await?, key, now).await? {
        Ok(())
    } else {
        Err(LabError::NotAllowed(format!(
            "booking key {key:?} was already used"
        )))
    }
}

async fn order_and_user(
    meta: &MetadataStore,
    team: Uuid,
    order_id: Uuid,
) -> Result<(Order, User), LabError> {
    let order = orders::get(meta, team, order_id).await?;
    let user = meta
        .user(team, order.user_id)
        .await?
        .ok_or(LabError::NotFound("User"))?;
    Ok((order, user))
}

/// The order's latest appointment (404 when it has none).
pub async fn current(
    meta: &MetadataStore,
    team: Uuid,
    order_id: Uuid,
    kind: AppointmentType,
) -> Result<(AppointmentRow, Appointment), LabError> {
    orders::get(meta, team, order_id).await?;
    let row = store::latest_for_order(&mut *meta.reader().await?, team, order_id)
        .await?
        .ok_or(LabError::NotFound("Appointment"))?;
    let appt = from_row(&row)?;
    if appt.kind != kind {
        return Err(LabError::NotFound("Appointment"));
    }
    Ok((row, appt))
}

/// Moves the order's active appointment to the slot of a new key (the sandbox confirms
/// reschedules at once).
pub async fn reschedule(
    meta: &MetadataStore,
    team: Uuid,
    order_id: Uuid,
    kind: AppointmentType,
    req: RescheduleRequest,
) -> Result<Appointment, LabError> {
    let (mut row, mut appt) = current(meta, team, order_id, kind).await?;
    if !active(&appt) {
        return Err(LabError::NotAllowed(format!(
            "the appointment is {} and cannot be rescheduled",
            appt.status
        )));
    }
    let now = crate::store::metadata::now();
    let slot = check_key(meta, team, &req.booking_key, kind, now).await?;
    use_key(meta, &req.booking_key, now).await?;
    let (_, user) = order_and_user(meta, team, order_id).await?;
    let from = appt
        .start_at
        .map(crate::users::render_time)
        .unwrap_or_default();
    appt.start_at = Some(slot.start);
    appt.end_at = Some(slot.end);
    appt.address = slot.address;
    appt.location = slot.location;
    if let Some(site) = slot.site_code {
        appt.provider_id = site;
    }
    appt.status = AppointmentStatus::Confirmed;
    appt.event_status = EventStatus::Scheduled;
    appt.events.push(event_of(
        EventStatus::Scheduled,
        now,
        data(&[
            ("rescheduled_from", from),
            ("rescheduled_to", crate::users::render_time(slot.start)),
        ]),
    ));
    let mut tx = meta.begin().await?;
    write(
        &mut tx,
        &mut row,
        &mut appt,
        false,
        &user,
        &[Low::AppointmentScheduled],
        now,
    )
    .await?;
    tx.commit().await?;
    meta.jobs_wake().notify_waiters();
    Ok(appt)
}

/// Cancels the order's active appointment with a reason.
pub async fn cancel(
    meta: &MetadataStore,
    team: Uuid,
    order_id: Uuid,
    kind: AppointmentType,
    req: CancelRequest,
) -> Result<Appointment, LabError> {
    let mut v = Vec::new();
    validate::notes(&mut v, "notes", req.notes.as_deref());
    if !REASONS
        .iter()
        .any(|(id, ..)| *id == req.cancellation_reason_id)
    {
        let ids: Vec<&str> = REASONS.iter().map(|r| r.0).collect();
        v.push(
            Violation::value(
                loc!["body", "cancellation_reason_id"],
                format!(
                    "unknown cancellation reason; expected one of: {}",
                    ids.join(", ")
                ),
            )
            .with_input(req.cancellation_reason_id.as_str().into()),
        );
    }
    if !v.is_empty() {
        return Err(crate::validation::Invalid(v).into());
    }
    let (mut row, mut appt) = current(meta, team, order_id, kind).await?;
    if !active(&appt) {
        return Err(LabError::NotAllowed(format!(
            "the appointment is {} and cannot be cancelled",
            appt.status
        )));
    }
    let (_, user) = order_and_user(meta, team, order_id).await?;
    let now = crate::store::metadata::now();
    appt.status = AppointmentStatus::Cancelled;
    appt.event_status = EventStatus::Cancelled;
    let mut d = vec![("cancellation_reason_id", req.cancellation_reason_id.clone())];
    if let Some(n) = &req.notes {
        d.push(("notes", n.clone()));
    }
    appt.events
        .push(event_of(EventStatus::Cancelled, now, data(&d)));
    let mut tx = meta.begin().await?;
    write(
        &mut tx,
        &mut row,
        &mut appt,
        false,
        &user,
        &[Low::AppointmentCancelled],
        now,
    )
    .await?;
    tx.commit().await?;
    meta.jobs_wake().notify_waiters();
    Ok(appt)
}
