//! Refuse requests no egress grant allows, before they leave the process.
//!
//! A grant is a string `net:<methods>:<origin>`:
//!
//! - `<methods>` is `get`, `post` or `delete`, several joined with `|`
//!   (`get|post|delete`), or `*` for all three. Case-insensitive. No other HTTP
//!   method is ever allowed.
//! - `<origin>` is `scheme://host[:port]` with scheme `http` or `https`, no path,
//!   query or userinfo (one trailing `/` is tolerated). Without a port, the scheme's
//!   default port (80 or 443) is meant; `:*` allows any port. Host labels may be `*`
//!   (exactly one label) or `**` (one or more labels): `https://*.example.com` allows
//!   `a.example.com` but neither `example.com` nor `a.b.example.com`;
//!   `https://**.example.com` allows both subdomains but still not `example.com`.
//!   Hosts compare case-insensitively; IPv6 literals are written in brackets and
//!   compared as addresses.
//!
//! [`EgressPolicy`] checks each request's method and **destination** URI (the URI of
//! the request itself, never a proxy's) against the grants. A request no grant
//! allows is refused with an [`ErrorKind::EgressDenied`](crate::ErrorKind) error
//! without calling the inner service, so no connection is opened and no byte is sent.
//! Requests with a relative URI are always refused.
//!
//! # Example
//!
//! ```
//! use std::convert::Infallible;
//!
//! use http::{Request, Response};
//! use smthrs_mcp::layer::{EgressGrants, EgressPolicyLayer};
//! use tower::{service_fn, ServiceBuilder, ServiceExt};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
//! let grants = EgressGrants::parse(["net:get|post:https://*.example.com"])?;
//! let service = ServiceBuilder::new()
//!     .layer(EgressPolicyLayer::new(grants))
//!     .service(service_fn(|_req: Request<()>| async {
//!         Ok::<_, Infallible>(Response::new(()))
//!     }));
//!
//! let allowed = Request::post("https://mcp.example.com/mcp").body(())?;
//! assert!(service.clone().oneshot(allowed).await.is_ok());
//!
//! let denied = Request::delete("https://mcp.example.com/mcp").body(())?;
//! let err = service.oneshot(denied).await.unwrap_err();
//! let err = err.downcast::<smthrs_mcp::Error>().unwrap();
//! assert_eq!(err.kind(), smthrs_mcp::ErrorKind::EgressDenied);
//! # Ok(())
//! # }
//! ```

use std::fmt;
use std::future::Future;
use std::net::Ipv6Addr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use http::{Method, Request};
use pin_project_lite::pin_project;
use tower::{Layer, Service};

use super::BoxError;
use crate::error::{Error, ErrorKind, Result, truncate};

const GET: u8 = 1;
const POST: u8 = 2;
const DELETE: u8 = 4;

/// A set of `net:<methods>:<origin>` egress grants (see the [module docs](self)).
///
/// The empty set denies everything.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct EgressGrants {
    grants: Vec<Grant>,
}

#[derive(Clone, PartialEq, Eq)]
struct Grant {
    methods: u8,
    https: bool,
    host: HostPattern,
    port: Option<u16>,
    /// `host:port` for an exact host and port (derived from them): a request
    /// whose authority is exactly this is allowed without parsing its host and
    /// port (every other authority takes the full comparison).
    authority: Option<Box<str>>,
}

impl Grant {
    fn new(methods: u8, https: bool, host: HostPattern, port: Option<u16>) -> Grant {
        let authority = match (&host, port) {
            (HostPattern::Exact(host), Some(port)) => Some(format!("{host}:{port}").into()),
            _ => None,
        };
        Grant {
            methods,
            https,
            host,
            port,
            authority,
        }
    }
}

#[derive(Clone, PartialEq, Eq)]
enum HostPattern {
    /// A bracketed IPv6 literal, compared as an address.
    V6(Ipv6Addr),
    /// A host without wildcards, lower-cased: compared as one string (the same
    /// as label by label, since no label holds a dot), with no split per request.
    Exact(String),
    /// Dot-separated labels, lower-cased, with at least one wildcard.
    Labels(Vec<Label>),
}

