//! Demo connections through the real pull path (issue 15, item 4): `POST /v2/link/connect/demo`
//! makes the connection at once and enqueues the `sync.historical` job the runner pulls (the
//! demo generator standing in for the provider's API); the stored history is exactly the
//! generator's; connecting again starts a new history; the user's ingestion bounds narrow it;
//! `POST /v2/user/refresh` pulls it incrementally.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use chrono::{DateTime, Utc};
use serde_json::{Value, json};
use uuid::Uuid;

use crate::support::TestApp;
use wearhouse::store::metadata::sync_pulls::{self, ConnectionSync};
use wearhouse::sync::connectors::demo::generator::{Persona, generate};
use wearhouse::sync::connectors::demo::{merge_bodies, seed_for};

/// Nights the generator makes for `user` that end in `(start, end]`: what a demo pull of that
/// window stores.
fn generated_sleeps(
    user: &str,
    provider: &str,
    persona: Persona,
    (start, end): (DateTime<Utc>, DateTime<Utc>),
) -> usize {
    let seed = seed_for(user.parse().unwrap());
    // From the day before (a local day behind UTC runs into the next UTC day), a year at a time.
    let mut bodies = Vec::new();
    let mut day = start.date_naive() - chrono::Days::new(1);
    while day <= end.date_naive() {
        let last = (day + chrono::Days::new(364)).min(end.date_naive());
        let days = u32::try_from((last - day).num_days() + 1).unwrap();
        bodies.extend(generate(provider, persona, seed, last, days).unwrap());
        day = last + chrono::Days::new(1);
    }
    merge_bodies(bodies)
        .iter()
        .flat_map(|b| b["sleep"].as_array().cloned().unwrap_or_default())
        .filter(|night| {
            let stop = night["bedtime_stop"].as_str().unwrap();
            let stop = DateTime::parse_from_rfc3339(stop).unwrap();
            start < stop && stop <= end
        })
        .count()
}

/// The window of a connection's historical pull.
fn history(row: &ConnectionSync) -> (DateTime<Utc>, DateTime<Utc>) {
    (row.window_start, row.window_end)
}

async fn sleeps(app: &TestApp, user: &str) -> Vec<Value> {
    let start = Utc::now().date_naive() - chrono::Days::new(40);
    let a = app
        .get(&format!("/v2/summary/sleep/{user}?start_date={start}"))
        .await;
    assert_eq!(a.status, 200, "{}", a.json);
    a.json["sleep"].as_array().unwrap().clone()
}

async fn sync_row(app: &TestApp, user: &str, provider: &str) -> ConnectionSync {
    let mut conn = app.state.meta.reader().await.unwrap();
    let id: Uuid = user.parse().unwrap();
    sync_pulls::get(&mut conn, id, provider)
        .await
        .unwrap()
        .expect("a sync row")
}

#[tokio::test(flavor = "multi_thread")]
async fn a_demo_connection_is_pulled_by_the_jobs_and_stores_exactly_the_generators_history() {
    let app = TestApp::new().await;
    let user = app.user("demo-pulled").await;
    let a = app
        .post(
            "/v2/link/connect/demo",
            json!({"user_id": user, "provider": "oura", "days": 21}),
        )
        .await;
    assert_eq!(a.status, 200, "{}", a.json);
    assert_eq!(a.json["history_pulling"], true, "{}", a.json);
    // Connected at once; the history is the job's.
    assert!(sleeps(&app, &user).await.is_empty());
    let row = sync_row(&app, &user, "oura").await;
    assert_eq!(row.demo_persona.as_deref(), Some("regular"));
    assert_eq!(row.completed_at, None);
    let today = Utc::now().date_naive();
    assert_eq!(row.window_start.date_naive(), today - chrono::Days::new(20));
    assert!(row.window_end <= Utc::now() && row.window_end.date_naive() == today);

    app.pull_history(&user).await;
    let expected = generated_sleeps(&user, "oura", Persona::Regular, history(&row));
    assert!(expected >= 15, "the generator made {expected} nights");
    assert_eq!(sleeps(&app, &user).await.len(), expected);
    let row = sync_row(&app, &user, "oura").await;
    assert!(row.completed_at.is_some());
    assert_eq!(row.done_until, row.window_end);
    let types = app.event_types(&user).await;
    assert!(
        types.contains(&"provider.connection.created".to_owned()),
        "{types:?}"
    );
    assert!(
        types.contains(&"historical.data.sleep.created".to_owned()),
        "{types:?}"
    );
    assert!(
        types.contains(&"historical.data.heartrate.created".to_owned()),
        "{types:?}"
    );

    // Pulled again (the same chunks), nothing is stored twice.
    app.post(
        "/v2/link/connect/demo",
        json!({"user_id": user, "provider": "oura", "days": 21}),
    )
    .await;
    app.pull_history(&user).await;
    let again = sync_row(&app, &user, "oura").await;
    let expected = generated_sleeps(&user, "oura", Persona::Regular, history(&again));
    assert_eq!(sleeps(&app, &user).await.len(), expected);
}

