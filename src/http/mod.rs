//! The HTTP client and the utilities shared by [`crate::layer`], [`crate::auth`]
//! and [`crate::transport::http`]. It imports none of the three: they import it.
//!
//! - [`client`]: one hyper-util pooled client over hyper-rustls (the `ring`
//!   provider; the system's roots, else the bundled webpki ones), built once per
//!   [`HttpTransport`](crate::transport::http::HttpTransport) and shared by its
//!   MCP requests and its OAuth chain; proxies only when the builder asks for
//!   them; the chain's address policy on connections outside the endpoint's origin.
//! - [`redirect`]: the policy for tower-http's `FollowRedirect`: same origin only,
//!   credentials filtered, a method rule, a hop limit.
//! - [`body`]: reading a capped body with `http_body_util::Limited`.
//! - Here: the stack's request, response and error types, origins, what a
//!   failure of the stack was ([`stack_failure`]), and a URL as `Debug` shows it
//!   ([`url_for_debug`]).

pub(crate) mod body;
pub(crate) mod client;
pub(crate) mod redirect;

use bytes::Bytes;
use http_body_util::Full;
use http_body_util::combinators::UnsyncBoxBody;

use crate::error::Error;

// The stack's types. The public names are `layer::BoxError` and
// `transport::http::{HttpRequest, ResponseBody, HttpResponse}`, aliases of the
// same types: this module is internal, and imports neither of those two.

/// The boxed error type services in this crate's HTTP stack return (tower's usual
/// `BoxError`). Errors this crate produces itself are boxed [`crate::Error`]s.
pub(crate) type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// The request type of the HTTP stack.
pub(crate) type HttpRequest = http::Request<Full<Bytes>>;
/// The response body type of the HTTP stack.
pub(crate) type ResponseBody = UnsyncBoxBody<Bytes, BoxError>;
/// The response type of the HTTP stack.
pub(crate) type HttpResponse = http::Response<ResponseBody>;

/// A URL as a `Debug` output shows it: scheme, host, port and path; never the
/// userinfo, query or fragment, which may carry credentials.
pub(crate) fn url_for_debug(raw: &str) -> String {
    match url::Url::parse(raw) {
        Ok(url) => {
            let host = url.host_str().unwrap_or("");
            match url.port() {
                Some(port) => format!("{}://{host}:{port}{}", url.scheme(), url.path()),
                None => format!("{}://{host}{}", url.scheme(), url.path()),
            }
        }
        Err(_) => "[invalid URL]".to_owned(),
    }
}

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
    Ours(Error),
    /// TLS failed: certificate checks or the handshake.
    Tls,
    /// No connection could be made.
    Connect,
    /// The exchange failed after connecting.
    Exchange,
}

/// Reads what an HTTP stack's failure was from its error chain.
///
/// TLS failures are a `rustls::Error` anywhere in the chain (our certificate checks,
/// handshake failures), or, for an `https` endpoint, an I/O error of kind
/// `InvalidData`: tokio-rustls reports the peer's fatal alerts that way (a server
/// refusing our client certificate after a TLS 1.3 handshake, for example), and
/// nothing else below hyper produces that kind. A connect failure is the
/// client's own connect error anywhere in the chain.
pub(crate) fn stack_failure(
    error: &(dyn std::error::Error + 'static),
    https: bool,
) -> StackFailure {
    let mut connect = false;
    let mut current = Some(error);
    while let Some(e) = current {
        if let Some(ours) = e.downcast_ref::<Error>() {
            return StackFailure::Ours(ours.clone());
        }
        if e.is::<rustls::Error>() {
            return StackFailure::Tls;
        }
        connect |= e
            .downcast_ref::<hyper_util::client::legacy::Error>()
            .is_some_and(hyper_util::client::legacy::Error::is_connect);
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
        match stack_failure(&*error, https) {
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
        let ours: BoxError = Box::new(Error::closed("refused by policy"));
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
        assert_eq!(read(Box::new(Link("reset", None)), false), "exchange");
    }

    /// The client's own connect error, wherever it is in the chain, is a
    /// connect failure (a refused port on loopback).
    #[tokio::test]
    async fn a_refused_connection_is_a_connect_failure() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        drop(listener);
        let client = client::tests::plain_client();
        let req = http::Request::get(format!("http://{addr}/"))
            .body(Full::new(Bytes::new()))
            .unwrap();
        let error = tower::ServiceExt::oneshot(client, req)
            .await
            .expect_err("nothing listens");
        assert!(matches!(
            stack_failure(&*error, false),
            StackFailure::Connect
        ));
    }
}
