//! One request: its state shared by the caller, the pending map, the writer and
//! the transport, the caller's wait for the reply (driving its exchange when the
//! medium hands it back), and what abandoning it owes the server.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;

use futures_util::future::BoxFuture;
use futures_util::task::AtomicWaker;
use serde::Serialize;
use serde_json::Value;
use tokio::sync::Notify;
use tokio::time::Instant;

use crate::error::{Error, ErrorKind, Result};
use crate::json_bounds::MemberSelection;
use crate::jsonrpc::{Id, ResultBody};
use crate::observe;
use crate::transport::{
    CallHeaders, Exchange, FrameMeta, HttpHints, Medium, OutboundFrame, RequestControl,
    RequestHandle,
};

use super::PauseClock;
use super::{Core, Framing, NotificationFrame, Queued, lock, notification_meta};

/// The prefix of the probe's string id: `server-discover-probe-<n>`, where `<n>`
/// is the engine's id for it (the form the TypeScript client uses).
pub(crate) const PROBE_ID_PREFIX: &str = "server-discover-probe-";

/// The engine id and id form a reply's id names: a non-negative integer, or
/// [`PROBE_ID_PREFIX`] followed by the canonical decimal digits of one (no sign,
/// no leading zero). Anything else names no request of ours.
pub(super) fn reply_key(id: &Id) -> Option<(u64, bool)> {
    match id {
        Id::Number(_) => id.as_u64().map(|n| (n, false)),
        Id::String(s) => {
            let digits = s.strip_prefix(PROBE_ID_PREFIX)?;
            let canonical = !digits.is_empty()
                && digits.bytes().all(|b| b.is_ascii_digit())
                && (digits == "0" || !digits.starts_with('0'));
            canonical
                .then(|| digits.parse().ok())
                .flatten()
                .map(|n| (n, true))
        }
    }
}

/// Request states, advanced with compare-and-swap by the writer and the caller.
pub(super) const QUEUED: u8 = 0;
pub(super) const WRITTEN: u8 = 1;
pub(super) const ABANDONED: u8 = 2;
pub(super) const SETTLED: u8 = 3;

/// One request's state, shared by its caller, the pending map, the writer and the
/// transport's [`RequestHandle`]: a single allocation per request, in place of a
/// reply channel, a state cell, a cancellation token and a failure callback.
pub(crate) struct RequestCtl {
    pub(super) id: u64,
    /// The reply's result, when an object, is read keeping only these members.
    pub(super) select: Option<&'static MemberSelection>,
    /// Abandoning it after it was written sends `notifications/cancelled` (never
    /// for `initialize`).
    pub(super) cancellable: bool,
    /// How it was written (a stateless request on HTTP is cancelled by cutting
    /// its exchange, not by a notification).
    pub(super) framing: Framing,
    /// Its id is written as the string [`PROBE_ID_PREFIX`]`<id>` (the probe), and
    /// only a reply with that string id settles it.
    pub(super) string_id: bool,
    /// A JSON-RPC error answering it is expected and not reported to the
    /// diagnostics observer (the probe: a legacy server's error is its answer),
    /// nor is an error with `id: null` that arrives while it waits.
    pub(super) quiet: bool,
    /// The longest frame its reply may be, past `maxFrameBytes` (0: none
    /// longer). The core knows only this number, not why a request has it.
    pub(super) admits: usize,
    /// The frames of its own stream are routed with this tag
    /// ([`RequestOptions::stream_tag`]).
    pub(super) stream_tag: Option<u64>,
    /// `QUEUED`, `WRITTEN`, `ABANDONED` or `SETTLED`.
    pub(super) state: AtomicU8,
    /// The outcome, stored once by whoever settles the request.
    pub(super) outcome: Mutex<Option<Result<ResultBody>>>,
    /// The caller waiting for `outcome`.
    pub(super) waker: AtomicWaker,
    /// Set before anyone waits in [`RequestCtl::done`], so that settling wakes
    /// `done_waiters` only when someone may be waiting.
    pub(super) watched: AtomicBool,
    pub(super) done_waiters: Notify,
    /// For [`RequestCtl::fail`] (a transport failing just this request).
    pub(super) shared: Weak<Core>,
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
    pub(super) fn complete(&self, outcome: Result<ResultBody>) {
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

    fn stream_tag(&self) -> Option<u64> {
        self.stream_tag
    }
}

/// Frames [`Core::finish_at_hand`] routes after the reply at most, before
/// the rest of the exchange is detached.
const FRAMES_AT_HAND: usize = 16;

/// A deadline the layer above may move later, never earlier, while a caller
/// waits for its reply ([`RequestOptions::later`]): shared by that wait and
/// whoever moves it (the protocol layer, when progress restarts a call's
/// timeout). The wait reads it only once its own deadline has passed, so moving
/// it wakes nobody. An offset from when it was made, in nanoseconds (0: not
/// moved), so it is one atomic.
#[derive(Debug)]
pub(crate) struct MovableDeadline {
    base: Instant,
    offset_nanos: AtomicU64,
}

impl MovableDeadline {
    /// A deadline not moved yet.
    pub(crate) fn new() -> MovableDeadline {
        MovableDeadline {
            base: Instant::now(),
            offset_nanos: AtomicU64::new(0),
        }
    }

