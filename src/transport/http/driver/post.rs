//! One POST: its headers, its status, and the JSON body or event stream answering
//! it. A JSON body answering a request is returned to whoever drives the POST
//! (the caller's task, or a background task that delivers it).

use std::sync::{Arc, PoisonError};

use bytes::Bytes;
use http::{Method, Request, StatusCode};
use http_body_util::Full;
use tokio::sync::OwnedSemaphorePermit;

use super::super::SETTLED_STREAM_GRACE;
use super::super::headers;
use super::super::session_id::SentSessionId;
use super::{HttpSession, Media, StackResult, media_type};
use crate::error::{Detail, Error};
use crate::http::HttpRequest;
use crate::http::body::{self, BodyError};
use crate::transport::{Detach, Exchange, InboundEvent, OutboundFrame, Outlet, RequestHandle};

impl HttpSession {
    /// Runs one POST to completion (or until its request settled and the grace
    /// period passed, or the request timeout for frames without a request).
    /// Returns the JSON body answering a request, for whoever drives the POST to
    /// route (see [`HttpSession::post_exchange`]).
    pub(super) async fn post(
        self: Arc<Self>,
        frame: OutboundFrame,
        permit: OwnedSemaphorePermit,
    ) -> Option<Bytes> {
        match frame.request.clone() {
            Some(handle) => {
                let stateless = frame.meta.http.stateless;
                // Pinned in place: `until_settled` holds a reference, so the
                // exchange's (large) state is not stored twice.
                let exchange = self.clone().post_exchange(frame, permit, None);
                tokio::pin!(exchange);
                self.until_settled(exchange, &handle, stateless).await
            }
            None => {
                let _ = tokio::time::timeout(
                    self.request_timeout,
                    self.clone().post_exchange(frame, permit, None),
                )
                .await;
                None
            }
        }
    }

    /// Runs a request's exchange until it ends, or until the request settled and
    /// the grace period for the rest of its stream passed. 2026-07-28: an abandoned
    /// request's exchange is cut at once (that is its cancellation; no
    /// notification is sent).
    pub(super) async fn until_settled(
        &self,
        exchange: impl Future<Output = Option<Bytes>> + Unpin,
        handle: &RequestHandle,
        stateless: bool,
    ) -> Option<Bytes> {
        tokio::select! {
            body = exchange => body,
            _ = async {
                handle.done().await;
                if !(stateless && handle.is_abandoned()) {
                    tokio::time::sleep(SETTLED_STREAM_GRACE).await;
                }
            } => None,
        }
    }

    /// Runs `rest` (part of a request's exchange) in a task of its own, bounded
    /// as a spawned POST is: until the transport ends, and for a request until
    /// [`HttpSession::until_settled`]; a JSON body it ends with is delivered through the
    /// source.
    fn spawn_rest(
        self: &Arc<Self>,
        rest: impl Future<Output = Option<Bytes>> + Send + 'static,
        request: Option<RequestHandle>,
        stateless: bool,
    ) {
        let Some(runtime) = self.runtime.clone() else {
            return;
        };
        let task = self.clone();
        drop(runtime.spawn(async move {
            let work = task.work.clone();
            tokio::pin!(rest);
            let body = tokio::select! {
                _ = work.cancelled() => None,
                body = async {
                    match &request {
                        Some(handle) => task.until_settled(&mut rest, handle, stateless).await,
                        None => (&mut rest).await,
                    }
                } => body,
            };
            if let Some(frame) = body {
                task.deliver(InboundEvent::Frame(frame)).await;
            }
        }));
    }

    /// A request's POST for its caller to drive ([`TrySend::Exchange`](crate::transport::TrySend::Exchange)): while the
    /// caller drives it, the caller waits for the reply itself, so the exchange
    /// needs no watch on the request; if the caller stops early, the rest runs in
    /// a task under [`HttpSession::until_settled`], as a spawned POST would.
    pub(super) fn driven(
        self: &Arc<Self>,
        frame: OutboundFrame,
        permit: OwnedSemaphorePermit,
    ) -> Exchange {
        let handle = frame.request.clone();
        let stateless = frame.meta.http.stateless;
        let outlet = Arc::new(Outlet::default());
        // No watch on `work` here: the transport ending settles the caller's
        // request (the source reports it), so the caller stops driving and the
        // rest goes to `spawn_rest`, which does watch it.
        let post = self
            .clone()
            .post_exchange(frame, permit, Some(outlet.clone()));
        let shared = self.clone();
        let detach: Detach = Box::new(move |rest| shared.spawn_rest(rest, handle, stateless));
        match &self.runtime {
            // Entered only when the caller is on another runtime (or on none).
            Some(runtime)
                if tokio::runtime::Handle::try_current()
                    .map_or(true, |current| current.id() != runtime.id()) =>
            {
                Exchange::with_outlet(
                    Box::pin(InRuntime {
                        runtime: runtime.clone(),
                        inner: post,
                    }),
                    detach,
                    outlet,
                )
            }
            _ => Exchange::with_outlet(Box::pin(post), detach, outlet),
        }
    }

