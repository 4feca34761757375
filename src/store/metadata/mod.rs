//! The metadata store: teams, API keys, users, user info, provider connections, team
//! priorities and the job queue, in a relational database through sqlx.
//!
//! One file per table group (`teams`, `keys`, `users`, `user_info`, `connections`,
//! `priorities`, `jobs`, the durable job queue of [`crate::jobs`], and `events` and `webhooks`, the outbox
//! and endpoints of [`crate::events`]) owns that group's SQL. Each exposes free functions over a
//! [`sqlx::AnyConnection`], so a domain composes several changes and its outbox or job rows in
//! one transaction (`let mut tx = meta.begin().await?; users::update_user(&mut tx, ..);
//! jobs::enqueue(&mut tx, ..); tx.commit()`), and [`MetadataStore`] methods that run one such
//! function on a pooled connection for callers that need nothing more.
//!
//! It talks to the database through sqlx's `Any` driver so the same portable SQL serves a SQLite
//! file (the default, in the data dir) and PostgreSQL (`--database-url postgres://...`).
//! Portability rules: `$N` placeholders (both backends accept them), `TEXT` ids and RFC 3339 UTC
//! instants with microseconds (they sort as text), upserts as single
//! `INSERT ... ON CONFLICT ... DO UPDATE` statements, no backend-specific functions, and deletes
//! spelled out rather than left to `ON DELETE CASCADE` (SQLite enforces foreign keys only when
//! asked per connection).
//!
//! SQLite allows one writer at a time: writes go through a pool of one connection (so they queue
//! in the pool instead of failing with "database is locked"), and reads through a separate pool
//! of [`SQLITE_READERS`] connections, which in WAL mode read the last committed state without
//! waiting for a writer's commit and fsync. PostgreSQL uses one pool for both.

/// Builds `$ty` from a row: each listed field from the column of its own name, read as the
/// field's type ([`FromColumn`]), then the fields that need more than a read (`with`), written
/// out as in a struct literal. One reader per row type, so a column is named once in the code that decodes it.
macro_rules! from_row {
    ($row:expr => $ty:ident { $($field:ident),* $(,)? } $(with { $($name:ident $(: $value:expr)?),* $(,)? })?) => {
        Ok($ty {
            $($field: $crate::store::metadata::FromColumn::from_column($row, stringify!($field))?,)*
            $($($name $(: $value)?,)*)?
        })
    };
}

pub mod bulk_imports;
pub mod bulk_ops;
pub mod connections;
pub mod continuous;
pub mod dataset_versions;
pub mod deleted_users;
pub mod deliveries;
pub mod events;
pub mod finished;
pub mod jobs;
pub mod keys;
pub mod lab;
pub mod link;
pub mod pending_sign_ins;
pub mod priorities;
pub mod push_events;
pub mod sync_introspect;
pub mod sync_pulls;
pub mod team_apps;
pub mod teams;
pub mod user_info;
pub mod user_search;
pub mod users;
pub mod webhooks;

pub use connections::{Connection, ConnectionStatus};
pub use keys::{ApiKey, Authenticated, KeyRecord};
pub use teams::Team;
pub use users::{NewUser, Stamped, User, UserPatch};

use std::str::FromStr;
use std::sync::Arc;

use chrono::{DateTime, NaiveDate, SecondsFormat, Utc};
use sqlx::any::{AnyPoolOptions, AnyRow};
use sqlx::pool::PoolConnection;
use sqlx::{Any, AnyPool, Executor, Row, Transaction};
use tokio::sync::Notify;
use uuid::Uuid;

/// Connections of the SQLite read pool: reads run beside the writer, up to this many at once.
pub const SQLITE_READERS: u32 = 4;

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
    /// An enqueue with a unique key kept meeting a holder that changed state under it.
    #[error("job unique key {key:?} kept changing hands during enqueue")]
    UniqueKeyContended {
        /// The key.
        key: String,
    },
    /// The database URL names no backend this build supports.
    #[error("unsupported database URL {0:?}: expected sqlite:// or postgres://")]
    UnsupportedUrl(String),
}

/// Handle on the metadata database; cheap to clone.
#[derive(Debug, Clone)]
pub struct MetadataStore {
    /// Every write, and reads that must see a transaction's own changes.
    write: AnyPool,
    /// Reads of committed state (the same pool as `write` on PostgreSQL).
    read: AnyPool,
    /// Wakes this process's job runners when a job is enqueued here (see `crate::jobs`).
    jobs_wake: Arc<Notify>,
    /// The API keys whose last use this process is recording now (see [`keys`]).
    key_touches: Arc<keys::Touches>,
}

