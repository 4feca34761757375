//! Booking: the key checked and consumed, the provider waited on as `async_confirmation`
//! asks (see the module docs of [`super`]), then the appointment, the order's walk and their
//! events written in one transaction (with the confirmation job when the wait goes on).

use chrono::{DateTime, Duration, Utc};
use uuid::Uuid;

use super::super::LabError;
use super::super::model::appointment::{
    Appointment, AppointmentStatus, AppointmentType, BookRequest, EventStatus,
};
use super::super::model::enums::Low;
use super::super::sandbox::{SYNC_PROVIDER_LIMIT, Scheduler};
use super::super::states;
use super::{
    CONFIRM_JOB, active, check_key, confirm, data, event_of, from_row, method_of, order_and_user,
    use_key, validate, write,
};
use crate::jobs::NewJob;
use crate::store::metadata::MetadataStore;
use crate::store::metadata::lab::appointments::{self as store, AppointmentRow};

/// How a booking ends as far as the request is concerned.
enum Outcome {
    Confirmed,
    Refused,
    Pending {
        deadline: DateTime<Utc>,
        answer_at: Option<DateTime<Utc>>,
    },
}

/// Books an appointment of `kind` for the order.
pub async fn book(
    meta: &MetadataStore,
    scheduler: &dyn Scheduler,
    team: Uuid,
    order_id: Uuid,
    kind: AppointmentType,
    req: BookRequest,
) -> Result<Appointment, LabError> {
    let (sync_ms, async_ms) = validate::booking(&req)?;
    let (order, user) = order_and_user(meta, team, order_id).await?;
    let method = method_of(kind);
    if order.lab_test.summary.method != method {
        return Err(LabError::NotAllowed(format!(
            "a {kind} appointment needs a {method} order; this order is {}",
            order.lab_test.summary.method
        )));
    }
    if let Some(row) = store::latest_for_order(&mut *meta.reader().await?, team, order_id).await?
        && active(&from_row(&row)?)
    {
        return Err(LabError::NotAllowed(
            "the order already has an active appointment: reschedule or cancel it".into(),
        ));
    }
    if states::path(method, order.low_level_status, Low::AppointmentPending).is_none() {
        return Err(LabError::NotAllowed(format!(
            "an order in state {} cannot get an appointment",
            order.low_level_status
        )));
    }
    let booked_at = crate::store::metadata::now();
    let slot = check_key(meta, team, &req.booking_key, kind, booked_at).await?;
    use_key(meta, &req.booking_key, booked_at).await?;
    let (answer_at, refuses) = scheduler.plan(&req.booking_key).answer(booked_at);
    let outcome = if !req.async_confirmation {
        match answer_at {
            Some(t) if t - booked_at <= SYNC_PROVIDER_LIMIT => {
                sleep_until(t).await;
                if refuses {
                    return Err(LabError::ProviderFailed(format!(
                        "The appointment provider {} refused to confirm the booking; no appointment was made",
                        scheduler.name()
                    )));
                }
                Outcome::Confirmed
            }
            _ => {
                sleep_until(booked_at + SYNC_PROVIDER_LIMIT).await;
                return Err(LabError::ProviderFailed(format!(
                    "The appointment provider {} did not confirm the booking within {} s; no appointment was made",
                    scheduler.name(),
                    SYNC_PROVIDER_LIMIT.num_seconds()
                )));
            }
        }
    } else {
        let window_end = booked_at + Duration::milliseconds(sync_ms);
        match answer_at {
            Some(t) if t <= window_end => {
                sleep_until(t).await;
                if refuses {
                    Outcome::Refused
                } else {
                    Outcome::Confirmed
                }
            }
            _ => {
                sleep_until(window_end).await;
                Outcome::Pending {
                    deadline: booked_at + Duration::milliseconds(async_ms),
                    answer_at,
                }
            }
        }
    };
    let now = crate::store::metadata::now();
    let id = Uuid::new_v4();
    let provider = match &slot.lab_slug {
        Some(lab) => lab.clone(),
        None => scheduler.name().to_owned(),
    };
    let mut appt = Appointment {
        id,
        user_id: order.user_id,
        order_id,
        address: slot.address.clone(),
        location: slot.location,
        start_at: Some(slot.start),
        end_at: Some(slot.end),
        iana_timezone: Some(req.iana_timezone.clone().unwrap_or(slot.timezone.clone())),
        kind,
        provider,
        status: AppointmentStatus::Pending,
        provider_id: slot
            .site_code
            .clone()
            .unwrap_or_else(|| format!("sandbox-{}", id.simple())),
        external_id: None,
        can_reschedule: false,
        event_status: EventStatus::Pending,
        event_data: None,
        events: vec![event_of(
            EventStatus::Pending,
            booked_at,
            data(&[("booking_key", req.booking_key.clone())]),
        )],
        appointment_notes: req.appointment_notes.clone(),
    };
    let mut row = AppointmentRow {
        id,
        team_id: team,
        order_id,
        status: String::new(),
        document: String::new(),
        confirm_at: answer_at,
        fails: refuses,
        deadline: None,
        created_at: now,
        updated_at: now,
    };
    let mut tx = meta.begin().await?;
    let order_to: Vec<Low> = match outcome {
        Outcome::Confirmed => {
            appt.status = AppointmentStatus::Confirmed;
            appt.event_status = EventStatus::Scheduled;
            appt.events
                .push(event_of(EventStatus::Scheduled, now, None));
            vec![Low::AppointmentPending, Low::AppointmentScheduled]
        }
        Outcome::Refused => {
            appt.status = AppointmentStatus::Cancelled;
            appt.event_status = EventStatus::Cancelled;
            appt.events.push(event_of(
                EventStatus::Cancelled,
                now,
                data(&[("reason", "provider_refused".into())]),
            ));
            vec![Low::AppointmentPending, Low::AppointmentCancelled]
        }
        Outcome::Pending {
            deadline,
            answer_at,
        } => {
            row.deadline = Some(deadline);
            let due = answer_at.map_or(deadline, |a| a.min(deadline));
            let job = NewJob::typed(CONFIRM_JOB, &confirm::Payload { appointment_id: id })
                .for_team(team)
                .at(due)
                .unique(format!("{CONFIRM_JOB}:{id}"))
                .max_attempts(20);
            crate::jobs::enqueue(&mut tx, &job).await?;
            vec![Low::AppointmentPending]
        }
    };
    write(&mut tx, &mut row, &mut appt, true, &user, &order_to, now).await?;
    tx.commit().await?;
    meta.jobs_wake().notify_waiters();
    Ok(appt)
}

async fn sleep_until(t: DateTime<Utc>) {
    let wait = (t - Utc::now()).to_std().unwrap_or_default();
    tokio::time::sleep(wait).await;
}
