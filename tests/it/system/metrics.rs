//! `GET /metrics` after a known workload, read by an independent Prometheus text parser
//! (`prometheus-parse`): the counts are what was sent, routes are templates, and no tenant's
//! id appears anywhere in it.

use std::collections::{BTreeMap, HashMap};

use axum::http::StatusCode;
use chrono::{Duration, Utc};
use openmetrics_parser::{MetricFamily, OpenMetricsType, OpenMetricsValue};
use serde_json::{Value, json};
use wearhouse::store::metadata::jobs::NewJob;

use crate::support::{Answer, TestApp};

/// The scrape, parsed.
struct Scrape {
    text: String,
    families: HashMap<String, MetricFamily<OpenMetricsType, OpenMetricsValue>>,
}

impl Scrape {
    async fn of(app: &TestApp) -> Scrape {
        // No key: scrapers do not hold a tenant's key.
        let a = app.send("GET", "/metrics", None, None).await;
        assert_eq!(
            a.status,
            StatusCode::OK,
            "{}",
            String::from_utf8_lossy(&a.bytes)
        );
        assert_eq!(
            a.headers["content-type"],
            "application/openmetrics-text; version=1.0.0; charset=utf-8"
        );
        let text = String::from_utf8(a.bytes).unwrap();
        // The parser refuses `# UNIT` on histograms, which OpenMetrics allows (its own example
        // is a histogram in seconds): those lines are checked here and left out of the parse.
        assert!(
            text.contains("# UNIT wearhouse_webhook_delivery_lag_seconds seconds\n"),
            "{text}"
        );
        let parsed: String = text
            .lines()
            .filter(|l| !l.starts_with("# UNIT "))
            .map(|l| format!("{l}\n"))
            .collect();
        let families = openmetrics_parser::openmetrics::parse_openmetrics(&parsed)
            .unwrap_or_else(|e| panic!("not OpenMetrics: {e:?}\n{text}"))
            .families;
        Scrape { text, families }
    }

    /// The value of the family's sample with exactly these labels (`None` when absent).
    fn sample(&self, family: &str, labels: &[(&str, &str)]) -> Option<OpenMetricsValue> {
        let wanted: BTreeMap<&str, &str> = labels.iter().copied().collect();
        let found: Vec<OpenMetricsValue> = self
            .families
            .get(family)?
            .iter_samples()
            .filter(|s| {
                let set = s.get_labelset().unwrap();
                let got: BTreeMap<&str, &str> =
                    set.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
                got == wanted
            })
            .map(|s| s.value.clone())
            .collect();
        assert!(
            found.len() <= 1,
            "{family} {labels:?} appears {} times",
            found.len()
        );
        found.into_iter().next()
    }

    /// A counter's or a gauge's value.
    fn value(&self, family: &str, labels: &[(&str, &str)]) -> Option<f64> {
        match self.sample(family, labels)? {
            OpenMetricsValue::Counter(c) => Some(c.value.as_f64()),
            OpenMetricsValue::Gauge(n) | OpenMetricsValue::Unknown(n) => Some(n.as_f64()),
            other => panic!("{family} is not a counter or gauge: {other:?}"),
        }
    }

    /// A histogram's count and sum.
    fn histogram(&self, family: &str, labels: &[(&str, &str)]) -> Option<(u64, f64)> {
        match self.sample(family, labels)? {
            OpenMetricsValue::Histogram(h) => Some((
                h.count.unwrap_or_default(),
                h.sum.map_or(0.0, |s| s.as_f64()),
            )),
            other => panic!("{family} is not a histogram: {other:?}"),
        }
    }
}

/// `n` heart-rate samples, one a minute.
fn heart_rate(n: usize) -> Value {
    let samples: Vec<Value> = (0..n)
        .map(|i| json!({"timestamp": format!("2025-03-02T07:{i:02}:00Z"), "value": 60 + i}))
        .collect();
    json!({"provider": "manual", "timeseries": {"heartrate": samples}})
}

fn count_query() -> Value {
    json!({
        "timeframe": {"type": "relative", "anchor": "2025-03-03", "past": {"value": 7, "unit": "day"}},
        "queries": [{"select": [{"func": "count", "arg": {"timeseries": "heartrate", "field": "value"}}]}]
    })
}

