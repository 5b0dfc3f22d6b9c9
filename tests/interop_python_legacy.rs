//! Interop with the last 1.x release of the official MCP Python SDK (`mcp` 1.30.0 on
//! PyPI, pinned with hashes in `interop/python/requirements-legacy.lock`, installed into
//! `interop/python/.venv-legacy`): the server in `interop/python/server_legacy.py`
//! (FastMCP), over stdio and over Streamable HTTP (stateful: `Mcp-Session-Id`): its tools,
//! its resources, resource template, prompts and completions
//! ([`interop::offers_besides_tools`]), and that it declares no change events
//! ([`interop::no_change_events`]).
//!
//! A legacy-only peer: it answers `server/discover` with -32602 on stdio and with a
//! 400 (-32600, "Missing session ID") on HTTP, then serves `initialize` on the same
//! process or endpoint (`interop/servers/PROBES.md`). Every pair must negotiate the
//! legacy handshake (the default mode probes, then falls back).
//!
//! `.ci/run` creates the venv with `bash interop/python/setup.sh`. Locally, when it is
//! absent, the tests print a notice and pass vacuously; under CI (`CI=true`) a missing
//! peer is a failure.

mod support;

use std::time::Duration;

use smthrs_mcp::Client;
use smthrs_mcp::transport::http::HttpTransport;
use support::interop;
use support::interop::{Era, OurServer, PythonServer, Reach, Refusal, Refusals, SlowUnit};
use support::peer_process::HttpPeer;

const PEER: &str = "python-legacy";
const PYTHON_LEGACY: OurServer = OurServer {
    peer: PEER,
    speaks: Era::Legacy,
    slow: SlowUnit::Seconds,
};

/// The legacy venv's interpreter and the server script.
fn legacy_peer() -> Option<PythonServer> {
    PythonServer::find(".venv-legacy", "server_legacy.py")
}

/// The server serving Streamable HTTP on a free port (`None`: the venv is missing).
async fn http() -> Option<HttpPeer> {
    let peer = legacy_peer()?;
    Some(HttpPeer::start(|port| peer.http(port), Duration::from_secs(30)).await)
}

/// How a test reaches `server` (its log shown if connecting fails).
fn reach(server: &HttpPeer) -> Reach<'_, HttpTransport> {
    Reach::http(server.transport(PEER), || server.log())
}

#[tokio::test]
async fn stdio_tools_and_calls() {
    if let Some(peer) = legacy_peer() {
        let client = PYTHON_LEGACY.tools_and_calls(peer.stdio()).await;
        client.close().await;
    }
}

#[tokio::test]
async fn stdio_timeout_then_cancel() {
    if let Some(peer) = legacy_peer() {
        let client = PYTHON_LEGACY.timeout_then_cancel(peer.stdio()).await;
        client.close().await;
    }
}

#[tokio::test]
async fn http_tools_and_calls() {
    if let Some(server) = http().await {
        let client = PYTHON_LEGACY.tools_and_calls(reach(&server)).await;
        client.close().await;
    }
}

#[tokio::test]
async fn http_timeout_then_cancel() {
    if let Some(server) = http().await {
        let client = PYTHON_LEGACY.timeout_then_cancel(reach(&server)).await;
        client.close().await;
    }
}

/// What `mcp` 1.30.0 answers where servers differ (measured on both transports):
/// JSON-RPC error code 0 for an unknown resource and for a `prompts/get` missing a
/// required argument (FastMCP raises `ValueError`; the low-level server answers any
/// exception that is not an `McpError` with code 0), so both are `remote_error`, not
/// `not_found`: the client does not guess "not found" from an unspecified code.
const REFUSALS: Refusals = Refusals {
    unknown_resource: Refusal::Remote(0),
    missing_argument_unlisted: Refusal::Remote(0),
};

#[tokio::test]
async fn stdio_resources_prompts_and_completion() {
    if let Some(peer) = legacy_peer() {
        let client = PYTHON_LEGACY
            .offers_besides_tools(peer.stdio(), REFUSALS)
            .await;
        client.close().await;
    }
}

#[tokio::test]
async fn http_resources_prompts_and_completion() {
    if let Some(server) = http().await {
        let client = PYTHON_LEGACY
            .offers_besides_tools(reach(&server), REFUSALS)
            .await;
        client.close().await;
    }
}

/// Change events (issue 32): FastMCP 1.30 declares none (`listChanged` false on every
/// list, `resources.subscribe` false, and `resources/subscribe` is -32601), though its
/// `touch`/`change` tools make it send them unasked. Subscribing is refused before
/// anything is sent, and the unasked notifications do not disturb the session
/// ([`interop::no_change_events`]).
#[tokio::test]
async fn stdio_change_events_are_not_declared() {
    if let Some(peer) = legacy_peer() {
        let client = PYTHON_LEGACY.no_change_events(peer.stdio()).await;
        client.close().await;
    }
}

#[tokio::test]
async fn http_change_events_are_not_declared() {
    if let Some(server) = http().await {
        let client = PYTHON_LEGACY.no_change_events(reach(&server)).await;
        client.close().await;
    }
}

/// The list changes FastMCP 1.30 sends but does not declare, taken as declared
/// (`assume_capabilities`, the documented loosening of beyond-tools.md Q1 this
/// server is the named reason for): subscribing to them works over both
/// transports ([`interop::assumed_list_changes`]).
fn assuming_list_changes() -> smthrs_mcp::ClientBuilder {
    Client::builder(PEER).assume_capabilities(serde_json::json!({
        "tools": {"listChanged": true},
        "prompts": {"listChanged": true},
        "resources": {"listChanged": true},
    }))
}

#[tokio::test]
async fn stdio_assumed_list_changes_arrive() {
    if let Some(peer) = legacy_peer() {
        let client = peer.stdio().connect(assuming_list_changes()).await;
        assert_eq!(client.capabilities()["tools"]["listChanged"], true);
        interop::assumed_list_changes(&client).await;
        client.close().await;
    }
}

#[tokio::test]
async fn http_assumed_list_changes_arrive() {
    if let Some(server) = http().await {
        let client = reach(&server).connect(assuming_list_changes()).await;
        interop::assumed_list_changes(&client).await;
        client.close().await;
    }
}
