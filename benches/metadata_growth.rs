//! Metadata database growth bench (seeded, self-checking): `cargo bench -- "metadata growth"`.
//! Not timed: it measures what issue 43 measured from outside, the metadata
//! database's bytes per pushed sample.
//!
//! Scenario: `many users × 14 days of 1/min heart rate` (1,000 users by default;
//! `WEARHOUSE_BENCH_USERS` and `WEARHOUSE_BENCH_DAYS` change it), one push of the whole span
//! per user through the push path (`data::push_json`), announced (`events.push`'s work), one
//! endpoint subscribed, so every event has its delivery. The database is `VACUUM INTO` a new
//! file before and after the pushes, and again once the finished work's retention is over
//! (`jobs::prune`). It prints the three sizes and the bytes per pushed sample, and fails when
//! the steady state is over 2 bytes per sample (the goal; it was ~105 bytes before
//! events stopped copying the samples).

#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::print_stdout,
    missing_docs
)]

use serde_json::{Value, json};
use wearhouse::store::health::HealthStore;
use wearhouse::store::metadata::{MetadataStore, NewUser};

fn env(name: &str, default: i64) -> i64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn push_body(days: i64, seed: i64) -> Vec<u8> {
    let base = chrono::DateTime::parse_from_rfc3339("2025-01-01T00:00:00Z").unwrap();
    let samples: Vec<Value> = (0..days * 1440)
        .map(|i| {
            let at = base + chrono::Duration::minutes(i);
            json!({"timestamp": at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
                   "value": 50 + (i * 7 + seed) % 60, "unit": "bpm"})
        })
        .collect();
    json!({"provider": "oura", "timeseries": {"heartrate": samples}})
        .to_string()
        .into_bytes()
}

async fn bytes(meta: &MetadataStore, dir: &std::path::Path, name: &str) -> u64 {
    let target = dir.join(name);
    let mut conn = meta.writer().await.unwrap();
    sqlx::query(&format!("VACUUM INTO '{}'", target.display()))
        .execute(&mut *conn)
        .await
        .unwrap();
    std::fs::metadata(&target).unwrap().len()
}

async fn run(users: i64, days: i64) {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}?mode=rwc", dir.path().join("meta.db").display());
    let meta = MetadataStore::connect(&url).await.unwrap();
    let health = HealthStore::open(
        &dir.path().join("health").display().to_string(),
        Default::default(),
    )
    .unwrap();
    let (team, _) = meta.create_team("bench").await.unwrap();
    let rules = wearhouse::events::UrlRules {
        allow_private: true,
    };
    wearhouse::events::endpoints::create(
        &meta,
        &rules,
        team.id,
        &json!({ "url": "https://example.com/hook" }),
    )
    .await
    .unwrap();
    let mut all = Vec::new();
    for i in 0..users {
        let new = NewUser {
            client_user_id: format!("u{i}"),
            ..NewUser::default()
        };
        all.push(meta.create_user(team.id, new).await.unwrap());
    }
    let before = bytes(&meta, dir.path(), "before.db").await;
    for (i, user) in all.iter().enumerate() {
        let body = push_body(days, i as i64);
        wearhouse::data::push_json(&meta, &health, user, body.into(), chrono::Utc::now())
            .await
            .unwrap();
        wearhouse::data::announce::announce(&meta, &health, user.id, chrono::Utc::now())
            .await
            .unwrap();
    }
    let after = bytes(&meta, dir.path(), "after.db").await;
    let later = chrono::Utc::now() + wearhouse::jobs::prune::KEEP_SUCCEEDED * 2;
    wearhouse::jobs::prune::prune(&meta, later).await.unwrap();
    let steady = bytes(&meta, dir.path(), "steady.db").await;
    let samples = (users * days * 1440) as f64;
    let per = |b: u64| b.saturating_sub(before) as f64 / samples;
    println!(
        "metadata_growth/{users} users x {days} days of 1/min heart rate: {before} bytes before, \
         {after} after ({:.3} bytes per pushed sample), {steady} once finished work is pruned \
         ({:.3} bytes per pushed sample)",
        per(after),
        per(steady)
    );
    assert!(
        per(steady) < 2.0,
        "{:.3} bytes per pushed sample",
        per(steady)
    );
}

/// Runs the measurement when the bench filter (the first argument not starting with `-`, as
/// criterion reads it) is absent or names it (`metadata growth`). It is not a criterion
/// benchmark: a size is measured once, not a time sampled. Under `--test` (what `cargo test
/// --benches` passes) it runs small (20 users × 2 days) and still checks the goal.
pub fn benches() {
    let Some(test_mode) = crate::one_pass("metadata growth") else {
        return;
    };
    let (users, days) = if test_mode {
        (20, 2)
    } else {
        (
            env("WEARHOUSE_BENCH_USERS", 1000),
            env("WEARHOUSE_BENCH_DAYS", 14),
        )
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(run(users, days));
}
