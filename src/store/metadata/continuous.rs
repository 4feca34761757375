//! The continuous-query tables (`migrations/0024`, `0025`): a team's registered queries, each
//! query's state per user (its current result table, inline or a file; the changes not yet
//! evaluated) and the task history. The rules are `crate::continuous`'s; this file only reads and writes rows.
//!
//! Every lookup of a query is by (team, id or slug), so another team's query answers exactly
//! as a missing one.

use chrono::{DateTime, Utc};
use sqlx::AnyConnection;
use sqlx::Row;
use sqlx::any::AnyRow;
use uuid::Uuid;

use super::{MetadataError, get_opt_str, get_opt_time, get_str, get_uuid, ts};

/// A registered query as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredQuery {
    /// Its id.
    pub id: Uuid,
    /// The owning team.
    pub team_id: Uuid,
    /// Its slug, unique among the team's active queries.
    pub slug: String,
    /// Its title.
    pub title: String,
    /// `active` or `archived`.
    pub status: String,
    /// What the team gave, as JSON (`continuous::Definition`).
    pub definition: String,
    /// The result table's columns, as JSON.
    pub result_table_schema: String,
    /// The resources it reads, as JSON.
    pub resource_dependencies: String,
    /// Created.
    pub created_at: DateTime<Utc>,
    /// Last changed.
    pub updated_at: DateTime<Utc>,
}

const COLUMNS: &str = "id, team_id, slug, title, status, definition, result_table_schema, \
    resource_dependencies, created_at, updated_at";

fn query_from_row(row: &AnyRow) -> Result<StoredQuery, MetadataError> {
    from_row!(row => StoredQuery {
        id, team_id, slug, title, status, definition, result_table_schema,
        resource_dependencies, created_at, updated_at,
    })
}

/// Adds a query; `false` when the team has an active query with its slug.
pub async fn insert_query(
    conn: &mut AnyConnection,
    q: &StoredQuery,
) -> Result<bool, MetadataError> {
    let done = sqlx::query(&format!(
        "INSERT INTO continuous_queries ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)"
    ))
    .bind(q.id.to_string())
    .bind(q.team_id.to_string())
    .bind(&q.slug)
    .bind(&q.title)
    .bind(&q.status)
    .bind(&q.definition)
    .bind(&q.result_table_schema)
    .bind(&q.resource_dependencies)
    .bind(ts(q.created_at))
    .bind(ts(q.updated_at))
    .execute(conn)
    .await;
    match done {
        Ok(_) => Ok(true),
        Err(e) if super::is_unique_violation(&e) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// Writes a query's mutable columns (title, status, definition).
pub async fn update_query(conn: &mut AnyConnection, q: &StoredQuery) -> Result<(), MetadataError> {
    sqlx::query(
        "UPDATE continuous_queries SET title = $3, status = $4, definition = $5, updated_at = $6 \
         WHERE team_id = $1 AND id = $2",
    )
    .bind(q.team_id.to_string())
    .bind(q.id.to_string())
    .bind(&q.title)
    .bind(&q.status)
    .bind(&q.definition)
    .bind(ts(q.updated_at))
    .execute(conn)
    .await?;
    Ok(())
}

/// One of the team's queries by id, or by slug (the active one with it, else the latest
/// archived one).
pub async fn query(
    conn: &mut AnyConnection,
    team: Uuid,
    id_or_slug: &str,
) -> Result<Option<StoredQuery>, MetadataError> {
    let row = match id_or_slug.parse::<Uuid>() {
        Ok(id) => {
            sqlx::query(&format!(
                "SELECT {COLUMNS} FROM continuous_queries WHERE team_id = $1 AND id = $2"
            ))
            .bind(team.to_string())
            .bind(id.to_string())
            .fetch_optional(conn)
            .await?
        }
        Err(_) => {
            sqlx::query(&format!(
                "SELECT {COLUMNS} FROM continuous_queries WHERE team_id = $1 AND slug = $2 \
                 ORDER BY CASE WHEN status = 'active' THEN 0 ELSE 1 END, updated_at DESC LIMIT 1"
            ))
            .bind(team.to_string())
            .bind(id_or_slug)
            .fetch_optional(conn)
            .await?
        }
    };
    row.as_ref().map(query_from_row).transpose()
}

/// The team's queries, oldest first; only active ones when `active_only`.
pub async fn queries(
    conn: &mut AnyConnection,
    team: Uuid,
    active_only: bool,
) -> Result<Vec<StoredQuery>, MetadataError> {
    let filter = if active_only {
        " AND status = 'active'"
    } else {
        ""
    };
    let rows = sqlx::query(&format!(
        "SELECT {COLUMNS} FROM continuous_queries WHERE team_id = $1{filter} \
         ORDER BY created_at, id"
    ))
    .bind(team.to_string())
    .fetch_all(conn)
    .await?;
    rows.iter().map(query_from_row).collect()
}

/// Where a user's current result table is kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResultRef {
    /// In the state's row ([`inline_result`] reads it).
    Inline,
    /// A Parquet file of the health store, by name.
    File(String),
}

/// A new result table, as [`commit_evaluation`] keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NewResult {
    /// In the state's row: an Arrow IPC stream.
    Inline(Vec<u8>),
    /// A Parquet file of the health store, already written, by name.
    File(String),
}

