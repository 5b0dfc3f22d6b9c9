//! Self-test of the scripted server's Streamable HTTP mode (`src/http_bridge.rs`),
//! driven by a plain hyper client so it never depends on the library under test.

use std::ffi::OsString;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Empty, Full};
use hyper::body::Incoming;
use hyper::header::HeaderMap;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde_json::{Value, json};

use smthrs_mcp_testkit::bridge::{Bridge, BridgeOptions};

/// The server under test, built by cargo for this crate's integration tests.
const SCRIPTED_SERVER: &str = env!("CARGO_BIN_EXE_smthrs-mcp-scripted-server");

type HttpClient = Client<HttpConnector, BoxBody<Bytes, hyper::Error>>;

const PROTOCOL_VERSION: &str = "2025-06-18";

fn scenario(name: &str) -> Vec<OsString> {
    let path = format!(
        "{}/../testdata/scenarios/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    vec![path.into()]
}

fn client() -> HttpClient {
    Client::builder(TokioExecutor::new()).build_http()
}

fn initialize(id: u64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
        "protocolVersion": PROTOCOL_VERSION,
        "capabilities": {},
        "clientInfo": {"name": "selftest", "version": "0"}
    }})
}

fn initialized() -> Value {
    json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
}

fn call_echo(id: u64, text: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": "echo", "arguments": {"text": text}}})
}

/// A bridge on `args` with `options`, a client for it, and its URL.
async fn started(args: Vec<OsString>, options: BridgeOptions) -> (Bridge, HttpClient, String) {
    let bridge = Bridge::start(SCRIPTED_SERVER, args, options);
    let url = bridge.url();
    (bridge, client(), url)
}

/// A request with the Accept header every client sends, then `headers`, and
/// `body` as JSON (with its Content-Type) when there is one.
fn request(
    method: Method,
    url: &str,
    headers: &[(&str, String)],
    body: Option<&Value>,
) -> Request<BoxBody<Bytes, hyper::Error>> {
    let mut builder = Request::builder()
        .method(method)
        .uri(url)
        .header("accept", "application/json, text/event-stream");
    for (name, value) in headers {
        builder = builder.header(*name, value.as_str());
    }
    let body = match body {
        Some(body) => {
            builder = builder.header("content-type", "application/json");
            Full::new(Bytes::from(body.to_string()))
                .map_err(|never| match never {})
                .boxed()
        }
        None => Empty::new().map_err(|never| match never {}).boxed(),
    };
    builder.body(body).expect("request")
}

/// Sends `request` and returns the response with its body unread.
async fn respond(
    client: &HttpClient,
    request: Request<BoxBody<Bytes, hyper::Error>>,
) -> Response<Incoming> {
    tokio::time::timeout(Duration::from_secs(20), client.request(request))
        .await
        .expect("response in time")
        .expect("response")
}

/// Reads the whole body of `response`.
async fn read_all(response: Response<Incoming>) -> (StatusCode, HeaderMap, String) {
    let (parts, body) = response.into_parts();
    let bytes = tokio::time::timeout(Duration::from_secs(20), body.collect())
        .await
        .expect("body in time")
        .expect("body")
        .to_bytes();
    (
        parts.status,
        parts.headers,
        String::from_utf8(bytes.to_vec()).expect("utf-8 body"),
    )
}

/// Sends one legacy request (protocol version header, `session` when given)
/// and returns the response with its body unread.
async fn send(
    client: &HttpClient,
    method: Method,
    url: &str,
    session: Option<&str>,
    body: Option<&Value>,
) -> Response<Incoming> {
    let mut headers = vec![("mcp-protocol-version", PROTOCOL_VERSION.to_string())];
    if let Some(session) = session {
        headers.push(("mcp-session-id", session.to_string()));
    }
    respond(client, request(method, url, &headers, body)).await
}

/// Sends one legacy request and reads the whole body.
async fn exchange(
    client: &HttpClient,
    method: Method,
    url: &str,
    session: Option<&str>,
    body: Option<&Value>,
) -> (StatusCode, HeaderMap, String) {
    read_all(send(client, method, url, session, body).await).await
}

/// POSTs `body` in `session`, reading the whole answer.
async fn post_in(
    client: &HttpClient,
    url: &str,
    session: &str,
    body: &Value,
) -> (StatusCode, HeaderMap, String) {
    exchange(client, Method::POST, url, Some(session), Some(body)).await
}

/// The legacy `tools/list` request.
fn list_tools(id: u64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"})
}

/// A body that must be one JSON-RPC object.
fn json_rpc(body: &str) -> Value {
    serde_json::from_str(body).expect("JSON-RPC body")
}

/// The JSON report a scripted tool returns as the text of `result`.
fn report_in(result: &Value) -> Value {
    serde_json::from_str(result["content"][0]["text"].as_str().expect("text")).expect("report")
}

