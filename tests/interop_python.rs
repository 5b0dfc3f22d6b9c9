//! Interop with the official MCP Python SDK (`mcp` on PyPI, pinned with hashes in
//! `interop/python/requirements.lock`): the server in `interop/python/server.py`
//! (FastMCP, called `MCPServer` since mcp 2), over stdio and over Streamable HTTP.
//!
//! `.ci/run` creates the venv with `bash interop/python/setup.sh`. Locally, when
//! `interop/python/.venv` is absent, the tests print a notice and pass vacuously;
//! under CI (`CI=true`) a missing peer is a failure.

#[path = "support/peer_process.rs"]
mod peer_process;
mod support;

use std::path::PathBuf;
use std::time::Duration;

use peer_process::HttpPeer;
use serde_json::json;
use smthrs_mcp::{Client, ErrorKind, Limits, StdioCommand, ToolResult};
use support::args;

/// The venv's interpreter and the server script.
fn python_peer() -> Option<(PathBuf, PathBuf)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("interop/python");
    let python = dir.join(".venv/bin/python");
    if python.exists() {
        return Some((python, dir.join("server.py")));
    }
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("interop peer missing under CI: run `bash interop/python/setup.sh`");
    }
    eprintln!("skipping: interop/python/.venv not installed (bash interop/python/setup.sh)");
    None
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

fn text(result: &ToolResult) -> &str {
    result.content[0]["text"].as_str().unwrap_or_default()
}

fn timeout_limits() -> Limits {
    Limits {
        request_timeout_ms: 300,
        ..Limits::default()
    }
}

/// Catalog, `echo`, `add` (structured), a bad argument as `isError`, a short `slow`.
async fn tools_and_calls(client: &Client) {
    for name in ["echo", "add", "slow"] {
        assert!(client.catalog().get(name).is_some(), "missing {name}");
    }
    let echoed = client
        .call_tool("echo", args(json!({"text": "hi there"})))
        .await
        .unwrap();
    assert!(!echoed.is_error, "{echoed:?}");
    assert_eq!(text(&echoed), "hi there");
    let sum = client
        .call_tool("add", args(json!({"a": 2, "b": 40})))
        .await
        .unwrap();
    assert!(!sum.is_error, "{sum:?}");
    let structured = sum.structured_content.as_ref().expect("structured content");
    assert_eq!(structured["sum"].as_f64(), Some(42.0), "{sum:?}");
    // Bad arguments are a tool error (`isError: true`), not a JSON-RPC error.
    let bad = client
        .call_tool("add", args(json!({"a": "x", "b": 1})))
        .await
        .unwrap();
    assert!(bad.is_error, "{bad:?}");
    let quick = client
        .call_tool("slow", args(json!({"seconds": 0.01})))
        .await
        .unwrap();
    assert!(text(&quick).contains("slept"), "{quick:?}");
}

/// A call past `requestTimeoutMs` fails with `Timeout`; the same session then serves
/// the next call.
async fn timeout_then_cancel(client: &Client) {
    let error = client
        .call_tool("slow", args(json!({"seconds": 5})))
        .await
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Timeout, "{error}");
    let echoed = client
        .call_tool("echo", args(json!({"text": "still here"})))
        .await
        .unwrap();
    assert_eq!(text(&echoed), "still here");
    let sum = client
        .call_tool("add", args(json!({"a": 1, "b": 2})))
        .await
        .unwrap();
    assert_eq!(
        sum.structured_content.as_ref().unwrap()["sum"].as_f64(),
        Some(3.0)
    );
}

#[tokio::test]
async fn stdio_tools_and_calls() {
    let Some(peer) = python_peer() else {
        return;
    };
    let client = Client::builder("python")
        .connect(stdio(&peer))
        .await
        .expect("connect to the Python SDK server over stdio");
    tools_and_calls(&client).await;
    client.close().await;
}

#[tokio::test]
async fn stdio_timeout_then_cancel() {
    let Some(peer) = python_peer() else {
        return;
    };
    let client = Client::builder("python")
        .limits(timeout_limits())
        .connect(stdio(&peer))
        .await
        .unwrap();
    timeout_then_cancel(&client).await;
    client.close().await;
}

#[tokio::test]
async fn http_tools_and_calls() {
    let Some(peer) = python_peer() else {
        return;
    };
    let server = http(&peer).await;
    let client = Client::builder("python")
        .connect(server.transport("python"))
        .await
        .unwrap_or_else(|e| panic!("connect over Streamable HTTP: {e}\n{}", server.log()));
    tools_and_calls(&client).await;
    client.close().await;
}

#[tokio::test]
async fn http_timeout_then_cancel() {
    let Some(peer) = python_peer() else {
        return;
    };
    let server = http(&peer).await;
    let client = Client::builder("python")
        .limits(timeout_limits())
        .connect(server.transport("python"))
        .await
        .unwrap_or_else(|e| panic!("connect over Streamable HTTP: {e}\n{}", server.log()));
    timeout_then_cancel(&client).await;
    client.close().await;
}
