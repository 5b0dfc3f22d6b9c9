//! Interop with the official MCP Python SDK (`mcp` 2.3.0 on PyPI, pinned with hashes in
//! `interop/python/requirements.lock`): the server in `interop/python/server.py`
//! (FastMCP, called `MCPServer` since mcp 2), over stdio and over Streamable HTTP: its
//! tools, its resources, resource template, prompts and completions
//! ([`interop::offers_besides_tools`]), and change events over `subscriptions/listen`
//! ([`interop::change_events`]).
//!
//! The peer is dual-era (it answers `server/discover` with `supportedVersions:
//! ["2026-07-28"]` on both transports and still serves `initialize`; on stdio, once it
//! has answered the probe it refuses `initialize` with -32022, see
//! `interop/servers/PROBES.md`), so the default mode's target is modern on both
//! transports ([`interop::expect_era`]).
//!
//! `.ci/run` creates the venv with `bash interop/python/setup.sh`. Locally, when
//! `interop/python/.venv` is absent, the tests print a notice and pass vacuously;
//! under CI (`CI=true`) a missing peer is a failure.

mod support;

use std::time::Duration;

use smthrs_mcp::transport::http::HttpTransport;
use support::interop::{Era, OurServer, PythonServer, Reach, Refusal, Refusals, SlowUnit};
use support::peer_process::HttpPeer;

const PEER: &str = "python";
const PYTHON: OurServer = OurServer {
    peer: PEER,
    speaks: Era::Modern,
    slow: SlowUnit::Seconds,
};

/// The venv's interpreter and the server script.
fn python_peer() -> Option<PythonServer> {
    PythonServer::find(".venv", "server.py")
}

/// The server serving Streamable HTTP on a free port (`None`: the venv is missing).
async fn http() -> Option<HttpPeer> {
    let peer = python_peer()?;
    Some(HttpPeer::start(|port| peer.http(port), Duration::from_secs(30)).await)
}

/// How a test reaches `server` (its log shown if connecting fails).
fn reach(server: &HttpPeer) -> Reach<'_, HttpTransport> {
    Reach::http(server.transport(PEER), || server.log())
}

#[tokio::test]
async fn stdio_tools_and_calls() {
    if let Some(peer) = python_peer() {
        let client = PYTHON.tools_and_calls(peer.stdio()).await;
        client.close().await;
    }
}

#[tokio::test]
async fn stdio_timeout_then_cancel() {
    if let Some(peer) = python_peer() {
        let client = PYTHON.timeout_then_cancel(peer.stdio()).await;
        client.close().await;
    }
}

#[tokio::test]
async fn stdio_negotiates_modern() {
    if let Some(peer) = python_peer() {
        let client = PYTHON.negotiates_modern(peer.stdio()).await;
        client.close().await;
    }
}

#[tokio::test]
async fn http_tools_and_calls() {
    if let Some(server) = http().await {
        let client = PYTHON.tools_and_calls(reach(&server)).await;
        client.close().await;
    }
}

#[tokio::test]
async fn http_timeout_then_cancel() {
    if let Some(server) = http().await {
        let client = PYTHON.timeout_then_cancel(reach(&server)).await;
        client.close().await;
    }
}

#[tokio::test]
async fn http_negotiates_modern() {
    if let Some(server) = http().await {
        let client = PYTHON.negotiates_modern(reach(&server)).await;
        client.close().await;
    }
}

/// What `mcp` 2.3.0 answers where servers differ (measured on both transports, in
/// 2026-07-28): an unknown resource is -32602 (`ResourceNotFoundError` mapped to
/// INVALID_PARAMS, `data: {uri}`), which the client reads as `not_found`; a `prompts/get`
/// missing a required argument is -32603 "Internal server error" (`MCPServer.get_prompt`
/// raises `ValueError`; the spec says -32602), a `remote_error`. The same server answers
/// that request with code 0 when a session opened with `initialize` (legacy) asks.
const REFUSALS: Refusals = Refusals {
    unknown_resource: Refusal::NotFound(-32602),
    missing_argument_unlisted: Refusal::Remote(-32603),
};
#[tokio::test]
async fn stdio_resources_prompts_and_completion() {
    if let Some(peer) = python_peer() {
        let client = PYTHON.offers_besides_tools(peer.stdio(), REFUSALS).await;
        client.close().await;
    }
}

#[tokio::test]
async fn http_resources_prompts_and_completion() {
    if let Some(server) = http().await {
        let client = PYTHON.offers_besides_tools(reach(&server), REFUSALS).await;
        client.close().await;
    }
}

/// Change events (issue 32) over stdio, in 2026-07-28: `subscriptions/listen`, the
/// server's `touch`/`change` tools as triggers ([`interop::change_events`]).
#[tokio::test]
async fn stdio_change_events() {
    if let Some(peer) = python_peer() {
        let client = PYTHON.change_events(peer.stdio()).await;
        client.close().await;
    }
}

/// The same over Streamable HTTP: each listen is a POST answered with an event stream.
#[tokio::test]
async fn http_change_events() {
    if let Some(server) = http().await {
        let client = PYTHON.change_events(reach(&server)).await;
        client.close().await;
    }
}
