//! How a session reaches its server: the public, sealed [`Transport`], implemented by
//! [`StdioCommand`](stdio::StdioCommand), [`HttpTransport`](http::HttpTransport) and
//! [`DuplexTransport`](duplex::DuplexTransport), and the crate-private frame contract
//! behind it.
//!
//! # The frame contract
//!
//! A transport turns its medium into a stream of inbound frames, each already bounded
//! by `maxFrameBytes`, accepts outbound frames, and reports how the medium ended. It
//! never parses JSON-RPC ids or knows about tools: all meaning lives in the session
//! engine, so every medium behaves the same. The contract is honest about the two
//! kinds of medium:
//!
//! - **stdio and duplex: two streams of frames.** One byte stream in each direction,
//!   each frame one line of newline-delimited JSON-RPC. The sink writes a frame's
//!   bytes and a newline and reads nothing else of the frame; the source yields each
//!   complete line of at most `maxFrameBytes` bytes. Silence is the peer's answer, a
//!   cancellation is a notification, and the end of either stream ends the session.
//! - **Streamable HTTP: one exchange per message, plus a stream for the messages the
//!   server starts.** Each outbound frame is one `POST`; the JSON body or the event
//!   stream answering it carries the frames answering it, and the optional standalone
//!   `GET` stream carries what the server starts. Headers travel with each message,
//!   so the engine gives this transport, and only it, the HTTP hints of each frame:
//!   `MCP-Protocol-Version`, whether the frame is stateless (2026-07-28: the standard
//!   headers, no session id, no resumption, an abandoned request's exchange cut), the
//!   `tools/call` headers, and which frame completes the legacy handshake (the
//!   standalone stream opens after it). The stream transports never read them. A
//!   request's exchange may be handed back to the task that sent it, to drive it and
//!   route its reply without a hop through another task.
//!
//! Each transport receives the bounds it enforces, taken from the session's
//! validated limits when it opens: `maxFrameBytes` (all), `maxStderrBytes` (stdio),
//! and `queueCapacity`, `requestTimeoutMs` and `handshakeTimeoutMs` (HTTP). An error
//! a bound raises names the option it comes from.

use std::num::NonZeroU64;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures_util::future::BoxFuture;

use crate::diagnostics::Diagnostics;
use crate::error::{Error, Result};
use crate::limits::Limits;

pub mod duplex;
pub(crate) mod framing;
pub mod http;
pub(crate) mod lines;
pub mod stdio;

pub(crate) use http::{CallHeaders, HttpHints, ParamHeader};

/// What a transport needs to know from the session that opens it.
#[derive(Debug, Clone)]
pub(crate) struct TransportContext {
    /// The configured server name (used in public messages and diagnostics).
    pub(crate) server: Arc<str>,
    /// The bounds the transport enforces.
    pub(crate) bounds: Bounds,
    /// The private diagnostics channel.
    pub(crate) diagnostics: Diagnostics,
}

/// The bounds the transports enforce, taken from the session's [`Limits`] (already
/// validated) when it opens one: each transport reads its own and nothing else of
/// the limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Bounds {
    /// The framing bound: one inbound frame on every medium (a line, a JSON body,
    /// the data of one event). The larger of `maxFrameBytes` and
    /// `maxResourceBytes` (a `resources/read` reply may be that long,
    /// beyond-tools.md Q3); the engine refuses a frame over `maxFrameBytes`
    /// unless the request it answers admits it.
    pub(crate) max_frame_bytes: usize,
    /// The option that sets `max_frame_bytes`, named when a frame passes it.
    pub(crate) frame_option: &'static str,
    /// `maxStderrBytes`: the redacted stderr tail a stdio transport keeps.
    pub(crate) max_stderr_bytes: usize,
    /// What only the HTTP transport reads.
    pub(crate) http: HttpBounds,
}

