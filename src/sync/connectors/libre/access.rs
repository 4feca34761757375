//! The LibreLinkUp sign-in (Abbott's app for following a wearer's readings): FreeStyle Libre is
//! an e-mail provider (`link::email`), and this is how the deployment's (or team's) follower
//! account signs in, at the link and again when a pull finds its session expired. The
//! reference keeps no slug for a follower's own password link, so none is offered: the
//! password routes refuse `freestyle_libre` (its catalogue `auth_type` is `email`).
//!
//! **Observed, not published.** Abbott publishes no API reference; this is the wire its apps
//! use, as the community's clients write it down (`nightscout-librelink-up`,
//! `libre-link-up-api-client`, `pylibrelinkup`, FokkeZB/libreview-unofficial):
//! - `POST <host>/llu/auth/login` with `{"email", "password"}` (JSON) and the app's headers
//!   `product` and `version` answers HTTP 200 and, in the body's `status`:
//!   - `0` with `data.user.id` and `data.authTicket.token`: signed in;
//!   - `0` with `data.redirect: true` and `data.region` (`"eu"`): the account lives in that
//!     region; sign in again at its host;
//!   - `2` (`error.message: "notAuthenticated"`): a wrong e-mail address or password;
//!   - `4` with `data.step.type` (`tou`, `pp`): the account must accept terms in the app first.
//! - Hosts: `api.libreview.io` answers every region (by redirecting); each region has its own
//!   ([`REGIONS`]).
//! - Calls after the sign-in send `Authorization: Bearer <token>` and `account-id`, the
//!   SHA-256 (hex) of the user's id.
//!
//! The session the connection keeps ([`Session`], sealed like every credential) is the token,
//! the region it is valid in and that `account-id`, so the connector (`sync::connectors::libre`) needs
//! nothing else. The base URL is [`DEFAULT_API_URL`] and the regional hosts, or, when
//! [`API_URL_ENV`] names one, a template whose `{region}` is replaced by the region (`global`
//! for the host of every region): tests point it at a local fake.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::sync::access::{LinkErrorType, Login, PasswordLogin, SignIn};

/// Overrides the hosts (tests point it at a local fake): a URL template with `{region}`.
pub const API_URL_ENV: &str = "WEARHOUSE_PROVIDER_FREESTYLE_LIBRE_API_URL";
/// The host that answers every region.
pub const DEFAULT_API_URL: &str = "https://api.libreview.io";
/// The `product` header LibreLinkUp's Android app sends.
pub const PRODUCT: &str = "llu.android";
/// The app `version` header (LibreLinkUp refuses app versions it considers too old).
pub const VERSION: &str = "4.16.0";

/// LibreLinkUp's regions and their hosts.
pub const REGIONS: &[(&str, &str)] = &[
    ("ae", "api-ae.libreview.io"),
    ("ap", "api-ap.libreview.io"),
    ("au", "api-au.libreview.io"),
    ("ca", "api-ca.libreview.io"),
    ("cn", "api-cn.myfreestyle.cn"),
    ("de", "api-de.libreview.io"),
    ("eu", "api-eu.libreview.io"),
    ("eu2", "api-eu2.libreview.io"),
    ("fr", "api-fr.libreview.io"),
    ("jp", "api-jp.libreview.io"),
    ("la", "api-la.libreview.io"),
    ("ru", "api.libreview.ru"),
    ("us", "api-us.libreview.io"),
];

/// The regions as the link page offers them: code and name.
pub const REGION_NAMES: &[(&str, &str)] = &[
    ("us", "United States"),
    ("ca", "Canada"),
    ("la", "Latin America"),
    ("eu", "Europe"),
    ("eu2", "Europe (2)"),
    ("de", "Germany"),
    ("fr", "France"),
    ("ae", "United Arab Emirates"),
    ("ap", "Asia Pacific"),
    ("au", "Australia"),
    ("jp", "Japan"),
    ("cn", "China"),
    ("ru", "Russia"),
];

/// Where LibreLinkUp's API is.
#[derive(Debug, Clone, Default)]
pub struct Hosts {
    template: Option<String>,
}

