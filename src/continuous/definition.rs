//! What a team registers: the create body and its rules (the per-user endpoint's 422s, located
//! under `body.query` and `body.query_config`, plus the continuous rules of §4), the stored
//! [`Definition`], and the object the API shows.

use std::collections::HashMap;

use datafusion::arrow::datatypes::DataType;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use utoipa::ToSchema;
use uuid::Uuid;

use super::shape::Shape;
use crate::engine::{
    Engine, GroupBy, Inputs, OutputFormat, SelectKind, UserContext, ValidRequest, parse_request,
    required_inputs,
};
use crate::schema::Dataset;
use crate::store::metadata::continuous::{Progress, StoredQuery};
use crate::users::render_time;
use crate::validation::{Invalid, Loc, Violation};

/// The shortest gap between two evaluations a team may ask for.
pub const MIN_GAP_SECONDS: i64 = 1800;

/// `POST /aggregate/v1/continuous_query` (and its `validate` dry run, where `slug` and `title`
/// may be left out).
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct NewContinuousQuery {
    /// `^(?!.*--)(?!.*-$)(?!-.*$)[a-z0-9-]{1,128}$`, unique among the team's active queries.
    #[serde(default)]
    #[schema(min_length = 1, max_length = 128)]
    pub slug: Option<String>,
    /// 1 to 50 characters.
    #[serde(default)]
    #[schema(min_length = 1, max_length = 50)]
    pub title: Option<String>,
    /// One query of the aggregate language (`select`, `group_by`, `where`, `align`), with
    /// exactly one `date_trunc` and every group key selected.
    #[schema(value_type = Object)]
    pub query: Value,
    /// The request's `config` (`provider_priority_overrides`).
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub query_config: Option<Value>,
    /// When to evaluate.
    #[serde(default)]
    pub scheduling_preferences: Option<SchedulingPreferences>,
    /// What to announce.
    #[serde(default)]
    pub export_preferences: Option<ExportPreferences>,
}

/// `PATCH /aggregate/v1/continuous_query/{id_or_slug}`: title and scheduling only.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
pub struct PatchContinuousQuery {
    /// 1 to 50 characters.
    #[serde(default)]
    #[schema(min_length = 1, max_length = 50)]
    pub title: Option<String>,
    /// When to evaluate.
    #[serde(default)]
    pub scheduling_preferences: Option<SchedulingPreferences>,
}

/// When a user's table is re-evaluated.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct SchedulingPreferences {
    /// At least this many seconds (≥ 1800) between two evaluations of a user's table; null:
    /// as soon as a change arrives.
    #[serde(default)]
    #[schema(minimum = 1800)]
    pub minimum_gap_duration_second: Option<i64>,
}

/// Whether data events are sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct DataEvents {
    /// Send `continuous_query.result_table.changed` (default true).
    #[serde(default = "yes")]
    pub enabled: bool,
}

fn yes() -> bool {
    true
}

impl Default for DataEvents {
    fn default() -> Self {
        DataEvents { enabled: true }
    }
}

/// What is announced when a table changes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ExportPreferences {
    /// The changed rows as events.
    #[serde(default)]
    pub data_events: DataEvents,
    /// The changed rows as FHIR R4 Observations too, in `continuous_query.fhir_observations.changed`
    /// events (LOINC coded where a mapping exists; see `continuous::fhir`). Default false.
    #[serde(default)]
    pub fhir_observations: bool,
}

/// What is stored of a registered query: what the team gave.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Definition {
    /// The query object.
    pub query: Value,
    /// The request `config`.
    #[serde(default)]
    pub query_config: Option<Value>,
    /// Scheduling.
    #[serde(default)]
    pub scheduling_preferences: SchedulingPreferences,
    /// Exports.
    #[serde(default)]
    pub export_preferences: ExportPreferences,
}

impl Definition {
    /// The per-user request of this query over `[first_day, end_day)` (days since 1970-01-01,
    /// `end_day > first_day + 1`).
    pub fn request(
        &self,
        (first_day, end_day): (i64, i64),
        engine: &Engine,
    ) -> Result<ValidRequest, Invalid> {
        let anchor = day_string(end_day - 1);
        let past = end_day - 1 - first_day;
        let mut body = json!({
            "timeframe": {"type": "relative", "anchor": anchor, "past": {"value": past, "unit": "day"}},
            "queries": [self.query],
        });
        if let Some(config) = &self.query_config {
            body["config"] = config.clone();
        }
        parse_request(&body, engine.limits()).map_err(relocate)
    }

