//! What a push changed, as `daily.data.<resource>.created` / `.updated` events: records whose
//! key the user had no record of are created, records replacing one with different content are
//! updated, and records equal to the stored ones (an identical re-push) emit nothing.
//!
//! The work is split so that the push pays only for what cannot wait:
//! - **before the write** ([`plan`]), the push's records are classified against what the
//!   store holds: by key in Arrow, and only records whose key is already stored are rendered
//!   and compared. The result, a [`Plan`], is small: runs of timestamps for samples (a push of
//!   new samples is one run), ids for summaries. It must be taken before the write, which
//!   replaces the old versions;
//! - **after the write**, off the push's path (`announce.rs`), the push's own rows are read
//!   back from its segments (`HealthStore::read_written`: the rows with its `ingested_at`, the
//!   push's stamp, as written, even where a later push has replaced them since; the
//!   `store.compact` job does not merge a user's segments while a push of theirs is
//!   unannounced, since a merge drops replaced rows), rendered as the getters render them
//!   (`render::render_*`) and made into events ([`EventStream`]), so an event's `data` is
//!   exactly what `GET /v2/summary/<kind>` or `/v2/timeseries/...` showed for those records
//!   once the push was stored. Summaries' `created_at`/`updated_at` (the ingestion time) are
//!   left out of the comparison.
//! - sample events are stored by reference to the push's rows, not with them, when rendering
//!   them back from the store gives their exact body (`events::records`); the plan records which
//!   stored samples a push overlaps ([`Entry::overlap`]), so the events referring to them are
//!   written back inline before compaction drops them.
//!
//! Keys are the store's record keys (`Dataset::key_columns`): a push has one provider and
//! source type, so only stored records of those are compared. One event per (resource, source,
//! created or updated) unless its body would pass 1 MiB, when it is split; records are
//! rendered [`CHUNK`] rows at a time, so memory stays bounded on big pushes.
//!
//! Decision where the spec is silent: every push is announced with its own content. A record
//! pushed again with other content before its first push was announced is announced twice,
//! `created` with the first content by the first push and `updated` with the second by the
//! second, in that order (the job announces a user's pushes oldest first).

use std::collections::{HashMap, HashSet, VecDeque};
use std::hash::Hash;

use datafusion::arrow::array::{
    Array, BooleanArray, RecordBatch, StringArray, TimestampMicrosecondArray, UInt32Array,
};
use datafusion::arrow::compute::{filter_record_batch, take_record_batch};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::DataError;
use super::provider_list::resource_name;
use crate::events::records::{Origin, Referred, refer};
use crate::events::{Event, EventType, EventUser};
use crate::render;
use crate::schema::{Dataset, Table};
use crate::store::health::HealthStore;
use crate::store::metadata::User;

/// Rows rendered at once.
pub const CHUNK: usize = 4096;

pub use crate::events::records::Change;

/// Which records of one dataset of a push changed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "by")]
pub enum Changed {
    /// Samples by timestamp (µs): inclusive runs `(first, last, change)` in time order.
    Time {
        /// The runs.
        runs: Vec<(i64, i64, Change)>,
    },
    /// Summary records by id.
    Id {
        /// Ids of created records.
        created: Vec<String>,
        /// Ids of updated records.
        updated: Vec<String>,
    },
}

/// One dataset of a push.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    /// `Dataset::path`.
    pub dataset: String,
    /// The push's source type for it.
    pub source_type: String,
    /// What changed.
    pub changed: Changed,
    /// The time window (µs, inclusive) of stored samples the push replaces, if any: the events
    /// referring to them are written back inline before they can be compacted away
    /// (`events::records`). Absent in plans written before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overlap: Option<(i64, i64)>,
    /// The UTC span (µs, inclusive) of the pushed rows' times: what continuous queries
    /// re-evaluate (`crate::continuous`). Absent in plans written before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub span: Option<(i64, i64)>,
}

