//! Team API keys (issue 35, deliverable 4): `/v2/team/keys` and `wearhouse keys`.
//!
//! - [`lifecycle`]: create, list without secrets, use and `last_used_at`, rotation with an
//!   overlap, revocation, in process on SQLite and on PostgreSQL;
//! - [`rules`]: tenancy (another team's key id is 404) and each 422;
//! - [`processes`]: a revocation, a rotation and a CLI revocation seen at once by two real
//!   server processes on one PostgreSQL database; the CLI on SQLite.

/// Two tests of one key exercise (`async fn(&TestApp)`): `$sqlite` on a fresh app, `$postgres`
/// on an app whose metadata lives in a scratch PostgreSQL database ([`postgres_app`]).
macro_rules! on_both_backends {
    ($sqlite:ident, $postgres:ident, $exercise:path) => {
        #[tokio::test]
        async fn $sqlite() {
            $exercise(&crate::support::TestApp::new().await).await;
        }

        #[tokio::test]
        async fn $postgres() {
            let db = crate::support::postgres::ScratchDb::create("wearhouse_keys").await;
            let app = super::postgres_app(&db).await;
            $exercise(&app).await;
            app.state.meta.close().await;
            db.drop_db().await;
        }
    };
}

mod lifecycle;
mod processes;
mod rules;

use std::time::{Duration, Instant};

use serde_json::Value;
use sha2::{Digest, Sha256};
use wearhouse::http::{AppState, HttpConfig};
use wearhouse::store::health::HealthStore;
use wearhouse::store::metadata::MetadataStore;

use crate::support::postgres::ScratchDb;
use crate::support::{Answer, TestApp};

/// A [`TestApp`] (teams `acme` and `globex`) whose metadata lives in `db`.
pub async fn postgres_app(db: &ScratchDb) -> TestApp {
    let dir = tempfile::tempdir().unwrap();
    let meta = MetadataStore::connect(&db.url).await.unwrap();
    let (_, key) = meta.create_team("acme").await.unwrap();
    let (_, other) = meta.create_team("globex").await.unwrap();
    let health_dir = dir.path().join("health").display().to_string();
    let health = HealthStore::open(&health_dir, Default::default()).unwrap();
    let state = AppState::new(meta, health, HttpConfig::default()).unwrap();
    TestApp {
        state,
        key: key.secret,
        other_key: other.secret,
        dir,
    }
}

/// `GET /v2/team/keys` with `key`.
pub async fn list_with(app: &TestApp, key: &str) -> Answer {
    app.send("GET", "/v2/team/keys", Some(key), None).await
}

/// The status `key` gets on an authenticated route.
pub async fn status_of(app: &TestApp, key: &str) -> u16 {
    list_with(app, key).await.status.as_u16()
}

/// The listed key `id`, read with the app's first key.
pub async fn listed(app: &TestApp, id: &str) -> Value {
    let a = app.get("/v2/team/keys").await;
    assert_eq!(a.status, 200, "{}", a.json);
    a.json["keys"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["id"] == id)
        .cloned()
        .unwrap_or_else(|| panic!("key {id} not listed: {}", a.json))
}

/// Asserts that an answer shows none of `secrets`, in clear or as their stored hash, and that
/// no key in it has a `secret` or `key_hash` member.
pub fn assert_no_secret(a: &Answer, secrets: &[&str]) {
    let text = String::from_utf8_lossy(&a.bytes);
    for secret in secrets {
        assert!(secret.starts_with("wh_") && secret.len() == 67, "{secret}");
        assert!(!text.contains(&secret[3..]), "a secret leaked: {text}");
        let hash = hex::encode(Sha256::digest(secret.as_bytes()));
        assert!(!text.contains(&hash), "a key hash leaked: {text}");
    }
    for key in a.json["keys"].as_array().unwrap() {
        assert!(key.get("secret").is_none(), "{key}");
        assert!(key.get("key_hash").is_none(), "{key}");
    }
}

/// Polls `check` every 50 ms until it holds; panics with `what` after `limit`.
pub async fn wait_until<F, Fut>(limit: Duration, what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let started = Instant::now();
    while !check().await {
        assert!(started.elapsed() < limit, "{what} not within {limit:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// An RFC 3339 member as an instant.
pub fn instant(v: &Value) -> chrono::DateTime<chrono::Utc> {
    chrono::DateTime::parse_from_rfc3339(v.as_str().unwrap_or_else(|| panic!("not a time: {v}")))
        .unwrap()
        .to_utc()
}
