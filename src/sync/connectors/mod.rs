//! Provider connectors, one folder per provider: its access (OAuth specifics), pull and normalisers.
pub mod strava;
