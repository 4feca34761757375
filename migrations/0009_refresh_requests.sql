-- `POST /v2/user/refresh` requests (src/sync/refresh.rs), for its limit of 8 per user per hour
-- (linking.md). Rows older than an hour are removed as new ones are written. Portable SQL.
CREATE TABLE refresh_requests (
    id            TEXT PRIMARY KEY,
    user_id       TEXT NOT NULL,
    requested_at  TEXT NOT NULL
);

CREATE INDEX refresh_requests_by_user ON refresh_requests (user_id, requested_at);
