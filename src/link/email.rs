//! E-mail providers (`linking.md` §The link API: `POST /v2/link/provider/email/{provider}`):
//! the user has already shared their data with an account this deployment reads, and the link
//! finds them there by their e-mail address.
//!
//! The one e-mail provider is `freestyle_libre`: the patient shares their FreeStyle Libre
//! readings from the LibreLink app with a LibreLinkUp **follower account** of the deployment
//! (or of the team). That account is configured like an OAuth application: the deployment's in
//! the `--oauth-apps` file (`{"freestyle_libre": {"client_id": "<follower e-mail>",
//! "client_secret": "<password>"}}`), a team's own with `PUT
//! /v2/team/provider/freestyle_libre/credentials`, which wins ([`follower_account`]). The link
//! signs in as the follower, finds the share whose patient has the e-mail address (a pending
//! invitation, which it accepts, or a connection already made), and connects the user to that
//! patient; the pulls are LibreLinkUp's (`sync::connectors::libre`). The wire is in [`librelinkup`].
//!
//! Decisions where the spec is silent:
//! - A patient who has not shared yet answers `provider_credential_error` with what to do
//!   (share with the follower account, named by its e-mail address, then try again).
//! - `region` is the patient's LibreLinkUp region: one LibreLinkUp lacks is
//!   `unsupported_region` before anything is asked; the follower signs in there and follows
//!   LibreLinkUp's redirect to its own region.
//! - E-mail links count against the link token's sign-ins ([`password::MAX_SIGN_INS`]), so a
//!   link cannot be used to probe which addresses have shared.
//! - A deployment without a follower account, or whose follower LibreLinkUp refuses, answers
//!   `provider_api_error` (the user can do nothing about it; the log says why).
//! - Once accepted, an invitation is gone, and LibreLinkUp's connections are not known to carry
//!   the patient's address: a second link of the same address (another user, or after a
//!   deregistration) finds the patient only when the patient shares again; the same patient
//!   for two users of a team is then `duplicate_connection`.
//! - The connection keeps the follower's sign-in (sealed) and the patient's id, so a pull signs
//!   in again by itself when the session expires. After the follower's password changes, the
//!   next renewal fails and the connection goes to `error`; linking again fixes it.

use chrono::{DateTime, Utc};

use super::lifecycle::{Linked, finish_link};
use super::password::{self, Login, Outcome, SignIn};
use super::tokens::LinkSession;
use super::{LinkError, LinkErrorType, team_apps};
use crate::providers::Provider;
use crate::secret::{SecretError, SecretKey};
use crate::store::metadata::MetadataStore;
use crate::sync::credentials::Credentials;

pub use crate::sync::access::{EmailLink, Follower, Share};
pub use crate::sync::registry::EmailLinks;

pub use crate::sync::oauth::uses_account;

/// The follower account `team` links `provider` with: the team's own (client id and secret of
/// its provider credentials), else the deployment's (`--oauth-apps`); `None` without either.
pub async fn follower_account(
    meta: &MetadataStore,
    key: Option<&SecretKey>,
    apps: &super::oauth::OAuthApps,
    team: uuid::Uuid,
    provider: &str,
) -> Result<Option<(String, String)>, LinkError> {
    if let Some(own) = team_apps::own_secret(meta, key, team, provider).await? {
        return Ok(Some(own));
    }
    Ok(apps
        .0
        .get(provider)
        .map(|app| (app.client_id.clone(), app.client_secret.clone())))
}

/// What the e-mail link needs of the deployment.
#[derive(Clone, Copy)]
pub struct Deps<'a> {
    /// The metadata store.
    pub meta: &'a MetadataStore,
    /// The secret key credentials are sealed with.
    pub key: Option<&'a SecretKey>,
    /// The link configuration (follower accounts, sign-ins, share searches).
    pub config: &'a super::LinkConfig,
}

