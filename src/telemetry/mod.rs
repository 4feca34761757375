//! Logs and traces: the process's `tracing` subscriber, and the optional OpenTelemetry trace
//! export of `serve --otlp-endpoint URL`.
//!
//! Logs are always written to standard error (`RUST_LOG`, default `info,sqlx=warn`). With an
//! endpoint, every span that filter lets through is also exported as an OpenTelemetry span:
//! batched in memory (a bounded queue, exported every 5 s or per 512 spans from a thread of its
//! own; the standard `OTEL_BSP_*` variables tune it), sent as OTLP/HTTP with protobuf bodies
//! to `URL/v1/traces` (a URL already ending in `/v1/traces` is used as it is; the standard
//! `OTEL_EXPORTER_OTLP_HEADERS` and `..._TIMEOUT` variables apply), under the resource
//! `service.name=wearhouse`, `service.version`. Protobuf rather than JSON: it is OTLP/HTTP's
//! default encoding, the one every collector and vendor endpoint accepts (JSON support is
//! optional in several), and half the bytes. Export never touches a request: a collector that is
//! down or slow costs the export thread's time, a full queue drops spans (the SDK logs it), and
//! requests answer as before. Without the flag no exporter, no thread and no OpenTelemetry layer
//! exist. [`Telemetry::shutdown`] flushes what is queued; `serve` calls it after the server
//! and the job runner have stopped, so every finished span is sent.
//!
//! What is exported (span names, as OpenTelemetry sees them):
//! - `GET /v2/user/{user_id}` ...: one server span per request (the tracing span is
//!   `http.request`), named after the HTTP semantic conventions (method and route template),
//!   with `http.request.method`, `http.route`, `url.path`, `http.response.status_code`,
//!   `request_id` and, once authenticated, `team_id`; a 5xx sets the span's status to error;
//! - inside it: `data.push` and `store.write_push` (a push), `store.read` (each dataset an
//!   aggregate query or getter loads), `query.execute` (the engine's task on its own runtime)
//!   with a `query.plan` per query and a `query.slice` per task of the time-bucket operator,
//!   `query.encode`, and `keys.touch` (an API key's last use, written by a task of its own);
//! - `job.run`: one span per run of a durable job, the root of its own trace, with `job.id`,
//!   `job.kind`, `job.attempt`, `job.outcome` and, when a request enqueued the job (or a job
//!   run that a request enqueued, transitively), that request's `request_id`.
//!
//! **The request id on every span**: the request's span carries `request_id` (the
//! `x-request-id` the client sent, else the generated one the answer carries), and so does
//! every span opened under it, on this task or on one it spawned (spawned work is instrumented
//! with a span opened in the request, so it joins the request's trace; DataFusion's own tasks
//! are too, see `spawned.rs`): see [`request_id`].
//! A job stores the id of the request that enqueued it (`jobs.request_id`), and its run's span
//! and every span under that carry it. Incoming `traceparent` headers are not read: each request
//! is the root of its own trace.
//!
//! Spans are `info` level: a `RUST_LOG` that silences `info` for a target silences its spans
//! in the export too.

pub mod request_id;
mod spawned;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::WithExportConfig as _;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;

pub use request_id::current_request_id;
pub use spawned::{spawn, spawn_blocking};

/// The attribute and field name of the request id on every span.
pub const REQUEST_ID: &str = "request_id";

/// The OTLP/HTTP path of traces under the endpoint's base URL.
const TRACES_PATH: &str = "/v1/traces";

/// Setting up logs and traces failed.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    /// The OTLP exporter could not be built (an invalid endpoint).
    #[error("--otlp-endpoint: {0}")]
    Exporter(#[from] opentelemetry_otlp::ExporterBuildError),
    /// A global subscriber was already installed.
    #[error("installing the tracing subscriber: {0}")]
    Install(#[from] tracing_subscriber::util::TryInitError),
}

/// The installed subscriber's trace export, if any; [`Telemetry::shutdown`] flushes it.
#[derive(Debug)]
pub struct Telemetry {
    provider: Option<SdkTracerProvider>,
}

impl Telemetry {
    /// Whether spans are exported.
    pub fn exporting(&self) -> bool {
        self.provider.is_some()
    }

    /// Exports every span still queued and stops the exporter (blocking: at most the SDK's
    /// shutdown timeout, 5 s, when the collector does not answer). A failure is logged.
    pub fn shutdown(self) {
        if let Some(provider) = self.provider
            && let Err(error) = provider.shutdown()
        {
            tracing::warn!(%error, "flushing the trace export failed; queued spans are lost");
        }
    }
}

/// Installs the process's subscriber: logs to standard error, filtered by `RUST_LOG` (default
/// `info,sqlx=warn`), the request-id bookkeeping, and, with `otlp_endpoint`, the trace export.
pub fn init(otlp_endpoint: Option<&url::Url>) -> Result<Telemetry, TelemetryError> {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| "info,sqlx=warn".into());
    let fmt = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        // Colours for a terminal only: a log file or a collector gets plain text.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()));
    let provider = otlp_endpoint.map(provider).transpose()?;
    let otel = provider.as_ref().map(|p| {
        tracing_opentelemetry::layer()
            .with_tracer(p.tracer("wearhouse"))
            .with_threads(false)
    });
    tracing_subscriber::registry()
        .with(filter)
        .with(fmt)
        .with(request_id::RequestIdLayer)
        .with(otel)
        .try_init()?;
    spawned::follow_datafusion_tasks();
    Ok(Telemetry { provider })
}

/// The traces URL of an endpoint: `/v1/traces` under its path, unless it names it already.
pub fn traces_url(endpoint: &url::Url) -> String {
    let text = endpoint.as_str().trim_end_matches('/');
    match text.ends_with(TRACES_PATH) {
        true => text.to_owned(),
        false => format!("{text}{TRACES_PATH}"),
    }
}

/// The tracer provider exporting to `endpoint`, batched, stamping request ids.
fn provider(endpoint: &url::Url) -> Result<SdkTracerProvider, TelemetryError> {
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
        .with_endpoint(traces_url(endpoint))
        .build()?;
    let resource = opentelemetry_sdk::Resource::builder()
        .with_service_name("wearhouse")
        .with_attribute(opentelemetry::KeyValue::new(
            "service.version",
            env!("CARGO_PKG_VERSION"),
        ))
        .build();
    Ok(SdkTracerProvider::builder()
        .with_resource(resource)
        .with_span_processor(request_id::StampRequestId)
        .with_batch_exporter(exporter)
        .build())
}

#[cfg(test)]
mod tests {
    use super::traces_url;

    #[test]
    fn traces_url_appends_the_signal_path_once() {
        let url = |s: &str| traces_url(&s.parse().unwrap());
        assert_eq!(url("http://c:4318"), "http://c:4318/v1/traces");
        assert_eq!(url("http://c:4318/"), "http://c:4318/v1/traces");
        assert_eq!(url("https://c/otel/"), "https://c/otel/v1/traces");
        assert_eq!(url("http://c:4318/v1/traces"), "http://c:4318/v1/traces");
    }
}
