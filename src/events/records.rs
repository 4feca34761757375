//! Events that refer to the samples they announce instead of copying them (issue 43).
//!
//! A push's sample events used to keep every sample inline for the events' 30-day retention
//! (~100 bytes of metadata database per pushed sample). Now such an event is stored as its
//! envelope with an empty record list (the *shell*) and a [`RecordsRef`]: the push's stamp,
//! provider, source type and dataset, the change announced, the time window of its records and
//! the SHA-256 of their rendering. Its body is rendered again from the store whenever it is
//! delivered, replayed or listed ([`body`]): `HealthStore::read_written` gives the push's rows
//! as it wrote them, which render exactly as they did when the event was made.
//!
//! Guarantees:
//! - an event is stored by reference only when rendering it back from the reference gives its
//!   exact body, checked when it is made ([`refer`]); otherwise it is stored inline, as before;
//! - rows a later push replaces are dropped by the next compaction merge, so a push overlapping
//!   earlier ones first writes the bodies of the events referring to the overlapped window back
//!   inline ([`materialize_overlapping`]), while compaction still waits for its announcement;
//! - every rendering is checked against the stored count and digest; a mismatch is an error,
//!   never a different body.
//!
//! Summary events (a few records each) and events of pulls stay inline.

use chrono::{DateTime, Utc};
use datafusion::arrow::array::{BooleanArray, RecordBatch, TimestampMicrosecondArray};
use datafusion::arrow::compute::filter_record_batch;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};
use sqlx::AnyConnection;
use uuid::Uuid;

use super::Event;
use crate::render;
use crate::schema::Dataset;
use crate::store::health::{HealthStore, StoreError};
use crate::store::metadata::MetadataError;
use crate::store::metadata::events::{RecordsPointer, inline_body, referring_events};

/// What a pushed record is to the events (unchanged records are in no list).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    /// Its key was new.
    Created,
    /// It replaced a record with different content.
    Updated,
}

