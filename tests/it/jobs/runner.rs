//! The durable job runner against both backends (a SQLite file and the machine's PostgreSQL):
//! a job survives SIGKILL and completes exactly once after a restart, two runners on one
//! PostgreSQL never run a job twice at once, an expired lease is taken over, retries back off
//! and end in `failed`, shutdown releases what it cannot finish, unique keys fold requests.
//! `jobs_api.rs` covers `GET /v2/team/jobs` and compaction as a job.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::jobs::support as jobs_support;

use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::Utc;
use serde_json::json;
use uuid::Uuid;
use wearhouse::jobs::{
    Clock, Enqueued, JobState, ManualClock, NewJob, Registry, Runner, enqueue, enqueue_now,
};
use wearhouse::store::metadata::MetadataStore;
use wearhouse::store::metadata::jobs::{Finish, claim_jobs, finish_job};

use jobs_support::{Db, Failing, Recorder, Sleeper, Steps, config, wait_for};

const LONG: Duration = Duration::from_secs(30);

/// Two tests of one runner exercise (`async fn(Db)`): `$sqlite` on a SQLite file, `$postgres`
/// on a scratch PostgreSQL database.
macro_rules! on_both {
    ($sqlite:ident, $postgres:ident, $exercise:ident) => {
        #[tokio::test]
        async fn $sqlite() {
            $exercise(Db::sqlite().await).await;
        }

        #[tokio::test]
        async fn $postgres() {
            $exercise(Db::postgres().await).await;
        }
    };
}

async fn add(meta: &MetadataStore, job: NewJob) -> Uuid {
    enqueue_now(meta, &job).await.unwrap().id()
}

// ---- (a) SIGKILL: the job resumes in a new process and completes exactly once ----

/// The child process of the SIGKILL test: a runner for `test.steps` on the database named by
/// the environment, running until killed. Does nothing when run on its own.
#[tokio::test]
#[ignore = "child process of a_job_survives_sigkill_*; runs only when spawned by it"]
async fn sigkill_child_process() {
    let Ok(url) = std::env::var("WEARHOUSE_JOBS_CHILD_URL") else {
        return;
    };
    let dir = std::env::var("WEARHOUSE_JOBS_CHILD_DIR").unwrap().into();
    let meta = MetadataStore::connect(&url).await.unwrap();
    let owner = format!("child-{}", std::process::id());
    let registry = Registry::new().register(Steps { dir });
    let _runner = Runner::new(meta, registry, config(&owner, Duration::from_secs(1))).spawn();
    tokio::time::sleep(Duration::from_secs(120)).await;
}

