//! The transport-agnostic core: pending requests, the writer queue, the reader,
//! cancellation and the single terminal transition.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, TryLockError, Weak};
use std::task::{Context, Poll};

use bytes::Bytes;
use futures_util::future::BoxFuture;
use futures_util::task::AtomicWaker;
use secrecy::SecretString;
use serde::Serialize;
use serde_json::Value;
use tokio::sync::{Notify, mpsc};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::diagnostics::{DiagnosticEvent, Diagnostics};
use crate::error::{Detail, Error, ErrorKind, MAX_SUPPORTED_VERSIONS, Result};
use crate::json_bounds::LimitedWriter;
use crate::jsonrpc::{self, Inbound, ResultBody, RpcError};
use crate::limits::Limits;
use crate::observe;
use crate::transport::{
    CallHeaders, Exchange, FrameMeta, FrameSink, FrameSource, InboundEvent, Medium, OutboundFrame,
    RequestControl, RequestHandle, TrySend,
};

use super::era::{MODERN_PROTOCOL_VERSION, RequestMeta, Wire, WireCell};
use super::inputs::{INPUT_METHODS, Inputs};
use super::legacy::Reinit;

/// Request states, advanced with compare-and-swap by the writer and the caller.
const QUEUED: u8 = 0;
const WRITTEN: u8 = 1;
const ABANDONED: u8 = 2;
const SETTLED: u8 = 3;

/// The message of the terminal error recorded by `close()` and by dropping the client.
pub(crate) const SCOPE_CLOSED: &str = "connection scope closed";

/// How long closing the scope ([`Client::close`](crate::Client::close), or the
/// teardown after the last handle is dropped) spends writing the
/// `notifications/cancelled` it owes (for calls that timed out or were dropped, and
/// for calls still waiting when the scope closed) before the transport is torn
/// down: stdin closed, or `DELETE` sent. A frame the writer was in the middle of
/// writing is finished first, within the same bound. A server that stopped reading
/// costs at most this long; cancellations a full outbound queue refused are not
/// owed (they are best effort).
pub const CLOSE_CANCEL_GRACE: std::time::Duration = std::time::Duration::from_millis(500);

/// One item of the outbound queue.
pub(crate) enum Queued {
    /// A frame; `request` is present for requests so an abandoned one can be
    /// skipped (its state must still be `QUEUED`).
    Frame {
        frame: OutboundFrame,
        request: Option<Arc<RequestCtl>>,
    },
    /// A `notifications/cancelled`: also written while the scope closes, within
    /// [`CLOSE_CANCEL_GRACE`].
    Cancel(OutboundFrame),
    /// Finish a frame that a direct write left partly written.
    Flush,
}

/// One request's state, shared by its caller, the pending map, the writer and the
/// transport's [`RequestHandle`]: a single allocation per request, in place of a
/// reply channel, a state cell, a cancellation token and a failure callback.
pub(crate) struct RequestCtl {
    id: u64,
    /// The reply's result is read as a `tools/call` result.
    tool_call: bool,
    /// Abandoning it after it was written sends `notifications/cancelled` (never
    /// for `initialize`).
    cancellable: bool,
    /// What it was written for (a stateless request on HTTP is cancelled by
    /// cutting its exchange, not by a notification).
    wire: Wire,
    /// A JSON-RPC error answering it is expected and not reported to the
    /// diagnostics observer (the probe: a legacy server's error is its answer),
    /// nor is an error with `id: null` that arrives while it waits.
    quiet: bool,
    /// `QUEUED`, `WRITTEN`, `ABANDONED` or `SETTLED`.
    state: AtomicU8,
    /// The outcome, stored once by whoever settles the request.
    outcome: Mutex<Option<Result<ResultBody>>>,
    /// The caller waiting for `outcome`.
    waker: AtomicWaker,
    /// Set before anyone waits in [`RequestCtl::done`], so that settling wakes
    /// `done_waiters` only when someone may be waiting.
    watched: AtomicBool,
    done_waiters: Notify,
    /// For [`RequestCtl::fail`] (a transport failing just this request).
    shared: Weak<Shared>,
}

impl RequestCtl {
    /// Settled or abandoned: nothing more is expected for this request.
    pub(crate) fn is_done(&self) -> bool {
        matches!(self.state.load(Ordering::Acquire), ABANDONED | SETTLED)
    }

    /// Resolves once [`RequestCtl::is_done`].
    pub(crate) async fn done(&self) {
        self.watched.store(true, Ordering::SeqCst);
        loop {
            let notified = self.done_waiters.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            // SeqCst, paired with the stores in `complete` and the guard's swap.
            if matches!(self.state.load(Ordering::SeqCst), ABANDONED | SETTLED) {
                return;
            }
            notified.await;
        }
    }

    /// Fails this request only.
    pub(crate) fn fail(&self, error: Error) {
        if let Some(shared) = self.shared.upgrade() {
            shared.settle(self.id, Err(error));
        }
    }

    fn wake_done_waiters(&self) {
        if self.watched.load(Ordering::SeqCst) {
            self.done_waiters.notify_waiters();
        }
    }

