//! Orders: every legal transition of each method's table and a sample of illegal ones,
//! cancellation from each cancellable and non-cancellable state, idempotency (replay, mismatch,
//! concurrent duplicate), scheduled activation, results, the requisition PDF read back by
//! pypdf, and the events of each change.

use std::path::Path;

use serde_json::{Value, json};
use wearhouse::lab::model::enums::{Low, Method};
use wearhouse::lab::states;

use super::{low, order, order_body, sandbox_test, user, walk};
use crate::support::TestApp;

/// Creates an order of `method` and walks it to `state`.
async fn order_in(app: &TestApp, u: &str, method: Method, state: Low) -> String {
    let o = order(app, u, method.as_str()).await;
    let id = o["id"].as_str().unwrap().to_owned();
    if state != Low::Ordered {
        let a = walk(app, &id, state.as_str()).await;
        assert_eq!(a.status, 200, "{method} to {state}: {}", a.json);
        assert_eq!(low(&a.json), state.as_str());
    }
    id
}

#[tokio::test]
async fn every_legal_transition_of_every_method() {
    let app = TestApp::new().await;
    let u = user(&app, "walker").await;
    let mut checked = 0;
    for method in Method::ALL {
        for (from, tos) in states::table(*method) {
            for to in *tos {
                let id = order_in(&app, &u, *method, *from).await;
                let before = app.get(&format!("/v3/order/{id}")).await.json;
                let a = walk(&app, &id, to.as_str()).await;
                assert_eq!(a.status, 200, "{method}: {from} → {to}: {}", a.json);
                let events = a.json["events"].as_array().unwrap();
                assert_eq!(
                    events.len(),
                    before["events"].as_array().unwrap().len() + 1,
                    "{method}: {from} → {to} is one step"
                );
                let want = format!("{}.{}.{}", states::top(*to), method, to);
                assert_eq!(events.last().unwrap()["status"], want.as_str());
                assert_eq!(a.json["status"], states::top(*to).as_str());
                let at = |v: &Value| {
                    chrono::DateTime::parse_from_rfc3339(v["updated_at"].as_str().unwrap()).unwrap()
                };
                assert!(at(&a.json) > at(&before));
                checked += 1;
            }
        }
    }
    assert!(checked > 60, "{checked}");
}

#[tokio::test]
async fn illegal_transitions_are_refused() {
    let app = TestApp::new().await;
    let u = user(&app, "illegal").await;
    // Not in the method's table at all.
    let walk_in = order_in(&app, &u, Method::WalkIn, Low::Ordered).await;
    let a = walk(&app, &walk_in, "draw_completed").await;
    assert_eq!(a.status, 400, "{}", a.json);
    assert!(a.json["detail"].as_str().unwrap().contains("no legal path"));
    let kit = order_in(&app, &u, Method::Testkit, Low::Ordered).await;
    assert_eq!(walk(&app, &kit, "appointment_scheduled").await.status, 400);
    // Backwards, out of final states, to the state it is in.
    let done = order_in(&app, &u, Method::Testkit, Low::Completed).await;
    assert_eq!(walk(&app, &done, "ordered").await.status, 400);
    assert_eq!(walk(&app, &done, "transit_lab").await.status, 400);
    assert_eq!(walk(&app, &done, "completed").await.status, 400);
    let cancelled = order_in(&app, &u, Method::Phlebotomy, Low::Cancelled).await;
    for to in [
        "ordered",
        "requisition_created",
        "completed",
        "appointment_scheduled",
    ] {
        let a = walk(&app, &cancelled, to).await;
        assert_eq!(a.status, 400, "cancelled → {to}");
    }
    let lost = order_in(&app, &u, Method::Testkit, Low::Lost).await;
    assert_eq!(walk(&app, &lost, "delivered_to_lab").await.status, 400);
    // The order did not move.
    assert_eq!(
        low(&app.get(&format!("/v3/order/{lost}")).await.json),
        "lost"
    );
}

