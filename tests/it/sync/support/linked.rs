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
use crate::link::oauth::{VERIFICATION_TOKEN, authorize_url, link_token, visit_as};
use crate::support::{Answer, TestApp};
use crate::sync::fake::Gate;
use wearhouse::jobs::{Job, JobState, Runner, RunnerHandle};
use wearhouse::link::LinkConfig;
use wearhouse::link::oauth::{OAuthApp, OAuthApps};
use wearhouse::store::metadata::connections::ErrorDetails;
use wearhouse::store::metadata::jobs::{JobFilter, list_jobs};
use wearhouse::store::metadata::{Connection, ConnectionStatus};
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

/// The sum and count of `field` over the rows at `pointer` of an expected push body.
pub fn fixture_total(expected: &Value, pointer: &str, field: &str) -> (f64, i64) {
    let rows = expected_at(expected, pointer);
    let values: Vec<f64> = rows.iter().filter_map(|r| r[field].as_f64()).collect();
    (values.iter().sum(), values.len() as i64)
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

/// Checks that a getter's row `got` holds each of `fields` as the same number as the expected
/// row `want` (absent from both is the same).
pub fn assert_same_numbers(got: &Value, want: &Value, fields: &[&str]) {
    for field in fields {
        let (g, w) = (got[*field].as_f64(), want[*field].as_f64());
        assert_eq!(g, w, "{field}: {got:#}");
    }
}

/// A query's argument naming the values of the `series` timeseries.
pub fn series_values(series: &str) -> Value {
    json!({"timeseries": series, "field": "value"})
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
        let landed = visit_as(&app, provider, &url, extra).await;
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

    /// [`Linked::link_with`], the provider's fake (its `gate`) accepting the tokens the
    /// authorisation server issues, and the historical pull run, checked to have succeeded at
    /// its first attempt.
    pub async fn pulled<F: Copy + Send + 'static>(
        connector: Arc<dyn Connector>,
        extra: &[(&str, &str)],
        gate: &Gate<F>,
    ) -> Linked {
        let l = Linked::link_with(connector, extra).await;
        gate.accept_when(l.issued_tokens(None));
        let done = l.run_until(JobState::Succeeded).await;
        assert_eq!(done.attempts, 1, "{done:?}");
        l
    }

    /// [`Linked::link_with`] whose link's access token has expired (the provider's fake, its
    /// `gate`, refuses it), and the historical pull run, checked to have refreshed the token
    /// once and succeeded at its first attempt.
    pub async fn pulled_after_a_refresh<F: Copy + Send + 'static>(
        connector: Arc<dyn Connector>,
        extra: &[(&str, &str)],
        gate: &Gate<F>,
    ) -> Linked {
        let l = Linked::link_with(connector, extra).await;
        gate.accept_when(l.issued_tokens(Some(l.oauth.issued()[0].clone())));
        let done = l.run_until(JobState::Succeeded).await;
        assert_eq!(done.attempts, 1, "{done:?}");
        assert_eq!(l.oauth.issued().len(), 2, "one refresh");
        l
    }

    /// Checks that the authorisation server was given the client `how` (`form`, `basic`)
    /// every time.
    pub fn assert_client_auth(&self, how: &str) {
        let auth = self.oauth.client_auth();
        assert!(
            !auth.is_empty() && auth.iter().all(|(h, _)| *h == how),
            "{auth:?}"
        );
    }

    /// The linked user's connection to the provider.
    pub async fn connection(&self) -> Connection {
        self.app
            .state
            .meta
            .connection(self.user.parse().unwrap(), self.provider)
            .await
            .unwrap()
            .unwrap()
    }

    /// The linked user's id at the provider, as the connection records it.
    pub async fn provider_user_id(&self) -> Option<String> {
        self.connection().await.provider_user_id
    }

    /// Checks that the connection is in error for `error_type`, said by a
    /// `provider.connection.error` event; answers the error's details.
    pub async fn assert_errored(&self, error_type: &str) -> ErrorDetails {
        let connection = self.connection().await;
        assert_eq!(connection.status, ConnectionStatus::Error, "{connection:?}");
        let details = connection.error_details.unwrap();
        assert_eq!(details.error_type, error_type, "{details:?}");
        let types = self.event_types().await;
        assert!(
            types.iter().any(|t| t == "provider.connection.error"),
            "{types:?}"
        );
        details
    }

    /// A refresh (answered 200) with the app's jobs running until the connection is no longer
    /// connected, or for [`LONG`]; the connection then.
    pub async fn refresh_until_disconnected(&self) -> Connection {
        let runner = self.runner();
        let a = self.refresh("20").await;
        assert_eq!(a.status, 200, "{}", a.json);
        let deadline = tokio::time::Instant::now() + LONG;
        let connection = loop {
            let c = self.connection().await;
            if c.status != ConnectionStatus::Connected || tokio::time::Instant::now() > deadline {
                break c;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        runner.shutdown().await;
        connection
    }

    /// Checks that the user's events hold `historical.data.<resource>.created` once for each
    /// of `resources`.
    pub async fn assert_created_once(&self, resources: &[&str]) {
        let types = self.event_types().await;
        for resource in resources {
            let name = format!("historical.data.{resource}.created");
            let once = types.iter().filter(|t| **t == name).count();
            assert_eq!(once, 1, "{name} once: {types:?}");
        }
    }

    /// [`Linked::assert_totals`] with each wanted (sum, count) that of rows of the provider's
    /// fixture files ([`fixture_total`]): (argument, `file#pointer` of the rows, field).
    pub async fn assert_fixture_totals(
        &self,
        fixture: fn(&str) -> Value,
        want: &[(Value, &str, &str)],
    ) {
        let want: Vec<(Value, (f64, i64))> = want
            .iter()
            .map(|(arg, rows, field)| {
                let (file, pointer) = rows.split_once('#').unwrap();
                (arg.clone(), fixture_total(&fixture(file), pointer, field))
            })
            .collect();
        self.assert_totals(&want).await;
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

    /// Asks, over the last 100 days, the sum and count of each argument grouped by source
    /// provider (one query each), and checks that each answers the linked provider alone with
    /// its wanted (sum, count).
    pub async fn assert_totals(&self, want: &[(Value, (f64, i64))]) {
        let per_provider = |arg: &Value| {
            json!({"select": [{"group_key": "*"}, {"func": "sum", "arg": arg},
                              {"func": "count", "arg": arg}],
                   "group_by": [{"source": "source_provider"}]})
        };
        let body = json!({
            "timeframe": {"type": "relative", "anchor": Utc::now().date_naive().to_string(),
                          "past": {"value": 100, "unit": "day"}},
            "queries": want.iter().map(|(arg, _)| per_provider(arg)).collect::<Vec<_>>(),
        });
        let answer = self.aggregate(&body).await;
        let results = answer["results"].as_array().unwrap();
        assert_eq!(results.len(), want.len(), "{answer}");
        for (result, (_, (sum, count))) in results.iter().zip(want) {
            let table = result["table"].as_object().unwrap();
            assert_eq!(table["group_key.0"], json!([self.provider]), "{result}");
            let column = |prefix: &str| {
                table
                    .iter()
                    .find(|(k, _)| k.starts_with(prefix))
                    .map(|(_, v)| v[0].clone())
                    .unwrap_or_else(|| panic!("no {prefix}: {result}"))
            };
            let got = column("sum.").as_f64().unwrap();
            assert!((got - sum).abs() < 1e-6, "sum {got} ≠ {sum}: {result}");
            assert_eq!(column("count.").as_i64(), Some(*count), "{result}");
        }
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

    /// Checks that the activity getter answers the days of `want` (an expected body's
    /// `/activity` rows) moved by `days`, each once, with their steps, calories and distance.
    pub async fn assert_activity_days(&self, want: &[Value], days: i64) {
        let activity = self.summary("activity", "calendar_date").await;
        assert_eq!(activity.len(), want.len(), "{activity:#?}");
        for (got, want) in activity.iter().zip(want) {
            let day: NaiveDate = want["date"].as_str().unwrap().parse().unwrap();
            let day = (day + chrono::Duration::days(days)).to_string();
            assert_eq!(got["calendar_date"].as_str(), Some(day.as_str()), "{got}");
            for field in ["steps", "calories_total", "calories_active", "distance"] {
                assert_eq!(got[field].as_f64(), want[field].as_f64(), "{day} {field}");
            }
        }
    }

    /// The last of a summary getter's rows ([`Linked::summary`]), the rows checked to be
    /// `count`.
    pub async fn last_of(&self, table: &str, key: &str, count: usize) -> Value {
        let rows = self.summary(table, key).await;
        assert_eq!(rows.len(), count, "{rows:#?}");
        rows.last().cloned().unwrap()
    }

    /// The profile getter's answer, answered 200.
    pub async fn profile(&self) -> Value {
        let a = self
            .app
            .get(&format!("/v2/summary/profile/{}", self.user))
            .await;
        assert_eq!(a.status, 200, "{}", a.json);
        a.json
    }

    /// The types of the user's events, oldest first.
    pub async fn event_types(&self) -> Vec<String> {
        self.app.event_types(&self.user).await
    }
}
