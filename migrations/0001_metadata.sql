-- Metadata of wearhouse. Portable SQL: runs unchanged on SQLite and PostgreSQL.
-- Ids are lowercase hyphenated uuids and instants RFC 3339 UTC strings with microseconds
-- ("2025-01-02T03:04:05.000006Z"), so both sort correctly as text.

CREATE TABLE teams (
    id          TEXT PRIMARY KEY,
    name        TEXT NOT NULL,
    created_at  TEXT NOT NULL
);

CREATE TABLE api_keys (
    id          TEXT PRIMARY KEY,
    team_id     TEXT NOT NULL REFERENCES teams (id),
    key_hash    TEXT NOT NULL UNIQUE,
    label       TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    revoked_at  TEXT
);

CREATE TABLE users (
    id                              TEXT PRIMARY KEY,
    team_id                         TEXT NOT NULL REFERENCES teams (id),
    client_user_id                  TEXT NOT NULL,
    created_at                      TEXT NOT NULL,
    fallback_time_zone              TEXT,
    fallback_time_zone_updated_at   TEXT,
    fallback_birth_date             TEXT,
    fallback_birth_date_updated_at  TEXT,
    ingestion_start                 TEXT,
    ingestion_end                   TEXT,
    UNIQUE (team_id, client_user_id)
);

CREATE INDEX users_by_team ON users (team_id, created_at, id);

CREATE TABLE user_info (
    user_id     TEXT PRIMARY KEY REFERENCES users (id),
    details     TEXT NOT NULL,
    updated_at  TEXT NOT NULL
);

CREATE TABLE connections (
    user_id     TEXT NOT NULL REFERENCES users (id),
    provider    TEXT NOT NULL,
    status      TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    PRIMARY KEY (user_id, provider)
);

CREATE TABLE team_priorities (
    team_id     TEXT NOT NULL REFERENCES teams (id),
    data_type   TEXT NOT NULL,
    priorities  TEXT NOT NULL,
    updated_at  TEXT NOT NULL,
    PRIMARY KEY (team_id, data_type)
);
