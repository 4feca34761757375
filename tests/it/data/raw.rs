//! Raw summaries (`GET /v2/summary/{part}/{user_id}/raw`, issue 42) against the in-process app:
//! pushed records come back exactly as pushed, a pull from the fake Oura answers exactly the
//! fake's documents, by date range, newest once per record, tenancy, the user's deletion, and
//! every answer checked against the reference's published schema
//! (`testdata/reference/junction-openapi-raw.json`).

use std::sync::Arc;

use serde_json::{Value, json};
use uuid::Uuid;

use crate::support::reference;
use crate::support::{Answer, TestApp};
use crate::sync_oura::fake_oura::FakeOura;
use crate::sync_support::linked::{Linked, window};
use wearhouse::jobs::JobState;
use wearhouse::sync::connectors::oura::Oura;

/// Two days of every raw part, as a client pushes them (members in a deliberate order, a
/// number written with a fraction).
fn pushed() -> Value {
    json!({
        "provider": "withings",
        "source": {"type": "scale", "device_id": "scale-1"},
        "sleep": [
            {"id": "n1", "bedtime_start": "2025-03-01T23:00:00+01:00", "bedtime_stop": "2025-03-02T07:00:00+01:00", "score": 80},
            {"id": "n2", "bedtime_start": "2025-03-02T23:30:00+01:00", "bedtime_stop": "2025-03-03T06:45:00+01:00"}
        ],
        "activity": [
            {"date": "2025-03-02", "steps": 9000, "calories_total": 2100.5},
            {"date": "2025-03-03", "steps": 100}
        ],
        "workouts": [
            {"id": "w1", "time_start": "2025-03-02T10:00:00Z", "time_end": "2025-03-02T11:00:00Z",
             "sport": {"name": "Running", "slug": "running"}, "calories": 500.0}
        ],
        "body": [
            {"id": "b1", "measured_at": "2025-03-02T08:00:00Z", "weight": 70.25},
            {"id": "b2", "measured_at": "2025-03-03T08:00:00Z", "weight": 70.0}
        ],
        "profile": {"height": 180, "sex": "male"}
    })
}

async fn raw(app: &TestApp, part: &str, user: &str, query: &str) -> Answer {
    app.get(&format!("/v2/summary/{part}/{user}/raw?{query}"))
        .await
}

fn datas(answer: &Value, key: &str) -> Vec<Value> {
    answer[key]
        .as_array()
        .unwrap_or_else(|| panic!("no {key}: {answer}"))
        .iter()
        .map(|r| r["data"].clone())
        .collect()
}

const BOTH: &str = "start_date=2025-03-02&end_date=2025-03-03";

#[tokio::test]
async fn pushed_records_come_back_as_pushed_by_date_range_and_only_to_their_team() {
    let app = TestApp::new().await;
    let user = app.user("raw-1").await;
    let body = pushed();
    let a = app
        .post(&format!("/v2/user/{user}/data"), body.clone())
        .await;
    assert_eq!(a.status, 200, "{}", a.json);

    let mut cases = Vec::new();
    for (part, component) in [
        ("sleep", "RawSleepResponse"),
        ("activity", "RawActivityResponse"),
        ("workouts", "RawWorkoutResponse"),
        ("body", "RawBodyResponse"),
    ] {
        let a = raw(&app, part, &user, BOTH).await;
        assert_eq!(a.status, 200, "{part}: {}", a.json);
        // Exactly what was pushed, oldest first, text for text.
        assert_eq!(
            datas(&a.json, part),
            body[part].as_array().unwrap().clone(),
            "{part}"
        );
        assert_eq!(
            serde_json::to_string(&a.json[part][0]["data"]).unwrap(),
            serde_json::to_string(&body[part][0]).unwrap(),
            "{part}: members in the pushed order"
        );
        for r in a.json[part].as_array().unwrap() {
            assert_eq!(r["user_id"], user.as_str());
            assert_eq!(r["source"]["slug"], "withings");
            assert!(r["id"].as_str().unwrap().parse::<Uuid>().is_ok(), "{r}");
        }
        cases.push(reference::case(part, component, None, &a.json));
    }
    let w = raw(&app, "workouts", &user, BOTH).await.json;
    assert_eq!(w["workouts"][0]["provider_id"], "w1");
    assert_eq!(w["workouts"][0]["sport"]["slug"], "running");
    assert_eq!(w["workouts"][0]["timestamp"], "2025-03-02T10:00:00Z");

    // One day: only that day's records (sleep by its end, activity by its day).
    let one = "start_date=2025-03-03&end_date=2025-03-03";
    for part in ["sleep", "activity", "body"] {
        let a = raw(&app, part, &user, one).await;
        assert_eq!(datas(&a.json, part), vec![body[part][1].clone()], "{part}");
    }
    let none = raw(&app, "workouts", &user, one).await;
    assert_eq!(none.json, json!({"workouts": []}));
    cases.push(reference::case(
        "empty",
        "RawWorkoutResponse",
        None,
        &none.json,
    ));

    let profile = raw(&app, "profile", &user, "").await;
    assert_eq!(profile.status, 200, "{}", profile.json);
    assert_eq!(profile.json["profile"]["data"], body["profile"]);
    cases.push(reference::case(
        "profile",
        "RawProfile",
        None,
        &profile.json,
    ));
    let devices = raw(&app, "devices", &user, "").await;
    assert_eq!(devices.status, 200, "{}", devices.json);
    assert_eq!(
        datas(&devices.json, "devices"),
        vec![json!({"type": "scale", "device_id": "scale-1"})]
    );
    let listed = app.get(&format!("/v2/user/{user}/device")).await.json;
    assert_eq!(devices.json["devices"][0]["id"], listed[0]["id"]);
    cases.push(reference::case(
        "devices",
        "RawDevicesResponse",
        None,
        &devices.json,
    ));
    reference::check("junction-openapi-raw.json", &cases);

    // A provider filter; bad input is a 422.
    let other = raw(&app, "sleep", &user, &format!("{BOTH}&provider=oura")).await;
    assert_eq!(other.json, json!({"sleep": []}));
    assert_eq!(raw(&app, "sleep", &user, "").await.status, 422);
    assert_eq!(
        raw(&app, "sleep", &user, "start_date=yesterday")
            .await
            .status,
        422
    );
    assert_eq!(
        raw(&app, "profile", &user, "provider=nobody").await.status,
        422
    );

    // Another team's key, an unknown user: 404; a user without a profile: 404.
    for part in [
        "sleep", "activity", "workouts", "body", "profile", "devices",
    ] {
        let uri = format!("/v2/summary/{part}/{user}/raw?{BOTH}");
        let other_key = app.other_key.clone();
        let foreign = app.send("GET", &uri, Some(&other_key), None).await;
        assert_eq!(foreign.status, 404, "{part}: {}", foreign.json);
        let unknown = raw(&app, part, &Uuid::new_v4().to_string(), BOTH).await;
        assert_eq!(unknown.status, 404, "{part}");
    }
    let bare = app.user("raw-bare").await;
    assert_eq!(raw(&app, "profile", &bare, "").await.status, 404);
    assert_eq!(
        raw(&app, "sleep", &bare, BOTH).await.json,
        json!({"sleep": []})
    );
}

