//! The Oura connector (issue 15) against a fake Oura API v2: an axum server on a loopback port
//! that stands in for Oura's cloud. It shares no code with `wearhouse::sync`, only the wire
//! format: it serves the documents of `testdata/providers/oura/` (or generated heart rate)
//! under the documented paths, checks the bearer token, filters by `start_date`/`end_date`
//! (inclusive, by `day`) or `start_datetime`/`end_datetime` (inclusive, by `timestamp`, at most
//! 30 days apart), pages
//! with opaque `next_token`s, and can be switched to answer 429 (with `Retry-After`), 500, 401
//! or to hang, after a number of good answers.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use chrono::{DateTime, NaiveDate, TimeZone, Utc};
use serde_json::{Value, json};

use wearhouse::ingest::PushUser;
use wearhouse::sync::oura::Oura;
use wearhouse::sync::{Connector, Pull, Resource, SyncError, Window, screen};

const TOKEN: &str = "fake-oura-access-token";

/// A switchable failure.
#[derive(Debug, Clone, Copy)]
enum Fault {
    RateLimited { retry_after: u64 },
    ServerError,
    Unauthorised,
    Hang,
}

#[derive(Default)]
struct Inner {
    fault: Option<(Fault, usize)>,
    /// `next_token` → (collection, offset of the next page).
    tokens: HashMap<String, (String, usize)>,
    /// Every request as `collection?query`.
    log: Vec<String>,
    good: usize,
}

#[derive(Clone)]
struct Fake {
    collections: Arc<HashMap<String, Vec<Value>>>,
    personal_info: Arc<Value>,
    page_size: usize,
    inner: Arc<Mutex<Inner>>,
}

/// A running fake Oura API.
struct FakeOura {
    base: String,
    inner: Arc<Mutex<Inner>>,
}

impl FakeOura {
    async fn start(collections: HashMap<String, Vec<Value>>, page_size: usize) -> FakeOura {
        let fake = Fake {
            collections: Arc::new(collections),
            personal_info: Arc::new(fixture("personal_info.json")),
            page_size,
            inner: Arc::default(),
        };
        let inner = fake.inner.clone();
        let app = Router::new()
            .route("/v2/usercollection/personal_info", get(personal_info))
            .route("/v2/usercollection/{collection}", get(collection))
            .with_state(fake);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        FakeOura { base, inner }
    }

    /// Serves `fault` from the request after the next `after` good ones.
    fn fail(&self, fault: Fault, after: usize) {
        let mut inner = self.inner.lock().unwrap();
        let good = inner.good;
        inner.fault = Some((fault, good + after));
    }

    fn log(&self) -> Vec<String> {
        self.inner.lock().unwrap().log.clone()
    }
}

