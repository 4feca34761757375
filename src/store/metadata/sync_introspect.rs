//! Reads of the `sync_pulls` rows for the introspection getters (`GET /v2/introspect/...`):
//! a team's pulls, a page of users at a time, with each row's scheduling instant and its
//! connection's status. Read-only; the rows are written by `sync::pull` (`sync_pulls.rs`).

use chrono::{DateTime, Utc};
use sqlx::AnyConnection;
use uuid::Uuid;

use super::{
    ConnectionStatus, MetadataError, get_opt_str, get_opt_time, get_str, get_time, get_uuid,
};

/// One connection's pulls as introspection shows them.
#[derive(Debug, Clone, PartialEq)]
pub struct PullRow {
    /// The user.
    pub user_id: Uuid,
    /// The provider's slug.
    pub provider: String,
    /// The historical pull's window.
    pub window: (DateTime<Utc>, DateTime<Utc>),
    /// Everything before this is stored.
    pub done_until: DateTime<Utc>,
    /// Dataset paths the historical pull stored records of.
    pub resources: Vec<String>,
    /// When the historical pull was scheduled (the link was made).
    pub created_at: DateTime<Utc>,
    /// When the historical pull completed.
    pub completed_at: Option<DateTime<Utc>>,
    /// When the last incremental pull succeeded.
    pub synced_at: Option<DateTime<Utc>>,
    /// Dataset paths the last incremental pull stored records of.
    pub synced_resources: Vec<String>,
    /// When the last pull failed, and why.
    pub failed: Option<(DateTime<Utc>, String)>,
    /// The connection's status (`None` when the connection row is gone).
    pub status: Option<ConnectionStatus>,
}

/// Which pulls a page lists.
#[derive(Debug, Clone, Default)]
pub struct PullFilter {
    /// Only this user's.
    pub user: Option<Uuid>,
    /// Only this provider's.
    pub provider: Option<String>,
    /// Only users whose id sorts after this one (the page cursor).
    pub after: Option<Uuid>,
}

/// The pulls of at most `users` of the team's live users with a pull that passes `filter`,
/// ordered by user id then provider.
pub async fn team_pulls(
    conn: &mut AnyConnection,
    team: Uuid,
    filter: &PullFilter,
    users: i64,
) -> Result<Vec<PullRow>, MetadataError> {
    // `''` stands for "no filter" on each optional condition.
    let sql = "SELECT s.user_id, s.provider, s.window_start, s.window_end, s.done_until, \
         s.resources, s.created_at, s.completed_at, s.synced_at, s.synced_resources, \
         s.failed_at, s.last_error, c.status AS connection_status \
         FROM sync_pulls s \
         LEFT JOIN connections c ON c.user_id = s.user_id AND c.provider = s.provider \
         WHERE s.team_id = $1 AND ($3 = '' OR s.provider = $3) AND s.user_id IN ( \
           SELECT DISTINCT p.user_id FROM sync_pulls p JOIN users u ON u.id = p.user_id \
           WHERE p.team_id = $1 AND u.deleted_at IS NULL AND p.user_id > $2 \
             AND ($3 = '' OR p.provider = $3) AND ($4 = '' OR p.user_id = $4) \
           ORDER BY p.user_id LIMIT $5) \
         ORDER BY s.user_id, s.provider";
    let rows = sqlx::query(sql)
        .bind(team.to_string())
        .bind(filter.after.map(|u| u.to_string()).unwrap_or_default())
        .bind(filter.provider.clone().unwrap_or_default())
        .bind(filter.user.map(|u| u.to_string()).unwrap_or_default())
        .bind(users)
        .fetch_all(conn)
        .await?;
    rows.iter()
        .map(|row| {
            let list = |name: &'static str| -> Result<Vec<String>, MetadataError> {
                Ok(serde_json::from_str(&get_str(row, name)?).unwrap_or_default())
            };
            let failed = match (
                get_opt_time(row, "failed_at")?,
                get_opt_str(row, "last_error")?,
            ) {
                (Some(at), Some(error)) => Some((at, error)),
                _ => None,
            };
            let status = get_opt_str(row, "connection_status")?.and_then(|s| s.parse().ok());
            Ok(PullRow {
                user_id: get_uuid(row, "user_id")?,
                provider: get_str(row, "provider")?,
                window: (get_time(row, "window_start")?, get_time(row, "window_end")?),
                done_until: get_time(row, "done_until")?,
                resources: list("resources")?,
                created_at: get_time(row, "created_at")?,
                completed_at: get_opt_time(row, "completed_at")?,
                synced_at: get_opt_time(row, "synced_at")?,
                synced_resources: list("synced_resources")?,
                failed,
                status,
            })
        })
        .collect()
}
