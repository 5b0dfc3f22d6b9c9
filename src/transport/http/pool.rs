//! The connection pool at the bottom of the stack, on hyper's own `client::conn`
//! API: an HTTP/1.1 connection is driven by whoever polls the request on it (its
//! response future, then its body), not by a task of its own.
//!
//! hyper-util's legacy client spawns a task per connection and, for each HTTP/1.1
//! response whose body is still to be read, one more task that returns the
//! connection to its pool; every request then crosses tasks (and, on a
//! multi-thread runtime, threads) three times. Here a request checks an idle
//! connection out, writes, reads the head and the body in the caller's own
//! polls, and checks the connection back in when the body ends: no task, no
//! channel hop to another task. Measured in `BENCHMARKS.md` ("Fifth round").
//!
//! - HTTP/1.1: one request at a time per connection (no pipelining). A connection
//!   whose exchange is abandoned (the request future or the body dropped before
//!   the end) is closed, as hyper does: HTTP/1.1 cannot abort a message and keep
//!   the connection.
//! - HTTP/2 (where ALPN offers it): one shared connection per origin, driven by a
//!   task of its own as multiplexing needs; requests share it.
//! - A request whose reused connection turned out closed before the request was
//!   written (an HTTP/1.1 connection the server closed as it was taken, an
//!   HTTP/2 connection after the server's `GOAWAY`) is sent again on another
//!   connection, as hyper-util does; a request that may have reached the server
//!   is never sent twice.
//! - Bounds: at most [`MAX_ORIGINS`] origins are remembered (least recently used
//!   first forgotten; their idle connections closed), at most `max_idle` idle
//!   connections per origin (more are closed on return), and an idle connection
//!   (an HTTP/2 connection no request took) is closed after `idle_timeout`. A
//!   sweep task runs while any connection is idle: it closes them when their
//!   time is up, and at once those the server closed (an idle HTTP/1.1
//!   connection wakes it when its server closes).
//! - A request's write waits for the end of the scheduler pass that started it
//!   (see [`WriteLater`]).
//! - `Host` is set once per origin (a request that carries one keeps it);
//!   requests go out in origin form, or in absolute form through a plain-HTTP
//!   proxy (the connector says which).

use std::error::Error as StdError;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use bytes::Bytes;
use futures_util::future::BoxFuture;
use http::header::HOST;
use http::uri::{Authority, Scheme};
use http::{HeaderValue, Uri};
use http_body::{Body, Frame, SizeHint};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::client::conn::{http1, http2};
use hyper_util::client::legacy::connect::Connection;
use hyper_util::rt::{TokioExecutor, TokioTimer};
// The runtime's clock (which tests may pause), as the sweep's timer uses.
use tokio::time::Instant;
use tower::{Service, ServiceExt};

use super::{HttpRequest, HttpResponse};
use crate::layer::BoxError;

/// Origins remembered at once; a transport talks to one (redirects stay on it),
/// so more only come from a host's own layer rewriting requests.
pub(crate) const MAX_ORIGINS: usize = 8;

/// A connection could not be established (TCP, proxy, TLS): the request never
/// reached the server.
#[derive(Debug)]
pub(crate) struct ConnectError(BoxError);

impl fmt::Display for ConnectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("could not connect")
    }
}

impl StdError for ConnectError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        Some(&*self.0)
    }
}

/// A request URI without a scheme or an authority (only a host's own layer can
/// produce one: the transport's endpoint is validated).
#[derive(Debug)]
struct NotAbsolute;

impl fmt::Display for NotAbsolute {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the request URI is not absolute")
    }
}

impl StdError for NotAbsolute {}

/// A connected stream hyper can drive.
pub(crate) trait Stream:
    hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static
{
}

impl<T: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static> Stream for T {}

/// What the pool connects with: a tower connector giving streams that say how
/// they are connected (ALPN, proxy).
pub(crate) trait Connect:
    Service<Uri, Response = Self::Io, Error = BoxError, Future: Send> + Clone + Send + Sync + 'static
{
    /// The connected stream.
    type Io: Stream + Connection;
}

