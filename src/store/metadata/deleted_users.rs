//! Users deleted within the undo window: a deleted user keeps its row with `deleted_at` set
//! (every query of `users.rs` leaves such rows out, so the user is gone at once for the API,
//! pulls and events), can be restored until the window ends, and is then purged by the
//! `store.delete_user` job (`crate::jobs::erasure`), which removes the row and its dependents.
//!
//! The instant of the deletion is the deletion's identity: a restore or a purge names it, so a
//! purge due for an earlier deletion of a user restored and deleted again does nothing.

use chrono::{DateTime, Utc};
use sqlx::AnyConnection;
use uuid::Uuid;

use super::users::{USER_COLUMNS, delete_user, user_from_row};
use super::{MetadataError, User, get_opt_str, ts};

/// How a user is named: the service's id or the team's own id.
#[derive(Debug, Clone)]
pub enum UserRef {
    /// `user_id`.
    Id(Uuid),
    /// `client_user_id`.
    Client(String),
}

/// A user of the team, deleted or not, with the stored instant of its deletion (as written,
/// the deletion's identity).
pub async fn any_user(
    conn: &mut AnyConnection,
    team: Uuid,
    who: &UserRef,
) -> Result<Option<(User, Option<String>)>, MetadataError> {
    let (column, value) = match who {
        UserRef::Id(id) => ("id", id.to_string()),
        UserRef::Client(client) => ("client_user_id", client.clone()),
    };
    let row = sqlx::query(&format!(
        "SELECT {USER_COLUMNS}, deleted_at FROM users WHERE team_id = $1 AND {column} = $2"
    ))
    .bind(team.to_string())
    .bind(value)
    .fetch_optional(conn)
    .await?;
    match row {
        None => Ok(None),
        Some(row) => Ok(Some((
            user_from_row(&row)?,
            get_opt_str(&row, "deleted_at")?,
        ))),
    }
}

/// Marks a live user deleted at `at`; answers the stored instant, or `None` when the team has
/// no such live user.
pub async fn soft_delete(
    conn: &mut AnyConnection,
    team: Uuid,
    id: Uuid,
    at: DateTime<Utc>,
) -> Result<Option<String>, MetadataError> {
    let stamp = ts(at);
    let done = sqlx::query(
        "UPDATE users SET deleted_at = $3 WHERE team_id = $1 AND id = $2 AND deleted_at IS NULL",
    )
    .bind(team.to_string())
    .bind(id.to_string())
    .bind(&stamp)
    .execute(conn)
    .await?;
    Ok((done.rows_affected() > 0).then_some(stamp))
}

/// Restores the user deleted at `stamp`; `false` when it is not (any more) that deletion.
pub async fn restore(
    conn: &mut AnyConnection,
    team: Uuid,
    id: Uuid,
    stamp: &str,
) -> Result<bool, MetadataError> {
    let done = sqlx::query(
        "UPDATE users SET deleted_at = NULL WHERE team_id = $1 AND id = $2 AND deleted_at = $3",
    )
    .bind(team.to_string())
    .bind(id.to_string())
    .bind(stamp)
    .execute(conn)
    .await?;
    Ok(done.rows_affected() > 0)
}

/// What [`purge`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purge {
    /// The row of that deletion and its dependents are removed now.
    Removed,
    /// No row: removed by an earlier run (its health data may still be there).
    Gone,
    /// The user was restored, or deleted again later: nothing to do for this deletion.
    Kept,
}

/// Removes the user deleted at `stamp` with its info and connections. Run it in a transaction.
pub async fn purge(
    conn: &mut AnyConnection,
    team: Uuid,
    id: Uuid,
    stamp: &str,
) -> Result<Purge, MetadataError> {
    match any_user(conn, team, &UserRef::Id(id)).await? {
        None => Ok(Purge::Gone),
        Some((_, Some(deleted))) if deleted == stamp => {
            delete_user(conn, team, id).await?;
            Ok(Purge::Removed)
        }
        Some(_) => Ok(Purge::Kept),
    }
}
