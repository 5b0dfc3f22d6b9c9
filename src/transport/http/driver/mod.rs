//! The open transport: the sink, source and shutdown handed to the engine, and the
//! work behind them: a request's POST driven by its caller when it writes it
//! directly (the JSON body or the events answering it handed to that caller to
//! route), else (and for the rest of a POST its caller stopped driving) a task
//! per POST; one task for the optional standalone GET stream.
//!
//! Every task selects on one cancellation token (`work`), cancelled by the first
//! terminal event, by [`Shutdown::shutdown`], or when the sink, source and shutdown
//! handles have all been dropped. No task outlives the transport.
//!
//! The parts: [`post`] (one POST: headers, statuses, the JSON body or the event
//! stream answering it) and [`stream`] (reading event streams, resuming them, the
//! standalone GET stream, `DELETE`). This file holds the shared state, the error
//! mapping, and the sink, source and shutdown.

use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use futures_util::future::BoxFuture;
use http::header::{CONTENT_TYPE, HeaderName, HeaderValue};
use http::{StatusCode, Uri};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc, oneshot};
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;
use tower::util::Oneshot;

use super::headers;
use super::session_id::SessionState;
use super::{DEFAULT_RETRY, HttpService, MAX_RETRY, STANDALONE_OPEN_WAIT};
use crate::error::{Detail, Error, ErrorKind, Result};
use crate::http::body;
use crate::http::{BoxError, HttpRequest, HttpResponse, ResponseBody, StackFailure, stack_failure};
use crate::transport::{
    Connection, FrameSink, FrameSource, HttpBounds, HttpHints, InboundEvent, Medium, OutboundFrame,
    Shutdown, TrySend,
};

mod post;
mod stream;

static LAST_EVENT_ID: HeaderName = HeaderName::from_static("last-event-id");

/// The largest channel / in-flight bound used, whatever `queueCapacity` says.
const MAX_QUEUE: usize = 4096;

/// The largest error body read (a 2026-07-28 `400`/`404` with a JSON-RPC error).
pub(crate) const ERROR_BODY_LIMIT: usize = 64 * 1024;

/// What the transport needs to open.
pub(crate) struct OpenParams {
    pub(crate) server: Arc<str>,
    pub(crate) endpoint: Uri,
    pub(crate) service: HttpService,
    pub(crate) session: Arc<SessionState>,
    /// The framing bound (`Bounds::max_frame_bytes`).
    pub(crate) max_frame: usize,
    /// The option that sets it.
    pub(crate) frame_option: &'static str,
    pub(crate) bounds: HttpBounds,
    /// Headers the transport's own layers add to a request (`Authorization`).
    pub(crate) layered: usize,
    /// `follow_same_origin_redirects` (named when a redirect is not followed).
    pub(crate) redirects: usize,
}

/// Opens the transport: nothing is sent until the first frame.
pub(crate) fn open(params: OpenParams) -> Connection {
    let queue = params.bounds.queue_capacity.clamp(1, MAX_QUEUE);
    let (tx, rx) = mpsc::channel(queue);
    let shared = Arc::new(HttpSession {
        server: params.server,
        endpoint: params.endpoint,
        service: Mutex::new(params.service),
        session: params.session,
        max_frame: params.max_frame,
        frame_option: params.frame_option,
        request_timeout: params.bounds.request_timeout,
        open_wait: (params.bounds.handshake_timeout / 4).min(STANDALONE_OPEN_WAIT),
        layered: params.layered,
        redirects: params.redirects,
        tx,
        terminal: OnceLock::new(),
        work: CancellationToken::new(),
        standalone: Mutex::new(None),
        legacy_version: Mutex::new(None),
        standalone_opening: Mutex::new(None),
        runtime: tokio::runtime::Handle::try_current().ok(),
    });
    let guard = Arc::new(Guard(shared.clone()));
    Connection {
        medium: Medium::Exchanges,
        sink: Box::new(HttpSink {
            shared: shared.clone(),
            permits: Arc::new(Semaphore::new(queue)),
            _guard: guard.clone(),
        }),
        source: Box::new(HttpSource {
            shared: shared.clone(),
            rx,
            _guard: guard.clone(),
        }),
        shutdown: Box::new(HttpShutdown {
            shared,
            _guard: guard,
        }),
    }
}

