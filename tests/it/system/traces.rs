//! Trace export (`serve --otlp-endpoint`), received by a collector this test runs: an axum
//! server on 127.0.0.1:0 that takes `POST /v1/traces` and decodes each body with OTLP's
//! published protobuf types (`opentelemetry-proto`), the way a real collector does.
//!
//! The real binary is started with the endpoint and a batch delay of a minute, so nothing is
//! sent while the workload runs and every span arrives through the flush at SIGTERM. Then:
//! every span of a request's trace carries the `x-request-id` its client saw; the key's
//! last-use write (a task spawned by the request) is a span in that trace; a job the push
//! enqueued runs in a `job.run` span carrying the push's id. A collector that refuses
//! connections, or accepts and never answers, costs requests nothing; without the flag nothing
//! is sent, even with the standard `OTEL_EXPORTER_OTLP_ENDPOINT` set.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use prost::Message;
use serde_json::{Value, json};

use crate::support::server::{Server, create_team, http_client};

/// One received span, flattened.
#[derive(Debug, Clone)]
struct Seen {
    name: String,
    trace: Vec<u8>,
    id: Vec<u8>,
    parent: Vec<u8>,
    attrs: HashMap<String, String>,
    resource: HashMap<String, String>,
}

impl Seen {
    fn attr(&self, key: &str) -> Option<&str> {
        self.attrs.get(key).map(String::as_str)
    }
}

/// What the collector received.
#[derive(Default)]
struct Received {
    posts: AtomicUsize,
    spans: Mutex<Vec<Seen>>,
    /// Bodies it could not decode, or posts not made as OTLP/HTTP protobuf.
    faults: Mutex<Vec<String>>,
}

/// A collector on 127.0.0.1:0.
struct Collector {
    base: String,
    received: Arc<Received>,
}

impl Collector {
    async fn start() -> Collector {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let received = Arc::new(Received::default());
        let app = axum::Router::new()
            .route("/v1/traces", axum::routing::post(receive))
            .with_state(received.clone());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Collector { base, received }
    }

    fn posts(&self) -> usize {
        self.received.posts.load(Ordering::SeqCst)
    }

    fn spans(&self) -> Vec<Seen> {
        let faults = self.received.faults.lock().unwrap().clone();
        assert!(faults.is_empty(), "{faults:?}");
        self.received.spans.lock().unwrap().clone()
    }
}

fn text(value: Option<&opentelemetry_proto::tonic::common::v1::AnyValue>) -> String {
    match value.and_then(|v| v.value.as_ref()) {
        Some(Any::StringValue(s)) => s.clone(),
        Some(Any::IntValue(i)) => i.to_string(),
        Some(Any::BoolValue(b)) => b.to_string(),
        Some(Any::DoubleValue(d)) => d.to_string(),
        other => format!("{other:?}"),
    }
}

fn attributes(list: &[KeyValue]) -> HashMap<String, String> {
    list.iter()
        .map(|kv| (kv.key.clone(), text(kv.value.as_ref())))
        .collect()
}

/// `POST /v1/traces`: decodes the body and keeps its spans.
async fn receive(
    State(received): State<Arc<Received>>,
    headers: HeaderMap,
    body: Bytes,
) -> (StatusCode, [(&'static str, &'static str); 1], Vec<u8>) {
    received.posts.fetch_add(1, Ordering::SeqCst);
    let content_type = headers.get("content-type").and_then(|v| v.to_str().ok());
    if content_type != Some("application/x-protobuf") {
        let fault = format!("content-type {content_type:?}");
        received.faults.lock().unwrap().push(fault);
    }
    let request = match ExportTraceServiceRequest::decode(body) {
        Ok(request) => request,
        Err(e) => {
            received.faults.lock().unwrap().push(e.to_string());
            return (
                StatusCode::BAD_REQUEST,
                [("content-type", "text/plain")],
                vec![],
            );
        }
    };
    let mut seen = Vec::new();
    for resource_spans in request.resource_spans {
        let resource = resource_spans
            .resource
            .map(|r| attributes(&r.attributes))
            .unwrap_or_default();
        for scope in resource_spans.scope_spans {
            for span in scope.spans {
                let attrs = attributes(&span.attributes);
                seen.push(Seen {
                    name: span.name,
                    trace: span.trace_id,
                    id: span.span_id,
                    parent: span.parent_span_id,
                    attrs,
                    resource: resource.clone(),
                });
            }
        }
    }
    received.spans.lock().unwrap().extend(seen);
    let answer = ExportTraceServiceResponse::default().encode_to_vec();
    (
        StatusCode::OK,
        [("content-type", "application/x-protobuf")],
        answer,
    )
}

/// The `x-request-id` of an answer.
fn request_id(answer: &reqwest::Response) -> String {
    answer.headers()["x-request-id"]
        .to_str()
        .unwrap()
        .to_owned()
}

