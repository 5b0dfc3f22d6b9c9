//! The transport-agnostic core: pending requests, the writer queue, the reader,
//! cancellation and the single terminal transition.
//!
//! The parts: [`request`] (one request's state and the caller's wait), [`writer`]
//! (the outbound queue, the direct write and the writer task), [`reader`]
//! (routing inbound frames and the reader task). This file holds what they
//! share: the session's state, its terminal transition and frame encoding.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use bytes::Bytes;
use serde::Serialize;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::diagnostics::Diagnostics;
use crate::error::{Error, Result};
use crate::json_bounds::LimitedWriter;
use crate::jsonrpc::Id;
use crate::limits::Limits;
use crate::observe;
use crate::transport::{FrameMeta, FrameSink, HttpHints, Medium, OutboundFrame};

mod pause;
mod reader;
mod request;
mod writer;

pub(crate) use pause::PauseClock;
pub(crate) use reader::run_reader;
pub(crate) use request::{MovableDeadline, RequestCtl, RequestOptions};
use request::{PendingMap, WRITTEN};
pub(crate) use writer::{Queued, run_writer};

/// The message of the terminal error recorded by `close()` and by dropping the client.
pub(crate) const SCOPE_CLOSED: &str = "connection scope closed";

/// How long closing the scope ([`Client::close`](crate::session::Client::close), or the
/// teardown after the last handle is dropped) spends writing the
/// `notifications/cancelled` it owes (for calls that timed out or were dropped, and
/// for calls still waiting when the scope closed) before the transport is torn
/// down: stdin closed, or `DELETE` sent. A frame the writer was in the middle of
/// writing is finished first, within the same bound. A server that stopped reading
/// costs at most this long; cancellations a full outbound queue refused are not
/// owed (they are best effort).
pub(crate) const CLOSE_CANCEL_GRACE: std::time::Duration = std::time::Duration::from_millis(500);

/// A notification envelope (keys in `serde_json::Map` order).
#[derive(Serialize)]
pub(crate) struct NotificationFrame<'a, P: Serialize> {
    pub(crate) jsonrpc: &'static str,
    pub(crate) method: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) params: Option<P>,
}

/// How a frame is written, as the protocol layer decides it and the core
/// carries it: the protocol version the frame states (HTTP:
/// `MCP-Protocol-Version`), once there is one, and whether it is stateless (no
/// session: each request whole, and on HTTP cut rather than cancelled).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Framing {
    pub(crate) version: Option<&'static str>,
    pub(crate) stateless: bool,
}

/// The [`FrameMeta`] of a notification written with `framing`.
pub(crate) fn notification_meta(method: &'static str, framing: Framing) -> FrameMeta {
    FrameMeta {
        method: Some(method),
        http: HttpHints::new(framing.version, framing.stateless),
    }
}

/// What the core asks of the protocol layer above it: what to do with the
/// messages a server starts (the core routes replies itself), how a frame is
/// written now, and what to do when the transport lost the server's session
/// state. Implemented once, by the protocol layer; the core names nothing
/// else of it.
pub(crate) trait ProtocolHooks: Send + Sync + 'static {
    /// A request from the server: the reply the core is to queue, if any (a
    /// request answered elsewhere, or dropped, has none).
    fn request(
        self: Arc<Self>,
        core: &Arc<Core>,
        id: Id,
        method: &str,
        frame: &[u8],
    ) -> Option<Value>;

    /// A notification from the server (the core has counted it as dropped).
    /// `stream`: the tag of the request whose own stream carried it
    /// ([`RequestOptions::stream_tag`]), when the medium tells (HTTP: the event
    /// stream answering a tagged request's POST); `None` for everything else
    /// (stdio, the standalone stream, an untagged request's stream).
    fn notification(&self, core: &Arc<Core>, method: &str, frame: &[u8], stream: Option<u64>);

    /// How a frame the core writes on its own (a reply to a server request) is
    /// written now.
    fn framing(&self) -> Framing;

    /// A stateful request about to be submitted: `Some` gives the frame back to
    /// send now; `None` means the protocol layer holds it (while it
    /// re-establishes the server's session) and will send it itself.
    fn hold(&self, frame: OutboundFrame, control: &Arc<RequestCtl>) -> Option<OutboundFrame>;

    /// The transport lost the server's session state while sending `refused`
    /// (HTTP: a `404` to a request carrying a session id; `stale` when that id
    /// was already replaced). `Err` ends the session with that error.
    fn state_lost(
        self: Arc<Self>,
        core: &Arc<Core>,
        refused: OutboundFrame,
        stale: bool,
    ) -> Result<()>;
}

