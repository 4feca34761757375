//! OAuth scopes of the catalogue's OAuth providers, and what a grant makes available
//! (`linking.md` §Connections).
//!
//! Every OAuth provider of the catalogue has one wearhouse scope per resource it supplies, named
//! after the resource; `profile` is required (a grant without it is refused with
//! `required_scopes_not_granted`), the others are optional. A resource needs its own scope.
//! Providers connected otherwise (SDK, app, password, e-mail) have no scopes.
//!
//! Providers with a connector have scopes of their own ([`native`]): the authorisation URL asks
//! for those ([`authorisation_scopes`]) and the grant is read back into wearhouse scopes
//! ([`granted`]), which is what connections store and availability is computed from.

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

/// How a provider names scopes on its own authorisation page: each of its scopes with the
/// wearhouse scopes it grants, and the character it joins them with in `scope`. A provider
/// without an entry is asked for wearhouse's scope names as they are.
#[derive(Debug)]
pub struct NativeScopes {
    /// Joins the scopes of one `scope` parameter (Withings: a comma; OAuth 2.0: a space).
    pub separator: char,
    /// (the provider's scope, the wearhouse scopes it grants).
    pub grants: &'static [(&'static str, &'static [&'static str])],
}

/// Oura API v2: `personal daily heartrate workout spo2Daily` (of `email personal daily
/// heartrate workout tag session spo2Daily`).
const OURA: NativeScopes = NativeScopes {
    separator: ' ',
    grants: &[
        ("personal", &["profile"]),
        (
            "daily",
            &[
                "sleep",
                "sleep_stream",
                "activity",
                "hrv",
                "respiratory_rate",
                "body_temperature_delta",
                "steps",
                "calories_active",
                "stress_level",
            ],
        ),
        ("heartrate", &["heartrate"]),
        ("workout", &["workouts"]),
        ("spo2Daily", &["blood_oxygen"]),
    ],
};

/// Fitbit Web API: `profile activity heartrate sleep weight oxygen_saturation respiratory_rate
/// cardio_fitness`.
const FITBIT: NativeScopes = NativeScopes {
    separator: ' ',
    grants: &[
        ("profile", &["profile"]),
        (
            "activity",
            &[
                "activity",
                "workouts",
                "workout_stream",
                "steps",
                "distance",
                "calories_active",
                "calories_basal",
                "floors_climbed",
            ],
        ),
        ("heartrate", &["heartrate", "hrv"]),
        ("sleep", &["sleep"]),
        ("weight", &["body"]),
        ("oxygen_saturation", &["blood_oxygen"]),
        ("respiratory_rate", &["respiratory_rate"]),
        ("cardio_fitness", &["vo2_max"]),
    ],
};

/// Withings Public API: `user.info,user.metrics,user.activity`, comma-separated.
const WITHINGS: NativeScopes = NativeScopes {
    separator: ',',
    grants: &[
        ("user.info", &["profile"]),
        (
            "user.metrics",
            &["body", "weight", "fat", "heartrate", "blood_pressure"],
        ),
        ("user.activity", &["activity", "sleep", "workouts", "steps"]),
    ],
};

/// Dexcom API v3: one scope, `offline_access`, for everything (and the refresh token).
const DEXCOM: NativeScopes = NativeScopes {
    separator: ' ',
    grants: &[("offline_access", &["profile", "glucose"])],
};

/// WHOOP API v2 (`developer.whoop.com/docs/developing/oauth`): `read:recovery read:cycles
/// read:workout read:sleep read:profile read:body_measurement`, and `offline`, without which
/// WHOOP issues no refresh token (so every link asks for it; it grants the connection itself,
/// `profile`).
const WHOOP: NativeScopes = NativeScopes {
    separator: ' ',
    grants: &[
        ("offline", &["profile"]),
        ("read:profile", &["profile"]),
        ("read:sleep", &["sleep"]),
        (
            "read:recovery",
            &["hrv", "heartrate", "blood_oxygen", "body_temperature"],
        ),
        ("read:cycles", &["activity"]),
        ("read:workout", &["workouts"]),
        ("read:body_measurement", &["body"]),
    ],
};

/// Google Health API (`developers.google.com/health/scopes`): URLs under
/// `https://www.googleapis.com/auth/googlehealth`, read-only ones, space-separated
/// (`sync::connectors::google_health::access`).
const GOOGLE_HEALTH: NativeScopes = NativeScopes {
    separator: ' ',
    grants: &[
        (
            "https://www.googleapis.com/auth/googlehealth.profile.readonly",
            &["profile"],
        ),
        (
            "https://www.googleapis.com/auth/googlehealth.sleep.readonly",
            &["sleep"],
        ),
        (
            "https://www.googleapis.com/auth/googlehealth.activity_and_fitness.readonly",
            &["activity"],
        ),
        (
            "https://www.googleapis.com/auth/googlehealth.health_metrics_and_measurements.readonly",
            &["heartrate", "hrv", "blood_oxygen", "body", "weight", "fat"],
        ),
    ],
};

