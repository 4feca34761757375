//! Asking for evaluations: [`record_changes`] (a user's data changed), the
//! `continuous.backfill` job (a new query, for every existing user of its team), and the
//! marks both make: the (query, user) change range widened, a `scheduled` task, and the pair's
//! evaluation job due once the minimum gap since its last evaluation has passed.

use chrono::{DateTime, Utc};
use datafusion::arrow::array::{AsArray, RecordBatch};
use datafusion::arrow::compute::{max, min};
use datafusion::arrow::datatypes::{DataType, Date32Type, TimeUnit, TimestampMicrosecondType};
use serde::{Deserialize, Serialize};
use sqlx::AnyConnection;
use uuid::Uuid;

use super::definition::Definition;
use super::evaluate::{self, Payload};
use crate::jobs::{JobContext, JobError, JobHandler, NewJob, Outcome};
use crate::schema::Dataset;
use crate::store::metadata::continuous::{self as rows, StoredQuery};
use crate::store::metadata::{MetadataError, User};

const DAY: i64 = crate::engine::time::MICROS_PER_DAY;

/// The UTC span (µs, inclusive) of `batch`'s rows in `dataset`'s time column (a date-indexed
/// table's days as their midnight UTC); `None` for no row with a time.
pub fn span_of(dataset: Dataset, batch: &RecordBatch) -> Option<(i64, i64)> {
    let column = batch.column_by_name(dataset.time_column())?;
    match column.data_type() {
        DataType::Timestamp(TimeUnit::Microsecond, _) => {
            let a = column.as_primitive::<TimestampMicrosecondType>();
            Some((min(a)?, max(a)?))
        }
        DataType::Date32 => {
            let a = column.as_primitive::<Date32Type>();
            Some((i64::from(min(a)?) * DAY, i64::from(max(a)?) * DAY))
        }
        _ => None,
    }
}

/// Records that `user`'s data changed (`changes`: per dataset, the UTC span of what was
/// written) for every active query of its team that reads one of those datasets, on `conn`
/// (the transaction that makes the change known). Answers the queries marked; wake the job
/// runners after the commit when non-zero.
pub async fn record_changes(
    conn: &mut AnyConnection,
    user: &User,
    changes: &[(Dataset, (i64, i64))],
    now: DateTime<Utc>,
) -> Result<usize, MetadataError> {
    if changes.is_empty() {
        return Ok(0);
    }
    let mut marked = 0;
    for query in rows::queries(&mut *conn, user.team_id, true).await? {
        let deps: Vec<String> =
            serde_json::from_str(&query.resource_dependencies).unwrap_or_default();
        let span = changes
            .iter()
            .filter(|(d, _)| deps.contains(&d.path()))
            .map(|(_, s)| *s)
            .reduce(|(a, b), (c, d)| (a.min(c), b.max(d)));
        if let Some(span) = span {
            mark(&mut *conn, &query, user.id, Some(span), now).await?;
            marked += 1;
        }
    }
    Ok(marked)
}

/// Records that a setting of `user` the query language reads changed (the fallback zone or
/// birth date, the ingestion bounds: `UserPatch::touches_query_inputs`), on `conn` (the
/// transaction of the change): every active query of its team is marked for a whole
/// evaluation, since such a setting can move or hide any bucket. Answers the queries marked;
/// wake the job runners after the commit when non-zero.
pub async fn record_settings_change(
    conn: &mut AnyConnection,
    user: &User,
    now: DateTime<Utc>,
) -> Result<usize, MetadataError> {
    let queries = rows::queries(&mut *conn, user.team_id, true).await?;
    for query in &queries {
        mark(&mut *conn, query, user.id, None, now).await?;
    }
    Ok(queries.len())
}

/// Marks (query, user): `span` changed (`None`: everything), a task scheduled, the evaluation
/// job due after the gap.
async fn mark(
    conn: &mut AnyConnection,
    query: &StoredQuery,
    user: Uuid,
    span: Option<(i64, i64)>,
    now: DateTime<Utc>,
) -> Result<(), MetadataError> {
    let ids = (query.id, query.team_id, user);
    let state = rows::mark_dirty(&mut *conn, ids, span).await?;
    rows::schedule_task(&mut *conn, ids, now).await?;
    let gap = serde_json::from_str::<Definition>(&query.definition)
        .map(|d| d.gap())
        .unwrap_or_default();
    let due = state
        .last_evaluated_at
        .map_or(now, |last| (last + gap).max(now));
    let payload = Payload {
        team: query.team_id,
        query: query.id,
        user,
    };
    crate::jobs::enqueue(conn, &evaluate::job(payload, due)).await?;
    Ok(())
}

/// The kind's name.
pub const BACKFILL: &str = "continuous.backfill";

/// Users marked per backfill job.
const PAGE: i64 = 200;

/// A backfill job's payload: the page of users after `after` (by id).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct BackfillPayload {
    /// The query's team.
    pub team: Uuid,
    /// The query.
    pub query: Uuid,
    /// The last user of the page before (`null` for the first page).
    pub after: Option<Uuid>,
}

/// The job evaluating a new query for the team's existing users, from the first.
pub fn backfill_job(team: Uuid, query: Uuid) -> NewJob {
    page_job(BackfillPayload {
        team,
        query,
        after: None,
    })
}

fn page_job(p: BackfillPayload) -> NewJob {
    let after = p.after.map(|u| u.to_string()).unwrap_or_default();
    NewJob::typed(BACKFILL, &p)
        .for_team(p.team)
        .unique(format!("{BACKFILL}:{}:{after}", p.query))
}

/// The `continuous.backfill` handler: marks one page of users, each for a whole evaluation,
/// and enqueues the next page's job in the same transaction (so a restart resumes at the page
/// it was on; marking a user twice only coalesces).
#[derive(Debug, Clone, Default)]
pub struct Backfill;

#[async_trait::async_trait]
impl JobHandler for Backfill {
    fn kind(&self) -> &'static str {
        BACKFILL
    }

    type Payload = BackfillPayload;

    async fn run(&self, ctx: &JobContext, p: BackfillPayload) -> Result<Outcome, JobError> {
        let mut tx = ctx.meta.begin().await?;
        let query = rows::query(&mut tx, p.team, &p.query.to_string()).await?;
        let Some(query) = query.filter(|q| q.status == "active") else {
            return Ok(Outcome::Done);
        };
        let users = rows::team_user_ids(&mut tx, p.team, p.after, PAGE).await?;
        for user in &users {
            mark(&mut tx, &query, *user, None, ctx.now()).await?;
        }
        if let (Some(last), true) = (users.last(), users.len() as i64 == PAGE) {
            let next = BackfillPayload {
                after: Some(*last),
                ..p
            };
            crate::jobs::enqueue(&mut tx, &page_job(next)).await?;
        }
        tx.commit().await.map_err(MetadataError::from)?;
        ctx.meta.jobs_wake().notify_waiters();
        Ok(Outcome::Done)
    }
}