/// The bounds only the HTTP transport enforces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct HttpBounds {
    /// `queueCapacity`: `POST`s in flight, and events waiting for the engine (the
    /// transport caps both at 4096).
    pub(crate) queue_capacity: usize,
    /// `requestTimeoutMs`: the longest a notification's or a reply's `POST` runs.
    pub(crate) request_timeout: Duration,
    /// `handshakeTimeoutMs`: a quarter of it bounds the wait for the standalone
    /// stream after the legacy handshake.
    pub(crate) handshake_timeout: Duration,
}

/// How an error names the framing bound: `maxFrameBytes is N`, or, when
/// `maxResourceBytes` is the larger, that one and what it is for.
pub(crate) fn frame_bound_text(max_frame: usize, option: &'static str) -> String {
    if option == "maxFrameBytes" {
        format!("maxFrameBytes is {max_frame}")
    } else {
        format!(
            "a resources/read reply may be {max_frame} (the base64 of {option} and its envelope); maxFrameBytes bounds every other frame"
        )
    }
}

impl From<Limits> for Bounds {
    fn from(limits: Limits) -> Bounds {
        let read_frame = limits.read_frame_bytes();
        let (max_frame_bytes, frame_option) = if read_frame > limits.max_frame_bytes {
            (read_frame, "maxResourceBytes")
        } else {
            (limits.max_frame_bytes, "maxFrameBytes")
        };
        Bounds {
            max_frame_bytes: Limits::usize_of(max_frame_bytes),
            frame_option,
            max_stderr_bytes: Limits::usize_of(limits.max_stderr_bytes),
            http: HttpBounds {
                queue_capacity: Limits::usize_of(limits.queue_capacity),
                request_timeout: limits.request_timeout(),
                handshake_timeout: limits.handshake_timeout(),
            },
        }
    }
}

/// One inbound event. `Debug` prints frame lengths, never frame contents (they
/// are server-authored).
pub(crate) enum InboundEvent {
    /// One complete frame of at most `maxFrameBytes` bytes (no trailing newline).
    Frame(Bytes),
    /// A [`InboundEvent::Frame`] that arrived on a request's own stream (HTTP: the
    /// event stream answering its POST), with the tag the engine gave that request
    /// ([`RequestControl::stream_tag`]; only requests with one have their frames
    /// delivered this way). The transport carries the tag and reads nothing of it.
    StreamFrame {
        /// The frame, as [`InboundEvent::Frame`] holds it.
        frame: Bytes,
        /// The request's tag.
        tag: NonZeroU64,
    },
    /// The medium ended; the error is the terminal reason (`connection_closed`
    /// "stdout closed", "exited with code N", or `protocol_error` for an over-long
    /// frame). No event follows it.
    Closed(Error),
    /// The medium lost the server-side state that the handshake established, and
    /// refused `refused` because of it (HTTP, legacy era: `404` to a request
    /// carrying a session id). The transport has already forgotten that state; the
    /// engine establishes it again (one re-initialise, catalog compared) and then
    /// re-sends `refused`, or ends the session.
    StateLost {
        /// The outbound frame that was refused.
        refused: OutboundFrame,
        /// The refusal concerns state the transport had already forgotten (a
        /// request in flight when an earlier refusal reset it): the engine re-sends
        /// the frame with the new state instead of counting a second loss.
        stale: bool,
    },
}

/// What the engine knows of one outstanding request, seen from the transport: is
/// it settled, and fail it alone. Implemented by the session engine; a transport
/// holds it through a [`RequestHandle`].
pub(crate) trait RequestControl: Send + Sync + 'static {
    /// True once the request is settled (reply routed, failed) or abandoned.
    fn is_done(&self) -> bool;
    /// True when the request was abandoned by its caller (timed out, dropped, or
    /// the session closed) rather than answered.
    fn is_abandoned(&self) -> bool;
    /// Resolves once [`RequestControl::is_done`].
    fn done(&self) -> BoxFuture<'_, ()>;
    /// Fails this request only (the session continues).
    fn fail(&self, error: Error);
    /// The tag the engine gave the request, if any: the frames of its own
    /// stream are delivered with it ([`InboundEvent::StreamFrame`]).
    fn stream_tag(&self) -> Option<NonZeroU64> {
        None
    }
}

