//! The Google Health API connector (issue 37) against [`fake_google_health`], a fake
//! `health.googleapis.com/v4` on a loopback port: a pull over several pages with the documented
//! filters and roll-up ranges, the account id, and the failure kinds (429 with `Retry-After`,
//! 401, 500). [`end_to_end`] runs the same fake behind the app: OAuth link, historical pull
//! job, getters, an aggregate query, refresh and token refresh.

pub(super) mod end_to_end;
pub mod fake_google_health;
mod notify;

use chrono::Utc;
use serde_json::{Value, json};

use crate::sync::support::{all_march, pull, utc};
use fake_google_health::{FakeGoogleHealth, Fault, TOKEN, fixture, fixture_data};
use wearhouse::ingest::PushUser;
use wearhouse::sync::connectors::google_health::GoogleHealth;
use wearhouse::sync::{Connector, Resource, SyncError, screen};

/// A push body with its tables' rows sorted by `id` (`date` for activity) and its samples by
/// timestamp.
pub fn sorted(body: &Value) -> Value {
    let mut body = body.clone();
    for part in ["sleep", "activity", "body"] {
        if let Some(rows) = body.get_mut(part).and_then(Value::as_array_mut) {
            rows.sort_by_key(|r| format!("{}{}", r["id"], r["date"]));
        }
    }
    if let Some(series) = body.get_mut("timeseries").and_then(Value::as_object_mut) {
        for samples in series.values_mut() {
            if let Some(s) = samples.as_array_mut() {
                s.sort_by_key(|x| x["timestamp"].to_string());
            }
        }
    }
    body
}

#[tokio::test]
async fn a_multi_page_pull_returns_every_point_exactly_once() {
    let fake = FakeGoogleHealth::start(fixture_data(), 2).await;
    let google = GoogleHealth::new(&fake.base).unwrap();
    assert_eq!(google.provider(), "google_health");
    let pulled = google.pull(TOKEN, &all_march()).await.unwrap();
    assert_eq!(pulled.skipped, 0);

    // Every type, normalised exactly as the fixture tests expect it.
    let body = sorted(&pulled.body.to_json());
    let expected =
        |file: &str, pointer: &str| sorted(&fixture(file)).pointer(pointer).cloned().unwrap();
    assert_eq!(body["sleep"], expected("sleep.expected.json", "/sleep"));
    assert_eq!(
        body["activity"],
        expected("activity.expected.json", "/activity")
    );
    assert_eq!(body["body"], expected("body.expected.json", "/body"));
    assert_eq!(
        body["profile"],
        expected("height.expected.json", "/profile")
    );
    for series in ["heartrate", "hrv", "blood_oxygen"] {
        let want = expected("samples.expected.json", &format!("/timeseries/{series}"));
        assert_eq!(body["timeseries"][series], want, "{series}");
    }
    for series in ["weight", "fat"] {
        let want = expected("body.expected.json", &format!("/timeseries/{series}"));
        assert_eq!(body["timeseries"][series], want, "{series}");
    }

    // Paging was exercised with the documented parameters: 3 sleeps at 2 a page are two
    // requests, the second with the first's token, each filtered by the sleep's end.
    let log = fake.log();
    let sleeps: Vec<_> = log.iter().filter(|l| l.starts_with("GET sleep?")).collect();
    assert_eq!(sleeps.len(), 2, "{log:#?}");
    assert!(sleeps[0].contains("pageSize=25"), "{log:#?}");
    assert!(
        sleeps[0].contains(
            "filter=sleep.interval.end_time >= \"2025-03-01T00:00:00Z\" AND \
             sleep.interval.end_time < \"2025-03-04T00:00:00Z\""
        ),
        "{log:#?}"
    );
    assert!(sleeps[1].contains("pageToken=CiQ"), "{log:#?}");
    assert!(
        log.iter()
            .any(|l| l.starts_with("GET heart-rate?") && l.contains("pageSize=10000")),
        "{log:#?}"
    );
    // One roll-up per type over the UTC days of the window, the end exclusive.
    for kind in [
        "steps",
        "distance",
        "total-calories",
        "active-energy-burned",
    ] {
        let line = format!("POST {kind}:dailyRollUp 2025-03-01..2025-03-04");
        assert_eq!(log.iter().filter(|l| **l == line).count(), 1, "{log:#?}");
    }
    // The profile's height is the newest, asked without a filter.
    assert!(
        log.contains(&"GET height?pageSize=1".to_owned()),
        "{log:#?}"
    );

    // And ingest takes the body as it is.
    let screened = screen(pulled.body.clone(), &PushUser::default(), Utc::now()).unwrap();
    assert!(screened.dropped.is_empty(), "{:?}", screened.dropped);
    assert_eq!(
        screened.batches.counts(),
        json!({
            "sleep": 3, "activity": 3, "body": 2, "profile": 1,
            "timeseries": {"heartrate": 4, "hrv": 2, "blood_oxygen": 3, "weight": 2, "fat": 2}
        })
    );
}

