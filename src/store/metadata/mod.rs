//! The metadata store: teams, API keys, users, user info, provider connections and team
//! priorities, in a relational database through sqlx.
//!
//! One module owns every SQL statement. It talks to the database through sqlx's `Any` driver so
//! the same portable SQL serves a SQLite file (the default, in the data dir) and PostgreSQL
//! (`--database-url postgres://...`). Portability rules: `$N` placeholders (both backends accept
//! them), `TEXT` ids and RFC 3339 UTC instants with microseconds (they sort as text), no
//! backend-specific functions, and deletes spelled out rather than left to `ON DELETE CASCADE`
//! (SQLite enforces foreign keys only when asked per connection).

mod teams;
mod users;

pub use teams::{ApiKey, Team};
pub use users::{Connection, NewUser, Stamped, User, UserPatch};

use std::str::FromStr;

use chrono::{DateTime, NaiveDate, SecondsFormat, Utc};
use sqlx::any::{AnyPoolOptions, AnyRow};
use sqlx::{AnyPool, Row};
use uuid::Uuid;

/// Errors of the metadata store.
#[derive(Debug, thiserror::Error)]
pub enum MetadataError {
    /// The database could not be reached or refused a statement.
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
    /// Applying the schema migrations failed.
    #[error("migration failed: {0}")]
    Migration(#[from] sqlx::migrate::MigrateError),
    /// Another user of the team already has this `client_user_id`.
    #[error("client user id already exists")]
    ClientUserIdTaken {
        /// The user holding it.
        existing: Box<User>,
    },
    /// A stored value could not be decoded (a bug or a hand-edited database).
    #[error("corrupt stored value in {column}: {value:?}")]
    Corrupt {
        /// The column.
        column: &'static str,
        /// The value found.
        value: String,
    },
    /// The database URL names no backend this build supports.
    #[error("unsupported database URL {0:?}: expected sqlite:// or postgres://")]
    UnsupportedUrl(String),
}

/// Handle on the metadata database; cheap to clone.
#[derive(Debug, Clone)]
pub struct MetadataStore {
    pool: AnyPool,
}

impl MetadataStore {
    /// Connects to `url` (`sqlite://path?mode=rwc` or `postgres://...`) and applies migrations.
    pub async fn connect(url: &str) -> Result<Self, MetadataError> {
        sqlx::any::install_default_drivers();
        let is_sqlite = url.starts_with("sqlite:");
        if !is_sqlite && !url.starts_with("postgres:") && !url.starts_with("postgresql:") {
            return Err(MetadataError::UnsupportedUrl(url.to_owned()));
        }
        // SQLite allows one writer: a single connection serialises writes without
        // "database is locked" errors; PostgreSQL gets a real pool.
        let max = if is_sqlite { 1 } else { 16 };
        let pool = AnyPoolOptions::new()
            .max_connections(max)
            .connect(url)
            .await?;
        if is_sqlite {
            sqlx::query("PRAGMA journal_mode = WAL")
                .execute(&pool)
                .await?;
            sqlx::query("PRAGMA synchronous = FULL")
                .execute(&pool)
                .await?;
        }
        sqlx::migrate!("./migrations").run(&pool).await?;
        Ok(MetadataStore { pool })
    }

    /// Checks that the database answers.
    pub async fn ping(&self) -> Result<(), MetadataError> {
        sqlx::query("SELECT 1").execute(&self.pool).await?;
        Ok(())
    }

    /// Closes every connection (used at shutdown and by tests that restart).
    pub async fn close(&self) {
        self.pool.close().await;
    }

    pub(crate) fn pool(&self) -> &AnyPool {
        &self.pool
    }
}

/// The current instant at the precision stored (microseconds), so what a write answers equals
/// what a later read answers.
pub(crate) fn now() -> DateTime<Utc> {
    use chrono::SubsecRound;
    Utc::now().trunc_subsecs(6)
}

/// Renders an instant the way every column stores it.
pub(crate) fn ts(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Micros, true)
}

pub(crate) fn get_str(row: &AnyRow, column: &'static str) -> Result<String, MetadataError> {
    Ok(row.try_get::<String, _>(column)?)
}

pub(crate) fn get_opt_str(
    row: &AnyRow,
    column: &'static str,
) -> Result<Option<String>, MetadataError> {
    Ok(row.try_get::<Option<String>, _>(column)?)
}

pub(crate) fn parse<T: FromStr>(column: &'static str, value: String) -> Result<T, MetadataError> {
    value
        .parse()
        .map_err(|_| MetadataError::Corrupt { column, value })
}

pub(crate) fn get_uuid(row: &AnyRow, column: &'static str) -> Result<Uuid, MetadataError> {
    parse(column, get_str(row, column)?)
}

pub(crate) fn get_time(row: &AnyRow, column: &'static str) -> Result<DateTime<Utc>, MetadataError> {
    parse(column, get_str(row, column)?)
}

pub(crate) fn get_opt_time(
    row: &AnyRow,
    column: &'static str,
) -> Result<Option<DateTime<Utc>>, MetadataError> {
    get_opt_str(row, column)?
        .map(|v| parse(column, v))
        .transpose()
}

pub(crate) fn get_opt_date(
    row: &AnyRow,
    column: &'static str,
) -> Result<Option<NaiveDate>, MetadataError> {
    get_opt_str(row, column)?
        .map(|v| parse(column, v))
        .transpose()
}

/// Whether an error is a unique-constraint violation (both backends).
pub(crate) fn is_unique_violation(err: &sqlx::Error) -> bool {
    match err {
        sqlx::Error::Database(db) => db.is_unique_violation(),
        _ => false,
    }
}
