//! The page's second-factor step and e-mail form (issue 38), beside the password form of
//! `page.rs`:
//!
//! - after a password sign-in that the provider answers with a code, the page shows the code
//!   step (`mfa.html`): where the code went (the provider's masked address or number), one
//!   field, "Verify and connect" and "Send a new code", all one form posted to
//!   `POST /link/provider/{provider}/mfa` (`action=verify|resend`), so it works without
//!   JavaScript;
//! - an e-mail provider's page is the e-mail form (`email.html`, with the region where the
//!   provider has regions), posted to `POST /link/provider/{provider}` like the password form.
//!
//! Decisions: a wrong code with tries left is always shown inline (even with
//! `on_error=redirect`: the sign-in can still succeed, and redirecting would throw it away);
//! every other refusal follows `on_error` as the password form does. When the pending sign-in
//! is gone (expired, tries spent), the password form comes back with the reason, so the user
//! can sign in again.

use std::collections::HashMap;

use axum::Form;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use chrono::Utc;
use minijinja::context;

use super::{encode, html, land, not_offered, password_form, server_error, session};
use crate::http::AppState;
use crate::link::password::{self, Mfa, Outcome};
use crate::link::tokens::LinkSession;
use crate::link::{LinkErrorType, email};
use crate::providers::{AuthType, Provider};

/// The code step of a pending sign-in.
pub(super) fn mfa_page(
    provider: &Provider,
    token: &str,
    mfa: &Mfa,
    error: Option<&str>,
    notice: Option<&str>,
    status: StatusCode,
) -> Response {
    html(
        status,
        "mfa.html",
        context! {
            token,
            slug => provider.slug,
            name => provider.name,
            method => mfa.method.as_str(),
            hint => mfa.hint,
            error,
            notice,
            close => true,
        },
    )
}

/// Where a password (or code) outcome goes from the page: connected → the landing; waiting
/// for a code → the code step; refused → inline (the code step while tries are left, else the
/// password form) unless the token says `on_error=redirect`.
pub(super) fn password_outcome(
    session: &LinkSession,
    provider: &Provider,
    token: &str,
    outcome: &Outcome,
    username: &str,
    region: &str,
) -> Response {
    match (&outcome.landing.error, &outcome.mfa) {
        (None, None) => land(&outcome.landing),
        (None, Some(mfa)) => mfa_page(provider, token, mfa, None, None, StatusCode::OK),
        (Some((LinkErrorType::IncorrectMfaCode, text)), Some(mfa)) => mfa_page(
            provider,
            token,
            mfa,
            Some(text.as_str()),
            None,
            StatusCode::BAD_REQUEST,
        ),
        (Some(_), _) if session.options.on_error_redirect && outcome.landing.url().is_some() => {
            land(&outcome.landing)
        }
        (Some((_, text)), _) => password_form(
            session,
            provider,
            token,
            Some((username, region, text.as_str())),
            StatusCode::BAD_REQUEST,
        ),
    }
}