/// What an exchange through the stack ends with.
type StackResult = std::result::Result<HttpResponse, BoxError>;

/// One request through the stack: a clone of the stack, ready, then called.
type StackFuture = Oneshot<HttpService, HttpRequest>;

enum Item {
    Event(InboundEvent),
    /// Acknowledged when the source reaches it: every earlier item has been
    /// returned by `next()` and, since the engine asks for the next event only
    /// after routing the previous one, routed.
    Barrier(oneshot::Sender<()>),
}

/// One HTTP session's state, shared by its sink, source, shutdown and exchanges.
struct HttpSession {
    server: Arc<str>,
    endpoint: Uri,
    service: Mutex<HttpService>,
    session: Arc<SessionState>,
    max_frame: usize,
    frame_option: &'static str,
    request_timeout: Duration,
    /// Headers the transport's own layers add (sizes each POST's map).
    layered: usize,
    /// `follow_same_origin_redirects`, for messages (the stack follows them).
    redirects: usize,
    tx: mpsc::Sender<Item>,
    terminal: OnceLock<Error>,
    work: CancellationToken,
    standalone: Mutex<Option<CancellationToken>>,
    /// The legacy version negotiated (sent on `GET` and `DELETE`, which carry no
    /// frame of their own).
    legacy_version: Mutex<Option<HeaderValue>>,
    /// Resolves once the standalone stream's first GET is answered; the next
    /// notification or reply sent waits for it (see [`HttpSink::send`]).
    standalone_opening: Mutex<Option<oneshot::Receiver<()>>>,
    /// How long that wait may take: a server need not answer the GET promptly.
    open_wait: Duration,
    /// The runtime the transport was opened on: POSTs started from a caller's
    /// task, and the rest of exchanges a caller stopped driving, run there.
    /// `None` when opened outside a runtime (every POST is then spawned from the
    /// writer).
    runtime: Option<tokio::runtime::Handle>,
}

/// Cancels every task once the sink, source and shutdown are all gone.
struct Guard(Arc<HttpSession>);

impl Drop for Guard {
    fn drop(&mut self) {
        self.0
            .terminate(Error::closed("the HTTP transport was dropped"));
    }
}

/// How a read of one event stream ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StreamEnd {
    /// The server ended the stream.
    Eof,
    /// The body failed mid-way: resumable.
    Broken,
    /// An event exceeded `maxFrameBytes` (terminal).
    TooLarge,
    /// Not UTF-8 or not an event stream (terminal).
    Malformed,
    /// The transport is ending.
    Cancelled,
}

/// The outcome of a resumption `GET`.
enum Resume {
    Stream(ResponseBody),
    /// A network failure: try again after the retry delay.
    Retry,
    /// The server will not resume this stream.
    Refused(Error),
    /// Handled (terminal or session expiry already reported).
    Handled,
}

impl HttpSession {
    fn terminate(&self, error: Error) {
        let _ = self.terminal.set(error);
        self.work.cancel();
    }

    fn terminal_error(&self) -> Error {
        self.terminal
            .get()
            .cloned()
            .unwrap_or_else(|| Error::closed("the HTTP transport was shut down"))
    }

    /// Queues an event for the source; false when the transport is ending.
    ///
    /// Queued at once when there is room (the usual case); only a full queue
    /// costs a boxed wait, so that every future delivering an event (each
    /// event of a stream, each POST's) stays small.
    async fn deliver(&self, event: InboundEvent) -> bool {
        if self.work.is_cancelled() {
            return false;
        }
        match self.tx.try_send(Item::Event(event)) {
            Ok(()) => true,
            Err(mpsc::error::TrySendError::Closed(_)) => false,
            Err(mpsc::error::TrySendError::Full(item)) => {
                Box::pin(self.deliver_waiting(item)).await
            }
        }
    }

    /// [`HttpSession::deliver`] when the queue is full: waits for room, or for the
    /// transport's end.
    async fn deliver_waiting(&self, item: Item) -> bool {
        tokio::select! {
            biased;
            _ = self.work.cancelled() => false,
            sent = self.tx.send(item) => sent.is_ok(),
        }
    }