/// The engine's handle on one outstanding request, given to the transport with its
/// frame so that a transport can tell whether the reply has arrived (HTTP: whether a
/// broken SSE stream must be resumed, whether an abandoned exchange may be cut) and
/// fail just that request (HTTP: an error status answering its POST) without
/// parsing JSON-RPC.
#[derive(Clone)]
pub(crate) struct RequestHandle {
    control: Arc<dyn RequestControl>,
}

impl RequestHandle {
    /// Wraps the engine's (or a test's) control of one request.
    pub(crate) fn new(control: Arc<dyn RequestControl>) -> Self {
        RequestHandle { control }
    }

    /// True once the request is settled; the transport need not deliver more for it.
    pub(crate) fn is_done(&self) -> bool {
        self.control.is_done()
    }

    /// True when the caller abandoned the request (see [`RequestControl::is_abandoned`]).
    pub(crate) fn is_abandoned(&self) -> bool {
        self.control.is_abandoned()
    }

    /// Resolves once the request is settled.
    pub(crate) async fn done(&self) {
        self.control.done().await
    }

    /// Fails this request only (the session continues).
    pub(crate) fn fail(&self, error: Error) {
        self.control.fail(error)
    }

    /// The request's tag (see [`RequestControl::stream_tag`]).
    pub(crate) fn stream_tag(&self) -> Option<NonZeroU64> {
        self.control.stream_tag()
    }
}

impl std::fmt::Debug for RequestHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestHandle")
            .field("done", &self.is_done())
            .finish()
    }
}

/// What the engine knows of an outbound frame beyond its bytes, so that no
/// transport parses JSON-RPC: filled in when it encodes the frame. The stream
/// transports read none of it; only the HTTP transport reads its hints.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct FrameMeta {
    /// The JSON-RPC method (`None` for a reply to a server request).
    pub(crate) method: Option<&'static str>,
    /// What the HTTP transport writes and does for this frame (its fields are
    /// readable there only).
    pub(crate) http: HttpHints,
}

impl FrameMeta {
    /// This frame completes the legacy handshake (`notifications/initialized`):
    /// see [`HttpHints::completing_handshake`].
    pub(crate) fn completing_handshake(mut self) -> FrameMeta {
        self.http = self.http.completing_handshake();
        self
    }
}

/// One outbound frame: complete JSON-RPC text without a trailing newline, what the
/// medium needs to know about it, and the engine's handle when the frame is a
/// request expecting a reply. `Debug` prints the length only (a frame carries tool
/// arguments).
#[derive(Clone)]
pub(crate) struct OutboundFrame {
    /// The frame's bytes.
    pub(crate) bytes: Bytes,
    /// What the engine knows of it (the HTTP transport's hints among it).
    pub(crate) meta: FrameMeta,
    /// Present for requests (not for notifications or replies to the server).
    pub(crate) request: Option<RequestHandle>,
}

impl std::fmt::Debug for OutboundFrame {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OutboundFrame")
            .field("bytes", &self.bytes.len())
            .field("meta", &self.meta)
            .field("request", &self.request)
            .finish()
    }
}

impl std::fmt::Debug for InboundEvent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            InboundEvent::Frame(bytes) => f.debug_tuple("Frame").field(&bytes.len()).finish(),
            InboundEvent::StreamFrame { frame, tag } => f
                .debug_struct("StreamFrame")
                .field("frame", &frame.len())
                .field("tag", tag)
                .finish(),
            InboundEvent::Closed(error) => f.debug_tuple("Closed").field(error).finish(),
            InboundEvent::StateLost { refused, stale } => f
                .debug_struct("StateLost")
                .field("refused", refused)
                .field("stale", stale)
                .finish(),
        }
    }
}

