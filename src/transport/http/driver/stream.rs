//! Event streams: reading one within its bounds, resuming a request's stream
//! with `Last-Event-ID`, the standalone GET stream, and the closing `DELETE`.

use std::sync::{Arc, PoisonError};

use bytes::Bytes;
use futures_util::StreamExt;
use http::Request;
use http::header::HeaderValue;
use http_body_util::{BodyExt, Full};
use tokio::sync::oneshot;

use super::super::session_id::SentSessionId;
use super::super::sse::{BoundedSse, SSE_FRAMING_ALLOWANCE, SseByteError, SseCursor, SseData};
use super::super::{DELETE_TIMEOUT, MAX_RESUME_ATTEMPTS};
use super::{HttpSession, LAST_EVENT_ID, Media, Resume, StreamEnd, media_type, retry_delay};
use crate::error::{Error, ErrorKind};
use crate::http::ResponseBody;
use crate::transport::{InboundEvent, OutboundFrame, Outlet, RequestHandle};

impl HttpSession {
    /// Reads one event stream of a request or of the standalone GET; false when
    /// that ended the transport (too large, malformed) or the transport is ending.
    /// Progress, or a server closing the stream on purpose (2025-11-25 polling),
    /// is not a failed attempt: `attempts` starts again. `tag`: the request's
    /// (see [`HttpSession::read_events`]).
    async fn read_stream(
        &self,
        body: ResponseBody,
        cursor: &mut SseCursor,
        attempts: &mut u32,
        outlet: Option<&Outlet>,
        tag: Option<u64>,
    ) -> bool {
        let (end, frames) = self.read_events(body, cursor, outlet, tag).await;
        match end {
            StreamEnd::TooLarge => {
                self.terminate(self.too_large());
                return false;
            }
            StreamEnd::Malformed => {
                self.terminate(self.malformed_stream());
                return false;
            }
            StreamEnd::Cancelled => return false,
            StreamEnd::Eof | StreamEnd::Broken => {}
        }
        if frames > 0 || matches!(end, StreamEnd::Eof) {
            *attempts = 0;
        }
        true
    }

    /// Reads one event stream, delivering each event's data as a frame (handed
    /// to the caller driving the exchange through `outlet`, else through the
    /// source: with the request's `tag`, when it has one, as
    /// [`InboundEvent::StreamFrame`]).
    async fn read_events(
        &self,
        body: ResponseBody,
        cursor: &mut SseCursor,
        outlet: Option<&Outlet>,
        tag: Option<u64>,
    ) -> (StreamEnd, usize) {
        let limit = self.max_frame.saturating_add(SSE_FRAMING_ALLOWANCE);
        let lines = BoundedSse::new(body.into_data_stream(), limit, std::mem::take(cursor));
        let mut events = SseData::new(lines);
        let mut frames = 0;
        let end = loop {
            // A caller driving the exchange (`outlet`) needs no watch on the
            // transport's end: that end settles the caller's request, and the
            // rest it detaches runs under that watch (`spawn_rest`).
            let next = match outlet {
                Some(_) if !self.work.is_cancelled() => events.next().await,
                _ => tokio::select! {
                    biased;
                    _ = self.work.cancelled() => break StreamEnd::Cancelled,
                    next = events.next() => next,
                },
            };
            match next {
                None => break StreamEnd::Eof,
                Some(Ok(frame)) => {
                    if frame.len() > self.max_frame {
                        break StreamEnd::TooLarge;
                    }
                    let handed = match outlet {
                        Some(outlet) => outlet.hand_over(frame).await,
                        None => Err(frame),
                    };
                    let event = |frame| match tag {
                        Some(tag) => InboundEvent::StreamFrame { frame, tag },
                        None => InboundEvent::Frame(frame),
                    };
                    if let Err(frame) = handed
                        && !self.deliver(event(frame)).await
                    {
                        break StreamEnd::Cancelled;
                    }
                    frames += 1;
                }
                Some(Err(SseByteError::TooLarge)) => break StreamEnd::TooLarge,
                Some(Err(SseByteError::Body)) => break StreamEnd::Broken,
                Some(Err(SseByteError::Malformed)) => break StreamEnd::Malformed,
            }
        };
        *cursor = events.into_cursor();
        (end, frames)
    }

