//! The end-to-end harness of the sync suites: one provider's connector behind the app, a user
//! linked to that provider through the OAuth round trip (the link tests' fake authorisation
//! server standing in for the provider's), and the real job runner pulling the provider's fake.
//! [`Linked::link`] is parameterised by the connector; its `provider()` is the slug linked.
//!
//! Every provider's fixtures are dated 2025-03-01 … 03-03, and a historical pull covers the
//! last 90 days, so the suites serve them moved forward by [`offset_days`] whole days, to end
//! ten days ago. [`shifted`] moves dates written as text; Oura's fake keeps its own (the sync
//! bench uses it too), and Withings' also moves unix seconds.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, NaiveDate, Utc};
use serde_json::{Value, json};

use crate::jobs::support::{config, wait_for};
use crate::link::fake_oauth::{CLIENT_ID, CLIENT_SECRET, FakeOAuth};
use crate::link::keyed_app;
use crate::link::oauth::{VERIFICATION_TOKEN, authorize_url, link_token};
use crate::support::{Answer, TestApp};
use wearhouse::jobs::{Job, JobState, Runner, RunnerHandle};
use wearhouse::link::LinkConfig;
use wearhouse::link::oauth::{OAuthApp, OAuthApps};
use wearhouse::store::metadata::jobs::{JobFilter, list_jobs};
use wearhouse::sync::{Connector, Connectors};

/// The webhook subscription id of the deployment's application (Strava's events carry it).
pub const SUBSCRIPTION_ID: i64 = 120_475;

/// How long a job may take to reach the state a test waits for (also the runner's lease).
pub const LONG: Duration = Duration::from_secs(15);

/// The last day of every provider's fixtures.
fn fixtures_end() -> NaiveDate {
    NaiveDate::from_ymd_opt(2025, 3, 3).unwrap()
}

/// Days that move the fixtures (the last of them 2025-03-03) to ten days ago.
pub fn offset_days() -> i64 {
    (Utc::now().date_naive() - chrono::Duration::days(10) - fixtures_end()).num_days()
}

