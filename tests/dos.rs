//! Denial-of-service checks: servers that answer every request with a 128-deep
//! nest, flood pings, flood notifications, send 10 000 replies for ids nobody waits
//! on, or trickle an SSE stream one byte a second. The client must keep working
//! (or fail with its own typed error) and meet its deadlines: a call under a short
//! `requestTimeoutMs` ends with `timeout`, never a hang.
//!
//! These tests assert behaviour, not time or memory, with one exception that is
//! the behaviour: a deadline under a flood fires within the margin the design
//! gives it (`FLOOD_DEADLINE_MARGIN`, see `Limits::request_timeout_ms`), over
//! both transports, both eras and both runtime flavours. The memory and time
//! figures in `DOS.md` come from the `#[ignore]`d `measure_*` functions at the
//! end, each run in its own process so that its peak RSS (VmHWM) is its own:
//!
//! ```sh
//! for m in deep_nest ping_flood notification_flood unknown_id_flood sse_trickle sse_blank_lines \
//!     deadline_overshoot; do
//!   cargo test --release --test dos -- --ignored --exact measure_$m --nocapture
//! done
//! ```

mod support;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::StreamExt;
use serde_json::{Value, json};
use smthrs_mcp::transport::http::HttpTransport;
use smthrs_mcp::{Client, Era, ErrorKind, Limits};
use smthrs_mcp_testkit::bridge::BridgeOptions;
use smthrs_mcp_testkit::http_server;
use smthrs_mcp_testkit::http_server::{
    Recorded, TestServer, echo_catalog, initialize_result, rpc_result, status, streaming,
};
use support::eras;
use support::eras::Via;
use support::{Recording, Server, args, inline};

/// A guard against a hang: far above every deadline a test sets.
const HANG: Duration = Duration::from_secs(60);

/// `[[[ ... ]]]`, `depth` arrays deep.
fn nest(depth: usize) -> String {
    format!("{}{}", "[".repeat(depth), "]".repeat(depth))
}

/// A scenario too large for argv, written to a file the server reads.
struct ScenarioFile {
    _dir: tempfile::TempDir,
    path: PathBuf,
}

impl ScenarioFile {
    fn new(scenario: &Value) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("scenario.json");
        std::fs::write(&path, scenario.to_string()).unwrap();
        ScenarioFile { _dir: dir, path }
    }

    fn server(&self) -> Server {
        Server {
            args: vec![self.path.clone().into()],
            env: Vec::new(),
        }
    }
}

fn limits_with_timeout(request_timeout_ms: u64) -> Limits {
    support::limits(|limits| {
        limits.handshake_timeout_ms = 10_000;
        limits.request_timeout_ms = request_timeout_ms;
    })
}

async fn connect(server: Server, limits: Limits) -> Client {
    support::connected(Client::builder("dos").limits(limits), server.stdio()).await
}

/// Connects as `name` to the Streamable HTTP `server`.
async fn connect_http(name: &str, server: &TestServer, limits: Limits) -> Client {
    let transport = HttpTransport::builder(name, server.url()).build().unwrap();
    support::connected(Client::builder(name).limits(limits), transport).await
}

async fn call(
    client: &Client,
    name: &str,
    arguments: Value,
) -> smthrs_mcp::Result<smthrs_mcp::ToolResult> {
    tokio::time::timeout(HANG, client.call_tool(name, args(arguments)))
        .await
        .expect("a call does not hang")
}

// ----- every answer 128 containers deep -----