impl<C, I> Connect for C
where
    C: Service<Uri, Response = I, Error = BoxError> + Clone + Send + Sync + 'static,
    C::Future: Send,
    I: Stream + Connection,
{
    type Io = I;
}

/// The pool: cheap to clone, one per transport.
pub(crate) struct Pool<C: Connect> {
    shared: Arc<Shared<C>>,
}

impl<C: Connect> Clone for Pool<C> {
    fn clone(&self) -> Self {
        Pool {
            shared: self.shared.clone(),
        }
    }
}

struct Shared<C: Connect> {
    /// Itself, for the connections' way home and the sweep task.
    this: Weak<Shared<C>>,
    connector: C,
    idle_timeout: Duration,
    max_idle: usize,
    state: Mutex<State<C::Io>>,
}

struct State<Io: Stream> {
    origins: Vec<Origin<Io>>,
    /// Gives each origin an id its connections carry home.
    next_id: u64,
    /// Ticks on every checkout: the least recent origin is forgotten first.
    clock: u64,
    /// A sweep task is running (it ends once nothing is idle).
    sweeping: bool,
    /// The running sweep's waker: idle connections are polled with it, so a
    /// server closing one wakes the sweep.
    sweep_waker: Option<Waker>,
    /// Numbers the HTTP/2 connections (to forget the right one).
    next_h2: u64,
}

struct Origin<Io: Stream> {
    id: u64,
    scheme: Scheme,
    authority: Authority,
    host: HeaderValue,
    last_used: u64,
    /// Idle HTTP/1.1 connections, the most recently returned last.
    idle: Vec<Idle<Io>>,
    /// The origin's HTTP/2 connection, shared by every request.
    shared: Option<SharedH2>,
}

/// An origin's HTTP/2 connection.
struct SharedH2 {
    id: u64,
    send: http2::SendRequest<Full<Bytes>>,
    /// When a request last took it (it is closed after `idle_timeout` unused).
    used: Instant,
}

struct Idle<Io: Stream> {
    conn: Box<H1<Io>>,
    since: Instant,
}

/// One HTTP/1.1 connection: its sender and the connection future, polled by
/// whoever holds it. Boxed once, so checking it in and out moves a pointer.
struct H1<Io: Stream> {
    send: http1::SendRequest<Full<Bytes>>,
    conn: http1::Connection<Io, Full<Bytes>>,
    /// Requests go to a plain-HTTP proxy in absolute form.
    proxied: bool,
    /// Its origin's id, and the pool it goes back to.
    origin: u64,
    home: Weak<dyn CheckIn<Io>>,
}

/// How a connection goes home without naming the connector type.
trait CheckIn<Io: Stream>: Send + Sync {
    fn check_in(&self, conn: Box<H1<Io>>);
}

impl<C: Connect> CheckIn<C::Io> for Shared<C> {
    fn check_in(&self, conn: Box<H1<C::Io>>) {
        Shared::check_in(self, conn);
    }
}

/// What a checkout gives.
enum Checked<Io: Stream> {
    Http1(Box<H1<Io>>),
    /// The connection's number and a sender on it.
    Http2(u64, http2::SendRequest<Full<Bytes>>),
}

/// How a request on an HTTP/1.1 connection failed.
enum Failed {
    /// Before it was written: safe to send again.
    Unsent(Box<HttpRequest>, BoxError),
    /// Anything else.
    Sent(BoxError),
}

/// The largest allocation glibc's per-thread cache serves (`tcache`, 64 size
/// classes up to 1032 bytes): a future boxed for every request stays within
/// it (tests), so worker threads reuse its memory without taking the shared
/// heap's lock.
#[cfg(test)]
pub(super) const THREAD_CACHE_MAX: usize = 1032;

