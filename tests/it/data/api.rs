//! The data plane over HTTP: push → getters round trip for every table and timeseries family,
//! all-or-nothing rejection, replacement, tenancy and deletion.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use axum::http::StatusCode;
use serde_json::{Value, json};
use support::{TestApp, assert_422_at, carries, full_push};

const WINDOW: &str = "start_date=2025-03-01&end_date=2025-03-03";

async fn pushed_user(app: &TestApp) -> String {
    let id = app.user("with-data").await;
    let a = app.post(&format!("/v2/user/{id}/data"), full_push()).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.json);
    id
}

#[tokio::test]
async fn push_then_every_getter_returns_the_pushed_values() {
    let app = TestApp::new().await;
    let id = app.user("with-data").await;
    let body = full_push();
    let a = app.post(&format!("/v2/user/{id}/data"), body.clone()).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.json);
    assert_eq!(a.json["stored"]["sleep"], 1);
    assert_eq!(a.json["stored"]["timeseries"]["heartrate"], 1);

    for (kind, push_key, answer_key) in [
        ("sleep", "sleep", "sleep"),
        ("activity", "activity", "activity"),
        ("workouts", "workouts", "workouts"),
        ("body", "body", "body"),
        ("meal", "meals", "meals"),
    ] {
        let got = app.get(&format!("/v2/summary/{kind}/{id}?{WINDOW}")).await;
        assert_eq!(got.status, StatusCode::OK, "{kind}: {}", got.json);
        let rows = got.json[answer_key]
            .as_array()
            .unwrap_or_else(|| panic!("{kind}: {}", got.json));
        assert_eq!(rows.len(), 1, "{kind}");
        assert!(
            carries(&body[push_key][0], &rows[0]),
            "{kind}: pushed {}, got {}",
            body[push_key][0],
            rows[0]
        );
        assert_eq!(rows[0]["user_id"], id.as_str());
        assert_eq!(rows[0]["source"]["provider"], "manual");
        assert_eq!(rows[0]["source"]["type"], "app");
        assert_eq!(rows[0]["source"]["app_id"], "com.example");
        assert_eq!(
            rows[0]["source"]["name"], "Manual",
            "deprecated name filled from the catalogue"
        );
    }
    let profile = app.get(&format!("/v2/summary/profile/{id}")).await;
    // A pushed `wheelchair_use: false` is answered by absence (the reference admits only true).
    let mut pushed_profile = body["profile"].clone();
    assert_eq!(pushed_profile["wheelchair_use"], false);
    pushed_profile
        .as_object_mut()
        .unwrap()
        .remove("wheelchair_use");
    assert!(carries(&pushed_profile, &profile.json), "{}", profile.json);
    assert!(
        profile.json.get("wheelchair_use").is_none(),
        "{}",
        profile.json
    );

    for (resource, samples) in body["timeseries"].as_object().unwrap() {
        let got = app
            .get(&format!("/v2/timeseries/{id}/{resource}?{WINDOW}"))
            .await;
        assert_eq!(got.status, StatusCode::OK, "{resource}: {}", got.json);
        let rows = got.json.as_array().unwrap();
        assert_eq!(rows.len(), 1, "{resource}");
        let mut pushed = samples[0].clone();
        pushed.as_object_mut().unwrap().remove("start");
        assert!(
            carries(&pushed, &rows[0]),
            "{resource}: pushed {pushed}, got {}",
            rows[0]
        );
    }
    let grouped = app
        .get(&format!("/v2/timeseries/{id}/heartrate/grouped?{WINDOW}"))
        .await;
    assert_eq!(grouped.status, StatusCode::OK, "{}", grouped.json);
    let group = &grouped.json["groups"]["manual"][0];
    assert_eq!(group["data"][0]["value"], 55.5);
    assert_eq!(grouped.json["next_cursor"], Value::Null);

    // The window and the provider filter apply.
    let outside = app
        .get(&format!("/v2/summary/sleep/{id}?start_date=2025-04-01"))
        .await;
    assert_eq!(outside.json["sleep"], json!([]));
    let other = app
        .get(&format!("/v2/summary/sleep/{id}?{WINDOW}&provider=oura"))
        .await;
    assert_eq!(other.json["sleep"], json!([]));
    // Pushing connected the provider.
    let providers = app.get(&format!("/v2/user/providers/{id}")).await;
    assert_eq!(providers.json["providers"][0]["slug"], "manual");
}

