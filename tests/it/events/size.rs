//! Issue 43: the metadata database does not grow with the pushed data, and finished work is
//! pruned. The size is measured, not timed (200 users, 2 days of 1/min heart rate each, one
//! push per user, events delivered to an endpoint): the SQLite database `VACUUM INTO` a fresh file
//! (every page in use, nothing free), before and after the pushes.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use serde_json::{Value, json};
use wearhouse::events::{Event, EventType, outbox};
use wearhouse::jobs::prune;
use wearhouse::store::metadata::MetadataStore;
use wearhouse::store::metadata::jobs::NewJob;

use crate::events::support::{Receiver, Server, WAIT, endpoint_at, server_meta, sqlite_meta};

/// The database's size in bytes: compacted into a new file, as a backup would copy it.
async fn database_bytes(meta: &MetadataStore, scratch: &Path, name: &str) -> u64 {
    let target = scratch.join(name);
    let mut conn = meta.writer().await.unwrap();
    sqlx::query(&format!("VACUUM INTO '{}'", target.display()))
        .execute(&mut *conn)
        .await
        .unwrap();
    std::fs::metadata(&target).unwrap().len()
}

/// `days` of 1/min heart rate from 2025-02-01.
fn heart_rate(days: i64, seed: i64) -> Value {
    let base = chrono::DateTime::parse_from_rfc3339("2025-02-01T00:00:00Z").unwrap();
    let hr: Vec<Value> = (0..days * 1440)
        .map(|i| {
            let at = base + chrono::Duration::minutes(i);
            json!({
                "timestamp": at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
                "value": 55 + (i * 7 + seed) % 40,
                "unit": "bpm",
            })
        })
        .collect();
    json!({ "provider": "oura", "timeseries": { "heartrate": hr } })
}

#[tokio::test(flavor = "multi_thread")]
async fn two_hundred_users_cost_under_two_database_bytes_per_pushed_sample() {
    const USERS: usize = 200;
    const DAYS: i64 = 2;
    let dir = tempfile::tempdir().unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &["--webhook-allow-private"], None);
    let rx = Receiver::start(true).await;
    server.endpoint(&rx.url, None).await;
    let mut users = Vec::with_capacity(USERS);
    for i in 0..USERS {
        users.push(server.user(&format!("size-{i}")).await);
    }
    let meta = server_meta(dir.path()).await;
    let before = database_bytes(&meta, scratch.path(), "before.db").await;

    let server = std::sync::Arc::new(server);
    let mut pushes = tokio::task::JoinSet::new();
    for chunk in users.chunks(USERS / 4) {
        let (server, chunk) = (server.clone(), chunk.to_vec());
        pushes.spawn(async move {
            for (i, user) in chunk.iter().enumerate() {
                let body = heart_rate(DAYS, i as i64);
                server.post(&format!("/v2/user/{user}/data"), body).await;
            }
        });
    }
    while let Some(done) = pushes.join_next().await {
        done.unwrap();
    }
    // Every user's connection event and heart-rate events, stored and delivered.
    server.events_until("", USERS * 2, WAIT * 4).await;
    let deadline = std::time::Instant::now() + WAIT * 4;
    let mut last = 0;
    loop {
        let (listed, got) = (server.events("").await.len(), rx.got().len());
        if listed == got && got == last {
            break;
        }
        last = got;
        assert!(
            std::time::Instant::now() < deadline,
            "{got} of {listed} delivered"
        );
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    }
    let after = database_bytes(&meta, scratch.path(), "after.db").await;
    let samples = (USERS as i64 * DAYS * 1440) as f64;
    let per_sample = (after - before) as f64 / samples;
    println!(
        "metadata database: {before} bytes before, {after} after {samples} samples: \
         {per_sample:.3} bytes per pushed sample"
    );
    // Events no longer copy the samples: the old inline bodies alone were ~108 bytes per
    // sample (`testdata/events/bytes_golden.txt`: 245,880 bytes for 2,265 samples).
    assert!(per_sample < 8.0, "{per_sample:.3} bytes per pushed sample");

    // Once the finished work's retention is over (`jobs.prune`: a day), what stays per user
    // is its connection, its events and their failed deliveries: the steady state.
    let later = chrono::Utc::now() + prune::KEEP_SUCCEEDED + chrono::Duration::hours(1);
    prune::prune(&meta, later).await.unwrap();
    let pruned = database_bytes(&meta, scratch.path(), "pruned.db").await;
    let steady = (pruned - before) as f64 / samples;
    println!("after pruning finished work: {pruned} bytes, {steady:.3} bytes per pushed sample");
    assert!(steady < 2.0, "{steady:.3} bytes per pushed sample");
}

async fn count(meta: &MetadataStore, sql: &str) -> i64 {
    let mut conn = meta.reader().await.unwrap();
    sqlx::query_scalar(sql).fetch_one(&mut *conn).await.unwrap()
}