/// Strava API v3 (`developers.strava.com/docs/authentication/`): `read` (public profile) and
/// `activity:read_all` (every activity, private ones included, with its streams),
/// comma-separated. Strava names what the athlete granted only in the callback's `scope`
/// parameter, not in its token answer, so a Strava link counts every scope asked as granted.
const STRAVA: NativeScopes = NativeScopes {
    separator: ',',
    grants: &[
        ("read", &["profile"]),
        (
            "activity:read_all",
            &["workouts", "workout_stream", "heartrate", "distance"],
        ),
    ],
};

/// Polar AccessLink (`www.polar.com/accesslink-api/`, *Authorization endpoint*): one scope,
/// `accesslink.read_all`, for all of a user's data. Polar's token answer names no scope, so a
/// Polar link counts everything asked as granted.
const POLAR: NativeScopes = NativeScopes {
    separator: ' ',
    grants: &[(
        "accesslink.read_all",
        &["profile", "sleep", "activity", "workouts", "heartrate"],
    )],
};

/// Garmin (OAuth 2.0 PKCE): no scope is asked (`link::token_wire::asks_scopes`), and the
/// token answer names the application's fixed scopes, `PARTNER_WRITE PARTNER_READ CONNECT_READ
/// CONNECT_WRITE`; the user's choices of what to share are made on Garmin's consent page, not
/// in scopes. Either read scope grants everything the connector pulls.
const GARMIN_GRANTS: &[&str] = &[
    "profile",
    "sleep",
    "activity",
    "workouts",
    "body",
    "heartrate",
    "blood_oxygen",
    "stress_level",
];
const GARMIN: NativeScopes = NativeScopes {
    separator: ' ',
    grants: &[
        ("CONNECT_READ", GARMIN_GRANTS),
        ("PARTNER_READ", GARMIN_GRANTS),
    ],
};

/// Ultrahuman's partner OAuth (`vision.ultrahuman.com/developer-docs?type=oauth`):
/// `profile` (the user's id and zone, for `user_info`), `ring_data` (the ring's metrics) and
/// `cgm_data` (the M1 sensor's glucose), space-separated.
const ULTRAHUMAN: NativeScopes = NativeScopes {
    separator: ' ',
    grants: &[
        ("profile", &["profile"]),
        (
            "ring_data",
            &[
                "sleep",
                "activity",
                "heartrate",
                "hrv",
                "blood_oxygen",
                "body_temperature",
                "vo2_max",
            ],
        ),
        ("cgm_data", &["glucose"]),
    ],
};

/// Every wearhouse scope of the provider, required first (what its links ask for).
pub fn all_scopes(provider: &Provider) -> Vec<&'static str> {
    let wanted = scopes(provider);
    wanted.required.into_iter().chain(wanted.optional).collect()
}

/// The provider's own scope names, when they differ from wearhouse's.
pub fn native(provider: &Provider) -> Option<&'static NativeScopes> {
    match provider.slug {
        "oura" => Some(&OURA),
        "fitbit" => Some(&FITBIT),
        "withings" => Some(&WITHINGS),
        "dexcom_v3" => Some(&DEXCOM),
        "whoop_v2" => Some(&WHOOP),
        "google_health" => Some(&GOOGLE_HEALTH),
        "strava" => Some(&STRAVA),
        "polar" => Some(&POLAR),
        "garmin" => Some(&GARMIN),
        "ultrahuman" => Some(&ULTRAHUMAN),
        _ => None,
    }
}

/// The `scope` values of the provider's authorisation URL: its own scopes that grant any of
/// its wearhouse scopes (one value per scope; one comma-joined value for a provider that joins
/// with commas), else the wearhouse scopes themselves.
pub fn authorisation_scopes(provider: &Provider) -> Vec<String> {
    let all = all_scopes(provider);
    let Some(native) = native(provider) else {
        return all.into_iter().map(str::to_owned).collect();
    };
    let asked: Vec<&str> = native
        .grants
        .iter()
        .filter(|(_, grants)| grants.iter().any(|g| all.contains(g)))
        .map(|(name, _)| *name)
        .collect();
    if native.separator == ' ' {
        asked.into_iter().map(str::to_owned).collect()
    } else {
        vec![asked.join(&native.separator.to_string())]
    }
}

/// The wearhouse scopes a grant of the provider's `granted` scopes (as its token answer lists
/// them, space- or comma-separated) amounts to, in the provider's scope order.
pub fn granted(provider: &Provider, granted: &[String]) -> Vec<String> {
    let names: Vec<&str> = granted
        .iter()
        .flat_map(|g| g.split([' ', ',']))
        .filter(|g| !g.is_empty())
        .collect();
    let all = all_scopes(provider);
    let Some(native) = native(provider) else {
        return names.into_iter().map(str::to_owned).collect();
    };
    all.into_iter()
        .filter(|ours| {
            native
                .grants
                .iter()
                .any(|(name, grants)| names.contains(name) && grants.contains(ours))
        })
        .map(str::to_owned)
        .collect()
}