    /// Moves it to `at`, unless it is later already.
    pub(crate) fn move_to(&self, at: Instant) {
        let nanos = at.saturating_duration_since(self.base).as_nanos();
        let nanos = u64::try_from(nanos).unwrap_or(u64::MAX).max(1);
        self.offset_nanos.fetch_max(nanos, Ordering::AcqRel);
    }

    /// Where it was moved to, if it was.
    pub(crate) fn get(&self) -> Option<Instant> {
        match self.offset_nanos.load(Ordering::Acquire) {
            0 => None,
            nanos => Some(self.base + Duration::from_nanos(nanos)),
        }
    }
}

/// A request's deadline, moved on by the time the host handler spent answering
/// legacy server requests meanwhile (a person filling a form is not the server
/// being slow), and to where the layer above moved its [`MovableDeadline`],
/// when later.
struct ReplyDeadline<'a> {
    clock: &'a PauseClock,
    /// The deadline given, moved on by the pauses seen so far.
    own: Instant,
    paused_at_start: Duration,
    extended: Duration,
    later: Option<&'a MovableDeadline>,
    /// When it passes: the later of `own` and `later`.
    at: Instant,
}

impl<'a> ReplyDeadline<'a> {
    fn new(clock: &'a PauseClock, at: Instant, later: Option<&'a MovableDeadline>) -> Self {
        let moved = later.and_then(MovableDeadline::get);
        ReplyDeadline {
            clock,
            own: at,
            paused_at_start: clock.total(),
            extended: Duration::ZERO,
            later,
            at: moved.map_or(at, |moved| moved.max(at)),
        }
    }

    /// Whether the deadline has passed, after moving it on by the pauses since
    /// the last look and to where it was moved (both are read only once the
    /// instant has passed: they only ever move it later).
    fn passed(&mut self) -> bool {
        if Instant::now() < self.at {
            return false;
        }
        let paused = self.clock.total().saturating_sub(self.paused_at_start);
        if paused > self.extended {
            self.own += paused - self.extended;
            self.extended = paused;
        }
        self.at = self.own;
        if let Some(moved) = self.later.and_then(MovableDeadline::get) {
            self.at = self.at.max(moved);
        }
        Instant::now() >= self.at
    }
}

/// The caller's wait for [`RequestCtl::complete`].
pub(super) struct Reply<'a>(&'a RequestCtl);

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
pub(super) struct IdHasher(u64);

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

pub(super) type PendingMap = HashMap<u64, Arc<RequestCtl>, std::hash::BuildHasherDefault<IdHasher>>;

/// `notifications/cancelled` parameters (keys in `serde_json::Map` order).
#[derive(Serialize)]
pub(super) struct CancelledParams {
    reason: &'static str,
    #[serde(rename = "requestId")]
    request_id: u64,
}