    /// Waits until the engine has routed everything queued before this call.
    async fn barrier(&self) -> bool {
        let (ack, acked) = oneshot::channel();
        tokio::select! {
            biased;
            _ = self.work.cancelled() => false,
            done = async {
                self.tx.send(Item::Barrier(ack)).await.is_ok() && acked.await.is_ok()
            } => done,
        }
    }

    /// Sends `req` through the stack, as tower services are called: a clone of
    /// the stack (cheap: each layer holds `Arc`s, the client's pool is shared)
    /// driven to readiness and called by the returned future, so a layer that
    /// is not ready wakes this request's own task. Redirects are followed inside
    /// the stack (tower-http's `FollowRedirect`, when enabled).
    fn call_stack(&self, req: HttpRequest) -> StackFuture {
        let service = self
            .service
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        service.oneshot(req)
    }

    /// Maps a stack error to the public error (see [`stack_failure`]). Errors this
    /// crate produced (egress denial, invalid session id) pass through; TLS failures
    /// are `tls`; everything else is `connection_closed`.
    fn classify(&self, error: &BoxError) -> Error {
        let server = &self.server;
        let https = self.endpoint.scheme_str() == Some("https");
        match stack_failure(&**error, https) {
            StackFailure::Ours(error) => error,
            StackFailure::Tls => Error::new(
                ErrorKind::Tls,
                format!("TLS with server \"{server}\" failed (certificate or handshake)"),
            ),
            StackFailure::Connect => {
                Error::closed(format!("could not connect to server \"{server}\""))
            }
            StackFailure::Exchange => {
                Error::closed(format!("the HTTP connection to server \"{server}\" failed"))
            }
        }
    }

    /// An error status; a redirect that reached the caller was not followed,
    /// and the message says under which setting (never where it pointed).
    fn status_error(&self, status: StatusCode) -> Error {
        let code = status.as_u16();
        let server = &self.server;
        let message = if status.is_redirection() {
            format!(
                "server \"{server}\" answered HTTP {code} (redirect not followed; follow_same_origin_redirects is {}, and only a same-origin target is followed)",
                self.redirects
            )
        } else {
            format!("server \"{server}\" answered HTTP {code}")
        };
        Error::new(ErrorKind::HttpStatus, message).with_detail(Detail::Status(code))
    }

    /// A `400`/`404` answering a stateless request: its body, if it is JSON of at
    /// most [`ERROR_BODY_LIMIT`] (and `maxFrameBytes`), is delivered as a frame;
    /// once the engine routed it, a request still unsettled fails with the status.
    async fn error_body(&self, response: HttpResponse, frame: &OutboundFrame) {
        let status = response.status();
        let Some(handle) = &frame.request else { return };
        let json = matches!(media_type(&response), Media::Json | Media::Missing);
        let limit = self.max_frame.min(ERROR_BODY_LIMIT);
        if json
            && !body::declared_too_large(response.body(), limit)
            && let Ok(bytes) = body::collect_limited(response.into_body(), limit).await
            && !bytes.iter().all(u8::is_ascii_whitespace)
        {
            self.deliver(InboundEvent::Frame(bytes)).await;
            self.settle(handle).await;
        }
        handle.fail(self.status_error(status));
    }

    fn unauthorized(&self, status: StatusCode) -> Error {
        Error::new(
            ErrorKind::Unauthorized,
            format!(
                "server \"{}\" refused the request: HTTP {}",
                self.server,
                status.as_u16()
            ),
        )
        .with_detail(Detail::Status(status.as_u16()))
    }

    fn too_large(&self) -> Error {
        Error::protocol(format!(
            "server \"{}\" sent a message of more than {} bytes; {}",
            self.server,
            self.max_frame,
            crate::transport::frame_bound_text(self.max_frame, self.frame_option)
        ))
    }

    fn stale_session_error(&self) -> Error {
        Error::closed(format!(
            "server \"{}\" ended an earlier HTTP session of this request",
            self.server
        ))
    }

    fn malformed_stream(&self) -> Error {
        Error::protocol(format!(
            "server \"{}\" sent a malformed event stream",
            self.server
        ))
    }

