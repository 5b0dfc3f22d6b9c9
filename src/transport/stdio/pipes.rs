//! The child's three pipes: [`StdinSink`] writes frames to stdin (`writev`, and the
//! non-blocking direct write), [`StdoutSource`] reads frames from stdout through the
//! bounded framer and reports how the child ended, and [`drain_stderr`] feeds
//! stderr into the redacting collector.

use std::io::IoSlice;
use std::pin::Pin;
use std::process::ExitStatus;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use bytes::Bytes;
use futures_util::future::BoxFuture;
use tokio::io::{AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::process::{ChildStdin, ChildStdout};
use tokio::sync::watch;

use crate::error::{Error, Result};
use crate::redact::StderrCollector;
use crate::transport::framing::{Framed, FramedReader};
use crate::transport::{FrameSink, FrameSource, InboundEvent, OutboundFrame, TrySend};

/// After stdout EOF, how long the reader waits for the exit status.
pub const EXIT_GRACE: Duration = Duration::from_millis(100);

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

/// Writes frames to the child's stdin: each frame and its newline in one `writev`
/// (a batch in as few as the pipe allows), with no copy into a buffer.
pub(super) struct StdinSink {
    pub(super) stdin: Option<ChildStdin>,
    /// The `writev` slice list, kept empty between writes so that its
    /// allocation is reused (see [`reuse_slices`]).
    pub(super) slices: Vec<IoSlice<'static>>,
    /// What a non-blocking write ([`FrameSink::try_send_now`]) left unwritten: the
    /// rest of the frame's bytes and whether its newline is still due. Written
    /// before anything else.
    pub(super) partial: Option<(Bytes, bool)>,
}

impl StdinSink {
    async fn write_all(&mut self, frames: &[OutboundFrame]) -> Result<()> {
        let closed = || Error::closed("stdin closed");
        let stdin = self.stdin.as_mut().ok_or_else(closed)?;
        let partial = self.partial.take();
        let mut slices = reuse_slices(std::mem::take(&mut self.slices));
        let written = write_frames(stdin, &mut slices, partial.as_ref(), frames).await;
        self.slices = reuse_slices(slices);
        if written.is_err() {
            self.stdin = None;
            return Err(closed());
        }
        Ok(())
    }
}

/// An empty slice list of any lifetime, in the allocation of `slices` (cleared):
/// `IoSlice`s of every lifetime have one layout, and collecting a mapped
/// `vec::IntoIter` into a `Vec` of the same layout reuses its buffer. Lists
/// grown past 1024 slices (a huge batch) are not kept.
fn reuse_slices<'a>(mut slices: Vec<IoSlice<'_>>) -> Vec<IoSlice<'a>> {
    slices.clear();
    if slices.capacity() > 1024 {
        return Vec::new();
    }
    slices.into_iter().map(|_| IoSlice::new(&[])).collect()
}

/// Writes `partial` (the unwritten rest of an earlier frame), then each frame
/// followed by a newline, with vectored writes.
async fn write_frames<'a>(
    stdin: &mut ChildStdin,
    slices: &mut Vec<IoSlice<'a>>,
    partial: Option<&'a (Bytes, bool)>,
    frames: &'a [OutboundFrame],
) -> std::io::Result<()> {
    slices.reserve(2 + 2 * frames.len());
    if let Some((rest, newline)) = partial {
        slices.push(IoSlice::new(rest));
        if *newline {
            slices.push(IoSlice::new(b"\n"));
        }
    }
    for frame in frames {
        slices.push(IoSlice::new(&frame.bytes));
        slices.push(IoSlice::new(b"\n"));
    }
    let mut remaining = &mut slices[..];
    while remaining.iter().any(|slice| !slice.is_empty()) {
        let written = stdin.write_vectored(remaining).await?;
        if written == 0 {
            return Err(std::io::ErrorKind::WriteZero.into());
        }
        IoSlice::advance_slices(&mut remaining, written);
    }
    stdin.flush().await
}

impl FrameSink for StdinSink {
    fn send(&mut self, frame: OutboundFrame) -> BoxFuture<'_, Result<()>> {
        Box::pin(async move { self.write_all(std::slice::from_ref(&frame)).await })
    }

    fn send_batch<'a>(
        &'a mut self,
        frames: &'a mut Vec<OutboundFrame>,
    ) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            let result = self.write_all(frames).await;
            frames.clear();
            result
        })
    }

    fn try_send_now(&mut self, frame: OutboundFrame, busy: bool) -> TrySend {
        // With replies pending, let the writer gather frames into one `writev`.
        if busy || self.partial.is_some() {
            return TrySend::WouldBlock(frame);
        }
        let Some(stdin) = self.stdin.as_mut() else {
            return TrySend::Failed(Error::closed("stdin closed"));
        };
        // One non-blocking `writev`: a pipe with room takes the whole frame.
        let mut cx = Context::from_waker(Waker::noop());
        let slices = [IoSlice::new(&frame.bytes), IoSlice::new(b"\n")];
        let total = frame.bytes.len() + 1;
        match Pin::new(stdin).poll_write_vectored(&mut cx, &slices) {
            Poll::Ready(Ok(written)) if written >= total => TrySend::Sent,
            Poll::Ready(Ok(0)) => {
                self.stdin = None;
                TrySend::Failed(Error::closed("stdin closed"))
            }
            Poll::Ready(Ok(written)) => {
                let at = written.min(frame.bytes.len());
                self.partial = Some((frame.bytes.slice(at..), true));
                TrySend::SentPartly
            }
            Poll::Ready(Err(error)) if error.kind() == std::io::ErrorKind::Interrupted => {
                TrySend::WouldBlock(frame)
            }
            Poll::Ready(Err(_)) => {
                self.stdin = None;
                TrySend::Failed(Error::closed("stdin closed"))
            }
            Poll::Pending => TrySend::WouldBlock(frame),
        }
    }
}

pub(super) struct StdoutSource {
    pub(super) reader: FramedReader<ChildStdout>,
    pub(super) exit: watch::Receiver<Option<ExitStatus>>,
    pub(super) max_frame: usize,
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
        InboundEvent::Closed(Error::protocol(format!(
            "inbound frame of more than {0} bytes; maxFrameBytes is {0}",
            self.max_frame
        )))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_slice_list_keeps_its_allocation_between_writes() {
        let frame = b"frame".to_vec();
        let mut slices: Vec<IoSlice<'_>> = Vec::with_capacity(130);
        slices.push(IoSlice::new(&frame));
        let buffer = slices.as_ptr() as usize;
        let kept: Vec<IoSlice<'static>> = reuse_slices(slices);
        assert!(kept.is_empty());
        assert_eq!(kept.capacity(), 130);
        assert_eq!(
            kept.as_ptr() as usize,
            buffer,
            "the same buffer, not a new one"
        );
        // A list grown huge is dropped rather than kept.
        let huge: Vec<IoSlice<'_>> = Vec::with_capacity(4096);
        assert_eq!(reuse_slices(huge).capacity(), 0);
    }
}
