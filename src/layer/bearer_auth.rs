//! Add `Authorization: Bearer <token>` to requests for one origin.
//!
//! Modeled on tower-http's `AddAuthorization`, with two differences: the constructor
//! is fallible instead of panicking on a token that is not a valid header value, and
//! the header is **always** marked sensitive (HTTP/2 never indexes it; `Debug` of the
//! header prints `Sensitive`). The token is read from a [`SecretString`] and never
//! appears in `Debug` output or in error messages.
//!
//! With [`BearerAuthLayer::restrict_to_origin`], the header is added only to requests
//! whose absolute URI has the configured origin (scheme, host, effective port), so a
//! request built for another host never carries the token. The HTTP transport always
//! restricts the token to its endpoint's origin.
//!
//! # Example
//!
//! ```
//! use std::convert::Infallible;
//!
//! use http::{Request, Response};
//! use secrecy::SecretString;
//! use smthrs_mcp::layer::BearerAuthLayer;
//! use tower::{service_fn, ServiceBuilder, ServiceExt};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
//! let token = SecretString::from("s3cr3t");
//! let origin: http::Uri = "https://mcp.example.com/mcp".parse()?;
//! let layer = BearerAuthLayer::new(&token)?.restrict_to_origin(&origin)?;
//!
//! let service = ServiceBuilder::new().layer(layer).service(service_fn(
//!     |req: Request<()>| async move {
//!         let has_token = req.headers().contains_key(http::header::AUTHORIZATION);
//!         Ok::<_, Infallible>(Response::new(has_token))
//!     },
//! ));
//!
//! let same = Request::get("https://mcp.example.com/other").body(())?;
//! assert!(*service.clone().oneshot(same).await?.body());
//! let other = Request::get("https://elsewhere.example.com/mcp").body(())?;
//! assert!(!*service.oneshot(other).await?.body());
//! # Ok(())
//! # }
//! ```

use std::fmt;
use std::task::{Context, Poll};

use http::Request;
use http::header::{AUTHORIZATION, HeaderValue};
use secrecy::zeroize::Zeroizing;
use secrecy::{ExposeSecret, SecretString};
use tower::{Layer, Service};

use crate::error::{Error, Result};
use crate::http::origin_of;

/// The origin a token is restricted to: scheme, lower-cased host, effective port.
type Origin = (&'static str, String, u16);

/// Layer that adds a sensitive `Authorization: Bearer <token>` header.
///
/// Configuration only; cheap to clone. See the [module docs](self).
#[derive(Clone)]
pub struct BearerAuthLayer {
    value: HeaderValue,
    origin: Option<Origin>,
}

impl BearerAuthLayer {
    /// Builds the layer from a token.
    ///
    /// Fails with `invalid_config` when the token is empty or is not a valid HTTP
    /// header value (control characters, non-visible bytes). The message never
    /// contains the token. By default the header is added to every request; see
    /// [`BearerAuthLayer::restrict_to_origin`].
    pub fn new(token: &SecretString) -> Result<Self> {
        let token = token.expose_secret();
        if token.is_empty() {
            return Err(Error::config("the bearer token is empty"));
        }
        let text = Zeroizing::new(format!("Bearer {token}"));
        let mut value = HeaderValue::from_str(&text).map_err(|_| {
            Error::config("the bearer token contains characters not allowed in an HTTP header")
        })?;
        value.set_sensitive(true);
        Ok(BearerAuthLayer {
            value,
            origin: None,
        })
    }

    /// Adds the header only to requests whose URI has the same origin as `uri`
    /// (scheme, host, effective port). Requests for any other origin, and requests
    /// with a relative URI, pass through without the token.
    ///
    /// Fails with `invalid_config` when `uri` is not an absolute `http`/`https` URI.
    pub fn restrict_to_origin(mut self, uri: &http::Uri) -> Result<Self> {
        let origin = origin_of(uri).ok_or_else(|| {
            Error::config("a bearer token origin must be an absolute http or https URL")
        })?;
        self.origin = Some(origin);
        Ok(self)
    }
}

impl<S> Layer<S> for BearerAuthLayer {
    type Service = BearerAuth<S>;

    fn layer(&self, inner: S) -> Self::Service {
        BearerAuth {
            inner,
            value: self.value.clone(),
            origin: self.origin.clone(),
        }
    }
}

impl fmt::Debug for BearerAuthLayer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BearerAuthLayer")
            .field("token", &"[REDACTED]")
            .field("origin", &DebugOrigin(&self.origin))
            .finish()
    }
}

