//! The Withings connector against [`fake_withings`], a fake Withings Public API on a loopback
//! port: a pull of every resource from the fixtures (one page at a time, and all at once), a
//! pull long enough to need several date ranges, and every failure kind (`status` 601 and an
//! HTTP 429, an expired token's `status` 401, HTTP 500 and `status` 522, `status` 2554, an
//! answer without a `body`, paging that never moves on, an unknown path). [`end_to_end`] runs the same fake behind the real
//! server: link, historical pull job, getters, refresh.

pub(super) mod end_to_end;
pub mod fake_withings;

use std::collections::BTreeSet;

use chrono::{Days, NaiveDate, Utc};
use serde_json::{Value, json};

use crate::sync::support::{all_march, pull, utc};
use fake_withings::{Data, FakeWithings, Fault, TOKEN, fixture, fixture_data};
use wearhouse::ingest::PushUser;
use wearhouse::sync::connectors::withings::Withings;
use wearhouse::sync::{Connector, Pull, Resource, SyncError, screen};

async fn pull_all(page_size: usize) -> (FakeWithings, Result<wearhouse::sync::Pulled, SyncError>) {
    let fake = FakeWithings::start(fixture_data(), page_size).await;
    let withings = Withings::new(&fake.base).unwrap();
    let pulled = withings.pull(TOKEN, &all_march()).await;
    (fake, pulled)
}

/// Pulls every resource over the fixtures' days with `fault` served after `after` good answers.
async fn pull_failing(fault: Fault, after: usize) -> (FakeWithings, SyncError) {
    let fake = FakeWithings::start(fixture_data(), 2).await;
    fake.fail(fault, after);
    let err = Withings::new(&fake.base)
        .unwrap()
        .pull(TOKEN, &all_march())
        .await
        .unwrap_err();
    (fake, err)
}

/// The expected timeseries of a pull of every resource: the measure groups', the scales'
/// pulses followed by the watch's minutes, less the minute at an instant a scale already gave
/// (2025-03-02 08:00 Paris: the scale's 66 bpm stays, the watch's 55 goes).
fn measured_and_intraday() -> Value {
    let mut series = fixture("measures.expected.json")["timeseries"].clone();
    let minutes = fixture("intraday.expected.json")["timeseries"]["heartrate"].clone();
    let pulses = series["heartrate"].as_array_mut().unwrap();
    let taken: Vec<Value> = pulses.iter().map(|p| p["timestamp"].clone()).collect();
    let before = pulses.len();
    pulses.extend(
        minutes
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| !taken.contains(&m["timestamp"]))
            .cloned(),
    );
    assert_eq!(pulses.len(), before + 5, "one minute meets a pulse");
    series
}

#[tokio::test]
async fn a_pull_of_every_resource_gives_the_fixture_bodies() {
    let (fake, pulled) = pull_all(2).await;
    let pulled = pulled.unwrap();
    // One malformed record per endpoint: skipped, its neighbours kept.
    assert_eq!(pulled.skipped, 6);

    let body = &pulled.body.to_json();
    assert_eq!(body["provider"], "withings");
    assert_eq!(body["source"], json!({"type": "scale"}));
    let expected = |file: &str, pointer: &str| fixture(file).pointer(pointer).cloned().unwrap();
    // The first night with its hypnogram, from its states.
    assert_eq!(
        body["sleep"],
        expected("sleep_states.expected.json", "/sleep")
    );
    assert_eq!(
        body["activity"],
        expected("activity.expected.json", "/activity")
    );
    assert_eq!(
        body["workouts"],
        expected("workouts.expected.json", "/workouts")
    );
    assert_eq!(body["body"], expected("measures.expected.json", "/body"));
    assert_eq!(body["timeseries"], measured_and_intraday());

    // The documented parameters: the window's UTC days one more on each side, in one range;
    // getmeas over the window's unix seconds. Two records per page: sleep, activity and
    // workouts (4 records each) take two pages each, getmeas (4 groups once the objective is
    // filtered out) two.
    let log = fake.log();
    assert!(
        log[0].starts_with("/v2/sleep getsummary data_fields=total_timeinbed,total_sleep_time,")
            && log[0].ends_with("&enddateymd=2025-03-04&startdateymd=2025-02-28"),
        "{log:#?}"
    );
    assert!(log[1].contains("&offset=2&"), "{log:#?}");
    // Each night kept is asked its states.
    assert_eq!(
        log[2],
        "/v2/sleep get enddate=1740807600&startdate=1740780600"
    );
    assert!(log[3].starts_with("/v2/sleep get ") && log[4].starts_with("/v2/sleep get "));
    assert!(log[5].starts_with("/v2/measure getactivity "), "{log:#?}");
    assert!(log[7].starts_with("/v2/measure getworkouts "), "{log:#?}");
    assert_eq!(
        log[9],
        "/measure getmeas category=1&enddate=1741046400&meastypes=1,5,6,8,9,10,11,76,77,88,170\
         &startdate=1740787200"
    );
    // Then the watch's minutes, a day at a time.
    assert_eq!(
        log[11],
        "/v2/measure getintradayactivity data_fields=heart_rate&enddate=1740873600\
         &startdate=1740787200"
    );
    assert_eq!(log.len(), 14, "{log:#?}");

    let screened = screen(pulled.body.clone(), &PushUser::default(), Utc::now()).unwrap();
    assert!(screened.dropped.is_empty());
    assert_eq!(
        screened.batches.counts(),
        json!({
            "sleep": 3, "activity": 3, "workouts": 3, "body": 2,
            "timeseries": {"weight": 2, "fat": 2, "blood_pressure": 1, "heartrate": 7}
        })
    );
}

