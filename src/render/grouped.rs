//! The grouped timeseries getter's answer: one page of samples (see `page.rs`) grouped by
//! provider, then by source, written straight to JSON:
//! `{"groups": {"<provider>": [{"source": {...}, "data": [samples]}]}, "next_cursor": ...}`.
//!
//! Decisions where the spec is silent:
//! - A page is cut in paging order first and grouped after, so `limit` and the byte cap count
//!   samples across groups; providers and sources appear in the order of their first sample on
//!   the page. `next_cursor` is null on the last page.

use std::io::{self, Write};

use datafusion::arrow::record_batch::RecordBatch;
use serde_json::Value;

use super::page::{Cursor, Keys, PageBuilder, PageLimits, RowRef, SamplePage};
use super::sample_json::SampleWriter;
use super::summaries::source;
use crate::schema::Resource;
use crate::validation::Invalid;

/// One source's samples on a page.
struct Group<'a> {
    source: [&'a str; 4],
    rows: Vec<RowRef>,
}

impl SamplePage {
    /// Writes the page as the grouped getter's JSON object.
    pub fn write_grouped(&self, w: &mut impl Write) -> io::Result<()> {
        let keys: Vec<Keys<'_>> = self.batches.iter().map(Keys::of).collect();
        let mut providers: Vec<(&str, Vec<Group<'_>>)> = Vec::new();
        for &(batch, row) in &self.rows {
            let (_, source) = keys[batch as usize].get(row as usize);
            let p = match providers.iter().position(|(p, _)| *p == source[0]) {
                Some(p) => p,
                None => {
                    providers.push((source[0], Vec::new()));
                    providers.len() - 1
                }
            };
            let groups = &mut providers[p].1;
            match groups.iter_mut().find(|g| g.source == source) {
                Some(g) => g.rows.push((batch, row)),
                None => groups.push(Group {
                    source,
                    rows: vec![(batch, row)],
                }),
            }
        }
        let writers: Vec<SampleWriter<'_>> = self
            .batches
            .iter()
            .map(|b| SampleWriter::new(self.resource, b))
            .collect();
        w.write_all(b"{\"groups\":{")?;
        for (n, (provider, groups)) in providers.iter().enumerate() {
            if n > 0 {
                w.write_all(b",")?;
            }
            serde_json::to_writer(&mut *w, provider)?;
            w.write_all(b":[")?;
            for (g, group) in groups.iter().enumerate() {
                if g > 0 {
                    w.write_all(b",")?;
                }
                let (batch, row) = group.rows[0];
                w.write_all(b"{\"source\":")?;
                serde_json::to_writer(
                    &mut *w,
                    &source(&self.batches[batch as usize], row as usize),
                )?;
                w.write_all(b",\"data\":[")?;
                for (s, (batch, row)) in group.rows.iter().enumerate() {
                    if s > 0 {
                        w.write_all(b",")?;
                    }
                    writers[*batch as usize].write(*row as usize, w)?;
                }
                w.write_all(b"]}")?;
            }
            w.write_all(b"]")?;
        }
        w.write_all(b"},\"next_cursor\":")?;
        serde_json::to_writer(&mut *w, &self.next_cursor())?;
        w.write_all(b"}")
    }
}

/// Renders one page of samples grouped by provider and source, `limit` samples a page, from
/// `cursor` (the `cursor` query parameter), as a `Value`: for tests and small answers; the
/// HTTP layer streams [`SamplePage::write_grouped`] instead.
pub fn render_grouped(
    resource: Resource,
    batches: &[RecordBatch],
    cursor: Option<&str>,
    limit: usize,
) -> Result<Value, Invalid> {
    let from = cursor.map(|c| Cursor::parse(c, "cursor")).transpose()?;
    let limits = PageLimits {
        rows: limit,
        bytes: usize::MAX,
    };
    let mut page = PageBuilder::new(resource, from, limits);
    page.feed(batches.to_vec());
    let mut out = Vec::new();
    // Writing to a Vec cannot fail; the bytes are JSON by construction.
    let _ = page.finish().write_grouped(&mut out);
    Ok(serde_json::from_slice(&out).unwrap_or(Value::Null))
}
