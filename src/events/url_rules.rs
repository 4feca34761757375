//! Which webhook URLs a team may register, and which addresses a delivery may reach: no
//! server-side request forgery into the deployment's own network.
//!
//! A URL must be `https`, with a host. Loopback, private (RFC 1918, unique-local), link-local
//! (cloud metadata at 169.254.169.254), carrier-grade NAT, unspecified, broadcast and multicast
//! addresses are refused, as is `http`, unless the deployment runs with
//! `--webhook-allow-private` (development, tests, receivers on the same network). Names are
//! checked again when a delivery resolves them, so a name that points inside is refused too.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use url::{Host, Url};

/// The deployment's URL rules.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UrlRules {
    /// Allow `http` and private, loopback and link-local targets.
    pub allow_private: bool,
}

const HINT: &str = "refused unless the server runs with --webhook-allow-private";

fn v4_internal(ip: Ipv4Addr) -> bool {
    let [a, b, ..] = ip.octets();
    ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_unspecified()
        || ip.is_broadcast()
        || ip.is_multicast()
        || (a == 100 && (64..128).contains(&b))
        || a == 0
}

fn v6_internal(ip: Ipv6Addr) -> bool {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return v4_internal(v4);
    }
    let first = ip.segments()[0];
    ip.is_loopback()
        || ip.is_unspecified()
        || ip.is_multicast()
        || (first & 0xfe00) == 0xfc00
        || (first & 0xffc0) == 0xfe80
}

/// Whether an address is inside the deployment's network (see the module docs).
pub fn is_internal(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4_internal(v4),
        IpAddr::V6(v6) => v6_internal(v6),
    }
}

impl UrlRules {
    /// Checks a URL a team registers; the error is a sentence naming the problem.
    pub fn check(&self, raw: &str) -> Result<Url, String> {
        let url = Url::parse(raw).map_err(|e| format!("not a valid URL ({e}): {raw:?}"))?;
        match url.scheme() {
            "https" => {}
            "http" if self.allow_private => {}
            "http" => return Err(format!("the URL must use https; http is {HINT}")),
            other => return Err(format!("unsupported URL scheme {other:?}; use https")),
        }
        let internal = match url.host() {
            None => return Err("the URL has no host".to_owned()),
            Some(Host::Ipv4(ip)) => v4_internal(ip).then(|| ip.to_string()),
            Some(Host::Ipv6(ip)) => v6_internal(ip).then(|| ip.to_string()),
            Some(Host::Domain(name)) => {
                let name = name.trim_end_matches('.').to_ascii_lowercase();
                (name == "localhost" || name.ends_with(".localhost")).then_some(name)
            }
        };
        match internal {
            Some(address) if !self.allow_private => Err(format!(
                "the URL points to a private, loopback or link-local address ({address}); {HINT}"
            )),
            _ => Ok(url),
        }
    }

    /// Checks where a delivery's URL resolves now; the error names the refused address.
    pub async fn check_resolved(&self, url: &Url) -> Result<(), String> {
        if self.allow_private {
            return Ok(());
        }
        let Some(Host::Domain(name)) = url.host() else {
            // Literal addresses were checked at registration.
            return Ok(());
        };
        let port = url.port_or_known_default().unwrap_or(443);
        let addrs = tokio::net::lookup_host((name, port))
            .await
            .map_err(|e| format!("cannot resolve {name}: {e}"))?;
        for addr in addrs {
            if is_internal(addr.ip()) {
                return Err(format!("{name} resolves to {}; {HINT}", addr.ip()));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn internal_targets_and_http_are_refused_unless_allowed() {
        let strict = UrlRules::default();
        for bad in [
            "https://10.0.0.1/",
            "https://169.254.169.254/latest/meta-data",
            "https://127.0.0.1:9000/",
            "https://localhost/",
            "https://[::1]/",
            "https://[fe80::1]/",
            "https://[fd00::1]/",
            "https://192.168.1.1/",
            "https://172.16.0.1/",
            "https://100.64.0.1/",
            "https://0.0.0.0/",
            "https://[::ffff:10.0.0.1]/",
            "http://example.com/",
            "ftp://example.com/",
            "not a url",
        ] {
            assert!(strict.check(bad).is_err(), "{bad}");
        }
        assert!(strict.check("https://example.com/hooks").is_ok());
        assert!(strict.check("https://8.8.8.8/").is_ok());
        let open = UrlRules {
            allow_private: true,
        };
        assert!(open.check("http://127.0.0.1:9000/").is_ok());
        assert!(open.check("http://10.0.0.1/").is_ok());
        assert!(open.check("ftp://example.com/").is_err());
    }
}
