//! Which providers this deployment can connect for one team (issue 37, "the catalogue tells
//! the truth"): the one decision behind the hosted link page's list, `GET /v2/link/providers`,
//! the `connectable` flag of `GET /v2/providers`, and the provider checks of `POST
//! /v2/link/token`.
//!
//! A provider is connectable ([`Connectability`]) when
//! - it connects on the device or through the team's own app (`sdk`, `app`): the mobile SDK and
//!   the push API serve every deployment, so always, but never through a link token
//!   ([`Route::TeamApp`]);
//! - it is a demo provider and the deployment runs in demo mode (`serve --demo`): the link
//!   connects at once with synthetic history;
//! - otherwise it needs a connector (`sync::registry`): a link without one would connect a
//!   user whose data never arrives. With one, it needs what its link signs in with:
//!   - OAuth: the team's own application (`PUT /v2/team/provider/{provider}/credentials`, on
//!     the deployment's endpoints or the provider's own, `team_apps::Endpoints`), else the
//!     deployment's (`--oauth-apps`);
//!   - password: a sign-in implementation (`link::password`);
//!   - e-mail: a share search (`link::email`) and the follower account it signs in as (the
//!     team's own credentials, else the deployment's `--oauth-apps` entry).
//!
//! The link page and `GET /v2/link/providers` offer exactly the connectable providers a link
//! token may link ([`Offer::offered`]), so nothing offered ends on "cannot be connected".
//!
//! Decision where the spec is silent: a link token asked for a provider that cannot be
//! connected (its `provider`, or any member of `filter_on_providers`) is refused at creation
//! with a 400 naming the provider and why ([`Offer::check_options`]; 400 because the request
//! is well formed but not allowed in the deployment's current configuration), rather than
//! handing out a link whose page could only say so. A token whose provider stops being
//! connectable after it was made (a team removing its credentials) gets that same sentence
//! on the page.

use std::collections::HashSet;

use uuid::Uuid;

use super::tokens::{LinkOptions, LinkSession};
use super::{LinkConfig, LinkError, team_apps};
use crate::providers::{AuthType, CATALOGUE, Provider};
use crate::store::metadata::MetadataStore;
use crate::sync::registry::has_connector;

/// Whose application (or follower account) a link uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owner {
    /// The team's own (`PUT /v2/team/provider/{provider}/credentials`).
    Team,
    /// The deployment's (`--oauth-apps`).
    Deployment,
}

/// How a connectable provider is connected here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// On the device (mobile SDK) or by the team's app (push API); never by a link token.
    TeamApp,
    /// Demo mode: at once, with synthetic history.
    Demo,
    /// The provider's OAuth flow with this application.
    OAuth(Owner),
    /// A username-and-password sign-in at the provider.
    Password,
    /// An e-mail share search, signed in as this follower account.
    Email(Owner),
}

/// Why a provider cannot be connected here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Blocker {
    /// No connector: its data could not be pulled.
    NoConnector,
    /// An OAuth provider without an application (neither the deployment's nor the team's).
    NoOAuthApplication,
    /// A password or e-mail provider without a sign-in implementation here.
    NoSignIn,
    /// An e-mail provider without the follower account its share search signs in as.
    NoFollowerAccount,
}

impl Blocker {
    /// The sentence a client or user reads: the provider, why, and who can change it.
    pub fn sentence(self, provider: &Provider) -> String {
        let (name, slug) = (provider.name, provider.slug);
        let set_up = format!(
            "the operator configures one in --oauth-apps, or the team sets its own with \
             PUT /v2/team/provider/{slug}/credentials"
        );
        match self {
            Blocker::NoConnector => format!(
                "{name} ({slug}) cannot be connected on this deployment: it has no connector \
                 to pull its data"
            ),
            Blocker::NoOAuthApplication => format!(
                "{name} ({slug}) cannot be connected on this deployment: it has no OAuth \
                 application ({set_up})"
            ),
            Blocker::NoSignIn => format!(
                "{name} ({slug}) cannot be connected on this deployment: it has no sign-in \
                 implementation"
            ),
            Blocker::NoFollowerAccount => format!(
                "{name} ({slug}) cannot be connected on this deployment: it has no follower \
                 account to find shared data with ({set_up})"
            ),
        }
    }
}

/// Whether (and how) a provider can be connected here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Connectability {
    /// It can, this way.
    Connectable(Route),
    /// It cannot, for this reason.
    Blocked(Blocker),
}

impl Connectability {
    /// Whether it can be connected at all (`connectable` of `GET /v2/providers`).
    pub fn is_connectable(self) -> bool {
        matches!(self, Connectability::Connectable(_))
    }

    /// Whether a link token can connect it (the link page and `GET /v2/link/providers`).
    pub fn by_link(self) -> bool {
        matches!(self, Connectability::Connectable(route) if route != Route::TeamApp)
    }
}