#[tokio::test]
async fn cancellation_from_each_state() {
    let app = TestApp::new().await;
    let u = user(&app, "canceller").await;
    for method in Method::ALL {
        let states_of: Vec<Low> = states::table(*method).map(|(s, _)| *s).collect();
        let mut reachable: Vec<Low> = states_of.clone();
        for (_, tos) in states::table(*method) {
            reachable.extend(tos.iter().copied());
        }
        reachable.sort_by_key(|s| s.as_str());
        reachable.dedup();
        for state in reachable {
            let id = order_in(&app, &u, *method, state).await;
            let a = app
                .send(
                    "POST",
                    &format!("/v3/order/{id}/cancel"),
                    Some(&app.key.clone()),
                    None,
                )
                .await;
            if states::cancellable(*method, state) {
                assert_eq!(a.status, 200, "{method} {state}: {}", a.json);
                assert_eq!(low(&a.json["order"]), "cancelled");
                assert_eq!(a.json["order"]["status"], "cancelled");
                assert_eq!(a.json["status"], "success");
            } else {
                assert_eq!(
                    a.status, 400,
                    "{method} {state} must not cancel: {}",
                    a.json
                );
                let detail = a.json["detail"].as_str().unwrap();
                assert!(detail.contains(state.as_str()), "{detail}");
                assert_eq!(
                    low(&app.get(&format!("/v3/order/{id}")).await.json),
                    state.as_str()
                );
            }
        }
    }
}

#[tokio::test]
async fn idempotency_replay_mismatch_and_concurrent_duplicate() {
    let app = TestApp::new().await;
    let key = app.key.clone();
    let u = user(&app, "idem").await;
    let test = sandbox_test(&app, &key, "walk_in_test").await;
    let body = order_body(&u, &test);
    let post = |k: &'static str, b: Value, extra: Option<(&'static str, &'static str)>| {
        let mut r = axum::http::Request::builder()
            .method("POST")
            .uri("/v3/order")
            .header("x-service-api-key", &key)
            .header("content-type", "application/json")
            .header("x-idempotency-key", k);
        if let Some((h, v)) = extra {
            r = r.header(h, v);
        }
        r.body(axum::body::Body::from(b.to_string())).unwrap()
    };
    // Replay: the same answer, one order.
    let first = app.raw(post("k1", body.clone(), None)).await;
    assert_eq!(first.status, 200, "{}", first.json);
    let again = app.raw(post("k1", body.clone(), None)).await;
    assert_eq!(again.status, 200);
    assert_eq!(again.bytes, first.bytes);
    assert_eq!(app.get("/v3/orders").await.json["total"], 1);
    // The same key with another body.
    let mut other = body.clone();
    other["priority"] = json!(true);
    let a = app.raw(post("k1", other, None)).await;
    assert_eq!(a.status, 422, "{}", a.json);
    assert_eq!(
        a.json["detail"][0]["loc"],
        json!(["header", "x-idempotency-key"])
    );
    // Failures are kept too and replayed...
    let mut bad = body.clone();
    bad["patient_address"]["zip"] = json!("00000");
    let f1 = app.raw(post("k2", bad.clone(), None)).await;
    assert_eq!(f1.status, 422);
    let f2 = app.raw(post("k2", bad.clone(), None)).await;
    assert_eq!((f2.status, f2.bytes.clone()), (f1.status, f1.bytes.clone()));
    // ...except with X-Idempotency-Error: no-cache, which keeps successes only.
    let n1 = app
        .raw(post(
            "k3",
            bad.clone(),
            Some(("x-idempotency-error", "no-cache")),
        ))
        .await;
    assert_eq!(n1.status, 422);
    let fixed = app
        .raw(post(
            "k3",
            body.clone(),
            Some(("x-idempotency-error", "no-cache")),
        ))
        .await;
    assert_eq!(
        fixed.status, 200,
        "a failure under no-cache leaves the key free: {}",
        fixed.json
    );
    // A duplicate while the first request still runs: 409. (The first holds the key: claimed,
    // no answer yet.)
    let team = app.state.meta.team_for_key(&key).await.unwrap().unwrap().id;
    let claim = wearhouse::lab::orders::idempotency::claim(
        &app.state.meta,
        team,
        "k4",
        body.to_string().as_bytes(),
    )
    .await
    .unwrap();
    assert_eq!(claim, wearhouse::lab::orders::idempotency::Claim::Owner);
    let dup = app.raw(post("k4", body.clone(), None)).await;
    assert_eq!(dup.status, 409, "{}", dup.json);
    // Keys are per team.
    let theirs = app.foreign_user().await;
    let their_test = sandbox_test(&app, &app.other_key.clone(), "walk_in_test").await;
    let r = axum::http::Request::builder()
        .method("POST")
        .uri("/v3/order")
        .header("x-service-api-key", &app.other_key)
        .header("content-type", "application/json")
        .header("x-idempotency-key", "k1")
        .body(axum::body::Body::from(
            order_body(&theirs, &their_test).to_string(),
        ))
        .unwrap();
    assert_eq!(app.raw(r).await.status, 200);
}

