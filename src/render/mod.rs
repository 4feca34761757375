//! The read side: stored record batches into the wire's JSON, for the getters and the events
//! alike (issue 36 split it from `ingest`, which parses pushes; this room imports `ingest`'s
//! column cells, zones and wire names, never the reverse).
//!
//! - [`render_summaries`] and [`render_profile`] turn stored batches into the summary getters'
//!   JSON, in the same field names a push uses, so a pushed body round-trips (`summaries.rs`;
//!   the menstrual cycle's list members `cycle.rs`).
//! - The timeseries getters answer pages: [`PageBuilder`] fills a [`SamplePage`] from time
//!   slices in cursor order up to [`PageLimits`] (samples and bytes), and the page writes
//!   itself as JSON ([`SamplePage::write_plain`], [`SamplePage::write_grouped`]) without a
//!   `Value` per sample (`page.rs`, `sample_json.rs`). [`render_samples`] and
//!   [`render_grouped`] are the same as `Value`s, for tests and small sets.
//! - The hypnogram as the reference's stage samples (`hypnogram.rs`), the derived per-session
//!   views ([`sessions`], [`streams`]) and electrocardiograms ([`ecg`]).
//! - [`keep_equal`]: the rows of one provider or source type, before rendering them.
//! - [`wire_schema`]: the OpenAPI schemas of what the getters answer, from the same
//!   column-to-wire map.
//!
//! Decisions where the spec is silent are on the module that takes them (`summaries`, `page`,
//! `grouped`): instants render in the row's own offset (else `Z`); samples in
//! `{timestamp, start?, end?, timezone_offset, type, unit, value, ...}` order.

// A `Violation` (136 bytes) is the error of a cursor's or a date's parsing, as in `ingest`;
// it is built once per rejected request, so boxing it would cost every caller a `Box`.
#![allow(clippy::result_large_err)]

mod cycle;
pub mod ecg;
mod grouped;
mod hypnogram;
mod page;
mod sample_json;
pub mod sessions;
pub mod streams;
mod summaries;
pub mod wire_schema;

pub use grouped::render_grouped;
pub use hypnogram::{hypnogram_grouped, hypnogram_plain};
pub use page::{Cursor, PageBuilder, PageLimits, SamplePage};
pub(crate) use summaries::source as render_source;
pub use summaries::{render_profile, render_samples, render_summaries, sport_id};

/// The rows of `batches` whose string `column` equals `value` (a provider, a source type):
/// batches without the column, or with no such row, are dropped.
pub fn keep_equal(
    batches: Vec<datafusion::arrow::array::RecordBatch>,
    column: &str,
    value: &str,
) -> Result<Vec<datafusion::arrow::array::RecordBatch>, datafusion::arrow::error::ArrowError> {
    use datafusion::arrow::array::StringArray;
    use datafusion::arrow::compute::filter_record_batch;
    use datafusion::arrow::compute::kernels::cmp::eq;
    let wanted = StringArray::new_scalar(value);
    let mut kept = Vec::with_capacity(batches.len());
    for batch in batches {
        let Some(values) = batch.column_by_name(column) else {
            continue;
        };
        let filtered = filter_record_batch(&batch, &eq(values, &wanted)?)?;
        if filtered.num_rows() > 0 {
            kept.push(filtered);
        }
    }
    Ok(kept)
}
