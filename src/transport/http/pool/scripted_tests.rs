//! The pool against scripted servers: HTTP/1.x message shapes from raw sockets
//! (what is reused, what is closed, what is never sent twice), HTTP/2 (h2c by
//! prior knowledge, through a connector that says h2) against hyper's server,
//! the sweep's lifecycle, and callers off the transport's runtime.

use std::convert::Infallible;
use std::io;
use std::sync::Mutex as StdMutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use hyper_util::client::legacy::connect::Connected;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::tests::{Loopback, TestPool, body_bytes, pool as http_pool};
use super::*;
use crate::transport::http::connector::{HyperService, TlsOptions, tls_config};

const HANG: Duration = Duration::from_secs(5);
const OK: &[u8] = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}";
const CHUNKED_OK: &[u8] =
    b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n";

fn post(url: &str) -> HttpRequest {
    http::Request::post(url)
        .body(Full::new(Bytes::from_static(b"{}")))
        .expect("request")
}

fn get(url: &str) -> HttpRequest {
    http::Request::get(url)
        .body(Full::new(Bytes::new()))
        .expect("request")
}

async fn call<C: Connect>(pool: &Pool<C>, url: &str) -> Result<Bytes, BoxError> {
    let response = pool.send(post(url)).await?;
    Ok(response.into_body().collect().await?.to_bytes())
}

/// `call`, failing the test instead of waiting forever.
async fn call_bounded<C: Connect>(pool: &Pool<C>, url: &str) -> Result<Bytes, BoxError> {
    tokio::time::timeout(HANG, call(pool, url))
        .await
        .expect("answered, not left waiting")
}

/// `call_bounded` `times` over, each answered with the scripted `{}`.
async fn answers_each<C: Connect>(pool: &Pool<C>, url: &str, times: usize) {
    for _ in 0..times {
        assert_eq!(&call_bounded(pool, url).await.expect("call")[..], b"{}");
    }
}

// ----- a scripted HTTP/1.x server on raw sockets -----

enum Reply {
    /// Written; the server reads on (and sees the client's close).
    Send(Vec<u8>),
    /// Written, then the server closes.
    SendThenClose(Vec<u8>),
    /// No answer: the server closes after reading the request.
    Close,
}

struct Raw {
    net: Loopback,
    requests: Arc<AtomicUsize>,
    heads: Arc<StdMutex<Vec<String>>>,
}

impl std::ops::Deref for Raw {
    type Target = Loopback;
    fn deref(&self) -> &Loopback {
        &self.net
    }
}

/// A raw server writing `reply` to every request it reads, and a pool (90 s
/// idle timeout, 16 idle connections) to reach it.
async fn replying(reply: &'static [u8]) -> (Raw, TestPool) {
    let server = raw(move |_, _| Reply::Send(reply.to_vec())).await;
    (server, http_pool(Duration::from_secs(90), 16))
}

/// Reads one request (its head, then a `content-length` body); `None` at EOF.
async fn read_request(tcp: &mut TcpStream, buf: &mut Vec<u8>) -> Option<String> {
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).into_owned();
            let len = head
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length:")
                        .map(|v| v.trim().parse::<usize>().expect("length"))
                })
                .unwrap_or(0);
            if buf.len() >= end + 4 + len {
                buf.drain(..end + 4 + len);
                return Some(head);
            }
        }
        let mut chunk = [0u8; 8192];
        match tcp.read(&mut chunk).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

/// Answers the `i`th request on each connection with `respond(i, head)`.
async fn raw<F>(respond: F) -> Raw
where
    F: Fn(usize, &str) -> Reply + Send + Sync + 'static,
{
    let (listener, net) = Loopback::bind().await;
    let server = Raw {
        net,
        requests: Arc::default(),
        heads: Arc::default(),
    };
    let (accepted, requests, ended, heads) = (
        server.accepted.clone(),
        server.requests.clone(),
        server.ended.clone(),
        server.heads.clone(),
    );
    let respond = Arc::new(respond);
    tokio::spawn(async move {
        loop {
            let Ok((mut tcp, _)) = listener.accept().await else {
                return;
            };
            accepted.fetch_add(1, Ordering::SeqCst);
            let (requests, ended, heads, respond) = (
                requests.clone(),
                ended.clone(),
                heads.clone(),
                respond.clone(),
            );
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut i = 0;
                while let Some(head) = read_request(&mut tcp, &mut buf).await {
                    requests.fetch_add(1, Ordering::SeqCst);
                    heads.lock().unwrap().push(head.clone());
                    match respond(i, &head) {
                        Reply::Send(bytes) => {
                            if tcp.write_all(&bytes).await.is_err() {
                                break;
                            }
                        }
                        Reply::SendThenClose(bytes) => {
                            let _ = tcp.write_all(&bytes).await;
                            break;
                        }
                        Reply::Close => break,
                    }
                    i += 1;
                }
                drop(tcp);
                ended.fetch_add(1, Ordering::SeqCst);
            });
        }
    });
    server
}

