//! The pool against real hyper servers and raw sockets on loopback.

use std::sync::Mutex as StdMutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use http_body_util::BodyExt;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use super::*;
use crate::transport::http::connector::{ProxyConnector, TlsOptions, https_connector, tls_config};

pub(super) type TestPool = Pool<hyper_rustls::HttpsConnector<ProxyConnector>>;

/// A pool with the transport's real connector (rustls, no proxy).
pub(super) fn pool(idle_timeout: Duration, max_idle: usize) -> TestPool {
    let tls = tls_config("t", TlsOptions::default(), false).expect("tls");
    Pool::new(https_connector(tls, None), idle_timeout, max_idle)
}

/// A hyper server on loopback answering `{}` (after `delay`, when set, or never
/// ending the body for `/endless`), counting connections accepted and ended, and
/// recording each request's target and `Host`.
struct Server {
    net: Loopback,
    seen: Arc<StdMutex<Vec<(String, String)>>>,
}

impl std::ops::Deref for Server {
    type Target = Loopback;
    fn deref(&self) -> &Loopback {
        &self.net
    }
}

/// A test server's listening port and what its accept loop counts: connections
/// accepted and connections ended. Shared by this file's servers and
/// `scripted_tests`'.
pub(super) struct Loopback {
    pub(super) port: u16,
    pub(super) accepted: Arc<AtomicUsize>,
    pub(super) ended: Arc<AtomicUsize>,
}

impl Loopback {
    /// A listener on an ephemeral loopback port, and its counters at zero.
    pub(super) async fn bind() -> (TcpListener, Loopback) {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let net = Loopback {
            port,
            accepted: Arc::default(),
            ended: Arc::default(),
        };
        (listener, net)
    }

    pub(super) fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    pub(super) fn accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }

    /// Waits (bounded, about 3 s) until `n` connections have ended.
    pub(super) async fn wait_ended(&self, n: usize) -> usize {
        for _ in 0..300 {
            if self.ended.load(Ordering::SeqCst) >= n {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        self.ended.load(Ordering::SeqCst)
    }
}

impl Server {
    async fn start(delay: Duration) -> Server {
        let (listener, net) = Loopback::bind().await;
        let seen = Arc::new(StdMutex::new(Vec::new()));
        let (a, e, s) = (net.accepted.clone(), net.ended.clone(), seen.clone());
        tokio::spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    return;
                };
                a.fetch_add(1, Ordering::SeqCst);
                let (e, s) = (e.clone(), s.clone());
                tokio::spawn(async move {
                    let svc = hyper::service::service_fn(move |req: http::Request<Incoming>| {
                        let s = s.clone();
                        async move {
                            let host = req
                                .headers()
                                .get(HOST)
                                .map(|v| v.to_str().unwrap_or("?").to_owned())
                                .unwrap_or_default();
                            s.lock().unwrap().push((req.uri().to_string(), host));
                            tokio::time::sleep(delay).await;
                            let body: http_body_util::combinators::BoxBody<
                                Bytes,
                                std::convert::Infallible,
                            > = if req.uri().path() == "/endless" {
                                http_body_util::StreamBody::new(futures_util::stream::pending())
                                    .boxed()
                            } else {
                                Full::new(Bytes::from_static(b"{}")).boxed()
                            };
                            Ok::<_, std::convert::Infallible>(http::Response::new(body))
                        }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(hyper_util::rt::TokioIo::new(tcp), svc)
                        .await;
                    e.fetch_add(1, Ordering::SeqCst);
                });
            }
        });
        Server { net, seen }
    }
}

fn post(url: &str) -> HttpRequest {
    http::Request::post(url)
        .body(Full::new(Bytes::from_static(b"{}")))
        .expect("request")
}

async fn call(pool: &TestPool, url: &str) -> Bytes {
    let response = pool.send(post(url)).await.expect("response");
    assert_eq!(response.status(), 200);
    body_bytes(response).await
}

/// A response's whole body, failing the test on a read error.
pub(super) async fn body_bytes(response: HttpResponse) -> Bytes {
    let body = response.into_body().collect().await.expect("body");
    body.to_bytes()
}

/// `n` calls at once, each on its own task; returns when all are answered.
async fn call_concurrently(pool: &TestPool, url: &str, n: usize) {
    let calls: Vec<_> = (0..n)
        .map(|_| {
            let (pool, url) = (pool.clone(), url.to_owned());
            tokio::spawn(async move { call(&pool, &url).await })
        })
        .collect();
    for call in calls {
        call.await.expect("task");
    }
}

