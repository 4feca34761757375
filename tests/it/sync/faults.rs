//! The faults of `provider-sync.md` ("Rate limits and errors"), run for every OAuth/REST
//! connector on its fake (a route table on the shared fake provider, `sync/fake/`): a table of
//! providers × faults, one test per cell, written once.
//!
//! | fault | how the fake serves it | what must follow |
//! |---|---|---|
//! | `rate_limited` | one 429 mid-pull, in the provider's words (`Retry-After: 1`, or its own window headers) | the job waits, no failed attempt; with `Retry-After` it completes after at least that long, every record stored once |
//! | `server_storm` | three 5xx in a row mid-pull | each fails one attempt, the runner backs off and retries, the pull completes with every record once |
//! | `expired_token` | the link's access token refused (401) | refreshed once within the run and completed, the connection still connected; a provider without refresh tokens (Polar) puts the connection in error without trying one |
//! | `revoked_token` | every access token refused, the refresh token revoked | the job fails, the connection is in `error` (`provider_credential_error`), `provider.connection.error` is emitted, nothing historical announced |
//! | `malformed_record` | a value of no record shape slipped into an answer's records | skipped and counted, every other record kept, ingest takes the body as it is |
//!
//! A row is a provider: [`start`] (its fake, serving the fixtures moved into the pull's window,
//! and its connector), [`steer`] (how its authorisation server answers the link),
//! [`assert_stored`] (its end-to-end suite's check that the getters answer the fixtures), and
//! how it says a fault ([`Speaks`]).

use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::Utc;
use serde_json::Value;

use super as sync;
use super::fake::Gate;
use super::support::linked::{Linked, offset_days};
use super::support::{pull, utc};
use wearhouse::ingest::PushUser;
use wearhouse::jobs::JobState;
use wearhouse::sync::{Connector, Pulled, Resource, screen};

/// The table's faults, as every provider's fake can be told them.
#[derive(Debug, Clone, Copy)]
enum Fault {
    /// 429; `Retry-After` where the provider sends one.
    RateLimited { retry_after: u64 },
    /// A 5xx.
    ServerError,
}

/// A fake's [`Gate`] with the words its provider says the table's faults in.
trait Faults: Send + Sync {
    fn serve(&self, fault: Fault, after: usize, times: usize);
    fn accept_when(&self, check: Box<dyn Fn(&str) -> bool + Send + Sync>);
    fn malform_next(&self);
}

/// A provider's gate and its translation of the table's faults.
struct Speaks<F> {
    gate: Gate<F>,
    says: fn(Fault) -> F,
}

impl<F: Copy + Send + Sync + 'static> Faults for Speaks<F> {
    fn serve(&self, fault: Fault, after: usize, times: usize) {
        self.gate.fail_times((self.says)(fault), after, times);
    }
    fn accept_when(&self, check: Box<dyn Fn(&str) -> bool + Send + Sync>) {
        self.gate.accept_when(check);
    }
    fn malform_next(&self) {
        self.gate.malform_next();
    }
}

fn speaks<F: Copy + Send + Sync + 'static>(
    gate: &Gate<F>,
    says: fn(Fault) -> F,
) -> Box<dyn Faults> {
    Box::new(Speaks {
        gate: gate.clone(),
        says,
    })
}

/// A row's fake (started by `$fake`), its faults said by `$says`, and its connector at the
/// fake (built by `$new`).
macro_rules! row {
    ($fake:expr, $new:expr, $says:expr) => {{
        let fake = $fake.await;
        let connector: Arc<dyn Connector> = Arc::new($new(&fake.base).unwrap());
        (speaks(&*fake, $says), connector)
    }};
}

