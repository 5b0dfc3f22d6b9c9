//! Engine-level Streamable HTTP rules that need a server scripted per request:
//! the one-shot re-initialise after `404`, `DELETE` on close, `401`.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use http::Method;
use serde_json::{Value, json};
use smthrs_mcp::transport::http::HttpTransport;
use smthrs_mcp::{Client, ErrorKind, Limits};
use smthrs_mcp_testkit::http_server;
use smthrs_mcp_testkit::http_server::{
    TestServer, echo_catalog, initialize_result, json, rpc_result, status, with_header,
};

/// Connects a client named `name` to `server` over Streamable HTTP.
async fn connect(name: &str, server: &TestServer, limits: Limits) -> smthrs_mcp::Result<Client> {
    let transport = HttpTransport::builder(name, server.url()).build()?;
    Client::builder(name)
        .limits(limits)
        .connect(transport)
        .await
}

/// Connects a client named `name` to `server` with the default limits; the
/// connection must succeed.
async fn connected_to(name: &str, server: &TestServer) -> Client {
    connect(name, server, Limits::default())
        .await
        .expect("connect")
}

/// Calls `echo` with no arguments.
async fn echo(client: &Client) -> smthrs_mcp::Result<smthrs_mcp::ToolResult> {
    client.call_tool("echo", serde_json::Map::new()).await
}

/// What a scripted server answers.
type Response = http::Response<http_server::Body>;

/// A request to a stateful server read as a POST: its JSON-RPC message, the
/// message's id (`None` for a notification) and the session id it carries.
/// `None` for `DELETE` and `GET`, which [`not_posted`] answers.
fn posted(request: &http_server::Recorded) -> Option<(Value, Option<Value>, Option<String>)> {
    if matches!(request.method, Method::DELETE | Method::GET) {
        return None;
    }
    let (message, id) = message_of(request);
    let session = request.header("mcp-session-id").map(str::to_string);
    Some((message, id, session))
}

/// How a stateful server answers what is not a POST: `DELETE` ends the
/// session (200), `GET` finds no standalone stream (405).
fn not_posted(request: &http_server::Recorded) -> Response {
    if request.method == Method::DELETE {
        status(200)
    } else {
        status(405)
    }
}

/// The `initialize` answer of the stateful server `name` opening session `s<n>`.
fn open_session(id: Option<&Value>, name: &str, capabilities: Value, n: usize) -> Response {
    let answer = rpc_result(id, initialize_result(name, capabilities));
    with_header(answer, "mcp-session-id", &format!("s{n}"))
}

/// The JSON-RPC message a request carries, and its id (`None` for a notification).
fn message_of(request: &http_server::Recorded) -> (Value, Option<Value>) {
    let message: Value = serde_json::from_slice(&request.body).unwrap();
    let id = message.get("id").cloned();
    (message, id)
}

/// A minimal stateful MCP server: every `initialize` opens session `s<N>`; the
/// first `tools/call` on session `s1` is answered `404` (the session "expired").
/// With `change_catalog`, sessions after the first describe their tool differently.
async fn expiring_server(change_catalog: bool) -> (TestServer, Arc<AtomicUsize>) {
    expiring_server_with(change_catalog, Duration::ZERO, Duration::ZERO).await
}

