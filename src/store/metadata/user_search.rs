//! `GET /v2/team/users/search?query_id=`: the team's live users whose id starts with the query
//! (ids are lowercase hyphenated, as the API writes them) or whose `client_user_id` contains it,
//! case-insensitively; oldest first, at most [`SEARCH_LIMIT`]. Soft-deleted users are left out,
//! as from every user query.

use sqlx::AnyConnection;
use uuid::Uuid;

use super::MetadataError;
use super::users::{USER_COLUMNS, User, user_from_row};

/// The most users one search answers.
pub const SEARCH_LIMIT: i64 = 100;

/// Escapes `LIKE` wildcards (`\` is the escape character).
fn like_literal(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if matches!(c, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The team's users matching `query` (module docs).
pub async fn search(
    conn: &mut AnyConnection,
    team: Uuid,
    query: &str,
) -> Result<Vec<User>, MetadataError> {
    let lower = query.to_lowercase();
    let rows = sqlx::query(&format!(
        "SELECT {USER_COLUMNS} FROM users WHERE team_id = $1 AND deleted_at IS NULL \
         AND (id LIKE $2 ESCAPE '\\' OR LOWER(client_user_id) LIKE $3 ESCAPE '\\') \
         ORDER BY created_at, id LIMIT $4"
    ))
    .bind(team.to_string())
    .bind(format!("{}%", like_literal(&lower)))
    .bind(format!("%{}%", like_literal(&lower)))
    .bind(SEARCH_LIMIT)
    .fetch_all(conn)
    .await?;
    rows.iter().map(user_from_row).collect()
}