/// A row: the provider's fake (the fixtures moved into the pull's window) and its connector.
async fn start(slug: &str) -> (Box<dyn Faults>, Arc<dyn Connector>) {
    use wearhouse::sync::connectors as c;
    match slug {
        "oura" => {
            use sync::oura::fake_oura::Fault as F;
            row!(
                sync::pull::fake_oura(),
                c::oura::Oura::new,
                |f: Fault| match f {
                    Fault::RateLimited { retry_after } => F::RateLimited { retry_after },
                    Fault::ServerError => F::ServerError,
                }
            )
        }
        "dexcom_v3" => {
            use sync::dexcom::fake_dexcom::Fault as F;
            row!(
                sync::dexcom::end_to_end::fake_dexcom(),
                c::dexcom::Dexcom::new,
                |f: Fault| match f {
                    Fault::RateLimited { retry_after } => F::RateLimited { retry_after },
                    Fault::ServerError => F::ServerError,
                }
            )
        }
        "fitbit" => {
            use sync::fitbit::fake_fitbit::Fault as F;
            row!(
                sync::fitbit::end_to_end::fake_fitbit(),
                c::fitbit::Fitbit::new,
                |f: Fault| match f {
                    Fault::RateLimited { retry_after } => F::RateLimited {
                        retry_after,
                        reset: retry_after,
                    },
                    Fault::ServerError => F::ServerError,
                }
            )
        }
        "withings" => {
            use sync::withings::fake_withings::Fault as F;
            row!(
                sync::withings::end_to_end::fake_withings(),
                c::withings::Withings::new,
                |f: Fault| match f {
                    Fault::RateLimited { retry_after } => F::HttpRateLimited { retry_after },
                    Fault::ServerError => F::ServerError,
                }
            )
        }
        "whoop" => {
            use sync::whoop::fake_whoop::Fault as F;
            row!(
                sync::whoop::end_to_end::fake_whoop(),
                c::whoop::Whoop::new,
                |f: Fault| match f {
                    Fault::RateLimited { retry_after } => F::RateLimited {
                        retry_after: Some(retry_after),
                        reset: None,
                    },
                    Fault::ServerError => F::ServerError,
                }
            )
        }
        "google_health" => {
            use sync::google_health::fake_google_health::Fault as F;
            row!(
                sync::google_health::end_to_end::fake_google(),
                c::google_health::GoogleHealth::new,
                |f: Fault| match f {
                    Fault::RateLimited { retry_after } => F::RateLimited(retry_after),
                    Fault::ServerError => F::ServerError,
                }
            )
        }
        "garmin" => {
            use sync::garmin::fake_garmin::Fault as F;
            row!(
                sync::garmin::end_to_end::fake_garmin(),
                c::garmin::Garmin::new,
                |f: Fault| match f {
                    Fault::RateLimited { retry_after } => F::RateLimited(retry_after),
                    Fault::ServerError => F::ServerError,
                }
            )
        }
        "polar" => {
            use sync::polar::fake_polar::Fault as F;
            // Polar sends no `Retry-After`: its headers say the 15-minute window is spent.
            row!(
                sync::polar::end_to_end::fake_polar(),
                c::polar::Polar::new,
                |f: Fault| match f {
                    Fault::RateLimited { .. } => F::RateLimited { day: false },
                    Fault::ServerError => F::ServerError,
                }
            )
        }
        "strava" => {
            use sync::strava::fake_strava::Fault as F;
            // Strava sends no `Retry-After`: its usage headers say the 15-minute window is spent.
            row!(
                sync::strava::end_to_end::fake_strava(),
                c::strava::Strava::new,
                |f: Fault| match f {
                    Fault::RateLimited { .. } => F::RateLimited,
                    Fault::ServerError => F::ServerError,
                }
            )
        }
        "ultrahuman" => {
            use sync::ultrahuman::fake_ultrahuman::Fault as F;
            let fake = sync::ultrahuman::end_to_end::fake_ultrahuman().await;
            let says = |f: Fault| match f {
                Fault::RateLimited { retry_after } => F::RateLimited { retry_after },
                Fault::ServerError => F::ServerError,
            };
            let connector = c::ultrahuman::Ultrahuman::new(&fake.base).unwrap();
            (speaks(&*fake, says), Arc::new(connector))
        }
        other => panic!("no row for {other}"),
    }
}

/// How the provider's authorisation server answers the link (as its end-to-end suite links).
fn steer(slug: &str) -> Vec<(&'static str, &'static str)> {
    match slug {
        "whoop" | "strava" | "google_health" | "ultrahuman" => vec![("x_account", "")],
        "garmin" => vec![
            ("x_account", ""),
            ("x_grant", sync::garmin::end_to_end::GARMIN_SCOPE),
        ],
        "polar" => vec![
            ("x_account", sync::polar::end_to_end::POLAR_USER),
            ("x_wire", "polar"),
        ],
        _ => Vec::new(),
    }
}

/// The provider's end-to-end check: the getters answer the fixtures' values, each record once.
async fn assert_stored(slug: &str, l: &Linked) {
    let days = offset_days();
    match slug {
        "oura" => sync::pull::assert_fixtures_stored(l).await,
        "dexcom_v3" => sync::dexcom::end_to_end::assert_fixtures_stored(l).await,
        "fitbit" => sync::fitbit::end_to_end::assert_fixtures_stored(l, days).await,
        "withings" => sync::withings::end_to_end::assert_fixtures_stored(l, days).await,
        "whoop" => sync::whoop::end_to_end::assert_fixtures_stored(l, days).await,
        "google_health" => sync::google_health::end_to_end::assert_fixtures_stored(l, days).await,
        "garmin" => sync::garmin::end_to_end::assert_fixtures_stored(l, days).await,
        "polar" => sync::polar::end_to_end::assert_fixtures_stored(l, days).await,
        "strava" => sync::strava::end_to_end::assert_fixtures_stored(l, days).await,
        "ultrahuman" => sync::ultrahuman::end_to_end::assert_fixtures_stored(l, days).await,
        other => panic!("no row for {other}"),
    }
}

