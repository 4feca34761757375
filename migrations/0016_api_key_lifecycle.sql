-- Team API keys a team manages itself (src/keys.rs): several named keys per team, each with the
-- time it was last used, and rotation with an overlap period.
-- `label` stays the key's name. `hint` is the last four hex digits of the secret (NULL for keys
-- made before this migration, whose secret was never kept). `last_used_at` is refreshed at most
-- once a minute per key. `expires_at` is set only by a rotation: the key answers 401 from then
-- on, and `replaced_by` names the key that replaced it.
ALTER TABLE api_keys ADD COLUMN hint TEXT;
ALTER TABLE api_keys ADD COLUMN last_used_at TEXT;
ALTER TABLE api_keys ADD COLUMN expires_at TEXT;
ALTER TABLE api_keys ADD COLUMN replaced_by TEXT;

CREATE INDEX api_keys_by_team ON api_keys (team_id, created_at, id);
