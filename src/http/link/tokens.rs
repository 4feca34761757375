//! `POST /v2/link/token` (team key) and `GET /v2/link/providers` (link token).

use axum::Json;
use axum::extract::State;
use chrono::Utc;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::http::AppState;
use crate::http::error::ApiError;
use crate::http::extract::{AuthTeam, Decoded, LinkToken};
use crate::http::models;
use crate::http::users::team_user;
use crate::link::offer::Offer;
use crate::link::tokens::{self, LinkOptions, is_linkable};
use crate::loc;
use crate::providers::{self, AuthType};
use crate::validation::{Checks, Loc};

/// The routes of this module.
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(create_token))
        .routes(routes!(link_providers))
}

/// `POST /v2/link/token` body.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct LinkTokenRequest {
    /// The team's user to link.
    pub user_id: uuid::Uuid,
    /// A linkable provider slug: the hosted page goes straight to it. It must be connectable by
    /// a link on this deployment for the team (else 400).
    #[serde(default)]
    pub provider: Option<String>,
    /// Absolute http(s) URL the hosted page returns to (`state`, `provider`, `error_type`,
    /// `error` in its query).
    #[serde(default)]
    pub redirect_url: Option<String>,
    /// At least one linkable provider slug: the hosted page offers only these. Each must be
    /// connectable by a link on this deployment for the team (else 400).
    #[serde(default)]
    pub filter_on_providers: Option<Vec<String>>,
    /// `redirect`: password and e-mail failures redirect to `redirect_url` (needs it).
    #[serde(default)]
    pub on_error: Option<String>,
    /// `redirect`: the Close button redirects with `user_cancelled` (needs `redirect_url`).
    #[serde(default)]
    pub on_close: Option<String>,
}

/// `POST /v2/link/token` answer.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct LinkTokenCreated {
    /// The token (valid 60 minutes, single use); send it as `x-link-token`.
    pub link_token: String,
    /// The hosted link page for this token.
    pub link_web_url: String,
}

/// One provider a link token may link.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct LinkProvider {
    /// Stable numeric id of the provider.
    pub id: u32,
    /// Display name.
    pub name: &'static str,
    /// Slug.
    pub slug: &'static str,
    /// Logo URL.
    pub logo: String,
    /// How it connects.
    pub auth_type: AuthType,
    /// One sentence.
    pub description: &'static str,
    /// The resources it supplies.
    pub supported_resources: &'static [&'static str],
}

impl From<&providers::Provider> for LinkProvider {
    fn from(p: &providers::Provider) -> Self {
        LinkProvider {
            id: p.id,
            name: p.name,
            slug: p.slug,
            logo: p.logo.clone(),
            auth_type: p.auth_type,
            description: p.description,
            supported_resources: p.supported_resources,
        }
    }
}

/// A link token's 401: `{"detail": "Missing link token"}` without one, else
/// `{"detail": {"error_type", "error_message"}}`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct LinkTokenError {
    /// The sentence, or the link error (`invalid_token`, `token_expired`, `token_consumed`).
    pub detail: LinkTokenDetail,
}

/// What a link token's 401 says.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(untagged)]
#[expect(
    dead_code,
    reason = "the OpenAPI schema of the body `ApiError` renders"
)]
pub enum LinkTokenDetail {
    /// No token was sent.
    Sentence(String),
    /// The token was refused.
    Link(LinkErrorBody),
}

/// A link error.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct LinkErrorBody {
    /// The link error type.
    pub error_type: String,
    /// What happened.
    pub error_message: String,
}

const LINKABLE_HINT: &str =
    "a linkable provider slug (GET /v2/providers; SDK-only providers connect on the device)";

/// Checks a slug member: catalogued and linkable.
fn linkable_slug(checks: &mut Checks, member: Vec<Loc>, slug: String) -> Option<String> {
    let why = match providers::provider(&slug) {
        Some(p) if is_linkable(p) => return Some(slug),
        Some(_) => format!("{slug:?} connects through the mobile SDK; expected {LINKABLE_HINT}"),
        None => format!("{slug:?} is not a provider; expected {LINKABLE_HINT}"),
    };
    checks.fail(member, "enum", why);
    None
}

