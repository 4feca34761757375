//! End users of a team.
//!
//! Every query is scoped by team id: a user of another team is indistinguishable from one that
//! does not exist. A deleted user (`deleted_at` set, within the undo window: `deleted_users.rs`)
//! is left out of every query here, so it does not exist either.

use chrono::{DateTime, NaiveDate, Utc};
use sqlx::AnyConnection;
use sqlx::any::AnyRow;
use uuid::Uuid;

use super::{
    MetadataError, MetadataStore, get_opt_str, get_opt_time, is_unique_violation, now, parse, ts,
};

/// A value with the time it was last set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stamped<T> {
    /// The value.
    pub value: T,
    /// When it was set.
    pub updated_at: DateTime<Utc>,
}

/// An end user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct User {
    /// Service-assigned id.
    pub id: Uuid,
    /// Owning team.
    pub team_id: Uuid,
    /// The team's own id for the user.
    pub client_user_id: String,
    /// Creation time.
    pub created_at: DateTime<Utc>,
    /// IANA zone for data without a zone of its own.
    pub fallback_time_zone: Option<Stamped<String>>,
    /// Birth date for providers that give no age.
    pub fallback_birth_date: Option<Stamped<NaiveDate>>,
    /// Data before this day is not ingested.
    pub ingestion_start: Option<NaiveDate>,
    /// Data after this day is not ingested.
    pub ingestion_end: Option<NaiveDate>,
}

impl User {
    /// The fallback zone, parsed (stored zones were validated on the way in).
    pub fn fallback_zone(&self) -> Option<chrono_tz::Tz> {
        self.fallback_time_zone
            .as_ref()
            .and_then(|z| z.value.parse().ok())
    }
}

/// The fields of a new user (already validated).
#[derive(Debug, Clone, Default)]
pub struct NewUser {
    /// The team's own id for the user.
    pub client_user_id: String,
    /// IANA zone.
    pub fallback_time_zone: Option<String>,
    /// Birth date.
    pub fallback_birth_date: Option<NaiveDate>,
    /// Ingestion bounds.
    pub ingestion_start: Option<NaiveDate>,
    /// Ingestion bounds.
    pub ingestion_end: Option<NaiveDate>,
}

/// A partial update: `None` leaves a field alone, `Some(None)` clears it.
#[derive(Debug, Clone, Default)]
pub struct UserPatch {
    /// New client user id.
    pub client_user_id: Option<String>,
    /// New or cleared zone.
    pub fallback_time_zone: Option<Option<String>>,
    /// New or cleared birth date.
    pub fallback_birth_date: Option<Option<NaiveDate>>,
    /// New or cleared bound.
    pub ingestion_start: Option<Option<NaiveDate>>,
    /// New or cleared bound.
    pub ingestion_end: Option<Option<NaiveDate>>,
}

impl UserPatch {
    /// Whether it touches a setting the query language reads (the fallback zone and birth
    /// date, the ingestion bounds): answers computed from the user's data may change.
    pub fn touches_query_inputs(&self) -> bool {
        self.fallback_time_zone.is_some()
            || self.fallback_birth_date.is_some()
            || self.ingestion_start.is_some()
            || self.ingestion_end.is_some()
    }
}

pub(super) const USER_COLUMNS: &str = "id, team_id, client_user_id, created_at, fallback_time_zone, \
     fallback_time_zone_updated_at, fallback_birth_date, fallback_birth_date_updated_at, \
     ingestion_start, ingestion_end";

fn stamped<T>(value: Option<T>, at: Option<DateTime<Utc>>) -> Option<Stamped<T>> {
    match (value, at) {
        (Some(value), Some(updated_at)) => Some(Stamped { value, updated_at }),
        _ => None,
    }
}

pub(super) fn user_from_row(row: &AnyRow) -> Result<User, MetadataError> {
    let birth = get_opt_str(row, "fallback_birth_date")?
        .map(|v| parse::<NaiveDate>("fallback_birth_date", v))
        .transpose()?;
    from_row!(row => User {
        id, team_id, client_user_id, created_at, ingestion_start, ingestion_end,
    } with {
        fallback_time_zone: stamped(
            get_opt_str(row, "fallback_time_zone")?,
            get_opt_time(row, "fallback_time_zone_updated_at")?,
        ),
        fallback_birth_date: stamped(birth, get_opt_time(row, "fallback_birth_date_updated_at")?),
    })
}