/// The data of every event in an SSE text (data fields joined with LF).
fn sse_events(text: &str) -> Vec<String> {
    text.split("\n\n")
        .filter_map(|event| {
            let data: Vec<&str> = event
                .lines()
                .filter_map(|line| line.strip_prefix("data:"))
                .map(|data| data.strip_prefix(' ').unwrap_or(data))
                .collect();
            (!data.is_empty()).then(|| data.join("\n"))
        })
        .collect()
}

/// The JSON-RPC answer to `id` among SSE events.
fn answer_in(events: &[String], id: u64) -> Value {
    events
        .iter()
        .filter_map(|event| serde_json::from_str::<Value>(event).ok())
        .find(|value| {
            value.get("jsonrpc").is_some()
                && value["id"] == json!(id)
                && value.get("result").is_some()
        })
        .unwrap_or_else(|| panic!("no answer to {id} in {events:?}"))
}

fn content_type(headers: &HeaderMap) -> &str {
    headers
        .get("content-type")
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default()
}

/// Initializes a session over SSE and returns its id.
async fn open_session(client: &HttpClient, bridge: &Bridge) -> String {
    let url = bridge.url();
    let (status, headers, body) =
        exchange(client, Method::POST, &url, None, Some(&initialize(1))).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(content_type(&headers), "text/event-stream");
    let session = headers
        .get("mcp-session-id")
        .expect("session id header")
        .to_str()
        .expect("visible ASCII")
        .to_string();
    let result = &answer_in(&sse_events(&body), 1)["result"];
    assert_eq!(result["protocolVersion"], PROTOCOL_VERSION);
    let (status, _, body) = post_in(client, &url, &session, &initialized()).await;
    assert_eq!(status, StatusCode::ACCEPTED);
    assert!(body.is_empty());
    session
}

async fn wait_children_exited(bridge: &Bridge) {
    for _ in 0..500 {
        if bridge.children_alive() == 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("children still alive: {}", bridge.children_alive());
}

#[tokio::test]
async fn sse_session_lifecycle() {
    let (bridge, client, url) = started(scenario("basic"), BridgeOptions::default()).await;
    assert!(url.starts_with("http://127.0.0.1:") && url.ends_with("/mcp"));

    let session = open_session(&client, &bridge).await;
    assert!(session.bytes().all(|byte| (0x21..=0x7e).contains(&byte)));
    assert_eq!(bridge.children_alive(), 1);

    let list = list_tools(2);
    let (status, headers, body) = post_in(&client, &url, &session, &list).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(content_type(&headers), "text/event-stream");
    assert!(
        headers.get("mcp-session-id").is_none(),
        "only initialize carries it"
    );
    let tools = answer_in(&sse_events(&body), 2)["result"]["tools"].clone();
    let names: Vec<&str> = tools
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|tool| tool["name"].as_str())
        .collect();
    assert!(names.contains(&"echo"), "{names:?}");

    let (status, _, body) = post_in(&client, &url, &session, &call_echo(3, "hello")).await;
    assert_eq!(status, StatusCode::OK);
    let result = &answer_in(&sse_events(&body), 3)["result"];
    assert_eq!(result["content"][0]["text"], "hello");
    assert!(body.contains("id: "), "events carry ids: {body}");

    // Refusals.
    let (status, ..) = exchange(&client, Method::POST, &url, Some("nope"), Some(&list)).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, ..) = exchange(&client, Method::POST, &url, None, Some(&list)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (status, ..) = exchange(&client, Method::GET, &url, Some(&session), None).await;
    assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);

    // DELETE kills the child; the session is gone afterwards.
    let (status, ..) = exchange(&client, Method::DELETE, &url, Some(&session), None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(bridge.children_alive(), 0);
    let (status, ..) = post_in(&client, &url, &session, &list).await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    let requests = bridge.requests();
    let delete = requests
        .iter()
        .find(|request| request.method == "DELETE")
        .expect("DELETE recorded");
    assert_eq!(delete.header("Mcp-Session-Id"), Some(session.as_str()));
    let call = requests
        .iter()
        .find(|request| request.rpc_method().as_deref() == Some("tools/call"))
        .expect("call recorded");
    assert_eq!(call.header("mcp-protocol-version"), Some(PROTOCOL_VERSION));
    assert_eq!(
        call.json().expect("json body")["params"]["arguments"]["text"],
        "hello"
    );
    assert!(
        call.headers
            .iter()
            .all(|(name, _)| *name == name.to_ascii_lowercase())
    );
    assert_eq!(bridge.children_spawned(), 1);
}