#[tokio::test]
async fn a_record_pushed_again_answers_once_with_its_newest_payload_and_goes_with_the_user() {
    let app = TestApp::new().await;
    let user = app.user("raw-2").await;
    let mut body = pushed();
    let a = app
        .post(&format!("/v2/user/{user}/data"), body.clone())
        .await;
    assert_eq!(a.status, 200, "{}", a.json);
    body["body"][0]["weight"] = json!(69.5);
    let a = app
        .post(&format!("/v2/user/{user}/data"), body.clone())
        .await;
    assert_eq!(a.status, 200, "{}", a.json);
    let got = raw(&app, "body", &user, BOTH).await.json;
    assert_eq!(
        datas(&got, "body"),
        body["body"].as_array().unwrap().clone()
    );

    // The payloads live in the user's store folder, and its removal takes them.
    let (team, id): (Uuid, Uuid) = (team_of(&app, &user).await, user.parse().unwrap());
    let health = &app.state.health;
    assert_eq!(
        health.read_raw(team, id, "body", None).await.unwrap().len(),
        4
    );
    health.delete_user(team, id).await.unwrap();
    for part in wearhouse::store::health::RAW_PARTS {
        assert!(
            health
                .read_raw(team, id, part, None)
                .await
                .unwrap()
                .is_empty(),
            "{part}"
        );
    }
}

async fn team_of(app: &TestApp, user: &str) -> Uuid {
    let a = app.get(&format!("/v2/user/{user}")).await;
    a.json["team_id"].as_str().unwrap().parse().unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_pull_from_oura_answers_the_fakes_documents_as_served() {
    let oura: FakeOura = crate::sync_pull::fake_oura().await;
    let l = Linked::link(Arc::new(Oura::new(&oura.base).unwrap())).await;
    oura.accept_when(l.issued_tokens(None));
    l.run_until(JobState::Succeeded).await;
    // What the fake serves (moved into the pull's window), by collection.
    let served = |collection: &str| -> Vec<Value> {
        let days = crate::sync_support::linked::offset_days();
        crate::sync_oura::fake_oura::fixture_collections()[collection]
            .iter()
            .map(|d| crate::sync_oura::fake_oura::shifted(d, days))
            .collect()
    };
    let mut cases = Vec::new();
    for (part, collection, component) in [
        ("sleep", "sleep", "RawSleepResponse"),
        ("activity", "daily_activity", "RawActivityResponse"),
        ("workouts", "workout", "RawWorkoutResponse"),
    ] {
        let a = raw(&l.app, part, &l.user, &window()).await;
        assert_eq!(a.status, 200, "{part}: {}", a.json);
        let got = datas(&a.json, part);
        let summaries = l.summary(part, "id").await;
        assert_eq!(got.len(), summaries.len(), "{part}: one payload per record");
        assert!(!got.is_empty(), "{part}");
        let documents = served(collection);
        for data in &got {
            assert!(
                documents.contains(data),
                "{part}: not a document the fake served: {data}"
            );
        }
        // The pulled record's id is the document's.
        for r in a.json[part].as_array().unwrap() {
            if part != "activity" {
                assert_eq!(r["provider_id"], r["data"]["id"], "{part}");
            }
            assert_eq!(r["source"]["slug"], "oura");
        }
        cases.push(reference::case(part, component, None, &a.json));
    }
    // A day's range answers that day's documents only.
    let day = served("daily_activity")[0]["day"]
        .as_str()
        .unwrap()
        .to_owned();
    let a = raw(
        &l.app,
        "activity",
        &l.user,
        &format!("start_date={day}&end_date={day}"),
    )
    .await;
    let got = datas(&a.json, "activity");
    assert_eq!(got.len(), 1, "{}", a.json);
    assert_eq!(got[0]["day"], day.as_str());
    reference::check("junction-openapi-raw.json", &cases);
}
