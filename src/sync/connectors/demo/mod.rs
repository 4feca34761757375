//! Demo connections (`linking.md`: "demo-capable providers in demo mode connect at once with
//! synthetic history"): a demo connection is pulled like a real one, by the same
//! `sync.historical` and `sync.incremental` jobs, with [`Demo`] in place of the provider's
//! connector; its pull runs the demo generator ([`generator`], beside it) over the asked window.
//! `POST /v2/link/connect/demo`, the link page's demo mode and `serve --demo` all go through
//! [`connect`], so there is one place for demo logic and it is the real providers' path: the
//! connection is made at once (with `provider.connection.created`), its history lands in
//! chunks, `historical.data.<resource>.created` announces it when complete, and every 30
//! minutes an incremental pull brings the new day's data (`daily.data.*` events).
//!
//! - **Seed**: the first eight bytes of the user id, so every provider connected to one user
//!   describes the same life: a ring and a watch of one user overlap on the same nights.
//! - **Window**: the `days` UTC days ending today, up to now, narrowed to the user's
//!   `ingestion_start` / `ingestion_end` like a real pull. A pull answers what a provider
//!   would for its window: no sample of the future, no night still being slept (see
//!   [`keep_window`]); what happens later arrives with the incremental pulls. Adjacent windows
//!   (a historical pull's chunks) answer each record once between them, whatever the zone.
//! - **Kind**: the pull's persona is kept on its sync row (`sync_pulls.demo_persona`), so a
//!   restart resumes a demo pull as a demo pull. Connecting a demo provider again starts a new
//!   history with the new persona and length (a run of the previous one stops before its next
//!   write); linking the real provider later turns the connection real the same way.
//! - **Resources**: the generator's whole day (it offers more kinds than [`Resource`] names),
//!   except the profile, sent only when [`Resource::Profile`] is asked for (the historical
//!   pull's), as for a real provider.
//! - Decision where the spec is silent: a demo connection needs no credentials, so it is made
//!   without a secret key too.

pub mod generator;

use chrono::{DateTime, NaiveDate, Utc};
use serde_json::{Map, Value};
use uuid::Uuid;

use crate::data::DataError;
use crate::events::outbox;
use crate::ingest::PulledBody;
use crate::store::health::HealthStore;
use crate::store::metadata::{
    self, ConnectionStatus, MetadataError, MetadataStore, User, connections,
};
use crate::sync::{Connector, Pull, Pulled, Resource, SyncError, Window};
use generator::Persona;

/// Default history length of a demo connection, in days.
pub const DEFAULT_DAYS: u32 = 90;

/// The seed of a user's demo life: the first eight bytes of its id.
pub fn seed_for(user: Uuid) -> u64 {
    let bytes = user.as_bytes();
    u64::from_le_bytes([
        bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
    ])
}

/// The connector of one demo connection: the provider's generated data for one user's life.
#[derive(Debug, Clone)]
pub struct Demo {
    provider: &'static str,
    persona: Persona,
    seed: u64,
}

impl Demo {
    /// The demo connector of `user`'s connection to `provider` living `persona`'s life; `None`
    /// when the provider has no demo mode.
    pub fn new(provider: &str, persona: Persona, user: Uuid) -> Option<Demo> {
        let entry = crate::providers::provider(provider).filter(|p| p.demo)?;
        Some(Demo {
            provider: entry.slug,
            persona,
            seed: seed_for(user),
        })
    }
}

#[async_trait::async_trait]
impl Connector for Demo {
    fn provider(&self) -> &'static str {
        self.provider
    }

    /// Generates the days the window touches (and the day before: a local day of a zone behind
    /// UTC runs into the next UTC day), merged into one push body and cut to the window; the
    /// profile only when asked for.
    async fn pull(&self, _access_token: &str, pull: &Pull) -> Result<Pulled, SyncError> {
        let (first, last) = days_of(pull.window);
        let first = first.pred_opt().unwrap_or(first);
        let days = u32::try_from((last - first).num_days() + 1).unwrap_or(u32::MAX);
        let bodies = generator::generate(self.provider, self.persona, self.seed, last, days)
            .map_err(|e| SyncError::Permanent {
                reason: format!("demo data: {e}"),
            })?;
        let mut body = merge_bodies(bodies).into_iter().next().unwrap_or_else(|| {
            let mut empty = Map::new();
            empty.insert("provider".to_owned(), Value::from(self.provider));
            Value::Object(empty)
        });
        if let Some(parts) = body.as_object_mut() {
            if !pull.resources.contains(&Resource::Profile) {
                parts.remove("profile");
            }
            keep_window(parts, pull.window);
        }
        // Each generated summary record is what the demo "provider" sent: its own document.
        let body = PulledBody::from_json(body).map_err(|e| SyncError::Permanent {
            reason: format!("demo data: {e}"),
        })?;
        Ok(Pulled { body, skipped: 0 })
    }
}

