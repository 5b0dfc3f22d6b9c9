//! Interop with `@modelcontextprotocol/server-github` 2025.4.8 (npm, pinned in
//! `interop/package-lock.json`, installed by `.ci/run` with `npm ci`): an archived
//! reference server on the TypeScript SDK 1.0.1 that many server files still name,
//! and that answers `initialize` with `protocolVersion: "2024-11-05"`. Stdio only
//! (the package has no HTTP mode).
//!
//! Its catalog must match, tool for tool, what the official TypeScript client
//! (`@modelcontextprotocol/sdk`, as npm resolved it, through
//! `interop/typescript/list_tools.mjs`) lists from the same server. No tool that
//! reaches GitHub is called (the machine has no network but the package
//! registries): the call checked fails the server's own argument validation.
//!
//! Locally, when `interop/node_modules` is absent, the tests print a notice and pass
//! vacuously; under CI (`CI=true`) a missing peer is a failure.

mod support;

use std::path::PathBuf;

use serde_json::{Value, json};
use smthrs_mcp::{Client, ErrorKind, StdioCommand};
use support::args;
use support::interop;
use support::interop::Era;

const PEER: &str = "github";

fn interop_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("interop")
}

fn github_entry() -> Option<PathBuf> {
    let path = interop_dir().join("node_modules/@modelcontextprotocol/server-github/dist/index.js");
    interop::require(
        path.exists().then_some(path),
        "interop/node_modules/@modelcontextprotocol/server-github",
        "cd interop && npm ci",
    )
}

/// What the official TypeScript client lists from the same server.
fn reference_listing(entry: &PathBuf) -> Value {
    let output = std::process::Command::new("node")
        .arg(interop_dir().join("typescript/list_tools.mjs"))
        .arg("node")
        .arg(entry)
        .output()
        .expect("run node interop/typescript/list_tools.mjs");
    assert!(
        output.status.success(),
        "the reference client failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("the reference client prints JSON")
}

#[tokio::test]
async fn stdio_a_2024_11_05_server_lists_what_the_official_client_lists() {
    let Some(entry) = github_entry() else {
        return;
    };
    let client = interop::connect(
        Client::builder(PEER),
        StdioCommand::new("node").arg(&entry),
        PEER,
        "stdio",
        Era::Legacy,
    )
    .await
    .expect("connect to server-github over stdio");
    assert_eq!(client.protocol_version(), "2024-11-05");
    assert_eq!(client.era(), smthrs_mcp::Era::Legacy);

    let reference = reference_listing(&entry);
    assert_eq!(reference["protocolVersion"], "2024-11-05");
    let theirs = reference["tools"].as_array().expect("tools");
    assert!(theirs.len() >= 20, "{} tools", theirs.len());
    let ours: Vec<Value> = client
        .catalog()
        .iter()
        .map(|tool| Value::Object(tool.as_sent().clone()))
        .collect();
    assert_eq!(ours.len(), theirs.len());
    for (mine, reference) in ours.iter().zip(theirs) {
        assert_eq!(mine, reference, "tool {}", reference["name"]);
    }
    // What 2024-11-05 lacks is absent, not an error.
    assert!(client.catalog().iter().all(|t| t.output_schema().is_none()));
    client.close().await;
}

#[tokio::test]
async fn stdio_a_call_the_server_refuses_is_its_error_and_the_session_goes_on() {
    let Some(entry) = github_entry() else {
        return;
    };
    let client = Client::builder(PEER)
        .connect(StdioCommand::new("node").arg(&entry))
        .await
        .expect("connect to server-github over stdio");
    // `query` is required: the server's validation refuses the call before any
    // request to GitHub, with a JSON-RPC error (SDK 1.0.1 turns a thrown error
    // into -32603).
    for _ in 0..2 {
        let error = client
            .call_tool("search_repositories", args(json!({"page": 1})))
            .await
            .unwrap_err();
        assert_eq!(error.kind(), ErrorKind::RemoteError, "{error}");
        assert!(error.remote_code().is_some(), "{error:?}");
    }
    assert!(client.terminal_error().is_none());
    client.close().await;
}