/// A minute of heart rate, the day before the query's anchor.
fn push_body() -> Value {
    let samples: Vec<Value> = (0..30)
        .map(|i| json!({"timestamp": format!("2025-12-30T08:{i:02}:00Z"), "unit": "bpm", "value": 60 + i}))
        .collect();
    json!({"provider": "apple_health_kit", "timeseries": {"heartrate": samples}})
}

fn query_body() -> Value {
    json!({
        "timeframe": {"anchor": "2026-01-01", "past": {"value": 1, "unit": "week"}},
        "queries": [{"select": [{"func": "count", "arg": {"timeseries": "heartrate", "field": "value"}}]}]
    })
}

/// The request ids of a workload: a user created, a push, an aggregate query (the last with a
/// request id the client chose).
struct Workload {
    create: String,
    push: String,
    query: String,
    user: String,
}

async fn workload(server: &Server, key: &str, client_user_id: &str) -> Workload {
    let http = http_client(60);
    let created = http
        .post(server.url("/v2/user"))
        .header("x-service-api-key", key)
        .json(&json!({"client_user_id": client_user_id}))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 200);
    let create = request_id(&created);
    let user: Value = created.json().await.unwrap();
    let user = user["user_id"].as_str().unwrap().to_owned();
    let pushed = http
        .post(server.url(&format!("/v2/user/{user}/data")))
        .header("x-service-api-key", key)
        .json(&push_body())
        .send()
        .await
        .unwrap();
    assert!(pushed.status().is_success(), "{:?}", pushed.status());
    let push = request_id(&pushed);
    let queried = http
        .post(server.url(&format!("/aggregate/v1/user/{user}/query")))
        .header("x-service-api-key", key)
        .header("x-request-id", "traces-query-1")
        .json(&query_body())
        .send()
        .await
        .unwrap();
    assert_eq!(queried.status(), 200);
    let query = request_id(&queried);
    assert_eq!(query, "traces-query-1");
    Workload {
        create,
        push,
        query,
        user,
    }
}

