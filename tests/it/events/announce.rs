//! What is announced and when: a demo connection's events, a push whose process died before
//! releasing its plan, and a push changed before its announcement.

use std::time::Duration;

use super::support::{Received, Receiver, Server, WAIT, assert_verified, push_body};
use serde_json::{Value, json};

use super::support;
use super::{ALLOW, of_type};

#[tokio::test(flavor = "multi_thread")]
async fn a_demo_connection_emits_connection_and_historical_events() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), ALLOW, None);
    let rx = Receiver::start(true).await;
    let (_, secret) = server.endpoint(&rx.url, None).await;
    let user = server.user("demo").await;
    server
        .post(
            "/v2/link/connect/demo",
            json!({"user_id": user, "provider": "oura", "days": 3}),
        )
        .await;
    let got = rx
        // Each data type's historical event is delivered on its own: wait for the sleep one
        // (waiting for any of them raced with the sleep event's delivery).
        .wait_for(WAIT, "demo events", |g| {
            !of_type(g, "provider.connection.created").is_empty()
                && !of_type(g, "historical.data.sleep.created").is_empty()
        })
        .await;
    let historical: Vec<Value> = got
        .iter()
        .filter(|r| r.event_type().starts_with("historical.data."))
        .map(Received::json)
        .collect();
    assert!(
        historical
            .iter()
            .any(|h| h["event_type"] == "historical.data.sleep.created")
    );
    for h in &historical {
        assert_eq!(h["data"]["provider"]["slug"], "oura");
        assert!(
            h["data"]["start_date"].as_str().unwrap() < h["data"]["end_date"].as_str().unwrap()
        );
    }
    assert!(
        of_type(&got, "daily.data.sleep.created").is_empty(),
        "a pull emits historical events, not daily ones"
    );
    assert_verified(&secret, &got);
}