/// One query's state for one user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserState {
    /// Evaluations that changed the result table.
    pub version: i64,
    /// The current result table, `None` before the first evaluation.
    pub result: Option<ResultRef>,
    /// The UTC range (µs, inclusive) of changed data not yet evaluated.
    pub dirty: Option<(i64, i64)>,
    /// Whether everything is to be evaluated.
    pub dirty_all: bool,
    /// Changes recorded so far.
    pub dirty_seq: i64,
    /// The end of the last evaluation.
    pub last_evaluated_at: Option<DateTime<Utc>>,
}

impl UserState {
    /// Whether a change waits for evaluation.
    pub fn is_dirty(&self) -> bool {
        self.dirty_all || self.dirty.is_some()
    }
}

/// Records a change for (query, user): widens the range not yet evaluated by `range`, or marks
/// everything (`range` `None`). Answers the state after it.
pub async fn mark_dirty(
    conn: &mut AnyConnection,
    (query, team, user): (Uuid, Uuid, Uuid),
    range: Option<(i64, i64)>,
) -> Result<UserState, MetadataError> {
    let (start, end) = range.unzip();
    sqlx::query(
        "INSERT INTO continuous_query_users (query_id, user_id, team_id, version, result_file, \
         dirty_start, dirty_end, dirty_all, dirty_seq, last_evaluated_at) \
         VALUES ($1, $2, $3, 0, NULL, $4, $5, $6, 1, NULL) \
         ON CONFLICT (query_id, user_id) DO UPDATE SET \
         dirty_start = CASE WHEN continuous_query_users.dirty_start IS NULL \
             OR excluded.dirty_start < continuous_query_users.dirty_start \
             THEN excluded.dirty_start ELSE continuous_query_users.dirty_start END, \
         dirty_end = CASE WHEN continuous_query_users.dirty_end IS NULL \
             OR excluded.dirty_end > continuous_query_users.dirty_end \
             THEN excluded.dirty_end ELSE continuous_query_users.dirty_end END, \
         dirty_all = CASE WHEN excluded.dirty_all = 1 THEN 1 \
             ELSE continuous_query_users.dirty_all END, \
         dirty_seq = continuous_query_users.dirty_seq + 1",
    )
    .bind(query.to_string())
    .bind(user.to_string())
    .bind(team.to_string())
    .bind(start)
    .bind(end)
    .bind(i64::from(range.is_none()))
    .execute(&mut *conn)
    .await?;
    user_state(conn, query, user)
        .await?
        .ok_or(MetadataError::Corrupt {
            column: "continuous_query_users",
            value: format!("{query}/{user} vanished in its own upsert"),
        })
}

const STATE_COLUMNS: &str = "version, result_file, dirty_start, dirty_end, dirty_all, dirty_seq, \
    last_evaluated_at, CAST(CASE WHEN result_inline IS NULL THEN 0 ELSE 1 END AS BIGINT) AS inline";