/// Waits until the team has a succeeded job of `kind`; its id.
async fn succeeded_job(server: &Server, key: &str, kind: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let page = server
            .get_json(&format!("/v2/team/jobs?kind={kind}&state=succeeded"), key)
            .await;
        if let Some(job) = page["jobs"].as_array().and_then(|j| j.first()) {
            return job["id"].as_str().unwrap().to_owned();
        }
        assert!(Instant::now() < deadline, "no {kind} job succeeded: {page}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// SIGTERM and a clean exit, off the test's runtime (the collector keeps serving meanwhile);
/// how long it took.
async fn stop(mut server: Server) -> Duration {
    let started = Instant::now();
    let exit = tokio::task::spawn_blocking(move || {
        server.signal_term();
        server.wait_exit(Duration::from_secs(60))
    })
    .await
    .unwrap();
    let exit = exit.expect("still running a minute after SIGTERM");
    assert!(exit.success(), "exited with {exit:?} on SIGTERM");
    started.elapsed()
}

/// The spans of the trace whose root is the span with this `request_id` and name.
fn request_trace<'a>(spans: &'a [Seen], name: &str, id: &str) -> (&'a Seen, Vec<&'a Seen>) {
    let root = spans
        .iter()
        .find(|s| s.name == name && s.attr("request_id") == Some(id))
        .unwrap_or_else(|| panic!("no {name} span with request_id {id}: {spans:#?}"));
    assert!(root.parent.is_empty(), "{root:?} is not a root");
    let trace = spans.iter().filter(|s| s.trace == root.trace).collect();
    (root, trace)
}

/// Every span of `trace` carries `id`, and each one's parent is in the trace.
fn all_carry(trace: &[&Seen], id: &str) {
    for span in trace {
        assert_eq!(span.attr("request_id"), Some(id), "{span:#?}");
        assert!(
            span.parent.is_empty() || trace.iter().any(|p| p.id == span.parent),
            "{span:#?} has a parent outside its trace"
        );
    }
}

fn names<'a>(trace: &[&'a Seen]) -> Vec<&'a str> {
    trace.iter().map(|s| s.name.as_str()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_span_of_a_request_and_of_its_work_carries_its_request_id() {
    let collector = Collector::start().await;
    let dir = tempfile::tempdir().unwrap();
    let key = create_team(dir.path(), "traced", &[]);
    let server = Server::start_with(
        dir.path(),
        &["--otlp-endpoint", &collector.base],
        "info,sqlx=warn",
        // Nothing is sent before the shutdown's flush.
        &[("OTEL_BSP_SCHEDULE_DELAY", "60000")],
    );
    let work = workload(&server, &key, "traced-1").await;
    let job = succeeded_job(&server, &key, "events.push").await;
    assert_eq!(
        collector.posts(),
        0,
        "spans were sent before the batch was due"
    );
    stop(server).await;
    let spans = collector.spans();
    assert!(collector.posts() >= 1);

    for span in &spans {
        assert_eq!(
            span.resource.get("service.name").map(String::as_str),
            Some("wearhouse")
        );
    }

    // The user's creation: its server span, and the key's last-use write on a spawned task.
    let (root, trace) = request_trace(&spans, "POST /v2/user", &work.create);
    assert_eq!(root.attr("http.request.method"), Some("POST"));
    assert_eq!(root.attr("http.route"), Some("/v2/user"));
    assert_eq!(root.attr("http.response.status_code"), Some("200"));
    all_carry(&trace, &work.create);
    let touch = trace
        .iter()
        .find(|s| s.name == "keys.touch")
        .unwrap_or_else(|| panic!("no keys.touch span in {:?}", names(&trace)));
    assert_eq!(
        touch.parent, root.id,
        "the spawned write's parent is the request"
    );

    // The push: its own spans and the store's, all with the push's id.
    let route = "/v2/user/{user_id}/data";
    let (root, trace) = request_trace(&spans, &format!("POST {route}"), &work.push);
    assert_eq!(root.attr("http.route"), Some(route));
    assert_eq!(
        root.attr("url.path"),
        Some(format!("/v2/user/{}/data", work.user).as_str())
    );
    all_carry(&trace, &work.push);
    for name in ["data.push", "store.write_push"] {
        assert!(
            names(&trace).contains(&name),
            "{name} missing: {:?}",
            names(&trace)
        );
    }

    // The query: loading, the engine's task on its own runtime, planning, encoding.
    let route = "/aggregate/v1/user/{user_id}/query";
    let (_, trace) = request_trace(&spans, &format!("POST {route}"), &work.query);
    all_carry(&trace, &work.query);
    for name in ["store.read", "query.execute", "query.plan", "query.encode"] {
        assert!(
            names(&trace).contains(&name),
            "{name} missing: {:?}",
            names(&trace)
        );
    }
    let execute = trace.iter().find(|s| s.name == "query.execute").unwrap();
    let plan = trace.iter().find(|s| s.name == "query.plan").unwrap();
    assert_eq!(plan.parent, execute.id);

    // The job the push enqueued: a run span of its own trace, carrying the push's id, as does
    // everything under it.
    let run = spans
        .iter()
        .find(|s| s.name == "job.run" && s.attr("job.id") == Some(job.as_str()))
        .unwrap_or_else(|| panic!("no job.run span of job {job}"));
    assert_eq!(run.attr("job.kind"), Some("events.push"));
    assert_eq!(run.attr("job.outcome"), Some("succeeded"));
    assert_eq!(run.attr("request_id"), Some(work.push.as_str()));
    assert!(run.parent.is_empty());
    let trace: Vec<&Seen> = spans.iter().filter(|s| s.trace == run.trace).collect();
    all_carry(&trace, &work.push);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_collector_that_is_down_or_hangs_costs_requests_nothing() {
    // A port nothing listens on (connections refused), and one that accepts and never answers
    // (every export waits out its timeout).
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap()
    };
    let hanging = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let hanging_addr = hanging.local_addr().unwrap();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = hanging.accept().await {
            held.push(socket);
        }
    });
    for (n, endpoint) in [closed, hanging_addr].into_iter().enumerate() {
        let dir = tempfile::tempdir().unwrap();
        let key = create_team(dir.path(), "untraced", &[]);
        let endpoint = format!("http://{endpoint}");
        let server = Server::start_with(
            dir.path(),
            &[],
            "info,sqlx=warn",
            // The environment's spelling of the flag; exports due every 50 ms.
            &[
                ("WEARHOUSE_OTLP_ENDPOINT", endpoint.as_str()),
                ("OTEL_BSP_SCHEDULE_DELAY", "50"),
            ],
        );
        let http = http_client(30);
        let started = Instant::now();
        for i in 0..20 {
            let one = Instant::now();
            let answer = http
                .post(server.url("/v2/user"))
                .header("x-service-api-key", &key)
                .json(&json!({"client_user_id": format!("down-{n}-{i}")}))
                .send()
                .await
                .unwrap();
            assert_eq!(answer.status(), 200);
            assert!(
                one.elapsed() < Duration::from_secs(3),
                "a request took {:?} with the collector at {endpoint} down",
                one.elapsed()
            );
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "{:?}",
            started.elapsed()
        );
        // The flush gives up after its timeout: the process still exits 0, promptly.
        let took = stop(server).await;
        assert!(took < Duration::from_secs(20), "stopping took {took:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_flag_nothing_is_exported() {
    let collector = Collector::start().await;
    let dir = tempfile::tempdir().unwrap();
    let key = create_team(dir.path(), "quiet", &[]);
    // The SDK's standard variables alone do not switch the export on.
    let server = Server::start_with(
        dir.path(),
        &[],
        "info,sqlx=warn",
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", collector.base.as_str()),
            (
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                collector.base.as_str(),
            ),
            ("OTEL_BSP_SCHEDULE_DELAY", "50"),
        ],
    );
    workload(&server, &key, "quiet-1").await;
    succeeded_job(&server, &key, "events.push").await;
    stop(server).await;
    assert_eq!(collector.posts(), 0);
    assert!(collector.spans().is_empty());
}
