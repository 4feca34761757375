//! The connectors, one folder per provider: access (OAuth specifics, password and e-mail
//! sign-ins), pull and normalisers, with fixtures under `testdata/providers/<slug>/`.
//! [`oura`] (Oura API v2), [`dexcom`] (Dexcom API v3), [`fitbit`] (Fitbit Web API),
//! [`withings`] (Withings Public API), [`garmin`] (Garmin's Health and Activity APIs), [`peloton`] (Peloton's web API, a password provider),
//! [`libre`] (FreeStyle Libre through LibreLinkUp, and Abbott LibreView, password and e-mail
//! providers), [`whoop`] (WHOOP API v2), [`polar`] (Polar AccessLink API v3),
//! [`google_health`] (the Google Health API, Fitbit's successor), [`strava`] (Strava API v3),
//! [`ultrahuman`] (Ultrahuman's partner API), and [`demo`] (the demo generator, pulled for demo
//! connections of oura, fitbit, freestyle_libre and apple_health_kit).

/// The two public constructors of a connector over one [`Api`](crate::sync::http::Api):
/// `new(base_url)` with its own HTTP client, and `with_client(base_url, http)` over an existing
/// one; `$from_api` makes the connector of its `Api` (`$name` names the provider in errors).
macro_rules! api_constructors {
    ($ty:ident, $name:literal, $from_api:expr) => {
        /// A connector for the API at `base_url` (e.g. [`DEFAULT_API_URL`]), with its own HTTP
        /// client (30 s per request, no redirects followed).
        pub fn new(base_url: &str) -> Result<$ty, $crate::sync::SyncError> {
            Ok(($from_api)($crate::sync::http::Api::new($name, base_url)?))
        }

        /// A connector for the API at `base_url` over an existing client.
        pub fn with_client(base_url: url::Url, http: reqwest::Client) -> $ty {
            ($from_api)($crate::sync::http::Api::with_client($name, base_url, http))
        }
    };
}

pub mod demo;
pub mod dexcom;
pub mod fitbit;
pub mod garmin;
pub mod google_health;
pub mod libre;
pub mod oura;
pub mod peloton;
pub mod polar;
pub mod strava;
pub mod ultrahuman;
pub mod whoop;
pub mod withings;