#[tokio::test]
async fn json_mode_answers_with_the_answer_only() {
    let options = BridgeOptions {
        sse: false,
        session_ids: false,
        get_stream: false,
        ..BridgeOptions::default()
    };
    let (bridge, client, url) = started(scenario("noise"), options).await;

    let (status, headers, body) =
        exchange(&client, Method::POST, &url, None, Some(&initialize(1))).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(content_type(&headers), "application/json");
    assert!(headers.get("mcp-session-id").is_none());
    let answer = json_rpc(&body);
    assert_eq!(answer["id"], 1);
    assert_eq!(answer["result"]["protocolVersion"], PROTOCOL_VERSION);

    let (status, ..) = exchange(&client, Method::POST, &url, None, Some(&initialized())).await;
    assert_eq!(status, StatusCode::ACCEPTED);
    let (status, _, body) =
        exchange(&client, Method::POST, &url, None, Some(&call_echo(2, "hi"))).await;
    assert_eq!(status, StatusCode::OK);
    let answer: Value = serde_json::from_str(&body).expect("noise dropped");
    assert_eq!(answer["result"]["content"][0]["text"], "hi");

    let (status, ..) = exchange(&client, Method::DELETE, &url, None, None).await;
    assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(bridge.children_alive(), 1);
    drop(bridge);
}

#[tokio::test]
async fn noise_is_forwarded_as_events_and_does_not_end_the_stream() {
    let (_bridge, client, url) = started(scenario("noise"), BridgeOptions::default()).await;
    let (status, _, body) = exchange(&client, Method::POST, &url, None, Some(&initialize(1))).await;
    assert_eq!(status, StatusCode::OK);
    let events = sse_events(&body);
    assert!(events.iter().any(|event| event == "not json"), "{events:?}");
    assert!(
        events.iter().any(|event| event.is_empty()),
        "blank lines too"
    );
    // `{"id":1,"result":{}}` has no `jsonrpc`: noise, not the answer.
    let fake = events
        .iter()
        .position(|event| event == r#"{"id":1,"result":{}}"#)
        .expect("fake answer forwarded");
    let last: Value = serde_json::from_str(events.last().expect("events")).expect("answer");
    assert!(fake < events.len() - 1);
    assert_eq!(last["result"]["protocolVersion"], PROTOCOL_VERSION);
}

#[tokio::test]
async fn server_ping_arrives_on_the_call_stream_and_the_pong_is_accepted() {
    let (bridge, client, url) =
        started(scenario("ping-during-call"), BridgeOptions::default()).await;
    let session = open_session(&client, &bridge).await;

    let call = call_echo(2, "x");
    let response = send(&client, Method::POST, &url, Some(&session), Some(&call)).await;
    assert_eq!(response.status(), StatusCode::OK);
    let mut body = response.into_body();
    let mut text = String::new();
    let mut ponged = false;
    while let Some(frame) = tokio::time::timeout(Duration::from_secs(20), body.frame())
        .await
        .expect("event in time")
    {
        if let Ok(data) = frame.expect("frame").into_data() {
            text.push_str(std::str::from_utf8(&data).expect("utf-8"));
        }
        if !ponged {
            let ping = sse_events(&text)
                .iter()
                .filter_map(|event| serde_json::from_str::<Value>(event).ok())
                .find(|value| value["method"] == "ping");
            if let Some(ping) = ping {
                let pong = json!({"jsonrpc": "2.0", "id": ping["id"], "result": {}});
                let (status, _, body) = post_in(&client, &url, &session, &pong).await;
                assert_eq!(status, StatusCode::ACCEPTED);
                assert!(body.is_empty());
                ponged = true;
            }
        }
    }
    assert!(ponged, "the ping came first: {text}");
    let report = report_in(&answer_in(&sse_events(&text), 2)["result"]);
    assert_eq!(report["ping"]["ok"], true, "{report}");
    assert_eq!(report["ping"]["exact_id"], true, "{report}");
}

#[tokio::test]
async fn child_exit_ends_the_stream_without_answer_and_the_session() {
    let (bridge, client, url) = started(scenario("exit-on-call"), BridgeOptions::default()).await;
    let session = open_session(&client, &bridge).await;

    let (status, _, body) = post_in(&client, &url, &session, &call_echo(2, "x")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        sse_events(&body)
            .iter()
            .all(|event| !event.contains("\"result\"")),
        "{body}"
    );
    wait_children_exited(&bridge).await;
    let (status, ..) = post_in(&client, &url, &session, &call_echo(3, "x")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // A fresh initialize (without the id) starts a new child.
    let _second = open_session(&client, &bridge).await;
    assert_eq!(bridge.children_spawned(), 2);
    assert_eq!(bridge.children_alive(), 1);
}

#[tokio::test]
async fn get_stream_is_offered_once_and_ends_with_the_session() {
    let options = BridgeOptions {
        get_stream: true,
        ..BridgeOptions::default()
    };
    let (bridge, client, url) = started(scenario("basic"), options).await;
    let session = open_session(&client, &bridge).await;

    let get = send(&client, Method::GET, &url, Some(&session), None).await;
    assert_eq!(get.status(), StatusCode::OK);
    assert_eq!(content_type(get.headers()), "text/event-stream");
    let (status, ..) = exchange(&client, Method::GET, &url, Some(&session), None).await;
    assert_eq!(status, StatusCode::CONFLICT);

    let (status, ..) = exchange(&client, Method::DELETE, &url, Some(&session), None).await;
    assert_eq!(status, StatusCode::OK);
    let rest = tokio::time::timeout(Duration::from_secs(20), get.into_body().collect())
        .await
        .expect("GET stream ends")
        .expect("clean end")
        .to_bytes();
    assert!(rest.is_empty());
}

#[tokio::test]
async fn over_long_line_is_streamed_as_one_growing_event() {
    let flood = 17 * 1024 * 1024;
    let inline = json!({"on_call": {"echo": {"flood_bytes": flood, "no_reply": true}}});
    let args = vec![inline.to_string().into()];
    let (bridge, client, url) = started(args, BridgeOptions::default()).await;
    let session = open_session(&client, &bridge).await;

    let call = call_echo(2, "x");
    let response = send(&client, Method::POST, &url, Some(&session), Some(&call)).await;
    let mut body = response.into_body();
    let mut received = Vec::new();
    while received.len() < flood {
        let frame = tokio::time::timeout(Duration::from_secs(20), body.frame())
            .await
            .expect("flood in time")
            .expect("stream open")
            .expect("frame");
        if let Ok(data) = frame.into_data() {
            received.extend_from_slice(&data);
        }
    }
    let head = String::from_utf8_lossy(&received[..64]);
    assert!(head.starts_with("id: "), "{head}");
    let data_start = received
        .windows(6)
        .position(|window| window == b"data: ")
        .expect("data field")
        + 6;
    assert!(received[data_start..].iter().all(|&byte| byte == b'a'));
    drop(body);
    drop(bridge);
}

// ---------------------------------------------------------------------------
// The modern (2026-07-28) endpoint, the dual era and the legacy probe answers.
// ---------------------------------------------------------------------------

use smthrs_mcp_testkit::bridge::{LegacyProbe, ModernOptions};

const MODERN: &str = "2026-07-28";

/// The `_meta` every modern request carries.
fn meta(capabilities: Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        "io.modelcontextprotocol/clientInfo": {"name": "selftest", "version": "0"},
    })
}