// ----- HTTP/1.x shapes (pass: checked correct) -----

#[tokio::test]
async fn a_length_body_read_to_its_last_byte_but_dropped_before_none_is_reused() {
    let (server, pool) = replying(OK).await;
    let response = pool.send(post(&server.url("/mcp"))).await.expect("head");
    let mut body = response.into_body();
    let frame = body.frame().await.expect("frame").expect("data");
    assert_eq!(frame.into_data().expect("data"), "{}");
    assert!(body.is_end_stream());
    drop(body);
    assert_eq!(pool.counts().0, 1, "checked in on drop");
    answers_each(&pool, &server.url("/mcp"), 1).await;
    assert_eq!(server.accepted.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_chunked_body_read_to_none_is_reused() {
    let (server, pool) = replying(CHUNKED_OK).await;
    answers_each(&pool, &server.url("/mcp"), 3).await;
    assert_eq!(server.accepted.load(Ordering::SeqCst), 1);
    assert_eq!(pool.counts().0, 1);
}

#[tokio::test]
async fn a_connection_close_response_is_closed_by_us_and_not_reused() {
    // The server would keep the socket: only our side can close it.
    let (server, pool) =
        replying(b"HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 2\r\n\r\n{}").await;
    answers_each(&pool, &server.url("/mcp"), 2).await;
    assert_eq!(server.accepted.load(Ordering::SeqCst), 2);
    assert_eq!(pool.counts().0, 0);
    assert_eq!(server.wait_ended(2).await, 2, "both closed by the client");
}

#[tokio::test]
async fn an_http10_close_delimited_body_ends_at_eof() {
    let server = raw(|_, _| Reply::SendThenClose(b"HTTP/1.0 200 OK\r\n\r\n{}".to_vec())).await;
    let pool = http_pool(Duration::from_secs(90), 16);
    answers_each(&pool, &server.url("/mcp"), 2).await;
    assert_eq!(server.accepted.load(Ordering::SeqCst), 2);
    assert_eq!(pool.counts().0, 0);
}

#[tokio::test]
async fn an_http10_response_with_a_length_is_not_kept_alive() {
    let (server, pool) = replying(b"HTTP/1.0 200 OK\r\ncontent-length: 2\r\n\r\n{}").await;
    answers_each(&pool, &server.url("/mcp"), 2).await;
    assert_eq!(server.accepted.load(Ordering::SeqCst), 2);
    assert_eq!(server.wait_ended(2).await, 2);
}

#[tokio::test]
async fn an_interim_1xx_is_skipped_and_the_connection_reused() {
    let (server, pool) =
        replying(b"HTTP/1.1 102 Processing\r\n\r\nHTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}")
            .await;
    answers_each(&pool, &server.url("/mcp"), 2).await;
    assert_eq!(server.accepted.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn empty_bodies_dropped_unread_are_reused() {
    let server = raw(|i, _| {
        Reply::Send(if i % 2 == 0 {
            b"HTTP/1.1 204 No Content\r\n\r\n".to_vec()
        } else {
            b"HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n".to_vec()
        })
    })
    .await;
    let pool = http_pool(Duration::from_secs(90), 16);
    for _ in 0..4 {
        let response = tokio::time::timeout(HANG, pool.send(post(&server.url("/mcp"))))
            .await
            .expect("answered")
            .expect("head");
        assert!(response.body().is_end_stream());
        drop(response);
        assert_eq!(pool.counts().0, 1);
    }
    assert_eq!(server.accepted.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_body_cut_short_fails_and_its_connection_is_not_kept() {
    let server = raw(|_, _| {
        Reply::SendThenClose(b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\n{}".to_vec())
    })
    .await;
    let pool = http_pool(Duration::from_secs(90), 16);
    assert!(call_bounded(&pool, &server.url("/mcp")).await.is_err());
    assert_eq!(pool.counts().0, 0);
}

#[tokio::test]
async fn a_request_that_reached_the_server_is_never_sent_again() {
    // The second request on the kept connection is read, then the server closes
    // without answering: it must fail, not go out again on a new connection.
    let server = raw(|i, _| {
        if i == 0 {
            Reply::Send(OK.to_vec())
        } else {
            Reply::Close
        }
    })
    .await;
    let pool = http_pool(Duration::from_secs(90), 16);
    call_bounded(&pool, &server.url("/mcp"))
        .await
        .expect("first");
    assert!(call_bounded(&pool, &server.url("/mcp")).await.is_err());
    assert_eq!(server.requests.load(Ordering::SeqCst), 2);
    assert_eq!(server.accepted.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_response_before_the_request_body_is_written_ends_and_the_connection_is_dropped() {
    // The server answers after the head without reading a large request body:
    // the response and its body come in, and the connection (still writing)
    // is not kept.
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    tokio::spawn(async move {
        while let Ok((mut tcp, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 1024];
                while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                    match tcp.read(&mut chunk).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
                let _ = tcp.write_all(OK).await;
                tokio::time::sleep(Duration::from_secs(10)).await;
            });
        }
    });
    let pool = http_pool(Duration::from_secs(90), 16);
    let req = http::Request::post(format!("http://127.0.0.1:{port}/mcp"))
        .body(Full::new(Bytes::from(vec![b'x'; 16 << 20])))
        .expect("request");
    let body = tokio::time::timeout(HANG, async {
        body_bytes(pool.send(req).await.expect("head")).await
    })
    .await
    .expect("answered while the request body is still being written");
    assert_eq!(&body[..], b"{}");
    assert_eq!(pool.counts().0, 0, "a connection mid-request is not reused");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_read_by_another_task_drives_its_connection() {
    let (server, pool) = replying(
        b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n1\r\n{\r\n1\r\n}\r\n0\r\n\r\n",
    )
    .await;
    for _ in 0..3 {
        let response = pool.send(post(&server.url("/mcp"))).await.expect("head");
        let body =
            tokio::spawn(async move { response.into_body().collect().await.map(|c| c.to_bytes()) });
        let body = tokio::time::timeout(HANG, body)
            .await
            .expect("answered")
            .expect("task");
        assert_eq!(&body.expect("body")[..], b"{}");
    }
    assert_eq!(server.accepted.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn through_a_plain_http_proxy_requests_are_absolute_with_the_origins_host_and_reuse_it() {
    let proxy = raw(|_, _| Reply::Send(OK.to_vec())).await;
    let matcher = hyper_util::client::proxy::matcher::Matcher::builder()
        .http(format!("http://127.0.0.1:{}", proxy.port))
        .build();
    let tls = tls_config("t", TlsOptions::default(), false).expect("tls");
    let svc = HyperService::new(tls, Some(matcher));
    for _ in 0..2 {
        let response = tokio::time::timeout(
            HANG,
            svc.clone().oneshot(post("http://mcp.invalid:9/mcp?x=1")),
        )
        .await
        .expect("answered")
        .expect("response");
        response.into_body().collect().await.expect("body");
    }
    assert_eq!(
        proxy.accepted.load(Ordering::SeqCst),
        1,
        "kept alive to the proxy"
    );
    for head in proxy.heads.lock().unwrap().iter() {
        assert!(
            head.starts_with("POST http://mcp.invalid:9/mcp?x=1 HTTP/1.1"),
            "{head}"
        );
        assert!(
            head.to_ascii_lowercase()
                .contains("\r\nhost: mcp.invalid:9"),
            "{head}"
        );
    }
}

// ----- findings (HTTP/1.1) -----

/// A chunked body's `is_end_stream` stays false until `poll_frame` returns
/// `None`: one dropped with its end already read is still reused, as hyper's
/// own dispatcher would (`poll_drain_or_close_read`).
#[tokio::test]
async fn a_chunked_body_dropped_after_its_last_data_is_reused() {
    let (server, pool) = replying(CHUNKED_OK).await;
    let response = pool.send(post(&server.url("/mcp"))).await.expect("head");
    let mut body = response.into_body();
    let frame = body.frame().await.expect("frame").expect("data");
    assert_eq!(frame.into_data().expect("data"), "{}");
    drop(body);
    assert_eq!(pool.counts().0, 1, "the terminating chunk was already read");
}

/// A request waits for the end of the scheduler pass before it takes a
/// connection: one dropped meanwhile (a timeout, a `select!`) leaves the idle
/// connection in the pool.
#[tokio::test]
async fn a_request_dropped_before_its_write_leaves_the_connection_idle() {
    let (server, pool) = replying(OK).await;
    answers_each(&pool, &server.url("/mcp"), 1).await;
    assert_eq!(pool.counts().0, 1);
    let mut pending = pool.send(post(&server.url("/mcp")));
    let mut cx = Context::from_waker(Waker::noop());
    assert!(pending.as_mut().poll(&mut cx).is_pending());
    drop(pending);
    assert_eq!(server.requests.load(Ordering::SeqCst), 1, "never written");
    assert_eq!(pool.counts().0, 1, "the untouched connection went back");
}

// ----- the sweep's lifecycle -----

/// A sweep task dropped before its first poll (its runtime shut down first)
/// still lets a later check-in start another sweep.
#[test]
fn a_sweep_dropped_before_it_ran_does_not_stop_later_sweeps() {
    a_later_runtime_sweeps_after_the_first_ended(false);
}

/// A one-worker multi-thread runtime, for a server that must keep running
/// while the test thread blocks.
fn serving_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime")
}

/// A current-thread runtime: another runtime than the server's.
fn current_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

/// The first runtime's check-in spawns the sweep and the runtime ends (after
/// one poll of the sweep when `sweep_polled_once`); a call on a second runtime
/// must still get its idle connection swept.
fn a_later_runtime_sweeps_after_the_first_ended(sweep_polled_once: bool) {
    let server_rt = serving_runtime();
    let server = server_rt.block_on(raw(|_, _| Reply::Send(OK.to_vec())));
    let url = server.url("/mcp");
    let pool = http_pool(Duration::from_millis(60), 16);
    current_thread().block_on(async {
        call(&pool, &url).await.expect("call");
        if sweep_polled_once {
            tokio::task::yield_now().await; // the sweep task runs once
        }
    });
    current_thread().block_on(async {
        call(&pool, &url).await.expect("call");
        assert_eq!(pool.counts().0, 1);
        // Many sweep periods (30 ms) past the idle timeout (60 ms).
        tokio::time::sleep(Duration::from_millis(600)).await;
    });
    assert_eq!(pool.counts().0, 0, "the expired idle connection was swept");
}

// ----- callers off the runtime (`InRuntime`) -----

struct Unpark(std::thread::Thread);

impl std::task::Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
}

/// An executor that is not tokio's.
fn block_on<F: Future>(f: F) -> F::Output {
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut f = std::pin::pin!(f);
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
        std::thread::park();
    }
}

/// `driver::post::InRuntime`'s way: every poll enters the transport's runtime.
struct Entered<F> {
    handle: tokio::runtime::Handle,
    inner: Pin<Box<F>>,
}

impl<F: Future> Future for Entered<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.get_mut();
        let _entered = this.handle.enter();
        this.inner.as_mut().poll(cx)
    }
}

fn entered<F: Future>(handle: &tokio::runtime::Handle, f: F) -> Entered<F> {
    Entered {
        handle: handle.clone(),
        inner: Box::pin(f),
    }
}

#[test]
fn callers_on_no_runtime_or_another_runtime_drive_requests_and_bodies() {
    let rt = serving_runtime();
    let server = rt.block_on(raw(|_, _| Reply::Send(OK.to_vec())));
    let url = server.url("/mcp");
    let pool = http_pool(Duration::from_secs(90), 16);
    let handle = rt.handle().clone();
    std::thread::scope(|s| {
        s.spawn(|| {
            // No runtime on this thread; the head inside, the body outside it.
            for _ in 0..3 {
                let response = block_on(entered(&handle, pool.send(post(&url)))).expect("head");
                let body = block_on(response.into_body().collect()).expect("body");
                assert_eq!(&body.to_bytes()[..], b"{}");
            }
            // Another tokio runtime's thread.
            let other = current_thread();
            for _ in 0..3 {
                let body = other
                    .block_on(entered(&handle, call(&pool, &url)))
                    .expect("call");
                assert_eq!(&body[..], b"{}");
            }
        });
    });
    assert_eq!(server.accepted.load(Ordering::SeqCst), 1);
}

/// Runs `f` on a thread inside another runtime's `block_on`, blocking on the
/// request with a non-tokio executor (sync-over-async inside a task); true when
/// it finished within `HANG`.
fn finishes_when_blocked_on_inside_another_runtime<F>(f: F) -> bool
where
    F: Future + Send + 'static,
{
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let other = current_thread();
        other.block_on(async move {
            block_on(f);
        });
        let _ = tx.send(());
    });
    rx.recv_timeout(HANG).is_ok()
}

/// A request blocked on inside another runtime's task finishes: its wait for
/// the end of the scheduler pass wakes the task itself (`tokio::task::yield_now`
/// would hand the waker to that runtime's scheduler, blocked in this very poll).
#[test]
fn a_request_blocked_on_inside_another_runtimes_task_finishes() {
    let rt = serving_runtime();
    let server = rt.block_on(raw(|_, _| Reply::Send(OK.to_vec())));
    let url = server.url("/mcp");
    let pool = http_pool(Duration::from_secs(90), 16);
    let handle = rt.handle().clone();
    let request = entered(&handle, async move { call(&pool, &url).await.map(|_| ()) });
    assert!(finishes_when_blocked_on_inside_another_runtime(request));
}

// ----- HTTP/2 (h2c: a connector that says ALPN chose h2) -----

#[derive(Clone)]
struct H2c;

struct H2cIo(TokioIo<TcpStream>);

impl Connection for H2cIo {
    fn connected(&self) -> Connected {
        Connected::new().negotiated_h2()
    }
}

impl hyper::rt::Read for H2cIo {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

impl hyper::rt::Write for H2cIo {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }
}

impl Service<Uri> for H2c {
    type Response = H2cIo;
    type Error = BoxError;
    type Future = BoxFuture<'static, Result<H2cIo, BoxError>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, dst: Uri) -> Self::Future {
        Box::pin(async move {
            let addr = format!(
                "{}:{}",
                dst.host().unwrap_or(""),
                dst.port_u16().unwrap_or(80)
            );
            Ok(H2cIo(TokioIo::new(TcpStream::connect(addr).await?)))
        })
    }
}

/// A hyper HTTP/2 server: `{}`, or a body that never ends for `/endless`. The
/// first connection shuts down gracefully (GOAWAY) when `goaway` is sent; with
/// `abort`, it is dropped instead (TCP close, no GOAWAY).
struct H2Server {
    net: Loopback,
    first: tokio::sync::watch::Sender<u8>,
}

impl std::ops::Deref for H2Server {
    type Target = Loopback;
    fn deref(&self) -> &Loopback {
        &self.net
    }
}

impl H2Server {
    async fn start() -> H2Server {
        let (listener, net) = Loopback::bind().await;
        let (first, signal) = tokio::sync::watch::channel(0u8);
        let (a, e) = (net.accepted.clone(), net.ended.clone());
        tokio::spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    return;
                };
                let index = a.fetch_add(1, Ordering::SeqCst);
                let e = e.clone();
                let mut signal = signal.clone();
                tokio::spawn(async move {
                    let svc =
                        hyper::service::service_fn(|req: http::Request<Incoming>| async move {
                            let body: http_body_util::combinators::BoxBody<Bytes, Infallible> =
                                if req.uri().path() == "/endless" {
                                    http_body_util::StreamBody::new(futures_util::stream::pending())
                                        .boxed()
                                } else {
                                    Full::new(Bytes::from_static(b"{}")).boxed()
                                };
                            Ok::<_, Infallible>(http::Response::new(body))
                        });
                    let conn = hyper::server::conn::http2::Builder::new(
                        hyper_util::rt::TokioExecutor::new(),
                    )
                    .serve_connection(TokioIo::new(tcp), svc);
                    let mut conn = std::pin::pin!(conn);
                    if index == 0 {
                        tokio::select! {
                            _ = conn.as_mut() => {}
                            Ok(v) = async { signal.wait_for(|v| *v != 0).await.map(|v| *v) } => {
                                if v == 1 {
                                    conn.as_mut().graceful_shutdown();
                                    let _ = conn.as_mut().await;
                                }
                                // 2: dropped, the socket closed.
                            }
                        }
                    } else {
                        let _ = conn.as_mut().await;
                    }
                    e.fetch_add(1, Ordering::SeqCst);
                });
            }
        });
        H2Server { net, first }
    }

    /// A server, and a pool that reaches it over h2c with `idle_timeout`.
    async fn start_with_pool(idle_timeout: Duration) -> (H2Server, Pool<H2c>) {
        (H2Server::start().await, Pool::new(H2c, idle_timeout, 16))
    }
}

