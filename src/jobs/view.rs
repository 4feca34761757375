//! What a team sees of its jobs (`GET /v2/team/jobs`): a page of its own jobs, newest first,
//! rendered without runner internals (lease owner, unique key).

use serde_json::{Value, json};
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

/// A job as the API shows it.
pub fn render(job: &Job) -> Value {
    json!({
        "id": job.id,
        "kind": job.kind,
        "state": job.state.as_str(),
        "payload": job.payload,
        "attempts": job.attempts,
        "max_attempts": job.max_attempts,
        "run_at": render_time(job.run_at),
        "last_error": job.last_error,
        "created_at": render_time(job.created_at),
        "updated_at": render_time(job.updated_at),
        "finished_at": job.finished_at.map(render_time),
    })
}