/// How [`Core::request_body`] sends a request.
#[derive(Debug)]
pub(crate) struct RequestOptions {
    /// How it is written.
    pub(crate) framing: Framing,
    /// Abandoning it after it was written sends `notifications/cancelled`.
    pub(crate) cancellable: bool,
    /// Read its result, when an object, keeping only these members
    /// ([`jsonrpc::classify_with`](crate::jsonrpc::classify_with)).
    pub(crate) select: Option<&'static MemberSelection>,
    /// `Mcp-Name` and `Mcp-Param-*` (HTTP, stateless).
    pub(crate) call: Option<Arc<CallHeaders>>,
    /// Keep a JSON-RPC error answering it from the diagnostics observer.
    pub(crate) quiet: bool,
    /// Write its id as a string, [`PROBE_ID_PREFIX`]`<id>` (the `server/discover`
    /// probe: distinct from every other request's id, which is a number).
    pub(crate) string_id: bool,
    /// Its reply may be a frame of up to this many bytes even past
    /// `maxFrameBytes` (within the transport's framing bound); every other
    /// frame stays under `maxFrameBytes`.
    pub(crate) max_reply_bytes: Option<usize>,
    /// Its id, when the caller reserved one first ([`Core::reserve_id`]: the
    /// protocol layer must know a listen's id before its first message can
    /// arrive); otherwise the next.
    pub(crate) id: Option<u64>,
    /// A tag the frames of its own stream are routed with (HTTP: the event
    /// stream answering its POST; [`ProtocolHooks::notification`]'s `stream`),
    /// so the protocol layer can tell which request's stream a notification
    /// came on. The core reads nothing of it.
    ///
    /// [`ProtocolHooks::notification`]: super::ProtocolHooks::notification
    pub(crate) stream_tag: Option<u64>,
    /// A deadline the protocol layer may move past `deadline` while the reply
    /// is awaited.
    pub(crate) later: Option<Arc<MovableDeadline>>,
}

impl Default for RequestOptions {
    fn default() -> Self {
        RequestOptions {
            framing: Framing::default(),
            cancellable: true,
            select: None,
            call: None,
            quiet: false,
            string_id: false,
            max_reply_bytes: None,
            id: None,
            stream_tag: None,
            later: None,
        }
    }
}

impl Core {
    /// Sends a request written with `framing` and waits for its reply until
    /// `deadline`. `params` must already hold what the framing requires (a
    /// stateless request's `_meta`).
    ///
    /// `cancellable`: send `notifications/cancelled` if the request is abandoned
    /// after the writer took it (never for `initialize`).
    pub(crate) async fn request<P: Serialize>(
        self: &Arc<Self>,
        method: &'static str,
        params: P,
        framing: impl Into<Framing>,
        deadline: Instant,
        cancellable: bool,
    ) -> Result<Value> {
        let options = RequestOptions {
            framing: framing.into(),
            cancellable,
            ..RequestOptions::default()
        };
        self.request_body(method, params, deadline, options)
            .await
            .map(ResultBody::into_value)
    }