/// The first and last UTC day of `window`.
fn days_of(window: Window) -> (NaiveDate, NaiveDate) {
    let last = window.end - chrono::Duration::microseconds(1);
    (window.start.date_naive(), last.date_naive())
}

/// Keeps the records of a push body that a provider would answer for `window`, as a real one
/// does: nothing that ends after the window (no sample of the future, no night still being
/// slept), nothing before it. Samples count by their end (an interval's `end`, else their
/// `timestamp`), sleeps by `bedtime_stop`, workouts by `session_end`; daily records (activity,
/// meals) by their `date`, among the window's UTC days. A record without a readable time is
/// kept (ingest judges it).
fn keep_window(parts: &mut Map<String, Value>, window: Window) {
    let (first, last) = days_of(window);
    let instant = |record: &Value, field: &str| {
        let text = record.get(field)?.as_str()?;
        let at = DateTime::parse_from_rfc3339(text).ok()?;
        Some(at.with_timezone(&Utc))
    };
    let by_instant = |record: &Value, fields: &[&str]| {
        fields
            .iter()
            .find_map(|f| instant(record, f))
            .is_none_or(|at| window.start < at && at <= window.end)
    };
    let by_day = |record: &Value| {
        let day = record.get("date").and_then(Value::as_str);
        day.and_then(|d| d.parse::<NaiveDate>().ok())
            .is_none_or(|d| first <= d && d <= last)
    };
    let retain = |list: Option<&mut Value>, keep: &dyn Fn(&Value) -> bool| {
        if let Some(Value::Array(items)) = list {
            items.retain(|r| keep(r));
        }
    };
    retain(parts.get_mut("sleep"), &|r| {
        by_instant(r, &["bedtime_stop"])
    });
    retain(parts.get_mut("workouts"), &|r| {
        by_instant(r, &["session_end"])
    });
    retain(parts.get_mut("activity"), &by_day);
    retain(parts.get_mut("meals"), &by_day);
    if let Some(Value::Object(series)) = parts.get_mut("timeseries") {
        for samples in series.values_mut() {
            retain(Some(samples), &|r| by_instant(r, &["end", "timestamp"]));
        }
    }
}

/// The window of a demo history of `days` days up to `now`: from midnight (UTC) `days - 1`
/// days before today, narrowed to the user's ingestion bounds; `None` when nothing is left.
pub fn window(user: &User, days: u32, now: DateTime<Utc>) -> Option<Window> {
    let today = now.date_naive().and_hms_opt(0, 0, 0)?.and_utc();
    let start = today - chrono::Duration::days(i64::from(days) - 1);
    crate::sync::pull::narrowed(user, start, now)
}

/// Merges day bodies that share provider and source into one body each, keeping order.
pub fn merge_bodies(bodies: Vec<Value>) -> Vec<Value> {
    let mut merged: Vec<Value> = Vec::new();
    for body in bodies {
        let Value::Object(parts) = body else { continue };
        let same_source = |m: &Value| {
            m.get("provider") == parts.get("provider") && m.get("source") == parts.get("source")
        };
        let index = match merged.iter().position(same_source) {
            Some(i) => i,
            None => {
                let mut head = Map::new();
                for key in ["provider", "source"] {
                    if let Some(v) = parts.get(key) {
                        head.insert(key.to_owned(), v.clone());
                    }
                }
                merged.push(Value::Object(head));
                merged.len() - 1
            }
        };
        let Some(target) = merged[index].as_object_mut() else {
            continue;
        };
        for (key, value) in parts {
            match (key.as_str(), value) {
                ("provider" | "source", _) => {}
                ("profile", v) => {
                    target.entry("profile").or_insert(v);
                }
                ("timeseries", Value::Object(series)) => {
                    let slot = target
                        .entry("timeseries")
                        .or_insert_with(|| Value::Object(Map::new()));
                    if let Some(slot) = slot.as_object_mut() {
                        for (resource, samples) in series {
                            append(
                                slot.entry(resource)
                                    .or_insert_with(|| Value::Array(Vec::new())),
                                samples,
                            );
                        }
                    }
                }
                (_, v) => append(
                    target
                        .entry(key)
                        .or_insert_with(|| Value::Array(Vec::new())),
                    v,
                ),
            }
        }
    }
    merged
}

