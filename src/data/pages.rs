//! Timeseries getter pages read from the store a time slice at a time, so one answer costs
//! memory in proportion to its page (`--getter-max-rows`, `--getter-max-bytes`), not to the
//! requested window: a year of 1 Hz samples is never decoded to serve its first page.
//!
//! Slices start at the later of the window's start and the cursor's instant. The first covers
//! an hour; each next one is sized from the density seen so far to hold about the samples the
//! page still lacks, between a minute and four times the previous slice, and at most 31 days.
//! So a 1 Hz series fills a 100,000-sample page in five reads of about the page, a 500 Hz one
//! reads minutes, and a sparse one reaches a month per read after a few reads. A series that
//! turns from sparse to dense inside one slice can still make that slice read up to 31 days
//! of dense data: the store reads whole windows. Reads go through the store's cache like every
//! other read.
//!
//! A window without an end (a getter called with `start_date` only) is read up to a year after
//! the later of its start and now: past that, an open window would be millions of empty
//! month-long reads before the answer (the store keeps no per-series extent to stop at).

use std::ops::Range;

use chrono::{DateTime, Duration, Utc};
use datafusion::arrow::array::{Array, BooleanArray, StringArray};
use datafusion::arrow::compute::filter_record_batch;
use datafusion::arrow::record_batch::RecordBatch;

use super::{DataError, read};
use crate::ingest::{Cursor, PageBuilder, PageLimits, SamplePage};
use crate::schema::{Dataset, Resource};
use crate::store::health::HealthStore;
use crate::store::metadata::User;

/// The first slice's length.
const FIRST_SLICE: Duration = Duration::hours(1);
/// The shortest slice after the first.
const SHORTEST_SLICE: Duration = Duration::minutes(1);
/// The longest slice.
const LONGEST_SLICE: Duration = Duration::days(31);
/// How far past the later of its start and now an open-ended window is read.
const OPEN_END_HORIZON: Duration = Duration::days(366);
/// How much a slice may grow over the previous one.
const GROWTH: i32 = 4;

/// Which samples of a resource a page holds: `provider`'s only when given, of sample `type`
/// `kind` only when given (the reference's `cholesterol/ldl` views).
#[derive(Debug, Clone, Copy, Default)]
pub struct SampleFilter<'a> {
    /// A provider slug.
    pub provider: Option<&'a str>,
    /// A sample `type`.
    pub kind: Option<&'a str>,
}

/// The rows of `batches` whose `type` is `kind`.
fn of_type(batches: Vec<RecordBatch>, kind: &str) -> Result<Vec<RecordBatch>, DataError> {
    batches
        .into_iter()
        .map(|batch| {
            let mask: BooleanArray = match batch
                .column_by_name("type")
                .and_then(|c| c.as_any().downcast_ref::<StringArray>())
            {
                Some(types) => types.iter().map(|t| Some(t == Some(kind))).collect(),
                None => BooleanArray::from(vec![false; batch.num_rows()]),
            };
            Ok(filter_record_batch(&batch, &mask)?)
        })
        .collect()
}

/// One page of `resource` samples in `window` that pass `filter`, from `from`.
pub async fn sample_page(
    store: &HealthStore,
    user: &User,
    resource: Resource,
    window: Range<DateTime<Utc>>,
    filter: SampleFilter<'_>,
    from: Option<Cursor>,
    limits: PageLimits,
) -> Result<SamplePage, DataError> {
    let mut start = window.start;
    if let Some(at) = from
        .as_ref()
        .and_then(|c| DateTime::<Utc>::from_timestamp_micros(c.timestamp))
    {
        start = start.max(at);
    }
    let horizon = window
        .start
        .max(Utc::now())
        .checked_add_signed(OPEN_END_HORIZON)
        .unwrap_or(DateTime::<Utc>::MAX_UTC);
    let window = window.start..window.end.min(horizon);
    let mut page = PageBuilder::new(resource, from, limits);
    let mut span = FIRST_SLICE;
    while start < window.end && !page.is_full() {
        let end = start
            .checked_add_signed(span)
            .map_or(window.end, |e| e.min(window.end));
        let batches = read(
            store,
            user,
            Dataset::Timeseries(resource),
            Some(start..end),
            filter.provider,
        )
        .await?;
        let batches = match filter.kind {
            Some(kind) => of_type(batches, kind)?,
            None => batches,
        };
        let read: usize = batches.iter().map(|b| b.num_rows()).sum();
        // Measuring rendered samples against the byte cap is CPU work: off the async threads.
        page = tokio::task::spawn_blocking(move || {
            page.feed(batches);
            page
        })
        .await?;
        span = next_span(end - start, read, limits.rows.saturating_sub(page.len()));
        start = end;
    }
    Ok(page.finish())
}

/// The next slice's length: about what holds `wanted` more samples at the density of the
/// last slice (`read` samples in `last`), within the bounds of the module docs.
fn next_span(last: Duration, read: usize, wanted: usize) -> Duration {
    let grown = last * GROWTH;
    let estimate = match (last.num_seconds(), i64::try_from(read)) {
        (seconds, Ok(read)) if read > 0 => {
            let wanted = i64::try_from(wanted).unwrap_or(i64::MAX);
            Duration::seconds(seconds.saturating_mul(wanted) / read)
        }
        _ => grown,
    };
    estimate.min(grown).clamp(SHORTEST_SLICE, LONGEST_SLICE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_follow_the_density_within_bounds() {
        let hour = Duration::hours(1);
        // 1 Hz: an hour held 3,600 samples, 96,400 wanted: grow, at most four times.
        assert_eq!(next_span(hour, 3_600, 96_400), hour * 4);
        // 4 h of 1 Hz, 24,400 wanted: about 6.8 h.
        assert_eq!(
            next_span(hour * 4, 14_400, 24_400),
            Duration::seconds(24_400)
        );
        // 500 Hz: an hour held 1.8 M samples, 100,000 wanted: 200 s.
        assert_eq!(next_span(hour, 1_800_000, 100_000), Duration::seconds(200));
        // Very dense: never under a minute. Empty: grow. Never over a month.
        assert_eq!(next_span(hour, 100_000_000, 10), SHORTEST_SLICE);
        assert_eq!(next_span(hour, 0, 10), hour * 4);
        assert_eq!(next_span(Duration::days(20), 0, 10), LONGEST_SLICE);
    }
}
