//! Seeding and checking for the lab bench (`benches/lab.rs`), shared with the test that runs the
//! same scenario small (`tests/it/lab/bench_scenario.rs`), so the bench's self-checks are
//! themselves tested.
//!
//! Scenario: one team with `n` orders of 40 users, the four collection methods and eight
//! low-level statuses in rotation, patient names from a seeded generator, one second apart. The
//! list request filters on two statuses and one method and sorts by patient name.

#![allow(dead_code, clippy::expect_used, clippy::unwrap_used, missing_docs)]

use axum::Router;
use axum::body::Body;
use axum::http::Request;
use http_body_util::BodyExt;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{Value, json};
use tower::ServiceExt;
use tower_http::normalize_path::NormalizePath;
use uuid::Uuid;
use wearhouse::http::{AppState, HttpConfig, router};
use wearhouse::lab::model::enums::{Low, Method};
use wearhouse::lab::model::order::Order;
use wearhouse::lab::orders::to_row;
use wearhouse::store::health::HealthStore;
use wearhouse::store::metadata::MetadataStore;

/// The list request measured.
pub const LIST: &str = "/v3/orders?status=ordered&status=requisition_created&order_type=walk_in_test&order_key=patient_name&order_direction=asc&page=3&size=50";

/// The area request measured.
pub const AREA: &str = "/v3/order/area/info?zip_code=10001&radius=100";

const STATUSES: [Low; 8] = [
    Low::Ordered,
    Low::RequisitionCreated,
    Low::TransitCustomer,
    Low::AppointmentScheduled,
    Low::DeliveredToLab,
    Low::PartialResults,
    Low::Completed,
    Low::Cancelled,
];

const FIRST: [&str; 12] = [
    "Ada",
    "Alan",
    "Barbara",
    "Claude",
    "Donald",
    "Edsger",
    "Frances",
    "Grace",
    "Hedy",
    "John",
    "Katherine",
    "Linus",
];
const LAST: [&str; 12] = [
    "Lovelace", "Turing", "Liskov", "Shannon", "Knuth", "Dijkstra", "Allen", "Hopper", "Lamarr",
    "Backus", "Johnson", "Torvalds",
];

/// The router a server builds once at start-up.
pub type App = NormalizePath<Router>;

/// A seeded service.
pub struct Seeded {
    pub state: AppState,
    pub app: App,
    pub key: String,
    /// Orders the list request matches.
    pub matching: i64,
    pub dir: tempfile::TempDir,
}

