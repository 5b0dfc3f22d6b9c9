//! Newline-delimited frames over a byte stream, the framing of stdio and of
//! the duplex transport: [`LineSink`] writes frames (vectored, with the
//! non-blocking direct write), [`LineSource`] reads them through the bounded
//! [`FramedReader`].

use std::io::IoSlice;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use bytes::Bytes;
use futures_util::future::BoxFuture;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};

use crate::error::{Error, Result};
use crate::transport::framing::{Framed, FramedReader};
use crate::transport::{FrameSink, FrameSource, InboundEvent, OutboundFrame, TrySend};

/// Writes frames to a byte stream (a child's stdin, one half of a duplex
/// stream): each frame and its newline in one `writev` (a batch in as few as
/// the stream allows), with no copy into a buffer.
pub(crate) struct LineSink<W> {
    stdin: Option<W>,
    /// The terminal message of a failed write ("stdin closed").
    closed: &'static str,
    /// The `writev` slice list, kept empty between writes so that its
    /// allocation is reused (see [`reuse_slices`]).
    slices: Vec<IoSlice<'static>>,
    /// What a non-blocking write ([`FrameSink::try_send_now`]) left unwritten: the
    /// rest of the frame's bytes and whether its newline is still due. Written
    /// before anything else.
    partial: Option<(Bytes, bool)>,
}

impl<W: AsyncWrite + Unpin + Send + 'static> LineSink<W> {
    /// A sink writing to `writer`; a failed write ends the session with
    /// `connection_closed` `closed`.
    pub(crate) fn new(writer: W, closed: &'static str) -> Self {
        LineSink {
            stdin: Some(writer),
            closed,
            slices: Vec::new(),
            partial: None,
        }
    }

    /// The writer, unless a write failed.
    pub(crate) fn take_writer(&mut self) -> Option<W> {
        self.stdin.take()
    }

    async fn write_all(&mut self, frames: &[OutboundFrame]) -> Result<()> {
        let message = self.closed;
        let closed = || Error::closed(message);
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
async fn write_frames<'a, W: AsyncWrite + Unpin>(
    stdin: &mut W,
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

impl<W: AsyncWrite + Unpin + Send + 'static> FrameSink for LineSink<W> {
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
            return TrySend::Failed(Error::closed(self.closed));
        };
        // One non-blocking `writev`: a pipe with room takes the whole frame.
        let mut cx = Context::from_waker(Waker::noop());
        let slices = [IoSlice::new(&frame.bytes), IoSlice::new(b"\n")];
        let total = frame.bytes.len() + 1;
        match Pin::new(stdin).poll_write_vectored(&mut cx, &slices) {
            Poll::Ready(Ok(written)) if written >= total => TrySend::Sent,
            Poll::Ready(Ok(0)) => {
                self.stdin = None;
                TrySend::Failed(Error::closed(self.closed))
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
                TrySend::Failed(Error::closed(self.closed))
            }
            Poll::Pending => TrySend::WouldBlock(frame),
        }
    }
}

/// The terminal event of an inbound line longer than `max_frame` bytes.
pub(crate) fn too_long(max_frame: usize, option: &'static str) -> InboundEvent {
    InboundEvent::Closed(Error::protocol(format!(
        "inbound frame of more than {max_frame} bytes; {}",
        super::frame_bound_text(max_frame, option)
    )))
}

/// Reads frames from a byte stream through the bounded framer; the end of the
/// stream is `connection_closed` with the message given.
pub(crate) struct LineSource<R> {
    reader: FramedReader<R>,
    max_frame: usize,
    frame_option: &'static str,
    /// The terminal message at the end of the stream ("stream closed").
    closed: &'static str,
}

impl<R: AsyncRead + Unpin + Send + 'static> LineSource<R> {
    /// A source reading `reader`, refusing frames over `max_frame` bytes (the
    /// bound set by the option `frame_option`).
    pub(crate) fn new(
        reader: R,
        max_frame: usize,
        frame_option: &'static str,
        closed: &'static str,
    ) -> Self {
        LineSource {
            reader: FramedReader::new(reader, max_frame),
            max_frame,
            frame_option,
            closed,
        }
    }

    fn event(&self, framed: Framed) -> InboundEvent {
        match framed {
            Framed::Frame(bytes) => InboundEvent::Frame(bytes),
            Framed::TooLong => too_long(self.max_frame, self.frame_option),
            Framed::Eof => InboundEvent::Closed(Error::closed(self.closed)),
        }
    }
}

impl<R: AsyncRead + Unpin + Send + 'static> FrameSource for LineSource<R> {
    fn next(&mut self) -> BoxFuture<'_, InboundEvent> {
        Box::pin(async move {
            let framed = self.reader.next().await;
            self.event(framed)
        })
    }

    fn try_next(&mut self) -> Option<InboundEvent> {
        match self.reader.try_next()? {
            Framed::Eof => None,
            framed => Some(self.event(framed)),
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
