//! The HTTP API (axum): the only module that knows about HTTP. [`router`] builds the whole
//! service from an [`AppState`]; tests drive it with `tower::ServiceExt::oneshot`, `serve` binds
//! it to a socket.
//!
//! Cross-cutting behaviour, in the order a request meets it:
//! 1. trailing slashes are trimmed before routing, so `/v2/user` and `/v2/user/` are one endpoint;
//! 2. the request id is taken from `x-request-id` or generated, and echoed on the response;
//! 3. a panic becomes a 500 with the generic body (never a dropped connection);
//! 4. each request runs in an `http.request` span carrying its id, so every log line and span
//!    below it (store, engine, spawned tasks, jobs it enqueues) names the request (exported
//!    with `serve --otlp-endpoint`, see `crate::telemetry`), and is logged once (method, route
//!    template, status, duration, team id);
//! 5. a 500 is logged with its cause and answered with `{"detail", "request_id"}`;
//! 6. a URI longer than [`MAX_URI_BYTES`] is refused with a JSON 414 before routing;
//! 7. the answer is counted and timed in the metrics by route template (`/metrics`), and carries
//!    the `x-ratelimit-*` headers when its key was charged (`rate_limit.rs`).

/// A getter of a user's records in a date range (`start_date`, `end_date`, `provider`): the
/// summary getters ([`data`]) and the raw ones ([`raw`]) share its parameters and errors, and
/// differ in what they answer (`$answer`, typed `$body` in the OpenAPI document) and in the
/// function that reads it (`$read(&state, &user, $what, &query)`).
macro_rules! date_range_getter {
    ($fn:ident, $path:literal, $doc:expr, $answer:literal, $body:ty, $read:ident($what:expr)) => {
        #[doc = $doc]
        #[utoipa::path(get, path = $path, tag = "data",
            params(("user_id" = uuid::Uuid, Path),
                   ("start_date" = String, Query, description = "date (00:00:00) or date-time, UTC years 0000 to 9999"),
                   ("end_date" = Option<String>, Query, description = "date (23:59:59) or date-time, UTC years 0000 to 9999"),
                   ("provider" = Option<String>, Query, description = "a catalogue provider slug")),
            responses((status = 200, description = $answer, body = $body),
                      (status = 404, description = "User not found", body = models::ErrorDetail),
                      (status = 422, description = "Validation error (a date outside 0000-01-01..9999-12-31 too)", body = models::ValidationError),
                      (status = 504, description = "Not answered within the time limit; cancelled", body = models::ErrorDetail)),
            security(("api_key" = [])))]
        async fn $fn(
            State(state): State<AppState>,
            TeamUser(user): TeamUser,
            query: QueryParams,
        ) -> Result<Json<Value>, ApiError> {
            data::within(deadline(&state), $read(&state, &user, $what, &query)).await
        }
    };
}

mod aggregate;
mod continuous;
mod data;
mod doc_rules;
pub mod error;
pub mod extract;
mod introspect;
mod jobs;
mod keys;
mod lab;
mod link;
mod meta;
mod metrics;
pub mod models;
pub mod models_events;
pub mod models_query;
pub mod models_raw;
mod notify;
mod notify_garmin;
mod notify_polar;
mod notify_strava;
mod rate_limit;
mod raw;
mod sessions;
mod stream;
mod team_profile;
mod teams;
mod timeseries;
mod unknown;
mod unserved;
mod users;
mod webhooks;

use std::sync::Arc;
use std::time::Instant;

