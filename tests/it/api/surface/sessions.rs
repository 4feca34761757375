//! Sleep cycles and session streams: values from a pushed night and workout, the session's
//! own provider only, its window only; another team's ids answer 404; the reference's models
//! parse every answer.

use serde_json::{Value, json};

use super::{World, case, check_against_reference};

/// A sample of a discrete resource.
fn at(timestamp: &str, value: f64) -> Value {
    json!({"timestamp": timestamp, "timezone_offset": 3600, "value": value})
}

/// A sample of an interval resource lasting a minute.
fn over(start: &str, end: &str, value: f64) -> Value {
    json!({"timestamp": start, "end": end, "timezone_offset": 3600, "value": value})
}

/// One night (23:00 to 23:30 +01:00, six 5-minute stages) and one 10-minute run from an Oura
/// ring, with samples inside and just outside both windows.
fn ring_push() -> Value {
    json!({
        "provider": "oura",
        "source": {"type": "ring", "device_id": "ring-7"},
        "sleep": [{
            "bedtime_start": "2025-03-01T23:00:00+01:00",
            "bedtime_stop": "2025-03-01T23:30:00+01:00",
            "timezone_offset": 3600,
            "sleep_stream": {"hypnogram": [4, 2, 2, 1, 1, 3], "interval": 300}
        }],
        "workouts": [{
            "id": "run-1",
            "time_start": "2025-03-02T18:00:00+01:00",
            "time_end": "2025-03-02T18:10:00+01:00",
            "sport": {"name": "Running", "slug": "running"},
            "time_zone": "Europe/Berlin"
        }],
        "timeseries": {
            "heartrate": [
                at("2025-03-01T22:55:00+01:00", 70.0),
                at("2025-03-01T23:00:00+01:00", 61.5),
                at("2025-03-01T23:10:00+01:00", 55.0),
                at("2025-03-01T23:30:00+01:00", 58.0),
                at("2025-03-01T23:35:00+01:00", 72.0),
                at("2025-03-02T18:00:00+01:00", 120.4),
                at("2025-03-02T18:05:00+01:00", 150.6),
                at("2025-03-02T18:20:00+01:00", 99.0)
            ],
            "hrv": [at("2025-03-01T23:15:00+01:00", 48.5)],
            "respiratory_rate": [at("2025-03-01T23:20:00+01:00", 14.5)],
            "distance": [
                over("2025-03-02T18:02:00+01:00", "2025-03-02T18:03:00+01:00", 500.0),
                over("2025-03-02T18:06:00+01:00", "2025-03-02T18:07:00+01:00", 700.0),
                over("2025-03-02T18:30:00+01:00", "2025-03-02T18:31:00+01:00", 100.0)
            ]
        }
    })
}

/// The same night from a Fitbit watch, without stages, and a heart rate inside the ring's
/// windows: neither belongs to the ring's sessions.
fn watch_push() -> Value {
    json!({
        "provider": "fitbit",
        "source": {"type": "watch"},
        "sleep": [{
            "bedtime_start": "2025-03-01T23:01:00+01:00",
            "bedtime_stop": "2025-03-01T23:29:00+01:00",
            "timezone_offset": 3600
        }],
        "timeseries": {"heartrate": [
            at("2025-03-01T23:05:00+01:00", 99.0),
            at("2025-03-02T18:03:00+01:00", 99.0)
        ]}
    })
}

fn values(list: &Value, member: &str) -> Vec<Value> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|s| s[member].clone())
        .collect()
}

fn unix(instant: &str) -> i64 {
    chrono::DateTime::parse_from_rfc3339(instant)
        .unwrap()
        .timestamp()
}

