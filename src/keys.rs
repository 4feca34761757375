//! Team API keys a team manages itself (issue 35): several named keys per team, created,
//! listed, revoked and rotated through `/v2/team/keys` (a team key manages its own team's keys)
//! and `wearhouse keys`, both through the functions here. The SQL, the secrets' format and how
//! a key's use is recorded are [`crate::store::metadata::keys`]'s.
//!
//! Decisions where the spec is silent:
//! - A name is 1 to 100 characters once trimmed (stored trimmed), without control characters.
//!   Names need not be unique: a rotation's new key takes its predecessor's name.
//! - A list shows every key of the team, revoked and expired ones too, oldest first, unpaged
//!   (a team has a handful), each with a `status`: `active`, `expiring` (rotated, still
//!   authenticating until `expires_at`), `expired` or `revoked`. The secret is shown only in the
//!   answer that creates it (creation, rotation), never its hash; `hint` (`wh_...` and the
//!   secret's last four hex digits) tells keys apart, null for keys made before hints were kept.
//! - Revoking answers the key with its `revoked_at`; it takes effect on the next request on every
//!   process sharing the database. Revoking a revoked key answers it unchanged (the first time
//!   stands). A team may revoke the key it calls with, and its last key: `wearhouse keys create`
//!   is the way back in.
//! - Rotating makes a new key with the same name and sets the old key's `expires_at` to now plus
//!   `overlap_seconds` (0 to 30 days, default 24 hours; 0 retires it at once). Only a live key
//!   that was not rotated yet can be rotated (400 otherwise, naming its replacement), so a key
//!   never has two successors and a retired key cannot be brought back. The answer is the new key
//!   with its secret and, as `previous`, the old key with its `expires_at`; an empty body takes
//!   the default overlap.
//! - Another team's key id answers 404, exactly as an id that does not exist.

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::loc;
use crate::store::metadata::{KeyRecord, MetadataError, MetadataStore, now};
use crate::users::render_time;
use crate::validation::{Checks, Invalid};

/// The overlap of a rotation that does not name one.
pub const DEFAULT_OVERLAP_SECONDS: i64 = 24 * 60 * 60;

/// The longest overlap a rotation may ask for (30 days).
pub const MAX_OVERLAP_SECONDS: i64 = 30 * 24 * 60 * 60;

/// The longest name, in characters.
pub const MAX_NAME_CHARS: usize = 100;

/// Failures of the key operations.
#[derive(Debug, thiserror::Error)]
pub enum KeysError {
    /// The input was rejected.
    #[error(transparent)]
    Invalid(#[from] Invalid),
    /// No such key for this team.
    #[error("API key not found")]
    KeyNotFound,
    /// The key is revoked, expired or already rotated: the sentence says which.
    #[error("{0}")]
    NotRotatable(String),
    /// The metadata store failed.
    #[error("metadata store: {0}")]
    Metadata(#[from] MetadataError),
}

/// Where a key stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum KeyStatus {
    /// Authenticates, with no end set.
    Active,
    /// Rotated: authenticates until `expires_at`.
    Expiring,
    /// Rotated and past `expires_at`: answers 401.
    Expired,
    /// Revoked: answers 401.
    Revoked,
}

impl KeyStatus {
    /// Its name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            KeyStatus::Active => "active",
            KeyStatus::Expiring => "expiring",
            KeyStatus::Expired => "expired",
            KeyStatus::Revoked => "revoked",
        }
    }
}

/// Where `key` stands at `at`.
pub fn status(key: &KeyRecord, at: DateTime<Utc>) -> KeyStatus {
    match (key.revoked_at, key.expires_at) {
        (Some(_), _) => KeyStatus::Revoked,
        (None, None) => KeyStatus::Active,
        (None, Some(end)) if end > at => KeyStatus::Expiring,
        (None, Some(_)) => KeyStatus::Expired,
    }
}

/// A team API key as the API shows it: never its secret or hash.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TeamKey {
    /// Its id.
    pub id: Uuid,
    /// The team's name for it.
    pub name: String,
    /// `wh_...` and the secret's last four hex digits (null for keys made before hints were
    /// kept).
    pub hint: Option<String>,
    /// Where it stands.
    pub status: KeyStatus,
    /// Created.
    #[schema(format = DateTime)]
    pub created_at: String,
    /// Last authenticated a request; accurate to a minute.
    #[schema(format = DateTime)]
    pub last_used_at: Option<String>,
    /// When it stops authenticating (set by a rotation).
    #[schema(format = DateTime)]
    pub expires_at: Option<String>,
    /// When it was revoked.
    #[schema(format = DateTime)]
    pub revoked_at: Option<String>,
    /// The key a rotation made to replace it.
    pub replaced_by: Option<Uuid>,
}

