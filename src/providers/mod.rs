//! The provider catalogue (`data-model.md` §Providers): every provider a user can be connected
//! to, what it supplies, and the default order in which overlapping providers are preferred.

mod catalogue;
mod resource;
pub mod scopes;

pub use catalogue::CATALOGUE;
pub use resource::Resource;

use serde::Serialize;

/// How a provider is connected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum AuthType {
    /// The user grants access through the provider's OAuth flow.
    Oauth,
    /// OAuth with the team's own application credential.
    TeamOauth,
    /// Data arrives from an on-device SDK.
    Sdk,
    /// The user types a username and password.
    Password,
    /// The user gives an e-mail address.
    Email,
    /// Data arrives from the team's own app (push API).
    App,
}

/// One catalogue entry.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Provider {
    /// Stable numeric id (the reference's `id` of a link provider); fixed once given.
    pub id: u32,
    /// Display name.
    pub name: &'static str,
    /// Stable identifier used everywhere else.
    pub slug: &'static str,
    /// One-sentence description.
    pub description: &'static str,
    /// Logo URL.
    pub logo: String,
    /// How the provider is connected.
    pub auth_type: AuthType,
    /// The resources it can supply.
    pub supported_resources: &'static [&'static str],
    /// The source type its data carries unless a record says otherwise.
    #[serde(skip)]
    pub default_source_type: &'static str,
    /// Whether connecting it in demo mode generates synthetic data.
    #[serde(skip)]
    pub demo: bool,
}

/// Looks a provider up by slug.
pub fn provider(slug: &str) -> Option<&'static Provider> {
    CATALOGUE.iter().find(|p| p.slug == slug)
}

/// The default provider priority, best first (`data-model.md`); every other slug ranks after
/// these, alphabetically.
pub const DEFAULT_PRIORITY: &[&str] = &[
    "oura",
    "whoop_v2",
    "garmin",
    "polar",
    "withings",
    "fitbit",
    // Fitbit's successor (issue 37) ranks where Fitbit does; `data-model.md` predates it.
    "google_health",
    "ultrahuman",
    "apple_health_kit",
    "health_connect",
    "samsung_health",
    "freestyle_libre",
    "dexcom_v3",
    "abbott_libreview",
    "google_fit",
    "strava",
    "wahoo",
    "peloton",
    "zwift",
    "eight_sleep",
    "renpho",
    "omron",
    "ihealth",
    "cronometer",
    "manual",
];

/// Every source type accepted on input (`data-model.md` §Sources; closed on input), the ranked
/// ones first (best first, `aggregate-dsl.md` §3.5), then those that rank last.
pub const SOURCE_TYPES: &[&str] = &[
    "lab",
    "automatic",
    "watch",
    "ring",
    "chest_strap",
    "scale",
    "cuff",
    "fingerprick",
    "manual_scan",
    "phone",
    "app",
    "multiple_sources",
    "unknown",
    "insulin_pump",
    "exercise_machine",
    "earphone",
];

/// Source types in priority order, best first; other types rank after these.
pub const SOURCE_TYPE_PRIORITY: &[&str] = SOURCE_TYPES.split_at(13).0;

/// The complete provider order for a team: its configured order first, then the default order,
/// then every other catalogue slug alphabetically. Slugs appear once.
pub fn effective_priority(team_order: &[String]) -> Vec<String> {
    let mut order: Vec<String> = Vec::with_capacity(CATALOGUE.len());
    let mut push = |slug: &str| {
        if !order.iter().any(|s| s == slug) {
            order.push(slug.to_owned());
        }
    };
    team_order.iter().for_each(|s| push(s));
    DEFAULT_PRIORITY.iter().for_each(|s| push(s));
    let mut rest: Vec<&str> = CATALOGUE.iter().map(|p| p.slug).collect();
    rest.sort_unstable();
    rest.into_iter().for_each(push);
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_prioritised_slug_is_in_the_catalogue() {
        for slug in DEFAULT_PRIORITY {
            assert!(provider(slug).is_some(), "{slug}");
        }
    }

    #[test]
    fn provider_ids_are_unique_and_fixed() {
        let mut ids: Vec<u32> = CATALOGUE.iter().map(|p| p.id).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), CATALOGUE.len(), "a provider id is given twice");
        // Given ids never move (clients key on them).
        assert_eq!(provider("oura").map(|p| p.id), Some(16));
        assert_eq!(provider("abbott_libreview").map(|p| p.id), Some(1));
    }

    #[test]
    fn effective_priority_puts_team_order_first_and_lists_each_slug_once() {
        let order = effective_priority(&["fitbit".into(), "oura".into()]);
        assert_eq!(&order[..3], ["fitbit", "oura", "whoop_v2"]);
        assert_eq!(order.len(), CATALOGUE.len());
    }
}
