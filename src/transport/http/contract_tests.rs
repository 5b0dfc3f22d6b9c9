//! The Streamable HTTP transport, driven directly through the frame contract (its
//! `open`, and the sink and source it returns) as the session engine drives it,
//! against real hyper servers on 127.0.0.1. A unit test because the contract is
//! crate-private; the servers are the test kit's `http_server` (a dev-dependency).

use std::num::NonZeroU64;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::{HttpHints, HttpTransport};
use crate::diagnostics::Diagnostics;
use crate::layer::EgressGrants;
use crate::transport::{
    Connection, FrameMeta, FrameSink, FrameSource, InboundEvent, OutboundFrame, RequestControl,
    RequestHandle, TransportContext,
};
use crate::{Error, ErrorKind, Limits};
use bytes::Bytes;
use http::Method;
use secrecy::SecretString;
use smthrs_mcp_testkit::http_server::{
    self, ConnectProxy, CountingListener, Recorded, TestPki, TestServer, chunked, endless, full,
    json, sse, status, with_header,
};
use tokio::time::timeout;
use tokio_util::sync::CancellationToken;

const REPLY: &str = r#"{"jsonrpc":"2.0","id":1,"result":{}}"#;
const PING: &str = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
const INIT: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

// ----- helpers -----

fn ctx(limits: Limits) -> TransportContext {
    TransportContext {
        server: "test".into(),
        bounds: limits.into(),
        diagnostics: Diagnostics::none(),
    }
}

async fn open_with(transport: HttpTransport, limits: Limits) -> Connection {
    NEGOTIATED.with(|n| n.set(false));
    transport.open(ctx(limits)).await.unwrap()
}

thread_local! {
    /// Set by [`initialize`]: later frames state the negotiated version, as the
    /// engine's do (each test runs on a thread of its own).
    static NEGOTIATED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// The legacy [`FrameMeta`] the engine writes for `text` now.
fn legacy_meta(text: &str) -> FrameMeta {
    let negotiated = NEGOTIATED.with(|n| n.get());
    FrameMeta {
        method: None,
        http: HttpHints {
            protocol_version: negotiated.then_some("2025-06-18"),
            completes_handshake: text.contains("notifications/initialized"),
            ..HttpHints::default()
        },
    }
}

async fn open(url: &str) -> Connection {
    open_limited(url, Limits::default()).await
}

/// A transport to `url` with the default builder, opened under `limits`.
async fn open_limited(url: &str, limits: Limits) -> Connection {
    open_with(HttpTransport::builder("test", url).build().unwrap(), limits).await
}

/// The engine's side of one request: `done` once settled, failures recorded.
#[derive(Clone)]
struct Pending {
    done: CancellationToken,
    failures: Arc<Mutex<Vec<Error>>>,
    tag: Option<NonZeroU64>,
}

impl Pending {
    fn new() -> Self {
        Pending {
            done: CancellationToken::new(),
            failures: Arc::default(),
            tag: None,
        }
    }

    /// A request the engine gave a stream tag.
    fn tagged(tag: u64) -> Self {
        Pending {
            tag: NonZeroU64::new(tag),
            ..Pending::new()
        }
    }

    fn handle(&self) -> RequestHandle {
        RequestHandle::new(Arc::new(self.clone()))
    }

    fn failures(&self) -> Vec<Error> {
        self.failures.lock().unwrap().clone()
    }

    async fn wait_failure(&self) -> Error {
        timeout(Duration::from_secs(5), self.done.cancelled())
            .await
            .expect("the request settles");
        self.failures().pop().expect("the request failed")
    }
}

impl RequestControl for Pending {
    fn is_done(&self) -> bool {
        self.done.is_cancelled()
    }

    fn is_abandoned(&self) -> bool {
        false
    }

    fn done(&self) -> futures_util::future::BoxFuture<'_, ()> {
        Box::pin(self.done.cancelled())
    }

    fn fail(&self, error: Error) {
        self.failures.lock().unwrap().push(error);
        self.done.cancel();
    }

    fn stream_tag(&self) -> Option<NonZeroU64> {
        self.tag
    }
}

fn request(text: &str, pending: &Pending) -> OutboundFrame {
    OutboundFrame {
        bytes: Bytes::copy_from_slice(text.as_bytes()),
        meta: legacy_meta(text),
        request: Some(pending.handle()),
    }
}

fn notification(text: &str) -> OutboundFrame {
    OutboundFrame {
        bytes: Bytes::copy_from_slice(text.as_bytes()),
        meta: legacy_meta(text),
        request: None,
    }
}

async fn next(source: &mut Box<dyn FrameSource>) -> InboundEvent {
    timeout(Duration::from_secs(5), source.next())
        .await
        .expect("an inbound event in time")
}

/// `initialize` answered, then the negotiated version handed to the sink, as the
/// engine does (the version is sent from the next request on).
async fn initialize(sink: &mut Box<dyn FrameSink>, source: &mut Box<dyn FrameSource>) {
    let init = Pending::new();
    sink.send(request(INIT, &init)).await.unwrap();
    next_frame(source).await;
    init.done.cancel();
    NEGOTIATED.with(|n| n.set(true));
}

async fn next_frame(source: &mut Box<dyn FrameSource>) -> String {
    match next(source).await {
        InboundEvent::Frame(bytes) => String::from_utf8(bytes.to_vec()).unwrap(),
        other => panic!("expected a frame, got {other:?}"),
    }
}

async fn closed(source: &mut Box<dyn FrameSource>) -> Error {
    match next(source).await {
        InboundEvent::Closed(error) => error,
        other => panic!("expected Closed, got {other:?}"),
    }
}

/// Asserts that no event arrives for `ms` milliseconds (keeps serving barriers).
async fn quiet(source: &mut Box<dyn FrameSource>, ms: u64) {
    if let Ok(event) = timeout(Duration::from_millis(ms), source.next()).await {
        panic!("expected no event, got {event:?}");
    }
}

