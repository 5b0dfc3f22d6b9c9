//! OAuth 2.1 for one MCP server: the token on every request, and the chain run on
//! a `401` (or a `403 insufficient_scope`).
//!
//! [`OAuthLayer`] takes the place of [`BearerAuthLayer`](super::BearerAuthLayer) in
//! the HTTP stack (an entry uses one or the other). On each request to the
//! server's origin it adds `Authorization: Bearer <token>` (marked sensitive) when
//! it holds a token, refreshing it first when it is about to expire. When the
//! response is `401`, or `403` with `error="insufficient_scope"`, it runs the
//! chain of [`crate::auth`] (discovery, registration, authorization, token; or a
//! refresh) and retries the request **once** with the new token: a second refusal
//! is an `unauthorized` error. Requests bodies are `Full<Bytes>`, so the retry
//! sends the same bytes.
//!
//! A token bound to a key (DPoP) goes with a fresh proof on every request, made
//! by the token's `RequestProof` for the request's method and URI. A response
//! that asks for a proof nonce (the chain's `observe` says so) is retried
//! **once** with the same token and a fresh proof, without running the chain.
//!
//! The chain's own requests do not go through the stack below this layer: they
//! go through a stack of their own (their egress grants, the address policy, no
//! session headers) over the transport's one HTTP client.
//!
//! The layer knows the chain only through `Authorization`, which the auth
//! module's chain implements: this module names no type of the auth module.
//!
//! # Example
//!
//! The transport installs the layer; [`HttpTransportBuilder::oauth`] is the way
//! to use it:
//!
//! ```no_run
//! use smthrs_mcp::auth::OAuth;
//! use smthrs_mcp::transport::http::HttpTransport;
//!
//! # fn main() -> smthrs_mcp::Result<()> {
//! let transport = HttpTransport::builder("tracker", "https://mcp.tracker.example/mcp")
//!     .oauth(OAuth::new().login_hint("run `smthrs-mcp login tracker`"))
//!     .build()?;
//! # let _ = transport;
//! # Ok(())
//! # }
//! ```
//!
//! [`HttpTransportBuilder::oauth`]: crate::transport::http::HttpTransportBuilder::oauth

use std::fmt;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures_util::future::BoxFuture;
use http::header::{AUTHORIZATION, HeaderName, HeaderValue};
use http::{HeaderMap, Method, StatusCode, Uri};
use tower::{Layer, Service, ServiceExt};

use super::BoxError;
use crate::diagnostics::Diagnostics;
use crate::error::{Error, ErrorKind};
use crate::http::{HttpRequest, HttpResponse, origin_of};

/// The token a request is sent with, and which generation of the chain's
/// tokens it is (a challenge answering an older one need not run the chain).
#[derive(Clone)]
pub(crate) struct Token {
    /// `Bearer <token>` (or another scheme), marked sensitive.
    pub(crate) header: HeaderValue,
    /// Counts the tokens the chain obtained.
    pub(crate) generation: u64,
    /// Proves possession of the token's key on each request, when the token is
    /// bound to one.
    pub(crate) proof: Option<Arc<dyn RequestProof>>,
}

/// Makes the header that proves, for one request, possession of the key a token
/// is bound to (the auth module's DPoP proofs implement it).
pub(crate) trait RequestProof: Send + Sync {
    /// A fresh header for `method` on `uri`: never reused.
    fn header(&self, method: &Method, uri: &Uri) -> Result<(HeaderName, HeaderValue), Error>;
}

/// What the layer asks of an OAuth chain (the auth module's chain implements it).
pub(crate) trait Authorization: Send + Sync + fmt::Debug {
    /// The configured server name, for messages.
    fn server_name(&self) -> &str;

    /// The token for the next request (refreshed first when it is about to
    /// expire), or `None` before any was obtained.
    fn token<'a>(
        &'a self,
        diagnostics: &'a Diagnostics,
    ) -> BoxFuture<'a, Result<Option<Token>, Error>>;

    /// Sees every response from the server's origin to a request for `uri`
    /// (`proved`: it carried a proof). True when the response asks for the same
    /// request again with a fresh proof (a proof nonce challenge), which the
    /// layer does once, without running the chain.
    fn observe(
        &self,
        uri: &Uri,
        status: StatusCode,
        headers: &HeaderMap,
        proved: bool,
        diagnostics: &Diagnostics,
    ) -> Result<bool, Error>;

    /// True when a response is a challenge the chain answers: `401`, or `403`
    /// with `error="insufficient_scope"`.
    fn is_challenge(&self, status: StatusCode, headers: &HeaderMap) -> bool;

    /// Runs the chain for a challenge to a request sent with token generation
    /// `sent`; the token to retry with.
    fn on_challenge<'a>(
        &'a self,
        status: StatusCode,
        headers: &'a HeaderMap,
        sent: Option<u64>,
        diagnostics: &'a Diagnostics,
    ) -> BoxFuture<'a, Result<Token, Error>>;
}

/// Puts `token` on `req`: its `Authorization` and, when bound to a key, a fresh
/// proof; without a token, neither.
fn apply(req: &mut HttpRequest, token: Option<&Token>) -> Result<(), Error> {
    let Some(token) = token else {
        req.headers_mut().remove(AUTHORIZATION);
        return Ok(());
    };
    req.headers_mut()
        .insert(AUTHORIZATION, token.header.clone());
    if let Some(proof) = &token.proof {
        let (name, value) = proof.header(req.method(), req.uri())?;
        req.headers_mut().insert(name, value);
    }
    Ok(())
}

