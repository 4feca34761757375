//! The operations behind the routes: create, list, get, patch, archive, validate; a user's
//! result table and task history. Bodies are decoded here (violations at `body.<member>`); the
//! HTTP layer only decodes the transport and encodes answers.

use datafusion::arrow::array::RecordBatch;
use serde_json::{Value, json};
use uuid::Uuid;

use super::ContinuousError;
use super::definition::{
    self, ContinuousQuery, Definition, NewContinuousQuery, PatchContinuousQuery, Validated,
    check_scheduling, check_title, dependency_name,
};
use super::schedule::backfill_job;
use crate::engine::Engine;
use crate::loc;
use crate::store::health::HealthStore;
use crate::store::metadata::continuous::{self as rows, StoredQuery, Task};
use crate::store::metadata::{MetadataError, MetadataStore, now};
use crate::validation::{Invalid, Violation, decode};

/// A validate answer: what the query would produce and read.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct ValidateAnswer {
    /// The result table's columns and types, in order.
    #[schema(value_type = Object)]
    pub result_table_schema: Value,
    /// The resources it reads.
    pub resource_dependencies: Vec<String>,
}

async fn decode_new(
    engine: &Engine,
    body: &Value,
    named: bool,
) -> Result<Validated, ContinuousError> {
    let (req, checks) = decode::<NewContinuousQuery>(body, loc!["body"])?;
    checks.finish()?;
    Ok(definition::validate(engine, &req, named).await?)
}

/// `POST .../continuous_query/validate`: the dry run.
pub async fn validate(engine: &Engine, body: &Value) -> Result<ValidateAnswer, ContinuousError> {
    let v = decode_new(engine, body, false).await?;
    Ok(ValidateAnswer {
        result_table_schema: Value::Object(v.result_table_schema),
        resource_dependencies: v
            .dependencies
            .iter()
            .map(|d| dependency_name(*d).to_owned())
            .collect(),
    })
}

/// Registers a query and schedules its evaluation for the team's existing users.
pub async fn create(
    meta: &MetadataStore,
    engine: &Engine,
    team: Uuid,
    body: &Value,
) -> Result<ContinuousQuery, ContinuousError> {
    let v = decode_new(engine, body, true).await?;
    let slug = body["slug"].as_str().unwrap_or_default().to_owned();
    let at = now();
    let stored = StoredQuery {
        id: Uuid::new_v4(),
        team_id: team,
        slug: slug.clone(),
        title: body["title"].as_str().unwrap_or_default().to_owned(),
        status: "active".to_owned(),
        definition: to_json(&v.definition),
        result_table_schema: to_json(&v.result_table_schema),
        resource_dependencies: to_json(
            &v.dependencies.iter().map(|d| d.path()).collect::<Vec<_>>(),
        ),
        created_at: at,
        updated_at: at,
    };
    let mut tx = meta.begin().await?;
    if !rows::insert_query(&mut tx, &stored).await? {
        return Err(ContinuousError::SlugTaken(slug));
    }
    crate::jobs::enqueue(&mut tx, &backfill_job(team, stored.id)).await?;
    tx.commit().await.map_err(MetadataError::from)?;
    meta.jobs_wake().notify_waiters();
    definition::render(&stored, Default::default())
}

fn to_json<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| "null".to_owned())
}

/// The team's queries, oldest first.
pub async fn list(
    meta: &MetadataStore,
    team: Uuid,
) -> Result<Vec<ContinuousQuery>, ContinuousError> {
    let mut conn = meta.reader().await?;
    let mut out = Vec::new();
    for q in rows::queries(&mut conn, team, false).await? {
        let progress = rows::progress(&mut conn, q.id).await?;
        out.push(definition::render(&q, progress)?);
    }
    Ok(out)
}

async fn stored(
    meta: &MetadataStore,
    team: Uuid,
    key: &str,
) -> Result<StoredQuery, ContinuousError> {
    rows::query(&mut *meta.reader().await?, team, key)
        .await?
        .ok_or(ContinuousError::NotFound)
}