/// What a push changed, taken before its write; made into events after it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// The push's provider.
    pub provider: String,
    /// The push's `ingested_at` (µs): how its records are found again in the store.
    pub stamp: i64,
    /// Whether the push connects the provider (`provider.connection.created` first).
    pub first_connection: bool,
    /// Per dataset, what changed.
    pub entries: Vec<Entry>,
}

impl Plan {
    /// Whether announcing it can emit nothing.
    pub fn is_empty(&self) -> bool {
        !self.first_connection
            && self.entries.iter().all(|e| match &e.changed {
                Changed::Time { runs } => runs.is_empty(),
                Changed::Id { created, updated } => created.is_empty() && updated.is_empty(),
            })
    }
}

fn str_at(batch: &RecordBatch, column: &str) -> Option<String> {
    let a = batch
        .column_by_name(column)?
        .as_any()
        .downcast_ref::<StringArray>()?;
    (!a.is_empty() && a.is_valid(0)).then(|| a.value(0).to_owned())
}

/// A record as compared: without the ingestion times.
fn comparable(dataset: Dataset, mut record: Value) -> Value {
    if matches!(dataset, Dataset::Table(t) if t != Table::Profile)
        && let Some(obj) = record.as_object_mut()
    {
        obj.remove("created_at");
        obj.remove("updated_at");
    }
    record
}

/// A rendered record's key (`Dataset::key_columns` within one provider and source type).
fn rendered_key(dataset: Dataset, record: &Value) -> String {
    match dataset {
        Dataset::Table(_) => record["id"].to_string(),
        Dataset::Timeseries(_) => record["timestamp"]
            .as_str()
            .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
            .map_or_else(
                || record["timestamp"].to_string(),
                |t| t.timestamp_micros().to_string(),
            ),
    }
}

fn render(dataset: Dataset, batches: &[RecordBatch], user: &User) -> Vec<Value> {
    match dataset {
        Dataset::Table(t) => render::render_summaries(t, batches, user.id),
        Dataset::Timeseries(r) => render::render_samples(r, batches),
    }
}

fn times(batch: &RecordBatch) -> Option<&TimestampMicrosecondArray> {
    batch
        .column_by_name("timestamp")?
        .as_any()
        .downcast_ref::<TimestampMicrosecondArray>()
}

fn ids(batch: &RecordBatch) -> Option<&StringArray> {
    batch.column_by_name("id")?.as_any().downcast_ref()
}

/// A record key as Arrow holds it: the sample time, or the summary id.
trait Keys {
    type Key: Hash + Eq + Clone;
    fn keys(batch: &RecordBatch) -> Vec<Option<Self::Key>>;
    /// The key as [`rendered_key`] gives it for the rendered record.
    fn rendered(key: &Self::Key) -> String;
}

struct ByTime;
impl Keys for ByTime {
    type Key = i64;
    fn keys(batch: &RecordBatch) -> Vec<Option<i64>> {
        times(batch).map_or_else(|| vec![None; batch.num_rows()], |a| a.iter().collect())
    }
    fn rendered(key: &i64) -> String {
        key.to_string()
    }
}

struct ById;
impl Keys for ById {
    type Key = String;
    fn keys(batch: &RecordBatch) -> Vec<Option<String>> {
        ids(batch).map_or_else(
            || vec![None; batch.num_rows()],
            |a| a.iter().map(|v| v.map(str::to_owned)).collect(),
        )
    }
    fn rendered(key: &String) -> String {
        Value::String(key.clone()).to_string()
    }
}

/// Each keyed pushed row's change (`None`: unchanged).
type Classified<K> = Vec<(K, Option<Change>)>;

