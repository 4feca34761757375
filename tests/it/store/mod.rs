//! The storage rooms (`src/store/`): the health-data store and the metadata store. Every
//! health-store test that does not look at a local directory's specifics runs twice
//! (`on_every_backing!`): on a local directory and on a real S3-compatible server (moto's,
//! provisioned by the tests); every metadata test runs on SQLite and on PostgreSQL.
//!
//! - `round_trip`: what a read answers after writes, replacements and compactions;
//! - `lifecycle`: files over time, deletion, the cache, compaction and commit records;
//! - `gate`, `recovery`, `crash`: gated writes, multi-dataset commits and start-up recovery,
//!   SIGKILL at random moments;
//! - `shared_bucket`: one bucket shared by processes, and read in place by other engines;
//! - `metadata`: the metadata store on both backends.

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod crash;
mod gate;
mod lifecycle;
mod metadata;
mod recovery;
mod round_trip;
mod shared_bucket;
pub(crate) mod support;