    /// Reads the event stream answering a POST; resumes it with `GET` +
    /// `Last-Event-ID` while its request is unsettled.
    pub(super) async fn follow_post_stream(
        self: &Arc<Self>,
        body: ResponseBody,
        frame: &OutboundFrame,
        outlet: Option<&Outlet>,
    ) {
        let mut cursor = SseCursor::default();
        let mut body = Some(body);
        let mut attempts = 0u32;
        let tag = frame.request.as_ref().and_then(RequestHandle::stream_tag);
        loop {
            // The engine's request deadline bounds the attempts in total.
            if let Some(body) = body.take()
                && !self
                    .read_stream(body, &mut cursor, &mut attempts, outlet, tag)
                    .await
            {
                return;
            }
            // A notification's or a reply's stream: nothing to wait for.
            let Some(handle) = &frame.request else { return };
            if !self.settle(handle).await {
                return;
            }
            if handle.is_done() {
                return;
            }
            // 2026-07-28 has no resumption: a broken stream loses its request.
            let last_id = cursor
                .last_event_id
                .as_deref()
                .filter(|_| !frame.meta.http.stateless);
            let Some(last_id) = last_id else {
                return handle.fail(Error::closed(format!(
                    "server \"{}\" ended the response stream before replying",
                    self.server
                )));
            };
            attempts += 1;
            if attempts > MAX_RESUME_ATTEMPTS {
                return handle.fail(Error::closed(format!(
                    "server \"{}\" ended the response stream before replying; resuming failed",
                    self.server
                )));
            }
            let delay = retry_delay(cursor.retry);
            tokio::select! {
                _ = tokio::time::sleep(delay) => {}
                _ = handle.done() => return,
            }
            // Boxed: rare, and its state would otherwise be carried by every
            // POST answered with a stream.
            match Box::pin(self.resume(Some(last_id), Some(frame))).await {
                Resume::Stream(next) => body = Some(next),
                Resume::Retry => {}
                Resume::Refused(error) => return handle.fail(error),
                Resume::Handled => return,
            }
        }
    }

    /// Waits until every frame delivered so far was routed (or the request settled).
    pub(super) async fn settle(&self, handle: &RequestHandle) -> bool {
        // Already settled (the reply came on this stream and was routed): no
        // barrier through the source to wait for.
        if handle.is_done() {
            return true;
        }
        // Boxed: the wait is the rarer path (a reply still being routed).
        Box::pin(async {
            tokio::select! {
                routed = self.barrier() => routed,
                _ = handle.done() => true,
            }
        })
        .await
    }

