//! `lab_appointments`: appointments as documents plus the sandbox provider's plan
//! (`confirm_at`, `fails`) and the asynchronous wait's `deadline`.

use chrono::{DateTime, Utc};
use sqlx::AnyConnection;
use sqlx::any::AnyRow;
use uuid::Uuid;

use super::super::{MetadataError, ts};

/// An appointment's row.
#[derive(Debug, Clone, PartialEq)]
pub struct AppointmentRow {
    /// Id.
    pub id: Uuid,
    /// Team.
    pub team_id: Uuid,
    /// Order.
    pub order_id: Uuid,
    /// Status (wire name).
    pub status: String,
    /// The rendered appointment (JSON).
    pub document: String,
    /// When the provider answers; `None`: never.
    pub confirm_at: Option<DateTime<Utc>>,
    /// Whether that answer is a failure.
    pub fails: bool,
    /// When an asynchronous wait gives up.
    pub deadline: Option<DateTime<Utc>>,
    /// Creation time.
    pub created_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
}

const COLUMNS: &str =
    "id, team_id, order_id, status, document, confirm_at, fails, deadline, created_at, updated_at";

fn from_row(row: &AnyRow) -> Result<AppointmentRow, MetadataError> {
    from_row!(row => AppointmentRow {
        id, team_id, order_id, status, document, confirm_at, deadline, created_at, updated_at,
    } with {
        fails: sqlx::Row::try_get::<i64, _>(row, "fails")? != 0,
    })
}

/// Inserts or replaces an appointment.
pub async fn upsert(conn: &mut AnyConnection, a: &AppointmentRow) -> Result<(), MetadataError> {
    sqlx::query(&format!(
        "INSERT INTO lab_appointments ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) \
         ON CONFLICT (id) DO UPDATE SET status = excluded.status, document = excluded.document, \
         confirm_at = excluded.confirm_at, fails = excluded.fails, deadline = excluded.deadline, \
         updated_at = excluded.updated_at"
    ))
    .bind(a.id.to_string())
    .bind(a.team_id.to_string())
    .bind(a.order_id.to_string())
    .bind(&a.status)
    .bind(&a.document)
    .bind(a.confirm_at.map(ts))
    .bind(i64::from(a.fails))
    .bind(a.deadline.map(ts))
    .bind(ts(a.created_at))
    .bind(ts(a.updated_at))
    .execute(conn)
    .await?;
    Ok(())
}

/// The order's latest appointment.
pub async fn latest_for_order(
    conn: &mut AnyConnection,
    team: Uuid,
    order: Uuid,
) -> Result<Option<AppointmentRow>, MetadataError> {
    let row = sqlx::query(&format!(
        "SELECT {COLUMNS} FROM lab_appointments WHERE team_id = $1 AND order_id = $2 \
         ORDER BY created_at DESC, id DESC LIMIT 1"
    ))
    .bind(team.to_string())
    .bind(order.to_string())
    .fetch_optional(conn)
    .await?;
    row.as_ref().map(from_row).transpose()
}

/// An appointment by id.
pub async fn get(
    conn: &mut AnyConnection,
    id: Uuid,
) -> Result<Option<AppointmentRow>, MetadataError> {
    let row = sqlx::query(&format!(
        "SELECT {COLUMNS} FROM lab_appointments WHERE id = $1"
    ))
    .bind(id.to_string())
    .fetch_optional(conn)
    .await?;
    row.as_ref().map(from_row).transpose()
}