async fn exec(meta: &MetadataStore, sql: &str) {
    let mut conn = meta.writer().await.unwrap();
    sqlx::query(sql).execute(&mut *conn).await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn pruning_removes_finished_work_past_its_retention_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    pruning_case(sqlite_meta(dir.path()).await).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn pruning_works_on_postgresql() {
    let db = crate::support::postgres::ScratchDb::create("wearhouse_prune").await;
    pruning_case(MetadataStore::connect(&db.url).await.unwrap()).await;
    db.drop_db().await;
}

async fn pruning_case(meta: MetadataStore) {
    let (team, _) = meta.create_team("prune").await.unwrap();
    endpoint_at(&meta, team.id, "http://127.0.0.1:9/hook").await;
    let now = chrono::Utc::now();
    let at = |days: i64| {
        (now - chrono::Duration::days(days)).to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
    };
    // Jobs: one of each state and age.
    let cases = [
        ("old-succeeded", "succeeded", Some(2), false),
        ("new-succeeded", "succeeded", Some(0), true),
        ("old-failed", "failed", Some(31), false),
        ("recent-failed", "failed", Some(10), true),
        ("pending", "pending", None, true),
        ("running", "running", None, true),
    ];
    for (key, state, age, _) in cases {
        let job = NewJob {
            kind: "test.noop".to_owned(),
            team_id: None,
            payload: json!({}),
            run_at: now,
            unique_key: Some(key.to_owned()),
            max_attempts: 1,
        };
        let mut conn = meta.writer().await.unwrap();
        wearhouse::jobs::enqueue(&mut conn, &job).await.unwrap();
        drop(conn);
        let finished = age.map_or("NULL".to_owned(), |d| format!("'{}'", at(d)));
        exec(
            &meta,
            &format!(
                "UPDATE jobs SET state = '{state}', finished_at = {finished} \
                 WHERE unique_key = '{key}'"
            ),
        )
        .await;
    }
    // Deliveries: one per status and age (a test event each, to the endpoint).
    let deliveries = [
        ("succeeded", 2, false),
        ("succeeded", 0, true),
        ("failed", 2, true),
        ("pending", 2, true),
    ];
    for (i, (status, age, _)) in deliveries.iter().enumerate() {
        let event = Event {
            event_type: EventType::parse("labtest.order.created").unwrap(),
            user: None,
            data: json!({ "n": i }),
        };
        let out = outbox::publish(&meta, team.id, &[event]).await.unwrap();
        let id = out.events[0];
        exec(
            &meta,
            &format!(
                "UPDATE webhook_deliveries SET status = '{status}', last_attempt_at = '{}' \
                 WHERE event_id = '{id}'",
                at(*age)
            ),
        )
        .await;
        exec(
            &meta,
            &format!(
                "INSERT INTO webhook_attempts (id, delivery_id, attempted_at, duration_ms) \
                 SELECT id || '-a', id, last_attempt_at, 1 FROM webhook_deliveries \
                 WHERE event_id = '{id}'"
            ),
        )
        .await;
    }
    let jobs_before = count(&meta, "SELECT COUNT(*) FROM jobs").await;

    let out = prune::prune(&meta, now).await.unwrap();
    assert_eq!(
        (out.succeeded_jobs, out.failed_jobs, out.deliveries),
        (1, 1, 1)
    );
    for (key, _, _, kept) in cases {
        let n = count(
            &meta,
            &format!("SELECT COUNT(*) FROM jobs WHERE unique_key = '{key}'"),
        )
        .await;
        assert_eq!(n == 1, kept, "job {key}");
    }
    assert_eq!(
        count(&meta, "SELECT COUNT(*) FROM jobs").await,
        jobs_before - 2,
        "no other job is touched (the deliveries' own stream jobs stay)"
    );
    let left: Vec<(String, String)> = {
        let mut conn = meta.reader().await.unwrap();
        sqlx::query_as("SELECT status, last_attempt_at FROM webhook_deliveries ORDER BY status")
            .fetch_all(&mut *conn)
            .await
            .unwrap()
    };
    let kept: Vec<(&str, String)> = deliveries
        .iter()
        .filter(|d| d.2)
        .map(|(s, age, _)| (*s, at(*age)))
        .collect();
    let mut want: Vec<(String, String)> = kept
        .iter()
        .map(|(s, t)| (s.to_string(), t.clone()))
        .collect();
    want.sort();
    assert_eq!(left, want);
    assert_eq!(
        count(&meta, "SELECT COUNT(*) FROM webhook_attempts").await,
        3,
        "the removed delivery's attempts went with it"
    );
    assert_eq!(
        count(&meta, "SELECT COUNT(*) FROM events").await,
        4,
        "events are left to their own retention"
    );
    // Nothing more to do on a second pass.
    assert_eq!(
        prune::prune(&meta, now).await.unwrap(),
        prune::Pruned::default()
    );
}