    /// `GET` with `Accept: text/event-stream` (and `Last-Event-ID` when given).
    /// `frame` is the request whose stream is resumed (`None`: the standalone stream).
    async fn resume(&self, last_id: Option<&str>, frame: Option<&OutboundFrame>) -> Resume {
        let mut req = Request::get(self.endpoint.clone())
            .body(Full::new(Bytes::new()))
            .expect("a GET to a validated URI");
        self.with_legacy_version(&mut req);
        if let Some(id) = last_id {
            match HeaderValue::from_str(id) {
                Ok(value) => {
                    req.headers_mut().insert(LAST_EVENT_ID.clone(), value);
                }
                Err(_) => {
                    return Resume::Refused(Error::closed(format!(
                        "server \"{}\" sent an event id that cannot be replayed",
                        self.server
                    )));
                }
            }
        }
        let response = match self.call_stack(req).await {
            Ok(response) => response,
            Err(error) => {
                let error = self.classify(&error);
                return match error.kind() {
                    ErrorKind::ConnectionClosed => Resume::Retry,
                    ErrorKind::EgressDenied if frame.is_none() => Resume::Refused(error),
                    _ => {
                        self.terminate(error);
                        Resume::Handled
                    }
                };
            }
        };
        let status = response.status();
        if status.is_success() {
            return if media_type(&response) == Media::EventStream {
                Resume::Stream(response.into_body())
            } else {
                Resume::Refused(Error::protocol(format!(
                    "server \"{}\" did not answer GET with an event stream",
                    self.server
                )))
            };
        }
        let sent = response
            .extensions()
            .get::<SentSessionId>()
            .and_then(|s| s.0.clone());
        match (status.as_u16(), frame) {
            (401 | 403, _) => {
                self.terminate(self.unauthorized(status));
                Resume::Handled
            }
            (404, Some(frame)) if sent.is_some() => {
                // The session is gone while a reply was streaming: the request
                // cannot be completed; the engine re-initialises.
                if let Some(handle) = &frame.request {
                    handle.fail(Error::closed(format!(
                        "server \"{}\" ended the HTTP session before replying",
                        self.server
                    )));
                }
                if !self.expire_session(sent.as_ref().expect("checked")) {
                    return Resume::Refused(self.stale_session_error());
                }
                self.deliver(InboundEvent::StateLost {
                    refused: frame.clone(),
                    stale: false,
                })
                .await;
                Resume::Handled
            }
            _ => Resume::Refused(self.status_error(status)),
        }
    }

    /// Opens the standalone stream in a task of its own; the receiver resolves
    /// once the first GET is answered (or refused, or the task ends).
    pub(super) fn start_standalone(self: &Arc<Self>) -> oneshot::Receiver<()> {
        let (opened_tx, opened) = oneshot::channel();
        let token = self.work.child_token();
        if let Some(old) = self
            .standalone
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .replace(token.clone())
        {
            old.cancel();
        }
        let shared = self.clone();
        tokio::spawn(async move {
            tokio::select! {
                _ = token.cancelled() => {}
                _ = shared.standalone_stream(opened_tx) => {}
            }
        });
        opened
    }

    /// The optional server-to-client stream. A server that does not offer one
    /// (`400`, `404`, `405`, or anything but an event stream) is left alone quietly;
    /// a broken or ended stream is reopened after the retry delay, with
    /// `Last-Event-ID` when the server gave ids, up to `MAX_RESUME_ATTEMPTS` times in a
    /// row without a delivered message.
    async fn standalone_stream(&self, opened: oneshot::Sender<()>) {
        let mut opened = Some(opened);
        let mut cursor = SseCursor::default();
        let mut attempts = 0u32;
        loop {
            let resumed = self.resume(cursor.last_event_id.as_deref(), None).await;
            if let Some(opened) = opened.take() {
                let _ = opened.send(());
            }
            match resumed {
                // The retry delay paces the reconnects.
                Resume::Stream(body) => {
                    if !self
                        .read_stream(body, &mut cursor, &mut attempts, None, None)
                        .await
                    {
                        return;
                    }
                }
                Resume::Retry => {}
                Resume::Refused(_) | Resume::Handled => return,
            }
            attempts += 1;
            if attempts > MAX_RESUME_ATTEMPTS {
                return;
            }
            tokio::time::sleep(retry_delay(cursor.retry)).await;
        }
    }

    /// `DELETE` with the session id, bounded by [`DELETE_TIMEOUT`]; any answer
    /// (including `405`) or failure is fine.
    pub(super) async fn delete_session(&self) {
        if self.session.id().is_none() {
            return;
        }
        let mut req = Request::delete(self.endpoint.clone())
            .body(Full::new(Bytes::new()))
            .expect("a DELETE to a validated URI");
        self.with_legacy_version(&mut req);
        let _ = tokio::time::timeout(DELETE_TIMEOUT, self.call_stack(req)).await;
    }
}
