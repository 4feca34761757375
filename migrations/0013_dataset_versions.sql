-- One version per dataset of a user, bumped after every change to its segments that another
-- process must see (a write, a push, a user deletion). Processes sharing a bucket check it
-- before answering from their read cache (src/store/health/shared.rs; spec/scale-out.md).
CREATE TABLE dataset_versions (
    team_id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    dataset TEXT NOT NULL,
    version BIGINT NOT NULL,
    PRIMARY KEY (team_id, user_id, dataset)
);
