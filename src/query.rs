//! Running an aggregate request for one user: validate, load the datasets the queries read
//! from the health store, execute on the engine, encode (answering the encoded bytes, in the
//! [`OutputFormat`] asked for). Shared by the HTTP endpoint and the
//! `wearhouse query` command so both answer identically.

use std::collections::HashMap;

use serde_json::Value;

use crate::engine::{
    self, Engine, EngineError, OutputFormat, QueryResult, UserContext, ValidRequest,
};
use crate::store::health::{HealthStore, StoreError};
use crate::store::metadata::{MetadataError, MetadataStore, User};

/// Failures of a query run, by phase.
#[derive(Debug, thiserror::Error)]
pub enum QueryError {
    /// Validation, execution or encoding in the engine.
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// Loading the user's data.
    #[error("health store: {0}")]
    Store(#[from] StoreError),
    /// Reading the team's priorities.
    #[error("metadata store: {0}")]
    Metadata(#[from] MetadataError),
}

/// Runs every query of `body` over `user`'s data on `engine`, within one deadline that covers
/// the whole request (loading, execution, encoding). Work still running at the deadline is
/// cancelled (the engine's task is aborted, not detached); an answer completed past it (work
/// that never yielded) is refused all the same, so the limit holds whatever the shape of the
/// work.
pub async fn run(
    meta: &MetadataStore,
    store: &HealthStore,
    user: &User,
    body: &Value,
    format: OutputFormat,
    engine: &Engine,
) -> Result<Vec<u8>, QueryError> {
    Ok(run_measured(meta, store, user, body, format, engine)
        .await?
        .output)
}

/// An answered request: the encoded answer, and the bytes of stored data loaded for it (what
/// it held against its memory limit before executing).
#[derive(Debug)]
pub struct Answered {
    /// The encoded answer.
    pub output: Vec<u8>,
    /// Bytes of the input batches loaded from the store.
    pub input_bytes: usize,
}

/// [`run`], answering what it loaded as well (for the metrics).
pub async fn run_measured(
    meta: &MetadataStore,
    store: &HealthStore,
    user: &User,
    body: &Value,
    format: OutputFormat,
    engine: &Engine,
) -> Result<Answered, QueryError> {
    let deadline = engine.deadline();
    within(
        engine,
        deadline,
        run_until(meta, store, user, body, format, engine, deadline),
    )
    .await
}

/// `work` until `deadline` (the engine's time limit from the request's start): cancelled at it,
/// and refused all the same when it completed past it (work that never yielded), so the limit
/// holds whatever the shape of the work. Team queries (`crate::team`) run under it too.
pub async fn within<T>(
    engine: &Engine,
    deadline: tokio::time::Instant,
    work: impl std::future::Future<Output = Result<T, QueryError>>,
) -> Result<T, QueryError> {
    let timeout = || {
        QueryError::Engine(EngineError::Timeout {
            seconds: engine.limits().timeout.as_secs(),
        })
    };
    let answered = tokio::time::timeout_at(deadline, work)
        .await
        .map_err(|_| timeout())??;
    if tokio::time::Instant::now() > deadline {
        return Err(timeout());
    }
    Ok(answered)
}

async fn run_until(
    meta: &MetadataStore,
    store: &HealthStore,
    user: &User,
    body: &Value,
    format: OutputFormat,
    engine: &Engine,
    deadline: tokio::time::Instant,
) -> Result<Answered, QueryError> {
    // Every rule is checked before any data is read.
    let request = engine::parse_request(body, engine.limits()).map_err(EngineError::from)?;
    let run = (engine, format, deadline);
    let (results, input_bytes) = execute(meta, store, user, &request, run).await?;
    // Encoding large answers is CPU work: the engine does it on the blocking pool.
    Ok(Answered {
        output: tracing::Instrument::instrument(
            engine::encode_blocking(results, format, engine.limits()),
            tracing::info_span!("query.encode"),
        )
        .await?,
        input_bytes,
    })
}

/// Loads what a validated request reads from `user`'s data and runs it on `engine`, answering
/// the result tables (not encoded, limited as an answer in `format` is) and the bytes of
/// stored data loaded, within `deadline`. "Now" (ALIGN's clamp)
/// is the wall clock. Continuous queries (`crate::continuous`) run through here too, so their
/// tables are exactly what the per-user endpoint answers.
pub async fn execute(
    meta: &MetadataStore,
    store: &HealthStore,
    user: &User,
    request: &ValidRequest,
    (engine, format, deadline): (&Engine, OutputFormat, tokio::time::Instant),
) -> Result<(Vec<QueryResult>, usize), QueryError> {
    let priorities = meta.team_priorities(user.team_id).await?;
    let ctx = user_context(user, priorities, chrono::Utc::now());
    let (inputs, held) = load(store, user, request, &ctx, engine.limits()).await?;
    let results = engine
        .execute(request, &ctx, inputs, deadline, format)
        .await?;
    Ok((results, held))
}

/// What the engine needs to know of `user` (its team's provider order in `team_priorities`),
/// for a request running at `now`.
pub fn user_context(
    user: &User,
    team_priorities: HashMap<String, Vec<String>>,
    now: chrono::DateTime<chrono::Utc>,
) -> UserContext {
    UserContext {
        fallback_time_zone: user.fallback_zone(),
        ingestion_start: user.ingestion_start,
        ingestion_end: user.ingestion_end,
        team_priorities,
        now: Some(now),
    }
}

/// Loads the datasets `request` reads of `user`'s data, answering them and the bytes they
/// hold. The loaded batches count against the request's memory limit: a request whose data
/// does not fit is refused at the dataset that crosses it, not after loading every dataset.
pub async fn load(
    store: &HealthStore,
    user: &User,
    request: &ValidRequest,
    ctx: &UserContext,
    limits: &engine::Limits,
) -> Result<(engine::Inputs, usize), QueryError> {
    let (mut inputs, mut held) = (HashMap::new(), engine::InputSize::default());
    for (dataset, window) in engine::required_inputs(request, ctx) {
        let batches = store
            .read(user.team_id, user.id, dataset, Some(window))
            .await?;
        let added = held.add(&batches, limits);
        tracing::debug!(?dataset, held = held.bytes(), "aggregate input loaded");
        added?;
        inputs.insert(dataset, batches);
    }
    Ok((engine::Inputs::stored(inputs), held.bytes()))
}