/// A modern request: `params` plus `_meta` declaring no capabilities.
fn modern(id: Value, method: &str, params: Value) -> Value {
    let mut params = params;
    params["_meta"] = meta(json!({}));
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// The standard headers a modern client derives from a request body.
fn standard_headers(message: &Value) -> Vec<(&'static str, String)> {
    let mut headers = Vec::new();
    if let Some(version) =
        message["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"].as_str()
    {
        headers.push(("mcp-protocol-version", version.to_string()));
    }
    if let Some(method) = message["method"].as_str() {
        headers.push(("mcp-method", method.to_string()));
    }
    if let Some(name) = message["params"]["name"].as_str() {
        headers.push(("mcp-name", name.to_string()));
    }
    headers
}

/// POSTs `body` with exactly these headers (plus Accept and Content-Type).
async fn post_with(
    client: &HttpClient,
    url: &str,
    headers: &[(&str, String)],
    body: &Value,
) -> (StatusCode, HeaderMap, String) {
    let request = request(Method::POST, url, headers, Some(body));
    read_all(respond(client, request).await).await
}

/// A modern `tools/call` of `name` with `arguments`.
fn modern_call(id: u64, name: &str, arguments: Value) -> Value {
    modern(
        json!(id),
        "tools/call",
        json!({"name": name, "arguments": arguments}),
    )
}

/// POSTs a modern request with its standard headers.
async fn post_modern(
    client: &HttpClient,
    url: &str,
    message: &Value,
) -> (StatusCode, HeaderMap, String) {
    post_with(client, url, &standard_headers(message), message).await
}

/// The JSON-RPC answer (result or error) to `id` in a JSON or SSE body.
fn rpc_answer(headers: &HeaderMap, body: &str, id: &Value) -> Value {
    if content_type(headers) == "application/json" {
        return serde_json::from_str(body).expect("JSON body");
    }
    sse_events(body)
        .iter()
        .filter_map(|event| serde_json::from_str::<Value>(event).ok())
        .find(|value| {
            &value["id"] == id && (value.get("result").is_some() || value.get("error").is_some())
        })
        .unwrap_or_else(|| panic!("no answer to {id} in {body}"))
}

/// `value` in the base64 sentinel form (standard, padded), as a client sends a header.
fn sentinel(value: &str) -> String {
    format!("=?base64?{}?=", STANDARD.encode(value))
}

#[tokio::test]
async fn modern_routes_each_post_to_one_child_without_sessions() {
    let (bridge, client, url) = started(scenario("modern-basic"), BridgeOptions::modern()).await;

    let discover = modern(json!("probe-1"), "server/discover", json!({}));
    let (status, headers, body) = post_modern(&client, &url, &discover).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(content_type(&headers), "text/event-stream");
    assert!(headers.get("mcp-session-id").is_none());
    let result = &rpc_answer(&headers, &body, &json!("probe-1"))["result"];
    assert_eq!(result["supportedVersions"], json!([MODERN]));
    assert_eq!(result["resultType"], "complete");
    assert_eq!(result["cacheScope"], "private");
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "smthrs-mcp-scripted-server"
    );

    // Two requests in flight at once, each on its own POST, answered by id.
    let slow = modern_call(2, "slow", json!({"ms": 400}));
    let echo = modern_call(3, "echo", json!({"text": "hi"}));
    let (slow_reply, echo_reply) = tokio::join!(
        post_modern(&client, &url, &slow),
        post_modern(&client, &url, &echo)
    );
    let slow_answer = rpc_answer(&slow_reply.1, &slow_reply.2, &json!(2));
    let echo_answer = rpc_answer(&echo_reply.1, &echo_reply.2, &json!(3));
    assert_eq!(slow_answer["result"]["content"][0]["text"], "slept 400 ms");
    assert_eq!(echo_answer["result"]["content"][0]["text"], "hi");
    assert_eq!(echo_answer["result"]["resultType"], "complete");

    // GET and DELETE are 405, whatever session id a client sends.
    for method in [Method::GET, Method::DELETE] {
        let response = send(&client, method, &url, Some("stale"), None).await;
        assert_eq!(response.status(), StatusCode::METHOD_NOT_ALLOWED);
        assert_eq!(response.headers()["allow"], "POST");
    }
    assert_eq!(bridge.children_spawned(), 1);

    // A child that exits ends its stream without an answer; the next POST respawns it.
    let exit = modern_call(4, "exit", json!({"code": 0}));
    let (status, headers, body) = post_modern(&client, &url, &exit).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(content_type(&headers), "text/event-stream");
    assert!(!body.contains("\"result\""), "{body}");
    wait_children_exited(&bridge).await;
    let (status, headers, body) = post_modern(&client, &url, &discover).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        rpc_answer(&headers, &body, &json!("probe-1"))["result"]["resultType"],
        "complete"
    );
    assert_eq!(bridge.children_spawned(), 2);

    let requests = bridge.requests();
    let call = requests
        .iter()
        .find(|request| request.json().is_some_and(|body| body["id"] == 3))
        .expect("echo recorded");
    assert_eq!(call.header("Mcp-Method"), Some("tools/call"));
    assert_eq!(call.header("Mcp-Name"), Some("echo"));
    assert_eq!(call.header("MCP-Protocol-Version"), Some(MODERN));
    assert_eq!(call.status, Some(200));
    let get = requests.iter().find(|r| r.method == "GET").expect("GET");
    assert_eq!(get.header("mcp-session-id"), Some("stale"));
    assert_eq!(get.status, Some(405));
}

