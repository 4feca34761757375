//! The hosted link page (`linking.md` §The hosted link page): `GET /link?token=` and the few
//! routes behind it, server-rendered with minijinja from the templates beside this file.
//!
//! - `GET /link?token=&q=`: the providers the token may link, grouped by how they connect,
//!   searchable (`q` filters on the server, so search works without JavaScript; with it,
//!   `link.js` filters as the user types). A token naming one provider goes straight to it.
//! - `GET /link/provider/{provider}?token=`: an OAuth provider redirects to its authorisation
//!   page (its callback lands back on this page's outcome screen when the token has no
//!   `redirect_url`); a password provider shows its sign-in form; in demo mode
//!   (`serve --demo`) a demo-capable provider connects at once with synthetic history.
//! - `POST /link/provider/{provider}` (form): the password form's submission. A refusal is
//!   shown inline, or redirected with `state=error` when the token says `on_error=redirect`.
//! - `POST /link/close` (form): the Close button. With `on_close=redirect` it redirects with
//!   `state=error&error_type=user_cancelled`; otherwise it says the tab can be closed (and
//!   `link.js` closes a window the widget opened).
//! - `GET /link/assets/{file}` and `GET /link/logo/{slug}.svg`: the stylesheet, the script and
//!   the providers' monogram logos, all served from the binary (no download from elsewhere).
//!
//! Every answer carries `referrer-policy: no-referrer` (the token is in the page's URL and must
//! not leak to a provider's page through `Referer`), `cache-control: no-store` and a
//! content security policy that allows only this service's own styles, scripts and images.
//! The policy lets any page frame it and any form post lead anywhere: a widget embeds the page,
//! and a sign-in's redirect goes to the team's `redirect_url`.
//!
//! - `POST /link/provider/{provider}/mfa` (form): the second-factor step of a password sign-in
//!   (`forms.rs`); e-mail providers show the e-mail form (`forms.rs`).
//!
//! The list offers only what this deployment can connect for the token's team (`link::offer`:
//! a connector and an application or sign-in, or demo mode), so every provider on it leads to a
//! flow that can succeed; a provider page of anything else says why it is not available.

use std::collections::HashMap;
use std::sync::OnceLock;

use axum::Form;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use chrono::Utc;
use minijinja::{Environment, context};
use serde::Serialize;
use utoipa_axum::router::OpenApiRouter;

use crate::http::AppState;
use crate::link::offer::{Offer, Route};
use crate::link::tokens::{self, LinkSession};
use crate::link::{Landing, LinkError, LinkErrorType, oauth, password};
use crate::providers::{AuthType, Provider};

mod forms;

/// The routes of the page (HTML, so outside the OpenAPI document).
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .route("/link", get(providers_page))
        .route(
            "/link/provider/{provider}",
            get(provider_page).post(password_submit),
        )
        .route("/link/provider/{provider}/mfa", post(forms::mfa_submit))
        .route("/link/close", post(close))
        .route("/link/assets/{file}", get(asset))
        .route("/link/logo/{file}", get(logo))
}

/// Whether a request comes from a browser that wants a page rather than JSON.
pub fn wants_html(headers: &HeaderMap) -> bool {
    headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("text/html"))
}

/// The templates, parsed once.
fn templates() -> &'static Environment<'static> {
    static ENV: OnceLock<Environment<'static>> = OnceLock::new();
    ENV.get_or_init(|| {
        let mut env = Environment::new();
        for (name, source) in [
            ("base.html", include_str!("page/base.html")),
            ("providers.html", include_str!("page/providers.html")),
            ("password.html", include_str!("page/password.html")),
            ("message.html", include_str!("page/message.html")),
            ("mfa.html", include_str!("page/mfa.html")),
            ("email.html", include_str!("page/email.html")),
        ] {
            if let Err(e) = env.add_template(name, source) {
                tracing::error!(template = name, error = %e, "link page template does not parse");
            }
        }
        env
    })
}

/// A rendered page with the page's headers.
fn html(status: StatusCode, name: &str, ctx: minijinja::Value) -> Response {
    let body = match templates().get_template(name).and_then(|t| t.render(ctx)) {
        Ok(body) => body,
        Err(e) => {
            tracing::error!(template = name, error = %e, "link page did not render");
            return (StatusCode::INTERNAL_SERVER_ERROR, "the link page failed").into_response();
        }
    };
    let mut response = (status, body).into_response();
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    secure(h);
    response
}

