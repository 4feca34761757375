//! Team queries (`analytics.md` §5) on the engine: one request over many users, run user by
//! user and combined. The caller (`crate::team`) loads each user's data and hands it to a
//! [`Runner`] (a few users at once), keeps each user's part with [`TeamRun::keep`], and
//! [`TeamRun::finish`] combines. A user's inputs are released once its part has run, so a
//! team request holds the data of the users in flight plus what every user contributes to the
//! answer, all charged to the request's one memory pool.
//!
//! Semantics: the team answer is what running the per-user query for each user and combining
//! would answer. A query that groups by a `{"user": ...}` key is the per-user query (its user
//! keys removed) run for each user, its answers stacked with the user's identifier as the key
//! and sorted by the keys in their order: ALIGN, derived tables, the time-bucket operator,
//! everything the per-user endpoint does applies as it is. A query without a user key
//! aggregates across users: each user contributes the rows its per-user query would aggregate
//! (window, `where`, provider priority and floating time all per user), and one aggregate over
//! all of them answers, so every function is exact across users (`plan/team.rs`).
//!
//! Decisions where the spec is silent:
//! - Provider priority applies to a team query exactly when it applies to the per-user query
//!   (its `group_by` without the user keys): a query grouped by user alone takes every source,
//!   as the per-user query without `group_by` does.
//! - A team query aggregates: a row-level query (no `group_by`, no aggregate) is a 422 (rows
//!   are listed per user, or through Flight SQL).
//! - ALIGN fills one user's gaps: a team query that aligns needs a user key (a 422 names it);
//!   carrying across users' buckets would mix one user's values into another's gaps.
//! - `oldest`/`newest` across users compare floating index times (each user's local time),
//!   then ingestion times, as they do within one user.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::catalog::MemTable;
use datafusion::datasource::provider_as_source;
use datafusion::execution::memory_pool::MemoryPool;
use datafusion::execution::session_state::SessionState;
use datafusion::logical_expr::LogicalPlan;

use super::budget::Budget;
use super::execute::{
    CellCap, Inputs, QueryResult, RequestSession, classify, prepare_in, request_pool,
};
use super::lang::request::{GroupBy, Query, SelectItem, SelectKind, UserKey, ValidRequest};
use super::plan::catalog::{Catalog, UserContext};
use super::plan::team;
use super::stored::StoredBatches;
use super::task::AbortOnDrop;
use super::{EngineError, Limits, OutputFormat, compile};
use crate::loc;
use crate::validation::read::at;
use crate::validation::{Invalid, Violation};

/// A validated team request, split into what each user runs and how the answers combine.
#[derive(Debug, Clone)]
pub struct TeamRequest {
    /// What each user runs: the request without its user keys, every group key selected.
    per_user: ValidRequest,
    /// The queries as sent, for their output names.
    queries: Vec<Query>,
    /// Per query, how the users' parts combine.
    shapes: Vec<Shape>,
}

/// How one query's per-user parts combine.
#[derive(Debug, Clone)]
enum Shape {
    /// Split by user: each user's answer, with the user keys (`Some`) among the group keys.
    ByUser(Vec<Option<UserKey>>),
    /// Across users: each user's chosen rows, aggregated together.
    Across,
}

impl TeamRequest {
    /// Splits a request parsed by
    /// [`parse_team_request`](super::lang::parse::parse_team_request); a query a team cannot
    /// run (row-level, or aligned without a user key) is a 422 at that query.
    pub fn new(request: ValidRequest) -> Result<TeamRequest, Invalid> {
        let mut out = Vec::new();
        let mut per_user = request.clone();
        let mut shapes = Vec::new();
        for (i, q) in request.queries.iter().enumerate() {
            let loc = loc!["body", "queries", i];
            let slots: Vec<Option<UserKey>> = q
                .group_by
                .iter()
                .map(|g| match g {
                    GroupBy::User(k) => Some(*k),
                    _ => None,
                })
                .collect();
            if !q.aggregates() {
                out.push(Violation::value(
                    at(&loc, "select"),
                    "a team query aggregates: give it a group_by or aggregate its select \
                     items (one user's rows are listed by /aggregate/v1/user/{user_id}/query)",
                ));
            } else if slots.iter().all(Option::is_none) {
                if q.align.is_some() {
                    out.push(Violation::value(
                        at(&loc, "align"),
                        "align fills each user's gaps: a team query that aligns needs a \
                         {\"user\": \"user_id\"} (or \"client_user_id\") group key",
                    ));
                }
                shapes.push(Shape::Across);
            } else {
                per_user.queries[i] = without_user_keys(q, &slots);
                shapes.push(Shape::ByUser(slots));
            }
        }
        if !out.is_empty() {
            return Err(Invalid(out));
        }
        Ok(TeamRequest {
            per_user,
            queries: request.queries,
            shapes,
        })
    }

    /// What each user runs: load its inputs with [`required_inputs`](super::required_inputs)
    /// of this request.
    pub fn per_user(&self) -> &ValidRequest {
        &self.per_user
    }
}