use axum::Router;
use axum::body::Body;
use axum::extract::{MatchedPath, Request, State};
use axum::http::{HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use tower::Layer;
use tower_http::normalize_path::{NormalizePath, NormalizePathLayer};
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::trace::TraceLayer;
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;
use uuid::Uuid;

use crate::engine::{Engine, EngineError};
use crate::store::health::HealthStore;
use crate::store::metadata::MetadataStore;
use error::{ApiError, InternalCause};

/// Limits and switches of the HTTP layer.
#[derive(Debug, Clone)]
pub struct HttpConfig {
    /// Largest accepted request body, in bytes (default 16 MiB).
    pub body_limit: usize,
    /// Limits of aggregate queries (body size, counts, time, memory, JSON cells).
    pub query_limits: crate::engine::Limits,
    /// Caps of one timeseries getter answer (samples and bytes; further samples page by cursor).
    pub getter_limits: crate::render::PageLimits,
    /// Request budgets per API key, per team and for aggregate queries (default: none; `serve`
    /// sets them from its `--rate-limit-*` flags).
    pub rate_limits: crate::rate_limit::RateLimits,
    /// How long a deleted user can be restored (`POST /v2/user/undo_delete`) before its data is
    /// removed (default [`USER_UNDO_WINDOW`]; `serve --user-undo-window-secs`).
    pub user_undo_window: std::time::Duration,
    /// Team queries one team may run at once (default [`TEAM_QUERY_CONCURRENCY`]; `serve
    /// --team-query-concurrency`).
    pub team_query_concurrency: usize,
}

/// The default number of team queries one team may run at once: each may read every user's
/// data, so two keep a cohort's dashboard refresh going without one team filling the engine.
pub const TEAM_QUERY_CONCURRENCY: u64 = 2;

/// The default undo window of a user deletion: 7 days.
pub const USER_UNDO_WINDOW: std::time::Duration = std::time::Duration::from_secs(7 * 24 * 3600);

impl Default for HttpConfig {
    fn default() -> Self {
        HttpConfig {
            body_limit: 16 * 1024 * 1024,
            query_limits: crate::engine::Limits::default(),
            getter_limits: crate::render::PageLimits::default(),
            rate_limits: crate::rate_limit::RateLimits::default(),
            user_undo_window: USER_UNDO_WINDOW,
            team_query_concurrency: TEAM_QUERY_CONCURRENCY as usize,
        }
    }
}

/// What every handler can reach; cheap to clone.
#[derive(Clone)]
pub struct AppState {
    /// Teams, keys, users, connections.
    pub meta: MetadataStore,
    /// Health data.
    pub health: HealthStore,
    /// The aggregate query engine, built from `config.query_limits`.
    pub engine: Engine,
    /// HTTP limits.
    pub config: Arc<HttpConfig>,
    /// Which webhook URLs teams may register (`--webhook-allow-private`).
    pub webhooks: crate::events::UrlRules,
    /// The lab domain's shared state (patient service centres).
    pub lab: crate::lab::Lab,
    /// The key provider credentials are sealed with (`--secret-key`); without one, links that
    /// store credentials fail.
    pub secret: Option<crate::secret::SecretKey>,
    /// Linking's deployment settings (public URL, app URL, region).
    pub link: Arc<crate::link::LinkConfig>,
    /// The provider connectors pulls use (none until set: `app::open_state` sets every one,
    /// at the URLs the environment names).
    pub connectors: crate::sync::Connectors,
    /// The rate limiter's buckets, built from `config.rate_limits`.
    pub limiter: crate::rate_limit::Limiter,
    /// The metrics `/metrics` exposes (this service's own registry).
    pub metrics: crate::metrics::Metrics,
    /// The team queries running now, per team (their concurrency limit).
    pub team_queries: crate::team::Running,
}

impl AppState {
    /// The state of a service over these stores, with an engine built from the configuration's
    /// query limits.
    pub fn new(
        meta: MetadataStore,
        health: HealthStore,
        config: HttpConfig,
    ) -> Result<AppState, EngineError> {
        let limiter = crate::rate_limit::Limiter::new(config.rate_limits);
        let metrics = crate::metrics::Metrics::new();
        metrics.watch(health.clone(), limiter.clone());
        Ok(AppState {
            meta,
            health,
            engine: Engine::new(config.query_limits.clone())?,
            config: Arc::new(config),
            webhooks: crate::events::UrlRules::default(),
            lab: crate::lab::Lab::default(),
            secret: None,
            link: Arc::default(),
            connectors: crate::sync::Connectors::default(),
            limiter,
            metrics,
            team_queries: crate::team::Running::default(),
        })
    }

    /// The same state with these link settings.
    pub fn with_link_config(mut self, config: crate::link::LinkConfig) -> AppState {
        self.link = Arc::new(config);
        self
    }

    /// The same state with linking's public URL replaced (`serve` sets the bound address when
    /// `--public-url` is not given).
    pub fn with_public_url(mut self, public_url: &str) -> AppState {
        let mut link = (*self.link).clone();
        link.public_url = public_url.trim_end_matches('/').to_owned();
        self.link = Arc::new(link);
        self
    }

    /// The same state with these provider connectors.
    pub fn with_connectors(mut self, connectors: crate::sync::Connectors) -> AppState {
        self.connectors = connectors;
        self
    }

    /// The same state with this secret key.
    pub fn with_secret_key(mut self, key: crate::secret::SecretKey) -> AppState {
        self.secret = Some(key);
        self
    }

    /// The same state with these webhook URL rules.
    pub fn with_webhook_rules(mut self, rules: crate::events::UrlRules) -> AppState {
        self.webhooks = rules;
        self
    }

    /// Deletes a user softly, its removal due after the undo window (see
    /// [`crate::data::delete_user`]); answers whether a live user was deleted.
    pub async fn delete_user(&self, team: Uuid, user: Uuid) -> Result<bool, ApiError> {
        let window = self.config.user_undo_window;
        Ok(crate::data::delete_user(&self.meta, team, user, window).await?)
    }

    /// Restores a user deleted within the undo window (see [`crate::data::undo_delete`]).
    pub async fn undo_delete(
        &self,
        team: Uuid,
        who: &crate::store::metadata::deleted_users::UserRef,
    ) -> Result<crate::data::Undo, ApiError> {
        let window = self.config.user_undo_window;
        Ok(crate::data::undo_delete(&self.meta, team, who, window).await?)
    }
}

/// The OpenAPI document's frame; paths are added by the routers that serve them.
#[derive(OpenApi)]
#[openapi(
    info(title = "wearhouse", description = "Health-data service: users, provider links, normalised data, aggregate queries, lab testing."),
    modifiers(&SecurityAddon)
)]
struct ApiDoc;