/// The origin a token is for: scheme, lower-cased host, effective port.
type Origin = (&'static str, String, u16);

/// Layer running the OAuth chain for one server. Cheap to clone.
#[derive(Clone)]
pub struct OAuthLayer {
    chain: Arc<dyn Authorization>,
    origin: Option<Arc<Origin>>,
    diagnostics: Diagnostics,
}

impl OAuthLayer {
    /// The layer for `chain`, whose token is sent only to `endpoint`'s origin.
    pub(crate) fn new(chain: Arc<dyn Authorization>, endpoint: &http::Uri) -> Self {
        OAuthLayer {
            chain,
            origin: origin_of(endpoint).map(Arc::new),
            diagnostics: Diagnostics::none(),
        }
    }

    /// The same layer, reporting the chain's steps to `diagnostics` (the
    /// session's observer; the transport sets it per session).
    pub(crate) fn with_diagnostics(&self, diagnostics: Diagnostics) -> Self {
        OAuthLayer {
            chain: self.chain.clone(),
            origin: self.origin.clone(),
            diagnostics,
        }
    }
}

impl fmt::Debug for OAuthLayer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuthLayer")
            .field("chain", &self.chain)
            .finish()
    }
}

impl<S> Layer<S> for OAuthLayer {
    type Service = OAuthService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        OAuthService {
            inner,
            chain: self.chain.clone(),
            origin: self.origin.clone(),
            diagnostics: self.diagnostics.clone(),
        }
    }
}

/// Service built by [`OAuthLayer`].
#[derive(Clone)]
pub struct OAuthService<S> {
    inner: S,
    chain: Arc<dyn Authorization>,
    origin: Option<Arc<Origin>>,
    diagnostics: Diagnostics,
}

impl<S> fmt::Debug for OAuthService<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuthService")
            .field("chain", &self.chain)
            .finish()
    }
}

impl<S> Service<HttpRequest> for OAuthService<S>
where
    S: Service<HttpRequest, Response = HttpResponse, Error = BoxError> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = HttpResponse;
    type Error = BoxError;
    type Future = BoxFuture<'static, Result<HttpResponse, BoxError>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: HttpRequest) -> Self::Future {
        let chain = self.chain.clone();
        let diagnostics = self.diagnostics.clone();
        let applies = self
            .origin
            .as_deref()
            .is_some_and(|origin| origin_of(req.uri()).as_ref() == Some(origin));
        // The ready service serves the first attempt; a clone serves the retry.
        let clone = self.inner.clone();
        let mut first = std::mem::replace(&mut self.inner, clone);
        let retry_service = self.inner.clone();
        Box::pin(async move {
            if !applies {
                req.headers_mut().remove(AUTHORIZATION);
                return first.call(req).await;
            }
            let boxed = |e: Error| Box::new(e) as BoxError;
            let current = chain.token(&diagnostics).await.map_err(boxed)?;
            let sent = current.as_ref().map(|c| c.generation);
            let template = req.clone();
            apply(&mut req, current.as_ref()).map_err(boxed)?;
            let mut response = first.call(req).await?;
            let mut token = current;
            // At most one proof nonce retry and one run of the chain.
            let mut nonce_retried = false;
            let mut chain_ran = false;
            loop {
                let proved = token.as_ref().is_some_and(|t| t.proof.is_some());
                let again = chain
                    .observe(
                        template.uri(),
                        response.status(),
                        response.headers(),
                        proved,
                        &diagnostics,
                    )
                    .map_err(boxed)?;
                if again && nonce_retried {
                    // A second nonce challenge: never answered by authorizing anew.
                    return Err(boxed(Error::new(
                        ErrorKind::Unauthorized,
                        format!(
                            "server \"{}\" asked for a new proof nonce again after a retry with its nonce",
                            chain.server_name()
                        ),
                    )));
                }
                if again {
                    nonce_retried = true;
                    drop(response);
                    let mut next = template.clone();
                    apply(&mut next, token.as_ref()).map_err(boxed)?;
                    response = retry_service.clone().oneshot(next).await?;
                    continue;
                }
                if chain_ran {
                    break;
                }
                if !chain.is_challenge(response.status(), response.headers()) {
                    return Ok(response);
                }
                let status = response.status();
                let headers = response.headers().clone();
                // The refusal's body is never read.
                drop(response);
                let next = chain
                    .on_challenge(status, &headers, sent, &diagnostics)
                    .await
                    .map_err(boxed)?;
                chain_ran = true;
                let mut retry = template.clone();
                apply(&mut retry, Some(&next)).map_err(boxed)?;
                token = Some(next);
                response = retry_service.clone().oneshot(retry).await?;
            }
            if matches!(
                response.status(),
                StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN
            ) {
                return Err(Box::new(Error::new(
                    ErrorKind::Unauthorized,
                    format!(
                        "server \"{}\" refused the request after authorization: HTTP {}",
                        chain.server_name(),
                        response.status().as_u16()
                    ),
                )) as BoxError);
            }
            Ok(response)
        })
    }
}
