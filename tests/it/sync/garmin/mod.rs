//! The Garmin connector (issue 37) against [`fake_garmin`], a fake Garmin Health and Activity
//! API on a loopback port: the user's id, a pull of every resource into the fixtures' bodies,
//! the upload windows asked, and the failure kinds (429 with `Retry-After`, 401, 403, 500).
//! [`end_to_end`] runs the same fake behind the app: OAuth link, historical pull job, getters,
//! an aggregate query, incremental pulls; [`notify`] Garmin's unsigned pings.

pub(super) mod end_to_end;
pub mod fake_garmin;
mod notify;

use chrono::Utc;
use serde_json::json;

use crate::sync::support::{all_march, assert_parts, pull, utc};
use fake_garmin::{Data, FakeGarmin, Fault, GARMIN_USER, TOKEN, TYPES, fixture, fixture_data};
use wearhouse::ingest::PushUser;
use wearhouse::sync::connectors::garmin::Garmin;
use wearhouse::sync::{Connector, Resource, SyncError, screen};

#[tokio::test]
async fn every_upload_window_is_pulled_into_the_fixtures_bodies() {
    let fake = FakeGarmin::start(fixture_data()).await;
    let garmin = Garmin::new(&fake.base).unwrap();
    assert_eq!(garmin.provider(), "garmin");
    assert_eq!(
        garmin.account(TOKEN).await.unwrap().as_deref(),
        Some(GARMIN_USER)
    );

    let pulled = garmin.pull(TOKEN, &all_march()).await.unwrap();
    assert_eq!(pulled.skipped, 0);
    let body = &pulled.body.to_json();
    assert_parts(
        body,
        fixture,
        &[
            ("dailies.expected.json", "/activity"),
            ("sleeps.expected.json", "/sleep"),
            ("activities.expected.json", "/workouts"),
            ("body_comps.expected.json", "/body"),
            ("heart_rate.expected.json", "/timeseries/heartrate"),
            ("sleeps.expected.json", "/timeseries/blood_oxygen"),
            ("stress_details.expected.json", "/timeseries/stress_level"),
        ],
    );
    assert!(body.get("profile").is_none());

    // Three days, asked a day at a time of each summary type, by upload time.
    let log = fake.log();
    let first = utc(2025, 3, 1).timestamp();
    for kind in TYPES {
        let asked: Vec<&String> = log
            .iter()
            .filter(|l| l.starts_with(&format!("GET /wellness-api/rest/{kind}?")))
            .collect();
        let want: Vec<String> = (0..3)
            .map(|d| {
                format!(
                    "GET /wellness-api/rest/{kind}?uploadEndTimeInSeconds={}&uploadStartTimeInSeconds={}",
                    first + (d + 1) * 86_400,
                    first + d * 86_400
                )
            })
            .collect();
        assert_eq!(asked, want.iter().collect::<Vec<_>>(), "{kind}");
    }

    let screened = screen(pulled.body.clone(), &PushUser::default(), Utc::now()).unwrap();
    assert!(screened.dropped.is_empty(), "{:?}", screened.dropped);
    assert_eq!(
        screened.batches.counts(),
        json!({"sleep": 2, "activity": 3, "workouts": 2, "body": 2,
               "timeseries": {"heartrate": 9, "blood_oxygen": 4, "stress_level": 6}})
    );
}

#[tokio::test]
async fn a_summary_is_found_by_when_it_was_synced_not_by_its_own_time() {
    let mut data = Data::default();
    // A day of February, synced on 2025-03-02 at noon.
    let mut day = fixture("dailies.json")[0].clone();
    day["calendarDate"] = json!("2025-02-20");
    day["startTimeInSeconds"] = json!(utc(2025, 2, 20).timestamp() - 3600);
    let synced = utc(2025, 3, 2).timestamp() + 43_200;
    data.upload("dailies", synced, day);
    let fake = FakeGarmin::start(data).await;
    let garmin = Garmin::new(&fake.base).unwrap();

    let february = pull(&[Resource::Activity], utc(2025, 2, 20), utc(2025, 2, 21));
    let got = garmin.pull(TOKEN, &february).await.unwrap();
    assert!(
        got.body.to_json().get("activity").is_none(),
        "{}",
        got.body.to_json()
    );
    let march = pull(&[Resource::Activity], utc(2025, 3, 2), utc(2025, 3, 3));
    let got = garmin.pull(TOKEN, &march).await.unwrap();
    assert_eq!(got.body.to_json()["activity"][0]["date"], "2025-02-20");
    // Only the summaries a resource needs are asked.
    assert!(
        fake.log()
            .iter()
            .all(|l| l.contains("/dailies?") || l.contains("/stressDetails?")),
        "{:#?}",
        fake.log()
    );
}