fn state_from_row(row: &AnyRow) -> Result<UserState, MetadataError> {
    let start: Option<i64> = row.try_get("dirty_start")?;
    let end: Option<i64> = row.try_get("dirty_end")?;
    Ok(UserState {
        version: row.try_get("version")?,
        result: match get_opt_str(row, "result_file")? {
            Some(name) => Some(ResultRef::File(name)),
            None if row.try_get::<i64, _>("inline")? != 0 => Some(ResultRef::Inline),
            None => None,
        },
        dirty: start.zip(end),
        dirty_all: row.try_get::<i64, _>("dirty_all")? != 0,
        dirty_seq: row.try_get("dirty_seq")?,
        last_evaluated_at: get_opt_time(row, "last_evaluated_at")?,
    })
}

/// One query's state for one user, `None` before any change was recorded.
pub async fn user_state(
    conn: &mut AnyConnection,
    query: Uuid,
    user: Uuid,
) -> Result<Option<UserState>, MetadataError> {
    let row = sqlx::query(&format!(
        "SELECT {STATE_COLUMNS} FROM continuous_query_users WHERE query_id = $1 AND user_id = $2"
    ))
    .bind(query.to_string())
    .bind(user.to_string())
    .fetch_optional(conn)
    .await?;
    row.as_ref().map(state_from_row).transpose()
}

/// The inline result table of (query, user): an Arrow IPC stream, `None` when the table is a
/// file or not evaluated yet.
pub async fn inline_result(
    conn: &mut AnyConnection,
    query: Uuid,
    user: Uuid,
) -> Result<Option<Vec<u8>>, MetadataError> {
    let bytes: Option<Option<Vec<u8>>> = sqlx::query_scalar(
        "SELECT result_inline FROM continuous_query_users WHERE query_id = $1 AND user_id = $2",
    )
    .bind(query.to_string())
    .bind(user.to_string())
    .fetch_optional(conn)
    .await?;
    Ok(bytes.flatten())
}

/// What an evaluation commits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Evaluated {
    /// The version it read (the commit fails if another evaluation moved it meanwhile).
    pub read_version: i64,
    /// The new result table, `None` when the table did not change (the version then stays).
    pub result: Option<NewResult>,
    /// The `dirty_seq` it saw: changes recorded after it stay pending.
    pub seen_seq: i64,
    /// When it ended.
    pub at: DateTime<Utc>,
}

/// How [`commit_evaluation`] went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Commit {
    /// Another evaluation committed first; nothing changed.
    Superseded,
    /// Committed; `changes_waiting`: changes recorded after the evaluation's snapshot are
    /// still to be evaluated.
    Done {
        /// Whether changes wait still.
        changes_waiting: bool,
    },
}

/// Commits an evaluation: the new result table (when it changed) and the changes it covered
/// cleared, fenced by the version it read. One statement: the state after it comes back with
/// it.
pub async fn commit_evaluation(
    conn: &mut AnyConnection,
    (query, user): (Uuid, Uuid),
    e: &Evaluated,
) -> Result<Commit, MetadataError> {
    const CLEAR: &str = "last_evaluated_at = $4, \
         dirty_start = CASE WHEN dirty_seq = $5 THEN NULL ELSE dirty_start END, \
         dirty_end = CASE WHEN dirty_seq = $5 THEN NULL ELSE dirty_end END, \
         dirty_all = CASE WHEN dirty_seq = $5 THEN 0 ELSE dirty_all END";
    const FENCE: &str = "WHERE query_id = $1 AND user_id = $2 AND version = $3 RETURNING dirty_seq";
    let statement = match &e.result {
        None => format!("UPDATE continuous_query_users SET {CLEAR} {FENCE}"),
        Some(_) => format!(
            "UPDATE continuous_query_users SET {CLEAR}, version = version + 1, \
             result_file = $6, result_inline = $7 {FENCE}"
        ),
    };
    let mut update = sqlx::query_scalar::<_, i64>(&statement)
        .bind(query.to_string())
        .bind(user.to_string())
        .bind(e.read_version)
        .bind(ts(e.at))
        .bind(e.seen_seq);
    match &e.result {
        None => {}
        Some(NewResult::File(name)) => {
            update = update.bind(Some(name.as_str())).bind(None::<&[u8]>)
        }
        Some(NewResult::Inline(bytes)) => {
            update = update.bind(None::<&str>).bind(Some(bytes.as_slice()))
        }
    }
    Ok(match update.fetch_optional(conn).await? {
        None => Commit::Superseded,
        Some(seq) => Commit::Done {
            changes_waiting: seq != e.seen_seq,
        },
    })
}