#[tokio::test]
async fn a_bad_record_rejects_the_whole_push_and_stores_nothing() {
    let app = TestApp::new().await;
    let id = app.user("strict").await;
    let mut body = full_push();
    body["timeseries"]["heartrate"][0]["value"] = json!(400.0);
    let a = app.post(&format!("/v2/user/{id}/data"), body).await;
    assert_422_at(
        &a,
        &[
            json!("body"),
            json!("timeseries"),
            json!("heartrate"),
            json!(0),
            json!("value"),
        ],
    );
    let mut body = full_push();
    body["sleep"][0]["bedtime_stop"] = json!("2025-03-01T20:00:00+01:00");
    let a = app.post(&format!("/v2/user/{id}/data"), body).await;
    assert_eq!(a.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", a.json);
    assert_eq!(a.json["detail"][0]["loc"][1], "sleep");
    assert_eq!(a.json["detail"][0]["loc"][2], 0);
    for kind in ["sleep", "activity", "workouts", "body", "meal"] {
        let got = app.get(&format!("/v2/summary/{kind}/{id}?{WINDOW}")).await;
        let key = if kind == "meal" { "meals" } else { kind };
        assert_eq!(
            got.json[key],
            json!([]),
            "{kind} stored from a rejected push"
        );
    }
    let uuid = id.parse().unwrap();
    let team = app.team().await.id;
    assert!(
        app.state
            .health
            .datasets(team, uuid)
            .await
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn a_record_pushed_twice_is_replaced_by_the_newest() {
    let app = TestApp::new().await;
    let id = app.user("twice").await;
    let mut body = json!({"provider": "manual", "sleep": [full_push()["sleep"][0].clone()]});
    app.post(&format!("/v2/user/{id}/data"), body.clone()).await;
    body["sleep"][0]["score"] = json!(42);
    app.post(&format!("/v2/user/{id}/data"), body).await;
    let got = app.get(&format!("/v2/summary/sleep/{id}?{WINDOW}")).await;
    let rows = got.json["sleep"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "{}", got.json);
    assert_eq!(rows[0]["score"], 42);
}

#[tokio::test]
async fn getters_and_push_validate_their_inputs_and_respect_tenancy() {
    let app = TestApp::new().await;
    let id = pushed_user(&app).await;
    assert_422_at(
        &app.get(&format!("/v2/summary/sleep/{id}")).await,
        &[json!("query"), json!("start_date")],
    );
    assert_422_at(
        &app.get(&format!("/v2/summary/sleep/{id}?start_date=yesterday"))
            .await,
        &[json!("query"), json!("start_date")],
    );
    // A summary kind the service does not have is a route it does not serve.
    let naps = app.get(&format!("/v2/summary/naps/{id}?{WINDOW}")).await;
    assert_eq!(naps.status, StatusCode::NOT_FOUND, "{}", naps.json);
    assert_422_at(
        &app.get(&format!("/v2/summary/sleep/not-a-uuid?{WINDOW}"))
            .await,
        &[json!("path"), json!("user_id")],
    );
    assert_422_at(
        &app.get(&format!("/v2/summary/sleep/{id}?{WINDOW}&provider=nokia"))
            .await,
        &[json!("query"), json!("provider")],
    );
    assert_422_at(
        &app.get(&format!("/v2/timeseries/{id}/heart_rate?{WINDOW}"))
            .await,
        &[json!("path"), json!("resource")],
    );
    assert_422_at(
        &app.get(&format!(
            "/v2/timeseries/{id}/heartrate/grouped?{WINDOW}&cursor=zz"
        ))
        .await,
        &[json!("query"), json!("cursor")],
    );

    let foreign = app.foreign_user().await;
    for uri in [
        format!("/v2/summary/sleep/{foreign}?{WINDOW}"),
        format!("/v2/summary/profile/{foreign}"),
        format!("/v2/timeseries/{foreign}/heartrate?{WINDOW}"),
    ] {
        assert_eq!(app.get(&uri).await.status, StatusCode::NOT_FOUND, "{uri}");
    }
    let a = app
        .post(&format!("/v2/user/{foreign}/data"), full_push())
        .await;
    assert_eq!(a.status, StatusCode::NOT_FOUND);
    let a = app
        .send(
            "GET",
            &format!("/v2/summary/sleep/{id}?{WINDOW}"),
            Some(&app.other_key),
            None,
        )
        .await;
    assert_eq!(
        a.status,
        StatusCode::NOT_FOUND,
        "another team cannot read this user's data"
    );
    let a = app
        .send(
            "GET",
            &format!("/v2/summary/sleep/{id}?{WINDOW}"),
            None,
            None,
        )
        .await;
    assert_eq!(a.status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn deleting_a_user_hides_its_health_data_until_the_undo_window_ends() {
    let app = TestApp::new().await;
    let id = pushed_user(&app).await;
    let team = app.team().await.id;
    let uuid = id.parse().unwrap();
    assert!(
        !app.state
            .health
            .datasets(team, uuid)
            .await
            .unwrap()
            .is_empty()
    );
    let a = app
        .send("DELETE", &format!("/v2/user/{id}"), Some(&app.key), None)
        .await;
    assert_eq!(a.status, StatusCode::OK);
    // Kept for an undo (removed by the job once the window is over: `jobs_api.rs`), unreachable.
    assert!(
        !app.state
            .health
            .datasets(team, uuid)
            .await
            .unwrap()
            .is_empty()
    );
    let got = app.get(&format!("/v2/summary/sleep/{id}?{WINDOW}")).await;
    assert_eq!(got.status, StatusCode::NOT_FOUND, "{}", got.json);
}

/// Pushes `n` heart-rate samples from `provider`, one a minute from 2025-03-02T07:00Z.
async fn push_heart_rate(app: &TestApp, id: &str, provider: &str, n: usize) {
    let samples: Vec<Value> = (0..n)
        .map(|i| json!({"timestamp": format!("2025-03-02T07:{i:02}:00Z"), "value": 60 + i}))
        .collect();
    let body = json!({"provider": provider, "timeseries": {"heartrate": samples}});
    let a = app.post(&format!("/v2/user/{id}/data"), body).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.json);
}

fn capped(rows: usize, bytes: usize) -> wearhouse::http::HttpConfig {
    wearhouse::http::HttpConfig {
        getter_limits: wearhouse::render::PageLimits { rows, bytes },
        ..Default::default()
    }
}

#[tokio::test]
async fn the_plain_timeseries_getter_pages_by_cursor_under_its_row_cap() {
    let app = TestApp::with_config(capped(5, 1 << 20)).await;
    let id = app.user("paged").await;
    push_heart_rate(&app, &id, "manual", 7).await;
    push_heart_rate(&app, &id, "oura", 5).await;
    let base = format!("/v2/timeseries/{id}/heartrate?{WINDOW}");
    let mut seen: Vec<(String, f64)> = Vec::new();
    let mut next: Option<String> = None;
    for page in 0.. {
        // Alternate the two names the cursor is accepted under.
        let uri = match &next {
            None => base.clone(),
            Some(c) if page % 2 == 0 => format!("{base}&cursor={c}"),
            Some(c) => format!("{base}&next_cursor={c}"),
        };
        let got = app.get(&uri).await;
        assert_eq!(got.status, StatusCode::OK, "{}", got.json);
        let rows = got.json.as_array().unwrap();
        assert!(rows.len() <= 5, "page {page} has {} samples", rows.len());
        seen.extend(rows.iter().map(|r| {
            (
                r["timestamp"].as_str().unwrap().to_owned(),
                r["value"].as_f64().unwrap(),
            )
        }));
        next = got
            .headers
            .get("x-next-cursor")
            .map(|v| v.to_str().unwrap().to_owned());
        if next.is_none() {
            assert_eq!(page, 2, "12 samples in pages of 5");
            break;
        }
    }
    assert_eq!(seen.len(), 12, "every sample exactly once: {seen:?}");
    assert!(seen.windows(2).all(|w| w[0].0 <= w[1].0), "{seen:?}");
    // Two providers at one instant: both samples come, one after the other.
    assert_eq!(seen[0], ("2025-03-02T07:00:00Z".to_owned(), 60.0));
    assert_eq!(seen[1], ("2025-03-02T07:00:00Z".to_owned(), 60.0));

    let two = app.get(&format!("{base}&limit=2")).await;
    assert_eq!(two.json.as_array().unwrap().len(), 2);
    assert!(two.headers.contains_key("x-next-cursor"));
    assert_422_at(
        &app.get(&format!("{base}&limit=6")).await,
        &[json!("query"), json!("limit")],
    );
    assert_422_at(
        &app.get(&format!("{base}&next_cursor=zz")).await,
        &[json!("query"), json!("next_cursor")],
    );
    let cursor = two.headers["x-next-cursor"].to_str().unwrap().to_owned();
    assert_422_at(
        &app.get(&format!("{base}&cursor={cursor}&next_cursor=00"))
            .await,
        &[json!("query"), json!("next_cursor")],
    );
}

#[tokio::test]
async fn timeseries_getters_cut_pages_at_the_byte_cap() {
    // One heart-rate sample renders to about 90 bytes.
    let app = TestApp::with_config(capped(1000, 250)).await;
    let id = app.user("bytes").await;
    push_heart_rate(&app, &id, "manual", 7).await;
    let plain = app
        .get(&format!("/v2/timeseries/{id}/heartrate?{WINDOW}"))
        .await;
    let rows = plain.json.as_array().unwrap();
    assert_eq!(rows.len(), 2, "{}", plain.json);
    assert!(plain.bytes.len() <= 250, "{} bytes", plain.bytes.len());
    assert!(plain.headers.contains_key("x-next-cursor"));
    let grouped = app
        .get(&format!("/v2/timeseries/{id}/heartrate/grouped?{WINDOW}"))
        .await;
    assert_eq!(
        grouped.json["groups"]["manual"][0]["data"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    assert!(grouped.json["next_cursor"].is_string());

    // A sample larger than the cap still comes, alone.
    let tiny = TestApp::with_config(capped(1000, 1)).await;
    let id = tiny.user("tiny").await;
    push_heart_rate(&tiny, &id, "manual", 3).await;
    let one = tiny
        .get(&format!("/v2/timeseries/{id}/heartrate?{WINDOW}"))
        .await;
    assert_eq!(one.json.as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn the_grouped_getter_caps_its_limit_and_takes_next_cursor() {
    let app = TestApp::with_config(capped(5, 1 << 20)).await;
    let id = app.user("grouped").await;
    push_heart_rate(&app, &id, "manual", 7).await;
    push_heart_rate(&app, &id, "oura", 5).await;
    let base = format!("/v2/timeseries/{id}/heartrate/grouped?{WINDOW}");
    let count = |page: &Value| -> usize {
        page["groups"]
            .as_object()
            .unwrap()
            .values()
            .flat_map(|g| g.as_array().unwrap())
            .map(|g| g["data"].as_array().unwrap().len())
            .sum()
    };
    let first = app.get(&base).await;
    assert_eq!(count(&first.json), 5, "the default limit is capped to 5");
    let c = first.json["next_cursor"].as_str().unwrap().to_owned();
    let second = app.get(&format!("{base}&next_cursor={c}")).await;
    let again = app.get(&format!("{base}&cursor={c}")).await;
    assert_eq!(second.json, again.json);
    assert_eq!(count(&second.json), 5);
    let c = second.json["next_cursor"].as_str().unwrap().to_owned();
    let last = app.get(&format!("{base}&cursor={c}")).await;
    assert_eq!(count(&last.json), 2);
    assert_eq!(last.json["next_cursor"], Value::Null);
}

/// An identical re-push answers as a push does but writes nothing: the stored rows keep their
/// `ingested_at`, by which an earlier push whose events are not yet announced finds them. A
/// changed value is written.
#[tokio::test]
async fn an_identical_re_push_writes_nothing_and_a_changed_one_does() {
    use datafusion::arrow::array::AsArray;
    use datafusion::arrow::datatypes::TimestampMicrosecondType;
    let app = TestApp::new().await;
    let user = app.user("re-push").await;
    let uri = format!("/v2/user/{user}/data");
    let body = crate::events::support::push_body(0, 5, 60.0);
    let team = app.team().await.id;
    let hr =
        wearhouse::schema::Dataset::Timeseries(wearhouse::schema::resource("heartrate").unwrap());
    let stamps = || async {
        let batches = app
            .state
            .health
            .read(team, user.parse().unwrap(), hr, None)
            .await
            .unwrap();
        let mut all: Vec<i64> = batches
            .iter()
            .flat_map(|b| {
                b.column_by_name("ingested_at")
                    .unwrap()
                    .as_primitive::<TimestampMicrosecondType>()
                    .values()
                    .to_vec()
            })
            .collect();
        all.sort_unstable();
        all
    };
    let first = app.post(&uri, body.clone()).await;
    assert_eq!(first.status, 200, "{}", first.json);
    let before = stamps().await;
    assert_eq!(before.len(), 5);
    let again = app.post(&uri, body.clone()).await;
    assert_eq!(
        (again.status, again.json.clone()),
        (first.status, first.json.clone())
    );
    assert_eq!(stamps().await, before, "nothing rewritten");
    let mut changed = body;
    changed["timeseries"]["heartrate"][2]["value"] = json!(61.0);
    assert_eq!(app.post(&uri, changed).await.status, 200);
    let after = stamps().await;
    assert_eq!(after.len(), 5);
    assert_ne!(after, before, "the changed push is written");
}
