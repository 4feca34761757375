//! Where things live: one folder per team / user / dataset, and segment file names that carry
//! their creation order and time range.
//!
//! Folders are Hive-style partitions, so other engines read the store in place and get the ids
//! as columns: `team=<uuid>/user=<uuid>/dataset=<table>/` for a summary table (`dataset=sleep`)
//! and `team=<uuid>/user=<uuid>/dataset=timeseries/resource=<name>/` for a timeseries. Every
//! segment of one dataset has that dataset's storage schema (`crate::schema`). A user folder
//! also holds `_commits/` (see `commit.rs`), which such readers skip by the leading `_`.
//! Stores written before these names (`<team>/<user>/sleep/`, `…/timeseries/heartrate/`) are
//! renamed in place by start-up recovery (`recover.rs`).
//!
//! A segment is named `{seq:020}-{gen:04}-{part:04}-{nonce:08x}.{min}.{max}.{rows}[.c].parquet`:
//! - `seq` is a store-wide monotonic sequence (microseconds since the epoch at creation, bumped
//!   so it never repeats in a process), so names sort by creation; `gen`/`part` order the
//!   outputs of compactions, which reuse the newest input's `seq` with a higher `gen` and so
//!   sort after every input and before every later write; `nonce` keeps two processes writing
//!   the same dataset in the same microsecond from colliding.
//! - `min`/`max` are the smallest and largest value of the dataset's time column in microseconds
//!   (a `Date32` day counts as its midnight UTC), or `n` when every row's time is null; `rows`
//!   is the row count. Reads prune segments by name without opening them.
//! - `.c` marks a segment of a multi-dataset push: it counts only once the user's commit record
//!   `_commits/{seq:020}-{nonce:08x}.commit` exists (see `commit.rs`). Every segment of one push
//!   shares that `seq` and `nonce`. Unmarked segments commit themselves by existing.
//!
//! Writers first write `_tmp-{uuid}.partial` in the same folder; only a completed, fsynced file
//! is renamed to a segment name. Anything not matching the pattern is ignored by readers.
//!
//! A user folder may also hold `_raw/<part>/`: the payloads behind its summaries as received,
//! `{seq:020}-{nonce:08x}.{min}.{max}.{count}.jsonl.gz` (see `raw.rs`). Segment listings never
//! enter it.

use std::cmp::Ordering as CmpOrdering;
use std::sync::atomic::{AtomicU64, Ordering};

use uuid::Uuid;

use crate::schema::{Dataset, RESOURCES, Table, resource};

/// Prefix of in-progress files; never a segment.
pub(crate) const TEMP_PREFIX: &str = "_tmp-";
/// Prefix of a user folder being deleted (renamed away first, then removed).
pub(crate) const DELETED_PREFIX: &str = "_deleted-";
/// Prefix of a retirement record in a dataset folder (object storage; see `retire.rs`).
pub(crate) const RETIRED_PREFIX: &str = "_retired-";
/// The folder, in a user folder, holding the commit records of multi-dataset pushes.
pub(crate) const COMMITS_DIR: &str = "_commits";
/// The Hive partition keys of the folders (`team=…/user=…/dataset=…[/resource=…]`).
pub(crate) const TEAM_KEY: &str = "team";
pub(crate) const USER_KEY: &str = "user";
pub(crate) const DATASET_KEY: &str = "dataset";
pub(crate) const RESOURCE_KEY: &str = "resource";
/// The `dataset` value of every timeseries folder; its `resource` folder names the series.
pub(crate) const TIMESERIES: &str = "timeseries";
const SUFFIX: &str = ".parquet";
const COMMIT_MARK: &str = ".c";
const RECORD_SUFFIX: &str = ".commit";

/// The identity of one multi-dataset push: the `seq` and `nonce` all its segments share.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct CommitId {
    pub(crate) seq: u64,
    pub(crate) nonce: u32,
}