impl MetadataStore {
    /// Connects to `url` (`sqlite://path?mode=rwc` or `postgres://...`) and applies migrations.
    pub async fn connect(url: &str) -> Result<Self, MetadataError> {
        sqlx::any::install_default_drivers();
        let is_sqlite = url.starts_with("sqlite:");
        if !is_sqlite && !url.starts_with("postgres:") && !url.starts_with("postgresql:") {
            return Err(MetadataError::UnsupportedUrl(url.to_owned()));
        }
        if !is_sqlite {
            let pool = AnyPoolOptions::new()
                .max_connections(16)
                .connect(url)
                .await?;
            sqlx::migrate!("./migrations").run(&pool).await?;
            return Ok(MetadataStore {
                write: pool.clone(),
                read: pool,
                jobs_wake: Arc::default(),
                key_touches: Arc::default(),
            });
        }
        // Durable commits, and a wait instead of an error when another process holds the lock.
        // No ping before handing a connection out: an SQLite connection is a handle on a local
        // file that cannot drop like a socket, and the ping was one more round trip to its
        // worker thread on every acquire.
        let write = AnyPoolOptions::new()
            .max_connections(1)
            .test_before_acquire(false)
            .after_connect(|conn, _| {
                Box::pin(async move {
                    conn.execute("PRAGMA synchronous = FULL").await?;
                    conn.execute("PRAGMA busy_timeout = 5000").await?;
                    Ok(())
                })
            })
            .connect(url)
            .await?;
        sqlx::query("PRAGMA journal_mode = WAL")
            .execute(&write)
            .await?;
        sqlx::migrate!("./migrations").run(&write).await?;
        // Readers refuse to write, so a misrouted statement fails loudly instead of racing the
        // writer for the lock.
        let read = AnyPoolOptions::new()
            .max_connections(SQLITE_READERS)
            .test_before_acquire(false)
            .after_connect(|conn, _| {
                Box::pin(async move {
                    conn.execute("PRAGMA query_only = ON").await?;
                    conn.execute("PRAGMA busy_timeout = 5000").await?;
                    Ok(())
                })
            })
            .connect(url)
            .await?;
        Ok(MetadataStore {
            write,
            read,
            jobs_wake: Arc::default(),
            key_touches: Arc::default(),
        })
    }

    /// Begins a transaction on the writer: the way to commit several changes (and their outbox
    /// or job rows) together.
    pub async fn begin(&self) -> Result<Transaction<'static, Any>, MetadataError> {
        Ok(self.write.begin().await?)
    }

    /// A pooled connection for reads of committed state.
    pub async fn reader(&self) -> Result<PoolConnection<Any>, MetadataError> {
        Ok(self.read.acquire().await?)
    }

    /// A pooled connection of the writer, for a single write outside a transaction.
    pub async fn writer(&self) -> Result<PoolConnection<Any>, MetadataError> {
        Ok(self.write.acquire().await?)
    }

    /// Checks that the database answers.
    pub async fn ping(&self) -> Result<(), MetadataError> {
        sqlx::query("SELECT 1").execute(&self.read).await?;
        Ok(())
    }

    /// Closes every connection (used at shutdown and by tests that restart).
    pub async fn close(&self) {
        self.read.close().await;
        self.write.close().await;
    }

    /// The notification job runners on this store wait on besides their poll interval;
    /// `notify_waiters` after committing an enqueue makes a job start at once.
    pub fn jobs_wake(&self) -> &Arc<Notify> {
        &self.jobs_wake
    }
}

/// The current instant at the precision stored (microseconds), so what a write answers equals
/// what a later read answers.
pub(crate) fn now() -> DateTime<Utc> {
    use chrono::SubsecRound;
    Utc::now().trunc_subsecs(6)
}

/// `$1, $2, ..., $n`: the placeholders of an `IN (...)` list of `n` bound values.
pub(crate) fn placeholders(n: usize) -> String {
    (1..=n)
        .map(|i| format!("${i}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Runs each of `statements`, in order, with `ids` bound to its `IN ({list})` list (`{list}` is
/// replaced by the placeholders); answers how many ids there were.
pub(crate) async fn delete_ids(
    conn: &mut sqlx::AnyConnection,
    statements: &[&str],
    ids: &[String],
) -> Result<u64, MetadataError> {
    if ids.is_empty() {
        return Ok(0);
    }
    let list = placeholders(ids.len());
    for statement in statements {
        let sql = statement.replace("{list}", &list);
        let mut query = sqlx::query(&sql);
        for id in ids {
            query = query.bind(id);
        }
        query.execute(&mut *conn).await?;
    }
    Ok(ids.len() as u64)
}

/// Renders an instant the way every column stores it.
pub(crate) fn ts(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Micros, true)
}

/// A value read from one column the way every column stores it: ids and instants as text,
/// counts as integers.
pub(crate) trait FromColumn: Sized {
    /// Reads `column` of `row`; a stored text that does not parse is [`MetadataError::Corrupt`].
    fn from_column(row: &AnyRow, column: &'static str) -> Result<Self, MetadataError>;
}

/// Types sqlx reads from both backends as they are.
macro_rules! native_column {
    ($($t:ty),*) => {$(
        impl FromColumn for $t {
            fn from_column(row: &AnyRow, column: &'static str) -> Result<Self, MetadataError> {
                Ok(row.try_get::<$t, _>(column)?)
            }
        }
    )*};
}
native_column!(String, Option<String>, i64, Option<i64>);

/// Types stored as their text.
macro_rules! text_column {
    ($($t:ty),*) => {$(
        impl FromColumn for $t {
            fn from_column(row: &AnyRow, column: &'static str) -> Result<Self, MetadataError> {
                parse(column, get_str(row, column)?)
            }
        }
        impl FromColumn for Option<$t> {
            fn from_column(row: &AnyRow, column: &'static str) -> Result<Self, MetadataError> {
                get_opt_str(row, column)?.map(|v| parse(column, v)).transpose()
            }
        }
    )*};
}
text_column!(Uuid, DateTime<Utc>, NaiveDate);

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

/// Whether an error is a unique-constraint violation (both backends).
pub(crate) fn is_unique_violation(err: &sqlx::Error) -> bool {
    match err {
        sqlx::Error::Database(db) => db.is_unique_violation(),
        _ => false,
    }
}
