//! One evaluation of one (query, user): the `continuous.evaluate` job.
//!
//! 1. Skip what needs nothing (an archived query, a deleted user, no change waiting) and wait
//!    out the minimum gap since the last evaluation.
//! 2. A whole evaluation (everything from the user's first data to today: a new query, a
//!    deletion) marks its task `started` in a commit of its own, so the history shows the work
//!    in progress. An incremental one, over the days the waiting changes can touch
//!    ([`Shape::days`]), takes milliseconds: its start is recorded with its end, in 5.
//! 3. Re-run the query over those days through the per-user query path, and merge the fresh
//!    buckets into the stored table ([`super::table::merge`]).
//! 4. If the table differs, keep the new one (`keep.rs`): inline, to be committed in 5,
//!    or, past the inline limit, as a new file (unnamed until 5 commits).
//! 5. One transaction, fenced by the table version read in 3: the new table (or file name),
//!    the changes seen cleared (changes recorded meanwhile stay and are scheduled again), the
//!    event of the changed rows, the task's end. Then a file the new table replaced is removed.
//!
//! An incremental evaluation with an inline table is thus one durable commit: on this
//! deployment's storage every fsync counts (issue 40's bench: 0.47 ms each, more than the
//! evaluation's own work). A run cut anywhere before 5 is repeated whole and announces
//! nothing twice; two runs of one pair never both commit (the job runner runs one at a time,
//! and the version fences a stale one that outlived its lease).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::definition::Definition;
use super::event_data::QueryChanged;
use super::shape::Shape;
use super::{ContinuousError, keep, table};
use crate::engine::{Engine, OutputFormat};
use crate::events::{Event, EventType, EventUser, outbox};
use crate::jobs::{JobContext, JobError, JobHandler, NewJob, Outcome};
use crate::schema::Dataset;
use crate::store::health::HealthStore;
use crate::store::metadata::continuous::{
    self as rows, Evaluated, NewResult, ResultRef, StoredQuery,
};
use crate::store::metadata::{MetadataError, MetadataStore, User};

/// The kind's name.
pub const KIND: &str = "continuous.evaluate";

/// The job's payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Payload {
    /// The team.
    pub team: Uuid,
    /// The query.
    pub query: Uuid,
    /// The user.
    pub user: Uuid,
}

/// The evaluation job of (query, user), due at `at`: one pending per pair, so changes waiting
/// for it are coalesced into one run.
pub fn job(p: Payload, at: DateTime<Utc>) -> NewJob {
    NewJob::typed(KIND, &p)
        .for_team(p.team)
        .at(at)
        .unique(format!("{KIND}:{}:{}", p.query, p.user))
}

/// Most cells one event carries (its body stays far below the 1 MiB limit).
const CELLS_PER_EVENT: usize = 20_000;

/// What a run did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Evaluation {
    /// Nothing to do (the reason).
    Skipped(&'static str),
    /// The minimum gap has not passed: run again then.
    Wait(DateTime<Utc>),
    /// Another run committed first; this one changed nothing.
    Superseded,
    /// Committed: the rows that changed and the events written.
    Done {
        /// New or changed rows.
        changed_rows: usize,
        /// Events written.
        events: usize,
    },
}