/// A key just created: the only answer that holds its secret.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct NewTeamKey {
    /// The key.
    #[serde(flatten)]
    pub key: TeamKey,
    /// The secret to send as `x-service-api-key`; shown only here.
    pub secret: String,
}

/// A rotation's answer: the new key with its secret, and the key it replaces.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RotatedTeamKey {
    /// The new key.
    #[serde(flatten)]
    pub key: TeamKey,
    /// The new key's secret; shown only here.
    pub secret: String,
    /// The rotated key, authenticating until its `expires_at`.
    pub previous: TeamKey,
}

/// The team's keys, oldest first.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TeamKeys {
    /// Every key, revoked and expired ones too.
    pub keys: Vec<TeamKey>,
}

/// `POST /v2/team/keys`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct NewKeyRequest {
    /// 1 to 100 characters, e.g. `production` or `ci`.
    pub name: String,
}

/// `POST /v2/team/keys/{key_id}/rotate`.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
pub struct RotateKeyRequest {
    /// How long the old key keeps authenticating, in seconds: 0 to 2592000 (30 days), default
    /// 86400 (24 hours).
    #[serde(default)]
    pub overlap_seconds: Option<i64>,
}

/// A key as the API shows it at `at`.
pub fn render(key: &KeyRecord, at: DateTime<Utc>) -> TeamKey {
    TeamKey {
        id: key.id,
        name: key.name.clone(),
        hint: key.hint.as_ref().map(|h| format!("wh_...{h}")),
        status: status(key, at),
        created_at: render_time(key.created_at),
        last_used_at: key.last_used_at.map(render_time),
        expires_at: key.expires_at.map(render_time),
        revoked_at: key.revoked_at.map(render_time),
        replaced_by: key.replaced_by,
    }
}

/// The name to store, or a violation in `checks`.
fn check_name(checks: &mut Checks, raw: &str) -> String {
    let name = raw.trim();
    if name.is_empty() {
        checks.refuse(loc!["name"], raw, "name must not be empty");
    } else if name.chars().count() > MAX_NAME_CHARS {
        checks.fail(
            loc!["name"],
            "string_too_long",
            format!("name is at most {MAX_NAME_CHARS} characters"),
        );
    } else if name.chars().any(char::is_control) {
        checks.refuse(loc!["name"], raw, "name must not hold control characters");
    }
    name.to_owned()
}

/// The overlap asked for, or a violation in `checks`.
fn check_overlap(checks: &mut Checks, asked: Option<i64>) -> Duration {
    let seconds = asked.unwrap_or(DEFAULT_OVERLAP_SECONDS);
    if !(0..=MAX_OVERLAP_SECONDS).contains(&seconds) {
        checks.refuse(
            loc!["overlap_seconds"],
            seconds,
            format!(
                "overlap_seconds must be between 0 and {MAX_OVERLAP_SECONDS} (30 days), got {seconds}"
            ),
        );
    }
    Duration::seconds(seconds.clamp(0, MAX_OVERLAP_SECONDS))
}

/// Every key of the team.
pub async fn list(meta: &MetadataStore, team: Uuid) -> Result<TeamKeys, KeysError> {
    let at = now();
    let keys = meta.keys(team).await?;
    Ok(TeamKeys {
        keys: keys.iter().map(|k| render(k, at)).collect(),
    })
}

/// One key of the team.
pub async fn get(meta: &MetadataStore, team: Uuid, id: Uuid) -> Result<TeamKey, KeysError> {
    let key = meta.key(team, id).await?.ok_or(KeysError::KeyNotFound)?;
    Ok(render(&key, now()))
}

/// Creates a key from a decoded `POST /v2/team/keys` body and the checks decoding left.
pub async fn create(
    meta: &MetadataStore,
    team: Uuid,
    req: NewKeyRequest,
    mut checks: Checks,
) -> Result<NewTeamKey, KeysError> {
    let name = check_name(&mut checks, &req.name);
    checks.finish()?;
    let created = meta.create_key(team, &name).await?;
    Ok(NewTeamKey {
        key: render(&created.record, created.record.created_at),
        secret: created.secret,
    })
}

