//! Which connectors, password sign-ins and e-mail links this process has, by provider slug,
//! and where they point.
//!
//! Adding a provider is adding its module and one line in [`Connectors::from_env`] and
//! [`SLUGS`]. Base URLs come from `WEARHOUSE_PROVIDER_<SLUG>_API_URL`, defaulting to the
//! provider's real host; tests build their own set pointing at local fakes
//! ([`Connectors::with`]).

use std::collections::HashMap;
use std::sync::Arc;

use super::access::{EmailLink, PasswordLogin};
use super::connectors::{
    dexcom, fitbit, garmin, google_health, libre, oura, peloton, polar, strava, ultrahuman, whoop,
    withings,
};
use super::{Connector, SyncError};

/// Providers with a connector: a link to one of them starts a historical pull.
pub const SLUGS: &[&str] = &[
    "oura",
    "dexcom_v3",
    "fitbit",
    "withings",
    "peloton",
    "freestyle_libre",
    "abbott_libreview",
    "whoop_v2",
    "google_health",
    "strava",
    polar::SLUG,
    garmin::SLUG,
    ultrahuman::SLUG,
];

/// Whether `provider` has a connector (its links start pulls).
pub fn has_connector(provider: &str) -> bool {
    SLUGS.contains(&provider)
}

/// The OAuth endpoints of the providers with a connector that link by OAuth, at the
/// providers' own hosts: (slug, authorisation page, token endpoint). A team's own application
/// (`PUT /v2/team/provider/{provider}/credentials`) uses these when the deployment configures no
/// application of its own for the provider, so a team's credentials alone connect it; the
/// deployment's `--oauth-apps` entry, when present, replaces them (and tests point
/// `link::LinkConfig::oauth_endpoints` at their fakes).
pub const OAUTH_ENDPOINTS: &[(&str, &str, &str)] = &[
    ("oura", oura::OAUTH_AUTHORIZE_URL, oura::OAUTH_TOKEN_URL),
    (
        "dexcom_v3",
        dexcom::OAUTH_AUTHORIZE_URL,
        dexcom::OAUTH_TOKEN_URL,
    ),
    (
        "fitbit",
        fitbit::OAUTH_AUTHORIZE_URL,
        fitbit::OAUTH_TOKEN_URL,
    ),
    (
        "withings",
        withings::OAUTH_AUTHORIZE_URL,
        withings::OAUTH_TOKEN_URL,
    ),
    (
        "whoop_v2",
        whoop::OAUTH_AUTHORIZE_URL,
        whoop::OAUTH_TOKEN_URL,
    ),
    (
        google_health::SLUG,
        google_health::access::OAUTH_AUTHORIZE_URL,
        google_health::access::OAUTH_TOKEN_URL,
    ),
    (
        "strava",
        strava::OAUTH_AUTHORIZE_URL,
        strava::OAUTH_TOKEN_URL,
    ),
    (
        polar::SLUG,
        polar::OAUTH_AUTHORIZE_URL,
        polar::OAUTH_TOKEN_URL,
    ),
    (
        garmin::SLUG,
        garmin::OAUTH_AUTHORIZE_URL,
        garmin::OAUTH_TOKEN_URL,
    ),
    (
        ultrahuman::SLUG,
        ultrahuman::OAUTH_AUTHORIZE_URL,
        ultrahuman::OAUTH_TOKEN_URL,
    ),
];

/// The connectors by provider slug.
#[derive(Clone, Default)]
pub struct Connectors(HashMap<&'static str, Arc<dyn Connector>>);

impl std::fmt::Debug for Connectors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut slugs: Vec<_> = self.0.keys().collect();
        slugs.sort();
        f.debug_tuple("Connectors").field(&slugs).finish()
    }
}

impl Connectors {
    /// Every connector, at the URL its environment variable names, else the provider's host.
    pub fn from_env() -> Result<Connectors, SyncError> {
        let url = |var: &str, default: &str| std::env::var(var).unwrap_or_else(|_| default.into());
        let oura = oura::Oura::new(&url(oura::API_URL_ENV, oura::DEFAULT_API_URL))?;
        let dexcom = dexcom::Dexcom::new(&url(dexcom::API_URL_ENV, dexcom::DEFAULT_API_URL))?;
        let fitbit = fitbit::Fitbit::new(&url(fitbit::API_URL_ENV, fitbit::DEFAULT_API_URL))?;
        let withings =
            withings::Withings::new(&url(withings::API_URL_ENV, withings::DEFAULT_API_URL))?;
        let peloton = peloton::Peloton::new(&url(peloton::API_URL_ENV, peloton::DEFAULT_API_URL))?;
        let whoop = whoop::Whoop::new(&url(whoop::API_URL_ENV, whoop::DEFAULT_API_URL))?;
        let google_health = google_health::GoogleHealth::new(&url(
            google_health::API_URL_ENV,
            google_health::DEFAULT_API_URL,
        ))?;
        let strava = strava::Strava::new(&url(strava::API_URL_ENV, strava::DEFAULT_API_URL))?;
        let polar = polar::Polar::new(&url(polar::API_URL_ENV, polar::DEFAULT_API_URL))?;
        let garmin = garmin::Garmin::new(&garmin::api_url())?;
        let ultrahuman = ultrahuman::Ultrahuman::new(&url(
            ultrahuman::API_URL_ENV,
            ultrahuman::DEFAULT_API_URL,
        ))?;
        let libre = libre::Libre::new(libre::access::Hosts::from_env())?;
        let libreview = libre::Libre::libreview(libre::libreview::hosts_from_env())?;
        Ok(Connectors::default()
            .with(Arc::new(libre))
            .with(Arc::new(libreview))
            .with(Arc::new(oura))
            .with(Arc::new(dexcom))
            .with(Arc::new(fitbit))
            .with(Arc::new(withings))
            .with(Arc::new(peloton))
            .with(Arc::new(whoop))
            .with(Arc::new(google_health))
            .with(Arc::new(strava))
            .with(Arc::new(polar))
            .with(Arc::new(garmin))
            .with(Arc::new(ultrahuman)))
    }

