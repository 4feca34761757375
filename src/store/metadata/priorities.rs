//! A team's provider priorities: per data type, the order in which sources win.

use std::collections::HashMap;

use sqlx::AnyConnection;
use uuid::Uuid;

use super::{MetadataError, MetadataStore, get_str, now, ts};

/// The team's configured provider order for every data type it has set.
pub async fn team_priorities(
    conn: &mut AnyConnection,
    team: Uuid,
) -> Result<HashMap<String, Vec<String>>, MetadataError> {
    let rows = sqlx::query("SELECT data_type, priorities FROM team_priorities WHERE team_id = $1")
        .bind(team.to_string())
        .fetch_all(conn)
        .await?;
    let mut out = HashMap::new();
    for row in &rows {
        let raw = get_str(row, "priorities")?;
        let order: Vec<String> =
            serde_json::from_str(&raw).map_err(|_| MetadataError::Corrupt {
                column: "priorities",
                value: raw.clone(),
            })?;
        out.insert(get_str(row, "data_type")?, order);
    }
    Ok(out)
}

/// Replaces the team's provider order for one data type (one upsert statement).
pub async fn set_team_priorities(
    conn: &mut AnyConnection,
    team: Uuid,
    data_type: &str,
    order: &[String],
) -> Result<(), MetadataError> {
    let encoded = serde_json::Value::from(order.to_vec()).to_string();
    sqlx::query(
        "INSERT INTO team_priorities (team_id, data_type, priorities, updated_at) \
         VALUES ($1, $2, $3, $4) \
         ON CONFLICT (team_id, data_type) DO UPDATE \
         SET priorities = excluded.priorities, updated_at = excluded.updated_at",
    )
    .bind(team.to_string())
    .bind(data_type)
    .bind(encoded)
    .bind(ts(now()))
    .execute(conn)
    .await?;
    Ok(())
}

impl MetadataStore {
    /// The team's configured provider order for every data type it has set.
    pub async fn team_priorities(
        &self,
        team: Uuid,
    ) -> Result<HashMap<String, Vec<String>>, MetadataError> {
        team_priorities(&mut *self.reader().await?, team).await
    }

    /// Replaces the team's provider order for one data type.
    pub async fn set_team_priorities(
        &self,
        team: Uuid,
        data_type: &str,
        order: &[String],
    ) -> Result<(), MetadataError> {
        set_team_priorities(&mut *self.writer().await?, team, data_type, order).await
    }
}
