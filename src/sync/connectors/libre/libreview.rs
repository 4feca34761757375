//! Abbott LibreView's sign-in (a patient's LibreView account), with its second factor.
//!
//! **Observed, not published.** Abbott publishes no LibreView API. This is the wire LibreView's
//! web app uses, as public clients and issue threads have written it down:
//! - FokkeZB/libreview-unofficial (`reference/LibreView.yaml`): the hosts by region, the
//!   sign-in's `{status, data}` envelope, the region redirect `{"status": 0, "data":
//!   {"redirect": true, "region": "eu"}}`, the `status: 4` step answer `{"step": {"type": "tou",
//!   "componentName": "AcceptDocument", ...}, "user", "authTicket"}` and the ticket
//!   `{token, expires, duration}`;
//! - public LibreView clients that continue the second factor (a FastAPI glucose collector, the
//!   LibreMirror Android app's `LibreApiClient`): a step of type `2faVerify` (component
//!   `TwoFactorVerify`) whose `authTicket` is a temporary ticket; `POST
//!   /auth/continue/2fa/sendcode` `{"isPrimaryMethod": true}` with it as `Authorization:
//!   Bearer` sends the code and answers a new temporary ticket in `ticket` (or
//!   `data.authTicket`); `POST /auth/continue/2fa/result` `{"code", "isPrimaryMethod": true}`
//!   answers the signed-in `{"data": {"user": {"id"}, "authTicket"}}`, and no `data` when the
//!   code is refused; the terms steps continue at `POST /auth/continue/{tou|pp}`;
//! - gillesvs/librelink#28 and creepymonster/nightscout-to-libreview#7: an account with
//!   two-factor authentication answers the sign-in without a usable ticket.
//!
//! What this module assumes where those sources are silent (and the fake in `tests/`
//! reproduces, so a real-world difference shows up as a failed sign-in, never as a wrong
//! connection):
//! - the `2faVerify` step's `props` name the methods and masked values as `primaryMethod` /
//!   `primaryValue` and `secondaryMethod` / `secondaryValue` (`email`, or `phone`/`sms`); the
//!   code is sent by the primary method, and `provider_mfa.hint` is its masked value;
//! - a forced password change (LibreView asks about once a year) is a step whose `type` or
//!   `componentName` names the password (`pwdExpired`, `ChangePassword`, ...): it answers
//!   `provider_password_expired`. No public source shows that step's exact name;
//! - a `401` from a continuation means the temporary ticket expired: sign in again.
//!
//! Decisions: terms steps (`tou`, `pp`) are not accepted on the user's behalf: the link answers
//! `provider_credential_error` asking the user to accept them in LibreView first. The
//! connection keeps a [`Session`] (ticket, region, `account-id`, and the patient's own id as
//! the wearer), read by `sync::connectors::libre` for the glucose pulls. Base URLs: [`API_URL_ENV`], a
//! template with `{region}` as for LibreLinkUp, else LibreView's own hosts.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::access::{Hosts, Session, account_id};
use crate::sync::access::{LinkErrorType, Login, Mfa, MfaMethod, PasswordLogin, SignIn};

/// Overrides the hosts (tests point it at a local fake): a URL template with `{region}`.
pub const API_URL_ENV: &str = "WEARHOUSE_PROVIDER_ABBOTT_LIBREVIEW_API_URL";

/// LibreView's hosts, or the template [`API_URL_ENV`] names.
pub fn hosts_from_env() -> Hosts {
    Hosts::from_var(API_URL_ENV)
}

/// Abbott LibreView's sign-in.
#[derive(Debug, Clone)]
pub struct LibreView {
    hosts: Hosts,
    http: reqwest::Client,
}

/// The half-finished sign-in a pending second factor keeps: the temporary ticket and the
/// region it is valid in.
#[derive(Serialize, Deserialize)]
struct Halfway {
    region: Option<String>,
    ticket: String,
}