impl Hosts {
    /// LibreLinkUp's own hosts, or the template [`API_URL_ENV`] names.
    pub fn from_env() -> Hosts {
        Hosts::from_var(API_URL_ENV)
    }

    /// The real hosts, or the template the environment variable `var` names (LibreView and
    /// LibreLinkUp share hosts; each provider has its own variable).
    pub fn from_var(var: &str) -> Hosts {
        Hosts {
            template: std::env::var(var).ok(),
        }
    }

    /// Hosts from a template whose `{region}` is the region (`global` for the host of every
    /// region): `http://127.0.0.1:4000/{region}`.
    pub fn template(template: &str) -> Hosts {
        Hosts {
            template: Some(template.trim_end_matches('/').to_owned()),
        }
    }

    /// The base URL of `region` (lower or upper case), or of the host of every region; `None`
    /// for a region LibreLinkUp does not have.
    pub fn base(&self, region: Option<&str>) -> Option<String> {
        let region = region.map(str::to_ascii_lowercase);
        let host = match &region {
            None => None,
            Some(r) => Some(REGIONS.iter().find(|(name, _)| name == r)?.1),
        };
        Some(match (&self.template, host) {
            (Some(t), _) => t.replace("{region}", region.as_deref().unwrap_or("global")),
            (None, Some(host)) => format!("https://{host}"),
            (None, None) => DEFAULT_API_URL.to_owned(),
        })
    }
}

/// What a FreeStyle Libre connection keeps as its access token.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Session {
    /// The region the token is valid in (`None`: the host of every region).
    pub region: Option<String>,
    /// LibreLinkUp's `authTicket.token`.
    pub token: String,
    /// The `account-id` header: SHA-256 (hex) of the user's LibreLinkUp id.
    pub account_id: String,
    /// The wearer whose readings the connection pulls, when the session says so: the patient
    /// an e-mail link found among the follower account's connections (`link::email`), or the
    /// LibreView patient themselves (`abbott_libreview`). `None`: the connector picks the
    /// account's own wearer (`sync::connectors::libre`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patient: Option<String>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("region", &self.region)
            .finish_non_exhaustive()
    }
}

impl Session {
    /// The session as the connection stores it.
    pub fn encode(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// A stored session; `None` when it is not one.
    pub fn decode(stored: &str) -> Option<Session> {
        serde_json::from_str(stored).ok()
    }
}

/// The `account-id` header of the user `id`: its SHA-256 in hex, as tokens are stored.
pub fn account_id(id: &str) -> String {
    use sha2::{Digest, Sha256};
    hex::encode(Sha256::digest(id.as_bytes()))
}

/// FreeStyle Libre's sign-in.
#[derive(Debug, Clone)]
pub struct Libre {
    hosts: Hosts,
    http: reqwest::Client,
}

impl Libre {
    /// The sign-in at `hosts`, with a client that follows no redirects and gives up after the
    /// connectors' request timeout.
    pub fn new(hosts: Hosts) -> Result<Libre, reqwest::Error> {
        let http = reqwest::Client::builder()
            .timeout(crate::sync::http::REQUEST_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("wearhouse/", env!("CARGO_PKG_VERSION")))
            .build()?;
        Ok(Libre { hosts, http })
    }
}

/// LibreLinkUp's answer to a sign-in.
#[derive(Deserialize)]
struct Answer {
    status: i64,
    #[serde(default)]
    data: Option<Value>,
}

fn unsupported(region: &str) -> SignIn {
    SignIn::Refused(
        LinkErrorType::UnsupportedRegion,
        format!("LibreLinkUp has no region {region:?} that this service can reach."),
    )
}

#[async_trait::async_trait]
impl PasswordLogin for Libre {
    fn provider(&self) -> &'static str {
        "freestyle_libre"
    }

    /// Keeps the patient an e-mail link chose (the follower's new session follows the same
    /// wearer).
    fn renewed(&self, previous: &str, fresh: String) -> String {
        match (Session::decode(previous), Session::decode(&fresh)) {
            (Some(old), Some(mut new)) => {
                new.patient = old.patient;
                new.encode()
            }
            _ => fresh,
        }
    }