/// Links the session's user to the e-mail provider: finds the share of the patient with
/// `email` and connects to it. Every refusal is an [`Outcome`] with the error; only store
/// failures are errors.
pub async fn connect(
    deps: Deps<'_>,
    session: &LinkSession,
    provider: &Provider,
    email: &str,
    region: Option<&str>,
    now: DateTime<Utc>,
) -> Result<Outcome, LinkError> {
    let key = deps.key.ok_or(SecretError::Missing)?;
    let mut landing = password::landing(session, provider);
    let not_here = |landing: &mut super::Landing, why: &str| {
        tracing::warn!(provider = provider.slug, why, "e-mail link unavailable");
        landing.error = Some((
            LinkErrorType::ProviderApiError,
            format!(
                "{} cannot be linked on this deployment right now; try again later.",
                provider.name
            ),
        ));
    };
    let (Some(search), Some(login)) = (
        deps.config.email.get(provider.slug),
        deps.config.password.get(provider.slug),
    ) else {
        not_here(&mut landing, "no share search or sign-in for the provider");
        return Ok(Outcome::of(landing, None));
    };
    let region = region.map(str::trim).filter(|r| !r.is_empty());
    let region = region.map(str::to_ascii_lowercase);
    if let Some(r) = region.as_deref().filter(|r| !search.serves(r)) {
        landing.error = Some((
            LinkErrorType::UnsupportedRegion,
            format!(
                "{} has no region {r:?} that this service can reach.",
                provider.name
            ),
        ));
        return Ok(Outcome::of(landing, None));
    }
    if let Some(refusal) = password::take_sign_in(deps.meta, session).await? {
        landing.error = Some(refusal);
        return Ok(Outcome::of(landing, None));
    }
    let account = follower_account(
        deps.meta,
        Some(key),
        &deps.config.oauth_apps,
        session.team_id,
        provider.slug,
    )
    .await?;
    let Some((follower, follower_password)) = account else {
        not_here(&mut landing, "no follower account configured");
        return Ok(Outcome::of(landing, None));
    };
    let signed_in = login
        .sign_in(Login {
            username: &follower,
            password: &follower_password,
            region: region.as_deref(),
        })
        .await;
    let (follower_id, follower_session) = match signed_in {
        SignIn::Accepted {
            provider_user_id,
            session,
            ..
        } => (provider_user_id, session),
        SignIn::Refused(LinkErrorType::UnsupportedRegion, message) => {
            landing.error = Some((LinkErrorType::UnsupportedRegion, message));
            return Ok(Outcome::of(landing, None));
        }
        SignIn::Refused(_, _) | SignIn::Pending { .. } => {
            not_here(&mut landing, "the follower account's sign-in was refused");
            return Ok(Outcome::of(landing, None));
        }
    };
    let who = Follower {
        session: &follower_session,
        id: &follower_id,
        email: &follower,
    };
    let patient = match search.find_share(&who, email.trim()).await {
        Share::Found(patient) => patient,
        Share::NotShared(message) => {
            landing.error = Some((LinkErrorType::ProviderCredentialError, message));
            return Ok(Outcome::of(landing, None));
        }
        Share::Failed(why) => {
            not_here(&mut landing, &why);
            return Ok(Outcome::of(landing, None));
        }
    };
    let Some(mut kept) = crate::sync::connectors::libre::access::Session::decode(&follower_session)
    else {
        not_here(&mut landing, "the follower's session is not LibreLinkUp's");
        return Ok(Outcome::of(landing, None));
    };
    kept.patient = Some(patient.clone());
    let linked = Linked {
        provider_user_id: Some(patient.clone()),
        scopes_granted: Vec::new(),
        scopes_denied: Vec::new(),
        credentials: Credentials {
            access_token: Some(kept.encode()),
            username: Some(follower),
            password: Some(follower_password),
            ..Default::default()
        },
    };
    landing.error = finish_link(deps.meta, Some(key), session, provider, &linked, now).await?;
    let connected = landing.error.is_none().then_some(patient);
    Ok(Outcome::of(landing, connected))
}
