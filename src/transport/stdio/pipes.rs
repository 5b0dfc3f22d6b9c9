//! The child's three pipes: [`StdinSink`] writes frames to stdin (the shared
//! [`LineSink`]), [`StdoutSource`] reads frames from stdout through the bounded
//! framer and reports how the child ended, and [`drain_stderr`] feeds stderr into
//! the redacting collector.

use std::process::ExitStatus;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::BoxFuture;
use tokio::io::AsyncReadExt;
use tokio::process::{ChildStdin, ChildStdout};
use tokio::sync::watch;

use crate::error::Error;
use crate::redact::StderrCollector;
use crate::transport::framing::{Framed, FramedReader};
use crate::transport::lines::{LineSink, too_long};
use crate::transport::{FrameSource, InboundEvent};

/// Frames to the child's stdin; a failed write is `connection_closed` "stdin closed".
pub(super) type StdinSink = LineSink<ChildStdin>;

/// After stdout EOF, how long the reader waits for the exit status.
pub(super) const EXIT_GRACE: Duration = Duration::from_millis(100);

pub(super) async fn drain_stderr(
    mut stderr: tokio::process::ChildStderr,
    collector: Arc<Mutex<StderrCollector>>,
) {
    let mut chunk = vec![0u8; 8192];
    loop {
        match stderr.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => lock(&collector).push(&chunk[..n]),
        }
    }
    lock(&collector).finish();
}

pub(super) fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn exit_message(status: &ExitStatus) -> String {
    if let Some(code) = status.code() {
        return format!("exited with code {code}");
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            return format!("exited by signal {signal}");
        }
    }
    "exited".to_string()
}

pub(super) struct StdoutSource {
    pub(super) reader: FramedReader<ChildStdout>,
    pub(super) exit: watch::Receiver<Option<ExitStatus>>,
    pub(super) max_frame: usize,
    pub(super) frame_option: &'static str,
    /// Set once the child has exited while stdout stayed open (a grandchild may
    /// hold it): frames already written are still read until this deadline.
    pub(super) drain_deadline: Option<tokio::time::Instant>,
}

impl StdoutSource {
    fn exit_error(&self) -> Option<Error> {
        self.exit
            .borrow()
            .as_ref()
            .map(|status| Error::closed(exit_message(status)))
    }

    async fn next_event(&mut self) -> InboundEvent {
        let framed = match self.drain_deadline {
            Some(deadline) => match tokio::time::timeout_at(deadline, self.reader.next()).await {
                Ok(framed) => framed,
                Err(_) => {
                    let error = self
                        .exit_error()
                        .unwrap_or_else(|| Error::closed("stdout closed"));
                    return InboundEvent::Closed(error);
                }
            },
            None => {
                let exited = tokio::select! {
                    biased;
                    framed = self.reader.next() => Ok(framed),
                    // The child exited but stdout is still open: report the exit
                    // after draining what it wrote (`FramedReader::next` is
                    // cancel-safe: bytes read so far stay in its buffer).
                    _ = self.exit.wait_for(|status| status.is_some()) => Err(()),
                };
                match exited {
                    Ok(framed) => framed,
                    Err(()) => {
                        self.drain_deadline = Some(tokio::time::Instant::now() + EXIT_GRACE);
                        return Box::pin(self.next_event()).await;
                    }
                }
            }
        };
        match framed {
            Framed::Frame(bytes) => InboundEvent::Frame(bytes),
            Framed::TooLong => self.too_long(),
            Framed::Eof => {
                let exit =
                    tokio::time::timeout(EXIT_GRACE, self.exit.wait_for(|status| status.is_some()))
                        .await;
                let message = match exit {
                    Ok(Ok(status)) => status.as_ref().map(exit_message),
                    _ => None,
                };
                InboundEvent::Closed(Error::closed(
                    message.unwrap_or_else(|| "stdout closed".to_string()),
                ))
            }
        }
    }
}

impl StdoutSource {
    fn too_long(&self) -> InboundEvent {
        too_long(self.max_frame, self.frame_option)
    }
}

impl FrameSource for StdoutSource {
    fn next(&mut self) -> BoxFuture<'_, InboundEvent> {
        Box::pin(self.next_event())
    }

    fn try_next(&mut self) -> Option<InboundEvent> {
        // `next_event` returns a buffered frame before anything else too (before
        // an exit or a drain deadline is looked at).
        match self.reader.try_next()? {
            Framed::Frame(bytes) => Some(InboundEvent::Frame(bytes)),
            Framed::TooLong => Some(self.too_long()),
            Framed::Eof => None,
        }
    }
}
