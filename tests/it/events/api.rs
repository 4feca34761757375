//! The event API's rules: tenancy, endpoint URLs, the conventions' 4xx, and the whole flow on
//! PostgreSQL.

use crate::support::postgres::ScratchDb;

use super::support::{Receiver, Server, WAIT, assert_verified, push_body};
use serde_json::json;

use super::ALLOW;
use super::support;

#[tokio::test(flavor = "multi_thread")]
async fn a_team_never_sees_another_teams_endpoints_deliveries_or_events() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), ALLOW, None);
    let other = support::create_team(dir.path(), "globex");
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
