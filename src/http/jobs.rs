//! `GET /v2/team/jobs`: the team's own background jobs, newest first, page-numbered
//! (`page` ≥ 1, `size` 1–100), optionally only one `state` (`pending`, `running`, `succeeded`,
//! `failed`; anything else is a 422) and one `kind`. System jobs (compaction) and other teams'
//! jobs never show.

use axum::Json;
use axum::extract::State;
use serde_json::Value;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::AppState;
use super::error::ApiError;
use super::extract::{AuthTeam, IntParam, QueryParams};
use crate::jobs::{JobState, view};
use crate::validation::Violation;

/// `GET /v2/team/jobs`'s page number.
pub(crate) const PAGE: IntParam = IntParam::new("page", 1, 1, i32::MAX as i64);
/// `GET /v2/team/jobs`'s page size.
pub(crate) const SIZE: IntParam = IntParam::new("size", 50, 1, 100);

/// Documented routes of this module.
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list_jobs))
}

fn state_param(query: &QueryParams) -> Result<Option<JobState>, ApiError> {
    let Some(raw) = query.get("state") else {
        return Ok(None);
    };
    raw.parse().map(Some).map_err(|()| {
        let names: Vec<&str> = JobState::ALL.iter().map(|s| s.as_str()).collect();
        ApiError::invalid(
            Violation::value(
                crate::loc!["query", "state"],
                format!(
                    "unknown state {raw:?}; expected one of: {}",
                    names.join(", ")
                ),
            )
            .with_input(Value::from(raw)),
        )
    })
}

/// The team's jobs.
#[utoipa::path(get, path = "/v2/team/jobs", tag = "team",
    params(("state" = Option<String>, Query, description = "pending, running, succeeded or failed"),
           ("kind" = Option<String>, Query, description = "only jobs of this kind"),
           ("page" = Option<i64>, Query, description = "from 1, default 1"),
           ("size" = Option<i64>, Query, description = "1 to 100, default 50")),
    responses((status = 200, description = "A page of the team's jobs", body = super::models_events::Jobs),
              (status = 422, description = "Validation error", body = super::models::ValidationError)),
    security(("api_key" = [])))]
async fn list_jobs(
    team: AuthTeam,
    State(state): State<AppState>,
    query: QueryParams,
) -> Result<Json<super::models_events::Jobs>, ApiError> {
    let job_state = state_param(&query)?;
    let page = query.read(&PAGE)?;
    let size = query.read(&SIZE)?;
    let kind = query.get("kind").map(str::to_owned);
    let (jobs, total) =
        view::team_jobs(&state.meta, team.0.id, job_state, kind, page, size).await?;
    Ok(Json(super::models_events::Jobs {
        jobs: jobs.iter().map(view::render).collect(),
        total,
        page,
        size,
        pages: (total + size - 1) / size,
    }))
}
