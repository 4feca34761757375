//! `lab_orders`: orders as documents plus the columns the list filters and sorts on. The
//! lab domain renders the document; this file never parses it.
//!
//! The orders of a user deleted within the undo window (`deleted_users.rs`) are invisible to
//! every read here, as the rest of the user's data is, and come back with the undo: each read
//! holds [`LIVE_USER`].

use chrono::{DateTime, Utc};
use sqlx::AnyConnection;
use sqlx::any::AnyRow;
use uuid::Uuid;

use super::super::{MetadataError, get_opt_str, get_str, placeholders, ts};

/// The condition every read holds: the order's user is not soft-deleted. `$1` is the team;
/// the team's deleted users are few, so the subquery is small and evaluated once.
const LIVE_USER: &str =
    "user_id NOT IN (SELECT id FROM users WHERE team_id = $1 AND deleted_at IS NOT NULL)";

/// An order's row.
#[derive(Debug, Clone, PartialEq)]
pub struct OrderRow {
    /// Id.
    pub id: Uuid,
    /// Team.
    pub team_id: Uuid,
    /// User.
    pub user_id: Uuid,
    /// Method (wire name).
    pub method: String,
    /// Low-level status (wire name).
    pub status: String,
    /// Lowercase "first last".
    pub patient_name: String,
    /// Lowercase recipient name.
    pub recipient_name: String,
    /// Lowercase text `search_input` matches by substring.
    pub search_text: String,
    /// current or scheduled.
    pub activation_type: String,
    /// Overall interpretation.
    pub interpretation: Option<String>,
    /// Any critical result.
    pub is_critical: bool,
    /// Transaction id.
    pub transaction_id: Uuid,
    /// The rendered order (JSON).
    pub document: String,
    /// Creation time.
    pub created_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
}

/// Inserts an order.
pub async fn insert(conn: &mut AnyConnection, o: &OrderRow) -> Result<(), MetadataError> {
    sqlx::query(
        "INSERT INTO lab_orders (id, team_id, user_id, method, status, patient_name, \
         recipient_name, search_text, activation_type, interpretation, is_critical, \
         transaction_id, document, results, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, NULL, $14, $15)",
    )
    .bind(o.id.to_string())
    .bind(o.team_id.to_string())
    .bind(o.user_id.to_string())
    .bind(&o.method)
    .bind(&o.status)
    .bind(&o.patient_name)
    .bind(&o.recipient_name)
    .bind(&o.search_text)
    .bind(&o.activation_type)
    .bind(o.interpretation.clone())
    .bind(i64::from(o.is_critical))
    .bind(o.transaction_id.to_string())
    .bind(&o.document)
    .bind(ts(o.created_at))
    .bind(ts(o.updated_at))
    .execute(conn)
    .await?;
    Ok(())
}

/// Rewrites an order's changing columns and document.
pub async fn update(conn: &mut AnyConnection, o: &OrderRow) -> Result<(), MetadataError> {
    sqlx::query(
        "UPDATE lab_orders SET status = $1, activation_type = $2, interpretation = $3, \
         is_critical = $4, document = $5, updated_at = $6 WHERE team_id = $7 AND id = $8",
    )
    .bind(&o.status)
    .bind(&o.activation_type)
    .bind(o.interpretation.clone())
    .bind(i64::from(o.is_critical))
    .bind(&o.document)
    .bind(ts(o.updated_at))
    .bind(o.team_id.to_string())
    .bind(o.id.to_string())
    .execute(conn)
    .await?;
    Ok(())
}

/// An order's document, if the team has it.
pub async fn document(
    conn: &mut AnyConnection,
    team: Uuid,
    id: Uuid,
) -> Result<Option<String>, MetadataError> {
    let sql =
        format!("SELECT document FROM lab_orders WHERE team_id = $1 AND id = $2 AND {LIVE_USER}");
    let row = sqlx::query(&sql)
        .bind(team.to_string())
        .bind(id.to_string())
        .fetch_optional(conn)
        .await?;
    row.as_ref().map(|r| get_str(r, "document")).transpose()
}

/// Stores an order's results (JSON).
pub async fn set_results(
    conn: &mut AnyConnection,
    team: Uuid,
    id: Uuid,
    results: &str,
) -> Result<(), MetadataError> {
    sqlx::query("UPDATE lab_orders SET results = $1 WHERE team_id = $2 AND id = $3")
        .bind(results)
        .bind(team.to_string())
        .bind(id.to_string())
        .execute(conn)
        .await?;
    Ok(())
}

