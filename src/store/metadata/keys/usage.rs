//! How a key's use is recorded: `last_used_at` is written off the request path. When
//! authentication reads a value older than [`TOUCH_INTERVAL`] (or none), it spawns one
//! conditional UPDATE, which moves the time forward only when it is still that old, so a second
//! request or process racing it writes nothing; a process runs at most one such UPDATE per key
//! at a time. The stored time therefore trails the key's last use by less than a minute (plus
//! the UPDATE's own wait for the writer), and a busy key costs one write a minute, not one per
//! request.

use std::collections::HashSet;
use std::sync::{Mutex, PoisonError};

use chrono::{DateTime, Duration, Utc};
use sqlx::AnyConnection;
use uuid::Uuid;

use super::{Authenticated, authenticate};
use crate::store::metadata::{MetadataError, MetadataStore, now, ts};

/// How stale `last_used_at` may get before a use of the key writes it again.
pub const TOUCH_INTERVAL: Duration = Duration::minutes(1);

/// The keys whose `last_used_at` this process is writing now: one UPDATE in flight per key.
#[derive(Debug, Default)]
pub struct Touches(Mutex<HashSet<Uuid>>);

impl Touches {
    /// Claims the key's write; false when one is already in flight.
    fn begin(&self, id: Uuid) -> bool {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(id)
    }

    fn end(&self, id: Uuid) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&id);
    }
}

/// Records a use of the key at `at` unless its `last_used_at` is already within
/// [`TOUCH_INTERVAL`] of it; whether it wrote.
pub async fn touch_key(
    conn: &mut AnyConnection,
    id: Uuid,
    at: DateTime<Utc>,
) -> Result<bool, MetadataError> {
    let done = sqlx::query(
        "UPDATE api_keys SET last_used_at = $1 \
         WHERE id = $2 AND (last_used_at IS NULL OR last_used_at < $3)",
    )
    .bind(ts(at))
    .bind(id.to_string())
    .bind(ts(at - TOUCH_INTERVAL))
    .execute(conn)
    .await?;
    Ok(done.rows_affected() > 0)
}

impl MetadataStore {
    /// Authenticates a request's key: its team and id when the key is live, and its use
    /// recorded in the background when `last_used_at` is older than [`TOUCH_INTERVAL`].
    pub async fn authenticate(&self, secret: &str) -> Result<Option<Authenticated>, MetadataError> {
        let at = now();
        let found = authenticate(&mut *self.reader().await?, secret, at).await?;
        if let Some(a) = &found
            && a.last_used_at.is_none_or(|t| t <= at - TOUCH_INTERVAL)
        {
            self.spawn_touch(a.key_id, at);
        }
        Ok(found)
    }

    /// Writes the key's `last_used_at` off the request path, unless a write is in flight.
    fn spawn_touch(&self, id: Uuid, at: DateTime<Utc>) {
        if !self.key_touches.begin(id) {
            return;
        }
        let store = self.clone();
        // A span of its own under the request's, so the write joins the request's trace.
        let span = tracing::info_span!("keys.touch", key_id = %id);
        let touch = async move {
            let written = match store.writer().await {
                Ok(mut conn) => touch_key(&mut conn, id, at).await,
                Err(e) => Err(e),
            };
            store.key_touches.end(id);
            if let Err(error) = written {
                tracing::warn!(key_id = %id, %error, "could not record the API key's last use");
            }
        };
        tokio::spawn(tracing::Instrument::instrument(touch, span));
    }
}
