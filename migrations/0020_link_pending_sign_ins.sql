-- Password sign-ins waiting for their second factor (issue 38): the provider asked for a code,
-- the user has not given it yet. One per link token (a new sign-in with the token replaces it).
-- `state` is the provider's half-finished sign-in (its temporary ticket, the username and the
-- password) sealed with the deployment's secret key like connection credentials, never in
-- clear; `tries` counts wrong codes, `resends` new codes asked for; past `expires_at` the row
-- is useless and is deleted when next read.
CREATE TABLE link_pending_sign_ins (
    token_hash   TEXT PRIMARY KEY,
    provider     TEXT NOT NULL,
    state        TEXT NOT NULL,
    tries        BIGINT NOT NULL,
    resends      BIGINT NOT NULL,
    created_at   TEXT NOT NULL,
    expires_at   TEXT NOT NULL
);
