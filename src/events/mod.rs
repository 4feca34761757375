//! Events and webhooks (`spec/events.md`): every change a team cares about becomes an event,
//! stored durably and delivered to the team's webhook endpoints, signed the Standard Webhooks
//! way, retried, in order per (endpoint, user).
//!
//! - [`types`]: every event type, names built and parsed in one place;
//! - [`envelope`]: [`Event`] (type, user, `data` rendered by the emitting domain from a serde
//!   type, [`Event::new`]) and the envelope receivers get; large record sets split under 1 MiB
//!   per body;
//! - [`data`]: the `data` types of the events several rooms emit (connections, historical
//!   pulls, the sample event);
//! - [`outbox`]: `enqueue` in the caller's transaction: the event row, one delivery per
//!   subscribed endpoint, and the job of each (endpoint, user) stream;
//! - [`delivery`]: the `webhook.deliver` job kind on the durable runner ([`crate::jobs`]);
//! - [`signing`], [`schedule`], [`url_rules`]: signatures, the retry schedule, SSRF rules;
//! - [`retention`]: events are kept 30 days (the `events.prune` job);
//! - [`endpoints`], [`history`]: the team's operations behind `/v2/team/webhooks` and
//!   `/v2/team/events`.
//!
//! This module imports no domain: payloads are rendered by the domains that emit (`data`).

pub mod data;
pub mod delivery;
pub mod endpoints;
pub mod envelope;
pub mod history;
pub mod outbox;
pub mod records;
pub mod retention;
pub mod schedule;
pub mod signing;
pub mod types;
pub mod url_rules;

pub use envelope::{Event, EventUser, ProviderRef};
pub use types::EventType;
pub use url_rules::UrlRules;
