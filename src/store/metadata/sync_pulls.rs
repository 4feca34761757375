//! The `sync_pulls` table: per connection with a connector, its historical pull (window and
//! progress) and its incremental pulls (cursor, last success, last failure); see `sync::pull`.

use chrono::{DateTime, Utc};
use sqlx::AnyConnection;
use uuid::Uuid;

use super::{MetadataError, get_opt_str, get_opt_time, get_str, get_time, get_uuid, ts};

/// A connection's pulls: its historical pull and its incremental cursor.
#[derive(Debug, Clone, PartialEq)]
pub struct ConnectionSync {
    /// The user.
    pub user_id: Uuid,
    /// The provider's slug.
    pub provider: String,
    /// The user's team.
    pub team_id: Uuid,
    /// The first instant pulled.
    pub window_start: DateTime<Utc>,
    /// The first instant not pulled.
    pub window_end: DateTime<Utc>,
    /// Everything before this is stored.
    pub done_until: DateTime<Utc>,
    /// Resources that received records so far (`sync::Resource` names).
    pub resources: Vec<String>,
    /// When the pull completed (its events were sent then).
    pub completed_at: Option<DateTime<Utc>>,
    /// Where the next incremental pull starts (less its overlap).
    pub synced_until: DateTime<Utc>,
    /// When the last incremental pull succeeded.
    pub synced_at: Option<DateTime<Utc>>,
    /// What it brought (dataset paths).
    pub synced_resources: Vec<String>,
    /// When the last pull (of either kind) failed, and why.
    pub failed: Option<(DateTime<Utc>, String)>,
    /// A demo connection's persona (`sync::connectors::demo`): its pulls run the demo generator. `None`: a
    /// real provider's pull.
    pub demo_persona: Option<String>,
}

impl ConnectionSync {
    /// A connection's pulls before any ran: the historical pull of `[window_start,
    /// window_end)` not started, the incremental cursor at its end.
    pub fn new(
        (user_id, team_id): (Uuid, Uuid),
        provider: &str,
        (window_start, window_end): (DateTime<Utc>, DateTime<Utc>),
        demo_persona: Option<String>,
    ) -> Self {
        ConnectionSync {
            user_id,
            provider: provider.to_owned(),
            team_id,
            window_start,
            window_end,
            done_until: window_start,
            resources: Vec::new(),
            completed_at: None,
            synced_until: window_end,
            synced_at: None,
            synced_resources: Vec::new(),
            failed: None,
            demo_persona,
        }
    }
}

