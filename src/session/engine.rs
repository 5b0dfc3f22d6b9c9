//! The transport-agnostic core: pending requests, the writer queue, the reader,
//! cancellation and the single terminal transition.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use bytes::Bytes;
use secrecy::SecretString;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::diagnostics::{DiagnosticEvent, Diagnostics};
use crate::error::{Error, ErrorKind, Result};
use crate::json_bounds::LimitedWriter;
use crate::jsonrpc::{self, Inbound, RpcError};
use crate::limits::Limits;
use crate::transport::{FrameSink, FrameSource, InboundEvent, OutboundFrame, RequestHandle};

/// Request states, advanced with compare-and-swap by the writer and the caller.
const QUEUED: u8 = 0;
const WRITTEN: u8 = 1;
const ABANDONED: u8 = 2;
const SETTLED: u8 = 3;

/// The message of the terminal error recorded by `close()` and by dropping the client.
pub(crate) const SCOPE_CLOSED: &str = "connection scope closed";

/// One item of the outbound queue.
pub(crate) enum Queued {
    /// A frame; `state` is present for requests so an abandoned one can be skipped.
    Frame {
        frame: OutboundFrame,
        state: Option<Arc<AtomicU8>>,
    },
    /// Tell the transport the negotiated protocol version.
    Negotiated(String),
}

struct Pending {
    reply: oneshot::Sender<Result<Value>>,
    state: Arc<AtomicU8>,
    done: CancellationToken,
}

/// What the session's tasks share.
pub(crate) struct Shared {
    pub(crate) server: Arc<str>,
    pub(crate) limits: Limits,
    pub(crate) diagnostics: Diagnostics,
    next_id: AtomicU64,
    pending: Mutex<HashMap<u64, Pending>>,
    terminal: OnceLock<Error>,
    /// Cancelled once, when the terminal error is recorded.
    pub(crate) ended: CancellationToken,
    queue: mpsc::Sender<Queued>,
    /// The frozen catalog, once the handshake has produced it (the HTTP 404
    /// re-initialise compares a new catalog with it).
    pub(crate) catalog: OnceLock<Arc<crate::catalog::Catalog>>,
    reinit: Mutex<Reinit>,
}

/// The one-shot HTTP session re-initialise.
enum Reinit {
    /// Not needed so far.
    Idle,
    /// Running; frames refused meanwhile wait to be re-sent.
    Running(Vec<OutboundFrame>),
    /// Done once: a later expiry ends the session.
    Done,
}