impl CommitId {
    /// The commit record's file name in the user's `_commits` folder.
    pub(crate) fn record_name(&self) -> String {
        format!("{:020}-{:08x}{RECORD_SUFFIX}", self.seq, self.nonce)
    }

    /// Parses a record file name; `None` for anything else (temp files, strays).
    pub(crate) fn parse_record(file: &str) -> Option<CommitId> {
        let (seq, nonce) = file.strip_suffix(RECORD_SUFFIX)?.split_once('-')?;
        if seq.len() != 20 || nonce.len() != 8 {
            return None;
        }
        Some(CommitId {
            seq: seq.parse().ok()?,
            nonce: u32::from_str_radix(nonce, 16).ok()?,
        })
    }
}

/// The parsed name of one segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct SegmentName {
    pub(crate) seq: u64,
    pub(crate) generation: u32,
    pub(crate) part: u32,
    pub(crate) nonce: u32,
    /// Time range of non-null time values, in microseconds, inclusive.
    pub(crate) range: Option<(i64, i64)>,
    pub(crate) rows: u64,
    /// Part of a multi-dataset push: visible only once its commit record exists.
    pub(crate) committed_by_record: bool,
}

impl SegmentName {
    /// Parses a file name; `None` for anything that is not a segment (temp files, strays).
    pub(crate) fn parse(file: &str) -> Option<SegmentName> {
        let stem = file.strip_suffix(SUFFIX)?;
        let (stem, committed_by_record) = match stem.strip_suffix(COMMIT_MARK) {
            Some(stem) => (stem, true),
            None => (stem, false),
        };
        let mut dots = stem.split('.');
        let order = dots.next()?;
        let min = dots.next()?;
        let max = dots.next()?;
        let rows = dots.next()?.parse().ok()?;
        if dots.next().is_some() {
            return None;
        }
        let mut dashes = order.split('-');
        let seq = dashes.next().filter(|s| s.len() == 20)?.parse().ok()?;
        let generation = dashes.next().filter(|s| s.len() == 4)?.parse().ok()?;
        let part = dashes.next().filter(|s| s.len() == 4)?.parse().ok()?;
        let nonce = u32::from_str_radix(dashes.next().filter(|s| s.len() == 8)?, 16).ok()?;
        if dashes.next().is_some() {
            return None;
        }
        let range = match (min, max) {
            ("n", "n") => None,
            (min, max) => Some((min.parse().ok()?, max.parse().ok()?)),
        };
        Some(SegmentName {
            seq,
            generation,
            part,
            nonce,
            range,
            rows,
            committed_by_record,
        })
    }

    /// The file name.
    pub(crate) fn file_name(&self) -> String {
        let (min, max) = match self.range {
            Some((a, b)) => (a.to_string(), b.to_string()),
            None => ("n".to_owned(), "n".to_owned()),
        };
        let mark = if self.committed_by_record {
            COMMIT_MARK
        } else {
            ""
        };
        format!(
            "{:020}-{:04}-{:04}-{:08x}.{min}.{max}.{}{mark}{SUFFIX}",
            self.seq, self.generation, self.part, self.nonce, self.rows
        )
    }

    /// The push whose commit record makes this segment visible, if it needs one.
    pub(crate) fn commit(&self) -> Option<CommitId> {
        self.committed_by_record.then_some(CommitId {
            seq: self.seq,
            nonce: self.nonce,
        })
    }

    /// Creation order: later segments win ties between equal `ingested_at`.
    pub(crate) fn order(&self, other: &SegmentName) -> CmpOrdering {
        (self.seq, self.generation, self.part, self.nonce).cmp(&(
            other.seq,
            other.generation,
            other.part,
            other.nonce,
        ))
    }

    /// Whether the segment may hold rows whose time is in `[start, end)` (microseconds).
    pub(crate) fn overlaps(&self, start: i64, end: i64) -> bool {
        self.range
            .is_some_and(|(min, max)| max >= start && min < end)
    }
}

