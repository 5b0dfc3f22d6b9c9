//! Regressions for what real servers were seen doing on the wire (see
//! `tests/interop_python.rs` and `tests/interop_rmcp.rs`), reproduced without them:
//! the scripted stdio server, or a hand-written hyper server replaying the exact
//! Streamable HTTP shapes.
//!
//! Seen on rmcp 3.11 (`StreamableHttpService`, default config, protocol 2025-06-18):
//! - every POST response stream, the initialize one included, opens with an SSE
//!   priming event whose data is empty (`data: ` with a trailing space), an `id`
//!   (`0`, then `0/<n>`) and `retry: 3000`; the reply event carries its `id` line
//!   *after* its `data` line (`1/<n>`);
//! - the standalone GET stream opens with the same priming event; a log notification
//!   sent while a call runs (`notifications/message`, though no `logging` capability
//!   was declared) goes there, not on the call's stream, and reuses the event id `0`;
//! - a cancelled call's stream (after `notifications/cancelled`) ends right after its
//!   priming event, with no reply;
//! - notifications get `202` with no content type; `DELETE` gets `202`.
//!
//! Seen on the Python SDK (mcp 2.3.0, `MCPServer`, uvicorn):
//! - SSE lines end in CRLF, and every event is named (`event: message`);
//! - notifications get `202` with `content-type: application/json` and an empty
//!   body; `DELETE` gets `200`, `application/json`, empty body;
//! - a cancelled call's stream (after `notifications/cancelled`) delivers a late
//!   error for the abandoned id, `{"code":-32800,"message":"Request cancelled"}`,
//!   then ends;
//! - `serverInfo.version` is the empty string; capabilities list prompts and
//!   resources too; tools carry `outputSchema` and `title`s (rmcp: `$schema`,
//!   `format`, `minimum`).
//!
//! Over stdio neither server sent anything but replies on stdout (no log lines, no
//! notification before the initialize reply), and both honoured the cancellation
//! (no late reply).

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use futures_util::future::BoxFuture;
use futures_util::stream::{self, StreamExt};
use http::{Method, Response};
use serde_json::{Value, json};
use smthrs_mcp::{Client, ErrorKind, Limits};
use smthrs_mcp_testkit::http_server::{
    Body, Recorded, TestServer, full, sse, status, streaming, with_header,
};
use support::{Collect, Recording, args, inline, text_of};

/// The late error did reach the client (reported privately, like any error reply to
/// a request of ours), and changed nothing else.
fn assert_late_error_seen(observer: &Collect) {
    let events = observer.events();
    assert!(
        events
            .iter()
            .any(|(name, text)| name == "remote-error" && text.starts_with("-32800")),
        "{events:?}"
    );
}

fn timeout_limits() -> Limits {
    let mut limits = Limits::default();
    limits.request_timeout_ms = 300;
    limits
}

/// A 5 s `slow` call past the 300 ms request timeout ([`timeout_limits`]) fails with
/// `Timeout` (and is cancelled).
async fn slow_call_times_out(client: &Client) {
    let error = client
        .call_tool("slow", args(json!({"ms": 5000})))
        .await
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Timeout, "{error}");
}

/// After the abandoned call, the session goes on: `echo` answers, and nothing ended it.
async fn session_goes_on(client: &Client) {
    let echoed = client
        .call_tool("echo", args(json!({"text": "after"})))
        .await
        .unwrap();
    assert_eq!(text_of(&echoed), "after");
    assert!(client.terminal_error().is_none());
}

// ----- stdio -----

/// The Python SDK's late `-32800 Request cancelled` error (seen over HTTP), here over
/// stdio: it answers an id the client already abandoned, so it is dropped and the
/// session goes on.
#[tokio::test]
async fn stdio_a_late_request_cancelled_error_for_an_abandoned_call_is_dropped() {
    let recording = Recording::new();
    let server = recording.attach(inline(json!({
        "on_call": {"slow": {
            "delay_ms": 600,
            "error": {"code": -32800, "message": "Request cancelled"}
        }}
    })));
    let observer = Collect::new();
    let client = Client::builder("late-cancel")
        .limits(timeout_limits())
        .diagnostics(observer.clone())
        .connect(server.stdio())
        .await
        .unwrap();
    slow_call_times_out(&client).await;
    // Let the late error arrive.
    tokio::time::sleep(Duration::from_millis(700)).await;
    session_goes_on(&client).await;
    assert_late_error_seen(&observer);
    let lines = recording.lines();
    let call_id = lines
        .iter()
        .find(|l| l["params"]["name"] == "slow")
        .map(|l| l["id"].clone())
        .expect("the slow call was sent");
    assert!(
        lines.iter().any(
            |l| l["method"] == "notifications/cancelled" && l["params"]["requestId"] == call_id
        ),
        "{lines:?}"
    );
    client.close().await;
}

