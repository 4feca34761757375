//! The `events` table (the outbox and the stored event list) and `webhook_deliveries` (one
//! event to one endpoint): every statement `src/events/` needs for them.
//!
//! Like every table group, functions take a connection, so an event and its deliveries are
//! written in the transaction of the change that causes them.

use chrono::{DateTime, Utc};
use sqlx::AnyConnection;
use sqlx::any::AnyRow;
use uuid::Uuid;

use super::{MetadataError, get_opt_str, get_opt_time, get_str, get_time, get_uuid, parse, ts};

/// A stored event.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredEvent {
    /// Its id (the `webhook-id` of every delivery of it).
    pub id: Uuid,
    /// The team it belongs to.
    pub team_id: Uuid,
    /// The user it concerns, if any.
    pub user_id: Option<Uuid>,
    /// Its type name.
    pub event_type: String,
    /// The envelope JSON, exactly as delivered.
    pub body: String,
    /// When it was written.
    pub created_at: DateTime<Utc>,
    /// Its place among the events written with it.
    pub ordinal: i64,
}

/// Where a page of events starts: after this (created_at, ordinal, id).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventPosition {
    /// The last event's time.
    pub created_at: DateTime<Utc>,
    /// Its ordinal.
    pub ordinal: i64,
    /// Its id.
    pub id: Uuid,
}

/// Which events a listing shows (always one team's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventFilter {
    /// The team.
    pub team: Uuid,
    /// Only this user's.
    pub user: Option<Uuid>,
    /// Only this type.
    pub event_type: Option<String>,
    /// Created at or after.
    pub since: DateTime<Utc>,
    /// Created before.
    pub until: Option<DateTime<Utc>>,
}

const EVENT_COLUMNS: &str = "id, team_id, user_id, event_type, body, created_at, ordinal";

fn event_from_row(row: &AnyRow) -> Result<StoredEvent, MetadataError> {
    Ok(StoredEvent {
        id: get_uuid(row, "id")?,
        team_id: get_uuid(row, "team_id")?,
        user_id: get_opt_str(row, "user_id")?
            .map(|v| parse("user_id", v))
            .transpose()?,
        event_type: get_str(row, "event_type")?,
        body: get_str(row, "body")?,
        created_at: get_time(row, "created_at")?,
        ordinal: sqlx::Row::try_get(row, "ordinal")?,
    })
}

/// Writes an event.
pub async fn insert_event(
    conn: &mut AnyConnection,
    event: &StoredEvent,
) -> Result<(), MetadataError> {
    insert(conn, event, None).await
}

/// Writes an event held under `token` until `expires` (see [`release_hold`]): invisible to
/// listings and not delivered.
pub async fn insert_held_event(
    conn: &mut AnyConnection,
    event: &StoredEvent,
    token: Uuid,
    expires: DateTime<Utc>,
) -> Result<(), MetadataError> {
    insert(conn, event, Some((token, expires))).await
}

async fn insert(
    conn: &mut AnyConnection,
    event: &StoredEvent,
    hold: Option<(Uuid, DateTime<Utc>)>,
) -> Result<(), MetadataError> {
    sqlx::query(
        "INSERT INTO events (id, team_id, user_id, event_type, body, created_at, ordinal, \
         hold_token, hold_expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
    )
    .bind(event.id.to_string())
    .bind(event.team_id.to_string())
    .bind(event.user_id.map(|u| u.to_string()))
    .bind(&event.event_type)
    .bind(&event.body)
    .bind(ts(event.created_at))
    .bind(event.ordinal)
    .bind(hold.map(|h| h.0.to_string()))
    .bind(hold.map(|h| ts(h.1)))
    .execute(conn)
    .await?;
    Ok(())
}

/// Makes the events held under `token` ordinary events; answers how many it released.
pub async fn release_hold(conn: &mut AnyConnection, token: Uuid) -> Result<u64, MetadataError> {
    let done = sqlx::query(
        "UPDATE events SET hold_token = NULL, hold_expires_at = NULL WHERE hold_token = $1",
    )
    .bind(token.to_string())
    .execute(conn)
    .await?;
    Ok(done.rows_affected())
}

/// Removes the events held under `token` (their change never became durable).
pub async fn drop_hold(conn: &mut AnyConnection, token: Uuid) -> Result<u64, MetadataError> {
    let done = sqlx::query("DELETE FROM events WHERE hold_token = $1")
        .bind(token.to_string())
        .execute(conn)
        .await?;
    Ok(done.rows_affected())
}