/// What [`FrameSink::try_send_now`] did with a frame.
#[derive(Debug)]
pub(crate) enum TrySend {
    /// The whole frame was handed to the medium without waiting.
    Sent,
    /// Part of the frame was handed to the medium. The sink keeps the rest and
    /// writes it before anything else on its next [`FrameSink::send_batch`] (an
    /// empty batch only finishes it); until then `try_send_now` gives frames back.
    SentPartly,
    /// Nothing was written (the medium would have to wait): the frame, given back.
    WouldBlock(OutboundFrame),
    /// The medium failed; terminal, as an error from [`FrameSink::send`].
    Failed(Error),
    /// The frame was handed to the medium, and its exchange is given to the caller
    /// to drive from its own task (HTTP: the POST of a request), so the reply
    /// reaches the caller without a hop through another task.
    Exchange(Exchange),
}

/// What runs the rest of an [`Exchange`] once its caller stops driving it: in the
/// background, delivering a frame it ends with through the transport's
/// [`FrameSource`], as if the exchange had never been driven by a caller.
pub(crate) type Detach = Box<dyn FnOnce(BoxFuture<'static, Option<Bytes>>) + Send>;

/// One request's exchange with the medium, handed back by
/// [`FrameSink::try_send_now`] for the task that sent the request to drive.
///
/// [`Exchange::poll_run`] drives it to its end: `Some(frame)` is one inbound
/// frame (bounded by `maxFrameBytes` like any other) that the caller routes itself
/// instead of receiving it from the source. On the way, the exchange hands the
/// caller the frames it meets (an event stream's events) through its [`Outlet`]:
/// the caller takes each with [`Exchange::take_frame`] after every poll that
/// returns `Pending`, routes it, and polls again. Dropped before its
/// end (the reply arrived another way, or the caller gave up), the rest is
/// [detached](Detach): it runs in the background exactly as a frame sent with
/// [`FrameSink::send`] would (its frames then go through the source), so what
/// the medium does never depends on whether a caller drove it.
pub(crate) struct Exchange {
    rest: Option<BoxFuture<'static, Option<Bytes>>>,
    detach: Option<Detach>,
    outlet: Arc<Outlet>,
}

impl Exchange {
    /// An exchange whose rest `detach` runs if it is dropped unfinished, and whose
    /// future hands the frames it meets on the way to the caller through `outlet`
    /// ([`Outlet::hand_over`]).
    pub(crate) fn with_outlet(
        future: BoxFuture<'static, Option<Bytes>>,
        detach: Detach,
        outlet: Arc<Outlet>,
    ) -> Self {
        Exchange {
            rest: Some(future),
            detach: Some(detach),
            outlet,
        }
    }

    /// Polls the exchange once; `Ready` with the frame it ended with (`None` at
    /// once when it already ended). After `Pending`, [`Exchange::take_frame`].
    pub(crate) fn poll_run(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Bytes>> {
        let Some(rest) = self.rest.as_mut() else {
            return std::task::Poll::Ready(None);
        };
        let frame = std::task::ready!(rest.as_mut().poll(cx));
        self.rest = None;
        std::task::Poll::Ready(frame)
    }

    /// The frame the exchange handed over during the last poll, if any: the
    /// caller routes it, then polls the exchange again (which waits for that).
    pub(crate) fn take_frame(&mut self) -> Option<Bytes> {
        let outlet = &self.outlet;
        // Most polls hand nothing over: no lock for them.
        if !outlet.handed.load(std::sync::atomic::Ordering::Acquire) {
            return None;
        }
        outlet
            .handed
            .store(false, std::sync::atomic::Ordering::Release);
        outlet.lock().frame.take()
    }
}

impl Drop for Exchange {
    fn drop(&mut self) {
        // From now on its frames go through the source.
        self.outlet.lock().detached = true;
        if let (Some(rest), Some(detach)) = (self.rest.take(), self.detach.take()) {
            detach(rest);
        }
    }
}

impl std::fmt::Debug for Exchange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Exchange")
            .field("ended", &self.rest.is_none())
            .finish_non_exhaustive()
    }
}