/// The session's core, shared by its tasks and callers: ids, pending requests,
/// the outbound queue, the terminal transition, and the limits. What differs by
/// era lives in the protocol layer, reached through [`ProtocolHooks`].
pub(crate) struct Core {
    pub(crate) server: Arc<str>,
    pub(crate) limits: Limits,
    pub(crate) diagnostics: Diagnostics,
    next_id: AtomicU64,
    pending: Mutex<PendingMap>,
    terminal: OnceLock<Error>,
    /// Cancelled once, when the terminal error is recorded.
    pub(crate) ended: CancellationToken,
    queue: mpsc::Sender<Queued>,
    /// Items admitted to `queue` and not yet written (or skipped) by the writer.
    /// While it is non-zero no frame is written directly: nothing overtakes them.
    backlog: AtomicUsize,
    /// The sink, while the writer task is idle: a caller may then write its frame
    /// directly ([`Core::write_now`]). Taken by the writer while it writes, and
    /// dropped when the writer ends.
    sink: Mutex<Option<Box<dyn FrameSink>>>,
    /// The medium (a few rules differ: cancellation, headers, silence).
    pub(crate) medium: Medium,
    /// The protocol layer above.
    hooks: Arc<dyn ProtocolHooks>,
    /// The time the host spent answering legacy server requests.
    pub(crate) pauses: PauseClock,
    /// Noise frames dropped (for the `tracing` end-of-session event).
    noise: AtomicU64,
    /// Notifications and replies nobody waited for, dropped.
    dropped: AtomicU64,
    /// Set when the scope closed: until then the writer still writes owed
    /// cancellations ([`CLOSE_CANCEL_GRACE`]).
    close_deadline: OnceLock<Instant>,
    /// The last request's encoded length: the next request's buffer starts at
    /// about that size (a buffer that grows reallocates and copies; a 2026-07-28
    /// request with its `_meta` outgrows a fixed first guess every time).
    request_size: AtomicUsize,
}

/// The first buffer of a request, and the bounds of the size learnt from the
/// last one (past the upper bound, growing costs little next to the copying).
const REQUEST_BUFFER: std::ops::RangeInclusive<usize> = 256..=4096;

/// Room over the last request's length (its id and arguments may be longer).
const REQUEST_SLACK: usize = 64;

/// `queueCapacity` as a channel size: tokio refuses more than
/// `Semaphore::MAX_PERMITS` slots (which matters on 32-bit targets), and any queue
/// that large is unbounded in practice anyway.
pub(crate) fn queue_slots(limits: &Limits) -> usize {
    Limits::usize_of(limits.queue_capacity).clamp(1, tokio::sync::Semaphore::MAX_PERMITS)
}

