//! wearhouse's benches: one criterion target with a module per area, so DataFusion and the
//! service are linked once (issue 36, item 3). Every bench is seeded and checks its answers
//! before it is timed. Run them all with `cargo bench`, one area with a filter on its
//! benchmark ids, e.g. `cargo bench -- "store push"` or `cargo bench -- readiness`; each
//! module's docs name its scenarios and ids.
//!
//! | module | what it measures | a filter that selects it |
//! |---|---|---|
//! | `store` | health-store pushes and reads | `"store push"`, `"store read"` |
//! | `object_store` | cold reads from a local directory and an S3-compatible server | `"object store"` |
//! | `engine` | aggregate queries over cached data, compiling, encoding, ALIGN, readiness | `buckets`, `"compile only"`, `readiness` |
//! | `http` | whole requests through a real server and client, pushes over HTTP, team queries, Flight SQL | `HTTP`, `"team query"`, `"flight sql"` |
//! | `sync` | per connector: normalising a day, a 90-day historical pull from its fake | `sync` |
//! | `metadata` | the metadata store's read-heavy mix | `^metadata/` |
//! | `events` | the push cost of events, announcing, delivery throughput | `events` |
//! | `lab` | order listings over 100,000 orders, area info | `lab` |
//! | `continuous` | continuous-query re-evaluation, one user and 1,000 | `continuous` |
//! | `metadata_growth` | the metadata database's bytes per pushed sample (a size, not a time) | `"metadata growth"` |
//! | `many_users` | 1,000 users over HTTP: push throughput and latency, database bytes per sample, query p50 (printed, not sampled) | `"many users"` |
//!
//! `WEARHOUSE_BENCH_MODULES=engine` runs one module's set-up and benchmarks alone (see `main`).
//!
//! Shared set-up: `push_support` (data loaded through the push API's own path),
//! `heartrate_support` (seeded heart-rate series), `lab_support` (the lab scenario, also run by
//! the lab tests), and the integration tests' PostgreSQL and provisioning helpers.

#![allow(clippy::expect_used, clippy::unwrap_used, missing_docs)]

mod heartrate_support;
mod lab_support;
#[path = "../tests/it/support/postgres.rs"]
mod postgres;
#[path = "../tests/it/support/provision/mod.rs"]
mod provision;
mod push_support;

mod continuous;
mod engine;
mod events;
mod http;
mod lab;
mod many_users;
mod metadata;
mod metadata_growth;
mod object_store;
mod store;
mod sync;

/// How a one-pass measurement (not a criterion benchmark: a size or a whole run measured
/// once, not a time sampled) named `name` is asked for: `None` when the bench filter (the first
/// argument not starting with `-`, as criterion reads it) names something else, `Some(true)`
/// when it runs as a test (`--test`, or without `--bench`: small, still checked), `Some(false)`
/// for the full measurement.
pub(crate) fn one_pass(name: &str) -> Option<bool> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let filter = args.iter().find(|a| !a.starts_with('-'));
    if filter.is_some_and(|f| !name.contains(f.as_str())) {
        return None;
    }
    Some(args.iter().any(|a| a == "--test") || !args.iter().any(|a| a == "--bench"))
}

/// `criterion_main!` with a module filter: `WEARHOUSE_BENCH_MODULES=engine,store` runs only
/// those modules (their set-up included: a criterion filter skips timing, not the seeding and
/// pushing every module does before it, which takes minutes for all of them). Unset: all.
fn main() {
    let only = std::env::var("WEARHOUSE_BENCH_MODULES").ok();
    let wants = |m: &str| {
        only.as_deref()
            .is_none_or(|o| o.split(',').any(|x| x.trim() == m))
    };
    let modules: [(&str, fn()); 11] = [
        ("store", store::benches),
        ("object_store", object_store::benches),
        ("engine", engine::benches),
        ("http", http::benches),
        ("sync", sync::benches),
        ("metadata", metadata::benches),
        ("events", events::benches),
        ("lab", lab::benches),
        ("continuous", continuous::benches),
        ("metadata_growth", metadata_growth::benches),
        ("many_users", many_users::benches),
    ];
    for (name, run) in modules {
        if wants(name) {
            run();
        }
    }
    criterion::Criterion::default()
        .configure_from_args()
        .final_summary();
}
