//! Pages of timeseries samples for the getters: cursors, the paging order, and the caps that
//! bound one answer.
//!
//! Decisions where the spec is silent:
//! - Samples are paged in (timestamp, provider, source type, app id, device id) order, nulls as
//!   empty strings; both timeseries getters page the same way.
//! - A page ends at the first of: `rows` samples, or the next sample would take the rendered
//!   samples past `bytes` (a page holds at least one sample, whatever its size). The caps are
//!   [`PageLimits`]; the HTTP layer takes them from the configuration and a `limit` parameter.
//! - The cursor is opaque to clients: the hex of the sort key of the first sample of the next
//!   page, so pages stay stable while new data arrives after them. A cursor that does not
//!   decode is a 422 at `["query", <the parameter that carried it>]`.
//! - Pages are filled from time slices fed in order ([`PageBuilder::feed`]), so a caller can read
//!   the store a slice at a time and stop as soon as the page is full; a slice only needs to be
//!   sorted within each batch (store reads are), unsorted batches are ordered on the fly.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use datafusion::arrow::array::{Array, AsArray, StringArray, TimestampMicrosecondArray};
use datafusion::arrow::datatypes::TimestampMicrosecondType;
use datafusion::arrow::record_batch::RecordBatch;
use serde_json::Value;

use super::sample_json::SampleWriter;
use crate::schema::{Resource, SOURCE_COLUMNS};
use crate::validation::{Loc, Violation};

/// How much one page may hold. The defaults are the server's (`--getter-max-rows`,
/// `--getter-max-bytes`): about 10 MB of JSON for 1 Hz heart rate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageLimits {
    /// Samples per page (at least 1); default [`PageLimits::DEFAULT_ROWS`].
    pub rows: usize,
    /// Bytes of rendered samples per page (a page holds at least one sample); default
    /// [`PageLimits::DEFAULT_BYTES`].
    pub bytes: usize,
}

impl PageLimits {
    /// The default cap on samples per answer.
    pub const DEFAULT_ROWS: usize = 100_000;
    /// The default cap on bytes of rendered samples per answer (16 MiB).
    pub const DEFAULT_BYTES: usize = 16 * 1024 * 1024;
}

impl Default for PageLimits {
    fn default() -> Self {
        PageLimits {
            rows: Self::DEFAULT_ROWS,
            bytes: Self::DEFAULT_BYTES,
        }
    }
}

/// A position in the paging order: (timestamp in microseconds, provider, source type, app id,
/// device id).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Cursor {
    /// Microseconds since the epoch.
    pub timestamp: i64,
    source: [String; 4],
}

impl Cursor {
    /// Decodes a cursor a client sent in the query parameter `param`.
    pub fn parse(text: &str, param: &str) -> Result<Cursor, Violation> {
        decode(text).ok_or_else(|| {
            Violation::value(vec![Loc::from("query"), Loc::from(param)], "Invalid cursor")
                .with_input(Value::from(text))
        })
    }

    /// The opaque text form.
    pub fn encode(&self) -> String {
        let [p, t, a, d] = &self.source;
        hex::encode(format!(
            "{}\u{1f}{p}\u{1f}{t}\u{1f}{a}\u{1f}{d}",
            self.timestamp
        ))
    }

    fn of(key: KeyRef<'_>) -> Cursor {
        Cursor {
            timestamp: key.0,
            source: key.1.map(str::to_owned),
        }
    }

    fn as_key(&self) -> KeyRef<'_> {
        let [p, t, a, d] = &self.source;
        (
            self.timestamp,
            [p.as_str(), t.as_str(), a.as_str(), d.as_str()],
        )
    }
}

fn decode(cursor: &str) -> Option<Cursor> {
    let text = String::from_utf8(hex::decode(cursor).ok()?).ok()?;
    let mut parts = text.split('\u{1f}');
    let timestamp = parts.next()?.parse().ok()?;
    let mut next = || parts.next().map(str::to_owned);
    let source = [next()?, next()?, next()?, next()?];
    parts
        .next()
        .is_none()
        .then_some(Cursor { timestamp, source })
}

/// A sort key borrowed from a batch.
pub(crate) type KeyRef<'a> = (i64, [&'a str; 4]);

/// The key columns of one batch.
pub(crate) struct Keys<'a> {
    time: Option<&'a TimestampMicrosecondArray>,
    source: [Option<&'a StringArray>; 4],
}

impl<'a> Keys<'a> {
    pub(crate) fn of(batch: &'a RecordBatch) -> Self {
        let time = batch
            .column_by_name("timestamp")
            .and_then(|a| a.as_primitive_opt::<TimestampMicrosecondType>());
        let string = |name| batch.column_by_name(name).and_then(|a| a.as_string_opt());
        Keys {
            time,
            source: SOURCE_COLUMNS.map(string),
        }
    }

    pub(crate) fn get(&self, row: usize) -> KeyRef<'a> {
        let ts = self
            .time
            .filter(|a| a.is_valid(row))
            .map_or(0, |a| a.value(row));
        let s = |c: Option<&'a StringArray>| match c {
            Some(a) if a.is_valid(row) => a.value(row),
            _ => "",
        };
        (ts, self.source.map(s))
    }
}

/// One sample of a page: (batch index, row).
pub(crate) type RowRef = (u32, u32);

/// Fills one page from time slices fed in paging order.
pub struct PageBuilder {
    resource: Resource,
    from: Option<Cursor>,
    limits: PageLimits,
    batches: Vec<RecordBatch>,
    rows: Vec<RowRef>,
    bytes: usize,
    next: Option<Cursor>,
    scratch: Vec<u8>,
}

/// One batch's rows in paging order, from the first row at or after the cursor.
struct Run<'a> {
    keys: Keys<'a>,
    order: Option<Vec<u32>>,
    pos: usize,
    len: usize,
}

