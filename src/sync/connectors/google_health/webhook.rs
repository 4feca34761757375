//! Google Health API webhooks (`developers.google.com/health/webhooks`; the `Subscriber`,
//! `EndpointAuthorization` and `projects.subscribers.create` entries of the `health:v4`
//! discovery document), received at `POST /v2/provider/google_health/notify`:
//! - The subscriber is registered with `endpointAuthorization.secret`, "the full Authorization
//!   header value" (e.g. `Bearer <secret>`), which Google sends in the `Authorization` header of
//!   every notification. Here that secret is the `verification_token` of the deployment's
//!   `google_health` application in `--oauth-apps`, or of a team's own application (`PUT
//!   /v2/team/provider/google_health/credentials`, kept as a hash); the header must equal it
//!   exactly (compared in constant time; which application's secret it is, `sync::notify`
//!   resolves).
//! - Verification: on creating or updating the subscriber Google posts `{"type":
//!   "verification"}` twice, once with the `Authorization` header (it wants `201 Created`) and
//!   once without (it wants `401` or `403`).
//! - A notification is `{"data": {"healthUserId", "dataType", "operation": "UPSERT" |
//!   "DELETE", "intervals" | "civilIso8601TimeInterval", "clientProvidedSubscriptionName"}}`,
//!   or a JSON array of them (as public receivers observe it); `healthUserId` is the
//!   identity's, which the first historical pull records on the connection.
//!
//! Decisions where the documentation is silent or thin:
//! - Google also signs each body with ECDSA P-256 (`X-HEALTHAPI-SIGNATURE`) against a public
//!   Tink keyset it publishes; that check is not made (no keyset source is documented in the
//!   reference). The `Authorization` secret, which only Google and the deployment know, is the
//!   verification: without it a call answers 401 and queues nothing.
//! - As for the other providers (`sync::notify`), a notification queues the connection's
//!   incremental pull of every resource, whatever its `dataType`; a `DELETE` queues the same
//!   pull (stored data is kept, as on deregistration).

use serde_json::Value;
use subtle::ConstantTimeEq;

/// What Google posted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// The subscriber verification (`{"type": "verification"}`).
    Verification,
    /// Data changed for these Google Health users (`healthUserId`s, in order, once each).
    Changes(Vec<String>),
}

/// Reads a webhook body; `Err` says what is wrong with it.
pub fn parse(body: &[u8]) -> Result<Notice, String> {
    let value: Value =
        serde_json::from_slice(body).map_err(|e| format!("the notification is not JSON: {e}"))?;
    let items = match &value {
        Value::Array(items) => items.as_slice(),
        _ => std::slice::from_ref(&value),
    };
    if items
        .iter()
        .any(|i| i.get("type").and_then(Value::as_str) == Some("verification"))
    {
        return Ok(Notice::Verification);
    }
    if items.is_empty() {
        return Err("the notification holds no `data`".into());
    }
    let mut users: Vec<String> = Vec::new();
    for item in items {
        let user = item
            .get("data")
            .and_then(|d| d.get("healthUserId"))
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|u| !u.is_empty())
            .ok_or("each notification names its user in `data.healthUserId`")?;
        if !users.iter().any(|u| u == user) {
            users.push(user.to_owned());
        }
    }
    Ok(Notice::Changes(users))
}

/// Whether `authorization` (the `Authorization` header) is exactly the subscriber's `secret`,
/// compared in constant time; an empty one never is.
pub fn authorized(secret: &str, authorization: &str) -> bool {
    !secret.is_empty() && bool::from(secret.as_bytes().ct_eq(authorization.as_bytes()))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn bodies_read_as_verifications_or_changed_users() {
        assert_eq!(
            parse(br#"{"type": "verification"}"#),
            Ok(Notice::Verification)
        );
        assert_eq!(
            parse(br#"[{"type": "verification"}]"#),
            Ok(Notice::Verification)
        );
        let one =
            br#"{"data": {"healthUserId": "u1", "dataType": "sleep", "operation": "UPSERT"}}"#;
        assert_eq!(parse(one), Ok(Notice::Changes(vec!["u1".into()])));
        let many = br#"[{"data": {"healthUserId": "u1", "dataType": "steps"}},
                        {"data": {"healthUserId": "u2", "dataType": "weight"}},
                        {"data": {"healthUserId": "u1", "dataType": "sleep"}}]"#;
        assert_eq!(
            parse(many),
            Ok(Notice::Changes(vec!["u1".into(), "u2".into()]))
        );
        for bad in [
            &b"not json"[..],
            br#"[]"#,
            br#"{"data": {"dataType": "sleep"}}"#,
            br#"{"data": {"healthUserId": " "}}"#,
            br#"[{"data": {"healthUserId": "u1"}}, {"nothing": 1}]"#,
        ] {
            assert!(parse(bad).is_err(), "{}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn only_the_exact_secret_authorizes() {
        assert!(authorized("Bearer s3cret", "Bearer s3cret"));
        for other in [
            "",
            "Bearer s3cre",
            "bearer s3cret",
            "Bearer s3cret ",
            "s3cret",
        ] {
            assert!(!authorized("Bearer s3cret", other), "{other:?}");
        }
        assert!(!authorized("", ""));
    }
}
