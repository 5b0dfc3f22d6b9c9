//! The MCP header/session layer: the innermost layer of the stack.
//!
//! On every request it sets the headers Streamable HTTP requires:
//!
//! - `Accept: application/json, text/event-stream` on `POST`, `Accept:
//!   text/event-stream` on `GET` (unless the request already has an `Accept`);
//! - `Content-Type: application/json` on `POST`;
//! - `Mcp-Session-Id` once a session id is known (marked sensitive: 2025-11-25 asks
//!   clients to treat it as a secret), on legacy requests only: a 2026-07-28
//!   request ([`is_stateless`]: it carries `Mcp-Method`) carries none, and a
//!   session id answering it is never captured.
//!
//! (`MCP-Protocol-Version` and the 2026-07-28 headers come with each frame:
//! [`super::headers`].)
//!
//! On the way back it captures the session id from the first successful response
//! carrying one, answering a request that carried none (the `initialize` exchange,
//! or the re-initialisation after a session expired). An id that is not 1 or more
//! visible ASCII characters (0x21-0x7E) is refused with `protocol_error` and never
//! echoed. Every response that is not a success gets a [`SentSessionId`] extension
//! recording which id its request carried, so the driver can tell a `404` to a
//! request with a session id.

use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use http::Method;
use http::header::{ACCEPT, CONTENT_TYPE, HeaderName, HeaderValue};
use tower::{Layer, Service};

use super::headers::is_stateless;
use super::{HttpRequest, HttpResponse};
use crate::error::{Error, Result};
use crate::http::BoxError;

/// `Mcp-Session-Id`.
pub(crate) static MCP_SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");

const ACCEPT_POST: HeaderValue = HeaderValue::from_static("application/json, text/event-stream");
const ACCEPT_SSE: HeaderValue = HeaderValue::from_static("text/event-stream");
const JSON: HeaderValue = HeaderValue::from_static("application/json");

/// The session id of one open transport (legacy era).
#[derive(Default)]
pub(crate) struct SessionState {
    id: Mutex<Option<HeaderValue>>,
}

impl SessionState {
    /// The session id, if one was captured.
    pub(crate) fn id(&self) -> Option<HeaderValue> {
        self.id
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Forgets the session id if it is still `sent`: a later
    /// session captured meanwhile is kept.
    ///
    /// Returns `false` when the 404 is stale: a newer session (another id) is
    /// already in use, so this one answer must not end it.
    pub(crate) fn expire(&self, sent: &HeaderValue) -> bool {
        let mut id = self.id.lock().unwrap_or_else(PoisonError::into_inner);
        match id.as_ref() {
            Some(current) if current == sent => {
                *id = None;
                true
            }
            Some(_) => false,
            // Already forgotten by an earlier 404 of the same session: the engine is
            // re-initialising and queues this frame with the first.
            None => true,
        }
    }

    /// Captures `value` as the session id unless one is already known.
    fn capture(&self, value: &HeaderValue) -> Result<()> {
        if !is_visible_ascii(value.as_bytes()) {
            return Err(Error::protocol(
                "the server sent an Mcp-Session-Id that is not visible ASCII (0x21-0x7E)",
            ));
        }
        let mut id = self.id.lock().unwrap_or_else(PoisonError::into_inner);
        if id.is_none() {
            let mut value = value.clone();
            value.set_sensitive(true);
            *id = Some(value);
        }
        Ok(())
    }
}

impl std::fmt::Debug for SessionState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionState")
            .field("id", &self.id().map(|_| "[REDACTED]"))
            .finish()
    }
}

fn is_visible_ascii(bytes: &[u8]) -> bool {
    !bytes.is_empty() && bytes.iter().all(|b| (0x21..=0x7e).contains(b))
}

/// Response extension on a response that is not a success: the session id the
/// request carried (`None` when it carried none).
#[derive(Clone, Debug)]
pub(crate) struct SentSessionId(pub(crate) Option<HeaderValue>);

/// Layer adding the MCP headers and capturing the session id.
#[derive(Clone, Debug)]
pub(crate) struct McpSessionLayer {
    state: Arc<SessionState>,
}