    /// The minimum gap between two evaluations.
    pub fn gap(&self) -> chrono::Duration {
        chrono::Duration::seconds(
            self.scheduling_preferences
                .minimum_gap_duration_second
                .unwrap_or(0),
        )
    }
}

fn day_string(day: i64) -> String {
    chrono::DateTime::from_timestamp(day.saturating_mul(86_400), 0)
        .map(|t| t.date_naive().to_string())
        .unwrap_or_default()
}

/// The engine's locations (`body.queries.0...`, `body.config...`) as the create body has them.
fn relocate(mut invalid: Invalid) -> Invalid {
    for v in &mut invalid.0 {
        let loc = std::mem::take(&mut v.loc);
        let key = |l: &Loc, k: &str| matches!(l, Loc::Key(s) if s == k);
        v.loc = match loc.as_slice() {
            [b, q, Loc::Index(0), rest @ ..] if key(b, "body") && key(q, "queries") => {
                [vec![b.clone(), Loc::from("query")], rest.to_vec()].concat()
            }
            [b, c, rest @ ..] if key(b, "body") && key(c, "config") => {
                [vec![b.clone(), Loc::from("query_config")], rest.to_vec()].concat()
            }
            _ => loc,
        };
    }
    invalid
}

/// A create body that passed every rule, with what is derived from it.
#[derive(Debug, Clone)]
pub struct Validated {
    /// What is stored.
    pub definition: Definition,
    /// The result table's columns and their types, in select order.
    pub result_table_schema: Map<String, Value>,
    /// The stored datasets it reads.
    pub dependencies: Vec<Dataset>,
}

fn slug_ok(slug: &str) -> bool {
    (1..=128).contains(&slug.len())
        && slug
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !slug.starts_with('-')
        && !slug.ends_with('-')
        && !slug.contains("--")
}

/// Checks a title (1 to 50 characters, as the OpenAPI document says).
pub(super) fn check_title(title: &str, out: &mut Vec<Violation>) {
    let n = title.chars().count();
    if n == 0 || n > 50 {
        out.push(
            Violation::new(
                crate::loc!["body", "title"],
                "string_too_long",
                "title must be 1 to 50 characters",
            )
            .with_input(json!(title)),
        );
    }
}

/// Checks scheduling preferences (a gap of at least 1800 s, or null).
pub(super) fn check_scheduling(s: &SchedulingPreferences, out: &mut Vec<Violation>) {
    if let Some(gap) = s.minimum_gap_duration_second
        && gap < MIN_GAP_SECONDS
    {
        out.push(
            Violation::value(
                crate::loc![
                    "body",
                    "scheduling_preferences",
                    "minimum_gap_duration_second"
                ],
                format!("minimum_gap_duration_second must be at least {MIN_GAP_SECONDS}, or null"),
            )
            .with_input(json!(gap)),
        );
    }
}

/// Validates a create body; `named`: slug and title are required (create), not only checked
/// when present (validate).
pub async fn validate(
    engine: &Engine,
    body: &NewContinuousQuery,
    named: bool,
) -> Result<Validated, Invalid> {
    let mut out = Vec::new();
    match &body.slug {
        Some(slug) if !slug_ok(slug) => out.push(
            Violation::value(
                crate::loc!["body", "slug"],
                "slug must be 1 to 128 of a-z, 0-9 and '-', not starting or ending with '-' \
                 and without '--'",
            )
            .with_input(json!(slug)),
        ),
        None if named => out.push(Violation::new(
            crate::loc!["body", "slug"],
            "missing",
            "slug is required",
        )),
        _ => {}
    }
    match &body.title {
        Some(title) => check_title(title, &mut out),
        None if named => out.push(Violation::new(
            crate::loc!["body", "title"],
            "missing",
            "title is required",
        )),
        None => {}
    }
    let scheduling = body.scheduling_preferences.unwrap_or_default();
    check_scheduling(&scheduling, &mut out);
    let definition = Definition {
        query: body.query.clone(),
        query_config: body.query_config.clone(),
        scheduling_preferences: scheduling,
        export_preferences: body.export_preferences.unwrap_or_default(),
    };
    // Any window does for the rules; the schema is the engine's over no data.
    let request = match definition.request((0, 2), engine) {
        Ok(request) => request,
        Err(Invalid(mut violations)) => {
            out.append(&mut violations);
            return Err(Invalid(out));
        }
    };
    if let Err(Invalid(mut v)) = continuous_rules(&request) {
        out.append(&mut v);
        return Err(Invalid(out));
    }
    if !out.is_empty() {
        return Err(Invalid(out));
    }
    let (result_table_schema, dependencies) = derive(engine, &request).await.map_err(|e| {
        Invalid(vec![Violation::value(
            crate::loc!["body", "query"],
            format!("the query cannot be planned: {e}"),
        )])
    })?;
    Ok(Validated {
        definition,
        result_table_schema,
        dependencies,
    })
}