#[tokio::test]
async fn h2_requests_share_one_connection() {
    let (server, pool) = H2Server::start_with_pool(Duration::from_secs(90)).await;
    answers_each(&pool, &server.url("/mcp"), 3).await;
    assert_eq!(server.accepted(), 1);
}

#[tokio::test]
async fn h2_a_connection_the_server_dropped_is_replaced() {
    let (server, pool) = H2Server::start_with_pool(Duration::from_secs(90)).await;
    answers_each(&pool, &server.url("/mcp"), 1).await;
    server.first.send(2).expect("signal");
    tokio::time::sleep(Duration::from_millis(200)).await;
    call_bounded(&pool, &server.url("/mcp"))
        .await
        .expect("on a new connection");
    assert_eq!(server.accepted(), 2);
}

/// After the server's graceful GOAWAY the shared connection stays open while a
/// stream on it does (for MCP, the long-lived GET stream), so the next request
/// may be handed to it; hyper gives it back unsent, and it goes out on a new
/// connection instead of failing.
#[tokio::test]
async fn h2_a_request_after_a_graceful_goaway_goes_on_a_new_connection() {
    let (server, pool) = H2Server::start_with_pool(Duration::from_secs(90)).await;
    let stream = pool
        .send(get(&server.url("/endless")))
        .await
        .expect("stream head");
    answers_each(&pool, &server.url("/mcp"), 1).await;
    server.first.send(1).expect("signal");
    tokio::time::sleep(Duration::from_millis(200)).await;
    let outcome = call_bounded(&pool, &server.url("/mcp")).await;
    drop(stream);
    assert!(outcome.is_ok(), "{:?}", outcome.err());
    assert_eq!(server.accepted(), 2);
}