/// The per-user query of a query split by user: its other group keys, each selected as
/// `__k{i}` (`i` its place among all the keys), and its aggregates as `__r{j}`.
fn without_user_keys(q: &Query, slots: &[Option<UserKey>]) -> Query {
    let mut group_by = Vec::new();
    let mut select = Vec::new();
    for (i, g) in q.group_by.iter().enumerate() {
        if slots[i].is_none() {
            select.push(SelectItem {
                name: format!("__k{i}"),
                kind: SelectKind::GroupKey(group_by.len()),
            });
            group_by.push(g.clone());
        }
    }
    for (j, item) in q.select.iter().enumerate() {
        if let SelectKind::Aggregate(..) = item.kind {
            select.push(SelectItem {
                name: format!("__r{j}"),
                kind: item.kind.clone(),
            });
        }
    }
    Query {
        source: q.source.clone(),
        select,
        group_by,
        filter: q.filter.clone(),
        align: q.align,
    }
}

/// A user as a team answer's user keys name it.
#[derive(Debug, Clone, Copy)]
pub struct Member<'a> {
    /// wearhouse's id.
    pub user_id: &'a str,
    /// The team's id.
    pub client_user_id: Option<&'a str>,
}

/// One team request in progress: every user's part so far, held against the request's pool.
pub struct TeamRun {
    runner: Runner,
    held: Budget,
    /// Per query: every user's part so far.
    parts: Vec<Vec<RecordBatch>>,
    /// A JSON answer's cell limit per query; none for Parquet.
    max_cells: Option<usize>,
}

/// What runs one user's part of a team request: cheap to clone, so several users' parts can
/// run at once ([`TeamRun::runner`]).
#[derive(Clone)]
pub struct Runner {
    state: Arc<SessionState>,
    handle: tokio::runtime::Handle,
    limits: Limits,
    request: Arc<TeamRequest>,
    pool: Arc<dyn MemoryPool>,
    /// Per query: the parts' schema (every field nullable).
    schemas: Arc<Vec<SchemaRef>>,
}

/// One user's part of every query of a team request ([`Runner::run`]).
#[derive(Debug)]
pub struct UserPart(Vec<Vec<RecordBatch>>);

impl TeamRun {
    pub(super) fn new(
        state: Arc<SessionState>,
        handle: tokio::runtime::Handle,
        limits: Limits,
        request: &TeamRequest,
        format: OutputFormat,
    ) -> Result<TeamRun, EngineError> {
        // The parts' schemas, from the plans over no data: known even for a team of no users.
        let empty = Catalog::new(UserContext::default(), HashMap::new())?;
        let schemas = (0..request.queries.len())
            .map(|i| part_schema(request, i, &empty))
            .collect::<Result<Vec<_>, EngineError>>()?;
        let pool = request_pool(&limits);
        Ok(TeamRun {
            held: Budget::new(&pool),
            parts: vec![Vec::new(); schemas.len()],
            max_cells: match format {
                OutputFormat::Json => Some(limits.max_json_cells),
                OutputFormat::ParquetTar => None,
            },
            runner: Runner {
                state,
                handle,
                limits,
                request: Arc::new(request.clone()),
                pool,
                schemas: Arc::new(schemas),
            },
        })
    }

    /// What runs a user's part; parts run at once draw on the same memory pool.
    pub fn runner(&self) -> Runner {
        self.runner.clone()
    }

    /// Keeps a user's part for the answer, charged to the request's pool.
    pub fn keep(&mut self, part: UserPart) -> Result<(), EngineError> {
        for (kept, batches) in self.parts.iter_mut().zip(part.0) {
            self.held
                .charge(&batches)
                .map_err(|e| classify(e, &self.runner.limits))?;
            kept.extend(batches);
        }
        Ok(())
    }

    /// Combines every user's parts into the answer, one result per query; a JSON answer
    /// stops at the cell limit as a per-user one does.
    pub async fn finish(self) -> Result<Vec<QueryResult>, EngineError> {
        let TeamRun {
            runner,
            held,
            parts,
            max_cells,
        } = self;
        let Runner {
            state,
            handle,
            limits,
            request,
            pool,
            schemas,
        } = runner;
        let task = async move {
            let session = RequestSession::new(&state, StoredBatches::default(), pool);
            let mut results = Vec::with_capacity(parts.len());
            for (i, batches) in parts.into_iter().enumerate() {
                let schema = schemas[i].clone();
                let table = MemTable::try_new(schema, vec![batches])
                    .map_err(|e| EngineError::internal("team query parts", e))?;
                let input = provider_as_source(Arc::new(table));
                let q = &request.queries[i];
                let plan = match request.shapes[i] {
                    Shape::ByUser(_) => team::by_user(q, input)?,
                    Shape::Across => team::across(q, input)?,
                };
                let cap = max_cells.map(|limit| CellCap { query: i, limit });
                let out = Arc::new(plan.schema().as_arrow().clone());
                let batches = session
                    .run(&plan, &limits, cap)
                    .await?
                    .batches
                    .into_iter()
                    .filter(|b| b.num_rows() > 0)
                    .map(|b| b.with_schema(out.clone()))
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|e| EngineError::internal("team result schema", e))?;
                results.push(QueryResult {
                    schema: out,
                    batches,
                });
                tokio::task::yield_now().await;
            }
            drop(held);
            Ok::<_, EngineError>(results)
        };
        let span = tracing::info_span!("team.combine");
        AbortOnDrop(handle.spawn(tracing::Instrument::instrument(task, span)))
            .await
            .map_err(|e| EngineError::internal("team query task", e))?
    }
}