/// Evaluates (query, user) now (the job's work; tests call it directly).
pub async fn evaluate(
    meta: &MetadataStore,
    health: &HealthStore,
    engine: &Engine,
    p: Payload,
    now: DateTime<Utc>,
) -> Result<Evaluation, ContinuousError> {
    let mut conn = meta.reader().await?;
    let query = rows::query(&mut conn, p.team, &p.query.to_string()).await?;
    let state = rows::user_state(&mut conn, p.query, p.user).await?;
    let user = crate::store::metadata::users::user(&mut conn, p.team, p.user).await?;
    let (Some(query), Some(state), Some(user)) = (query, state, user) else {
        return finish_skipped(meta, p, now, "no such query, user or change").await;
    };
    if query.status != "active" {
        return finish_skipped(meta, p, now, "the query is archived").await;
    }
    if !state.is_dirty() {
        return finish_skipped(meta, p, now, "no change waiting").await;
    }
    let ids = (p.team, p.user, p.query);
    // The table as it is now, read with the state (a newer one fences this run's commit).
    let old = match &state.result {
        Some(at) => keep::read(&mut conn, health, ids, at).await?,
        None => None,
    };
    drop(conn);
    let definition: Definition = serde_json::from_str(&query.definition)
        .map_err(|e| ContinuousError::Table(format!("stored definition: {e}")))?;
    if let Some(last) = state.last_evaluated_at {
        let due = last + definition.gap();
        if due > now {
            return Ok(Evaluation::Wait(due));
        }
    }
    let clock = std::time::Instant::now();
    let validated = super::definition::shape_of(engine, &definition)?;
    let incremental = match (state.dirty, state.dirty_all, validated.whole) {
        (Some(dirty), false, false) => Some(validated.days(dirty)),
        _ => None,
    };
    let days = match incremental {
        Some(days) => days,
        None => {
            // A whole evaluation can take a while: its start is shown meanwhile. (An
            // incremental one records its start with its end, in its one commit.)
            let mut conn = meta.writer().await?;
            let task = rows::schedule_task(&mut conn, (p.query, p.team, p.user), now).await?;
            rows::set_task(&mut conn, task.id, "started", Some(now), None, None).await?;
            drop(conn);
            whole_days(health, &query, &user, &validated, now).await?
        }
    };
    let request = definition
        .request(days, engine)
        .map_err(|e| ContinuousError::Table(format!("stored query no longer valid: {e}")))?;
    let run = (engine, OutputFormat::ParquetTar, engine.deadline());
    let (results, _) = crate::query::execute(meta, health, &user, &request, run).await?;
    let fresh = match results.first() {
        Some(r) => table::one_batch(&r.schema, &r.batches)?,
        None => return Err(ContinuousError::Table("the query answered no table".into())),
    };
    let range = (days.0 * DAY, days.1 * DAY);
    let shape = &validated;
    let merged = table::merge(
        old.as_ref(),
        &fresh,
        (&shape.bucket_column, &shape.keys),
        range,
    )?;
    let result = if merged.differs || state.result.is_none() {
        Some(keep::write(health, ids, state.version + 1, &merged.table).await?)
    } else {
        None
    };
    let mut events = if definition.export_preferences.data_events.enabled {
        changed_events(&query, &user, &merged.changed, engine)?
    } else {
        Vec::new()
    };
    if definition.export_preferences.fhir_observations
        && let Some(q) = request.queries.first()
    {
        let fhir = super::fhir::fhir_events(&query, &user, (q, shape), &merged.changed)?;
        events.extend(fhir);
    }
    let end = now;
    let mut tx = meta.begin().await?;
    let evaluated = Evaluated {
        read_version: state.version,
        result,
        seen_seq: state.dirty_seq,
        at: end,
    };
    let committed = rows::commit_evaluation(&mut tx, (p.query, p.user), &evaluated).await?;
    let rows::Commit::Done { changes_waiting } = committed else {
        return Ok(Evaluation::Superseded);
    };
    let written = outbox::enqueue(&mut tx, p.team, &events, end).await?;
    // The task ends when the work did (it used to end at `now`, its start, so every task in
    // the history lasted no time and overlapping runs could not show); the gap still counts
    // from `now`, the instant the evaluation read its data at.
    let ended = now + chrono::Duration::from_std(clock.elapsed()).unwrap_or_default();
    if !rows::complete_open_task(&mut tx, (p.query, p.user), now, ended).await? {
        let task = rows::schedule_task(&mut tx, (p.query, p.team, p.user), now).await?;
        rows::set_task(&mut tx, task.id, "completed", Some(now), Some(ended), None).await?;
    }
    // Changes recorded while this run worked are evaluated after the gap.
    if changes_waiting {
        rows::schedule_task(&mut tx, (p.query, p.team, p.user), end).await?;
        crate::jobs::enqueue(&mut tx, &job(p, end + definition.gap())).await?;
    }
    tx.commit().await.map_err(MetadataError::from)?;
    if written.deliveries > 0 {
        meta.jobs_wake().notify_waiters();
    }
    // A file the new table replaces (or a file a run cut short left) goes; an inline table
    // replacing an inline one leaves no file behind.
    let had_file = matches!(state.result, Some(ResultRef::File(_)));
    if let Some(new) = &evaluated.result
        && (had_file || matches!(new, NewResult::File(_)))
    {
        let keep = match new {
            NewResult::File(name) => Some(name.as_str()),
            NewResult::Inline(_) => None,
        };
        if let Err(error) = health.remove_results(ids, keep).await {
            tracing::warn!(%error, query = %p.query, user = %p.user,
                "could not remove superseded result files; the next evaluation will");
        }
    }
    Ok(Evaluation::Done {
        changed_rows: merged.changed.num_rows(),
        events: events.len(),
    })
}