pub(crate) fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Core {
    pub(crate) fn new(
        server: Arc<str>,
        limits: Limits,
        diagnostics: Diagnostics,
        medium: Medium,
        hooks: Arc<dyn ProtocolHooks>,
    ) -> (Arc<Core>, mpsc::Receiver<Queued>) {
        let (queue, rx) = mpsc::channel(queue_slots(&limits));
        let shared = Arc::new(Core {
            server,
            limits,
            diagnostics,
            next_id: AtomicU64::new(0),
            pending: Mutex::new(PendingMap::default()),
            terminal: OnceLock::new(),
            ended: CancellationToken::new(),
            queue,
            backlog: AtomicUsize::new(0),
            sink: Mutex::new(None),
            medium,
            hooks,
            pauses: PauseClock::default(),
            noise: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            close_deadline: OnceLock::new(),
            request_size: AtomicUsize::new(0),
        });
        (shared, rx)
    }

    /// The terminal error, once the session has ended.
    pub(crate) fn terminal(&self) -> Option<&Error> {
        self.terminal.get()
    }

    /// The single terminal transition: the first error wins; every pending request
    /// and every later call gets it.
    pub(crate) fn terminate(&self, error: Error) {
        if self.terminal.set(error).is_err() {
            return;
        }
        let error = self
            .terminal
            .get()
            .cloned()
            .unwrap_or_else(|| Error::closed(SCOPE_CLOSED));
        let drained: Vec<Arc<RequestCtl>> = lock(&self.pending).drain().map(|(_, p)| p).collect();
        for pending in drained {
            pending.complete(Err(error.clone()));
        }
        self.report_end(&error);
        self.ended.cancel();
    }

    /// The `tracing` event of the terminal transition (no message: kinds and counts).
    fn report_end(&self, error: &Error) {
        observe::session_ended(
            &self.server,
            error.kind().as_str(),
            self.noise.load(Ordering::Relaxed),
            self.dropped.load(Ordering::Relaxed),
        );
    }

    /// The scope closed (`close()`, or the last handle dropped): the terminal
    /// transition with "connection scope closed", after which the writer still
    /// writes, within [`CLOSE_CANCEL_GRACE`], the cancellations owed: those queued
    /// for requests abandoned earlier, and one for every request written and still
    /// unanswered now (closing abandons it).
    pub(crate) fn close_scope(&self) {
        if self.terminal().is_some() {
            return;
        }
        let _ = self.close_deadline.set(Instant::now() + CLOSE_CANCEL_GRACE);
        let error = Error::closed(SCOPE_CLOSED);
        let abandoned: Vec<Arc<RequestCtl>> = {
            let mut pending = lock(&self.pending);
            if self.terminal.set(error.clone()).is_err() {
                return;
            }
            pending.drain().map(|(_, p)| p).collect()
        };
        self.report_end(&error);
        for request in abandoned {
            let written = request.state.load(Ordering::Acquire) == WRITTEN;
            if written && request.cancellable {
                self.send_cancelled(request.id, request.framing);
            }
            request.complete(Err(error.clone()));
        }
        self.ended.cancel();
    }

    /// When the scope closed with cancellations still to write: the deadline.
    fn close_deadline(&self) -> Option<Instant> {
        self.close_deadline.get().copied()
    }

    fn ended_error(&self) -> Error {
        self.terminal()
            .cloned()
            .unwrap_or_else(|| Error::closed(SCOPE_CLOSED))
    }

    /// Serializes a frame under `maxOutboundFrameBytes`, stopping early on overflow.
    pub(crate) fn encode<T: Serialize + ?Sized>(&self, message: &T) -> Result<Bytes> {
        let limit = Limits::usize_of(self.limits.max_outbound_frame_bytes);
        // The serializer owns the writer (no `&mut W` layer on every write).
        let mut serializer = serde_json::Serializer::new(LimitedWriter::with_capacity(limit, 256));
        if message.serialize(&mut serializer).is_err() {
            return Err(Error::protocol(format!(
                "outbound frame exceeds maxOutboundFrameBytes ({limit} bytes)"
            )));
        }
        let bytes = serializer.into_inner().into_inner();
        // Exact UTF-8 sizing of the final frame (escapes included).
        if bytes.len() > limit {
            return Err(Error::protocol(format!(
                "outbound frame exceeds maxOutboundFrameBytes ({limit} bytes)"
            )));
        }
        Ok(Bytes::from(bytes))
    }

    /// The room a request's buffer starts with (see `request_size`).
    fn request_buffer(&self) -> usize {
        let learnt = self.request_size.load(Ordering::Relaxed) + REQUEST_SLACK;
        learnt.clamp(*REQUEST_BUFFER.start(), *REQUEST_BUFFER.end())
    }

    /// Serializes a request envelope under `maxOutboundFrameBytes`:
    /// `{"id":..,"jsonrpc":"2.0","method":..,"params":..}`, the keys in the order
    /// a `serde_json::Map` writes them (so the bytes are the same), the fixed parts
    /// written as they are rather than through the serializer.
    pub(crate) fn encode_request<P: Serialize + ?Sized>(
        &self,
        id: u64,
        string_id: bool,
        method: &str,
        params: &P,
    ) -> Result<Bytes> {
        use std::io::Write as _;
        let limit = Limits::usize_of(self.limits.max_outbound_frame_bytes);
        let mut out = LimitedWriter::with_capacity(limit, self.request_buffer());
        let written = (|| -> std::io::Result<()> {
            out.write_all(b"{\"id\":")?;
            if string_id {
                out.write_all(b"\"")?;
                out.write_all(request::PROBE_ID_PREFIX.as_bytes())?;
            }
            out.write_all(itoa::Buffer::new().format(id).as_bytes())?;
            if string_id {
                out.write_all(b"\"")?;
            }
            out.write_all(b",\"jsonrpc\":\"2.0\",\"method\":")?;
            method
                .serialize(&mut serde_json::Serializer::new(&mut out))
                .map_err(std::io::Error::other)?;
            out.write_all(b",\"params\":")?;
            params
                .serialize(&mut serde_json::Serializer::new(&mut out))
                .map_err(std::io::Error::other)?;
            out.write_all(b"}")
        })();
        if written.is_err() {
            return Err(Error::protocol(format!(
                "outbound frame exceeds maxOutboundFrameBytes ({limit} bytes)"
            )));
        }
        let out = out.into_inner();
        if self.request_size.load(Ordering::Relaxed) != out.len() {
            self.request_size.store(out.len(), Ordering::Relaxed);
        }
        Ok(Bytes::from(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    /// A protocol layer that answers nothing and holds nothing.
    struct NoProtocol;

    impl ProtocolHooks for NoProtocol {
        fn request(self: Arc<Self>, _: &Arc<Core>, _: Id, _: &str, _: &[u8]) -> Option<Value> {
            None
        }
        fn notification(&self, _: &Arc<Core>, _: &str, _: &[u8], _: Option<u64>) {}
        fn framing(&self) -> Framing {
            Framing::default()
        }
        fn hold(&self, frame: OutboundFrame, _: &Arc<RequestCtl>) -> Option<OutboundFrame> {
            Some(frame)
        }
        fn state_lost(self: Arc<Self>, _: &Arc<Core>, _: OutboundFrame, _: bool) -> Result<()> {
            Err(Error::closed("state lost"))
        }
    }

    fn shared(max_outbound_frame_bytes: u64) -> Arc<Core> {
        let limits = Limits {
            max_outbound_frame_bytes,
            ..Limits::default()
        };
        Core::new(
            "s".into(),
            limits,
            Diagnostics::default(),
            Medium::Stream,
            Arc::new(NoProtocol),
        )
        .0
    }

    #[test]
    fn request_frames_are_what_serde_json_writes_for_the_envelope() {
        let shared = shared(1 << 20);
        let params = serde_json::json!({"name": "echo", "arguments": {"t": "a\"b\u{1}é", "n": [1.5, -2, null]}});
        for (id, method) in [(0, "tools/call"), (u64::MAX, "we\"ird\n/méthod")] {
            let frame = shared
                .encode_request(id, false, method, &params)
                .expect("fits");
            let reference = serde_json::to_vec(&serde_json::json!({
                "jsonrpc": "2.0", "id": id, "method": method, "params": params,
            }))
            .expect("serializes");
            assert_eq!(&frame[..], &reference[..]);
        }
    }

    #[test]
    fn request_frames_past_the_outbound_limit_are_refused() {
        let params = serde_json::json!({"text": "x".repeat(100)});
        let frame = shared(1 << 20)
            .encode_request(1, false, "m", &params)
            .expect("fits");
        let exact = shared(frame.len() as u64);
        assert_eq!(
            exact.encode_request(1, false, "m", &params).expect("fits"),
            frame
        );
        let error = shared(frame.len() as u64 - 1)
            .encode_request(1, false, "m", &params)
            .expect_err("one byte over");
        assert_eq!(error.kind(), ErrorKind::ProtocolError);
        assert!(error.message().contains("maxOutboundFrameBytes"));
    }

    #[test]
    fn a_request_buffer_starts_at_about_the_last_requests_size_within_bounds() {
        let shared = shared(1 << 21);
        assert_eq!(shared.request_buffer(), *REQUEST_BUFFER.start());
        let encode = |text_len: usize| {
            let params = serde_json::json!({"text": "x".repeat(text_len)});
            shared
                .encode_request(1, false, "m", &params)
                .expect("fits")
                .len()
        };
        let len = encode(600);
        assert!(shared.request_buffer() >= len, "room for a request as long");
        encode(1 << 20);
        assert_eq!(shared.request_buffer(), *REQUEST_BUFFER.end(), "capped");
        encode(10);
        assert_eq!(
            shared.request_buffer(),
            *REQUEST_BUFFER.start(),
            "learnt again"
        );
    }
}