/// The shared HTTP/2 connection is closed once no request took it for the idle
/// timeout.
#[tokio::test]
async fn h2_an_idle_shared_connection_is_closed() {
    let (server, pool) = H2Server::start_with_pool(Duration::from_millis(60)).await;
    answers_each(&pool, &server.url("/mcp"), 1).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(server.ended.load(Ordering::SeqCst), 1, "closed once idle");
}

/// The same, the first runtime polling its sweep once before it ends.
#[test]
fn a_sweep_polled_once_before_its_runtime_ended_lets_later_sweeps_run() {
    a_later_runtime_sweeps_after_the_first_ended(true);
}

/// A server that answers one request, then half-closes (FIN) and reports how
/// long our side took to close.
async fn fin_after_one_answer() -> (u16, tokio::sync::oneshot::Receiver<Duration>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let (tx, rx) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        let Ok((mut tcp, _)) = listener.accept().await else {
            return;
        };
        let mut buf = Vec::new();
        read_request(&mut tcp, &mut buf).await.expect("request");
        tcp.write_all(OK).await.expect("write");
        tokio::time::sleep(Duration::from_millis(50)).await;
        tcp.shutdown().await.expect("half close"); // FIN: the server is done
        let started = Instant::now();
        let mut rest = [0u8; 16];
        let _ = tcp.read(&mut rest).await; // our side's close
        let _ = tx.send(started.elapsed());
    });
    (port, rx)
}

/// A server closing an idle connection (a Node server does after 5 s of
/// keep-alive) wakes the sweep, which closes our side at once instead of
/// leaving the socket in CLOSE_WAIT until the connection's time is up.
#[tokio::test]
async fn a_server_close_of_an_idle_connection_is_answered_at_once() {
    let (port, rx) = fin_after_one_answer().await;
    let pool = http_pool(Duration::from_secs(90), 16);
    call_bounded(&pool, &format!("http://127.0.0.1:{port}/mcp"))
        .await
        .expect("call");
    let closed_after = tokio::time::timeout(Duration::from_secs(2), rx).await;
    assert!(
        closed_after.is_ok(),
        "our side still open 2 s after the server's FIN"
    );
}