#[tokio::test]
async fn points_are_asked_by_the_window() {
    // 2025-03-02 only: the night that ended that morning, that day's samples.
    let fake = FakeGoogleHealth::start(fixture_data(), 25).await;
    let google = GoogleHealth::new(&fake.base).unwrap();
    let window = pull(
        &[Resource::Sleep, Resource::Heartrate, Resource::Body],
        utc(2025, 3, 2),
        utc(2025, 3, 3),
    );
    let pulled = google.pull(TOKEN, &window).await.unwrap();
    let json = pulled.body.to_json();
    let ids: Vec<&Value> = json["sleep"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| &r["id"])
        .collect();
    assert_eq!(ids, [&json!("8675309003")]);
    let hr = &pulled.body.to_json()["timeseries"]["heartrate"];
    assert_eq!(hr.as_array().unwrap().len(), 1, "{hr}");
    assert_eq!(hr[0]["value"], json!(57));
    // Body fat of 03-02 but no weigh-in that day; no profile asked.
    assert!(
        pulled.body.to_json().get("body").is_none(),
        "{}",
        pulled.body.to_json()
    );
    assert_eq!(
        pulled.body.to_json()["timeseries"]["fat"][0]["value"],
        json!(24.3)
    );
    assert!(pulled.body.to_json().get("profile").is_none());
    assert!(!fake.log().iter().any(|l| l.contains("height")));
}

#[tokio::test]
async fn the_account_is_the_identitys_health_user_id() {
    let fake = FakeGoogleHealth::start(fixture_data(), 2).await;
    let google = GoogleHealth::new(&fake.base).unwrap();
    assert_eq!(
        google.account(TOKEN).await.unwrap().as_deref(),
        Some("4k2Zq9hT")
    );
}

#[tokio::test]
async fn failures_surface_by_kind() {
    // A 429 on the second request (the second page of sleeps) with Google's Retry-After.
    let fake = FakeGoogleHealth::start(fixture_data(), 2).await;
    let google = GoogleHealth::new(&fake.base).unwrap();
    fake.fail(Fault::RateLimited(37), 1);
    let err = google.pull(TOKEN, &all_march()).await.unwrap_err();
    assert!(
        matches!(
            err,
            SyncError::RateLimited {
                retry_after_seconds: Some(37)
            }
        ),
        "{err:?}"
    );
    assert_eq!(
        fake.log().len(),
        2,
        "the first failing request ends the pull"
    );

    let fake = FakeGoogleHealth::start(fixture_data(), 2).await;
    let google = GoogleHealth::new(&fake.base).unwrap();
    fake.fail(Fault::ServerError, 3);
    let err = google.pull(TOKEN, &all_march()).await.unwrap_err();
    assert!(matches!(err, SyncError::Transient { .. }), "{err:?}");

    let fake = FakeGoogleHealth::start(fixture_data(), 2).await;
    let google = GoogleHealth::new(&fake.base).unwrap();
    fake.fail(Fault::Unauthorised, 0);
    let err = google.pull(TOKEN, &all_march()).await.unwrap_err();
    assert!(matches!(err, SyncError::Unauthorised), "{err:?}");
    let err = google.pull("revoked", &all_march()).await.unwrap_err();
    assert!(matches!(err, SyncError::Unauthorised), "{err:?}");
}
