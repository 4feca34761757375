//! Ingest: push-API records to Arrow record batches (the read side is `render`; the demo data
//! generator that feeds it is `sync::connectors::demo::generator`, beside the demo connector).
//!
//! - [`parse_push`] validates a whole `POST /v2/user/{user_id}/data` body
//!   (`{"provider", "source", "sleep", "activity", "workouts", "body", "meals", "profile",
//!   "menstrual_cycle", "timeseries"}`; the cycles' entry lists are `cycle.rs`'s) into one [`RecordBatch`](datafusion::arrow::record_batch::RecordBatch) per
//!   [`Dataset`](crate::schema::Dataset), in the schemas of [`crate::schema`], with `ingested_at`,
//!   the source columns and the derived columns (`timezone_offset`, activity and profile ids)
//!   filled. One bad record rejects the whole body with an [`Invalid`](crate::validation::Invalid)
//!   naming it, e.g. `["body", "sleep", 3, "bedtime_start"]`. [`parse_push_json`] does the same
//!   from JSON text in one pass, samples straight into Arrow builders with no JSON tree of the
//!   body (`push_body.rs`): a push costs about its body plus its batches (measured: 3× the body
//!   for 10^6 samples, was 16×).
//! - [`parse_pulled`] does the same for a connector's answer, a typed [`PulledBody`] whose
//!   records go through the same rules (`pulled.rs`); the dense series of a connector travel as
//!   [`TypedSamples`], admitted under the same rules without a JSON object per sample
//!   (`pulled_samples.rs`).
//! - [`parse_push_columnar`] does the same for the rows of one timeseries sent as an Arrow
//!   IPC stream or a Parquet file (`columnar.rs`), for data teams, and the rows of the
//!   `menstrual_cycle` table the same way (`columnar_table.rs`).
//! - Rendering stored batches back into the getters' JSON is the read side's room,
//!   [`crate::render`], which builds on this module's cells, zones and wire names.
//! - [`parse_date_range`] reads the getters' `start_date`/`end_date`.
//! - [`sample_rules`] says which members a pushed timeseries sample must give, per resource:
//!   the push parsers enforce it and [`push_schema`] documents it.
//!
//! Field names, types and nesting follow the reference service's models (`data-model.md`
//! §Wire names; the column-to-wire map is `fields::wire`): sleep `bedtime_start`, `total`,
//! `hr_lowest`; workouts `time_start`, `average_hr`, `sport {id, name, slug}`; activity
//! `distance`, `low`/`medium`/`high` in minutes, `heart_rate {avg_bpm, ...}`; body `weight`,
//! `fat`; meals `energy`, `macros`, `micros`; profile `height`. A push may also name a column
//! by its own (query-language) name, the shape pushes had before.
//! Decisions where the spec is silent (each is detailed on the private module that takes it:
//! `push`, `push_body`, `summary`, `sample`, `dates`; the rendering ones on `crate::render`'s):
//! - summary `id` is optional on push and then derived from (user, provider, source type,
//!   table, index time) with [`derive_id`]; activity ids always come from (user, provider,
//!   source type, date), profile ids from (user, provider): derived ids never collide between
//!   users;
//! - a record's zone is `±HH:MM`, `Z`, an IANA name or seconds east of UTC; the stored
//!   `timezone_offset` is its offset at the row's index instant, else null (the fallback zone
//!   is applied at query time, never stored);
//! - the hypnogram renders as the reference's stage samples
//!   (`"sleep_stream": {"hypnogram": [{start, end, value, ...}]}`) and is pushed that way or
//!   compactly as `{"hypnogram": [1, 2, ...], "interval": 300}`;
//! - read-only getter members (`user_id`, `calendar_date`, `source`, `created_at`,
//!   `updated_at`) are accepted and ignored on push, so a getter's output can be re-pushed;
//! - instants render in the row's own offset (else `Z`); samples in
//!   `{timestamp, start?, end?, timezone_offset, type, unit, value, ...}` order;
//! - bare query dates are UTC days and the returned range is half-open with an inclusive end.
//!
//! This module neither stores nor serves: the store and the HTTP layer call it.

// A `Violation` (136 bytes) is the error of every parsing step; it is built once per rejected
// request, so boxing it would cost every caller a `Box` for no measurable gain.
#![allow(clippy::result_large_err)]

mod columnar;
mod columnar_table;
pub(crate) mod columns;
mod context;
mod cycle;
mod dates;
pub(crate) mod fields;
pub(crate) mod json_schema;
mod pulled;
mod pulled_samples;
mod push;
mod push_body;
mod push_sample;
pub mod push_schema;
pub mod raw;
mod sample;
pub mod sample_rules;
pub(crate) mod summary;
pub(crate) mod zone;

pub use columnar::{
    ARROW_STREAM_MEDIA_TYPE, Columnar, ColumnarTarget, PARQUET_MEDIA_TYPE, parse_push_columnar,
};
pub use dates::{DATE_OR_DATE_TIME_PATTERN, parse_date_range};
pub use fields::{SOURCE_TYPES, push_key};
pub use pulled::{PulledBody, PulledRecord, parse_pulled};
pub(crate) use pulled_samples::number;
pub use pulled_samples::{PulledSample, PulledSamples, SampleTags, TypedSamples};
pub use push::{PushBatches, PushUser, parse_push, parse_push_json};
pub use summary::derive_id;
pub(crate) use zone::format_offset;
