//! The deployment's secret key and what it seals: provider credentials are stored only as
//! XChaCha20-Poly1305 ciphertexts (`linking.md` §Connections).
//!
//! A sealed value is `v1:` + base64(nonce ‖ ciphertext). The nonce is random (192 bits, so
//! random nonces never collide in practice) and the associated data names the row the value
//! belongs to, so a ciphertext copied onto another connection does not open.

use std::path::Path;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use chacha20poly1305::aead::{Aead, AeadCore, KeyInit, OsRng, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};

/// Length of the key in bytes (written as 64 hexadecimal digits).
pub const KEY_BYTES: usize = 32;
const NONCE_BYTES: usize = 24;
const PREFIX: &str = "v1:";

/// Errors of sealing and opening.
#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    /// The configured key is not 64 hexadecimal digits.
    #[error("the secret key must be {} hexadecimal digits", KEY_BYTES * 2)]
    BadKey,
    /// A sealed value is malformed, was sealed with another key, or belongs to another row.
    #[error("a sealed value does not open with this key")]
    Unsealable,
    /// No key is configured, so credentials can be neither stored nor read.
    #[error("no secret key is configured (--secret-key or WEARHOUSE_SECRET_KEY)")]
    Missing,
    /// Reading or writing the key file failed.
    #[error("secret key file {path}: {source}")]
    File {
        /// The file.
        path: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
}

/// The key credentials are sealed with. Its `Debug` never shows it.
#[derive(Clone)]
pub struct SecretKey {
    cipher: XChaCha20Poly1305,
    /// HMAC key for signatures (OAuth `state`), derived from the key so one secret suffices.
    mac: [u8; 32],
}

fn derive_mac(key: &[u8]) -> [u8; 32] {
    use sha2::Digest;
    let mut h = sha2::Sha256::new();
    h.update(b"wearhouse signing key v1\0");
    h.update(key);
    h.finalize().into()
}

impl std::fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SecretKey(..)")
    }
}

impl SecretKey {
    /// Parses a key written as 64 hexadecimal digits (surrounding whitespace ignored).
    pub fn from_hex(text: &str) -> Result<SecretKey, SecretError> {
        let bytes = hex::decode(text.trim()).map_err(|_| SecretError::BadKey)?;
        if bytes.len() != KEY_BYTES {
            return Err(SecretError::BadKey);
        }
        let cipher = XChaCha20Poly1305::new_from_slice(&bytes).map_err(|_| SecretError::BadKey)?;
        Ok(SecretKey {
            cipher,
            mac: derive_mac(&bytes),
        })
    }

    /// A new random key and its hexadecimal form (to keep).
    pub fn generate() -> (SecretKey, String) {
        let key = XChaCha20Poly1305::generate_key(&mut OsRng);
        let text = hex::encode(key);
        (
            SecretKey {
                cipher: XChaCha20Poly1305::new(&key),
                mac: derive_mac(&key),
            },
            text,
        )
    }

    /// The key kept in `path`, or (first start) a new one written there readable only by the
    /// owner.
    pub fn load_or_create(path: &Path) -> Result<SecretKey, SecretError> {
        let file_error = |source| SecretError::File {
            path: path.display().to_string(),
            source,
        };
        match std::fs::read_to_string(path) {
            Ok(text) => SecretKey::from_hex(&text),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let (key, text) = SecretKey::generate();
                write_private(path, &text).map_err(file_error)?;
                Ok(key)
            }
            Err(e) => Err(file_error(e)),
        }
    }

    /// Seals `plaintext` for the row named by `context`.
    pub fn seal(&self, plaintext: &[u8], context: &str) -> Result<String, SecretError> {
        let nonce = XChaCha20Poly1305::generate_nonce(&mut OsRng);
        let payload = Payload {
            msg: plaintext,
            aad: context.as_bytes(),
        };
        let ciphertext = self
            .cipher
            .encrypt(&nonce, payload)
            .map_err(|_| SecretError::Unsealable)?;
        let mut out = Vec::with_capacity(NONCE_BYTES + ciphertext.len());
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&ciphertext);
        Ok(format!("{PREFIX}{}", STANDARD.encode(out)))
    }

    /// An HMAC-SHA256 signature of `message` (hex).
    pub fn sign(&self, message: &str) -> String {
        use hmac::Mac;
        let mut mac = <hmac::Hmac<sha2::Sha256> as Mac>::new_from_slice(&self.mac)
            .unwrap_or_else(|_| unreachable!("HMAC takes keys of any length"));
        mac.update(message.as_bytes());
        hex::encode(mac.finalize().into_bytes())
    }

    /// Whether `signature` is [`sign`](Self::sign)'s for `message` (constant time).
    pub fn verify(&self, message: &str, signature: &str) -> bool {
        use subtle::ConstantTimeEq;
        self.sign(message)
            .as_bytes()
            .ct_eq(signature.as_bytes())
            .into()
    }

    /// Opens a value sealed for `context`.
    pub fn open(&self, sealed: &str, context: &str) -> Result<Vec<u8>, SecretError> {
        let raw = sealed
            .strip_prefix(PREFIX)
            .and_then(|b| STANDARD.decode(b).ok())
            .filter(|raw| raw.len() > NONCE_BYTES)
            .ok_or(SecretError::Unsealable)?;
        let (nonce, ciphertext) = raw.split_at(NONCE_BYTES);
        let payload = Payload {
            msg: ciphertext,
            aad: context.as_bytes(),
        };
        self.cipher
            .decrypt(XNonce::from_slice(nonce), payload)
            .map_err(|_| SecretError::Unsealable)
    }
}

fn write_private(path: &Path, contents: &str) -> std::io::Result<()> {
    use std::io::Write;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(path)?;
    file.write_all(contents.as_bytes())?;
    file.sync_all()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn sealed_values_open_only_with_their_key_and_context() {
        let (key, text) = SecretKey::generate();
        let sealed = key.seal(b"access-token-123", "connection:u:oura").unwrap();
        assert!(!sealed.contains("access-token-123"));
        assert_eq!(
            key.open(&sealed, "connection:u:oura").unwrap(),
            b"access-token-123"
        );
        assert!(key.open(&sealed, "connection:u:fitbit").is_err());
        let (other, _) = SecretKey::generate();
        assert!(other.open(&sealed, "connection:u:oura").is_err());
        let again = SecretKey::from_hex(&text).unwrap();
        assert_eq!(
            again.open(&sealed, "connection:u:oura").unwrap(),
            b"access-token-123"
        );
        // Two seals of one value differ (fresh nonces).
        assert_ne!(
            sealed,
            key.seal(b"access-token-123", "connection:u:oura").unwrap()
        );
    }

    #[test]
    fn bad_keys_and_values_are_refused() {
        assert!(SecretKey::from_hex("abc").is_err());
        assert!(SecretKey::from_hex(&"zz".repeat(32)).is_err());
        let (key, _) = SecretKey::generate();
        assert!(key.open("v1:", "c").is_err());
        assert!(key.open("plain", "c").is_err());
    }

    #[test]
    fn the_key_file_is_created_once_and_private() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("secret-key");
        let first = SecretKey::load_or_create(&path).unwrap();
        let sealed = first.seal(b"x", "c").unwrap();
        let second = SecretKey::load_or_create(&path).unwrap();
        assert_eq!(second.open(&sealed, "c").unwrap(), b"x");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }
}
