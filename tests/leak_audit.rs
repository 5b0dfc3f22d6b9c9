//! The leak audit: every error path the crate has, run with secrets planted where a
//! real deployment keeps them (argv, the child's environment, its stderr, URL
//! userinfo and query, the bearer token, remote error bodies, session ids, redirect
//! targets), and not one of them may appear in any `Display`, `Debug`, `message()`,
//! `source()` chain, panic message, or CLI output.
//!
//! The private diagnostics observer is the one place remote error bodies may go;
//! its stderr tail must still have the child's environment values and
//! credential-shaped text redacted.

mod support;

use std::error::Error as StdError;
use std::fmt::Debug;
use std::sync::Arc;
use std::time::Duration;

use secrecy::SecretString;
use serde_json::{Value, json};
use smthrs_mcp::config::{decode_server_file, load_server_file};
use smthrs_mcp::transport::http::HttpTransport;
use smthrs_mcp::{Client, EgressGrants, Error, ErrorKind, Limits, StdioCommand};
use smthrs_mcp_testkit::http_server;
use smthrs_mcp_testkit::http_server::{TestServer, full, status, with_header};
use support::{Collect, args, inline};

// ----- the planted secrets (each unique, none a substring of another) -----

/// An argument of the child process.
const ARGV_SECRET: &str = "argv-secret-Qz7wK2pL9x";
/// The program path of a spawn that fails.
const PROGRAM_SECRET: &str = "program-secret-Dm3hR6";
/// The value of an environment variable given to the child.
const ENV_SECRET: &str = "env-secret-Vb4nM8rT1y";
/// A credential-shaped token the child writes to stderr.
const STDERR_TOKEN: &str = "ghp_Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2";
/// A password the child writes to stderr as `password=...`.
const STDERR_PASSWORD: &str = "stderr-pw-Ka9sL2dF";
/// The password in a URL's userinfo.
const USERINFO_SECRET: &str = "userinfo-pw-Hk3sD9";
/// A URL query parameter.
const QUERY_SECRET: &str = "query-key-Lp2xC7";
/// The bearer token.
const BEARER_SECRET: &str = "bearer-tok-Zr5vB1";
/// The body of an HTTP error response.
const BODY_SECRET: &str = "remote-body-Jt6yN4";
/// The message and data of a JSON-RPC error reply.
const RPC_SECRET: &str = "rpc-error-Wq8eF3";
/// A redirect target's query.
const REDIRECT_SECRET: &str = "redirect-q-Gh5tY2";
/// A session id the server sends.
const SESSION_SECRET: &str = "session-id-Pn4bV7";
/// Text of an over-long or malformed frame.
const FRAME_SECRET: &str = "frame-text-Cx1zA8";
/// A proxy's credentials.
const PROXY_SECRET: &str = "proxy-pw-Ue6iO0";

/// An OAuth client secret.
const CLIENT_SECRET: &str = "client-secret-Rt3yU8";
/// An authorization code.
const CODE_SECRET: &str = "auth-code-Mw2qZ6";
/// An access token the authorization server issues.
const ACCESS_SECRET: &str = "access-tok-Hy7uJ1";
/// A private key's text.
const KEY_SECRET: &str = "private-key-Nb5vC9";
/// A refresh token the authorization server issued.
const REFRESH_SECRET: &str = "refresh-tok-Xe4wS5";

const ALL: &[&str] = &[
    REFRESH_SECRET,
    CLIENT_SECRET,
    CODE_SECRET,
    ACCESS_SECRET,
    KEY_SECRET,
    ARGV_SECRET,
    PROGRAM_SECRET,
    ENV_SECRET,
    STDERR_TOKEN,
    STDERR_PASSWORD,
    USERINFO_SECRET,
    QUERY_SECRET,
    BEARER_SECRET,
    BODY_SECRET,
    RPC_SECRET,
    REDIRECT_SECRET,
    SESSION_SECRET,
    FRAME_SECRET,
    PROXY_SECRET,
    "Qz7wK2pL9x", // the random half of the argv secret, on its own
    // The JWT bearer grants (auth::jwt_bearer).
    ID_TOKEN_SECRET,
    ID_JAG_SECRET,
    WIF_SECRET,
    IDP_CLIENT_SECRET,
];

/// A user's ID token (enterprise-managed authorization).
const ID_TOKEN_SECRET: &str = "id-token-Xe4rT7";
/// The ID-JAG an identity provider issues.
const ID_JAG_SECRET: &str = "id-jag-Bn6mK2";
/// A workload identity assertion.
const WIF_SECRET: &str = "wif-assert-Qa9sW3";
/// This client's secret at the identity provider.
const IDP_CLIENT_SECRET: &str = "idp-secret-Lk8jH5";

/// Fails when any planted secret appears in `text`.
fn assert_clean(what: &str, text: &str) {
    for secret in ALL {
        assert!(!text.contains(secret), "{what} leaks {secret:?}: {text}");
    }
}

/// Every rendering of an error: `Display`, `Debug`, `message()`, the `source()`
/// chain, and the message of a panic caused by `unwrap()` / `expect()` on it.
#[allow(clippy::unnecessary_literal_unwrap)]
fn audit_error<E>(what: &str, error: &E)
where
    E: StdError + Clone + Send + 'static,
{
    assert_clean(what, &error.to_string());
    assert_clean(what, &format!("{error:?}"));
    assert_clean(what, &format!("{error:#?}"));
    let mut source = error.source();
    while let Some(inner) = source {
        assert_clean(what, &inner.to_string());
        assert_clean(what, &format!("{inner:?}"));
        source = inner.source();
    }
    for panicking in [
        Box::new({
            let error = error.clone();
            move || {
                Err::<(), E>(error).unwrap();
            }
        }) as Box<dyn FnOnce() + Send>,
        Box::new({
            let error = error.clone();
            move || {
                Err::<(), E>(error).expect("the session failed");
            }
        }),
    ] {
        let payload = std::panic::catch_unwind(std::panic::AssertUnwindSafe(panicking))
            .expect_err("it panics");
        let message = payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        assert!(!message.is_empty());
        assert_clean(&format!("{what} (panic message)"), &message);
    }
}

/// The crate's `Error`: all of the above, plus `message()` and its kind.
fn audit(what: &str, error: &Error, kind: ErrorKind) {
    assert_eq!(error.kind(), kind, "{what}: {error}");
    assert_clean(what, error.message());
    audit_error(what, error);
}

fn audit_debug(what: &str, value: &impl Debug) {
    assert_clean(what, &format!("{value:?}"));
    assert_clean(what, &format!("{value:#?}"));
}

/// The observer's stderr tails: private, but still redacted.
fn audit_tails(what: &str, observer: &Collect) {
    for (name, text) in observer.events() {
        if name == "stderr-tail" {
            for secret in [ENV_SECRET, STDERR_TOKEN, STDERR_PASSWORD] {
                assert!(
                    !text.contains(secret),
                    "{what}: tail keeps {secret:?}: {text}"
                );
            }
        }
    }
}

/// Lines a leaky child writes to stderr.
fn leaky_stderr() -> Vec<String> {
    vec![
        format!("starting with SERVICE_API_KEY={ENV_SECRET}"),
        format!("token {STDERR_TOKEN} loaded"),
        format!("db password={STDERR_PASSWORD} port=5432"),
        format!("config value {ENV_SECRET} echoed bare"),
    ]
}

/// The scripted server with `scenario` (plus the argv secret) and the env secret.
fn leaky(mut scenario: Value) -> StdioCommand {
    let map = scenario.as_object_mut().unwrap();
    map.insert("description".into(), json!(ARGV_SECRET));
    map.entry("stderr_lines").or_insert(json!(leaky_stderr()));
    inline(scenario)
        .stdio()
        .env("SERVICE_API_KEY", ENV_SECRET)
        .env_secret("OTHER_TOKEN", SecretString::from(ENV_SECRET))
}

