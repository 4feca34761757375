-- Bulk imports of existing OAuth connections (POST /v2/link/bulk_import, src/link/bulk_import).
-- Portable SQL, like 0001-0009.
--
-- One `bulk_import_ops` row per submission, worked by one `link.bulk_import` job (`job_id`);
-- `status` is `in_progress` until that job ends it (`success`, `failure` or `aborted`), and
-- `processed` / `failed` count the recipes handled so far, changed in the same transaction as
-- each recipe's outcome.
CREATE TABLE bulk_import_ops (
    id          TEXT PRIMARY KEY,
    team_id     TEXT NOT NULL,
    provider    TEXT NOT NULL,
    job_id      TEXT NOT NULL,
    total       BIGINT NOT NULL,
    processed   BIGINT NOT NULL,
    failed      BIGINT NOT NULL,
    status      TEXT NOT NULL,
    started_at  TEXT NOT NULL,
    ended_at    TEXT
);

-- GET /v2/link/bulk_op: a team's operations, newest first.
CREATE INDEX bulk_import_ops_by_team ON bulk_import_ops (team_id, started_at, id);

-- One row per submitted recipe, in submission order (`position`). `credentials` holds its
-- tokens and their expiry sealed with the deployment's secret key (src/link/credentials.rs),
-- never in clear, bound to this row; it is cleared once the recipe is handled. `outcome` is
-- NULL while the recipe waits, then `imported` or `failed` (`reason` says why).
CREATE TABLE bulk_import_recipes (
    op_id         TEXT NOT NULL,
    position      BIGINT NOT NULL,
    user_id       TEXT NOT NULL,
    provider_id   TEXT NOT NULL,
    oauth_scopes  TEXT,
    credentials   TEXT,
    outcome       TEXT,
    reason        TEXT,
    processed_at  TEXT,
    PRIMARY KEY (op_id, position)
);
