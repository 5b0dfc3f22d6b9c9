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
use std::path::PathBuf;
use std::time::Duration;
use support::interop;
use support::peer_process;

use interop::{Era, Refusal, Refusals, SlowUnit};
use peer_process::HttpPeer;
use smthrs_mcp::{Client, StdioCommand};

const PEER: &str = "python-legacy";
const SLOW: SlowUnit = SlowUnit::Seconds;

/// The legacy venv's interpreter and the server script.
fn python_peer() -> Option<(PathBuf, PathBuf)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("interop/python");
    let python = dir.join(".venv-legacy/bin/python");
    let found = python
        .exists()
        .then(|| (python, dir.join("server_legacy.py")));
    interop::require(
        found,
        "interop/python/.venv-legacy",
        "bash interop/python/setup.sh",
    )
}

fn stdio((python, script): &(PathBuf, PathBuf)) -> StdioCommand {
    StdioCommand::new(python).arg(script).arg("stdio")
}

async fn http((python, script): &(PathBuf, PathBuf)) -> HttpPeer {
    let (python, script) = (python.clone(), script.clone());
    HttpPeer::start(
        move |port| {
            let mut command = std::process::Command::new(python);
            command
                .arg(script)
                .arg("streamable-http")
                .arg(port.to_string());
            command
        },
        Duration::from_secs(30),
    )
    .await
}

#[tokio::test]
async fn stdio_tools_and_calls() {
    let Some(peer) = python_peer() else {
        return;
    };
    let client = interop::connect(
        Client::builder(PEER),
        stdio(&peer),
        PEER,
        "stdio",
        Era::Legacy,
    )
    .await
    .expect("connect to the Python SDK 1.x server over stdio");
    interop::expect_era(&client, Era::Legacy);
    interop::tools_and_calls(&client, SLOW).await;
    client.close().await;
}

#[tokio::test]
async fn stdio_timeout_then_cancel() {
    let Some(peer) = python_peer() else {
        return;
    };
    let client = Client::builder(PEER)
        .limits(interop::timeout_limits())
        .connect(stdio(&peer))
        .await
        .unwrap();
    interop::expect_era(&client, Era::Legacy);
    interop::timeout_then_cancel(&client, SLOW).await;
    client.close().await;
}

#[tokio::test]
async fn http_tools_and_calls() {
    let Some(peer) = python_peer() else {
        return;
    };
    let server = http(&peer).await;
    let client = interop::connect(
        Client::builder(PEER),
        server.transport(PEER),
        PEER,
        "http",
        Era::Legacy,
    )
    .await
    .unwrap_or_else(|e| panic!("connect over Streamable HTTP: {e}\n{}", server.log()));
    interop::expect_era(&client, Era::Legacy);
    interop::tools_and_calls(&client, SLOW).await;
    client.close().await;
}

#[tokio::test]
async fn http_timeout_then_cancel() {
    let Some(peer) = python_peer() else {
        return;
    };
    let server = http(&peer).await;
    let client = Client::builder(PEER)
        .limits(interop::timeout_limits())
        .connect(server.transport(PEER))
        .await
        .unwrap_or_else(|e| panic!("connect over Streamable HTTP: {e}\n{}", server.log()));
    interop::expect_era(&client, Era::Legacy);
    interop::timeout_then_cancel(&client, SLOW).await;
    client.close().await;
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
    let Some(peer) = python_peer() else {
        return;
    };
    let client = Client::builder(PEER)
        .connect(stdio(&peer))
        .await
        .expect("connect over stdio");
    interop::expect_era(&client, Era::Legacy);
    interop::offers_besides_tools(&client, REFUSALS).await;
    client.close().await;
}

#[tokio::test]
async fn http_resources_prompts_and_completion() {
    let Some(peer) = python_peer() else {
        return;
    };
    let server = http(&peer).await;
    let client = Client::builder(PEER)
        .connect(server.transport(PEER))
        .await
        .unwrap_or_else(|e| panic!("connect over Streamable HTTP: {e}\n{}", server.log()));
    interop::expect_era(&client, Era::Legacy);
    interop::offers_besides_tools(&client, REFUSALS).await;
    client.close().await;
}

/// Change events (issue 32): FastMCP 1.30 declares none (`listChanged` false on every
/// list, `resources.subscribe` false, and `resources/subscribe` is -32601), though its
/// `touch`/`change` tools make it send them unasked. Subscribing is refused before
/// anything is sent, and the unasked notifications do not disturb the session
/// ([`interop::no_change_events`]).
#[tokio::test]
async fn stdio_change_events_are_not_declared() {
    let Some(peer) = python_peer() else {
        return;
    };
    let client = Client::builder(PEER)
        .connect(stdio(&peer))
        .await
        .expect("connect over stdio");
    interop::expect_era(&client, Era::Legacy);
    interop::no_change_events(&client).await;
    client.close().await;
}

#[tokio::test]
async fn http_change_events_are_not_declared() {
    let Some(peer) = python_peer() else {
        return;
    };
    let server = http(&peer).await;
    let client = Client::builder(PEER)
        .connect(server.transport(PEER))
        .await
        .unwrap_or_else(|e| panic!("connect over Streamable HTTP: {e}\n{}", server.log()));
    interop::expect_era(&client, Era::Legacy);
    interop::no_change_events(&client).await;
    client.close().await;
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
    let Some(peer) = python_peer() else {
        return;
    };
    let client = assuming_list_changes()
        .connect(stdio(&peer))
        .await
        .expect("connect over stdio");
    assert_eq!(client.capabilities()["tools"]["listChanged"], true);
    interop::assumed_list_changes(&client).await;
    client.close().await;
}

#[tokio::test]
async fn http_assumed_list_changes_arrive() {
    let Some(peer) = python_peer() else {
        return;
    };
    let server = http(&peer).await;
    let client = assuming_list_changes()
        .connect(server.transport(PEER))
        .await
        .unwrap_or_else(|e| panic!("connect over Streamable HTTP: {e}\n{}", server.log()));
    interop::assumed_list_changes(&client).await;
    client.close().await;
}
