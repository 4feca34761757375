//! Appointments: availability and booking keys (single-use, bound, expiring), the four booking
//! paths of the interface (sync confirmed; sync failed → 500; async pending → confirmed; async
//! pending → cancelled at its timeout, across a server restart), reschedule and cancel.
//!
//! The sandbox provider's answer is chosen by the slot (see `src/lab/sandbox.rs`): keys starting
//! `sbx_confirm_` confirm after 200 ms, `sbx_delay_` after 3 s, `sbx_fail_` refuse after 200 ms,
//! `sbx_never_` never answer.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::{low, order, user};
use crate::support::TestApp;

/// The booking keys of an availability answer that start with `prefix`, soonest first.
pub fn keys(availability: &Value, prefix: &str) -> Vec<String> {
    availability["slots"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|d| d["slots"].as_array().unwrap().iter())
        .map(|s| s["booking_key"].as_str().unwrap().to_owned())
        .filter(|k| k.starts_with(prefix))
        .collect()
}

fn phoenix() -> Value {
    json!({"first_line": "100 N 1st Ave", "city": "Phoenix", "state": "AZ", "zip_code": "85004"})
}

async fn slots(app: &TestApp) -> Value {
    let a = app
        .post("/v3/order/phlebotomy/appointment/availability", phoenix())
        .await;
    assert_eq!(a.status, 200, "{}", a.json);
    a.json
}