#[tokio::test]
async fn a_scrape_counts_the_workload_it_followed() {
    const GETS: usize = 7;
    const SAMPLES: usize = 42;
    let app = TestApp::new().await;
    let id = app.user("scraped").await;
    for _ in 0..GETS {
        assert_eq!(
            app.get(&format!("/v2/user/{id}")).await.status,
            StatusCode::OK
        );
    }
    let missing = app.send("GET", &format!("/v2/user/{id}"), None, None).await;
    assert_eq!(missing.status, StatusCode::UNAUTHORIZED);
    let push = heart_rate(SAMPLES);
    let pushed = app.post(&format!("/v2/user/{id}/data"), push.clone()).await;
    assert_eq!(pushed.status, StatusCode::OK, "{}", pushed.json);
    let queried = app
        .post(&format!("/aggregate/v1/user/{id}/query"), count_query())
        .await;
    assert_eq!(queried.status, StatusCode::OK, "{}", queried.json);
    let refused = app
        .post(
            &format!("/aggregate/v1/user/{id}/query"),
            json!({"queries": "no"}),
        )
        .await;
    assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY);
    // Two due jobs of a kind, the older due for an hour, and one for tomorrow.
    let now = Utc::now();
    for (minutes, n) in [(-60, 1), (-1, 2), (24 * 60, 3)] {
        let job = NewJob {
            kind: "test.metrics".to_owned(),
            team_id: None,
            payload: json!({ "n": n }),
            run_at: now + Duration::minutes(minutes),
            unique_key: None,
            max_attempts: 1,
        };
        wearhouse::jobs::enqueue_now(&app.state.meta, &job)
            .await
            .unwrap();
    }

    let s = Scrape::of(&app).await;
    let route = |status: &'static str| {
        [
            ("method", "GET"),
            ("route", "/v2/user/{user_id}"),
            ("status", status),
        ]
    };
    assert_eq!(
        s.value("wearhouse_http_requests", &route("200")),
        Some(GETS as f64)
    );
    let (count, sum) = s
        .histogram("wearhouse_http_request_duration_seconds", &route("200"))
        .unwrap();
    assert_eq!(count, GETS as u64);
    assert!(sum > 0.0);
    assert_eq!(s.value("wearhouse_http_requests", &route("401")), Some(1.0));
    let push_route = [
        ("method", "POST"),
        ("route", "/v2/user/{user_id}/data"),
        ("status", "200"),
    ];
    assert_eq!(s.value("wearhouse_http_requests", &push_route), Some(1.0));
    let json = [("kind", "json")];
    assert_eq!(s.value("wearhouse_pushes", &json), Some(1.0));
    assert_eq!(
        s.value("wearhouse_push_samples", &json),
        Some(SAMPLES as f64)
    );
    assert_eq!(s.value("wearhouse_push_records", &json), Some(0.0));
    assert_eq!(
        s.value("wearhouse_push_bytes", &json),
        Some(push.to_string().len() as f64)
    );
    assert_eq!(s.value("wearhouse_pushes", &[("kind", "arrow")]), None);
    let query = |outcome| {
        s.histogram("wearhouse_query_duration_seconds", &[("outcome", outcome)])
            .map(|(count, _)| count)
    };
    assert_eq!(query("ok"), Some(1));
    assert_eq!(
        query("invalid"),
        Some(1),
        "the body whose queries are not a list"
    );
    assert_eq!(query("timeout"), None);
    let (count, input) = s.histogram("wearhouse_query_input_bytes", &[]).unwrap();
    assert_eq!(count, 1, "only answered queries report what they loaded");
    assert!(input > 0.0);
    assert_eq!(
        s.histogram("wearhouse_query_answer_bytes", &[]),
        Some((1, queried.bytes.len() as f64))
    );
    let kind = [("kind", "test.metrics")];
    assert_eq!(s.value("wearhouse_jobs_queued", &kind), Some(2.0));
    assert_eq!(s.value("wearhouse_jobs_scheduled", &kind), Some(1.0));
    assert_eq!(s.value("wearhouse_jobs_running", &kind), Some(0.0));
    let age = s
        .value("wearhouse_jobs_oldest_queued_age_seconds", &kind)
        .unwrap();
    assert!((3600.0..3700.0).contains(&age), "{age}");
    assert_eq!(s.value("wearhouse_store_segments_written", &[]), Some(1.0));
    assert_eq!(
        s.value("wearhouse_store_rows_written", &[]),
        Some(SAMPLES as f64)
    );
    assert!(s.value("wearhouse_store_cache_misses", &[]).unwrap() >= 1.0);

    // Bounded labels: templates, never ids; nothing of a tenant.
    let team = app.team().await;
    for secret in [id.as_str(), &team.id.to_string(), &team.name, &app.key] {
        assert!(!s.text.contains(secret), "{secret:?} in the exposition");
    }
}

