//! The duplex transport: newline-delimited JSON-RPC over a byte stream the host
//! already has (a unix socket, a TCP connection, the pipes of a process it
//! started itself such as `docker exec`, or an in-process server through
//! [`tokio::io::duplex`]).
//!
//! The framing and every bound are stdio's: each frame is one line of at most
//! `maxFrameBytes` bytes (a longer one is `protocol_error` at once, without
//! reading the rest), a partial line at the end of the stream is not a frame, and
//! the end of the stream is `connection_closed` "stream closed" (a failed write,
//! "stream closed for writing"). There is no process, so there is no stderr to
//! drain and no process tree to end: closing the session shuts the writing half
//! down (so the peer reads the end of its input) and drops both halves.
//!
//! A stream can carry one session: the first session connected with it takes it,
//! and a second fails with `connection_closed`. So a legacy server that exits when the
//! client's protocol probe asks for `server/discover` (the engine opens a stdio
//! server again then) cannot be reached over a duplex stream in
//! [`ProtocolMode::Auto`](crate::ProtocolMode::Auto); connect it with
//! [`ProtocolMode::Legacy`](crate::ProtocolMode::Legacy).

use std::fmt;
use std::sync::Mutex;
use std::time::Duration;

use futures_util::future::BoxFuture;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::oneshot;

use super::lines::{LineSink, LineSource};
use super::{Connection, FrameSink, Medium, OutboundFrame, Shutdown, TransportContext, TrySend};
use crate::error::{Error, Result};

/// How long closing the session waits for the writing half to shut down
/// (a flush, a TCP FIN) before dropping it: one second.
const WRITE_SHUTDOWN_GRACE: Duration = Duration::from_secs(1);

type Reader = Box<dyn AsyncRead + Send + Unpin>;
type Writer = Box<dyn AsyncWrite + Send + Unpin>;

/// A transport over a byte stream the host already has; see the
/// [module docs](self) for the framing, the bounds and the teardown.
///
/// ```no_run
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// use smthrs_mcp::{Client, DuplexTransport};
///
/// let socket = tokio::net::UnixStream::connect("/run/tools.sock").await?;
/// let client = Client::builder("tools")
///     .connect(DuplexTransport::from_stream(socket))
///     .await?;
/// println!("{} tools", client.catalog().len());
/// # Ok(())
/// # }
/// ```
pub struct DuplexTransport {
    halves: Mutex<Option<(Reader, Writer)>>,
}

impl DuplexTransport {
    /// A transport reading frames from `reader` and writing them to `writer`.
    pub fn new<R, W>(reader: R, writer: W) -> Self
    where
        R: AsyncRead + Send + Unpin + 'static,
        W: AsyncWrite + Send + Unpin + 'static,
    {
        DuplexTransport {
            halves: Mutex::new(Some((Box::new(reader), Box::new(writer)))),
        }
    }

    /// A transport over one stream that both reads and writes (split in two).
    pub fn from_stream<S>(stream: S) -> Self
    where
        S: AsyncRead + AsyncWrite + Send + 'static,
    {
        let (reader, writer) = tokio::io::split(stream);
        DuplexTransport::new(reader, writer)
    }

    fn take(&self) -> Option<(Reader, Writer)> {
        self.halves
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take()
    }
}

impl fmt::Debug for DuplexTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let unused = self
            .halves
            .lock()
            .map(|halves| halves.is_some())
            .unwrap_or(false);
        f.debug_struct("DuplexTransport")
            .field("unused", &unused)
            .finish()
    }
}

impl DuplexTransport {
    /// Takes the stream for one session (a second open finds it gone).
    pub(crate) fn open(&self, ctx: TransportContext) -> BoxFuture<'static, Result<Connection>> {
        let halves = self.take();
        Box::pin(async move {
            let Some((reader, writer)) = halves else {
                return Err(Error::closed(format!(
                    "server \"{}\": the duplex stream was already used by an earlier session",
                    ctx.server
                )));
            };
            let (hand_back, handed_back) = oneshot::channel();
            Ok(Connection {
                medium: Medium::Stream,
                sink: Box::new(DuplexSink {
                    lines: LineSink::new(writer, "stream closed for writing"),
                    hand_back: Some(hand_back),
                }),
                source: Box::new(LineSource::new(
                    reader,
                    ctx.bounds.max_frame_bytes,
                    ctx.bounds.frame_option,
                    "stream closed",
                )),
                shutdown: Box::new(DuplexShutdown { handed_back }),
            })
        })
    }
}

/// The writing half's sink; dropped (the session ended), it hands the writer
/// to the teardown, which shuts it down.
struct DuplexSink {
    lines: LineSink<Writer>,
    hand_back: Option<oneshot::Sender<Writer>>,
}

impl FrameSink for DuplexSink {
    fn send(&mut self, frame: OutboundFrame) -> BoxFuture<'_, Result<()>> {
        self.lines.send(frame)
    }

    fn send_batch<'a>(
        &'a mut self,
        frames: &'a mut Vec<OutboundFrame>,
    ) -> BoxFuture<'a, Result<()>> {
        self.lines.send_batch(frames)
    }

    fn try_send_now(&mut self, frame: OutboundFrame, _busy: bool) -> TrySend {
        // No direct write: the writer may buffer (a `BufWriter`, a TLS stream),
        // and only the writer task's path flushes.
        TrySend::WouldBlock(frame)
    }
}

impl Drop for DuplexSink {
    fn drop(&mut self) {
        if let (Some(writer), Some(hand_back)) = (self.lines.take_writer(), self.hand_back.take()) {
            let _ = hand_back.send(writer);
        }
    }
}

/// Shuts the writing half down once the sink handed it back.
struct DuplexShutdown {
    handed_back: oneshot::Receiver<Writer>,
}

impl Shutdown for DuplexShutdown {
    fn shutdown(self: Box<Self>) -> BoxFuture<'static, ()> {
        Box::pin(async move {
            // The engine drops the sink before tearing down; a writer that failed
            // is not handed back (there is nothing left to shut down).
            let Ok(Ok(mut writer)) =
                tokio::time::timeout(WRITE_SHUTDOWN_GRACE, self.handed_back).await
            else {
                return;
            };
            let _ = tokio::time::timeout(WRITE_SHUTDOWN_GRACE, writer.shutdown()).await;
        })
    }
}
