//! Electrocardiogram summaries, derived from pushed voltage samples: one per run of a source's
//! samples, with its count and rate; a provider filter; another team's user answers 404; the
//! reference's model parses the answer.

use serde_json::{Value, json};

use super::{World, case, check_against_reference};

/// `count` voltage samples `step_ms` apart from `start` (+01:00 local time, lead I).
fn run(start: &str, count: usize, step_ms: i64) -> Vec<Value> {
    let from = chrono::DateTime::parse_from_rfc3339(start).unwrap();
    (0..count)
        .map(|i| {
            let at = from + chrono::Duration::milliseconds(step_ms * i as i64);
            json!({"timestamp": at.to_rfc3339(), "timezone_offset": 3600, "type": "lead_1",
                   "value": 0.1 * i as f64})
        })
        .collect()
}

#[tokio::test]
async fn electrocardiograms_are_the_recordings_of_the_voltage_samples() {
    let world = World::start().await;
    let user = world.user.clone();
    let mut watch = run("2025-03-02T08:00:00+01:00", 10, 100);
    watch.extend(run("2025-03-02T08:10:00+01:00", 5, 200));
    world
        .push(
            &json!({"provider": "apple_health_kit", "source": {"type": "watch", "device_id": "w-1"},
            "timeseries": {"electrocardiogram_voltage": watch}}),
        )
        .await;
    world
        .push(&json!({"provider": "withings", "source": {"type": "phone"},
            "timeseries": {"electrocardiogram_voltage": run("2025-03-02T08:05:00+01:00", 3, 500)}}))
        .await;

    let path = format!("/v2/summary/electrocardiogram/{user}?start_date=2025-03-02");
    let (status, answer) = world.get(&path).await;
    assert_eq!(status, 200, "{answer}");
    let list = answer["electrocardiogram"].as_array().unwrap();
    let summary: Vec<(Value, Value, Value, Value, Value)> = list
        .iter()
        .map(|e| {
            (
                e["source_provider"].clone(),
                e["session_start"].clone(),
                e["session_end"].clone(),
                e["voltage_sample_count"].clone(),
                e["sampling_frequency_hz"].clone(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        vec![
            (
                json!("apple_health_kit"),
                json!("2025-03-02T08:00:00+01:00"),
                json!("2025-03-02T08:00:00.900+01:00"),
                json!(10),
                json!(10.0)
            ),
            (
                json!("withings"),
                json!("2025-03-02T08:05:00+01:00"),
                json!("2025-03-02T08:05:01+01:00"),
                json!(3),
                json!(2.0)
            ),
            (
                json!("apple_health_kit"),
                json!("2025-03-02T08:10:00+01:00"),
                json!("2025-03-02T08:10:00.800+01:00"),
                json!(5),
                json!(5.0)
            ),
        ],
        "{answer}"
    );
    assert_eq!(list[0]["source_device_id"], "w-1");
    assert_eq!(list[0]["source_type"], "watch");
    assert_eq!(list[0]["time_zone"], "+01:00");
    assert_eq!(list[0]["user_id"], user.as_str());
    assert_eq!(list[0]["classification"], Value::Null);
    assert_ne!(list[0]["id"], list[2]["id"]);
    assert_eq!(world.get(&path).await.1, answer, "ids are stable");
    let mut cases = vec![case(
        "electrocardiogram",
        "ClientFacingElectrocardiogramResponse",
        "ClientFacingElectrocardiogramResponse",
        &answer,
    )];

    let (_, withings) = world.get(&format!("{path}&provider=withings")).await;
    assert_eq!(
        withings["electrocardiogram"].as_array().unwrap().len(),
        1,
        "{withings}"
    );
    let (_, none) = world
        .get(&format!(
            "/v2/summary/electrocardiogram/{user}?start_date=2025-03-03"
        ))
        .await;
    assert_eq!(none, json!({"electrocardiogram": []}));
    cases.push(case(
        "no electrocardiogram",
        "ClientFacingElectrocardiogramResponse",
        "ClientFacingElectrocardiogramResponse",
        &none,
    ));

    let (status, _) = world.get_with(&world.other_key.clone(), &path).await;
    assert_eq!(status, 404);
    check_against_reference(&cases);
}
