//! Ingest: push-API records to Arrow record batches and back, and the demo data generator.
//!
//! - [`parse_push`] validates a whole `POST /v2/user/{user_id}/data` body
//!   (`{"provider", "source", "sleep", "activity", "workouts", "body", "meals", "profile",
//!   "timeseries"}`) into one [`RecordBatch`](datafusion::arrow::record_batch::RecordBatch) per
//!   [`Dataset`](crate::schema::Dataset), in the schemas of [`crate::schema`], with `ingested_at`,
//!   the source columns and the derived columns (`timezone_offset`, activity and profile ids)
//!   filled. One bad record rejects the whole body with an [`Invalid`](crate::validation::Invalid)
//!   naming it, e.g. `["body", "sleep", 3, "bedtime_start"]`.
//! - [`render_summaries`], [`render_profile`], [`render_samples`] and [`render_grouped`] turn
//!   stored batches into the getters' JSON, in the same field names a push uses, so a pushed body
//!   round-trips.
//! - [`parse_date_range`] reads the getters' `start_date`/`end_date`.
//! - [`demo`] generates deterministic synthetic push bodies for the demo providers.
//!
//! Field names follow `data-model.md`: the bracketed JSON names where they differ from the
//! columns (sleep: `bedtime_start`, `total`, `hr_lowest`, ...), the column names elsewhere.
//! Decisions where the spec is silent are documented on the module that takes them
//! (`push`, `summary`, `sample`, `render`, `grouped`, `dates`). This module neither stores nor
//! serves: the store and the HTTP layer call it.

// A `Violation` (136 bytes) is the error of every parsing step; it is built once per rejected
// request, so boxing it would cost every caller a `Box` for no measurable gain.
#![allow(clippy::result_large_err)]

mod columns;
mod dates;
pub mod demo;
mod fields;
mod grouped;
mod json;
mod push;
mod render;
mod sample;
mod summary;
mod zone;

pub use dates::parse_date_range;
pub use fields::{SOURCE_TYPES, push_key};
pub use grouped::render_grouped;
pub use push::{PushBatches, PushUser, parse_push};
pub use render::{render_profile, render_samples, render_summaries};
pub use summary::derive_id;