#[tokio::test]
async fn paging_changes_nothing_but_the_number_of_requests() {
    let (one, by_one) = pull_all(1).await;
    let (all, at_once) = pull_all(100).await;
    assert_eq!(by_one.unwrap(), at_once.unwrap());
    // Four paged services, and three nights' states and three days of the watch's minutes
    // (neither paged).
    assert_eq!((one.log().len(), all.log().len()), (4 * 4 + 6, 4 + 6));
}

/// A night ending 07:00 Paris on `day`, that day's activity and a weigh-in at 07:30.
fn night_day_and_weigh_in(day: NaiveDate, i: i64) -> (Value, Value, Value) {
    let morning = day.and_hms_opt(6, 0, 0).unwrap().and_utc().timestamp();
    let sleep = json!({
        "id": 70_000 + i, "timezone": "Europe/Paris", "startdate": morning - 8 * 3600,
        "enddate": morning, "date": day.to_string(),
        "data": {"total_sleep_time": 25_000 + i, "sleep_score": 80}
    });
    let activity = json!({
        "date": day.to_string(), "timezone": "Europe/Paris", "steps": 5_000 + i,
        "totalcalories": 2100, "calories": 300
    });
    let group = json!({
        "grpid": 80_000 + i, "date": morning + 1800, "category": 1, "attrib": 0,
        "measures": [{"value": 70_000 + i, "type": 1, "unit": -3}]
    });
    (sleep, activity, group)
}

#[tokio::test]
async fn a_multi_range_pull_returns_every_record_exactly_once() {
    // 32 days, 2024-12-31 … 2025-02-01; the window is January.
    let mut data = Data {
        timezone: "Europe/Paris".into(),
        ..Data::default()
    };
    let first: NaiveDate = "2024-12-31".parse().unwrap();
    for i in 0..33 {
        let day = first.checked_add_days(Days::new(i as u64)).unwrap();
        let (sleep, activity, group) = night_day_and_weigh_in(day, i);
        data.series.push(sleep);
        data.activities.push(activity);
        data.measuregrps.push(group);
    }
    let fake = FakeWithings::start(data, 3).await;
    let withings = Withings::new(&fake.base).unwrap();
    let window = pull(
        &[Resource::Sleep, Resource::Activity, Resource::Body],
        utc(2025, 1, 1),
        utc(2025, 2, 1),
    );
    let pulled = withings.pull(TOKEN, &window).await.unwrap();
    assert_eq!(pulled.skipped, 0);

    let keys = |part: &str, key: &str| -> Vec<String> {
        pulled.body.to_json()[part]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r[key].as_str().unwrap().to_owned())
            .collect()
    };
    // Nights ending and weigh-ins in January UTC: 31 each. Activity: the Paris days that
    // overlap January UTC, 2025-02-01 included (it starts at 2025-01-31 23:00 UTC).
    for (part, key, n) in [
        ("sleep", "id", 31),
        ("body", "id", 31),
        ("activity", "date", 32),
    ] {
        let got = keys(part, key);
        let unique: BTreeSet<_> = got.iter().collect();
        assert_eq!((got.len(), unique.len()), (n, n), "{part}: {got:?}");
    }
    assert_eq!(keys("sleep", "id")[0], "70001");
    assert_eq!(keys("activity", "date")[0], "2025-01-01");
    assert_eq!(keys("activity", "date")[31], "2025-02-01");
    assert_eq!(keys("body", "id")[30], "80031");

    // 2024-12-31 … 2025-02-01 in ranges of 7 days: 5 ranges per date-range service.
    let log = fake.log();
    let ranges: Vec<_> = log
        .iter()
        .filter(|l| l.starts_with("/v2/sleep getsummary") && !l.contains("offset="))
        .collect();
    assert_eq!(ranges.len(), 5, "{log:#?}");
    // And each of the 31 nights is asked its states once.
    let nights = log
        .iter()
        .filter(|l| l.starts_with("/v2/sleep get "))
        .count();
    assert_eq!(nights, 31, "{log:#?}");
    assert!(ranges[4].ends_with("enddateymd=2025-02-01&startdateymd=2025-01-28"));
    assert!(
        !log.iter()
            .any(|l| l.contains("getmeas") && l.contains("offset=0")),
        "the first page asks no offset"
    );
}