#[tokio::test]
async fn modern_maps_errors_and_header_mismatches_to_statuses() {
    for sse in [true, false] {
        let options = BridgeOptions {
            sse,
            ..BridgeOptions::modern()
        };
        let (bridge, client, url) = started(scenario("modern-basic"), options).await;
        let expect = |reply: &(StatusCode, HeaderMap, String), status: StatusCode, code: i64| {
            assert_eq!(reply.0, status, "sse {sse}: {}", reply.2);
            assert_eq!(content_type(&reply.1), "application/json");
            let answer = json_rpc(&reply.2);
            assert_eq!(answer["error"]["code"], code, "{answer}");
            answer
        };

        // Missing _meta: the child's -32602, as 400 with the id.
        let bare = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}});
        let headers = [
            ("mcp-protocol-version", MODERN.to_string()),
            ("mcp-method", "tools/list".to_string()),
        ];
        let reply = post_with(&client, &url, &headers, &bare).await;
        assert_eq!(expect(&reply, StatusCode::BAD_REQUEST, -32602)["id"], 1);

        // An unsupported version in both header and body: the child's -32022.
        let mut old = modern(json!(2), "tools/list", json!({}));
        old["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("2025-06-18");
        let reply = post_modern(&client, &url, &old).await;
        let answer = expect(&reply, StatusCode::BAD_REQUEST, -32022);
        assert_eq!(answer["error"]["data"]["supported"], json!([MODERN]));
        assert_eq!(answer["error"]["data"]["requested"], "2025-06-18");

        // Unknown method: 404 with the JSON-RPC body.
        let unknown = modern(json!(3), "resources/list", json!({}));
        let reply = post_modern(&client, &url, &unknown).await;
        expect(&reply, StatusCode::NOT_FOUND, -32601);

        // A legacy initialize: refused by the modern-only child with -32022.
        let reply = post_with(&client, &url, &[], &initialize(4)).await;
        let answer = expect(&reply, StatusCode::BAD_REQUEST, -32022);
        assert_eq!(answer["error"]["data"]["requested"], PROTOCOL_VERSION);

        // Header checks, before the child sees anything.
        let call = modern_call(5, "echo", json!({"text": "x"}));
        let all = standard_headers(&call);
        let without = |name: &str| -> Vec<(&'static str, String)> {
            all.iter().filter(|(n, _)| *n != name).cloned().collect()
        };
        let replace = |name: &str, value: &str| -> Vec<(&'static str, String)> {
            let mut headers = without(name);
            let name = all.iter().find(|(n, _)| *n == name).expect("header").0;
            headers.push((name, value.to_string()));
            headers
        };
        for (headers, header) in [
            (without("mcp-protocol-version"), "MCP-Protocol-Version"),
            (
                replace("mcp-protocol-version", "2025-11-25"),
                "MCP-Protocol-Version",
            ),
            (without("mcp-method"), "Mcp-Method"),
            (replace("mcp-method", "tools/list"), "Mcp-Method"),
            (without("mcp-name"), "Mcp-Name"),
            (replace("mcp-name", "add"), "Mcp-Name"),
        ] {
            let reply = post_with(&client, &url, &headers, &call).await;
            let answer = expect(&reply, StatusCode::BAD_REQUEST, -32020);
            assert_eq!(answer["id"], 5);
            assert_eq!(answer["error"]["data"]["header"], header, "{answer}");
        }
        // Mcp-Name in base64 form is decoded before the comparison.
        let reply = post_with(
            &client,
            &url,
            &replace("mcp-name", &sentinel("echo")),
            &call,
        )
        .await;
        assert_eq!(reply.0, StatusCode::OK, "{}", reply.2);
        assert_eq!(
            rpc_answer(&reply.1, &reply.2, &json!(5))["result"]["content"][0]["text"],
            "x"
        );

        let statuses: Vec<Option<u16>> = bridge.requests().iter().map(|r| r.status).collect();
        assert_eq!(
            statuses,
            [400, 400, 404, 400, 400, 400, 400, 400, 400, 400, 200].map(Some),
            "sse {sse}"
        );
    }
}