/// What a LibreView call answered, as far as the sign-in reads it.
enum Answer {
    Json(Value),
    Unauthorised,
    Failed(&'static str),
}

fn api_error(why: &str) -> SignIn {
    tracing::warn!(provider = "abbott_libreview", why, "sign-in failed");
    SignIn::Refused(
        LinkErrorType::ProviderApiError,
        "LibreView could not be reached or answered unexpectedly; try again later.".into(),
    )
}

fn start_again() -> SignIn {
    SignIn::Refused(
        LinkErrorType::ProviderCredentialError,
        "LibreView's sign-in expired before the code was entered; sign in again.".into(),
    )
}

impl LibreView {
    /// The sign-in at `hosts`, with a client that follows no redirects and gives up after the
    /// connectors' request timeout.
    pub fn new(hosts: Hosts) -> Result<LibreView, reqwest::Error> {
        let http = reqwest::Client::builder()
            .timeout(crate::sync::http::REQUEST_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("wearhouse/", env!("CARGO_PKG_VERSION")))
            .build()?;
        Ok(LibreView { hosts, http })
    }

    async fn post(&self, base: &str, path: &str, ticket: Option<&str>, body: Value) -> Answer {
        let mut request = self.http.post(format!("{base}{path}")).json(&body);
        if let Some(ticket) = ticket {
            request = request.bearer_auth(ticket);
        }
        match request.send().await {
            Ok(a) if a.status() == reqwest::StatusCode::UNAUTHORIZED => Answer::Unauthorised,
            Ok(a) if a.status().is_success() => match a.json::<Value>().await {
                Ok(v) => Answer::Json(v),
                Err(_) => Answer::Failed("unreadable answer"),
            },
            Ok(_) => Answer::Failed("unexpected HTTP status"),
            Err(_) => Answer::Failed("unreachable"),
        }
    }

    /// A signed-in answer (`data.user.id`, `data.authTicket.token`) as a connection's session.
    fn accepted(region: Option<String>, data: &Value) -> SignIn {
        let (Some(id), Some(token)) = (
            data["user"]["id"].as_str(),
            data["authTicket"]["token"].as_str(),
        ) else {
            return api_error("no user or ticket in the answer");
        };
        let session = Session {
            region,
            token: token.to_owned(),
            account_id: account_id(id),
            patient: Some(id.to_owned()),
        };
        SignIn::Accepted {
            provider_user_id: id.to_owned(),
            session: session.encode(),
            refresh_token: None,
        }
    }

    /// A `status: 4` answer: the step LibreView asks for before it signs in.
    async fn step(&self, base: &str, region: Option<String>, data: &Value) -> SignIn {
        let step = &data["step"];
        let kind = step["type"].as_str().unwrap_or_default();
        let component = step["componentName"].as_str().unwrap_or_default();
        let names_password = |s: &str| {
            let s = s.to_ascii_lowercase();
            s.contains("password") || s.contains("pwd")
        };
        match kind {
            "2faVerify" => {
                let Some(ticket) = data["authTicket"]["token"].as_str() else {
                    return api_error("a second factor without a ticket");
                };
                let props = &step["props"];
                let method = match props["primaryMethod"].as_str() {
                    Some(m) if m.eq_ignore_ascii_case("email") => MfaMethod::Email,
                    Some(_) => MfaMethod::Sms,
                    None => return api_error("a second factor without its method"),
                };
                let hint = props["primaryValue"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned();
                let Some(ticket) = self.send_code(base, ticket).await else {
                    return api_error("the code could not be sent");
                };
                let state = serde_json::to_string(&Halfway { region, ticket }).unwrap_or_default();
                SignIn::Pending {
                    mfa: Mfa { method, hint },
                    state,
                }
            }
            "tou" | "pp" => SignIn::Refused(
                LinkErrorType::ProviderCredentialError,
                "LibreView asks you to accept its terms first: sign in at libreview.com, accept \
                 them, then try again."
                    .into(),
            ),
            _ if names_password(kind) || names_password(component) => SignIn::Refused(
                LinkErrorType::ProviderPasswordExpired,
                "LibreView asks you to change your password: sign in at libreview.com, choose a \
                 new password, then connect again with it."
                    .into(),
            ),
            _ => api_error("an unknown sign-in step"),
        }
    }

    /// Sends the code by the primary method; the new temporary ticket.
    async fn send_code(&self, base: &str, ticket: &str) -> Option<String> {
        let body = json!({"isPrimaryMethod": true});
        let Answer::Json(answer) = self
            .post(base, "/auth/continue/2fa/sendcode", Some(ticket), body)
            .await
        else {
            return None;
        };
        if answer["status"].as_i64() != Some(0) {
            return None;
        }
        answer["ticket"]["token"]
            .as_str()
            .or_else(|| answer["data"]["authTicket"]["token"].as_str())
            .map(str::to_owned)
    }

    fn halfway(&self, state: &str) -> Option<(Halfway, String)> {
        let halfway: Halfway = serde_json::from_str(state).ok()?;
        let base = self.hosts.base(halfway.region.as_deref())?;
        Some((halfway, base))
    }
}

#[async_trait::async_trait]
impl PasswordLogin for LibreView {
    fn provider(&self) -> &'static str {
        "abbott_libreview"
    }