    /// [`HttpSession::post`] until the transport ends.
    pub(super) async fn post_until_end(
        self: Arc<Self>,
        frame: OutboundFrame,
        permit: OwnedSemaphorePermit,
    ) -> Option<Bytes> {
        let work = self.work.clone();
        tokio::select! {
            _ = work.cancelled() => None,
            body = self.post(frame, permit) => body,
        }
    }

    /// The permit (one of `queueCapacity`) is held until the response head arrives:
    /// a response stream that stays open does not block later POSTs (such as the
    /// reply to a server request that arrived on that very stream).
    ///
    /// A request answered with a JSON body returns that body (one frame, bounded
    /// by `maxFrameBytes`) instead of delivering it: the task driving the POST
    /// routes it. Everything else (event streams, errors, session expiry) goes
    /// through the source.
    ///
    /// `outlet`: a caller drives this POST ([`HttpSession::driven`]); the events of
    /// a stream answering it are handed to that caller to route (through the
    /// source once the caller stopped driving it).
    ///
    /// A plain function returning an `async move` block, and the request built
    /// by another ([`HttpSession::post_request`]): an `async fn` would store its
    /// arguments twice and keep the (moved) request's slot for its whole life,
    /// and this future is boxed once per request.
    #[expect(
        clippy::manual_async_fn,
        reason = "an `async fn` stores its arguments twice (see above)"
    )]
    pub(super) fn post_exchange(
        self: Arc<Self>,
        frame: OutboundFrame,
        permit: OwnedSemaphorePermit,
        outlet: Option<Arc<Outlet>>,
    ) -> impl Future<Output = Option<Bytes>> + Send + 'static {
        async move {
            let sending = match self.post_request(&frame) {
                Ok(req) => self.call_stack(req),
                Err(error) => {
                    match &frame.request {
                        Some(handle) => handle.fail(error),
                        None => self.terminate(error),
                    }
                    return None;
                }
            };
            let response = sending.await;
            drop(permit);
            self.post_response(response, &frame, outlet.as_deref())
                .await
        }
    }

    /// The POST carrying `frame`.
    fn post_request(&self, frame: &OutboundFrame) -> Result<HttpRequest, Error> {
        // Built in place rather than by `Request::post` (whose builder moves the
        // request's parts through a `Result` at every step).
        let mut req = Request::new(Full::new(frame.bytes.clone()));
        *req.method_mut() = Method::POST;
        *req.uri_mut() = self.endpoint.clone();
        *req.headers_mut() = headers::map_for(&frame.meta, self.layered);
        headers::apply(&mut req, &frame.meta)?;
        if frame.meta.http.completes_handshake {
            self.remember_legacy_version(&frame.meta.http);
        }
        Ok(req)
    }

    /// What the answer to a POST means: see [`HttpSession::post_exchange`].
    async fn post_response(
        self: &Arc<Self>,
        response: StackResult,
        frame: &OutboundFrame,
        outlet: Option<&Outlet>,
    ) -> Option<Bytes> {
        let response = match response {
            Ok(response) => response,
            Err(error) => {
                let error = self.classify(&error);
                self.terminate(error);
                return None;
            }
        };
        let status = response.status();
        let sent = response
            .extensions()
            .get::<SentSessionId>()
            .and_then(|s| s.0.clone());
        if !status.is_success() {
            match status.as_u16() {
                401 | 403 => self.terminate(self.unauthorized(status)),
                404 if sent.is_some() => {
                    // A 404 for a session already forgotten (another POST's 404
                    // expired it) is stale: the engine re-sends the frame with
                    // the new session rather than counting a second expiry.
                    let stale = !self.expire_session(sent.as_ref().expect("checked"));
                    // The rare paths are boxed, so that every POST's future
                    // does not carry their state.
                    Box::pin(self.deliver(InboundEvent::StateLost {
                        refused: frame.clone(),
                        stale,
                    }))
                    .await;
                }
                400 | 404 if frame.meta.http.stateless && frame.request.is_some() => {
                    // 2026-07-28: the body may be the JSON-RPC error answering the
                    // request (-32022, -32601, ...): read (capped) and routed; a
                    // request it did not settle fails with the status.
                    Box::pin(self.error_body(response, frame)).await;
                }
                _ => {
                    if let Some(handle) = &frame.request {
                        let error = self.status_error(status);
                        // 429/503 with `Retry-After`: the wait, for the callers
                        // that retry (a task's polls).
                        let error = match retry_after(status, response.headers()) {
                            Some(after) => {
                                error.with_detail(Detail::Throttled(status.as_u16(), after))
                            }
                            None => error,
                        };
                        handle.fail(error);
                    }
                }
            }
            return None;
        }
        if frame.meta.http.completes_handshake && frame.meta.http.protocol_version.is_some() {
            let opened = self.start_standalone();
            *self
                .standalone_opening
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = Some(opened);
        }
        if status == StatusCode::ACCEPTED || status == StatusCode::NO_CONTENT {
            // Success for a notification or a reply; a request answered this way
            // will never get its reply, so fail it now instead of at its deadline.
            if let Some(handle) = &frame.request {
                handle.fail(
                    Error::invalid_response(format!(
                        "server \"{}\" answered a request with HTTP {} and no reply",
                        self.server,
                        status.as_u16()
                    ))
                    .with_detail(Detail::Status(status.as_u16())),
                );
            }
            return None;
        }
        // A notification or a reply is answered 202 with no body; a server that
        // sends a body anyway (e.g. `{"jsonrpc":"2.0","result":{}}` to
        // `notifications/initialized`) is answering nothing of ours: ignore it.
        frame.request.as_ref()?;
        match media_type(&response) {
            Media::EventStream => {
                // Boxed: the stream's state is large, and every POST's future (a
                // JSON reply's included) would otherwise carry it and be copied
                // with it when spawned or driven.
                Box::pin(self.follow_post_stream(response.into_body(), frame, outlet)).await;
            }
            Media::Json | Media::Missing => {
                if body::declared_too_large(response.body(), self.max_frame) {
                    self.terminate(self.too_large());
                    return None;
                }
                match body::collect_limited(response.into_body(), self.max_frame).await {
                    Ok(bytes) => {
                        if !bytes.iter().all(u8::is_ascii_whitespace) {
                            return Some(bytes);
                        }
                    }
                    Err(BodyError::TooLarge) => self.terminate(self.too_large()),
                    Err(BodyError::Broken(error)) => {
                        let error = self.classify(&error);
                        self.terminate(error);
                    }
                }
            }
            Media::Other => {
                if let Some(handle) = &frame.request {
                    handle.fail(Error::protocol(format!(
                        "server \"{}\" answered with an unsupported content type",
                        self.server
                    )));
                }
            }
        }
        None
    }
}