/// Binds the user's settable columns, in `USER_COLUMNS` order: fallback zone and its time,
/// fallback birth date and its time, ingestion start and end.
fn bind_settings<'q>(
    query: sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>>,
    user: &User,
) -> sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>> {
    query
        .bind(user.fallback_time_zone.as_ref().map(|s| s.value.clone()))
        .bind(user.fallback_time_zone.as_ref().map(|s| ts(s.updated_at)))
        .bind(
            user.fallback_birth_date
                .as_ref()
                .map(|s| s.value.to_string()),
        )
        .bind(user.fallback_birth_date.as_ref().map(|s| ts(s.updated_at)))
        .bind(date_text(user.ingestion_start))
        .bind(date_text(user.ingestion_end))
}

fn date_text(d: Option<NaiveDate>) -> Option<String> {
    d.map(|d| d.to_string())
}

/// Inserts a user; a taken `client_user_id` answers [`MetadataError::ClientUserIdTaken`] with
/// the user holding it (also when a concurrent insert won the race).
pub async fn create_user(
    conn: &mut AnyConnection,
    team: Uuid,
    new: NewUser,
) -> Result<User, MetadataError> {
    let now = now();
    let user = User {
        id: Uuid::new_v4(),
        team_id: team,
        client_user_id: new.client_user_id,
        created_at: now,
        fallback_time_zone: new.fallback_time_zone.map(|value| Stamped {
            value,
            updated_at: now,
        }),
        fallback_birth_date: new.fallback_birth_date.map(|value| Stamped {
            value,
            updated_at: now,
        }),
        ingestion_start: new.ingestion_start,
        ingestion_end: new.ingestion_end,
    };
    let sql = format!(
        "INSERT INTO users ({USER_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)"
    );
    let query = sqlx::query(&sql)
        .bind(user.id.to_string())
        .bind(team.to_string())
        .bind(&user.client_user_id)
        .bind(ts(now));
    match bind_settings(query, &user).execute(&mut *conn).await {
        Ok(_) => Ok(user),
        Err(e) => Err(explain_write_error(conn, team, &user.client_user_id, e).await),
    }
}

/// The user holding `client_user_id`, also one deleted within the undo window (the id stays
/// taken until the window ends).
async fn holder(
    conn: &mut AnyConnection,
    team: Uuid,
    client_user_id: &str,
) -> Result<Option<User>, MetadataError> {
    let who = super::deleted_users::UserRef::Client(client_user_id.to_owned());
    Ok(super::deleted_users::any_user(conn, team, &who)
        .await?
        .map(|(user, _)| user))
}

/// Turns a failed user write into [`MetadataError::ClientUserIdTaken`] when it broke the unique
/// `client_user_id`, else passes it on. (On PostgreSQL a failed statement aborts its
/// transaction, so the look-up then fails and the original error is answered.)
async fn explain_write_error(
    conn: &mut AnyConnection,
    team: Uuid,
    client_user_id: &str,
    err: sqlx::Error,
) -> MetadataError {
    if is_unique_violation(&err)
        && let Ok(Some(existing)) = holder(conn, team, client_user_id).await
    {
        return MetadataError::ClientUserIdTaken {
            existing: Box::new(existing),
        };
    }
    err.into()
}

/// One page of the team's users, oldest first, and the team's total.
pub async fn list_users(
    conn: &mut AnyConnection,
    team: Uuid,
    offset: i64,
    limit: i64,
) -> Result<(Vec<User>, i64), MetadataError> {
    let rows = sqlx::query(&format!(
        "SELECT {USER_COLUMNS} FROM users WHERE team_id = $1 AND deleted_at IS NULL \
         ORDER BY created_at, id LIMIT $2 OFFSET $3"
    ))
    .bind(team.to_string())
    .bind(limit)
    .bind(offset)
    .fetch_all(&mut *conn)
    .await?;
    let total: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM users WHERE team_id = $1 AND deleted_at IS NULL")
            .bind(team.to_string())
            .fetch_one(&mut *conn)
            .await?;
    let users = rows.iter().map(user_from_row).collect::<Result<_, _>>()?;
    Ok((users, total))
}

