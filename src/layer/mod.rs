//! Tower middleware used by the Streamable HTTP transport, usable on its own.
//!
//! Each middleware lives in one file in [tower-http]'s layout: a module doc with an
//! example, the `FooLayer` (configuration only, `Clone`), the `Foo<S>` service, the
//! constructors, and the tests.
//!
//! - [`bearer_auth`]: [`BearerAuthLayer`] adds `Authorization: Bearer <token>`, marked
//!   sensitive, and only to requests for the origin it was configured for.
//! - [`egress_policy`]: [`EgressPolicyLayer`] refuses, before the inner service is
//!   called (so before any byte leaves the process), every request whose method and
//!   destination origin no `net:<method>:<origin>` grant allows.
//!
//! - [`oauth`]: [`OAuthLayer`] holds the OAuth token of one server and runs the
//!   authorization chain of [`crate::auth`] on a `401` (in place of
//!   [`BearerAuthLayer`] for entries that use OAuth).
//!
//! The transport stacks them as: your own layers, then [`EgressPolicyLayer`], then
//! [`BearerAuthLayer`], then the MCP header/session layer, over a hyper-util client.
//!
//! [tower-http]: https://docs.rs/tower-http

/// `get_ref`, `get_mut` and `into_inner` for a middleware service whose wrapped
/// service is its `inner` field (tower's accessors).
macro_rules! inner_accessors {
    ($service:ident) => {
        impl<S> $service<S> {
            /// The wrapped service.
            pub fn get_ref(&self) -> &S {
                &self.inner
            }

            /// The wrapped service, mutably.
            pub fn get_mut(&mut self) -> &mut S {
                &mut self.inner
            }

            /// Unwraps the inner service.
            pub fn into_inner(self) -> S {
                self.inner
            }
        }
    };
}

pub mod bearer_auth;
pub mod egress_policy;
pub mod oauth;

pub use bearer_auth::{BearerAuth, BearerAuthLayer};
pub use egress_policy::{EgressGrants, EgressPolicy, EgressPolicyLayer};
pub use oauth::{OAuthLayer, OAuthService};

/// The boxed error type services in this crate's HTTP stack return (tower's usual
/// `BoxError`). Errors this crate produces itself are boxed [`crate::Error`]s.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// The (scheme, lower-cased host, effective port) triple of an absolute URI, or
/// `None` when the URI is not absolute `http`/`https`.
pub(crate) fn origin_of(uri: &http::Uri) -> Option<(&'static str, String, u16)> {
    let scheme = match uri.scheme_str()? {
        s if s.eq_ignore_ascii_case("http") => "http",
        s if s.eq_ignore_ascii_case("https") => "https",
        _ => return None,
    };
    let host = uri.host()?.to_ascii_lowercase();
    let port = uri
        .port_u16()
        .unwrap_or(if scheme == "https" { 443 } else { 80 });
    Some((scheme, host, port))
}

/// True when both URIs are absolute and share scheme, host and effective port.
pub(crate) fn same_origin(a: &http::Uri, b: &http::Uri) -> bool {
    match (origin_of(a), origin_of(b)) {
        (Some(a), Some(b)) => a == b,
        _ => false,
    }
}

/// What a failure of one of this crate's HTTP stacks was, read from its error chain.
pub(crate) enum StackFailure {
    /// An error this crate produced below the caller (an egress or address
    /// refusal, an invalid session id): passed through as it is.
    Ours(crate::Error),
    /// TLS failed: certificate checks or the handshake.
    Tls,
    /// No connection could be made.
    Connect,
    /// The exchange failed after connecting.
    Exchange,
}

