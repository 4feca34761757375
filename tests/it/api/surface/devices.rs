//! Devices: the distinct sources of a user's data (summaries, recent samples) and its
//! connected providers without data; ids stable and per user; another team's user or device
//! answers 404; the reference's `ClientFacingDevice` parses each.

use serde_json::{Value, json};

use super::{World, case, check_against_reference};

fn devices_of(list: &Value) -> Vec<(String, String, Value, Value)> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["provider"].as_str().unwrap().to_owned(),
                d["source_type"].as_str().unwrap().to_owned(),
                d["app_id"].clone(),
                d["device_id"].clone(),
            )
        })
        .collect()
}

#[tokio::test]
async fn devices_are_the_sources_the_users_data_names() {
    let world = World::start().await;
    let user = world.user.clone();
    // A ring (sleep), a watch app (activity), a chest strap's heart rate of yesterday, an old
    // heart rate of a Garmin device, and a Withings profile (a connection without records
    // that name a source).
    world
        .push(
            &json!({"provider": "oura", "source": {"type": "ring", "device_id": "ring-7"},
            "sleep": [{"bedtime_start": "2025-03-01T23:00:00+01:00",
                       "bedtime_stop": "2025-03-02T06:00:00+01:00"}]}),
        )
        .await;
    world
        .push(&json!({"provider": "apple_health_kit",
            "source": {"type": "watch", "app_id": "com.apple.health"},
            "activity": [{"date": "2025-03-02", "steps": 9000}]}))
        .await;
    let yesterday = (chrono::Utc::now() - chrono::Duration::days(1)).to_rfc3339();
    world
        .push(
            &json!({"provider": "polar", "source": {"type": "chest_strap", "device_id": "h10"},
            "timeseries": {"heartrate": [{"timestamp": yesterday, "value": 60.0}]}}),
        )
        .await;
    world
        .push(
            &json!({"provider": "garmin", "source": {"type": "watch", "device_id": "fenix"},
            "timeseries": {"heartrate": [{"timestamp": "2024-01-01T00:00:00Z", "value": 60.0}]}}),
        )
        .await;
    world
        .push(&json!({"provider": "withings", "profile": {"height": 180}}))
        .await;

    let (status, list) = world.get(&format!("/v2/user/{user}/device")).await;
    assert_eq!(status, 200, "{list}");
    // The catalogue's default source types of Garmin and Withings.
    let (garmin_default, withings_default) = ("watch".to_owned(), "scale".to_owned());
    assert_eq!(
        devices_of(&list),
        vec![
            (
                "apple_health_kit".into(),
                "watch".into(),
                json!("com.apple.health"),
                Value::Null
            ),
            // Its only sample is older than the devices' recent window: the connection shows.
            ("garmin".into(), garmin_default, Value::Null, Value::Null),
            ("oura".into(), "ring".into(), Value::Null, json!("ring-7")),
            (
                "polar".into(),
                "chest_strap".into(),
                Value::Null,
                json!("h10")
            ),
            (
                "withings".into(),
                withings_default,
                Value::Null,
                Value::Null
            ),
        ],
        "{list}"
    );
    let mut cases = Vec::new();
    for device in list.as_array().unwrap() {
        assert_eq!(device["user_id"], user.as_str());
        cases.push(case(
            "device",
            "ClientFacingDevice",
            "ClientFacingDevice",
            device,
        ));
    }

    // One by id: the same object, on every read.
    let ring = list
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["provider"] == "oura")
        .unwrap()
        .clone();
    let ring_id = ring["id"].as_str().unwrap();
    let path = format!("/v2/user/{user}/device/{ring_id}");
    assert_eq!(world.get(&path).await, (200, ring.clone()));
    cases.push(case(
        "one device",
        "ClientFacingDevice",
        "ClientFacingDevice",
        &ring,
    ));

    // Another user of the team with the same source gets another id.
    let second = world.new_user("surface-2").await;
    let (status, _) = world
        .post(
            &format!("/v2/user/{second}/data"),
            &json!({"provider": "oura",
            "source": {"type": "ring", "device_id": "ring-7"},
            "sleep": [{"bedtime_start": "2025-03-01T23:00:00+01:00",
                       "bedtime_stop": "2025-03-02T06:00:00+01:00"}]}),
        )
        .await;
    assert_eq!(status, 200);
    let (_, theirs) = world.get(&format!("/v2/user/{second}/device")).await;
    assert_eq!(theirs.as_array().unwrap().len(), 1, "{theirs}");
    assert_ne!(theirs[0]["id"], ring["id"]);
    let (status, _) = world
        .get(&format!("/v2/user/{second}/device/{ring_id}"))
        .await;
    assert_eq!(status, 404, "a device of another user");

    // Tenancy, unknown ids, malformed ids.
    let other = world.other_key.clone();
    for p in [format!("/v2/user/{user}/device"), path.clone()] {
        let (status, body) = world.get_with(&other, &p).await;
        assert_eq!(status, 404, "{p}: {body}");
    }
    let unknown = format!("/v2/user/{user}/device/{}", uuid::Uuid::new_v4());
    assert_eq!(world.get(&unknown).await.0, 404);
    let (status, body) = world.get(&format!("/v2/user/{user}/device/nope")).await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["detail"][0]["loc"], json!(["path", "device_id"]));

    check_against_reference(&cases);
}