/// The SDKs' handshake and catalog shapes: an empty `serverInfo.version`, extra
/// capabilities, `outputSchema`, `title`, `$schema`, `format`, `minimum`.
#[tokio::test]
async fn stdio_sdk_handshake_and_catalog_shapes_are_accepted() {
    let server = inline(json!({
        "serverInfo": {"name": "smthrs-interop-python", "version": ""},
        "capabilities": {
            "prompts": {"listChanged": false},
            "resources": {"listChanged": false, "subscribe": false},
            "tools": {"listChanged": false}
        },
        "tools": sdk_tools()
    }));
    let client = Client::builder("sdk-shapes")
        .connect(server.stdio())
        .await
        .unwrap();
    for name in ["echo", "add", "slow"] {
        assert!(client.catalog().get(name).is_some(), "missing {name}");
    }
    let sum = client
        .call_tool("add", args(json!({"a": 2, "b": 40})))
        .await
        .unwrap();
    assert_eq!(sum.structured_content.unwrap()["sum"], json!(42));
    client.close().await;
}

/// The tools as the two SDKs list them (Python's `echo`, rmcp's `add` and `slow`).
fn sdk_tools() -> Value {
    json!([
        {
            "description": "Returns the text unchanged.",
            "inputSchema": {
                "properties": {"text": {"title": "Text", "type": "string"}},
                "required": ["text"], "type": "object", "title": "echoArguments"
            },
            "name": "echo",
            "outputSchema": {
                "properties": {"result": {"title": "Result", "type": "string"}},
                "required": ["result"], "type": "object", "title": "echoOutput"
            }
        },
        {
            "name": "add",
            "description": "Adds two integers; the sum also comes back as structured content",
            "inputSchema": {
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "properties": {
                    "a": {"format": "int64", "type": "integer"},
                    "b": {"format": "int64", "type": "integer"}
                },
                "required": ["a", "b"], "type": "object"
            },
            "outputSchema": {
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "properties": {"sum": {"format": "int64", "type": "integer"}},
                "required": ["sum"], "type": "object"
            }
        },
        {
            "name": "slow",
            "description": "Sleeps for `ms` milliseconds, then says so",
            "inputSchema": {
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "properties": {"ms": {
                    "description": "How long to sleep, in milliseconds.",
                    "format": "uint64", "minimum": 0, "type": "integer"
                }},
                "required": ["ms"], "type": "object"
            }
        }
    ])
}

// ----- Streamable HTTP replays -----

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Sdk {
    Rmcp,
    Python,
}

/// rmcp sends `retry: 3000`; a short one here lets the test watch, within a few
/// hundred milliseconds, that an abandoned call's stream is not resumed.
const RETRY_MS: u64 = 100;

/// A hand-written server answering like `sdk` does on the wire.
struct Replay {
    sdk: Sdk,
    /// The `requestId` of every `notifications/cancelled` so far.
    cancelled: tokio::sync::watch::Sender<Vec<Value>>,
    /// rmcp numbers the POST streams of a session: priming `0/<n>`, reply `1/<n>`.
    streams: AtomicUsize,
    /// Set when a `slow` call arrives.
    slow_started: tokio::sync::watch::Sender<bool>,
}

impl Replay {
    async fn start(sdk: Sdk) -> (TestServer, Arc<Replay>) {
        let replay = Arc::new(Replay {
            sdk,
            cancelled: tokio::sync::watch::channel(Vec::new()).0,
            streams: AtomicUsize::new(0),
            slow_started: tokio::sync::watch::channel(false).0,
        });
        let handler = replay.clone();
        let server = TestServer::start(move |r: Recorded| {
            let replay = handler.clone();
            async move { replay.respond(r) }
        })
        .await;
        (server, replay)
    }

    fn session(&self, response: Response<Body>) -> Response<Body> {
        let id = match self.sdk {
            Sdk::Rmcp => "6276da8c-3c18-4f73-83eb-a31e23dd91ee",
            Sdk::Python => "a9111a11becf4625b3ed08ba7f994112",
        };
        with_header(response, "mcp-session-id", id)
    }

