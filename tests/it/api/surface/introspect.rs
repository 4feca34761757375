//! Pull introspection: demo connections pulled by the real server's runner show as completed
//! historical pulls with their windows and resources, paged by user; pushed data is not a
//! pull; another team's user answers 404 and another team sees none of ours; the reference's
//! models parse every answer.

use std::time::Duration;

use serde_json::{Value, json};

use super::{World, case, check_against_reference};

/// Connects `user` to a demo `provider` with `days` of history.
async fn demo(world: &World, user: &str, provider: &str, days: u32) {
    let (status, body) = world
        .post(
            "/v2/link/connect/demo",
            &json!({"user_id": user, "provider": provider, "days": days}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
}

/// Polls the historical pulls of `user` until every one has succeeded.
async fn until_pulled(world: &World, user: &str) -> Value {
    let path = format!("/v2/introspect/historical_pull?user_id={user}");
    for _ in 0..120 {
        let (status, body) = world.get(&path).await;
        assert_eq!(status, 200, "{body}");
        let done = body["data"][0]["provider"].as_object().is_some_and(|p| {
            !p.is_empty()
                && p.values().all(|pull| {
                    pull["pulled"]
                        .as_object()
                        .is_some_and(|r| r.values().all(|s| s["status"] == "success"))
                })
        });
        if done {
            return body;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    panic!("the pulls of {user} did not complete");
}

#[tokio::test]
async fn introspection_shows_each_users_pulls() {
    let world = World::start().await;
    let first = world.user.clone();
    let second = world.new_user("surface-2").await;
    let pushed_only = world.new_user("surface-3").await;
    let (status, _) = world
        .post(
            &format!("/v2/user/{pushed_only}/data"),
            &json!({"provider": "polar",
            "timeseries": {"heartrate": [{"timestamp": "2025-03-01T00:00:00Z", "value": 60.0}]}}),
        )
        .await;
    assert_eq!(status, 200);
    demo(&world, &first, "oura", 2).await;
    demo(&world, &second, "fitbit", 3).await;
    let mut cases = Vec::new();

    let pulls = until_pulled(&world, &first).await;
    let entry = &pulls["data"][0];
    assert_eq!(entry["user_id"], first.as_str());
    let oura = &entry["provider"]["oura"];
    let sleep = &oura["pulled"]["sleep"];
    assert_eq!(sleep["status"], "success", "{pulls}");
    // Two days of demo history: from yesterday's midnight (UTC) to when the link was made.
    let yesterday = (chrono::Utc::now() - chrono::Duration::days(1)).format("%Y-%m-%dT00:00:00Z");
    assert_eq!(sleep["range_start"], yesterday.to_string(), "{sleep}");
    assert_eq!(
        sleep["range_end"], sleep["timeline"]["scheduled_at"],
        "{sleep}"
    );
    assert!(sleep["timeline"]["ended_at"].is_string(), "{sleep}");
    assert!(sleep["timeline"]["scheduled_at"].as_str() <= sleep["timeline"]["ended_at"].as_str());
    assert_eq!(sleep["error_details"], Value::Null);
    assert!(oura["pulled"]["heartrate"].is_object(), "{oura}");
    // Resources a pull can fetch but this one brought nothing of.
    let not_pulled: Vec<&str> = oura["not_pulled"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap())
        .collect();
    assert!(not_pulled.contains(&"glucose"), "{oura}");
    assert!(!not_pulled.contains(&"sleep"), "{oura}");
    cases.push(case(
        "historical pull",
        "UserHistoricalPullsResponse",
        "UserHistoricalPullsResponse",
        &pulls,
    ));
    until_pulled(&world, &second).await;

    let (status, resources) = world
        .get(&format!("/v2/introspect/resources?user_id={first}"))
        .await;
    assert_eq!(status, 200, "{resources}");
    let oura = &resources["data"][0]["provider"]["oura"];
    assert_eq!(
        oura["sleep"]["last_attempt"]["status"], "success",
        "{resources}"
    );
    assert_eq!(resources["next_cursor"], Value::Null);
    cases.push(case(
        "resources",
        "UserResourcesResponse",
        "UserResourcesResponse",
        &resources,
    ));

    // Paging: one user a page, in user id order, both pulled users and never the pushed one.
    let mut seen = Vec::new();
    let mut path = "/v2/introspect/historical_pull?user_limit=1".to_owned();
    loop {
        let (status, page) = world.get(&path).await;
        assert_eq!(status, 200, "{page}");
        let data = page["data"].as_array().unwrap();
        assert!(data.len() <= 1, "{page}");
        seen.extend(
            data.iter()
                .map(|d| d["user_id"].as_str().unwrap().to_owned()),
        );
        assert_eq!(page["next"], page["next_cursor"]);
        match page["next_cursor"].as_str() {
            Some(cursor) => {
                path = format!("/v2/introspect/historical_pull?user_limit=1&next_cursor={cursor}")
            }
            None => break,
        }
    }
    let mut expected = vec![first.clone(), second.clone()];
    expected.sort();
    assert_eq!(seen, expected);
    let (_, fitbit) = world.get("/v2/introspect/resources?provider=fitbit").await;
    let users: Vec<&str> = fitbit["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["user_id"].as_str().unwrap())
        .collect();
    assert_eq!(users, [second.as_str()], "{fitbit}");

    // Tenancy and bad parameters.
    let other = world.other_key.clone();
    for p in ["/v2/introspect/resources", "/v2/introspect/historical_pull"] {
        let (status, body) = world.get_with(&other, p).await;
        assert_eq!((status, &body["data"]), (200, &json!([])), "{p}: {body}");
        let (status, _) = world
            .get_with(&other, &format!("{p}?user_id={first}"))
            .await;
        assert_eq!(status, 404, "{p}");
        let (status, body) = world.get(&format!("{p}?provider=nope")).await;
        assert_eq!(status, 422, "{body}");
        let (status, body) = world.get(&format!("{p}?next_cursor=nope")).await;
        assert_eq!(status, 422, "{body}");
        let (status, _) = world.get(&format!("{p}?user_limit=0")).await;
        assert_eq!(status, 422);
    }

    check_against_reference(&cases);
}