/// One of the team's queries, by id or slug.
pub async fn get(
    meta: &MetadataStore,
    team: Uuid,
    key: &str,
) -> Result<ContinuousQuery, ContinuousError> {
    let q = stored(meta, team, key).await?;
    let progress = rows::progress(&mut *meta.reader().await?, q.id).await?;
    definition::render(&q, progress)
}

/// Changes a query's title or scheduling (nothing else can change: a new query is a new
/// registration).
pub async fn patch(
    meta: &MetadataStore,
    team: Uuid,
    key: &str,
    body: &Value,
) -> Result<ContinuousQuery, ContinuousError> {
    let (req, mut checks) = decode::<PatchContinuousQuery>(body, loc!["body"])?;
    let mut out = Vec::new();
    if let Some(title) = &req.title {
        check_title(title, &mut out);
    }
    if let Some(s) = &req.scheduling_preferences {
        check_scheduling(s, &mut out);
    }
    for v in out {
        checks.fail(v.loc[1..].to_vec(), v.kind, v.msg);
    }
    checks.finish()?;
    let mut q = stored(meta, team, key).await?;
    let mut def: Definition = serde_json::from_str(&q.definition)
        .map_err(|e| ContinuousError::Table(format!("stored definition: {e}")))?;
    if let Some(title) = req.title {
        q.title = title;
    }
    if let Some(s) = req.scheduling_preferences {
        def.scheduling_preferences = s;
    }
    q.definition = to_json(&def);
    q.updated_at = now();
    rows::update_query(&mut *meta.writer().await?, &q).await?;
    get(meta, team, &q.id.to_string()).await
}

/// Archives a query: no more evaluations; its tables stay readable.
pub async fn archive(
    meta: &MetadataStore,
    team: Uuid,
    key: &str,
) -> Result<ContinuousQuery, ContinuousError> {
    let mut q = stored(meta, team, key).await?;
    if q.status != "archived" {
        q.status = "archived".to_owned();
        q.updated_at = now();
        rows::update_query(&mut *meta.writer().await?, &q).await?;
    }
    get(meta, team, &q.id.to_string()).await
}

/// The user's result table (empty before the first evaluation).
pub async fn result_table(
    meta: &MetadataStore,
    health: &HealthStore,
    team: Uuid,
    user: Uuid,
    key: &str,
) -> Result<RecordBatch, ContinuousError> {
    let q = stored(meta, team, key).await?;
    let mut conn = meta.reader().await?;
    let state = rows::user_state(&mut conn, q.id, user).await?;
    let at = state
        .and_then(|s| s.result)
        .ok_or(ContinuousError::NoTable)?;
    super::keep::read(&mut conn, health, (team, user, q.id), &at)
        .await?
        .ok_or(ContinuousError::NoTable)
}

/// A page of the user's task history, newest first, and the cursor of the next page.
pub async fn task_history(
    meta: &MetadataStore,
    team: Uuid,
    user: Uuid,
    key: &str,
    (cursor, limit): (Option<&str>, i64),
) -> Result<(Vec<Task>, Option<String>), ContinuousError> {
    let before = match cursor {
        None | Some("") => None,
        Some(c) => Some(c.parse::<i64>().map_err(|_| {
            Invalid::from(
                Violation::value(
                    loc!["query", "next_cursor"],
                    "next_cursor is not a cursor this API gave",
                )
                .with_input(json!(c)),
            )
        })?),
    };
    let q = stored(meta, team, key).await?;
    let tasks = rows::tasks(&mut *meta.reader().await?, (q.id, user), before, limit + 1).await?;
    let more = tasks.len() as i64 > limit;
    let page: Vec<Task> = tasks.into_iter().take(limit as usize).collect();
    let next = if more {
        page.last().map(|t| t.seq.to_string())
    } else {
        None
    };
    Ok((page, next))
}
