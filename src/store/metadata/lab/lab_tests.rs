//! `lab_tests`: a team's lab tests.

use chrono::{DateTime, Utc};
use sqlx::AnyConnection;
use sqlx::any::AnyRow;
use uuid::Uuid;

use super::super::{MetadataError, get_str, parse, ts};
use super::{from_json, to_json};

/// One lab test as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct LabTestRow {
    /// Id.
    pub id: Uuid,
    /// Team.
    pub team_id: Uuid,
    /// Name.
    pub name: String,
    /// Description.
    pub description: String,
    /// Method (wire name).
    pub method: String,
    /// Lab id.
    pub lab_id: i64,
    /// Fasting.
    pub fasting: bool,
    /// Status (wire name).
    pub status: String,
    /// Marker ids.
    pub marker_ids: Vec<i64>,
    /// The method it is the team's sandbox test for.
    pub sandbox_method: Option<String>,
    /// Creation time.
    pub created_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
}

const COLUMNS: &str = "id, team_id, name, description, method, lab_id, fasting, status, marker_ids, sandbox_method, created_at, updated_at";

fn from_row(row: &AnyRow) -> Result<LabTestRow, MetadataError> {
    from_row!(row => LabTestRow {
        id, team_id, name, description, method, lab_id, status, sandbox_method, created_at,
        updated_at,
    } with {
        fasting: sqlx::Row::try_get::<i64, _>(row, "fasting")? != 0,
        marker_ids: from_json("marker_ids", get_str(row, "marker_ids")?)?,
    })
}

/// Inserts a lab test; a sandbox test the team already has is left alone.
pub async fn insert(conn: &mut AnyConnection, t: &LabTestRow) -> Result<(), MetadataError> {
    sqlx::query(&format!(
        "INSERT INTO lab_tests ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) \
         ON CONFLICT (team_id, sandbox_method) DO NOTHING"
    ))
    .bind(t.id.to_string())
    .bind(t.team_id.to_string())
    .bind(&t.name)
    .bind(&t.description)
    .bind(&t.method)
    .bind(t.lab_id)
    .bind(i64::from(t.fasting))
    .bind(&t.status)
    .bind(to_json(&t.marker_ids))
    .bind(t.sandbox_method.clone())
    .bind(ts(t.created_at))
    .bind(ts(t.updated_at))
    .execute(conn)
    .await?;
    Ok(())
}

/// Writes a changed lab test's name, description and status.
pub async fn update(conn: &mut AnyConnection, t: &LabTestRow) -> Result<(), MetadataError> {
    sqlx::query(
        "UPDATE lab_tests SET name = $1, description = $2, status = $3, updated_at = $4 \
         WHERE team_id = $5 AND id = $6",
    )
    .bind(&t.name)
    .bind(&t.description)
    .bind(&t.status)
    .bind(ts(t.updated_at))
    .bind(t.team_id.to_string())
    .bind(t.id.to_string())
    .execute(conn)
    .await?;
    Ok(())
}

/// How many sandbox tests the team has.
pub async fn sandbox_count(conn: &mut AnyConnection, team: Uuid) -> Result<i64, MetadataError> {
    let n: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM lab_tests WHERE team_id = $1 AND sandbox_method IS NOT NULL",
    )
    .bind(team.to_string())
    .fetch_one(conn)
    .await?;
    Ok(n)
}

/// One of the team's lab tests.
pub async fn get(
    conn: &mut AnyConnection,
    team: Uuid,
    id: Uuid,
) -> Result<Option<LabTestRow>, MetadataError> {
    let row = sqlx::query(&format!(
        "SELECT {COLUMNS} FROM lab_tests WHERE team_id = $1 AND id = $2"
    ))
    .bind(team.to_string())
    .bind(id.to_string())
    .fetch_optional(conn)
    .await?;
    row.as_ref().map(from_row).transpose()
}

/// The team's lab tests oldest first, after the cursor `(created_at, id)`, at most `limit`
/// (`None`: all).
pub async fn list(
    conn: &mut AnyConnection,
    team: Uuid,
    after: Option<(DateTime<Utc>, Uuid)>,
    limit: Option<i64>,
) -> Result<Vec<LabTestRow>, MetadataError> {
    let limit = limit.unwrap_or(i64::MAX);
    let rows = match after {
        None => {
            sqlx::query(&format!(
                "SELECT {COLUMNS} FROM lab_tests WHERE team_id = $1 \
                 ORDER BY created_at, id LIMIT $2"
            ))
            .bind(team.to_string())
            .bind(limit)
            .fetch_all(conn)
            .await?
        }
        Some((at, id)) => {
            sqlx::query(&format!(
                "SELECT {COLUMNS} FROM lab_tests WHERE team_id = $1 \
                 AND (created_at > $2 OR (created_at = $2 AND id > $3)) \
                 ORDER BY created_at, id LIMIT $4"
            ))
            .bind(team.to_string())
            .bind(ts(at))
            .bind(id.to_string())
            .bind(limit)
            .fetch_all(conn)
            .await?
        }
    };
    rows.iter().map(from_row).collect()
}

/// Parses a stored wire name.
pub fn parse_wire<T: std::str::FromStr>(column: &'static str, v: &str) -> Result<T, MetadataError> {
    parse(column, v.to_owned())
}