fn body_contains(r: &Recorded, needle: &str) -> bool {
    std::str::from_utf8(&r.body).unwrap().contains(needle)
}

// ----- replies -----

#[tokio::test]
async fn a_json_reply_is_one_frame_and_the_post_carries_the_mcp_headers() {
    let server = TestServer::start(|_| async { json(REPLY) }).await;
    let Connection {
        mut sink,
        mut source,
        ..
    } = open(&server.url()).await;
    let pending = Pending::new();
    sink.send(request(PING, &pending)).await.unwrap();
    assert_eq!(next_frame(&mut source).await, REPLY);

    let post = &server.requests()[0];
    assert_eq!(post.method, Method::POST);
    assert_eq!(post.uri.path(), "/mcp");
    assert_eq!(
        post.header("accept"),
        Some("application/json, text/event-stream")
    );
    assert_eq!(post.header("content-type"), Some("application/json"));
    assert_eq!(&post.body[..], PING.as_bytes());
    assert_eq!(post.header("mcp-session-id"), None);
    assert_eq!(post.header("mcp-protocol-version"), None);
    assert_eq!(post.header("authorization"), None);
}

#[tokio::test]
async fn an_sse_reply_yields_one_frame_per_event_with_data() {
    let body = ": a comment\n\n\
                event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\n\
                data:\n\n\
                id: 7\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"s1\",\r\ndata: \"method\":\"ping\"}\r\n\r\n\
                data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n";
    let server = TestServer::start(move |_| async move { sse(body) }).await;
    let Connection {
        mut sink,
        mut source,
        ..
    } = open(&server.url()).await;
    let pending = Pending::new();
    sink.send(request(PING, &pending)).await.unwrap();
    assert_eq!(
        next_frame(&mut source).await,
        r#"{"jsonrpc":"2.0","method":"notifications/progress"}"#
    );
    assert_eq!(
        next_frame(&mut source).await,
        "{\"jsonrpc\":\"2.0\",\"id\":\"s1\",\n\"method\":\"ping\"}"
    );
    assert_eq!(next_frame(&mut source).await, REPLY);
    pending.done.cancel(); // the engine routed the reply
    quiet(&mut source, 150).await;
    assert!(pending.failures().is_empty());
}

#[tokio::test]
async fn the_events_of_a_tagged_requests_stream_carry_its_tag() {
    let body = "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\n\
                data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n";
    let server = TestServer::start(move |_| async move { sse(body) }).await;
    let Connection {
        mut sink,
        mut source,
        ..
    } = open(&server.url()).await;
    // Sent through `send`: its POST runs in a task, its events go through
    // the source, each with the request's tag.
    let pending = Pending::tagged(7);
    sink.send(request(PING, &pending)).await.unwrap();
    for expected in [
        r#"{"jsonrpc":"2.0","method":"notifications/progress"}"#,
        REPLY,
    ] {
        match next(&mut source).await {
            InboundEvent::StreamFrame { frame, tag } => {
                assert_eq!(tag.get(), 7);
                assert_eq!(String::from_utf8(frame.to_vec()).unwrap(), expected);
            }
            other => panic!("expected a tagged frame, got {other:?}"),
        }
    }
    pending.done.cancel();
    // An untagged request's events are plain frames.
    let plain = Pending::new();
    sink.send(request(PING, &plain)).await.unwrap();
    assert_eq!(
        next_frame(&mut source).await,
        r#"{"jsonrpc":"2.0","method":"notifications/progress"}"#
    );
    assert_eq!(next_frame(&mut source).await, REPLY);
    plain.done.cancel();
}