#[tokio::test]
async fn sequential_requests_share_one_connection_in_origin_form_with_host() {
    let server = Server::start(Duration::ZERO).await;
    let pool = pool(Duration::from_secs(90), 16);
    for _ in 0..5 {
        assert_eq!(&call(&pool, &server.url("/mcp?x=1")).await[..], b"{}");
    }
    assert_eq!(server.accepted(), 1);
    assert_eq!(pool.counts(), (1, 1));
    let host = format!("127.0.0.1:{}", server.port);
    for (target, seen_host) in server.seen.lock().unwrap().iter() {
        assert_eq!(target, "/mcp?x=1");
        assert_eq!(seen_host, &host);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_requests_each_get_a_connection_then_reuse_them() {
    let server = Server::start(Duration::from_millis(50)).await;
    let pool = pool(Duration::from_secs(90), 16);
    for _ in 0..2 {
        call_concurrently(&pool, &server.url("/mcp"), 4).await;
    }
    assert_eq!(server.accepted(), 4, "the second round reuses the first's");
    assert_eq!(pool.counts(), (4, 1));
}

#[tokio::test]
async fn idle_connections_past_the_bound_are_closed() {
    let server = Server::start(Duration::from_millis(50)).await;
    let pool = pool(Duration::from_secs(90), 1);
    call_concurrently(&pool, &server.url("/mcp"), 3).await;
    assert_eq!(server.accepted(), 3);
    assert_eq!(pool.counts().0, 1);
    assert_eq!(
        server.wait_ended(2).await,
        2,
        "two of three closed on return"
    );
}

#[tokio::test]
async fn an_abandoned_body_closes_its_connection() {
    let server = Server::start(Duration::ZERO).await;
    let pool = pool(Duration::from_secs(90), 16);
    let response = pool
        .send(post(&server.url("/endless")))
        .await
        .expect("head");
    drop(response);
    assert_eq!(
        server.wait_ended(1).await,
        1,
        "the unfinished exchange's connection closed"
    );
    assert_eq!(&call(&pool, &server.url("/mcp")).await[..], b"{}");
    assert_eq!(server.accepted(), 2);
}

#[tokio::test]
async fn an_abandoned_request_closes_its_connection() {
    let server = Server::start(Duration::from_secs(30)).await;
    let pool = pool(Duration::from_secs(90), 16);
    let pending = pool.send(post(&server.url("/mcp")));
    assert!(
        tokio::time::timeout(Duration::from_millis(100), pending)
            .await
            .is_err()
    );
    assert_eq!(server.wait_ended(1).await, 1);
    assert_eq!(pool.counts().0, 0);
}

#[tokio::test]
async fn idle_connections_expire_and_the_sweep_closes_them() {
    let server = Server::start(Duration::ZERO).await;
    let pool = pool(Duration::from_millis(60), 16);
    call(&pool, &server.url("/mcp")).await;
    assert_eq!(pool.counts().0, 1);
    // The sweep runs every half timeout: the idle connection is closed without
    // another request coming.
    assert_eq!(server.wait_ended(1).await, 1);
    assert_eq!(pool.counts().0, 0);
    call(&pool, &server.url("/mcp")).await;
    assert_eq!(server.accepted(), 2);
}

/// One request per connection, answered with keep-alive, after which the server
/// closes the socket: the pooled connection looks reusable until the close is
/// read.
async fn closing_server() -> (u16, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let accepted = Arc::new(AtomicUsize::new(0));
    let counter = accepted.clone();
    tokio::spawn(async move {
        loop {
            let Ok((mut tcp, _)) = listener.accept().await else {
                return;
            };
            counter.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                let mut request = Vec::new();
                let mut buf = [0u8; 1024];
                // Headers, then the two-byte body.
                while !request.windows(4).any(|w| w == b"\r\n\r\n") || !request.ends_with(b"{}") {
                    match tcp.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => request.extend_from_slice(&buf[..n]),
                    }
                }
                let _ = tcp
                    .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}")
                    .await;
                tokio::time::sleep(Duration::from_millis(20)).await;
                drop(tcp);
            });
        }
    });
    (port, accepted)
}