    async fn sign_in(&self, login: Login<'_>) -> SignIn {
        let mut region = login.region.map(str::to_ascii_lowercase);
        // The first answer may send the sign-in to the account's region; one hop is followed.
        for _ in 0..2 {
            let Some(base) = self.hosts.base(region.as_deref()) else {
                return SignIn::Refused(
                    LinkErrorType::UnsupportedRegion,
                    format!(
                        "LibreView has no region {:?} that this service can reach.",
                        region.unwrap_or_default()
                    ),
                );
            };
            let body = json!({"email": login.username, "password": login.password});
            let answer = match self.post(&base, "/auth/login", None, body).await {
                Answer::Json(a) => a,
                Answer::Unauthorised => return api_error("sign-in answered 401"),
                Answer::Failed(why) => return api_error(why),
            };
            let data = &answer["data"];
            match answer["status"].as_i64() {
                Some(0) if data["redirect"] == Value::Bool(true) => {
                    let Some(to) = data["region"].as_str() else {
                        return api_error("a redirect without a region");
                    };
                    region = Some(to.to_ascii_lowercase());
                }
                Some(0) => return Self::accepted(region, data),
                Some(2) => {
                    return SignIn::Refused(
                        LinkErrorType::ProviderCredentialError,
                        "LibreView did not accept that e-mail address or password.".into(),
                    );
                }
                Some(4) => return self.step(&base, region, data).await,
                _ => return api_error("unexpected status"),
            }
        }
        api_error("redirected twice")
    }

    async fn complete_mfa(&self, state: &str, code: &str) -> SignIn {
        let Some((halfway, base)) = self.halfway(state) else {
            return start_again();
        };
        let body = json!({"code": code, "isPrimaryMethod": true});
        let answer = match self
            .post(
                &base,
                "/auth/continue/2fa/result",
                Some(&halfway.ticket),
                body,
            )
            .await
        {
            Answer::Json(a) => a,
            Answer::Unauthorised => return start_again(),
            Answer::Failed(why) => return api_error(why),
        };
        let data = &answer["data"];
        match answer["status"].as_i64() {
            Some(0) if data.is_object() => Self::accepted(halfway.region, data),
            Some(4) if data.is_object() => self.step(&base, halfway.region, data).await,
            _ => SignIn::Refused(
                LinkErrorType::IncorrectMfaCode,
                "LibreView did not accept that code.".into(),
            ),
        }
    }

    async fn resend_mfa(&self, state: &str) -> Result<String, (LinkErrorType, String)> {
        let refused = |s: SignIn| match s {
            SignIn::Refused(t, m) => (t, m),
            _ => (LinkErrorType::ProviderApiError, String::new()),
        };
        let Some((halfway, base)) = self.halfway(state) else {
            return Err(refused(start_again()));
        };
        let Some(ticket) = self.send_code(&base, &halfway.ticket).await else {
            return Err(refused(api_error("a new code could not be sent")));
        };
        let next = Halfway {
            region: halfway.region,
            ticket,
        };
        serde_json::to_string(&next).map_err(|_| refused(api_error("unencodable state")))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_pending_state_names_no_password_and_round_trips() {
        let s = serde_json::to_string(&Halfway {
            region: Some("eu".into()),
            ticket: "t".into(),
        })
        .unwrap();
        let v = LibreView::new(Hosts::template("http://127.0.0.1:9/{region}")).unwrap();
        let (h, base) = v.halfway(&s).unwrap();
        assert_eq!(base, "http://127.0.0.1:9/eu");
        assert_eq!(h.ticket, "t");
        assert!(v.halfway("garbage").is_none());
    }
}