impl Runner {
    /// Runs `member`'s part of every query over its `inputs` (its settings in `ctx`) on the
    /// engine's runtime; the inputs are released when it returns. Dropping the future stops
    /// the work.
    pub async fn run(
        &self,
        member: Member<'_>,
        ctx: &UserContext,
        inputs: Inputs,
    ) -> Result<UserPart, EngineError> {
        let (catalog, session, inputs_held) =
            prepare_in(&self.state, ctx, inputs, &self.limits, self.pool.clone())?;
        let (request, limits) = (self.request.clone(), self.limits.clone());
        let span = tracing::info_span!("team.user", user_id = member.user_id);
        let task = async move {
            let mut parts = Vec::with_capacity(request.queries.len());
            for i in 0..request.queries.len() {
                let plan = part_plan(&request, i, &catalog)?;
                parts.push(session.run(&plan, &limits, None).await?.batches);
                tokio::task::yield_now().await;
            }
            drop(inputs_held);
            Ok::<_, EngineError>(parts)
        };
        let work = AbortOnDrop(
            self.handle
                .spawn(tracing::Instrument::instrument(task, span)),
        );
        let parts = work
            .await
            .map_err(|e| EngineError::internal("team query task", e))??;
        let mut out = Vec::with_capacity(parts.len());
        for (i, batches) in parts.into_iter().enumerate() {
            let schema = &self.schemas[i];
            let part = batches
                .into_iter()
                .filter(|b| b.num_rows() > 0)
                .map(|b| match &self.request.shapes[i] {
                    Shape::ByUser(slots) => with_user_keys(&b, slots, member, schema),
                    Shape::Across => RecordBatch::try_new(schema.clone(), b.columns().to_vec()),
                })
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| EngineError::internal("team query part", e))?;
            out.push(part);
        }
        Ok(UserPart(out))
    }
}

/// One user's plan for query `i`: the per-user query (split by user) or its chosen rows
/// (across users).
fn part_plan(
    request: &TeamRequest,
    i: usize,
    catalog: &Catalog,
) -> Result<LogicalPlan, EngineError> {
    match request.shapes[i] {
        Shape::ByUser(_) => compile(&request.per_user, i, catalog),
        Shape::Across => team::rows(&request.per_user, i, catalog),
    }
}

/// The schema of query `i`'s parts: the per-user plan's, every field nullable, with a string
/// column `__k{i}` for each user key in its place among the keys.
fn part_schema(request: &TeamRequest, i: usize, empty: &Catalog) -> Result<SchemaRef, EngineError> {
    let plan = part_plan(request, i, empty)?;
    let own = plan.schema().as_arrow().clone();
    let nullable = |f: &Field| Arc::new(f.clone().with_nullable(true));
    let fields: Vec<Arc<Field>> = match &request.shapes[i] {
        Shape::Across => own.fields().iter().map(|f| nullable(f)).collect(),
        Shape::ByUser(slots) => {
            let keys = slots.iter().enumerate().map(|(k, slot)| match slot {
                Some(_) => Ok(Arc::new(Field::new(
                    format!("__k{k}"),
                    DataType::Utf8,
                    true,
                ))),
                None => own
                    .field_with_name(&format!("__k{k}"))
                    .map(&nullable)
                    .map_err(|e| EngineError::internal("team query key", e)),
            });
            let results = own
                .fields()
                .iter()
                .filter(|f| f.name().starts_with("__r"))
                .map(|f| Ok(nullable(f)));
            keys.chain(results).collect::<Result<_, EngineError>>()?
        }
    };
    Ok(Arc::new(Schema::new(fields)))
}

/// One user's answer to a query split by user, with its user keys as columns.
fn with_user_keys(
    batch: &RecordBatch,
    slots: &[Option<UserKey>],
    member: Member<'_>,
    schema: &SchemaRef,
) -> Result<RecordBatch, datafusion::arrow::error::ArrowError> {
    let rows = batch.num_rows();
    let mut columns: Vec<ArrayRef> = Vec::with_capacity(schema.fields().len());
    let mut own = batch.columns().iter();
    for slot in slots {
        match slot {
            Some(UserKey::UserId) => {
                columns.push(Arc::new(StringArray::from(vec![
                    Some(member.user_id);
                    rows
                ])));
            }
            Some(UserKey::ClientUserId) => {
                columns.push(Arc::new(StringArray::from(vec![
                    member.client_user_id;
                    rows
                ])));
            }
            None => columns.extend(own.next().cloned()),
        }
    }
    columns.extend(own.cloned());
    RecordBatch::try_new(schema.clone(), columns)
}