/// The deepest legal answers: 128 containers counting the envelope, at every step
/// of the handshake and on every call.
fn deep_scenario() -> Value {
    let init = format!(
        r#"{{"jsonrpc":"2.0","id":$ID,"result":{{"protocolVersion":"2025-06-18","capabilities":{{"tools":{{}}}},"serverInfo":{{"name":"deep","version":"1"}},"x":{}}}}}"#,
        nest(126)
    );
    // envelope, result, tools array, tool, inputSchema, properties: 6, then 122.
    let list = format!(
        r#"{{"jsonrpc":"2.0","id":$ID,"result":{{"tools":[{{"name":"echo","inputSchema":{{"type":"object","properties":{{"n":{}}}}}}}]}}}}"#,
        nest(122)
    );
    let reply = format!(
        r#"{{"jsonrpc":"2.0","id":$ID,"result":{{"content":[{{"type":"text","text":"deep"}}],"structuredContent":{{"n":{}}}}}}}"#,
        nest(125)
    );
    json!({
        "initialize": {"raw": init},
        "tools_list": {"raw": list},
        "on_call": {"echo": {"reply_raw": reply}},
    })
}

#[tokio::test]
async fn every_answer_128_deep() {
    let file = ScenarioFile::new(&deep_scenario());
    let client = connect(file.server(), limits_with_timeout(5_000)).await;
    let tool = client
        .catalog()
        .get("echo")
        .expect("the deep catalog is accepted");
    assert_eq!(
        smthrs_mcp::fuzzing::value_depth(&Value::Object(tool.input_schema().clone())),
        124
    );
    for _ in 0..50 {
        let result = call(&client, "echo", json!({}))
            .await
            .expect("a 128-deep reply is legal");
        let structured = result.structured_content.expect("structuredContent");
        assert_eq!(smthrs_mcp::fuzzing::value_depth(&structured), 126);
    }
    client.close().await;

    // One container more, and the session ends with a typed error, not a crash.
    let mut scenario = deep_scenario();
    scenario["on_call"]["echo"]["reply_raw"] = json!(format!(
        r#"{{"jsonrpc":"2.0","id":$ID,"result":{{"structuredContent":{{"n":{}}}}}}}"#,
        nest(100_000)
    ));
    let file = ScenarioFile::new(&scenario);
    let client = connect(file.server(), limits_with_timeout(5_000)).await;
    let error = call(&client, "echo", json!({})).await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::ProtocolError, "{error}");
}

// ----- floods on stdout while a call is pending -----

/// How the flood is played.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Play {
    /// On the server's worker thread (`delay_ms`): it keeps reading our replies.
    Worker,
    /// On the server's reader thread: it reads nothing while it writes.
    Inline,
    /// On the worker thread for the first call; later calls answer normally.
    WorkerOnce,
}