struct SecurityAddon;

/// Documents the answers every operation can give besides its own: 401 and 429 (a rate limit,
/// with `Retry-After`) on every operation that takes the key, 404 on every one with a path
/// parameter, 422 (a malformed path, query or body), 413/414 (limits) and 500, each with its
/// body schema, unless the operation documents them itself.
fn add_common_errors(openapi: &mut utoipa::openapi::OpenApi) {
    use utoipa::openapi::path::{HttpMethod, Operation};
    use utoipa::openapi::{ContentBuilder, Ref, ResponseBuilder};
    let answer = |description: &str, schema: &str| {
        ResponseBuilder::new()
            .description(description)
            .content(
                "application/json",
                ContentBuilder::new()
                    .schema(Some(Ref::from_schema_name(schema)))
                    .build(),
            )
            .build()
    };
    let add = |op: &mut Operation, has_path_params: bool| {
        let secured = op.security.as_ref().is_some_and(|s| !s.is_empty());
        // Rate limits charge API keys only (not link tokens or link-code pushes).
        let api_key = utoipa::openapi::security::SecurityRequirement::new("api_key", [""; 0]);
        let keyed = op.security.as_ref().is_some_and(|s| s.contains(&api_key));
        let mut common = vec![
            ("413", "Body over the size limit", "ErrorDetail"),
            ("414", "Request URI over the limit", "ErrorDetail"),
            ("422", "Validation error", "ValidationError"),
            (
                "500",
                "A bug; the cause is logged under the request id",
                "InternalError",
            ),
        ];
        if secured {
            common.push(("401", "Missing or invalid API key", "ErrorDetail"));
        }
        if has_path_params {
            common.push(("404", "Not found (or another team's)", "ErrorDetail"));
        }
        for (status, description, schema) in common {
            op.responses
                .responses
                .entry(status.to_owned())
                .or_insert_with(|| answer(description, schema).into());
        }
        if keyed {
            op.responses
                .responses
                .entry("429".to_owned())
                .or_insert_with(|| rate_limit::openapi_response().into());
        }
    };
    for (path, item) in openapi.paths.paths.iter_mut() {
        let has_path_params = path.contains('{');
        for method in [
            HttpMethod::Get,
            HttpMethod::Post,
            HttpMethod::Put,
            HttpMethod::Patch,
            HttpMethod::Delete,
        ] {
            let op = match method {
                HttpMethod::Get => item.get.as_mut(),
                HttpMethod::Post => item.post.as_mut(),
                HttpMethod::Put => item.put.as_mut(),
                HttpMethod::Patch => item.patch.as_mut(),
                HttpMethod::Delete => item.delete.as_mut(),
                _ => None,
            };
            if let Some(op) = op {
                add(op, has_path_params);
            }
        }
    }
    let components = openapi.components.get_or_insert_with(Default::default);
    for (name, schema) in [
        (
            "ErrorDetail",
            <models::ErrorDetail as utoipa::PartialSchema>::schema(),
        ),
        (
            "InternalError",
            <models::InternalError as utoipa::PartialSchema>::schema(),
        ),
        (
            "ValidationError",
            <models::ValidationError as utoipa::PartialSchema>::schema(),
        ),
        (
            "Violation",
            <crate::validation::Violation as utoipa::PartialSchema>::schema(),
        ),
        (
            "Loc",
            <crate::validation::Loc as utoipa::PartialSchema>::schema(),
        ),
    ] {
        components.schemas.entry(name.to_owned()).or_insert(schema);
    }
}

