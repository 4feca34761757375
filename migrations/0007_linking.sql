-- Linking (issue 14): connections become first-class records. Portable SQL, like 0001-0005.
--
-- `credentials` holds the provider credentials (tokens, passwords) sealed with the deployment's
-- secret key (src/secret.rs), never in clear; `scopes_granted` / `scopes_denied` are JSON arrays
-- of scope names, NULL when the connection was made without an OAuth grant (push, demo);
-- `error_details` is the JSON `{error_type, error_message, occurred_at}` of an `error`
-- connection.
ALTER TABLE connections ADD COLUMN provider_user_id TEXT;
ALTER TABLE connections ADD COLUMN scopes_granted TEXT;
ALTER TABLE connections ADD COLUMN scopes_denied TEXT;
ALTER TABLE connections ADD COLUMN credentials TEXT;
ALTER TABLE connections ADD COLUMN error_details TEXT;
ALTER TABLE connections ADD COLUMN updated_at TEXT;

-- Link tokens (POST /v2/link/token): only the SHA-256 of the token is kept. `options` is the
-- JSON of the request's options (provider, redirect_url, filter_on_providers, on_error,
-- on_close). A token is consumed by the first successful connection.
CREATE TABLE link_tokens (
    token_hash   TEXT PRIMARY KEY,
    team_id      TEXT NOT NULL,
    user_id      TEXT NOT NULL,
    options      TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    expires_at   TEXT NOT NULL,
    consumed_at  TEXT
);

-- Link codes (POST /v2/link/code/create), kept hashed, single use; and the push-only
-- credentials their exchange answers (also hashed).
CREATE TABLE link_codes (
    code_hash    TEXT PRIMARY KEY,
    team_id      TEXT NOT NULL,
    user_id      TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    expires_at   TEXT NOT NULL,
    used_at      TEXT
);

CREATE TABLE link_code_tokens (
    token_hash   TEXT PRIMARY KEY,
    team_id      TEXT NOT NULL,
    user_id      TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    expires_at   TEXT NOT NULL
);

-- OAuth authorisations in flight: the `state` sent to the provider is `<id>.<signature>`, the
-- signature binding id, link token and provider; the PKCE verifier never leaves the server.
CREATE TABLE link_oauth_states (
    id             TEXT PRIMARY KEY,
    token_hash     TEXT NOT NULL,
    provider       TEXT NOT NULL,
    pkce_verifier  TEXT NOT NULL,
    created_at     TEXT NOT NULL,
    used_at        TEXT
);

-- A team's own OAuth application for a provider (PUT /v2/team/provider/{provider}/credentials);
-- `client_secret` sealed like connection credentials. OAuth links of the team use it instead
-- of the deployment's (whose endpoints stay).
CREATE TABLE team_provider_credentials (
    team_id        TEXT NOT NULL,
    provider       TEXT NOT NULL,
    client_id      TEXT NOT NULL,
    client_secret  TEXT NOT NULL,
    redirect_uri   TEXT,
    created_at     TEXT NOT NULL,
    updated_at     TEXT NOT NULL,
    PRIMARY KEY (team_id, provider)
);