/// Held events, by hold: those whose hold expired at `now` (their writer died or is very
/// late), oldest first, and the earliest expiry of the others.
pub async fn expired_holds(
    conn: &mut AnyConnection,
    now: DateTime<Utc>,
) -> Result<(Vec<(Uuid, Vec<StoredEvent>)>, Option<DateTime<Utc>>), MetadataError> {
    let rows = sqlx::query(&format!(
        "SELECT {EVENT_COLUMNS}, hold_token, hold_expires_at FROM events \
         WHERE hold_token IS NOT NULL ORDER BY created_at, ordinal, id"
    ))
    .fetch_all(conn)
    .await?;
    let mut expired: Vec<(Uuid, Vec<StoredEvent>)> = Vec::new();
    let mut next: Option<DateTime<Utc>> = None;
    for row in &rows {
        let token: Uuid = parse("hold_token", get_str(row, "hold_token")?)?;
        let expires = get_time(row, "hold_expires_at")?;
        if expires > now {
            next = Some(next.map_or(expires, |n| n.min(expires)));
            continue;
        }
        let event = event_from_row(row)?;
        match expired.iter_mut().find(|(t, _)| *t == token) {
            Some((_, events)) => events.push(event),
            None => expired.push((token, vec![event])),
        }
    }
    Ok((expired, next))
}

/// One event by id.
pub async fn event(
    conn: &mut AnyConnection,
    id: Uuid,
) -> Result<Option<StoredEvent>, MetadataError> {
    let row = sqlx::query(&format!("SELECT {EVENT_COLUMNS} FROM events WHERE id = $1"))
        .bind(id.to_string())
        .fetch_optional(conn)
        .await?;
    row.as_ref().map(event_from_row).transpose()
}

/// Up to `limit` events `filter` selects, oldest first, after `after` when given.
pub async fn list_events(
    conn: &mut AnyConnection,
    filter: &EventFilter,
    after: Option<&EventPosition>,
    limit: i64,
) -> Result<Vec<StoredEvent>, MetadataError> {
    // Empty strings stand for "no filter"; the clauses are fixed text, values are bound.
    let (at, ordinal, id) = after.map_or((String::new(), 0, String::new()), |p| {
        (ts(p.created_at), p.ordinal, p.id.to_string())
    });
    let sql = format!(
        "SELECT {EVENT_COLUMNS} FROM events WHERE team_id = $1 AND hold_token IS NULL \
         AND ($2 = '' OR user_id = $2) AND ($3 = '' OR event_type = $3) \
         AND created_at >= $4 AND ($5 = '' OR created_at < $5) \
         AND ($6 = '' OR created_at > $6 OR (created_at = $6 AND (ordinal > $7 \
              OR (ordinal = $7 AND id > $8)))) \
         ORDER BY created_at, ordinal, id LIMIT $9"
    );
    let rows = sqlx::query(&sql)
        .bind(filter.team.to_string())
        .bind(filter.user.map(|u| u.to_string()).unwrap_or_default())
        .bind(filter.event_type.clone().unwrap_or_default())
        .bind(ts(filter.since))
        .bind(filter.until.map(ts).unwrap_or_default())
        .bind(at)
        .bind(ordinal)
        .bind(id)
        .bind(limit)
        .fetch_all(conn)
        .await?;
    rows.iter().map(event_from_row).collect()
}

/// Where a delivery stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeliveryStatus {
    /// Not delivered yet; `next_attempt_at` says when it is tried.
    Pending,
    /// A 2xx answered in time.
    Succeeded,
    /// Every attempt of the schedule failed, or the endpoint was disabled or deleted.
    Failed,
}

impl DeliveryStatus {
    /// Every status.
    pub const ALL: [DeliveryStatus; 3] = [
        DeliveryStatus::Pending,
        DeliveryStatus::Succeeded,
        DeliveryStatus::Failed,
    ];

    /// The stored and rendered name.
    pub fn as_str(self) -> &'static str {
        match self {
            DeliveryStatus::Pending => "pending",
            DeliveryStatus::Succeeded => "succeeded",
            DeliveryStatus::Failed => "failed",
        }
    }
}

impl std::str::FromStr for DeliveryStatus {
    type Err = ();