pin_project_lite::pin_project! {
    /// Polls `inner` inside the transport's runtime, whatever task drives it: a
    /// connection hyper opens on the way is spawned there and its socket
    /// registered with that runtime's reactor, as for a POST spawned on it (the
    /// caller may be on another runtime, or on none).
    struct InRuntime<F> {
        runtime: tokio::runtime::Handle,
        #[pin]
        inner: F,
    }
}

impl<F: Future> Future for InRuntime<F> {
    type Output = F::Output;

    fn poll(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<F::Output> {
        let this = self.project();
        let _entered = this.runtime.enter();
        this.inner.poll(cx)
    }
}

/// The wait a `429` or `503` asks for in `Retry-After`, when it is
/// delta-seconds (an HTTP date is not read), at most
/// [`MAX_RETRY_AFTER`](crate::error::MAX_RETRY_AFTER).
fn retry_after(status: StatusCode, headers: &http::HeaderMap) -> Option<std::time::Duration> {
    if status != StatusCode::TOO_MANY_REQUESTS && status != StatusCode::SERVICE_UNAVAILABLE {
        return None;
    }
    let value = headers
        .get(http::header::RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim();
    if value.is_empty() || value.len() > 10 || !value.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let seconds: u64 = value.parse().ok()?;
    Some(std::time::Duration::from_secs(seconds).min(crate::error::MAX_RETRY_AFTER))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn headers(value: &str) -> http::HeaderMap {
        let mut headers = http::HeaderMap::new();
        headers.insert(http::header::RETRY_AFTER, value.parse().unwrap());
        headers
    }

    #[test]
    fn retry_after_is_read_as_delta_seconds_on_429_and_503_only() {
        let limited = StatusCode::TOO_MANY_REQUESTS;
        assert_eq!(
            retry_after(limited, &headers("2")),
            Some(Duration::from_secs(2))
        );
        assert_eq!(
            retry_after(StatusCode::SERVICE_UNAVAILABLE, &headers(" 0 ")),
            Some(Duration::ZERO)
        );
        assert_eq!(retry_after(StatusCode::BAD_GATEWAY, &headers("2")), None);
        assert_eq!(
            retry_after(limited, &headers("Wed, 21 Oct 2026 07:28:00 GMT")),
            None,
            "an HTTP date is not read"
        );
        assert_eq!(retry_after(limited, &headers("-1")), None);
        assert_eq!(retry_after(limited, &headers("99999999999")), None);
        assert_eq!(
            retry_after(limited, &headers("86400")),
            Some(crate::error::MAX_RETRY_AFTER),
            "capped"
        );
        assert_eq!(retry_after(limited, &http::HeaderMap::new()), None);
    }
}