#[tokio::test]
async fn modern_checks_mcp_param_headers_against_the_listed_schema() {
    let (bridge, client, url) =
        started(scenario("modern-x-mcp-header"), BridgeOptions::modern()).await;
    let list = modern(json!(1), "tools/list", json!({}));
    let (status, ..) = post_modern(&client, &url, &list).await;
    assert_eq!(status, StatusCode::OK);
    let learnt = bridge.learnt_headers();
    assert_eq!(learnt["custom_headers"].len(), 6, "{learnt:?}");
    assert!(learnt["echo"].is_empty());

    let note = "line\r\nX-Injected: yes";
    let call = modern_call(
        2,
        "custom_headers",
        json!({"region": "eu-west", "priority": 3, "verbose": null, "empty_val": "",
            "method_val": "GET", "note": note, "query": "not mirrored"}),
    );
    let mut headers = standard_headers(&call);
    headers.extend([
        ("mcp-param-region", "eu-west".to_string()),
        ("mcp-param-priority", "3".to_string()),
        ("mcp-param-emptyval", String::new()),
        ("mcp-param-method", "GET".to_string()),
        ("mcp-param-note", sentinel(note)),
    ]);
    let (status, reply_headers, body) = post_with(&client, &url, &headers, &call).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let text = rpc_answer(&reply_headers, &body, &json!(2))["result"]["content"][0]["text"]
        .as_str()
        .expect("text")
        .to_string();
    assert!(text.contains("eu-west"), "{text}");

    let recorded = bridge.requests();
    let call_record = recorded.last().expect("call recorded");
    assert_eq!(
        call_record.header("mcp-param-note"),
        Some(sentinel(note).as_str())
    );
    assert!(call_record.header("x-injected").is_none());

    let variants: Vec<(Vec<(&'static str, String)>, &str)> = vec![
        (
            headers
                .iter()
                .filter(|(n, _)| *n != "mcp-param-priority")
                .cloned()
                .collect(),
            "Mcp-Param-Priority",
        ),
        (
            headers
                .iter()
                .map(|(n, v)| match *n {
                    "mcp-param-region" => (*n, "us-east".to_string()),
                    _ => (*n, v.clone()),
                })
                .collect(),
            "Mcp-Param-Region",
        ),
        (
            headers
                .iter()
                .cloned()
                .chain([("mcp-param-verbose", "true".to_string())])
                .collect(),
            "Mcp-Param-Verbose",
        ),
        (
            headers
                .iter()
                .cloned()
                .chain([("mcp-param-query", "not mirrored".to_string())])
                .collect(),
            "mcp-param-query",
        ),
        (
            headers
                .iter()
                .map(|(n, v)| match *n {
                    "mcp-param-note" => (*n, "=?base64?!!!?=".to_string()),
                    _ => (*n, v.clone()),
                })
                .collect(),
            "Mcp-Param-Note",
        ),
    ];
    for (headers, header) in variants {
        let (status, _, body) = post_with(&client, &url, &headers, &call).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{header}: {body}");
        let answer = json_rpc(&body);
        assert_eq!(answer["error"]["code"], -32020);
        assert_eq!(answer["error"]["data"]["header"], header, "{answer}");
    }
}

#[tokio::test]
async fn modern_session_id_is_sent_when_asked_and_never_required() {
    let options = BridgeOptions {
        modern: ModernOptions {
            send_session_id: true,
            ..ModernOptions::default()
        },
        ..BridgeOptions::modern()
    };
    let (bridge, client, url) = started(scenario("modern-basic"), options).await;
    let discover = modern(json!(1), "server/discover", json!({}));
    let (status, headers, _) = post_modern(&client, &url, &discover).await;
    assert_eq!(status, StatusCode::OK);
    let session = headers["mcp-session-id"]
        .to_str()
        .expect("ascii")
        .to_string();

    let list = modern(json!(2), "tools/list", json!({}));
    let mut with_session = standard_headers(&list);
    with_session.push(("mcp-session-id", "some-other-session".to_string()));
    let (status, headers, body) = post_with(&client, &url, &with_session, &list).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(headers["mcp-session-id"], session.as_str());
    let (status, headers, _) = post_modern(&client, &url, &list).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers["mcp-session-id"], session.as_str());
    assert_eq!(bridge.children_spawned(), 1);
}