/// Classifies each keyed row of `pushed` against `stored` (same provider and source type):
/// `Some(change)`, or `None` when the stored record renders the same.
fn classify<K: Keys>(
    dataset: Dataset,
    pushed: &RecordBatch,
    stored: &[RecordBatch],
    user: &User,
) -> Result<Classified<K::Key>, DataError> {
    let pushed_keys = K::keys(pushed);
    let mut stored_at: HashMap<K::Key, (usize, usize)> = HashMap::new();
    for (b, batch) in stored.iter().enumerate() {
        for (r, key) in K::keys(batch).into_iter().enumerate() {
            if let Some(key) = key {
                stored_at.insert(key, (b, r));
            }
        }
    }
    let mut out = Vec::with_capacity(pushed_keys.len());
    let (mut both_pushed, mut both_stored) = (Vec::new(), Vec::new());
    for (row, key) in pushed_keys.into_iter().enumerate() {
        let Some(key) = key else { continue };
        match stored_at.get(&key) {
            None => out.push((key, Some(Change::Created))),
            Some(&at) => {
                both_pushed.push(row);
                both_stored.push(at);
                out.push((key, Some(Change::Updated)));
            }
        }
    }
    if both_pushed.is_empty() {
        return Ok(out);
    }
    // Only records present on both sides are rendered and compared.
    let old = take_rows(stored, &both_stored)?;
    let new = take_record_batch(pushed, &indices(both_pushed.iter().copied()))?;
    let old: HashMap<String, Value> = render(dataset, &old, user)
        .into_iter()
        .map(|r| (rendered_key(dataset, &r), comparable(dataset, r)))
        .collect();
    let unchanged: HashSet<String> = render(dataset, &[new], user)
        .into_iter()
        .filter_map(|r| {
            let key = rendered_key(dataset, &r);
            (old.get(&key) == Some(&comparable(dataset, r))).then_some(key)
        })
        .collect();
    for (key, change) in &mut out {
        if *change == Some(Change::Updated) && unchanged.contains(&K::rendered(key)) {
            *change = None;
        }
    }
    Ok(out)
}

fn indices(rows: impl Iterator<Item = usize>) -> UInt32Array {
    rows.map(|r| u32::try_from(r).unwrap_or(u32::MAX)).collect()
}

/// The rows `(batch, row)` of `batches`, as batches.
fn take_rows(
    batches: &[RecordBatch],
    at: &[(usize, usize)],
) -> Result<Vec<RecordBatch>, DataError> {
    let mut out = Vec::new();
    for (b, batch) in batches.iter().enumerate() {
        let rows: Vec<usize> = at
            .iter()
            .filter(|(x, _)| *x == b)
            .map(|(_, r)| *r)
            .collect();
        if !rows.is_empty() {
            out.push(take_record_batch(batch, &indices(rows.into_iter()))?);
        }
    }
    Ok(out)
}

/// Classified samples as runs of equal change, in time order.
fn runs(mut rows: Vec<(i64, Option<Change>)>) -> Vec<(i64, i64, Change)> {
    rows.sort_by_key(|(t, _)| *t);
    let mut out: Vec<(i64, i64, Change)> = Vec::new();
    let mut open = false;
    for (t, change) in rows {
        match (change, out.last_mut()) {
            (None, _) => open = false,
            (Some(c), Some(last)) if open && last.2 == c => last.1 = t,
            (Some(c), _) => {
                out.push((t, t, c));
                open = true;
            }
        }
    }
    out
}