/// A scenario whose `echo` writes `count` lines from `line(i)` before its reply,
/// streamed to a file line by line (too large for argv, and so that the test
/// process never holds the flood: its peak RSS is then the client's).
fn flood_file(count: usize, line: fn(usize) -> Value, play: Play) -> ScenarioFile {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("scenario.json");
    let mut out = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    let delay = if play == Play::Inline {
        ""
    } else {
        r#""delay_ms":1,"#
    };
    let open = if play == Play::WorkerOnce { "[" } else { "" };
    write!(out, r#"{{"on_call":{{"echo":{open}{{{delay}"raw_lines":["#).unwrap();
    for i in 0..count {
        if i > 0 {
            out.write_all(b",").unwrap();
        }
        serde_json::to_writer(&mut out, &line(i)).unwrap();
    }
    let close = if play == Play::WorkerOnce {
        "]},{}]}}"
    } else {
        "]}}}"
    };
    out.write_all(close.as_bytes()).unwrap();
    out.flush().unwrap();
    ScenarioFile { _dir: dir, path }
}

fn ping(i: usize) -> Value {
    json!({"jsonrpc": "2.0", "id": format!("flood-{i}"), "method": "ping"})
}

fn notification(i: usize) -> Value {
    json!({"jsonrpc": "2.0", "method": "notifications/progress",
           "params": {"progressToken": i, "progress": i, "message": "x".repeat(200)}})
}

fn unknown_reply(i: usize) -> Value {
    if i.is_multiple_of(2) {
        json!({"jsonrpc": "2.0", "id": 1_000_000 + i, "result": {"pad": "y".repeat(100)}})
    } else {
        json!({"jsonrpc": "2.0", "id": format!("stray-{i}"), "error": {"code": 1, "message": "stray"}})
    }
}

#[tokio::test]
async fn ping_flood_is_answered_and_the_call_completes() {
    const PINGS: usize = 10_000;
    let file = flood_file(PINGS, ping, Play::Worker);
    let recording = Recording::new();
    let client = connect(recording.attach(file.server()), limits_with_timeout(20_000)).await;
    let result = call(&client, "echo", json!({"text": "after the flood"}))
        .await
        .unwrap();
    assert_eq!(result.content[0]["text"], "after the flood");
    // Every ping got its own pong, with its exact id. The call's reply can be
    // routed while the last pongs are still queued, and closing the scope drops
    // queued replies (only owed cancellations are written then), so the pongs
    // are counted before `close()`, within a bound.
    let pongs = || {
        recording
            .lines()
            .into_iter()
            .filter(|line| {
                line["id"]
                    .as_str()
                    .is_some_and(|id| id.starts_with("flood-"))
            })
            .filter(|line| line["result"] == json!({}))
            .count()
    };
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
    while pongs() < PINGS && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(pongs(), PINGS);
    client.close().await;
}

#[tokio::test]
async fn ping_flood_from_a_server_that_stops_reading_meets_the_deadline() {
    // The flood is written by the server's reader thread itself, so it reads nothing
    // while it writes: our pongs back up, the outbound queue fills, and the session
    // must end within requestTimeoutMs instead of waiting on the server forever.
    let file = flood_file(200_000, ping, Play::Inline);
    let mut limits = limits_with_timeout(500);
    limits.queue_capacity = 4;
    let client = connect(file.server(), limits).await;
    let error = call(&client, "echo", json!({"text": "x"}))
        .await
        .unwrap_err();
    assert!(
        matches!(
            error.kind(),
            ErrorKind::Timeout | ErrorKind::ConnectionClosed
        ),
        "{error:?}"
    );
}

/// Three `echo` calls in a row, each answered with its own text.
async fn three_echo_rounds(client: &Client) {
    for round in 0..3 {
        let text = format!("round {round}");
        let result = call(client, "echo", json!({"text": text})).await.unwrap();
        assert_eq!(result.content[0]["text"], text);
    }
}

#[tokio::test]
async fn notification_flood_is_dropped_and_the_call_completes() {
    let file = flood_file(10_000, notification, Play::Worker);
    let client = connect(file.server(), limits_with_timeout(20_000)).await;
    three_echo_rounds(&client).await;
    client.close().await;
}

#[tokio::test]
async fn ten_thousand_replies_for_unknown_ids_are_dropped() {
    let file = flood_file(10_000, unknown_reply, Play::Worker);
    let client = connect(file.server(), limits_with_timeout(20_000)).await;
    three_echo_rounds(&client).await;
    assert!(client.terminal_error().is_none());
    client.close().await;
}

#[tokio::test]
async fn a_flood_with_a_short_deadline_times_out_and_the_session_survives() {
    // 100 000 notifications (25 MB) cannot be read in 10 ms: the call times out
    // (it does not wait for the flood), and the session is still usable after it.
    let file = flood_file(100_000, notification, Play::WorkerOnce);
    let mut limits = limits_with_timeout(10);
    limits.handshake_timeout_ms = 60_000; // the server first parses a 25 MB scenario
    let client = connect(file.server(), limits).await;
    let error = call(&client, "echo", json!({"text": "x"}))
        .await
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Timeout, "{error:?}");
    // While the flood drains, a later call may time out too (10 ms is short), but
    // it never hangs and never ends the session.
    let _ = call(&client, "echo", json!({"text": "y"})).await;
    assert!(
        client.terminal_error().is_none(),
        "{:?}",
        client.terminal_error()
    );
    client.close().await;
}

