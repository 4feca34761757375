//! What the sync tests share: instants, pulls and the fixture check for the connector tests
//! against their fakes, [`failures`] (the failure kinds a connector's pull surfaces, asserted
//! alike for every connector), and [`linked`], the end-to-end harness (a provider's connector
//! behind the app, linked through OAuth, pulled by the real job runner, and the checks the
//! end-to-end suites share).

pub mod failures;
pub mod linked;

use chrono::{DateTime, TimeZone, Utc};
use wearhouse::sync::{Pull, Resource, Window};

/// Midnight UTC of a day.
pub fn utc(y: i32, m: u32, d: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(y, m, d, 0, 0, 0).unwrap()
}

/// A pull of `resources` over `[start, end)`.
pub fn pull(resources: &[Resource], start: DateTime<Utc>, end: DateTime<Utc>) -> Pull {
    Pull {
        resources: resources.to_vec(),
        window: Window::new(start, end).unwrap(),
    }
}

/// Every resource over the fixtures' days, 2025-03-01 to 03-03.
pub fn all_march() -> Pull {
    pull(&Resource::ALL, utc(2025, 3, 1), utc(2025, 3, 4))
}

/// Checks that each part of a pulled body is the same part of the fixture file that expects
/// it: `parts` are (file, JSON pointer), `fixture` reads the provider's files.
pub fn assert_parts(
    body: &serde_json::Value,
    fixture: fn(&str) -> serde_json::Value,
    parts: &[(&str, &str)],
) {
    for (file, pointer) in parts {
        let want = fixture(file).pointer(pointer).cloned().unwrap();
        let got = body.pointer(pointer).cloned().unwrap_or_default();
        assert_eq!(got, want, "{pointer} of {file}");
    }
}

/// The `historical.*` event types of a `GET /v2/team/events` answer, each checked to be there
/// once.
pub fn historical_once(events: &serde_json::Value) -> Vec<String> {
    let historical: Vec<String> = events["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["event_type"].as_str())
        .filter(|t| t.starts_with("historical."))
        .map(str::to_owned)
        .collect();
    let unique: std::collections::BTreeSet<&String> = historical.iter().collect();
    assert_eq!(historical.len(), unique.len(), "each once: {historical:?}");
    historical
}

/// The team's jobs of `kind` (the first 10, newest first as the job list orders them).
pub async fn team_jobs(app: &crate::support::TestApp, kind: &str) -> Vec<wearhouse::jobs::Job> {
    let team = app.team().await;
    let filter = wearhouse::store::metadata::jobs::JobFilter {
        team: Some(team.id),
        state: None,
        kind: Some(kind.into()),
    };
    let mut conn = app.state.meta.writer().await.unwrap();
    let (jobs, _) = wearhouse::store::metadata::jobs::list_jobs(&mut conn, &filter, 0, 10)
        .await
        .unwrap();
    jobs
}

/// The team's incremental pull jobs: (user, due time).
pub async fn incremental_jobs(
    app: &crate::support::TestApp,
) -> Vec<(serde_json::Value, DateTime<Utc>)> {
    team_jobs(app, "sync.incremental")
        .await
        .into_iter()
        .map(|j| (j.payload["user"].clone(), j.run_at))
        .collect()
}
