-- Events and webhooks (src/events/). Portable SQL, like 0001 and 0002: runs unchanged on SQLite
-- and PostgreSQL; instants are RFC 3339 UTC strings with microseconds, so they compare as text.
--
-- events: the outbox and the stored event list (GET /v2/team/events). A row is written in the
-- transaction of the change that causes it; `body` is the exact envelope JSON delivered.
-- `ordinal` orders the events written by one transaction (they share `created_at`).
-- Events of health data are written before the data with a `hold_token` (invisible, not
-- delivered) and released once the data is durable; a hold left by a crash is resolved by
-- recovery after `hold_expires_at` (src/data/held.rs).
CREATE TABLE events (
    id               TEXT PRIMARY KEY,
    team_id          TEXT NOT NULL REFERENCES teams (id),
    user_id          TEXT,
    event_type       TEXT NOT NULL,
    body             TEXT NOT NULL,
    created_at       TEXT NOT NULL,
    ordinal          BIGINT NOT NULL,
    hold_token       TEXT,
    hold_expires_at  TEXT
);

CREATE INDEX events_by_team ON events (team_id, created_at, ordinal, id);
CREATE INDEX events_held ON events (hold_token, hold_expires_at);

-- A team's webhook endpoints. `event_types` is a JSON array of names and prefixes ending in
-- `*`, or NULL for every type. The previous secret keeps signing until
-- `previous_secret_expires_at` (rotation overlap). `failing_since`: the first failed attempt
-- of the current run of failures (NULL while healthy); `disabled_at` set after 5 days of it.
CREATE TABLE webhook_endpoints (
    id                          TEXT PRIMARY KEY,
    team_id                     TEXT NOT NULL REFERENCES teams (id),
    url                         TEXT NOT NULL,
    event_types                 TEXT,
    description                 TEXT,
    secret                      TEXT NOT NULL,
    previous_secret             TEXT,
    previous_secret_expires_at  TEXT,
    failing_since               TEXT,
    disabled_at                 TEXT,
    disabled_reason             TEXT,
    created_at                  TEXT NOT NULL,
    updated_at                  TEXT NOT NULL
);

CREATE INDEX webhook_endpoints_by_team ON webhook_endpoints (team_id, created_at, id);

-- One event to one endpoint. Deliveries of a stream (endpoint, user_key: the user id or '')
-- are sent in (created_at, ordinal, id) order by one `webhook.deliver` job per stream.
-- status: pending -> succeeded | failed. No foreign key on endpoint_id: a push fanning out
-- while its endpoint is deleted must not fail; the stream's job removes what such a race
-- leaves.
CREATE TABLE webhook_deliveries (
    id                TEXT PRIMARY KEY,
    endpoint_id       TEXT NOT NULL,
    event_id          TEXT NOT NULL REFERENCES events (id),
    user_key          TEXT NOT NULL,
    status            TEXT NOT NULL,
    attempts          BIGINT NOT NULL,
    next_attempt_at   TEXT,
    last_attempt_at   TEXT,
    last_status_code  BIGINT,
    last_duration_ms  BIGINT,
    last_error        TEXT,
    created_at        TEXT NOT NULL,
    ordinal           BIGINT NOT NULL
);

-- The head of a stream: its oldest pending delivery.
CREATE INDEX webhook_deliveries_stream
    ON webhook_deliveries (endpoint_id, user_key, status, created_at, ordinal, id);
-- GET /v2/team/webhooks/{id}/deliveries, newest first.
CREATE INDEX webhook_deliveries_by_endpoint ON webhook_deliveries (endpoint_id, created_at, id);