// ----- stderr: 8 MiB before the server reads anything -----

#[tokio::test]
async fn stderr_flood_is_drained_and_the_tail_stays_bounded() {
    // The server writes 8 MiB to stderr before it reads `initialize`: a client that
    // did not drain stderr would deadlock the handshake.
    for no_newline in [false, true] {
        let observer = support::Collect::new();
        let server = support::inline(json!({
            "stderr_flood_bytes": 8 << 20,
            "stderr_flood_no_newline": no_newline,
        }));
        let client = tokio::time::timeout(
            HANG,
            Client::builder("chatty")
                .limits(limits_with_timeout(5_000))
                .diagnostics(observer.clone())
                .connect(server.stdio()),
        )
        .await
        .expect("connect does not hang")
        .expect("connects");
        call(&client, "echo", json!({"text": "x"})).await.unwrap();
        client.close().await;
        let tails = observer.named("stderr-tail");
        assert_eq!(tails.len(), 1, "{tails:?}");
        let max = Limits::default().max_stderr_bytes as usize;
        assert!(tails[0].len() <= max, "{} bytes", tails[0].len());
    }
}

// ----- an SSE stream that sends one byte a second -----

/// A minimal Streamable HTTP MCP server whose `tools/call` answers with an event
/// stream that sends one byte, then one more every `gap`, never finishing an event.
async fn trickle_server(gap: Duration, sent: Arc<AtomicUsize>) -> TestServer {
    stream_server(
        move |_| {
            let first = futures_util::stream::once(async { Bytes::from_static(b"d") });
            let rest = futures_util::stream::unfold((), move |()| async move {
                tokio::time::sleep(gap).await;
                Some((Bytes::from_static(b"a"), ()))
            });
            first.chain(rest).boxed()
        },
        sent,
    )
    .await
}

/// How a minimal Streamable HTTP MCP server named `name` answers the POSTed
/// `req`: the handshake (one `echo` tool) with JSON, `tools/call` with what
/// `on_call` makes for the request's id, anything else with 202.
fn answer_post(
    req: &Recorded,
    name: &str,
    on_call: impl FnOnce(&Value) -> http::Response<http_server::Body>,
) -> http::Response<http_server::Body> {
    let message: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
    let id = message["id"].clone();
    match message["method"].as_str() {
        Some("initialize") => rpc_result(Some(&id), initialize_result(name, json!({"tools": {}}))),
        Some("tools/list") => rpc_result(Some(&id), echo_catalog()),
        Some("tools/call") => on_call(&id),
        _ => status(202),
    }
}

/// A server that answers `tools/call` with the event stream `body` makes for the
/// request's id (its bytes counted into `sent`), and the handshake with JSON.
async fn stream_server(
    body: impl Fn(&Value) -> futures_util::stream::BoxStream<'static, Bytes> + Send + Sync + 'static,
    sent: Arc<AtomicUsize>,
) -> TestServer {
    let body = Arc::new(body);
    TestServer::start(move |req: Recorded| {
        let sent = sent.clone();
        let body = body.clone();
        async move {
            if req.method != http::Method::POST {
                return status(405);
            }
            answer_post(&req, "trickle", move |id| {
                let body = body(id).inspect(move |chunk| {
                    sent.fetch_add(chunk.len(), Ordering::SeqCst);
                });
                streaming("text/event-stream", body)
            })
        }
    })
    .await
}

/// Connects to `server` over HTTP with a 300 ms request deadline, then times
/// `calls` calls in a row: each must time out and leave the session usable.
/// Returns how late each deadline fired.
async fn timed_calls(name: &str, server: &TestServer, calls: usize) -> Vec<Duration> {
    let client = connect_http(name, server, limits_with_timeout(300)).await;
    let mut late = Vec::with_capacity(calls);
    for _ in 0..calls {
        let started = Instant::now();
        let error = call(&client, "echo", json!({})).await.unwrap_err();
        assert_eq!(error.kind(), ErrorKind::Timeout, "{error:?}");
        late.push(started.elapsed().saturating_sub(Duration::from_millis(300)));
    }
    assert!(client.terminal_error().is_none());
    client.close().await;
    late
}