impl<C: Connect> Pool<C> {
    /// A pool connecting with `connector`.
    pub(crate) fn new(connector: C, idle_timeout: Duration, max_idle: usize) -> Self {
        Pool {
            shared: Arc::new_cyclic(|this| Shared {
                this: this.clone(),
                connector,
                idle_timeout,
                max_idle,
                state: Mutex::new(State {
                    origins: Vec::new(),
                    next_id: 0,
                    clock: 0,
                    sweeping: false,
                    sweep_waker: None,
                    next_h2: 0,
                }),
            }),
        }
    }

    /// Sends `req` (an absolute URI) and returns the response, its body reading
    /// the connection as it is read.
    pub(crate) fn send(
        &self,
        req: HttpRequest,
    ) -> BoxFuture<'static, Result<HttpResponse, BoxError>> {
        Box::pin(self.shared.clone().send(req))
    }

    /// Idle HTTP/1.1 connections and remembered origins (tests).
    #[cfg(test)]
    fn counts(&self) -> (usize, usize) {
        let state = self.shared.lock();
        (
            state.origins.iter().map(|o| o.idle.len()).sum(),
            state.origins.len(),
        )
    }
}

impl<C: Connect> Shared<C> {
    fn lock(&self) -> MutexGuard<'_, State<C::Io>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A plain function returning an `async move` block: an `async fn` would
    /// store the request twice (its argument, and the local it is moved to),
    /// and each request's future is boxed, so its size is an allocation's.
    #[expect(
        clippy::manual_async_fn,
        reason = "an `async fn` stores its arguments twice (see above)"
    )]
    fn send(
        self: Arc<Self>,
        mut req: HttpRequest,
    ) -> impl Future<Output = Result<HttpResponse, BoxError>> + Send + 'static {
        async move {
            let (scheme, authority) = match (req.uri().scheme(), req.uri().authority()) {
                (Some(scheme), Some(authority)) => (scheme.clone(), authority.clone()),
                _ => return Err(Box::new(NotAbsolute) as BoxError),
            };
            let uri = req.uri().clone();
            // Before a connection is taken: a request dropped meanwhile leaves none
            // half-used.
            WriteLater::default().await;
            loop {
                let (checked, host, origin) = self.check_out(&scheme, &authority);
                let (checked, reused) = match checked {
                    Some(checked) => (checked, true),
                    // Boxed: connecting (TCP, proxy, TLS) is rare and its state
                    // large (6.7 KiB); every request's future would carry it.
                    None => (
                        Box::pin(self.connect(&scheme, &authority, origin)).await?,
                        false,
                    ),
                };
                match checked {
                    Checked::Http2(id, mut send) => match send.try_send_request(req).await {
                        Ok(response) => {
                            return Ok(response
                                .map(|body| PooledBody::<C::Io>::new(body, None).boxed_unsync()));
                        }
                        Err(mut error) => match error.take_message() {
                            // The connection was going away (the server's GOAWAY)
                            // before the request was sent: forget it, send anew.
                            Some(unsent) if reused => {
                                self.forget_h2(origin, id);
                                req = unsent;
                                *req.uri_mut() = uri.clone();
                            }
                            _ => return Err(Box::new(error.into_error())),
                        },
                    },
                    Checked::Http1(conn) => {
                        if !req.headers().contains_key(HOST) {
                            req.headers_mut().insert(HOST, host);
                        }
                        if !conn.proxied {
                            origin_form(req.uri_mut());
                        }
                        match exchange(conn, req).await {
                            Ok(response) => return Ok(response),
                            Err(Failed::Unsent(unsent, _)) if reused => {
                                // The idle connection was closed under us before the
                                // request went out: send it on another.
                                req = *unsent;
                                *req.uri_mut() = uri.clone();
                            }
                            Err(Failed::Unsent(_, error) | Failed::Sent(error)) => {
                                return Err(error);
                            }
                        }
                    }
                }
            }
        }
    }

    /// An open connection to the origin if one is idle (HTTP/1.1) or shared
    /// (HTTP/2), with the origin's `Host` value and id.
    fn check_out(
        &self,
        scheme: &Scheme,
        authority: &Authority,
    ) -> (Option<Checked<C::Io>>, HeaderValue, u64) {
        let mut state = self.lock();
        state.clock += 1;
        let now_tick = state.clock;
        let index = match state
            .origins
            .iter()
            .position(|o| o.scheme == *scheme && same_authority(&o.authority, authority))
        {
            Some(index) => index,
            None => state.add_origin(scheme, authority),
        };
        let origin = &mut state.origins[index];
        origin.last_used = now_tick;
        let host = origin.host.clone();
        let id = origin.id;
        let now = Instant::now();
        if let Some(shared) = &mut origin.shared {
            if !shared.send.is_closed() {
                shared.used = now;
                let checked = Checked::Http2(shared.id, shared.send.clone());
                return (Some(checked), host, id);
            }
            origin.shared = None;
        }
        while let Some(Idle { mut conn, since }) = origin.idle.pop() {
            if now.duration_since(since) < self.idle_timeout && conn.usable(Waker::noop()) {
                return (Some(Checked::Http1(conn)), host, id);
            }
            // Expired, closed by the server, or not ready: closed here.
        }
        (None, host, id)
    }

    /// Opens a connection to the origin (HTTP/2 when ALPN says so).
    async fn connect(
        self: &Arc<Self>,
        scheme: &Scheme,
        authority: &Authority,
        origin: u64,
    ) -> Result<Checked<C::Io>, BoxError> {
        let dst = Uri::builder()
            .scheme(scheme.clone())
            .authority(authority.clone())
            .path_and_query("/")
            .build()?;
        let mut connector = self.connector.clone();
        let io = async {
            connector.ready().await?;
            connector.call(dst).await
        }
        .await
        .map_err(|error| Box::new(ConnectError(error)) as BoxError)?;
        let connected = io.connected();
        if connected.is_negotiated_h2() {
            let (mut send, conn) = http2::Builder::new(TokioExecutor::new())
                .timer(TokioTimer::new())
                .handshake(io)
                .await?;
            // Multiplexing needs the connection driven apart from any request.
            drop(tokio::spawn(conn));
            send.ready().await?;
            let mut state = self.lock();
            state.next_h2 += 1;
            let h2 = state.next_h2;
            if let Some(entry) = state.origins.iter_mut().find(|o| o.id == origin)
                && entry.shared.as_ref().is_none_or(|s| s.send.is_closed())
            {
                entry.shared = Some(SharedH2 {
                    id: h2,
                    send: send.clone(),
                    used: Instant::now(),
                });
                self.start_sweep(state);
            }
            return Ok(Checked::Http2(h2, send));
        }
        let (send, conn) = http1::Builder::new().handshake(io).await?;
        let home: Weak<dyn CheckIn<C::Io>> = self.this.clone();
        Ok(Checked::Http1(Box::new(H1 {
            send,
            conn,
            proxied: connected.is_proxied(),
            origin,
            home,
        })))
    }

    /// Keeps a connection whose exchange ended for the next request to its
    /// origin, unless it cannot be reused or the bounds say no.
    fn check_in(&self, mut conn: Box<H1<C::Io>>) {
        let mut state = self.lock();
        // Polled with the sweep's waker: should the server close it while it is
        // idle, the sweep closes our end at once.
        let waker = state.sweep_waker.as_ref().unwrap_or(Waker::noop());
        if !conn.usable(waker) {
            return;
        }
        let Some(origin) = state.origins.iter_mut().find(|o| o.id == conn.origin) else {
            return; // the origin was forgotten meanwhile
        };
        if origin.idle.len() >= self.max_idle {
            return;
        }
        origin.idle.push(Idle {
            conn,
            since: Instant::now(),
        });
        self.start_sweep(state);
    }

    /// Starts the sweep task unless it runs (or no runtime is at hand). The lock
    /// is released before spawning: a runtime that is shutting down drops the
    /// task at once, and its drop takes the lock.
    fn start_sweep(&self, mut state: MutexGuard<'_, State<C::Io>>) {
        if state.sweeping {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        state.sweeping = true;
        drop(state);
        // The guard is made before the task: dropped unpolled, it still lets
        // the next check-in start another sweep.
        let ended = SweepEnded(Some(self.this.clone()));
        drop(runtime.spawn(sweep(ended)));
    }

    /// Forgets an origin's HTTP/2 connection `h2` (it refused a request).
    fn forget_h2(&self, origin: u64, h2: u64) {
        let mut state = self.lock();
        if let Some(entry) = state.origins.iter_mut().find(|o| o.id == origin)
            && entry.shared.as_ref().is_some_and(|s| s.id == h2)
        {
            entry.shared = None;
        }
    }
}