/// A push whose data committed but whose process died before releasing its plan (the crash
/// window between the durable write and the connection's transaction): at the plan's expiry,
/// announcing finds the push's records in the store and announces them, with the connection; a
/// plan whose data never landed is dropped; a live plan holds back the user's later pushes.
#[tokio::test(flavor = "multi_thread")]
async fn an_unreleased_push_is_announced_at_its_expiry_if_it_committed_and_dropped_if_not() {
    use wearhouse::data::announce;
    use wearhouse::events::history;
    use wearhouse::store::health::HealthStore;

    let dir = tempfile::tempdir().unwrap();
    let meta = support::sqlite_meta(dir.path()).await;
    let health = HealthStore::open(
        &dir.path().join("health").display().to_string(),
        Default::default(),
    )
    .unwrap();
    let (team, _) = meta.create_team("acme").await.unwrap();
    let endpoint = support::endpoint_at(&meta, team.id, "http://127.0.0.1:9/h").await;
    let user = crate::support::new_user(&meta, team.id, "u").await;
    let begin = |body: Value, at: chrono::DateTime<chrono::Utc>| {
        let (meta, health, user) = (meta.clone(), health.clone(), user.clone());
        async move {
            let bytes = body.to_string().into_bytes();
            let parsed =
                wearhouse::ingest::parse_push_json(&bytes, &Default::default(), at).unwrap();
            let pending = wearhouse::data::begin_push(&meta, &health, &user, &parsed, at)
                .await
                .unwrap()
                .expect("a push of new samples has something to announce");
            (parsed, pending)
        }
    };
    let now = chrono::Utc::now();
    // Committed, then the process "dies" before the release.
    let (parsed, committed) = begin(push_body(0, 5, 60.0), now).await;
    wearhouse::data::write_parsed(&meta, &health, &user, parsed)
        .await
        .unwrap();
    // Never committed.
    let later_push = now + chrono::Duration::milliseconds(1);
    let (_, lost) = begin(push_body(100_000, 5, 70.0), later_push).await;
    let early = announce::announce(&meta, &health, user.id, chrono::Utc::now())
        .await
        .unwrap();
    assert_eq!(
        (early.pushes, early.dropped, early.next),
        (0, 0, Some(committed.expires_at)),
        "a live plan is left alone, and waits for its expiry"
    );
    let expired = lost.expires_at + chrono::Duration::seconds(1);
    let out = announce::announce(&meta, &health, user.id, expired)
        .await
        .unwrap();
    assert_eq!((out.pushes, out.dropped, out.next), (1, 1, None));
    let listed = history::events(&meta, &health, team.id, None, None, None, None, 100)
        .await
        .unwrap()
        .0;
    let types: Vec<&str> = listed.iter().map(|e| e.event_type.as_str()).collect();
    assert_eq!(
        types,
        [
            "provider.connection.created",
            "daily.data.heartrate.created"
        ],
        "the committed push is announced, the lost one is not"
    );
    let body: Value = serde_json::from_str(&listed[1].body).unwrap();
    let values: Vec<f64> = body["data"]["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["value"].as_f64().unwrap())
        .collect();
    assert_eq!(values, [60.0; 5], "the committed push's own samples");
    let (deliveries, _) = history::deliveries(&meta, team.id, endpoint.id, None, None, 10)
        .await
        .unwrap();
    assert_eq!(deliveries.len(), 2);
    let connections = meta.connections(user.id).await.unwrap();
    assert_eq!(
        connections[0].provider, "oura",
        "the connection the push made is recorded"
    );
    // Nothing is left to announce: a second pass writes nothing.
    let again = announce::announce(&meta, &health, user.id, expired)
        .await
        .unwrap();
    assert_eq!((again.pushes, again.dropped, again.events), (0, 0, 0));
}

/// A push whose samples a later push changes before the first is announced is still announced
/// as it was pushed: every sample created, with its first value; then the changed ones updated,
/// with the second. The `store.compact` job, which would drop the replaced rows, waits until
/// both are announced.
#[tokio::test(flavor = "multi_thread")]
async fn a_push_changed_before_its_announcement_is_announced_as_it_was_pushed() {
    use std::sync::Arc;
    use wearhouse::data::announce;
    use wearhouse::events::history;
    use wearhouse::jobs::{Clock, JobState, ManualClock, Registry, Runner, compaction::Compaction};
    use wearhouse::store::health::{HealthStore, StoreOptions};
    use wearhouse::store::metadata::NewUser;
    use wearhouse::store::metadata::jobs::{JobFilter, list_jobs};

    let dir = tempfile::tempdir().unwrap();
    let meta = support::sqlite_meta(dir.path()).await;
    let options = StoreOptions {
        compact_min_segments: 2,
        ..StoreOptions::default()
    };
    let health =
        HealthStore::open(&dir.path().join("health").display().to_string(), options).unwrap();
    let (team, _) = meta.create_team("acme").await.unwrap();
    let new_user = NewUser {
        client_user_id: "u".to_owned(),
        ..NewUser::default()
    };
    let user = meta.create_user(team.id, new_user).await.unwrap();
    let push = |body: Value| {
        let (meta, health, user) = (meta.clone(), health.clone(), user.clone());
        async move {
            let bytes = body.to_string().into_bytes().into();
            wearhouse::data::push_json(&meta, &health, &user, bytes, chrono::Utc::now())
                .await
                .unwrap();
        }
    };
    push(push_body(0, 10, 60.0)).await;
    push(push_body(0, 4, 70.0)).await;

    // The pushes asked for a compaction, and it is due (two segments): it must wait.
    let clock = Arc::new(ManualClock::new(
        chrono::Utc::now() + chrono::Duration::seconds(31),
    ));
    let registry = Registry::new().register(Compaction::new(health.clone()));
    let config = crate::jobs::support::config("compactor", Duration::from_secs(30));
    let runner = Runner::new(meta.clone(), registry, config)
        .with_clock(clock.clone())
        .spawn();
    let filter = JobFilter {
        team: None,
        state: None,
        kind: Some("store.compact".into()),
    };
    let started = std::time::Instant::now();
    let job = loop {
        let mut conn = meta.writer().await.unwrap();
        let (jobs, _) = list_jobs(&mut conn, &filter, 0, 10).await.unwrap();
        drop(conn);
        let job = jobs
            .into_iter()
            .next()
            .expect("the pushes asked for a compaction");
        // Run, found the pushes unannounced, and put off to later than the clock shows.
        if job.state == JobState::Pending && job.run_at > clock.now() {
            break job;
        }
        assert!(
            started.elapsed() < WAIT,
            "the compaction was not put off: {job:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(health.metrics().compactions, 0, "nothing merged yet");

    let out = announce::announce(&meta, &health, user.id, chrono::Utc::now())
        .await
        .unwrap();
    assert_eq!(out.pushes, 2);
    let listed = history::events(&meta, &health, team.id, None, None, None, None, 100)
        .await
        .unwrap()
        .0;
    let summary: Vec<(&str, Vec<f64>)> = listed
        .iter()
        .map(|e| {
            let body: Value = serde_json::from_str(&e.body).unwrap();
            let values = body["data"]["data"]
                .as_array()
                .map(|samples| {
                    samples
                        .iter()
                        .map(|s| s["value"].as_f64().unwrap())
                        .collect()
                })
                .unwrap_or_default();
            (e.event_type.as_str(), values)
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("provider.connection.created", vec![]),
            ("daily.data.heartrate.created", vec![60.0; 10]),
            ("daily.data.heartrate.updated", vec![70.0; 4]),
        ]
    );

    // Announced, the dataset is merged on the job's next run, keeping the newest versions.
    clock.advance(chrono::Duration::seconds(10));
    let done = crate::jobs::support::wait_for(&meta, job.id, JobState::Succeeded, WAIT).await;
    runner.shutdown().await;
    assert_eq!(done.kind, "store.compact");
    assert_eq!(health.metrics().compactions, 1);
    let dataset =
        wearhouse::schema::Dataset::Timeseries(wearhouse::schema::resource("heartrate").unwrap());
    let rows = health.read(team.id, user.id, dataset, None).await.unwrap();
    let values: Vec<f64> = rows
        .iter()
        .flat_map(|b| {
            let column = b.column_by_name("value").unwrap();
            let column = column
                .as_any()
                .downcast_ref::<datafusion::arrow::array::Float64Array>()
                .unwrap();
            column.values().to_vec()
        })
        .collect();
    assert_eq!(values, [[70.0; 4].as_slice(), &[60.0; 6]].concat());
}