fn fixture(name: &str) -> Value {
    let path = format!(
        "{}/testdata/providers/oura/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The collections of the fixture files.
fn fixture_collections() -> HashMap<String, Vec<Value>> {
    [
        "sleep",
        "daily_activity",
        "workout",
        "heartrate",
        "daily_spo2",
    ]
    .into_iter()
    .map(|c| {
        let data = fixture(&format!("{c}.json"))["data"]
            .as_array()
            .unwrap()
            .clone();
        (c.to_owned(), data)
    })
    .collect()
}

/// The answer to a request the fault or the token check refuses, if any.
async fn refusal(fake: &Fake, headers: &HeaderMap) -> Option<Response> {
    let fault = {
        let mut inner = fake.inner.lock().unwrap();
        match inner.fault {
            Some((fault, at)) if inner.good >= at => Some(fault),
            _ => {
                inner.good += 1;
                None
            }
        }
    };
    let detail = |msg: &str| Json(json!({"detail": msg}));
    match fault {
        Some(Fault::RateLimited { retry_after }) => {
            return Some(
                (
                    StatusCode::TOO_MANY_REQUESTS,
                    [(header::RETRY_AFTER, retry_after.to_string())],
                    detail("Request Rate Limit Exceeded."),
                )
                    .into_response(),
            );
        }
        Some(Fault::ServerError) => {
            return Some((StatusCode::INTERNAL_SERVER_ERROR, "upstream failure").into_response());
        }
        Some(Fault::Unauthorised) => {
            return Some((StatusCode::UNAUTHORIZED, detail("Token expired")).into_response());
        }
        Some(Fault::Hang) => {
            tokio::time::sleep(Duration::from_secs(30)).await;
        }
        None => {}
    }
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    (bearer != Some(&format!("Bearer {TOKEN}")))
        .then(|| (StatusCode::UNAUTHORIZED, detail("Unauthorized access")).into_response())
}

async fn personal_info(State(fake): State<Fake>, headers: HeaderMap) -> Response {
    fake.inner.lock().unwrap().log.push("personal_info".into());
    if let Some(refused) = refusal(&fake, &headers).await {
        return refused;
    }
    Json((*fake.personal_info).clone()).into_response()
}

async fn collection(
    State(fake): State<Fake>,
    Path(name): Path<String>,
    Query(q): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    let mut pairs: Vec<_> = q.iter().map(|(k, v)| format!("{k}={v}")).collect();
    pairs.sort();
    fake.inner
        .lock()
        .unwrap()
        .log
        .push(format!("{name}?{}", pairs.join("&")));
    if let Some(refused) = refusal(&fake, &headers).await {
        return refused;
    }
    let Some(documents) = fake.collections.get(&name) else {
        return (StatusCode::NOT_FOUND, Json(json!({"detail": "Not Found"}))).into_response();
    };
    let unprocessable = |msg: &str| {
        (
            StatusCode::UNPROCESSABLE_ENTITY,
            Json(json!({"detail": [{"loc": ["query"], "msg": msg, "type": "value_error"}]})),
        )
            .into_response()
    };
    let keep: Box<dyn Fn(&Value) -> bool> = if name == "heartrate" {
        let instant = |k: &str| {
            q.get(k)
                .and_then(|v| DateTime::parse_from_rfc3339(v).ok())
                .map(|t| t.with_timezone(&Utc))
        };
        let (Some(from), Some(to)) = (instant("start_datetime"), instant("end_datetime")) else {
            return unprocessable("start_datetime and end_datetime are required date-times");
        };
        if to - from > chrono::TimeDelta::days(30) {
            return unprocessable("The maximum heart rate range is 30 days");
        }
        Box::new(move |d| {
            let t = DateTime::parse_from_rfc3339(d["timestamp"].as_str().unwrap()).unwrap();
            from <= t && t <= to
        })
    } else {
        let date = |k: &str| q.get(k).and_then(|v| v.parse::<NaiveDate>().ok());
        let (Some(from), Some(to)) = (date("start_date"), date("end_date")) else {
            return unprocessable("start_date and end_date are required dates");
        };
        Box::new(move |d| {
            let day: NaiveDate = d["day"].as_str().unwrap().parse().unwrap();
            from <= day && day <= to
        })
    };
    let offset = match q.get("next_token") {
        None => 0,
        Some(t) => match fake.inner.lock().unwrap().tokens.get(t) {
            Some((c, offset)) if *c == name => *offset,
            _ => return (StatusCode::BAD_REQUEST, "invalid next_token").into_response(),
        },
    };
    let matching: Vec<&Value> = documents.iter().filter(|d| keep(d)).collect();
    let page: Vec<Value> = matching
        .iter()
        .skip(offset)
        .take(fake.page_size)
        .map(|d| (*d).clone())
        .collect();
    let next = offset + page.len();
    let next_token = if next < matching.len() {
        let mut inner = fake.inner.lock().unwrap();
        let token = format!("{:016x}", 0x5eed_0000 + inner.tokens.len() * 7919);
        inner.tokens.insert(token.clone(), (name.clone(), next));
        Value::from(token)
    } else {
        Value::Null
    };
    Json(json!({"data": page, "next_token": next_token})).into_response()
}

fn utc(y: i32, m: u32, d: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(y, m, d, 0, 0, 0).unwrap()
}

fn pull(resources: &[Resource], start: DateTime<Utc>, end: DateTime<Utc>) -> Pull {
    Pull {
        resources: resources.to_vec(),
        window: Window::new(start, end).unwrap(),
    }
}

fn all_march() -> Pull {
    pull(&Resource::ALL, utc(2025, 3, 1), utc(2025, 3, 4))
}

#[tokio::test]
async fn a_multi_page_pull_returns_every_record_exactly_once() {
    let fake = FakeOura::start(fixture_collections(), 2).await;
    let oura = Oura::new(&fake.base).unwrap();
    assert_eq!(oura.provider(), "oura");
    let pulled = oura.pull(TOKEN, &all_march()).await.unwrap();
    assert_eq!(pulled.skipped, 0);

    // Every collection's documents, normalised, exactly as the fixture tests expect them.
    let body = &pulled.body;
    let expected = |file: &str, pointer: &str| fixture(file).pointer(pointer).cloned().unwrap();
    assert_eq!(body["sleep"], expected("sleep.expected.json", "/sleep"));
    assert_eq!(
        body["timeseries"]["hrv"],
        expected("sleep.expected.json", "/timeseries/hrv")
    );
    assert_eq!(
        body["activity"],
        expected("daily_activity.expected.json", "/activity")
    );
    assert_eq!(
        body["workouts"],
        expected("workout.expected.json", "/workouts")
    );
    assert_eq!(
        body["timeseries"]["heartrate"],
        expected("heartrate.expected.json", "/timeseries/heartrate")
    );
    assert_eq!(
        body["timeseries"]["blood_oxygen"],
        expected("daily_spo2.expected.json", "/timeseries/blood_oxygen")
    );
    assert_eq!(
        body["profile"],
        expected("personal_info.expected.json", "/profile")
    );

    // Paging was exercised: 10 heart-rate samples at 2 per page are 5 requests.
    let log = fake.log();
    let heartrate: Vec<_> = log.iter().filter(|l| l.starts_with("heartrate?")).collect();
    assert_eq!(heartrate.len(), 5, "{log:#?}");
    assert!(heartrate[0].contains("end_datetime=2025-03-04T00:00:00Z"));
    assert!(heartrate[0].contains("start_datetime=2025-03-01T00:00:00Z"));
    assert!(heartrate[1..].iter().all(|l| l.contains("next_token=")));
    assert!(
        log.iter()
            .any(|l| l.starts_with("sleep?") && l.contains("next_token="))
    );

    // And ingest takes the body as it is.
    let screened = screen(pulled.body.clone(), &PushUser::default(), Utc::now()).unwrap();
    assert!(screened.dropped.is_empty());
    assert_eq!(
        screened.batches.counts(),
        json!({
            "sleep": 2, "activity": 2, "workouts": 2, "profile": 1,
            "timeseries": {"heartrate": 10, "hrv": 86, "blood_oxygen": 2}
        })
    );
}

#[tokio::test]
async fn a_day_of_heart_rate_over_many_pages_is_cut_to_the_window() {
    // One sample a minute from 2025-03-01 00:00 to 2025-03-02 23:59 UTC; the fake's bounds
    // are inclusive, the window's end is not.
    let samples: Vec<Value> = (0..2 * 1440)
        .map(|i| {
            let at = utc(2025, 3, 1) + chrono::TimeDelta::minutes(i);
            json!({
                "bpm": 55 + i % 40,
                "source": "awake",
                "timestamp": at.to_rfc3339(),
                "timestamp_unix": at.timestamp_millis(),
            })
        })
        .collect();
    let fake = FakeOura::start(HashMap::from([("heartrate".to_owned(), samples)]), 100).await;
    let oura = Oura::new(&fake.base).unwrap();
    let window = pull(&[Resource::Heartrate], utc(2025, 3, 1), utc(2025, 3, 2));
    let pulled = oura.pull(TOKEN, &window).await.unwrap();
    let got = pulled.body["timeseries"]["heartrate"].as_array().unwrap();
    assert_eq!(got.len(), 1440);
    let stamps: std::collections::BTreeSet<&str> = got
        .iter()
        .map(|s| s["timestamp"].as_str().unwrap())
        .collect();
    assert_eq!(stamps.len(), 1440, "a sample came twice");
    assert_eq!(stamps.first(), Some(&"2025-03-01T00:00:00Z"));
    assert_eq!(stamps.last(), Some(&"2025-03-01T23:59:00Z"));
    // 1441 samples match the fake's inclusive bounds: 15 pages of 100.
    assert_eq!(fake.log().len(), 15);
}

#[tokio::test]
async fn a_long_heart_rate_window_is_asked_in_chunks_the_api_accepts() {
    // One sample every 6 hours for 45 days; the fake refuses ranges over 30 days.
    let samples: Vec<Value> = (0..45 * 4)
        .map(|i| {
            let at = utc(2025, 1, 1) + chrono::TimeDelta::hours(6 * i);
            json!({"bpm": 60, "source": "rest", "timestamp": at.to_rfc3339()})
        })
        .collect();
    let fake = FakeOura::start(HashMap::from([("heartrate".to_owned(), samples)]), 50).await;
    let oura = Oura::new(&fake.base).unwrap();
    let window = pull(&[Resource::Heartrate], utc(2025, 1, 1), utc(2025, 2, 15));
    let pulled = oura.pull(TOKEN, &window).await.unwrap();
    let got = pulled.body["timeseries"]["heartrate"].as_array().unwrap();
    let stamps: std::collections::BTreeSet<&str> = got
        .iter()
        .map(|s| s["timestamp"].as_str().unwrap())
        .collect();
    // 180 samples, the one on the chunk boundary (2025-01-31 00:00) once.
    assert_eq!((got.len(), stamps.len()), (180, 180));
    assert!(stamps.contains("2025-01-31T00:00:00Z"));
    let log = fake.log();
    // 121 then 60 samples match the two chunks at the fake's inclusive bounds: 3 + 2 pages.
    assert_eq!(log.len(), 5, "{log:#?}");
    assert!(
        log[0].contains("end_datetime=2025-01-31T00:00:00Z"),
        "{log:#?}"
    );
    assert!(
        log.iter()
            .any(|l| l.contains("start_datetime=2025-01-31T00:00:00Z")
                && l.contains("end_datetime=2025-02-15T00:00:00Z")),
        "{log:#?}"
    );
}

#[tokio::test]
async fn rate_limiting_surfaces_with_its_retry_after() {
    let fake = FakeOura::start(fixture_collections(), 2).await;
    let oura = Oura::new(&fake.base).unwrap();
    // On the second request: the second page of sleep periods.
    fake.fail(Fault::RateLimited { retry_after: 37 }, 1);
    let err = oura.pull(TOKEN, &all_march()).await.unwrap_err();
    assert!(
        matches!(
            err,
            SyncError::RateLimited {
                retry_after_seconds: Some(37)
            }
        ),
        "{err:?}"
    );
    // The first failing request ends the pull.
    assert_eq!(fake.log().len(), 2);
}

#[tokio::test]
async fn a_refused_token_is_unauthorised() {
    let fake = FakeOura::start(fixture_collections(), 2).await;
    let oura = Oura::new(&fake.base).unwrap();
    fake.fail(Fault::Unauthorised, 0);
    let err = oura.pull(TOKEN, &all_march()).await.unwrap_err();
    assert!(matches!(err, SyncError::Unauthorised), "{err:?}");

    // The fake's own check: a token it never issued.
    let fake = FakeOura::start(fixture_collections(), 2).await;
    let oura = Oura::new(&fake.base).unwrap();
    let err = oura.pull("revoked", &all_march()).await.unwrap_err();
    assert!(matches!(err, SyncError::Unauthorised), "{err:?}");
}

#[tokio::test]
async fn server_errors_timeouts_and_refused_connections_are_transient() {
    let fake = FakeOura::start(fixture_collections(), 2).await;
    let oura = Oura::new(&fake.base).unwrap();
    fake.fail(Fault::ServerError, 1);
    let err = oura.pull(TOKEN, &all_march()).await.unwrap_err();
    assert!(matches!(err, SyncError::Transient { .. }), "{err:?}");

    fake.fail(Fault::Hang, 0);
    let quick = reqwest::Client::builder()
        .timeout(Duration::from_millis(300))
        .build()
        .unwrap();
    let impatient = Oura::with_client(url::Url::parse(&fake.base).unwrap(), quick);
    let err = impatient.pull(TOKEN, &all_march()).await.unwrap_err();
    assert!(
        matches!(
            &err,
            SyncError::Transient {
                source: Some(_),
                ..
            }
        ),
        "{err:?}"
    );

    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", listener.local_addr().unwrap())
    };
    let err = Oura::new(&closed)
        .unwrap()
        .pull(TOKEN, &all_march())
        .await
        .unwrap_err();
    assert!(matches!(err, SyncError::Transient { .. }), "{err:?}");
}

#[tokio::test]
async fn an_unknown_path_is_permanent() {
    // A fake without the collections: every collection answers 404.
    let fake = FakeOura::start(HashMap::new(), 2).await;
    let oura = Oura::new(&fake.base).unwrap();
    let err = oura
        .pull(
            TOKEN,
            &pull(&[Resource::Sleep], utc(2025, 3, 1), utc(2025, 3, 2)),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, SyncError::Permanent { .. }), "{err:?}");
}
