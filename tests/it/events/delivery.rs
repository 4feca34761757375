//! Deliveries: signed and shaped like the getters, created then updated, retried until the
//! receiver answers (across a SIGKILL too), kept in order per endpoint and user, isolated per
//! endpoint, signed with both secrets during a rotation, replayed, and the retry schedule.

use std::collections::HashSet;
use std::time::Duration;

use super::support::{Received, Receiver, Server, WAIT, assert_verified, push_body, verify};
use serde_json::{Value, json};

use super::support;
use super::{ALLOW, of_type};

#[tokio::test(flavor = "multi_thread")]
async fn push_events_are_signed_shaped_like_the_getters_and_created_once() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), ALLOW, None);
    let rx = Receiver::start(true).await;
    let (_, secret) = server.endpoint(&rx.url, None).await;
    let user = server.user("u1").await;
    let full: Value =
        serde_json::from_str(include_str!("../../../testdata/push/full.json")).unwrap();
    server
        .post(&format!("/v2/user/{user}/data"), full.clone())
        .await;

    let got = rx
        .wait_for(WAIT, "connection and sleep events", |g| {
            !of_type(g, "daily.data.sleep.created").is_empty()
                && !of_type(g, "provider.connection.created").is_empty()
        })
        .await;
    // The sleep event carries exactly what the getter renders for those records.
    let sleep = of_type(&got, "daily.data.sleep.created")[0].json();
    let rendered = server
        .get(&format!(
            "/v2/summary/sleep/{user}?start_date=2025-01-01&end_date=2025-12-31"
        ))
        .await;
    assert_eq!(
        sleep["data"]["data"], rendered["sleep"],
        "event data = getter rendering"
    );
    assert_eq!(sleep["data"]["source"]["provider"], full["provider"]);
    assert_eq!(sleep["user_id"], user.as_str());
    assert_eq!(sleep["client_user_id"], "u1");
    assert!(sleep["team_id"].is_string());
    let conn = of_type(&got, "provider.connection.created")[0].json();
    assert_eq!(conn["data"]["provider"]["slug"], full["provider"]);
    assert_eq!(conn["data"]["source"], conn["data"]["provider"]);
    // Headers: the svix copies equal the webhook ones.
    for d in &got {
        for h in ["id", "timestamp", "signature"] {
            assert_eq!(
                d.header(&format!("svix-{h}")),
                d.header(&format!("webhook-{h}"))
            );
        }
    }
    assert_verified(&secret, &got);
    // A wrong secret does not verify: the check can fail.
    let wrong = verify("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", &got[..1]);
    assert_ne!(wrong[0], "ok");

    // The same push again: nothing new. One changed value: one updated event with one record.
    // A user's pushes are announced in order, so once the change's event is listed, the
    // identical push before it was announced (as nothing).
    let before = server.events("").await.len();
    server
        .post(&format!("/v2/user/{user}/data"), full.clone())
        .await;
    let mut changed =
        json!({ "provider": full["provider"], "source": full["source"], "sleep": full["sleep"] });
    changed["sleep"][0]["rem"] = json!(6300);
    server.post(&format!("/v2/user/{user}/data"), changed).await;
    server
        .events_until("&event_type=daily.data.sleep.updated", 1, WAIT)
        .await;
    let events = server.events("").await;
    let new: Vec<&Value> = events[before..].iter().collect();
    assert_eq!(new.len(), 1, "an identical re-push emits nothing: {new:?}");
    assert_eq!(new[0]["event_type"], "daily.data.sleep.updated");
    assert_eq!(new[0]["data"]["data"].as_array().unwrap().len(), 1);
    assert_eq!(new[0]["data"]["data"][0]["rem"], 6300);
    let got = rx
        .wait_for(WAIT, "the updated event", |g| {
            !of_type(g, "daily.data.sleep.updated").is_empty()
        })
        .await;
    assert_verified(&secret, &got);
    // Created once per key: every delivered daily created event names distinct records.
    assert_eq!(of_type(&got, "daily.data.sleep.created").len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn new_samples_are_created_and_changed_samples_updated() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), ALLOW, None);
    let user = server.user("u1").await;
    server
        .post(&format!("/v2/user/{user}/data"), push_body(0, 10, 60.0))
        .await;
    server
        .post(&format!("/v2/user/{user}/data"), push_body(0, 10, 60.0))
        .await;
    let mut body = push_body(0, 10, 60.0);
    body["timeseries"]["heartrate"][3]["value"] = json!(61.0);
    server.post(&format!("/v2/user/{user}/data"), body).await;
    server
        .events_until("&event_type=daily.data.heartrate.updated", 1, WAIT)
        .await;
    let events = server.events(&format!("&user_id={user}")).await;
    let types: Vec<&str> = events
        .iter()
        .map(|e| e["event_type"].as_str().unwrap())
        .collect();
    assert_eq!(
        types,
        [
            "provider.connection.created",
            "daily.data.heartrate.created",
            "daily.data.heartrate.updated"
        ]
    );
    assert_eq!(events[1]["data"]["data"].as_array().unwrap().len(), 10);
    assert_eq!(events[2]["data"]["data"].as_array().unwrap().len(), 1);
    assert_eq!(events[2]["data"]["data"][0]["value"], 61.0);
    assert_eq!(events[2]["data"]["source"]["slug"], "oura");
    let only = server
        .events("&event_type=daily.data.heartrate.updated")
        .await;
    assert_eq!(only.len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn receiver_down_at_first_gets_the_event_later_with_the_same_id() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), ALLOW, None);
    let rx = Receiver::start(false).await;
    let (endpoint, secret) = server.endpoint(&rx.url, None).await;
    let sent = server
        .post(
            "/v2/team/events/test",
            json!({"event_type": "daily.data.sleep.created"}),
        )
        .await;
    let id = sent["event_id"].as_str().unwrap().to_owned();
    let started = std::time::Instant::now();
    while rx.refused.lock().unwrap().is_empty() {
        assert!(started.elapsed() < WAIT);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let pending = server
        .get_when(
            &format!("/v2/team/webhooks/{endpoint}/deliveries?status=pending"),
            |a| a["deliveries"][0]["attempts"] == 1,
        )
        .await;
    let d = &pending["deliveries"][0];
    assert_eq!(d["attempts"], 1);
    assert_eq!(d["status_code"], 503);
    assert!(d["next_attempt_at"].is_string());
    rx.up.store(true, std::sync::atomic::Ordering::SeqCst);
    let got = rx
        .wait_for(WAIT, "the retried delivery", |g| !g.is_empty())
        .await;
    assert_eq!(got[0].id(), id);
    assert_eq!(
        rx.refused.lock().unwrap()[0].id(),
        id,
        "the same webhook-id on every attempt"
    );
    assert_verified(&secret, &got);
    let done = server
        .get_when(&format!("/v2/team/webhooks/{endpoint}/deliveries"), |a| {
            a["deliveries"][0]["status"] != "pending"
        })
        .await;
    assert_eq!(done["deliveries"][0]["status"], "succeeded");
    assert_eq!(done["deliveries"][0]["attempts"], 2);
    let history = done["deliveries"][0]["history"].as_array().unwrap();
    let codes: Vec<&Value> = history.iter().map(|a| &a["status_code"]).collect();
    assert_eq!(
        codes,
        [&json!(503), &json!(204)],
        "every attempt, oldest first"
    );
    assert!(history[0]["error"].is_string() && history[1]["error"].is_null());
    assert!(history[0]["attempted_at"].as_str() < history[1]["attempted_at"].as_str());
}

