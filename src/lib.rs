//! wearhouse: a health-data service. Teams create end users, connect them to wearable and app
//! providers, receive their normalised data and run aggregate queries over it.
//!
//! Crate map:
//! - [`schema`]: the normalised tables as Arrow schemas (the contract between the parts below);
//! - [`providers`]: the provider catalogue and default priorities;
//! - [`validation`]: the shape of a rejected input, shared by every layer;
//! - [`users`]: the user resource's rules and rendering;
//! - [`keys`]: team API keys: create, list, revoke, rotate with an overlap;
//! - [`store`]: health data (Parquet on an object store) and metadata (sqlx);
//! - [`data`]: the data plane's operations (push, getter reads), over ingest and the store;
//! - [`ingest`]: push API records to Arrow batches and back, and the demo data generator;
//! - [`events`]: events, their outbox and webhook delivery (Standard Webhooks signatures);
//! - [`jobs`]: the durable background job runner (leases, retries, kinds; compaction);
//! - [`lab`]: laboratory testing: catalogue, area coverage, orders, appointments;
//! - [`link`]: linking users to providers: connections and their sealed credentials;
//! - [`sync`]: pulling providers' cloud APIs into push bodies (connectors, their errors);
//! - [`secret`]: the deployment's secret key, which seals provider credentials at rest;
//! - [`engine`]: the aggregate query language compiled to DataFusion plans;
//! - [`query`]: one aggregate request end to end (store → engine → encoder);
//! - [`parquet_write`]: Parquet files encoded on every core (store segments, Parquet answers);
//! - [`http`]: the axum API; [`config`], [`app`] and [`cli`]: command line and start-up;
//! - [`metrics`]: the Prometheus metrics `/metrics` exposes;
//! - [`rate_limit`]: request budgets per API key and team (token buckets, per process);
//! - [`telemetry`]: logs, spans with the request id, the optional OTLP trace export.

pub mod app;
pub mod cli;
pub mod config;
pub mod continuous;
pub mod data;
pub mod distributed;
pub mod engine;
pub mod events;
pub mod flight;
pub mod http;
pub mod ingest;
pub mod jobs;
pub mod keys;
pub mod lab;
pub mod link;
pub mod metrics;
pub mod parquet_write;
pub mod providers;
pub mod query;
pub mod rate_limit;
pub mod render;
pub mod schema;
pub mod secret;
pub mod store;
pub mod sync;
pub mod team;
pub mod telemetry;
pub mod users;
pub mod validation;

/// mimalloc for every binary built on the crate (server, tests, benches alike, so benches
/// measure what the server runs): plans, JSON and HTTP handling allocate many small objects,
/// and glibc malloc was a quarter of the compile benchmark's profile.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
