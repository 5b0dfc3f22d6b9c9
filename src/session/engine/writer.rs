//! The outbound side: the queue of `queueCapacity` frames, the direct write from
//! the caller's task when nothing is queued ahead, and the writer task (batches,
//! skipped abandoned requests, cancellations owed at close).

use std::pin::Pin;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, TryLockError};

use bytes::Bytes;
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::error::{Error, Result};
use crate::transport::{Exchange, FrameMeta, FrameSink, OutboundFrame, RequestHandle, TrySend};

use super::request::{QUEUED, WRITTEN};
use super::{Core, RequestCtl, lock, queue_slots};

/// One item of the outbound queue.
pub(crate) enum Queued {
    /// A frame; `request` is present for requests so an abandoned one can be
    /// skipped (its state must still be `QUEUED`).
    Frame {
        frame: OutboundFrame,
        request: Option<Arc<RequestCtl>>,
    },
    /// A `notifications/cancelled`: also written while the scope closes, within
    /// [`CLOSE_CANCEL_GRACE`](super::CLOSE_CANCEL_GRACE).
    Cancel(OutboundFrame),
    /// Finish a frame that a direct write left partly written.
    Flush,
}

impl Core {
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

    /// Writes `frame` at once when it can ([`Core::write_now`]), else queues it
    /// for the writer, waiting for admission until `deadline`. Returns the
    /// request's exchange when the medium handed it to the caller to drive.
    ///
    /// `alone`: no other request is waiting for its reply. Otherwise the sink may
    /// prefer the queue (stdio: the writer sends the frames that gather there in
    /// one write, fewer system calls per frame); alone, the direct write saves the
    /// writer's wake-up on the latency-bound path.
    pub(super) async fn submit(
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
}

/// One count in [`Core::backlog`] for an item being admitted: given back unless
/// the item reached the queue (the writer gives it back after writing it), also
/// when the admitting future is dropped.
pub(super) struct Backlogged<'a> {
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

/// Writes queued frames, skipping abandoned requests, batching what is ready.
pub(crate) async fn run_writer(
    shared: Arc<Core>,
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
pub(super) struct ReleaseSink<'a>(&'a Core);

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

/// [`write`](fn@write), abandoned as soon as the session ends (so a peer that stopped
/// reading cannot block teardown), except that when the scope closed the write is
/// finished within [`CLOSE_CANCEL_GRACE`](super::CLOSE_CANCEL_GRACE) so that the owed cancellations can follow
/// it (a half-written frame would garble them). A failed write ends the session.
async fn write_while_open(
    shared: &Core,
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
/// queued is dropped), within [`CLOSE_CANCEL_GRACE`](super::CLOSE_CANCEL_GRACE), then drops the sink (stdin
/// closes; the HTTP transport may send its `DELETE`). Nothing is owed when the
/// session ended any other way.
async fn write_owed_cancellations(
    shared: &Core,
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