    /// An empty answer: to notifications (`202`) and to `DELETE`.
    fn empty(&self, code: u16) -> Response<Body> {
        match self.sdk {
            Sdk::Rmcp => status(code),
            Sdk::Python => self.session(full(code, "application/json", "")),
        }
    }

    fn priming(&self, stream: Option<usize>) -> String {
        match (self.sdk, stream) {
            (Sdk::Python, _) => String::new(),
            (Sdk::Rmcp, None) => format!("data: \nid: 0\nretry: {RETRY_MS}\n\n"),
            (Sdk::Rmcp, Some(n)) => format!("data: \nid: 0/{n}\nretry: {RETRY_MS}\n\n"),
        }
    }

    fn event(&self, stream: Option<usize>, message: &Value) -> String {
        match (self.sdk, stream) {
            (Sdk::Python, _) => format!("event: message\r\ndata: {message}\r\n\r\n"),
            (Sdk::Rmcp, None) => format!("data: {message}\n\n"),
            (Sdk::Rmcp, Some(n)) => format!("data: {message}\nid: 1/{n}\n\n"),
        }
    }

    /// A whole POST reply stream: priming event (rmcp), then the reply.
    fn reply(&self, stream: Option<usize>, message: Value) -> Response<Body> {
        let body = self.priming(stream) + &self.event(stream, &message);
        match self.sdk {
            Sdk::Rmcp => sse(&body),
            Sdk::Python => self.session(sse(&body)),
        }
    }

    fn respond(self: Arc<Self>, r: Recorded) -> Response<Body> {
        match r.method {
            Method::DELETE => match self.sdk {
                Sdk::Rmcp => self.empty(202),
                Sdk::Python => self.empty(200),
            },
            Method::GET => {
                // The standalone stream: rmcp's priming event; once `slow` runs, its
                // log notification, with the priming event's id again; then idle.
                let first = Bytes::from(self.priming(None));
                let later: BoxFuture<'static, Bytes> = match self.sdk {
                    Sdk::Rmcp => {
                        let mut started = self.slow_started.subscribe();
                        Box::pin(async move {
                            let _ = started.wait_for(|s| *s).await;
                            Bytes::from_static(
                                b"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\
                                  \"params\":{\"data\":\"sleeping 5000 ms\",\"level\":\"info\"}}\nid: 0\n\n",
                            )
                        })
                    }
                    Sdk::Python => Box::pin(std::future::pending()),
                };
                let body = stream::once(async move { first })
                    .chain(stream::once(later))
                    .chain(stream::pending())
                    .filter(|b| futures_util::future::ready(!b.is_empty()));
                streaming("text/event-stream", body)
            }
            Method::POST => self.post(&r),
            _ => status(405),
        }
    }

    fn post(self: Arc<Self>, r: &Recorded) -> Response<Body> {
        let body: Value = serde_json::from_slice(&r.body).expect("a JSON-RPC message");
        let method = body["method"].as_str().unwrap_or_default();
        let Some(id) = body.get("id").cloned() else {
            if method == "notifications/cancelled" {
                let cancelled = body["params"]["requestId"].clone();
                self.cancelled.send_modify(|ids| ids.push(cancelled));
            }
            return self.empty(202);
        };
        if method == "initialize" {
            let result = match self.sdk {
                Sdk::Rmcp => json!({
                    "protocolVersion": "2025-06-18",
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "rmcp", "version": "3.11.0"}
                }),
                Sdk::Python => json!({
                    "capabilities": {
                        "prompts": {"listChanged": false},
                        "resources": {"listChanged": false, "subscribe": false},
                        "tools": {"listChanged": false}
                    },
                    "protocolVersion": "2025-06-18",
                    "serverInfo": {"name": "smthrs-interop-python", "version": ""}
                }),
            };
            let reply = self.reply(None, json!({"jsonrpc": "2.0", "id": id, "result": result}));
            return match self.sdk {
                Sdk::Rmcp => self.session(reply),
                Sdk::Python => reply,
            };
        }
        let stream = Some(self.streams.fetch_add(1, Ordering::SeqCst));
        let result = match method {
            "tools/list" => json!({"tools": sdk_tools()}),
            "tools/call" => {
                let arguments = &body["params"]["arguments"];
                match body["params"]["name"].as_str().unwrap_or_default() {
                    "echo" => json!({
                        "content": [{"type": "text", "text": arguments["text"]}],
                        "isError": false
                    }),
                    "add" => {
                        let sum =
                            arguments["a"].as_i64().unwrap() + arguments["b"].as_i64().unwrap();
                        json!({
                            "content": [{"type": "text", "text": json!({"sum": sum}).to_string()}],
                            "structuredContent": {"sum": sum},
                            "isError": false
                        })
                    }
                    "slow" => return self.slow(stream, id),
                    other => panic!("unexpected tool {other}"),
                }
            }
            other => panic!("unexpected method {other}"),
        };
        self.reply(
            stream,
            json!({"jsonrpc": "2.0", "id": id, "result": result}),
        )
    }

    /// A call that only ends when cancelled: rmcp then ends the stream after its
    /// priming event, with no reply; Python sends a `-32800` error for the abandoned
    /// id, then ends it.
    fn slow(self: Arc<Self>, stream: Option<usize>, id: Value) -> Response<Body> {
        self.slow_started.send_replace(true);
        let head = Bytes::from(self.priming(stream));
        let tail = match self.sdk {
            Sdk::Rmcp => Bytes::new(),
            Sdk::Python => Bytes::from(self.event(
                stream,
                &json!({"jsonrpc": "2.0", "id": id,
                        "error": {"code": -32800, "message": "Request cancelled"}}),
            )),
        };
        let mut cancelled = self.cancelled.subscribe();
        let end = async move {
            // Bounded: a client that never cancels gets the tail after 10 s.
            let _ = tokio::time::timeout(
                Duration::from_secs(10),
                cancelled.wait_for(|ids| ids.contains(&id)),
            )
            .await;
            tail
        };
        let body = stream::once(async move { head })
            .chain(stream::once(end))
            .filter(|b| futures_util::future::ready(!b.is_empty()));
        let response = streaming("text/event-stream", body);
        match self.sdk {
            Sdk::Rmcp => response,
            Sdk::Python => self.session(response),
        }
    }
}