/// [`expiring_server`], answering every `initialize` after the first only after
/// `reinit_delay`, and each `tools/call` on `s1` but the first with its `404`
/// after `expiry_delay`. A request without a session id (other than `initialize`) is
/// answered `400`, as real servers do.
async fn expiring_server_with(
    change_catalog: bool,
    reinit_delay: Duration,
    expiry_delay: Duration,
) -> (TestServer, Arc<AtomicUsize>) {
    let sessions = Arc::new(AtomicUsize::new(0));
    let counter = sessions.clone();
    let expired = Arc::new(AtomicUsize::new(0));
    let server = TestServer::start(move |request| {
        let sessions = counter.clone();
        let expired = expired.clone();
        async move {
            let Some((message, id, session)) = posted(&request) else {
                return not_posted(&request);
            };
            match message["method"].as_str() {
                Some("initialize") => {
                    let n = sessions.fetch_add(1, Ordering::SeqCst) + 1;
                    if n > 1 {
                        tokio::time::sleep(reinit_delay).await;
                    }
                    open_session(id.as_ref(), "expiring", json!({"tools": {}}), n)
                }
                Some("tools/list") => {
                    let n = sessions.load(Ordering::SeqCst);
                    let description = if change_catalog && n > 1 { "changed" } else { "echoes" };
                    let body = json!({"jsonrpc": "2.0", "id": id, "result": {"tools": [
                        {"name": "echo", "description": description,
                         "inputSchema": {"type": "object"}}
                    ]}});
                    json(&body.to_string())
                }
                Some(_) if session.is_none() => status(400),
                Some("tools/call") if session.as_deref() == Some("s1") => {
                    if expired.fetch_add(1, Ordering::SeqCst) > 0 {
                        tokio::time::sleep(expiry_delay).await;
                    }
                    status(404)
                }
                Some("tools/call") => {
                    let body = json!({"jsonrpc": "2.0", "id": id, "result": {
                        "content": [{"type": "text", "text": format!("served by {}", session.unwrap_or_default())}]
                    }});
                    json(&body.to_string())
                }
                _ if id.is_none() => status(202),
                _ => json(&json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "nope"}}).to_string()),
            }
        }
    })
    .await;
    (server, sessions)
}

/// Makes `count` `echo` calls at once on `runtime`; their results, or an
/// error when they did not all end `within`.
fn echo_calls_on(
    runtime: &tokio::runtime::Runtime,
    client: &Client,
    count: usize,
    within: Duration,
) -> Result<Vec<smthrs_mcp::Result<smthrs_mcp::ToolResult>>, tokio::time::error::Elapsed> {
    let calls = (0..count).map(|_| echo(client));
    // The timer is made inside the runtime: `timeout` needs its time driver.
    runtime.block_on(async {
        tokio::time::timeout(within, futures_util::future::join_all(calls)).await
    })
}

/// A client opened on one runtime answers calls made from another runtime: the
/// caller drives its POST, and what the HTTP client starts on the way (a new
/// connection's task) runs on the transport's runtime, which keeps running. A
/// connection whose task ran on the caller's runtime would be driven only while
/// that runtime runs: the calls after it, from the transport's own runtime while
/// the other one idles, would wait on it.
#[test]
fn calls_from_another_runtime_are_answered() {
    let home = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let (server, _) = home.block_on(expiring_server(false));
    let client = home
        .block_on(connect("elsewhere", &server, Limits::default()))
        .unwrap();
    // The first call on session s1 meets its expiry; later calls are served by s2.
    home.block_on(echo(&client)).unwrap();
    let other = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    for _ in 0..3 {
        let results =
            echo_calls_on(&other, &client, 4, Duration::from_secs(10)).expect("answered in time");
        for result in results {
            assert_eq!(result.unwrap().content[0]["text"], "served by s2");
        }
    }
    // `other` is idle now; the connections opened for its calls are pooled.
    let results = echo_calls_on(&home, &client, 8, Duration::from_secs(1))
        .expect("answered on the transport's runtime while the other one idles");
    assert!(results.iter().all(Result::is_ok));
    home.block_on(client.close());
    drop(other);
    drop(server);
}

#[tokio::test]
async fn expired_session_reinitialises_once_and_retries_with_the_same_catalog() {
    let (server, sessions) = expiring_server(false).await;
    let client = connected_to("expiring", &server).await;
    let result = echo(&client).await.expect("retried after re-initialise");
    assert_eq!(result.content[0]["text"], "served by s2");
    assert_eq!(sessions.load(Ordering::SeqCst), 2);
    // The retried call carried the new session id; the re-initialise carried none.
    let inits: Vec<_> = server
        .requests()
        .into_iter()
        .filter(|r| r.body.windows(12).any(|w| w == b"\"initialize\""))
        .collect();
    assert_eq!(inits.len(), 2);
    assert!(inits.iter().all(|r| r.header("mcp-session-id").is_none()));
    client.close().await;
    let deletes = server.requests_with(Method::DELETE);
    assert_eq!(deletes.len(), 1, "DELETE on close");
    assert_eq!(deletes[0].header("mcp-session-id"), Some("s2"));
}

