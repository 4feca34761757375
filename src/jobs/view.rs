//! What a team sees of its jobs (`GET /v2/team/jobs`): a page of its own jobs, newest first,
//! rendered without runner internals (lease owner, unique key).

use serde::Serialize;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::store::metadata::jobs::{Job, JobFilter, JobState, list_jobs};
use crate::store::metadata::{MetadataError, MetadataStore};
use crate::users::render_time;

/// A page of the team's jobs (`page` from 1) and the number it has in all, optionally only
/// those in `state` and of `kind`.
pub async fn team_jobs(
    meta: &MetadataStore,
    team: Uuid,
    state: Option<JobState>,
    kind: Option<String>,
    page: i64,
    size: i64,
) -> Result<(Vec<Job>, i64), MetadataError> {
    let filter = JobFilter {
        team: Some(team),
        state,
        kind,
    };
    let mut conn = meta.reader().await?;
    let offset = page.saturating_sub(1).saturating_mul(size);
    list_jobs(&mut conn, &filter, offset, size).await
}

/// One background job of the team.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = Job)]
pub struct JobView {
    /// Its id.
    pub id: Uuid,
    /// Its kind (`demo_backfill`, `webhook_delivery`, ...).
    pub kind: String,
    /// pending, running, succeeded or failed.
    pub state: String,
    /// What the job was given: its shape depends on `kind`, so it is free-form here.
    #[schema(value_type = Object)]
    pub payload: serde_json::Value,
    /// Attempts made.
    pub attempts: i64,
    /// Attempts allowed.
    pub max_attempts: i64,
    /// Next run.
    #[schema(format = DateTime)]
    pub run_at: String,
    /// The last failure.
    pub last_error: Option<String>,
    /// Created.
    #[schema(format = DateTime)]
    pub created_at: String,
    /// Last changed.
    #[schema(format = DateTime)]
    pub updated_at: String,
    /// Finished.
    #[schema(format = DateTime)]
    pub finished_at: Option<String>,
}

/// A job as the API shows it.
pub fn render(job: &Job) -> JobView {
    JobView {
        id: job.id,
        kind: job.kind.clone(),
        state: job.state.as_str().to_owned(),
        payload: job.payload.clone(),
        attempts: i64::from(job.attempts),
        max_attempts: i64::from(job.max_attempts),
        run_at: render_time(job.run_at),
        last_error: job.last_error.clone(),
        created_at: render_time(job.created_at),
        updated_at: render_time(job.updated_at),
        finished_at: job.finished_at.map(render_time),
    }
}