impl utoipa::Modify for SecurityAddon {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::security::{ApiKey, ApiKeyValue, SecurityScheme};
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "api_key",
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::with_description(
                extract::API_KEY_HEADER,
                format!(
                    "The team's API key; `{}` (the reference SDKs' header) is accepted as its alias",
                    extract::API_KEY_HEADER_ALIAS
                )
                .as_str(),
            ))),
        );
        components.add_security_scheme(
            "link_token",
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::with_description(
                extract::LINK_TOKEN_HEADER,
                format!(
                    "A link token from POST /v2/link/token (or the `token` query parameter); \
                     `{}` (the reference SDKs' header) is accepted as its alias",
                    extract::LINK_TOKEN_HEADER_ALIAS
                )
                .as_str(),
            ))),
        );
        components.add_security_scheme(
            "link_code_token",
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::with_description(
                crate::link::codes::PUSH_TOKEN_HEADER,
                "The push credential of an exchanged link code: pushes on-device data of its user",
            ))),
        );
    }
}

/// Every route with its documentation: serving a route and documenting it are one act.
fn api() -> (Router<AppState>, utoipa::openapi::OpenApi) {
    let (routes, mut doc) = OpenApiRouter::with_openapi(ApiDoc::openapi())
        .merge(users::routes())
        .merge(teams::routes())
        .merge(keys::routes())
        .merge(jobs::routes())
        .merge(webhooks::routes())
        .merge(data::routes())
        .merge(raw::routes())
        .merge(sessions::routes())
        .merge(introspect::routes())
        .merge(aggregate::routes())
        .merge(continuous::routes())
        .merge(link::routes())
        .merge(notify::routes())
        .merge(lab::routes())
        .merge(meta::routes())
        .merge(metrics::routes())
        .merge(unserved::routes())
        .merge(team_profile::routes())
        .split_for_parts();
    add_common_errors(&mut doc);
    doc_rules::apply(&mut doc);
    (routes, doc)
}

/// The OpenAPI 3.1 document of every endpoint.
pub fn openapi() -> utoipa::openapi::OpenApi {
    api().1
}

/// The complete service: routes, fallbacks and cross-cutting layers.
pub fn router(state: AppState) -> NormalizePath<Router> {
    let (routes, mut doc) = api();
    doc_rules::apply_deployment(&mut doc, &state.config);
    let rules = unknown::PathRules::from_doc(&doc);
    let doc = Arc::new(doc);
    let app = routes
        .merge(meta::doc_routes(doc))
        .fallback(|| async { ApiError::NotFound("Route") })
        .method_not_allowed_fallback(
            move |matched: Option<MatchedPath>, params: unknown::Params| {
                unknown::method_not_allowed(rules.clone(), matched, params.ok())
            },
        )
        .layer(middleware::from_fn(limit_uri))
        .layer(middleware::from_fn_with_state(
            state.clone(),
            request_context,
        ))
        .layer(tower_http::catch_panic::CatchPanicLayer::custom(
            panic_response,
        ))
        // A span per request carrying its id, so every log line of the store or the engine
        // names the request it serves; the one summary line is `request_context`'s.
        .layer(
            TraceLayer::new_for_http()
                .make_span_with(request_span)
                .on_request(())
                .on_response(())
                .on_body_chunk(())
                .on_eos(())
                .on_failure(()),
        )
        .layer(PropagateRequestIdLayer::x_request_id())
        .layer(SetRequestIdLayer::x_request_id(MakeRequestUuid))
        .with_state(state);
    // Outside every route: axum adds `Allow` after a route's own layers ran (`unknown.rs`).
    let app = Router::new()
        .fallback_service(app)
        .layer(middleware::map_response(unknown::allow_only_on_405));
    NormalizePathLayer::trim_trailing_slash().layer(app)
}