const DAY: i64 = crate::engine::time::MICROS_PER_DAY;

/// The days a whole evaluation re-runs: from the user's first stored row of a dependency to
/// today.
async fn whole_days(
    health: &HealthStore,
    query: &StoredQuery,
    user: &User,
    shape: &Shape,
    now: DateTime<Utc>,
) -> Result<(i64, i64), ContinuousError> {
    let today = now.timestamp_micros();
    let paths: Vec<String> = serde_json::from_str(&query.resource_dependencies)
        .map_err(|e| ContinuousError::Table(format!("stored dependencies: {e}")))?;
    let mut span: Option<(i64, i64)> = None;
    for dataset in paths.iter().filter_map(|p| Dataset::from_path(p)) {
        for e in health.extents(user.team_id, user.id, dataset).await? {
            span = Some(span.map_or((e.start, e.end), |(s, t)| (s.min(e.start), t.max(e.end))));
        }
    }
    let (start, end) = span.unwrap_or((today, today));
    Ok(shape.days((start, end.max(today))))
}

/// The `continuous_query.result_table.changed` events of `changed` rows, split so no event
/// carries more than [`CELLS_PER_EVENT`] cells; none when no row changed.
fn changed_events(
    query: &StoredQuery,
    user: &User,
    changed: &datafusion::arrow::array::RecordBatch,
    engine: &Engine,
) -> Result<Vec<Event>, ContinuousError> {
    let columns = changed.num_columns().max(1);
    let per_event = (CELLS_PER_EVENT / columns).max(1);
    let mut events = Vec::new();
    let mut offset = 0;
    while offset < changed.num_rows() {
        let len = per_event.min(changed.num_rows() - offset);
        let table = table::to_json(&changed.slice(offset, len), engine.limits())?;
        events.push(Event::new(
            EventType::ContinuousQueryChanged,
            Some(EventUser::of(user)),
            &QueryChanged::of(query, &table),
        ));
        offset += len;
    }
    Ok(events)
}

/// Ends the open task as `skipped` (or records a skipped run when none is open).
async fn finish_skipped(
    meta: &MetadataStore,
    p: Payload,
    now: DateTime<Utc>,
    why: &'static str,
) -> Result<Evaluation, ContinuousError> {
    let mut conn = meta.writer().await?;
    if let Some(task) = rows::open_task(&mut conn, p.query, p.user).await? {
        rows::set_task(
            &mut conn,
            task.id,
            "skipped",
            Some(now),
            Some(now),
            Some(why),
        )
        .await?;
    }
    Ok(Evaluation::Skipped(why))
}

/// The `continuous.evaluate` handler.
#[derive(Clone)]
pub struct Evaluator {
    health: HealthStore,
    engine: Engine,
}

impl Evaluator {
    /// A handler reading and writing `health`, running queries on `engine`.
    pub fn new(health: HealthStore, engine: Engine) -> Self {
        Evaluator { health, engine }
    }
}

#[async_trait::async_trait]
impl JobHandler for Evaluator {
    fn kind(&self) -> &'static str {
        KIND
    }

    type Payload = Payload;

    async fn run(&self, ctx: &JobContext, p: Payload) -> Result<Outcome, JobError> {
        match evaluate(&ctx.meta, &self.health, &self.engine, p, ctx.now()).await {
            Ok(Evaluation::Wait(at)) => Ok(Outcome::RetryAt(at)),
            Ok(_) => Ok(Outcome::Done),
            Err(e) => {
                let details = e.to_string();
                if let Ok(mut conn) = ctx.meta.writer().await
                    && let Ok(Some(task)) = rows::open_task(&mut conn, p.query, p.user).await
                {
                    let now = Some(ctx.now());
                    let _ = rows::set_task(&mut conn, task.id, "error", None, now, Some(&details))
                        .await;
                }
                Err(match e {
                    ContinuousError::Invalid(_) | ContinuousError::Table(_) => {
                        JobError::Permanent(details)
                    }
                    _ => JobError::Retry(details),
                })
            }
        }
    }
}
