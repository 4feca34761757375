//! Events and webhooks end to end (issue 16): the real binary delivers to a receiver in the
//! test, and every delivery's signature is verified by the Python `standardwebhooks` package,
//! not by our signing code.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::events_support;
use crate::postgres::ScratchDb;

use std::collections::HashSet;
use std::time::Duration;

use events_support::{Received, Receiver, Server, WAIT, assert_verified, push_body, verify};
use serde_json::{Value, json};

const ALLOW: &[&str] = &["--webhook-allow-private"];

fn of_type<'a>(got: &'a [Received], t: &str) -> Vec<&'a Received> {
    got.iter().filter(|r| r.event_type() == t).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn push_events_are_signed_shaped_like_the_getters_and_created_once() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), ALLOW, None);
    let rx = Receiver::start(true).await;
    let (_, secret) = server.endpoint(&rx.url, None).await;
    let user = server.user("u1").await;
    let full: Value = serde_json::from_str(include_str!("../../testdata/push/full.json")).unwrap();
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
    let other = events_support::create_team(dir.path(), "globex");
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

#[tokio::test(flavor = "multi_thread")]
async fn a_team_never_sees_another_teams_endpoints_deliveries_or_events() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), ALLOW, None);
    let other = events_support::create_team(dir.path(), "globex");
    let rx = Receiver::start(true).await;
    let (endpoint, _) = server.endpoint(&rx.url, None).await;
    server
        .post(
            "/v2/team/events/test",
            json!({"event_type": "provider.connection.created"}),
        )
        .await;
    for (method, path, body) in [
        ("GET", format!("/v2/team/webhooks/{endpoint}"), None),
        (
            "PATCH",
            format!("/v2/team/webhooks/{endpoint}"),
            Some(json!({"description": "x"})),
        ),
        ("DELETE", format!("/v2/team/webhooks/{endpoint}"), None),
        (
            "POST",
            format!("/v2/team/webhooks/{endpoint}/rotate_secret"),
            Some(json!({})),
        ),
        (
            "GET",
            format!("/v2/team/webhooks/{endpoint}/deliveries"),
            None,
        ),
        (
            "POST",
            format!("/v2/team/webhooks/{endpoint}/replay"),
            Some(json!({"since": "2020-01-01T00:00:00Z"})),
        ),
    ] {
        let (status, answer) = server.call(method, &path, &other, body).await;
        assert_eq!(status, 404, "{method} {path}: {answer}");
        assert_eq!(answer["detail"], "Webhook endpoint not found");
    }
    let (_, list) = server.call("GET", "/v2/team/webhooks", &other, None).await;
    assert_eq!(list["endpoints"], json!([]));
    let (_, events) = server.call("GET", "/v2/team/events", &other, None).await;
    assert_eq!(events["events"], json!([]));
    assert_eq!(server.events("").await.len(), 1, "the owner sees its event");
    let (status, _) = server.call("GET", "/v2/team/webhooks", "wrong", None).await;
    assert_eq!(status, 401);
}