impl<Io: Stream> State<Io> {
    /// Remembers a new origin (forgetting the least recently used one past
    /// [`MAX_ORIGINS`]); returns its index.
    fn add_origin(&mut self, scheme: &Scheme, authority: &Authority) -> usize {
        if self.origins.len() >= MAX_ORIGINS
            && let Some(oldest) = self
                .origins
                .iter()
                .enumerate()
                .min_by_key(|(_, o)| o.last_used)
                .map(|(i, _)| i)
        {
            self.origins.swap_remove(oldest);
        }
        self.next_id += 1;
        self.origins.push(Origin {
            id: self.next_id,
            scheme: scheme.clone(),
            authority: authority.clone(),
            host: host_value(scheme, authority),
            last_used: self.clock,
            idle: Vec::new(),
            shared: None,
        });
        self.origins.len() - 1
    }
}

impl<Io: Stream> H1<Io> {
    /// Lets the connection finish what it can without waiting (the end of the
    /// last exchange, or the server's close of an idle connection); true when
    /// it can take a request now.
    fn usable(&mut self, waker: &Waker) -> bool {
        let mut cx = Context::from_waker(waker);
        if Pin::new(&mut self.conn).poll(&mut cx).is_ready() {
            return false; // closed, or failed
        }
        self.send.is_ready()
    }
}