#[tokio::test]
async fn sleep_cycles_and_streams_follow_the_pushed_sessions() {
    let world = World::start().await;
    world.push(&ring_push()).await;
    world.push(&watch_push()).await;
    let user = world.user.clone();
    let mut cases = Vec::new();

    // The ring's sleep id, as the sleep summaries give it.
    let (status, sleep) = world
        .get(&format!(
            "/v2/summary/sleep/{user}?start_date=2025-03-01&end_date=2025-03-02"
        ))
        .await;
    assert_eq!(status, 200, "{sleep}");
    let ring_sleep = sleep["sleep"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["source"]["provider"] == "oura")
        .unwrap_or_else(|| panic!("no oura sleep: {sleep}"));
    let sleep_id = ring_sleep["id"].as_str().unwrap().to_owned();

    // Sleep cycles: the ring's night only (the watch's has no stages), stage changes merged.
    let path = format!("/v2/summary/sleep_cycle/{user}?start_date=2025-03-01&end_date=2025-03-02");
    let (status, cycles) = world.get(&path).await;
    assert_eq!(status, 200, "{cycles}");
    let list = cycles["sleep_cycle"].as_array().unwrap();
    assert_eq!(list.len(), 1, "{cycles}");
    let cycle = &list[0];
    assert_eq!(cycle["sleep_id"], sleep_id.as_str());
    assert_ne!(cycle["id"], cycle["sleep_id"]);
    assert_eq!(cycle["user_id"], user.as_str());
    assert_eq!(cycle["session_start"], "2025-03-01T23:00:00+01:00");
    assert_eq!(cycle["session_end"], "2025-03-01T23:30:00+01:00");
    assert_eq!(
        cycle["stage_start_offset_second"],
        json!([0, 300, 900, 1500])
    );
    assert_eq!(
        cycle["stage_end_offset_second"],
        json!([300, 900, 1500, 1800])
    );
    assert_eq!(cycle["stage_type"], json!([4, 2, 1, 3]));
    assert_eq!(cycle["source_provider"], "oura");
    assert_eq!(cycle["source_type"], "ring");
    assert_eq!(cycle["source_device_id"], "ring-7");
    assert_eq!(cycle["source"]["provider"], "oura");
    cases.push(case(
        "sleep_cycle",
        "ClientSleepCycleResponse",
        "ClientSleepCycleResponse",
        &cycles,
    ));
    // A second read answers the same ids; a provider filter and a window without the night
    // leave it out.
    assert_eq!(world.get(&path).await.1, cycles);
    let (_, fitbit) = world.get(&format!("{path}&provider=fitbit")).await;
    assert_eq!(fitbit["sleep_cycle"], json!([]), "{fitbit}");
    let (_, later) = world
        .get(&format!(
            "/v2/summary/sleep_cycle/{user}?start_date=2025-03-03"
        ))
        .await;
    assert_eq!(later["sleep_cycle"], json!([]), "{later}");

    // The sleep stream: the ring's samples inside 23:00..=23:30, numbered, and the stages.
    let (status, stream) = world
        .get(&format!("/v2/timeseries/sleep/{sleep_id}/stream"))
        .await;
    assert_eq!(status, 200, "{stream}");
    assert_eq!(
        values(&stream["heartrate"], "value"),
        [json!(61.5), json!(55.0), json!(58.0)]
    );
    assert_eq!(
        values(&stream["heartrate"], "id"),
        [json!(0), json!(1), json!(2)]
    );
    assert_eq!(
        stream["heartrate"][0]["timestamp"],
        "2025-03-01T23:00:00+01:00"
    );
    assert_eq!(stream["heartrate"][0]["unit"], "bpm");
    assert_eq!(values(&stream["hrv"], "value"), [json!(48.5)]);
    assert_eq!(values(&stream["respiratory_rate"], "value"), [json!(14.5)]);
    assert_eq!(
        values(&stream["hypnogram"], "value"),
        [4.0, 2.0, 2.0, 1.0, 1.0, 3.0].map(|v| json!(v))
    );
    assert_eq!(stream["hypnogram"][1]["start"], "2025-03-01T23:05:00+01:00");
    assert_eq!(stream["hypnogram"][1]["end"], "2025-03-01T23:10:00+01:00");
    assert_eq!(stream["hypnogram"][0]["unit"], "stage");
    cases.push(case(
        "sleep stream",
        "ClientFacingSleepStream",
        "ClientFacingSleepStream",
        &stream,
    ));
    let narrowed = world
        .get(&format!(
            "/v2/timeseries/sleep/{sleep_id}/stream?user_id={user}"
        ))
        .await;
    assert_eq!(narrowed, (200, stream.clone()));

    // The workout stream: the union of the ring's heart-rate and distance instants inside
    // 18:00..=18:10, heart rate rounded, distance summed from the start.
    let (status, run) = world.get("/v2/timeseries/workouts/run-1/stream").await;
    assert_eq!(status, 200, "{run}");
    let times = [
        "2025-03-02T18:00:00+01:00",
        "2025-03-02T18:02:00+01:00",
        "2025-03-02T18:05:00+01:00",
        "2025-03-02T18:06:00+01:00",
    ]
    .map(|t| json!(unix(t)));
    assert_eq!(run["time"].as_array().unwrap(), &times);
    assert_eq!(run["heartrate"], json!([120, null, 151, null]));
    assert_eq!(run["distance"], json!([null, 500.0, null, 1200.0]));
    assert_eq!(run["lat"], json!([]));
    cases.push(case(
        "workout stream",
        "ClientFacingStream",
        "ClientFacingStream",
        &run,
    ));

    // Tenancy and unknown ids: 404 with a detail.
    let other = world.other_key.clone();
    for path in [
        format!("/v2/timeseries/sleep/{sleep_id}/stream"),
        "/v2/timeseries/workouts/run-1/stream".to_owned(),
        format!("/v2/summary/sleep_cycle/{user}?start_date=2025-03-01"),
    ] {
        let (status, body) = world.get_with(&other, &path).await;
        assert_eq!(status, 404, "{path}: {body}");
        assert!(body["detail"].is_string(), "{body}");
    }
    let (status, _) = world
        .get_with(
            &other,
            &format!("/v2/timeseries/sleep/{sleep_id}/stream?user_id={user}"),
        )
        .await;
    assert_eq!(status, 404);
    let (status, _) = world.get("/v2/timeseries/sleep/no-such-sleep/stream").await;
    assert_eq!(status, 404);
    // A workout id is not a sleep id.
    let (status, _) = world.get("/v2/timeseries/sleep/run-1/stream").await;
    assert_eq!(status, 404);

    check_against_reference(&cases);
}