#[derive(Clone, PartialEq, Eq)]
enum Label {
    Literal(String),
    /// `*`: exactly one label.
    One,
    /// `**`: one or more labels.
    Many,
}

impl EgressGrants {
    /// No grants: every request is denied.
    pub fn none() -> Self {
        EgressGrants::default()
    }

    /// Parses grants; fails with `invalid_config` naming the first malformed one.
    pub fn parse<I, S>(grants: I) -> Result<Self>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut out = EgressGrants::none();
        for grant in grants {
            out = out.with(grant.as_ref())?;
        }
        Ok(out)
    }

    /// Adds one grant; fails with `invalid_config` naming it when malformed (without
    /// its authority and path when it carries userinfo or a query: those may be
    /// credentials).
    pub fn with(mut self, grant: &str) -> Result<Self> {
        let parsed = parse_grant(grant).ok_or_else(|| {
            Error::config(format!(
                "invalid egress grant {:?}: expected net:<get|post|delete>:<scheme>://<host>[:<port>]",
                shown_grant(grant)
            ))
        })?;
        self.grants.push(parsed);
        Ok(self)
    }

    /// The grants the HTTP transport uses by default for an endpoint:
    /// exactly `net:get|post|delete:<origin of uri>`.
    ///
    /// Fails with `invalid_config` when `uri` is not an absolute `http`/`https` URI.
    pub fn for_endpoint(uri: &http::Uri) -> Result<Self> {
        let (scheme, host, port) = crate::http::origin_of(uri)
            .ok_or_else(|| Error::config("the endpoint must be an absolute http or https URL"))?;
        let host = host_pattern(&host)
            .ok_or_else(|| Error::config("the endpoint's host cannot be expressed as a grant"))?;
        Ok(EgressGrants {
            grants: vec![Grant::new(
                GET | POST | DELETE,
                scheme == "https",
                host,
                Some(port),
            )],
        })
    }

    /// True when some grant allows `method` to the origin of `uri`.
    pub fn allows(&self, method: &Method, uri: &http::Uri) -> bool {
        let bit = if method == Method::GET {
            GET
        } else if method == Method::POST {
            POST
        } else if method == Method::DELETE {
            DELETE
        } else {
            return false;
        };
        // Checked on every request: no allocation unless a wildcard grant meets a
        // host with upper-case letters (or more than `INLINE_LABELS` labels).
        let https = match uri.scheme_str() {
            Some(s) if s.eq_ignore_ascii_case("http") => false,
            Some(s) if s.eq_ignore_ascii_case("https") => true,
            _ => return false,
        };
        let Some(authority) = uri.authority() else {
            return false;
        };
        // The usual request, to the endpoint's own `host:port`: one comparison.
        let granted = |g: &Grant| g.methods & bit != 0 && g.https == https;
        if self
            .grants
            .iter()
            .any(|g| granted(g) && g.authority.as_deref() == Some(authority.as_str()))
        {
            return true;
        }
        let Some(host) = uri.host() else {
            return false;
        };
        let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
        self.grants
            .iter()
            .any(|g| granted(g) && g.port.is_none_or(|p| p == port) && g.host.matches(host))
    }

    /// True when there is no grant at all.
    pub fn is_empty(&self) -> bool {
        self.grants.is_empty()
    }

    /// The number of grants.
    pub fn len(&self) -> usize {
        self.grants.len()
    }
}

impl fmt::Display for EgressGrants {
    /// The grants in canonical form, separated by `, `.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, g) in self.grants.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{g}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for EgressGrants {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.grants.iter().map(|g| g.to_string()))
            .finish()
    }
}