    /// [`Core::request`] with every option, the result as the reader built it.
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
            framing,
            cancellable,
            select,
            call,
            quiet,
            string_id,
            max_reply_bytes,
            id,
            stream_tag,
            later,
        } = options;
        let id = id.unwrap_or_else(|| self.reserve_id());
        observe::request_sent(id);
        let frame = self.encode_request(id, string_id, method, &params)?;
        drop(params);
        let meta = FrameMeta {
            method: Some(method),
            http: HttpHints::new(framing.version, framing.stateless).with_call(call),
        };
        let control = Arc::new(RequestCtl {
            id,
            select,
            cancellable,
            framing,
            string_id,
            quiet,
            admits: max_reply_bytes.unwrap_or(0),
            stream_tag,
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
        let held = if framing.stateless {
            Some(frame) // the legacy session machinery is not on the modern path
        } else {
            self.hooks.hold(frame, &control)
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
            Ok(None) => {
                self.wait_reply(&control, method, deadline, later.as_deref())
                    .await
            }
            Ok(Some(exchange)) => {
                self.drive_and_wait(exchange, &control, method, deadline, later.as_deref())
                    .await
            }
        };
        drop(guard);
        outcome
    }

    /// Takes the next request id, for a request sent later with
    /// [`RequestOptions::id`].
    pub(crate) fn reserve_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Waits for a request's reply until `deadline` (or `later`, when it was
    /// moved past it: [`ReplyDeadline`]).
    async fn wait_reply(
        &self,
        control: &RequestCtl,
        method: &str,
        deadline: Instant,
        later: Option<&MovableDeadline>,
    ) -> Result<ResultBody> {
        let mut deadline = ReplyDeadline::new(&self.pauses, deadline, later);
        loop {
            if let Ok(outcome) = tokio::time::timeout_at(deadline.at, Reply(control)).await {
                return outcome;
            }
            if deadline.passed() {
                return Err(self.timed_out(method));
            }
        }
    }

    /// The error of a request whose deadline passed.
    fn timed_out(&self, method: &str) -> Error {
        Error::timeout(format!("{method} to server \"{}\" timed out", self.server))
    }

    /// [`Core::wait_reply`] while driving the request's exchange from this task:
    /// the frames it hands over on the way (an event stream's) and the frame it
    /// ends with are routed here, exactly as the reader would route them (a frame
    /// that ends the session ends it). The reply may also arrive another way;
    /// then whatever the exchange has at hand is routed and its rest detached.
    async fn drive_and_wait(
        self: &Arc<Self>,
        mut exchange: Exchange,
        control: &RequestCtl,
        method: &str,
        deadline: Instant,
        later: Option<&MovableDeadline>,
    ) -> Result<ResultBody> {
        enum Step {
            Reply(Result<ResultBody>),
            Frame(Bytes),
            Ended(Option<Bytes>),
        }
        let reply = self.wait_reply(control, method, deadline, later);
        let tag = control.stream_tag;
        tokio::pin!(reply);
        // The timer in `reply` fires only when the runtime turns its driver, which
        // a server flooding this exchange can put off for as long as it floods:
        // the clock is also read after every frame, and the loop yields once the
        // task's cooperative budget is spent (DOS.md, "A deadline under a flood").
        let mut late = ReplyDeadline::new(&self.pauses, deadline, later);
        loop {
            let step = std::future::poll_fn(|cx| {
                if let Poll::Ready(outcome) = reply.as_mut().poll(cx) {
                    return Poll::Ready(Step::Reply(outcome));
                }
                match exchange.poll_run(cx) {
                    Poll::Ready(frame) => Poll::Ready(Step::Ended(frame)),
                    // Taken in the same poll that handed it over: the exchange
                    // waits for it without a waker (see `Outlet::hand_over`).
                    Poll::Pending => exchange
                        .take_frame()
                        .map_or(Poll::Pending, |frame| Poll::Ready(Step::Frame(frame))),
                }
            })
            .await;
            match step {
                Step::Reply(outcome) => {
                    self.finish_at_hand(&mut exchange, tag);
                    return outcome;
                }
                Step::Frame(frame) => {
                    self.route_here(frame, tag);
                    if late.passed() {
                        // A reply this frame just settled still wins.
                        let mut cx = Context::from_waker(std::task::Waker::noop());
                        return match reply.as_mut().poll(&mut cx) {
                            Poll::Ready(outcome) => outcome,
                            Poll::Pending => Err(self.timed_out(method)),
                        };
                    }
                    tokio::task::coop::consume_budget().await;
                }
                Step::Ended(frame) => {
                    if let Some(frame) = frame {
                        self.route_here(frame, tag);
                    }
                    break;
                }
            }
        }
        reply.await
    }

    /// Once the reply is in: what the exchange can do without waiting (an event
    /// stream's end, usually in the same read as the reply) is done here, so
    /// that only an exchange still waiting on the server is detached to a task.
    /// At most [`FRAMES_AT_HAND`] frames: a stream that goes on flooding after
    /// the reply is detached, never drained here. `tag`: the request's.
    fn finish_at_hand(self: &Arc<Self>, exchange: &mut Exchange, tag: Option<u64>) {
        for _ in 0..FRAMES_AT_HAND {
            let polled = exchange.poll_run(&mut Context::from_waker(std::task::Waker::noop()));
            match polled {
                Poll::Ready(Some(frame)) => return self.route_here(frame, tag),
                Poll::Ready(None) => return,
                Poll::Pending => match exchange.take_frame() {
                    Some(frame) => self.route_here(frame, tag),
                    None => return,
                },
            }
        }
    }

    /// Routes a frame the caller's exchange handed over, as the reader would
    /// (with the request's `tag`: the frame came on its stream). Only queueing
    /// a reply to a server request may wait (the outbound queue full): that
    /// goes on in a task of its own, since a caller that stops waiting must not
    /// drop it. Nothing is boxed for a frame that routes at once (a reply, the
    /// usual case).
    fn route_here(self: &Arc<Self>, frame: Bytes, tag: Option<u64>) {
        let reply = match self.route_frame(&frame, tag) {
            Ok(None) => return,
            Ok(Some(reply)) => reply,
            Err(error) => return self.terminate(error),
        };
        drop(frame);
        let shared = self.clone();
        let mut queueing = Box::pin(async move {
            if let Err(error) = shared.send_reply(&reply).await {
                shared.terminate(error);
            }
        });
        let mut cx = Context::from_waker(std::task::Waker::noop());
        if queueing.as_mut().poll(&mut cx).is_pending() {
            drop(tokio::spawn(queueing));
        }
    }

    /// Completes the request a reply's id names ([`reply_key`]): a number settles
    /// a request sent with a number id, a probe string id the probe; any other
    /// reply is dropped.
    pub(super) fn settle_reply(&self, (id, string_id): (u64, bool), outcome: Result<ResultBody>) {
        let pending = {
            let mut pending = lock(&self.pending);
            match pending.entry(id) {
                Entry::Occupied(entry) if entry.get().string_id == string_id => entry.remove(),
                _ => {
                    drop(pending);
                    self.dropped.fetch_add(1, Ordering::Relaxed);
                    return;
                }
            }
        };
        pending.complete(outcome);
    }

    /// Completes a pending request; a reply for an unknown id is dropped.
    pub(super) fn settle(&self, id: u64, outcome: Result<ResultBody>) {
        let Some(pending) = lock(&self.pending).remove(&id) else {
            self.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        };
        pending.complete(outcome);
    }

    /// Queues one best-effort `notifications/cancelled` for a request written for
    /// `framing`. A stateless request on HTTP gets none: cutting its exchange (the
    /// transport does, once the request is abandoned) is its cancellation.
    pub(super) fn send_cancelled(&self, id: u64, framing: Framing) {
        if framing.stateless && self.medium == Medium::Exchanges {
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
            meta: notification_meta("notifications/cancelled", framing),
            request: None,
        }));
        if queued.is_err() {
            self.backlog.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

/// Settles a request's fate when its caller stops waiting (reply, timeout, drop).
pub(super) struct RequestGuard<'a> {
    shared: &'a Arc<Core>,
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
                self.shared.send_cancelled(control.id, control.framing);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(id: Value) -> Option<(u64, bool)> {
        reply_key(&Id::from_json(&id)?)
    }

    #[tokio::test(start_paused = true)]
    async fn a_reply_deadline_passes_at_the_later_of_its_own_and_where_it_was_moved() {
        let clock = PauseClock::default();
        let later = MovableDeadline::new();
        assert_eq!(later.get(), None);
        let start = Instant::now();
        let mut deadline = ReplyDeadline::new(&clock, start + Duration::from_secs(1), Some(&later));
        later.move_to(start + Duration::from_secs(3));
        later.move_to(start + Duration::from_secs(2)); // never earlier
        assert_eq!(later.get(), Some(start + Duration::from_secs(3)));
        tokio::time::advance(Duration::from_millis(1500)).await;
        assert!(!deadline.passed(), "moved past its own");
        tokio::time::advance(Duration::from_millis(1000)).await;
        assert!(!deadline.passed());
        tokio::time::advance(Duration::from_millis(600)).await;
        assert!(deadline.passed());
        // Without a movable deadline, its own.
        let mut own = ReplyDeadline::new(&clock, Instant::now() + Duration::from_secs(1), None);
        tokio::time::advance(Duration::from_secs(1)).await;
        assert!(own.passed());
    }

    #[test]
    fn a_reply_id_names_a_request_only_in_the_form_it_was_sent() {
        assert_eq!(key(serde_json::json!(7)), Some((7, false)));
        assert_eq!(
            key(serde_json::json!("server-discover-probe-0")),
            Some((0, true))
        );
        assert_eq!(
            key(serde_json::json!("server-discover-probe-42")),
            Some((42, true))
        );
        for other in [
            serde_json::json!(-1),
            serde_json::json!("7"),
            serde_json::json!("server-discover-probe-"),
            serde_json::json!("server-discover-probe-07"),
            serde_json::json!("server-discover-probe-+7"),
            serde_json::json!("server-discover-probe-7 "),
            serde_json::json!("server-discover-probe-99999999999999999999"),
            serde_json::json!("SERVER-DISCOVER-PROBE-7"),
        ] {
            assert_eq!(key(other.clone()), None, "{other}");
        }
    }
}
