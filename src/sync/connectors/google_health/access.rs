//! How a Google Health API connection is granted: Google's OAuth 2.0 endpoints, the
//! authorisation URL's offline-access parameters and the scopes, as the Google Health API
//! documents them (`developers.google.com/health/migration/data-access`,
//! `developers.google.com/health/scopes`) and Google's OAuth guide for web server applications
//! (`developers.google.com/identity/protocols/oauth2/web-server`).
//!
//! - Authorisation page `https://accounts.google.com/o/oauth2/v2/auth`, token endpoint
//!   `https://oauth2.googleapis.com/token` (the migration guide's table: "Authorization URL",
//!   "Token URL"); the code is exchanged with `client_id` and `client_secret` in the form, as
//!   Google's guide sends them, and PKCE (`S256`) is accepted.
//! - Google issues a refresh token only when the authorisation URL carries
//!   `access_type=offline`; `prompt=consent` asks for it again on a re-consent (a user moving
//!   from a legacy Fitbit connection has granted this client before), so every link sends both
//!   ([`AUTHORIZE_PARAMS`]).
//! - Scopes are URLs under `https://www.googleapis.com/auth/googlehealth`; the connector reads
//!   only, so it asks the `.readonly` ones ([`providers::scopes`](crate::providers::scopes)
//!   maps them to wearhouse's): `.profile.readonly` (profile), `.sleep.readonly` (sleep),
//!   `.activity_and_fitness.readonly` (steps, distance, calories: activity) and
//!   `.health_metrics_and_measurements.readonly` (heart rate, HRV, SpO2, weight, body fat,
//!   height). The token answer's `scope` lists the granted URLs, space-separated.
//! - Revocation (`https://oauth2.googleapis.com/revoke`) is not called on deregistration: no
//!   connector revokes yet (`linking.md` says "where the provider supports it"; the link room
//!   owns that step).

/// Google's OAuth 2.0 authorisation page.
pub const OAUTH_AUTHORIZE_URL: &str = "https://accounts.google.com/o/oauth2/v2/auth";

/// Google's OAuth 2.0 token endpoint.
pub const OAUTH_TOKEN_URL: &str = "https://oauth2.googleapis.com/token";

/// The prefix of every Google Health API scope.
pub const SCOPE_PREFIX: &str = "https://www.googleapis.com/auth/googlehealth";

/// The authorisation URL's parameters besides RFC 6749's: offline access (a refresh token) and
/// the consent screen again (so a re-consent also yields one).
pub const AUTHORIZE_PARAMS: &[(&str, &str)] = &[("access_type", "offline"), ("prompt", "consent")];

/// `.profile.readonly`: the user's profile.
pub const PROFILE: &str = "https://www.googleapis.com/auth/googlehealth.profile.readonly";

/// `.sleep.readonly`: sleep sessions.
pub const SLEEP: &str = "https://www.googleapis.com/auth/googlehealth.sleep.readonly";

/// `.activity_and_fitness.readonly`: steps, distance, calories.
pub const ACTIVITY: &str =
    "https://www.googleapis.com/auth/googlehealth.activity_and_fitness.readonly";

/// `.health_metrics_and_measurements.readonly`: heart rate, HRV, SpO2, weight, body fat, height.
pub const HEALTH_METRICS: &str =
    "https://www.googleapis.com/auth/googlehealth.health_metrics_and_measurements.readonly";
