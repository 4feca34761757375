-- Pulls from providers (src/sync/pull.rs). Portable SQL, like 0001-0007.
--
-- One row per connection with a connector. Its historical pull: its window, and how far it has
-- got. Everything
-- before `done_until` is stored: a chunk's data is written to the health store, then this row
-- moves forward, so a crash in between pulls that chunk again (replacement by record id makes
-- that harmless). `resources` lists, as a JSON array, the resources that received records, for
-- the `historical.data.<resource>.created` events sent when the pull completes. Its incremental
-- pulls (every 30 minutes, and on `POST /v2/user/refresh`): `synced_until`, where the next one
-- starts (less an overlap); `synced_at` and `synced_resources`, the last one's end and what it
-- brought; `failed_at` and `last_error`, the last failure, which `POST /v2/user/refresh` reports.
CREATE TABLE sync_pulls (
    user_id       TEXT NOT NULL,
    provider      TEXT NOT NULL,
    team_id       TEXT NOT NULL,
    window_start  TEXT NOT NULL,
    window_end    TEXT NOT NULL,
    done_until    TEXT NOT NULL,
    resources     TEXT NOT NULL,
    created_at    TEXT NOT NULL,
    completed_at  TEXT,
    synced_until  TEXT NOT NULL,
    synced_at     TEXT,
    synced_resources TEXT NOT NULL DEFAULT '[]',
    failed_at     TEXT,
    last_error    TEXT,
    PRIMARY KEY (user_id, provider)
);