impl fmt::Display for Grant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("net:")?;
        let mut first = true;
        for (bit, name) in [(GET, "get"), (POST, "post"), (DELETE, "delete")] {
            if self.methods & bit != 0 {
                if !first {
                    f.write_str("|")?;
                }
                f.write_str(name)?;
                first = false;
            }
        }
        f.write_str(if self.https { ":https://" } else { ":http://" })?;
        match &self.host {
            HostPattern::V6(addr) => write!(f, "[{addr}]")?,
            HostPattern::Exact(host) => f.write_str(host)?,
            HostPattern::Labels(labels) => {
                for (i, label) in labels.iter().enumerate() {
                    if i > 0 {
                        f.write_str(".")?;
                    }
                    f.write_str(match label {
                        Label::Literal(s) => s,
                        Label::One => "*",
                        Label::Many => "**",
                    })?;
                }
            }
        }
        match self.port {
            Some(p) => write!(f, ":{p}"),
            None => f.write_str(":*"),
        }
    }
}

/// Host labels matched without allocating (longer hosts are collected).
const INLINE_LABELS: usize = 16;

impl HostPattern {
    fn matches(&self, host: &str) -> bool {
        match self {
            HostPattern::V6(addr) => parse_v6(host) == Some(*addr),
            HostPattern::Exact(exact) => host.eq_ignore_ascii_case(exact),
            HostPattern::Labels(pattern) => {
                if host.starts_with('[') {
                    return false;
                }
                let lowered;
                let host = if host.bytes().any(|b| b.is_ascii_uppercase()) {
                    lowered = host.to_ascii_lowercase();
                    &lowered
                } else {
                    host
                };
                let count = host.split('.').count();
                if count <= INLINE_LABELS {
                    let mut labels = [""; INLINE_LABELS];
                    for (slot, label) in labels.iter_mut().zip(host.split('.')) {
                        *slot = label;
                    }
                    match_labels(pattern, &labels[..count])
                } else {
                    let labels: Vec<&str> = host.split('.').collect();
                    match_labels(pattern, &labels)
                }
            }
        }
    }
}

fn match_labels(pattern: &[Label], host: &[&str]) -> bool {
    match pattern.split_first() {
        None => host.is_empty(),
        Some((Label::Literal(lit), rest)) => {
            host.first().is_some_and(|h| h == lit) && match_labels(rest, &host[1..])
        }
        Some((Label::One, rest)) => {
            host.first().is_some_and(|h| !h.is_empty()) && match_labels(rest, &host[1..])
        }
        Some((Label::Many, rest)) => {
            // One or more labels, then the rest of the pattern.
            (1..=host.len())
                .take_while(|&n| !host[n - 1].is_empty())
                .any(|n| match_labels(rest, &host[n..]))
        }
    }
}

fn parse_v6(host: &str) -> Option<Ipv6Addr> {
    host.strip_prefix('[')?.strip_suffix(']')?.parse().ok()
}

fn host_pattern(host: &str) -> Option<HostPattern> {
    if host.starts_with('[') {
        return parse_v6(host).map(HostPattern::V6);
    }
    if host.is_empty() {
        return None;
    }
    let mut labels = Vec::new();
    for label in host.split('.') {
        labels.push(match label {
            "*" => Label::One,
            "**" => Label::Many,
            _ if !label.is_empty()
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_') =>
            {
                Label::Literal(label.to_ascii_lowercase())
            }
            _ => return None,
        });
    }
    if labels.iter().all(|l| matches!(l, Label::Literal(_))) {
        return Some(HostPattern::Exact(host.to_ascii_lowercase()));
    }
    Some(HostPattern::Labels(labels))
}