fn short_limits() -> Limits {
    let mut limits = Limits::default();
    limits.handshake_timeout_ms = 2_000;
    limits.request_timeout_ms = 2_000;
    limits
}

/// Connects `command` with an observer; returns the client or the error.
async fn connect(
    name: &str,
    command: StdioCommand,
    limits: Limits,
) -> (Result<Client, Error>, Arc<Collect>) {
    audit_debug("StdioCommand", &command);
    let observer = Collect::new();
    let builder = Client::builder(name)
        .limits(limits)
        .diagnostics(observer.clone());
    audit_debug("ClientBuilder", &builder);
    (builder.connect(command).await, observer)
}

// ----- stdio: spawn, handshake, calls, the child's exit -----

#[tokio::test]
async fn spawn_failure() {
    let program = format!("/nonexistent-smthrs-leak-audit/{PROGRAM_SECRET}");
    let command = StdioCommand::new(program)
        .arg(ARGV_SECRET)
        .arg(format!("--api-key={ARGV_SECRET}"))
        .env("SERVICE_API_KEY", ENV_SECRET);
    let error = Client::builder("spawn").connect(command).await.unwrap_err();
    audit("spawn failure", &error, ErrorKind::SpawnFailed);
}

#[tokio::test]
async fn handshake_timeout() {
    let mut limits = short_limits();
    limits.handshake_timeout_ms = 300;
    let (result, observer) =
        connect("stall", leaky(json!({"initialize": "never_reply"})), limits).await;
    audit(
        "handshake timeout",
        &result.unwrap_err(),
        ErrorKind::Timeout,
    );
    audit_tails("handshake timeout", &observer);
    // Not vacuous: the tail arrived, and it was redacted rather than dropped.
    let tails: Vec<_> = observer
        .events()
        .into_iter()
        .filter(|(name, _)| name == "stderr-tail")
        .collect();
    assert_eq!(tails.len(), 1, "{tails:?}");
    assert!(tails[0].1.contains("[REDACTED]") && tails[0].1.contains("starting with"));
}

#[test]
fn the_audit_catches_a_planted_secret() {
    for secret in ALL {
        let caught = std::panic::catch_unwind(|| assert_clean("probe", &format!("x{secret}y")));
        assert!(caught.is_err(), "{secret} not caught");
    }
}

#[tokio::test]
async fn request_timeout_and_the_session_after_it() {
    let mut limits = short_limits();
    limits.request_timeout_ms = 300;
    let (client, observer) = connect(
        "slow",
        leaky(json!({"on_call": {"echo": {"stderr": format!("Authorization: Bearer {STDERR_TOKEN}"), "delay_ms": 10_000}}})),
        limits,
    )
    .await;
    let client = client.unwrap();
    audit_debug("Client", &client);
    let error = client
        .call_tool("echo", args(json!({"text": ENV_SECRET})))
        .await
        .unwrap_err();
    audit("request timeout", &error, ErrorKind::Timeout);
    client.close().await;
    let after = client
        .call_tool("echo", args(json!({"text": "x"})))
        .await
        .unwrap_err();
    audit("call after close", &after, ErrorKind::ConnectionClosed);
    audit_tails("request timeout", &observer);
}

#[tokio::test]
async fn child_exit_stdout_close_and_stdin_close() {
    for (what, scenario) in [
        (
            "child exit",
            json!({"on_call": {"echo": {"stderr": format!("password={STDERR_PASSWORD} {STDERR_TOKEN}"), "exit_code": 3}}}),
        ),
        (
            "stdout closed",
            json!({"on_call": {"echo": {"close_stdout": true}}}),
        ),
        ("stdin closed", json!({"close_stdin": true})),
        (
            "exit after initialized",
            json!({"exit_after_initialized": 4}),
        ),
    ] {
        let (client, observer) = connect("exits", leaky(scenario), short_limits()).await;
        let client = client.unwrap();
        let error = client
            .call_tool("echo", args(json!({"text": ARGV_SECRET})))
            .await
            .unwrap_err();
        audit(what, &error, ErrorKind::ConnectionClosed);
        if let Some(terminal) = client.terminal_error() {
            audit(what, &terminal, terminal.kind());
        }
        client.close().await;
        audit_tails(what, &observer);
    }
}

#[tokio::test]
async fn remote_error_replies() {
    let rpc_error = json!({"code": -32000, "message": RPC_SECRET, "data": {"detail": BODY_SECRET}});
    // A JSON-RPC error answering our call, and one with a null id before the reply.
    let (client, observer) = connect(
        "remote",
        leaky(json!({"on_call": {"echo": [
            {"error": rpc_error},
            {"raw_lines": [{"jsonrpc": "2.0", "id": null, "error": rpc_error}]},
        ]}})),
        short_limits(),
    )
    .await;
    let client = client.unwrap();
    let error = client
        .call_tool("echo", args(json!({"text": "a"})))
        .await
        .unwrap_err();
    audit("remote error reply", &error, ErrorKind::RemoteError);
    let ok = client.call_tool("echo", args(json!({"text": "b"}))).await;
    assert!(ok.is_ok(), "a null-id error is not a failure: {ok:?}");
    client.close().await;
    // The bodies went to the private observer, and only there.
    let remote: Vec<_> = observer
        .events()
        .into_iter()
        .filter(|(name, _)| name == "remote-error")
        .collect();
    assert_eq!(remote.len(), 2, "{remote:?}");
    assert!(remote.iter().all(|(_, text)| text.contains(RPC_SECRET)));

    // `initialize` answered with an error.
    let (result, _) = connect(
        "init-error",
        leaky(json!({"initialize": {"error": rpc_error}})),
        short_limits(),
    )
    .await;
    let error = result.unwrap_err();
    audit("initialize error", &error, error.kind());
}

#[tokio::test]
async fn malformed_oversized_and_invalid_server_output() {
    let mut limits = short_limits();
    limits.max_frame_bytes = 4096;
    let long = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":$ID,\"result\":{{\"s\":\"{FRAME_SECRET}{}\"}}}}",
        "x".repeat(8192)
    );
    for (what, scenario, kind) in [
        (
            "malformed envelope",
            json!({"on_call": {"echo": {"reply_raw": format!("{{\"jsonrpc\":\"1.0\",\"id\":$ID,\"result\":{{\"s\":\"{FRAME_SECRET}\"}}}}")}}}),
            ErrorKind::ProtocolError,
        ),
        (
            "result and error",
            json!({"on_call": {"echo": {"reply_raw": format!("{{\"jsonrpc\":\"2.0\",\"id\":$ID,\"result\":{{}},\"error\":{{\"code\":1,\"message\":\"{FRAME_SECRET}\"}}}}")}}}),
            ErrorKind::ProtocolError,
        ),
        (
            "over-long frame",
            json!({"on_call": {"echo": {"reply_raw": long}}}),
            ErrorKind::ProtocolError,
        ),
        (
            "invalid tool result",
            json!({"on_call": {"echo": {"result": {"content": FRAME_SECRET}}}}),
            ErrorKind::InvalidResponse,
        ),
    ] {
        let (client, observer) = connect("bad-output", leaky(scenario), limits).await;
        let client = client.unwrap();
        let error = client
            .call_tool("echo", args(json!({"text": "x"})))
            .await
            .unwrap_err();
        audit(what, &error, kind);
        client.close().await;
        audit_tails(what, &observer);
    }

    // Catalogs whose offending text is itself the secret.
    for (what, tools) in [
        (
            "tool name with '/'",
            json!([{"name": format!("{FRAME_SECRET}/x"), "inputSchema": {"type": "object"}}]),
        ),
        (
            "invisible tool name",
            json!([{"name": format!("{FRAME_SECRET}\u{200b}"), "inputSchema": {"type": "object"}}]),
        ),
        (
            "duplicate tool name",
            json!([
                {"name": FRAME_SECRET, "inputSchema": {"type": "object"}},
                {"name": FRAME_SECRET, "inputSchema": {"type": "object"}},
            ]),
        ),
        (
            "bad input schema",
            json!([{"name": "t", "inputSchema": {"type": FRAME_SECRET}}]),
        ),
    ] {
        let (result, _) = connect("bad-catalog", leaky(json!({"tools": tools})), limits).await;
        audit(what, &result.unwrap_err(), ErrorKind::InvalidResponse);
    }
    let (result, _) = connect(
        "bad-cursor",
        leaky(json!({"pages": [
            {"tools": [], "nextCursor": FRAME_SECRET},
            {"tools": [], "nextCursor": FRAME_SECRET},
        ]})),
        limits,
    )
    .await;
    audit(
        "repeated cursor",
        &result.unwrap_err(),
        ErrorKind::InvalidResponse,
    );
}