static LAST_SEQ: AtomicU64 = AtomicU64::new(0);

/// The next store-wide sequence number: the current time in microseconds, or one more than the
/// last one handed out when the clock has not moved (or went backwards).
pub(crate) fn next_seq() -> u64 {
    let now = u64::try_from(chrono::Utc::now().timestamp_micros()).unwrap_or(0);
    let mut last = LAST_SEQ.load(Ordering::Relaxed);
    loop {
        let next = now.max(last + 1);
        match LAST_SEQ.compare_exchange_weak(last, next, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => return next,
            Err(seen) => last = seen,
        }
    }
}

/// How long ago `seq` was handed out (zero for one ahead of the clock).
pub(crate) fn age(seq: u64) -> std::time::Duration {
    let now = u64::try_from(chrono::Utc::now().timestamp_micros()).unwrap_or(0);
    std::time::Duration::from_micros(now.saturating_sub(seq))
}

/// A random nonce for segment names.
pub(crate) fn nonce() -> u32 {
    rand::random()
}

/// A fresh temporary file name.
pub(crate) fn temp_name() -> String {
    format!("{TEMP_PREFIX}{}.partial", Uuid::new_v4().simple())
}

/// The team folder's name.
pub(crate) fn team_folder(team: Uuid) -> String {
    format!("{TEAM_KEY}={team}")
}

/// The user folder, relative to the store root.
pub(crate) fn user_dir(team: Uuid, user: Uuid) -> String {
    format!("{TEAM_KEY}={team}/{USER_KEY}={user}")
}

/// The user's commit-record folder, relative to the store root.
pub(crate) fn commits_dir(team: Uuid, user: Uuid) -> String {
    format!("{}/{COMMITS_DIR}", user_dir(team, user))
}

/// The dataset folder, relative to the user folder: `dataset=sleep`,
/// `dataset=timeseries/resource=heartrate`.
pub(crate) fn dataset_folder(dataset: Dataset) -> String {
    match dataset {
        Dataset::Table(t) => format!("{DATASET_KEY}={}", t.name()),
        Dataset::Timeseries(r) => format!("{DATASET_KEY}={TIMESERIES}/{RESOURCE_KEY}={}", r.name),
    }
}

/// The dataset folder, relative to the store root.
pub(crate) fn dataset_dir(team: Uuid, user: Uuid, dataset: Dataset) -> String {
    format!("{}/{}", user_dir(team, user), dataset_folder(dataset))
}

/// The dataset a folder path below the user folder names (`dataset=sleep`,
/// `dataset=timeseries/resource=heartrate`).
pub(crate) fn dataset_from_path(parts: &[&str]) -> Option<Dataset> {
    let value = |part: &str, key: &str| {
        part.strip_prefix(key)
            .and_then(|rest| rest.strip_prefix('='))
            .map(str::to_owned)
    };
    match parts {
        [kind, name] if value(kind, DATASET_KEY).as_deref() == Some(TIMESERIES) => {
            resource(&value(name, RESOURCE_KEY)?).map(Dataset::Timeseries)
        }
        [table] => Table::from_name(&value(table, DATASET_KEY)?).map(Dataset::Table),
        _ => None,
    }
}

/// The id a `key=<uuid>` folder name carries (`team=…`, `user=…`).
pub(crate) fn folder_id(name: &str, key: &str) -> Option<Uuid> {
    Uuid::parse_str(name.strip_prefix(key)?.strip_prefix('=')?).ok()
}

/// A segment path relative to the user folder as the layout before Hive-style folders wrote
/// it in commit records (`sleep/x`, `timeseries/heartrate/x`), in today's layout; any other
/// path unchanged.
pub(crate) fn current_relative(path: &str) -> String {
    let parts: Vec<&str> = path.split('/').collect();
    match parts.as_slice() {
        [table, file] if Table::from_name(table).is_some() => {
            format!("{DATASET_KEY}={table}/{file}")
        }
        [TIMESERIES, name, file] if resource(name).is_some() => {
            format!("{DATASET_KEY}={TIMESERIES}/{RESOURCE_KEY}={name}/{file}")
        }
        _ => path.to_owned(),
    }
}