    fn from_str(s: &str) -> Result<Self, ()> {
        DeliveryStatus::ALL
            .into_iter()
            .find(|d| d.as_str() == s)
            .ok_or(())
    }
}

/// A delivery with the event it carries.
#[derive(Debug, Clone, PartialEq)]
pub struct Delivery {
    /// Its id.
    pub id: Uuid,
    /// The endpoint.
    pub endpoint_id: Uuid,
    /// The event.
    pub event_id: Uuid,
    /// The event's type.
    pub event_type: String,
    /// The event's body (the envelope).
    pub body: String,
    /// The stream: the user id, or '' for events without a user.
    pub user_key: String,
    /// Where it stands.
    pub status: DeliveryStatus,
    /// Attempts made.
    pub attempts: u32,
    /// When it is tried next (pending only).
    pub next_attempt_at: Option<DateTime<Utc>>,
    /// When it was last tried.
    pub last_attempt_at: Option<DateTime<Utc>>,
    /// The last answer's status code.
    pub last_status_code: Option<i64>,
    /// The last attempt's duration.
    pub last_duration_ms: Option<i64>,
    /// Why the last attempt failed.
    pub last_error: Option<String>,
    /// When it was made.
    pub created_at: DateTime<Utc>,
}

const DELIVERY_COLUMNS: &str = "d.id, d.endpoint_id, d.event_id, e.event_type, e.body, \
    d.user_key, d.status, d.attempts, d.next_attempt_at, d.last_attempt_at, \
    d.last_status_code, d.last_duration_ms, d.last_error, d.created_at";

fn delivery_from_row(row: &AnyRow) -> Result<Delivery, MetadataError> {
    let attempts: i64 = sqlx::Row::try_get(row, "attempts")?;
    Ok(Delivery {
        id: get_uuid(row, "id")?,
        endpoint_id: get_uuid(row, "endpoint_id")?,
        event_id: get_uuid(row, "event_id")?,
        event_type: get_str(row, "event_type")?,
        body: get_str(row, "body")?,
        user_key: get_str(row, "user_key")?,
        status: parse("status", get_str(row, "status")?)?,
        attempts: u32::try_from(attempts).unwrap_or(u32::MAX),
        next_attempt_at: get_opt_time(row, "next_attempt_at")?,
        last_attempt_at: get_opt_time(row, "last_attempt_at")?,
        last_status_code: sqlx::Row::try_get(row, "last_status_code")?,
        last_duration_ms: sqlx::Row::try_get(row, "last_duration_ms")?,
        last_error: get_opt_str(row, "last_error")?,
        created_at: get_time(row, "created_at")?,
    })
}

/// Adds a pending delivery of `event` to `endpoint`, due at `created_at`.
pub async fn insert_delivery(
    conn: &mut AnyConnection,
    endpoint: Uuid,
    event: Uuid,
    user_key: &str,
    created_at: DateTime<Utc>,
    ordinal: i64,
) -> Result<Uuid, MetadataError> {
    let id = Uuid::new_v4();
    sqlx::query(
        "INSERT INTO webhook_deliveries (id, endpoint_id, event_id, user_key, status, attempts, \
         next_attempt_at, created_at, ordinal) VALUES ($1, $2, $3, $4, 'pending', 0, $5, $5, $6)",
    )
    .bind(id.to_string())
    .bind(endpoint.to_string())
    .bind(event.to_string())
    .bind(user_key)
    .bind(ts(created_at))
    .bind(ordinal)
    .execute(conn)
    .await?;
    Ok(id)
}

/// The oldest `limit` pending deliveries of a stream, in sending order.
pub async fn stream_head(
    conn: &mut AnyConnection,
    endpoint: Uuid,
    user_key: &str,
    limit: i64,
) -> Result<Vec<Delivery>, MetadataError> {
    let sql = format!(
        "SELECT {DELIVERY_COLUMNS} FROM webhook_deliveries d JOIN events e ON e.id = d.event_id \
         WHERE d.endpoint_id = $1 AND d.user_key = $2 AND d.status = 'pending' \
         ORDER BY d.created_at, d.ordinal, d.id LIMIT $3"
    );
    let rows = sqlx::query(&sql)
        .bind(endpoint.to_string())
        .bind(user_key)
        .bind(limit)
        .fetch_all(conn)
        .await?;
    rows.iter().map(delivery_from_row).collect()
}