#[tokio::test]
async fn a_rate_limit_status_or_a_429_is_rate_limited() {
    // Withings' own: status 601 under HTTP 200, no wait named.
    let (fake, err) = pull_failing(Fault::Status(601), 1).await;
    assert!(
        matches!(
            err,
            SyncError::RateLimited {
                retry_after_seconds: None
            }
        ),
        "{err:?}"
    );
    // The first failing request ends the pull.
    assert_eq!(fake.log().len(), 2);

    let (_, err) = pull_failing(Fault::HttpRateLimited { retry_after: 37 }, 0).await;
    assert!(
        matches!(
            err,
            SyncError::RateLimited {
                retry_after_seconds: Some(37)
            }
        ),
        "{err:?}"
    );
}

#[tokio::test]
async fn an_expired_or_unknown_token_is_unauthorised() {
    let (_, err) = pull_failing(Fault::Status(401), 3).await;
    assert!(matches!(err, SyncError::Unauthorised), "{err:?}");

    // The fake's own check: a token it does not accept answers status 401 under HTTP 200.
    let fake = FakeWithings::start(fixture_data(), 2).await;
    let err = Withings::new(&fake.base)
        .unwrap()
        .pull("revoked", &all_march())
        .await
        .unwrap_err();
    assert!(matches!(err, SyncError::Unauthorised), "{err:?}");
}

#[tokio::test]
async fn server_errors_and_timeouts_are_transient() {
    let (fake, err) = pull_failing(Fault::ServerError, 4).await;
    assert!(
        matches!(&err, SyncError::Transient { source: None, .. }),
        "{err:?}"
    );
    assert_eq!(fake.log().len(), 5);
    let (_, err) = pull_failing(Fault::Status(522), 0).await;
    assert!(
        matches!(&err, SyncError::Transient { reason, .. } if reason.contains("522")),
        "{err:?}"
    );
}

#[tokio::test]
async fn a_wrong_service_or_a_bodiless_answer_is_permanent() {
    let (_, err) = pull_failing(Fault::Status(2554), 2).await;
    assert!(
        matches!(&err, SyncError::Permanent { reason } if reason.contains("2554")),
        "{err:?}"
    );
    let (_, err) = pull_failing(Fault::NoBody, 0).await;
    assert!(matches!(err, SyncError::Permanent { .. }), "{err:?}");
    // Paging that never moves on is a loop, not data: given up after its second page.
    let (fake, err) = pull_failing(Fault::StuckOffset, 0).await;
    assert!(
        matches!(&err, SyncError::Permanent { reason } if reason.contains("offset")),
        "{err:?}"
    );
    assert_eq!(fake.log().len(), 2, "{:#?}", fake.log());

    // A base URL under which the fake serves nothing: HTTP 404.
    let fake = FakeWithings::start(fixture_data(), 2).await;
    let err = Withings::new(&format!("{}/nowhere", fake.base))
        .unwrap()
        .pull(TOKEN, &all_march())
        .await
        .unwrap_err();
    assert!(matches!(err, SyncError::Permanent { .. }), "{err:?}");
}

#[tokio::test]
async fn only_the_resources_asked_are_fetched() {
    let fake = FakeWithings::start(fixture_data(), 100).await;
    let withings = Withings::new(&fake.base).unwrap();
    let asked = Pull {
        resources: vec![Resource::Heartrate, Resource::Glucose],
        window: all_march().window,
    };
    let pulled = withings.pull(TOKEN, &asked).await.unwrap();
    let log = fake.log();
    assert_eq!(log.len(), 4, "{log:#?}");
    assert!(log[0].starts_with("/measure getmeas "));
    assert!(
        log[1..]
            .iter()
            .all(|l| l.starts_with("/v2/measure getintradayactivity "))
    );
    let json = pulled.body.to_json();
    let parts: Vec<&String> = json.as_object().unwrap().keys().collect();
    assert_eq!(parts, ["provider", "source", "timeseries"]);
    assert_eq!(
        pulled.body.to_json()["timeseries"],
        json!({"heartrate": measured_and_intraday()["heartrate"]})
    );
}