/// Service that adds a sensitive bearer `Authorization` header, built by
/// [`BearerAuthLayer`].
#[derive(Clone)]
pub struct BearerAuth<S> {
    inner: S,
    value: HeaderValue,
    origin: Option<Origin>,
}

impl<S> BearerAuth<S> {
    /// Wraps `inner`, adding the token to every request (see
    /// [`BearerAuthLayer::new`] for the errors).
    pub fn new(inner: S, token: &SecretString) -> Result<Self> {
        Ok(BearerAuthLayer::new(token)?.layer(inner))
    }

    fn applies_to(&self, uri: &http::Uri) -> bool {
        match &self.origin {
            None => true,
            Some(origin) => origin_of(uri).as_ref() == Some(origin),
        }
    }
}

inner_accessors!(BearerAuth);

impl<S, B> Service<Request<B>> for BearerAuth<S>
where
    S: Service<Request<B>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: Request<B>) -> Self::Future {
        if self.applies_to(req.uri()) {
            req.headers_mut().insert(AUTHORIZATION, self.value.clone());
        }
        self.inner.call(req)
    }
}

impl<S: fmt::Debug> fmt::Debug for BearerAuth<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BearerAuth")
            .field("inner", &self.inner)
            .field("token", &"[REDACTED]")
            .field("origin", &DebugOrigin(&self.origin))
            .finish()
    }
}

struct DebugOrigin<'a>(&'a Option<Origin>);

impl fmt::Debug for DebugOrigin<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            None => f.write_str("any"),
            Some((scheme, host, port)) => write!(f, "{scheme}://{host}:{port}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::convert::Infallible;
    use tower::{ServiceExt, service_fn};

    fn echo_auth()
    -> impl Service<
        Request<()>,
        Response = Option<HeaderValue>,
        Error = Infallible,
        Future = impl Send,
    > + Clone {
        service_fn(|req: Request<()>| async move {
            Ok::<_, Infallible>(req.headers().get(AUTHORIZATION).cloned())
        })
    }

    #[tokio::test]
    async fn adds_a_sensitive_header() {
        let token = SecretString::from("abc.def");
        let svc = BearerAuth::new(echo_auth(), &token).unwrap();
        let req = Request::get("http://x/").body(()).unwrap();
        let value = svc.oneshot(req).await.unwrap().unwrap();
        assert_eq!(value.as_bytes(), b"Bearer abc.def");
        assert!(value.is_sensitive());
        assert_eq!(format!("{value:?}"), "Sensitive");
    }

    #[tokio::test]
    async fn restricted_to_its_origin() {
        let token = SecretString::from("tok");
        let origin: http::Uri = "http://127.0.0.1:8080/mcp".parse().unwrap();
        let layer = BearerAuthLayer::new(&token)
            .unwrap()
            .restrict_to_origin(&origin)
            .unwrap();
        let svc = layer.layer(echo_auth());
        for (uri, expected) in [
            ("http://127.0.0.1:8080/other", true),
            ("http://127.0.0.1:8081/mcp", false),
            ("https://127.0.0.1:8080/mcp", false),
            ("http://localhost:8080/mcp", false),
            ("/mcp", false),
        ] {
            let req = Request::get(uri).body(()).unwrap();
            let got = svc.clone().oneshot(req).await.unwrap();
            assert_eq!(got.is_some(), expected, "{uri}");
        }
    }

    #[test]
    fn bad_tokens_are_config_errors_without_the_value() {
        let err = BearerAuthLayer::new(&SecretString::from("")).unwrap_err();
        assert_eq!(err.kind(), crate::error::ErrorKind::InvalidConfig);
        let err = BearerAuthLayer::new(&SecretString::from("line\nbreak-secret")).unwrap_err();
        assert_eq!(err.kind(), crate::error::ErrorKind::InvalidConfig);
        assert!(!err.message().contains("secret"));
        let relative: http::Uri = "/mcp".parse().unwrap();
        let err = BearerAuthLayer::new(&SecretString::from("t"))
            .unwrap()
            .restrict_to_origin(&relative)
            .unwrap_err();
        assert_eq!(err.kind(), crate::error::ErrorKind::InvalidConfig);
    }

    #[test]
    fn debug_never_shows_the_token() {
        let layer = BearerAuthLayer::new(&SecretString::from("hunter2")).unwrap();
        let text = format!("{layer:?}");
        assert!(!text.contains("hunter2"), "{text}");
        let svc = layer.layer(());
        let text = format!("{svc:?}");
        assert!(!text.contains("hunter2"), "{text}");
    }
}
