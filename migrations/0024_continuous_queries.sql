-- Continuous queries (src/continuous/, `analytics.md` §4). Portable SQL, like 0001: runs
-- unchanged on SQLite and PostgreSQL; instants are RFC 3339 UTC strings with microseconds.
--
-- continuous_queries: a team's registered queries. `definition` is the JSON of what the team
-- gave (query, query_config, scheduling and export preferences); `result_table_schema` and
-- `resource_dependencies` are derived from it once, at creation. A slug is unique among the
-- team's active queries (an archived query frees its slug).
CREATE TABLE continuous_queries (
    id                     TEXT PRIMARY KEY,
    team_id                TEXT NOT NULL REFERENCES teams (id),
    slug                   TEXT NOT NULL,
    title                  TEXT NOT NULL,
    status                 TEXT NOT NULL,
    definition             TEXT NOT NULL,
    result_table_schema    TEXT NOT NULL,
    resource_dependencies  TEXT NOT NULL,
    created_at             TEXT NOT NULL,
    updated_at             TEXT NOT NULL
);

CREATE UNIQUE INDEX continuous_queries_active_slug
    ON continuous_queries (team_id, slug) WHERE status = 'active';
CREATE INDEX continuous_queries_by_team ON continuous_queries (team_id, created_at, id);

-- One query's state for one user. `result_file` names the user's current result table in the
-- health store (`team=/user=/_cq/<query>/<file>`, NULL before the first evaluation); `version`
-- counts evaluations that changed it and fences a commit against a concurrent one.
-- Changes not yet evaluated: the UTC range of changed data `dirty_start..=dirty_end`
-- (microseconds), or `dirty_all` (evaluate everything: a new query, a deletion); `dirty_seq`
-- increments with every change, so an evaluation clears only the changes it saw.
CREATE TABLE continuous_query_users (
    query_id           TEXT NOT NULL,
    user_id            TEXT NOT NULL,
    team_id            TEXT NOT NULL,
    version            BIGINT NOT NULL,
    result_file        TEXT,
    dirty_start        BIGINT,
    dirty_end          BIGINT,
    dirty_all          BIGINT NOT NULL,
    dirty_seq          BIGINT NOT NULL,
    last_evaluated_at  TEXT,
    PRIMARY KEY (query_id, user_id)
);

CREATE INDEX continuous_query_users_by_user ON continuous_query_users (user_id);

-- Task history: one row per evaluation (GET .../task_history), newest first by `seq`.
-- status: scheduled -> started -> completed | error | skipped.
CREATE TABLE continuous_query_tasks (
    id             TEXT PRIMARY KEY,
    query_id       TEXT NOT NULL,
    user_id        TEXT NOT NULL,
    team_id        TEXT NOT NULL,
    seq            BIGINT NOT NULL,
    status         TEXT NOT NULL,
    scheduled_at   TEXT NOT NULL,
    started_at     TEXT,
    ended_at       TEXT,
    error_details  TEXT
);

CREATE INDEX continuous_query_tasks_by_user ON continuous_query_tasks (query_id, user_id, seq);