fn parse_grant(text: &str) -> Option<Grant> {
    let rest = text.strip_prefix("net:")?;
    let (methods_text, origin) = rest.split_once(':')?;
    let mut methods = 0u8;
    for m in methods_text.split('|') {
        methods |= match m.to_ascii_lowercase().as_str() {
            "get" => GET,
            "post" => POST,
            "delete" => DELETE,
            "*" => GET | POST | DELETE,
            _ => return None,
        };
    }
    let (https, authority) = if let Some(a) = strip_prefix_ci(origin, "https://") {
        (true, a)
    } else if let Some(a) = strip_prefix_ci(origin, "http://") {
        (false, a)
    } else {
        return None;
    };
    let authority = authority.strip_suffix('/').unwrap_or(authority);
    if authority.contains(['/', '?', '#', '@']) {
        return None;
    }
    // Split the port off, minding IPv6 brackets.
    let (host, port_text) = if authority.starts_with('[') {
        let close = authority.find(']')?;
        let (h, after) = authority.split_at(close + 1);
        match after {
            "" => (h, None),
            _ => (h, Some(after.strip_prefix(':')?)),
        }
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        }
    };
    let port = match port_text {
        None => Some(if https { 443 } else { 80 }),
        Some("*") => None,
        Some(p) if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) => {
            Some(p.parse::<u16>().ok()?)
        }
        Some(_) => return None,
    };
    Some(Grant::new(methods, https, host_pattern(host)?, port))
}

fn strip_prefix_ci<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    let head = text.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &text[prefix.len()..])
}

/// Layer that applies an [`EgressPolicy`]. Configuration only; cheap to clone.
#[derive(Clone, Debug)]
pub struct EgressPolicyLayer {
    grants: Arc<EgressGrants>,
}

impl EgressPolicyLayer {
    /// A layer enforcing `grants`.
    pub fn new(grants: EgressGrants) -> Self {
        EgressPolicyLayer {
            grants: Arc::new(grants),
        }
    }

    /// The grants this layer enforces.
    pub fn grants(&self) -> &EgressGrants {
        &self.grants
    }
}

impl<S> Layer<S> for EgressPolicyLayer {
    type Service = EgressPolicy<S>;

    fn layer(&self, inner: S) -> Self::Service {
        EgressPolicy {
            inner,
            grants: self.grants.clone(),
        }
    }
}

/// Service that refuses requests its grants do not allow, built by
/// [`EgressPolicyLayer`].
///
/// Its error type is [`BoxError`]: a refusal is a boxed [`crate::Error`] of kind
/// `egress_denied`; the inner service's errors pass through boxed.
#[derive(Clone, Debug)]
pub struct EgressPolicy<S> {
    inner: S,
    grants: Arc<EgressGrants>,
}

impl<S> EgressPolicy<S> {
    /// Wraps `inner`, enforcing `grants`.
    pub fn new(inner: S, grants: EgressGrants) -> Self {
        EgressPolicyLayer::new(grants).layer(inner)
    }

    /// The grants this service enforces.
    pub fn grants(&self) -> &EgressGrants {
        &self.grants
    }
}

inner_accessors!(EgressPolicy);

impl<S, B> Service<Request<B>> for EgressPolicy<S>
where
    S: Service<Request<B>>,
    S::Error: Into<BoxError>,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = ResponseFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        if self.grants.allows(req.method(), req.uri()) {
            ResponseFuture::Allowed {
                future: self.inner.call(req),
            }
        } else {
            ResponseFuture::Denied {
                error: Some(denial(req.method(), req.uri())),
            }
        }
    }
}

fn denial(method: &Method, uri: &http::Uri) -> Error {
    let wanted = match crate::http::origin_of(uri) {
        Some((scheme, host, port)) => format!(
            "net:{}:{scheme}://{host}:{port}",
            method.as_str().to_ascii_lowercase()
        ),
        None => format!(
            "net:{} to a URL without an http(s) origin",
            method.as_str().to_ascii_lowercase()
        ),
    };
    Error::new(
        ErrorKind::EgressDenied,
        format!("egress denied: no grant allows {wanted}"),
    )
}

pub use future::ResponseFuture;

mod future {
    // pin-project-lite cannot carry doc comments on variant fields.
    #![allow(missing_docs)]

    use super::*;

