-- The durable job queue (src/jobs/). Portable SQL, like 0001: runs unchanged on SQLite and
-- PostgreSQL; instants are RFC 3339 UTC strings with microseconds, so they compare as text.
--
-- state: pending -> running -> succeeded | failed (or back to pending for a retry).
-- A running job is leased: lease_owner names the runner, lease_expires_at ends the lease unless
-- the runner renews it; a claim increments attempts, so (id, lease_owner, attempts) fences every
-- later update of that run. rerun_at: a request to run the job again, made while it was
-- running (unique jobs only); the job goes back to pending at that time when this run ends.

CREATE TABLE jobs (
    id                TEXT PRIMARY KEY,
    team_id           TEXT REFERENCES teams (id),
    kind              TEXT NOT NULL,
    payload           TEXT NOT NULL,
    unique_key        TEXT,
    state             TEXT NOT NULL,
    run_at            TEXT NOT NULL,
    attempts          BIGINT NOT NULL,
    max_attempts      BIGINT NOT NULL,
    lease_owner       TEXT,
    lease_expires_at  TEXT,
    rerun_at          TEXT,
    last_error        TEXT,
    created_at        TEXT NOT NULL,
    updated_at        TEXT NOT NULL,
    finished_at       TEXT
);

-- What a runner claims: due pending jobs, and running jobs whose lease expired.
CREATE INDEX jobs_due ON jobs (state, run_at);
CREATE INDEX jobs_leases ON jobs (state, lease_expires_at);
-- GET /v2/team/jobs: a team's jobs, newest first.
CREATE INDEX jobs_by_team ON jobs (team_id, created_at);
-- At most one unfinished job per unique key.
CREATE UNIQUE INDEX jobs_unique_unfinished ON jobs (unique_key)
    WHERE state IN ('pending', 'running');
