//! Which discovered URLs and addresses the OAuth chain may reach.
//!
//! Protected Resource Metadata, authorization server metadata and registration
//! responses name URLs chosen by the server: attacker input. On top of the egress
//! grants (which every request must also pass), the chain applies this policy:
//!
//! - **Scheme.** `https`, or `http` only when the host is loopback (`localhost`,
//!   `127.0.0.0/8`, `::1`).
//! - **Host names.** Cloud metadata names (`metadata.google.internal`,
//!   `metadata`, `metadata.azure.internal`, `instance-data`, ...) are refused.
//! - **Addresses**, checked on every address a name resolves to, before connecting
//!   (so a DNS answer pointing inside is refused, whatever the name): loopback,
//!   private (RFC 1918), link-local (`169.254.0.0/16`, which holds the cloud
//!   metadata address, and `fe80::/10`), shared/CGNAT (`100.64.0.0/10`), unique
//!   local (`fc00::/7`), unspecified, multicast and broadcast addresses are
//!   refused, **unless the MCP server itself is on that class of address** (a
//!   server on loopback may name a loopback authorization server; a server on a
//!   private network, a private one). IPv4-mapped IPv6 addresses are judged as
//!   the IPv4 address.
//!
//! A refusal is an `egress_denied` error raised before any connection is opened.

use std::collections::BTreeSet;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use url::Url;

use crate::error::{Error, ErrorKind, Result};

/// The class of an IP address, for the SSRF rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum AddressClass {
    /// A globally routable address.
    Public,
    /// `127.0.0.0/8`, `::1`.
    Loopback,
    /// RFC 1918 (`10/8`, `172.16/12`, `192.168/16`).
    Private,
    /// `169.254.0.0/16`, `fe80::/10` (includes `169.254.169.254`).
    LinkLocal,
    /// `100.64.0.0/10` (carrier-grade NAT).
    SharedCgnat,
    /// `fc00::/7`.
    UniqueLocal,
    /// Unspecified, multicast, broadcast, reserved: never reachable by policy.
    Special,
}

/// Classifies an address.
pub fn classify(ip: IpAddr) -> AddressClass {
    match ip {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => classify_v4(v4),
            None => classify_v6(v6),
        },
    }
}

fn classify_v4(ip: Ipv4Addr) -> AddressClass {
    let o = ip.octets();
    if ip.is_loopback() {
        AddressClass::Loopback
    } else if ip.is_private() {
        AddressClass::Private
    } else if ip.is_link_local() {
        AddressClass::LinkLocal
    } else if o[0] == 100 && (o[1] & 0xc0) == 64 {
        AddressClass::SharedCgnat
    } else if ip.is_unspecified()
        || ip.is_multicast()
        || ip.is_broadcast()
        || o[0] == 0
        || o[0] >= 240
    {
        AddressClass::Special
    } else {
        AddressClass::Public
    }
}

fn classify_v6(ip: Ipv6Addr) -> AddressClass {
    let s = ip.segments();
    if ip.is_loopback() {
        AddressClass::Loopback
    } else if (s[0] & 0xffc0) == 0xfe80 {
        AddressClass::LinkLocal
    } else if (s[0] & 0xfe00) == 0xfc00 {
        AddressClass::UniqueLocal
    } else if ip.is_unspecified() || ip.is_multicast() {
        AddressClass::Special
    } else {
        AddressClass::Public
    }
}

/// Host names that reach a cloud provider's instance metadata service.
const METADATA_NAMES: [&str; 6] = [
    "metadata.google.internal",
    "metadata.goog",
    "metadata",
    "metadata.azure.internal",
    "instance-data",
    "instance-data.ec2.internal",
];

/// The address policy for one MCP server. Cheap to clone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AddressPolicy {
    allowed: BTreeSet<AddressClass>,
}

impl AddressPolicy {
    /// Public addresses only.
    pub fn public_only() -> Self {
        AddressPolicy {
            allowed: BTreeSet::from([AddressClass::Public]),
        }
    }

    /// Public addresses plus every class in `classes` (the classes of the MCP
    /// server's own addresses). [`AddressClass::Special`] is never added.
    pub fn with_classes(classes: impl IntoIterator<Item = AddressClass>) -> Self {
        let mut policy = Self::public_only();
        policy
            .allowed
            .extend(classes.into_iter().filter(|c| *c != AddressClass::Special));
        policy
    }

    /// The policy for an MCP server at `mcp`: public addresses, plus the class of
    /// its host when that is an IP literal or `localhost`; for a name, plus the
    /// classes of the addresses it resolves to (resolved once, here).
    pub async fn for_server(mcp: &Url) -> Self {
        match mcp.host() {
            Some(url::Host::Ipv4(ip)) => Self::with_classes([classify(IpAddr::V4(ip))]),
            Some(url::Host::Ipv6(ip)) => Self::with_classes([classify(IpAddr::V6(ip))]),
            Some(url::Host::Domain(name)) if is_localhost(name) => {
                Self::with_classes([AddressClass::Loopback])
            }
            Some(url::Host::Domain(name)) => {
                let port = mcp.port_or_known_default().unwrap_or(443);
                match tokio::net::lookup_host((name, port)).await {
                    Ok(addrs) => Self::with_classes(addrs.map(|a| classify(a.ip()))),
                    Err(_) => Self::public_only(),
                }
            }
            None => Self::public_only(),
        }
    }