/// The headers of every answer of the page.
fn secure(h: &mut HeaderMap) {
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self'; \
             form-action *; base-uri 'none'; frame-ancestors *",
        ),
    );
}

/// A 303 to `url` with the page's headers.
fn redirect(url: &str) -> Response {
    let mut response = Redirect::to(url).into_response();
    secure(response.headers_mut());
    response
}

/// A screen with a heading and a sentence (`tone`: `success`, `error` or `info`).
fn message(
    status: StatusCode,
    tone: &str,
    title: &str,
    text: &str,
    code: Option<&str>,
) -> Response {
    html(status, "message.html", context! { tone, title, text, code })
}

/// The outcome screen of a link without a `redirect_url`.
pub fn outcome(landing: &Landing) -> Response {
    let name = crate::providers::provider(&landing.provider).map_or("the provider", |p| p.name);
    match &landing.error {
        None => message(
            StatusCode::OK,
            "success",
            &format!("{name} is connected"),
            "Your data will appear shortly. You can close this window.",
            None,
        ),
        Some((t, text)) => message(
            StatusCode::BAD_REQUEST,
            "error",
            &format!("Could not connect {name}"),
            text,
            Some(t.as_str()),
        ),
    }
}

/// The screen of a token that cannot be used (unknown, expired, consumed).
fn refused(error: LinkError) -> Response {
    match error {
        LinkError::Link {
            error_type,
            message: text,
        } => message(
            StatusCode::UNAUTHORIZED,
            "error",
            "This link cannot be used",
            &text,
            Some(error_type.as_str()),
        ),
        other => server_error(&other),
    }
}

fn server_error(error: &dyn std::fmt::Display) -> Response {
    tracing::error!(error = %error, "link page failed");
    message(
        StatusCode::INTERNAL_SERVER_ERROR,
        "error",
        "Something went wrong",
        "The link could not be completed. Please try again in a moment.",
        None,
    )
}

/// Where a landing goes from the page: the token's `redirect_url`, else the outcome screen.
fn land(landing: &Landing) -> Response {
    match landing.url() {
        Some(url) => redirect(&url),
        None => outcome(landing),
    }
}

/// The session of the `token` parameter, or the screen saying why there is none.
async fn session(state: &AppState, token: Option<&String>) -> Result<LinkSession, Response> {
    let Some(token) = token.filter(|t| !t.is_empty()) else {
        return Err(message(
            StatusCode::BAD_REQUEST,
            "error",
            "This link is incomplete",
            "The page needs the link token it was opened with. Ask the app for a new link.",
            Some(LinkErrorType::InvalidToken.as_str()),
        ));
    };
    tokens::check(&state.meta, token, Utc::now())
        .await
        .map_err(refused)
}

