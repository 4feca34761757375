//! Per-session reads: the sleep cycle and electrocardiogram summaries of a user and the streams
//! of one sleep or workout session named by its id alone (`render::sessions`, `render::ecg` and
//! `render::streams` render them).
//!
//! A stream path names a session, not its user. The session is looked up among the team's
//! live users, oldest first, in their stored sleep (or workout) rows; a session id is unique
//! within a user, and when two users of the team share one (the same provider record pushed
//! for both) the older user's answers. The search reads each user's session table (summary
//! tables are small and stay in the store's cache), so it costs about the team's number of
//! users; the getters' time limit bounds it (504 past it). Another team's id is never found:
//! 404. A `user_id` query parameter narrows the search to that user (an extension of ours; the
//! reference has none).

use std::ops::Range;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::{DataError, read};
use crate::render::ecg::Electrocardiogram;
use crate::render::sessions::{self, Session, SleepCycle};
use crate::render::streams::{self, SleepStream, StreamInputs, WorkoutStream};
use crate::schema::{Dataset, Table, resource};
use crate::store::health::HealthStore;
use crate::store::metadata::{MetadataStore, User};

/// How many users one page of the search lists.
const USERS_PER_PAGE: i64 = 200;

/// The user's sleep cycles in `window` (by session end), of `provider` only when given.
pub async fn sleep_cycles(
    store: &HealthStore,
    user: &User,
    window: Range<DateTime<Utc>>,
    provider: Option<&str>,
) -> Result<Vec<SleepCycle>, DataError> {
    let rows = read(
        store,
        user,
        Dataset::Table(Table::Sleep),
        Some(window),
        provider,
    )
    .await?;
    Ok(sessions::sleep_cycles(&rows, user.id))
}

/// The user's electrocardiogram recordings starting in `window`, of `provider` only when
/// given (derived from the voltage samples: `render::ecg`).
pub async fn electrocardiograms(
    store: &HealthStore,
    user: &User,
    window: Range<DateTime<Utc>>,
    provider: Option<&str>,
) -> Result<Vec<Electrocardiogram>, DataError> {
    let Some(voltage) = resource("electrocardiogram_voltage") else {
        return Ok(Vec::new());
    };
    let rows = read(
        store,
        user,
        Dataset::Timeseries(voltage),
        Some(window),
        provider,
    )
    .await?;
    Ok(crate::render::ecg::electrocardiograms(&rows, user.id))
}

/// The session `id` of `table` (sleep or workouts) among the team's users (or `only` that
/// one), with its user.
pub async fn find_session(
    meta: &MetadataStore,
    store: &HealthStore,
    team: Uuid,
    table: Table,
    id: &str,
    only: Option<User>,
) -> Result<Option<(User, Session)>, DataError> {
    if let Some(user) = only {
        let rows = read(store, &user, Dataset::Table(table), None, None).await?;
        return Ok(sessions::find_session(&rows, id).map(|s| (user, s)));
    }
    let mut offset = 0;
    loop {
        let (users, _) = meta.list_users(team, offset, USERS_PER_PAGE).await?;
        let listed = users.len();
        for user in users {
            let rows = read(store, &user, Dataset::Table(table), None, None).await?;
            if let Some(session) = sessions::find_session(&rows, id) {
                return Ok(Some((user, session)));
            }
        }
        if listed < USERS_PER_PAGE as usize {
            return Ok(None);
        }
        offset += USERS_PER_PAGE;
    }
}

/// Reads the named timeseries of `user` inside the session's window.
async fn series(
    store: &HealthStore,
    user: &User,
    session: &Session,
    name: &str,
) -> Result<Vec<datafusion::arrow::record_batch::RecordBatch>, DataError> {
    let Some(resource) = resource(name) else {
        return Ok(Vec::new());
    };
    let (Some(start), Some(end)) = (
        DateTime::<Utc>::from_timestamp_micros(session.start),
        DateTime::<Utc>::from_timestamp_micros(session.end.saturating_add(1)),
    ) else {
        return Ok(Vec::new());
    };
    let window = start..end.max(start);
    read(
        store,
        user,
        Dataset::Timeseries(resource),
        Some(window),
        Some(&session.provider),
    )
    .await
}

/// The stream of the sleep session `id`, when the team has it.
pub async fn sleep_stream(
    meta: &MetadataStore,
    store: &HealthStore,
    team: Uuid,
    id: &str,
    only: Option<User>,
) -> Result<Option<SleepStream>, DataError> {
    let Some((user, session)) = find_session(meta, store, team, Table::Sleep, id, only).await?
    else {
        return Ok(None);
    };
    let inputs = StreamInputs {
        heartrate: series(store, &user, &session, "heartrate").await?,
        hrv: series(store, &user, &session, "hrv").await?,
        respiratory_rate: series(store, &user, &session, "respiratory_rate").await?,
        distance: Vec::new(),
    };
    Ok(Some(streams::sleep_stream(&session, &inputs)))
}

/// The stream of the workout `id`, when the team has it.
pub async fn workout_stream(
    meta: &MetadataStore,
    store: &HealthStore,
    team: Uuid,
    id: &str,
    only: Option<User>,
) -> Result<Option<WorkoutStream>, DataError> {
    let Some((user, session)) = find_session(meta, store, team, Table::Workout, id, only).await?
    else {
        return Ok(None);
    };
    let inputs = StreamInputs {
        heartrate: series(store, &user, &session, "heartrate").await?,
        distance: series(store, &user, &session, "distance").await?,
        ..StreamInputs::default()
    };
    Ok(Some(streams::workout_stream(&session, &inputs)))
}
