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
}
