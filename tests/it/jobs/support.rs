//! Shared parts of the job runner tests: a fresh database per test on either backend, test job
//! kinds that record what they did, and waiting for a job's state.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;
use uuid::Uuid;
use wearhouse::jobs::{
    Backoff, Job, JobContext, JobError, JobHandler, JobState, Outcome, RunnerConfig,
};
use wearhouse::store::metadata::MetadataStore;

use crate::support::postgres::ScratchDb;

/// A private database: a SQLite file in a temporary dir, or a fresh PostgreSQL database
/// (`WEARHOUSE_TEST_POSTGRES_URL`, default the machine's server) dropped by `close`.
pub struct Db {
    pub url: String,
    pub dir: tempfile::TempDir,
    postgres: Option<ScratchDb>,
}

impl Db {
    pub async fn sqlite() -> Db {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}?mode=rwc", dir.path().join("meta.db").display());
        Db {
            url,
            dir,
            postgres: None,
        }
    }

    pub async fn postgres() -> Db {
        let db = ScratchDb::create("wearhouse_jobs").await;
        Db {
            url: db.url.clone(),
            dir: tempfile::tempdir().unwrap(),
            postgres: Some(db),
        }
    }

    pub async fn store(&self) -> MetadataStore {
        MetadataStore::connect(&self.url).await.unwrap()
    }

    /// Drops the PostgreSQL database (closing other sessions on it).
    pub async fn close(self) {
        if let Some(db) = self.postgres {
            db.drop_db().await;
        }
    }
}

/// A runner configuration for tests: fast polls, the given lease.
pub fn config(owner: &str, lease: Duration) -> RunnerConfig {
    RunnerConfig {
        owner: owner.to_owned(),
        concurrency: 8,
        poll_interval: Duration::from_millis(20),
        lease,
        heartbeat: lease / 4,
        shutdown_grace: Duration::from_secs(5),
        backoff: Backoff {
            base: Duration::from_millis(40),
            max: Duration::from_millis(100),
        },
    }
}