/// The shape of a stored definition (validated when it was created).
pub fn shape_of(engine: &Engine, definition: &Definition) -> Result<Shape, super::ContinuousError> {
    let broken =
        |e: String| super::ContinuousError::Table(format!("stored query no longer valid: {e}"));
    let request = definition
        .request((0, 2), engine)
        .map_err(|e| broken(e.to_string()))?;
    continuous_rules(&request).map_err(|v| broken(v.to_string()))
}

/// The continuous rules of §4: exactly one `date_trunc`, every group key selected.
fn continuous_rules(request: &ValidRequest) -> Result<Shape, Invalid> {
    let Some(query) = request.queries.first() else {
        return Err(Violation::value(crate::loc!["body", "query"], "a query is required").into());
    };
    let truncs: Vec<(usize, crate::engine::Period)> = query
        .group_by
        .iter()
        .enumerate()
        .filter_map(|(i, g)| match g {
            GroupBy::DateTrunc(p) => Some((i, *p)),
            _ => None,
        })
        .collect();
    let [(bucket_key, period)] = truncs.as_slice() else {
        return Err(Violation::value(
            crate::loc!["body", "query", "group_by"],
            format!(
                "a continuous query groups by exactly one date_trunc; this one has {}",
                truncs.len()
            ),
        )
        .into());
    };
    let key_column = |i: usize| {
        query.select.iter().find_map(|s| match s.kind {
            SelectKind::GroupKey(k) if k == i => Some(s.name.clone()),
            _ => None,
        })
    };
    let mut keys = Vec::new();
    for i in 0..query.group_by.len() {
        match key_column(i) {
            Some(name) => keys.push(name),
            None => {
                return Err(Violation::value(
                    crate::loc!["body", "query", "select"],
                    format!(
                        "a continuous query selects every group key (add {{\"group_key\": \"*\"}}); group key {i} is not selected"
                    ),
                )
                .into());
            }
        }
    }
    let bucket_column = key_column(*bucket_key).unwrap_or_default();
    Ok(Shape::new(query, *period, bucket_column, keys))
}

/// The result schema (run over no data) and the datasets the query reads.
async fn derive(
    engine: &Engine,
    request: &ValidRequest,
) -> Result<(Map<String, Value>, Vec<Dataset>), crate::engine::EngineError> {
    let ctx = UserContext {
        fallback_time_zone: None,
        ingestion_start: None,
        ingestion_end: None,
        team_priorities: HashMap::new(),
        now: None,
    };
    let dependencies: Vec<Dataset> = required_inputs(request, &ctx)
        .into_iter()
        .map(|(d, _)| d)
        .collect();
    let inputs = dependencies.iter().map(|d| (*d, Vec::new())).collect();
    let results = engine
        .execute(
            request,
            &ctx,
            Inputs::new(inputs),
            engine.deadline(),
            OutputFormat::ParquetTar,
        )
        .await?;
    let schema = results
        .first()
        .map(|r| {
            r.schema
                .fields()
                .iter()
                .map(|f| (f.name().clone(), json!(type_name(f.data_type()))))
                .collect()
        })
        .unwrap_or_default();
    Ok((schema, dependencies))
}

