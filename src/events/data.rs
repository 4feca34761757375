//! The `data` member of the events several rooms emit, as serde types: `provider.connection.*`
//! (emitted by `link`, `data` and `sync`), `historical.data.*.created` (`data`, for demo and
//! provider pulls alike) and the sample event of `POST /v2/team/events/test`. A domain's own
//! events keep their types in the domain (`lab`'s orders and appointments, `continuous`'s
//! query results); record events (`daily.data.*`) carry records the read side rendered
//! ([`Event::record_chunk`](super::Event::record_chunk)).
//!
//! Deliveries are compared byte for byte with what they were (`tests/it/events_bytes.rs`):
//! `serde_json` keeps object members in the order they are written, so a struct's fields are
//! declared in the order receivers have always got them. Reordering a field changes every
//! delivery.

use serde::Serialize;
use uuid::Uuid;

use super::ProviderRef;

/// `provider.connection.created`: the user's new connection and which of the provider's
/// resources have data. `A` is the availability map as the emitter knows it (a linked
/// connection's with scope requirements, a push's first connection's with statuses only).
#[derive(Debug, Clone, Serialize)]
pub struct ConnectionCreated<A> {
    /// The user.
    pub user_id: Uuid,
    /// The provider.
    pub provider: ProviderRef,
    /// The provider again, as `source` (`events.md` names it both ways).
    pub source: ProviderRef,
    /// Per supported resource.
    pub resource_availability: A,
}

/// `provider.connection.error`: a connection entered its error state.
#[derive(Debug, Clone, Serialize)]
pub struct ConnectionError {
    /// The user.
    pub user_id: Uuid,
    /// The provider.
    pub provider: ProviderRef,
    /// The provider again, as `source`.
    pub source: ProviderRef,
    /// The kind of error (`token_expired`, ...).
    pub error_type: String,
    /// What the provider or the service said.
    pub error_message: String,
}

/// `historical.data.<resource>.created`: a historical pull of the resource is complete.
#[derive(Debug, Clone, Serialize)]
pub struct HistoricalCreated {
    /// The user.
    pub user_id: Uuid,
    /// The first day pulled (`YYYY-MM-DD`).
    pub start_date: String,
    /// The last day pulled.
    pub end_date: String,
    /// The provider.
    pub provider: ProviderRef,
}

/// The sample event `POST /v2/team/events/test` sends.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct TestEvent {
    /// Always `true`.
    pub test: bool,
    /// What it is.
    pub message: &'static str,
}

impl TestEvent {
    /// The sample event's data.
    pub const SAMPLE: TestEvent = TestEvent {
        test: true,
        message: "a sample event sent by POST /v2/team/events/test",
    };
}