/// Polls a job until it is in `state` (panics after `timeout`).
pub async fn wait_for(meta: &MetadataStore, id: Uuid, state: JobState, timeout: Duration) -> Job {
    let started = Instant::now();
    loop {
        let job = wearhouse::jobs::get(meta, id).await.unwrap().unwrap();
        if job.state == state {
            return job;
        }
        assert!(
            started.elapsed() < timeout,
            "job {id} still {:?} after {timeout:?}: {job:?}",
            job.state
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Per job: runs in progress now, the most ever in progress at once, runs in all.
#[derive(Debug, Default, Clone, Copy)]
pub struct Runs {
    pub active: u32,
    pub max_active: u32,
    pub total: u32,
}

/// `test.record`: records each run's overlap with other runs of the same job, sleeping
/// `payload.sleep_ms` meanwhile.
#[derive(Clone, Default)]
pub struct Recorder {
    pub name: String,
    pub runs: Arc<Mutex<HashMap<Uuid, Runs>>>,
    pub by_runner: Arc<Mutex<HashMap<String, u32>>>,
}

impl Recorder {
    pub fn runs(&self, id: Uuid) -> Runs {
        self.runs
            .lock()
            .unwrap()
            .get(&id)
            .copied()
            .unwrap_or_default()
    }
}

#[async_trait::async_trait]
impl JobHandler for Recorder {
    fn kind(&self) -> &'static str {
        "test.record"
    }

    type Payload = Value;

    async fn run(&self, ctx: &JobContext, payload: Value) -> Result<Outcome, JobError> {
        {
            let mut runs = self.runs.lock().unwrap();
            let r = runs.entry(ctx.id).or_default();
            r.active += 1;
            r.total += 1;
            r.max_active = r.max_active.max(r.active);
            *self
                .by_runner
                .lock()
                .unwrap()
                .entry(self.name.clone())
                .or_default() += 1;
        }
        let ms = payload["sleep_ms"].as_u64().unwrap_or(0);
        tokio::time::sleep(Duration::from_millis(ms)).await;
        self.runs.lock().unwrap().get_mut(&ctx.id).unwrap().active -= 1;
        Ok(Outcome::Done)
    }
}

/// `test.fail`: fails every run (`Retry("boom <attempt>")`, or `Permanent` when
/// `payload.permanent`), snoozes first when `payload.snooze` > attempts so far; records when it
/// ran.
#[derive(Clone, Default)]
pub struct Failing {
    pub started: Arc<Mutex<HashMap<Uuid, Vec<Instant>>>>,
}

#[async_trait::async_trait]
impl JobHandler for Failing {
    fn kind(&self) -> &'static str {
        "test.fail"
    }

    type Payload = Value;

    async fn run(&self, ctx: &JobContext, payload: Value) -> Result<Outcome, JobError> {
        let count = {
            let mut started = self.started.lock().unwrap();
            let runs = started.entry(ctx.id).or_default();
            runs.push(Instant::now());
            runs.len() as u64
        };
        if payload["snooze"].as_u64().unwrap_or(0) >= count {
            return Ok(Outcome::RetryAt(ctx.now()));
        }
        if payload["succeed"].as_bool().unwrap_or(false) {
            return Ok(Outcome::Done);
        }
        if payload["permanent"].as_bool().unwrap_or(false) {
            return Err(JobError::Permanent("bad payload".into()));
        }
        Err(JobError::Retry(format!("boom {}", ctx.attempt)))
    }
}

/// `test.sleep`: sleeps `payload.ms`, or until shutdown starts when `payload.checkpoint`
/// (then asks to run again now).
#[derive(Clone, Default)]
pub struct Sleeper;

#[async_trait::async_trait]
impl JobHandler for Sleeper {
    fn kind(&self) -> &'static str {
        "test.sleep"
    }

    type Payload = Value;

    async fn run(&self, ctx: &JobContext, payload: Value) -> Result<Outcome, JobError> {
        let ms = payload["ms"].as_u64().unwrap_or(0);
        if payload["checkpoint"].as_bool().unwrap_or(false) {
            tokio::select! {
                () = ctx.draining() => return Ok(Outcome::RetryAt(ctx.now())),
                () = tokio::time::sleep(Duration::from_millis(ms)) => {}
            }
        } else {
            tokio::time::sleep(Duration::from_millis(ms)).await;
        }
        Ok(Outcome::Done)
    }
}

/// `test.steps`: `payload.steps` steps of `payload.step_ms` each, resumable: a step's marker
/// file is written (fsynced) when it ends and a rerun skips marked steps. Appends
/// `start <step> attempt <n>` to `log` before each step and `complete attempt <n>` to
/// `completions` at the end, both fsynced, so what every process did survives SIGKILL.
#[derive(Clone)]
pub struct Steps {
    pub dir: PathBuf,
}

pub fn append_durably(path: &std::path::Path, line: &str) {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    f.write_all(line.as_bytes()).unwrap();
    f.sync_all().unwrap();
}

#[async_trait::async_trait]
impl JobHandler for Steps {
    fn kind(&self) -> &'static str {
        "test.steps"
    }

    type Payload = Value;

    async fn run(&self, ctx: &JobContext, payload: Value) -> Result<Outcome, JobError> {
        let steps = payload["steps"].as_u64().unwrap_or(1);
        let step_ms = payload["step_ms"].as_u64().unwrap_or(100);
        for step in 0..steps {
            let marker = self.dir.join(format!("step-{step}"));
            if marker.exists() {
                continue;
            }
            let line = format!("start {step} attempt {}\n", ctx.attempt);
            append_durably(&self.dir.join("log"), &line);
            tokio::time::sleep(Duration::from_millis(step_ms)).await;
            append_durably(&marker, "done\n");
        }
        let line = format!("complete attempt {}\n", ctx.attempt);
        append_durably(&self.dir.join("completions"), &line);
        Ok(Outcome::Done)
    }
}