/// The team's counts: users, their connections (deregistered ones left out), and those of
/// them in an error state.
pub async fn team_counts(
    conn: &mut AnyConnection,
    team: Uuid,
) -> Result<(i64, i64, i64), MetadataError> {
    let users: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM users WHERE team_id = $1 AND deleted_at IS NULL")
            .bind(team.to_string())
            .fetch_one(&mut *conn)
            .await?;
    let count = |status_clause: &'static str| {
        format!(
            "SELECT COUNT(*) FROM connections c JOIN users u ON u.id = c.user_id \
             WHERE u.team_id = $1 AND u.deleted_at IS NULL AND {status_clause}"
        )
    };
    let connected: i64 = sqlx::query_scalar(&count("c.status <> 'deregistered'"))
        .bind(team.to_string())
        .fetch_one(&mut *conn)
        .await?;
    let errored: i64 = sqlx::query_scalar(&count("c.status = 'error'"))
        .bind(team.to_string())
        .fetch_one(&mut *conn)
        .await?;
    Ok((users, connected, errored))
}

/// A user of the team by id.
pub async fn user(
    conn: &mut AnyConnection,
    team: Uuid,
    id: Uuid,
) -> Result<Option<User>, MetadataError> {
    let row = sqlx::query(&format!(
        "SELECT {USER_COLUMNS} FROM users WHERE team_id = $1 AND id = $2 AND deleted_at IS NULL"
    ))
    .bind(team.to_string())
    .bind(id.to_string())
    .fetch_optional(conn)
    .await?;
    row.as_ref().map(user_from_row).transpose()
}

/// A user of the team by the team's own id.
pub async fn user_by_client_id(
    conn: &mut AnyConnection,
    team: Uuid,
    client_user_id: &str,
) -> Result<Option<User>, MetadataError> {
    let row = sqlx::query(&format!(
        "SELECT {USER_COLUMNS} FROM users \
         WHERE team_id = $1 AND client_user_id = $2 AND deleted_at IS NULL"
    ))
    .bind(team.to_string())
    .bind(client_user_id)
    .fetch_optional(conn)
    .await?;
    row.as_ref().map(user_from_row).transpose()
}

/// Applies a patch; `Ok(None)` when the user does not exist. A taken `client_user_id` answers
/// [`MetadataError::ClientUserIdTaken`]. Reads then writes: run it in a transaction.
pub async fn update_user(
    conn: &mut AnyConnection,
    team: Uuid,
    id: Uuid,
    patch: UserPatch,
) -> Result<Option<User>, MetadataError> {
    let Some(mut user) = user(conn, team, id).await? else {
        return Ok(None);
    };
    let now = now();
    if let Some(cuid) = patch.client_user_id {
        if cuid != user.client_user_id
            && let Some(existing) = user_by_client_id(conn, team, &cuid).await?
        {
            return Err(MetadataError::ClientUserIdTaken {
                existing: Box::new(existing),
            });
        }
        user.client_user_id = cuid;
    }
    if let Some(zone) = patch.fallback_time_zone {
        user.fallback_time_zone = zone.map(|value| Stamped {
            value,
            updated_at: now,
        });
    }
    if let Some(birth) = patch.fallback_birth_date {
        user.fallback_birth_date = birth.map(|value| Stamped {
            value,
            updated_at: now,
        });
    }
    if let Some(start) = patch.ingestion_start {
        user.ingestion_start = start;
    }
    if let Some(end) = patch.ingestion_end {
        user.ingestion_end = end;
    }
    let query = sqlx::query(
        "UPDATE users SET client_user_id = $1, fallback_time_zone = $2, \
         fallback_time_zone_updated_at = $3, fallback_birth_date = $4, \
         fallback_birth_date_updated_at = $5, ingestion_start = $6, ingestion_end = $7 \
         WHERE team_id = $8 AND id = $9",
    )
    .bind(&user.client_user_id);
    let updated = bind_settings(query, &user)
        .bind(team.to_string())
        .bind(id.to_string())
        .execute(&mut *conn)
        .await;
    match updated {
        Ok(_) => Ok(Some(user)),
        Err(e) => Err(explain_write_error(conn, team, &user.client_user_id, e).await),
    }
}