#[tokio::test]
async fn scheduled_orders_and_activation() {
    let app = TestApp::new().await;
    let key = app.key.clone();
    let u = user(&app, "sched").await;
    let test = sandbox_test(&app, &key, "testkit").await;
    let mut body = order_body(&u, &test);
    body["activate_by"] = json!("2099-06-01");
    let o = app.post("/v3/order", body).await.json["order"].clone();
    assert_eq!(o["activation_type"], "scheduled");
    let id = o["id"].as_str().unwrap();
    let p = app
        .patch(
            &format!("/v3/order/{id}"),
            json!({"activate_by": "2099-07-01"}),
        )
        .await;
    assert_eq!(p.json["status"], "success", "{}", p.json);
    assert_eq!(p.json["message"], "Order updated");
    assert_eq!(p.json["order"]["activate_by"], "2099-07-01");
    assert_eq!(
        app.patch(
            &format!("/v3/order/{id}"),
            json!({"activate_by": "2001-01-01"})
        )
        .await
        .status,
        422
    );
    let today = chrono::Utc::now().date_naive().to_string();
    let p = app
        .patch(&format!("/v3/order/{id}"), json!({"activate_by": today}))
        .await;
    assert_eq!(p.json["order"]["activation_type"], "current", "{}", p.json);
    let again = app
        .patch(
            &format!("/v3/order/{id}"),
            json!({"activate_by": "2099-01-01"}),
        )
        .await;
    assert_eq!(
        again.status, 400,
        "a current order has no activation date to move"
    );
}

#[tokio::test]
async fn results_arrive_with_partial_and_final_status() {
    let app = TestApp::new().await;
    let u = user(&app, "results").await;
    let id = order_in(&app, &u, Method::WalkIn, Low::AppointmentScheduled).await;
    let none = app.get(&format!("/v3/order/{id}/result")).await.json;
    assert_eq!(none["results"], json!([]));
    assert_eq!(none["metadata"], Value::Null);
    let partial = walk(&app, &id, "partial_results").await;
    assert_eq!(partial.status, 200);
    let p = app.get(&format!("/v3/order/{id}/result")).await.json;
    assert_eq!(p["metadata"]["status"], "partial");
    // The reference SDK's form of the status: `<top>.<method>.<low>`.
    let done = walk(&app, &id, "completed.walk_in_test.completed").await;
    assert_eq!(done.status, 200, "{}", done.json);
    let done = done.json;
    let r = app.get(&format!("/v3/order/{id}/result")).await.json;
    assert_eq!(r["metadata"]["status"], "final");
    let results = r["results"].as_array().unwrap();
    // CMP (18) and CBC with differential (20) share no biomarker.
    assert_eq!(results.len(), 38, "{r}");
    assert_eq!(p["results"].as_array().unwrap().len(), 19);
    assert_eq!(r["metadata"]["specimen_number"], done["sample_id"]);
    for x in results {
        assert!(["numeric", "comment"].contains(&x["type"].as_str().unwrap()));
        assert!(x["loinc"].as_str().unwrap().contains('-'));
        let v: f64 = x["result"].as_str().unwrap().parse().unwrap();
        let (lo, hi) = (
            x["min_range_value"].as_f64().unwrap(),
            x["max_range_value"].as_f64().unwrap(),
        );
        let inside = v >= lo && v <= hi;
        assert_eq!(x["interpretation"] == "normal", inside, "{x}");
        assert_eq!(x["is_above_max_range"], v > hi);
    }
    assert_eq!(done["interpretation"], r["metadata"]["interpretation"]);
    // The list filters on it.
    let filtered = app
        .get(&format!(
            "/v3/orders?interpretation={}",
            done["interpretation"].as_str().unwrap()
        ))
        .await
        .json;
    assert_eq!(filtered["total"], 1);
}