#[tokio::test]
async fn caller_mistakes() {
    let (client, _) = connect("misuse", leaky(json!({})), short_limits()).await;
    let client = client.unwrap();
    // Arguments too deep or too large: refused before sending, never echoed.
    let mut deep = json!(ENV_SECRET);
    for _ in 0..200 {
        deep = json!([deep]);
    }
    let error = client
        .call_tool("echo", args(json!({"text": deep})))
        .await
        .unwrap_err();
    audit("too deep arguments", &error, ErrorKind::ProtocolError);
    let big = format!("{ENV_SECRET}{}", "y".repeat(2 << 20));
    let error = client
        .call_tool("echo", args(json!({"text": big})))
        .await
        .unwrap_err();
    audit("too large arguments", &error, ErrorKind::ProtocolError);
    client.close().await;

    // Invalid limits and names fail before anything is spawned.
    let mut limits = Limits::default();
    limits.max_tools = 0;
    let error = Client::builder("x")
        .limits(limits)
        .connect(leaky(json!({})))
        .await
        .unwrap_err();
    audit("invalid limits", &error, ErrorKind::ProtocolError);
    let error = Client::builder("a/b")
        .connect(leaky(json!({})))
        .await
        .unwrap_err();
    audit("invalid server name", &error, ErrorKind::ProtocolError);
}

// ----- HTTP: statuses, bodies, redirects, session ids, TLS, egress, builder -----

fn http_client(url: &str) -> smthrs_mcp::HttpTransportBuilder {
    HttpTransport::builder("remote", url.to_owned()).bearer_token(SecretString::from(BEARER_SECRET))
}

async fn http_connect(
    what: &str,
    builder: smthrs_mcp::HttpTransportBuilder,
    limits: Limits,
) -> Result<Client, Error> {
    audit_debug(what, &builder);
    let transport = builder.build().expect("builds");
    audit_debug(what, &transport);
    let observer = Collect::new();
    Client::builder("remote")
        .limits(limits)
        .diagnostics(observer)
        .connect(transport)
        .await
}

fn secret_url(server: &TestServer) -> String {
    format!("{}?key={QUERY_SECRET}&sig={QUERY_SECRET}", server.url())
}