/// Why an event's records could not be had.
#[derive(Debug, thiserror::Error)]
pub enum RecordsError {
    /// The reference does not lead back to the event's records any more (the user's data was
    /// erased or replaced, or the reference is unreadable): the reason. No retry helps.
    #[error("event records: {0}")]
    Broken(String),
    /// The health store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The metadata database failed.
    #[error(transparent)]
    Metadata(#[from] MetadataError),
    /// Filtering the rows failed.
    #[error(transparent)]
    Arrow(#[from] datafusion::arrow::error::ArrowError),
    /// The blocking rendering task failed.
    #[error("blocking task: {0}")]
    Task(#[from] tokio::task::JoinError),
}

/// Where in an envelope the record list opens (`preserve_order`: `event_type` comes first, so
/// the first occurrence is `data`'s own).
const RECORDS_OPEN: &str = "\"data\":{\"data\":[";

/// Where an event's records are in the store, and what they render to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordsRef {
    /// `Dataset::path` (a timeseries).
    pub dataset: String,
    /// The push's provider.
    pub provider: String,
    /// The push's source type.
    pub source_type: String,
    /// The push's `ingested_at` (µs).
    pub stamp: i64,
    /// The change the event announces.
    pub change: Change,
    /// The first record's time (µs).
    pub first: i64,
    /// The last record's time (µs).
    pub last: i64,
    /// The push's change runs within the window; empty when every row of it is `change`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runs: Vec<(i64, i64, Change)>,
    /// How many records.
    pub count: usize,
    /// SHA-256 (hex) of the records' rendering, joined by commas.
    pub sha256: String,
}

/// What the push an event comes from says about a group of its records.
#[derive(Debug, Clone)]
pub struct Origin {
    /// The push's provider.
    pub provider: String,
    /// The push's stamp (µs).
    pub stamp: i64,
    /// The group's source type.
    pub source_type: String,
    /// The entry's change runs.
    pub runs: Vec<(i64, i64, Change)>,
}

/// An event to store by reference: its shell and where its records are.
#[derive(Debug, Clone, PartialEq)]
pub struct Referred {
    /// The envelope with an empty record list.
    pub shell: String,
    /// The reference, as stored.
    pub pointer: RecordsPointer,
}

fn digest(text: &str) -> String {
    hex::encode(Sha256::digest(text.as_bytes()))
}

fn joined(records: &[Value]) -> String {
    let parts: Vec<String> = records.iter().map(Value::to_string).collect();
    parts.join(",")
}

fn splice(shell: &str, records: &str) -> Option<String> {
    let at = shell.find(RECORDS_OPEN)? + RECORDS_OPEN.len();
    let mut out = String::with_capacity(shell.len() + records.len());
    out.push_str(&shell[..at]);
    out.push_str(records);
    out.push_str(&shell[at..]);
    Some(out)
}

/// `event` with an empty record list: every other member copied, the records not.
fn shell_of(event: &Event) -> Event {
    let data = match &event.data {
        Value::Object(members) => Value::Object(
            members
                .iter()
                .map(|(k, v)| {
                    let v = if k == "data" {
                        Value::Array(Vec::new())
                    } else {
                        v.clone()
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        other => other.clone(),
    };
    Event {
        event_type: event.event_type,
        user: event.user.clone(),
        data,
    }
}

fn micros(record: &Value) -> Option<i64> {
    let t = record.get("timestamp")?.as_str()?;
    Some(DateTime::parse_from_rfc3339(t).ok()?.timestamp_micros())
}

/// The records `r` names among `batches` (rows of its push, any provider), rendered in time
/// order.
fn records_of(
    dataset: Dataset,
    batches: Vec<RecordBatch>,
    r: &RecordsRef,
) -> Result<Vec<Value>, RecordsError> {
    let Dataset::Timeseries(resource) = dataset else {
        return Ok(Vec::new());
    };
    let batches = render::keep_equal(
        render::keep_equal(batches, "source_provider", &r.provider)?,
        "source_type",
        &r.source_type,
    )?;
    let mut kept = Vec::with_capacity(batches.len());
    for batch in batches {
        let Some(times) = batch
            .column_by_name("timestamp")
            .and_then(|c| c.as_any().downcast_ref::<TimestampMicrosecondArray>())
        else {
            continue;
        };
        let mask: BooleanArray = times
            .iter()
            .map(|t| Some(t.is_some_and(|t| t >= r.first && t <= r.last && change_at(r, t))))
            .collect();
        let part = filter_record_batch(&batch, &mask)?;
        if part.num_rows() > 0 {
            kept.push(part);
        }
    }
    let mut records = render::render_samples(resource, &kept);
    records.sort_by_key(micros);
    Ok(records)
}

fn change_at(r: &RecordsRef, t: i64) -> bool {
    if r.runs.is_empty() {
        return true;
    }
    let i = r.runs.partition_point(|run| run.1 < t);
    r.runs
        .get(i)
        .is_some_and(|run| run.0 <= t && run.2 == r.change)
}

/// The reference of `event` if its records can be rendered back from `group` (every row of its
/// push's group, as read after the write) to exactly the text they have in its body; `None`
/// keeps it inline. CPU work.
pub fn refer(
    event: &Event,
    team: Uuid,
    dataset: Dataset,
    change: Change,
    origin: &Origin,
    group: &[RecordBatch],
) -> Option<Referred> {
    let records = event.data.get("data")?.as_array()?;
    let (first, last) = (micros(records.first()?)?, micros(records.last()?)?);
    let runs: Vec<(i64, i64, Change)> = origin
        .runs
        .iter()
        .filter(|run| run.1 >= first && run.0 <= last)
        .copied()
        .collect();
    let single =
        matches!(runs.as_slice(), [only] if only.0 <= first && only.1 >= last && only.2 == change);
    let text = joined(records);
    let r = RecordsRef {
        dataset: dataset.path(),
        provider: origin.provider.clone(),
        source_type: origin.source_type.clone(),
        stamp: origin.stamp,
        change,
        first,
        last,
        runs: if single { Vec::new() } else { runs },
        count: records.len(),
        sha256: digest(&text),
    };
    let again = records_of(dataset, group.to_vec(), &r).ok()?;
    if again.len() != r.count || digest(&joined(&again)) != r.sha256 {
        return None;
    }
    let shell = shell_of(event).envelope(team);
    // The body is the shell with the records' text in its empty list, by serde_json's compact
    // form of an array (its elements joined by commas): checked against the whole envelope in
    // debug builds (every test's events), not rendered a second time in production.
    shell.find(RECORDS_OPEN)?;
    debug_assert_eq!(
        splice(&shell, &text),
        Some(event.envelope(team)),
        "a shell and its records make the body"
    );
    let json = serde_json::to_string(&r).ok()?;
    Some(Referred {
        shell,
        pointer: RecordsPointer {
            json,
            dataset: r.dataset,
            first,
            last,
        },
    })
}

/// The body of a stored event: `body` itself, or, for an event stored by reference
/// (`pointer`, its JSON), its shell with the records rendered from the store.
pub async fn body(
    store: &HealthStore,
    team: Uuid,
    user: Option<Uuid>,
    body: &str,
    pointer: Option<&str>,
) -> Result<String, RecordsError> {
    let Some(pointer) = pointer else {
        return Ok(body.to_owned());
    };
    let bad = |why: &str| RecordsError::Broken(why.to_owned());
    let r: RecordsRef = serde_json::from_str(pointer).map_err(|_| bad("unreadable reference"))?;
    let user = user.ok_or_else(|| bad("no user"))?;
    let dataset = Dataset::from_path(&r.dataset).ok_or_else(|| bad("unknown dataset"))?;
    let at = |t: i64| DateTime::<Utc>::from_timestamp_micros(t).unwrap_or_default();
    let stamp = at(r.stamp);
    let window = at(r.first)..at(r.last.saturating_add(1));
    let written = store
        .read_written(team, user, dataset, Some(window), stamp)
        .await?;
    let (records, r) = crate::telemetry::spawn_blocking(move || {
        records_of(dataset, written, &r).map(|records| (joined(&records), (records.len(), r)))
    })
    .await??;
    let (count, r) = r;
    if count != r.count || digest(&records) != r.sha256 {
        return Err(bad("the store no longer holds the push's records"));
    }
    splice(body, &records).ok_or_else(|| bad("no record list in the shell"))
}

/// Writes back inline the bodies of `user`'s events that refer to `dataset` rows in
/// `[lo, hi]` (µs): a push about to replace them overlaps them, and compaction drops replaced
/// rows once the push is announced. Call it in the announcing transaction, before the push's
/// own events are written. Answers how many it wrote back.
pub async fn materialize_overlapping(
    conn: &mut AnyConnection,
    store: &HealthStore,
    team: Uuid,
    user: Uuid,
    dataset: &str,
    (lo, hi): (i64, i64),
) -> Result<usize, RecordsError> {
    let events = referring_events(&mut *conn, user, dataset, lo, hi).await?;
    let mut done = 0;
    for e in events {
        let pointer = e.records.as_ref().map(|p| p.json.as_str());
        match body(store, team, Some(user), &e.body, pointer).await {
            Ok(full) => {
                inline_body(&mut *conn, e.id, &full).await?;
                done += 1;
            }
            Err(error) => {
                tracing::error!(%error, id = %e.id, "an event could not be written back inline")
            }
        }
    }
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::{EventType, EventUser};
    use serde_json::json;

    #[test]
    fn a_shell_with_its_records_spliced_in_is_the_whole_envelope() {
        let user = EventUser {
            id: Uuid::new_v4(),
            client_user_id: "c".to_owned(),
        };
        let records = vec![
            json!({"timestamp": "2025-01-01T00:00:00Z", "value": 60.5, "unit": "bpm"}),
            json!({"timestamp": "2025-01-01T00:01:00Z", "value": 61.0, "unit": "bpm"}),
        ];
        let source = json!({"provider": "oura", "data": {"data": [1]}});
        let event = Event::record_chunk(
            EventType::DailyCreated("heartrate"),
            user.clone(),
            records.clone(),
            source.clone(),
        );
        let empty = Event::record_chunk(EventType::DailyCreated("heartrate"), user, vec![], source);
        let team = Uuid::new_v4();
        assert_eq!(
            splice(&empty.envelope(team), &joined(&records)).as_deref(),
            Some(event.envelope(team).as_str())
        );
        assert_eq!(splice("{}", "x"), None);
    }

    #[test]
    fn rows_are_kept_by_the_change_of_their_run() {
        let mut r = RecordsRef {
            dataset: "timeseries/heartrate".to_owned(),
            provider: "oura".to_owned(),
            source_type: "unknown".to_owned(),
            stamp: 0,
            change: Change::Updated,
            first: 0,
            last: 100,
            runs: Vec::new(),
            count: 0,
            sha256: String::new(),
        };
        assert!(change_at(&r, 50), "no runs: the whole window is the change");
        r.runs = vec![
            (0, 10, Change::Updated),
            (20, 30, Change::Created),
            (40, 40, Change::Updated),
        ];
        let kept: Vec<i64> = [0, 10, 15, 20, 40, 41]
            .into_iter()
            .filter(|t| change_at(&r, *t))
            .collect();
        assert_eq!(kept, [0, 10, 40]);
    }
}
