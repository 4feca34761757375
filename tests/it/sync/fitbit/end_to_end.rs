//! Fitbit end to end: a user links Fitbit through the OAuth round trip (authorisation code and
//! PKCE, at the link tests' fake authorisation server), the `sync.historical` job pulls
//! [`FakeFitbit`] on the real job runner, and the heart-rate, sleep and activity getters answer
//! exactly the fixtures' normalised values; the fake then adds and changes a night, a day and a
//! heart-rate sample, and `POST /v2/user/refresh` makes them visible, each once.
//!
//! Fitbit gives local times without an offset, read in the profile's zone (Europe/Berlin): the
//! fixtures moved by whole days keep their wall-clock times, so the instants expected are the
//! fixtures' local times moved by those days, read in Berlin (whose offset may differ from the
//! fixtures' +01:00 on the day moved to).

use std::collections::HashMap;
use std::sync::Arc;

use chrono::{DateTime, Duration, NaiveDate, NaiveDateTime, TimeZone, Timelike, Utc};
use chrono_tz::Europe::Berlin;
use serde_json::{Value, json};

use super::fake_fitbit::{Data, FakeFitbit, fixture, fixture_data};
use crate::sync::support::linked::{
    Linked, assert_same_numbers, expected_at, instant, offset_days, shifted,
};
use wearhouse::sync::connectors::fitbit::Fitbit;

/// A fake Fitbit serving the fixtures moved into the pull's window (the profile as it is).
pub(crate) async fn fake_fitbit() -> FakeFitbit {
    let days = offset_days();
    let data = fixture_data();
    let list = |items: &[Value]| items.iter().map(|v| shifted(v, days)).collect();
    let per_day = |map: &HashMap<String, Value>| -> HashMap<String, Value> {
        let moved = shifted(&json!(map), days);
        serde_json::from_value(moved).unwrap()
    };
    FakeFitbit::start(Data {
        profile: data.profile.clone(),
        sleep: list(&data.sleep),
        activities: per_day(&data.activities),
        heart: per_day(&data.heart),
        steps: per_day(&data.steps),
        weight: list(&data.weight),
        fat: list(&data.fat),
    })
    .await
}

/// A user linked to Fitbit whose historical pull has succeeded at its first attempt.
async fn pulled(fitbit: &FakeFitbit) -> Linked {
    Linked::pulled(Arc::new(Fitbit::new(&fitbit.base).unwrap()), &[], fitbit).await
}

fn expected(file: &str, pointer: &str) -> Vec<Value> {
    expected_at(&fixture(file), pointer)
}

/// A fixture's instant (`2025-03-01T07:30:00+01:00`) as it is served moved by `days`: the
/// same wall-clock time that many days later, in Berlin.
fn moved_local(v: &Value, days: i64) -> DateTime<Utc> {
    let wall = DateTime::parse_from_rfc3339(v.as_str().unwrap())
        .unwrap()
        .naive_local();
    berlin(wall + Duration::days(days))
}

fn berlin(wall: NaiveDateTime) -> DateTime<Utc> {
    Berlin.from_local_datetime(&wall).single().unwrap().to_utc()
}