async fn phlebotomy_order(app: &TestApp, name: &str) -> String {
    let u = user(app, name).await;
    order(app, &u, "at_home_phlebotomy").await["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

fn book_path(order: &str) -> String {
    format!("/v3/order/{order}/phlebotomy/appointment/book")
}

#[tokio::test]
async fn availability_offers_three_days_of_keyed_slots() {
    let app = TestApp::new().await;
    let a = slots(&app).await;
    assert_eq!(a["timezone"], "America/Phoenix");
    let days = a["slots"].as_array().unwrap();
    assert_eq!(days.len(), 3);
    for day in days {
        let s = day["slots"].as_array().unwrap();
        assert_eq!(s.len(), 4);
        for slot in s {
            let start =
                chrono::DateTime::parse_from_rfc3339(slot["start"].as_str().unwrap()).unwrap();
            let expires =
                chrono::DateTime::parse_from_rfc3339(slot["expires_at"].as_str().unwrap()).unwrap();
            assert_eq!(
                start - expires,
                chrono::Duration::hours(1),
                "keys expire an hour before the slot"
            );
            assert_eq!(slot["num_appointments_available"], 1);
        }
        // 08:00 local in Phoenix (UTC-7, no DST) is 15:00 UTC.
        assert!(
            s[0]["start"].as_str().unwrap().contains("T15:00:00"),
            "{}",
            s[0]
        );
    }
    assert_eq!(keys(&a, "sbx_").len(), 12);
    assert_eq!(keys(&a, "sbx_confirm_").len(), 3);
}

#[tokio::test]
async fn sync_booking_confirmed() {
    let app = TestApp::new().await;
    let order = phlebotomy_order(&app, "sync-ok").await;
    let key = keys(&slots(&app).await, "sbx_confirm_").remove(0);
    let a = app
        .post(
            &book_path(&order),
            json!({"booking_key": key, "appointment_notes": "Ring twice"}),
        )
        .await;
    assert_eq!(a.status, 200, "{}", a.json);
    assert_eq!(a.json["status"], "confirmed");
    assert_eq!(a.json["event_status"], "scheduled");
    assert_eq!(a.json["type"], "phlebotomy");
    assert_eq!(a.json["appointment_notes"], "Ring twice");
    assert_eq!(a.json["iana_timezone"], "America/Phoenix");
    assert_eq!(a.json["can_reschedule"], true);
    let o = app.get(&format!("/v3/order/{order}")).await.json;
    assert_eq!(low(&o), "appointment_scheduled");
    assert_eq!(o["details"]["data"]["appointment_id"], a.json["id"]);
    // The key is single-use; a second booking while one is active is refused.
    let again = app
        .post(&book_path(&order), json!({"booking_key": key}))
        .await;
    assert_eq!(again.status, 400, "{}", again.json);
    let user = o["user_id"].as_str().unwrap();
    let events = app
        .get(&format!(
            "/v2/team/events?user_id={user}&event_type=labtest.appointment.created"
        ))
        .await
        .json;
    assert_eq!(events["events"].as_array().unwrap().len(), 1);
    assert_eq!(events["events"][0]["data"]["id"], a.json["id"]);
}

#[tokio::test]
async fn sync_booking_failed_answers_500_with_a_detail_and_books_nothing() {
    let app = TestApp::new().await;
    let order = phlebotomy_order(&app, "sync-fail").await;
    let key = keys(&slots(&app).await, "sbx_fail_").remove(0);
    let a = app
        .post(&book_path(&order), json!({"booking_key": key}))
        .await;
    assert_eq!(a.status, 500, "{}", a.json);
    let detail = a.json["detail"].as_str().unwrap();
    assert!(
        detail.contains("refused") && detail.contains("sandbox_phlebotomy"),
        "{detail}"
    );
    assert_eq!(
        app.get(&format!("/v3/order/{order}/phlebotomy/appointment"))
            .await
            .status,
        404
    );
    assert_eq!(
        low(&app.get(&format!("/v3/order/{order}")).await.json),
        "ordered"
    );
    let reused = app
        .post(&book_path(&order), json!({"booking_key": key}))
        .await;
    assert_eq!(reused.status, 400);
    assert!(
        reused.json["detail"]
            .as_str()
            .unwrap()
            .contains("already used")
    );
}

#[tokio::test]
async fn async_booking_inside_the_window_is_final() {
    let app = TestApp::new().await;
    let order = phlebotomy_order(&app, "async-fast").await;
    let av = slots(&app).await;
    let a = app
        .post(
            &book_path(&order),
            json!({"booking_key": keys(&av, "sbx_confirm_")[0], "async_confirmation": true}),
        )
        .await;
    assert_eq!(a.json["status"], "confirmed", "{}", a.json);
    let other = phlebotomy_order(&app, "async-refused").await;
    let a = app
        .post(
            &book_path(&other),
            json!({"booking_key": keys(&av, "sbx_fail_")[0], "async_confirmation": true}),
        )
        .await;
    assert_eq!(a.status, 200, "{}", a.json);
    assert_eq!(a.json["status"], "cancelled");
    assert_eq!(
        low(&app.get(&format!("/v3/order/{other}")).await.json),
        "appointment_cancelled"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn async_booking_pending_then_confirmed_by_the_job() {
    let app = TestApp::new().await;
    let runner = wearhouse::app::spawn_jobs(
        &app.state,
        std::time::Duration::from_secs(60),
        std::time::Duration::from_secs(10),
    )
    .await
    .unwrap();
    let order = phlebotomy_order(&app, "async-confirm").await;
    let key = keys(&slots(&app).await, "sbx_delay_").remove(0);
    let started = Instant::now();
    let a = app
        .post(&book_path(&order), json!({"booking_key": key, "async_confirmation": true, "sync_confirmation_timeout_millisecond": 1000}))
        .await;
    let waited = started.elapsed();
    assert_eq!(a.status, 200, "{}", a.json);
    assert_eq!(a.json["status"], "pending");
    assert_eq!(a.json["event_status"], "pending");
    assert!(
        waited >= Duration::from_millis(1000) && waited < Duration::from_millis(2500),
        "{waited:?}"
    );
    assert_eq!(
        low(&app.get(&format!("/v3/order/{order}")).await.json),
        "appointment_pending"
    );
    let path = format!("/v3/order/{order}/phlebotomy/appointment");
    let deadline = Instant::now() + Duration::from_secs(15);
    let confirmed = loop {
        let got = app.get(&path).await.json;
        if got["status"] != "pending" {
            break got;
        }
        assert!(Instant::now() < deadline, "still pending: {got}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(confirmed["status"], "confirmed");
    assert_eq!(confirmed["event_status"], "scheduled");
    assert!(
        started.elapsed() >= Duration::from_secs(3),
        "confirmed when the provider answered"
    );
    assert_eq!(
        low(&app.get(&format!("/v3/order/{order}")).await.json),
        "appointment_scheduled"
    );
    let user = confirmed["user_id"].as_str().unwrap();
    let updated = app
        .get(&format!(
            "/v2/team/events?user_id={user}&event_type=labtest.appointment.updated"
        ))
        .await
        .json;
    assert_eq!(updated["events"].as_array().unwrap().len(), 1, "{updated}");
    assert_eq!(updated["events"][0]["data"]["status"], "confirmed");
    runner.shutdown().await;
}

#[tokio::test]
async fn booking_keys_are_single_use_bound_and_expiring() {
    let app = TestApp::new().await;
    let order = phlebotomy_order(&app, "keys").await;
    let av = slots(&app).await;
    let bad = |detail: &str, a: &crate::support::Answer| {
        assert_eq!(a.status, 400, "{}", a.json);
        assert!(
            a.json["detail"].as_str().unwrap().contains(detail),
            "{}",
            a.json
        );
    };
    bad(
        "unknown booking key",
        &app.post(
            &book_path(&order),
            json!({"booking_key": "sbx_confirm_made_up"}),
        )
        .await,
    );
    // Another team's key is unknown to this team.
    let theirs = app
        .send(
            "POST",
            "/v3/order/phlebotomy/appointment/availability",
            Some(&app.other_key.clone()),
            Some(phoenix()),
        )
        .await
        .json;
    bad(
        "unknown booking key",
        &app.post(
            &book_path(&order),
            json!({"booking_key": keys(&theirs, "sbx_confirm_")[0]}),
        )
        .await,
    );
    // A PSC key does not book phlebotomy.
    let psc = app
        .send(
            "POST",
            "/v3/order/psc/appointment/availability?lab=quest&zip_code=85004&radius=50",
            Some(&app.key.clone()),
            None,
        )
        .await
        .json;
    bad(
        "patient_service_center",
        &app.post(
            &book_path(&order),
            json!({"booking_key": keys(&psc, "sbx_confirm_")[0]}),
        )
        .await,
    );
    // Expired: an hour before its slot.
    let key = keys(&av, "sbx_confirm_")[0].clone();
    sqlx::query("UPDATE lab_booking_keys SET expires_at = '2001-01-01T00:00:00.000000Z' WHERE booking_key = $1")
        .bind(&key)
        .execute(&mut *app.state.meta.writer().await.unwrap())
        .await
        .unwrap();
    bad(
        "expired",
        &app.post(&book_path(&order), json!({"booking_key": key}))
            .await,
    );
    // A walk-in order takes PSC appointments only.
    let u = user(&app, "walker").await;
    let walk_in = super::order(&app, &u, "walk_in_test").await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    bad(
        "needs a at_home_phlebotomy order",
        &app.post(
            &book_path(&walk_in),
            json!({"booking_key": keys(&av, "sbx_confirm_")[1]}),
        )
        .await,
    );
    // A cancelled order takes none.
    app.send(
        "POST",
        &format!("/v3/order/{order}/cancel"),
        Some(&app.key.clone()),
        None,
    )
    .await;
    bad(
        "cannot get an appointment",
        &app.post(
            &book_path(&order),
            json!({"booking_key": keys(&av, "sbx_confirm_")[2]}),
        )
        .await,
    );
}

#[tokio::test]
async fn reschedule_and_cancel() {
    let app = TestApp::new().await;
    let order = phlebotomy_order(&app, "resched").await;
    let av = slots(&app).await;
    let k = keys(&av, "sbx_confirm_");
    let path = format!("/v3/order/{order}/phlebotomy/appointment");
    assert_eq!(
        app.patch(&format!("{path}/reschedule"), json!({"booking_key": k[1]}))
            .await
            .status,
        404,
        "nothing to reschedule"
    );
    let booked = app
        .post(&book_path(&order), json!({"booking_key": k[0]}))
        .await
        .json;
    let moved = app
        .patch(&format!("{path}/reschedule"), json!({"booking_key": k[1]}))
        .await;
    assert_eq!(moved.status, 200, "{}", moved.json);
    assert_eq!(moved.json["id"], booked["id"]);
    assert_ne!(moved.json["start_at"], booked["start_at"]);
    assert!(
        moved.json["events"].as_array().unwrap().last().unwrap()["data"]["rescheduled_from"]
            .as_str()
            .is_some()
    );
    assert_eq!(
        app.patch(&format!("{path}/reschedule"), json!({"booking_key": k[1]}))
            .await
            .status,
        400,
        "used key"
    );
    let cancelled = app
        .patch(
            &format!("{path}/cancel"),
            json!({"cancellation_reason_id": "patient_unavailable", "notes": "travelling"}),
        )
        .await;
    assert_eq!(cancelled.json["status"], "cancelled", "{}", cancelled.json);
    assert_eq!(cancelled.json["can_reschedule"], false);
    let last = cancelled.json["events"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(
        last["data"]["cancellation_reason_id"],
        "patient_unavailable"
    );
    assert_eq!(last["data"]["notes"], "travelling");
    assert_eq!(
        low(&app.get(&format!("/v3/order/{order}")).await.json),
        "appointment_cancelled"
    );
    let twice = app
        .patch(
            &format!("{path}/cancel"),
            json!({"cancellation_reason_id": "duplicate"}),
        )
        .await;
    assert_eq!(twice.status, 400);
    assert_eq!(
        app.patch(&format!("{path}/reschedule"), json!({"booking_key": k[2]}))
            .await
            .status,
        400
    );
    // After a cancellation the order books again.
    let again = app
        .post(&book_path(&order), json!({"booking_key": k[2]}))
        .await;
    assert_eq!(again.json["status"], "confirmed", "{}", again.json);
    assert_ne!(again.json["id"], booked["id"]);
    assert_eq!(app.get(&path).await.json["id"], again.json["id"]);
}

/// Async pending → cancelled at its timeout, across a restart: the wait is a job row, so a
/// server stopped while the appointment is pending and started again cancels it on time.
#[tokio::test(flavor = "multi_thread")]
async fn async_booking_pending_then_cancelled_at_timeout_across_a_restart() {
    use crate::support::server::{Server, create_team, http_client};
    let dir = tempfile::tempdir().unwrap();
    let key = create_team(dir.path(), "restart", &[]);
    let http = http_client(30);
    let server = Server::start(dir.path(), &[]);
    let call = |server: &Server, method: reqwest::Method, path: &str, body: Option<Value>| {
        let mut r = http
            .request(method, server.url(path))
            .header("x-service-api-key", &key);
        if let Some(b) = body {
            r = r.json(&b);
        }
        r.send()
    };
    let u: Value = call(
        &server,
        reqwest::Method::POST,
        "/v2/user",
        Some(json!({"client_user_id": "r"})),
    )
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    let u = u["user_id"].as_str().unwrap().to_owned();
    let tests: Value = call(&server, reqwest::Method::GET, "/v3/lab_tests", None)
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let test = tests
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["method"] == "at_home_phlebotomy")
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let o: Value = call(
        &server,
        reqwest::Method::POST,
        "/v3/order",
        Some(super::order_body(&u, &test)),
    )
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    let order = o["order"]["id"].as_str().unwrap().to_owned();
    let av: Value = call(
        &server,
        reqwest::Method::POST,
        "/v3/order/phlebotomy/appointment/availability",
        Some(phoenix()),
    )
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    let booked_at = Instant::now();
    let a = call(
        &server,
        reqwest::Method::POST,
        &book_path(&order),
        Some(json!({"booking_key": keys(&av, "sbx_never_")[0], "async_confirmation": true,
                    "sync_confirmation_timeout_millisecond": 1000, "async_confirmation_timeout_millisecond": 60000})),
    )
    .await
    .unwrap();
    assert_eq!(a.status(), 200);
    let a: Value = a.json().await.unwrap();
    assert_eq!(a["status"], "pending", "{a}");
    server.stop();
    // Down for a while; the wait lives on in the database.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let server = Server::start(dir.path(), &[]);
    let path = format!("/v3/order/{order}/phlebotomy/appointment");
    let got: Value = call(&server, reqwest::Method::GET, &path, None)
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(got["status"], "pending", "before the timeout: {got}");
    let cancelled = loop {
        let got: Value = call(&server, reqwest::Method::GET, &path, None)
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if got["status"] != "pending" {
            break got;
        }
        assert!(
            booked_at.elapsed() < Duration::from_secs(80),
            "not cancelled at its timeout: {got}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    let elapsed = booked_at.elapsed();
    assert!(
        elapsed >= Duration::from_secs(59),
        "cancelled early: {elapsed:?}"
    );
    assert_eq!(cancelled["status"], "cancelled");
    assert_eq!(cancelled["event_status"], "cancelled");
    assert_eq!(
        cancelled["events"].as_array().unwrap().last().unwrap()["data"]["reason"],
        "confirmation_timeout"
    );
    let o: Value = call(
        &server,
        reqwest::Method::GET,
        &format!("/v3/order/{order}"),
        None,
    )
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    assert_eq!(low(&o), "appointment_cancelled");
    server.stop();
}