/// A column type as `result_table_schema` names it.
fn type_name(t: &DataType) -> String {
    match t {
        DataType::Timestamp(_, None) => "datetime".to_owned(),
        DataType::Timestamp(_, Some(_)) => "datetime_utc".to_owned(),
        DataType::Date32 | DataType::Date64 => "date".to_owned(),
        DataType::Int64 | DataType::Int32 => "int64".to_owned(),
        DataType::Float64 | DataType::Float32 => "float64".to_owned(),
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => "string".to_owned(),
        DataType::Boolean => "bool".to_owned(),
        other => other.to_string().to_lowercase(),
    }
}

/// The name a dependency has in `resource_dependencies`.
pub(super) fn dependency_name(d: Dataset) -> &'static str {
    match d {
        Dataset::Table(t) => t.name(),
        Dataset::Timeseries(r) => r.name,
    }
}

/// A continuous query as the API shows it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ContinuousQuery {
    /// Its id.
    pub id: Uuid,
    /// `active` or `archived`.
    pub status: String,
    /// Its slug.
    pub slug: String,
    /// Its title.
    pub title: String,
    /// The owning team.
    pub team_id: Uuid,
    /// The query.
    #[schema(value_type = Object)]
    pub query: Value,
    /// The request config.
    #[schema(value_type = Option<Object>)]
    pub query_config: Option<Value>,
    /// Scheduling.
    pub scheduling_preferences: SchedulingPreferences,
    /// The result table's columns and types, in order.
    #[schema(value_type = Object)]
    pub result_table_schema: Value,
    /// The resources it reads.
    pub resource_dependencies: Vec<String>,
    /// Exports.
    pub export_preferences: ExportPreferences,
    /// Created.
    #[schema(format = DateTime)]
    pub created_at: String,
    /// Last changed.
    #[schema(format = DateTime)]
    pub updated_at: String,
    /// How far evaluation has come over the team's users (an addition to the reference).
    pub evaluation: EvaluationProgress,
}

/// Evaluation progress over the team's users.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
pub struct EvaluationProgress {
    /// Users the query was scheduled for.
    pub users: i64,
    /// Users evaluated at least once.
    pub evaluated: i64,
    /// Users with changes waiting for evaluation.
    pub pending: i64,
}

/// A stored query as the API shows it.
pub fn render(
    q: &StoredQuery,
    progress: Progress,
) -> Result<ContinuousQuery, super::ContinuousError> {
    let corrupt = |what: &str| super::ContinuousError::Table(format!("stored {what} of {}", q.id));
    let definition: Definition =
        serde_json::from_str(&q.definition).map_err(|_| corrupt("definition"))?;
    let deps: Vec<String> =
        serde_json::from_str(&q.resource_dependencies).map_err(|_| corrupt("dependencies"))?;
    Ok(ContinuousQuery {
        id: q.id,
        status: q.status.clone(),
        slug: q.slug.clone(),
        title: q.title.clone(),
        team_id: q.team_id,
        query: definition.query,
        query_config: definition.query_config,
        scheduling_preferences: definition.scheduling_preferences,
        result_table_schema: serde_json::from_str(&q.result_table_schema)
            .map_err(|_| corrupt("schema"))?,
        resource_dependencies: deps
            .iter()
            .filter_map(|p| Dataset::from_path(p).map(dependency_name))
            .map(str::to_owned)
            .collect(),
        export_preferences: definition.export_preferences,
        created_at: render_time(q.created_at),
        updated_at: render_time(q.updated_at),
        evaluation: EvaluationProgress {
            users: progress.users,
            evaluated: progress.evaluated,
            pending: progress.pending,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_follow_the_pattern() {
        for ok in ["a", "daily-sleep", "a1-b2", &"x".repeat(128)] {
            assert!(slug_ok(ok), "{ok}");
        }
        for bad in ["", "-a", "a-", "a--b", "A", "a_b", "a b", &"x".repeat(129)] {
            assert!(!slug_ok(bad), "{bad}");
        }
    }

    #[test]
    fn engine_locations_are_moved_under_query() {
        let invalid = Invalid(vec![
            Violation::value(crate::loc!["body", "queries", 0, "select", 1], "x"),
            Violation::value(
                crate::loc!["body", "config", "provider_priority_overrides"],
                "y",
            ),
        ]);
        let moved = relocate(invalid);
        assert_eq!(moved.0[0].loc, crate::loc!["body", "query", "select", 1]);
        assert_eq!(
            moved.0[1].loc,
            crate::loc!["body", "query_config", "provider_priority_overrides"]
        );
    }
}