#[tokio::test]
async fn a_connection_the_server_closed_while_idle_is_not_used() {
    let (port, accepted) = closing_server().await;
    let pool = pool(Duration::from_secs(90), 16);
    let url = format!("http://127.0.0.1:{port}/mcp");
    call(&pool, &url).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    // The pooled connection is closed: the request goes on a new one.
    assert_eq!(&call(&pool, &url).await[..], b"{}");
    assert_eq!(accepted.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn origins_are_bounded() {
    let mut servers = Vec::new();
    for _ in 0..MAX_ORIGINS + 2 {
        servers.push(Server::start(Duration::ZERO).await);
    }
    let pool = pool(Duration::from_secs(90), 16);
    for server in &servers {
        call(&pool, &server.url("/mcp")).await;
    }
    assert_eq!(pool.counts(), (MAX_ORIGINS, MAX_ORIGINS));
    // The least recently used were forgotten, their connections closed.
    assert_eq!(servers[0].wait_ended(1).await, 1);
    assert_eq!(servers[1].wait_ended(1).await, 1);
}

#[tokio::test]
async fn a_refused_connection_is_a_connect_error() {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    drop(listener);
    let pool = pool(Duration::from_secs(90), 16);
    let error = pool
        .send(post(&format!("http://127.0.0.1:{port}/mcp")))
        .await
        .expect_err("refused");
    assert!(error.is::<ConnectError>(), "{error:?}");
}

#[tokio::test]
async fn a_relative_uri_is_refused() {
    let pool = pool(Duration::from_secs(90), 16);
    let error = pool.send(post("/mcp")).await.expect_err("relative");
    assert!(error.is::<NotAbsolute>());
}

#[test]
fn host_values_omit_default_ports() {
    let host = |scheme: Scheme, authority: &str| {
        host_value(&scheme, &authority.parse().expect("authority"))
    };
    assert_eq!(host(Scheme::HTTP, "example.com:80"), "example.com");
    assert_eq!(host(Scheme::HTTPS, "example.com:443"), "example.com");
    assert_eq!(host(Scheme::HTTP, "example.com:443"), "example.com:443");
    assert_eq!(host(Scheme::HTTPS, "example.com:8443"), "example.com:8443");
    assert_eq!(host(Scheme::HTTP, "user:pw@example.com"), "example.com");
    assert_eq!(host(Scheme::HTTP, "[::1]:8080"), "[::1]:8080");
}

#[test]
fn authorities_differing_only_in_case_are_one_origin() {
    let same = |a: &str, b: &str| {
        same_authority(
            &a.parse().expect("authority"),
            &b.parse().expect("authority"),
        )
    };
    assert!(same("h.example:8080", "h.example:8080"));
    assert!(same("H.Example:8080", "h.example:8080"));
    assert!(!same("h.example:8080", "h.example:8081"));
    assert!(!same("h.example", "h.example:80"));
}

#[test]
fn origin_form_keeps_path_and_query_only() {
    let form = |uri: &str| {
        let mut uri: Uri = uri.parse().expect("uri");
        origin_form(&mut uri);
        uri.to_string()
    };
    assert_eq!(form("http://example.com/mcp?x=1"), "/mcp?x=1");
    assert_eq!(form("http://example.com"), "/");
    assert_eq!(form("https://example.com:8443/"), "/");
}

#[tokio::test]
async fn a_request_on_a_connection_closed_before_it_was_written_comes_back_unsent() {
    // The race the checkout's look cannot rule out: the server closes an idle
    // connection just as a request is handed to it. The request must come back
    // (to be sent on another connection), not wait for a head that never comes.
    let (port, _accepted) = closing_server().await;
    let pool = pool(Duration::from_secs(90), 16);
    let url = format!("http://127.0.0.1:{port}/mcp");
    call(&pool, &url).await;
    // Taken as a checkout would, but before the server closes it and without
    // its look at the connection (which would see the close).
    let Idle { conn, .. } = pool.shared.lock().origins[0].idle.pop().expect("idle");
    tokio::time::sleep(Duration::from_millis(100)).await;
    let outcome = tokio::time::timeout(Duration::from_secs(5), exchange(conn, post(&url)))
        .await
        .expect("answered, not left waiting");
    assert!(matches!(outcome, Err(Failed::Unsent(..))));
}

/// Each request's future is boxed: see
/// `each_requests_boxed_futures_fit_the_allocators_thread_cache` (driver).
#[test]
fn a_requests_boxed_future_fits_the_allocators_thread_cache() {
    let pool = pool(Duration::from_secs(1), 1);
    let send = pool.shared.clone().send(post("http://127.0.0.1:1/"));
    let size = std::mem::size_of_val(&send);
    assert!(size <= THREAD_CACHE_MAX, "{size} bytes");
}
