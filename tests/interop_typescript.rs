//! Interop with the official TypeScript SDK's server package
//! (`@modelcontextprotocol/server` 2.4.0, npm, pinned in `interop/package-lock.json`,
//! installed by `.ci/run` with `npm ci`): the server in `interop/typescript/server.mjs`,
//! over stdio (`serveStdio`) and over Streamable HTTP (`createMcpHandler`, stateless
//! legacy serving: no session id, GET and DELETE answered 405): its tools, and its
//! resources, resource template, prompts and completions
//! ([`interop::offers_besides_tools`]), and change events ([`interop::change_events`]:
//! `subscriptions/listen` on both transports, and `resources/subscribe` in a legacy
//! stdio session), and the progress its `steps` tool reports.
//!
//! The peer is dual-era (it answers `server/discover` with `supportedVersions:
//! ["2026-07-28"]` and still serves `initialize`, see `interop/servers/PROBES.md`), so
//! the default mode's target is modern on both transports ([`interop::expect_era`]).
//! Locally, without `interop/node_modules`, the tests print a notice and pass
//! vacuously; under CI (`CI=true`) a missing peer is a failure.

mod support;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;
use smthrs_mcp::transport::http::HttpTransport;
use smthrs_mcp::{CallEvent, CallOptions, Client, ProtocolMode, StdioCommand};
use support::interop;
use support::interop::{Era, OurServer, Reach, Refusal, Refusals, SlowUnit};
use support::peer_process::HttpPeer;

const PEER: &str = "typescript";
const TYPESCRIPT: OurServer = OurServer {
    peer: PEER,
    speaks: Era::Modern,
    slow: SlowUnit::Millis,
};

/// `interop/typescript/server.mjs`, when its npm dependencies are installed.
fn server_script() -> Option<PathBuf> {
    let interop = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("interop");
    let found = interop
        .join("node_modules/@modelcontextprotocol/server/package.json")
        .exists()
        .then(|| interop.join("typescript/server.mjs"));
    interop::require(
        found,
        "interop/node_modules/@modelcontextprotocol/server",
        "cd interop && npm ci",
    )
}

/// The server over stdio (`None`: not installed).
fn stdio() -> Option<Reach<'static, StdioCommand>> {
    let script = server_script()?;
    Some(Reach::stdio(
        StdioCommand::new("node").arg(script).arg("stdio"),
    ))
}

/// The server serving Streamable HTTP on a free port (`None`: not installed).
async fn http() -> Option<HttpPeer> {
    let script = server_script()?;
    let serve = |port: u16| {
        let mut command = std::process::Command::new("node");
        command.arg(script).arg("http").arg(port.to_string());
        command
    };
    Some(HttpPeer::start(serve, Duration::from_secs(30)).await)
}

/// How a test reaches `server` (its log shown if connecting fails).
fn reach(server: &HttpPeer) -> Reach<'_, HttpTransport> {
    Reach::http(server.transport(PEER), || server.log())
}

#[tokio::test]
async fn stdio_tools_and_calls() {
    if let Some(stdio) = stdio() {
        let client = TYPESCRIPT.tools_and_calls(stdio).await;
        steps_report_progress(&client).await;
        client.close().await;
    }
}

/// `steps` reports each step with `notifications/progress` naming the call's
/// token (the SDK's `notify`, on HTTP on the request's own response stream, as
/// 2026-07-28 requires): the observer gets every step, in order.
async fn steps_report_progress(client: &Client) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let observer = seen.clone();
    let options = CallOptions::new().on_event(move |event| {
        if let CallEvent::Progress(p) = event {
            observer
                .lock()
                .unwrap()
                .push((p.progress, p.total, p.message));
        }
    });
    let arguments = json!({"count": 3, "ms": 20}).as_object().cloned().unwrap();
    let done = client
        .call_tool_with("steps", arguments, &options)
        .await
        .unwrap();
    assert!(!done.is_error, "{done:?}");
    let step = |i: u32| (f64::from(i), Some(3.0), Some(format!("step {i}")));
    assert_eq!(*seen.lock().unwrap(), [step(1), step(2), step(3)]);
}

