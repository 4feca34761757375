//! What each scrape reads instead of counting: the health store's counters (segments, cache,
//! bytes), the rate limiter's buckets, and the job queue as the `/metrics` handler read it from
//! the metadata database just before encoding (queue depth and the oldest due job's age per
//! kind: the database is the truth when several processes share the queue).

use std::sync::{Arc, Mutex};

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::Unit;

pub use crate::store::metadata::jobs::QueueStat;

/// A gauge of the queue: name, help, unit, and its value for one kind.
type QueueGauge<'a> = (&'a str, &'a str, Option<&'a Unit>, fn(&QueueStat) -> f64);

/// The job queue per kind, as last read.
#[derive(Debug)]
pub(super) struct Queue(pub(super) Arc<Mutex<Vec<QueueStat>>>);

impl Collector for Queue {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let stats = self.0.lock().unwrap_or_else(|p| p.into_inner()).clone();
        if stats.is_empty() {
            // An empty queue: no family rather than families without samples, as the client
            // does for its own metrics.
            return Ok(());
        }
        let gauges: [QueueGauge<'_>; 4] = [
            (
                "jobs_queued",
                "Jobs due and waiting for a runner, by kind",
                None,
                |s| s.queued as f64,
            ),
            (
                "jobs_scheduled",
                "Jobs waiting for a later time (retries, periodic pulls), by kind",
                None,
                |s| s.scheduled as f64,
            ),
            (
                "jobs_running",
                "Jobs claimed by a runner, by kind",
                None,
                |s| s.running as f64,
            ),
            (
                "jobs_oldest_queued_age",
                "How long the longest-waiting due job has been due, by kind (0 when none is)",
                Some(&Unit::Seconds),
                |s| s.oldest_queued_age.as_secs_f64(),
            ),
        ];
        for (name, help, unit, value) in gauges {
            let mut family = encoder.encode_descriptor(name, help, unit, MetricType::Gauge)?;
            for s in &stats {
                let labels = [("kind", s.kind.as_str())];
                ConstGauge::new(value(s)).encode(family.encode_family(&labels)?)?;
            }
        }
        Ok(())
    }
}

/// The health store's counters (monotonic since it was opened) and its cache's size.
#[derive(Debug)]
pub(super) struct Store(pub(super) crate::store::health::HealthStore);

impl Collector for Store {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let m = self.0.metrics();
        let counters = [
            (
                "store_segments_written",
                "Segments written by pushes and compactions",
                None,
                m.segments_written,
            ),
            (
                "store_segments_read",
                "Segments fetched and decoded by reads",
                None,
                m.segments_read,
            ),
            (
                "store_segments_pruned",
                "Segments a read skipped by their time range",
                None,
                m.segments_pruned,
            ),
            (
                "store_segments_compacted",
                "Segments merged away by compactions",
                None,
                m.segments_compacted,
            ),
            (
                "store_compactions",
                "Compactions that merged something",
                None,
                m.compactions,
            ),
            ("store_rows_written", "Rows written", None, m.rows_written),
            (
                "store_rows_read",
                "Rows decoded from Parquet",
                None,
                m.rows_read,
            ),
            (
                "store_written",
                "Bytes of segments written",
                Some(&Unit::Bytes),
                m.bytes_written,
            ),
            (
                "store_read",
                "Bytes of segments fetched",
                Some(&Unit::Bytes),
                m.bytes_read,
            ),
            (
                "store_cache_hits",
                "Reads answered from the decoded-batch cache",
                None,
                m.cache_hits,
            ),
            (
                "store_cache_misses",
                "Reads that went to Parquet",
                None,
                m.cache_misses,
            ),
            (
                "store_cache_evictions",
                "Cache entries evicted to stay under the byte bound",
                None,
                m.cache_evictions,
            ),
        ];
        for (name, help, unit, value) in counters {
            let family = encoder.encode_descriptor(name, help, unit, MetricType::Counter)?;
            ConstCounter::new(value).encode(family)?;
        }
        let family = encoder.encode_descriptor(
            "store_cache",
            "Decoded batches held by the read cache",
            Some(&Unit::Bytes),
            MetricType::Gauge,
        )?;
        ConstGauge::new(self.0.cache_bytes() as f64).encode(family)?;
        Ok(())
    }
}

/// The rate limiter's buckets held in memory.
#[derive(Debug)]
pub(super) struct Buckets(pub(super) crate::rate_limit::Limiter);

impl Collector for Buckets {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let family = encoder.encode_descriptor(
            "rate_limit_buckets",
            "Rate-limit buckets held (clients seen within their refill time)",
            None,
            MetricType::Gauge,
        )?;
        ConstGauge::new(self.0.tracked() as f64).encode(family)?;
        Ok(())
    }
}