#[tokio::test(flavor = "multi_thread")]
async fn events_pending_at_a_sigkill_are_all_delivered_after_restart() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), ALLOW, None);
    let key = server.key.clone();
    let rx = Receiver::start(false).await;
    let (_, secret) = server
        .endpoint(&rx.url, Some(json!(["daily.data.*"])))
        .await;
    let user = server.user("u1").await;
    for n in 0..5 {
        server
            .post(
                &format!("/v2/user/{user}/data"),
                push_body(n * 3600, 5, 60.0),
            )
            .await;
    }
    // The last push is acknowledged just before the kill, likely before it was announced.
    server.kill();
    rx.up.store(true, std::sync::atomic::Ordering::SeqCst);
    let server = Server::start(dir.path(), ALLOW, Some(key));
    // An announcement running at the kill is taken over once the dead runner's lease (60 s)
    // expires.
    let expected: HashSet<String> = server
        .events_until(
            "&event_type=daily.data.heartrate.created",
            5,
            Duration::from_secs(100),
        )
        .await
        .iter()
        .map(|e| e["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(expected.len(), 5, "one created event per acknowledged push");
    let jobs = server.get("/v2/team/jobs?kind=webhook.deliver").await;
    eprintln!("jobs after restart: {jobs}");
    // A stream whose job was running at the kill is taken over once the dead runner's lease
    // (60 s) expires; one that was waiting for its retry runs when due.
    let got = rx
        .wait_for(
            Duration::from_secs(100),
            "every event after the restart",
            |g| expected.iter().all(|id| g.iter().any(|r| &r.id() == id)),
        )
        .await;
    assert_verified(&secret, &got);
    drop(server);
}

#[tokio::test(flavor = "multi_thread")]
async fn deliveries_keep_creation_order_per_endpoint_and_user() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), ALLOW, None);
    let rx = Receiver::start(true).await;
    let (_, secret) = server
        .endpoint(&rx.url, Some(json!(["daily.data.heartrate.created"])))
        .await;
    let users = [server.user("a").await, server.user("b").await];
    for n in 0..8 {
        for user in &users {
            server
                .post(
                    &format!("/v2/user/{user}/data"),
                    push_body(n * 3600, 2, 60.0),
                )
                .await;
        }
    }
    let got = rx.wait_for(WAIT, "16 events", |g| g.len() >= 16).await;
    for user in &users {
        let firsts: Vec<String> = got
            .iter()
            .map(Received::json)
            .filter(|b| b["user_id"] == user.as_str())
            .map(|b| {
                b["data"]["data"][0]["timestamp"]
                    .as_str()
                    .unwrap()
                    .to_owned()
            })
            .collect();
        assert_eq!(firsts.len(), 8);
        let mut sorted = firsts.clone();
        sorted.sort();
        assert_eq!(
            firsts, sorted,
            "user {user}'s events arrive in creation order"
        );
    }
    assert_verified(&secret, &got);
}