    /// True when an address of this class may be connected to.
    pub fn allows(&self, ip: IpAddr) -> bool {
        self.allowed.contains(&classify(ip))
    }

    /// Checks a discovered URL before it is used: absolute `http`/`https` without
    /// userinfo; `https`, or `http` on a loopback host; not a metadata host name;
    /// an IP-literal host must be of an allowed class. `what` names the URL in the
    /// error (never the URL itself).
    pub fn check_url(&self, url: &Url, what: &str) -> Result<()> {
        let refuse = |why: &str| {
            Err(Error::new(
                ErrorKind::EgressDenied,
                format!("the {what} is refused: {why}"),
            ))
        };
        if !url.username().is_empty() || url.password().is_some() {
            return refuse("it carries a user or password");
        }
        let loopback_host = match url.host() {
            Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
            Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
            Some(url::Host::Domain(name)) => is_localhost(name),
            None => return refuse("it has no host"),
        };
        match url.scheme() {
            "https" => {}
            "http" if loopback_host => {}
            "http" => return refuse("http is allowed only on loopback"),
            _ => return refuse("only https (or http on loopback) is allowed"),
        }
        match url.host() {
            Some(url::Host::Ipv4(ip)) if !self.allows(IpAddr::V4(ip)) => {
                refuse("its address is in a range the policy refuses")
            }
            Some(url::Host::Ipv6(ip)) if !self.allows(IpAddr::V6(ip)) => {
                refuse("its address is in a range the policy refuses")
            }
            Some(url::Host::Domain(name)) if is_metadata_name(name) => {
                refuse("it names a cloud metadata service")
            }
            Some(url::Host::Domain(name))
                if is_localhost(name) && !self.allowed.contains(&AddressClass::Loopback) =>
            {
                refuse("its address is in a range the policy refuses")
            }
            _ => Ok(()),
        }
    }
}

fn is_localhost(name: &str) -> bool {
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    name == "localhost" || name.ends_with(".localhost")
}

fn is_metadata_name(name: &str) -> bool {
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    METADATA_NAMES.contains(&name.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn classes() {
        use AddressClass::*;
        for (a, c) in [
            ("8.8.8.8", Public),
            ("127.0.0.1", Loopback),
            ("127.9.9.9", Loopback),
            ("::1", Loopback),
            ("10.1.2.3", Private),
            ("172.16.0.1", Private),
            ("172.32.0.1", Public),
            ("192.168.1.1", Private),
            ("169.254.169.254", LinkLocal),
            ("fe80::1", LinkLocal),
            ("100.64.0.1", SharedCgnat),
            ("100.127.255.255", SharedCgnat),
            ("100.128.0.1", Public),
            ("fd00::1", UniqueLocal),
            ("fc00::1", UniqueLocal),
            ("0.0.0.0", Special),
            ("::", Special),
            ("224.0.0.1", Special),
            ("255.255.255.255", Special),
            ("ff02::1", Special),
            ("::ffff:169.254.169.254", LinkLocal),
            ("::ffff:127.0.0.1", Loopback),
            ("2606:4700::1111", Public),
        ] {
            assert_eq!(classify(ip(a)), c, "{a}");
        }
    }

    #[test]
    fn urls() {
        let public = AddressPolicy::public_only();
        let u = |s: &str| Url::parse(s).unwrap();
        assert!(
            public
                .check_url(&u("https://as.example/token"), "x")
                .is_ok()
        );
        for bad in [
            "http://as.example/token",
            "https://169.254.169.254/latest",
            "https://10.0.0.1/",
            "https://[fd00::1]/",
            "https://[::ffff:10.0.0.1]/",
            "https://metadata.google.internal/",
            "https://METADATA./",
            "https://127.0.0.1/",
            "https://localhost/",
            "http://localhost:8/",
            "https://u:p@as.example/",
            "ftp://as.example/",
        ] {
            let err = public.check_url(&u(bad), "token endpoint").unwrap_err();
            assert_eq!(err.kind(), ErrorKind::EgressDenied, "{bad}");
            assert!(err.message().contains("token endpoint"));
            assert!(!err.message().contains("example"), "{err}");
        }
        let loopback = AddressPolicy::with_classes([AddressClass::Loopback, AddressClass::Special]);
        assert!(
            loopback
                .check_url(&u("http://localhost:3000/x"), "x")
                .is_ok()
        );
        assert!(
            loopback
                .check_url(&u("http://127.0.0.1:3000/x"), "x")
                .is_ok()
        );
        assert!(loopback.check_url(&u("http://[::1]:3000/x"), "x").is_ok());
        assert!(loopback.check_url(&u("https://0.0.0.0/"), "x").is_err());
        assert!(loopback.check_url(&u("https://10.0.0.1/"), "x").is_err());
    }
}