/// An order's results (JSON), `None` before any.
pub async fn results(
    conn: &mut AnyConnection,
    team: Uuid,
    id: Uuid,
) -> Result<Option<String>, MetadataError> {
    let sql =
        format!("SELECT results FROM lab_orders WHERE team_id = $1 AND id = $2 AND {LIVE_USER}");
    let row = sqlx::query(&sql)
        .bind(team.to_string())
        .bind(id.to_string())
        .fetch_optional(conn)
        .await?;
    Ok(row
        .as_ref()
        .map(|r| get_opt_str(r, "results"))
        .transpose()?
        .flatten())
}

/// A bound value of a list query.
#[derive(Debug, Clone, PartialEq)]
pub enum Param {
    /// Text.
    Text(String),
    /// Integer.
    Int(i64),
}

/// A list query the lab domain built: the `WHERE` conditions over this table's columns, with
/// `$N` placeholders numbered from 2 (`$1` is the team), their values, and the `ORDER BY`.
/// Conditions and ordering are fixed strings chosen by the domain; client input only ever
/// travels in `params`.
#[derive(Debug, Clone, Default)]
pub struct ListQuery {
    /// Conditions, ANDed.
    pub conditions: Vec<String>,
    /// Their values, in placeholder order.
    pub params: Vec<Param>,
    /// `ORDER BY` clause body.
    pub order_by: String,
    /// Page size.
    pub limit: i64,
    /// Rows skipped.
    pub offset: i64,
}

fn bind_all<'q>(
    mut q: sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>>,
    team: Uuid,
    params: &'q [Param],
) -> sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>> {
    q = q.bind(team.to_string());
    for p in params {
        q = match p {
            Param::Text(s) => q.bind(s.as_str()),
            Param::Int(i) => q.bind(*i),
        };
    }
    q
}

/// The page's documents and the number of matching orders.
pub async fn list(
    conn: &mut AnyConnection,
    team: Uuid,
    query: &ListQuery,
) -> Result<(Vec<String>, i64), MetadataError> {
    let mut filter = format!("team_id = $1 AND {LIVE_USER}");
    for c in &query.conditions {
        filter.push_str(" AND (");
        filter.push_str(c);
        filter.push(')');
    }
    let count_sql = format!("SELECT COUNT(*) FROM lab_orders WHERE {filter}");
    let total: i64 = {
        let q = bind_all(sqlx::query(&count_sql), team, &query.params);
        let row: AnyRow = q.fetch_one(&mut *conn).await?;
        sqlx::Row::try_get(&row, 0)?
    };
    // The page's ids first (sorting and skipping narrow rows, through the indexes), then their
    // documents: a sort that carried the documents along read every matching row's document.
    let n = query.params.len() + 1;
    let page_sql = format!(
        "SELECT id FROM lab_orders WHERE {filter} ORDER BY {} LIMIT ${} OFFSET ${}",
        query.order_by,
        n + 1,
        n + 2
    );
    let rows = bind_all(sqlx::query(&page_sql), team, &query.params)
        .bind(query.limit)
        .bind(query.offset)
        .fetch_all(&mut *conn)
        .await?;
    let ids = rows
        .iter()
        .map(|r| get_str(r, "id"))
        .collect::<Result<Vec<_>, _>>()?;
    if ids.is_empty() {
        return Ok((Vec::new(), total));
    }
    // By primary key alone: with `team_id = $1` beside it, SQLite scanned the team's rows
    // through a team index instead (55 ms over 100,000 orders). The ids are the team's already.
    let docs_sql = format!(
        "SELECT id, document FROM lab_orders WHERE id IN ({})",
        placeholders(ids.len())
    );
    let mut q = sqlx::query(&docs_sql);
    for id in &ids {
        q = q.bind(id.as_str());
    }
    let mut by_id: std::collections::HashMap<String, String> = q
        .fetch_all(&mut *conn)
        .await?
        .iter()
        .map(|r| Ok((get_str(r, "id")?, get_str(r, "document")?)))
        .collect::<Result<_, MetadataError>>()?;
    let docs = ids.iter().filter_map(|id| by_id.remove(id)).collect();
    Ok((docs, total))
}

/// The documents of the team's orders in a transaction, oldest first (none: not the team's).
pub async fn transaction_documents(
    conn: &mut AnyConnection,
    team: Uuid,
    transaction: Uuid,
) -> Result<Vec<String>, MetadataError> {
    let sql = format!(
        "SELECT document FROM lab_orders WHERE team_id = $1 AND transaction_id = $2 \
         AND {LIVE_USER} ORDER BY created_at, id"
    );
    let rows = sqlx::query(&sql)
        .bind(team.to_string())
        .bind(transaction.to_string())
        .fetch_all(conn)
        .await?;
    rows.iter().map(|r| get_str(r, "document")).collect()
}