#[tokio::test]
async fn requisition_pdf_opens_in_pypdf_with_the_patients_name() {
    let app = TestApp::new().await;
    let key = app.key.clone();
    let u = user(&app, "pdf").await;
    let test = sandbox_test(&app, &key, "at_home_phlebotomy").await;
    let mut body = order_body(&u, &test);
    body["patient_details"]["first_name"] = json!("Zoë");
    body["patient_details"]["last_name"] = json!("O'Brien-Smith");
    body["physician"] = json!({"first_name": "Gregory", "last_name": "House", "npi": "1234567893"});
    let o = app.post("/v3/order", body).await.json["order"].clone();
    let id = o["id"].as_str().unwrap();
    let pdf = app.get(&format!("/v3/order/{id}/requisition/pdf")).await;
    assert_eq!(pdf.status, 200);
    assert_eq!(pdf.headers["content-type"], "application/pdf");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("r.pdf");
    std::fs::write(&file, &pdf.bytes).unwrap();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/python/pdf_text.py");
    let out = crate::support::provision::python_script(Path::new(script))
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("pages: 1"), "{text}");
    assert!(text.contains("Zoë O'Brien-Smith"), "{text}");
    assert!(text.contains(o["sample_id"].as_str().unwrap()), "{text}");
    assert!(text.contains("Gregory House"), "{text}");
    assert!(text.contains("LOINC 24331-1"), "{text}");
    assert!(text.contains("Labcorp"), "{text}");
}

#[tokio::test]
async fn every_change_emits_an_order_event() {
    let app = TestApp::new().await;
    let u = user(&app, "events").await;
    let id = order_in(&app, &u, Method::Testkit, Low::Ordered).await;
    walk(&app, &id, "out_for_delivery").await;
    let events = app.get(&format!("/v2/team/events?user_id={u}")).await.json;
    let types: Vec<&str> = events["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["event_type"].as_str().unwrap())
        .collect();
    // created, then one update per step: requisition_created, transit_customer, out_for_delivery.
    assert_eq!(
        types,
        [
            "labtest.order.created",
            "labtest.order.updated",
            "labtest.order.updated",
            "labtest.order.updated"
        ],
        "{events}"
    );
    // Each carries the order as it stood after its step.
    let list = events["events"].as_array().unwrap();
    let steps: Vec<String> = list.iter().map(|e| low(&e["data"])).collect();
    let want = [
        "ordered",
        "requisition_created",
        "transit_customer",
        "out_for_delivery",
    ];
    assert_eq!(steps, want);
    let lows: Vec<&str> = list
        .iter()
        .map(|e| e["data"]["low_level_status"].as_str().unwrap())
        .collect();
    assert_eq!(lows, want);
    assert_eq!(
        list[1]["data"]["order_transaction"]["orders"][0]["low_level_status"],
        "requisition_created"
    );
}

/// A scheduled order becomes current on its date: the activation job, run by a runner whose
/// clock shows the day after tomorrow, activates tomorrow's order and leaves a far one alone.
#[tokio::test(flavor = "multi_thread")]
async fn scheduled_orders_activate_on_their_date() {
    use std::sync::Arc;
    use wearhouse::jobs::{ManualClock, Runner, RunnerConfig};
    let app = TestApp::new().await;
    let key = app.key.clone();
    let u = user(&app, "activate").await;
    let test = sandbox_test(&app, &key, "walk_in_test").await;
    let tomorrow = chrono::Utc::now().date_naive().succ_opt().unwrap();
    let mut soon = order_body(&u, &test);
    soon["activate_by"] = json!(tomorrow.to_string());
    let soon = app.post("/v3/order", soon).await.json["order"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut far = order_body(&u, &test);
    far["activate_by"] = json!("2099-01-01");
    let far = app.post("/v3/order", far).await.json["order"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let jobs = app.get("/v2/team/jobs?kind=lab.order.activate").await.json;
    assert_eq!(jobs["jobs"].as_array().map(Vec::len), Some(2), "{jobs}");
    let clock = Arc::new(ManualClock::new(
        chrono::Utc::now() + chrono::Duration::days(2),
    ));
    let runner = Runner::new(
        app.state.meta.clone(),
        wearhouse::app::job_registry(&app.state),
        RunnerConfig::default(),
    )
    .with_clock(clock)
    .spawn();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    loop {
        let o = app.get(&format!("/v3/order/{soon}")).await.json;
        if o["activation_type"] == "current" {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "not activated: {o}");
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    runner.shutdown().await;
    assert_eq!(
        app.get(&format!("/v3/order/{far}")).await.json["activation_type"],
        "scheduled"
    );
    let events = app
        .get(&format!(
            "/v2/team/events?user_id={u}&event_type=labtest.order.updated"
        ))
        .await
        .json;
    assert_eq!(
        events["events"].as_array().unwrap().len(),
        1,
        "one update: the activation"
    );
}