/// `POST /link/provider/{provider}/mfa` with `token`, `mfa_code` and `action`
/// (`verify`, or `resend` for a new code).
pub(super) async fn mfa_submit(
    State(state): State<AppState>,
    Path(slug): Path<String>,
    Form(form): Form<HashMap<String, String>>,
) -> Response {
    let session = match session(&state, form.get("token")).await {
        Ok(s) => s,
        Err(screen) => return screen,
    };
    let Some(provider) = session
        .provider(&slug)
        .filter(|p| p.auth_type == AuthType::Password)
    else {
        return not_offered();
    };
    let token = form.get("token").map(String::as_str).unwrap_or_default();
    let code = form.get("mfa_code").map(String::as_str).unwrap_or_default();
    let now = Utc::now();
    let (meta, key, logins) = (&state.meta, state.secret.as_ref(), &state.link.password);
    if form.get("action").map(String::as_str) == Some("resend") {
        let outcome = match password::mfa::resend(meta, key, logins, &session, provider, now).await
        {
            Ok(o) => o,
            Err(e) => return server_error(&e),
        };
        return match (&outcome.landing.error, &outcome.mfa) {
            (None, Some(mfa)) => {
                let notice = format!("A new code is on its way to {}.", mfa.hint);
                mfa_page(provider, token, mfa, None, Some(&notice), StatusCode::OK)
            }
            (Some((_, text)), Some(mfa)) => mfa_page(
                provider,
                token,
                mfa,
                Some(text.as_str()),
                None,
                StatusCode::BAD_REQUEST,
            ),
            _ => password_outcome(&session, provider, token, &outcome, "", ""),
        };
    }
    if code.trim().is_empty() {
        // Nothing to send: ask again without spending a try (the pending sign-in says where
        // the code went).
        let waiting = password::mfa::hint(meta, key, &session, provider, now).await;
        return match waiting {
            Ok(Some(mfa)) => mfa_page(
                provider,
                token,
                &mfa,
                Some(&format!("Enter the code {} sent.", provider.name)),
                None,
                StatusCode::UNPROCESSABLE_ENTITY,
            ),
            Ok(None) => {
                let outcome =
                    password::mfa::complete(meta, key, logins, &session, provider, code, now).await;
                match outcome {
                    Ok(o) => password_outcome(&session, provider, token, &o, "", ""),
                    Err(e) => server_error(&e),
                }
            }
            Err(e) => server_error(&e),
        };
    }
    match password::mfa::complete(meta, key, logins, &session, provider, code, now).await {
        Ok(outcome) => password_outcome(&session, provider, token, &outcome, "", ""),
        Err(e) => server_error(&e),
    }
}

/// The e-mail form of an e-mail provider; after a refusal, with the error inline and the
/// address and region kept.
pub(super) async fn email_form(
    state: &AppState,
    session: &LinkSession,
    provider: &Provider,
    token: &str,
    refused: Option<(&str, &str, &str)>,
    status: StatusCode,
) -> Response {
    let (email_address, region, error) = match refused {
        Some((e, r, error)) => (e, r, Some(error)),
        None => ("", "", None),
    };
    // The address the patient shares with, when the deployment has one (not a secret: the
    // patient must type it into their app).
    let follower = email::follower_account(
        &state.meta,
        state.secret.as_ref(),
        &state.link.oauth_apps,
        session.team_id,
        provider.slug,
    )
    .await
    .ok()
    .flatten()
    .map(|(address, _)| address);
    html(
        status,
        "email.html",
        context! {
            token,
            slug => provider.slug,
            name => provider.name,
            description => provider.description,
            error,
            email => email_address,
            region,
            follower,
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

/// `POST /link/provider/{provider}` of an e-mail provider, with `token`, `email` and `region`.
pub(super) async fn email_submit(
    state: &AppState,
    session: &LinkSession,
    provider: &Provider,
    form: &HashMap<String, String>,
) -> Response {
    let token = form.get("token").map(String::as_str).unwrap_or_default();
    let field = |name: &str| form.get(name).map(String::as_str).unwrap_or_default();
    let (address, region) = (field("email").trim(), field("region").trim());
    if address.is_empty() {
        let missing = "Enter the e-mail address of your account.";
        return email_form(
            state,
            session,
            provider,
            token,
            Some((address, region, missing)),
            StatusCode::UNPROCESSABLE_ENTITY,
        )
        .await;
    }
    let deps = email::Deps {
        meta: &state.meta,
        key: state.secret.as_ref(),
        config: &state.link,
    };
    let region_given = (!region.is_empty()).then_some(region);
    let outcome =
        match email::connect(deps, session, provider, address, region_given, Utc::now()).await {
            Ok(o) => o,
            Err(e) => return server_error(&e),
        };
    match &outcome.landing.error {
        None => land(&outcome.landing),
        Some(_) if session.options.on_error_redirect && outcome.landing.url().is_some() => {
            land(&outcome.landing)
        }
        Some((_, text)) => {
            email_form(
                state,
                session,
                provider,
                token,
                Some((address, region, text.as_str())),
                StatusCode::BAD_REQUEST,
            )
            .await
        }
    }
}
