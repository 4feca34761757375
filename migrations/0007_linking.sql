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
