//! Interop with the official Rust SDK (`rmcp`, a dev-dependency): the server in
//! `examples/rmcp_server.rs`, over stdio and over Streamable HTTP (rmcp's
//! `StreamableHttpService` on hyper, 127.0.0.1 only).
//!
//! `cargo test` builds examples, so the binary sits at
//! `<target>/debug/examples/rmcp_server` when the tests run. Run alone
//! (`cargo test --test interop_rmcp`), cargo may not build it: then the tests print a
//! notice and pass vacuously, except under CI (`CI=true`), where that is a failure.

#[path = "support/peer_process.rs"]
mod peer_process;
mod support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use peer_process::HttpPeer;
use serde_json::json;
use smthrs_mcp::{Client, ErrorKind, Limits, StdioCommand, ToolResult};
use support::args;

/// `<target>/<profile>/examples/rmcp_server`, next to this test's `deps/` directory.
fn rmcp_server() -> Option<PathBuf> {
    let exe = std::env::current_exe().expect("current_exe");
    let profile_dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("tests run from <target>/<profile>/deps");
    let path = profile_dir
        .join("examples")
        .join(format!("rmcp_server{}", std::env::consts::EXE_SUFFIX));
    if path.exists() {
        let source = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/rmcp_server.rs");
        let modified = |p: &PathBuf| std::fs::metadata(p).and_then(|m| m.modified()).ok();
        if modified(&source) > modified(&path) {
            eprintln!(
                "warning: {} is older than examples/rmcp_server.rs; \
                 run `cargo build --example rmcp_server`",
                path.display()
            );
        }
        return Some(path);
    }
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!(
            "interop peer missing under CI: {} (plain `cargo test` builds it)",
            path.display()
        );
    }
    eprintln!(
        "skipping: {} not built (cargo build --example rmcp_server)",
        path.display()
    );
    None
}

async fn http(server: &Path) -> HttpPeer {
    let server = server.to_path_buf();
    HttpPeer::start(
        move |port| {
            let mut command = std::process::Command::new(server);
            command.arg("http").arg(port.to_string());
            command
        },
        Duration::from_secs(15),
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

/// Catalog, `echo`, `add` (structured), a bad argument as `isError`.
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
    assert_eq!(
        sum.structured_content.as_ref().expect("structured content")["sum"],
        json!(42),
        "{sum:?}"
    );
    // Arguments that do not deserialize are a tool error (`isError: true`).
    let bad = client
        .call_tool("add", args(json!({"a": "x", "b": 1})))
        .await
        .unwrap();
    assert!(bad.is_error, "{bad:?}");
    let quick = client
        .call_tool("slow", args(json!({"ms": 10})))
        .await
        .unwrap();
    assert_eq!(text(&quick), "slept 10 ms");
}

/// A call past `requestTimeoutMs` fails with `Timeout`; the same session then serves
/// the next call.
async fn timeout_then_cancel(client: &Client) {
    let error = client
        .call_tool("slow", args(json!({"ms": 5000})))
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
    assert_eq!(sum.structured_content.as_ref().unwrap()["sum"], json!(3));
}

#[tokio::test]
async fn stdio_tools_and_calls() {
    let Some(server) = rmcp_server() else {
        return;
    };
    let client = Client::builder("rmcp")
        .connect(StdioCommand::new(&server).arg("stdio"))
        .await
        .expect("connect to the rmcp server over stdio");
    tools_and_calls(&client).await;
    client.close().await;
}

#[tokio::test]
async fn stdio_timeout_then_cancel() {
    let Some(server) = rmcp_server() else {
        return;
    };
    let client = Client::builder("rmcp")
        .limits(timeout_limits())
        .connect(StdioCommand::new(&server).arg("stdio"))
        .await
        .unwrap();
    timeout_then_cancel(&client).await;
    client.close().await;
}

#[tokio::test]
async fn http_tools_and_calls() {
    let Some(server) = rmcp_server() else {
        return;
    };
    let peer = http(&server).await;
    let client = Client::builder("rmcp")
        .connect(peer.transport("rmcp"))
        .await
        .unwrap_or_else(|e| panic!("connect over Streamable HTTP: {e}\n{}", peer.log()));
    tools_and_calls(&client).await;
    client.close().await;
}

#[tokio::test]
async fn http_timeout_then_cancel() {
    let Some(server) = rmcp_server() else {
        return;
    };
    let peer = http(&server).await;
    let client = Client::builder("rmcp")
        .limits(timeout_limits())
        .connect(peer.transport("rmcp"))
        .await
        .unwrap_or_else(|e| panic!("connect over Streamable HTTP: {e}\n{}", peer.log()));
    timeout_then_cancel(&client).await;
    client.close().await;
}
