//! Shared test harness: a service on a temporary data dir with two teams, driven in-process
//! through `oneshot`, plus helpers to read JSON answers.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

pub mod backends;
pub mod postgres;
pub mod provision;
pub mod reference;
pub mod server;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use serde_json::Value;
use tower::ServiceExt;
use wearhouse::http::{AppState, HttpConfig, router};
use wearhouse::store::health::HealthStore;
use wearhouse::store::metadata::MetadataStore;

/// A service with two teams on a private SQLite database.
pub struct TestApp {
    pub state: AppState,
    pub key: String,
    pub other_key: String,
    pub dir: tempfile::TempDir,
}

/// An answer: status, headers and the body parsed as JSON (Null when empty or not JSON).
pub struct Answer {
    pub status: StatusCode,
    pub headers: axum::http::HeaderMap,
    pub json: Value,
    pub bytes: Vec<u8>,
}

impl Answer {
    /// The router's `response`, its body read whole (and as JSON, or `null`).
    pub async fn read(response: axum::response::Response) -> Answer {
        let (parts, body) = response.into_parts();
        let bytes = body.collect().await.unwrap().to_bytes().to_vec();
        Answer {
            status: parts.status,
            headers: parts.headers,
            json: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
            bytes,
        }
    }
}

impl TestApp {
    pub async fn new() -> TestApp {
        Self::with_config(HttpConfig::default()).await
    }

    pub async fn with_config(config: HttpConfig) -> TestApp {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}?mode=rwc", dir.path().join("meta.db").display());
        let meta = MetadataStore::connect(&url).await.unwrap();
        let (_, key) = meta.create_team("acme").await.unwrap();
        let (_, other) = meta.create_team("globex").await.unwrap();
        let health_dir = dir.path().join("health").display().to_string();
        let health = HealthStore::open(&health_dir, Default::default()).unwrap();
        let state = AppState::new(meta, health, config).unwrap();
        TestApp {
            state,
            key: key.secret,
            other_key: other.secret,
            dir,
        }
    }

    /// Sends a request with this app's first team key (`key` = None sends no key).
    pub async fn send(
        &self,
        method: &str,
        uri: &str,
        key: Option<&str>,
        body: Option<Value>,
    ) -> Answer {
        let mut req = Request::builder().method(method).uri(uri);
        if let Some(k) = key {
            req = req.header("x-service-api-key", k);
        }
        let body = match body {
            Some(v) => {
                req = req.header("content-type", "application/json");
                Body::from(v.to_string())
            }
            None => Body::empty(),
        };
        self.raw(req.body(body).unwrap()).await
    }

    pub async fn raw(&self, req: Request<Body>) -> Answer {
        Answer::read(router(self.state.clone()).oneshot(req).await.unwrap()).await
    }

    pub async fn get(&self, uri: &str) -> Answer {
        self.send("GET", uri, Some(&self.key.clone()), None).await
    }

    pub async fn post(&self, uri: &str, body: Value) -> Answer {
        self.send("POST", uri, Some(&self.key.clone()), Some(body))
            .await
    }

    pub async fn patch(&self, uri: &str, body: Value) -> Answer {
        self.send("PATCH", uri, Some(&self.key.clone()), Some(body))
            .await
    }

    /// `POST /aggregate/v1/user/{id}/query` with `body`, asking for `accept` (the default, JSON,
    /// when `None`).
    pub async fn aggregate(&self, id: &str, body: &Value, accept: Option<&str>) -> Answer {
        let mut req = Request::builder()
            .method("POST")
            .uri(format!("/aggregate/v1/user/{id}/query"))
            .header("x-service-api-key", &self.key)
            .header("content-type", "application/json");
        if let Some(a) = accept {
            req = req.header("accept", a);
        }
        self.raw(req.body(Body::from(body.to_string())).unwrap())
            .await
    }

    /// The first team (the one `key` belongs to).
    pub async fn team(&self) -> wearhouse::store::metadata::Team {
        self.state
            .meta
            .team_for_key(&self.key)
            .await
            .unwrap()
            .expect("the test key's team")
    }

    /// Creates a user of the first team and answers its id.
    pub async fn user(&self, client_user_id: &str) -> String {
        let a = self
            .post(
                "/v2/user/",
                serde_json::json!({ "client_user_id": client_user_id }),
            )
            .await;
        assert_eq!(a.status, StatusCode::OK, "{}", a.json);
        a.json["user_id"].as_str().unwrap().to_owned()
    }

    /// `POST /v2/link/connect/demo` for `user` (answer checked to be 200), then runs the app's
    /// jobs until the connection's demo history is stored, as a server's runner would.
    pub async fn demo_connect(&self, user: &str, provider: &str, days: u32) -> Answer {
        let a = self
            .post(
                "/v2/link/connect/demo",
                serde_json::json!({"user_id": user, "provider": provider, "days": days}),
            )
            .await;
        assert_eq!(a.status, StatusCode::OK, "{provider}: {}", a.json);
        assert_eq!(a.json["history_pulling"], true, "{}", a.json);
        self.pull_history(user).await;
        a
    }

    /// Runs the app's jobs until every historical pull of `user`'s connections has completed
    /// (panics after a minute or when one fails).
    pub async fn pull_history(&self, user: &str) {
        use std::time::Duration;
        let registry = wearhouse::app::job_registry(&self.state);
        let config = crate::jobs::support::config("history", Duration::from_secs(30));
        let runner =
            wearhouse::jobs::Runner::new(self.state.meta.clone(), registry, config).spawn();
        let id = user.parse().unwrap();
        let waited =
            wearhouse::app::wait_for_history(&self.state, &[id], Duration::from_secs(60)).await;
        runner.shutdown().await;
        assert_eq!(waited.unwrap(), vec![], "pulls still under way");
        for connection in self.state.meta.connections(id).await.unwrap() {
            let mut conn = self.state.meta.reader().await.unwrap();
            let sync =
                wearhouse::store::metadata::sync_pulls::get(&mut conn, id, &connection.provider)
                    .await
                    .unwrap();
            if let Some(sync) = sync {
                assert_eq!(sync.failed, None, "the {} pull failed", connection.provider);
            }
        }
    }

    /// The types of `user`'s events, oldest first.
    pub async fn event_types(&self, user: &str) -> Vec<String> {
        let a = self
            .get(&format!("/v2/team/events?user_id={user}&limit=100"))
            .await;
        assert_eq!(a.status, StatusCode::OK, "{}", a.json);
        a.json["events"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["event_type"].as_str().unwrap().to_owned())
            .collect()
    }

    /// Creates a user of the second team and answers its id.
    pub async fn foreign_user(&self) -> String {
        let a = self
            .send(
                "POST",
                "/v2/user",
                Some(&self.other_key.clone()),
                Some(serde_json::json!({"client_user_id": "theirs"})),
            )
            .await;
        assert_eq!(a.status, StatusCode::OK, "{}", a.json);
        a.json["user_id"].as_str().unwrap().to_owned()
    }
}