#[tokio::test]
async fn modern_mrtr_round_trip_is_judged_by_the_server() {
    let (_bridge, client, url) =
        started(scenario("modern-mrtr-echo-state"), BridgeOptions::modern()).await;
    let with_caps = |id: u64, extra: Value| {
        let mut params = json!({"name": "confirm", "arguments": {"x": 1}});
        for (key, value) in extra.as_object().expect("object") {
            params[key] = value.clone();
        }
        params["_meta"] = meta(json!({"elicitation": {}}));
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
    };

    // Without the elicitation capability the server refuses with -32021 (400).
    let undeclared = modern_call(1, "confirm", json!({}));
    let (status, _, body) = post_modern(&client, &url, &undeclared).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let answer = json_rpc(&body);
    assert_eq!(answer["error"]["code"], -32021);
    assert_eq!(
        answer["error"]["data"]["requiredCapabilities"],
        json!({"elicitation": {}})
    );

    let first = with_caps(2, json!({}));
    let (status, headers, body) = post_modern(&client, &url, &first).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let result = rpc_answer(&headers, &body, &json!(2))["result"].clone();
    assert_eq!(result["resultType"], "input_required");
    assert_eq!(
        result["inputRequests"]["confirm"]["method"],
        "elicitation/create"
    );
    let state = result["requestState"].as_str().expect("state").to_string();
    assert!(
        state.contains('\u{2028}') && state.contains('\u{e9}'),
        "{state}"
    );

    let retry = with_caps(
        3,
        json!({"requestState": state, "inputResponses": {
            "confirm": {"action": "accept", "content": {"confirmed": true}}}}),
    );
    let (status, headers, body) = post_modern(&client, &url, &retry).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let result = rpc_answer(&headers, &body, &json!(3))["result"].clone();
    assert_eq!(result["resultType"], "complete");
    let report = report_in(&result);
    assert_eq!(report["mrtr"]["ok"], true, "{report}");
    let verdict = &report["mrtr"]["retries"][0];
    assert_eq!(verdict["state_echoed"], true);
    assert_eq!(verdict["new_id"], true);
    assert_eq!(verdict["responses_complete"], true);

    // A retry that re-uses the id and alters the state is reported, not refused.
    let (_, headers, body) = post_modern(&client, &url, &with_caps(4, json!({}))).await;
    let state = rpc_answer(&headers, &body, &json!(4))["result"]["requestState"]
        .as_str()
        .expect("state")
        .to_string();
    let bad = with_caps(
        4,
        json!({"requestState": format!("{state} "), "inputResponses": {}}),
    );
    let (_, headers, body) = post_modern(&client, &url, &bad).await;
    let report = report_in(&rpc_answer(&headers, &body, &json!(4))["result"]);
    let verdict = &report["mrtr"]["retries"][0];
    assert_eq!(report["mrtr"]["ok"], false, "{report}");
    assert_eq!(verdict["state_echoed"], false);
    assert_eq!(verdict["new_id"], false);
    assert_eq!(verdict["missing_keys"], json!(["confirm"]));
}

