//! The connectors, one folder per provider: access (OAuth specifics, password and e-mail
//! sign-ins), pull and normalisers, with fixtures under `testdata/providers/<slug>/`.
//! [`oura`] (Oura API v2), [`dexcom`] (Dexcom API v3), [`fitbit`] (Fitbit Web API),
//! [`withings`] (Withings Public API), [`garmin`] (Garmin's Health and Activity APIs), [`peloton`] (Peloton's web API, a password provider),
//! [`libre`] (FreeStyle Libre through LibreLinkUp, and Abbott LibreView, password and e-mail
//! providers), [`whoop`] (WHOOP API v2), [`polar`] (Polar AccessLink API v3),
//! [`google_health`] (the Google Health API, Fitbit's successor), [`strava`] (Strava API v3),
//! [`ultrahuman`] (Ultrahuman's partner API), and [`demo`] (the demo generator, pulled for demo
//! connections of oura, fitbit, freestyle_libre and apple_health_kit).

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