/// Where an [`Exchange`] hands the task driving it the frames it meets on the
/// way, one at a time, so that they are routed by that task instead of going
/// through the source (another task, and on a multi-thread runtime another
/// thread).
#[derive(Default)]
pub(crate) struct Outlet {
    state: std::sync::Mutex<OutletState>,
    /// A frame waits in `state` (set and cleared with it).
    handed: std::sync::atomic::AtomicBool,
}

#[derive(Default)]
struct OutletState {
    /// Handed over, not yet taken by the caller.
    frame: Option<Bytes>,
    /// The exchange was dropped by its caller: nobody takes frames any more.
    detached: bool,
}

impl Outlet {
    fn lock(&self) -> std::sync::MutexGuard<'_, OutletState> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Hands `frame` to the caller driving the exchange and resolves once the
    /// caller took it (it routes a frame before polling the exchange again).
    /// Gives the frame back when no caller drives the exchange any more (it was
    /// detached, before or while the frame waited): the transport then delivers
    /// it through its source.
    ///
    /// Only the exchange's own future may call this: it returns `Pending`
    /// without a waker, relying on the caller polling again after
    /// [`Exchange::take_frame`], or on the detached rest being polled afresh.
    pub(crate) async fn hand_over(&self, frame: Bytes) -> std::result::Result<(), Bytes> {
        let mut frame = Some(frame);
        std::future::poll_fn(|_cx| {
            let mut state = self.lock();
            if let Some(frame) = frame.take() {
                if state.detached {
                    return std::task::Poll::Ready(Err(frame));
                }
                state.frame = Some(frame);
                self.handed
                    .store(true, std::sync::atomic::Ordering::Release);
                return std::task::Poll::Pending;
            }
            match state.frame.take() {
                None => std::task::Poll::Ready(Ok(())),
                Some(frame) if state.detached => std::task::Poll::Ready(Err(frame)),
                Some(frame) => {
                    state.frame = Some(frame);
                    std::task::Poll::Pending
                }
            }
        })
        .await
    }
}

impl std::fmt::Debug for Outlet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Outlet").finish_non_exhaustive()
    }
}

/// The outbound half of an open transport.
pub(crate) trait FrameSink: Send + 'static {
    /// Writes one frame.
    ///
    /// Returns once the frame is handed to the medium. An error is terminal
    /// (for stdio: `connection_closed` "stdin closed").
    fn send(&mut self, frame: OutboundFrame) -> BoxFuture<'_, Result<()>>;

    /// Writes several frames at once, in order, leaving `frames` empty (the caller
    /// reuses its allocation); transports that can batch override this.
    fn send_batch<'a>(
        &'a mut self,
        frames: &'a mut Vec<OutboundFrame>,
    ) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            for frame in frames.drain(..) {
                self.send(frame).await?;
            }
            Ok(())
        })
    }

    /// Hands `frame` to the medium only if that needs no waiting (a non-blocking
    /// write, a free in-flight slot), so the engine can write from the caller's
    /// task when nothing is queued ahead of the frame, instead of waking its writer
    /// task. Must not wait and must not be a partial write unless it returns
    /// [`TrySend::SentPartly`].
    ///
    /// `busy`: other requests are waiting for their replies, so more frames are
    /// likely to follow; a sink that writes a batch more cheaply than its frames
    /// one by one (stdio: one system call) may give the frame back, and the writer
    /// batches it with the others.
    ///
    /// The default gives every frame back: all of them then go through
    /// [`FrameSink::send`] and [`FrameSink::send_batch`].
    fn try_send_now(&mut self, frame: OutboundFrame, busy: bool) -> TrySend {
        let _ = busy;
        TrySend::WouldBlock(frame)
    }
}

/// The inbound half of an open transport.
pub(crate) trait FrameSource: Send + 'static {
    /// The next inbound event. After [`InboundEvent::Closed`] it must not be called again.
    fn next(&mut self) -> BoxFuture<'_, InboundEvent>;

    /// The next inbound event if it is at hand without waiting (stdio: a frame
    /// already read along with an earlier one), so the engine takes it without
    /// building a future; `None` sends it to [`FrameSource::next`]. The same
    /// sequence of events either way. The default has none at hand.
    fn try_next(&mut self) -> Option<InboundEvent> {
        None
    }
}