    /// Stores the outcome and wakes the caller. Called once, by whoever removed the
    /// request from the pending map.
    fn complete(&self, outcome: Result<ResultBody>) {
        *lock(&self.outcome) = Some(outcome);
        self.state.store(SETTLED, Ordering::SeqCst);
        self.wake_done_waiters();
        self.waker.wake();
    }
}

impl RequestControl for RequestCtl {
    fn is_done(&self) -> bool {
        RequestCtl::is_done(self)
    }

    fn is_abandoned(&self) -> bool {
        self.state.load(Ordering::Acquire) == ABANDONED
    }

    fn done(&self) -> BoxFuture<'_, ()> {
        Box::pin(RequestCtl::done(self))
    }

    fn fail(&self, error: Error) {
        RequestCtl::fail(self, error)
    }
}

/// The caller's wait for [`RequestCtl::complete`].
struct Reply<'a>(&'a RequestCtl);

impl Future for Reply<'_> {
    type Output = Result<ResultBody>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let control = self.0;
        if control.state.load(Ordering::Acquire) != SETTLED {
            control.waker.register(cx.waker());
            if control.state.load(Ordering::Acquire) != SETTLED {
                return Poll::Pending;
            }
        }
        match lock(&control.outcome).take() {
            Some(outcome) => Poll::Ready(outcome),
            // `complete` stores the outcome before `SETTLED`, and only this future
            // takes it (once): unreachable. Not a panic in release builds.
            None => {
                debug_assert!(false, "a settled request without its outcome");
                Poll::Pending
            }
        }
    }
}

/// Hashes the engine's own request ids (sequential `u64`s) with one multiply
/// (Fibonacci hashing), so the high bits the table probes with differ for
/// consecutive ids. Only ids this engine chose are ever stored; a server's reply
/// id is only looked up.
#[derive(Default, Clone, Copy)]
struct IdHasher(u64);

impl std::hash::Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(byte)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_u64(&mut self, id: u64) {
        self.0 = (self.0 ^ id).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

type PendingMap = HashMap<u64, Arc<RequestCtl>, std::hash::BuildHasherDefault<IdHasher>>;

/// A notification envelope (keys in `serde_json::Map` order).
#[derive(Serialize)]
pub(crate) struct NotificationFrame<'a, P: Serialize> {
    pub(crate) jsonrpc: &'static str,
    pub(crate) method: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) params: Option<P>,
}

/// `notifications/cancelled` parameters (keys in `serde_json::Map` order).
#[derive(Serialize)]
struct CancelledParams {
    reason: &'static str,
    #[serde(rename = "requestId")]
    request_id: u64,
}

/// How [`Shared::request_body`] sends a request.
#[derive(Debug)]
pub(crate) struct RequestOptions {
    /// What it is written for.
    pub(crate) wire: Wire,
    /// Abandoning it after it was written sends `notifications/cancelled`.
    pub(crate) cancellable: bool,
    /// Read its result as a `tools/call` result when the reader can
    /// ([`jsonrpc::classify_with`]).
    pub(crate) tool_call: bool,
    /// `Mcp-Name` and `Mcp-Param-*` (HTTP, stateless).
    pub(crate) call: Option<Arc<CallHeaders>>,
    /// Keep a JSON-RPC error answering it from the diagnostics observer.
    pub(crate) quiet: bool,
}

impl Default for RequestOptions {
    fn default() -> Self {
        RequestOptions {
            wire: Wire::Legacy(None),
            cancellable: true,
            tool_call: false,
            call: None,
            quiet: false,
        }
    }
}

/// The [`FrameMeta`] of a notification written for `wire`.
pub(crate) fn notification_meta(method: &'static str, wire: Wire) -> FrameMeta {
    FrameMeta {
        method: Some(method),
        protocol_version: wire.version(),
        stateless: wire.is_modern(),
        ..FrameMeta::default()
    }
}

/// What the session's tasks share.
pub(crate) struct Shared {
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
    /// directly ([`Shared::write_now`]). Taken by the writer while it writes, and
    /// dropped when the writer ends.
    sink: Mutex<Option<Box<dyn FrameSink>>>,
    /// The frozen catalog, once the handshake has produced it (the HTTP 404
    /// re-initialise compares a new catalog with it).
    pub(crate) catalog: OnceLock<Arc<crate::catalog::Catalog>>,
    /// The legacy HTTP session re-initialise ([`super::legacy`]).
    pub(crate) reinit: Mutex<Reinit>,
    /// True while a re-initialise runs (a cheap test before locking `reinit`).
    pub(crate) reinit_running: AtomicBool,
    /// What frames are written for now (legacy before and after its handshake,
    /// or modern).
    pub(crate) wire: WireCell,
    /// The medium (a few rules differ: cancellation, headers, silence).
    pub(crate) medium: Medium,
    /// The `_meta` of every modern request.
    pub(crate) request_meta: RequestMeta,
    /// The client capabilities declared (legacy `initialize`, modern `_meta`).
    pub(crate) capabilities: Value,
    /// The host's answers to input requests.
    pub(crate) inputs: Arc<Inputs>,
    /// The catalog pin the host gave, once the connect checked it.
    pub(crate) pin: OnceLock<crate::pin::CatalogPin>,
    /// Noise frames dropped (for the `tracing` end-of-session event).
    noise: AtomicU64,
    /// Notifications and replies nobody waited for, dropped.
    dropped: AtomicU64,
    /// Set when the scope closed: until then the writer still writes owed
    /// cancellations ([`CLOSE_CANCEL_GRACE`]).
    close_deadline: OnceLock<Instant>,
}

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

