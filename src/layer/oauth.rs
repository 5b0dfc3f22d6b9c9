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
//! The chain's own requests do not go through the stack below this layer: they
//! have their own client (egress policy, address policy, no session headers).
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
use http::StatusCode;
use http::header::AUTHORIZATION;
use tower::{Layer, Service, ServiceExt};

use crate::auth::chain::Chain;
use crate::diagnostics::Diagnostics;
use crate::error::{Error, ErrorKind};
use crate::layer::BoxError;
use crate::transport::http::{HttpRequest, HttpResponse};

/// Layer running the OAuth chain for one server. Cheap to clone.
#[derive(Clone)]
pub struct OAuthLayer {
    chain: Arc<Chain>,
    diagnostics: Diagnostics,
}

impl OAuthLayer {
    pub(crate) fn new(chain: Arc<Chain>) -> Self {
        OAuthLayer {
            chain,
            diagnostics: Diagnostics::none(),
        }
    }

    /// The same layer, reporting the chain's steps to `diagnostics` (the
    /// session's observer; the transport sets it per session).
    pub(crate) fn with_diagnostics(&self, diagnostics: Diagnostics) -> Self {
        OAuthLayer {
            chain: self.chain.clone(),
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
            diagnostics: self.diagnostics.clone(),
        }
    }
}

/// Service built by [`OAuthLayer`].
#[derive(Clone)]
pub struct OAuthService<S> {
    inner: S,
    chain: Arc<Chain>,
    diagnostics: Diagnostics,
}

impl<S> fmt::Debug for OAuthService<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuthService")
            .field("chain", &self.chain)
            .finish()
    }
}

fn applies(chain: &Chain, req: &HttpRequest) -> bool {
    match (
        crate::layer::origin_of(req.uri()),
        chain.mcp_url().as_str().parse::<http::Uri>(),
    ) {
        (Some(a), Ok(b)) => crate::layer::origin_of(&b).as_ref() == Some(&a),
        _ => false,
    }
}

fn is_challenge(response: &HttpResponse) -> bool {
    match response.status() {
        StatusCode::UNAUTHORIZED => true,
        StatusCode::FORBIDDEN => {
            crate::auth::challenge::BearerChallenge::from_headers(response.headers())
                .error
                .as_deref()
                == Some("insufficient_scope")
        }
        _ => false,
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
        // The ready service serves the first attempt; a clone serves the retry.
        let clone = self.inner.clone();
        let mut first = std::mem::replace(&mut self.inner, clone);
        let retry_service = self.inner.clone();
        Box::pin(async move {
            if !applies(&chain, &req) {
                req.headers_mut().remove(AUTHORIZATION);
                return first.call(req).await;
            }
            let current = chain
                .token_for_request(&diagnostics)
                .await
                .map_err(|e| Box::new(e) as BoxError)?;
            let sent = current.as_ref().map(|c| c.generation);
            let retry = req.clone();
            match &current {
                Some(c) => {
                    req.headers_mut().insert(AUTHORIZATION, c.header.clone());
                }
                None => {
                    req.headers_mut().remove(AUTHORIZATION);
                }
            }
            let response = first.call(req).await?;
            if !is_challenge(&response) {
                return Ok(response);
            }
            let status = response.status();
            let headers = response.headers().clone();
            // The refusal's body is never read.
            drop(response);
            let next = chain
                .on_challenge(status, &headers, sent, &diagnostics)
                .await
                .map_err(|e| Box::new(e) as BoxError)?;
            let mut retry = retry;
            retry
                .headers_mut()
                .insert(AUTHORIZATION, next.header.clone());
            let response = retry_service.oneshot(retry).await?;
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