/// Calls made while the re-initialise runs wait for the new session instead of
/// going out without a session id (which the server refuses with `400`).
#[tokio::test]
async fn calls_made_during_a_re_initialise_wait_for_the_new_session() {
    let (server, sessions) =
        expiring_server_with(false, Duration::from_millis(300), Duration::ZERO).await;
    let client = connected_to("expiring", &server).await;
    let first = tokio::spawn({
        let client = client.clone();
        async move { echo(&client).await }
    });
    // The first call's 404 has started the re-initialise, whose `initialize` is
    // answered only after 300 ms.
    while sessions.load(Ordering::SeqCst) < 2 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let during = echo(&client)
        .await
        .expect("made during the re-initialise, answered after it");
    assert_eq!(during.content[0]["text"], "served by s2");
    let first = first.await.unwrap().expect("retried after re-initialise");
    assert_eq!(first.content[0]["text"], "served by s2");
    assert_eq!(sessions.load(Ordering::SeqCst), 2);
    let without_session = server
        .requests()
        .into_iter()
        .filter(|r| r.method == Method::POST && r.header("mcp-session-id").is_none())
        .filter(|r| !r.body.windows(12).any(|w| w == b"\"initialize\""))
        .filter(|r| !r.body.windows(17).any(|w| w == b"\"server/discover\""))
        .count();
    assert_eq!(
        without_session, 0,
        "nothing but initialize (and the probe before any session) goes out without a session"
    );
    client.close().await;
}

/// Several calls in flight when the session expires each get a 404; the first
/// starts the re-initialise, the later ones, answered after it completed (stale:
/// for a session already replaced), are sent again with the new session rather
/// than failing or counting as a second expiry.
#[tokio::test]
async fn calls_in_flight_when_the_session_expires_are_all_sent_again() {
    let (server, sessions) =
        expiring_server_with(false, Duration::from_millis(20), Duration::from_millis(300)).await;
    let client = connected_to("expiring", &server).await;
    let calls: Vec<_> = (0..5)
        .map(|_| {
            let client = client.clone();
            tokio::spawn(async move { echo(&client).await })
        })
        .collect();
    for call in calls {
        let result = call
            .await
            .unwrap()
            .expect("sent again with the new session");
        assert_eq!(result.content[0]["text"], "served by s2");
    }
    assert_eq!(sessions.load(Ordering::SeqCst), 2, "one re-initialise");
    let refused = server
        .requests()
        .into_iter()
        .filter(|r| r.header("mcp-session-id") == Some("s1"))
        .filter(|r| r.body.windows(12).any(|w| w == b"\"tools/call\""))
        .count();
    assert_eq!(refused, 5, "all five went out on the old session first");
    client.close().await;
}

#[tokio::test]
async fn expired_session_with_a_changed_catalog_ends_the_session() {
    let (server, _) = expiring_server(true).await;
    let client = connected_to("expiring", &server).await;
    let error = echo(&client).await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::ConnectionClosed, "{error}");
    let later = echo(&client).await.unwrap_err();
    assert_eq!(later, error, "the terminal error is final");
    client.close().await;
}

#[tokio::test]
async fn unauthorized_handshake_is_unauthorized() {
    let server = TestServer::start(|_| async { status(401) }).await;
    let error = connect("locked", &server, Limits::default())
        .await
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Unauthorized);
}