/// [`timed_calls`], three of them, each late by less than the margin.
async fn three_calls_meet_the_deadline(name: &str, server: &TestServer) {
    for late in timed_calls(name, server, 3).await {
        assert!(late < FLOOD_DEADLINE_MARGIN, "{name}: {late:?} late");
    }
}

#[tokio::test]
async fn sse_trickle_meets_the_request_deadline() {
    let sent = Arc::new(AtomicUsize::new(0));
    let server = trickle_server(Duration::from_secs(1), sent.clone()).await;
    three_calls_meet_the_deadline("trickle", &server).await;
    assert!(sent.load(Ordering::SeqCst) >= 3, "the streams were opened");
}

/// The events of [`NOTIFICATION_EVENTS`]: 64 `notifications/message` events.
const NOTIFICATION_EVENTS: &str =
    "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{}}\n\n";

/// Events that carry no data (a comment each): bytes that never make a frame.
const KEEP_ALIVE_EVENTS: &str = ": keep-alive\n\n";

/// A server answering every call with `event`, repeated as fast as its
/// connection task can write it, never the reply.
async fn sse_flood_server(event: &str, sent: Arc<AtomicUsize>) -> TestServer {
    let chunk = Bytes::from(event.repeat(64));
    stream_server(
        move |_| futures_util::stream::repeat(chunk.clone()).boxed(),
        sent,
    )
    .await
}

/// [`timed_calls`] against [`sse_flood_server`].
async fn sse_flood_deadlines(event: &str, calls: usize) -> Vec<Duration> {
    let sent = Arc::new(AtomicUsize::new(0));
    let server = sse_flood_server(event, sent.clone()).await;
    let late = timed_calls("flood", &server, calls).await;
    assert!(sent.load(Ordering::SeqCst) > 1 << 20, "the server flooded");
    late
}