/// A slow endpoint (3 s per answer) with streams for eight users holds at most
/// `STREAMS_PER_ENDPOINT` of the runner's eight slots: another team's event, sent while the
/// slow endpoint has requests in flight, is delivered before the first of them is answered
/// (without the cap all eight slots would be waiting on the slow endpoint).
#[tokio::test(flavor = "multi_thread")]
async fn a_slow_endpoint_does_not_delay_another_teams_deliveries() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), ALLOW, None);
    let other = support::create_team(dir.path(), "globex");
    let slow = Receiver::start_slow(true, Duration::from_secs(3)).await;
    let fast = Receiver::start(true).await;
    server.endpoint(&slow.url, None).await;
    let (status, _) = server
        .call(
            "POST",
            "/v2/team/webhooks",
            &other,
            Some(json!({ "url": fast.url })),
        )
        .await;
    assert_eq!(status, 200);
    for n in 0..8 {
        let user = server.user(&format!("u{n}")).await;
        server
            .post(&format!("/v2/user/{user}/data"), push_body(0, 3, 60.0))
            .await;
    }
    let started = std::time::Instant::now();
    while slow.started.load(std::sync::atomic::Ordering::SeqCst) < 2 {
        assert!(started.elapsed() < WAIT, "the slow endpoint got no request");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Let the runner take whatever slots it would give the slow endpoint.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (status, _) = server
        .call(
            "POST",
            "/v2/team/events/test",
            &other,
            Some(json!({"event_type": "provider.connection.created"})),
        )
        .await;
    assert_eq!(status, 200);
    let got = fast
        .wait_for(WAIT, "the other team's event", |g| !g.is_empty())
        .await;
    let slow_got = slow
        .wait_for(WAIT, "the first slow answer", |g| !g.is_empty())
        .await;
    let first_answer = slow_got.iter().map(|r| r.at).min().unwrap();
    assert!(
        got[0].at < first_answer,
        "the other team's event waited for the slow endpoint"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn rotation_signs_with_both_secrets_during_the_overlap() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), ALLOW, None);
    let rx = Receiver::start(true).await;
    let (endpoint, old) = server.endpoint(&rx.url, None).await;
    let rotated = server
        .post(
            &format!("/v2/team/webhooks/{endpoint}/rotate_secret"),
            json!({}),
        )
        .await;
    let new = rotated["secret"].as_str().unwrap().to_owned();
    assert_ne!(new, old);
    assert!(rotated["previous_secret_expires_at"].is_string());
    let listed = server.get(&format!("/v2/team/webhooks/{endpoint}")).await;
    assert!(
        listed.get("secret").is_none(),
        "the secret is shown only at creation and rotation"
    );
    server
        .post(
            "/v2/team/events/test",
            json!({"event_type": "provider.connection.created"}),
        )
        .await;
    let got = rx.wait_for(WAIT, "the test event", |g| !g.is_empty()).await;
    assert_eq!(
        got[0]
            .header("webhook-signature")
            .unwrap()
            .split(' ')
            .count(),
        2
    );
    assert_verified(&old, &got);
    assert_verified(&new, &got);
}