impl Shared {
    pub(crate) fn new(
        server: Arc<str>,
        limits: Limits,
        diagnostics: Diagnostics,
        medium: Medium,
        inputs: Arc<Inputs>,
    ) -> (Arc<Shared>, mpsc::Receiver<Queued>) {
        let capabilities = inputs.capabilities();
        let (queue, rx) = mpsc::channel(queue_slots(&limits));
        let shared = Arc::new(Shared {
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
            catalog: OnceLock::new(),
            reinit: Mutex::new(Reinit::Idle),
            reinit_running: AtomicBool::new(false),
            wire: WireCell::new(Wire::Legacy(None)),
            medium,
            request_meta: RequestMeta::new(MODERN_PROTOCOL_VERSION, &capabilities),
            capabilities,
            inputs,
            pin: OnceLock::new(),
            noise: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            close_deadline: OnceLock::new(),
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
                self.send_cancelled(request.id, request.wire);
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

    /// Serializes a request envelope under `maxOutboundFrameBytes`:
    /// `{"id":..,"jsonrpc":"2.0","method":..,"params":..}`, the keys in the order
    /// a `serde_json::Map` writes them (so the bytes are the same), the fixed parts
    /// written as they are rather than through the serializer.
    pub(crate) fn encode_request<P: Serialize + ?Sized>(
        &self,
        id: u64,
        method: &str,
        params: &P,
    ) -> Result<Bytes> {
        use std::io::Write as _;
        let limit = Limits::usize_of(self.limits.max_outbound_frame_bytes);
        let mut out = LimitedWriter::with_capacity(limit, 256);
        let written = (|| -> std::io::Result<()> {
            out.write_all(b"{\"id\":")?;
            out.write_all(itoa::Buffer::new().format(id).as_bytes())?;
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
        Ok(Bytes::from(out.into_inner()))
    }

    /// Queues a frame that is not a request (notification or reply), waiting for
    /// admission until `deadline`.
    pub(crate) async fn enqueue(
        &self,
        frame: Bytes,
        meta: FrameMeta,
        deadline: Instant,
    ) -> Result<()> {
        let frame = OutboundFrame {
            bytes: frame,
            meta,
            request: None,
        };
        let alone = lock(&self.pending).is_empty();
        // A notification's exchange is never handed back (only a request's is).
        self.submit(frame, None, alone, deadline).await.map(drop)
    }

    /// Writes `frame` at once when it can ([`Shared::write_now`]), else queues it
    /// for the writer, waiting for admission until `deadline`. Returns the
    /// request's exchange when the medium handed it to the caller to drive.
    ///
    /// `alone`: no other request is waiting for its reply. Otherwise the sink may
    /// prefer the queue (stdio: the writer sends the frames that gather there in
    /// one write, fewer system calls per frame); alone, the direct write saves the
    /// writer's wake-up on the latency-bound path.
    async fn submit(
        &self,
        frame: OutboundFrame,
        request: Option<Arc<RequestCtl>>,
        alone: bool,
        deadline: Instant,
    ) -> Result<Option<Exchange>> {
        let state = request.as_ref().map(|request| &request.state);
        let frame = match self.write_now(frame, state, !alone) {
            Ok(exchange) => return Ok(exchange),
            Err(frame) => frame,
        };
        self.admit(Queued::Frame { frame, request }, deadline)
            .await
            .map(|()| None)
    }

    /// The direct write: when the session is open, nothing is queued, the writer
    /// task is idle (its sink is parked in `self.sink`) and the medium takes the
    /// frame without waiting, the calling task writes it (no wake-up of the writer
    /// task). Otherwise the frame is given back for the queue.
    ///
    /// `Ok` means the frame was handled as the writer would have: written, or
    /// skipped (a request settled meanwhile), or its write failed and ended the
    /// session (the caller then sees the terminal error, as after a queued write);
    /// with the request's exchange when the medium handed it back to drive.
    fn write_now(
        &self,
        frame: OutboundFrame,
        state: Option<&AtomicU8>,
        busy: bool,
    ) -> std::result::Result<Option<Exchange>, OutboundFrame> {
        if self.backlog.load(Ordering::Acquire) != 0 || self.terminal().is_some() {
            return Err(frame);
        }
        let mut slot = match self.sink.try_lock() {
            Ok(slot) => slot,
            Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
            Err(TryLockError::WouldBlock) => return Err(frame),
        };
        // Checked again under the lock the writer takes the sink with.
        if self.backlog.load(Ordering::Acquire) != 0 {
            return Err(frame);
        }
        let Some(sink) = slot.as_mut() else {
            return Err(frame);
        };
        if let Some(state) = state
            && state
                .compare_exchange(QUEUED, WRITTEN, Ordering::AcqRel, Ordering::Acquire)
                .is_err()
        {
            return Ok(None); // settled meanwhile: the writer would skip it too
        }
        match sink.try_send_now(frame, busy) {
            TrySend::Sent => Ok(None),
            TrySend::Exchange(exchange) => Ok(Some(exchange)),
            TrySend::SentPartly => {
                drop(slot);
                // The writer finishes it; nothing is written directly meanwhile
                // (the sink refuses, and the backlog is non-zero).
                self.backlog.fetch_add(1, Ordering::AcqRel);
                if self.queue.try_send(Queued::Flush).is_err() {
                    // Full (the writer is busy and writes the rest before the
                    // queued frames) or closed (the session is ending).
                    self.backlog.fetch_sub(1, Ordering::AcqRel);
                }
                Ok(None)
            }
            TrySend::WouldBlock(frame) => {
                if let Some(state) = state {
                    let _ = state.compare_exchange(
                        WRITTEN,
                        QUEUED,
                        Ordering::AcqRel,
                        Ordering::Acquire,
                    );
                }
                Err(frame)
            }
            TrySend::Failed(error) => {
                drop(slot);
                self.terminate(error);
                Ok(None)
            }
        }
    }

    pub(crate) async fn admit(&self, item: Queued, deadline: Instant) -> Result<()> {
        // Counted before it can reach the queue, so no direct write overtakes it;
        // uncounted again unless it was admitted (the writer uncounts it then).
        self.backlog.fetch_add(1, Ordering::AcqRel);
        let mut counted = Backlogged {
            backlog: &self.backlog,
            admitted: false,
        };
        let admitted = self.admit_counted(item, deadline).await;
        counted.admitted = admitted.is_ok();
        admitted
    }

    async fn admit_counted(&self, item: Queued, deadline: Instant) -> Result<()> {
        // Fast path: the session is open and the queue has room, so no waiter or
        // timer is registered. (The terminal error is recorded before `ended` is
        // cancelled, so this refuses whatever the select below would refuse.)
        if self.terminal().is_some() {
            return Err(self.ended_error());
        }
        let item = match self.queue.try_send(item) {
            Ok(()) => return Ok(()),
            Err(mpsc::error::TrySendError::Closed(_)) => return Err(self.ended_error()),
            Err(mpsc::error::TrySendError::Full(item)) => item,
        };
        tokio::select! {
            biased;
            _ = self.ended.cancelled() => Err(self.ended_error()),
            sent = tokio::time::timeout_at(deadline, self.queue.send(item)) => match sent {
                Ok(Ok(())) => Ok(()),
                Ok(Err(_)) => Err(self.ended_error()),
                Err(_) => Err(Error::timeout(format!(
                    "server \"{}\" did not accept the frame in time: outbound queue full",
                    self.server
                ))),
            },
        }
    }

    /// Sends a request written for `wire` and waits for its reply until
    /// `deadline`. `params` must already hold what `wire` requires (a modern
    /// request's `_meta`).
    ///
    /// `cancellable`: send `notifications/cancelled` if the request is abandoned
    /// after the writer took it (never for `initialize`).
    pub(crate) async fn request<P: Serialize>(
        self: &Arc<Self>,
        method: &'static str,
        params: P,
        wire: Wire,
        deadline: Instant,
        cancellable: bool,
    ) -> Result<Value> {
        let options = RequestOptions {
            wire,
            cancellable,
            ..RequestOptions::default()
        };
        self.request_body(method, params, deadline, options)
            .await
            .map(ResultBody::into_value)
    }

    /// [`Shared::request`] with every option, the result as the reader built it.
    pub(crate) async fn request_body<P: Serialize>(
        self: &Arc<Self>,
        method: &'static str,
        params: P,
        deadline: Instant,
        options: RequestOptions,
    ) -> Result<ResultBody> {
        if let Some(error) = self.terminal() {
            return Err(error.clone());
        }
        let RequestOptions {
            wire,
            cancellable,
            tool_call,
            call,
            quiet,
        } = options;
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        observe::request_sent(id);
        let frame = self.encode_request(id, method, &params)?;
        drop(params);
        let meta = FrameMeta {
            method: Some(method),
            protocol_version: wire.version(),
            stateless: wire.is_modern(),
            completes_handshake: false,
            call,
        };
        let control = Arc::new(RequestCtl {
            id,
            tool_call,
            cancellable,
            wire,
            quiet,
            state: AtomicU8::new(QUEUED),
            outcome: Mutex::new(None),
            waker: AtomicWaker::new(),
            watched: AtomicBool::new(false),
            done_waiters: Notify::new(),
            shared: Arc::downgrade(self),
        });
        let alone = {
            let mut pending = lock(&self.pending);
            // Checked under the lock `terminate` drains with, so no request can be
            // registered after the drain and then wait forever.
            if let Some(error) = self.terminal() {
                return Err(error.clone());
            }
            pending.insert(id, control.clone());
            pending.len() == 1
        };
        let guard = RequestGuard {
            shared: self,
            control: &control,
        };
        let frame = OutboundFrame {
            bytes: frame,
            meta,
            request: Some(RequestHandle::new(control.clone())),
        };
        let held = if wire.is_modern() {
            Some(frame) // the legacy session machinery is not on the modern path
        } else {
            self.hold_for_reinit(frame, &control)
        };
        let submitted = match held {
            // Held back: sent with the new session once the re-initialise is done.
            None => Ok(None),
            Some(frame) => {
                self.submit(frame, Some(control.clone()), alone, deadline)
                    .await
            }
        };
        let outcome = match submitted {
            Err(error) if error.kind() == ErrorKind::Timeout => Err(Error::timeout(format!(
                "{method} to server \"{}\" timed out waiting for the outbound queue",
                self.server
            ))),
            Err(error) => Err(error),
            Ok(None) => self.wait_reply(&control, method, deadline).await,
            Ok(Some(exchange)) => {
                self.drive_and_wait(exchange, &control, method, deadline)
                    .await
            }
        };
        drop(guard);
        outcome
    }

    /// Waits for a request's reply until `deadline`, which moves on by the time the
    /// host handler spent answering legacy server requests meanwhile (a person
    /// filling a form is not the server being slow).
    async fn wait_reply(
        &self,
        control: &RequestCtl,
        method: &str,
        mut deadline: Instant,
    ) -> Result<ResultBody> {
        let paused_at_start = self.inputs.clock.total();
        let mut extended = std::time::Duration::ZERO;
        loop {
            if let Ok(outcome) = tokio::time::timeout_at(deadline, Reply(control)).await {
                return outcome;
            }
            let paused = self.inputs.clock.total().saturating_sub(paused_at_start);
            if paused > extended {
                deadline += paused - extended;
                extended = paused;
                continue;
            }
            return Err(Error::timeout(format!(
                "{method} to server \"{}\" timed out",
                self.server
            )));
        }
    }

    /// [`Shared::wait_reply`] while driving the request's exchange from this task:
    /// the frame it ends with is routed here, exactly as the reader would route it
    /// (a frame that ends the session ends it). The reply may also arrive another
    /// way (an event stream); then the exchange's rest is detached.
    async fn drive_and_wait(
        self: &Arc<Self>,
        mut exchange: Exchange,
        control: &RequestCtl,
        method: &str,
        deadline: Instant,
    ) -> Result<ResultBody> {
        let reply = self.wait_reply(control, method, deadline);
        tokio::pin!(reply);
        tokio::select! {
            biased;
            outcome = &mut reply => return outcome,
            frame = exchange.run() => {
                if let Some(frame) = frame
                    && let Err(error) = self.on_frame(&frame).await
                {
                    self.terminate(error);
                }
            }
        }
        reply.await
    }

    /// Completes a pending request; a reply for an unknown id is dropped.
    fn settle(&self, id: u64, outcome: Result<ResultBody>) {
        let Some(pending) = lock(&self.pending).remove(&id) else {
            self.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        };
        pending.complete(outcome);
    }

    /// Queues one best-effort `notifications/cancelled` for a request written for
    /// `wire`. A stateless request on HTTP gets none: cutting its exchange (the
    /// transport does, once the request is abandoned) is its cancellation.
    fn send_cancelled(&self, id: u64, wire: Wire) {
        if wire.is_modern() && self.medium == Medium::Exchanges {
            return;
        }
        let frame = match self.encode(&NotificationFrame {
            jsonrpc: "2.0",
            method: "notifications/cancelled",
            params: Some(CancelledParams {
                reason: "request abandoned by the client",
                request_id: id,
            }),
        }) {
            Ok(frame) => frame,
            Err(_) => return,
        };
        // Best effort: a full queue drops the notification rather than delaying the
        // deadline it reports.
        self.backlog.fetch_add(1, Ordering::AcqRel);
        let queued = self.queue.try_send(Queued::Cancel(OutboundFrame {
            bytes: frame,
            meta: notification_meta("notifications/cancelled", wire),
            request: None,
        }));
        if queued.is_err() {
            self.backlog.fetch_sub(1, Ordering::AcqRel);
        }
    }

    /// Handles one inbound frame. Returns the terminal error when the frame ends the
    /// session.
    pub(crate) async fn on_frame(self: &Arc<Self>, frame: &[u8]) -> Result<()> {
        // A reply to a `tools/call` is read straight into the members a tool
        // result reads.
        // (A result before its id: read so when any `tools/call` is pending; the
        // id read later must agree, or the frame is read again whole.)
        let mut tool_call = |id: Option<&Value>| match id {
            Some(id) => id
                .as_u64()
                .is_some_and(|id| lock(&self.pending).get(&id).is_some_and(|c| c.tool_call)),
            None => lock(&self.pending).values().any(|c| c.tool_call),
        };
        match jsonrpc::classify_with(frame, &mut tool_call)? {
            Inbound::Noise => {
                self.noise.fetch_add(1, Ordering::Relaxed);
                Ok(())
            }
            Inbound::Notification { method } => {
                self.dropped.fetch_add(1, Ordering::Relaxed);
                // A server cancelling its own input request (legacy).
                if method == "notifications/cancelled"
                    && self.inputs.legacy_running()
                    && let Some(id) = super::inputs::cancelled_request(frame)
                {
                    self.inputs.cancel_legacy(&id);
                }
                Ok(())
            }
            Inbound::Response { id, outcome } => {
                let Some(id) = id.as_u64() else {
                    return Ok(());
                };
                let outcome = outcome.map_err(|error| {
                    let quiet = lock(&self.pending).get(&id).is_some_and(|c| c.quiet);
                    self.remote_error(error, quiet)
                });
                self.settle(id, outcome);
                Ok(())
            }
            Inbound::NullIdError(error) => {
                // While the probe waits (the only request then), an error with
                // `id: null` is a legacy server's answer to it from one that
                // could not read its id (TypeScript v1's HTTP 400 -32000, a
                // stdio server's -32600): expected, like the probe's own errors.
                let probing = lock(&self.pending).values().any(|c| c.quiet);
                if !probing {
                    self.emit_remote_error(error);
                }
                Ok(())
            }
            Inbound::Request { id, method } => {
                if self.wire.get().is_modern() {
                    // 2026-07-28: a server sends no requests and a client writes
                    // no responses, not even an error: dropped, and reported.
                    if self.diagnostics.is_enabled() {
                        self.diagnostics
                            .emit(DiagnosticEvent::ServerRequestDropped {
                                server: self.server.clone(),
                                method: SecretString::from(method),
                            });
                    }
                    return Ok(());
                }
                if let Some(input) = INPUT_METHODS.iter().find(|m| **m == method)
                    && self.inputs.declares(input)
                {
                    let params = jsonrpc::request_params(frame).map_or(Value::Null, Value::Object);
                    self.inputs.answer_legacy(self, id, input, params);
                    return Ok(());
                }
                let reply = if method == "ping" {
                    jsonrpc::ping_reply(&id)
                } else {
                    jsonrpc::method_not_found_reply(&id)
                };
                self.send_reply(&reply).await
            }
        }
    }

    /// Queues a reply to a server request, bounded like any frame; a reply the
    /// queue does not take within `requestTimeoutMs` ends the session (a blocked
    /// reply must not hang the reader).
    pub(crate) async fn send_reply(&self, reply: &Value) -> Result<()> {
        let frame = self.encode(reply)?;
        let deadline = Instant::now() + self.limits.request_timeout();
        let meta = FrameMeta {
            protocol_version: self.wire.get().version(),
            ..FrameMeta::default()
        };
        self.enqueue(frame, meta, deadline).await.map_err(|error| {
            if error.kind() == ErrorKind::Timeout {
                Error::closed("reply to a server request blocked: outbound queue full")
            } else {
                error
            }
        })
    }

    /// Reports a tool dropped from the catalog (its name is server text: private).
    pub(crate) fn tool_dropped(&self, tool: &str, reason: &'static str) {
        if self.diagnostics.is_enabled() {
            self.diagnostics.emit(DiagnosticEvent::ToolDropped {
                server: self.server.clone(),
                tool: SecretString::from(tool.to_owned()),
                reason,
            });
        }
    }

    fn emit_remote_error(&self, error: RpcError) {
        if self.diagnostics.is_enabled() {
            self.diagnostics.emit(DiagnosticEvent::RemoteError {
                server: self.server.clone(),
                code: error.code,
                message: SecretString::from(error.message),
                data: error.data.map(|d| SecretString::from(d.to_string())),
            });
        }
    }

    /// The public error for a JSON-RPC error reply: the body goes to the
    /// diagnostics observer; the error keeps the code (and, for -32022, the
    /// well-formed versions of `data.supported`), and the 2026-07-28 codes get a
    /// kind of their own.
    fn remote_error(&self, error: RpcError, quiet: bool) -> Error {
        let code = error.code;
        let supported = if code == jsonrpc::UNSUPPORTED_PROTOCOL_VERSION {
            supported_versions(error.data.as_ref())
        } else {
            Vec::new()
        };
        if !quiet {
            self.emit_remote_error(error);
        }
        let server = &self.server;
        let (kind, message) = match code {
            jsonrpc::UNSUPPORTED_PROTOCOL_VERSION => (
                ErrorKind::UnsupportedProtocolVersion,
                format!(
                    "server \"{server}\" does not support the protocol version sent (JSON-RPC error {code})"
                ),
            ),
            jsonrpc::MISSING_REQUIRED_CLIENT_CAPABILITY => (
                ErrorKind::MissingCapability,
                format!(
                    "server \"{server}\" requires a client capability this client did not declare (JSON-RPC error {code})"
                ),
            ),
            jsonrpc::HEADER_MISMATCH => (
                ErrorKind::HeaderMismatch,
                format!("server \"{server}\" refused the request headers (JSON-RPC error {code})"),
            ),
            _ => (
                ErrorKind::RemoteError,
                format!("server \"{server}\" answered with JSON-RPC error {code}"),
            ),
        };
        Error::new(kind, message).with_detail(Detail::Remote { code, supported })
    }
}

/// The version strings of a -32022 error's `data.supported`: strings of at most
/// 32 visible ASCII characters, at most [`MAX_SUPPORTED_VERSIONS`] of them
/// (server-authored, so bounded before anything keeps them).
fn supported_versions(data: Option<&Value>) -> Vec<String> {
    let Some(Value::Array(list)) = data.and_then(|d| d.get("supported")) else {
        return Vec::new();
    };
    list.iter()
        .filter_map(Value::as_str)
        .filter(|v| !v.is_empty() && v.len() <= 32 && v.bytes().all(|b| (0x21..=0x7e).contains(&b)))
        .take(MAX_SUPPORTED_VERSIONS)
        .map(str::to_owned)
        .collect()
}

/// One count in [`Shared::backlog`] for an item being admitted: given back unless
/// the item reached the queue (the writer gives it back after writing it), also
/// when the admitting future is dropped.
struct Backlogged<'a> {
    backlog: &'a AtomicUsize,
    admitted: bool,
}

impl Drop for Backlogged<'_> {
    fn drop(&mut self) {
        if !self.admitted {
            self.backlog.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

/// Settles a request's fate when its caller stops waiting (reply, timeout, drop).
struct RequestGuard<'a> {
    shared: &'a Arc<Shared>,
    control: &'a Arc<RequestCtl>,
}

impl Drop for RequestGuard<'_> {
    fn drop(&mut self) {
        let control = self.control;
        // Whoever removes the pending entry decides its fate: if the reader (or a
        // per-request transport failure) removed it first, the request was
        // answered and must never be cancelled.
        // (A settled entry is already gone: skip the lock.)
        if control.state.load(Ordering::Acquire) == SETTLED {
            return;
        }
        let unanswered = lock(&self.shared.pending).remove(&control.id).is_some();
        let previous = control.state.swap(ABANDONED, Ordering::SeqCst);
        if previous == SETTLED {
            control.state.store(SETTLED, Ordering::Release);
        } else {
            control.wake_done_waiters();
            if unanswered
                && previous == WRITTEN
                && control.cancellable
                && self.shared.terminal().is_none()
            {
                self.shared.send_cancelled(control.id, control.wire);
            }
        }
    }
}

/// Writes queued frames, skipping abandoned requests, batching what is ready.
pub(crate) async fn run_writer(
    shared: Arc<Shared>,
    sink: Box<dyn FrameSink>,
    mut queue: mpsc::Receiver<Queued>,
) {
    // While the writer waits, its sink waits in `shared.sink`, where a caller may
    // write to it directly; when the writer ends, for any reason, it is dropped.
    let _release = ReleaseSink(&shared);
    *lock(&shared.sink) = Some(sink);
    let batch_limit = queue_slots(&shared.limits);
    // Both reused from batch to batch (no allocation per batch).
    let mut items = Vec::with_capacity(batch_limit.min(64));
    let mut frames = Vec::with_capacity(batch_limit.min(64));
    // One waiter on `ended` for the whole loop (not one per select).
    let ended = shared.ended.clone();
    let ended = ended.cancelled();
    tokio::pin!(ended);
    loop {
        items.clear();
        let received = tokio::select! {
            biased;
            _ = &mut ended => {
                // Idle when the session ended: its sink is parked.
                let parked = lock(&shared.sink).take();
                if let Some(sink) = parked {
                    write_owed_cancellations(&shared, sink, &mut queue, &mut frames).await;
                }
                return;
            }
            n = queue.recv_many(&mut items, batch_limit) => n,
        };
        if received == 0 {
            return;
        }
        let Some(mut sink) = lock(&shared.sink).take() else {
            return;
        };
        let mut flush = false;
        for item in items.drain(..) {
            match item {
                Queued::Frame { frame, request } => {
                    let skip = match request {
                        // A request abandoned while queued.
                        Some(request) => request
                            .state
                            .compare_exchange(QUEUED, WRITTEN, Ordering::AcqRel, Ordering::Acquire)
                            .is_err(),
                        // A re-sent request (after an HTTP re-initialise) that was
                        // settled or abandoned meanwhile.
                        None => frame.request.as_ref().is_some_and(RequestHandle::is_done),
                    };
                    if skip {
                        continue;
                    }
                    frames.push(frame);
                }
                Queued::Cancel(frame) => frames.push(frame),
                Queued::Flush => flush = true,
            }
        }
        if !frames.is_empty() || flush {
            match write_while_open(&shared, ended.as_mut(), &mut sink, &mut frames).await {
                Written::Open => {}
                Written::Closing => {
                    write_owed_cancellations(&shared, sink, &mut queue, &mut frames).await;
                    return;
                }
                Written::Stop => return,
            }
        }
        // Everything received is written (or skipped): direct writes may resume
        // once the sink is back.
        shared.backlog.fetch_sub(received, Ordering::AcqRel);
        *lock(&shared.sink) = Some(sink);
    }
}

/// Drops the parked sink when the writer ends (closing stdin before teardown).
struct ReleaseSink<'a>(&'a Shared);

impl Drop for ReleaseSink<'_> {
    fn drop(&mut self) {
        let sink = lock(&self.0.sink).take();
        drop(sink);
    }
}

/// How [`write_while_open`] ended.
#[derive(Debug, PartialEq, Eq)]
enum Written {
    /// Written; the session is open.
    Open,
    /// Written, but the scope closed meanwhile: the owed cancellations follow.
    Closing,
    /// The writer must stop (the session ended, or the write failed).
    Stop,
}

/// [`write`], abandoned as soon as the session ends (so a peer that stopped
/// reading cannot block teardown), except that when the scope closed the write is
/// finished within [`CLOSE_CANCEL_GRACE`] so that the owed cancellations can follow
/// it (a half-written frame would garble them). A failed write ends the session.
async fn write_while_open(
    shared: &Shared,
    ended: Pin<&mut tokio_util::sync::WaitForCancellationFuture<'_>>,
    sink: &mut Box<dyn FrameSink>,
    frames: &mut Vec<OutboundFrame>,
) -> Written {
    let write = write(sink, frames);
    tokio::pin!(write);
    let result = tokio::select! {
        biased;
        _ = ended => {
            let Some(deadline) = shared.close_deadline() else {
                return Written::Stop;
            };
            return match tokio::time::timeout_at(deadline, write).await {
                Ok(Ok(())) => Written::Closing,
                Ok(Err(_)) | Err(_) => Written::Stop,
            };
        }
        result = &mut write => result,
    };
    match result {
        Ok(()) => Written::Open,
        Err(error) => {
            shared.terminate(error);
            Written::Stop
        }
    }
}

/// After the scope closed: writes the cancellations still queued (everything else
/// queued is dropped), within [`CLOSE_CANCEL_GRACE`], then drops the sink (stdin
/// closes; the HTTP transport may send its `DELETE`). Nothing is owed when the
/// session ended any other way.
async fn write_owed_cancellations(
    shared: &Shared,
    mut sink: Box<dyn FrameSink>,
    queue: &mut mpsc::Receiver<Queued>,
    frames: &mut Vec<OutboundFrame>,
) {
    let Some(deadline) = shared.close_deadline() else {
        return;
    };
    frames.clear();
    while let Ok(item) = queue.try_recv() {
        if let Queued::Cancel(frame) = item {
            frames.push(frame);
        }
    }
    if !frames.is_empty() {
        let _ = tokio::time::timeout_at(deadline, write(&mut sink, frames)).await;
    }
}

/// Writes `frames` (left empty, its allocation kept for the next batch).
async fn write(sink: &mut Box<dyn FrameSink>, frames: &mut Vec<OutboundFrame>) -> Result<()> {
    if frames.len() == 1 {
        sink.send(frames.pop().expect("one frame")).await
    } else {
        let result = sink.send_batch(frames).await;
        frames.clear();
        result
    }
}

/// Reads inbound events until the session ends.
pub(crate) async fn run_reader(shared: Arc<Shared>, mut source: Box<dyn FrameSource>) {
    // One waiter on `ended` for the whole loop (not one per select).
    let ended = shared.ended.clone();
    let ended = ended.cancelled();
    tokio::pin!(ended);
    loop {
        // A frame at hand is taken without building `next()`'s future.
        let at_hand = match shared.terminal() {
            Some(_) => return,
            None => source.try_next(),
        };
        let event = match at_hand {
            Some(event) => event,
            None => tokio::select! {
                biased;
                _ = &mut ended => return,
                event = source.next() => event,
            },
        };
        match event {
            InboundEvent::Frame(frame) => {
                if let Err(error) = shared.on_frame(&frame).await {
                    shared.terminate(error);
                    return;
                }
            }
            InboundEvent::Closed(error) => {
                shared.terminate(error);
                return;
            }
            InboundEvent::StateLost { refused, stale } => {
                if let Err(error) = shared.session_expired(refused, stale) {
                    shared.terminate(error);
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shared(max_outbound_frame_bytes: u64) -> Arc<Shared> {
        let limits = Limits {
            max_outbound_frame_bytes,
            ..Limits::default()
        };
        Shared::new(
            "s".into(),
            limits,
            Diagnostics::default(),
            Medium::Stream,
            Arc::default(),
        )
        .0
    }

    #[test]
    fn request_frames_are_what_serde_json_writes_for_the_envelope() {
        let shared = shared(1 << 20);
        let params = serde_json::json!({"name": "echo", "arguments": {"t": "a\"b\u{1}é", "n": [1.5, -2, null]}});
        for (id, method) in [(0, "tools/call"), (u64::MAX, "we\"ird\n/méthod")] {
            let frame = shared.encode_request(id, method, &params).expect("fits");
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
            .encode_request(1, "m", &params)
            .expect("fits");
        let exact = shared(frame.len() as u64);
        assert_eq!(exact.encode_request(1, "m", &params).expect("fits"), frame);
        let error = shared(frame.len() as u64 - 1)
            .encode_request(1, "m", &params)
            .expect_err("one byte over");
        assert_eq!(error.kind(), ErrorKind::ProtocolError);
        assert!(error.message().contains("maxOutboundFrameBytes"));
    }
}
