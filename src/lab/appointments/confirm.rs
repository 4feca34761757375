//! The `lab.appointment.confirm` job: the asynchronous wait of a pending booking. It runs when
//! the provider's answer is due or the wait's deadline comes, whichever is first, and either
//! confirms the appointment (`confirmed` / `scheduled`, order `appointment_scheduled`) or
//! cancels it (`cancelled`, order `appointment_cancelled`) - or asks to run again at the next
//! of those instants. Everything it reads is durable (the appointment row keeps the provider's
//! answer time and the deadline), so a restart changes nothing but who runs it; a run repeated
//! after a crash finds the appointment no longer pending and ends.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::super::model::appointment::{AppointmentStatus, EventStatus};
use super::super::model::enums::Low;
use super::{CONFIRM_JOB, data, event_of, from_row, write};
use crate::jobs::{JobContext, JobError, JobHandler, Outcome};
use crate::store::metadata::lab::appointments as store;

/// The job's payload.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Payload {
    /// The pending appointment.
    pub appointment_id: Uuid,
}

/// The handler.
#[derive(Debug, Clone, Copy, Default)]
pub struct Confirmer;

/// What the wait decides at `now`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// The provider confirmed.
    Confirm,
    /// Refused, or no confirmation by the deadline.
    Cancel(&'static str),
    /// Look again then.
    WaitUntil(DateTime<Utc>),
}

/// The decision for an appointment whose provider answers at `answer_at` (refusing when
/// `refuses`), waited on until `deadline`.
pub fn decide(
    now: DateTime<Utc>,
    answer_at: Option<DateTime<Utc>>,
    refuses: bool,
    deadline: DateTime<Utc>,
) -> Decision {
    match answer_at {
        Some(t) if t <= deadline && t <= now => {
            if refuses {
                Decision::Cancel("provider_refused")
            } else {
                Decision::Confirm
            }
        }
        _ if now >= deadline => Decision::Cancel("confirmation_timeout"),
        Some(t) if t <= deadline => Decision::WaitUntil(t),
        _ => Decision::WaitUntil(deadline),
    }
}

#[async_trait::async_trait]
impl JobHandler for Confirmer {
    fn kind(&self) -> &'static str {
        CONFIRM_JOB
    }

    type Payload = Payload;

    async fn run(&self, ctx: &JobContext, p: Payload) -> Result<Outcome, JobError> {
        let retry = |e: super::super::LabError| JobError::Retry(e.to_string());
        let meta = &ctx.meta;
        let Some(mut row) = store::get(
            &mut *meta.writer().await.map_err(|e| retry(e.into()))?,
            p.appointment_id,
        )
        .await
        .map_err(|e| retry(e.into()))?
        else {
            return Err(JobError::Permanent(
                "the appointment no longer exists".into(),
            ));
        };
        let mut appt = from_row(&row).map_err(|e| JobError::Permanent(e.to_string()))?;
        if appt.status != AppointmentStatus::Pending {
            return Ok(Outcome::Done);
        }
        let now = ctx.now();
        let deadline = row.deadline.unwrap_or(now);
        let (status, event, target, reason) = match decide(now, row.confirm_at, row.fails, deadline)
        {
            Decision::WaitUntil(t) => return Ok(Outcome::RetryAt(t)),
            Decision::Confirm => (
                AppointmentStatus::Confirmed,
                EventStatus::Scheduled,
                Low::AppointmentScheduled,
                None,
            ),
            Decision::Cancel(why) => (
                AppointmentStatus::Cancelled,
                EventStatus::Cancelled,
                Low::AppointmentCancelled,
                Some(why),
            ),
        };
        let user = meta
            .user(row.team_id, appt.user_id)
            .await
            .map_err(|e| retry(e.into()))?
            .ok_or_else(|| JobError::Permanent("the order's user no longer exists".into()))?;
        appt.status = status;
        appt.event_status = event;
        appt.events.push(event_of(
            event,
            now,
            reason.and_then(|r| data(&[("reason", r.to_owned())])),
        ));
        let mut tx = meta.begin().await.map_err(|e| retry(e.into()))?;
        write(&mut tx, &mut row, &mut appt, false, &user, &[target], now)
            .await
            .map_err(retry)?;
        tx.commit().await.map_err(|e| retry(e.into()))?;
        meta.jobs_wake().notify_waiters();
        Ok(Outcome::Done)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Duration;

    #[test]
    fn decisions() {
        let t0 = Utc::now();
        let deadline = t0 + Duration::seconds(60);
        let answer = Some(t0 + Duration::seconds(3));
        assert_eq!(
            decide(t0, answer, false, deadline),
            Decision::WaitUntil(t0 + Duration::seconds(3))
        );
        assert_eq!(
            decide(t0 + Duration::seconds(3), answer, false, deadline),
            Decision::Confirm
        );
        assert_eq!(
            decide(t0 + Duration::seconds(3), answer, true, deadline),
            Decision::Cancel("provider_refused")
        );
        assert_eq!(
            decide(t0, None, false, deadline),
            Decision::WaitUntil(deadline)
        );
        assert_eq!(
            decide(deadline, None, false, deadline),
            Decision::Cancel("confirmation_timeout")
        );
        // An answer after the deadline is never waited for.
        let late = Some(deadline + Duration::seconds(1));
        assert_eq!(
            decide(t0, late, false, deadline),
            Decision::WaitUntil(deadline)
        );
        assert_eq!(
            decide(deadline, late, false, deadline),
            Decision::Cancel("confirmation_timeout")
        );
    }
}