/// `value` moved forward by `days` whole days: every string that is a date (`2025-03-01`) or
/// begins with one followed by a time (`2025-03-01T07:45:12+01:00`, Fitbit's offset-less
/// `2025-03-01T07:45:12.000`, Dexcom's `2025-03-01T07:45:12`), and every object key that is a
/// date. Only the date is rewritten: the time of day and the offset notation are kept as the
/// provider wrote them.
pub fn shifted(value: &Value, days: i64) -> Value {
    let moved = |s: &str| -> Option<String> {
        let day = s.get(..10)?.parse::<NaiveDate>().ok()?;
        let rest = &s[10..];
        (rest.is_empty() || rest.starts_with('T'))
            .then(|| format!("{}{rest}", day + chrono::Duration::days(days)))
    };
    match value {
        Value::String(s) => moved(s).map_or_else(|| value.clone(), Value::String),
        Value::Array(items) => Value::Array(items.iter().map(|v| shifted(v, days)).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (moved(k).unwrap_or_else(|| k.clone()), shifted(v, days)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The getters' query: from 100 days ago to tomorrow, every day a pull can have written.
pub fn window() -> String {
    let today = Utc::now().date_naive();
    format!(
        "start_date={}&end_date={}",
        today - chrono::Duration::days(100),
        today + chrono::Duration::days(1)
    )
}

/// An RFC 3339 instant of an answer or a fixture.
pub fn instant(v: &Value) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(v.as_str().unwrap())
        .unwrap_or_else(|e| panic!("{v}: {e}"))
        .to_utc()
}

/// The array at `pointer` of an expected push body.
pub fn expected_at(body: &Value, pointer: &str) -> Vec<Value> {
    body.pointer(pointer)
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_else(|| panic!("no array at {pointer}"))
}

/// An app pulling one provider, and a user linked to it.
pub struct Linked {
    pub app: TestApp,
    /// The authorisation server the link and every token refresh went to.
    pub oauth: FakeOAuth,
    pub user: String,
    /// The provider's slug.
    pub provider: &'static str,
}

impl Linked {
    /// [`Linked::link_with`] without steering parameters.
    pub async fn link(connector: Arc<dyn Connector>) -> Linked {
        Linked::link_with(connector, &[]).await
    }

    /// The app (an OAuth application for the connector's provider at a new fake authorisation
    /// server, pulls with `connector`), a user linked through the round trip and the link's
    /// answer checked. `extra`: steering parameters for the authorisation server.
    pub async fn link_with(connector: Arc<dyn Connector>, extra: &[(&str, &str)]) -> Linked {
        let provider = connector.provider();
        let oauth = FakeOAuth::start().await;
        let mut app = keyed_app().await;
        let mut apps = OAuthApps::default();
        apps.0.insert(
            provider.into(),
            OAuthApp {
                client_id: CLIENT_ID.into(),
                client_secret: CLIENT_SECRET.into(),
                authorize_url: format!("{}/authorize", oauth.base),
                // Withings' token endpoint speaks its own wire (`action=requesttoken`, the
                // `{status, body}` envelope); the fake serves it apart.
                token_url: if provider == "withings" {
                    format!("{}/v2/oauth2", oauth.base)
                } else {
                    format!("{}/token", oauth.base)
                },
                redirect_uri: None,
                verification_token: Some(VERIFICATION_TOKEN.into()),
                subscription_id: Some(SUBSCRIPTION_ID),
            },
        );
        app.state = app
            .state
            .clone()
            .with_link_config(LinkConfig {
                oauth_apps: apps,
                ..Default::default()
            })
            .with_connectors(Connectors::default().with(connector));
        let user = app.user(&format!("{provider}-user")).await;
        let token = link_token(&app, &user, true).await;
        let url = authorize_url(&app, &token, provider).await;
        // The authorisation URL names the scopes asked, except where the provider's page takes
        // none (Garmin's: the user chooses what to share there).
        let named = url::Url::parse(&url)
            .unwrap()
            .query_pairs()
            .any(|(k, _)| k == "scope");
        let entry = wearhouse::providers::provider(provider).unwrap();
        let asks = wearhouse::sync::token_wire::asks_scopes(provider)
            && !wearhouse::providers::scopes::authorisation_scopes(entry).is_empty();
        assert_eq!(named, asks, "{provider}: {url}");
        let landed = visit(&app, provider, &url, extra).await;
        assert_eq!(landed.status, 303, "{}", landed.json);
        let back = landed.headers["location"].to_str().unwrap();
        assert!(back.contains("state=success"), "{back}");
        Linked {
            app,
            oauth,
            user,
            provider,
        }
    }

    /// `POST /aggregate/v1/user/{user}/query` with `body`, answered 200.
    pub async fn aggregate(&self, body: &Value) -> Value {
        let req = axum::http::Request::builder()
            .method("POST")
            .uri(format!("/aggregate/v1/user/{}/query", self.user))
            .header("x-service-api-key", &self.app.key)
            .header("content-type", "application/json")
            .body(axum::body::Body::from(body.to_string()))
            .unwrap();
        let a = self.app.raw(req).await;
        assert_eq!(a.status, 200, "{}", a.json);
        a.json
    }

    /// A token check for the provider's fake: every access token the authorisation server
    /// issued (now or later), but `refused` (one that has expired).
    pub fn issued_tokens(
        &self,
        refused: Option<String>,
    ) -> impl Fn(&str) -> bool + Send + Sync + use<> {
        let issued = self.oauth.issued_list();
        move |t| refused.as_deref() != Some(t) && issued.lock().unwrap().iter().any(|i| i == t)
    }

    /// The user's historical pull job (the link enqueued exactly one).
    pub async fn pull_job(&self) -> Job {
        let team = self
            .app
            .state
            .meta
            .team_for_key(&self.app.key)
            .await
            .unwrap()
            .unwrap();
        let filter = JobFilter {
            team: Some(team.id),
            state: None,
            kind: Some("sync.historical".into()),
        };
        let mut conn = self.app.state.meta.writer().await.unwrap();
        let (jobs, total) = list_jobs(&mut conn, &filter, 0, 10).await.unwrap();
        assert_eq!(total, 1, "the link enqueued one pull: {jobs:?}");
        jobs.into_iter().next().unwrap()
    }

    /// A job runner over the app's jobs, with the test configuration (fast polls, backoff of
    /// 40 ms doubling up to 100 ms).
    pub fn runner(&self) -> RunnerHandle {
        let registry = wearhouse::app::job_registry(&self.app.state);
        Runner::new(
            self.app.state.meta.clone(),
            registry,
            config(self.provider, LONG),
        )
        .spawn()
    }

    /// Waits (the jobs run elsewhere) until the historical pull job is in `state`.
    pub async fn wait_for_pull(&self, state: JobState) -> Job {
        let job = self.pull_job().await;
        wait_for(&self.app.state.meta, job.id, state, LONG).await
    }

    /// Runs the app's jobs until the historical pull job is in `state`.
    pub async fn run_until(&self, state: JobState) -> Job {
        let job = self.pull_job().await;
        let runner = self.runner();
        let done = wait_for(&self.app.state.meta, job.id, state, LONG).await;
        runner.shutdown().await;
        done
    }

    /// `POST /v2/user/refresh/{user_id}?timeout=…` (the jobs must run elsewhere).
    pub async fn refresh(&self, timeout: &str) -> Answer {
        let path = format!("/v2/user/refresh/{}?timeout={timeout}", self.user);
        self.app.post(&path, json!({})).await
    }

    /// A refresh with the app's jobs running, checked to have succeeded.
    pub async fn refreshed(&self) {
        let runner = self.runner();
        let a = self.refresh("20").await;
        runner.shutdown().await;
        assert_eq!(a.status, 200, "{}", a.json);
        assert_eq!(a.json["success"], true, "{}", a.json);
        assert_eq!(a.json["failed_sources"], json!([]), "{}", a.json);
    }

    /// A timeseries getter's samples over [`window`].
    pub async fn series(&self, resource: &str) -> Vec<Value> {
        let a = self
            .app
            .get(&format!(
                "/v2/timeseries/{}/{resource}?{}",
                self.user,
                window()
            ))
            .await;
        assert_eq!(a.status, 200, "{}", a.json);
        a.json.as_array().unwrap().clone()
    }

    /// A summary getter's rows over [`window`], sorted by `key`.
    pub async fn summary(&self, table: &str, key: &str) -> Vec<Value> {
        let a = self
            .app
            .get(&format!("/v2/summary/{table}/{}?{}", self.user, window()))
            .await;
        assert_eq!(a.status, 200, "{}", a.json);
        let mut rows = a.json[table].as_array().unwrap().clone();
        rows.sort_by_key(|r| r[key].to_string());
        rows
    }

    /// The types of the user's events, oldest first.
    pub async fn event_types(&self) -> Vec<String> {
        self.app.event_types(&self.user).await
    }
}

/// Plays the browser: opens the authorisation URL (plus steering parameters), follows the
/// authorisation server's redirect to the provider's callback, and answers the callback's
/// answer.
async fn visit(app: &TestApp, provider: &str, url: &str, extra: &[(&str, &str)]) -> Answer {
    let mut url = url::Url::parse(url).unwrap();
    for (k, v) in extra {
        url.query_pairs_mut().append_pair(k, v);
    }
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let r = client.get(url).send().await.unwrap();
    assert_eq!(r.status(), 303, "{:?}", r.text().await);
    let location = url::Url::parse(r.headers()["location"].to_str().unwrap()).unwrap();
    assert_eq!(
        location.path(),
        format!("/v2/link/oauth/callback/{provider}")
    );
    let path = format!("{}?{}", location.path(), location.query().unwrap_or(""));
    app.send("GET", &path, None, None).await
}
