//! Provider access: what a provider's sign-in answers, the link errors it can end on, and the
//! seams a connector's sign-ins implement ([`PasswordLogin`] for username-and-password
//! providers, [`EmailLink`] for providers linked through a shared follower account). Each
//! provider's implementation lives in its own folder (`connectors/<slug>/`) beside its pull;
//! `link` drives them (the link page, the link API, second factors), and pulls renew sessions
//! through them, so neither imports the other's provider code.

use serde::{Deserialize, Serialize};

/// The link errors of `linking.md`, as `error_type` names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkErrorType {
    /// No such link token.
    InvalidToken,
    /// The token's 60 minutes are over.
    TokenExpired,
    /// The token already made a connection.
    TokenConsumed,
    /// The provider refused the credentials.
    ProviderCredentialError,
    /// The provider asks the user to change the password first.
    ProviderPasswordExpired,
    /// The provider failed.
    ProviderApiError,
    /// The provider does not serve the region asked for.
    UnsupportedRegion,
    /// The provider account is already connected to another user of the team.
    DuplicateConnection,
    /// The grant lacks a required scope.
    RequiredScopesNotGranted,
    /// The MFA code was wrong.
    IncorrectMfaCode,
    /// The user closed the widget.
    UserCancelled,
}

impl LinkErrorType {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            LinkErrorType::InvalidToken => "invalid_token",
            LinkErrorType::TokenExpired => "token_expired",
            LinkErrorType::TokenConsumed => "token_consumed",
            LinkErrorType::ProviderCredentialError => "provider_credential_error",
            LinkErrorType::ProviderPasswordExpired => "provider_password_expired",
            LinkErrorType::ProviderApiError => "provider_api_error",
            LinkErrorType::UnsupportedRegion => "unsupported_region",
            LinkErrorType::DuplicateConnection => "duplicate_connection",
            LinkErrorType::RequiredScopesNotGranted => "required_scopes_not_granted",
            LinkErrorType::IncorrectMfaCode => "incorrect_mfa_code",
            LinkErrorType::UserCancelled => "user_cancelled",
        }
    }
}

/// How the provider sent the code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MfaMethod {
    /// A text message.
    Sms,
    /// An e-mail.
    Email,
}

impl MfaMethod {
    /// The wire name (`sms`, `email`).
    pub fn as_str(self) -> &'static str {
        match self {
            MfaMethod::Sms => "sms",
            MfaMethod::Email => "email",
        }
    }
}

/// Where the code went: the method and the provider's masked address or number.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mfa {
    /// SMS or e-mail.
    pub method: MfaMethod,
    /// The masked phone number or e-mail address, as the provider shows it.
    pub hint: String,
}

/// What a provider answered a sign-in. Its `Debug` never shows a session or a pending state.
#[derive(Clone, PartialEq, Eq)]
pub enum SignIn {
    /// Signed in: the user's id at the provider and the session to call its API with.
    Accepted {
        /// The user's id at the provider.
        provider_user_id: String,
        /// The provider's session token (sealed with the credentials).
        session: String,
        /// A token that renews the session without the password ([`PasswordLogin::refresh`]),
        /// for providers that give one (Peloton's OAuth refresh token; sealed too).
        refresh_token: Option<String>,
    },
    /// Not signed in yet: the provider sent a code (second factor) and waits for it. `state`
    /// is the provider's half-finished sign-in, which [`PasswordLogin::complete_mfa`] and
    /// [`PasswordLogin::resend_mfa`] take back (secret: it is stored sealed only).
    Pending {
        /// Where the code went.
        mfa: Mfa,
        /// The provider's half-finished sign-in.
        state: String,
    },
    /// Not signed in: the link error and a sentence for the user.
    Refused(LinkErrorType, String),
}

impl std::fmt::Debug for SignIn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SignIn::Accepted {
                provider_user_id, ..
            } => f
                .debug_struct("Accepted")
                .field("provider_user_id", provider_user_id)
                .finish_non_exhaustive(),
            SignIn::Pending { mfa, .. } => f
                .debug_struct("Pending")
                .field("mfa", mfa)
                .finish_non_exhaustive(),
            SignIn::Refused(t, message) => {
                f.debug_tuple("Refused").field(t).field(message).finish()
            }
        }
    }
}