/// What `batch` (one dataset of a push, one source type) changes in the store.
async fn changed(
    store: &HealthStore,
    user: &User,
    provider: &str,
    dataset: Dataset,
    batch: &RecordBatch,
    source_type: &str,
) -> Result<Option<(Changed, Option<(i64, i64)>)>, DataError> {
    let window = match dataset {
        Dataset::Timeseries(_) => {
            let Some(t) = times(batch) else {
                return Ok(None);
            };
            let (Some(min), Some(max)) = (
                datafusion::arrow::compute::min(t),
                datafusion::arrow::compute::max(t),
            ) else {
                return Ok(None);
            };
            Some(time_range(min, max))
        }
        // Summaries are keyed by id, not time: a stored version may be anywhere.
        Dataset::Table(_) => None,
    };
    let stored = super::read(store, user, dataset, window.clone(), Some(provider)).await?;
    let stored = crate::render::keep_equal(stored, "source_type", source_type)?;
    if let (true, Some(w)) = (stored.is_empty(), &window) {
        // Nothing stored in the window: every sample is new (the common push).
        let last = w.end.timestamp_micros() - 1;
        return Ok(Some((
            Changed::Time {
                runs: vec![(w.start.timestamp_micros(), last, Change::Created)],
            },
            None,
        )));
    }
    let overlap = window
        .as_ref()
        .map(|w| (w.start.timestamp_micros(), w.end.timestamp_micros() - 1));
    let (batch, user) = (batch.clone(), user.clone());
    let changed = crate::telemetry::spawn_blocking(move || match dataset {
        Dataset::Timeseries(_) => Ok::<_, DataError>(Changed::Time {
            runs: runs(classify::<ByTime>(dataset, &batch, &stored, &user)?),
        }),
        Dataset::Table(_) => {
            let (mut created, mut updated) = (Vec::new(), Vec::new());
            for (id, change) in classify::<ById>(dataset, &batch, &stored, &user)? {
                match change {
                    Some(Change::Created) => created.push(id),
                    Some(Change::Updated) => updated.push(id),
                    None => {}
                }
            }
            Ok(Changed::Id { created, updated })
        }
    })
    .await??;
    Ok(Some((changed, overlap)))
}

fn time_range(first: i64, last: i64) -> std::ops::Range<chrono::DateTime<chrono::Utc>> {
    let at = |t: i64| chrono::DateTime::from_timestamp_micros(t).unwrap_or_default();
    at(first)..at(last.saturating_add(1))
}

/// Classifies a push's batches against the store, before they are written.
pub async fn plan(
    store: &HealthStore,
    user: &User,
    provider: &str,
    batches: &[(Dataset, RecordBatch)],
    stamp: i64,
    first_connection: bool,
) -> Result<Plan, DataError> {
    let mut entries = Vec::with_capacity(batches.len());
    for (dataset, batch) in batches {
        let Some(source_type) = str_at(batch, "source_type") else {
            continue;
        };
        if let Some((changed, overlap)) =
            changed(store, user, provider, *dataset, batch, &source_type).await?
        {
            entries.push(Entry {
                dataset: dataset.path(),
                source_type,
                changed,
                overlap,
                span: crate::continuous::span_of(*dataset, batch),
            });
        }
    }
    Ok(Plan {
        provider: provider.to_owned(),
        stamp,
        first_connection,
        entries,
    })
}

/// Records of one dataset and change of a push, as it wrote them.
#[derive(Debug, Clone)]
pub struct Group {
    /// The dataset.
    pub dataset: Dataset,
    /// The change.
    pub change: Change,
    /// The records.
    pub batches: Vec<RecordBatch>,
    /// Where they come from, for samples (events of them may refer to them).
    pub origin: Option<Origin>,
}

