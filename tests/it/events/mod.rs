//! Events and webhooks end to end (`src/events/`, issue 16): the real binary delivers to a
//! receiver in the test, and every delivery's signature is verified by the Python
//! `standardwebhooks` package, not by our signing code.
//!
//! - `delivery`: signing, shapes, retries, ordering, isolation, rotation, replay, the schedule;
//! - `announce`: what is announced for a connection and for pushes, crash windows included;
//! - `api`: tenancy, endpoint URLs, the 4xx rules, the whole flow on PostgreSQL;
//! - `retention`, `bytes`, `gone`, `size`: the 30-day retention, events stored by reference
//!   (issue 43) and the metadata database's size.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod announce;
mod api;
mod bytes;
mod delivery;
mod gone;
mod retention;
mod size;
pub(crate) mod support;

use support::Received;

/// Flags every test server here starts with: the receivers listen on loopback.
const ALLOW: &[&str] = &["--webhook-allow-private"];

/// The deliveries of one event type, in the order received.
fn of_type<'a>(got: &'a [Received], t: &str) -> Vec<&'a Received> {
    got.iter().filter(|r| r.event_type() == t).collect()
}
