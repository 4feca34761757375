//! A connection's state as provider access reads and writes it: its sealed credentials,
//! opened for a pull, and the error a pull or a provider's notification puts it in when its
//! credentials are refused for good (with the `provider.connection.error` event).

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::access::LinkErrorType;
use super::apps::AppError;
use super::credentials::{self, Credentials};
use crate::events::data::ConnectionError;
use crate::events::{Event, EventType, EventUser, ProviderRef, outbox};
use crate::providers::Provider;
use crate::secret::SecretKey;
use crate::store::metadata::connections::{self, ErrorDetails, ErrorTransition};
use crate::store::metadata::{MetadataError, MetadataStore, User};

/// The stored credentials of a connection, opened.
pub async fn credentials(
    meta: &MetadataStore,
    key: Option<&SecretKey>,
    user: Uuid,
    provider: &str,
) -> Result<Option<Credentials>, AppError> {
    let sealed =
        connections::sealed_credentials(&mut *meta.reader().await?, user, provider).await?;
    Ok(sealed
        .map(|s| credentials::open(key, user, provider, &s))
        .transpose()?)
}

/// Puts the user's connection to `provider` in `error` with `error_details`, and, when it enters
/// `error` now (not when it was there already), emits `provider.connection.error` in the same
/// transaction: `{user_id, provider, source, error_type, error_message}`, `provider` and
/// `source` being the `{name, slug, logo}` object of `provider.connection.created`, so a
/// receiver reads one provider shape in both. The seam for whatever finds a connection's
/// credentials refused for good (a revoked refresh token, a changed password): `linking.md`
/// and `provider-sync.md` say those need the user to link again. Answers what it found.
pub async fn fail(
    meta: &MetadataStore,
    user: &User,
    provider: &Provider,
    error_type: LinkErrorType,
    message: &str,
    now: DateTime<Utc>,
) -> Result<ErrorTransition, MetadataError> {
    let details = ErrorDetails {
        error_type: error_type.as_str().to_owned(),
        error_message: message.to_owned(),
        occurred_at: now,
    };
    let mut tx = meta.begin().await?;
    let found = connections::set_error(&mut tx, user.id, provider.slug, &details).await?;
    let mut enqueued = 0;
    if found == ErrorTransition::Entered {
        let about = ProviderRef::of(provider.slug);
        let data = ConnectionError {
            user_id: user.id,
            provider: about.clone(),
            source: about,
            error_type: details.error_type.clone(),
            error_message: details.error_message.clone(),
        };
        let event = Event::new(EventType::ConnectionError, Some(EventUser::of(user)), &data);
        enqueued = outbox::enqueue(&mut tx, user.team_id, &[event], now)
            .await?
            .deliveries;
    }
    tx.commit().await?;
    if enqueued > 0 {
        meta.jobs_wake().notify_waiters();
    }
    Ok(found)
}
