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
//! The store's segment extents (`HealthStore::extents`: time range and rows of each segment,
//! from their names, one listing per page) steer the slices, so the cost of a page follows the
//! data, not the window:
//! - a slice never starts where no segment has data: its start moves to the next instant one
//!   covers, and the page ends after the last, so a window from year 0 (or without an end),
//!   years between two recordings, or a user without the series cost one listing;
//! - a slice reaches, whatever the density rule says, as far as the segments it touches hold
//!   at most [`READ_BUDGET`] rows (or the page's row cap, if larger) in all, so a few samples
//!   spread over centuries (one push of a clock gone wrong) are read in one go, not a month
//!   at a time.

use std::ops::Range;

use chrono::{DateTime, Duration, Utc};
use datafusion::arrow::array::{Array, BooleanArray, StringArray};
use datafusion::arrow::compute::filter_record_batch;
use datafusion::arrow::record_batch::RecordBatch;

use super::{DataError, read};
use crate::render::{Cursor, PageBuilder, PageLimits, SamplePage};
use crate::schema::{Dataset, Resource};
use crate::store::health::{Extent, HealthStore};
use crate::store::metadata::User;

/// The first slice's length.
const FIRST_SLICE: Duration = Duration::hours(1);
/// The shortest slice after the first.
const SHORTEST_SLICE: Duration = Duration::minutes(1);
/// The longest slice.
const LONGEST_SLICE: Duration = Duration::days(31);
/// How much a slice may grow over the previous one.
const GROWTH: i32 = 4;
/// The most rows the segments a slice touches may hold for it to reach past the density rule
/// (unless the page's row cap is larger).
const READ_BUDGET: usize = 10_000;

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
    let dataset = Dataset::Timeseries(resource);
    let coverage = Coverage(store.extents(user.team_id, user.id, dataset).await?);
    let budget = u64::try_from(limits.rows.max(READ_BUDGET)).unwrap_or(u64::MAX);
    let mut page = PageBuilder::new(resource, from, limits);
    let mut span = FIRST_SLICE;
    while !page.is_full() {
        // Skip to where the series has data; past its last segment the page is complete.
        let Some(next) = coverage.next_data(start.timestamp_micros()) else {
            break;
        };
        start = start.max(DateTime::<Utc>::from_timestamp_micros(next).unwrap_or(start));
        if start >= window.end {
            break;
        }
        let by_density = start.checked_add_signed(span).unwrap_or(window.end);
        let by_rows = DateTime::<Utc>::from_timestamp_micros(coverage.reach(next, budget))
            .unwrap_or(window.end);
        let end = by_density.max(by_rows).min(window.end);
        let batches = read(store, user, dataset, Some(start..end), filter.provider).await?;
        let batches = match filter.kind {
            Some(kind) => of_type(batches, kind)?,
            None => batches,
        };
        let read: usize = batches.iter().map(|b| b.num_rows()).sum();
        // Measuring rendered samples against the byte cap is CPU work: off the async threads.
        page = crate::telemetry::spawn_blocking(move || {
            page.feed(batches);
            page
        })
        .await?;
        span = next_span(end - start, read, limits.rows.saturating_sub(page.len()));
        start = end;
    }
    Ok(page.finish())
}

/// Where a series has data: its segments' extents (times in microseconds).
struct Coverage(Vec<Extent>);

impl Coverage {
    /// The first instant at or after `at` that a segment covers, or `None` past the last.
    fn next_data(&self, at: i64) -> Option<i64> {
        self.0
            .iter()
            .filter(|e| e.end > at)
            .map(|e| e.start.max(at))
            .min()
    }

    /// How far from `from` a read may reach while the segments it touches hold at most
    /// `budget` rows in all: the start of the first segment past the budget, `i64::MAX` when
    /// none is.
    fn reach(&self, from: i64, budget: u64) -> i64 {
        let mut touched: Vec<(i64, u64)> = self
            .0
            .iter()
            .filter(|e| e.end > from)
            .map(|e| (e.start.max(from), e.rows))
            .collect();
        touched.sort_unstable();
        let mut rows = 0u64;
        for (start, n) in touched {
            rows = rows.saturating_add(n);
            if rows > budget {
                return start;
            }
        }
        i64::MAX
    }
}

/// The next slice's length: about what holds `wanted` more samples at the density of the
/// last slice (`read` samples in `last`), within the bounds of the module docs.
fn next_span(last: Duration, read: usize, wanted: usize) -> Duration {
    // A slice that reached past the longest (sparse segments) counts as the longest: the
    // answer is at most that anyway, and the arithmetic stays in range.
    let last = last.min(LONGEST_SLICE);
    let grown = last * GROWTH;
    let estimate = match (last.num_seconds(), i64::try_from(read)) {
        (seconds, Ok(read)) if read > 0 => {
            let wanted = i64::try_from(wanted).unwrap_or(i64::MAX);
            Duration::try_seconds(seconds.saturating_mul(wanted) / read).unwrap_or(grown)
        }
        _ => grown,
    };
    estimate.min(grown).clamp(SHORTEST_SLICE, LONGEST_SLICE)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn extent(start: i64, end: i64, rows: u64) -> Extent {
        Extent { start, end, rows }
    }

    #[test]
    fn slices_start_where_the_series_has_data() {
        let coverage = Coverage(vec![extent(100, 200, 5), extent(150, 1_001, 2)]);
        assert_eq!(coverage.next_data(-5_000_000), Some(100));
        assert_eq!(coverage.next_data(150), Some(150));
        assert_eq!(coverage.next_data(500), Some(500));
        assert_eq!(coverage.next_data(1_001), None);
        let gap = Coverage(vec![extent(0, 10, 1), extent(1_000, 1_001, 1)]);
        assert_eq!(gap.next_data(10), Some(1_000));
        assert_eq!(Coverage(Vec::new()).next_data(0), None);
    }

    #[test]
    fn slices_reach_as_far_as_the_rows_they_touch_allow() {
        let coverage = Coverage(vec![
            extent(0, 10, 3),
            extent(5, 1_000_000, 2),
            extent(2_000_000, 2_000_001, 10),
        ]);
        // Sparse: everything fits the budget, read to the end.
        assert_eq!(coverage.reach(0, 100), i64::MAX);
        // The third segment would pass a budget of 10: stop where it starts.
        assert_eq!(coverage.reach(0, 10), 2_000_000);
        assert_eq!(coverage.reach(20, 10), 2_000_000);
        // Already past the budget where the slice starts: the density rule decides.
        assert_eq!(coverage.reach(7, 4), 7);
    }

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
        // A slice of centuries (reached by rows), or a huge page: still in range.
        assert_eq!(next_span(Duration::days(400_000), 3, 10), LONGEST_SLICE);
        assert_eq!(next_span(hour, 1, usize::MAX), hour * 4);
    }
}