#[tokio::test]
async fn stdio_timeout_then_cancel() {
    if let Some(stdio) = stdio() {
        let client = TYPESCRIPT.timeout_then_cancel(stdio).await;
        client.close().await;
    }
}

#[tokio::test]
async fn stdio_negotiates_modern() {
    if let Some(stdio) = stdio() {
        let client = TYPESCRIPT.negotiates_modern(stdio).await;
        client.close().await;
    }
}

#[tokio::test]
async fn http_tools_and_calls() {
    if let Some(server) = http().await {
        let client = TYPESCRIPT.tools_and_calls(reach(&server)).await;
        steps_report_progress(&client).await;
        client.close().await;
    }
}

#[tokio::test]
async fn http_timeout_then_cancel() {
    if let Some(server) = http().await {
        let client = TYPESCRIPT.timeout_then_cancel(reach(&server)).await;
        client.close().await;
    }
}

#[tokio::test]
async fn http_negotiates_modern() {
    if let Some(server) = http().await {
        let client = TYPESCRIPT.negotiates_modern(reach(&server)).await;
        client.close().await;
    }
}

/// What `@modelcontextprotocol/server` 2.4.0 answers where servers differ (measured on
/// both transports, in 2026-07-28): -32602 for an unknown resource (`ResourceNotFoundError`,
/// `data: {uri}`), read as `not_found`; -32602 also for a `prompts/get` that sent only
/// the name `greet` (its zod `argsSchema` rejects the missing `name`), which the client
/// reads as `not_found` too: a -32602 answering a request whose only argument is the
/// name cannot be told apart from "no such prompt" (beyond-tools.md §0.6).
const REFUSALS: Refusals = Refusals {
    unknown_resource: Refusal::NotFound(-32602),
    missing_argument_unlisted: Refusal::NotFound(-32602),
};

#[tokio::test]
async fn stdio_resources_prompts_and_completion() {
    if let Some(stdio) = stdio() {
        let client = TYPESCRIPT.offers_besides_tools(stdio, REFUSALS).await;
        client.close().await;
    }
}

#[tokio::test]
async fn http_resources_prompts_and_completion() {
    if let Some(server) = http().await {
        let client = TYPESCRIPT
            .offers_besides_tools(reach(&server), REFUSALS)
            .await;
        client.close().await;
    }
}

/// Change events (issue 32) over stdio, in 2026-07-28: `subscriptions/listen`, the
/// server's `touch`/`change` tools as triggers ([`interop::change_events`]).
#[tokio::test]
async fn stdio_change_events() {
    if let Some(stdio) = stdio() {
        let client = TYPESCRIPT.change_events(stdio).await;
        client.close().await;
    }
}

/// The same over Streamable HTTP: each listen is a POST answered with an event stream.
#[tokio::test]
async fn http_change_events() {
    if let Some(server) = http().await {
        let client = TYPESCRIPT.change_events(reach(&server)).await;
        client.close().await;
    }
}

/// Change events in a legacy session over stdio (the peer serves `initialize` too, with
/// one pinned instance per connection): `resources/subscribe` and `unsubscribe`, list
/// changes sent unasked, each trigger received. Legacy HTTP is not tested: the SDK
/// serves it statelessly (an instance per request, GET answered 405), so a legacy
/// client there hears of no change.
#[tokio::test]
async fn stdio_legacy_change_events() {
    let Some(stdio) = stdio() else {
        return;
    };
    let drops = interop::Drops::new();
    let legacy = Client::builder(PEER)
        .protocol(ProtocolMode::Legacy)
        .diagnostics(drops.clone());
    let client = stdio.connect(legacy).await;
    assert_eq!(client.protocol_version(), interop::LEGACY_VERSION);
    interop::change_events(&client, &drops).await;
    client.close().await;
}
