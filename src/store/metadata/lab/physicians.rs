//! The physicians a team has ordered under (`migrations/0022_physicians_and_bulk_op_kinds.sql`): one row per
//! (team, NPI), upserted with every order that names a physician, so `GET
//! /v2/team/{team_id}/physicians` reads a small table instead of every order document.

use chrono::{DateTime, Utc};
use sqlx::AnyConnection;
use uuid::Uuid;

use crate::store::metadata::{MetadataError, get_str, ts};

/// A physician of the team.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PhysicianRow {
    /// First name, as the latest order naming this NPI gave it.
    pub first_name: String,
    /// Last name, likewise.
    pub last_name: String,
    /// National Provider Identifier.
    pub npi: String,
}

/// Records that the team ordered under this physician (a later name for the NPI wins).
pub async fn note(
    conn: &mut AnyConnection,
    team: Uuid,
    physician: &PhysicianRow,
    now: DateTime<Utc>,
) -> Result<(), MetadataError> {
    sqlx::query(
        "INSERT INTO lab_physicians (team_id, npi, first_name, last_name, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $5) ON CONFLICT (team_id, npi) DO UPDATE SET \
         first_name = excluded.first_name, last_name = excluded.last_name, \
         updated_at = excluded.updated_at",
    )
    .bind(team.to_string())
    .bind(&physician.npi)
    .bind(&physician.first_name)
    .bind(&physician.last_name)
    .bind(ts(now))
    .execute(conn)
    .await?;
    Ok(())
}

/// The team's physicians, by last name, first name, then NPI.
pub async fn list(
    conn: &mut AnyConnection,
    team: Uuid,
) -> Result<Vec<PhysicianRow>, MetadataError> {
    let rows = sqlx::query(
        "SELECT npi, first_name, last_name FROM lab_physicians WHERE team_id = $1 \
         ORDER BY last_name, first_name, npi",
    )
    .bind(team.to_string())
    .fetch_all(conn)
    .await?;
    rows.iter()
        .map(|row| {
            Ok(PhysicianRow {
                first_name: get_str(row, "first_name")?,
                last_name: get_str(row, "last_name")?,
                npi: get_str(row, "npi")?,
            })
        })
        .collect()
}
