//! The `Transport` trait: bytes in, bytes out, and how the medium ended.
//!
//! A transport turns its medium (a child's pipes, HTTP exchanges) into a stream of
//! inbound frames, each already bounded by `maxFrameBytes`, accepts outbound frames,
//! and reports how it ended. It never parses JSON-RPC ids or knows about tools: all
//! meaning lives in the session engine, so both transports behave identically.

use std::sync::Arc;

use bytes::Bytes;
use futures_util::future::BoxFuture;

use crate::diagnostics::Diagnostics;
use crate::error::{Error, Result};
use crate::limits::Limits;

pub mod framing;
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

/// One inbound event.
#[derive(Debug)]
pub enum InboundEvent {
    /// One complete frame of at most `maxFrameBytes` bytes (no trailing newline).
    Frame(Bytes),
    /// The medium ended; the error is the terminal reason (`connection_closed`
    /// "stdout closed", "exited with code N", or `protocol_error` for an over-long
    /// frame). No event follows it.
    Closed(Error),
}

/// The outbound half of an open transport.
pub trait FrameSink: Send + 'static {
    /// Writes one complete JSON-RPC frame (without a trailing newline).
    ///
    /// Returns once the frame is handed to the medium. An error is terminal
    /// (for stdio: `connection_closed` "stdin closed").
    fn send(&mut self, frame: Bytes) -> BoxFuture<'_, Result<()>>;

    /// Writes several frames at once; transports that can batch override this.
    fn send_batch(&mut self, frames: Vec<Bytes>) -> BoxFuture<'_, Result<()>> {
        Box::pin(async move {
            for frame in frames {
                self.send(frame).await?;
            }
            Ok(())
        })
    }

    /// Told once the handshake negotiated a protocol version (HTTP sends it as the
    /// `MCP-Protocol-Version` header on every later request).
    fn protocol_negotiated(&mut self, _version: &str) {}
}

/// The inbound half of an open transport.
pub trait FrameSource: Send + 'static {
    /// The next inbound event. After [`InboundEvent::Closed`] it must not be called again.
    fn next(&mut self) -> BoxFuture<'_, InboundEvent>;
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
