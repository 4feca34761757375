-- Historical pulls from providers (src/sync/pull.rs). Portable SQL, like 0001-0007.
--
-- One row per connection's historical pull: its window, and how far it has got. Everything
-- before `done_until` is stored: a chunk's data is written to the health store, then this row
-- moves forward, so a crash in between pulls that chunk again (replacement by record id makes
-- that harmless). `resources` lists, as a JSON array, the resources that received records, for
-- the `historical.data.<resource>.created` events sent when the pull completes.
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
    PRIMARY KEY (user_id, provider)
);
