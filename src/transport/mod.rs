//! The `Transport` trait: bytes in, bytes out, and how the medium ended.
//!
//! A transport turns its medium (a child's pipes, HTTP exchanges) into a stream of
//! inbound frames, each already bounded by `maxFrameBytes`, accepts outbound frames,
//! and reports how it ended. It never parses JSON-RPC ids or knows about tools: all
//! meaning lives in the session engine, so both transports behave identically.

use std::sync::Arc;

use bytes::Bytes;
use futures_util::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use crate::diagnostics::Diagnostics;
use crate::error::{Error, Result};
use crate::limits::Limits;

pub mod framing;
pub mod http;
pub mod stdio;

/// What a transport needs to know from the session that opens it.
#[derive(Debug, Clone)]
pub struct TransportContext {
    /// The configured server name (used in public messages and diagnostics).
    pub server: Arc<str>,
    /// The validated limits of this session.
    pub limits: Limits,
    /// The private diagnostics channel.
    pub diagnostics: Diagnostics,
}

/// One inbound event. `Debug` prints frame lengths, never frame contents (they
/// are server-authored).
pub enum InboundEvent {
    /// One complete frame of at most `maxFrameBytes` bytes (no trailing newline).
    Frame(Bytes),
    /// The medium ended; the error is the terminal reason (`connection_closed`
    /// "stdout closed", "exited with code N", or `protocol_error` for an over-long
    /// frame). No event follows it.
    Closed(Error),
    /// (HTTP) The server answered `404` to a request carrying a session id: the
    /// session is gone. The transport has forgotten the session id; `failed` is the
    /// frame whose POST got the 404. The engine re-initialises once, compares the
    /// catalog, and then re-sends `failed` or ends the session.
    SessionExpired {
        /// The outbound frame that was refused.
        failed: OutboundFrame,
        /// The 404 answered a session id the transport had already forgotten (a
        /// POST in flight when an earlier 404 expired the session): the engine
        /// re-sends the frame with the new session instead of counting a second
        /// expiry.
        stale: bool,
    },
}

/// The engine's handle on one outstanding request, given to the transport with its
/// frame so that a transport can tell whether the reply has arrived (HTTP: whether a
/// broken SSE stream must be resumed) and fail just that request (HTTP: an error
/// status answering its POST) without parsing JSON-RPC.
#[derive(Clone)]
pub struct RequestHandle {
    control: Control,
}

#[derive(Clone)]
enum Control {
    /// The session engine's own request state (one allocation per request).
    Engine(Arc<crate::session::engine::RequestCtl>),
    /// Built with [`RequestHandle::new`] (tests, other engines).
    Custom {
        done: CancellationToken,
        fail: Arc<dyn Fn(Error) + Send + Sync>,
    },
}

impl RequestHandle {
    /// Builds a handle: `done` is cancelled by the engine once the request is settled
    /// (reply routed, failed, or abandoned); `fail` settles it with an error.
    pub fn new(done: CancellationToken, fail: Arc<dyn Fn(Error) + Send + Sync>) -> Self {
        RequestHandle {
            control: Control::Custom { done, fail },
        }
    }

    pub(crate) fn engine(control: Arc<crate::session::engine::RequestCtl>) -> Self {
        RequestHandle {
            control: Control::Engine(control),
        }
    }

    /// True once the request is settled; the transport need not deliver more for it.
    pub fn is_done(&self) -> bool {
        match &self.control {
            Control::Engine(control) => control.is_done(),
            Control::Custom { done, .. } => done.is_cancelled(),
        }
    }

    /// Resolves once the request is settled.
    pub async fn done(&self) {
        match &self.control {
            Control::Engine(control) => control.done().await,
            Control::Custom { done, .. } => done.cancelled().await,
        }
    }

    /// Fails this request only (the session continues).
    pub fn fail(&self, error: Error) {
        match &self.control {
            Control::Engine(control) => control.fail(error),
            Control::Custom { fail, .. } => fail(error),
        }
    }
}

impl std::fmt::Debug for RequestHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestHandle")
            .field("done", &self.is_done())
            .finish()
    }
}

/// One outbound frame: complete JSON-RPC text without a trailing newline, plus the
/// engine's handle when the frame is a request expecting a reply. `Debug` prints the
/// length only (a frame carries tool arguments).
#[derive(Clone)]
pub struct OutboundFrame {
    /// The frame's bytes.
    pub bytes: Bytes,
    /// Present for requests (not for notifications or replies to the server).
    pub request: Option<RequestHandle>,
}

impl std::fmt::Debug for OutboundFrame {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OutboundFrame")
            .field("bytes", &self.bytes.len())
            .field("request", &self.request)
            .finish()
    }
}

impl std::fmt::Debug for InboundEvent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            InboundEvent::Frame(bytes) => f.debug_tuple("Frame").field(&bytes.len()).finish(),
            InboundEvent::Closed(error) => f.debug_tuple("Closed").field(error).finish(),
            InboundEvent::SessionExpired { failed, stale } => f
                .debug_struct("SessionExpired")
                .field("failed", failed)
                .field("stale", stale)
                .finish(),
        }
    }
}

/// What [`FrameSink::try_send_now`] did with a frame.
#[derive(Debug)]
pub enum TrySend {
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
}

/// The outbound half of an open transport.
pub trait FrameSink: Send + 'static {
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

    /// Told once the handshake negotiated a protocol version (HTTP sends it as the
    /// `MCP-Protocol-Version` header on every later request).
    fn protocol_negotiated(&mut self, _version: &str) {}

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
pub trait FrameSource: Send + 'static {
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
pub trait Shutdown: Send + 'static {
    /// Deterministic teardown.
    fn shutdown(self: Box<Self>) -> BoxFuture<'static, ()>;
}

/// An open transport, split into its three parts.
pub struct Connection {
    /// Outbound frames.
    pub sink: Box<dyn FrameSink>,
    /// Inbound frames and the terminal event.
    pub source: Box<dyn FrameSource>,
    /// Teardown.
    pub shutdown: Box<dyn Shutdown>,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Connection { .. }")
    }
}

/// A way to reach an MCP server: spawn a process, or talk to a URL.
pub trait Transport: Send + 'static {
    /// Opens the medium. A failure to start is the transport's typed error
    /// (`spawn_failed` for stdio).
    fn open(self: Box<Self>, ctx: TransportContext) -> BoxFuture<'static, Result<Connection>>;
}