#[tokio::test]
#[allow(clippy::type_complexity)]
async fn http_error_statuses_and_bodies() {
    let cases: Vec<(&str, u16, Option<(&'static str, String)>, ErrorKind)> = vec![
        ("HTTP 500", 500, None, ErrorKind::HttpStatus),
        ("HTTP 400", 400, None, ErrorKind::HttpStatus),
        (
            "HTTP 401",
            401,
            Some((
                "www-authenticate",
                format!("Bearer error=\"{BODY_SECRET}\""),
            )),
            ErrorKind::Unauthorized,
        ),
        ("HTTP 403", 403, None, ErrorKind::Unauthorized),
        (
            "unfollowed redirect",
            307,
            Some((
                "location",
                format!("http://elsewhere.invalid/mcp?r={REDIRECT_SECRET}"),
            )),
            ErrorKind::HttpStatus,
        ),
    ];
    for (what, code, header, kind) in cases {
        let server = TestServer::start(move |_req| {
            let header = header.clone();
            async move {
                let response = full(
                    code,
                    "application/json",
                    format!("{{\"error\":\"{BODY_SECRET}\",\"token\":\"{BEARER_SECRET}\"}}"),
                );
                match header {
                    Some((name, value)) => with_header(response, name, &value),
                    None => response,
                }
            }
        })
        .await;
        let error = http_connect(
            what,
            http_client(&secret_url(&server)).follow_same_origin_redirects(3),
            short_limits(),
        )
        .await
        .unwrap_err();
        audit(what, &error, kind);
        let sent = server.requests();
        assert!(
            sent[0]
                .header("authorization")
                .is_some_and(|v| v.contains(BEARER_SECRET))
        );
    }
}

#[tokio::test]
#[allow(clippy::type_complexity)]
async fn http_bodies_session_ids_and_remote_errors() {
    let mut limits = short_limits();
    limits.max_frame_bytes = 1024;
    let huge = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{{\"s\":\"{FRAME_SECRET}{}\"}}}}",
        "z".repeat(4096)
    );
    let event = format!("data: {huge}\n\n");
    let rpc = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":0,\"error\":{{\"code\":-32000,\"message\":\"{RPC_SECRET}\",\"data\":\"{BODY_SECRET}\"}}}}"
    );
    let mut malformed = format!("data: {FRAME_SECRET}\n\ndata: ").into_bytes();
    malformed.extend_from_slice(b"\xff\xfe\n\n");
    let cases: Vec<(&str, &'static str, Vec<u8>, Option<String>, ErrorKind)> = vec![
        (
            "JSON body over maxFrameBytes",
            "application/json",
            huge.clone().into_bytes(),
            None,
            ErrorKind::ProtocolError,
        ),
        (
            "event over maxFrameBytes",
            "text/event-stream",
            event.into_bytes(),
            None,
            ErrorKind::ProtocolError,
        ),
        (
            "malformed event stream",
            "text/event-stream",
            malformed,
            None,
            ErrorKind::ProtocolError,
        ),
        (
            "unsupported content type",
            "text/html",
            format!("<p>{BODY_SECRET}</p>").into_bytes(),
            None,
            ErrorKind::ProtocolError,
        ),
        (
            "invalid session id",
            "application/json",
            b"{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{}}".to_vec(),
            Some(format!("{SESSION_SECRET} with spaces")),
            ErrorKind::ProtocolError,
        ),
        (
            "JSON-RPC error over HTTP",
            "application/json",
            rpc.into_bytes(),
            None,
            ErrorKind::RemoteError,
        ),
    ];
    for (what, content_type, body, session, kind) in cases {
        let server = TestServer::start(move |req| {
            // The canned reply answers whichever request came (the probe first).
            let id = serde_json::from_slice::<serde_json::Value>(&req.body)
                .map(|v| v["id"].to_string())
                .unwrap_or_else(|_| "0".into());
            let needle = b"\"id\":0";
            let body = match body.windows(needle.len()).position(|w| w == needle) {
                Some(at) => [
                    &body[..at],
                    format!("\"id\":{id}").as_bytes(),
                    &body[at + needle.len()..],
                ]
                .concat(),
                None => body.clone(),
            };
            let session = session.clone();
            async move {
                let response = full(200, content_type, bytes::Bytes::from(body));
                match session {
                    Some(id) => with_header(response, "mcp-session-id", &id),
                    None => response,
                }
            }
        })
        .await;
        let error = http_connect(what, http_client(&secret_url(&server)), limits)
            .await
            .unwrap_err();
        audit(what, &error, kind);
    }
}

#[tokio::test]
async fn http_connection_failures_tls_and_egress() {
    // Connection refused: a port that was just released.
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let url = format!("http://127.0.0.1:{port}/mcp?key={QUERY_SECRET}");
    let error = http_connect("refused", http_client(&url), short_limits())
        .await
        .unwrap_err();
    audit("connection refused", &error, ErrorKind::ConnectionClosed);

    // TLS to a plain HTTP server.
    let server = TestServer::start(|_req| async { status(200) }).await;
    let url = format!(
        "https://127.0.0.1:{}/mcp?key={QUERY_SECRET}",
        server.addr.port()
    );
    let error = http_connect("tls", http_client(&url), short_limits())
        .await
        .unwrap_err();
    audit("TLS failure", &error, error.kind());
    assert!(
        matches!(error.kind(), ErrorKind::Tls | ErrorKind::ConnectionClosed),
        "{error:?}"
    );

    // Egress denied: the grants do not cover the endpoint; nothing is sent.
    let server = TestServer::start(|_req| async { status(500) }).await;
    let grants = EgressGrants::parse(["net:post:https://allowed.example"]).unwrap();
    let error = http_connect(
        "egress",
        http_client(&secret_url(&server)).egress_grants(grants),
        short_limits(),
    )
    .await
    .unwrap_err();
    audit("egress denied", &error, ErrorKind::EgressDenied);
    assert_eq!(server.requests().len(), 0);

    // A proxy with credentials in its URL: with a token over plain http the build
    // refuses; without one the proxy refuses the connection.
    let proxy = format!("http://proxyuser:{PROXY_SECRET}@127.0.0.1:{port}");
    let builder = http_client(&secret_url(&server)).proxy(proxy.clone());
    audit_debug("builder with proxy", &builder);
    let error = builder.build().unwrap_err();
    audit(
        "token through an http proxy",
        &error,
        ErrorKind::InvalidConfig,
    );
    let error = http_connect(
        "proxy",
        HttpTransport::builder("remote", secret_url(&server)).proxy(proxy),
        short_limits(),
    )
    .await
    .unwrap_err();
    audit("proxy refused", &error, ErrorKind::ConnectionClosed);
}

#[tokio::test]
async fn http_builder_refusals() {
    let userinfo = format!("https://user:{USERINFO_SECRET}@mcp.example/mcp?key={QUERY_SECRET}");
    let builder = http_client(&userinfo);
    audit_debug("builder with userinfo", &builder);
    let error = builder.build().unwrap_err();
    audit("URL with userinfo", &error, ErrorKind::InvalidConfig);

    for proxy in [
        format!("https://proxyuser:{PROXY_SECRET}@proxy.example:3128"),
        format!("socks5://proxyuser:{PROXY_SECRET}@proxy.example:1080"),
        format!("not a url {PROXY_SECRET}"),
    ] {
        let builder =
            http_client(&format!("https://mcp.example/mcp?key={QUERY_SECRET}")).proxy(proxy);
        audit_debug("builder with proxy", &builder);
        let error = builder.build().unwrap_err();
        audit("bad proxy", &error, ErrorKind::InvalidConfig);
    }

    // An unset token variable names the variable and the server, never a value.
    let error = HttpTransport::builder(
        "remote",
        format!("https://mcp.example/mcp?key={QUERY_SECRET}"),
    )
    .bearer_token_env("SMTHRS_LEAK_AUDIT_UNSET_VARIABLE")
    .build()
    .unwrap_err();
    audit("unset token variable", &error, ErrorKind::InvalidConfig);

    // A bearer token that is not a valid header value.
    let error = HttpTransport::builder("remote", "https://mcp.example/mcp")
        .bearer_token(SecretString::from(format!("{BEARER_SECRET}\n")))
        .build()
        .unwrap_err();
    audit("invalid bearer token", &error, ErrorKind::InvalidConfig);
}

/// Egress grants carrying credentials are refused without echoing them.
#[test]
fn egress_grant_errors() {
    for grant in [
        format!("net:get:https://user:{USERINFO_SECRET}@h.example"),
        format!("net:get:https://h.example/?k={QUERY_SECRET}"),
    ] {
        let error = EgressGrants::parse([grant.as_str()]).unwrap_err();
        audit(
            &format!("bad egress grant {grant}"),
            &error,
            ErrorKind::InvalidConfig,
        );
    }
}

// ----- the server file -----

#[test]
fn server_file_errors() {
    let files = [
        json!([{"server": "s", "command": "c", "args": [ARGV_SECRET], "env": {"K": ENV_SECRET}, "maxTools": 0}]),
        json!([{"server": "s", "command": "c", "args": [], "env": {"K": ENV_SECRET, "BAD=KEY": ENV_SECRET}}]),
        json!([{"server": "s", "command": "c", "args": [], "env": {"K": ENV_SECRET, "N": 5}}]),
        json!([{"server": "h", "url": format!("https://user:{USERINFO_SECRET}@h.example/mcp?key={QUERY_SECRET}")}]),
        json!([{"server": "h", "url": format!("ftp://h.example/mcp?key={QUERY_SECRET}")}]),
        json!([{"server": "h", "url": format!("not a url {QUERY_SECRET}")}]),
        json!([{"server": "h", "url": format!("https://h.example/mcp?key={QUERY_SECRET}"), "env": {"K": ENV_SECRET}}]),
        json!([{"server": "h", "url": format!("https://h.example/mcp?key={QUERY_SECRET}"), "bearerTokenEnv": BEARER_SECRET.to_owned() + "="}]),
        json!([
            {"server": "s", "command": "c", "args": [], "env": {"K": ENV_SECRET}},
            {"server": "s", "url": format!("https://h.example/mcp?key={QUERY_SECRET}")},
        ]),
        json!({"server": "s", "env": {"K": ENV_SECRET}}),
    ];
    let dir = tempfile::tempdir().unwrap();
    for (i, file) in files.iter().enumerate() {
        let text = file.to_string();
        let error = decode_server_file(&text).unwrap_err();
        audit_error(&format!("server file {i}"), &error);
        let converted: Error = error.clone().into();
        audit(
            &format!("server file {i} as Error"),
            &converted,
            ErrorKind::InvalidConfig,
        );
        let path = dir.path().join(format!("file-{i}.json"));
        std::fs::write(&path, &text).unwrap();
        audit_error(
            &format!("loaded server file {i}"),
            &load_server_file(&path).unwrap_err(),
        );
    }
    // Not JSON: serde_json's own message (which can quote the text) is not echoed.
    let error = decode_server_file(&format!(
        "[{{\"env\": {{\"K\": \"{ENV_SECRET}\" {ENV_SECRET}"
    ))
    .unwrap_err();
    audit_error("not JSON", &error);

    // A valid file's entries print no secret either.
    let entries = decode_server_file(
        &json!([
            {"server": "s", "command": "c", "args": [], "env": {"K": ENV_SECRET}},
            {"server": "h", "url": format!("https://h.example/mcp?key={QUERY_SECRET}"), "bearerTokenEnv": "TOKEN"},
        ])
        .to_string(),
    )
    .unwrap();
    audit_debug("decoded entries", &entries);
}

// ----- the CLI -----

const CLI: &str = env!("CARGO_BIN_EXE_smthrs-mcp");

/// Runs the CLI (bounded by 30 s) and returns (exit code, stdout, stderr).
async fn run_cli(args: &[&str], env: &[(&str, &str)]) -> (Option<i32>, String, String) {
    let mut command = tokio::process::Command::new(CLI);
    command
        .args(args)
        .env_remove("SMITHERS_MCP_CONFIG")
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    for (key, value) in env {
        command.env(key, value);
    }
    let output = tokio::time::timeout(Duration::from_secs(30), command.output())
        .await
        .expect("the CLI finishes")
        .expect("the CLI runs");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn stdio_entry(server: &str, scenario: Value) -> Value {
    let mut scenario = scenario;
    let map = scenario.as_object_mut().unwrap();
    map.insert("description".into(), json!(ARGV_SECRET));
    map.entry("stderr_lines").or_insert(json!(leaky_stderr()));
    json!({
        "server": server,
        "command": support::scripted_server(),
        "args": [scenario.to_string()],
        "env": {"SERVICE_API_KEY": ENV_SECRET},
        "handshakeTimeoutMs": 2000,
        "requestTimeoutMs": 500,
    })
}

#[tokio::test(flavor = "multi_thread")]
async fn cli_output_on_every_failure() {
    let server = TestServer::start(|_req| async move {
        full(
            500,
            "application/json",
            format!("{{\"error\":\"{BODY_SECRET}\"}}"),
        )
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, entries: Value| {
        let path = dir.path().join(name);
        std::fs::write(&path, entries.to_string()).unwrap();
        path.to_str().unwrap().to_owned()
    };
    let rpc_error = json!({"code": -32000, "message": RPC_SECRET, "data": BODY_SECRET});
    let runs: Vec<(&str, String, Vec<&str>, i32)> = vec![
        (
            "child exit",
            write(
                "exit.json",
                json!([stdio_entry(
                    "leaky",
                    json!({"on_call": {"echo": {"stderr": format!("token {STDERR_TOKEN}"), "exit_code": 1}}})
                )]),
            ),
            vec!["call", "mcp/leaky/echo", "--args", "{\"text\":\"hi\"}"],
            1,
        ),
        (
            "call timeout",
            write(
                "slow.json",
                json!([stdio_entry(
                    "slow",
                    json!({"on_call": {"echo": {"delay_ms": 10000}}})
                )]),
            ),
            vec!["call", "mcp/slow/echo", "--args", "{\"text\":\"hi\"}"],
            1,
        ),
        (
            "remote error",
            write(
                "rpc.json",
                json!([stdio_entry(
                    "rpc",
                    json!({"on_call": {"echo": {"error": rpc_error}}})
                )]),
            ),
            vec!["call", "mcp/rpc/echo"],
            1,
        ),
        (
            "stalled handshake",
            write(
                "stall.json",
                json!([stdio_entry("stall", json!({"initialize": "never_reply"}))]),
            ),
            vec!["tools"],
            1,
        ),
        (
            "spawn failure",
            write(
                "spawn.json",
                json!([{"server": "gone", "command": format!("/nonexistent-smthrs/{PROGRAM_SECRET}"), "args": [ARGV_SECRET], "env": {"K": ENV_SECRET}}]),
            ),
            vec!["tools"],
            1,
        ),
        (
            "HTTP 500",
            write(
                "http.json",
                json!([{"server": "remote", "url": secret_url(&server), "bearerTokenEnv": "LEAK_AUDIT_TOKEN"}]),
            ),
            vec!["tools"],
            1,
        ),
        (
            "bad server file",
            write(
                "bad.json",
                json!([
                    {"server": "s", "command": "c", "args": [ARGV_SECRET], "env": {"K": ENV_SECRET}},
                    {"server": "h", "url": format!("https://user:{USERINFO_SECRET}@h.example/mcp?key={QUERY_SECRET}")},
                ]),
            ),
            vec!["check"],
            2,
        ),
        (
            "bad arguments",
            write("args.json", json!([stdio_entry("args", json!({}))])),
            vec!["call", "mcp/args/echo", "--args", "[\"not an object\"]"],
            2,
        ),
    ];
    for (what, config, command, code) in runs {
        for diagnostics in [false, true] {
            let mut args = vec!["--mcp-config", config.as_str()];
            if diagnostics {
                args.push("--diagnostics");
            }
            args.extend(command.iter().copied());
            let (status, stdout, stderr) =
                run_cli(&args, &[("LEAK_AUDIT_TOKEN", BEARER_SECRET)]).await;
            assert_eq!(status, Some(code), "{what}: {stderr}");
            if diagnostics {
                // The private channel may print remote error bodies, never the
                // environment, credentials in stderr, the token, or the URL's secrets.
                for secret in [
                    ENV_SECRET,
                    STDERR_TOKEN,
                    STDERR_PASSWORD,
                    BEARER_SECRET,
                    QUERY_SECRET,
                    USERINFO_SECRET,
                    PROGRAM_SECRET,
                ] {
                    assert!(
                        !stdout.contains(secret) && !stderr.contains(secret),
                        "{what} --diagnostics leaks {secret}: {stderr}"
                    );
                }
            } else {
                assert_clean(&format!("{what}: CLI stdout"), &stdout);
                assert_clean(&format!("{what}: CLI stderr"), &stderr);
            }
        }
    }
}

/// An HTTP transport named `remote` to `url`, with `oauth`.
fn oauth_transport(url: String, oauth: smthrs_mcp::auth::OAuth) -> HttpTransport {
    HttpTransport::builder("remote", url)
        .oauth(oauth)
        .build()
        .unwrap()
}

/// Connects to `url` with `oauth`, and the chain is refused: the transport,
/// the `unauthorized` error and the chain's steps (one of them failed) show no
/// secret.
async fn audit_refused_chain(what: &str, url: String, oauth: smthrs_mcp::auth::OAuth) {
    let transport = oauth_transport(url, oauth);
    audit_debug(what, &transport);
    let (error, observer) = refused_over_http(transport).await;
    audit(what, &error, ErrorKind::Unauthorized);
    // The chain's steps reach the observer, and no secret with them.
    audit_failed_steps(what, &observer);
}

/// Connects over `transport` with an observer; the connect must fail. The
/// error, and the observer.
async fn refused_over_http(transport: HttpTransport) -> (Error, Arc<Collect>) {
    let observer = Collect::new();
    let error = Client::builder("remote")
        .diagnostics(observer.clone())
        .connect(transport)
        .await
        .unwrap_err();
    (error, observer)
}

/// The OAuth chain's steps reached the observer, one of them failed, and no
/// secret came with them.
fn audit_failed_steps(what: &str, observer: &Collect) {
    let steps: Vec<_> = observer
        .events()
        .into_iter()
        .filter(|(name, _)| name == "oauth-step")
        .collect();
    assert!(
        steps.iter().any(|(_, t)| t.contains("failed")),
        "{what}: {steps:?}"
    );
    for (_, text) in &steps {
        assert_clean(what, text);
    }
}

/// Planted stored tokens of `client_id` at `issuer` (its resource
/// `{issuer}/mcp`): `access` and `refresh`, nothing else known, not
/// DPoP-bound, no revocation endpoint.
fn planted_tokens(
    issuer: &str,
    client_id: &str,
    access: &str,
    refresh: &str,
) -> smthrs_mcp::auth::store::StoredTokens {
    smthrs_mcp::auth::store::StoredTokens {
        issuer: issuer.to_owned(),
        resource: format!("{issuer}/mcp"),
        token_endpoint: format!("{issuer}/token"),
        client_id: client_id.to_owned(),
        tokens: smthrs_mcp::auth::token::TokenSet {
            access_token: SecretString::from(access),
            refresh_token: Some(SecretString::from(refresh)),
            expires_at: None,
            obtained_at: None,
            scopes: vec![],
            dpop_bound: false,
        },
        revocation_endpoint: None,
    }
}

/// A planted dynamic registration of `client_id` at `issuer`, holding the
/// client secret.
fn planted_registration(
    issuer: &str,
    client_id: &str,
    auth_method: Option<&str>,
    redirect_uris: Vec<String>,
) -> smthrs_mcp::auth::registration::Registration {
    smthrs_mcp::auth::registration::Registration {
        issuer: issuer.to_owned(),
        client_id: client_id.to_owned(),
        client_secret: Some(SecretString::from(CLIENT_SECRET)),
        token_endpoint_auth_method: auth_method.map(str::to_owned),
        redirect_uris,
        kind: smthrs_mcp::auth::registration::RegistrationKind::Dynamic,
    }
}

/// An MCP server + authorization server whose token endpoint answers `token`
/// (status, body) and whose authorization redirect carries `extra`.
async fn oauth_peer(token: (u16, String), extra: &'static str) -> TestServer {
    TestServer::start(move |req: http_server::Recorded| {
        let token = token.clone();
        async move {
            let base = format!("http://{}", req.header("host").unwrap());
            let q: std::collections::HashMap<String, String> = req
                .uri
                .query()
                .map(|q| url::form_urlencoded::parse(q.as_bytes()).into_owned().collect())
                .unwrap_or_default();
            match req.uri.path() {
                "/.well-known/oauth-protected-resource/mcp" => full(200, "application/json", json!({
                    "resource": format!("{base}/mcp"), "authorization_servers": [base]}).to_string()),
                "/.well-known/oauth-authorization-server" => full(200, "application/json", json!({
                    "issuer": base, "authorization_endpoint": format!("{base}/authorize"),
                    "token_endpoint": format!("{base}/token"), "registration_endpoint": format!("{base}/register"),
                    "response_types_supported": ["code"], "code_challenge_methods_supported": ["S256"],
                    "token_endpoint_auth_methods_supported": ["client_secret_post"]}).to_string()),
                "/register" => full(201, "application/json", json!({"client_id": "c",
                    "client_secret": CLIENT_SECRET, "token_endpoint_auth_method": "client_secret_post"}).to_string()),
                "/authorize" => with_header(status(302), "location", &format!(
                    "{}?code={CODE_SECRET}&state={}{extra}", q["redirect_uri"], q["state"])),
                "/token" => full(token.0, "application/json", token.1),
                _ => with_header(status(401), "www-authenticate",
                    &format!("Bearer error=\"invalid_token\", error_description=\"{BODY_SECRET}\"")),
            }
        }
    })
    .await
}

#[tokio::test]
async fn oauth_errors() {
    use smthrs_mcp::auth::{ClientCredentials, HeadlessAuthorizer, OAuth, PreRegisteredClient};
    let headless = || Arc::new(HeadlessAuthorizer::new("http://127.0.0.1:9/callback"));
    // Debug of the configuration and the builder.
    let oauth = OAuth::new()
        .pre_registered(PreRegisteredClient {
            client_id: "id".into(),
            client_secret: Some(SecretString::from(CLIENT_SECRET)),
            issuer: None,
        })
        .client_credentials(ClientCredentials::PrivateKeyJwt {
            client_id: "id".into(),
            private_key_pem: SecretString::from(KEY_SECRET),
        });
    audit_debug("OAuth", &oauth);
    let builder = HttpTransport::builder("remote", "https://mcp.example/mcp").oauth(oauth);
    audit_debug("builder with OAuth", &builder);
    // A key that is not a key: a config error without the key.
    let error = builder.build().unwrap_err();
    audit("bad assertion key", &error, ErrorKind::InvalidConfig);

    // Remote error text, the code, the client secret and tokens never surface.
    let cases: [((u16, String), &'static str, &str); 4] = [
        (
            (
                400,
                json!({"error": "invalid_grant", "error_description": BODY_SECRET}).to_string(),
            ),
            "",
            "token refused",
        ),
        (
            (
                200,
                format!(
                    "{{\"access_token\": \"{ACCESS_SECRET}\", \"token_type\": \"mac\", \"x\": \"{BODY_SECRET}\"}}"
                ),
            ),
            "",
            "odd token type",
        ),
        (
            (200, format!("not json {BODY_SECRET} {ACCESS_SECRET}")),
            "",
            "token body not JSON",
        ),
        (
            (200, String::new()),
            "&iss=https%3A%2F%2Fevil.example&error=access_denied&error_description=remote-body-Jt6yN4",
            "iss mismatch",
        ),
    ];
    for (token, extra, what) in cases {
        let server = oauth_peer(token, extra).await;
        audit_refused_chain(what, server.url(), OAuth::new().authorizer(headless())).await;
    }
    // Without an authorizer: the hint, nothing from the challenge.
    let server = oauth_peer((500, String::new()), "").await;
    let transport = oauth_transport(server.url(), OAuth::new().login_hint("run login"));
    let error = Client::builder("remote")
        .connect(transport)
        .await
        .unwrap_err();
    audit("login needed", &error, ErrorKind::Unauthorized);
}

/// The OS keyring store (feature `keyring`, the real kernel keyutils store): its
/// `Debug`, and its errors on a malformed entry, an oversized value and a platform
/// failure (keyring-core's mock, whose error carries the entry's bytes), show no
/// token or secret.
#[cfg(all(feature = "keyring", target_os = "linux"))]
#[test]
fn keyring_store_errors_and_debug() {
    use smthrs_mcp::auth::{KeyringStore, StoredAuth, TokenStore};
    let value = |access: &str| StoredAuth {
        registrations: vec![planted_registration("http://as", "id", None, vec![])],
        tokens: Some(planted_tokens("http://as", "id", access, BEARER_SECRET)),
        redirect_port: None,
        dpop_keys: vec![],
    };
    let dir = tempfile::tempdir().unwrap();
    let service = format!("smthrs-mcp-leak-audit-{}", std::process::id());
    let store = KeyringStore::native(&service, dir.path().join("keyring.lock")).unwrap();
    store.save("srv", &value(ACCESS_SECRET)).unwrap();
    audit_debug("KeyringStore", &store);
    // Over the entry bound, with the token in the value.
    let big = format!("{ACCESS_SECRET}{}", "x".repeat(40_000));
    let error = store.save("srv", &value(&big)).unwrap_err();
    audit("keyring entry too large", &error, ErrorKind::InvalidConfig);
    // A malformed entry that holds the token.
    // (The store's documented layout: a `user` key in the persistent keyring.)
    linux_keyutils::KeyRing::get_persistent(linux_keyutils::KeyRingIdentifier::Thread)
        .unwrap()
        .add_key(
            &format!("keyring-rs:srv@{service}"),
            format!("{{\"tokens\": \"{ACCESS_SECRET}\"").as_bytes(),
        )
        .unwrap();
    let error = store.load("srv").unwrap_err();
    audit("malformed keyring entry", &error, ErrorKind::InvalidConfig);
    assert!(store.remove("srv").unwrap());
    // A platform error carrying the entry's bytes.
    let mock = keyring_core::mock::Store::new().unwrap();
    let store =
        KeyringStore::with_credential_store(mock.clone(), "svc", dir.path().join("keyring.lock"));
    let entry = keyring_core::api::CredentialStoreApi::build(&*mock, "svc", "srv", None).unwrap();
    entry.set_secret(b"{}").unwrap();
    let cred: &keyring_core::mock::Cred = entry.as_any().downcast_ref().unwrap();
    cred.set_error(keyring_core::Error::BadDataFormat(
        ACCESS_SECRET.as_bytes().to_vec(),
        CLIENT_SECRET.into(),
    ));
    let error = store.load("srv").unwrap_err();
    audit("keyring platform error", &error, ErrorKind::InvalidConfig);
    audit_debug("KeyringStore over a mock", &store);
}

/// An MCP server whose authorization server offers only the jwt-bearer grant
/// (Basic), with an identity provider at `/idp/token` answering `idp` and the
/// token endpoint answering `token` (status, body).
async fn grant_peer(idp: (u16, String), token: (u16, String)) -> TestServer {
    TestServer::start(move |req: http_server::Recorded| {
        let (idp, token) = (idp.clone(), token.clone());
        async move {
            let base = format!("http://{}", req.header("host").unwrap());
            match req.uri.path() {
                "/.well-known/oauth-protected-resource/mcp" => full(
                    200,
                    "application/json",
                    json!({
                    "resource": format!("{base}/mcp"), "authorization_servers": [base]})
                    .to_string(),
                ),
                "/.well-known/oauth-authorization-server" => full(
                    200,
                    "application/json",
                    json!({
                    "issuer": base, "token_endpoint": format!("{base}/token"),
                    "grant_types_supported": ["urn:ietf:params:oauth:grant-type:jwt-bearer"],
                    "token_endpoint_auth_methods_supported": ["client_secret_basic"]})
                    .to_string(),
                ),
                "/idp/token" => full(idp.0, "application/json", idp.1),
                "/token" => full(token.0, "application/json", token.1),
                _ => with_header(
                    status(401),
                    "www-authenticate",
                    &format!("Bearer error=\"invalid_token\", error_description=\"{BODY_SECRET}\""),
                ),
            }
        }
    })
    .await
}

#[tokio::test]
async fn jwt_bearer_grant_errors() {
    use smthrs_mcp::auth::{AssertionSource, EnterpriseManaged, OAuth, WorkloadIdentity};
    let id_jag = |issued: &str| {
        json!({"access_token": ID_JAG_SECRET, "issued_token_type": issued, "token_type": "N_A",
            "x": BODY_SECRET})
        .to_string()
    };
    let good = "urn:ietf:params:oauth:token-type:id-jag";
    let echoing = |code: &str| {
        json!({"error": code, "error_description":
            format!("{BODY_SECRET} {ID_TOKEN_SECRET} {ID_JAG_SECRET} {WIF_SECRET} {IDP_CLIENT_SECRET} {CLIENT_SECRET}")})
        .to_string()
    };
    let enterprise = |server: &TestServer| {
        OAuth::new().enterprise_managed(
            EnterpriseManaged::new(
                format!("{}/idp/token", server.url().strip_suffix("/mcp").unwrap()),
                "idp-client",
                AssertionSource::value(SecretString::from(ID_TOKEN_SECRET)),
                "client",
            )
            .idp_client_secret(SecretString::from(IDP_CLIENT_SECRET))
            .client_secret(SecretString::from(CLIENT_SECRET)),
        )
    };
    // (IdP answer, token endpoint answer, what).
    type Case = ((u16, String), (u16, String), &'static str);
    let cases: [Case; 4] = [
        (
            (400, echoing("invalid_grant")),
            (500, String::new()),
            "IdP refusal",
        ),
        (
            (200, id_jag("urn:ietf:params:oauth:token-type:access_token")),
            (500, String::new()),
            "not an ID-JAG",
        ),
        (
            (200, id_jag(good)),
            (400, echoing("invalid_grant")),
            "ID-JAG refused",
        ),
        (
            (200, id_jag(good)),
            (200, format!("not json {ID_JAG_SECRET} {BODY_SECRET}")),
            "token body not JSON",
        ),
    ];
    for (idp, token, what) in cases {
        let server = grant_peer(idp, token).await;
        let oauth = enterprise(&server);
        audit_debug(what, &oauth);
        audit_refused_chain(what, server.url(), oauth).await;
    }
    // Workload identity: a refused assertion, and a file over its bound.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("token");
    std::fs::write(&file, format!("{WIF_SECRET}\n")).unwrap();
    let server = grant_peer((500, String::new()), (400, echoing("invalid_grant"))).await;
    for (max, kind, what) in [
        (1024, ErrorKind::Unauthorized, "assertion refused"),
        (8, ErrorKind::InvalidConfig, "assertion over its bound"),
    ] {
        let oauth = OAuth::new().workload_identity(WorkloadIdentity::new(
            "agent",
            AssertionSource::file(&file).max_bytes(max),
        ));
        audit_debug(what, &oauth);
        let transport = oauth_transport(server.url(), oauth);
        let error = Client::builder("remote")
            .connect(transport)
            .await
            .unwrap_err();
        audit(what, &error, kind);
    }
    let oauth = OAuth::new().workload_identity(WorkloadIdentity::new(
        "agent",
        AssertionSource::value(SecretString::from(WIF_SECRET)),
    ));
    audit_debug("assertion value", &oauth);

    // The CLI, with its diagnostics: workload identity from the file, enterprise
    // with every secret from the environment.
    let url = server.url();
    let idp = format!("{}/idp/token", url.strip_suffix("/mcp").unwrap());
    let wif_config = dir.path().join("wif.json");
    std::fs::write(
        &wif_config,
        json!([{"server": "wif", "url": url, "oauth": {"clientId": "agent",
            "workloadIdentity": {"tokenFile": file}}}])
        .to_string(),
    )
    .unwrap();
    let ent_config = dir.path().join("ent.json");
    std::fs::write(
        &ent_config,
        json!([{"server": "ent", "url": url, "oauth": {"clientId": "client",
            "clientSecretEnv": "LEAK_AS_SECRET", "enterprise": {"idpTokenEndpoint": idp,
            "idpClientId": "idp-client", "idpClientSecretEnv": "LEAK_IDP_SECRET",
            "idTokenEnv": "LEAK_ID_TOKEN"}}}])
        .to_string(),
    )
    .unwrap();
    let state = dir.path().join("state");
    let env = [
        ("XDG_STATE_HOME", state.to_str().unwrap()),
        ("LEAK_AS_SECRET", CLIENT_SECRET),
        ("LEAK_IDP_SECRET", IDP_CLIENT_SECRET),
        ("LEAK_ID_TOKEN", ID_TOKEN_SECRET),
    ];
    let (wif_config, ent_config) = (wif_config.to_str().unwrap(), ent_config.to_str().unwrap());
    for args in [
        ["--mcp-config", wif_config, "--diagnostics", "tools"],
        ["--mcp-config", ent_config, "--diagnostics", "tools"],
        ["--mcp-config", ent_config, "--diagnostics", "check"],
        ["--mcp-config", ent_config, "login", "ent"],
    ] {
        let (code, stdout, stderr) = run_cli(&args, &env).await;
        if args[3] != "check" {
            assert_eq!(code, Some(1), "{args:?}: {stderr}");
        }
        assert_clean(&format!("{args:?}: CLI stdout"), &stdout);
        assert_clean(&format!("{args:?}: CLI stderr"), &stderr);
    }
}

/// Logout's revocation: the tokens, the client secret, the server's error text
/// and the endpoint's userinfo and query reach no outcome and no error.
#[tokio::test]
async fn oauth_revocation_errors() {
    use smthrs_mcp::auth::store::StoredTokens;
    use smthrs_mcp::auth::{Logout, MemoryStore, OAuth, StoredAuth, TokenStore};
    let refusing = TestServer::start(|_req: http_server::Recorded| async move {
        full(
            400,
            "application/json",
            json!({"error": BODY_SECRET, "error_description": BODY_SECRET}).to_string(),
        )
    })
    .await;
    let base = refusing.url().trim_end_matches("/mcp").to_owned();
    let port = refusing.addr.port();
    let endpoints = [
        (format!("{base}/revoke"), ErrorKind::Unauthorized),
        (
            format!("https://10.0.0.1/revoke?k={QUERY_SECRET}"),
            ErrorKind::EgressDenied,
        ),
        (
            format!("http://user:{USERINFO_SECRET}@127.0.0.1:{port}/revoke"),
            ErrorKind::EgressDenied,
        ),
    ];
    for (endpoint, kind) in endpoints {
        let store = Arc::new(MemoryStore::new());
        let stored = StoredAuth {
            registrations: vec![planted_registration(
                &base,
                "c",
                Some("client_secret_post"),
                vec!["http://127.0.0.1:9/callback".into()],
            )],
            tokens: Some(StoredTokens {
                revocation_endpoint: Some(endpoint.clone()),
                ..planted_tokens(&base, "c", ACCESS_SECRET, REFRESH_SECRET)
            }),
            redirect_port: None,
            dpop_keys: vec![],
        };
        audit_debug("stored auth", &stored);
        store.save("remote", &stored).unwrap();
        let transport = oauth_transport(refusing.url(), OAuth::new().store(store.clone()));
        let outcome = transport.logout().await.unwrap();
        audit_debug("logout outcome", &outcome);
        let Logout::NotRevoked(error) = outcome else {
            panic!("{outcome:?}");
        };
        audit("revocation refused", &error, kind);
        assert!(store.load("remote").unwrap().unwrap().tokens.is_none());
    }
}

// ----- DPoP: the private key and the proofs -----

/// A DPoP peer: MCP + authorization server advertising ES256. Every `DPoP`
/// header it receives is kept in `proofs`. The MCP endpoint answers a nonce
/// challenge with an over-long nonce when `long_nonce`, else `invalid_token`
/// (so the chain refreshes, and the token endpoint refuses the proof with
/// remote text).
async fn dpop_peer(proofs: Arc<std::sync::Mutex<Vec<String>>>, long_nonce: bool) -> TestServer {
    TestServer::start(move |req: http_server::Recorded| {
        let proofs = proofs.clone();
        async move {
            if let Some(p) = req.header("dpop") {
                proofs.lock().unwrap().push(p.to_owned());
            }
            let base = format!("http://{}", req.header("host").unwrap());
            match req.uri.path() {
                "/.well-known/oauth-protected-resource/mcp" => full(200, "application/json", json!({
                    "resource": format!("{base}/mcp"), "authorization_servers": [base]}).to_string()),
                "/.well-known/oauth-authorization-server" => full(200, "application/json", json!({
                    "issuer": base, "authorization_endpoint": format!("{base}/authorize"),
                    "token_endpoint": format!("{base}/token"),
                    "response_types_supported": ["code"], "code_challenge_methods_supported": ["S256"],
                    "token_endpoint_auth_methods_supported": ["none"],
                    "dpop_signing_alg_values_supported": ["ES256"]}).to_string()),
                "/token" => full(400, "application/json",
                    json!({"error": "invalid_dpop_proof", "error_description": BODY_SECRET}).to_string()),
                _ if long_nonce => with_header(
                    with_header(status(401), "www-authenticate", "DPoP error=\"use_dpop_nonce\""),
                    "dpop-nonce",
                    &"n".repeat(2000),
                ),
                _ => with_header(status(401), "www-authenticate",
                    &format!("DPoP error=\"invalid_token\", error_description=\"{BODY_SECRET}\"")),
            }
        }
    })
    .await
}

/// A planted DPoP key: (PKCS#8 base64url as stored, the private scalar `d` in
/// base64url as a JWK would carry it).
fn planted_dpop_key() -> (String, String) {
    use base64::Engine;
    let rng = ring::rand::SystemRandom::new();
    let der = ring::signature::EcdsaKeyPair::generate_pkcs8(
        &ring::signature::ECDSA_P256_SHA256_FIXED_SIGNING,
        &rng,
    )
    .unwrap();
    let der = der.as_ref();
    // ECPrivateKey: version 1, then the 32-byte private key octets.
    let at = der
        .windows(5)
        .position(|w| w == [0x02, 0x01, 0x01, 0x04, 0x20])
        .unwrap()
        + 5;
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    (b64.encode(der), b64.encode(&der[at..at + 32]))
}

fn planted_dpop_store(issuer: &str, pkcs8: &str) -> smthrs_mcp::auth::StoredAuth {
    use smthrs_mcp::auth::StoredDpopKey;
    let mut tokens = planted_tokens(issuer, "c", ACCESS_SECRET, CODE_SECRET);
    tokens.tokens.dpop_bound = true;
    smthrs_mcp::auth::StoredAuth {
        registrations: vec![],
        tokens: Some(tokens),
        redirect_port: None,
        dpop_keys: vec![StoredDpopKey {
            issuer: issuer.to_owned(),
            pkcs8: SecretString::from(pkcs8.to_owned()),
        }],
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn dpop_keys_and_proofs_never_surface() {
    use smthrs_mcp::auth::{MemoryStore, OAuth, TokenStore};
    let (pkcs8, d) = planted_dpop_key();
    let check = |what: &str, text: &str, proofs: &[String]| {
        assert_clean(what, text);
        assert!(!text.contains(&pkcs8), "{what} leaks the DPoP key: {text}");
        assert!(!text.contains(&d), "{what} leaks the DPoP key's d: {text}");
        for proof in proofs {
            // A proof's signature is its unguessable part.
            let signature = proof.rsplit('.').next().unwrap();
            assert!(
                !text.contains(signature),
                "{what} leaks a DPoP proof: {text}"
            );
        }
    };
    for long_nonce in [true, false] {
        let what = if long_nonce {
            "over-long nonce"
        } else {
            "refused proof"
        };
        let proofs = Arc::new(std::sync::Mutex::new(Vec::new()));
        let server = dpop_peer(proofs.clone(), long_nonce).await;
        let issuer = server.url().strip_suffix("/mcp").unwrap().to_owned();
        let store = Arc::new(MemoryStore::new());
        store
            .save("remote", &planted_dpop_store(&issuer, &pkcs8))
            .unwrap();
        let transport = oauth_transport(server.url(), OAuth::new().store(store.clone()));
        let (error, observer) = refused_over_http(transport).await;
        let proofs = proofs.lock().unwrap().clone();
        // Proofs were really made with the planted key, and sent.
        assert!(!proofs.is_empty(), "{what}");
        let kind = if long_nonce {
            ErrorKind::ProtocolError
        } else {
            ErrorKind::Unauthorized
        };
        assert_eq!(error.kind(), kind, "{what}: {error}");
        for text in [
            error.to_string(),
            format!("{error:?}"),
            format!("{error:#?}"),
            format!("{:?}", store.load("remote").unwrap()),
        ] {
            check(what, &text, &proofs);
        }
        for (_, text) in observer.events() {
            check(what, &text, &proofs);
        }
    }

    // The CLI, from a token file holding the key: nothing on stdout or stderr.
    let proofs = Arc::new(std::sync::Mutex::new(Vec::new()));
    let server = dpop_peer(proofs.clone(), false).await;
    let issuer = server.url().strip_suffix("/mcp").unwrap().to_owned();
    let dir = tempfile::tempdir().unwrap();
    let store = smthrs_mcp::auth::FileStore::new(dir.path().join("smthrs-mcp/tokens.json"));
    store
        .save("srv", &planted_dpop_store(&issuer, &pkcs8))
        .unwrap();
    let config = dir.path().join("servers.json");
    std::fs::write(
        &config,
        json!([{"server": "srv", "url": server.url(), "oauth": {}}]).to_string(),
    )
    .unwrap();
    let state_home = dir.path().to_str().unwrap().to_owned();
    for args in [
        vec!["--mcp-config", config.to_str().unwrap(), "tools"],
        vec![
            "--mcp-config",
            config.to_str().unwrap(),
            "--diagnostics",
            "tools",
        ],
    ] {
        let (code, stdout, stderr) = run_cli(&args, &[("XDG_STATE_HOME", &state_home)]).await;
        assert_eq!(code, Some(1), "{stderr}");
        let proofs = proofs.lock().unwrap().clone();
        assert!(!proofs.is_empty());
        check("CLI stdout", &stdout, &proofs);
        check("CLI stderr", &stderr, &proofs);
    }
}
