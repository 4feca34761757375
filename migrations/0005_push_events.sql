-- Announcing pushes (src/data/announce.rs) and delivery attempts. Portable SQL, like 0001-0003.
--
-- A push no longer writes its events before its data (0003's holds): it writes one small
-- `push_events` row, its plan (what each record of the push is: created or updated, found by
-- comparing with what was stored), then its data, then marks the row released in the
-- connection's transaction. The `events.push` job of the user turns released rows into events
-- in push order, off the push's path; a row a crash left unreleased is resolved after
-- `expires_at` by looking for the push's records in the store. Numbered 0005 so it sorts after
-- whatever 0004 a branch in flight adds.
CREATE TABLE push_events (
    id           TEXT PRIMARY KEY,
    team_id      TEXT NOT NULL,
    user_id      TEXT NOT NULL,
    plan         TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    expires_at   TEXT NOT NULL,
    released_at  TEXT
);

CREATE INDEX push_events_by_user ON push_events (user_id, created_at, id);

-- Holds are gone: every stored event is an ordinary, visible one.
DROP INDEX events_held;
DELETE FROM events WHERE hold_token IS NOT NULL;
ALTER TABLE events DROP COLUMN hold_token;
ALTER TABLE events DROP COLUMN hold_expires_at;

-- Every attempt of a delivery (GET /v2/team/webhooks/{id}/deliveries shows them with each
-- delivery); the delivery row keeps the latest outcome. Removed with its delivery.
CREATE TABLE webhook_attempts (
    id            TEXT PRIMARY KEY,
    delivery_id   TEXT NOT NULL,
    attempted_at  TEXT NOT NULL,
    status_code   BIGINT,
    duration_ms   BIGINT NOT NULL,
    error         TEXT
);

CREATE INDEX webhook_attempts_by_delivery ON webhook_attempts (delivery_id, attempted_at, id);