#[tokio::test(flavor = "multi_thread")]
async fn private_link_local_and_loopback_urls_are_refused_unless_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let strict = Server::start(dir.path(), &[], None);
    for url in [
        "http://10.0.0.1/",
        "https://10.0.0.1/",
        "http://169.254.169.254/",
        "https://169.254.169.254/latest/meta-data/",
        "https://127.0.0.1:9000/hook",
        "https://localhost/hook",
        "https://[::1]/hook",
        "http://example.com/hook",
        "not a url",
    ] {
        let (status, answer) = strict
            .call(
                "POST",
                "/v2/team/webhooks",
                &strict.key.clone(),
                Some(json!({"url": url})),
            )
            .await;
        assert_eq!(status, 422, "{url}: {answer}");
        assert_eq!(
            answer["detail"][0]["loc"],
            json!(["body", "url"]),
            "{answer}"
        );
        assert!(answer["detail"][0]["msg"].as_str().unwrap().len() > 10);
    }
    let ok = strict
        .post(
            "/v2/team/webhooks",
            json!({"url": "https://example.com/hook"}),
        )
        .await;
    assert!(ok["secret"].as_str().unwrap().starts_with("whsec_"));
    let key = strict.key.clone();
    drop(strict);
    let open = Server::start(dir.path(), ALLOW, Some(key));
    open.post(
        "/v2/team/webhooks",
        json!({"url": "http://127.0.0.1:9/hook"}),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_input_answers_the_conventions_4xx() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), ALLOW, None);
    let key = server.key.clone();
    let cases = [
        (
            "POST",
            "/v2/team/webhooks",
            Some(json!({"url": "https://example.com", "event_types": ["nope"]})),
            422,
        ),
        (
            "POST",
            "/v2/team/webhooks",
            Some(json!({"url": "https://example.com", "event_types": []})),
            422,
        ),
        ("POST", "/v2/team/webhooks", Some(json!({"url": 5})), 422),
        (
            "POST",
            "/v2/team/webhooks",
            Some(json!({"url": "https://example.com", "extra": 1})),
            422,
        ),
        ("GET", "/v2/team/webhooks/not-a-uuid", None, 422),
        (
            "GET",
            "/v2/team/webhooks/00000000-0000-0000-0000-000000000000",
            None,
            404,
        ),
        (
            "POST",
            "/v2/team/events/test",
            Some(json!({"event_type": "daily.data.hypnogram.created"})),
            422,
        ),
        ("GET", "/v2/team/events?since=yesterday", None, 422),
        (
            "GET",
            "/v2/team/events?next_cursor=00000000-0000-0000-0000-000000000000",
            None,
            422,
        ),
        ("GET", "/v2/team/events?limit=0", None, 422),
    ];
    for (method, path, body, expected) in cases {
        let (status, answer) = server.call(method, path, &key, body).await;
        assert_eq!(status, expected, "{method} {path}: {answer}");
        assert!(
            answer["detail"].is_string() || answer["detail"].is_array(),
            "{answer}"
        );
    }
    let (id, _) = server
        .endpoint("https://example.com/h", Some(json!(["daily.*"])))
        .await;
    let (status, answer) = server
        .call(
            "PATCH",
            &format!("/v2/team/webhooks/{id}"),
            &key,
            Some(json!({"disabled": true, "description": "d"})),
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(answer["disabled"], true);
    assert_eq!(answer["description"], "d");
    let (status, _) = server
        .call("DELETE", &format!("/v2/team/webhooks/{id}"), &key, None)
        .await;
    assert_eq!(status, 200);
    let (status, _) = server
        .call("GET", &format!("/v2/team/webhooks/{id}"), &key, None)
        .await;
    assert_eq!(status, 404);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_demo_connection_emits_connection_and_historical_events() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), ALLOW, None);
    let rx = Receiver::start(true).await;
    let (_, secret) = server.endpoint(&rx.url, None).await;
    let user = server.user("demo").await;
    server
        .post(
            "/v2/link/connect/demo",
            json!({"user_id": user, "provider": "oura", "days": 3}),
        )
        .await;
    let got = rx
        // Each data type's historical event is delivered on its own: wait for the sleep one
        // (waiting for any of them raced with the sleep event's delivery).
        .wait_for(WAIT, "demo events", |g| {
            !of_type(g, "provider.connection.created").is_empty()
                && !of_type(g, "historical.data.sleep.created").is_empty()
        })
        .await;
    let historical: Vec<Value> = got
        .iter()
        .filter(|r| r.event_type().starts_with("historical.data."))
        .map(Received::json)
        .collect();
    assert!(
        historical
            .iter()
            .any(|h| h["event_type"] == "historical.data.sleep.created")
    );
    for h in &historical {
        assert_eq!(h["data"]["provider"]["slug"], "oura");
        assert!(
            h["data"]["start_date"].as_str().unwrap() < h["data"]["end_date"].as_str().unwrap()
        );
    }
    assert!(
        of_type(&got, "daily.data.sleep.created").is_empty(),
        "a pull emits historical events, not daily ones"
    );
    assert_verified(&secret, &got);
}

