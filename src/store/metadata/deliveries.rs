//! The `webhook_deliveries` table: one event to one endpoint, its attempts' outcome, and the
//! per-(endpoint, user) streams the delivery worker sends in order.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use sqlx::AnyConnection;
use sqlx::any::AnyRow;
use uuid::Uuid;

use super::{MetadataError, get_opt_str, get_str, get_time, get_uuid, parse, ts};

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
    /// The event's body (the envelope; its shell when `records_ref` is set).
    pub body: String,
    /// The event's team.
    pub team_id: Uuid,
    /// The event's reference to its records, JSON (`events::records`), if it has one.
    pub records_ref: Option<String>,
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
    /// Its attempts, oldest first, where the reader asked for them ([`attempts_of`]); empty
    /// otherwise.
    pub history: Vec<PastAttempt>,
}

const DELIVERY_COLUMNS: &str = "d.id, d.endpoint_id, d.event_id, e.event_type, e.body, \
    e.team_id, e.records_ref, \
    d.user_key, d.status, d.attempts, d.next_attempt_at, d.last_attempt_at, \
    d.last_status_code, d.last_duration_ms, d.last_error, d.created_at";

fn delivery_from_row(row: &AnyRow) -> Result<Delivery, MetadataError> {
    let attempts: i64 = sqlx::Row::try_get(row, "attempts")?;
    from_row!(row => Delivery {
        id, endpoint_id, event_id, event_type, body, team_id, records_ref, user_key,
        next_attempt_at, last_attempt_at, last_status_code, last_duration_ms, last_error,
        created_at,
    } with {
        status: parse("status", get_str(row, "status")?)?,
        attempts: u32::try_from(attempts).unwrap_or(u32::MAX),
        history: Vec::new(),
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

/// Records an attempt: its outcome on its delivery, and the attempt in the delivery's history.
pub async fn record_attempt(
    conn: &mut AnyConnection,
    record: &AttemptRecord,
) -> Result<(), MetadataError> {
    sqlx::query(
        "INSERT INTO webhook_attempts (id, delivery_id, attempted_at, status_code, duration_ms, \
         error) VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(Uuid::new_v4().to_string())
    .bind(record.delivery.to_string())
    .bind(ts(record.attempted_at))
    .bind(record.status_code)
    .bind(record.duration_ms)
    .bind(record.error.clone())
    .execute(&mut *conn)
    .await?;
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

/// Removes every delivery of an endpoint, with their attempts.
pub async fn delete_deliveries(
    conn: &mut AnyConnection,
    endpoint: Uuid,
) -> Result<(), MetadataError> {
    for sql in [
        "DELETE FROM webhook_attempts WHERE delivery_id IN \
         (SELECT id FROM webhook_deliveries WHERE endpoint_id = $1)",
        "DELETE FROM webhook_deliveries WHERE endpoint_id = $1",
    ] {
        sqlx::query(sql)
            .bind(endpoint.to_string())
            .execute(&mut *conn)
            .await?;
    }
    Ok(())
}

/// One past attempt of a delivery.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PastAttempt {
    /// When it started.
    pub attempted_at: DateTime<Utc>,
    /// The answer's status code, if one came.
    pub status_code: Option<i64>,
    /// How long it took.
    pub duration_ms: i64,
    /// Why it failed.
    pub error: Option<String>,
}

/// The attempts of each of `deliveries`, oldest first.
pub async fn attempts_of(
    conn: &mut AnyConnection,
    deliveries: &[Uuid],
) -> Result<HashMap<Uuid, Vec<PastAttempt>>, MetadataError> {
    let mut out: HashMap<Uuid, Vec<PastAttempt>> = HashMap::new();
    if deliveries.is_empty() {
        return Ok(out);
    }
    let list = super::placeholders(deliveries.len());
    let sql = format!(
        "SELECT delivery_id, attempted_at, status_code, duration_ms, error FROM webhook_attempts \
         WHERE delivery_id IN ({list}) ORDER BY attempted_at, id"
    );
    let mut query = sqlx::query(&sql);
    for id in deliveries {
        query = query.bind(id.to_string());
    }
    for row in query.fetch_all(conn).await? {
        out.entry(get_uuid(&row, "delivery_id")?)
            .or_default()
            .push(PastAttempt {
                attempted_at: get_time(&row, "attempted_at")?,
                status_code: sqlx::Row::try_get(&row, "status_code")?,
                duration_ms: sqlx::Row::try_get(&row, "duration_ms")?,
                error: get_opt_str(&row, "error")?,
            });
    }
    Ok(out)
}