impl McpSessionLayer {
    pub(crate) fn new(state: Arc<SessionState>) -> Self {
        McpSessionLayer { state }
    }
}

impl<S> Layer<S> for McpSessionLayer {
    type Service = McpSession<S>;

    fn layer(&self, inner: S) -> Self::Service {
        McpSession {
            inner,
            state: self.state.clone(),
        }
    }
}

/// Service built by [`McpSessionLayer`].
#[derive(Clone, Debug)]
pub(crate) struct McpSession<S> {
    inner: S,
    state: Arc<SessionState>,
}

impl<S> Service<HttpRequest> for McpSession<S>
where
    S: Service<HttpRequest, Response = HttpResponse, Error = BoxError>,
{
    type Response = HttpResponse;
    type Error = BoxError;
    type Future = SessionFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<std::result::Result<(), BoxError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: HttpRequest) -> Self::Future {
        let method = req.method().clone();
        let stateless = is_stateless(req.headers());
        let sent = if stateless { None } else { self.state.id() };
        let headers = req.headers_mut();
        if method == Method::POST {
            headers.entry(ACCEPT).or_insert(ACCEPT_POST);
            headers.insert(CONTENT_TYPE, JSON);
        } else if method == Method::GET {
            headers.entry(ACCEPT).or_insert(ACCEPT_SSE);
        }
        match &sent {
            Some(id) => {
                headers.insert(MCP_SESSION_ID.clone(), id.clone());
            }
            None => {
                headers.remove(&MCP_SESSION_ID);
            }
        }
        SessionFuture {
            future: self.inner.call(req),
            state: self.state.clone(),
            sent: Some(sent),
            stateless,
        }
    }
}

pin_project_lite::pin_project! {
    /// The response future of [`McpSession`] (not boxed: the stack's futures are
    /// allocated once, by the box above the whole stack).
    pub(crate) struct SessionFuture<F> {
        #[pin]
        future: F,
        state: Arc<SessionState>,
        // The session id the request carried (taken when the response arrives).
        sent: Option<Option<HeaderValue>>,
        stateless: bool,
    }
}

impl<F> Future for SessionFuture<F>
where
    F: Future<Output = std::result::Result<HttpResponse, BoxError>>,
{
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let mut response = std::task::ready!(this.future.poll(cx))?;
        let sent = this.sent.take().flatten();
        if sent.is_none()
            && !*this.stateless
            && response.status().is_success()
            && let Some(value) = response.headers().get(&MCP_SESSION_ID)
        {
            this.state
                .capture(value)
                .map_err(|e| Box::new(e) as BoxError)?;
        }
        // The session id is a secret (2025-11-25): user layers above this one
        // (tracing, logging) must not print it.
        if let Some(value) = response.headers_mut().get_mut(&MCP_SESSION_ID) {
            value.set_sensitive(true);
        }
        // Only a failed response is told apart by the id its request carried (a
        // `404` ends that session, not a newer one); an extension is three
        // allocations, not spent on every success.
        if !response.status().is_success() {
            response.extensions_mut().insert(SentSessionId(sent));
        }
        Poll::Ready(Ok(response))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_ids_must_be_visible_ascii() {
        let state = SessionState::default();
        for bad in [&b""[..], b"a b", b"tab\there", b"caf\xc3\xa9"] {
            let value = HeaderValue::from_bytes(bad).unwrap();
            let err = state.capture(&value).unwrap_err();
            assert_eq!(err.kind(), crate::error::ErrorKind::ProtocolError);
        }
        assert!(state.id().is_none());
        state
            .capture(&HeaderValue::from_static("abc-123_~!"))
            .unwrap();
        state.capture(&HeaderValue::from_static("second")).unwrap();
        assert_eq!(state.id().unwrap(), "abc-123_~!");
        assert!(state.id().unwrap().is_sensitive());
        assert!(!format!("{state:?}").contains("abc"));
    }

    #[test]
    fn expire_only_forgets_the_id_that_failed() {
        let state = SessionState::default();
        state.capture(&HeaderValue::from_static("one")).unwrap();
        state.expire(&HeaderValue::from_static("other"));
        assert!(state.id().is_some());
        state.expire(&HeaderValue::from_static("one"));
        assert!(state.id().is_none());
    }
}
