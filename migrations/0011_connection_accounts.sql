-- Provider change notifications name the user by the provider's own account id: find the
-- connections of an account without scanning every connection of the provider.
CREATE INDEX IF NOT EXISTS connections_by_provider_account
    ON connections (provider, provider_user_id);