/// Sends a GET with the key; (status, JSON).
pub async fn get(app: &App, key: &str, uri: &str) -> (u16, Value) {
    let req = Request::builder()
        .uri(uri)
        .header("x-service-api-key", key)
        .body(Body::empty())
        .unwrap();
    let resp = app.clone().oneshot(req).await.unwrap();
    let status = resp.status().as_u16();
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

async fn post(app: &App, key: &str, uri: &str, body: Value) -> Value {
    let req = Request::builder()
        .method("POST")
        .uri(uri)
        .header("x-service-api-key", key)
        .header("content-type", "application/json")
        .body(Body::from(body.to_string()))
        .unwrap();
    let resp = app.clone().oneshot(req).await.unwrap();
    assert_eq!(resp.status(), 200);
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    serde_json::from_slice(&bytes).unwrap()
}

/// A service on `database_url` (a fresh SQLite file when `None`) with `n` orders of one team.
pub async fn seed(database_url: Option<&str>, n: usize) -> Seeded {
    let dir = tempfile::tempdir().unwrap();
    let url = database_url.map_or_else(
        || format!("sqlite://{}?mode=rwc", dir.path().join("meta.db").display()),
        str::to_owned,
    );
    let meta = MetadataStore::connect(&url).await.unwrap();
    let (_, key) = meta.create_team("bench").await.unwrap();
    let health = HealthStore::open(
        &dir.path().join("health").display().to_string(),
        Default::default(),
    )
    .unwrap();
    let state = AppState::new(meta.clone(), health, HttpConfig::default()).unwrap();
    let app = router(state.clone());
    let key = key.secret;
    // One real order through the API: the template every seeded order is derived from.
    let mut users = Vec::new();
    for i in 0..40 {
        let u = post(
            &app,
            &key,
            "/v2/user",
            json!({"client_user_id": format!("u{i}")}),
        )
        .await;
        users.push(u["user_id"].as_str().unwrap().parse::<Uuid>().unwrap());
    }
    let tests = get(&app, &key, "/v3/lab_tests").await.1;
    let test = tests
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["method"] == "walk_in_test")
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let created = post(&app, &key, "/v3/order", json!({
        "user_id": users[0],
        "patient_details": {"first_name": "Seed", "last_name": "Template", "dob": "1980-01-01", "gender": "other", "phone_number": "+16025550100", "email": "seed@example.com"},
        "patient_address": {"first_line": "1 Seed St", "city": "Phoenix", "state": "AZ", "zip": "85004", "country": "US"},
        "order_set": {"lab_test_ids": [test]}
    }))
    .await;
    let template: Order = serde_json::from_value(created["order"].clone()).unwrap();
    let mut matching = 0;
    let mut rng = ChaCha8Rng::seed_from_u64(17);
    let start = template.created_at - chrono::Duration::seconds(n as i64 + 10);
    let mut tx = meta.begin().await.unwrap();
    for i in 1..n {
        let method = Method::ALL[i % 4];
        let status = STATUSES[(i / 4) % STATUSES.len()];
        if method == Method::WalkIn && matches!(status, Low::Ordered | Low::RequisitionCreated) {
            matching += 1;
        }
        let mut o = template.clone();
        o.id = Uuid::new_v4();
        o.user_id = users[i % users.len()];
        o.patient_details.first_name = FIRST[rng.gen_range(0..FIRST.len())].to_owned();
        o.patient_details.last_name = LAST[rng.gen_range(0..LAST.len())].to_owned();
        o.patient_address.receiver_name = Some(format!(
            "{} {}",
            o.patient_details.first_name, o.patient_details.last_name
        ));
        o.lab_test.summary.method = method;
        o.low_level_status = status;
        o.status = wearhouse::lab::states::top(status);
        o.created_at = start + chrono::Duration::seconds(i as i64);
        o.updated_at = o.created_at;
        o.order_transaction.id = Uuid::new_v4();
        wearhouse::store::metadata::lab::orders::insert(&mut tx, &to_row(&o))
            .await
            .unwrap();
        if i % 5000 == 0 {
            tx.commit().await.unwrap();
            tx = meta.begin().await.unwrap();
        }
    }
    tx.commit().await.unwrap();
    // The template order itself is walk-in and ordered.
    matching += 1;
    Seeded {
        state,
        app,
        key,
        matching,
        dir,
    }
}

/// Runs the list request and checks its answer; the page's length.
pub async fn list_checked(s: &Seeded) -> usize {
    let (status, page) = get(&s.app, &s.key, LIST).await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(page["total"], s.matching, "total");
    let orders = page["orders"].as_array().unwrap();
    let expected = (s.matching - 100).clamp(0, 50) as usize;
    assert_eq!(orders.len(), expected, "page 3 of 50");
    let names: Vec<String> = orders
        .iter()
        .map(|o| {
            format!(
                "{} {}",
                o["patient_details"]["first_name"].as_str().unwrap(),
                o["patient_details"]["last_name"].as_str().unwrap()
            )
            .to_lowercase()
        })
        .collect();
    assert!(
        names.windows(2).all(|w| w[0] <= w[1]),
        "sorted by patient name"
    );
    for o in orders {
        assert_eq!(o["lab_test"]["method"], "walk_in_test");
        let low = o["low_level_status"].as_str().unwrap();
        assert!(low == "ordered" || low == "requisition_created", "{low}");
    }
    orders.len()
}

/// Labs of the area request, with the library's own count of their centres within 100 miles of
/// the request's ZIP code: what the answer must say (worked out once, outside the timing).
pub fn area_expected(s: &Seeded) -> Vec<(&'static str, i64)> {
    let index = s.state.lab.pscs();
    let from = wearhouse::lab::area::zips::lookup("10001").unwrap().point;
    let counts: Vec<(&'static str, i64)> = ["quest", "labcorp", "bioreference", "sonora_quest"]
        .into_iter()
        .map(|lab| (lab, index.within(lab, from, 100.0).len() as i64))
        .collect();
    let total: i64 = counts.iter().map(|(_, n)| n).sum();
    assert!(total > 100, "a dense area: {total}");
    counts
}

/// Runs the area request and checks its counts against `expected` ([`area_expected`]); the
/// centres within 100 miles of all labs.
pub async fn area_checked(s: &Seeded, expected: &[(&str, i64)]) -> i64 {
    let (status, info) = get(&s.app, &s.key, AREA).await;
    assert_eq!(status, 200, "{info}");
    assert_eq!(info["phlebotomy"]["is_served"], false);
    let mut total = 0;
    for (lab, want) in expected {
        let got = &info["central_labs"][lab]["patient_service_centers"];
        assert_eq!(got["within_radius"], *want, "{lab}");
        assert_eq!(got["radius"], "100");
        total += want;
    }
    total
}