/// Whether the provider's `429` names a `Retry-After` (else it names its own window's end).
fn sends_retry_after(slug: &str) -> bool {
    !matches!(slug, "polar" | "strava")
}

/// Whether the provider's access tokens are renewed with a refresh token (Polar's live until
/// the user revokes them).
fn refreshes(slug: &str) -> bool {
    slug != "polar"
}

/// A user linked to the row's provider, the fake accepting what the link's authorisation
/// server issued (but `refused`).
async fn linked(slug: &str) -> (Box<dyn Faults>, Linked) {
    let (fake, connector) = start(slug).await;
    let l = Linked::link_with(connector, &steer(slug)).await;
    fake.accept_when(Box::new(l.issued_tokens(None)));
    (fake, l)
}

/// Good answers before a fault: past the first, so the pull is under way.
const AFTER: usize = 2;

async fn rate_limited(slug: &str) {
    let (fake, l) = linked(slug).await;
    fake.serve(Fault::RateLimited { retry_after: 1 }, AFTER, 1);
    if sends_retry_after(slug) {
        let started = Instant::now();
        let done = l.run_until(JobState::Succeeded).await;
        assert!(
            started.elapsed() >= Duration::from_secs(1),
            "{slug}: the Retry-After was waited out"
        );
        assert_eq!(
            done.attempts, 1,
            "{slug}: a wait is no failed attempt: {done:?}"
        );
        assert_stored(slug, &l).await;
        return;
    }
    // The provider's window ends later than a test waits: the job is put off to then.
    let job = l.pull_job().await;
    let runner = l.runner();
    let deadline = Instant::now() + Duration::from_secs(15);
    let waiting = loop {
        let now = wearhouse::jobs::get(&l.app.state.meta, job.id)
            .await
            .unwrap()
            .unwrap();
        let put_off = now.state == JobState::Pending
            && now.run_at > Utc::now() + chrono::Duration::seconds(1);
        if put_off || Instant::now() > deadline {
            break now;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    runner.shutdown().await;
    assert_eq!(waiting.state, JobState::Pending, "{slug}: {waiting:?}");
    assert!(waiting.run_at > Utc::now(), "{slug}: put off: {waiting:?}");
    assert_eq!(
        waiting.attempts, 0,
        "{slug}: a wait is no failed attempt: {waiting:?}"
    );
}

async fn server_storm(slug: &str) {
    const STORM: usize = 3;
    let (fake, l) = linked(slug).await;
    fake.serve(Fault::ServerError, AFTER, STORM);
    let done = l.run_until(JobState::Succeeded).await;
    assert_eq!(
        done.attempts,
        1 + STORM as u32,
        "{slug}: one failed attempt per 5xx, then success: {done:?}"
    );
    assert_stored(slug, &l).await;
    historical_once(slug, &l).await;
}

async fn expired_token(slug: &str) {
    let (fake, l) = linked(slug).await;
    // The token the link got has expired: only tokens issued after it are good.
    fake.accept_when(Box::new(l.issued_tokens(Some(l.oauth.issued()[0].clone()))));
    if !refreshes(slug) {
        let done = l.run_until(JobState::Failed).await;
        assert_eq!(l.oauth.token_requests(), 1, "{slug}: no refresh: {done:?}");
        assert_errored(slug, &l).await;
        return;
    }
    let done = l.run_until(JobState::Succeeded).await;
    assert_eq!(l.oauth.issued().len(), 2, "{slug}: one refresh");
    assert_eq!(
        done.attempts, 1,
        "{slug}: refreshed within the run: {done:?}"
    );
    assert_stored(slug, &l).await;
    let connections = l.app.get(&format!("/v2/user/providers/{}", l.user)).await;
    assert_eq!(
        connections.json["providers"][0]["status"], "connected",
        "{slug}: {}",
        connections.json
    );
}

async fn revoked_token(slug: &str) {
    let (fake, l) = linked(slug).await;
    fake.accept_when(Box::new(|_| false));
    l.oauth.revoke_refresh_tokens();
    let done = l.run_until(JobState::Failed).await;
    if refreshes(slug) {
        assert!(
            done.last_error
                .as_deref()
                .is_some_and(|e| e.contains("invalid_grant")),
            "{slug}: {done:?}"
        );
    } else {
        assert_eq!(l.oauth.token_requests(), 1, "{slug}: no refresh: {done:?}");
    }
    assert_errored(slug, &l).await;
}

/// The connection is in error for its credentials, said by event, and nothing historical was
/// announced.
async fn assert_errored(slug: &str, l: &Linked) {
    l.assert_errored("provider_credential_error").await;
    let types = l.event_types().await;
    assert!(
        !types.iter().any(|t| t.starts_with("historical.data.")),
        "{slug}: {types:?}"
    );
}

/// Each `historical.data.*` event once.
async fn historical_once(slug: &str, l: &Linked) {
    let types = l.event_types().await;
    let historical: Vec<&String> = types
        .iter()
        .filter(|t| t.starts_with("historical."))
        .collect();
    let unique: std::collections::BTreeSet<&&String> = historical.iter().collect();
    assert!(!historical.is_empty(), "{slug}: {types:?}");
    assert_eq!(
        historical.len(),
        unique.len(),
        "{slug}: each once: {historical:?}"
    );
}

/// The connector's pull of the fixtures' days with the fake's own token, and ingest's counts
/// of its body (every leaf number summed).
async fn pull_fixture_days(slug: &str, connector: &dyn Connector, token: &str) -> (Pulled, u64) {
    let days = chrono::Duration::days(offset_days());
    let window = pull(
        &Resource::ALL,
        utc(2025, 2, 28) + days,
        utc(2025, 3, 5) + days,
    );
    connector.register(token, "member-faults").await.unwrap();
    let pulled = connector
        .pull(token, &window)
        .await
        .unwrap_or_else(|e| panic!("{slug}: {e:?}"));
    let screened = screen(pulled.body.clone(), &PushUser::default(), Utc::now()).unwrap();
    assert!(
        screened.dropped.is_empty(),
        "{slug}: {:?}",
        screened.dropped
    );
    let rows = total(&screened.batches.counts());
    (pulled, rows)
}

fn total(counts: &Value) -> u64 {
    match counts {
        Value::Number(n) => n.as_u64().unwrap_or(0),
        Value::Object(m) => m.values().map(total).sum(),
        Value::Array(a) => a.iter().map(total).sum(),
        _ => 0,
    }
}

async fn malformed_record(slug: &str) {
    let (fake, connector) = start(slug).await;
    let token = token(slug);
    let (clean, rows) = pull_fixture_days(slug, connector.as_ref(), token).await;
    assert!(rows > 0, "{slug}: the fixtures' days hold records");
    fake.malform_next();
    let (faulted, kept) = pull_fixture_days(slug, connector.as_ref(), token).await;
    assert_eq!(
        faulted.skipped,
        clean.skipped + 1,
        "{slug}: the malformed record is skipped and counted"
    );
    assert_eq!(
        kept, rows,
        "{slug}: the other records are kept, nothing more"
    );
}

/// The access token each fake accepts of its own.
fn token(slug: &str) -> &'static str {
    match slug {
        "oura" => sync::oura::fake_oura::TOKEN,
        "dexcom_v3" => sync::dexcom::fake_dexcom::TOKEN,
        "fitbit" => sync::fitbit::fake_fitbit::TOKEN,
        "withings" => sync::withings::fake_withings::TOKEN,
        "whoop" => sync::whoop::fake_whoop::TOKEN,
        "google_health" => sync::google_health::fake_google_health::TOKEN,
        "garmin" => sync::garmin::fake_garmin::TOKEN,
        "polar" => sync::polar::fake_polar::TOKEN,
        "strava" => sync::strava::fake_strava::TOKEN,
        "ultrahuman" => sync::ultrahuman::fake_ultrahuman::TOKEN,
        other => panic!("no row for {other}"),
    }
}

/// The table: a module per provider (row), a test per fault (column).
macro_rules! table {
    ($($row:ident => $slug:literal),* $(,)?) => {$(
        mod $row {
            #[tokio::test(flavor = "multi_thread")]
            async fn rate_limited() {
                super::rate_limited($slug).await;
            }
            #[tokio::test(flavor = "multi_thread")]
            async fn server_storm() {
                super::server_storm($slug).await;
            }
            #[tokio::test(flavor = "multi_thread")]
            async fn expired_token() {
                super::expired_token($slug).await;
            }
            #[tokio::test(flavor = "multi_thread")]
            async fn revoked_token() {
                super::revoked_token($slug).await;
            }
            #[tokio::test(flavor = "multi_thread")]
            async fn malformed_record() {
                super::malformed_record($slug).await;
            }
        }
    )*};
}

table! {
    oura => "oura",
    dexcom => "dexcom_v3",
    fitbit => "fitbit",
    withings => "withings",
    whoop => "whoop",
    google_health => "google_health",
    garmin => "garmin",
    polar => "polar",
    strava => "strava",
    ultrahuman => "ultrahuman",
}