#[tokio::test(flavor = "multi_thread")]
async fn connecting_again_starts_a_new_history_with_the_new_persona_and_length() {
    let app = TestApp::new().await;
    let user = app.user("demo-again").await;
    app.demo_connect(&user, "fitbit", 3).await;
    let first = sync_row(&app, &user, "fitbit").await;
    let today = Utc::now().date_naive();
    assert_eq!(
        first.window_start.date_naive(),
        today - chrono::Days::new(2)
    );

    let a = app
        .post(
            "/v2/link/connect/demo",
            json!({"user_id": user, "provider": "fitbit", "days": 8, "persona": "athlete"}),
        )
        .await;
    assert_eq!(a.json["history_pulling"], true, "{}", a.json);
    let again = sync_row(&app, &user, "fitbit").await;
    assert_eq!(again.demo_persona.as_deref(), Some("athlete"));
    assert_eq!(again.completed_at, None);
    assert_eq!(
        again.window_start.date_naive(),
        today - chrono::Days::new(7)
    );
    // Another request before that pull ran replaces it.
    let a = app
        .post(
            "/v2/link/connect/demo",
            json!({"user_id": user, "provider": "fitbit", "days": 30}),
        )
        .await;
    assert_eq!(a.status, 200, "{}", a.json);
    assert_eq!(a.json["history_pulling"], true, "{}", a.json);
    app.pull_history(&user).await;
    let done = sync_row(&app, &user, "fitbit").await;
    assert_eq!(
        done.window_start.date_naive(),
        today - chrono::Days::new(29)
    );
    assert_eq!(done.demo_persona.as_deref(), Some("regular"));
    assert!(done.completed_at.is_some());
    // Only one connection.created: the connection was there for the second and third.
    let types = app.event_types(&user).await;
    let created = types
        .iter()
        .filter(|t| *t == "provider.connection.created")
        .count();
    assert_eq!(created, 1, "{types:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_users_ingestion_bounds_narrow_the_demo_history() {
    let app = TestApp::new().await;
    let today = Utc::now().date_naive();
    let first = today - chrono::Days::new(2);
    let a = app
        .post(
            "/v2/user",
            json!({"client_user_id": "bounded", "ingestion_start": first.to_string()}),
        )
        .await;
    assert_eq!(a.status, 200, "{}", a.json);
    let user = a.json["user_id"].as_str().unwrap().to_owned();
    app.demo_connect(&user, "oura", 30).await;
    let row = sync_row(&app, &user, "oura").await;
    assert_eq!(row.window_start.date_naive(), first);
    assert_eq!(
        sleeps(&app, &user).await.len(),
        generated_sleeps(&user, "oura", Persona::Regular, history(&row))
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_refresh_pulls_a_demo_connection_incrementally() {
    let app = TestApp::new().await;
    let user = app.user("demo-refresh").await;
    app.demo_connect(&user, "oura", 5).await;
    let registry = wearhouse::app::job_registry(&app.state);
    let config = crate::jobs::support::config("refresh", std::time::Duration::from_secs(30));
    let runner = wearhouse::jobs::Runner::new(app.state.meta.clone(), registry, config).spawn();
    let a = app
        .post(&format!("/v2/user/refresh/{user}?timeout=20"), json!({}))
        .await;
    runner.shutdown().await;
    assert_eq!(a.status, 200, "{}", a.json);
    assert_eq!(a.json["success"], true, "{}", a.json);
    assert_eq!(a.json["in_progress_sources"], json!([]), "{}", a.json);
    let refreshed: Vec<&str> = a.json["refreshed_sources"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(refreshed.contains(&"oura/heartrate"), "{refreshed:?}");
    let row = sync_row(&app, &user, "oura").await;
    assert!(row.synced_at.is_some(), "{row:?}");
    // Still a demo pull, and the history is unchanged by the overlap re-pulled.
    assert_eq!(row.demo_persona.as_deref(), Some("regular"));
    let pulled = (row.window_start, row.synced_until);
    assert_eq!(
        sleeps(&app, &user).await.len(),
        generated_sleeps(&user, "oura", Persona::Regular, pulled)
    );
}

/// The real binary, killed with SIGKILL while a three-year demo history is being pulled, and
/// started again: the pull resumes (as a demo pull: the persona is on its sync row) and every
/// night is stored once, announced once.
#[tokio::test(flavor = "multi_thread")]
async fn a_demo_pull_killed_midway_completes_after_restart_with_every_record_once() {
    use crate::events::support::Server;
    use std::time::{Duration, Instant};

    let dir = tempfile::tempdir().unwrap();
    // A short lease: the dead runner's claim runs out in seconds.
    let args = ["--job-lease-secs", "3"];
    let server = Server::start(dir.path(), &args, None);
    async fn post(server: &Server, path: &str, body: Value) -> Value {
        let (status, answer) = server.call("POST", path, &server.key, Some(body)).await;
        assert_eq!(status, 200, "{answer}");
        answer
    }
    let created = post(&server, "/v2/user/", json!({"client_user_id": "killed"})).await;
    let user = created["user_id"].as_str().unwrap().to_owned();
    const DAYS: u32 = 1100;
    let asked = Utc::now();
    let connected = post(
        &server,
        "/v2/link/connect/demo",
        json!({"user_id": user, "provider": "oura", "days": DAYS, "persona": "traveller"}),
    )
    .await;
    assert_eq!(connected["history_pulling"], true, "{connected}");
    let answered = Utc::now();
    // Killed once the oldest chunk is stored, long before the 37th.
    let today = Utc::now().date_naive();
    let oldest = format!(
        "/v2/summary/sleep/{user}?start_date={}&end_date={}",
        today - chrono::Days::new(u64::from(DAYS)),
        today - chrono::Days::new(u64::from(DAYS) - 40)
    );
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let got = server.get(&oldest).await;
        if got["sleep"].as_array().is_some_and(|s| !s.is_empty()) {
            break;
        }
        assert!(Instant::now() < deadline, "no chunk stored: {got}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let key = server.key.clone();
    server.kill();

    let server = Server::start(dir.path(), &args, Some(key));
    let deadline = Instant::now() + Duration::from_secs(300);
    let job = loop {
        let jobs = server.get("/v2/team/jobs?kind=sync.historical").await;
        if jobs["jobs"][0]["state"] == "succeeded" {
            break jobs["jobs"][0].clone();
        }
        assert!(Instant::now() < deadline, "{jobs}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    // The first run was cut: the job was claimed again after the restart.
    assert!(job["attempts"].as_i64().unwrap() >= 2, "{job}");
    let all = format!(
        "/v2/summary/sleep/{user}?start_date={}&end_date={}",
        today - chrono::Days::new(u64::from(DAYS) + 1),
        today + chrono::Days::new(1)
    );
    let sleeps = server.get(&all).await;
    // The history ends when the connection was made, somewhere between the request and its
    // answer.
    let first = (today - chrono::Days::new(u64::from(DAYS) - 1))
        .and_hms_opt(0, 0, 0)
        .unwrap()
        .and_utc();
    let at_least = generated_sleeps(&user, "oura", Persona::Traveller, (first, asked));
    let at_most = generated_sleeps(&user, "oura", Persona::Traveller, (first, answered));
    assert!(at_least > 900, "{at_least}");
    let stored = sleeps["sleep"].as_array().map_or(0, Vec::len);
    assert!(
        (at_least..=at_most).contains(&stored),
        "every night exactly once: {stored} stored, {at_least}..={at_most} made"
    );
    let events = server
        .get(&format!("/v2/team/events?user_id={user}&limit=100"))
        .await;
    let historical = crate::sync_support::historical_once(&events);
    assert!(historical.contains(&"historical.data.sleep.created".to_owned()));
}

/// A run overtaken by a restart (a demo connection made again, a real link over a demo one)
/// can neither move the new pull's progress nor complete it: the store refuses its writes. On
/// SQLite and on PostgreSQL (`WEARHOUSE_TEST_POSTGRES_URL`, default the machine's server).
#[tokio::test]
async fn a_restarted_pull_refuses_the_writes_of_the_run_it_overtook() {
    let dir = tempfile::tempdir().unwrap();
    let sqlite = format!("sqlite://{}?mode=rwc", dir.path().join("meta.db").display());
    overtaken_writes_are_refused(&sqlite).await;
    let db = crate::support::postgres::ScratchDb::create("wearhouse_sync_demo").await;
    overtaken_writes_are_refused(&db.url).await;
    db.drop_db().await;
}

async fn overtaken_writes_are_refused(url: &str) {
    let meta = wearhouse::store::metadata::MetadataStore::connect(url)
        .await
        .unwrap();
    let (team, _) = meta.create_team("acme").await.unwrap();
    let new_user = wearhouse::store::metadata::NewUser {
        client_user_id: "overtaken".into(),
        ..Default::default()
    };
    let user = meta.create_user(team.id, new_user).await.unwrap().id;
    let start = Utc::now() - chrono::Duration::days(10);
    let old = ConnectionSync {
        user_id: user,
        provider: "oura".into(),
        team_id: team.id,
        window_start: start,
        window_end: start + chrono::Duration::days(10),
        done_until: start,
        resources: vec![],
        completed_at: None,
        synced_until: start + chrono::Duration::days(10),
        synced_at: None,
        synced_resources: vec![],
        failed: None,
        demo_persona: Some("regular".into()),
    };
    let mut conn = meta.writer().await.unwrap();
    assert!(
        sync_pulls::start(&mut conn, &old, Utc::now())
            .await
            .unwrap()
    );
    let stored = sync_pulls::get(&mut conn, user, "oura")
        .await
        .unwrap()
        .unwrap();
    // The real provider is linked over the demo pull: same window, another kind.
    let new = ConnectionSync {
        demo_persona: None,
        ..stored.clone()
    };
    assert!(sync_pulls::restart(&mut conn, &new).await.unwrap());
    let chunk = ConnectionSync {
        done_until: stored.window_start + chrono::Duration::days(5),
        ..stored.clone()
    };
    let from = stored.window_start;
    assert!(!sync_pulls::advance(&mut conn, &chunk, from).await.unwrap());
    let finished = ConnectionSync {
        done_until: stored.window_end,
        ..stored.clone()
    };
    assert!(
        !sync_pulls::complete(&mut conn, &finished, Utc::now())
            .await
            .unwrap()
    );
    let row = sync_pulls::get(&mut conn, user, "oura")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(row.done_until, stored.window_start);
    assert_eq!(row.demo_persona, None);
    // The new pull's own run moves it, and only from where it is.
    let ahead = ConnectionSync {
        done_until: stored.window_end,
        ..new.clone()
    };
    assert!(sync_pulls::advance(&mut conn, &ahead, from).await.unwrap());
    assert!(!sync_pulls::advance(&mut conn, &ahead, from).await.unwrap());
    assert!(
        sync_pulls::complete(&mut conn, &ahead, Utc::now())
            .await
            .unwrap()
    );
    assert!(
        !sync_pulls::complete(&mut conn, &ahead, Utc::now())
            .await
            .unwrap()
    );
    drop(conn);
    meta.close().await;
}
