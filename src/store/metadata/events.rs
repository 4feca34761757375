//! The `events` table: the outbox and the stored event list. `deliveries` holds the rows of one
//! event to one endpoint.
//!
//! Like every table group, functions take a connection, so an event and its deliveries are
//! written in the transaction of the change that causes them.

use chrono::{DateTime, Utc};
use sqlx::AnyConnection;
use sqlx::any::AnyRow;
use uuid::Uuid;

use super::{MetadataError, get_opt_str, ts};

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
    /// The envelope JSON, exactly as delivered; for an event stored by reference
    /// (`records`), the envelope with an empty record list.
    pub body: String,
    /// When it was written.
    pub created_at: DateTime<Utc>,
    /// Its place among the events written with it.
    pub ordinal: i64,
    /// Where its records are, when it refers to them instead of carrying them
    /// (`events::records`).
    pub records: Option<RecordsPointer>,
}

/// An event's reference to its records (`events::records::RecordsRef`), with the columns
/// that find the events of an overlapped window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordsPointer {
    /// The reference, JSON.
    pub json: String,
    /// Its dataset's path.
    pub dataset: String,
    /// Its first record's time (µs).
    pub first: i64,
    /// Its last record's time (µs).
    pub last: i64,
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

const EVENT_COLUMNS: &str = "id, team_id, user_id, event_type, body, created_at, ordinal, records_ref, ref_dataset, \
     ref_first, ref_last";

fn event_from_row(row: &AnyRow) -> Result<StoredEvent, MetadataError> {
    from_row!(row => StoredEvent {
        id, team_id, user_id, event_type, body, created_at, ordinal,
    } with {
        records: match get_opt_str(row, "records_ref")? {
            None => None,
            Some(json) => Some(RecordsPointer {
                json,
                dataset: get_opt_str(row, "ref_dataset")?.unwrap_or_default(),
                first: sqlx::Row::try_get::<Option<i64>, _>(row, "ref_first")?.unwrap_or(0),
                last: sqlx::Row::try_get::<Option<i64>, _>(row, "ref_last")?.unwrap_or(0),
            }),
        },
    })
}

/// Writes an event.
pub async fn insert_event(
    conn: &mut AnyConnection,
    event: &StoredEvent,
) -> Result<(), MetadataError> {
    sqlx::query(
        "INSERT INTO events (id, team_id, user_id, event_type, body, created_at, ordinal, \
         records_ref, ref_dataset, ref_first, ref_last) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
    )
    .bind(event.id.to_string())
    .bind(event.team_id.to_string())
    .bind(event.user_id.map(|u| u.to_string()))
    .bind(&event.event_type)
    .bind(&event.body)
    .bind(ts(event.created_at))
    .bind(event.ordinal)
    .bind(event.records.as_ref().map(|r| r.json.clone()))
    .bind(event.records.as_ref().map(|r| r.dataset.clone()))
    .bind(event.records.as_ref().map(|r| r.first))
    .bind(event.records.as_ref().map(|r| r.last))
    .execute(conn)
    .await?;
    Ok(())
}

/// The `user`'s events stored by reference to `dataset` rows within `[lo, hi]` (µs).
pub async fn referring_events(
    conn: &mut AnyConnection,
    user: Uuid,
    dataset: &str,
    lo: i64,
    hi: i64,
) -> Result<Vec<StoredEvent>, MetadataError> {
    let rows = sqlx::query(&format!(
        "SELECT {EVENT_COLUMNS} FROM events WHERE user_id = $1 AND ref_dataset = $2 \
         AND ref_last >= $3 AND ref_first <= $4 AND records_ref IS NOT NULL"
    ))
    .bind(user.to_string())
    .bind(dataset)
    .bind(lo)
    .bind(hi)
    .fetch_all(conn)
    .await?;
    rows.iter().map(event_from_row).collect()
}

/// Stores an event's whole body inline, dropping its reference.
pub async fn inline_body(
    conn: &mut AnyConnection,
    id: Uuid,
    body: &str,
) -> Result<(), MetadataError> {
    sqlx::query(
        "UPDATE events SET body = $2, records_ref = NULL, ref_dataset = NULL, \
         ref_first = NULL, ref_last = NULL WHERE id = $1",
    )
    .bind(id.to_string())
    .bind(body)
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
    super::delete_ids(
        conn,
        &[
            "DELETE FROM webhook_attempts WHERE delivery_id IN \
             (SELECT id FROM webhook_deliveries WHERE event_id IN ({list}))",
            "DELETE FROM webhook_deliveries WHERE event_id IN ({list})",
            "DELETE FROM events WHERE id IN ({list})",
        ],
        &ids,
    )
    .await
}