/// A server that answers `notifications/initialized` with a 200 JSON body that has
/// no id (as the conformance suite's `initialize` server does), slowly, and refuses
/// `tools/list` if it arrives before that answer went out.
#[tokio::test]
async fn initialized_goes_out_first_and_a_body_answering_it_is_ignored() {
    use std::sync::atomic::AtomicBool;
    let answering_initialized = Arc::new(AtomicBool::new(false));
    let early_list = Arc::new(AtomicBool::new(false));
    let (answering, early) = (answering_initialized.clone(), early_list.clone());
    let server = TestServer::start(move |request| {
        let (answering, early) = (answering.clone(), early.clone());
        async move {
            if request.method != Method::POST {
                return status(405);
            }
            let (message, id) = message_of(&request);
            match message["method"].as_str() {
                Some("initialize") => rpc_result(
                    id.as_ref(),
                    initialize_result("strict", json!({"tools": {}})),
                ),
                Some("notifications/initialized") => {
                    answering.store(true, Ordering::SeqCst);
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                    answering.store(false, Ordering::SeqCst);
                    json(r#"{"jsonrpc":"2.0","result":{}}"#)
                }
                Some("tools/list") => {
                    if answering.load(Ordering::SeqCst) {
                        early.store(true, Ordering::SeqCst);
                    }
                    rpc_result(id.as_ref(), echo_catalog())
                }
                _ => status(202),
            }
        }
    })
    .await;
    let client = connect("strict", &server, Limits::default())
        .await
        .expect("an id-less body answering a notification is ignored");
    assert!(
        !early_list.load(Ordering::SeqCst),
        "tools/list overtook notifications/initialized"
    );
    assert_eq!(client.catalog().len(), 1);
    // Give the slow, id-less answer time to arrive: it must not end the session.
    tokio::time::sleep(std::time::Duration::from_millis(150)).await;
    assert!(
        client.terminal_error().is_none(),
        "{:?}",
        client.terminal_error()
    );
    client.close().await;
}

#[test]
fn a_bearer_token_is_never_handed_to_a_plain_http_proxy() {
    let refused = HttpTransport::builder("proxied", "http://127.0.0.1:9/mcp")
        .bearer_token(smthrs_mcp::secrecy::SecretString::from(
            "tok-SECRET".to_string(),
        ))
        .proxy("http://127.0.0.1:8")
        .build()
        .unwrap_err();
    assert_eq!(refused.kind(), ErrorKind::InvalidConfig);
    assert!(!format!("{refused} {refused:?}").contains("tok-SECRET"));
    // https endpoints tunnel through CONNECT: the proxy never sees the token.
    HttpTransport::builder("proxied", "https://127.0.0.1:9/mcp")
        .bearer_token(smthrs_mcp::secrecy::SecretString::from(
            "tok-SECRET".to_string(),
        ))
        .proxy("http://127.0.0.1:8")
        .build()
        .expect("https through CONNECT is allowed");
    // Nor an OAuth token: the chain's token goes on the same plain-http requests.
    let refused = HttpTransport::builder("proxied", "http://127.0.0.1:9/mcp")
        .oauth(smthrs_mcp::auth::OAuth::new())
        .proxy("http://127.0.0.1:8")
        .build()
        .unwrap_err();
    assert_eq!(refused.kind(), ErrorKind::InvalidConfig);
    assert!(refused.message().contains("OAuth tokens"), "{refused}");
    HttpTransport::builder("proxied", "https://127.0.0.1:9/mcp")
        .oauth(smthrs_mcp::auth::OAuth::new())
        .proxy("http://127.0.0.1:8")
        .build()
        .expect("https through CONNECT is allowed with OAuth");
}

#[tokio::test]
async fn a_request_answered_202_fails_instead_of_waiting_for_its_deadline() {
    let server = TestServer::start(|request| async move {
        if request.method != Method::POST {
            return status(405);
        }
        let (message, id) = message_of(&request);
        match message["method"].as_str() {
            Some("initialize") => {
                rpc_result(id.as_ref(), initialize_result("s", json!({"tools": {}})))
            }
            Some("tools/list") => rpc_result(id.as_ref(), echo_catalog()),
            _ => status(202),
        }
    })
    .await;
    let client = connected_to("accepting", &server).await;
    let error = echo(&client).await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::InvalidResponse, "{error}");
    assert!(
        client.terminal_error().is_none(),
        "only that request failed"
    );
    client.close().await;
}

