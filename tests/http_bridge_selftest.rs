//! Self-test of the Streamable HTTP bridge (`tests/support/http_bridge.rs`),
//! driven by a plain hyper client so it never depends on the library under test.

#[path = "support/http_bridge.rs"]
mod http_bridge;

use std::ffi::OsString;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty, Full};
use hyper::body::Incoming;
use hyper::header::HeaderMap;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde_json::{Value, json};

use http_bridge::{Bridge, BridgeOptions};

type HttpClient = Client<HttpConnector, http_body_util::combinators::BoxBody<Bytes, hyper::Error>>;

const PROTOCOL_VERSION: &str = "2025-06-18";

fn scripted_server() -> &'static str {
    env!("CARGO_BIN_EXE_smthrs-mcp-scripted-server")
}

fn scenario(name: &str) -> Vec<OsString> {
    let path = format!(
        "{}/testdata/scenarios/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    vec![path.into()]
}

async fn start(args: Vec<OsString>, options: BridgeOptions) -> Bridge {
    Bridge::start(scripted_server(), args, options).await
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

/// Sends one request and returns the response with its body unread.
async fn send(
    client: &HttpClient,
    method: Method,
    url: &str,
    session: Option<&str>,
    body: Option<&Value>,
) -> Response<Incoming> {
    let mut builder = Request::builder()
        .method(method)
        .uri(url)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", PROTOCOL_VERSION);
    if let Some(session) = session {
        builder = builder.header("mcp-session-id", session);
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
    let request = builder.body(body).expect("request");
    tokio::time::timeout(Duration::from_secs(20), client.request(request))
        .await
        .expect("response in time")
        .expect("response")
}

/// Sends one request and reads the whole body.
async fn exchange(
    client: &HttpClient,
    method: Method,
    url: &str,
    session: Option<&str>,
    body: Option<&Value>,
) -> (StatusCode, HeaderMap, String) {
    let response = send(client, method, url, session, body).await;
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
    let (status, headers, body) = exchange(
        client,
        Method::POST,
        &bridge.url(),
        None,
        Some(&initialize(1)),
    )
    .await;
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
    let (status, _, body) = exchange(
        client,
        Method::POST,
        &bridge.url(),
        Some(&session),
        Some(&initialized()),
    )
    .await;
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
    let bridge = start(scenario("basic"), BridgeOptions::default()).await;
    let client = client();
    let url = bridge.url();
    assert!(url.starts_with("http://127.0.0.1:") && url.ends_with("/mcp"));

    let session = open_session(&client, &bridge).await;
    assert!(session.bytes().all(|byte| (0x21..=0x7e).contains(&byte)));
    assert_eq!(bridge.children_alive(), 1);

    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let (status, headers, body) =
        exchange(&client, Method::POST, &url, Some(&session), Some(&list)).await;
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

    let (status, _, body) = exchange(
        &client,
        Method::POST,
        &url,
        Some(&session),
        Some(&call_echo(3, "hello")),
    )
    .await;
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
    let (status, ..) = exchange(&client, Method::POST, &url, Some(&session), Some(&list)).await;
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
    };
    let bridge = start(scenario("noise"), options).await;
    let client = client();
    let url = bridge.url();

    let (status, headers, body) =
        exchange(&client, Method::POST, &url, None, Some(&initialize(1))).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(content_type(&headers), "application/json");
    assert!(headers.get("mcp-session-id").is_none());
    let answer: Value = serde_json::from_str(&body).expect("one JSON object");
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
    let bridge = start(scenario("noise"), BridgeOptions::default()).await;
    let client = client();
    let (status, _, body) = exchange(
        &client,
        Method::POST,
        &bridge.url(),
        None,
        Some(&initialize(1)),
    )
    .await;
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
    let bridge = start(scenario("ping-during-call"), BridgeOptions::default()).await;
    let client = client();
    let url = bridge.url();
    let session = open_session(&client, &bridge).await;

    let response = send(
        &client,
        Method::POST,
        &url,
        Some(&session),
        Some(&call_echo(2, "x")),
    )
    .await;
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
                let (status, _, body) =
                    exchange(&client, Method::POST, &url, Some(&session), Some(&pong)).await;
                assert_eq!(status, StatusCode::ACCEPTED);
                assert!(body.is_empty());
                ponged = true;
            }
        }
    }
    assert!(ponged, "the ping came first: {text}");
    let result = &answer_in(&sse_events(&text), 2)["result"];
    let report: Value =
        serde_json::from_str(result["content"][0]["text"].as_str().expect("text")).expect("report");
    assert_eq!(report["ping"]["ok"], true, "{report}");
    assert_eq!(report["ping"]["exact_id"], true, "{report}");
}

#[tokio::test]
async fn child_exit_ends_the_stream_without_answer_and_the_session() {
    let bridge = start(scenario("exit-on-call"), BridgeOptions::default()).await;
    let client = client();
    let url = bridge.url();
    let session = open_session(&client, &bridge).await;

    let (status, _, body) = exchange(
        &client,
        Method::POST,
        &url,
        Some(&session),
        Some(&call_echo(2, "x")),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        sse_events(&body)
            .iter()
            .all(|event| !event.contains("\"result\"")),
        "{body}"
    );
    wait_children_exited(&bridge).await;
    let (status, ..) = exchange(
        &client,
        Method::POST,
        &url,
        Some(&session),
        Some(&call_echo(3, "x")),
    )
    .await;
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
    let bridge = start(scenario("basic"), options).await;
    let client = client();
    let url = bridge.url();
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
    let bridge = start(vec![inline.to_string().into()], BridgeOptions::default()).await;
    let client = client();
    let url = bridge.url();
    let session = open_session(&client, &bridge).await;

    let response = send(
        &client,
        Method::POST,
        &url,
        Some(&session),
        Some(&call_echo(2, "x")),
    )
    .await;
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
