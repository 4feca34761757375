//! Teams' own OAuth applications per provider. The client secret arrives sealed.

use chrono::{DateTime, Utc};
use sqlx::AnyConnection;
use uuid::Uuid;

use super::{MetadataError, get_opt_str, get_str, get_time, get_uuid, now, ts};

/// A team's OAuth application for one provider.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TeamApp {
    /// The provider.
    pub provider: String,
    /// Client id.
    pub client_id: String,
    /// Client secret, sealed.
    pub sealed_secret: String,
    /// The redirect URI registered with the provider, when not the service's callback.
    pub redirect_uri: Option<String>,
    /// Whether it carries a change-notification verification token (kept as a hash only).
    pub has_verification_token: bool,
    /// When it was first set.
    pub created_at: DateTime<Utc>,
    /// When it was last set.
    pub updated_at: DateTime<Utc>,
}

/// What a team's application is set to, its secrets already sealed or hashed.
#[derive(Debug, Clone, Copy)]
pub struct StoredApp<'a> {
    /// Client id.
    pub client_id: &'a str,
    /// Client secret, sealed.
    pub sealed_secret: &'a str,
    /// The redirect URI registered with the provider.
    pub redirect_uri: Option<&'a str>,
    /// SHA-256 (hex) of the change-notification verification token.
    pub verification_token_hash: Option<&'a str>,
}

/// Sets (or replaces) the team's application for `provider`.
pub async fn upsert(
    conn: &mut AnyConnection,
    team: Uuid,
    provider: &str,
    app: StoredApp<'_>,
) -> Result<TeamApp, MetadataError> {
    let at = ts(now());
    sqlx::query(
        "INSERT INTO team_provider_credentials (team_id, provider, client_id, client_secret, \
         redirect_uri, verification_token_hash, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $7) \
         ON CONFLICT (team_id, provider) DO UPDATE SET client_id = excluded.client_id, \
         client_secret = excluded.client_secret, redirect_uri = excluded.redirect_uri, \
         verification_token_hash = excluded.verification_token_hash, \
         updated_at = excluded.updated_at",
    )
    .bind(team.to_string())
    .bind(provider)
    .bind(app.client_id)
    .bind(app.sealed_secret)
    .bind(app.redirect_uri)
    .bind(app.verification_token_hash)
    .bind(at)
    .execute(&mut *conn)
    .await?;
    get(conn, team, provider)
        .await?
        .ok_or(MetadataError::Corrupt {
            column: "team_provider_credentials",
            value: "vanished after upsert".into(),
        })
}

/// The team's application for a provider.
pub async fn get(
    conn: &mut AnyConnection,
    team: Uuid,
    provider: &str,
) -> Result<Option<TeamApp>, MetadataError> {
    let row = sqlx::query(
        "SELECT provider, client_id, client_secret, redirect_uri, verification_token_hash, \
         created_at, updated_at \
         FROM team_provider_credentials WHERE team_id = $1 AND provider = $2",
    )
    .bind(team.to_string())
    .bind(provider)
    .fetch_optional(conn)
    .await?;
    row.map(|row| {
        Ok(TeamApp {
            provider: get_str(&row, "provider")?,
            client_id: get_str(&row, "client_id")?,
            sealed_secret: get_str(&row, "client_secret")?,
            redirect_uri: get_opt_str(&row, "redirect_uri")?,
            has_verification_token: get_opt_str(&row, "verification_token_hash")?.is_some(),
            created_at: get_time(&row, "created_at")?,
            updated_at: get_time(&row, "updated_at")?,
        })
    })
    .transpose()
}

/// The providers the team has its own application for, by slug.
pub async fn providers_of(
    conn: &mut AnyConnection,
    team: Uuid,
) -> Result<Vec<String>, MetadataError> {
    let rows = sqlx::query(
        "SELECT provider FROM team_provider_credentials WHERE team_id = $1 ORDER BY provider",
    )
    .bind(team.to_string())
    .fetch_all(conn)
    .await?;
    rows.iter().map(|row| get_str(row, "provider")).collect()
}

/// Every team's application for a provider: (team, sealed client secret).
pub async fn for_provider(
    conn: &mut AnyConnection,
    provider: &str,
) -> Result<Vec<(Uuid, String)>, MetadataError> {
    let rows = sqlx::query(
        "SELECT team_id, client_secret FROM team_provider_credentials WHERE provider = $1",
    )
    .bind(provider)
    .fetch_all(conn)
    .await?;
    rows.iter()
        .map(|row| Ok((get_uuid(row, "team_id")?, get_str(row, "client_secret")?)))
        .collect()
}

/// Whether some team's application for `provider` carries the verification token whose
/// SHA-256 (hex) is `hash`.
pub async fn verification_token_known(
    conn: &mut AnyConnection,
    provider: &str,
    hash: &str,
) -> Result<bool, MetadataError> {
    let row = sqlx::query(
        "SELECT team_id FROM team_provider_credentials \
         WHERE provider = $1 AND verification_token_hash = $2",
    )
    .bind(provider)
    .bind(hash)
    .fetch_optional(conn)
    .await?;
    Ok(row.is_some())
}

/// The teams whose application for `provider` carries the verification token whose SHA-256
/// (hex) is `hash` (Google Health's webhook secret: the notification names no team).
pub async fn verification_token_teams(
    conn: &mut AnyConnection,
    provider: &str,
    hash: &str,
) -> Result<Vec<Uuid>, MetadataError> {
    let rows = sqlx::query(
        "SELECT team_id FROM team_provider_credentials \
         WHERE provider = $1 AND verification_token_hash = $2",
    )
    .bind(provider)
    .bind(hash)
    .fetch_all(conn)
    .await?;
    rows.iter().map(|row| get_uuid(row, "team_id")).collect()
}

/// Removes the team's application; `false` when there was none.
pub async fn delete(
    conn: &mut AnyConnection,
    team: Uuid,
    provider: &str,
) -> Result<bool, MetadataError> {
    let done =
        sqlx::query("DELETE FROM team_provider_credentials WHERE team_id = $1 AND provider = $2")
            .bind(team.to_string())
            .bind(provider)
            .execute(conn)
            .await?;
    Ok(done.rows_affected() > 0)
}
