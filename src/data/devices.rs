//! A user's devices (`GET /v2/user/{user_id}/device`, `.../device/{device_id}`), derived, not
//! stored: wearhouse keeps no device registry, so a device is a distinct source the user's data
//! names, as the reference's `ClientFacingDevice`.
//!
//! Decisions where the reference is silent:
//! - the sources are the (provider, source type, app, device) of the user's summary records
//!   (sleep, activity, workouts, body, meals, ...: every table but the profile, read whole)
//!   and of its timeseries samples of the last [`RECENT_DAYS`] days (older samples are not
//!   read: a year of 1 Hz heart rate would be decoded to list one watch), plus one device per
//!   connected (or paused) provider that has no data yet, with the provider's default source
//!   type;
//! - a device's `id` is derived from the user and the source (stable across reads, distinct
//!   between users); `device_id` and `app_id` are the source's own; the reference's
//!   `device_manufacturer`, `device_model` and `device_version` are not stored: null;
//! - a source type outside the reference's list reads `unknown`; devices are ordered by
//!   provider, source type, app and device.

use std::collections::BTreeSet;

use chrono::{Duration, Utc};
use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use serde::Serialize;
use utoipa::ToSchema;
use uuid::Uuid;

use super::{DataError, read};
use crate::providers::{self, SOURCE_TYPES};
use crate::schema::{Dataset, Table};
use crate::store::health::HealthStore;
use crate::store::metadata::{ConnectionStatus, MetadataStore, User};

/// How far back timeseries samples are read for their sources.
pub const RECENT_DAYS: i64 = 30;

/// The reference's `ClientFacingDevice`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct Device {
    /// Derived from the user and the source.
    pub id: Uuid,
    /// The user.
    pub user_id: Uuid,
    /// The provider slug.
    pub provider: String,
    /// The source type (`unknown` when ours is not one of the reference's).
    pub source_type: String,
    /// The source app, when the data names one.
    pub app_id: Option<String>,
    /// Not stored: null.
    pub device_manufacturer: Option<String>,
    /// Not stored: null.
    pub device_model: Option<String>,
    /// Not stored: null.
    pub device_version: Option<String>,
    /// The source device's own id, when the data names one.
    pub device_id: Option<String>,
}

/// A source: (provider, source type, app, device).
type Source = (String, String, Option<String>, Option<String>);

fn text(batch: &RecordBatch, column: &str, row: usize) -> Option<String> {
    let array = batch.column_by_name(column)?;
    if array.is_null(row) {
        return None;
    }
    array
        .as_string_opt::<i32>()
        .map(|a| a.value(row).to_owned())
}

fn collect_sources(batches: &[RecordBatch], into: &mut BTreeSet<Source>) {
    for batch in batches {
        for row in 0..batch.num_rows() {
            let Some(provider) = text(batch, "source_provider", row) else {
                continue;
            };
            let kind = text(batch, "source_type", row)
                .filter(|k| SOURCE_TYPES.contains(&k.as_str()))
                .unwrap_or_else(|| "unknown".to_owned());
            into.insert((
                provider,
                kind,
                text(batch, "source_app_id", row),
                text(batch, "source_device_id", row),
            ));
        }
    }
}

fn device(user: Uuid, (provider, kind, app, device): Source) -> Device {
    let id = crate::ingest::derive_id(&[
        "device",
        &user.to_string(),
        &provider,
        &kind,
        app.as_deref().unwrap_or(""),
        device.as_deref().unwrap_or(""),
    ]);
    Device {
        id: id.parse().unwrap_or_default(),
        user_id: user,
        provider,
        source_type: kind,
        app_id: app,
        device_manufacturer: None,
        device_model: None,
        device_version: None,
        device_id: device,
    }
}

/// The user's devices.
pub async fn devices(
    meta: &MetadataStore,
    store: &HealthStore,
    user: &User,
) -> Result<Vec<Device>, DataError> {
    let mut sources = BTreeSet::new();
    let now = Utc::now();
    let recent = (now - Duration::days(RECENT_DAYS))..(now + Duration::days(1));
    for dataset in store.datasets(user.team_id, user.id).await? {
        let window = match dataset {
            Dataset::Table(Table::Profile) => continue,
            Dataset::Table(_) => None,
            Dataset::Timeseries(_) => Some(recent.clone()),
        };
        let rows = read(store, user, dataset, window, None).await?;
        collect_sources(&rows, &mut sources);
    }
    for connection in meta.connections(user.id).await? {
        let live = matches!(
            connection.status,
            ConnectionStatus::Connected | ConnectionStatus::Paused
        );
        if !live || sources.iter().any(|s| s.0 == connection.provider) {
            continue;
        }
        let kind =
            providers::provider(&connection.provider).map_or("unknown", |p| p.default_source_type);
        sources.insert((connection.provider, kind.to_owned(), None, None));
    }
    Ok(sources.into_iter().map(|s| device(user.id, s)).collect())
}

/// One of the user's devices by its id.
pub async fn device_by_id(
    meta: &MetadataStore,
    store: &HealthStore,
    user: &User,
    id: Uuid,
) -> Result<Option<Device>, DataError> {
    Ok(devices(meta, store, user)
        .await?
        .into_iter()
        .find(|d| d.id == id))
}
