//! Jobs seen from outside the runner: `GET /v2/team/jobs` (filters, paging, tenancy, 422 on an
//! unknown state), store compaction running as a job, and the job removing a deleted user once its undo window is over.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::jobs::support as jobs_support;
use crate::support;

use std::sync::Arc;
use std::time::Duration;

use axum::http::StatusCode;
use chrono::Utc;
use serde_json::json;
use uuid::Uuid;
use wearhouse::jobs::{JobState, ManualClock, NewJob, Registry, Runner, enqueue_now};
use wearhouse::store::health::StoreOptions;
use wearhouse::store::metadata::jobs::{JobFilter, list_jobs};

use jobs_support::{config, wait_for};

const LONG: Duration = Duration::from_secs(30);

// ---- (e) GET /v2/team/jobs: filters, paging, tenancy ----

#[tokio::test]
async fn the_jobs_endpoint_shows_a_team_only_its_own_jobs() {
    let app = support::TestApp::new().await;
    let meta = &app.state.meta;
    let team = meta.team_for_key(&app.key).await.unwrap().unwrap().id;
    let other = meta.team_for_key(&app.other_key).await.unwrap().unwrap().id;
    let later = Utc::now() + chrono::Duration::hours(1);
    for kind in ["provider.pull", "provider.pull", "webhook.deliver"] {
        let job = NewJob::new(kind, json!({"n": 1})).for_team(team).at(later);
        enqueue_now(meta, &job).await.unwrap();
    }
    let theirs = NewJob::new("provider.pull", json!({}))
        .for_team(other)
        .at(later);
    let theirs = enqueue_now(meta, &theirs).await.unwrap().id();
    enqueue_now(meta, &NewJob::new("store.compact", json!({})).at(later))
        .await
        .unwrap();
    // One of ours fails for good.
    let failing = NewJob::new("nobody.runs.this", json!({}))
        .for_team(team)
        .max_attempts(1);
    let failing = enqueue_now(meta, &failing).await.unwrap().id();
    let runner = Runner::new(meta.clone(), Registry::new(), config("api", LONG)).spawn();
    wait_for(meta, failing, JobState::Failed, LONG).await;
    runner.shutdown().await;

    let all = app.get("/v2/team/jobs").await;
    assert_eq!(all.status, StatusCode::OK, "{}", all.json);
    assert_eq!(all.json["total"], 4, "{}", all.json);
    let ids: Vec<&str> = all.json["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["id"].as_str().unwrap())
        .collect();
    assert!(
        !ids.contains(&theirs.to_string().as_str()),
        "another team's job is invisible"
    );
    assert_eq!(
        all.json["jobs"][0]["id"],
        failing.to_string(),
        "newest first"
    );
    let failed = app.get("/v2/team/jobs/?state=failed").await;
    assert_eq!(failed.json["total"], 1);
    let error = failed.json["jobs"][0]["last_error"].as_str().unwrap();
    assert!(error.contains("no handler"), "{error}");
    let pulls = app
        .get("/v2/team/jobs?kind=provider.pull&state=pending&size=1&page=2")
        .await;
    assert_eq!(
        (
            &pulls.json["total"],
            &pulls.json["pages"],
            pulls.json["jobs"].as_array().unwrap().len()
        ),
        (&json!(2), &json!(2), 1)
    );
    let bad = app.get("/v2/team/jobs?state=done").await;
    support::assert_422_at(&bad, &[json!("query"), json!("state")]);
    let bad = app.get("/v2/team/jobs?size=0").await;
    support::assert_422_at(&bad, &[json!("query"), json!("size")]);
    let anonymous = app.send("GET", "/v2/team/jobs", None, None).await;
    assert_eq!(anonymous.status, StatusCode::UNAUTHORIZED);
}

// ---- compaction runs as a job and still compacts ----

#[tokio::test]
async fn compaction_runs_as_a_job_and_compacts() {
    let app = support::TestApp::new().await;
    let user = app.user("compacted").await;
    // A dataset is merged once it holds `compact_min_segments` (8 by default) small segments:
    // eight pushes of one record, each replacing the previous version.
    let pushes = StoreOptions::default().compact_min_segments;
    let mut body =
        json!({"provider": "manual", "sleep": [support::full_push()["sleep"][0].clone()]});
    for score in 0..pushes {
        body["sleep"][0]["score"] = json!(50 + score);
        let pushed = app
            .post(&format!("/v2/user/{user}/data"), body.clone())
            .await;
        assert_eq!(pushed.status, StatusCode::OK, "{}", pushed.json);
    }

    let meta = &app.state.meta;
    let system = JobFilter {
        team: None,
        state: None,
        kind: Some("store.compact".into()),
    };
    let mut conn = meta.writer().await.unwrap();
    let (jobs, total) = list_jobs(&mut conn, &system, 0, 10).await.unwrap();
    drop(conn);
    assert_eq!(
        total, 1,
        "pushes of one dataset ask for one compaction: {jobs:?}"
    );
    assert_eq!(jobs[0].state, JobState::Pending);
    assert!(jobs[0].run_at > Utc::now(), "due after the delay");
    assert_eq!(app.state.health.metrics().compactions, 0);

    let clock = Arc::new(ManualClock::new(Utc::now() + chrono::Duration::seconds(31)));
    let registry = wearhouse::app::job_registry(&app.state);
    let runner = Runner::new(meta.clone(), registry, config("compactor", LONG))
        .with_clock(clock.clone())
        .spawn();
    // The compaction waits for the eight pushes' announcements, which run on this runner too;
    // under load they can outlast its second of polling, and it then puts itself off by 5 s of
    // the runner's clock: the clock moves on while the test waits, as time would.
    let advancing = async {
        loop {
            tokio::time::sleep(Duration::from_secs(1)).await;
            clock.advance(chrono::Duration::seconds(6));
        }
    };
    let done = tokio::select! {
        done = wait_for(meta, jobs[0].id, JobState::Succeeded, LONG) => done,
        () = advancing => unreachable!("the clock advances forever"),
    };
    runner.shutdown().await;
    assert_eq!(done.kind, "store.compact");
    let m = app.state.health.metrics();
    assert_eq!(
        (m.compactions, m.segments_compacted),
        (1, pushes as u64),
        "{m:?}"
    );
    let team = meta.team_for_key(&app.key).await.unwrap().unwrap().id;
    let uuid: Uuid = user.parse().unwrap();
    let sleep =
        wearhouse::schema::Dataset::Table(wearhouse::schema::Table::from_name("sleep").unwrap());
    let rows: usize = app
        .state
        .health
        .read(team, uuid, sleep, None)
        .await
        .unwrap()
        .iter()
        .map(|b| b.num_rows())
        .sum();
    assert_eq!(rows, 1, "the replaced version is gone, the newest kept");
}

/// Deleting a user leaves, in the deleting transaction, a `store.delete_user` job due when the
/// undo window ends, and removes nothing before (an undo brings everything back). Once the
/// window has passed (the runner's clock moved past it) the job removes the user's rows and its
/// health data, the `client_user_id` is free again, and the deletion cannot be undone.
#[tokio::test]
async fn once_the_undo_window_passed_the_job_removes_the_user_and_its_data() {
    use wearhouse::store::metadata::deleted_users::{UserRef, any_user};

    let app = support::TestApp::new().await;
    let user = app.user("leaving").await;
    let body = json!({"provider": "manual", "sleep": [support::full_push()["sleep"][0].clone()]});
    let pushed = app.post(&format!("/v2/user/{user}/data"), body).await;
    assert_eq!(pushed.status, StatusCode::OK, "{}", pushed.json);
    let info = json!({"first_name": "Ada", "last_name": "Lovelace", "dob": "1985-12-10",
        "gender": "female", "phone_number": "+16025550123", "email": "ada@example.com",
        "address": {"first_line": "100 N 1st Ave", "city": "Phoenix", "state": "AZ",
                    "zip_code": "85004", "country": "US"}});
    let set = app.patch(&format!("/v2/user/{user}/info"), info).await;
    assert_eq!(set.status, StatusCode::OK, "{}", set.json);
    let meta = &app.state.meta;
    let health = &app.state.health;
    let team = meta.team_for_key(&app.key).await.unwrap().unwrap().id;
    let uuid: Uuid = user.parse().unwrap();
    assert_eq!(health.datasets(team, uuid).await.unwrap().len(), 1);

    let deleted = app
        .send("DELETE", &format!("/v2/user/{user}"), Some(&app.key), None)
        .await;
    assert_eq!(deleted.status, StatusCode::OK, "{}", deleted.json);
    assert_eq!(
        health.datasets(team, uuid).await.unwrap().len(),
        1,
        "kept for an undo during the window"
    );
    let taken = app
        .post("/v2/user", json!({"client_user_id": "leaving"}))
        .await;
    assert_eq!(taken.status, StatusCode::BAD_REQUEST, "{}", taken.json);
    assert_eq!(
        taken.json["detail"]["user_id"],
        user.as_str(),
        "{}",
        taken.json
    );
    let erasures = JobFilter {
        team: None,
        state: None,
        kind: Some("store.delete_user".into()),
    };
    let mut conn = meta.writer().await.unwrap();
    let (jobs, total) = list_jobs(&mut conn, &erasures, 0, 10).await.unwrap();
    drop(conn);
    assert_eq!(total, 1, "{jobs:?}");
    assert_eq!(jobs[0].state, JobState::Pending);
    let window = chrono::Duration::from_std(wearhouse::http::USER_UNDO_WINDOW).unwrap();
    assert!(
        jobs[0].run_at > Utc::now() + window - chrono::Duration::seconds(60),
        "due when the window ends: {jobs:?}"
    );

    let clock = Arc::new(ManualClock::new(
        Utc::now() + window + chrono::Duration::seconds(1),
    ));
    let registry = wearhouse::app::job_registry(&app.state);
    let runner = Runner::new(meta.clone(), registry, config("eraser", LONG))
        .with_clock(clock)
        .spawn();
    let done = wait_for(meta, jobs[0].id, JobState::Succeeded, LONG).await;
    runner.shutdown().await;
    assert_eq!(done.kind, "store.delete_user");
    assert!(health.datasets(team, uuid).await.unwrap().is_empty());
    let mut conn = meta.writer().await.unwrap();
    assert!(
        any_user(&mut conn, team, &UserRef::Id(uuid))
            .await
            .unwrap()
            .is_none(),
        "the row is gone"
    );
    drop(conn);
    assert_eq!(meta.user_info(uuid).await.unwrap(), None);
    // Gone for good: no undo, no second delete, and the client id is free.
    let undo = app
        .send(
            "POST",
            &format!("/v2/user/undo_delete?user_id={user}"),
            Some(&app.key),
            None,
        )
        .await;
    assert_eq!(undo.status, StatusCode::NOT_FOUND, "{}", undo.json);
    let again = app
        .send("DELETE", &format!("/v2/user/{user}"), Some(&app.key), None)
        .await;
    assert_eq!(again.status, StatusCode::NOT_FOUND);
    let reused = app
        .post("/v2/user", json!({"client_user_id": "leaving"}))
        .await;
    assert_eq!(reused.status, StatusCode::OK, "{}", reused.json);
    assert_ne!(reused.json["user_id"], user.as_str());
    let mut conn = meta.writer().await.unwrap();
    assert_eq!(list_jobs(&mut conn, &erasures, 0, 10).await.unwrap().1, 1);
}
