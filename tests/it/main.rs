//! wearhouse's integration tests: one binary, so DataFusion and the service are linked once
//! instead of once per test file (issue 11, item 7).
//!
//! The tree mirrors `src/`: one folder per room, named as the room is, each with a `mod.rs` that
//! says what it tests (issue 36, item 3). A room's own helpers are its `support` module
//! (`events::support`, `jobs::support`, `store::support`); what every room uses is `support/`:
//! the in-process app (`support`), the real binary as a child process (`support::server`), the
//! provisioning of Python packages, Chromium and the S3-compatible server
//! (`support::provision`), a scratch PostgreSQL database (`support::postgres`) and the
//! two-backend test macro (`support::backends`).
//!
//! | folder | what it tests |
//! |---|---|
//! | `api` | the HTTP surface: routes, methods, OpenAPI, rate limits, keys, the SDK, shapes |
//! | `engine` | the query engine, the aggregate endpoint, team queries, Flight SQL, workers |
//! | `continuous` | continuous queries |
//! | `store` | the health-data store, the metadata store, crash consistency |
//! | `data` | pushes and getters: the push parser, the renderer, the data plane over HTTP |
//! | `sync` | provider connectors against their fakes, pulls and notifications |
//! | `link` | linking: tokens, the hosted page, OAuth, passwords, codes, bulk import |
//! | `lab` | laboratory tests |
//! | `events` | events and webhooks |
//! | `jobs` | the durable job runner |
//! | `system` | the binary as operated: CLI, restarts, shutdown, metrics, traces, scale-out |
//!
//! Run one room with a filter on its module path, e.g. `cargo test --test it engine::` or
//! `cargo test --test it jobs::`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)] // tests: a panic is the failure report

mod support;

mod api;
mod continuous;
mod data;
mod engine;
mod events;
mod jobs;
mod lab;
mod link;
mod store;
mod system;

mod sync_demo;
mod sync_dexcom;
mod sync_fitbit;
mod sync_garmin;
mod sync_google_health;
mod sync_libre;
mod sync_notify;
mod sync_oura;
mod sync_peloton;
mod sync_polar;
mod sync_pull;
mod sync_strava;
mod sync_support;
mod sync_whoop;
mod sync_withings;