/// Deletes a user with its info and connections; `false` when the team has no such user (and
/// then nothing is touched: the dependent rows are selected through the team's user). Run it in
/// a transaction: all or nothing.
pub async fn delete_user(
    conn: &mut AnyConnection,
    team: Uuid,
    id: Uuid,
) -> Result<bool, MetadataError> {
    for table in [
        "user_info",
        "connections",
        "continuous_query_users",
        "continuous_query_tasks",
    ] {
        sqlx::query(&format!(
            "DELETE FROM {table} WHERE user_id IN \
             (SELECT id FROM users WHERE team_id = $1 AND id = $2)"
        ))
        .bind(team.to_string())
        .bind(id.to_string())
        .execute(&mut *conn)
        .await?;
    }
    let deleted = sqlx::query("DELETE FROM users WHERE team_id = $1 AND id = $2")
        .bind(team.to_string())
        .bind(id.to_string())
        .execute(&mut *conn)
        .await?;
    Ok(deleted.rows_affected() > 0)
}

impl MetadataStore {
    /// Creates a user; a taken `client_user_id` answers the existing user.
    pub async fn create_user(&self, team: Uuid, new: NewUser) -> Result<User, MetadataError> {
        create_user(&mut *self.writer().await?, team, new).await
    }

    /// The team's counts of users, connections and errored connections.
    pub async fn team_counts(&self, team: Uuid) -> Result<(i64, i64, i64), MetadataError> {
        team_counts(&mut *self.reader().await?, team).await
    }

    /// One page of the team's users, oldest first, and the team's total.
    pub async fn list_users(
        &self,
        team: Uuid,
        offset: i64,
        limit: i64,
    ) -> Result<(Vec<User>, i64), MetadataError> {
        list_users(&mut *self.reader().await?, team, offset, limit).await
    }

    /// A user of the team by id.
    pub async fn user(&self, team: Uuid, id: Uuid) -> Result<Option<User>, MetadataError> {
        user(&mut *self.reader().await?, team, id).await
    }

    /// A user of the team by the team's own id.
    pub async fn user_by_client_id(
        &self,
        team: Uuid,
        client_user_id: &str,
    ) -> Result<Option<User>, MetadataError> {
        user_by_client_id(&mut *self.reader().await?, team, client_user_id).await
    }

    /// Applies a patch; `Ok(None)` when the user does not exist. A taken `client_user_id`
    /// answers [`MetadataError::ClientUserIdTaken`].
    pub async fn update_user(
        &self,
        team: Uuid,
        id: Uuid,
        patch: UserPatch,
    ) -> Result<Option<User>, MetadataError> {
        self.update_user_and(team, id, patch, |_, _| Box::pin(async { Ok(()) }))
            .await
    }

    /// [`Self::update_user`], with `also` run on the updated user in the same transaction (a
    /// room above the store recording what the change means for it).
    pub async fn update_user_and<F>(
        &self,
        team: Uuid,
        id: Uuid,
        patch: UserPatch,
        also: F,
    ) -> Result<Option<User>, MetadataError>
    where
        F: for<'c> FnOnce(
            &'c mut AnyConnection,
            &'c User,
        ) -> futures::future::BoxFuture<'c, Result<(), MetadataError>>,
    {
        let wanted = patch.client_user_id.clone();
        let mut tx = self.begin().await?;
        match update_user(&mut tx, team, id, patch).await {
            Ok(Some(updated)) => {
                also(&mut tx, &updated).await?;
                tx.commit().await?;
                Ok(Some(updated))
            }
            Ok(None) => Ok(None),
            // Lost a race for the client user id: on PostgreSQL the failed statement aborted the
            // transaction, so the holder is looked up after it.
            Err(MetadataError::Database(e)) if is_unique_violation(&e) => {
                tx.rollback().await?;
                let holder = match &wanted {
                    Some(cuid) => holder(&mut *self.writer().await?, team, cuid).await?,
                    None => None,
                };
                Err(match holder {
                    Some(existing) => MetadataError::ClientUserIdTaken {
                        existing: Box::new(existing),
                    },
                    None => MetadataError::Database(e),
                })
            }
            Err(e) => Err(e),
        }
    }

    /// Deletes a user with its info and connections; `false` when there was none.
    pub async fn delete_user(&self, team: Uuid, id: Uuid) -> Result<bool, MetadataError> {
        let mut tx = self.begin().await?;
        let deleted = delete_user(&mut tx, team, id).await?;
        tx.commit().await?;
        Ok(deleted)
    }
}
