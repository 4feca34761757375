//! Standard Webhooks signatures: `v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">` with
//! the key a `whsec_<base64>` secret encodes, and the headers that carry them (`webhook-*`,
//! copied as `svix-*` for receivers written against the reference service).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use rand::RngCore;
use sha2::Sha256;

/// The prefix of every secret.
pub const SECRET_PREFIX: &str = "whsec_";

/// A fresh secret: 32 random bytes, `whsec_<base64>`.
pub fn new_secret() -> String {
    let mut key = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut key);
    format!("{SECRET_PREFIX}{}", STANDARD.encode(key))
}

/// The key a secret encodes (the base64 after `whsec_`; a secret without the prefix is taken
/// as base64 too, as the reference libraries do). `None` when it is not base64.
fn key(secret: &str) -> Option<Vec<u8>> {
    let encoded = secret.strip_prefix(SECRET_PREFIX).unwrap_or(secret);
    STANDARD.decode(encoded).ok()
}

/// One signature, `v1,<base64>`; `None` for a secret that is not base64 (never one we made).
pub fn sign(secret: &str, id: &str, timestamp: i64, body: &[u8]) -> Option<String> {
    let mut mac = Hmac::<Sha256>::new_from_slice(&key(secret)?).ok()?;
    mac.update(id.as_bytes());
    mac.update(b".");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    Some(format!(
        "v1,{}",
        STANDARD.encode(mac.finalize().into_bytes())
    ))
}

/// The headers of one delivery: id, timestamp and the signatures of every active secret,
/// space-separated, under both the `webhook-` and the `svix-` prefix.
pub fn headers(secrets: &[&str], id: &str, timestamp: i64, body: &[u8]) -> Vec<(String, String)> {
    let signature = secrets
        .iter()
        .filter_map(|s| sign(s, id, timestamp, body))
        .collect::<Vec<_>>()
        .join(" ");
    let mut out = Vec::with_capacity(6);
    for prefix in ["webhook", "svix"] {
        out.push((format!("{prefix}-id"), id.to_owned()));
        out.push((format!("{prefix}-timestamp"), timestamp.to_string()));
        out.push((format!("{prefix}-signature"), signature.clone()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The test vector of the Standard Webhooks libraries (and Svix's): the same secret,
    /// message id, timestamp and payload give this signature in every implementation.
    #[test]
    fn matches_the_standard_webhooks_test_vector() {
        let signature = sign(
            "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
            "msg_p5jXN8AQM9LWM0D4loKWxJek",
            1_614_265_330,
            br#"{"test": 2432232314}"#,
        );
        assert_eq!(
            signature.as_deref(),
            Some("v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
        );
    }

    #[test]
    fn two_secrets_give_two_signatures_under_both_prefixes() {
        let (a, b) = (new_secret(), new_secret());
        assert_ne!(a, b);
        assert!(a.starts_with(SECRET_PREFIX));
        let h = headers(&[&a, &b], "evt", 1, b"{}");
        let get = |k: &str| h.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
        let sig = get("webhook-signature").unwrap_or_default();
        assert_eq!(sig.split(' ').count(), 2);
        assert_eq!(get("svix-signature").as_deref(), Some(sig.as_str()));
        assert_eq!(get("svix-id").as_deref(), Some("evt"));
        assert_eq!(get("webhook-timestamp").as_deref(), Some("1"));
        assert_eq!(sign("whsec_!!notbase64", "a", 1, b""), None);
    }
}
