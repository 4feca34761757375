//! Provider sync benches (issues 15 and 37), seeded and self-checking: per connector, one day
//! of its documents normalised into a push body, and a 90-day historical pull of one user from
//! the connector's fake API of the tests. Targets: at most 1 ms a day, at most 5 s a pull.
//!
//! - `oura.rs`: 1,440 heart-rate samples, a sleep and an activity a day; the fake pages 5,000
//!   documents.
//! - `google_health.rs`: a night, 1,440 heart rates, an HRV, SpO2 and weigh-in, and the four
//!   activity roll-ups a day; the fake pages Google's maxima (10,000 samples, 25 sleeps).
//! - `whoop.rs`: a cycle, a sleep, its recovery and a workout a day, and the body measurement;
//!   the fake pages 25 records (WHOOP's maximum).
//! - `strava.rs`: a ride a day with an hour of 1 Hz streams (heart rate, distance, watts); the
//!   fake pages 200 activities (Strava's maximum) and answers one streams request per activity.
//! - `ultrahuman.rs`: a night, heart rate every 5 minutes, glucose every 15, the night's HRV,
//!   temperature and SpO2, the day's steps and VO2 max; the fake answers ranges of 7 days.
//! - `garmin.rs`: a daily with heart rate every 15 s, a night with SpO2 every minute, a run, a
//!   weigh-in and the day's stress; the fake answers upload windows of 24 hours (after the
//!   backfill requests), so a 90-day pull is 450 summary calls.
//! - `polar.rs`: an exercise, a night with its recharge, the day's activity and heart rate
//!   every 5 minutes; the fake answers registration, 28-day activity ranges and one
//!   heart-rate request a day.
//!
//! The pull (`pull.rs`) is the real `sync.historical` job on the durable runner (SQLite
//! metadata, local Parquet store), timed from the runner's start to the job's success; each
//! iteration is a new user, and every record must be stored once.

#![allow(clippy::expect_used, clippy::unwrap_used, missing_docs)]

/// The tests' shared fake provider, under the connectors' fakes the benches include by path.
#[allow(dead_code, unused_imports)]
#[path = "../../tests/it/sync/fake/mod.rs"]
mod fake;
mod garmin;
mod google_health;
mod oura;
mod polar;
mod pull;
mod strava;
mod ultrahuman;
mod whoop;

criterion::criterion_group!(
    benches,
    oura::normalise_one_day,
    oura::historical_pull,
    whoop::normalise_one_day,
    whoop::historical_pull,
    google_health::normalise_one_day,
    google_health::historical_pull,
    strava::normalise_one_day,
    strava::historical_pull,
    ultrahuman::normalise_one_day,
    ultrahuman::historical_pull,
    garmin::normalise_one_day,
    garmin::historical_pull,
    polar::normalise_one_day,
    polar::historical_pull
);