    /// Reports a 404 to a request that carried `sent`: forgets the session. Returns
    /// `false` for a stale 404 (a newer session is in use), which changes nothing.
    fn expire_session(&self, sent: &HeaderValue) -> bool {
        if !self.session.expire(sent) {
            return false;
        }
        // The standalone stream belongs to the negotiated session: it reopens after
        // the engine negotiates again.
        *self
            .legacy_version
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = None;
        if let Some(old) = self
            .standalone
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        {
            old.cancel();
        }
        true
    }

    /// Records the legacy version the handshake negotiated (from the frame that
    /// completes it), for the `GET`s and the `DELETE`, which carry no frame.
    fn remember_legacy_version(&self, hints: &HttpHints) {
        let value = hints.protocol_version.map(HeaderValue::from_static);
        *self
            .legacy_version
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = value;
    }

    /// Adds the legacy version header to a `GET` or `DELETE`.
    fn with_legacy_version(&self, req: &mut HttpRequest) {
        let version = self
            .legacy_version
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if let Some(version) = version {
            req.headers_mut()
                .insert(headers::MCP_PROTOCOL_VERSION.clone(), version);
        }
    }
}

/// The server's `retry:` value, or the default, capped.
fn retry_delay(retry: Option<Duration>) -> Duration {
    retry.unwrap_or(DEFAULT_RETRY).min(MAX_RETRY)
}

/// The media type of a response: the essence of its `Content-Type` (before any
/// `;`, trimmed, compared case-insensitively), read without allocating.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Media {
    Json,
    EventStream,
    /// No `Content-Type`, or one that is not visible ASCII.
    Missing,
    Other,
}

fn media_type(response: &HttpResponse) -> Media {
    let Some(value) = response.headers().get(CONTENT_TYPE) else {
        return Media::Missing;
    };
    // The usual values, exactly: no parameters to split off, nothing to trim.
    match value.as_bytes() {
        b"application/json" => return Media::Json,
        b"text/event-stream" => return Media::EventStream,
        _ => {}
    }
    let Ok(value) = value.to_str() else {
        return Media::Missing;
    };
    let essence = value.split(';').next().unwrap_or("").trim();
    if essence.eq_ignore_ascii_case("application/json") {
        Media::Json
    } else if essence.eq_ignore_ascii_case("text/event-stream") {
        Media::EventStream
    } else {
        Media::Other
    }
}

struct HttpSink {
    shared: Arc<HttpSession>,
    permits: Arc<Semaphore>,
    _guard: Arc<Guard>,
}

/// Runs a POST's future and delivers the JSON body it ends with through the source.
async fn deliver_rest(shared: Arc<HttpSession>, rest: impl Future<Output = Option<Bytes>>) {
    if let Some(frame) = rest.await {
        shared.deliver(InboundEvent::Frame(frame)).await;
    }
}

/// Runs one request's POST in its own task (until the transport ends).
fn spawn_post(
    runtime: Option<&tokio::runtime::Handle>,
    task: Arc<HttpSession>,
    frame: OutboundFrame,
    permit: OwnedSemaphorePermit,
) {
    let post = deliver_rest(task.clone(), task.post_until_end(frame, permit));
    match runtime {
        Some(runtime) => drop(runtime.spawn(post)),
        None => drop(tokio::spawn(post)),
    }
}