/// Tears the medium down (kill the child, send HTTP `DELETE`). Dropping it without
/// calling [`Shutdown::shutdown`] must still release the medium best-effort.
pub(crate) trait Shutdown: Send + 'static {
    /// Deterministic teardown.
    fn shutdown(self: Box<Self>) -> BoxFuture<'static, ()>;
}

/// What kind of medium a transport is, for the few rules that differ by medium
/// (the stateless era's cancellation and header rules, the probe's silence rule).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Medium {
    /// One long-lived byte stream in each direction (stdio): silence is the
    /// peer's answer, a cancellation is a notification, and the process may be
    /// started again.
    Stream,
    /// One exchange per message (Streamable HTTP): a request can be cut on its
    /// own, headers travel with each request, and silence is a network fault.
    Exchanges,
}

/// An open transport, split into its three parts.
pub(crate) struct Connection {
    /// What kind of medium this is.
    pub(crate) medium: Medium,
    /// Outbound frames.
    pub(crate) sink: Box<dyn FrameSink>,
    /// Inbound frames and the terminal event.
    pub(crate) source: Box<dyn FrameSource>,
    /// Teardown.
    pub(crate) shutdown: Box<dyn Shutdown>,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Connection { .. }")
    }
}

/// A way to reach an MCP server: [`StdioCommand`](stdio::StdioCommand) starts a
/// process, [`HttpTransport`](http::HttpTransport) talks to a URL, and
/// [`DuplexTransport`](duplex::DuplexTransport) speaks over a byte stream the host
/// already has (a unix socket, a TCP connection, the pipes of a process it started
/// itself, an in-process server). Give one to
/// [`ClientBuilder::connect`](crate::ClientBuilder::connect), or a
/// `Box<dyn Transport>` to [`ClientBuilder::connect_boxed`](crate::ClientBuilder::connect_boxed).
///
/// # Sealed
///
/// This trait cannot be implemented outside this crate. What a transport does for
/// the session (the frames it moves, the hints it reads, the bounds it enforces,
/// how it reports its end) is the session engine's own contract: it changes with
/// the engine, and keeping it private lets it change without breaking your code. To
/// reach a server over a medium of your own, connect the stream you already have
/// with [`DuplexTransport`](duplex::DuplexTransport): it frames and bounds it
/// exactly as stdio does.
///
/// ```compile_fail,E0277
/// struct Mine;
/// // error: `Mine` does not implement the crate's private `Open`.
/// impl smthrs_mcp::Transport for Mine {}
/// ```
pub trait Transport: sealed::Open + Send + 'static {}

/// The origin a transport reaches (HTTP: scheme, lower-cased host, effective
/// port), or `None` (stdio, duplex): what a group's era cache is keyed by.
pub(crate) fn origin_of(transport: &dyn Transport) -> Option<(&'static str, String, u16)> {
    transport.origin()
}

impl Transport for stdio::StdioCommand {}
impl Transport for http::HttpTransport {}
impl Transport for duplex::DuplexTransport {}

/// The seal: the real `open`, on a trait public in name only (this module is
/// private, so nothing outside the crate can name or implement it). Its signature
/// names crate-private types, which is the point (hence the `allow`).
#[allow(private_interfaces)]
mod sealed {
    use futures_util::future::BoxFuture;

    use super::{Connection, TransportContext, duplex, http, stdio};
    use crate::error::Result;

    pub trait Open {
        /// Opens the medium. A failure to start is the transport's typed error
        /// (`spawn_failed` for stdio). May be called again for a fresh medium
        /// (the engine starts a stdio server again when it exited during the
        /// protocol probe, as some legacy servers do).
        fn open(&self, ctx: TransportContext) -> BoxFuture<'static, Result<Connection>>;

        /// The origin (scheme, lower-cased host, effective port) of a transport
        /// that reaches a URL; `None` for the others.
        fn origin(&self) -> Option<(&'static str, String, u16)> {
            None
        }
    }