/// Connect, list, call, time out a call the server only ends on cancellation, call
/// again, close.
async fn replayed_session(sdk: Sdk) {
    let (server, replay) = Replay::start(sdk).await;
    let transport =
        smthrs_mcp::transport::http::HttpTransport::builder("replay", server.url().as_str())
            .build()
            .unwrap();
    let observer = Collect::new();
    // The transcripts are legacy sessions, replayed exactly: no probe.
    let client = Client::builder("replay")
        .protocol(smthrs_mcp::ProtocolMode::Legacy)
        .limits(timeout_limits())
        .diagnostics(observer.clone())
        .connect(transport)
        .await
        .expect("connect");
    for name in ["echo", "add", "slow"] {
        assert!(client.catalog().get(name).is_some(), "missing {name}");
    }
    let echoed = client
        .call_tool("echo", args(json!({"text": "hi"})))
        .await
        .unwrap();
    assert_eq!(text_of(&echoed), "hi");
    let sum = client
        .call_tool("add", args(json!({"a": 2, "b": 40})))
        .await
        .unwrap();
    assert_eq!(sum.structured_content.unwrap()["sum"], json!(42));

    slow_call_times_out(&client).await;
    // The cancellation reaches the server, which then ends the call's stream (rmcp)
    // or answers the abandoned id with an error (Python).
    let mut cancelled = replay.cancelled.subscribe();
    tokio::time::timeout(
        Duration::from_secs(5),
        cancelled.wait_for(|ids| !ids.is_empty()),
    )
    .await
    .expect("notifications/cancelled sent")
    .unwrap();
    tokio::time::sleep(Duration::from_millis(4 * RETRY_MS)).await;

    session_goes_on(&client).await;
    if sdk == Sdk::Python {
        assert_late_error_seen(&observer);
    }
    // The abandoned call's stream is not resumed, despite its priming event's retry.
    let resumed: Vec<_> = server
        .requests_with(Method::GET)
        .into_iter()
        .filter(|r| r.header("last-event-id").is_some())
        .collect();
    assert!(resumed.is_empty(), "{resumed:?}");

    tokio::time::timeout(Duration::from_secs(5), client.close())
        .await
        .expect("close returns");
    assert_eq!(server.requests_with(Method::DELETE).len(), 1);
}

#[tokio::test]
async fn rmcp_http_priming_events_and_a_cancelled_stream_ending_without_reply() {
    replayed_session(Sdk::Rmcp).await;
}

#[tokio::test]
async fn python_http_crlf_named_events_json_typed_202_and_a_late_cancelled_error() {
    replayed_session(Sdk::Python).await;
}