/// The whole flow on PostgreSQL (`WEARHOUSE_TEST_POSTGRES_URL`, default the machine's server):
/// outbox, fan-out, delivery streams, listings with filters and cursors, replay.
#[tokio::test(flavor = "multi_thread")]
async fn the_flow_works_on_postgresql() {
    let db = ScratchDb::create("wearhouse_events").await;
    let url = db.url.clone();
    let dir = tempfile::tempdir().unwrap();
    {
        let server = Server::start(
            dir.path(),
            &["--webhook-allow-private", "--database-url", &url],
            None,
        );
        let rx = Receiver::start(true).await;
        let (endpoint, secret) = server.endpoint(&rx.url, None).await;
        let user = server.user("pg").await;
        for n in 0..3 {
            server
                .post(
                    &format!("/v2/user/{user}/data"),
                    push_body(n * 3600, 3, 60.0),
                )
                .await;
        }
        let got = rx.wait_for(WAIT, "4 events", |g| g.len() >= 4).await;
        assert_verified(&secret, &got);
        let all = server.events(&format!("&user_id={user}")).await;
        assert_eq!(all.len(), 4);
        let page = server.get("/v2/team/events?limit=2").await;
        assert_eq!(page["events"].as_array().unwrap().len(), 2);
        let cursor = page["next_cursor"].as_str().unwrap();
        let rest = server
            .get(&format!("/v2/team/events?limit=2&next_cursor={cursor}"))
            .await;
        assert_eq!(rest["events"][0]["id"], all[2]["id"]);
        let deliveries = server
            .get(&format!(
                "/v2/team/webhooks/{endpoint}/deliveries?status=succeeded"
            ))
            .await;
        assert_eq!(deliveries["deliveries"].as_array().unwrap().len(), 4);
        let replayed = server
            .post(
                &format!("/v2/team/webhooks/{endpoint}/replay"),
                json!({"since": "2020-01-01T00:00:00Z"}),
            )
            .await;
        assert_eq!(replayed["replayed"], 4);
        rx.wait_for(WAIT, "the replay", |g| g.len() >= 8).await;
    }
    db.drop_db().await;
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
    let meta = events_support::sqlite_meta(dir.path()).await;
    let (team, _) = meta.create_team("acme").await.unwrap();
    let rx = Receiver::start(false).await;
    let endpoint = events_support::endpoint_at(&meta, team.id, &rx.url).await;
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

/// A push whose data committed but whose process died before releasing its plan (the crash
/// window between the durable write and the connection's transaction): at the plan's expiry,
/// announcing finds the push's records in the store and announces them, with the connection; a
/// plan whose data never landed is dropped; a live plan holds back the user's later pushes.
#[tokio::test(flavor = "multi_thread")]
async fn an_unreleased_push_is_announced_at_its_expiry_if_it_committed_and_dropped_if_not() {
    use wearhouse::data::announce;
    use wearhouse::events::history;
    use wearhouse::store::health::HealthStore;
    use wearhouse::store::metadata::NewUser;

    let dir = tempfile::tempdir().unwrap();
    let meta = events_support::sqlite_meta(dir.path()).await;
    let health = HealthStore::open(
        &dir.path().join("health").display().to_string(),
        Default::default(),
    )
    .unwrap();
    let (team, _) = meta.create_team("acme").await.unwrap();
    let endpoint = events_support::endpoint_at(&meta, team.id, "http://127.0.0.1:9/h").await;
    let user = meta
        .create_user(
            team.id,
            NewUser {
                client_user_id: "u".to_owned(),
                ..NewUser::default()
            },
        )
        .await
        .unwrap();
    let begin = |body: Value, at: chrono::DateTime<chrono::Utc>| {
        let (meta, health, user) = (meta.clone(), health.clone(), user.clone());
        async move {
            let bytes = body.to_string().into_bytes();
            let parsed =
                wearhouse::ingest::parse_push_json(&bytes, &Default::default(), at).unwrap();
            let pending = wearhouse::data::begin_push(&meta, &health, &user, &parsed, at)
                .await
                .unwrap()
                .expect("a push of new samples has something to announce");
            (parsed, pending)
        }
    };
    let now = chrono::Utc::now();
    // Committed, then the process "dies" before the release.
    let (parsed, committed) = begin(push_body(0, 5, 60.0), now).await;
    wearhouse::data::write_parsed(&meta, &health, &user, parsed)
        .await
        .unwrap();
    // Never committed.
    let later_push = now + chrono::Duration::milliseconds(1);
    let (_, lost) = begin(push_body(100_000, 5, 70.0), later_push).await;
    let early = announce::announce(&meta, &health, user.id, chrono::Utc::now())
        .await
        .unwrap();
    assert_eq!(
        (early.pushes, early.dropped, early.next),
        (0, 0, Some(committed.expires_at)),
        "a live plan is left alone, and waits for its expiry"
    );
    let expired = lost.expires_at + chrono::Duration::seconds(1);
    let out = announce::announce(&meta, &health, user.id, expired)
        .await
        .unwrap();
    assert_eq!((out.pushes, out.dropped, out.next), (1, 1, None));
    let listed = history::events(&meta, &health, team.id, None, None, None, None, 100)
        .await
        .unwrap()
        .0;
    let types: Vec<&str> = listed.iter().map(|e| e.event_type.as_str()).collect();
    assert_eq!(
        types,
        [
            "provider.connection.created",
            "daily.data.heartrate.created"
        ],
        "the committed push is announced, the lost one is not"
    );
    let body: Value = serde_json::from_str(&listed[1].body).unwrap();
    let values: Vec<f64> = body["data"]["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["value"].as_f64().unwrap())
        .collect();
    assert_eq!(values, [60.0; 5], "the committed push's own samples");
    let (deliveries, _) = history::deliveries(&meta, team.id, endpoint.id, None, None, 10)
        .await
        .unwrap();
    assert_eq!(deliveries.len(), 2);
    let connections = meta.connections(user.id).await.unwrap();
    assert_eq!(
        connections[0].provider, "oura",
        "the connection the push made is recorded"
    );
    // Nothing is left to announce: a second pass writes nothing.
    let again = announce::announce(&meta, &health, user.id, expired)
        .await
        .unwrap();
    assert_eq!((again.pushes, again.dropped, again.events), (0, 0, 0));
}

/// Events are kept 30 days: older ones go with their deliveries, except while a delivery of
/// theirs is still pending; newer ones stay.
#[tokio::test(flavor = "multi_thread")]
async fn events_older_than_30_days_are_pruned_once_delivered() {
    use wearhouse::events::{Event, EventType, history, outbox, retention};
    use wearhouse::store::metadata::deliveries::fail_pending;

    let dir = tempfile::tempdir().unwrap();
    let meta = events_support::sqlite_meta(dir.path()).await;
    let (quiet, _) = meta.create_team("quiet").await.unwrap();
    let (hooked, _) = meta.create_team("hooked").await.unwrap();
    let endpoint = events_support::endpoint_at(&meta, hooked.id, "http://127.0.0.1:9/h").await;
    let now = chrono::Utc::now();
    let old = now - retention::KEEP - chrono::Duration::hours(1);
    let recent = now - retention::KEEP + chrono::Duration::hours(1);
    let event = |n: i64| Event {
        event_type: EventType::DailyCreated("steps"),
        user: None,
        data: json!({ "n": n }),
    };
    for (team, at, n) in [
        (quiet.id, old, 0),
        (quiet.id, recent, 1),
        (hooked.id, old, 2),
    ] {
        let mut tx = meta.begin().await.unwrap();
        outbox::enqueue(&mut tx, team, &[event(n)], at)
            .await
            .unwrap();
        tx.commit().await.unwrap();
    }
    // Stored rows, whether or not the listing (which shows 30 days) would show them.
    let listed = |team: uuid::Uuid| {
        let meta = meta.clone();
        async move {
            let mut conn = meta.reader().await.unwrap();
            sqlx::query_scalar::<_, String>("SELECT body FROM events WHERE team_id = $1")
                .bind(team.to_string())
                .fetch_all(&mut *conn)
                .await
                .unwrap()
        }
    };
    assert_eq!(retention::prune(&meta, now).await.unwrap(), 1);
    let quiet_left = listed(quiet.id).await;
    assert_eq!(quiet_left.len(), 1, "the recent event stays");
    assert!(quiet_left[0].contains(r#""n":1"#), "{quiet_left:?}");
    assert_eq!(
        listed(hooked.id).await.len(),
        1,
        "an old event with a pending delivery stays"
    );
    let mut conn = meta.writer().await.unwrap();
    fail_pending(&mut conn, endpoint.id, "gave up")
        .await
        .unwrap();
    drop(conn);
    assert_eq!(retention::prune(&meta, now).await.unwrap(), 1);
    assert!(listed(hooked.id).await.is_empty());
    let (deliveries, _) = history::deliveries(&meta, hooked.id, endpoint.id, None, None, 10)
        .await
        .unwrap();
    assert!(deliveries.is_empty(), "its deliveries went with it");
}

/// A push whose samples a later push changes before the first is announced is still announced
/// as it was pushed: every sample created, with its first value; then the changed ones updated,
/// with the second. The `store.compact` job, which would drop the replaced rows, waits until
/// both are announced.
#[tokio::test(flavor = "multi_thread")]
async fn a_push_changed_before_its_announcement_is_announced_as_it_was_pushed() {
    use std::sync::Arc;
    use wearhouse::data::announce;
    use wearhouse::events::history;
    use wearhouse::jobs::{Clock, JobState, ManualClock, Registry, Runner, compaction::Compaction};
    use wearhouse::store::health::{HealthStore, StoreOptions};
    use wearhouse::store::metadata::NewUser;
    use wearhouse::store::metadata::jobs::{JobFilter, list_jobs};

    let dir = tempfile::tempdir().unwrap();
    let meta = events_support::sqlite_meta(dir.path()).await;
    let options = StoreOptions {
        compact_min_segments: 2,
        ..StoreOptions::default()
    };
    let health =
        HealthStore::open(&dir.path().join("health").display().to_string(), options).unwrap();
    let (team, _) = meta.create_team("acme").await.unwrap();
    let new_user = NewUser {
        client_user_id: "u".to_owned(),
        ..NewUser::default()
    };
    let user = meta.create_user(team.id, new_user).await.unwrap();
    let push = |body: Value| {
        let (meta, health, user) = (meta.clone(), health.clone(), user.clone());
        async move {
            let bytes = body.to_string().into_bytes().into();
            wearhouse::data::push_json(&meta, &health, &user, bytes, chrono::Utc::now())
                .await
                .unwrap();
        }
    };
    push(push_body(0, 10, 60.0)).await;
    push(push_body(0, 4, 70.0)).await;

    // The pushes asked for a compaction, and it is due (two segments): it must wait.
    let clock = Arc::new(ManualClock::new(
        chrono::Utc::now() + chrono::Duration::seconds(31),
    ));
    let registry = Registry::new().register(Compaction::new(health.clone()));
    let config = crate::jobs_support::config("compactor", Duration::from_secs(30));
    let runner = Runner::new(meta.clone(), registry, config)
        .with_clock(clock.clone())
        .spawn();
    let filter = JobFilter {
        team: None,
        state: None,
        kind: Some("store.compact".into()),
    };
    let started = std::time::Instant::now();
    let job = loop {
        let mut conn = meta.writer().await.unwrap();
        let (jobs, _) = list_jobs(&mut conn, &filter, 0, 10).await.unwrap();
        drop(conn);
        let job = jobs
            .into_iter()
            .next()
            .expect("the pushes asked for a compaction");
        // Run, found the pushes unannounced, and put off to later than the clock shows.
        if job.state == JobState::Pending && job.run_at > clock.now() {
            break job;
        }
        assert!(
            started.elapsed() < WAIT,
            "the compaction was not put off: {job:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(health.metrics().compactions, 0, "nothing merged yet");

    let out = announce::announce(&meta, &health, user.id, chrono::Utc::now())
        .await
        .unwrap();
    assert_eq!(out.pushes, 2);
    let listed = history::events(&meta, &health, team.id, None, None, None, None, 100)
        .await
        .unwrap()
        .0;
    let summary: Vec<(&str, Vec<f64>)> = listed
        .iter()
        .map(|e| {
            let body: Value = serde_json::from_str(&e.body).unwrap();
            let values = body["data"]["data"]
                .as_array()
                .map(|samples| {
                    samples
                        .iter()
                        .map(|s| s["value"].as_f64().unwrap())
                        .collect()
                })
                .unwrap_or_default();
            (e.event_type.as_str(), values)
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("provider.connection.created", vec![]),
            ("daily.data.heartrate.created", vec![60.0; 10]),
            ("daily.data.heartrate.updated", vec![70.0; 4]),
        ]
    );

    // Announced, the dataset is merged on the job's next run, keeping the newest versions.
    clock.advance(chrono::Duration::seconds(10));
    let done = crate::jobs_support::wait_for(&meta, job.id, JobState::Succeeded, WAIT).await;
    runner.shutdown().await;
    assert_eq!(done.kind, "store.compact");
    assert_eq!(health.metrics().compactions, 1);
    let dataset =
        wearhouse::schema::Dataset::Timeseries(wearhouse::schema::resource("heartrate").unwrap());
    let rows = health.read(team.id, user.id, dataset, None).await.unwrap();
    let values: Vec<f64> = rows
        .iter()
        .flat_map(|b| {
            let column = b.column_by_name("value").unwrap();
            let column = column
                .as_any()
                .downcast_ref::<datafusion::arrow::array::Float64Array>()
                .unwrap();
            column.values().to_vec()
        })
        .collect();
    assert_eq!(values, [[70.0; 4].as_slice(), &[60.0; 6]].concat());
}
