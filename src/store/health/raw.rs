//! Raw payloads: the documents behind summary records as they were received (a provider's
//! record as its API answered it, or a pushed record as it was pushed), kept next to the
//! user's Parquet segments so they live and die with the user's health data.
//!
//! Layout: `team=<id>/user=<id>/_raw/<part>/{seq:020}-{nonce:08x}.{min}.{max}.{count}.jsonl.gz`,
//! one file per part (`sleep`, `activity`, `workouts`, `body`, `profile`) per stored push or
//! pull chunk. The leading `_` keeps Hive-reading engines and the segment listings out of it.
//! `seq` and `nonce` are the store-wide creation order and collision guard segments use (see
//! `layout.rs`); `min`/`max` are the smallest and largest document instant in microseconds and
//! `count` the number of documents, so reads prune files by name without opening them. The
//! content is gzip-compressed JSON Lines, one `{"at": <microseconds>, "doc": {...}}` per
//! document, in the order they were given.
//!
//! Decisions where the spec is silent:
//! - Raw payloads are never in the metadata database (issue 43: it must not grow with the
//!   data); they cost one small compressed object per part per push.
//! - Files are written like commit records (`Backend::put_record`: temp file, fsync, rename
//!   locally; a create-only `put` on object storage), after the push's segments are committed.
//!   A crash in between loses that push's raw payloads, never its data; a file is never
//!   visible half-written.
//! - Files are never rewritten or merged: a record received again (an overlapping pull, a
//!   re-push) adds a document, and readers keep the newest per record (`crate::data::raw`).
//! - They go with the user: `delete_user` removes the whole user folder, `_raw` with it.
//!   A `_tmp-*` file a crash left in `_raw` is removed by start-up recovery (`recover.rs`).

use std::io::{Read, Write};
use std::ops::Range;

use flate2::Compression;
use flate2::read::GzDecoder;
use flate2::write::GzEncoder;
use futures::TryStreamExt;
use object_store::path::Path as ObjectPath;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

use super::error::StoreError;
use super::{HealthStore, layout};

/// The folder, in a user folder, holding raw payloads.
pub(crate) const RAW_DIR: &str = "_raw";
const SUFFIX: &str = ".jsonl.gz";

/// The parts raw payloads are kept for: the push body's summary parts.
pub const RAW_PARTS: [&str; 5] = ["sleep", "activity", "workouts", "body", "profile"];

/// One document as received, with the instant it is filed under.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RawDocument {
    /// The instant reads filter on, in microseconds since the epoch.
    pub at: i64,
    /// The document.
    pub doc: Value,
}

/// The parsed name of a raw file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct RawName {
    seq: u64,
    nonce: u32,
    min: i64,
    max: i64,
}

impl RawName {
    fn file_name(&self, count: usize) -> String {
        format!(
            "{:020}-{:08x}.{}.{}.{count}{SUFFIX}",
            self.seq, self.nonce, self.min, self.max
        )
    }

    fn parse(file: &str) -> Option<RawName> {
        let stem = file.strip_suffix(SUFFIX)?;
        let mut fields = stem.split('.');
        let (seq, nonce) = fields.next()?.split_once('-')?;
        let min = fields.next()?.parse().ok()?;
        let max = fields.next()?.parse().ok()?;
        let _count: usize = fields.next()?.parse().ok()?;
        if fields.next().is_some() || seq.len() != 20 || nonce.len() != 8 {
            return None;
        }
        Some(RawName {
            seq: seq.parse().ok()?,
            nonce: u32::from_str_radix(nonce, 16).ok()?,
            min,
            max,
        })
    }
}

/// The folder of a part's raw files.
fn part_dir(team: Uuid, user: Uuid, part: &str) -> String {
    format!("{}/{RAW_DIR}/{part}", layout::user_dir(team, user))
}

fn known_part(part: &str) -> Result<(), StoreError> {
    if RAW_PARTS.contains(&part) {
        Ok(())
    } else {
        Err(StoreError::Raw(format!("no raw part {part:?}")))
    }
}

/// Compresses documents as one file's content.
fn encode(docs: &[RawDocument]) -> Result<Vec<u8>, StoreError> {
    let mut gz = GzEncoder::new(Vec::new(), Compression::default());
    for doc in docs {
        serde_json::to_writer(&mut gz, doc).map_err(|e| StoreError::Raw(e.to_string()))?;
        gz.write_all(b"\n")
            .map_err(|e| StoreError::Raw(e.to_string()))?;
    }
    gz.finish().map_err(|e| StoreError::Raw(e.to_string()))
}