    pin_project! {
        /// Response future of [`EgressPolicy`]: either the inner service's future, or an
        /// immediate refusal (the short-circuit arm) that never called the inner service.
        #[project = ResponseFutureProj]
        pub enum ResponseFuture<F> {
            /// The request was allowed and is in flight.
            Allowed {
                #[pin]
                future: F,
            },
            /// The request was refused; the inner service was not called.
            Denied {
                error: Option<Error>,
            },
        }
    }

    impl<F, T, E> Future for ResponseFuture<F>
    where
        F: Future<Output = std::result::Result<T, E>>,
        E: Into<BoxError>,
    {
        type Output = std::result::Result<T, BoxError>;

        fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
            match self.project() {
                ResponseFutureProj::Allowed { future } => future.poll(cx).map_err(Into::into),
                ResponseFutureProj::Denied { error } => {
                    let error = error
                        .take()
                        .unwrap_or_else(|| Error::new(ErrorKind::EgressDenied, "egress denied"));
                    Poll::Ready(Err(Box::new(error)))
                }
            }
        }
    }

    impl<F> fmt::Debug for ResponseFuture<F> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            match self {
                ResponseFuture::Allowed { .. } => f.write_str("ResponseFuture::Allowed"),
                ResponseFuture::Denied { .. } => f.write_str("ResponseFuture::Denied"),
            }
        }
    }
}