#[tokio::test]
async fn routes_are_counted_by_template_and_odd_methods_as_other() {
    let app = TestApp::new().await;
    let a = app
        .send("GET", "/no/such/route/42", Some(&app.key), None)
        .await;
    assert_eq!(a.status, StatusCode::NOT_FOUND);
    let req = axum::http::Request::builder()
        .method("BREW")
        .uri("/health")
        .body(axum::body::Body::empty())
        .unwrap();
    let brewed: Answer = app.raw(req).await;
    assert_eq!(brewed.status, StatusCode::METHOD_NOT_ALLOWED);
    let s = Scrape::of(&app).await;
    assert_eq!(
        s.value(
            "wearhouse_http_requests",
            &[
                ("method", "GET"),
                ("route", "(unmatched)"),
                ("status", "404")
            ]
        ),
        Some(1.0)
    );
    assert!(!s.text.contains("/no/such/route"));
    assert!(!s.text.contains("BREW"));
    assert_eq!(
        s.value(
            "wearhouse_http_requests",
            &[("method", "other"), ("route", "/health"), ("status", "405")]
        ),
        Some(1.0)
    );
}

#[tokio::test]
async fn metrics_are_documented_without_a_key_and_keyed_operations_document_429() {
    let app = TestApp::new().await;
    let doc = app.get("/openapi.json").await.json;
    let metrics = &doc["paths"]["/metrics"]["get"];
    assert!(metrics.is_object(), "/metrics is in the document");
    assert!(metrics.get("security").is_none());
    assert!(metrics["responses"].get("429").is_none());
    let query = &doc["paths"]["/aggregate/v1/user/{user_id}/query"]["post"]["responses"]["429"];
    for header in [
        "Retry-After",
        "x-ratelimit-limit",
        "x-ratelimit-remaining",
        "x-ratelimit-reset",
    ] {
        assert!(query["headers"][header].is_object(), "{header}: {query}");
    }
    assert!(
        doc["paths"]["/health"]["get"]["responses"]
            .get("429")
            .is_none()
    );
}

/// Scrapes until `ready` holds (the job runner records after the receiver has answered), for
/// at most ten seconds; answers the last scrape.
async fn scrape_until(app: &TestApp, ready: impl Fn(&Scrape) -> bool) -> Scrape {
    let started = std::time::Instant::now();
    loop {
        let s = Scrape::of(app).await;
        if ready(&s) || started.elapsed() > std::time::Duration::from_secs(10) {
            return s;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhook_attempts_and_their_lag_are_counted_by_outcome() {
    use crate::events::support::{Receiver, endpoint_at};
    use wearhouse::events::{Event, EventType, outbox};

    let mut app = TestApp::new().await;
    app.state.webhooks = wearhouse::events::UrlRules {
        allow_private: true,
    };
    let team = app.team().await;
    let (up, down) = (Receiver::start(true).await, Receiver::start(false).await);
    endpoint_at(&app.state.meta, team.id, &up.url).await;
    endpoint_at(&app.state.meta, team.id, &down.url).await;
    let events: Vec<Event> = (0..2)
        .map(|n| Event {
            event_type: EventType::DailyCreated("steps"),
            user: None,
            data: json!({ "n": n }),
        })
        .collect();
    outbox::publish(&app.state.meta, team.id, &events)
        .await
        .unwrap();
    let config = crate::jobs::support::config("metrics", std::time::Duration::from_secs(30));
    let registry = wearhouse::app::job_registry(&app.state);
    let runner = wearhouse::jobs::Runner::new(app.state.meta.clone(), registry, config).spawn();
    let attempts =
        |s: &Scrape, outcome| s.value("wearhouse_webhook_attempts", &[("outcome", outcome)]);
    let s = scrape_until(&app, |s| {
        attempts(s, "succeeded") == Some(2.0) && attempts(s, "retrying") == Some(1.0)
    })
    .await;
    runner.shutdown().await;
    assert_eq!(up.got.lock().unwrap().len(), 2);
    // Both events reached the receiver that answers; the one that does not was tried once
    // (its second delivery waits behind the first, whose retry is seconds away).
    assert_eq!(attempts(&s, "succeeded"), Some(2.0));
    assert_eq!(attempts(&s, "retrying"), Some(1.0));
    assert_eq!(attempts(&s, "failed"), None);
    let (count, lag) = s
        .histogram("wearhouse_webhook_delivery_lag_seconds", &[])
        .unwrap();
    assert_eq!(count, 2);
    assert!(lag > 0.0 && lag < 20.0, "{lag}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn provider_pulls_are_counted_by_provider_kind_and_outcome() {
    let app = TestApp::new().await;
    let id = app.user("pulled").await;
    app.demo_connect(&id, "oura", 2).await;
    let s = Scrape::of(&app).await;
    let done = [
        ("provider", "oura"),
        ("kind", "historical"),
        ("outcome", "done"),
    ];
    assert_eq!(s.value("wearhouse_provider_pulls", &done), Some(1.0));
    assert!(
        s.families
            .get("wearhouse_provider_pulls")
            .unwrap()
            .iter_samples()
            .all(|sample| {
                let labels = sample.get_labelset().unwrap();
                labels.get_label_value("provider") == Some("oura")
                    && labels.get_label_value("outcome") != Some("failed")
            }),
        "only oura's pulls, none failed"
    );
}
