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
use std::path::PathBuf;
use std::time::Duration;
use support::interop;
use support::peer_process;

use interop::{Era, Refusal, Refusals, SlowUnit};
use peer_process::HttpPeer;
use smthrs_mcp::{Client, StdioCommand};

const PEER: &str = "python";
const SLOW: SlowUnit = SlowUnit::Seconds;

/// The venv's interpreter and the server script.
fn python_peer() -> Option<(PathBuf, PathBuf)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("interop/python");
    let python = dir.join(".venv/bin/python");
    let found = python.exists().then(|| (python, dir.join("server.py")));
    interop::require(
        found,
        "interop/python/.venv",
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
        Era::Modern,
    )
    .await
    .expect("connect to the Python SDK server over stdio");
    interop::expect_era(&client, Era::Modern);
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
    interop::expect_era(&client, Era::Modern);
    interop::timeout_then_cancel(&client, SLOW).await;
    client.close().await;
}

#[tokio::test]
async fn stdio_negotiates_modern() {
    let Some(peer) = python_peer() else {
        return;
    };
    let client = Client::builder(PEER).connect(stdio(&peer)).await.unwrap();
    interop::expect_modern(&client);
    interop::tools_and_calls(&client, SLOW).await;
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
        Era::Modern,
    )
    .await
    .unwrap_or_else(|e| panic!("connect over Streamable HTTP: {e}\n{}", server.log()));
    interop::expect_era(&client, Era::Modern);
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
    interop::expect_era(&client, Era::Modern);
    interop::timeout_then_cancel(&client, SLOW).await;
    client.close().await;
}

#[tokio::test]
async fn http_negotiates_modern() {
    let Some(peer) = python_peer() else {
        return;
    };
    let server = http(&peer).await;
    let client = Client::builder(PEER)
        .connect(server.transport(PEER))
        .await
        .unwrap_or_else(|e| panic!("connect over Streamable HTTP: {e}\n{}", server.log()));
    interop::expect_modern(&client);
    interop::tools_and_calls(&client, SLOW).await;
    client.close().await;
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
    let Some(peer) = python_peer() else {
        return;
    };
    let client = Client::builder(PEER)
        .connect(stdio(&peer))
        .await
        .expect("connect over stdio");
    interop::expect_era(&client, Era::Modern);
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
    interop::expect_era(&client, Era::Modern);
    interop::offers_besides_tools(&client, REFUSALS).await;
    client.close().await;
}

/// Change events (issue 32) over stdio, in 2026-07-28: `subscriptions/listen`, the
/// server's `touch`/`change` tools as triggers ([`interop::change_events`]).
#[tokio::test]
async fn stdio_change_events() {
    let Some(peer) = python_peer() else {
        return;
    };
    let drops = interop::Drops::new();
    let client = Client::builder(PEER)
        .diagnostics(drops.clone())
        .connect(stdio(&peer))
        .await
        .expect("connect over stdio");
    interop::expect_era(&client, Era::Modern);
    interop::change_events(&client, &drops).await;
    client.close().await;
}

/// The same over Streamable HTTP: each listen is a POST answered with an event stream.
#[tokio::test]
async fn http_change_events() {
    let Some(peer) = python_peer() else {
        return;
    };
    let server = http(&peer).await;
    let drops = interop::Drops::new();
    let client = Client::builder(PEER)
        .diagnostics(drops.clone())
        .connect(server.transport(PEER))
        .await
        .unwrap_or_else(|e| panic!("connect over Streamable HTTP: {e}\n{}", server.log()));
    interop::expect_era(&client, Era::Modern);
    interop::change_events(&client, &drops).await;
    client.close().await;
}