/// How far a query's evaluation has come over the team's users.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Progress {
    /// Users with a state (every user the query was scheduled for).
    pub users: i64,
    /// Users evaluated at least once.
    pub evaluated: i64,
    /// Users with changes waiting.
    pub pending: i64,
}

/// A query's [`Progress`].
pub async fn progress(conn: &mut AnyConnection, query: Uuid) -> Result<Progress, MetadataError> {
    let row = sqlx::query(
        "SELECT COUNT(*) AS users, \
         COALESCE(SUM(CASE WHEN last_evaluated_at IS NOT NULL THEN 1 ELSE 0 END), 0) AS evaluated, \
         COALESCE(SUM(CASE WHEN dirty_all = 1 OR dirty_start IS NOT NULL THEN 1 ELSE 0 END), 0) \
         AS pending FROM continuous_query_users WHERE query_id = $1",
    )
    .bind(query.to_string())
    .fetch_one(conn)
    .await?;
    Ok(Progress {
        users: row.try_get("users")?,
        evaluated: row.try_get("evaluated")?,
        pending: row.try_get("pending")?,
    })
}

/// The ids of a team's live users after `after` (by id), at most `limit`.
pub async fn team_user_ids(
    conn: &mut AnyConnection,
    team: Uuid,
    after: Option<Uuid>,
    limit: i64,
) -> Result<Vec<Uuid>, MetadataError> {
    let rows = sqlx::query(
        "SELECT id FROM users WHERE team_id = $1 AND deleted_at IS NULL AND id > $2 \
         ORDER BY id LIMIT $3",
    )
    .bind(team.to_string())
    .bind(after.map(|u| u.to_string()).unwrap_or_default())
    .bind(limit)
    .fetch_all(conn)
    .await?;
    rows.iter().map(|r| get_uuid(r, "id")).collect()
}

/// One evaluation in the task history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Task {
    /// Its id.
    pub id: Uuid,
    /// The query.
    pub query_id: Uuid,
    /// The user.
    pub user_id: Uuid,
    /// Its place in the (query, user) history, increasing.
    pub seq: i64,
    /// `scheduled`, `started`, `completed`, `error` or `skipped`.
    pub status: String,
    /// When it was asked for.
    pub scheduled_at: DateTime<Utc>,
    /// When it started.
    pub started_at: Option<DateTime<Utc>>,
    /// When it ended.
    pub ended_at: Option<DateTime<Utc>>,
    /// Why it failed.
    pub error_details: Option<String>,
}

const TASK_COLUMNS: &str =
    "id, query_id, user_id, seq, status, scheduled_at, started_at, ended_at, error_details";

fn task_from_row(row: &AnyRow) -> Result<Task, MetadataError> {
    from_row!(row => Task {
        id, query_id, user_id, seq, status, scheduled_at, started_at, ended_at, error_details,
    })
}

/// The open task (scheduled or started) of (query, user), if any.
pub async fn open_task(
    conn: &mut AnyConnection,
    query: Uuid,
    user: Uuid,
) -> Result<Option<Task>, MetadataError> {
    let row = sqlx::query(&format!(
        "SELECT {TASK_COLUMNS} FROM continuous_query_tasks WHERE query_id = $1 AND user_id = $2 \
         AND status IN ('scheduled', 'started') ORDER BY seq DESC LIMIT 1"
    ))
    .bind(query.to_string())
    .bind(user.to_string())
    .fetch_optional(conn)
    .await?;
    row.as_ref().map(task_from_row).transpose()
}