/// Asserts a 422 whose first violation is located at `loc`.
/// A user of `team` made straight in the metadata store, as `client_user_id`.
pub async fn new_user(
    meta: &MetadataStore,
    team: uuid::Uuid,
    client_user_id: &str,
) -> wearhouse::store::metadata::User {
    let new = wearhouse::store::metadata::NewUser {
        client_user_id: client_user_id.into(),
        ..Default::default()
    };
    meta.create_user(team, new).await.unwrap()
}

pub fn assert_422_at(a: &Answer, loc: &[Value]) {
    assert_eq!(a.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", a.json);
    let detail = a.json["detail"]
        .as_array()
        .unwrap_or_else(|| panic!("no detail list: {}", a.json));
    assert!(
        detail
            .iter()
            .any(|d| d["loc"].as_array().map(Vec::as_slice) == Some(loc)),
        "no violation at {loc:?}: {}",
        a.json
    );
    for d in detail {
        assert!(d["msg"].as_str().is_some_and(|m| !m.is_empty()), "{d}");
        assert!(d["type"].is_string(), "{d}");
    }
}

/// Whether a rendered JSON value carries what was pushed: every pushed member present, numbers
/// equal numerically, date-times equal as instants (offsets may be rendered differently).
pub fn carries(pushed: &Value, rendered: &Value) -> bool {
    match (pushed, rendered) {
        (Value::Number(a), Value::Number(b)) => a.as_f64() == b.as_f64(),
        (Value::String(a), Value::String(b)) if a != b => {
            match (
                chrono::DateTime::parse_from_rfc3339(a),
                chrono::DateTime::parse_from_rfc3339(b),
            ) {
                (Ok(x), Ok(y)) => x == y,
                _ => false,
            }
        }
        (Value::Object(a), Value::Object(b)) => a
            .iter()
            .all(|(k, v)| b.get(k).is_some_and(|w| carries(v, w))),
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| carries(x, y))
        }
        (a, b) => a == b,
    }
}

/// The committed push body with one record of every table and timeseries family.
pub fn full_push() -> Value {
    serde_json::from_str(include_str!("../../../testdata/push/full.json")).unwrap()
}

/// The members of a Parquet tarball answer (`0.parquet`, `1.parquet`, ...), in order, each as
/// the record batches it holds.
pub fn parquet_members(tarball: &[u8]) -> Vec<Vec<datafusion::arrow::array::RecordBatch>> {
    use std::io::Read;
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(tarball));
    archive
        .entries()
        .unwrap()
        .map(|entry| {
            let mut buf = Vec::new();
            entry.unwrap().read_to_end(&mut buf).unwrap();
            datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(
                bytes::Bytes::from(buf),
            )
            .unwrap()
            .build()
            .unwrap()
            .map(Result::unwrap)
            .collect()
        })
        .collect()
}