/// `queueCapacity` as a channel size: tokio refuses more than
/// `Semaphore::MAX_PERMITS` slots (which matters on 32-bit targets), and any queue
/// that large is unbounded in practice anyway.
pub(crate) fn queue_slots(limits: &Limits) -> usize {
    Limits::usize_of(limits.queue_capacity).clamp(1, tokio::sync::Semaphore::MAX_PERMITS)
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Shared {
    pub(crate) fn new(
        server: Arc<str>,
        limits: Limits,
        diagnostics: Diagnostics,
    ) -> (Arc<Shared>, mpsc::Receiver<Queued>) {
        let (queue, rx) = mpsc::channel(queue_slots(&limits));
        let shared = Arc::new(Shared {
            server,
            limits,
            diagnostics,
            next_id: AtomicU64::new(0),
            pending: Mutex::new(HashMap::new()),
            terminal: OnceLock::new(),
            ended: CancellationToken::new(),
            queue,
            catalog: OnceLock::new(),
            reinit: Mutex::new(Reinit::Idle),
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
        let drained: Vec<Pending> = lock(&self.pending).drain().map(|(_, p)| p).collect();
        for pending in drained {
            pending.state.store(SETTLED, Ordering::Release);
            pending.done.cancel();
            let _ = pending.reply.send(Err(error.clone()));
        }
        self.ended.cancel();
    }

    fn ended_error(&self) -> Error {
        self.terminal()
            .cloned()
            .unwrap_or_else(|| Error::closed(SCOPE_CLOSED))
    }

    /// Serializes a frame under `maxOutboundFrameBytes`, stopping early on overflow.
    pub(crate) fn encode(&self, message: &Value) -> Result<Bytes> {
        let limit = Limits::usize_of(self.limits.max_outbound_frame_bytes);
        let mut writer = LimitedWriter::new(limit);
        if serde_json::to_writer(&mut writer, message).is_err() {
            return Err(Error::protocol(format!(
                "outbound frame exceeds maxOutboundFrameBytes ({limit} bytes)"
            )));
        }
        let bytes = writer.into_inner();
        // Exact UTF-8 sizing of the final frame (escapes included).
        if bytes.len() > limit {
            return Err(Error::protocol(format!(
                "outbound frame exceeds maxOutboundFrameBytes ({limit} bytes)"
            )));
        }
        Ok(Bytes::from(bytes))
    }

    /// Queues a frame that is not a request (notification or reply), waiting for
    /// admission until `deadline`.
    pub(crate) async fn enqueue(&self, frame: Bytes, deadline: Instant) -> Result<()> {
        let item = Queued::Frame {
            frame: OutboundFrame {
                bytes: frame,
                request: None,
            },
            state: None,
        };
        self.admit(item, deadline).await
    }

    async fn admit(&self, item: Queued, deadline: Instant) -> Result<()> {
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

    /// Tells the transport (through the writer, in order) the negotiated version.
    pub(crate) async fn negotiated(&self, version: String, deadline: Instant) -> Result<()> {
        self.admit(Queued::Negotiated(version), deadline).await
    }

    /// Sends a request and waits for its reply until `deadline`.
    ///
    /// `cancellable`: send `notifications/cancelled` if the request is abandoned
    /// after the writer took it (never for `initialize`).
    pub(crate) async fn request(
        self: &Arc<Self>,
        method: &str,
        params: Value,
        deadline: Instant,
        cancellable: bool,
    ) -> Result<Value> {
        if let Some(error) = self.terminal() {
            return Err(error.clone());
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let frame = self.encode(&serde_json::json!({
            "jsonrpc": "2.0",
            "id": id,
            "method": method,
            "params": params,
        }))?;
        let state = Arc::new(AtomicU8::new(QUEUED));
        let done = CancellationToken::new();
        let (reply_tx, reply_rx) = oneshot::channel();
        {
            let mut pending = lock(&self.pending);
            // Checked under the lock `terminate` drains with, so no request can be
            // registered after the drain and then wait forever.
            if let Some(error) = self.terminal() {
                return Err(error.clone());
            }
            pending.insert(
                id,
                Pending {
                    reply: reply_tx,
                    state: state.clone(),
                    done: done.clone(),
                },
            );
        }
        let guard = RequestGuard {
            shared: self.clone(),
            id,
            state: state.clone(),
            done: done.clone(),
            cancellable,
        };
        let weak = Arc::downgrade(self);
        let fail: Arc<dyn Fn(Error) + Send + Sync> = Arc::new(move |error: Error| {
            if let Some(shared) = weak.upgrade() {
                shared.settle(id, Err(error));
            }
        });
        let item = Queued::Frame {
            frame: OutboundFrame {
                bytes: frame,
                request: Some(RequestHandle::new(done, fail)),
            },
            state: Some(state),
        };
        let outcome = match self.admit(item, deadline).await {
            Err(error) if error.kind() == ErrorKind::Timeout => Err(Error::timeout(format!(
                "{method} to server \"{}\" timed out waiting for the outbound queue",
                self.server
            ))),
            Err(error) => Err(error),
            Ok(()) => match tokio::time::timeout_at(deadline, reply_rx).await {
                Ok(Ok(outcome)) => outcome,
                Ok(Err(_)) => Err(self.ended_error()),
                Err(_) => Err(Error::timeout(format!(
                    "{method} to server \"{}\" timed out",
                    self.server
                ))),
            },
        };
        drop(guard);
        outcome
    }

    /// Completes a pending request; a reply for an unknown id is dropped.
    fn settle(&self, id: u64, outcome: Result<Value>) {
        let Some(pending) = lock(&self.pending).remove(&id) else {
            return;
        };
        pending.state.store(SETTLED, Ordering::Release);
        pending.done.cancel();
        let _ = pending.reply.send(outcome);
    }

    fn send_cancelled(&self, id: u64) {
        let frame = match self.encode(&serde_json::json!({
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": id, "reason": "request abandoned by the client"},
        })) {
            Ok(frame) => frame,
            Err(_) => return,
        };
        // Best effort: a full queue drops the notification rather than delaying the
        // deadline it reports.
        let _ = self.queue.try_send(Queued::Frame {
            frame: OutboundFrame {
                bytes: frame,
                request: None,
            },
            state: None,
        });
    }

    /// Handles one inbound frame. Returns the terminal error when the frame ends the
    /// session.
    pub(crate) async fn on_frame(&self, frame: &[u8]) -> Result<()> {
        match jsonrpc::classify(frame)? {
            Inbound::Noise | Inbound::Notification { .. } => Ok(()),
            Inbound::Response { id, outcome } => {
                let Some(id) = id.as_u64() else {
                    return Ok(());
                };
                let outcome = outcome.map_err(|error| self.remote_error(error));
                self.settle(id, outcome);
                Ok(())
            }
            Inbound::NullIdError(error) => {
                self.emit_remote_error(error);
                Ok(())
            }
            Inbound::Request { id, method } => {
                let reply = if method == "ping" {
                    jsonrpc::ping_reply(&id)
                } else {
                    jsonrpc::method_not_found_reply(&id)
                };
                let frame = self.encode(&reply)?;
                let deadline = Instant::now() + self.limits.request_timeout();
                self.enqueue(frame, deadline).await.map_err(|error| {
                    if error.kind() == ErrorKind::Timeout {
                        Error::closed("reply to a server request blocked: outbound queue full")
                    } else {
                        error
                    }
                })
            }
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

    fn remote_error(&self, error: RpcError) -> Error {
        let code = error.code;
        self.emit_remote_error(error);
        Error::new(
            ErrorKind::RemoteError,
            format!(
                "server \"{}\" answered with JSON-RPC error {code}",
                self.server
            ),
        )
    }
}

impl Shared {
    /// HTTP `404` to a request carrying a session id: re-initialise once without the
    /// id (the transport has dropped it), compare the new catalog's declarations
    /// with the frozen one, and re-send the refused frames if they are identical;
    /// otherwise the session ends with `connection_closed`.
    fn session_expired(self: &Arc<Self>, failed: OutboundFrame) -> Result<()> {
        let mut reinit = lock(&self.reinit);
        match &mut *reinit {
            Reinit::Running(waiting) => {
                waiting.push(failed);
                Ok(())
            }
            Reinit::Done => Err(Error::closed(format!(
                "server \"{}\" ended the HTTP session again after a re-initialise",
                self.server
            ))),
            Reinit::Idle => {
                if self.catalog.get().is_none() {
                    return Err(Error::closed(format!(
                        "server \"{}\" ended the HTTP session during the handshake",
                        self.server
                    )));
                }
                *reinit = Reinit::Running(vec![failed]);
                let shared = self.clone();
                tokio::spawn(async move {
                    let outcome = super::reinitialize(&shared).await;
                    let waiting = match std::mem::replace(&mut *lock(&shared.reinit), Reinit::Done)
                    {
                        Reinit::Running(waiting) => waiting,
                        _ => Vec::new(),
                    };
                    if let Err(error) = outcome {
                        shared.terminate(error);
                        return;
                    }
                    for frame in waiting {
                        if frame.request.as_ref().is_some_and(RequestHandle::is_done) {
                            continue;
                        }
                        let deadline = Instant::now() + shared.limits.request_timeout();
                        let item = Queued::Frame { frame, state: None };
                        if let Err(error) = shared.admit(item, deadline).await {
                            shared.terminate(error);
                            return;
                        }
                    }
                });
                Ok(())
            }
        }
    }
}

/// Settles a request's fate when its caller stops waiting (reply, timeout, drop).
struct RequestGuard {
    shared: Arc<Shared>,
    id: u64,
    state: Arc<AtomicU8>,
    done: CancellationToken,
    cancellable: bool,
}

impl Drop for RequestGuard {
    fn drop(&mut self) {
        // Whoever removes the pending entry decides its fate: if the reader (or a
        // per-request transport failure) removed it first, the request was
        // answered and must never be cancelled.
        let unanswered = lock(&self.shared.pending).remove(&self.id).is_some();
        let previous = self.state.swap(ABANDONED, Ordering::AcqRel);
        self.done.cancel();
        if previous == SETTLED {
            self.state.store(SETTLED, Ordering::Release);
        } else if unanswered
            && previous == WRITTEN
            && self.cancellable
            && self.shared.terminal().is_none()
        {
            self.shared.send_cancelled(self.id);
        }
    }
}

/// Writes queued frames, skipping abandoned requests, batching what is ready.
pub(crate) async fn run_writer(
    shared: Arc<Shared>,
    mut sink: Box<dyn FrameSink>,
    mut queue: mpsc::Receiver<Queued>,
) {
    let batch_limit = queue_slots(&shared.limits);
    let mut items = Vec::with_capacity(batch_limit.min(64));
    loop {
        items.clear();
        let received = tokio::select! {
            biased;
            _ = shared.ended.cancelled() => return,
            n = queue.recv_many(&mut items, batch_limit) => n,
        };
        if received == 0 {
            return;
        }
        let mut frames = Vec::with_capacity(items.len());
        for item in items.drain(..) {
            match item {
                Queued::Frame { frame, state } => {
                    if let Some(state) = state {
                        // Skip a request abandoned while queued.
                        if state
                            .compare_exchange(QUEUED, WRITTEN, Ordering::AcqRel, Ordering::Acquire)
                            .is_err()
                        {
                            continue;
                        }
                    }
                    frames.push(frame);
                }
                Queued::Negotiated(version) => {
                    if !frames.is_empty() {
                        // Like every write: abandoned as soon as the session ends, so
                        // a peer that stopped reading cannot block teardown.
                        let result = tokio::select! {
                            biased;
                            _ = shared.ended.cancelled() => return,
                            result = write(&mut sink, std::mem::take(&mut frames)) => result,
                        };
                        if let Err(error) = result {
                            shared.terminate(error);
                            return;
                        }
                    }
                    sink.protocol_negotiated(&version);
                }
            }
        }
        if frames.is_empty() {
            continue;
        }
        let result = tokio::select! {
            biased;
            _ = shared.ended.cancelled() => return,
            result = write(&mut sink, frames) => result,
        };
        if let Err(error) = result {
            shared.terminate(error);
            return;
        }
    }
}

async fn write(sink: &mut Box<dyn FrameSink>, mut frames: Vec<OutboundFrame>) -> Result<()> {
    if frames.len() == 1 {
        sink.send(frames.pop().expect("one frame")).await
    } else {
        sink.send_batch(frames).await
    }
}

/// Reads inbound events until the session ends.
pub(crate) async fn run_reader(shared: Arc<Shared>, mut source: Box<dyn FrameSource>) {
    loop {
        let event = tokio::select! {
            biased;
            _ = shared.ended.cancelled() => return,
            event = source.next() => event,
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
            InboundEvent::SessionExpired { failed } => {
                if let Err(error) = shared.session_expired(failed) {
                    shared.terminate(error);
                    return;
                }
            }
        }
    }
}