fn encode(text: &str) -> String {
    url::form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

/// One provider as the list shows it.
#[derive(Serialize)]
struct Entry {
    slug: &'static str,
    name: &'static str,
    description: &'static str,
    href: String,
    /// Lower-case words the search matches.
    terms: String,
}

/// One group of the list.
#[derive(Serialize)]
struct Group {
    title: &'static str,
    providers: Vec<Entry>,
}

/// The list's groups, in this order, by how their providers connect.
fn group_of(auth: AuthType) -> usize {
    match auth {
        AuthType::Oauth | AuthType::TeamOauth => 0,
        AuthType::Password => 1,
        AuthType::Email => 2,
        AuthType::App | AuthType::Sdk => 3,
    }
}

const GROUP_TITLES: [&str; 4] = [
    "Sign in at the provider",
    "Sign in with your account",
    "Connect with your e-mail",
    "Apps",
];

fn matches(p: &Provider, q: &str) -> bool {
    let q = q.trim().to_lowercase();
    q.is_empty()
        || p.name.to_lowercase().contains(&q)
        || p.slug.contains(&q)
        || p.description.to_lowercase().contains(&q)
}

/// `GET /link?token=&q=`.
async fn providers_page(
    State(state): State<AppState>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let session = match session(&state, query.get("token")).await {
        Ok(s) => s,
        Err(screen) => return screen,
    };
    let token = query.get("token").map(String::as_str).unwrap_or_default();
    if let Some(only) = &session.options.provider {
        return redirect(&format!("/link/provider/{only}?token={}", encode(token)));
    }
    let q = query.get("q").map(String::as_str).unwrap_or("").trim();
    let mut groups: Vec<Group> = GROUP_TITLES
        .iter()
        .map(|title| Group {
            title,
            providers: Vec::new(),
        })
        .collect();
    let offered = match Offer::for_team(&state.meta, &state.link, session.team_id).await {
        Ok(offer) => offer.offered(&session),
        Err(e) => return server_error(&e),
    };
    for p in offered.iter().filter(|p| matches(p, q)) {
        groups[group_of(p.auth_type)].providers.push(Entry {
            slug: p.slug,
            name: p.name,
            description: p.description,
            href: format!("/link/provider/{}?token={}", p.slug, encode(token)),
            terms: format!("{} {} {}", p.name, p.slug, p.description).to_lowercase(),
        });
    }
    groups.retain(|g| !g.providers.is_empty());
    html(
        StatusCode::OK,
        "providers.html",
        context! { token, q, groups, offered => offered.len(), close => true },
    )
}

/// The screen of a provider the session may not link.
fn not_offered() -> Response {
    message(
        StatusCode::NOT_FOUND,
        "error",
        "Provider not available",
        "This link cannot connect that provider. Go back and pick another one.",
        None,
    )
}

/// The provider `slug` names with how a link connects it, when the session's token may link
/// it and this deployment can connect it; else the screen saying why not.
async fn offered(
    state: &AppState,
    session: &LinkSession,
    slug: &str,
) -> Result<(&'static Provider, Route), Response> {
    let Some(provider) = session.provider(slug) else {
        return Err(not_offered());
    };
    let offer = Offer::for_team(&state.meta, &state.link, session.team_id)
        .await
        .map_err(|e| server_error(&e))?;
    match offer.link_route(provider) {
        Ok(route) => Ok((provider, route)),
        Err(LinkError::NotConnectable(why)) => Err(message(
            StatusCode::NOT_FOUND,
            "error",
            "Provider not available",
            &format!("{why}. Go back and pick another provider."),
            None,
        )),
        Err(e) => Err(server_error(&e)),
    }
}

/// `GET /link/provider/{provider}?token=`.
async fn provider_page(
    State(state): State<AppState>,
    Path(slug): Path<String>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let session = match session(&state, query.get("token")).await {
        Ok(s) => s,
        Err(screen) => return screen,
    };
    let (provider, route) = match offered(&state, &session, &slug).await {
        Ok(found) => found,
        Err(screen) => return screen,
    };
    let token = query.get("token").map(String::as_str).unwrap_or_default();
    match route {
        Route::Demo => demo_connect(&state, &session, provider).await,
        Route::OAuth(_) => oauth_redirect(&state, &session, provider).await,
        Route::Password => password_form(&session, provider, token, None, StatusCode::OK),
        Route::Email(_) => {
            forms::email_form(&state, &session, provider, token, None, StatusCode::OK).await
        }
        // Never a link's route (`Offer::link_route`).
        Route::TeamApp => not_offered(),
    }
}

/// The provider's authorisation page; a provider without an OAuth application lands with
/// `provider_api_error` (OAuth failures always land, `linking.md`).
async fn oauth_redirect(state: &AppState, session: &LinkSession, provider: &Provider) -> Response {
    let url = oauth::authorize_url(
        &state.meta,
        state.secret.as_ref(),
        &state.link,
        session,
        provider,
        Utc::now(),
    )
    .await;
    match url {
        Ok(url) => redirect(&url),
        Err(e @ (LinkError::OAuthNotConfigured(_) | LinkError::Secret(_))) => {
            tracing::warn!(provider = provider.slug, error = %e, "hosted page cannot start OAuth");
            land(&Landing {
                redirect_url: session.options.redirect_url.clone(),
                provider: provider.slug.to_owned(),
                // Offered providers have an application, so only a broken one (an endpoint
                // that is not a URL) or a missing secret key lands here.
                error: Some((
                    LinkErrorType::ProviderApiError,
                    format!(
                        "The sign-in at {} could not be started; please try again later.",
                        provider.name
                    ),
                )),
            })
        }
        Err(e) => server_error(&e),
    }
}

/// Demo mode: consume the token and connect the provider; its synthetic history is pulled by
/// the connection's jobs (`sync::connectors::demo`).
async fn demo_connect(state: &AppState, session: &LinkSession, provider: &Provider) -> Response {
    let now = Utc::now();
    let mut landing = Landing {
        redirect_url: session.options.redirect_url.clone(),
        provider: provider.slug.to_owned(),
        error: None,
    };
    let user = match state.meta.user(session.team_id, session.user_id).await {
        Ok(Some(user)) => user,
        Ok(None) => {
            landing.error = Some((
                LinkErrorType::InvalidToken,
                "The user of this link no longer exists.".into(),
            ));
            return land(&landing);
        }
        Err(e) => return server_error(&e),
    };
    // The token is spent by the connection, in its transaction.
    let mut tx = match state.meta.begin().await {
        Ok(tx) => tx,
        Err(e) => return server_error(&e),
    };
    match tokens::consume_on(&mut tx, session, now).await {
        Ok(()) => {}
        Err(LinkError::Link {
            error_type,
            message,
        }) => {
            landing.error = Some((error_type, message));
            return land(&landing);
        }
        Err(e) => return server_error(&e),
    }
    let link = crate::sync::connectors::demo::DemoLink {
        provider: provider.slug,
        persona: crate::sync::connectors::demo::generator::Persona::Regular,
        days: crate::sync::connectors::demo::DEFAULT_DAYS,
    };
    let connected =
        crate::sync::connectors::demo::connect_on(&mut tx, &state.health, &user, link, now).await;
    if let Err(e) = connected {
        return server_error(&e);
    }
    if let Err(e) = tx.commit().await {
        return server_error(&e);
    }
    state.meta.jobs_wake().notify_waiters();
    land(&landing)
}

/// The sign-in form of a password provider; after a refusal, with the error inline and the
/// username kept (the password never is).
fn password_form(
    session: &LinkSession,
    provider: &Provider,
    token: &str,
    refused: Option<(&str, &str, &str)>,
    status: StatusCode,
) -> Response {
    // A fresh form has empty fields (not a rendered `none`).
    let (username, region, error) = match refused {
        Some((username, region, error)) => (username, region, Some(error)),
        None => ("", "", None),
    };
    html(
        status,
        "password.html",
        context! {
            token,
            slug => provider.slug,
            name => provider.name,
            description => provider.description,
            error,
            username,
            region,
            regions => password::regions(provider.slug),
            back_href => session
                .options
                .provider
                .is_none()
                .then(|| format!("/link?token={}", encode(token))),
            close => true,
        },
    )
}

/// `POST /link/provider/{provider}` with `token`, `username` and `password`.
async fn password_submit(
    State(state): State<AppState>,
    Path(slug): Path<String>,
    Form(form): Form<HashMap<String, String>>,
) -> Response {
    let session = match session(&state, form.get("token")).await {
        Ok(s) => s,
        Err(screen) => return screen,
    };
    let provider = match offered(&state, &session, &slug).await {
        Ok((p, Route::Password)) => p,
        Ok((p, Route::Email(_))) => {
            return forms::email_submit(&state, &session, p, &form).await;
        }
        Ok(_) => {
            return message(
                StatusCode::BAD_REQUEST,
                "error",
                "Not a password provider",
                "This provider does not connect with a username and password.",
                None,
            );
        }
        Err(screen) => return screen,
    };
    let token = form.get("token").map(String::as_str).unwrap_or_default();
    let field = |name: &str| form.get(name).map(String::as_str).unwrap_or_default();
    let (username, pass) = (field("username").trim(), field("password"));
    let region = field("region").trim();
    if username.is_empty() || pass.is_empty() {
        let missing = "Enter both your username and your password.";
        return password_form(
            &session,
            provider,
            token,
            Some((username, region, missing)),
            StatusCode::UNPROCESSABLE_ENTITY,
        );
    }
    let connected = password::connect(
        &state.meta,
        state.secret.as_ref(),
        &state.link.password,
        &session,
        provider,
        password::Login {
            username,
            password: pass,
            region: (!region.is_empty()).then_some(region),
        },
        Utc::now(),
    )
    .await;
    match connected {
        Ok(outcome) => {
            forms::password_outcome(&session, provider, token, &outcome, username, region)
        }
        Err(e) => server_error(&e),
    }
}

/// `POST /link/close` with `token`.
async fn close(
    State(state): State<AppState>,
    Form(form): Form<HashMap<String, String>>,
) -> Response {
    let cancelled = Landing {
        redirect_url: None,
        provider: String::new(),
        error: Some((
            LinkErrorType::UserCancelled,
            "The user closed the link page.".into(),
        )),
    };
    if let Ok(session) = session(&state, form.get("token")).await
        && session.options.on_close_redirect
        && let Some(url) = (Landing {
            redirect_url: session.options.redirect_url.clone(),
            provider: session.options.provider.clone().unwrap_or_default(),
            ..cancelled
        })
        .url()
    {
        return redirect(&url);
    }
    message(
        StatusCode::OK,
        "info",
        "You can close this tab",
        "Nothing was connected. Return to the app to continue.",
        None,
    )
}

/// `GET /link/assets/{file}`: the page's stylesheet and script.
async fn asset(Path(file): Path<String>) -> Response {
    let (body, kind) = match file.as_str() {
        "link.css" => (include_str!("page/link.css"), "text/css; charset=utf-8"),
        "link.js" => (
            include_str!("page/link.js"),
            "text/javascript; charset=utf-8",
        ),
        _ => return StatusCode::NOT_FOUND.into_response(),
    };
    (
        [
            (header::CONTENT_TYPE, kind),
            (header::CACHE_CONTROL, "public, max-age=3600"),
        ],
        body,
    )
        .into_response()
}

/// `GET /link/logo/{slug}.svg`: the provider's monogram (its initials on a colour of its own).
async fn logo(Path(file): Path<String>) -> Response {
    let Some(provider) = file
        .strip_suffix(".svg")
        .and_then(crate::providers::provider)
    else {
        return StatusCode::NOT_FOUND.into_response();
    };
    (
        [
            (header::CONTENT_TYPE, "image/svg+xml"),
            (header::CACHE_CONTROL, "public, max-age=86400"),
        ],
        monogram(provider),
    )
        .into_response()
}

/// Up to two initials of the provider's name on a colour picked by its slug.
fn monogram(provider: &Provider) -> String {
    const COLOURS: [&str; 8] = [
        "#2563eb", "#0f766e", "#7c3aed", "#c2410c", "#be123c", "#15803d", "#0369a1", "#a16207",
    ];
    let initials: String = provider
        .name
        .split([' ', '-'])
        .filter_map(|w| w.chars().find(|c| c.is_alphanumeric()))
        .take(2)
        .flat_map(char::to_uppercase)
        .collect();
    let hash = provider.slug.bytes().fold(0usize, |h, b| {
        h.wrapping_mul(31).wrapping_add(usize::from(b))
    });
    let colour = COLOURS[hash % COLOURS.len()];
    format!(
        r##"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 40 40" role="img" aria-hidden="true"><rect width="40" height="40" rx="10" fill="{colour}"/><text x="20" y="25.5" text-anchor="middle" font-family="system-ui,-apple-system,Segoe UI,Roboto,sans-serif" font-size="15" font-weight="600" fill="#fff">{initials}</text></svg>"##
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_monogram_shows_the_initials_of_the_name() {
        let oura = crate::providers::provider("oura").unwrap();
        assert!(monogram(oura).contains(">O</text>"));
        let libre = crate::providers::provider("freestyle_libre").unwrap();
        assert!(
            monogram(libre).contains(">FL</text>"),
            "{}",
            monogram(libre)
        );
    }

    #[test]
    fn every_template_parses() {
        for name in [
            "providers.html",
            "password.html",
            "message.html",
            "mfa.html",
            "email.html",
        ] {
            templates().get_template(name).unwrap();
        }
    }
}