/// What a refresh-token renewal answered. Its `Debug` never shows a token.
#[derive(Clone, PartialEq, Eq)]
pub enum Renewal {
    /// A new session, and the new refresh token if the provider rotated it (else the old one
    /// stays valid).
    Renewed {
        /// The provider's new session token.
        session: String,
        /// The rotated refresh token, if any.
        refresh_token: Option<String>,
    },
    /// The provider refused the refresh token (expired, revoked): sign in again.
    Refused,
    /// Anything else (unreachable, a 5xx): worth retrying later. The text names no secret.
    Failed(String),
}

impl std::fmt::Debug for Renewal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Renewal::Renewed { .. } => f.debug_struct("Renewed").finish_non_exhaustive(),
            Renewal::Refused => f.write_str("Refused"),
            Renewal::Failed(why) => f.debug_tuple("Failed").field(why).finish(),
        }
    }
}

/// What a user signs in with.
#[derive(Clone, Copy)]
pub struct Login<'a> {
    /// The username (or e-mail address) at the provider.
    pub username: &'a str,
    /// The password (never logged).
    pub password: &'a str,
    /// The account's region, for providers with regional accounts: where to sign in first.
    pub region: Option<&'a str>,
}

impl std::fmt::Debug for Login<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Login")
            .field("username", &self.username)
            .field("region", &self.region)
            .finish_non_exhaustive()
    }
}

/// One provider's username-and-password sign-in.
#[async_trait::async_trait]
pub trait PasswordLogin: Send + Sync {
    /// The provider slug.
    fn provider(&self) -> &'static str;

    /// Signs in at the provider. Every answer the provider can give is a [`SignIn`]; the
    /// sign-in never fails otherwise (an unreachable provider is `provider_api_error`).
    async fn sign_in(&self, login: Login<'_>) -> SignIn;

    /// The session a renewal keeps (a pull signing in again): by default the fresh one; a
    /// provider whose session carries more than the sign-in gives (LibreLinkUp's chosen
    /// patient) carries it over from the `previous` one.
    fn renewed(&self, previous: &str, fresh: String) -> String {
        let _ = previous;
        fresh
    }

    /// Renews the session with the refresh token a sign-in gave, without the password. By
    /// default refused: a provider without refresh tokens is signed in again.
    async fn refresh(&self, refresh_token: &str) -> Renewal {
        let _ = refresh_token;
        Renewal::Refused
    }

    /// Finishes a sign-in that answered [`SignIn::Pending`] with the code the user received: a
    /// wrong code is `Refused(IncorrectMfaCode, ..)`; the sign-in may go on being pending (a
    /// further step). A provider without a second factor refuses.
    async fn complete_mfa(&self, state: &str, code: &str) -> SignIn {
        let _ = (state, code);
        SignIn::Refused(
            LinkErrorType::ProviderApiError,
            "This provider does not ask for a second factor.".into(),
        )
    }

    /// Asks the provider to send a new code for a pending sign-in; answers the new state.
    async fn resend_mfa(&self, state: &str) -> Result<String, (LinkErrorType, String)> {
        let _ = state;
        Err((
            LinkErrorType::ProviderApiError,
            "This provider does not ask for a second factor.".into(),
        ))
    }
}

/// What a share search found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Share {
    /// The patient's id at the provider (the share is accepted).
    Found(String),
    /// No share from that address: the sentence says what the patient must do.
    NotShared(String),
    /// The provider failed (the reason is for the log).
    Failed(String),
}

/// One e-mail provider's share search.
#[async_trait::async_trait]
pub trait EmailLink: Send + Sync {
    /// The provider slug.
    fn provider(&self) -> &'static str;

    /// Whether the provider serves `region` (lower case).
    fn serves(&self, region: &str) -> bool;

    /// Finds (and accepts, when it is an invitation) the share of the patient with `email`,
    /// as the follower account (`follower.session`: what its sign-in gave).
    async fn find_share(&self, follower: &Follower<'_>, email: &str) -> Share;
}

/// The follower account a share search signs in as.
#[derive(Clone, Copy)]
pub struct Follower<'a> {
    /// Its session (what its sign-in gave; secret).
    pub session: &'a str,
    /// Its id at the provider.
    pub id: &'a str,
    /// Its e-mail address (the patient shares with it, so the sentence names it).
    pub email: &'a str,
}