/// The getters answer the fixtures' heart rate, sleep and activity, moved by `days`, each
/// record once.
pub(crate) async fn assert_fixtures_stored(l: &Linked, days: i64) {
    let heart = l.series("heartrate").await;
    let want = expected("heart_intraday.expected.json", "/timeseries/heartrate");
    assert_eq!(heart.len(), want.len(), "{heart:#?}");
    for (got, want) in heart.iter().zip(&want) {
        assert_eq!(
            instant(&got["timestamp"]),
            moved_local(&want["timestamp"], days)
        );
        assert_eq!(got["value"].as_f64(), want["value"].as_f64());
    }

    let sleep = l.summary("sleep", "id").await;
    let mut want = expected("sleep.expected.json", "/sleep");
    want.sort_by_key(|r| r["id"].to_string());
    assert_eq!(sleep.len(), want.len(), "{sleep:#?}");
    for (got, want) in sleep.iter().zip(&want) {
        assert_eq!(got["id"], want["id"]);
        for end in ["bedtime_start", "bedtime_stop"] {
            assert_eq!(instant(&got[end]), moved_local(&want[end], days), "{end}");
        }
        // The getter answers 0 for a stage the provider gave none of (a classic nap).
        for field in ["duration", "total", "awake", "light", "rem", "deep"] {
            assert_eq!(
                got[field].as_f64(),
                Some(want[field].as_f64().unwrap_or(0.0)),
                "sleep {} {field}",
                want["id"]
            );
        }
        assert_same_numbers(got, want, &["latency", "efficiency"]);
    }

    l.assert_activity_days(&expected("activities.expected.json", "/activity"), days)
        .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_linked_fitbit_user_is_pulled_and_the_getters_answer_the_fixtures() {
    let fitbit = fake_fitbit().await;
    let l = pulled(&fitbit).await;
    assert_fixtures_stored(&l, offset_days()).await;
    l.assert_created_once(&["sleep", "activity", "heartrate"])
        .await;
}

/// What the user recorded lately, in Fitbit's shapes: a night ending about three hours before
/// `now` (log 49000000001, `efficiency`), the day's activity summary (`steps`) and one
/// heart-rate reading about two hours before `now` (`bpm`); with the local days they belong
/// to. Times are whole hours, so that a record served again with other values is the same
/// record.
struct Recent {
    night: Value,
    today: NaiveDate,
    day: Value,
    heart_day: NaiveDate,
    heart: Value,
    /// The reading's instant.
    reading: DateTime<Utc>,
}

fn recent(now: DateTime<Utc>, efficiency: i64, steps: i64, bpm: i64) -> Recent {
    let local = |ago: i64| {
        let wall = (now - Duration::hours(ago))
            .with_timezone(&Berlin)
            .naive_local();
        wall.date().and_hms_opt(wall.time().hour(), 0, 0).unwrap()
    };
    let format = |t: NaiveDateTime| t.format("%Y-%m-%dT%H:%M:%S%.3f").to_string();
    let woke = local(3);
    let night = json!({
        "dateOfSleep": woke.date().to_string(), "duration": 28_800_000, "efficiency": efficiency,
        "endTime": format(woke), "infoCode": 0, "isMainSleep": true,
        "levels": {"data": [], "summary": {}}, "logId": 49_000_000_001u64,
        "logType": "auto_detected", "minutesAfterWakeup": 0, "minutesAsleep": 440,
        "minutesAwake": 40, "minutesToFallAsleep": 5,
        "startTime": format(woke - Duration::hours(8)), "timeInBed": 480, "type": "classic"
    });
    let today = now.with_timezone(&Berlin).date_naive();
    let mut day = fixture("activities.json")["2025-03-01"].clone();
    day["summary"]["steps"] = json!(steps);
    let read = local(2);
    let mut heart = fixture("heart_intraday.json")["2025-03-01"].clone();
    heart["activities-heart"][0]["dateTime"] = json!(read.date().to_string());
    heart["activities-heart-intraday"]["dataset"] =
        json!([{"time": read.time().format("%H:%M:%S").to_string(), "value": bpm}]);
    Recent {
        night,
        today,
        day,
        heart_day: read.date(),
        heart,
        reading: berlin(read),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn refresh_shows_new_and_changed_records_once() {
    let fitbit = fake_fitbit().await;
    let l = pulled(&fitbit).await;
    let serve = |r: &Recent| {
        fitbit.put_sleep(r.night.clone());
        fitbit.put_activities(r.today, r.day.clone());
        fitbit.put_heart(r.heart_day, r.heart.clone());
    };
    let fixture_nights = expected("sleep.expected.json", "/sleep").len();
    let fixture_days = expected("activities.expected.json", "/activity").len();
    let fixture_beats = expected("heart_intraday.expected.json", "/timeseries/heartrate").len();

    // New: a night, today's activity and a heart-rate reading.
    let now = Utc::now();
    let new = recent(now, 90, 1200, 61);
    serve(&new);
    l.refreshed().await;
    let sleep = l.summary("sleep", "id").await;
    assert_eq!(sleep.len(), fixture_nights + 1, "{sleep:#?}");
    let night = sleep.iter().find(|s| s["id"] == "49000000001").unwrap();
    assert_eq!(night["efficiency"].as_f64(), Some(90.0));
    let activity = l.summary("activity", "calendar_date").await;
    assert_eq!(activity.len(), fixture_days + 1, "{activity:#?}");
    let today = new.today.to_string();
    let day = activity
        .iter()
        .find(|d| d["calendar_date"] == today.as_str())
        .unwrap();
    assert_eq!(day["steps"].as_f64(), Some(1200.0));
    let heart = l.series("heartrate").await;
    assert_eq!(heart.len(), fixture_beats + 1, "{heart:#?}");
    let last = heart.last().unwrap();
    assert_eq!(instant(&last["timestamp"]), new.reading);
    assert_eq!(last["value"].as_f64(), Some(61.0));

    // Changed: the same night, day and reading with new values replace, not add.
    let changed = recent(now, 80, 5400, 64);
    serve(&changed);
    l.refreshed().await;
    let sleep = l.summary("sleep", "id").await;
    assert_eq!(sleep.len(), fixture_nights + 1, "{sleep:#?}");
    let night = sleep.iter().find(|s| s["id"] == "49000000001").unwrap();
    assert_eq!(night["efficiency"].as_f64(), Some(80.0));
    let activity = l.summary("activity", "calendar_date").await;
    assert_eq!(activity.len(), fixture_days + 1, "{activity:#?}");
    let day = activity
        .iter()
        .find(|d| d["calendar_date"] == today.as_str())
        .unwrap();
    assert_eq!(day["steps"].as_f64(), Some(5400.0));
    let heart = l.series("heartrate").await;
    assert_eq!(heart.len(), fixture_beats + 1, "{heart:#?}");
    assert_eq!(heart.last().unwrap()["value"].as_f64(), Some(64.0));
}
