//! The inbound side: every frame classified and routed (replies to their request,
//! server requests answered or handed to the host, noise counted), and the
//! reader task.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use secrecy::SecretString;
use serde_json::Value;
use tokio::time::Instant;

use crate::diagnostics::DiagnosticEvent;
use crate::error::{Detail, Error, ErrorKind, MAX_SUPPORTED_VERSIONS, Result};
use crate::jsonrpc::{self, Inbound, RpcError};
use crate::limits::Limits;
use crate::transport::{FrameMeta, FrameSource, HttpHints, InboundEvent};

use super::request::reply_key;
use super::{Core, lock};

impl Core {
    /// Handles one inbound frame (`stream`: the tag of the request whose
    /// stream it came on, if known). Returns the terminal error when the frame
    /// ends the session.
    pub(crate) async fn on_frame(
        self: &Arc<Self>,
        frame: &[u8],
        stream: Option<u64>,
    ) -> Result<()> {
        match self.route_frame(frame, stream)? {
            None => Ok(()),
            Some(reply) => self.send_reply(&reply).await,
        }
    }

    /// Routes one inbound frame without waiting: a reply settles its request,
    /// noise and notifications are counted, a server request is handed to the
    /// host or answered. Returns the reply still to be queued (`ping`, method
    /// not found), the only step that may wait; the terminal error when the
    /// frame ends the session. `stream`: the tag of the request whose stream
    /// the frame came on ([`RequestOptions::stream_tag`](super::RequestOptions::stream_tag)),
    /// when known; a notification is handed on with it.
    pub(crate) fn route_frame(
        self: &Arc<Self>,
        frame: &[u8],
        stream: Option<u64>,
    ) -> Result<Option<Value>> {
        // The transport frames up to the larger of `maxFrameBytes` and the
        // longest reply any request may admit; past `maxFrameBytes` a frame must
        // be the reply of a request that admits its length, and nothing else.
        let oversized = frame.len() > Limits::usize_of(self.limits.max_frame_bytes);
        if oversized
            && !lock(&self.pending)
                .values()
                .any(|c| c.admits >= frame.len())
        {
            return Err(self.frame_too_long());
        }
        // A reply to a request that selects members of its result is read
        // straight into those members.
        // (A result before its id: read so with the selection of any pending
        // request that has one; the id read later must give the same selection,
        // or the frame is read again whole.)
        let mut select = |id: Option<&Value>| match id {
            Some(id) => id
                .as_u64()
                .and_then(|id| lock(&self.pending).get(&id).and_then(|c| c.select)),
            None => lock(&self.pending).values().find_map(|c| c.select),
        };
        let inbound = jsonrpc::classify_with(frame, &mut select)?;
        match inbound {
            // Noise, a notification or a request past `maxFrameBytes` ends the
            // session as before: only an admitted reply may be that long.
            _ if oversized && !self.admitted(&inbound, frame.len()) => Err(self.frame_too_long()),
            Inbound::Noise => {
                self.noise.fetch_add(1, Ordering::Relaxed);
                Ok(None)
            }
            Inbound::Notification { method } => {
                self.dropped.fetch_add(1, Ordering::Relaxed);
                self.hooks.notification(self, &method, frame, stream);
                Ok(None)
            }
            Inbound::Response { id, outcome } => {
                let Some(key) = reply_key(&id) else {
                    return Ok(None);
                };
                let outcome = outcome.map_err(|error| {
                    let quiet = lock(&self.pending).get(&key.0).is_some_and(|c| c.quiet);
                    self.remote_error(error, quiet)
                });
                self.settle_reply(key, outcome);
                Ok(None)
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
                Ok(None)
            }
            Inbound::Request { id, method } => {
                Ok(self.hooks.clone().request(self, id, &method, frame))
            }
        }
    }

    /// A frame past `maxFrameBytes` is the reply of a pending request that
    /// admits its length.
    fn admitted(&self, inbound: &Inbound, len: usize) -> bool {
        let Inbound::Response { id, .. } = inbound else {
            return false;
        };
        reply_key(id).is_some_and(|(id, string_id)| {
            lock(&self.pending)
                .get(&id)
                .is_some_and(|c| c.string_id == string_id && c.admits >= len)
        })
    }

    /// The terminal error of a frame past `maxFrameBytes` that no request admits.
    fn frame_too_long(&self) -> Error {
        let max = self.limits.max_frame_bytes;
        Error::protocol(format!(
            "server \"{}\" sent a frame of more than {max} bytes; maxFrameBytes is {max}",
            self.server
        ))
    }

    /// Queues a reply to a server request, bounded like any frame; a reply the
    /// queue does not take within `requestTimeoutMs` ends the session (a blocked
    /// reply must not hang the reader).
    pub(crate) async fn send_reply(&self, reply: &Value) -> Result<()> {
        let frame = self.encode(reply)?;
        let deadline = Instant::now() + self.limits.request_timeout();
        let meta = FrameMeta {
            method: None,
            http: HttpHints::new(self.hooks.framing().version, false),
        };
        self.enqueue(frame, meta, deadline).await.map_err(|error| {
            if error.kind() == ErrorKind::Timeout {
                Error::closed("reply to a server request blocked: outbound queue full")
            } else {
                error
            }
        })
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
pub(super) fn supported_versions(data: Option<&Value>) -> Vec<String> {
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

/// Reads inbound events until the session ends.
pub(crate) async fn run_reader(shared: Arc<Core>, mut source: Box<dyn FrameSource>) {
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
            Some(event) => {
                // Frames always at hand (a flood) must not keep the runtime from
                // its timers, the callers' deadlines among them: spend the task's
                // cooperative budget, yielding when it is gone (DOS.md, "A
                // deadline under a flood").
                tokio::task::coop::consume_budget().await;
                event
            }
            None => tokio::select! {
                biased;
                _ = &mut ended => return,
                event = source.next() => event,
            },
        };
        match event {
            InboundEvent::Frame(frame) => {
                if let Err(error) = shared.on_frame(&frame, None).await {
                    shared.terminate(error);
                    return;
                }
            }
            InboundEvent::StreamFrame { frame, tag } => {
                if let Err(error) = shared.on_frame(&frame, Some(tag)).await {
                    shared.terminate(error);
                    return;
                }
            }
            InboundEvent::Closed(error) => {
                shared.terminate(error);
                return;
            }
            InboundEvent::StateLost { refused, stale } => {
                if let Err(error) = shared.hooks.clone().state_lost(&shared, refused, stale) {
                    shared.terminate(error);
                    return;
                }
            }
        }
    }
}