/// Revokes one key of the team.
pub async fn revoke(meta: &MetadataStore, team: Uuid, id: Uuid) -> Result<TeamKey, KeysError> {
    let key = meta
        .revoke_key(team, id)
        .await?
        .ok_or(KeysError::KeyNotFound)?;
    Ok(render(&key, now()))
}

/// Rotates one key of the team from a decoded rotation body and the checks decoding left.
pub async fn rotate(
    meta: &MetadataStore,
    team: Uuid,
    id: Uuid,
    req: RotateKeyRequest,
    mut checks: Checks,
) -> Result<RotatedTeamKey, KeysError> {
    let overlap = check_overlap(&mut checks, req.overlap_seconds);
    checks.finish()?;
    if let Some((old, new)) = meta.rotate_key(team, id, overlap).await? {
        let at = new.record.created_at;
        return Ok(RotatedTeamKey {
            key: render(&new.record, at),
            secret: new.secret,
            previous: render(&old, at),
        });
    }
    // Nothing changed: say why.
    let key = meta.key(team, id).await?.ok_or(KeysError::KeyNotFound)?;
    Err(KeysError::NotRotatable(
        match (status(&key, now()), key.replaced_by) {
            (KeyStatus::Revoked, _) => "API key is revoked; create a new key instead".to_owned(),
            (_, Some(next)) => {
                format!("API key was already rotated; rotate its replacement {next}")
            }
            (KeyStatus::Expired, None) => {
                "API key has expired; create a new key instead".to_owned()
            }
            // A rotation committed by another request between the attempt and this read.
            (KeyStatus::Active | KeyStatus::Expiring, None) => {
                "API key changed during the rotation; try again".to_owned()
            }
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(expires_at: Option<DateTime<Utc>>, revoked_at: Option<DateTime<Utc>>) -> KeyRecord {
        KeyRecord {
            id: Uuid::nil(),
            team_id: Uuid::nil(),
            name: "ci".into(),
            hint: Some("beef".into()),
            created_at: DateTime::UNIX_EPOCH,
            last_used_at: None,
            expires_at,
            revoked_at,
            replaced_by: None,
        }
    }

    #[test]
    fn status_follows_revocation_then_expiry() {
        let at = DateTime::UNIX_EPOCH + Duration::days(1);
        let later = at + Duration::seconds(1);
        assert_eq!(status(&key(None, None), at), KeyStatus::Active);
        assert_eq!(status(&key(Some(later), None), at), KeyStatus::Expiring);
        assert_eq!(status(&key(Some(at), None), at), KeyStatus::Expired);
        assert_eq!(status(&key(Some(later), Some(at)), at), KeyStatus::Revoked);
        assert_eq!(
            render(&key(None, None), at).hint.as_deref(),
            Some("wh_...beef")
        );
        for s in [
            KeyStatus::Active,
            KeyStatus::Expiring,
            KeyStatus::Expired,
            KeyStatus::Revoked,
        ] {
            assert_eq!(serde_json::to_value(s).unwrap(), s.as_str());
        }
    }

    #[test]
    fn names_are_trimmed_and_bounded() {
        let mut checks = Checks::new(loc!["body"]);
        assert_eq!(check_name(&mut checks, "  ci  "), "ci");
        assert!(checks.is_clean());
        for bad in ["   ", &"x".repeat(MAX_NAME_CHARS + 1), "a\nb"] {
            let mut checks = Checks::new(loc!["body"]);
            check_name(&mut checks, bad);
            assert!(!checks.is_clean(), "{bad:?} accepted");
        }
        let mut checks = Checks::new(loc!["body"]);
        check_name(&mut checks, &"é".repeat(MAX_NAME_CHARS));
        assert!(checks.is_clean(), "length counts characters, not bytes");
    }

    #[test]
    fn overlaps_default_to_a_day_and_stay_within_thirty_days() {
        let mut checks = Checks::new(loc!["body"]);
        assert_eq!(check_overlap(&mut checks, None), Duration::hours(24));
        assert_eq!(check_overlap(&mut checks, Some(0)), Duration::zero());
        assert_eq!(
            check_overlap(&mut checks, Some(MAX_OVERLAP_SECONDS)),
            Duration::days(30)
        );
        assert!(checks.is_clean());
        for bad in [-1, MAX_OVERLAP_SECONDS + 1] {
            let mut checks = Checks::new(loc!["body"]);
            check_overlap(&mut checks, Some(bad));
            assert!(!checks.is_clean(), "{bad} accepted");
        }
    }
}
