-- Password sign-ins made with a link token: a token allows a few, so the link page and the
-- link API cannot be used to try password after password against a provider.
ALTER TABLE link_tokens ADD COLUMN sign_ins INTEGER NOT NULL DEFAULT 0;