#[tokio::test]
async fn modern_dropped_stream_cancels_the_request_in_the_child() {
    for sse in [true, false] {
        let record = tempfile::tempdir().expect("tempdir");
        let record_path = record.path().join("record.jsonl");
        let inline = json!({"era": "modern", "honor_cancel": true});
        let args = vec![
            inline.to_string().into(),
            "--record".into(),
            record_path.clone().into(),
        ];
        let options = BridgeOptions {
            sse,
            modern: ModernOptions {
                status_wait: Duration::from_millis(50),
                ..ModernOptions::default()
            },
            ..BridgeOptions::modern()
        };
        let bridge = Bridge::start(SCRIPTED_SERVER, args, options);
        let client = client();

        let slow = modern_call(9, "slow", json!({"ms": 5000}));
        let headers = standard_headers(&slow);
        let pending = client.request(request(Method::POST, &bridge.url(), &headers, Some(&slow)));
        if sse {
            // SSE: the headers come after status_wait; the client drops the stream.
            let response = pending.await.expect("SSE headers after status_wait");
            assert_eq!(response.status(), StatusCode::OK);
            drop(response);
        } else {
            // JSON: nothing comes before the answer; the client gives up on the exchange.
            let gave_up = tokio::time::timeout(Duration::from_millis(300), pending).await;
            assert!(gave_up.is_err(), "no answer within 300 ms");
        }

        let mut cancelled = None;
        for _ in 0..500 {
            let lines = std::fs::read_to_string(&record_path).unwrap_or_default();
            cancelled = lines
                .lines()
                .filter_map(|line| serde_json::from_str::<Value>(line).ok())
                .find(|line| line["method"] == "notifications/cancelled");
            if cancelled.is_some() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let cancelled = cancelled.expect("the child saw notifications/cancelled");
        assert_eq!(cancelled["params"]["requestId"], 9, "sse {sse}");
        assert_eq!(bridge.aborted(), vec![json!(9)], "sse {sse}");
    }
}

#[tokio::test]
async fn dual_bridge_serves_legacy_sessions_beside_modern_requests() {
    let (bridge, client, url) = started(scenario("dual-basic"), BridgeOptions::dual()).await;

    let discover = modern(json!("probe"), "server/discover", json!({}));
    let (status, headers, body) = post_modern(&client, &url, &discover).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        rpc_answer(&headers, &body, &json!("probe"))["result"]["supportedVersions"],
        json!([MODERN])
    );

    let session = open_session(&client, &bridge).await;
    let (status, _, body) = post_in(&client, &url, &session, &list_tools(2)).await;
    assert_eq!(status, StatusCode::OK);
    let result = &answer_in(&sse_events(&body), 2)["result"];
    assert!(result.get("resultType").is_none(), "legacy: {result}");
    assert_eq!(bridge.children_spawned(), 2);

    let (status, ..) = exchange(&client, Method::GET, &url, None, None).await;
    assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
    let (status, ..) = exchange(&client, Method::DELETE, &url, Some(&session), None).await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn legacy_probe_answers_like_real_legacy_servers() {
    let discover = modern(json!("probe-7"), "server/discover", json!({}));
    let cases = [
        (LegacyProbe::Forward, 400, "text/plain", None),
        (LegacyProbe::PlainText400, 400, "text/plain", None),
        (
            LegacyProbe::JsonRpc400,
            400,
            "application/json",
            Some((-32000, Value::Null)),
        ),
        (
            LegacyProbe::MethodNotFound200,
            200,
            "application/json",
            Some((-32601, json!("probe-7"))),
        ),
        (LegacyProbe::NotFound404, 404, "", None),
        (LegacyProbe::MethodNotAllowed405, 405, "", None),
        (LegacyProbe::ServerError500, 500, "text/plain", None),
    ];
    for (probe, code, kind, error) in cases {
        let (bridge, client, url) =
            started(scenario("basic"), BridgeOptions::legacy_probe(probe)).await;
        let (status, headers, body) = post_modern(&client, &url, &discover).await;
        assert_eq!(status.as_u16(), code, "{probe:?}: {body}");
        assert_eq!(content_type(&headers), kind, "{probe:?}");
        match error {
            Some((code, id)) => {
                let answer = json_rpc(&body);
                assert_eq!(answer["error"]["code"], code, "{probe:?}");
                assert_eq!(answer["id"], id, "{probe:?}");
            }
            None if kind.is_empty() => assert!(body.is_empty(), "{probe:?}"),
            None => assert!(!body.is_empty()),
        }
        assert_eq!(
            bridge.children_spawned(),
            0,
            "{probe:?}: no child for a probe"
        );
        // The legacy handshake still works afterwards.
        let _session = open_session(&client, &bridge).await;
    }
}
