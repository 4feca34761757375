//! The request id on every span, and the id of the request a piece of work serves.
//!
//! Two mechanisms, one for each audience:
//! - **In the process** ([`RequestIdLayer`], [`current_request_id`]): a span declaring a
//!   `request_id` field (the request's `http.request`, a job's `job.run`) keeps the value in
//!   its extensions; [`current_request_id`] walks from the current span up to the nearest such
//!   span. The job queue asks it when it stores a job, so a job records the request that
//!   enqueued it without any caller passing it along. Spawned work is instrumented with a span
//!   opened under the request, so the walk finds the request from there too.
//! - **In the export** ([`scope`], [`StampRequestId`]): the span declaring the id also puts it
//!   in the OpenTelemetry context its descendants are started in (as their parent context);
//!   the SDK hands that context to every span processor when a span starts, and
//!   [`StampRequestId`] copies the id onto the span as its `request_id` attribute. The declaring
//!   span has the attribute from its own field, so only spans with a local parent are stamped.

use std::sync::Arc;
use std::time::Duration;

use opentelemetry::KeyValue;
use opentelemetry::trace::{Span as _, TraceContextExt as _};
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{SpanData, SpanProcessor};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing_opentelemetry::OpenTelemetrySpanExt as _;
use tracing_subscriber::layer::{Context, Layer};
use tracing_subscriber::registry::LookupSpan;

use super::REQUEST_ID;

/// A span's own request id, kept in its extensions by [`RequestIdLayer`].
#[derive(Debug, Clone)]
struct Declared(Arc<str>);

/// The request id in an OpenTelemetry context: every span started in it is stamped with it.
#[derive(Debug, Clone)]
struct InScope(Arc<str>);

/// Keeps the `request_id` field of the spans that declare one, for [`current_request_id`].
#[derive(Debug, Clone, Copy)]
pub struct RequestIdLayer;

impl<S> Layer<S> for RequestIdLayer
where
    S: tracing::Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        if attrs.metadata().fields().field(REQUEST_ID).is_none() {
            return;
        }
        let mut found = Find(None);
        attrs.record(&mut found);
        keep(found, id, &ctx);
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        let mut found = Find(None);
        values.record(&mut found);
        keep(found, id, &ctx);
    }
}

fn keep<S>(found: Find, id: &Id, ctx: &Context<'_, S>)
where
    S: tracing::Subscriber + for<'a> LookupSpan<'a>,
{
    if let Some(value) = found.0
        && let Some(span) = ctx.span(id)
    {
        span.extensions_mut().insert(Declared(value.into()));
    }
}

/// The value of a `request_id` field, however it was recorded (`%id`, a `&str`, `?id`).
struct Find(Option<String>);

impl Visit for Find {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == REQUEST_ID {
            self.0 = Some(value.to_owned());
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == REQUEST_ID {
            self.0 = Some(format!("{value:?}"));
        }
    }
}

/// The id of the request the current span serves: the `request_id` of the nearest span, from
/// the current one up, that declares one. `None` outside a request (or a job a request
/// enqueued), and when the process's subscriber is not [`super::init`]'s (unit tests).
pub fn current_request_id() -> Option<String> {
    tracing::Span::current()
        .with_subscriber(|(id, dispatch)| {
            let registry = dispatch.downcast_ref::<tracing_subscriber::Registry>()?;
            let span = registry.span(id)?;
            span.scope()
                .find_map(|s| s.extensions().get::<Declared>().map(|d| d.0.to_string()))
        })
        .flatten()
}

/// Makes `span` the root of its own trace, every span under it stamped with `request_id`.
/// Call it before `span` is first entered; without the trace export it does nothing.
pub fn scope(span: &tracing::Span, request_id: &str) {
    let cx = opentelemetry::Context::new().with_value(InScope(request_id.into()));
    // Without the OpenTelemetry layer (no `--otlp-endpoint`) there is no parent to set.
    let _ = span.set_parent(cx);
}

/// The span processor stamping `request_id` on every span started under [`scope`].
#[derive(Debug, Clone, Copy)]
pub struct StampRequestId;

impl SpanProcessor for StampRequestId {
    fn on_start(&self, span: &mut opentelemetry_sdk::trace::Span, cx: &opentelemetry::Context) {
        let Some(InScope(id)) = cx.get::<InScope>() else {
            return;
        };
        // The span that opened the scope has no local parent and declares the id itself.
        let parent = cx.span();
        let parent = parent.span_context();
        if parent.is_valid() && !parent.is_remote() {
            span.set_attribute(KeyValue::new(REQUEST_ID, id.to_string()));
        }
    }

    fn on_end(&self, _: SpanData) {}

    fn force_flush(&self) -> OTelSdkResult {
        Ok(())
    }

    fn shutdown_with_timeout(&self, _: Duration) -> OTelSdkResult {
        Ok(())
    }
}