/// A stable rank for listing datasets: tables in `Table::ALL` order, then resources.
pub(crate) fn dataset_rank(dataset: Dataset) -> usize {
    match dataset {
        Dataset::Table(t) => Table::ALL.iter().position(|x| *x == t).unwrap_or(0),
        Dataset::Timeseries(r) => {
            Table::ALL.len() + RESOURCES.iter().position(|x| *x == r).unwrap_or(0)
        }
    }
}

/// Every dataset a user can have.
pub(crate) fn all_datasets() -> impl Iterator<Item = Dataset> {
    Table::ALL
        .into_iter()
        .map(Dataset::Table)
        .chain(RESOURCES.iter().copied().map(Dataset::Timeseries))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_sort_by_creation() {
        let a = SegmentName {
            seq: 42,
            generation: 0,
            part: 0,
            nonce: 0xdead_beef,
            range: Some((-5, 1_700_000_000_000_000)),
            rows: 10,
            committed_by_record: false,
        };
        assert_eq!(SegmentName::parse(&a.file_name()), Some(a));
        let b = SegmentName {
            range: None,
            generation: 1,
            ..a
        };
        assert_eq!(SegmentName::parse(&b.file_name()), Some(b));
        assert_eq!(a.order(&b), CmpOrdering::Less);
        assert!(a.file_name() < b.file_name());
        assert!(a.overlaps(-5, -4) && !a.overlaps(-10, -5) && !b.overlaps(i64::MIN, i64::MAX));
        let c = SegmentName {
            committed_by_record: true,
            ..a
        };
        assert!(c.file_name().ends_with(".10.c.parquet"));
        assert_eq!(SegmentName::parse(&c.file_name()), Some(c));
        assert_eq!(a.commit(), None);
        let id = c.commit().unwrap();
        assert_eq!((id.seq, id.nonce), (42, 0xdead_beef));
        assert_eq!(CommitId::parse_record(&id.record_name()), Some(id));
        assert_eq!(CommitId::parse_record(&temp_name()), None);
    }

    #[test]
    fn temp_files_and_strays_are_not_segments() {
        assert_eq!(SegmentName::parse(&temp_name()), None);
        assert_eq!(SegmentName::parse("notes.parquet"), None);
        assert_eq!(
            SegmentName::parse("1-0000-0000-00000000.1.2.3.parquet"),
            None
        );
    }

    #[test]
    fn sequence_is_strictly_increasing() {
        let mut last = next_seq();
        for _ in 0..1000 {
            let next = next_seq();
            assert!(next > last);
            last = next;
        }
    }

    #[test]
    fn dataset_paths_parse_back() {
        for d in all_datasets() {
            let path = dataset_folder(d);
            let parts: Vec<&str> = path.split('/').collect();
            assert_eq!(dataset_from_path(&parts), Some(d));
            // What the layout before Hive-style folders wrote in commit records.
            assert_eq!(
                current_relative(&format!("{}/x", d.path())),
                format!("{path}/x")
            );
        }
        assert_eq!(
            dataset_folder(Dataset::Timeseries(resource("heartrate").unwrap())),
            "dataset=timeseries/resource=heartrate"
        );
        assert_eq!(dataset_from_path(&["sleep"]), None);
        assert_eq!(dataset_from_path(&["dataset=timeseries"]), None);
        assert_eq!(current_relative("dataset=sleep/x"), "dataset=sleep/x");
        let team = Uuid::new_v4();
        assert_eq!(folder_id(&team_folder(team), TEAM_KEY), Some(team));
        assert_eq!(folder_id(&team.to_string(), TEAM_KEY), None);
    }
}