/// The changed records a plan describes, as the push wrote them, read back from the store
/// after the write: per dataset, the created then the updated ones.
pub async fn changed_records(
    store: &HealthStore,
    user: &User,
    plan: &Plan,
) -> Result<Vec<Group>, DataError> {
    let Some(stamp) = chrono::DateTime::from_timestamp_micros(plan.stamp) else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for entry in &plan.entries {
        let Some(dataset) = Dataset::from_path(&entry.dataset) else {
            continue;
        };
        let window = match &entry.changed {
            Changed::Time { runs } => match (runs.first(), runs.last()) {
                (Some(first), Some(last)) => Some(time_range(first.0, last.1)),
                _ => continue,
            },
            Changed::Id { created, updated } if created.is_empty() && updated.is_empty() => {
                continue;
            }
            Changed::Id { .. } => None,
        };
        // The push's own rows, as it wrote them, even where a later push replaced them since.
        let written = store
            .read_written(user.team_id, user.id, dataset, window, stamp)
            .await?;
        let batches = crate::render::keep_equal(
            super::keep_provider(written, &plan.provider)?,
            "source_type",
            &entry.source_type,
        )?;
        let mut split: [Vec<RecordBatch>; 2] = [Vec::new(), Vec::new()];
        for ours in batches {
            let changes = row_changes(&entry.changed, &ours);
            for (slot, wanted) in [Change::Created, Change::Updated].into_iter().enumerate() {
                let mask: BooleanArray = changes.iter().map(|c| Some(*c == Some(wanted))).collect();
                let part = filter_record_batch(&ours, &mask)?;
                if part.num_rows() > 0 {
                    split[slot].push(part);
                }
            }
        }
        let [created, updated] = split;
        let origin = match &entry.changed {
            Changed::Time { runs } => Some(Origin {
                provider: plan.provider.clone(),
                stamp: plan.stamp,
                source_type: entry.source_type.clone(),
                runs: runs.clone(),
            }),
            Changed::Id { .. } => None,
        };
        for (change, batches) in [(Change::Created, created), (Change::Updated, updated)] {
            if !batches.is_empty() {
                out.push(Group {
                    dataset,
                    change,
                    batches,
                    origin: origin.clone(),
                });
            }
        }
    }
    Ok(out)
}

/// The change of each row of `batch` under `changed`.
fn row_changes(changed: &Changed, batch: &RecordBatch) -> Vec<Option<Change>> {
    match changed {
        Changed::Time { runs } => ByTime::keys(batch)
            .into_iter()
            .map(|t| {
                let t = t?;
                let i = runs.partition_point(|r| r.1 < t);
                runs.get(i).filter(|r| r.0 <= t).map(|r| r.2)
            })
            .collect(),
        Changed::Id { created, updated } => {
            let created: HashSet<&str> = created.iter().map(String::as_str).collect();
            let updated: HashSet<&str> = updated.iter().map(String::as_str).collect();
            ById::keys(batch)
                .into_iter()
                .map(|id| {
                    let id = id?;
                    if created.contains(id.as_str()) {
                        Some(Change::Created)
                    } else if updated.contains(id.as_str()) {
                        Some(Change::Updated)
                    } else {
                        None
                    }
                })
                .collect()
        }
    }
}

/// Records of one type accumulating into an event.
#[derive(Debug, Default)]
struct Pile {
    records: Vec<Value>,
    bytes: usize,
}

/// The events of changed records ([`changed_records`]), made a chunk of rows at a time
/// ([`EventStream::next_event`]).
#[derive(Debug)]
pub struct EventStream {
    user: User,
    who: EventUser,
    groups: VecDeque<(Group, VecDeque<RecordBatch>)>,
    offset: usize,
    pile: Pile,
    ready: VecDeque<(Event, Option<Referred>)>,
}

impl EventStream {
    /// The events of `groups`, in order.
    pub fn new(user: &User, groups: Vec<Group>) -> Self {
        EventStream {
            user: user.clone(),
            who: EventUser::of(user),
            groups: groups
                .into_iter()
                .map(|g| {
                    let left = g.batches.iter().filter(|b| b.num_rows() > 0).cloned();
                    let left = left.collect();
                    (g, left)
                })
                .collect(),
            offset: 0,
            pile: Pile::default(),
            ready: VecDeque::new(),
        }
    }

    /// The next event, or `None` when every record is accounted for. CPU work: call it off the
    /// async threads for big pushes.
    pub fn next_event(&mut self) -> Option<Event> {
        self.next_stored().map(|(event, _)| event)
    }

