//! The job queue's values: states, new and stored jobs, what an enqueue did, the fence of a
//! claimed run, how a run ends, and listing filters.

use chrono::{DateTime, Utc};
use serde_json::Value;
use uuid::Uuid;

/// Where a job is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum JobState {
    /// Waiting for its `run_at`.
    Pending,
    /// Claimed by a runner holding a lease.
    Running,
    /// Finished successfully (terminal).
    Succeeded,
    /// Gave up: a permanent error or the last attempt failed (terminal; `last_error` says why).
    Failed,
}

impl JobState {
    /// Every state, in life order.
    pub const ALL: [JobState; 4] = [
        JobState::Pending,
        JobState::Running,
        JobState::Succeeded,
        JobState::Failed,
    ];

    /// The stored and rendered name.
    pub fn as_str(self) -> &'static str {
        match self {
            JobState::Pending => "pending",
            JobState::Running => "running",
            JobState::Succeeded => "succeeded",
            JobState::Failed => "failed",
        }
    }
}

impl std::str::FromStr for JobState {
    type Err = ();

    fn from_str(s: &str) -> Result<Self, ()> {
        JobState::ALL
            .into_iter()
            .find(|state| state.as_str() == s)
            .ok_or(())
    }
}

/// A job to enqueue.
#[derive(Debug, Clone, PartialEq)]
pub struct NewJob {
    /// The handler that runs it (`JobHandler::kind`).
    pub kind: String,
    /// The team it works for; `None` for system jobs (compaction), which no team sees.
    pub team_id: Option<Uuid>,
    /// The handler's input. Reference rows by id; never put secrets here (teams see payloads).
    pub payload: Value,
    /// Not before this instant.
    pub run_at: DateTime<Utc>,
    /// At most one unfinished job per key (see [`enqueue_job`](super::enqueue_job)).
    pub unique_key: Option<String>,
    /// Claims allowed before the job fails for good (at least 1).
    pub max_attempts: u32,
}

/// A stored job.
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    /// Its id.
    pub id: Uuid,
    /// Owning team (`None`: a system job).
    pub team_id: Option<Uuid>,
    /// Handler name.
    pub kind: String,
    /// Handler input.
    pub payload: Value,
    /// Uniqueness key, if any.
    pub unique_key: Option<String>,
    /// Current state.
    pub state: JobState,
    /// When it is (or was) due.
    pub run_at: DateTime<Utc>,
    /// Claims so far (a run in progress counts).
    pub attempts: u32,
    /// Claims allowed.
    pub max_attempts: u32,
    /// The runner holding the lease, while running.
    pub lease_owner: Option<String>,
    /// When the lease ends unless renewed, while running.
    pub lease_expires_at: Option<DateTime<Utc>>,
    /// A run requested while this one was running.
    pub rerun_at: Option<DateTime<Utc>>,
    /// The error of the last failed attempt (or the lease takeover that ended it).
    pub last_error: Option<String>,
    /// Creation time.
    pub created_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
    /// When it reached a terminal state.
    pub finished_at: Option<DateTime<Utc>>,
    /// The id of the request that enqueued it (`x-request-id`), if a request did.
    pub request_id: Option<String>,
}

/// What [`enqueue_job`](super::enqueue_job) did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Enqueued {
    /// A new job.
    Created(Uuid),
    /// An unfinished job with the same unique key already covers the request: a pending one (its
    /// `run_at` moved earlier if the request was earlier) or a running one (marked to run again).
    Existing(Uuid),
}

impl Enqueued {
    /// The id of the job that will do the work.
    pub fn id(self) -> Uuid {
        match self {
            Enqueued::Created(id) | Enqueued::Existing(id) => id,
        }
    }
}

/// Identifies one claimed run of a job; every update of the run must present it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fence {
    /// The job.
    pub id: Uuid,
    /// The runner that claimed it.
    pub owner: String,
    /// The attempt number the claim gave.
    pub attempt: u32,
}

impl Job {
    /// The fence of this claimed run (meaningful on a job returned by [`claim_jobs`](super::claim_jobs)).
    pub fn fence(&self) -> Fence {
        Fence {
            id: self.id,
            owner: self.lease_owner.clone().unwrap_or_default(),
            attempt: self.attempts,
        }
    }
}

/// How a claimed run ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finish {
    /// Done: `succeeded`, or back to `pending` when a rerun was requested meanwhile.
    Succeeded,
    /// Back to `pending` at `at`. `error` replaces `last_error` when given; `count_attempt`
    /// false gives the attempt back (a snooze asked by the handler, a release at shutdown).
    Pending {
        /// When to run again.
        at: DateTime<Utc>,
        /// The failure that caused it, if any.
        error: Option<String>,
        /// Whether this run counts against `max_attempts`.
        count_attempt: bool,
    },
    /// Terminal failure with its error.
    Failed {
        /// Why.
        error: String,
    },
}

/// Which jobs a listing shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobFilter {
    /// `Some(team)`: that team's jobs only; `None`: system jobs (no team) only.
    pub team: Option<Uuid>,
    /// Only this state.
    pub state: Option<JobState>,
    /// Only this kind.
    pub kind: Option<String>,
}