impl FrameSink for HttpSink {
    fn send(&mut self, frame: OutboundFrame) -> BoxFuture<'_, Result<()>> {
        Box::pin(async move {
            let shared = &self.shared;
            if shared.work.is_cancelled() {
                return Err(shared.terminal_error());
            }
            // Bound in-flight POSTs: wait for a slot, then start the POST and return.
            let permit = tokio::select! {
                biased;
                _ = shared.work.cancelled() => return Err(shared.terminal_error()),
                permit = self.permits.clone().acquire_owned() => {
                    permit.map_err(|_| shared.terminal_error())?
                }
            };
            let task = shared.clone();
            if frame.request.is_none() {
                // Notifications and replies are sent in order with what follows
                // them: `notifications/initialized` must reach the server before
                // `tools/list`, so wait for this POST's response head (its body is
                // ignored) before the writer sends the next frame.
                let work = task.work.clone();
                tokio::select! {
                    _ = work.cancelled() => return Err(shared.terminal_error()),
                    _ = task.post(frame, permit) => {}
                }
                // If that POST (normally the handshake's
                // `notifications/initialized`) started the standalone stream,
                // what follows waits until the server answered its GET, so the
                // stream is open before the first request (a server may deliver
                // replies on it); briefly bounded, as the GET may stay unanswered.
                let opening = shared
                    .standalone_opening
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .take();
                if let Some(opened) = opening {
                    let _ = tokio::time::timeout(shared.open_wait, opened).await;
                }
                return Ok(());
            }
            spawn_post(shared.runtime.as_ref(), task, frame, permit);
            Ok(())
        })
    }

    fn try_send_now(&mut self, frame: OutboundFrame, _busy: bool) -> TrySend {
        // Every POST is its own exchange: nothing to gain from waiting for a batch.
        let shared = &self.shared;
        if shared.work.is_cancelled() {
            return TrySend::Failed(shared.terminal_error());
        }
        // Only a request, and only with a free in-flight slot, starts its POST here:
        // notifications and replies go through `send`, which keeps them in order.
        if frame.request.is_none() || shared.runtime.is_none() {
            return TrySend::WouldBlock(frame);
        }
        match self.permits.clone().try_acquire_owned() {
            Ok(permit) => {
                // The caller drives the POST and routes its reply: no task is
                // spawned and no other task is woken on the way.
                TrySend::Exchange(shared.driven(frame, permit))
            }
            Err(tokio::sync::TryAcquireError::NoPermits) => TrySend::WouldBlock(frame),
            Err(tokio::sync::TryAcquireError::Closed) => TrySend::Failed(shared.terminal_error()),
        }
    }
}

struct HttpSource {
    shared: Arc<HttpSession>,
    rx: mpsc::Receiver<Item>,
    _guard: Arc<Guard>,
}

impl FrameSource for HttpSource {
    fn next(&mut self) -> BoxFuture<'_, InboundEvent> {
        Box::pin(async move {
            loop {
                let item = tokio::select! {
                    biased;
                    item = self.rx.recv() => item,
                    _ = self.shared.work.cancelled() => None,
                };
                match item {
                    Some(Item::Event(event)) => return event,
                    Some(Item::Barrier(ack)) => {
                        let _ = ack.send(());
                    }
                    None => return InboundEvent::Closed(self.shared.terminal_error()),
                }
            }
        })
    }
}

struct HttpShutdown {
    shared: Arc<HttpSession>,
    _guard: Arc<Guard>,
}

impl Shutdown for HttpShutdown {
    fn shutdown(self: Box<Self>) -> BoxFuture<'static, ()> {
        Box::pin(async move {
            let shared = self.shared.clone();
            shared.terminate(Error::closed("the HTTP transport was shut down"));
            shared.delete_session().await;
            drop(self);
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_content_type(value: Option<&[u8]>) -> Media {
        let mut response = HttpResponse::new(ResponseBody::default());
        if let Some(value) = value {
            response.headers_mut().insert(
                CONTENT_TYPE,
                HeaderValue::from_bytes(value).expect("a header value"),
            );
        }
        media_type(&response)
    }

    #[test]
    fn media_types_are_read_by_their_essence_whatever_the_spelling() {
        for (value, media) in [
            (&b"application/json"[..], Media::Json),
            (b"text/event-stream", Media::EventStream),
            (b"application/json; charset=utf-8", Media::Json),
            (b"Application/JSON", Media::Json),
            (b" text/event-stream ;x=1", Media::EventStream),
            (b"TEXT/EVENT-STREAM", Media::EventStream),
            (b"application/jsonl", Media::Other),
            (b"text/event-stream-x", Media::Other),
            (b"text/html", Media::Other),
            (b"", Media::Other),
            (b"application/json\xff", Media::Missing),
        ] {
            assert_eq!(with_content_type(Some(value)), media, "{value:?}");
        }
        assert_eq!(with_content_type(None), Media::Missing);
    }
}