/// Dropping the last client handle without `close()` still ends the HTTP
/// session on the server: the teardown task sends `DELETE` while the runtime runs.
#[tokio::test]
async fn dropping_the_client_without_close_still_sends_delete() {
    let (server, _) = expiring_server(false).await;
    let client = connected_to("expiring", &server).await;
    drop(client);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while server.requests_with(Method::DELETE).is_empty() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "no DELETE after drop"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let deletes = server.requests_with(Method::DELETE);
    assert_eq!(deletes.len(), 1);
    assert_eq!(deletes[0].header("mcp-session-id"), Some("s1"));
}

/// A server that never answers the standalone stream's GET (legal: the stream is
/// optional) does not stall the handshake: after `notifications/initialized`
/// the wait for the GET is short (at most a quarter of `handshakeTimeoutMs`),
/// so `tools/list` still fits its own handshake deadline.
#[tokio::test]
async fn a_get_stream_that_is_never_answered_does_not_stall_the_handshake() {
    let server = TestServer::start(|request| async move {
        if request.method == Method::GET {
            std::future::pending::<()>().await;
        }
        if request.method == Method::DELETE {
            return status(200);
        }
        let (message, id) = message_of(&request);
        match message["method"].as_str() {
            Some("initialize") => {
                let answer = rpc_result(
                    id.as_ref(),
                    initialize_result("silent-get", json!({"tools": {}})),
                );
                with_header(answer, "mcp-session-id", "g1")
            }
            Some("tools/list") => rpc_result(id.as_ref(), echo_catalog()),
            _ => status(202),
        }
    })
    .await;
    let mut limits = Limits::default();
    limits.handshake_timeout_ms = 1_000;
    let client = connect("silent-get", &server, limits)
        .await
        .expect("connects although the GET is never answered");
    assert!(client.catalog().get("echo").is_some());
    assert_eq!(server.requests_with(Method::GET).len(), 1);
    client.close().await;
}

/// A server that speaks only the 2024-11-05 HTTP+SSE transport: its URL serves the
/// `GET` event stream (announcing the POST endpoint) and refuses a POST, with `405`
/// (Python's `sse_app`) or `404` (an Express app). The error says which transport
/// the server may speak, keeping its kind and status.
#[tokio::test]
async fn an_http_sse_only_server_is_named_in_the_error() {
    for refusal in [405u16, 404] {
        let server = TestServer::start(move |request| async move {
            if request.method == Method::GET {
                return http_server::sse("event: endpoint\ndata: /messages?session_id=1\n\n");
            }
            status(refusal)
        })
        .await;
        let error = connect("old-sse", &server, Limits::default())
            .await
            .unwrap_err();
        assert_eq!(error.kind(), ErrorKind::HttpStatus, "{error}");
        assert_eq!(error.http_status(), Some(refusal));
        assert_eq!(
            error.message(),
            format!(
                "server \"old-sse\" answered HTTP {refusal}; a server that answers initialize so \
                 may speak only the 2024-11-05 HTTP+SSE transport, which this client does not (it \
                 speaks Streamable HTTP)"
            )
        );
    }
    // Another refusal of initialize carries no such guess.
    let server = TestServer::start(|_| async { status(400) }).await;
    let error = connect("plain", &server, Limits::default())
        .await
        .unwrap_err();
    assert_eq!(error.message(), "server \"plain\" answered HTTP 400");
}

/// A stateful server declaring resource subscriptions whose session `s1`
/// expires at the first `tools/call`; `resources/subscribe` on a later
/// session answers `resubscribe` (a result or an error). Records each
/// `resources/subscribe` as (session, uri).
type Subscribed = Arc<std::sync::Mutex<Vec<(String, String)>>>;