/// The span of one request, `http.request`, exported as a server span named `METHOD route`
/// (OpenTelemetry's HTTP conventions): its id (set by the layer outside this one), method,
/// route template and path; `request_context` records the status and the team. Every span
/// under it carries the id too (`crate::telemetry::request_id`).
fn request_span(req: &Request) -> tracing::Span {
    use tracing::field::Empty;
    let request_id = req
        .headers()
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let method = req.method().as_str();
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map(MatchedPath::as_str);
    let name = match route {
        Some(route) => format!("{method} {route}"),
        None => method.to_owned(),
    };
    let span = tracing::info_span!("http.request", otel.name = %name, otel.kind = "server",
        %request_id, http.request.method = %method, http.route = route,
        url.path = %req.uri().path(), http.response.status_code = Empty, team_id = Empty,
        otel.status_code = Empty);
    crate::telemetry::request_id::scope(&span, request_id);
    span
}

fn panic_response(_: Box<dyn std::any::Any + Send + 'static>) -> Response {
    tracing::error!("handler panicked");
    ApiError::Internal("panic".into()).into_response()
}

/// The longest request URI (path and query) the service reads, in bytes; longer ones answer 414
/// with a JSON `detail`. Common proxies stop at 8 KiB too. (hyper itself refuses request lines
/// over 64 KiB before any service sees them, with a bare 414: that connection-level limit cannot
/// carry a body.)
pub const MAX_URI_BYTES: usize = 8 * 1024;

/// Refuses a URI over [`MAX_URI_BYTES`].
async fn limit_uri(req: Request, next: Next) -> Response {
    let length = req.uri().path_and_query().map_or(0, |pq| pq.as_str().len());
    if length > MAX_URI_BYTES {
        return ApiError::UriTooLong(length, MAX_URI_BYTES).into_response();
    }
    next.run(req).await
}

/// Logs, counts and times each request once, completes 500 bodies with the request id and
/// stamps the rate-limit headers.
async fn request_context(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = req.method().clone();
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "(unmatched)".to_owned(), |p| p.as_str().to_owned());
    let request_id = req
        .headers()
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    let slot = extract::TeamSlot::default();
    let rate = rate_limit::RateSlot::default();
    let mut req = req;
    req.extensions_mut().insert(slot.clone());
    req.extensions_mut().insert(rate.clone());
    let mut response = next.run(req).await;
    let status = response.status();
    let team = slot.0.get().copied();
    if let Some(InternalCause(cause)) = response.extensions_mut().remove::<InternalCause>() {
        tracing::error!(%request_id, %method, %route, %cause, "internal error");
        let body = models::InternalError {
            detail: "Internal server error".to_owned(),
            request_id: request_id.to_string(),
        };
        let mut fresh = (StatusCode::INTERNAL_SERVER_ERROR, axum::Json(body)).into_response();
        if let Ok(v) = HeaderValue::from_str(&request_id) {
            fresh.headers_mut().insert("x-request-id", v);
        }
        response = fresh;
    }
    rate_limit::stamp(&rate, &mut response);
    let span = tracing::Span::current();
    span.record("http.response.status_code", status.as_u16());
    if let Some(team) = team {
        span.record("team_id", tracing::field::display(team));
    }
    if status.is_server_error() {
        span.record("otel.status_code", "error");
    }
    let took = started.elapsed();
    state
        .metrics
        .request(&method, &route, status.as_u16(), took);
    tracing::info!(
        %method, %route, status = status.as_u16(),
        duration_ms = took.as_secs_f64() * 1e3,
        team = team.map(|t| t.to_string()).unwrap_or_default(),
        "request"
    );
    response
}

/// Runs the service on `listener` until `shutdown` resolves. From then on no connection is
/// accepted and idle keep-alive connections are closed; requests in flight get `grace` to
/// finish, after which whatever is still open is cut and this returns anyway (a stuck client
/// cannot hold a deployment's restart hostage).
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: AppState,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    grace: std::time::Duration,
) -> std::io::Result<()> {
    use std::future::IntoFuture;
    let app = router(state);
    let make = axum::ServiceExt::<Request<Body>>::into_make_service(app);
    let (signalled, heard) = tokio::sync::oneshot::channel::<()>();
    let draining = axum::serve(listener, make)
        .with_graceful_shutdown(async move {
            shutdown.await;
            let _ = signalled.send(());
        })
        .into_future();
    tokio::pin!(draining);
    tokio::select! {
        served = &mut draining => served,
        () = async {
            // A dropped sender (the server ended on its own) is no signal: wait for `served`.
            if heard.await.is_err() {
                std::future::pending::<()>().await;
            }
            tokio::time::sleep(grace).await;
        } => {
            tracing::warn!(grace_secs = grace.as_secs_f64(), "shutdown grace over: closing the requests still open");
            Ok(())
        }
    }
}