    impl Open for stdio::StdioCommand {
        fn open(&self, ctx: TransportContext) -> BoxFuture<'static, Result<Connection>> {
            stdio::StdioCommand::open(self, ctx)
        }
    }

    impl Open for http::HttpTransport {
        fn open(&self, ctx: TransportContext) -> BoxFuture<'static, Result<Connection>> {
            http::HttpTransport::open(self, ctx)
        }

        fn origin(&self) -> Option<(&'static str, String, u16)> {
            http::HttpTransport::origin(self)
        }
    }

    impl Open for duplex::DuplexTransport {
        fn open(&self, ctx: TransportContext) -> BoxFuture<'static, Result<Connection>> {
            duplex::DuplexTransport::open(self, ctx)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// An exchange that hands `frames` over through its outlet, then ends with
    /// `None`; its detached rest is recorded in `detached`.
    fn exchange_of(
        frames: Vec<&'static [u8]>,
        delivered: Arc<Mutex<Vec<Bytes>>>,
        detached: Arc<Mutex<Option<BoxFuture<'static, Option<Bytes>>>>>,
    ) -> Exchange {
        let outlet = Arc::new(Outlet::default());
        let handed = outlet.clone();
        let future = Box::pin(async move {
            for frame in frames {
                // What the transport does with a frame given back: deliver it
                // through its source (recorded here).
                if let Err(frame) = handed.hand_over(Bytes::from_static(frame)).await {
                    delivered.lock().unwrap().push(frame);
                }
            }
            None
        });
        let detach: Detach = Box::new(move |rest| *detached.lock().unwrap() = Some(rest));
        Exchange::with_outlet(future, detach, outlet)
    }

    #[test]
    fn the_caller_takes_every_frame_in_order_then_the_end() {
        let delivered = Arc::new(Mutex::new(Vec::new()));
        let detached = Arc::new(Mutex::new(None));
        let mut exchange = exchange_of(vec![b"one", b"two"], delivered.clone(), detached.clone());
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        let mut taken = Vec::new();
        loop {
            match exchange.poll_run(&mut cx) {
                std::task::Poll::Ready(frame) => {
                    assert!(frame.is_none());
                    break;
                }
                std::task::Poll::Pending => taken.push(exchange.take_frame().expect("a frame")),
            }
        }
        assert_eq!(taken, [&b"one"[..], b"two"]);
        drop(exchange);
        assert!(delivered.lock().unwrap().is_empty());
        assert!(
            detached.lock().unwrap().is_none(),
            "an ended exchange is not detached"
        );
    }

    #[test]
    fn frames_after_the_caller_let_go_go_through_the_source() {
        let delivered = Arc::new(Mutex::new(Vec::new()));
        let detached = Arc::new(Mutex::new(None));
        let mut exchange = exchange_of(
            vec![b"one", b"two", b"three"],
            delivered.clone(),
            detached.clone(),
        );
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        assert!(exchange.poll_run(&mut cx).is_pending());
        assert_eq!(exchange.take_frame().as_deref(), Some(&b"one"[..]));
        // The caller stops driving (its reply came): the rest is detached, and
        // every later frame is given back to the transport, none lost.
        drop(exchange);
        let mut rest = detached.lock().unwrap().take().expect("detached");
        assert!(rest.as_mut().poll(&mut cx).is_ready());
        assert_eq!(*delivered.lock().unwrap(), [&b"two"[..], b"three"]);
    }

    #[test]
    fn a_frame_left_untaken_at_the_drop_is_not_lost() {
        let delivered = Arc::new(Mutex::new(Vec::new()));
        let detached = Arc::new(Mutex::new(None));
        let mut exchange = exchange_of(vec![b"one"], delivered.clone(), detached.clone());
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        assert!(exchange.poll_run(&mut cx).is_pending());
        drop(exchange);
        let mut rest = detached.lock().unwrap().take().expect("detached");
        assert!(rest.as_mut().poll(&mut cx).is_ready());
        assert_eq!(*delivered.lock().unwrap(), [&b"one"[..]]);
    }
}