async fn subscribing_server(resubscribe: Value) -> (TestServer, Subscribed) {
    let sessions = Arc::new(AtomicUsize::new(0));
    let subscribed = Arc::new(std::sync::Mutex::new(Vec::new()));
    let record = subscribed.clone();
    let server = TestServer::start(move |request| {
        let sessions = sessions.clone();
        let record = record.clone();
        let resubscribe = resubscribe.clone();
        async move {
            let Some((message, id, session)) = posted(&request) else {
                return not_posted(&request);
            };
            match message["method"].as_str() {
                Some("tools/list") => rpc_result(id.as_ref(), echo_catalog()),
                Some("initialize") => {
                    let n = sessions.fetch_add(1, Ordering::SeqCst) + 1;
                    let capabilities = json!({"tools": {}, "resources": {"subscribe": true}});
                    open_session(id.as_ref(), "subscribing", capabilities, n)
                }
                Some(_) if session.is_none() => status(400),
                Some("tools/call") if session.as_deref() == Some("s1") => status(404),
                Some("tools/call") => rpc_result(id.as_ref(), json!({"content": []})),
                Some("resources/subscribe") => {
                    let uri = message["params"]["uri"].as_str().unwrap_or("").to_string();
                    let session = session.unwrap_or_default();
                    record.lock().unwrap().push((session.clone(), uri));
                    if session == "s1" {
                        rpc_result(id.as_ref(), json!({}))
                    } else {
                        let mut body = resubscribe;
                        body["jsonrpc"] = json!("2.0");
                        body["id"] = id.clone().unwrap_or(Value::Null);
                        json(&body.to_string())
                    }
                }
                _ if id.is_none() => status(202),
                _ => rpc_result(id.as_ref(), json!({})),
            }
        }
    })
    .await;
    (server, subscribed)
}

/// Legacy resource subscriptions live in the server's session: after a
/// re-initialise they are made again on the new one; when that fails, the
/// subscriptions holding resources end (abruptly, saying why).
#[tokio::test]
async fn resource_subscriptions_are_renewed_after_a_re_initialise() {
    use smthrs_mcp::events::{Interest, SubscriptionEnd};
    for (resubscribe, renewed) in [
        (json!({"result": {}}), true),
        (
            json!({"error": {"code": -32603, "message": "secret server text"}}),
            false,
        ),
    ] {
        let (server, subscribed) = subscribing_server(resubscribe).await;
        let client = connected_to("subscribing", &server).await;
        let mut sub = client
            .subscribe(Interest::new().resource("file:///watched"))
            .await
            .unwrap();
        // The call meets s1's expiry: re-initialised, then answered by s2.
        echo(&client).await.expect("retried after re-initialise");
        let again = || {
            subscribed
                .lock()
                .unwrap()
                .iter()
                .any(|(session, uri)| session == "s2" && uri == "file:///watched")
        };
        for _ in 0..300 {
            if again() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(again(), "subscribed again on the new session");
        // A second subscription waits for the renewal to finish (one legacy
        // subscribe or release at a time), then sends its own subscribe.
        let other = client
            .subscribe(Interest::new().resource("file:///other"))
            .await;
        if renewed {
            assert!(other.is_ok(), "{other:?}");
            assert!(sub.end().is_none());
        } else {
            // This server refuses every subscribe on s2: sent, and refused.
            assert!(other.is_err());
            let next = tokio::time::timeout(Duration::from_secs(10), sub.next()).await;
            assert_eq!(next.expect("ended in time"), None);
            match sub.end() {
                Some(SubscriptionEnd::Abrupt(error)) => {
                    assert!(error.message().contains("lost its session"), "{error}");
                    assert!(!error.message().contains("secret"), "{error}");
                }
                other => panic!("{other:?}"),
            }
            // Nothing stays counted after the loss: asking again subscribes again.
            let before = subscribed.lock().unwrap().len();
            let _ = client
                .subscribe(Interest::new().resource("file:///watched"))
                .await;
            assert_eq!(subscribed.lock().unwrap().len(), before + 1);
        }
        client.close().await;
    }
}