/// Starts a connection's historical pull unless one is recorded (a link made again resumes or
/// keeps the first); answers whether it was new.
pub async fn start(
    conn: &mut AnyConnection,
    pull: &ConnectionSync,
    now: DateTime<Utc>,
) -> Result<bool, MetadataError> {
    let done = sqlx::query(
        "INSERT INTO sync_pulls (user_id, provider, team_id, window_start, window_end, \
         done_until, resources, created_at, synced_until, demo_persona) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $5, $9) \
         ON CONFLICT (user_id, provider) DO NOTHING",
    )
    .bind(pull.user_id.to_string())
    .bind(&pull.provider)
    .bind(pull.team_id.to_string())
    .bind(ts(pull.window_start))
    .bind(ts(pull.window_end))
    .bind(ts(pull.done_until))
    .bind(resources_json(&pull.resources))
    .bind(ts(now))
    .bind(pull.demo_persona.as_deref())
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Starts a connection's historical pull again with `pull`'s window and kind (a demo connection
/// made again, or a demo connection linked to the real provider): progress, failure and the
/// incremental cursor start afresh. A run of the previous pull still under way finds its next
/// [`advance`] refused and ends; its job runs again for the new window. Answers whether the row
/// was there.
pub async fn restart(
    conn: &mut AnyConnection,
    pull: &ConnectionSync,
) -> Result<bool, MetadataError> {
    let done = sqlx::query(
        "UPDATE sync_pulls SET window_start = $3, window_end = $4, done_until = $3, \
         resources = '[]', completed_at = NULL, synced_until = $4, synced_at = NULL, \
         synced_resources = '[]', failed_at = NULL, last_error = NULL, demo_persona = $5 \
         WHERE user_id = $1 AND provider = $2",
    )
    .bind(pull.user_id.to_string())
    .bind(&pull.provider)
    .bind(ts(pull.window_start))
    .bind(ts(pull.window_end))
    .bind(pull.demo_persona.as_deref())
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// The condition that a row is still the pull `pull` describes (its window start and kind),
/// for the statements of a run that may have been overtaken by [`restart`]: binds `$3` and `$4`.
const SAME_PULL: &str = "window_start = $3 AND COALESCE(demo_persona, '') = $4";

/// The connection's historical pull, if one was started.
pub async fn get(
    conn: &mut AnyConnection,
    user: Uuid,
    provider: &str,
) -> Result<Option<ConnectionSync>, MetadataError> {
    let row = sqlx::query(
        "SELECT user_id, provider, team_id, window_start, window_end, done_until, resources, \
         completed_at, synced_until, synced_at, synced_resources, failed_at, last_error, \
         demo_persona FROM sync_pulls WHERE user_id = $1 AND provider = $2",
    )
    .bind(user.to_string())
    .bind(provider)
    .fetch_optional(conn)
    .await?;
    row.map(|row| {
        let list = |name: &'static str| -> Result<Vec<String>, MetadataError> {
            Ok(serde_json::from_str(&get_str(&row, name)?).unwrap_or_default())
        };
        let failed = match (
            get_opt_time(&row, "failed_at")?,
            get_opt_str(&row, "last_error")?,
        ) {
            (Some(at), Some(error)) => Some((at, error)),
            _ => None,
        };
        Ok(ConnectionSync {
            user_id: get_uuid(&row, "user_id")?,
            provider: get_str(&row, "provider")?,
            team_id: get_uuid(&row, "team_id")?,
            window_start: get_time(&row, "window_start")?,
            window_end: get_time(&row, "window_end")?,
            done_until: get_time(&row, "done_until")?,
            resources: list("resources")?,
            completed_at: get_opt_time(&row, "completed_at")?,
            synced_until: get_time(&row, "synced_until")?,
            synced_at: get_opt_time(&row, "synced_at")?,
            synced_resources: list("synced_resources")?,
            failed,
            demo_persona: get_opt_str(&row, "demo_persona")?,
        })
    })
    .transpose()
}

/// Records a chunk stored: progress from `from` up to `pull.done_until`, with the resources seen
/// so far. Answers `false`, changing nothing, when the row is no longer at `from` of this pull
/// (it was restarted: the run must stop).
pub async fn advance(
    conn: &mut AnyConnection,
    pull: &ConnectionSync,
    from: DateTime<Utc>,
) -> Result<bool, MetadataError> {
    let done = sqlx::query(&format!(
        "UPDATE sync_pulls SET done_until = $5, resources = $6 \
         WHERE user_id = $1 AND provider = $2 AND {SAME_PULL} AND done_until = $7"
    ))
    .bind(pull.user_id.to_string())
    .bind(&pull.provider)
    .bind(ts(pull.window_start))
    .bind(pull.demo_persona.as_deref().unwrap_or_default())
    .bind(ts(pull.done_until))
    .bind(resources_json(&pull.resources))
    .bind(ts(from))
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Marks the pull complete; `false`, changing nothing, when the row is no longer this pull, all
/// stored and incomplete (it was restarted).
pub async fn complete(
    conn: &mut AnyConnection,
    pull: &ConnectionSync,
    at: DateTime<Utc>,
) -> Result<bool, MetadataError> {
    let done = sqlx::query(&format!(
        "UPDATE sync_pulls SET completed_at = $5 WHERE user_id = $1 AND provider = $2 \
         AND {SAME_PULL} AND done_until = window_end AND completed_at IS NULL"
    ))
    .bind(pull.user_id.to_string())
    .bind(&pull.provider)
    .bind(ts(pull.window_start))
    .bind(pull.demo_persona.as_deref().unwrap_or_default())
    .bind(ts(at))
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Records an incremental pull that stored everything up to `until`, bringing `resources`.
pub async fn synced(
    conn: &mut AnyConnection,
    user: Uuid,
    provider: &str,
    until: DateTime<Utc>,
    resources: &[String],
) -> Result<(), MetadataError> {
    sqlx::query(
        "UPDATE sync_pulls SET synced_until = $3, synced_at = $3, synced_resources = $4 \
         WHERE user_id = $1 AND provider = $2",
    )
    .bind(user.to_string())
    .bind(provider)
    .bind(ts(until))
    .bind(resources_json(resources))
    .execute(conn)
    .await?;
    Ok(())
}

/// Records a failed pull and its reason.
pub async fn failed(
    conn: &mut AnyConnection,
    user: Uuid,
    provider: &str,
    at: DateTime<Utc>,
    error: &str,
) -> Result<(), MetadataError> {
    sqlx::query(
        "UPDATE sync_pulls SET failed_at = $3, last_error = $4 \
         WHERE user_id = $1 AND provider = $2",
    )
    .bind(user.to_string())
    .bind(provider)
    .bind(ts(at))
    .bind(error)
    .execute(conn)
    .await?;
    Ok(())
}

fn resources_json(resources: &[String]) -> String {
    serde_json::to_string(resources).unwrap_or_else(|_| "[]".to_owned())
}

/// The user's refresh requests since `since`, oldest first, after forgetting older ones (a
/// write, so on SQLite the caller's transaction holds the write lock from here on).
pub async fn recent_refreshes(
    conn: &mut AnyConnection,
    user: Uuid,
    since: DateTime<Utc>,
) -> Result<Vec<DateTime<Utc>>, MetadataError> {
    sqlx::query("DELETE FROM refresh_requests WHERE user_id = $1 AND requested_at < $2")
        .bind(user.to_string())
        .bind(ts(since))
        .execute(&mut *conn)
        .await?;
    let rows = sqlx::query(
        "SELECT requested_at FROM refresh_requests WHERE user_id = $1 ORDER BY requested_at",
    )
    .bind(user.to_string())
    .fetch_all(&mut *conn)
    .await?;
    rows.iter().map(|r| get_time(r, "requested_at")).collect()
}

/// Records a refresh request of `user` at `at`.
pub async fn record_refresh(
    conn: &mut AnyConnection,
    user: Uuid,
    at: DateTime<Utc>,
) -> Result<(), MetadataError> {
    sqlx::query("INSERT INTO refresh_requests (id, user_id, requested_at) VALUES ($1, $2, $3)")
        .bind(Uuid::new_v4().to_string())
        .bind(user.to_string())
        .bind(ts(at))
        .execute(conn)
        .await?;
    Ok(())
}