/// Reads what an HTTP stack's failure was from its error chain; `is_connect` tells
/// whether one link is the stack's own connect error.
///
/// TLS failures are a `rustls::Error` anywhere in the chain (our certificate checks,
/// handshake failures), or, for an `https` endpoint, an I/O error of kind
/// `InvalidData`: tokio-rustls reports the peer's fatal alerts that way (a server
/// refusing our client certificate after a TLS 1.3 handshake, for example), and
/// nothing else below hyper produces that kind.
pub(crate) fn stack_failure(
    error: &(dyn std::error::Error + 'static),
    https: bool,
    is_connect: impl Fn(&(dyn std::error::Error + 'static)) -> bool,
) -> StackFailure {
    let mut connect = false;
    let mut current = Some(error);
    while let Some(e) = current {
        if let Some(ours) = e.downcast_ref::<crate::Error>() {
            return StackFailure::Ours(ours.clone());
        }
        if e.is::<rustls::Error>() {
            return StackFailure::Tls;
        }
        connect |= is_connect(e);
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            if https && io.kind() == std::io::ErrorKind::InvalidData {
                return StackFailure::Tls;
            }
            if let Some(inner) = io.get_ref() {
                current = Some(inner as &(dyn std::error::Error + 'static));
                continue;
            }
        }
        current = e.source();
    }
    if connect {
        StackFailure::Connect
    } else {
        StackFailure::Exchange
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_use_default_ports_and_ignore_case() {
        let a: http::Uri = "https://Example.com/mcp?x=1".parse().unwrap();
        let b: http::Uri = "https://example.com:443/other".parse().unwrap();
        let c: http::Uri = "http://example.com/mcp".parse().unwrap();
        let d: http::Uri = "https://example.com:8443/mcp".parse().unwrap();
        assert!(same_origin(&a, &b));
        assert!(!same_origin(&a, &c));
        assert!(!same_origin(&a, &d));
        let relative: http::Uri = "/mcp".parse().unwrap();
        assert!(!same_origin(&relative, &relative));
    }

    /// A link of a chain for the tests: a message and an optional source.
    #[derive(Debug)]
    struct Link(&'static str, Option<BoxError>);

    impl std::fmt::Display for Link {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(self.0)
        }
    }

    impl std::error::Error for Link {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            self.1
                .as_deref()
                .map(|e| e as &(dyn std::error::Error + 'static))
        }
    }

    fn read(error: BoxError, https: bool) -> &'static str {
        let is_connect = |e: &(dyn std::error::Error + 'static)| {
            e.downcast_ref::<Link>().is_some_and(|l| l.0 == "connect")
        };
        match stack_failure(&*error, https, is_connect) {
            StackFailure::Ours(_) => "ours",
            StackFailure::Tls => "tls",
            StackFailure::Connect => "connect",
            StackFailure::Exchange => "exchange",
        }
    }

    #[test]
    fn a_stack_failure_is_read_from_anywhere_in_its_chain() {
        let wrapped = |inner: BoxError| -> BoxError { Box::new(Link("outer", Some(inner))) };
        let io = |kind, inner: BoxError| -> BoxError { Box::new(std::io::Error::new(kind, inner)) };
        let ours: BoxError = Box::new(crate::Error::closed("refused by policy"));
        assert_eq!(read(wrapped(ours), true), "ours");
        let rustls: BoxError = Box::new(rustls::Error::DecryptError);
        let behind_io = io(std::io::ErrorKind::Other, rustls);
        assert_eq!(read(wrapped(behind_io), false), "tls");
        let alert = || {
            io(
                std::io::ErrorKind::InvalidData,
                Box::new(Link("alert", None)),
            )
        };
        assert_eq!(read(wrapped(alert()), true), "tls");
        assert_eq!(
            read(wrapped(alert()), false),
            "exchange",
            "only https reads InvalidData as TLS"
        );
        let refused = Link(
            "connect",
            Some(io(
                std::io::ErrorKind::ConnectionRefused,
                Box::new(Link("x", None)),
            )),
        );
        assert_eq!(read(wrapped(Box::new(refused)), false), "connect");
        assert_eq!(read(Box::new(Link("reset", None)), false), "exchange");
    }
}