/// A file's documents.
fn decode(bytes: &[u8], file: &str) -> Result<Vec<RawDocument>, StoreError> {
    let mut text = String::new();
    GzDecoder::new(bytes)
        .read_to_string(&mut text)
        .map_err(|e| StoreError::Raw(format!("{file}: {e}")))?;
    text.lines()
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_str(l).map_err(|e| StoreError::Raw(format!("{file}: {e}"))))
        .collect()
}

impl HealthStore {
    /// Keeps `docs` of a user's `part` (one of [`RAW_PARTS`]) as one new file, durably.
    /// Nothing is written for no documents.
    pub async fn write_raw(
        &self,
        team: Uuid,
        user: Uuid,
        part: &str,
        docs: Vec<RawDocument>,
    ) -> Result<(), StoreError> {
        known_part(part)?;
        let (Some(min), Some(max)) = (
            docs.iter().map(|d| d.at).min(),
            docs.iter().map(|d| d.at).max(),
        ) else {
            return Ok(());
        };
        let name = RawName {
            seq: layout::next_seq(),
            nonce: layout::nonce(),
            min,
            max,
        }
        .file_name(docs.len());
        let dir = part_dir(team, user, part);
        let store = self.clone();
        crate::telemetry::spawn_blocking(move || {
            let bytes = encode(&docs)?;
            store.inner.backend.put_record(&dir, &name, bytes)
        })
        .await?
    }

    /// The documents of a user's `part` whose instant lies in `window` (microseconds, half
    /// open; every document without one), oldest file first and in each file's order.
    pub async fn read_raw(
        &self,
        team: Uuid,
        user: Uuid,
        part: &str,
        window: Option<Range<i64>>,
    ) -> Result<Vec<RawDocument>, StoreError> {
        known_part(part)?;
        let prefix = ObjectPath::from(part_dir(team, user, part));
        let metas: Vec<_> = match self.inner.objects.list(Some(&prefix)).try_collect().await {
            Ok(metas) => metas,
            Err(object_store::Error::NotFound { .. }) => Vec::new(),
            Err(e) => return Err(e.into()),
        };
        let mut files: Vec<(RawName, String)> = metas
            .into_iter()
            .filter_map(|m| {
                let file = m.location.filename()?.to_owned();
                let name = RawName::parse(&file)?;
                let wanted = window
                    .as_ref()
                    .is_none_or(|w| name.min < w.end && name.max >= w.start);
                wanted.then(|| (name, m.location.to_string()))
            })
            .collect();
        files.sort_by_key(|(n, _)| (n.seq, n.nonce));
        let store = self.clone();
        crate::telemetry::spawn_blocking(move || {
            let mut out = Vec::new();
            for (_, path) in files {
                // A file removed since the listing (its user deleted meanwhile) is skipped.
                let Some(bytes) = store.inner.backend.read(&path)? else {
                    continue;
                };
                out.extend(
                    decode(&bytes, &path)?
                        .into_iter()
                        .filter(|d| window.as_ref().is_none_or(|w| w.contains(&d.at))),
                );
            }
            Ok(out)
        })
        .await?
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_round_trip_and_strays_are_not_names() {
        let name = RawName {
            seq: 1_700_000_000_000_000,
            nonce: 0xdead_beef,
            min: -5,
            max: 42,
        };
        let file = name.file_name(3);
        assert_eq!(file, "00001700000000000000-deadbeef.-5.42.3.jsonl.gz");
        assert_eq!(RawName::parse(&file), Some(name));
        for stray in [
            "_tmp-x.partial",
            "00001700000000000000-deadbeef.1.2.parquet",
            "1-deadbeef.1.2.3.jsonl.gz",
            "00001700000000000000-deadbeef.1.2.3.4.jsonl.gz",
        ] {
            assert_eq!(RawName::parse(stray), None, "{stray}");
        }
    }

    #[test]
    fn content_round_trips() {
        let docs = vec![
            RawDocument {
                at: 1,
                doc: json!({"id": "a", "nested": {"x": [1, 2.5, null]}}),
            },
            RawDocument {
                at: -7,
                doc: json!("text\nwith a newline"),
            },
        ];
        let bytes = encode(&docs).unwrap();
        assert_eq!(decode(&bytes, "f").unwrap(), docs);
        assert!(decode(b"not gzip", "f").is_err());
    }
}