/// Adds a task `scheduled` at `at` unless one is open; answers the open one.
pub async fn schedule_task(
    conn: &mut AnyConnection,
    (query, team, user): (Uuid, Uuid, Uuid),
    at: DateTime<Utc>,
) -> Result<Task, MetadataError> {
    if let Some(open) = open_task(&mut *conn, query, user).await? {
        return Ok(open);
    }
    let seq: i64 = sqlx::query_scalar(
        "SELECT COALESCE(MAX(seq), 0) + 1 FROM continuous_query_tasks \
         WHERE query_id = $1 AND user_id = $2",
    )
    .bind(query.to_string())
    .bind(user.to_string())
    .fetch_one(&mut *conn)
    .await?;
    let task = Task {
        id: Uuid::new_v4(),
        query_id: query,
        user_id: user,
        seq,
        status: "scheduled".to_owned(),
        scheduled_at: at,
        started_at: None,
        ended_at: None,
        error_details: None,
    };
    sqlx::query(&format!(
        "INSERT INTO continuous_query_tasks ({TASK_COLUMNS}, team_id) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)"
    ))
    .bind(task.id.to_string())
    .bind(query.to_string())
    .bind(user.to_string())
    .bind(task.seq)
    .bind(&task.status)
    .bind(ts(at))
    .bind(None::<String>)
    .bind(None::<String>)
    .bind(None::<String>)
    .bind(team.to_string())
    .execute(conn)
    .await?;
    Ok(task)
}

/// Moves a task on: its status, and the start, end and error when given.
pub async fn set_task(
    conn: &mut AnyConnection,
    id: Uuid,
    status: &str,
    started_at: Option<DateTime<Utc>>,
    ended_at: Option<DateTime<Utc>>,
    error: Option<&str>,
) -> Result<(), MetadataError> {
    sqlx::query(
        "UPDATE continuous_query_tasks SET status = $2, \
         started_at = COALESCE($3, started_at), ended_at = COALESCE($4, ended_at), \
         error_details = COALESCE($5, error_details) WHERE id = $1",
    )
    .bind(id.to_string())
    .bind(status)
    .bind(started_at.map(ts))
    .bind(ended_at.map(ts))
    .bind(error.map(str::to_owned))
    .execute(conn)
    .await?;
    Ok(())
}

/// Ends (query, user)'s open task as `completed`, started at `started` unless its start was
/// recorded, ended at `ended`; `false` when no task is open.
pub async fn complete_open_task(
    conn: &mut AnyConnection,
    (query, user): (Uuid, Uuid),
    started: DateTime<Utc>,
    ended: DateTime<Utc>,
) -> Result<bool, MetadataError> {
    let done = sqlx::query(
        "UPDATE continuous_query_tasks SET status = 'completed', \
         started_at = COALESCE(started_at, $3), ended_at = $4 \
         WHERE query_id = $1 AND user_id = $2 AND status IN ('scheduled', 'started')",
    )
    .bind(query.to_string())
    .bind(user.to_string())
    .bind(ts(started))
    .bind(ts(ended))
    .execute(conn)
    .await?;
    Ok(done.rows_affected() > 0)
}

/// A page of (query, user)'s tasks, newest first, those before `before` (a `seq`) when given.
pub async fn tasks(
    conn: &mut AnyConnection,
    (query, user): (Uuid, Uuid),
    before: Option<i64>,
    limit: i64,
) -> Result<Vec<Task>, MetadataError> {
    let rows = sqlx::query(&format!(
        "SELECT {TASK_COLUMNS} FROM continuous_query_tasks WHERE query_id = $1 AND user_id = $2 \
         AND seq < $3 ORDER BY seq DESC LIMIT $4"
    ))
    .bind(query.to_string())
    .bind(user.to_string())
    .bind(before.unwrap_or(i64::MAX))
    .bind(limit)
    .fetch_all(conn)
    .await?;
    rows.iter().map(task_from_row).collect()
}

/// The active queries of a team (the ones changes are recorded for).
pub async fn active_ids(
    conn: &mut AnyConnection,
    team: Uuid,
) -> Result<Vec<(Uuid, String)>, MetadataError> {
    let rows = sqlx::query(
        "SELECT id, resource_dependencies FROM continuous_queries \
         WHERE team_id = $1 AND status = 'active'",
    )
    .bind(team.to_string())
    .fetch_all(conn)
    .await?;
    rows.iter()
        .map(|r| Ok((get_uuid(r, "id")?, get_str(r, "resource_dependencies")?)))
        .collect()
}
