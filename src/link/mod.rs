//! Linking users to providers (`linking.md`): connections and their sealed credentials, link
//! tokens (the widget's credential) and link codes (the mobile app's), password sign-ins (with
//! their second factor) and e-mail links.
//!
//! This module owns the rules; `http::link` decodes and encodes around it. Credentials enter
//! only through the link flows and bulk import, are sealed with the deployment's
//! [`SecretKey`](crate::secret::SecretKey) before they reach the metadata store, and are never
//! logged or returned.

pub mod bulk_import;
pub mod bulk_ops;
pub mod codes;
pub mod email;
pub mod lifecycle;
pub mod oauth;
pub mod offer;
pub mod password;
pub mod sign_in;
pub mod team_apps;
pub mod tokens;
pub use crate::sync::token_wire;

use crate::secret::SecretError;
use crate::store::metadata::MetadataError;
pub use crate::sync::access::LinkErrorType;
use crate::sync::apps::{AccessSettings, AppError};

/// Deployment settings of linking: where the hosted page lives, the mobile app's URL, the
/// region link codes carry.
#[derive(Debug, Clone)]
pub struct LinkConfig {
    /// The service's public URL (`--public-url`), without a trailing slash.
    pub public_url: String,
    /// `<app scheme>://<app host>` of the mobile app that exchanges link codes.
    pub app_url: String,
    /// `us` or `eu`: the region part of link codes.
    pub region: Region,
    /// The deployment's OAuth applications by provider (`--oauth-apps`).
    pub oauth_apps: oauth::OAuthApps,
    /// The OAuth endpoints a team's own application uses for a provider the deployment has no
    /// application for (default: the providers' own hosts).
    pub oauth_endpoints: team_apps::Endpoints,
    /// The password providers' sign-ins (none until set: `app::open_state` sets every one).
    pub password: password::PasswordLogins,
    /// The e-mail providers' share searches (none until set: `app::open_state` sets every
    /// one).
    pub email: email::EmailLinks,
    /// Demo mode (`serve --demo`): the hosted page connects demo-capable providers at once,
    /// with synthetic history, instead of sending the user to the provider.
    pub demo: bool,
}

impl AccessSettings for LinkConfig {
    fn public_url(&self) -> &str {
        &self.public_url
    }
    fn oauth_apps(&self) -> &oauth::OAuthApps {
        &self.oauth_apps
    }
    fn oauth_endpoints(&self) -> &team_apps::Endpoints {
        &self.oauth_endpoints
    }
    fn password_logins(&self) -> &password::PasswordLogins {
        &self.password
    }
}

impl Default for LinkConfig {
    fn default() -> Self {
        LinkConfig {
            public_url: "http://127.0.0.1:8080".into(),
            app_url: "wearhouse://link".into(),
            region: Region::Us,
            oauth_apps: oauth::OAuthApps::default(),
            oauth_endpoints: team_apps::Endpoints::default(),
            password: password::PasswordLogins::default(),
            email: email::EmailLinks::default(),
            demo: false,
        }
    }
}

/// The deployment's region, as link codes name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Region {
    /// United States.
    Us,
    /// Europe.
    Eu,
}

impl Region {
    /// The two letters of link codes.
    pub fn as_str(self) -> &'static str {
        match self {
            Region::Us => "us",
            Region::Eu => "eu",
        }
    }
}

/// Where a link lands: the token's `redirect_url` (when it is known) with the outcome.
#[derive(Debug, Clone)]
pub struct Landing {
    /// The token's redirect URL.
    pub redirect_url: Option<String>,
    /// The provider slug.
    pub provider: String,
    /// `None` on success, else the link error and its sentence.
    pub error: Option<(LinkErrorType, String)>,
}

impl Landing {
    /// The token's `redirect_url` with the outcome in its query (`linking.md`):
    /// `state=success&provider=<slug>`, or `state=error&provider=<slug>&error_type=<t>&error=<text>`
    /// (without `provider` when none was picked: the Close button's `user_cancelled`); `None`
    /// when the token has no (valid) `redirect_url`.
    pub fn url(&self) -> Option<String> {
        let mut url = url::Url::parse(self.redirect_url.as_deref()?).ok()?;
        {
            let mut q = url.query_pairs_mut();
            q.append_pair(
                "state",
                if self.error.is_some() {
                    "error"
                } else {
                    "success"
                },
            );
            if !self.provider.is_empty() {
                q.append_pair("provider", &self.provider);
            }
            if let Some((t, message)) = &self.error {
                q.append_pair("error_type", t.as_str());
                q.append_pair("error", message);
            }
        }
        Some(url.into())
    }
}

/// Errors of the link domain.
#[derive(Debug, thiserror::Error)]
pub enum LinkError {
    /// The provider cannot be connected on this deployment for this team; the sentence names
    /// it and says why (`offer::Blocker`).
    #[error("{0}")]
    NotConnectable(String),
    /// The user has no connection to this provider.
    #[error("the user has no {0} connection")]
    ConnectionNotFound(String),
    /// A link failed with one of the link errors; the sentence explains it.
    #[error("{message}")]
    Link {
        /// The error type.
        error_type: LinkErrorType,
        /// The sentence.
        message: String,
    },
    /// The provider has no OAuth application on this deployment or team.
    #[error("{0} has no OAuth application configured on this deployment")]
    OAuthNotConfigured(String),
    /// The team has no own OAuth application for this provider.
    #[error("the team has no {0} OAuth application")]
    TeamAppNotFound(String),
    /// A link code that cannot be exchanged (unknown, expired, used): the sentence says which.
    #[error("{0}")]
    CodeRefused(String),
    /// Credentials could not be sealed or opened (no key, another key, a corrupt value).
    #[error(transparent)]
    Secret(#[from] SecretError),
    /// The metadata store failed.
    #[error(transparent)]
    Metadata(#[from] MetadataError),
}

impl From<AppError> for LinkError {
    fn from(e: AppError) -> Self {
        match e {
            AppError::NotConfigured(what) => LinkError::OAuthNotConfigured(what),
            AppError::Secret(e) => LinkError::Secret(e),
            AppError::Metadata(e) => LinkError::Metadata(e),
        }
    }
}