    async fn sign_in(&self, login: Login<'_>) -> SignIn {
        let api_error = |why: &str| {
            tracing::warn!(provider = "freestyle_libre", why, "sign-in failed");
            SignIn::Refused(
                LinkErrorType::ProviderApiError,
                "LibreLinkUp could not be reached or answered unexpectedly; try again later."
                    .into(),
            )
        };
        let mut region = login.region.map(str::to_ascii_lowercase);
        // The first answer may send the sign-in to the account's region; one such hop is
        // followed.
        for _ in 0..2 {
            let Some(base) = self.hosts.base(region.as_deref()) else {
                return unsupported(region.as_deref().unwrap_or_default());
            };
            let answer = self
                .http
                .post(format!("{base}/llu/auth/login"))
                .header("product", PRODUCT)
                .header("version", VERSION)
                .json(&serde_json::json!({"email": login.username, "password": login.password}))
                .send()
                .await;
            let answer = match answer {
                Ok(a) if a.status().is_success() => a,
                Ok(_) => return api_error("unexpected HTTP status"),
                Err(_) => return api_error("unreachable"),
            };
            let Ok(answer) = answer.json::<Answer>().await else {
                return api_error("unreadable answer");
            };
            let data = answer.data.unwrap_or_default();
            match answer.status {
                0 if data["redirect"] == Value::Bool(true) => {
                    let Some(to) = data["region"].as_str() else {
                        return api_error("a redirect without a region");
                    };
                    region = Some(to.to_ascii_lowercase());
                }
                0 => {
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
                        patient: None,
                    };
                    return SignIn::Accepted {
                        provider_user_id: id.to_owned(),
                        session: session.encode(),
                        refresh_token: None,
                    };
                }
                2 => {
                    return SignIn::Refused(
                        LinkErrorType::ProviderCredentialError,
                        "LibreLinkUp did not accept that e-mail address or password.".into(),
                    );
                }
                4 => {
                    return SignIn::Refused(
                        LinkErrorType::ProviderCredentialError,
                        "LibreLinkUp asks you to accept its terms in the LibreLinkUp app first; \
                         then try again."
                            .into(),
                    );
                }
                _ => return api_error("unexpected status"),
            }
        }
        api_error("redirected twice")
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn every_region_offered_has_a_host_and_every_host_is_offered() {
        let mut offered: Vec<&str> = REGION_NAMES.iter().map(|(c, _)| *c).collect();
        let mut hosted: Vec<&str> = REGIONS.iter().map(|(c, _)| *c).collect();
        offered.sort_unstable();
        hosted.sort_unstable();
        assert_eq!(offered, hosted);
    }

    #[test]
    fn hosts_by_region_and_by_template() {
        let own = Hosts::default();
        assert_eq!(own.base(None).unwrap(), "https://api.libreview.io");
        assert_eq!(own.base(Some("EU")).unwrap(), "https://api-eu.libreview.io");
        assert_eq!(own.base(Some("ru")).unwrap(), "https://api.libreview.ru");
        assert_eq!(own.base(Some("mars")), None);
        let fake = Hosts::template("http://127.0.0.1:9/{region}/");
        assert_eq!(fake.base(None).unwrap(), "http://127.0.0.1:9/global");
        assert_eq!(fake.base(Some("De")).unwrap(), "http://127.0.0.1:9/de");
        assert_eq!(fake.base(Some("xx")), None);
    }

    #[test]
    fn a_session_round_trips_and_never_shows_its_token() {
        let s = Session {
            region: Some("eu".into()),
            token: "tok-secret".into(),
            account_id: account_id("7ad66b40-ba9b-401e-9845-4f49f998cf16"),
            patient: None,
        };
        assert_eq!(Session::decode(&s.encode()), Some(s.clone()));
        assert!(!format!("{s:?}").contains("tok-secret"));
        assert_eq!(s.account_id.len(), 64);
        assert_eq!(Session::decode("not a session"), None);
    }
}
