//! Garmin's pings at `/v2/provider/garmin/notify`: the first pull records the user's Garmin id
//! (`GET /wellness-api/rest/user/id`); a ping naming it, from the deployment's client id, with
//! its callback URL on Garmin's API host, queues the connection's incremental pull now. Garmin
//! signs nothing, so everything else it could be is refused: 401 and nothing queued for a
//! missing or foreign client id, a callback URL on another host (never followed), or no
//! connected user; 422 for a body that is no notification.

use axum::body::Body;
use axum::http::Request;
use chrono::Utc;
use serde_json::{Value, json};

use super::end_to_end::{fake_garmin, pulled};
use super::fake_garmin::{GARMIN_USER, fixture};
use crate::link::fake_oauth::CLIENT_ID;
use crate::support::{Answer, TestApp};
use crate::sync::support::incremental_jobs;

async fn notify(app: &TestApp, body: &Value, client: Option<&str>) -> Answer {
    let mut req = Request::builder()
        .method("POST")
        .uri("/v2/provider/garmin/notify")
        .header("content-type", "application/json;charset=UTF-8")
        .header("user-agent", "Garmin Health API");
    if let Some(id) = client {
        req = req.header("garmin-client-id", id);
    }
    let body = Body::from(serde_json::to_vec(body).unwrap());
    app.raw(req.body(body).unwrap()).await
}

fn ping(user: &str, callback: &str) -> Value {
    json!({"sleeps": [{"userId": user, "callbackURL": callback}]})
}

#[tokio::test(flavor = "multi_thread")]
async fn a_ping_for_a_connected_user_queues_its_pull_and_a_forged_one_is_refused() {
    let garmin = fake_garmin().await;
    let l = pulled(&garmin).await;
    let (app, user) = (&l.app, &l.user);
    let good = fixture("ping_dailies.json");
    assert_eq!(good["dailies"][0]["userId"], GARMIN_USER);
    let on_garmin = good["dailies"][0]["callbackURL"]
        .as_str()
        .unwrap()
        .to_owned();
    let before = incremental_jobs(app).await;

    // Forged: no client id, another client's, a callback on another host (the fake's own, a
    // metadata address, a look-alike host), a user nobody connected.
    let cases = [
        (good.clone(), None),
        (good.clone(), Some("another-client")),
        (
            ping(
                GARMIN_USER,
                &format!("{}/wellness-api/rest/sleeps?token=t", garmin.base),
            ),
            Some(CLIENT_ID),
        ),
        (
            ping(GARMIN_USER, "http://169.254.169.254/latest/meta-data/"),
            Some(CLIENT_ID),
        ),
        (
            ping(
                GARMIN_USER,
                "https://apis.garmin.com.example.net/wellness-api/rest/sleeps",
            ),
            Some(CLIENT_ID),
        ),
        (ping("0000nobody0000", &on_garmin), Some(CLIENT_ID)),
        (
            json!({"deregistrations": [{"userId": "0000nobody0000"}]}),
            Some(CLIENT_ID),
        ),
    ];
    for (body, client) in &cases {
        let a = notify(app, body, *client).await;
        assert_eq!(a.status, 401, "{body} {client:?}: {}", a.json);
    }
    assert_eq!(incremental_jobs(app).await, before, "nothing queued");
    let fetched = garmin.log().len();

    // Not a notification: 422.
    for bad in [
        json!([]),
        json!({}),
        json!({"dailies": [{"callbackURL": on_garmin}]}),
    ] {
        let a = notify(app, &bad, Some(CLIENT_ID)).await;
        assert_eq!(a.status, 422, "{bad}: {}", a.json);
    }

    // The real one: the connection's incremental pull is due now.
    let sent = Utc::now();
    let a = notify(app, &good, Some(CLIENT_ID)).await;
    assert_eq!(
        (a.status.as_u16(), a.json.clone()),
        (200, json!({"queued": 1}))
    );
    let jobs = incremental_jobs(app).await;
    assert_eq!(jobs.len(), 1, "{jobs:?}");
    assert_eq!(jobs[0].0, json!(user));
    assert!(
        jobs[0].1 <= sent + chrono::Duration::seconds(1),
        "due {}, sent {sent}",
        jobs[0].1
    );
    // A push (the summaries inline) queues the same pull; its data is not taken from the body.
    let push = json!({"epochs": [{"userId": GARMIN_USER, "summaryId": "x1", "steps": 93}]});
    let a = notify(app, &push, Some(CLIENT_ID)).await;
    assert_eq!(a.status, 200, "{}", a.json);
    assert_eq!(
        incremental_jobs(app).await.len(),
        1,
        "one job per connection"
    );
    // No notification made the service call out: the fake saw no request.
    assert_eq!(garmin.log().len(), fetched);

    // Garmin has no subscription handshake.
    let a = app
        .send("GET", "/v2/provider/garmin/notify?challenge=c", None, None)
        .await;
    assert_eq!(a.status, 422, "{}", a.json);
}
