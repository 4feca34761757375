//! Which webhook URLs a team may register, and which addresses a delivery may reach: no
//! server-side request forgery into the deployment's own network.
//!
//! A URL must be `https`, with a host. Loopback, private (RFC 1918, unique-local), link-local
//! (cloud metadata at 169.254.169.254), carrier-grade NAT, unspecified, broadcast and multicast
//! addresses are refused, as is `http`, unless the deployment runs with
//! `--webhook-allow-private` (development, tests, receivers on the same network). Names are
//! checked again by the delivery client's own resolver ([`PinnedResolver`]), which hands the
//! connection only allowed addresses, so a name that points inside, even by changing its
//! answer between a check and the connection, is refused too.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

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

    /// The addresses a delivery may connect to among those `name` resolves to; the error names
    /// the refused address when none is left.
    pub fn allowed_addresses(
        &self,
        name: &str,
        addrs: impl IntoIterator<Item = SocketAddr>,
    ) -> Result<Vec<SocketAddr>, String> {
        let all: Vec<SocketAddr> = addrs.into_iter().collect();
        if self.allow_private {
            return Ok(all);
        }
        let allowed: Vec<SocketAddr> = all
            .iter()
            .copied()
            .filter(|a| !is_internal(a.ip()))
            .collect();
        match (allowed.is_empty(), all.first()) {
            (false, _) => Ok(allowed),
            (true, Some(refused)) => Err(format!("{name} resolves to {}; {HINT}", refused.ip())),
            (true, None) => Err(format!("{name} resolves to no address")),
        }
    }
}

/// The delivery client's resolver: connections go only to the addresses the rules allow, as
/// resolved for that connection, so a name cannot pass a check and then point inside when the
/// client resolves it again (DNS rebinding).
#[derive(Debug, Clone, Copy)]
pub struct PinnedResolver(pub UrlRules);

impl reqwest::dns::Resolve for PinnedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let rules = self.0;
        Box::pin(async move {
            let host = name.as_str().to_owned();
            let resolved = tokio::net::lookup_host((host.as_str(), 0))
                .await
                .map_err(|e| format!("cannot resolve {host}: {e}"))?;
            let allowed = rules.allowed_addresses(&host, resolved)?;
            Ok(Box::new(allowed.into_iter()) as reqwest::dns::Addrs)
        })
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

    #[test]
    fn resolved_addresses_inside_are_dropped_and_a_name_with_only_those_is_refused() {
        let strict = UrlRules::default();
        let inside: SocketAddr = "10.1.2.3:0".parse().expect("address");
        let outside: SocketAddr = "93.184.216.34:0".parse().expect("address");
        assert_eq!(
            strict.allowed_addresses("mixed.example", [inside, outside]),
            Ok(vec![outside])
        );
        let refused = strict
            .allowed_addresses("rebound.example", [inside])
            .expect_err("only an internal address");
        assert!(
            refused.contains("rebound.example resolves to 10.1.2.3"),
            "{refused}"
        );
        let open = UrlRules {
            allow_private: true,
        };
        assert_eq!(open.allowed_addresses("x", [inside]), Ok(vec![inside]));
    }

    #[tokio::test]
    async fn the_delivery_resolver_refuses_a_name_that_resolves_to_loopback() {
        use reqwest::dns::Resolve;
        let name = || "localhost".parse::<reqwest::dns::Name>().expect("name");
        let refused = PinnedResolver(UrlRules::default())
            .resolve(name())
            .await
            .err()
            .expect("loopback only");
        assert!(
            refused.to_string().contains("localhost resolves to"),
            "{refused}"
        );
        let allowed = PinnedResolver(UrlRules {
            allow_private: true,
        })
        .resolve(name())
        .await
        .expect("allowed");
        assert!(allowed.into_iter().all(|a| a.ip().is_loopback()));
    }
}