/// Sends `req` on an HTTP/1.1 connection, driving the connection until the
/// response head is in; the body goes on driving it.
fn exchange<Io: Stream>(
    mut h1: Box<H1<Io>>,
    req: HttpRequest,
) -> H1Exchange<impl Future<Output = HyperResult>, Io> {
    H1Exchange {
        response: h1.send.try_send_request(req),
        conn: Some(h1),
    }
}

/// What hyper's HTTP/1.1 `try_send_request` ends with.
type HyperResult = Result<http::Response<Incoming>, hyper::client::conn::TrySendError<HttpRequest>>;

pin_project_lite::pin_project! {
    /// [`exchange`]'s future: a struct rather than an `async` block, which
    /// would store hyper's response future twice (captured, then pinned).
    struct H1Exchange<F, Io: Stream> {
        #[pin]
        response: F,
        conn: Option<Box<H1<Io>>>,
    }
}

impl<F: Future<Output = HyperResult>, Io: Stream> Future for H1Exchange<F, Io> {
    type Output = Result<HttpResponse, Failed>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        // The connection first: it writes the request and reads the head, which
        // resolves the response future.
        if let Some(h1) = this.conn
            && Pin::new(&mut h1.conn).poll(cx).is_ready()
        {
            // It ended (closed or failed) before the head came: dropping it
            // answers the request (with its message when it was never written);
            // kept, the request would wait forever.
            *this.conn = None;
        }
        let outcome = std::task::ready!(this.response.poll(cx));
        Poll::Ready(match outcome {
            Ok(response) => {
                let conn = this.conn.take();
                Ok(response.map(|body| PooledBody::new(body, conn).boxed_unsync()))
            }
            Err(mut error) => match error.take_message() {
                Some(req) => Err(Failed::Unsent(Box::new(req), Box::new(error.into_error()))),
                None => Err(Failed::Sent(Box::new(error.into_error()))),
            },
        })
    }
}

