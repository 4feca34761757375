//! wearhouse's integration tests: one binary, so DataFusion and the service are linked once
//! instead of once per test file (issue 11, item 7). Each module is the suite of one area; the
//! `*_support` and `provision` modules are their shared helpers.
//!
//! Run one area with a filter on its module path, e.g. `cargo test --test it engine::` or
//! `cargo test --test it jobs::`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)] // tests: a panic is the failure report

mod backends;
mod events_support;
mod jobs_support;
mod postgres;
mod provision;
mod server;
mod store_support;
mod support;

mod aggregate_api;
mod aggregate_cancel;
mod api;
mod cli;
mod columnar_push;
mod continuous;
mod crash;
mod cycle;
mod data_api;
mod derived_ids;
mod distributed;
mod e2e;
mod engine;
mod engine_memory;
mod events;
mod events_bytes;
mod events_gone;
mod events_size;
mod flight;
mod getter_bounds;
mod ingest;
mod jobs;
mod jobs_api;
mod keys;
mod lab;
mod link;
mod memory;
mod metadata;
mod methods;
mod metrics;
mod openapi;
mod push_schema;
mod rate_limit;
mod raw;
mod readme;
mod scale_out;
mod schema_fuzz;
mod sdk;
mod series_names;
mod shutdown;
mod store;
mod store_gate;
mod store_recovery;
mod surface;
mod surface_team;
mod sync;
mod team_query;
mod traces;
mod user_undo;