/// The provider's name for the scope that grants the wearhouse scope `ours` (for messages).
pub fn native_name(provider: &Provider, ours: &str) -> String {
    native(provider)
        .and_then(|n| n.grants.iter().find(|(_, grants)| grants.contains(&ours)))
        .map_or_else(|| ours.to_owned(), |(name, _)| (*name).to_owned())
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

    #[test]
    fn providers_are_asked_for_their_own_scopes_and_grants_are_read_back() {
        let oura = provider("oura").unwrap();
        assert_eq!(
            authorisation_scopes(oura),
            ["personal", "daily", "heartrate", "workout"]
        );
        let got = granted(oura, &["personal daily".to_owned()]);
        assert!(got.contains(&"profile".to_owned()) && got.contains(&"sleep".to_owned()));
        assert!(!got.contains(&"heartrate".to_owned()), "{got:?}");
        // A wearhouse name is not an Oura scope.
        assert!(granted(oura, &["profile".to_owned(), "sleep".to_owned()]).is_empty());
        assert_eq!(native_name(oura, "profile"), "personal");

        let withings = provider("withings").unwrap();
        assert_eq!(
            authorisation_scopes(withings),
            ["user.info,user.metrics,user.activity"],
            "comma-joined"
        );
        // Only scopes that grant something the provider supplies are asked for.
        assert!(!authorisation_scopes(oura).contains(&"spo2Daily".to_owned()));
        let got = granted(withings, &["user.info,user.metrics".to_owned()]);
        assert_eq!(got[0], "profile");
        assert!(got.contains(&"blood_pressure".to_owned()), "{got:?}");

        let dexcom = provider("dexcom_v3").unwrap();
        assert_eq!(authorisation_scopes(dexcom), ["offline_access"]);
        assert_eq!(
            granted(dexcom, &["offline_access".to_owned()]),
            ["profile", "glucose"]
        );

        let whoop = provider("whoop_v2").unwrap();
        assert_eq!(
            authorisation_scopes(whoop),
            [
                "offline",
                "read:profile",
                "read:sleep",
                "read:recovery",
                "read:cycles",
                "read:workout",
                "read:body_measurement"
            ]
        );
        let got = granted(whoop, &["offline read:sleep read:recovery".to_owned()]);
        assert_eq!(
            got,
            [
                "profile",
                "sleep",
                "heartrate",
                "hrv",
                "blood_oxygen",
                "body_temperature"
            ]
        );

        let google = provider("google_health").unwrap();
        let url = |s: &str| format!("https://www.googleapis.com/auth/googlehealth.{s}.readonly");
        assert_eq!(
            authorisation_scopes(google),
            [
                url("profile"),
                url("sleep"),
                url("activity_and_fitness"),
                url("health_metrics_and_measurements")
            ]
        );
        let got = granted(google, &[format!("{} {}", url("profile"), url("sleep"))]);
        assert_eq!(got, ["profile", "sleep"]);
        let strava = provider("strava").unwrap();
        assert_eq!(
            authorisation_scopes(strava),
            ["read,activity:read_all"],
            "comma-joined"
        );
        assert_eq!(
            granted(strava, &["read,activity:read_all".to_owned()]),
            [
                "profile",
                "workouts",
                "workout_stream",
                "heartrate",
                "distance"
            ]
        );
        assert_eq!(granted(strava, &["read".to_owned()]), ["profile"]);

        let garmin = provider("garmin").unwrap();
        let answer = ["PARTNER_WRITE PARTNER_READ CONNECT_READ CONNECT_WRITE".to_owned()];
        assert_eq!(granted(garmin, &answer), all_scopes(garmin));
        assert!(granted(garmin, &["PARTNER_WRITE CONNECT_WRITE".to_owned()]).is_empty());
        assert_eq!(native_name(garmin, "profile"), "CONNECT_READ");

        let polar = provider("polar").unwrap();
        assert_eq!(authorisation_scopes(polar), ["accesslink.read_all"]);
        assert_eq!(
            granted(polar, &["accesslink.read_all".to_owned()]),
            ["profile", "sleep", "activity", "workouts", "heartrate"]
        );

        let ultrahuman = provider("ultrahuman").unwrap();
        assert_eq!(
            authorisation_scopes(ultrahuman),
            ["profile", "ring_data", "cgm_data"]
        );
        assert_eq!(
            granted(ultrahuman, &["profile ring_data".to_owned()]),
            [
                "profile",
                "sleep",
                "activity",
                "heartrate",
                "hrv",
                "blood_oxygen",
                "body_temperature",
                "vo2_max"
            ]
        );
        assert_eq!(native_name(ultrahuman, "glucose"), "cgm_data");

        // A provider without its own names keeps wearhouse's.
        let other = crate::providers::CATALOGUE
            .iter()
            .find(|p| is_oauth(p) && native(p).is_none())
            .unwrap();
        assert_eq!(authorisation_scopes(other)[0], "profile");
    }
}