fn append(slot: &mut Value, more: Value) {
    if let (Some(list), Value::Array(items)) = (slot.as_array_mut(), more) {
        list.extend(items);
    }
}

/// What a demo connection asks for: the provider, whose life and how many days of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DemoLink<'a> {
    /// A demo-capable provider's slug.
    pub provider: &'a str,
    /// Whose life the data describes.
    pub persona: Persona,
    /// Days of history ending today.
    pub days: u32,
}

/// What [`connect`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DemoConnected {
    /// Whether a new history is being pulled (`false`: the user's ingestion bounds leave
    /// nothing to pull).
    pub pulling: bool,
    /// Whether the connection is new (`provider.connection.created` was emitted).
    pub created: bool,
}

/// Connects `link.provider` in demo mode: records the connection `connected`, starts its pulls
/// (history of `link.days` days living `link.persona`'s life, then every 30 minutes) and emits
/// `provider.connection.created` when the connection is new, in one transaction. The history
/// itself is the jobs' work. A provider without a demo mode is refused.
pub async fn connect(
    meta: &MetadataStore,
    store: &HealthStore,
    user: &User,
    link: DemoLink<'_>,
    now: DateTime<Utc>,
) -> Result<DemoConnected, DataError> {
    let mut tx = meta.begin().await?;
    let (connected, deliveries) = connect_on(&mut tx, store, user, link, now).await?;
    tx.commit().await.map_err(MetadataError::from)?;
    if connected.pulling || deliveries > 0 {
        meta.jobs_wake().notify_waiters();
    }
    Ok(connected)
}