/// What one attempt found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptRecord {
    /// The delivery.
    pub delivery: Uuid,
    /// Its status after the attempt.
    pub status: DeliveryStatus,
    /// Attempts made, this one included.
    pub attempts: u32,
    /// When it is tried next (pending only).
    pub next_attempt_at: Option<DateTime<Utc>>,
    /// When this attempt started.
    pub attempted_at: DateTime<Utc>,
    /// The answer's status code, if one came.
    pub status_code: Option<i64>,
    /// How long it took.
    pub duration_ms: i64,
    /// Why it failed.
    pub error: Option<String>,
}

/// Records an attempt's outcome on its delivery.
pub async fn record_attempt(
    conn: &mut AnyConnection,
    record: &AttemptRecord,
) -> Result<(), MetadataError> {
    sqlx::query(
        "UPDATE webhook_deliveries SET status = $2, attempts = $3, next_attempt_at = $4, \
         last_attempt_at = $5, last_status_code = $6, last_duration_ms = $7, last_error = $8 \
         WHERE id = $1",
    )
    .bind(record.delivery.to_string())
    .bind(record.status.as_str())
    .bind(i64::from(record.attempts))
    .bind(record.next_attempt_at.map(ts))
    .bind(ts(record.attempted_at))
    .bind(record.status_code)
    .bind(record.duration_ms)
    .bind(record.error.clone())
    .execute(conn)
    .await?;
    Ok(())
}

/// Fails every pending delivery of an endpoint (disabled), with `reason`.
pub async fn fail_pending(
    conn: &mut AnyConnection,
    endpoint: Uuid,
    reason: &str,
) -> Result<u64, MetadataError> {
    let done = sqlx::query(
        "UPDATE webhook_deliveries SET status = 'failed', next_attempt_at = NULL, \
         last_error = COALESCE(last_error, $2) WHERE endpoint_id = $1 AND status = 'pending'",
    )
    .bind(endpoint.to_string())
    .bind(reason)
    .execute(conn)
    .await?;
    Ok(done.rows_affected())
}

/// A page of an endpoint's deliveries, newest first, optionally of one status, after
/// `after` (the last delivery id of the previous page).
pub async fn list_deliveries(
    conn: &mut AnyConnection,
    endpoint: Uuid,
    status: Option<DeliveryStatus>,
    after: Option<(DateTime<Utc>, Uuid)>,
    limit: i64,
) -> Result<Vec<Delivery>, MetadataError> {
    let (at, id) = after.map_or((String::new(), String::new()), |(t, i)| {
        (ts(t), i.to_string())
    });
    let sql = format!(
        "SELECT {DELIVERY_COLUMNS} FROM webhook_deliveries d JOIN events e ON e.id = d.event_id \
         WHERE d.endpoint_id = $1 AND ($2 = '' OR d.status = $2) \
         AND ($3 = '' OR d.created_at < $3 OR (d.created_at = $3 AND d.id < $4)) \
         ORDER BY d.created_at DESC, d.id DESC LIMIT $5"
    );
    let rows = sqlx::query(&sql)
        .bind(endpoint.to_string())
        .bind(status.map(DeliveryStatus::as_str).unwrap_or_default())
        .bind(at)
        .bind(id)
        .bind(limit)
        .fetch_all(conn)
        .await?;
    rows.iter().map(delivery_from_row).collect()
}

/// One delivery of an endpoint (for cursors).
pub async fn delivery(
    conn: &mut AnyConnection,
    endpoint: Uuid,
    id: Uuid,
) -> Result<Option<Delivery>, MetadataError> {
    let sql = format!(
        "SELECT {DELIVERY_COLUMNS} FROM webhook_deliveries d JOIN events e ON e.id = d.event_id \
         WHERE d.endpoint_id = $1 AND d.id = $2"
    );
    let row = sqlx::query(&sql)
        .bind(endpoint.to_string())
        .bind(id.to_string())
        .fetch_optional(conn)
        .await?;
    row.as_ref().map(delivery_from_row).transpose()
}

/// Removes every delivery of an endpoint.
pub async fn delete_deliveries(
    conn: &mut AnyConnection,
    endpoint: Uuid,
) -> Result<(), MetadataError> {
    sqlx::query("DELETE FROM webhook_deliveries WHERE endpoint_id = $1")
        .bind(endpoint.to_string())
        .execute(conn)
        .await?;
    Ok(())
}