#[tokio::test]
async fn a_202_carries_no_frame() {
    let server = TestServer::start(|r: Recorded| async move {
        if r.body.starts_with(b"{\"jsonrpc\":\"2.0\",\"method\"") {
            status(202)
        } else {
            json(REPLY)
        }
    })
    .await;
    let Connection {
        mut sink,
        mut source,
        ..
    } = open(&server.url()).await;
    sink.send(notification(INITIALIZED)).await.unwrap();
    quiet(&mut source, 150).await;
    let pending = Pending::new();
    sink.send(request(PING, &pending)).await.unwrap();
    assert_eq!(next_frame(&mut source).await, REPLY);
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn send_returns_before_the_response_and_queue_capacity_bounds_posts_in_flight() {
    let release = Arc::new(tokio::sync::Notify::new());
    let gate = release.clone();
    let server = TestServer::start(move |_| {
        let gate = gate.clone();
        async move {
            gate.notified().await;
            json(REPLY)
        }
    })
    .await;
    let limits = Limits {
        queue_capacity: 1,
        ..Limits::default()
    };
    let Connection {
        mut sink,
        mut source,
        ..
    } = open_limited(&server.url(), limits).await;

    let first = Pending::new();
    let started = Instant::now();
    sink.send(request(PING, &first)).await.unwrap();
    assert!(started.elapsed() < Duration::from_millis(500));
    server.wait_for_requests(1).await;

    // The one slot is taken: a second send waits.
    let second = Pending::new();
    assert!(
        timeout(
            Duration::from_millis(200),
            sink.send(request(PING, &second))
        )
        .await
        .is_err()
    );
    release.notify_one();
    assert_eq!(next_frame(&mut source).await, REPLY);
    first.done.cancel();
    timeout(Duration::from_secs(5), sink.send(request(PING, &second)))
        .await
        .expect("a slot frees up")
        .unwrap();
    server.wait_for_requests(2).await;
    release.notify_one();
    assert_eq!(next_frame(&mut source).await, REPLY);
}

#[tokio::test]
async fn a_reply_to_a_server_request_is_sent_while_its_stream_is_open() {
    // queueCapacity 1: the call's stream stays open until the server gets our reply
    // to its ping, so an open stream must not hold the only POST slot.
    let pong = Arc::new(tokio::sync::Notify::new());
    let got_pong = pong.clone();
    let server = TestServer::start(move |r: Recorded| {
        let got_pong = got_pong.clone();
        async move {
            if body_contains(&r, "\"result\"") {
                got_pong.notify_one();
                return status(202);
            }
            let events = futures_util::stream::unfold(0, move |step| {
                let got_pong = got_pong.clone();
                async move {
                    match step {
                        0 => Some((
                            Bytes::from_static(
                                b"data: {\"jsonrpc\":\"2.0\",\"id\":\"srv-1\",\"method\":\"ping\"}\n\n",
                            ),
                            1,
                        )),
                        1 => {
                            got_pong.notified().await;
                            Some((
                                Bytes::from_static(
                                    b"data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n",
                                ),
                                2,
                            ))
                        }
                        _ => None,
                    }
                }
            });
            http_server::streaming("text/event-stream", events)
        }
    })
    .await;
    let limits = Limits {
        queue_capacity: 1,
        ..Limits::default()
    };
    let Connection {
        mut sink,
        mut source,
        ..
    } = open_limited(&server.url(), limits).await;
    let call = Pending::new();
    sink.send(request(PING, &call)).await.unwrap();
    assert_eq!(
        next_frame(&mut source).await,
        r#"{"jsonrpc":"2.0","id":"srv-1","method":"ping"}"#
    );
    timeout(
        Duration::from_secs(2),
        sink.send(notification(
            r#"{"jsonrpc":"2.0","id":"srv-1","result":{}}"#,
        )),
    )
    .await
    .expect("the pong is not blocked by the open stream")
    .unwrap();
    assert_eq!(next_frame(&mut source).await, REPLY);
}

#[tokio::test]
async fn a_stream_faster_than_the_engine_waits_for_room_and_loses_nothing() {
    // queueCapacity 1 and a source read slowly: most events of the stream find
    // the queue full and wait for room (the slow path of delivery); every one
    // arrives, in order, and then the reply.
    const EVENTS: usize = 40;
    let server = TestServer::start(|_| async {
        let mut body = String::new();
        for n in 0..EVENTS {
            body.push_str(&format!(
                "data: {{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{{\"n\":{n}}}}}\n\n"
            ));
        }
        body.push_str(&format!("data: {REPLY}\n\n"));
        http_server::streaming(
            "text/event-stream",
            futures_util::stream::iter([Bytes::from(body)]),
        )
    })
    .await;
    let limits = Limits {
        queue_capacity: 1,
        ..Limits::default()
    };
    let Connection {
        mut sink,
        mut source,
        ..
    } = open_limited(&server.url(), limits).await;
    let call = Pending::new();
    sink.send(request(PING, &call)).await.unwrap();
    for n in 0..EVENTS {
        tokio::time::sleep(Duration::from_millis(2)).await;
        let frame = next_frame(&mut source).await;
        assert!(
            frame.contains(&format!("\"n\":{n}}}")),
            "event {n}: {frame}"
        );
    }
    assert_eq!(next_frame(&mut source).await, REPLY);
}

// ----- session id and protocol version -----

#[tokio::test]
async fn the_session_id_is_captured_from_initialize_and_echoed() {
    let server = TestServer::start(|r: Recorded| async move {
        if body_contains(&r, "initialize") {
            with_header(json(REPLY), "mcp-session-id", "sess-1.A~")
        } else {
            with_header(json(REPLY), "mcp-session-id", "ignored-later-id")
        }
    })
    .await;
    let Connection {
        mut sink,
        mut source,
        ..
    } = open(&server.url()).await;
    let init = Pending::new();
    sink.send(request(INIT, &init)).await.unwrap();
    next_frame(&mut source).await;
    init.done.cancel();
    for _ in 0..2 {
        let ping = Pending::new();
        sink.send(request(PING, &ping)).await.unwrap();
        next_frame(&mut source).await;
        ping.done.cancel();
    }
    let requests = server.requests();
    assert_eq!(requests[0].header("mcp-session-id"), None);
    assert_eq!(requests[1].header("mcp-session-id"), Some("sess-1.A~"));
    assert_eq!(requests[2].header("mcp-session-id"), Some("sess-1.A~"));
}

#[tokio::test]
async fn an_invalid_session_id_is_a_protocol_error_and_never_echoed() {
    let server =
        TestServer::start(|_| async { with_header(json(REPLY), "mcp-session-id", "bad id") }).await;
    let Connection {
        mut sink,
        mut source,
        ..
    } = open(&server.url()).await;
    let init = Pending::new();
    sink.send(request(INIT, &init)).await.unwrap();
    let error = closed(&mut source).await;
    assert_eq!(error.kind(), ErrorKind::ProtocolError);
    assert!(!error.message().contains("bad id"), "{error}");
    let later = sink.send(request(PING, &Pending::new())).await.unwrap_err();
    assert_eq!(later.kind(), ErrorKind::ProtocolError);
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn the_protocol_version_is_sent_after_negotiation_and_the_get_stream_opens() {
    let server = TestServer::start(|r: Recorded| async move {
        match r.method {
            Method::GET => status(405),
            _ if body_contains(&r, "notifications/") => status(202),
            _ if body_contains(&r, "initialize") => {
                with_header(json(REPLY), "mcp-session-id", "s-42")
            }
            _ => json(REPLY),
        }
    })
    .await;
    let Connection {
        mut sink,
        mut source,
        ..
    } = open(&server.url()).await;
    initialize(&mut sink, &mut source).await;
    sink.send(notification(INITIALIZED)).await.unwrap();
    let requests = server.wait_for_requests(3).await;
    assert_eq!(
        requests[2].method,
        Method::GET,
        "the GET follows initialized"
    );
    let ping = Pending::new();
    sink.send(request(PING, &ping)).await.unwrap();
    next_frame(&mut source).await;

    let requests = server.requests();
    assert_eq!(requests[0].header("mcp-protocol-version"), None);
    assert_eq!(
        requests[1].header("mcp-protocol-version"),
        Some("2025-06-18")
    );
    let get = &requests[2];
    assert_eq!(get.header("accept"), Some("text/event-stream"));
    assert_eq!(get.header("mcp-session-id"), Some("s-42"));
    assert_eq!(get.header("mcp-protocol-version"), Some("2025-06-18"));
    assert_eq!(
        requests[3].header("mcp-protocol-version"),
        Some("2025-06-18")
    );
    // 405 means "no standalone stream": quietly, no event and no retry.
    quiet(&mut source, 150).await;
    assert_eq!(server.requests_with(Method::GET).len(), 1);
}

/// The stream a server may deliver replies on is open before the first request
/// after the handshake: `notifications/initialized` returns only once the
/// standalone GET has been answered (here 200 ms late), so the server answers
/// the GET before it sees the next POST.
#[tokio::test]
async fn the_first_request_after_initialized_waits_for_the_get_stream() {
    let log: Arc<Mutex<Vec<&'static str>>> = Arc::default();
    let server = TestServer::start({
        let log = log.clone();
        move |r: Recorded| {
            let log = log.clone();
            async move {
                match r.method {
                    Method::GET => {
                        tokio::time::sleep(Duration::from_millis(200)).await;
                        log.lock().unwrap().push("GET answered");
                        sse(": open\n\n")
                    }
                    _ if body_contains(&r, "notifications/") => status(202),
                    _ if body_contains(&r, "initialize") => {
                        with_header(json(REPLY), "mcp-session-id", "s-7")
                    }
                    _ => {
                        log.lock().unwrap().push("POST after initialized");
                        json(REPLY)
                    }
                }
            }
        }
    })
    .await;
    let Connection {
        mut sink,
        mut source,
        ..
    } = open(&server.url()).await;
    initialize(&mut sink, &mut source).await;
    sink.send(notification(INITIALIZED)).await.unwrap();
    let ping = Pending::new();
    sink.send(request(PING, &ping)).await.unwrap();
    next_frame(&mut source).await;
    assert_eq!(
        *log.lock().unwrap(),
        ["GET answered", "POST after initialized"]
    );
}

#[tokio::test]
async fn the_standalone_get_stream_delivers_server_messages() {
    let server = TestServer::start(|r: Recorded| async move {
        match r.method {
            Method::GET => chunked(
                200,
                "text/event-stream",
                vec![
                    Ok("data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\"}\n\n"),
                    Ok(": keep-alive\n\n"),
                ],
                Duration::from_millis(10),
            ),
            _ if body_contains(&r, "notifications/") => status(202),
            _ => json(REPLY),
        }
    })
    .await;
    let Connection {
        mut sink,
        mut source,
        ..
    } = open(&server.url()).await;
    initialize(&mut sink, &mut source).await;
    sink.send(notification(INITIALIZED)).await.unwrap();
    assert_eq!(
        next_frame(&mut source).await,
        r#"{"jsonrpc":"2.0","method":"notifications/message"}"#
    );
}

#[tokio::test]
async fn a_404_to_a_request_with_a_session_id_expires_the_session() {
    let server = TestServer::start(|r: Recorded| async move {
        match (r.index, r.header("mcp-session-id")) {
            (0, None) => with_header(json(REPLY), "mcp-session-id", "s1"),
            (1, Some("s1")) => full(404, "text/plain", "session not found"),
            (2, None) => with_header(json(REPLY), "mcp-session-id", "s2"),
            (3, Some("s2")) => json(REPLY),
            _ => status(400),
        }
    })
    .await;
    let Connection {
        mut sink,
        mut source,
        ..
    } = open(&server.url()).await;
    initialize(&mut sink, &mut source).await;

    let ping = Pending::new();
    sink.send(request(PING, &ping)).await.unwrap();
    match next(&mut source).await {
        InboundEvent::StateLost { refused, .. } => {
            assert_eq!(&refused.bytes[..], PING.as_bytes());
            assert!(refused.request.is_some());
        }
        other => panic!("expected StateLost, got {other:?}"),
    }
    NEGOTIATED.with(|n| n.set(false));
    // The engine re-initialises: no session id, no stale version; the new id is
    // captured and used.
    let init2 = Pending::new();
    sink.send(request(INIT, &init2)).await.unwrap();
    assert_eq!(next_frame(&mut source).await, REPLY);
    init2.done.cancel();
    let ping2 = Pending::new();
    sink.send(request(PING, &ping2)).await.unwrap();
    assert_eq!(next_frame(&mut source).await, REPLY);
    let requests = server.requests();
    assert_eq!(requests[2].header("mcp-session-id"), None);
    assert_eq!(requests[2].header("mcp-protocol-version"), None);
    assert_eq!(requests[3].header("mcp-session-id"), Some("s2"));
}

#[tokio::test]
async fn shutdown_sends_delete_with_the_session_id() {
    let server = TestServer::start(|r: Recorded| async move {
        match r.method {
            Method::DELETE => status(405),
            _ => with_header(json(REPLY), "mcp-session-id", "bye-1"),
        }
    })
    .await;
    let Connection {
        mut sink,
        mut source,
        shutdown,
        ..
    } = open(&server.url()).await;
    let init = Pending::new();
    sink.send(request(INIT, &init)).await.unwrap();
    next_frame(&mut source).await;
    let started = Instant::now();
    shutdown.shutdown().await;
    assert!(started.elapsed() < Duration::from_secs(2));
    let deletes = server.requests_with(Method::DELETE);
    assert_eq!(deletes.len(), 1);
    assert_eq!(deletes[0].header("mcp-session-id"), Some("bye-1"));
    assert_eq!(
        closed(&mut source).await.kind(),
        ErrorKind::ConnectionClosed
    );
    assert!(sink.send(notification(INITIALIZED)).await.is_err());
}

#[tokio::test]
async fn shutdown_without_a_session_sends_no_delete() {
    let server = TestServer::start(|_| async { json(REPLY) }).await;
    let Connection {
        mut sink,
        mut source,
        shutdown,
        ..
    } = open(&server.url()).await;
    sink.send(request(PING, &Pending::new())).await.unwrap();
    next_frame(&mut source).await;
    shutdown.shutdown().await;
    assert!(server.requests_with(Method::DELETE).is_empty());
}

// ----- resumption -----

#[tokio::test]
async fn a_stream_closed_after_a_priming_event_is_resumed_after_the_retry_delay() {
    // The conformance suite's sse-retry shape: id + retry + empty data, then EOF.
    let server = TestServer::start(|r: Recorded| async move {
        match r.method {
            Method::GET => sse("id: e2\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n"),
            _ if body_contains(&r, "initialize") => {
                with_header(json(REPLY), "mcp-session-id", "res-1")
            }
            _ => sse("id: e1\nretry: 120\ndata:\n\n"),
        }
    })
    .await;
    let Connection {
        mut sink,
        mut source,
        ..
    } = open(&server.url()).await;
    let init = Pending::new();
    sink.send(request(INIT, &init)).await.unwrap();
    next_frame(&mut source).await;
    init.done.cancel();

    let call = Pending::new();
    sink.send(request(PING, &call)).await.unwrap();
    assert_eq!(next_frame(&mut source).await, REPLY);
    call.done.cancel();

    let requests = server.requests();
    let post = &requests[1];
    let get = &requests[2];
    assert_eq!(get.method, Method::GET);
    assert_eq!(get.header("last-event-id"), Some("e1"));
    assert_eq!(get.header("mcp-session-id"), Some("res-1"));
    assert_eq!(get.header("accept"), Some("text/event-stream"));
    let waited = get.at - post.at;
    assert!(waited >= Duration::from_millis(120), "{waited:?}");
    assert!(
        waited < Duration::from_millis(900),
        "the server's retry is used: {waited:?}"
    );
    assert!(call.failures().is_empty());
}

#[tokio::test]
async fn a_stream_cut_mid_way_is_resumed_with_the_last_event_id() {
    let server = TestServer::start(|r: Recorded| async move {
        match r.method {
            Method::GET => chunked(
                200,
                "text/event-stream",
                vec![Ok(
                    "id: c3\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n",
                )],
                Duration::ZERO,
            ),
            _ => chunked(
                200,
                "text/event-stream",
                vec![
                    Ok("retry: 60\n\nid: c1\ndata: {\"progress\":1}\n\n"),
                    Ok("id: c2\ndata: {\"progress\":2}\n\n"),
                    Ok("id: c9\ndata: {\"partial\""),
                    Err(()),
                ],
                Duration::from_millis(5),
            ),
        }
    })
    .await;
    let Connection {
        mut sink,
        mut source,
        ..
    } = open(&server.url()).await;
    let call = Pending::new();
    sink.send(request(PING, &call)).await.unwrap();
    assert_eq!(next_frame(&mut source).await, r#"{"progress":1}"#);
    assert_eq!(next_frame(&mut source).await, r#"{"progress":2}"#);
    assert_eq!(next_frame(&mut source).await, REPLY);
    call.done.cancel();
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[1].method, Method::GET);
    // c9 never completed: the last complete event was c2.
    assert_eq!(requests[1].header("last-event-id"), Some("c2"));
    assert!(requests[1].at - requests[0].at >= Duration::from_millis(60));
}

#[tokio::test]
async fn a_settled_request_is_not_resumed() {
    let server = TestServer::start(|_| async {
        sse("id: x1\nretry: 10\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n")
    })
    .await;
    let Connection {
        mut sink,
        mut source,
        ..
    } = open(&server.url()).await;
    let call = Pending::new();
    sink.send(request(PING, &call)).await.unwrap();
    assert_eq!(next_frame(&mut source).await, REPLY);
    call.done.cancel();
    quiet(&mut source, 150).await;
    assert!(server.requests_with(Method::GET).is_empty());
}

#[tokio::test]
async fn a_stream_ending_without_reply_or_id_fails_the_request() {
    let server = TestServer::start(|_| async { sse("data: {\"note\":1}\n\n") }).await;
    let Connection {
        mut sink,
        mut source,
        ..
    } = open(&server.url()).await;
    let call = Pending::new();
    sink.send(request(PING, &call)).await.unwrap();
    assert_eq!(next_frame(&mut source).await, r#"{"note":1}"#);
    let (error, ()) = tokio::join!(call.wait_failure(), quiet(&mut source, 300));
    assert_eq!(error.kind(), ErrorKind::ConnectionClosed);
    assert!(server.requests_with(Method::GET).is_empty());
}

// ----- error statuses -----

#[tokio::test]
async fn a_401_or_403_is_unauthorized_and_terminal() {
    for code in [401, 403] {
        let server =
            TestServer::start(move |_| async move { full(code, "text/plain", "go away") }).await;
        let Connection {
            mut sink,
            mut source,
            ..
        } = open(&server.url()).await;
        sink.send(request(INIT, &Pending::new())).await.unwrap();
        let error = closed(&mut source).await;
        assert_eq!(error.kind(), ErrorKind::Unauthorized, "{code}");
        assert!(error.message().contains(&code.to_string()));
        let later = sink.send(request(PING, &Pending::new())).await.unwrap_err();
        assert_eq!(later.kind(), ErrorKind::Unauthorized);
    }
}

#[tokio::test]
async fn a_500_fails_only_that_request_and_withholds_the_body() {
    let server = TestServer::start(|r: Recorded| async move {
        if r.index == 0 {
            full(500, "application/json", "{\"secret-body\":\"stack trace\"}")
        } else {
            json(REPLY)
        }
    })
    .await;
    let Connection {
        mut sink,
        mut source,
        ..
    } = open(&server.url()).await;
    let failing = Pending::new();
    sink.send(request(PING, &failing)).await.unwrap();
    let error = failing.wait_failure().await;
    assert_eq!(error.kind(), ErrorKind::HttpStatus);
    assert_eq!(error.message(), "server \"test\" answered HTTP 500");
    assert!(!format!("{error:?}").contains("secret-body"));
    // The session goes on.
    let next_call = Pending::new();
    sink.send(request(PING, &next_call)).await.unwrap();
    assert_eq!(next_frame(&mut source).await, REPLY);
}

#[tokio::test]
async fn a_refused_connection_is_connection_closed() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    drop(listener);
    let Connection {
        mut sink,
        mut source,
        ..
    } = open(&url).await;
    sink.send(request(INIT, &Pending::new())).await.unwrap();
    let error = closed(&mut source).await;
    assert_eq!(error.kind(), ErrorKind::ConnectionClosed);
    assert!(error.message().contains("\"test\""), "{error}");
}

// ----- bounds -----

fn small_frames() -> Limits {
    Limits {
        max_frame_bytes: 64 * 1024,
        // The transport frames at the larger of the two.
        max_resource_bytes: 64 * 1024,
        ..Limits::default()
    }
}

const SIXTY_FOUR_MIB: usize = 64 * 1024 * 1024;

async fn assert_bounded(content_type: &'static str, prefix: &'static str) {
    let sent = Arc::new(AtomicUsize::new(0));
    let counter = sent.clone();
    let server = TestServer::start(move |_| {
        let counter = counter.clone();
        async move { endless(content_type, prefix, SIXTY_FOUR_MIB, counter) }
    })
    .await;
    let Connection {
        mut sink,
        mut source,
        ..
    } = open_limited(&server.url(), small_frames()).await;
    sink.send(request(PING, &Pending::new())).await.unwrap();
    let error = closed(&mut source).await;
    assert_eq!(error.kind(), ErrorKind::ProtocolError, "{content_type}");
    assert!(
        error
            .message()
            .ends_with("of more than 65536 bytes; maxFrameBytes is 65536"),
        "{error}"
    );
    tokio::time::sleep(Duration::from_millis(200)).await;
    let sent = sent.load(Ordering::SeqCst);
    // The client stopped reading at the limit; only socket buffers' worth more left.
    assert!(
        sent < 16 * 1024 * 1024,
        "{content_type}: server sent {sent} bytes"
    );
}

#[tokio::test]
async fn an_endless_sse_event_fails_at_max_frame_bytes() {
    assert_bounded("text/event-stream", "data: ").await;
}

#[tokio::test]
async fn an_endless_json_body_fails_at_max_frame_bytes() {
    assert_bounded("application/json", "[\"").await;
}

/// How the session ends when one request, with `small_frames`, meets `server`.
async fn session_end_of_one_request(server: &TestServer) -> Error {
    let Connection {
        mut sink,
        mut source,
        ..
    } = open_limited(&server.url(), small_frames()).await;
    sink.send(request(PING, &Pending::new())).await.unwrap();
    closed(&mut source).await
}

#[tokio::test]
async fn a_declared_oversized_json_body_is_refused_before_reading() {
    let server =
        TestServer::start(|_| async { full(200, "application/json", vec![b' '; 65 * 1024]) }).await;
    let error = session_end_of_one_request(&server).await;
    assert_eq!(error.kind(), ErrorKind::ProtocolError);
}

#[tokio::test]
async fn a_declared_oversized_json_body_is_refused_without_waiting_for_it() {
    // A gigabyte announced, one byte sent, then nothing: only the declared length
    // can end this before the request's deadline.
    let server = TestServer::start(|_| async {
        use futures_util::StreamExt as _;
        use http_body_util::BodyExt as _;
        let body = futures_util::stream::once(async {
            Ok::<_, std::io::Error>(http_body::Frame::data(Bytes::from_static(b"[")))
        })
        .chain(futures_util::stream::pending());
        let mut response =
            http::Response::new(http_body_util::StreamBody::new(body).boxed_unsync());
        let headers = response.headers_mut();
        headers.insert(
            "content-type",
            http::HeaderValue::from_static("application/json"),
        );
        headers.insert(
            "content-length",
            http::HeaderValue::from_static("1073741824"),
        );
        response
    })
    .await;
    let error = session_end_of_one_request(&server).await;
    assert_eq!(error.kind(), ErrorKind::ProtocolError);
    assert!(error.message().contains("maxFrameBytes"), "{error}");
}

#[tokio::test]
async fn a_frame_of_exactly_max_frame_bytes_is_accepted() {
    let data = format!("\"{}\"", "y".repeat(64 * 1024 - 2));
    let event = format!("data: {data}\n\n");
    let json_body = data.clone();
    let server = TestServer::start(move |r: Recorded| {
        let (event, json_body) = (event.clone(), json_body.clone());
        async move {
            if r.index == 0 {
                full(200, "text/event-stream", event)
            } else {
                full(200, "application/json", json_body)
            }
        }
    })
    .await;
    let Connection {
        mut sink,
        mut source,
        ..
    } = open_limited(&server.url(), small_frames()).await;
    let first = Pending::new();
    sink.send(request(PING, &first)).await.unwrap();
    assert_eq!(next_frame(&mut source).await.len(), 64 * 1024);
    first.done.cancel();
    sink.send(request(PING, &Pending::new())).await.unwrap();
    assert_eq!(next_frame(&mut source).await.len(), 64 * 1024);
}

// ----- egress -----

#[tokio::test]
async fn egress_denial_sends_nothing() {
    let listener = CountingListener::start().await;
    let url = format!("http://{}/mcp", listener.addr);
    for grants in [
        // GET and DELETE, but not POST, to the right origin.
        vec![format!("net:get|delete:http://{}", listener.addr)],
        // POST to another port.
        vec!["net:post:http://127.0.0.1:1".to_owned()],
        // Nothing at all.
        vec![],
    ] {
        let transport = HttpTransport::builder("test", &url)
            .egress_grants(EgressGrants::parse(&grants).unwrap())
            .build()
            .unwrap();
        let Connection {
            mut sink,
            mut source,
            ..
        } = open_with(transport, Limits::default()).await;
        sink.send(request(INIT, &Pending::new())).await.unwrap();
        let error = closed(&mut source).await;
        assert_eq!(error.kind(), ErrorKind::EgressDenied, "{grants:?}");
        assert!(
            error.message().contains("net:post:http://127.0.0.1"),
            "{error}"
        );
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(listener.accepted(), 0);
}

#[tokio::test]
async fn the_default_grants_are_the_endpoint_origin() {
    let transport = HttpTransport::builder("test", "https://mcp.example.com:8443/mcp?k=v")
        .build()
        .unwrap();
    assert_eq!(
        transport.egress_grants().to_string(),
        "net:get|post|delete:https://mcp.example.com:8443"
    );
}

// ----- bearer token and redirects -----

#[tokio::test]
async fn the_bearer_token_is_sent_to_the_endpoint() {
    let server = TestServer::start(|_| async { json(REPLY) }).await;
    let transport = HttpTransport::builder("test", server.url())
        .bearer_token(SecretString::from("tok-123"))
        .build()
        .unwrap();
    let Connection {
        mut sink,
        mut source,
        ..
    } = open_with(transport, Limits::default()).await;
    sink.send(request(PING, &Pending::new())).await.unwrap();
    next_frame(&mut source).await;
    assert_eq!(
        server.requests()[0].header("authorization"),
        Some("Bearer tok-123")
    );
}

#[tokio::test]
async fn bearer_token_env_is_read_at_build_and_must_be_set() {
    let err = HttpTransport::builder("tracker", "https://h/mcp")
        .bearer_token_env("SMTHRS_TEST_SURELY_UNSET_VARIABLE_7F3A")
        .build()
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidConfig);
    assert!(
        err.message()
            .contains("SMTHRS_TEST_SURELY_UNSET_VARIABLE_7F3A")
    );
    assert!(err.message().contains("\"tracker\""));

    // Cargo sets CARGO_PKG_NAME for test processes; use it as a harmless token.
    let Ok(value) = std::env::var("CARGO_PKG_NAME") else {
        return;
    };
    let server = TestServer::start(|_| async { json(REPLY) }).await;
    let transport = HttpTransport::builder("test", server.url())
        .bearer_token_env("CARGO_PKG_NAME")
        .build()
        .unwrap();
    assert!(!format!("{transport:?}").contains(&value));
    let Connection {
        mut sink,
        mut source,
        ..
    } = open_with(transport, Limits::default()).await;
    sink.send(request(PING, &Pending::new())).await.unwrap();
    next_frame(&mut source).await;
    let expected = format!("Bearer {value}");
    assert_eq!(
        server.requests()[0].header("authorization"),
        Some(expected.as_str())
    );
}

/// Opens `transport`, sends a ping and returns how that request failed.
async fn ping_fails(transport: HttpTransport) -> crate::Error {
    let Connection { mut sink, .. } = open_with(transport, Limits::default()).await;
    let call = Pending::new();
    sink.send(request(PING, &call)).await.unwrap();
    call.wait_failure().await
}
#[tokio::test]
async fn a_cross_origin_redirect_is_not_followed_and_the_token_stays_home() {
    let other = TestServer::start(|_| async { json(REPLY) }).await;
    let target = other.url();
    let home = TestServer::start(move |_| {
        let target = target.clone();
        async move { with_header(status(307), "location", &target) }
    })
    .await;
    for follow in [0, 5] {
        let transport = HttpTransport::builder("test", home.url())
            .bearer_token(SecretString::from("tok-home"))
            .follow_same_origin_redirects(follow)
            .build()
            .unwrap();
        let error = ping_fails(transport).await;
        assert_eq!(error.kind(), ErrorKind::HttpStatus);
        assert!(error.message().contains("307"), "{error}");
    }
    assert_eq!(other.accepted(), 0);
    assert!(other.requests().is_empty());
    for r in home.requests() {
        assert_eq!(r.header("authorization"), Some("Bearer tok-home"));
    }
}

#[tokio::test]
async fn a_same_origin_redirect_is_followed_only_when_enabled() {
    let server = TestServer::start(|r: Recorded| async move {
        match r.uri.path() {
            "/mcp" => with_header(status(307), "location", "/moved?x=1"),
            _ => json(REPLY),
        }
    })
    .await;
    let transport = HttpTransport::builder("test", server.url())
        .bearer_token(SecretString::from("tok-same"))
        .follow_same_origin_redirects(1)
        .build()
        .unwrap();
    let Connection {
        mut sink,
        mut source,
        ..
    } = open_with(transport, Limits::default()).await;
    sink.send(request(PING, &Pending::new())).await.unwrap();
    assert_eq!(next_frame(&mut source).await, REPLY);
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[1].method, Method::POST);
    assert_eq!(requests[1].uri.path(), "/moved");
    assert_eq!(&requests[1].body[..], PING.as_bytes());
    assert_eq!(requests[1].header("authorization"), Some("Bearer tok-same"));
}

/// The redirect bound trips with a message naming the setting and its value;
/// the hops up to it were followed, the target is never quoted.
#[tokio::test]
async fn a_redirect_past_the_limit_names_the_setting_and_its_value() {
    let server = TestServer::start(|r: Recorded| async move {
        match r.uri.path() {
            "/mcp" => with_header(status(307), "location", "/hop?k=secret-q"),
            "/hop" => with_header(status(308), "location", "/final?k=secret-q"),
            _ => json(REPLY),
        }
    })
    .await;
    let transport = HttpTransport::builder("test", server.url())
        .follow_same_origin_redirects(1)
        .build()
        .unwrap();
    let error = ping_fails(transport).await;
    assert_eq!(error.kind(), ErrorKind::HttpStatus);
    let message = error.message();
    assert!(message.contains("308"), "{message}");
    assert!(
        message.contains("follow_same_origin_redirects is 1"),
        "{message}"
    );
    assert!(
        !message.contains("secret-q") && !message.contains("/hop"),
        "{message}"
    );
    let paths: Vec<_> = server
        .requests()
        .iter()
        .map(|r| r.uri.path().to_owned())
        .collect();
    assert_eq!(paths, ["/mcp", "/hop"]);
}

// ----- TLS and proxies -----

#[tokio::test]
async fn tls_with_a_custom_root_negotiates_http2() {
    let pki = TestPki::new();
    let server = TestServer::start_tls(|_| async { json(REPLY) }, pki.server_config).await;
    let transport = HttpTransport::builder("test", server.url())
        .add_root_certificate(pki.ca_der.clone())
        .tls_roots_only(true)
        .build()
        .unwrap();
    let Connection {
        mut sink,
        mut source,
        ..
    } = open_with(transport, Limits::default()).await;
    for _ in 0..3 {
        let call = Pending::new();
        sink.send(request(PING, &call)).await.unwrap();
        assert_eq!(next_frame(&mut source).await, REPLY);
        call.done.cancel();
    }
    let requests = server.requests();
    assert!(requests.iter().all(|r| r.version == http::Version::HTTP_2));
    assert_eq!(server.accepted(), 1, "one pooled connection");
}

#[tokio::test]
async fn an_untrusted_certificate_is_a_tls_error() {
    let pki = TestPki::new();
    let other_ca = TestPki::new();
    let server = TestServer::start_tls(|_| async { json(REPLY) }, pki.server_config).await;
    let transport = HttpTransport::builder("test", server.url())
        .add_root_certificate(other_ca.ca_der)
        .tls_roots_only(true)
        .build()
        .unwrap();
    let Connection {
        mut sink,
        mut source,
        ..
    } = open_with(transport, Limits::default()).await;
    sink.send(request(INIT, &Pending::new())).await.unwrap();
    let error = closed(&mut source).await;
    assert_eq!(error.kind(), ErrorKind::Tls, "{error:?}");
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn a_client_certificate_is_presented_when_configured() {
    let pki = TestPki::new();
    let config = pki.server_config_requiring_client_auth();
    let server = TestServer::start_tls(|_| async { json(REPLY) }, config).await;

    // Without an identity the server refuses the handshake.
    let transport = HttpTransport::builder("test", server.url())
        .add_root_certificate(pki.ca_der.clone())
        .tls_roots_only(true)
        .build()
        .unwrap();
    let Connection {
        mut sink,
        mut source,
        ..
    } = open_with(transport, Limits::default()).await;
    sink.send(request(PING, &Pending::new())).await.unwrap();
    // TLS 1.3: the server's fatal alert arrives after our side of the handshake.
    let error = closed(&mut source).await;
    assert_eq!(error.kind(), ErrorKind::Tls, "{error:?}");
    assert!(server.requests().is_empty());

    let (cert, key) = pki.client_identity();
    let transport = HttpTransport::builder("test", server.url())
        .add_root_certificate(pki.ca_der.clone())
        .tls_roots_only(true)
        .client_identity([cert], key)
        .build()
        .unwrap();
    let Connection {
        mut sink,
        mut source,
        ..
    } = open_with(transport, Limits::default()).await;
    sink.send(request(PING, &Pending::new())).await.unwrap();
    assert_eq!(next_frame(&mut source).await, REPLY);
}

#[tokio::test]
async fn https_goes_through_a_connect_tunnel_and_egress_checks_the_destination() {
    let pki = TestPki::new();
    let server = TestServer::start_tls(|_| async { json(REPLY) }, pki.server_config).await;
    let proxy = ConnectProxy::start().await;
    let transport = HttpTransport::builder("test", server.url())
        .add_root_certificate(pki.ca_der.clone())
        .tls_roots_only(true)
        .proxy(format!("http://user:pw@{}", proxy.addr))
        .build()
        .unwrap();
    let Connection {
        mut sink,
        mut source,
        ..
    } = open_with(transport, Limits::default()).await;
    sink.send(request(PING, &Pending::new())).await.unwrap();
    assert_eq!(next_frame(&mut source).await, REPLY);
    let tunnels = proxy.tunnels();
    assert_eq!(tunnels.len(), 1);
    assert_eq!(tunnels[0].0, format!("localhost:{}", server.addr.port()));
    assert_eq!(tunnels[0].1.as_deref(), Some("Basic dXNlcjpwdw=="));

    // A grant for the proxy's origin does not allow the destination.
    let transport = HttpTransport::builder("test", server.url())
        .add_root_certificate(pki.ca_der)
        .tls_roots_only(true)
        .proxy(format!("http://{}", proxy.addr))
        .egress_grants(EgressGrants::parse([format!("net:*:http://{}", proxy.addr)]).unwrap())
        .build()
        .unwrap();
    let Connection {
        mut sink,
        mut source,
        ..
    } = open_with(transport, Limits::default()).await;
    sink.send(request(PING, &Pending::new())).await.unwrap();
    assert_eq!(closed(&mut source).await.kind(), ErrorKind::EgressDenied);
    assert_eq!(proxy.tunnels().len(), 1);
}

// ----- user layers -----

#[tokio::test]
async fn user_layers_wrap_the_stack() {
    let server = TestServer::start(|_| async { json(REPLY) }).await;
    let seen = Arc::new(AtomicUsize::new(0));
    let counter = seen.clone();
    let transport = HttpTransport::builder("test", server.url())
        .layer(tower::util::MapRequestLayer::new(
            |mut req: crate::transport::http::HttpRequest| {
                req.headers_mut()
                    .insert("x-client", http::HeaderValue::from_static("layered"));
                req
            },
        ))
        .layer(tower::util::MapRequestLayer::new(
            move |req: crate::transport::http::HttpRequest| {
                counter.fetch_add(1, Ordering::SeqCst);
                req
            },
        ))
        .build()
        .unwrap();
    let Connection {
        mut sink,
        mut source,
        ..
    } = open_with(transport, Limits::default()).await;
    sink.send(request(PING, &Pending::new())).await.unwrap();
    next_frame(&mut source).await;
    assert_eq!(seen.load(Ordering::SeqCst), 1);
    assert_eq!(server.requests()[0].header("x-client"), Some("layered"));
}
