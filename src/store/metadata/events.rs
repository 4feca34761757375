//! The `events` table: the outbox and the stored event list. `deliveries` holds the rows of one
//! event to one endpoint.
//!
//! Like every table group, functions take a connection, so an event and its deliveries are
//! written in the transaction of the change that causes them.

use chrono::{DateTime, Utc};
use sqlx::AnyConnection;
use sqlx::any::AnyRow;
use uuid::Uuid;

use super::{MetadataError, get_opt_str, get_str, get_time, get_uuid, parse, ts};

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
    sqlx::query(
        "INSERT INTO events (id, team_id, user_id, event_type, body, created_at, ordinal) \
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
    )
    .bind(event.id.to_string())
    .bind(event.team_id.to_string())
    .bind(event.user_id.map(|u| u.to_string()))
    .bind(&event.event_type)
    .bind(&event.body)
    .bind(ts(event.created_at))
    .bind(event.ordinal)
    .execute(conn)
    .await?;
    Ok(())
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
        "SELECT {EVENT_COLUMNS} FROM events WHERE team_id = $1 \
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

/// Removes up to `limit` events created before `cutoff`, with their deliveries, unless one of
/// those is still pending (it is removed by a later pass, once sent or failed). Answers how
/// many events it removed.
pub async fn prune_events(
    conn: &mut AnyConnection,
    cutoff: DateTime<Utc>,
    limit: i64,
) -> Result<u64, MetadataError> {
    let ids: Vec<String> = sqlx::query_scalar(
        "SELECT id FROM events e WHERE created_at < $1 AND NOT EXISTS \
         (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = e.id AND d.status = 'pending') \
         ORDER BY created_at LIMIT $2",
    )
    .bind(ts(cutoff))
    .bind(limit)
    .fetch_all(&mut *conn)
    .await?;
    if ids.is_empty() {
        return Ok(0);
    }
    let list = super::placeholders(ids.len());
    for sql in [
        format!(
            "DELETE FROM webhook_attempts WHERE delivery_id IN \
             (SELECT id FROM webhook_deliveries WHERE event_id IN ({list}))"
        ),
        format!("DELETE FROM webhook_deliveries WHERE event_id IN ({list})"),
        format!("DELETE FROM events WHERE id IN ({list})"),
    ] {
        let mut query = sqlx::query(&sql);
        for id in &ids {
            query = query.bind(id);
        }
        query.execute(&mut *conn).await?;
    }
    Ok(ids.len() as u64)
}