impl Run<'_> {
    fn row(&self, pos: usize) -> usize {
        self.order.as_ref().map_or(pos, |o| o[pos] as usize)
    }
}

impl PageBuilder {
    /// An empty page of `resource` starting at `from` (the first page without one).
    pub fn new(resource: Resource, from: Option<Cursor>, limits: PageLimits) -> Self {
        PageBuilder {
            resource,
            from,
            limits: PageLimits {
                rows: limits.rows.max(1),
                bytes: limits.bytes,
            },
            batches: Vec::new(),
            rows: Vec::new(),
            bytes: 0,
            next: None,
            scratch: Vec::new(),
        }
    }

    /// Samples on the page so far.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// True while the page holds no sample.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// True once a cap was reached: later slices cannot add to this page.
    pub fn is_full(&self) -> bool {
        self.next.is_some()
    }

    /// Adds the samples of one time slice; every slice fed must come after the previous one in
    /// time (each batch sorted or not). Keeps only the batches the page uses.
    pub fn feed(&mut self, slice: Vec<RecordBatch>) {
        if self.is_full() {
            return;
        }
        let base = self.batches.len();
        let mut kept = Vec::new();
        {
            let mut runs: Vec<Run<'_>> = slice.iter().map(|b| self.run(b)).collect();
            let writers: Vec<SampleWriter<'_>> = slice
                .iter()
                .map(|b| SampleWriter::new(self.resource, b))
                .collect();
            let mut heap: BinaryHeap<Reverse<(KeyRef<'_>, usize)>> = runs
                .iter()
                .enumerate()
                .filter(|(_, r)| r.pos < r.len)
                .map(|(i, r)| Reverse((r.keys.get(r.row(r.pos)), i)))
                .collect();
            let mut used = vec![None; runs.len()];
            while let Some(Reverse((key, i))) = heap.pop() {
                let run = &mut runs[i];
                let row = run.row(run.pos);
                if self.rows.len() >= self.limits.rows {
                    self.next = Some(Cursor::of(key));
                    break;
                }
                self.scratch.clear();
                // Writing to a Vec cannot fail.
                let _ = writers[i].write(row, &mut self.scratch);
                let size = self.scratch.len() + 1;
                if !self.rows.is_empty() && self.bytes + size > self.limits.bytes {
                    self.next = Some(Cursor::of(key));
                    break;
                }
                self.bytes += size;
                let index = *used[i].get_or_insert_with(|| {
                    kept.push(i);
                    base + kept.len() - 1
                });
                self.rows.push((index as u32, row as u32));
                run.pos += 1;
                if run.pos < run.len {
                    heap.push(Reverse((run.keys.get(run.row(run.pos)), i)));
                }
            }
        }
        let mut slice: Vec<Option<RecordBatch>> = slice.into_iter().map(Some).collect();
        for i in kept {
            if let Some(batch) = slice[i].take() {
                self.batches.push(batch);
            }
        }
    }

    /// The batch's rows in paging order, positioned at the cursor.
    fn run<'a>(&self, batch: &'a RecordBatch) -> Run<'a> {
        let keys = Keys::of(batch);
        let len = batch.num_rows();
        let sorted = (1..len).all(|r| keys.get(r - 1) <= keys.get(r));
        let order = (!sorted).then(|| {
            let mut order: Vec<u32> = (0..len as u32).collect();
            order.sort_by_key(|r| keys.get(*r as usize));
            order
        });
        let mut run = Run {
            keys,
            order,
            pos: 0,
            len,
        };
        if let Some(from) = &self.from {
            let from = from.as_key();
            let (mut lo, mut hi) = (0, len);
            while lo < hi {
                let mid = (lo + hi) / 2;
                if run.keys.get(run.row(mid)) < from {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            run.pos = lo;
        }
        run
    }

    /// The finished page.
    pub fn finish(self) -> SamplePage {
        SamplePage {
            resource: self.resource,
            batches: self.batches,
            rows: self.rows,
            next: self.next,
        }
    }
}

/// One page of samples, ready to render (see [`SamplePage::write_plain`] and
/// [`SamplePage::write_grouped`]).
pub struct SamplePage {
    pub(crate) resource: Resource,
    pub(crate) batches: Vec<RecordBatch>,
    pub(crate) rows: Vec<RowRef>,
    next: Option<Cursor>,
}

impl SamplePage {
    /// Samples on this page.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// True when the page holds no sample.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The cursor of the next page, `None` on the last page.
    pub fn next_cursor(&self) -> Option<String> {
        self.next.as_ref().map(Cursor::encode)
    }

    /// Writes the page as the plain getter's JSON array of samples.
    pub fn write_plain(&self, w: &mut impl std::io::Write) -> std::io::Result<()> {
        let writers: Vec<SampleWriter<'_>> = self
            .batches
            .iter()
            .map(|b| SampleWriter::new(self.resource, b))
            .collect();
        w.write_all(b"[")?;
        for (n, (batch, row)) in self.rows.iter().enumerate() {
            if n > 0 {
                w.write_all(b",")?;
            }
            writers[*batch as usize].write(*row as usize, w)?;
        }
        w.write_all(b"]")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_garbage_is_refused() {
        let c = Cursor {
            timestamp: 42,
            source: ["oura".into(), "ring".into(), String::new(), "d1".into()],
        };
        assert_eq!(decode(&c.encode()), Some(c));
        assert_eq!(decode("zz"), None);
        assert_eq!(decode(&hex::encode("1\u{1f}a")), None);
        let err = Cursor::parse("zz", "next_cursor").unwrap_err();
        assert_eq!(err.loc, vec![Loc::from("query"), Loc::from("next_cursor")]);
    }
}