#[tokio::test(flavor = "multi_thread")]
async fn replay_resends_exactly_the_window() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), ALLOW, None);
    let test = |t: &'static str| json!({ "event_type": t });
    for _ in 0..2 {
        server
            .post("/v2/team/events/test", test("labtest.order.created"))
            .await;
    }
    tokio::time::sleep(Duration::from_millis(20)).await;
    let since = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true);
    tokio::time::sleep(Duration::from_millis(20)).await;
    for _ in 0..3 {
        server
            .post("/v2/team/events/test", test("labtest.order.updated"))
            .await;
    }
    let window: Vec<String> = server
        .events(&format!("&since={}", since.replace('+', "%2B")))
        .await
        .iter()
        .map(|e| e["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(window.len(), 3);
    let rx = Receiver::start(true).await;
    let (endpoint, secret) = server.endpoint(&rx.url, None).await;
    let answer = server
        .post(
            &format!("/v2/team/webhooks/{endpoint}/replay"),
            json!({ "since": since }),
        )
        .await;
    assert_eq!(answer["replayed"], 3);
    let got = rx
        .wait_for(WAIT, "the replayed events", |g| g.len() >= 3)
        .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let ids: Vec<String> = rx.got().iter().map(Received::id).collect();
    assert_eq!(
        ids, window,
        "exactly the window, in order, with the events' own ids"
    );
    assert_verified(&secret, &got);
}

/// The retry schedule end to end, on a clock the test moves: a delivery to a receiver that
/// always fails is tried 8 times at the spec's intervals, then marked failed; an endpoint still
/// failing 5 days after its first failure is disabled, and its pending deliveries fail.
#[tokio::test(flavor = "multi_thread")]
async fn failing_deliveries_follow_the_schedule_then_fail_and_the_endpoint_is_disabled() {
    use std::sync::Arc;
    use wearhouse::events::{UrlRules, delivery::Deliverer, endpoints, outbox};
    use wearhouse::jobs::{ManualClock, Registry, Runner, RunnerConfig};
    use wearhouse::store::metadata::deliveries::list_deliveries;

    let dir = tempfile::tempdir().unwrap();
    let meta = support::sqlite_meta(dir.path()).await;
    let (team, _) = meta.create_team("acme").await.unwrap();
    let rx = Receiver::start(false).await;
    let endpoint = support::endpoint_at(&meta, team.id, &rx.url).await;
    // A little ahead of the system clock, which dates the jobs the outbox enqueues.
    let clock = Arc::new(ManualClock::new(
        chrono::Utc::now() + chrono::Duration::seconds(2),
    ));
    let config = RunnerConfig {
        poll_interval: Duration::from_millis(20),
        ..RunnerConfig::default()
    };
    let runner = Runner::new(
        meta.clone(),
        Registry::new().register(
            Deliverer::new(UrlRules {
                allow_private: true,
            })
            .unwrap(),
        ),
        config,
    )
    .with_clock(clock.clone())
    .spawn();
    fn clock_now(clock: &ManualClock) -> chrono::DateTime<chrono::Utc> {
        use wearhouse::jobs::Clock;
        clock.now()
    }
    let event = |n: i64| wearhouse::events::Event {
        event_type: wearhouse::events::EventType::DailyCreated("steps"),
        user: None,
        data: json!({ "n": n }),
    };
    outbox::publish(&meta, team.id, &[event(0)]).await.unwrap();
    let refused = |n: usize| {
        let rx = rx.clone();
        async move {
            let started = std::time::Instant::now();
            while rx.refused.lock().unwrap().len() < n {
                assert!(started.elapsed() < WAIT, "waiting for attempt {n}");
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    };
    let delivery = || async {
        let mut conn = meta.reader().await.unwrap();
        list_deliveries(&mut conn, endpoint.id, None, None, 10)
            .await
            .unwrap()
    };
    // Attempt n+1 comes due after the n-th wait (plus up to 20 % jitter), not before.
    let waits = [5u64, 300, 1800, 7200, 18_000, 36_000, 36_000];
    refused(1).await;
    for (i, wait) in waits.iter().enumerate() {
        // The attempt is recorded just after the receiver answered.
        let started = std::time::Instant::now();
        while delivery().await[0].attempts as usize != i + 1 {
            assert!(started.elapsed() < WAIT, "attempt {} not recorded", i + 1);
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let d = &delivery().await[0];
        let last = d.last_attempt_at.unwrap();
        let next = d.next_attempt_at.unwrap();
        let gap = (next - last).num_milliseconds();
        assert!(
            gap >= (*wait * 1000) as i64 && gap <= (*wait * 1200) as i64,
            "wait {i}: {gap} ms"
        );
        clock.advance(next - last - chrono::Duration::milliseconds(100));
        tokio::time::sleep(Duration::from_millis(150)).await;
        assert_eq!(
            rx.refused.lock().unwrap().len(),
            i + 1,
            "not retried before its time"
        );
        clock.advance(chrono::Duration::milliseconds(200));
        refused(i + 2).await;
    }
    let started = std::time::Instant::now();
    while delivery().await[0].status.as_str() != "failed" {
        assert!(started.elapsed() < WAIT);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(delivery().await[0].attempts, 8);
    // Still failing 5 days after the first failure: disabled at the next failure, not before.
    let first = endpoints::get(&meta, team.id, endpoint.id)
        .await
        .unwrap()
        .failing_since
        .unwrap();
    let seen = rx.refused.lock().unwrap().len();
    clock.advance(
        first + chrono::Duration::days(5) - chrono::Duration::hours(1) - clock_now(&clock),
    );
    outbox::publish(&meta, team.id, &[event(1)]).await.unwrap();
    refused(seen + 1).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let e = endpoints::get(&meta, team.id, endpoint.id).await.unwrap();
    assert!(
        e.disabled_at.is_none(),
        "disabled before 5 days of failures"
    );
    assert_eq!(e.failing_since, Some(first));
    clock.advance(chrono::Duration::hours(2));
    refused(seen + 2).await;
    let started = std::time::Instant::now();
    loop {
        let e = endpoints::get(&meta, team.id, endpoint.id).await.unwrap();
        if e.disabled_at.is_some() {
            assert!(e.disabled_reason.unwrap().contains("5 days"));
            break;
        }
        assert!(started.elapsed() < WAIT, "not disabled");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let deliveries = delivery().await;
    assert!(
        deliveries.iter().all(|d| d.status.as_str() == "failed"),
        "{deliveries:?}"
    );
    // A disabled endpoint gets no new deliveries.
    let out = outbox::publish(&meta, team.id, &[event(10)]).await.unwrap();
    assert_eq!(out.deliveries, 0);
    runner.shutdown().await;
}
