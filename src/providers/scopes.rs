//! OAuth scopes of the catalogue's OAuth providers, and what a grant makes available
//! (`linking.md` §Connections).
//!
//! Every OAuth provider of the catalogue asks for one scope per resource it supplies, named
//! after the resource; `profile` is required (a grant without it is refused with
//! `required_scopes_not_granted`), the others are optional. A resource needs its own scope.
//! Providers connected otherwise (SDK, app, password, e-mail) have no scopes.

use super::{AuthType, Provider};

/// A provider's scopes, split by whether a grant must include them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProviderScopes {
    /// Scopes every grant must include.
    pub required: Vec<&'static str>,
    /// Scopes a user may decline.
    pub optional: Vec<&'static str>,
}

/// The scope every OAuth grant must include.
pub const REQUIRED_SCOPE: &str = "profile";

/// Whether the provider connects through an OAuth grant.
pub fn is_oauth(provider: &Provider) -> bool {
    matches!(provider.auth_type, AuthType::Oauth | AuthType::TeamOauth)
}

/// The scopes a provider asks for (none unless it connects through OAuth).
pub fn scopes(provider: &Provider) -> ProviderScopes {
    if !is_oauth(provider) {
        return ProviderScopes::default();
    }
    let mut scopes = ProviderScopes {
        required: vec![REQUIRED_SCOPE],
        optional: Vec::new(),
    };
    for resource in provider.supported_resources {
        if *resource != REQUIRED_SCOPE {
            scopes.optional.push(resource);
        }
    }
    scopes
}

/// The scopes a resource of the provider needs (none for providers without scopes).
pub fn resource_scopes(provider: &Provider, resource: &str) -> Vec<&'static str> {
    if !is_oauth(provider) {
        return Vec::new();
    }
    provider
        .supported_resources
        .iter()
        .copied()
        .filter(|r| *r == resource)
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::providers::provider;

    #[test]
    fn oauth_providers_require_profile_and_offer_one_scope_per_resource() {
        let oura = provider("oura").unwrap();
        let s = scopes(oura);
        assert_eq!(s.required, ["profile"]);
        assert!(s.optional.contains(&"sleep") && !s.optional.contains(&"profile"));
        assert_eq!(resource_scopes(oura, "sleep"), ["sleep"]);
        let sdk = provider("apple_health_kit").unwrap();
        assert_eq!(scopes(sdk), ProviderScopes::default());
        assert!(resource_scopes(sdk, "sleep").is_empty());
    }
}