/// What decides for one team: the deployment's link configuration and the providers the team
/// has its own application for.
#[derive(Debug, Clone)]
pub struct Offer<'a> {
    config: &'a LinkConfig,
    team_apps: HashSet<String>,
}

impl<'a> Offer<'a> {
    /// The offer of a deployment configured by `config` to a team with its own application
    /// for each of `team_apps`.
    pub fn new(config: &'a LinkConfig, team_apps: impl IntoIterator<Item = String>) -> Self {
        Offer {
            config,
            team_apps: team_apps.into_iter().collect(),
        }
    }

    /// The offer to `team` (its own applications read from the metadata store).
    pub async fn for_team(
        meta: &MetadataStore,
        config: &'a LinkConfig,
        team: Uuid,
    ) -> Result<Offer<'a>, LinkError> {
        Ok(Offer::new(
            config,
            team_apps::providers_of(meta, team).await?,
        ))
    }

    /// Whether (and how) `provider` can be connected.
    pub fn of(&self, provider: &Provider) -> Connectability {
        use Connectability::{Blocked, Connectable};
        let slug = provider.slug;
        let team_has = self.team_apps.contains(slug);
        let deployment_has = self.config.oauth_apps.0.contains_key(slug);
        match provider.auth_type {
            AuthType::Sdk | AuthType::App => return Connectable(Route::TeamApp),
            _ if self.config.demo && provider.demo => return Connectable(Route::Demo),
            _ if !has_connector(slug) => return Blocked(Blocker::NoConnector),
            _ => {}
        }
        match provider.auth_type {
            AuthType::Oauth | AuthType::TeamOauth => {
                if team_has && team_apps::team_endpoints(self.config, slug).is_some() {
                    Connectable(Route::OAuth(Owner::Team))
                } else if deployment_has {
                    Connectable(Route::OAuth(Owner::Deployment))
                } else {
                    Blocked(Blocker::NoOAuthApplication)
                }
            }
            AuthType::Password if self.config.password.get(slug).is_some() => {
                Connectable(Route::Password)
            }
            AuthType::Email if self.config.email.get(slug).is_none() => Blocked(Blocker::NoSignIn),
            AuthType::Email if team_has => Connectable(Route::Email(Owner::Team)),
            AuthType::Email if deployment_has => Connectable(Route::Email(Owner::Deployment)),
            AuthType::Email => Blocked(Blocker::NoFollowerAccount),
            AuthType::Password | AuthType::Sdk | AuthType::App => Blocked(Blocker::NoSignIn),
        }
    }

    /// The providers the session's token may link and this deployment can connect by a link,
    /// in catalogue order.
    pub fn offered(&self, session: &LinkSession) -> Vec<&'static Provider> {
        session
            .providers()
            .into_iter()
            .filter(|p| self.of(p).by_link())
            .collect()
    }

    /// How a link connects `provider`, or [`LinkError::NotConnectable`] naming it and why
    /// (providers of the team's own app included: they never connect by a link).
    pub fn link_route(&self, provider: &Provider) -> Result<Route, LinkError> {
        match self.of(provider) {
            Connectability::Connectable(Route::TeamApp) => Err(LinkError::NotConnectable(format!(
                "{} ({}) connects through the team's own app (the mobile SDK or the push \
                     API), not through a link",
                provider.name, provider.slug
            ))),
            Connectability::Connectable(route) => Ok(route),
            Connectability::Blocked(why) => Err(LinkError::NotConnectable(why.sentence(provider))),
        }
    }

    /// `Ok` when a link token may be made with `options`: its `provider` and every member of
    /// its `filter_on_providers` can be connected by a link; else [`LinkError::NotConnectable`]
    /// with one sentence per provider that cannot (unknown slugs are the caller's to refuse).
    pub fn check_options(&self, options: &LinkOptions) -> Result<(), LinkError> {
        let asked = options
            .provider
            .iter()
            .chain(options.filter_on_providers.iter().flatten());
        let refusals: Vec<String> = asked
            .filter_map(|slug| crate::providers::provider(slug))
            .filter_map(|p| match self.link_route(p) {
                Err(LinkError::NotConnectable(sentence)) => Some(sentence),
                _ => None,
            })
            .collect();
        if refusals.is_empty() {
            Ok(())
        } else {
            Err(LinkError::NotConnectable(format!(
                "{}.",
                refusals.join("; ")
            )))
        }
    }

    /// Every catalogue provider with whether it can be connected, in catalogue order.
    pub fn catalogue(&self) -> Vec<(&'static Provider, Connectability)> {
        CATALOGUE.iter().map(|p| (p, self.of(p))).collect()
    }
}

#[cfg(test)]
mod tests;