    /// The next event and, when it can be stored by reference to its records, its shell and
    /// reference (`events::records::refer`). CPU work, like [`EventStream::next_event`].
    pub fn next_stored(&mut self) -> Option<(Event, Option<Referred>)> {
        loop {
            if let Some(event) = self.ready.pop_front() {
                return Some(event);
            }
            let (group, batches) = self.groups.front()?;
            let (dataset, change) = (group.dataset, group.change);
            let Some(batch) = batches.front().cloned() else {
                self.groups.pop_front();
                continue;
            };
            let source = render::render_source(&batch, 0);
            let budget = Event::records_budget(&source);
            let name = resource_name(dataset);
            let event_type = match change {
                Change::Created => EventType::DailyCreated(name),
                Change::Updated => EventType::DailyUpdated(name),
            };
            let rows = CHUNK.min(batch.num_rows() - self.offset);
            let slice = batch.slice(self.offset, rows);
            self.offset += rows;
            for record in render(dataset, &[slice], &self.user) {
                let len = record.to_string().len() + 1;
                if !self.pile.records.is_empty() && self.pile.bytes + len > budget {
                    self.flush(event_type, &source);
                }
                self.pile.bytes += len;
                self.pile.records.push(record);
            }
            if self.offset >= batch.num_rows() {
                self.offset = 0;
                let last = self.groups.front_mut().is_none_or(|(_, batches)| {
                    batches.pop_front();
                    batches.is_empty()
                });
                if last {
                    self.flush(event_type, &source);
                    self.groups.pop_front();
                }
            }
        }
    }

    /// Makes an event of the pile (records of the front group).
    fn flush(&mut self, event_type: EventType, source: &Value) {
        if self.pile.records.is_empty() {
            return;
        }
        let records = std::mem::take(&mut self.pile.records);
        self.pile.bytes = 0;
        let event = Event::record_chunk(event_type, self.who.clone(), records, source.clone());
        let referred = self.groups.front().and_then(|(group, _)| {
            let origin = group.origin.as_ref()?;
            let (dataset, change) = (group.dataset, group.change);
            refer(
                &event,
                self.user.team_id,
                dataset,
                change,
                origin,
                &group.batches,
            )
        });
        self.ready.push_back((event, referred));
    }

    /// Every remaining event (for small pushes and tests).
    pub fn collect_all(mut self) -> Vec<Event> {
        let mut out = Vec::new();
        while let Some(e) = self.next_event() {
            out.push(e);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_merge_equal_neighbours_and_break_on_unchanged() {
        let c = Some(Change::Created);
        let u = Some(Change::Updated);
        let rows = vec![(5, c), (1, c), (2, c), (3, None), (4, u), (6, c), (7, c)];
        assert_eq!(
            runs(rows),
            vec![
                (1, 2, Change::Created),
                (4, 4, Change::Updated),
                (5, 7, Change::Created)
            ]
        );
        assert!(runs(vec![(1, None)]).is_empty());
    }

    #[test]
    fn row_changes_follow_the_runs() {
        let changed = Changed::Time {
            runs: vec![(10, 20, Change::Created), (30, 30, Change::Updated)],
        };
        let schema = std::sync::Arc::new(datafusion::arrow::datatypes::Schema::new(vec![
            datafusion::arrow::datatypes::Field::new(
                "timestamp",
                datafusion::arrow::datatypes::DataType::Timestamp(
                    datafusion::arrow::datatypes::TimeUnit::Microsecond,
                    None,
                ),
                false,
            ),
        ]));
        let t = TimestampMicrosecondArray::from(vec![9, 10, 15, 20, 25, 30, 31]);
        let batch = RecordBatch::try_new(schema, vec![std::sync::Arc::new(t)]).expect("batch");
        let c = Some(Change::Created);
        assert_eq!(
            row_changes(&changed, &batch),
            vec![None, c, c, c, None, Some(Change::Updated), None]
        );
    }
}