/// [`connect`] on the caller's transaction (the link page consumes its token in the same one).
/// Answers what it did and how many webhook deliveries it enqueued: wake the job runners after
/// the commit when it started a pull or enqueued any.
pub async fn connect_on(
    conn: &mut sqlx::AnyConnection,
    store: &HealthStore,
    user: &User,
    link: DemoLink<'_>,
    now: DateTime<Utc>,
) -> Result<(DemoConnected, usize), DataError> {
    let DemoLink {
        provider,
        persona,
        days,
    } = link;
    if !generator::is_demo_provider(provider) {
        let message = format!("{provider:?} has no demo mode");
        return Err(
            crate::validation::Invalid(vec![crate::validation::Violation::value(
                crate::loc!["body", "provider"],
                message,
            )])
            .into(),
        );
    }
    let had = connections::connection(&mut *conn, user.id, provider)
        .await?
        .is_some_and(|c| c.status == ConnectionStatus::Connected);
    connections::upsert_connection(&mut *conn, user.id, provider, ConnectionStatus::Connected)
        .await?;
    let pulling = crate::sync::pull::begin_on(
        &mut *conn,
        user,
        provider,
        window(user, days, now),
        Some(persona),
        now,
    )
    .await?;
    let mut events = Vec::new();
    if !had {
        events.push(crate::data::connection_created(store, user, provider, &[]).await?);
    }
    let enqueued = outbox::enqueue(&mut *conn, user.team_id, &events, metadata::now()).await?;
    let connected = DemoConnected {
        pulling,
        created: !had,
    };
    Ok((connected, enqueued.deliveries))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use chrono::TimeZone;

    fn at(y: i32, m: u32, d: u32, h: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(y, m, d, h, 0, 0).unwrap()
    }

    fn pull(resources: Vec<Resource>, start: DateTime<Utc>, end: DateTime<Utc>) -> Pull {
        Pull {
            resources,
            window: Window::new(start, end).unwrap(),
        }
    }

    /// The instants of a body's heart-rate samples and nights.
    fn instants(body: &Value) -> (Vec<String>, Vec<String>) {
        let texts = |list: &Value, field: &str| -> Vec<String> {
            list.as_array()
                .map(|l| {
                    l.iter()
                        .filter_map(|r| r[field].as_str())
                        .map(str::to_owned)
                })
                .into_iter()
                .flatten()
                .collect()
        };
        (
            texts(&body["timeseries"]["heartrate"], "timestamp"),
            texts(&body["sleep"], "bedtime_stop"),
        )
    }

    #[tokio::test]
    async fn a_pull_is_the_generators_records_of_its_window_and_adjacent_windows_share_none() {
        let user = Uuid::from_u128(0x1234_5678_9abc_def0_1234_5678_9abc_def0);
        // Denver: a local day runs seven hours into the next UTC day.
        let demo = Demo::new("fitbit", Persona::Athlete, user).unwrap();
        let (start, middle, end) = (at(2025, 3, 1, 0), at(2025, 3, 6, 3), at(2025, 3, 11, 0));
        let whole = demo
            .pull("", &pull(Resource::ALL.to_vec(), start, end))
            .await
            .unwrap();
        let (hr, nights) = instants(&whole.body.to_json());
        let inside = |t: &String| {
            let t = DateTime::parse_from_rfc3339(t).unwrap().with_timezone(&Utc);
            start < t && t <= end
        };
        assert!(
            hr.len() > 2_000 && nights.len() >= 8,
            "{} {}",
            hr.len(),
            nights.len()
        );
        assert!(hr.iter().chain(&nights).all(inside));
        // Everything the generator made for those instants, from the days around them.
        let day = NaiveDate::from_ymd_opt(2025, 3, 11).unwrap();
        let generated =
            generator::generate("fitbit", Persona::Athlete, seed_for(user), day, 12).unwrap();
        let (all_hr, all_nights) = instants(&merge_bodies(generated).remove(0));
        let within = |l: Vec<String>| l.into_iter().filter(inside).collect::<Vec<_>>();
        assert_eq!(hr, within(all_hr));
        assert_eq!(nights, within(all_nights));
        assert!(whole.body.to_json().get("profile").is_some());

        // Two chunks meeting at an instant in the middle of a Denver evening: each record once.
        let resources = vec![Resource::Sleep, Resource::Heartrate, Resource::Activity];
        let a = demo
            .pull("", &pull(resources.clone(), start, middle))
            .await
            .unwrap();
        let b = demo.pull("", &pull(resources, middle, end)).await.unwrap();
        assert!(a.body.to_json().get("profile").is_none());
        let ((mut hr_a, mut nights_a), (hr_b, nights_b)) =
            (instants(&a.body.to_json()), instants(&b.body.to_json()));
        assert!(!hr_a.is_empty() && !hr_b.is_empty());
        hr_a.extend(hr_b);
        nights_a.extend(nights_b);
        assert_eq!((hr_a, nights_a), (hr, nights));
        // Daily records: each day of the window, the day of the middle in both chunks (it is
        // one record by id), none outside.
        let dates = |body: &Value| -> Vec<String> {
            body["activity"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| r["date"].to_string())
                .collect()
        };
        assert!(
            dates(&whole.body.to_json())
                .iter()
                .all(|d| d.as_str() >= "\"2025-03-01\"" && d.as_str() <= "\"2025-03-10\"")
        );
        assert!(dates(&a.body.to_json()).contains(&"\"2025-03-06\"".to_owned()));
        assert!(dates(&b.body.to_json()).contains(&"\"2025-03-06\"".to_owned()));
    }

    #[test]
    fn a_window_ending_mid_day_covers_that_whole_day_and_no_more() {
        let window = Window::new(at(2025, 3, 1, 12), at(2025, 3, 3, 6)).unwrap();
        let day = |d| NaiveDate::from_ymd_opt(2025, 3, d).unwrap();
        assert_eq!(days_of(window), (day(1), day(3)));
        let midnight = Window::new(at(2025, 3, 1, 0), at(2025, 3, 3, 0)).unwrap();
        assert_eq!(days_of(midnight), (day(1), day(2)));
    }

    #[test]
    fn only_demo_capable_providers_have_a_demo_connector() {
        assert!(Demo::new("apple_health_kit", Persona::Athlete, Uuid::nil()).is_some());
        assert!(Demo::new("withings", Persona::Athlete, Uuid::nil()).is_none());
        assert!(Demo::new("nonesuch", Persona::Athlete, Uuid::nil()).is_none());
    }
}