    /// The same set with `connector` added (replacing one of the same provider).
    pub fn with(mut self, connector: Arc<dyn Connector>) -> Connectors {
        self.0.insert(connector.provider(), connector);
        self
    }

    /// The provider's connector.
    pub fn get(&self, provider: &str) -> Option<&Arc<dyn Connector>> {
        self.0.get(provider)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn every_slug_has_a_connector_and_a_catalogue_entry_and_nothing_else_does() {
        let all = Connectors::from_env().unwrap();
        for slug in SLUGS {
            assert_eq!(all.get(slug).map(|c| c.provider()), Some(*slug));
            assert!(crate::providers::provider(slug).is_some(), "{slug}");
        }
        assert_eq!(all.0.len(), SLUGS.len());
        assert!(!has_connector("apple_health_kit"));
    }

    #[test]
    fn every_oauth_provider_with_a_connector_has_its_endpoints_and_only_those_do() {
        let oauth = |slug: &str| {
            crate::providers::provider(slug).is_some_and(crate::providers::scopes::is_oauth)
        };
        for slug in SLUGS.iter().filter(|s| oauth(s)) {
            assert!(
                OAUTH_ENDPOINTS.iter().any(|(s, _, _)| s == slug),
                "{slug} has no OAuth endpoints"
            );
        }
        for (slug, authorize, token) in OAUTH_ENDPOINTS {
            assert!(has_connector(slug) && oauth(slug), "{slug}");
            assert!(authorize.starts_with("https://") && token.starts_with("https://"));
        }
    }
}

/// The password sign-ins of this process by provider slug.
#[derive(Clone, Default)]
pub struct PasswordLogins(HashMap<&'static str, Arc<dyn PasswordLogin>>);

impl std::fmt::Debug for PasswordLogins {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut slugs: Vec<_> = self.0.keys().collect();
        slugs.sort();
        f.debug_tuple("PasswordLogins").field(&slugs).finish()
    }
}

impl PasswordLogins {
    /// Every password sign-in, at the URL its environment variable names, else the provider's
    /// own host.
    pub fn from_env() -> Result<PasswordLogins, reqwest::Error> {
        let peloton = peloton::access::Peloton::from_env()?;
        let libre = libre::access::Libre::new(libre::access::Hosts::from_env())?;
        let libreview = libre::libreview::LibreView::new(libre::libreview::hosts_from_env())?;
        Ok(PasswordLogins::default()
            .with(Arc::new(peloton))
            .with(Arc::new(libre))
            .with(Arc::new(libreview)))
    }

    /// The same set with `login` added (replacing one of the same provider).
    pub fn with(mut self, login: Arc<dyn PasswordLogin>) -> PasswordLogins {
        self.0.insert(login.provider(), login);
        self
    }

    /// The provider's sign-in.
    pub fn get(&self, provider: &str) -> Option<&Arc<dyn PasswordLogin>> {
        self.0.get(provider)
    }
}

/// The e-mail links of this process by provider slug.
#[derive(Clone, Default)]
pub struct EmailLinks(HashMap<&'static str, Arc<dyn EmailLink>>);

impl std::fmt::Debug for EmailLinks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut slugs: Vec<_> = self.0.keys().collect();
        slugs.sort();
        f.debug_tuple("EmailLinks").field(&slugs).finish()
    }
}

impl EmailLinks {
    /// Every e-mail link, at the URL its environment variable names, else the provider's host.
    pub fn from_env() -> Result<EmailLinks, reqwest::Error> {
        let llu = libre::share::LibreLinkUp::new(libre::access::Hosts::from_env())?;
        Ok(EmailLinks::default().with(Arc::new(llu)))
    }

    /// The same set with `link` added (replacing one of the same provider).
    pub fn with(mut self, link: Arc<dyn EmailLink>) -> EmailLinks {
        self.0.insert(link.provider(), link);
        self
    }

    /// The provider's e-mail link.
    pub fn get(&self, provider: &str) -> Option<&Arc<dyn EmailLink>> {
        self.0.get(provider)
    }
}