/// [`three_calls_meet_the_deadline`] against [`sse_flood_server`].
async fn sse_flood_meets_the_deadline(event: &str) {
    let sent = Arc::new(AtomicUsize::new(0));
    let server = sse_flood_server(event, sent.clone()).await;
    three_calls_meet_the_deadline("flood", &server).await;
    assert!(sent.load(Ordering::SeqCst) > 1 << 20, "the server flooded");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sse_event_flood_meets_the_request_deadline() {
    // The caller routing the events (it drives its exchange) still meets its
    // deadline, with the server's connection task filling the stream on
    // another thread.
    sse_flood_meets_the_deadline(NOTIFICATION_EVENTS).await;
}

#[tokio::test(flavor = "current_thread")]
async fn sse_event_flood_on_one_thread_meets_the_request_deadline() {
    sse_flood_meets_the_deadline(NOTIFICATION_EVENTS).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sse_keep_alive_flood_meets_the_request_deadline() {
    // Bytes as fast as the server can write them and never a frame: nothing is
    // handed to the caller, and the deadline still fires.
    sse_flood_meets_the_deadline(KEEP_ALIVE_EVENTS).await;
}

#[tokio::test(flavor = "current_thread")]
async fn sse_keep_alive_flood_on_one_thread_meets_the_request_deadline() {
    sse_flood_meets_the_deadline(KEEP_ALIVE_EVENTS).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_sse_flood_after_the_reply_does_not_hold_the_call() {
    // The reply first, then events as fast as the server can write them on the
    // same stream: the call returns its result; the rest of the stream is
    // detached, never drained by the caller.
    let flood = Bytes::from(NOTIFICATION_EVENTS.repeat(64));
    let sent = Arc::new(AtomicUsize::new(0));
    let server = stream_server(
        move |id| {
            let reply = json!({"jsonrpc": "2.0", "id": id, "result": {
                "content": [{"type": "text", "text": "answered"}]}});
            let reply = Bytes::from(format!("data: {reply}\n\n"));
            futures_util::stream::once(async move { reply })
                .chain(futures_util::stream::repeat(flood.clone()))
                .boxed()
        },
        sent.clone(),
    )
    .await;
    let client = connect_http("after", &server, limits_with_timeout(30_000)).await;
    for _ in 0..3 {
        let started = Instant::now();
        let result = call(&client, "echo", json!({})).await.unwrap();
        assert_eq!(result.content[0]["text"], "answered");
        // The same margin a deadline has: a reply in hand is not held by the flood.
        let took = started.elapsed();
        assert!(took < FLOOD_DEADLINE_MARGIN, "the call took {took:?}");
    }
    assert!(client.terminal_error().is_none());
    client.close().await;
}

// ----- a deadline under a notification flood: both transports, eras, runtimes -----

/// What a deadline may overshoot under any flood, with room for a debug build on
/// a busy two-core machine: the design bounds the late part to routing the frames
/// at hand when it passes (at most one cooperative budget of them) and one
/// scheduling round (`Limits::request_timeout_ms`; DOS.md has the measured
/// overshoot). A hang guard in spirit, five times tighter than the bound this
/// test had before the reader and the exchange yielded.
const FLOOD_DEADLINE_MARGIN: Duration = Duration::from_secs(2);

/// The deadline under the flood.
const FLOOD_DEADLINE_MS: u64 = 300;

/// A scripted server whose `echo` floods `notifications/message` for longer than
/// the deadline and never answers, in `era`.
fn flooding_server(era: Era) -> Server {
    inline(json!({
        "era": if era == Era::Modern { "modern" } else { "legacy" },
        "on_call": {"echo": {"notification_flood_ms": 4 * FLOOD_DEADLINE_MS, "no_reply": true}},
    }))
}

/// Connects to the flooding server over `via` in `era`, then times `calls`
/// calls, each answered by nothing but the flood; returns how late each
/// deadline fired. Every call must end with `timeout` and leave the session up.
async fn deadlines_under_a_flood(via: Via, era: Era, calls: usize) -> Vec<Duration> {
    let options = match era {
        Era::Modern => BridgeOptions::modern(),
        _ => BridgeOptions::default(),
    };
    let builder = Client::builder("flood").limits(limits_with_timeout(FLOOD_DEADLINE_MS));
    let attempt = eras::connect(via, builder, flooding_server(era), options).await;
    let client = attempt.client();
    assert_eq!(client.era(), era);
    let deadline = Duration::from_millis(FLOOD_DEADLINE_MS);
    let mut late = Vec::with_capacity(calls);
    for _ in 0..calls {
        let started = Instant::now();
        let error = call(client, "echo", json!({})).await.unwrap_err();
        let took = started.elapsed();
        assert_eq!(error.kind(), ErrorKind::Timeout, "{error:?}");
        assert!(took >= deadline, "fired early: {took:?}");
        late.push(took - deadline);
    }
    assert!(
        client.terminal_error().is_none(),
        "the flood left the session up"
    );
    let flooded = || -> u64 {
        attempt
            .lines()
            .iter()
            .filter_map(|line| line["flooded_lines"].as_u64())
            .sum()
    };
    // The first call's flood ends (and is recorded) a little after the last call.
    support::eventually("a flood recorded", || flooded() > 0).await;
    assert!(flooded() > 1_000, "the server flooded: {} lines", flooded());
    attempt.close().await;
    late
}

async fn a_deadline_fires_on_time_under_a_flood(via: Via, era: Era) {
    for late in deadlines_under_a_flood(via, era, 3).await {
        assert!(
            late < FLOOD_DEADLINE_MARGIN,
            "{via:?} {era:?}: the deadline fired {late:?} late"
        );
    }
}

/// One test per transport, era and runtime flavour.
macro_rules! deadline_under_a_flood {
    ($($name:ident: $via:ident, $era:ident, ($($flavor:tt)*);)*) => {
        mod deadline_under_a_flood {
            use super::*;
            $(
                #[tokio::test($($flavor)*)]
                async fn $name() {
                    a_deadline_fires_on_time_under_a_flood(Via::$via, Era::$era).await
                }
            )*
        }
    };
}

deadline_under_a_flood! {
    stdio_legacy_current_thread: Stdio, Legacy, (flavor = "current_thread");
    stdio_legacy_multi_thread: Stdio, Legacy, (flavor = "multi_thread", worker_threads = 2);
    stdio_modern_current_thread: Stdio, Modern, (flavor = "current_thread");
    stdio_modern_multi_thread: Stdio, Modern, (flavor = "multi_thread", worker_threads = 2);
    http_legacy_current_thread: Http, Legacy, (flavor = "current_thread");
    http_legacy_multi_thread: Http, Legacy, (flavor = "multi_thread", worker_threads = 2);
    http_modern_current_thread: Http, Modern, (flavor = "current_thread");
    http_modern_multi_thread: Http, Modern, (flavor = "multi_thread", worker_threads = 2);
}

// ----- measurements for DOS.md (ignored: run one per process) -----

/// Median, 99th percentile and maximum of `late`, in milliseconds.
fn spread(mut late: Vec<Duration>) -> String {
    late.sort();
    let at = |q: f64| late[((late.len() - 1) as f64 * q).round() as usize].as_secs_f64() * 1e3;
    format!(
        "median {:.1} ms, p99 {:.1} ms, max {:.1} ms over {} deadlines",
        at(0.5),
        at(0.99),
        at(1.0),
        late.len()
    )
}

/// How late a 300 ms deadline fires under a notification flood, for every
/// transport, era and runtime flavour (DOS.md, "A deadline under a flood").
#[test]
#[ignore = "measurement for DOS.md; run alone"]
fn measure_deadline_overshoot() {
    // Deadlines per case: `FLOOD_CALLS` (default 100).
    let calls: usize = std::env::var("FLOOD_CALLS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(100);
    for flavor in ["current_thread", "multi_thread"] {
        let runtime = match flavor {
            "current_thread" => tokio::runtime::Builder::new_current_thread(),
            _ => {
                let mut builder = tokio::runtime::Builder::new_multi_thread();
                builder.worker_threads(2);
                builder
            }
        }
        .enable_all()
        .build()
        .unwrap();
        runtime.block_on(async {
            for (via, era) in [
                (Via::Stdio, Era::Legacy),
                (Via::Stdio, Era::Modern),
                (Via::Http, Era::Legacy),
                (Via::Http, Era::Modern),
            ] {
                let late = deadlines_under_a_flood(via, era, calls).await;
                println!("MEASURE {flavor} {via:?} {era:?}: {}", spread(late));
            }
            for (name, event) in [
                ("notification", NOTIFICATION_EVENTS),
                ("keep-alive", KEEP_ALIVE_EVENTS),
            ] {
                let late = sse_flood_deadlines(event, calls).await;
                println!(
                    "MEASURE {flavor} in-process SSE {name} flood: {}",
                    spread(late)
                );
            }
        });
    }
}

fn rss_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn report(name: &str, phase: &str, started: Instant, units: usize, unit: &str) {
    println!(
        "MEASURE {name} {phase}: {units} {unit} in {:.2} s; VmRSS {} KiB, VmHWM {} KiB",
        started.elapsed().as_secs_f64(),
        rss_kib("VmRSS:"),
        rss_kib("VmHWM:"),
    );
}

async fn measure_flood(name: &str, line: fn(usize) -> Value, rounds: &[usize]) {
    for &count in rounds {
        let file = flood_file(count, line, Play::Worker);
        report(name, "before", Instant::now(), count, "lines");
        let client = connect(file.server(), limits_with_timeout(120_000)).await;
        let started = Instant::now();
        call(&client, "echo", json!({"text": "x"})).await.unwrap();
        report(name, "flood", started, count, "lines");
        client.close().await;
    }
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "measurement for DOS.md; run alone"]
async fn measure_deep_nest() {
    let file = ScenarioFile::new(&deep_scenario());
    report("deep_nest", "start", Instant::now(), 0, "calls");
    let client = connect(file.server(), limits_with_timeout(60_000)).await;
    for calls in [1_000usize, 10_000] {
        let started = Instant::now();
        for _ in 0..calls {
            call(&client, "echo", json!({})).await.unwrap();
        }
        report("deep_nest", "calls", started, calls, "calls");
    }
    client.close().await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "measurement for DOS.md; run alone"]
async fn measure_ping_flood() {
    measure_flood("ping_flood", ping, &[10_000, 100_000]).await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "measurement for DOS.md; run alone"]
async fn measure_notification_flood() {
    measure_flood("notification_flood", notification, &[10_000, 100_000]).await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "measurement for DOS.md; run alone"]
async fn measure_unknown_id_flood() {
    measure_flood("unknown_id_flood", unknown_reply, &[10_000, 100_000]).await;
}

/// A stream of blank lines: no event grows past the per-event bound. The parser
/// used to copy its remaining buffer once per line (quadratic) on the runtime
/// thread, so a current-thread runtime missed the call's deadline; `BoundedSse`
/// now hands it one line at a time. This prints by how much the deadline is
/// missed (now: not at all).
#[tokio::test]
#[ignore = "measurement for DOS.md; run alone"]
async fn measure_sse_blank_lines() {
    for kib in [64usize, 128, 256] {
        let body = Bytes::from(vec![b'\n'; kib * 1024]);
        let server = TestServer::start(move |req: Recorded| {
            let body = body.clone();
            async move {
                answer_post(&req, "blank", |_| {
                    let stream = futures_util::stream::once(async move { body })
                        .chain(futures_util::stream::pending());
                    streaming("text/event-stream", stream)
                })
            }
        })
        .await;
        let client = connect_http("blank", &server, limits_with_timeout(500)).await;
        let started = Instant::now();
        let result = client.call_tool("echo", args(json!({}))).await;
        println!(
            "MEASURE sse_blank_lines {kib} KiB of \\n: call ended after {:.2} s (deadline 0.50 s): {:?}",
            started.elapsed().as_secs_f64(),
            result.map(|_| ()).map_err(|e| e.kind())
        );
        client.close().await;
    }
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "measurement for DOS.md; run alone"]
async fn measure_sse_trickle() {
    // 1 byte per 10 ms (100x faster than the spec'd byte a second, to fill the
    // per-event bound sooner), 20 concurrent trickling calls, deadline 3 s.
    let sent = Arc::new(AtomicUsize::new(0));
    let server = trickle_server(Duration::from_millis(10), sent.clone()).await;
    report("sse_trickle", "start", Instant::now(), 0, "calls");
    let client = connect_http("trickle", &server, limits_with_timeout(3_000)).await;
    let started = Instant::now();
    let calls = (0..20).map(|_| {
        let client = client.clone();
        async move { client.call_tool("echo", args(json!({}))).await }
    });
    let results = futures_util::future::join_all(calls).await;
    let timeouts = results
        .iter()
        .filter(|r| r.as_ref().is_err_and(|e| e.kind() == ErrorKind::Timeout))
        .count();
    report("sse_trickle", "timed out", started, timeouts, "of 20 calls");
    println!(
        "MEASURE sse_trickle bytes sent by the server: {}",
        sent.load(Ordering::SeqCst)
    );
    client.close().await;
}