/// Checks the token request (every rule of `linking.md` at once).
fn check_request(req: LinkTokenRequest, mut checks: Checks) -> Result<LinkOptions, ApiError> {
    let mut options = LinkOptions {
        provider: req
            .provider
            .and_then(|slug| linkable_slug(&mut checks, loc!["provider"], slug)),
        ..LinkOptions::default()
    };
    if let Some(filter) = req.filter_on_providers {
        if filter.is_empty() {
            checks.fail(
                loc!["filter_on_providers"],
                "too_short",
                "filter_on_providers needs at least 1 provider when present",
            );
        }
        let slugs = filter
            .into_iter()
            .enumerate()
            .filter_map(|(i, slug)| {
                linkable_slug(&mut checks, loc!["filter_on_providers", i], slug)
            })
            .collect();
        options.filter_on_providers = Some(slugs);
    }
    if let Some(url) = &req.redirect_url {
        match url::Url::parse(url) {
            Ok(u) if matches!(u.scheme(), "http" | "https") && u.has_host() => {
                options.redirect_url = Some(url.clone());
            }
            _ => checks.fail(
                loc!["redirect_url"],
                "url_parsing",
                "redirect_url must be an absolute http or https URL",
            ),
        }
    }
    for (key, value, flag) in [
        ("on_error", &req.on_error, &mut options.on_error_redirect),
        ("on_close", &req.on_close, &mut options.on_close_redirect),
    ] {
        match value.as_deref() {
            None => {}
            Some("redirect") => {
                *flag = true;
                if req.redirect_url.is_none() {
                    checks.fail(
                        loc!["redirect_url"],
                        "missing",
                        format!("redirect_url is required when {key} is \"redirect\""),
                    );
                }
            }
            Some(_) => checks.fail(
                loc![key],
                "enum",
                format!("{key} accepts only \"redirect\""),
            ),
        }
    }
    checks.finish()?;
    Ok(options)
}

/// Create a link token for a user: valid 60 minutes, consumed by the first connection it makes.
/// `provider` and every member of `filter_on_providers` must be connectable by a link on this
/// deployment for the calling team (`connectable` in `GET /v2/providers`, and not an `app`
/// provider); otherwise the answer is a 400 naming each provider that is not, and why.
#[utoipa::path(post, path = "/v2/link/token", tag = "link",
    request_body(content = LinkTokenRequest),
    responses((status = 200, description = "The token and the hosted page's URL", body = LinkTokenCreated),
              (status = 400, description = "The provider, or a member of filter_on_providers, cannot be connected on this deployment for this team (no connector, no OAuth application, no sign-in, or one connected through the team's app): the sentence names each and why", body = models::ErrorDetail),
              (status = 404, description = "User not found", body = models::ErrorDetail),
              (status = 422, description = "Validation error", body = models::ValidationError)),
    security(("api_key" = [])))]
async fn create_token(
    team: AuthTeam,
    State(state): State<AppState>,
    Decoded(body, checks): Decoded<LinkTokenRequest>,
) -> Result<Json<LinkTokenCreated>, ApiError> {
    let user_id = body.user_id;
    let options = check_request(body, checks)?;
    let user = team_user(&state, &team, user_id).await?;
    Offer::for_team(&state.meta, &state.link, team.0.id)
        .await?
        .check_options(&options)?;
    let issued = tokens::issue(
        &state.meta,
        &state.link,
        team.0.id,
        user.id,
        &options,
        Utc::now(),
    )
    .await?;
    Ok(Json(LinkTokenCreated {
        link_token: issued.token,
        link_web_url: issued.link_web_url,
    }))
}

/// The providers this link token may link (its provider, else its filter, else every linkable
/// provider) that this deployment can connect for the token's team: a connector with its OAuth
/// application (the deployment's or the team's), a password or e-mail sign-in, or a demo
/// provider in demo mode.
#[utoipa::path(get, path = "/v2/link/providers", tag = "link",
    responses((status = 200, description = "Linkable providers", body = Vec<LinkProvider>),
              (status = 401, description = "Missing, unknown, expired or consumed link token", body = LinkTokenError)),
    security(("link_token" = [])))]
async fn link_providers(
    State(state): State<AppState>,
    LinkToken(session): LinkToken,
) -> Result<Json<Vec<LinkProvider>>, ApiError> {
    let offer = Offer::for_team(&state.meta, &state.link, session.team_id).await?;
    Ok(Json(
        offer
            .offered(&session)
            .into_iter()
            .map(LinkProvider::from)
            .collect(),
    ))
}