fn spawn_child(db: &Db) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args([
            "jobs::runner::sigkill_child_process",
            "--exact",
            "--ignored",
            "--nocapture",
        ])
        .env("WEARHOUSE_JOBS_CHILD_URL", &db.url)
        .env("WEARHOUSE_JOBS_CHILD_DIR", db.dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

fn read(db: &Db, file: &str) -> String {
    std::fs::read_to_string(db.dir.path().join(file)).unwrap_or_default()
}

async fn survives_sigkill(db: Db) {
    let meta = db.store().await;
    let job = NewJob::new("test.steps", json!({"steps": 5, "step_ms": 300}));
    let id = enqueue_now(&meta, &job).await.unwrap().id();

    let mut first = spawn_child(&db);
    let started = Instant::now();
    while !read(&db, "log").contains("start 2") {
        assert!(
            started.elapsed() < LONG,
            "the first process never reached step 2"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    first.kill().unwrap(); // SIGKILL
    first.wait().unwrap();
    let held = wearhouse::jobs::get(&meta, id).await.unwrap().unwrap();
    assert_eq!(
        held.state,
        JobState::Running,
        "the dead process still holds it"
    );
    assert_eq!(read(&db, "completions"), "");

    let mut second = spawn_child(&db);
    let done = wait_for(&meta, id, JobState::Succeeded, LONG).await;
    second.kill().unwrap();
    second.wait().unwrap();

    assert_eq!(
        read(&db, "completions"),
        "complete attempt 2\n",
        "completed exactly once"
    );
    assert_eq!(done.attempts, 2);
    assert!(
        done.last_error.unwrap_or_default().contains("expired"),
        "the takeover is recorded"
    );
    // Re-execution is bounded by durable progress: only the step cut short ran twice.
    assert_eq!(
        read(&db, "log"),
        "start 0 attempt 1\nstart 1 attempt 1\nstart 2 attempt 1\n\
         start 2 attempt 2\nstart 3 attempt 2\nstart 4 attempt 2\n"
    );
    meta.close().await;
    db.close().await;
}

on_both!(
    a_job_survives_sigkill_and_completes_once_after_restart_sqlite,
    a_job_survives_sigkill_and_completes_once_after_restart_postgres,
    survives_sigkill
);

// ---- (b) two runners on one PostgreSQL never run a job twice at once ----

#[tokio::test]
async fn two_runners_on_one_postgres_never_run_a_job_twice() {
    let db = Db::postgres().await;
    let (meta_a, meta_b) = (db.store().await, db.store().await);
    let runs = Recorder::default();
    let runner = |meta: &MetadataStore, name: &str| {
        let recorder = Recorder {
            name: name.to_owned(),
            ..runs.clone()
        };
        Runner::new(
            meta.clone(),
            Registry::new().register(recorder),
            config(name, LONG),
        )
        .spawn()
    };
    let (a, b) = (runner(&meta_a, "a"), runner(&meta_b, "b"));
    let mut tx = meta_a.begin().await.unwrap();
    let mut ids = Vec::new();
    for i in 0..300u64 {
        let job = NewJob::new("test.record", json!({"sleep_ms": i % 7}));
        ids.push(enqueue(&mut tx, &job).await.unwrap().id());
    }
    tx.commit().await.unwrap();
    meta_a.jobs_wake().notify_waiters();
    for id in &ids {
        wait_for(&meta_b, *id, JobState::Succeeded, LONG).await;
    }
    a.shutdown().await;
    b.shutdown().await;
    for id in &ids {
        let r = runs.runs(*id);
        assert_eq!((r.total, r.max_active), (1, 1), "job {id}: {r:?}");
    }
    let by_runner = runs.by_runner.lock().unwrap().clone();
    assert!(
        by_runner.get("a").copied().unwrap_or(0) > 0
            && by_runner.get("b").copied().unwrap_or(0) > 0,
        "both runners took jobs: {by_runner:?}"
    );
    meta_a.close().await;
    meta_b.close().await;
    db.close().await;
}

// ---- (c) an expired lease is taken over, and the old holder is fenced off ----

async fn expired_lease_is_taken_over(db: Db) {
    let meta = db.store().await;
    let clock = Arc::new(ManualClock::new(Utc::now()));
    let id = enqueue_now(
        &meta,
        &NewJob::new("test.record", json!({})).at(clock.now()),
    )
    .await
    .unwrap()
    .id();
    let mut conn = meta.writer().await.unwrap();
    let lease_until = clock.now() + chrono::Duration::seconds(30);
    let dead = claim_jobs(&mut conn, "dead-runner", 10, clock.now(), lease_until)
        .await
        .unwrap();
    assert_eq!(dead.len(), 1);
    drop(conn);

    let recorder = Recorder::default();
    let runner = Runner::new(
        meta.clone(),
        Registry::new().register(recorder.clone()),
        config("taker", LONG),
    )
    .with_clock(clock.clone())
    .spawn();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(recorder.runs(id).total, 0, "a live lease is respected");
    clock.advance(chrono::Duration::seconds(31));
    meta.jobs_wake().notify_waiters();
    let done = wait_for(&meta, id, JobState::Succeeded, LONG).await;
    runner.shutdown().await;
    assert_eq!(recorder.runs(id).total, 1);
    assert_eq!(done.attempts, 2);
    assert!(done.last_error.unwrap().contains("dead-runner"));

    let mut conn = meta.writer().await.unwrap();
    let fence = dead[0].fence();
    let late = finish_job(&mut conn, &fence, &Finish::Succeeded, clock.now());
    assert!(!late.await.unwrap(), "the old holder cannot record an end");
    drop(conn);
    meta.close().await;
    db.close().await;
}

on_both!(
    an_expired_lease_is_taken_over_sqlite,
    an_expired_lease_is_taken_over_postgres,
    expired_lease_is_taken_over
);

// ---- (d) retries back off and end in `failed` with the last error ----

async fn retries_end_in_failed(db: Db) {
    let meta = db.store().await;
    let failing = Failing::default();
    let runner = Runner::new(
        meta.clone(),
        Registry::new().register(failing.clone()),
        config("retrier", LONG),
    )
    .spawn();
    let retried = NewJob::new("test.fail", json!({})).max_attempts(4);
    let retried = enqueue_now(&meta, &retried).await.unwrap().id();
    let permanent = NewJob::new("test.fail", json!({"permanent": true})).max_attempts(4);
    let permanent = enqueue_now(&meta, &permanent).await.unwrap().id();
    let snoozed = NewJob::new("test.fail", json!({"snooze": 3, "succeed": true})).max_attempts(1);
    let snoozed = enqueue_now(&meta, &snoozed).await.unwrap().id();

    let failed = wait_for(&meta, retried, JobState::Failed, LONG).await;
    assert_eq!(failed.attempts, 4);
    assert_eq!(failed.last_error.as_deref(), Some("boom 4"));
    assert!(failed.finished_at.is_some());
    let starts = failing.started.lock().unwrap()[&retried].clone();
    assert_eq!(starts.len(), 4);
    // Nominal delays 40, 80, 100 (capped) ms; jitter keeps at least half of each.
    for (i, min_ms) in [20u64, 40, 50].into_iter().enumerate() {
        let gap = starts[i + 1] - starts[i];
        assert!(
            gap >= Duration::from_millis(min_ms),
            "retry {i} after {gap:?}"
        );
    }

    let failed = wait_for(&meta, permanent, JobState::Failed, LONG).await;
    assert_eq!(
        (failed.attempts, failed.last_error.as_deref()),
        (1, Some("bad payload"))
    );

    // Asking to run later uses no attempt: three snoozes fit in max_attempts = 1.
    let done = wait_for(&meta, snoozed, JobState::Succeeded, LONG).await;
    assert_eq!(done.attempts, 1);
    assert_eq!(failing.started.lock().unwrap()[&snoozed].len(), 4);
    runner.shutdown().await;
    meta.close().await;
    db.close().await;
}

on_both!(
    retries_back_off_and_end_in_failed_sqlite,
    retries_back_off_and_end_in_failed_postgres,
    retries_end_in_failed
);

// ---- graceful shutdown finishes or releases running jobs ----

async fn shutdown_finishes_or_releases(db: Db) {
    let meta = db.store().await;
    let mut cfg = config("stopper", LONG);
    cfg.shutdown_grace = Duration::from_millis(500);
    let runner = Runner::new(meta.clone(), Registry::new().register(Sleeper), cfg).spawn();
    let quick = add(&meta, NewJob::new("test.sleep", json!({"ms": 200}))).await;
    let stuck = add(&meta, NewJob::new("test.sleep", json!({"ms": 60_000}))).await;
    let checkpoint = json!({"ms": 60_000, "checkpoint": true});
    let polite = add(&meta, NewJob::new("test.sleep", checkpoint)).await;
    for id in [quick, stuck, polite] {
        wait_for(&meta, id, JobState::Running, LONG).await;
    }
    let started = Instant::now();
    runner.shutdown().await;
    assert!(started.elapsed() < Duration::from_secs(5));
    let get = |id| {
        let meta = meta.clone();
        async move { wearhouse::jobs::get(&meta, id).await.unwrap().unwrap() }
    };
    assert_eq!(
        get(quick).await.state,
        JobState::Succeeded,
        "finished within grace"
    );
    for id in [stuck, polite] {
        let job = get(id).await;
        assert_eq!(job.state, JobState::Pending, "{job:?}");
        assert_eq!(
            (job.attempts, job.lease_owner),
            (0, None),
            "released, attempt given back"
        );
    }
    meta.close().await;
    db.close().await;
}

on_both!(
    shutdown_finishes_or_releases_running_jobs_sqlite,
    shutdown_finishes_or_releases_running_jobs_postgres,
    shutdown_finishes_or_releases
);

// ---- unique keys: one unfinished job per key; a request during a run reruns it ----

async fn unique_keys_fold_requests(db: Db) {
    let meta = db.store().await;
    // At the stored precision (microseconds), to compare what is read back.
    let later = chrono::SubsecRound::trunc_subsecs(Utc::now() + chrono::Duration::hours(1), 6);
    let job = NewJob::new("test.record", json!({"sleep_ms": 300})).unique("k1");
    let first = enqueue_now(&meta, &job.clone().at(later)).await.unwrap();
    let second = job.clone().at(later + chrono::Duration::hours(1));
    let second = enqueue_now(&meta, &second).await.unwrap();
    assert!(matches!(first, Enqueued::Created(_)));
    let id = first.id();
    assert_eq!(second, Enqueued::Existing(id));
    let held = wearhouse::jobs::get(&meta, id).await.unwrap().unwrap();
    assert_eq!(held.run_at, later, "a later request never postpones");
    // An earlier request brings it forward: due now.
    assert_eq!(
        enqueue_now(&meta, &job).await.unwrap(),
        Enqueued::Existing(id)
    );
    let recorder = Recorder::default();
    let registry = Registry::new().register(recorder.clone());
    let runner = Runner::new(meta.clone(), registry, config("u", LONG)).spawn();
    wait_for(&meta, id, JobState::Running, LONG).await;
    // Asked again while it runs: it runs once more afterwards, as the same row.
    assert_eq!(
        enqueue_now(&meta, &job).await.unwrap(),
        Enqueued::Existing(id)
    );
    let done = wait_for(&meta, id, JobState::Succeeded, LONG).await;
    assert_eq!(recorder.runs(id).total, 2);
    assert_eq!(done.attempts, 1, "the rerun starts with fresh attempts");
    // Finished: the key is free again.
    assert!(matches!(
        enqueue_now(&meta, &job).await.unwrap(),
        Enqueued::Created(_)
    ));
    runner.shutdown().await;
    meta.close().await;
    db.close().await;
}

/// A run that ends asking to retry later (`RetryAt`) while its key was enqueued again during
/// the run is due at the earlier of the two: the request made during the run is not lost.
async fn a_rerun_asked_during_a_run_is_not_postponed_by_its_retry(db: Db) {
    let meta = db.store().await;
    let now = chrono::SubsecRound::trunc_subsecs(Utc::now(), 6);
    let job = NewJob::new("test.record", json!({})).unique("k2").at(now);
    let id = enqueue_now(&meta, &job).await.unwrap().id();
    let mut conn = meta.writer().await.unwrap();
    let claimed = claim_jobs(&mut conn, "r1", 1, now, now + chrono::Duration::minutes(1))
        .await
        .unwrap();
    assert_eq!(claimed.len(), 1);
    drop(conn);
    // Asked again while it runs.
    assert_eq!(
        enqueue_now(&meta, &job).await.unwrap(),
        Enqueued::Existing(id)
    );
    let later = now + chrono::Duration::hours(1);
    let finish = Finish::Pending {
        at: later,
        error: None,
        count_attempt: false,
    };
    let mut conn = meta.writer().await.unwrap();
    assert!(
        finish_job(&mut conn, &claimed[0].fence(), &finish, now)
            .await
            .unwrap()
    );
    drop(conn);
    let after = wearhouse::jobs::get(&meta, id).await.unwrap().unwrap();
    assert_eq!(after.state, JobState::Pending);
    assert_eq!(
        after.run_at, now,
        "due when asked during the run, not at the retry"
    );
    meta.close().await;
    db.close().await;
}

on_both!(
    a_rerun_asked_during_a_run_is_not_postponed_by_its_retry_sqlite,
    a_rerun_asked_during_a_run_is_not_postponed_by_its_retry_postgres,
    a_rerun_asked_during_a_run_is_not_postponed_by_its_retry
);

on_both!(
    unique_keys_fold_requests_sqlite,
    unique_keys_fold_requests_postgres,
    unique_keys_fold_requests
);