/// A response body that drives its HTTP/1.1 connection while it is read and
/// returns the connection to the pool once it has ended (an HTTP/2 body is
/// driven by its connection's task).
pub(crate) struct PooledBody<Io: Stream> {
    body: Incoming,
    conn: Option<Box<H1<Io>>>,
}

impl<Io: Stream> PooledBody<Io> {
    fn new(body: Incoming, conn: Option<Box<H1<Io>>>) -> Self {
        PooledBody { body, conn }
    }
}

impl<Io: Stream> PooledBody<Io> {
    /// A body whose end its length does not tell (chunked) may have ended all
    /// the same: one look, without waiting.
    fn ended_by_now(&mut self) -> bool {
        let mut cx = Context::from_waker(Waker::noop());
        if let Some(conn) = &mut self.conn
            && Pin::new(&mut conn.conn).poll(&mut cx).is_ready()
        {
            self.conn = None;
        }
        matches!(
            Pin::new(&mut self.body).poll_frame(&mut cx),
            Poll::Ready(None)
        )
    }

    /// Takes the connection home: the exchange has ended.
    fn release(&mut self) {
        if let Some(conn) = self.conn.take()
            && let Some(home) = conn.home.upgrade()
        {
            home.check_in(conn);
        }
    }
}

impl<Io: Stream> Body for PooledBody<Io> {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = self.get_mut();
        let mut drove = false;
        loop {
            match Pin::new(&mut this.body).poll_frame(cx) {
                Poll::Ready(None) => {
                    this.release();
                    return Poll::Ready(None);
                }
                Poll::Ready(Some(Err(error))) => {
                    this.conn = None; // failed mid-message: closed
                    return Poll::Ready(Some(Err(Box::new(error))));
                }
                Poll::Ready(Some(Ok(frame))) => return Poll::Ready(Some(Ok(frame))),
                Poll::Pending => {}
            }
            // Nothing buffered: let the connection read (it hands what it reads
            // to the body), then look once more. (HTTP/2: its task reads.)
            let Some(conn) = &mut this.conn else {
                return Poll::Pending;
            };
            if drove {
                return Poll::Pending;
            }
            drove = true;
            if Pin::new(&mut conn.conn).poll(cx).is_ready() {
                // It ended (the server closed after this message, or it failed):
                // what it read is in the body already.
                this.conn = None;
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

impl<Io: Stream> Drop for PooledBody<Io> {
    fn drop(&mut self) {
        // Only a finished exchange's connection can be reused; otherwise it
        // closes with this drop.
        if self.conn.is_some() && (self.body.is_end_stream() || self.ended_by_now()) {
            self.release();
        }
    }
}

/// Marks the sweep ended however it ends (its runtime shutting down included,
/// before it ever ran), so that the next check-in may start another.
struct SweepEnded<C: Connect>(Option<Weak<Shared<C>>>);

impl<C: Connect> Drop for SweepEnded<C> {
    fn drop(&mut self) {
        if let Some(pool) = self.0.take().and_then(|pool| pool.upgrade()) {
            let mut state = pool.lock();
            state.sweeping = false;
            state.sweep_waker = None;
        }
    }
}

/// Closes idle connections when their time is up, and those their server closed
/// as soon as it did (idle HTTP/1.1 connections are polled with this task's
/// waker); ends once nothing is idle (the next check-in starts another) or when
/// the pool is gone.
async fn sweep<C: Connect>(mut ended: SweepEnded<C>) {
    let Some(pool) = ended.0.clone() else { return };
    let mut timer: Option<Pin<Box<tokio::time::Sleep>>> = None;
    std::future::poll_fn(|cx| {
        let Some(pool) = pool.upgrade() else {
            return Poll::Ready(());
        };
        let now = Instant::now();
        let timeout = pool.idle_timeout;
        let mut state = pool.lock();
        let mut next: Option<Instant> = None;
        for origin in &mut state.origins {
            origin.idle.retain_mut(|idle| {
                let keep = now.duration_since(idle.since) < timeout && idle.conn.usable(cx.waker());
                if keep {
                    let due = idle.since + timeout;
                    next = Some(next.map_or(due, |n| n.min(due)));
                }
                keep
            });
            if let Some(shared) = &origin.shared {
                if shared.send.is_closed() || now.duration_since(shared.used) >= timeout {
                    origin.shared = None; // requests under way keep their streams
                } else {
                    let due = shared.used + timeout;
                    next = Some(next.map_or(due, |n| n.min(due)));
                }
            }
        }
        let Some(next) = next else {
            // Nothing idle: this sweep ends, under the lock a check-in takes.
            state.sweeping = false;
            state.sweep_waker = None;
            ended.0 = None;
            return Poll::Ready(());
        };
        if !state
            .sweep_waker
            .as_ref()
            .is_some_and(|w| w.will_wake(cx.waker()))
        {
            state.sweep_waker = Some(cx.waker().clone());
        }
        drop(state);
        let deadline = next;
        let timer = timer.get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
        if timer.deadline() != deadline {
            timer.as_mut().reset(deadline);
        }
        match timer.as_mut().poll(cx) {
            // Due: look again at once.
            Poll::Ready(()) => {
                cx.waker().wake_by_ref();
                Poll::Pending
            }
            Poll::Pending => Poll::Pending,
        }
    })
    .await;
}

/// Waits once for the end of the current scheduler pass (the task wakes itself
/// and goes behind the tasks already woken), so that a request is written after
/// the other tasks woken with it have run.
///
/// When many requests are started by tasks woken together (each by its own
/// reply), their writes then go out together, as they do from per-connection
/// tasks, and the server takes them in one wake-up instead of being woken (and
/// going back to sleep) once per request: measured in `BENCHMARKS.md` ("Fifth
/// round"), without it a co-located server was woken 0.8 times per request and
/// each call cost the client twice the CPU. Alone, a request pays one more poll.
/// A plain wake-up, not `tokio::task::yield_now`: that hands the waker to the
/// scheduler of the thread it runs on, which never runs it if that scheduler is
/// blocked in this very poll (a request blocked on inside another runtime's
/// task).
#[derive(Default)]
struct WriteLater(bool);

impl Future for WriteLater {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            return Poll::Ready(());
        }
        self.0 = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

/// `Authority`'s own equality ignores ASCII case byte by byte; the usual
/// request names its origin exactly as the last one did.
fn same_authority(a: &Authority, b: &Authority) -> bool {
    a.as_str() == b.as_str() || a == b
}

/// The `Host` value of an origin: the authority without userinfo, the port only
/// when it is not the scheme's default.
fn host_value(scheme: &Scheme, authority: &Authority) -> HeaderValue {
    let host = authority.host();
    let default_port = if *scheme == Scheme::HTTPS { 443 } else { 80 };
    let value = match authority.port_u16() {
        Some(port) if port != default_port => format!("{host}:{port}"),
        _ => host.to_owned(),
    };
    // An `Authority` holds only characters valid in a header value.
    HeaderValue::from_str(&value).unwrap_or_else(|_| HeaderValue::from_static(""))
}

/// Rewrites an absolute URI to origin form (`/path?query`).
fn origin_form(uri: &mut Uri) {
    let path = match uri.path_and_query() {
        Some(path) if path.as_str() != "/" => {
            let mut parts = http::uri::Parts::default();
            parts.path_and_query = Some(path.clone());
            Uri::from_parts(parts).unwrap_or_default()
        }
        _ => Uri::default(),
    };
    *uri = path;
}

#[cfg(test)]
mod scripted_tests;
#[cfg(test)]
mod tests;