#[tokio::test]
async fn backfill_is_asked_for_every_summary_type_and_asking_again_is_no_failure() {
    let fake = FakeGarmin::start(Data::default()).await;
    let garmin = Garmin::new(&fake.base).unwrap();
    let (start, end) = (utc(2025, 1, 1), utc(2025, 3, 1));
    let window = wearhouse::sync::Window::new(start, end).unwrap();
    garmin.backfill(TOKEN, &window).await.unwrap();
    let asked = fake.backfills();
    let (s, e, day) = (start.timestamp(), end.timestamp(), 86_400);
    for kind in TYPES {
        let ranges: Vec<(i64, i64)> = asked
            .iter()
            .filter(|(k, _, _)| k == kind)
            .map(|(_, a, b)| (*a, *b))
            .collect();
        assert_eq!(ranges, [(s, s + 30 * day), (s + 30 * day, e)], "{kind}");
    }
    // A resumed historical run asks again: Garmin's 409s are no failure, and nothing is new.
    garmin.backfill(TOKEN, &window).await.unwrap();
    assert_eq!(fake.backfills(), asked);

    let err = garmin.backfill("revoked", &window).await.unwrap_err();
    assert!(matches!(err, SyncError::Unauthorised), "{err:?}");
    fake.fail_times(Fault::RateLimited(30), 0, 1);
    let err = garmin.backfill(TOKEN, &window).await.unwrap_err();
    assert!(
        matches!(
            err,
            SyncError::RateLimited {
                retry_after_seconds: Some(30)
            }
        ),
        "{err:?}"
    );
    fake.fail_times(Fault::ServerError, 0, 1);
    let err = garmin.backfill(TOKEN, &window).await.unwrap_err();
    assert!(matches!(err, SyncError::Transient { .. }), "{err:?}");
    // A summary type whose history the user did not share is passed over.
    fake.fail_times(Fault::Forbidden, 0, 2);
    garmin.backfill(TOKEN, &window).await.unwrap();
}

#[tokio::test]
async fn rate_limits_refused_tokens_and_server_errors_surface_by_kind() {
    let fake = FakeGarmin::start(fixture_data()).await;
    let garmin = Garmin::new(&fake.base).unwrap();

    fake.fail_times(Fault::RateLimited(17), 2, 1);
    let err = garmin.pull(TOKEN, &all_march()).await.unwrap_err();
    assert!(
        matches!(
            err,
            SyncError::RateLimited {
                retry_after_seconds: Some(17)
            }
        ),
        "{err:?}"
    );

    let err = garmin.pull("revoked", &all_march()).await.unwrap_err();
    assert!(matches!(err, SyncError::Unauthorised), "{err:?}");
    let err = garmin.account("revoked").await.unwrap_err();
    assert!(matches!(err, SyncError::Unauthorised), "{err:?}");
    fake.fail_times(Fault::Unauthorised, 1, 1);
    let err = garmin.pull(TOKEN, &all_march()).await.unwrap_err();
    assert!(matches!(err, SyncError::Unauthorised), "{err:?}");

    fake.fail_times(Fault::ServerError, 0, 1);
    let err = garmin.pull(TOKEN, &all_march()).await.unwrap_err();
    assert!(matches!(err, SyncError::Transient { .. }), "{err:?}");

    fake.fail_times(Fault::Forbidden, 0, 1);
    let err = garmin.pull(TOKEN, &all_march()).await.unwrap_err();
    assert!(matches!(err, SyncError::Permanent { .. }), "{err:?}");

    // After the faults, the same pull answers in full.
    let pulled = garmin.pull(TOKEN, &all_march()).await.unwrap();
    assert_eq!(
        pulled.body.to_json()["workouts"].as_array().unwrap().len(),
        2
    );
}

#[tokio::test]
async fn a_malformed_summary_is_skipped_and_its_neighbours_kept() {
    let mut data = fixture_data();
    data.upload(
        "activities",
        utc(2025, 3, 1).timestamp() + 60,
        json!("not a summary"),
    );
    let fake = FakeGarmin::start(data).await;
    let garmin = Garmin::new(&fake.base).unwrap();
    let pulled = garmin.pull(TOKEN, &all_march()).await.unwrap();
    assert_eq!(pulled.skipped, 1);
    assert_eq!(
        pulled.body.to_json()["workouts"].as_array().unwrap().len(),
        2
    );
}
