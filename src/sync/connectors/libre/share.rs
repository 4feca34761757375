//! FreeStyle Libre's share search through a LibreLinkUp follower account.
//!
//! **Observed, not published.** Abbott publishes no LibreLinkUp API; the sign-in and the
//! connections are the wire of `sync::connectors::libre::access` (with its sources). The invitations are
//! listed in a public .NET LibreLinkUp client's API notes (`LibreGlucose.Patients`):
//! `GET llu/invitations/receiver/{accountId}` lists the invitations the account received and
//! `POST llu/invitations/accept/{invitationId}` accepts one. Every call sends `Authorization:
//! Bearer <ticket>`, `account-id` and the app's `product` and `version`, and answers the
//! `{"status": 0, "data": ...}` envelope.
//!
//! What this module assumes where the sources are silent (and the fake in `tests/` serves):
//! an invitation is `{"id", "patientId", "email", "firstName", "lastName", ...}` (the sharer's
//! e-mail address and LibreLinkUp id), `accountId` is the follower's user id, and a connection
//! (`GET /llu/connections`, whose observed fields are `id`, `patientId`, `firstName`,
//! `lastName`, ...) is matched by an `email` member only when it has one. A real answer without
//! those members finds nothing, and the link says the patient has not shared: never a wrong
//! patient. E-mail addresses are compared without regard to case.

use serde_json::Value;

use super::access::{Hosts, PRODUCT, Session, VERSION};
use crate::sync::access::{EmailLink, Follower, Share};

/// The LibreLinkUp share search.
#[derive(Debug, Clone)]
pub struct LibreLinkUp {
    hosts: Hosts,
    http: reqwest::Client,
}

impl LibreLinkUp {
    /// The search at `hosts`, with a client that follows no redirects and gives up after the
    /// connectors' request timeout.
    pub fn new(hosts: Hosts) -> Result<LibreLinkUp, reqwest::Error> {
        let http = reqwest::Client::builder()
            .timeout(crate::sync::http::REQUEST_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("wearhouse/", env!("CARGO_PKG_VERSION")))
            .build()?;
        Ok(LibreLinkUp { hosts, http })
    }

    /// `GET` or `POST` (empty body) `path`; the `data` of a `status: 0` answer.
    async fn call(&self, session: &Session, post: bool, path: &str) -> Result<Value, String> {
        let base = self
            .hosts
            .base(session.region.as_deref())
            .ok_or("the session's region has no host")?;
        let url = format!("{base}{path}");
        let request = if post {
            self.http.post(url).json(&serde_json::json!({}))
        } else {
            self.http.get(url)
        };
        let answer = request
            .bearer_auth(&session.token)
            .header("product", PRODUCT)
            .header("version", VERSION)
            .header("account-id", &session.account_id)
            .send()
            .await
            .map_err(|_| format!("{path}: unreachable"))?;
        if !answer.status().is_success() {
            return Err(format!("{path}: HTTP {}", answer.status().as_u16()));
        }
        let body: Value = answer
            .json()
            .await
            .map_err(|_| format!("{path}: unreadable answer"))?;
        match body["status"].as_i64() {
            Some(0) => Ok(body["data"].clone()),
            status => Err(format!("{path}: status {status:?}")),
        }
    }
}

/// The entries of a list answer whose `email` is `email` (any case).
fn with_email<'a>(list: &'a Value, email: &str) -> Option<&'a Value> {
    list.as_array()?.iter().find(|entry| {
        entry["email"]
            .as_str()
            .is_some_and(|e| e.trim().eq_ignore_ascii_case(email))
    })
}

#[async_trait::async_trait]
impl EmailLink for LibreLinkUp {
    fn provider(&self) -> &'static str {
        "freestyle_libre"
    }

    fn serves(&self, region: &str) -> bool {
        self.hosts.base(Some(region)).is_some()
    }

    async fn find_share(&self, follower: &Follower<'_>, email: &str) -> Share {
        let Some(session) = Session::decode(follower.session) else {
            return Share::Failed("the follower's session is not LibreLinkUp's".into());
        };
        let connections = match self.call(&session, false, "/llu/connections").await {
            Ok(list) => list,
            Err(why) => return Share::Failed(why),
        };
        if let Some(patient) = with_email(&connections, email).and_then(|c| c["patientId"].as_str())
        {
            return Share::Found(patient.to_owned());
        }
        let path = format!("/llu/invitations/receiver/{}", follower.id);
        let invitations = match self.call(&session, false, &path).await {
            Ok(list) => list,
            Err(why) => return Share::Failed(why),
        };
        let invitation = with_email(&invitations, email);
        let (Some(id), Some(patient)) = (
            invitation.and_then(|i| i["id"].as_str()),
            invitation.and_then(|i| i["patientId"].as_str()),
        ) else {
            return Share::NotShared(format!(
                "No FreeStyle Libre share from {email} was found. In the LibreLink app, open \
                 Connected Apps, then LibreLinkUp, and invite {}; then try again.",
                follower.email
            ));
        };
        if let Err(why) = self
            .call(&session, true, &format!("/llu/invitations/accept/{id}"))
            .await
        {
            return Share::Failed(why);
        }
        Share::Found(patient.to_owned())
    }
}