/// A malformed grant as an error may show it: whole when harmless, else only up to
/// its scheme (`net:get:https://…`), since userinfo or a query may be a credential.
fn shown_grant(grant: &str) -> String {
    if grant.contains('@') || grant.contains('?') {
        let head = grant.split("://").next().unwrap_or_default();
        format!("{}://…", truncate(head, 200))
    } else {
        truncate(grant, 200).to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::convert::Infallible;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tower::{ServiceExt, service_fn};

    fn uri(s: &str) -> http::Uri {
        s.parse().unwrap()
    }

    fn allows(grant: &str, method: Method, url: &str) -> bool {
        EgressGrants::parse([grant])
            .unwrap()
            .allows(&method, &uri(url))
    }

    #[test]
    fn methods_and_origins() {
        let g = "net:get|post:https://mcp.example.com";
        assert!(allows(g, Method::GET, "https://mcp.example.com/mcp?q=1"));
        assert!(allows(g, Method::POST, "https://MCP.example.com:443/"));
        assert!(!allows(g, Method::DELETE, "https://mcp.example.com/mcp"));
        assert!(!allows(g, Method::PUT, "https://mcp.example.com/mcp"));
        assert!(!allows(g, Method::POST, "http://mcp.example.com/mcp"));
        assert!(!allows(g, Method::POST, "https://mcp.example.com:8443/mcp"));
        assert!(!allows(g, Method::POST, "https://other.example.com/mcp"));
        assert!(!allows(g, Method::POST, "/relative"));
        assert!(allows(
            "net:*:http://h:8080",
            Method::DELETE,
            "http://h:8080/x"
        ));
        assert!(allows("net:POST:HTTP://h:*", Method::POST, "http://h:1/x"));
        assert!(allows("net:post:http://h:*", Method::POST, "http://h/x"));
    }

    #[test]
    fn an_authority_that_is_not_exactly_the_granted_one_is_still_compared_in_full() {
        let g = "net:post:http://localhost:8080";
        assert!(allows(g, Method::POST, "http://localhost:8080/mcp"));
        assert!(allows(g, Method::POST, "http://LocalHost:8080/mcp"));
        assert!(allows(g, Method::POST, "http://user@localhost:8080/mcp"));
        assert!(!allows(g, Method::GET, "http://localhost:8080/mcp"));
        assert!(!allows(g, Method::POST, "https://localhost:8080/mcp"));
        assert!(!allows(g, Method::POST, "http://localhost:80/mcp"));
        assert!(!allows(g, Method::POST, "http://localhost:8080.evil/mcp"));
        let default_port = "net:get:https://h";
        assert!(allows(default_port, Method::GET, "https://h/"));
        assert!(allows(default_port, Method::GET, "https://h:443/"));
        assert!(!allows(default_port, Method::GET, "https://h:444/"));
    }

    #[test]
    fn wildcards() {
        let one = "net:get:https://*.example.com";
        assert!(allows(one, Method::GET, "https://a.example.com/"));
        assert!(!allows(one, Method::GET, "https://example.com/"));
        assert!(!allows(one, Method::GET, "https://a.b.example.com/"));
        assert!(!allows(one, Method::GET, "https://a.example.org/"));
        let many = "net:get:https://**.example.com";
        assert!(allows(many, Method::GET, "https://a.example.com/"));
        assert!(allows(many, Method::GET, "https://a.b.c.example.com/"));
        assert!(!allows(many, Method::GET, "https://example.com/"));
        assert!(!allows(many, Method::GET, "https://evil-example.com/"));
        assert!(!allows(many, Method::GET, "https://example.com.evil.net/"));
        let mid = "net:get:https://api.*.example.com";
        assert!(allows(mid, Method::GET, "https://api.eu.example.com/"));
        assert!(!allows(mid, Method::GET, "https://api.example.com/"));
    }

    #[test]
    fn ipv6_literals() {
        let g = "net:get:http://[::1]:8080";
        assert!(allows(g, Method::GET, "http://[0:0:0:0:0:0:0:1]:8080/"));
        assert!(!allows(g, Method::GET, "http://127.0.0.1:8080/"));
    }

    #[test]
    fn malformed_grants_are_config_errors_naming_the_grant() {
        for bad in [
            "",
            "net:get",
            "net::https://h",
            "net:put:https://h",
            "net:get:ftp://h",
            "net:get:https://",
            "net:get:https://h/path",
            "net:get:https://user@h",
            "net:get:https://h:99999",
            "net:get:https://h:",
            "net:get:https://a*b.com",
            "net:get:https://a..b",
            "file:get:https://h",
        ] {
            let err = EgressGrants::parse([bad]).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::InvalidConfig, "{bad}");
            // Named, but never with what could be userinfo or a query.
            if bad.contains('@') {
                assert!(!err.message().contains("user"), "{err}");
            } else {
                assert!(err.message().contains(&format!("{bad:?}")), "{err}");
            }
        }
        assert!(EgressGrants::parse(["net:get:https://h/"]).is_ok());
    }

    #[test]
    fn endpoint_default_and_display() {
        let grants = EgressGrants::for_endpoint(&uri("https://Mcp.Example.com/mcp")).unwrap();
        assert_eq!(
            grants.to_string(),
            "net:get|post|delete:https://mcp.example.com:443"
        );
        assert!(grants.allows(&Method::POST, &uri("https://mcp.example.com/mcp")));
        assert!(!grants.allows(&Method::POST, &uri("https://example.com/mcp")));
        let reparsed = EgressGrants::parse([grants.to_string()]).unwrap();
        assert_eq!(reparsed, grants);
        assert!(EgressGrants::none().is_empty());
    }

    #[tokio::test]
    async fn denial_short_circuits_the_inner_service() {
        let calls = Arc::new(AtomicUsize::new(0));
        let counter = calls.clone();
        let inner = service_fn(move |_req: Request<()>| {
            counter.fetch_add(1, Ordering::SeqCst);
            async { Ok::<_, Infallible>(()) }
        });
        let svc =
            EgressPolicyLayer::new(EgressGrants::parse(["net:get:http://a"]).unwrap()).layer(inner);
        let denied = Request::post("http://a/").body(()).unwrap();
        let err = svc.clone().oneshot(denied).await.unwrap_err();
        let err = err.downcast::<Error>().unwrap();
        assert_eq!(err.kind(), ErrorKind::EgressDenied);
        assert!(err.message().contains("net:post:http://a:80"), "{err}");
        assert_eq!(calls.load(Ordering::SeqCst), 0);
        let allowed = Request::get("http://a/").body(()).unwrap();
        svc.oneshot(allowed).await.unwrap();
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }
}
