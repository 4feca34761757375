//! The sync room's tests (`src/sync/`): a folder per provider (its fake API as a route table
//! on the shared fake provider of [`fake`], its connector and end-to-end tests), the providers
//! × faults table of `provider-sync.md` ([`faults`]), the pull job ([`pull`]), change
//! notifications ([`notify`]), the password and e-mail sign-ins ([`peloton`], [`libre`]), the
//! demo connector and its generator, and [`support`], what the suites share (instants and
//! pulls, the failure kinds every connector surfaces alike, and the end-to-end harness that
//! links a user and runs the real job runner).

pub mod support;

pub mod fake;

pub mod dexcom;
pub mod fitbit;
pub mod garmin;
pub mod google_health;
pub mod oura;
pub mod polar;
pub mod strava;
pub mod ultrahuman;
pub mod whoop;
pub mod withings;

mod demo;
mod demo_generator;
mod faults;
pub mod libre;
mod notify;
mod peloton;
pub mod pull;
