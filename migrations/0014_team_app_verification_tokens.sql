-- A team's own OAuth application may carry the verification token of its own change-notification
-- subscription (Oura): kept as its SHA-256, so the subscription handshake can recognise it and
-- the database never holds it in clear.
ALTER TABLE team_provider_credentials ADD COLUMN verification_token_hash TEXT;
