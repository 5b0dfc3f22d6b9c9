//! Shared by the `tests/interop_*.rs` files (included with `#[path]`):
//!
//! - the convention for a missing peer: a notice and a vacuous pass locally, a failure
//!   under CI (`CI=true`);
//! - the era each (peer, transport) pair must negotiate in the library's default mode,
//!   [`expect_era`];
//! - the line each connect appends to `$SMTHRS_INTEROP_REPORT` (negotiated version,
//!   target era, connect time), which `interop/servers/run.sh` turns into the README
//!   table;
//! - the uniform checks for the server scripts of ours on the SDKs
//!   (`interop/python/server.py` and `server_legacy.py`, `examples/rmcp_server.rs`,
//!   `interop/typescript/server.mjs`):
//!   tools `echo {text}`, `add {a, b}` (structured `{sum}`), `slow` (seconds for the
//!   Python ones, milliseconds for the others).
#![allow(dead_code)]

use std::io::Write;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use smthrs_mcp::{Client, ClientBuilder, ErrorKind, Limits, ToolResult, Transport};

/// The modern revision.
pub const MODERN_VERSION: &str = "2026-07-28";
/// What the legacy handshake proposes, and what every legacy peer here answers.
pub const LEGACY_VERSION: &str = "2025-06-18";

/// The newest era a peer serves on a transport (measured: `interop/servers/PROBES.md`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Era {
    /// Answers `server/discover` with 2026-07-28 in `supportedVersions`.
    Modern,
    /// Serves only the `initialize` handshake.
    Legacy,
}

impl Era {
    fn as_str(self) -> &'static str {
        match self {
            Era::Modern => "modern",
            Era::Legacy => "legacy",
        }
    }
}

/// The version a pair whose peer speaks `speaks` negotiates in the default mode.
pub fn expected_version(speaks: Era) -> &'static str {
    match speaks {
        Era::Modern => MODERN_VERSION,
        Era::Legacy => LEGACY_VERSION,
    }
}

/// Asserts the negotiated revision of a pair whose peer speaks `speaks`.
pub fn expect_era(client: &Client, speaks: Era) {
    let want = expected_version(speaks);
    assert_eq!(
        client.protocol_version(),
        want,
        "server {:?} speaks the {} era; the default mode must negotiate {want}",
        client.server(),
        speaks.as_str(),
    );
}

/// Asserts the modern revision.
pub fn expect_modern(client: &Client) {
    assert_eq!(
        client.protocol_version(),
        MODERN_VERSION,
        "server {:?} speaks 2026-07-28; the default mode must negotiate it",
        client.server()
    );
}

/// `Some(value)` when the peer is installed; otherwise a notice and `None` locally,
/// a panic under CI (`CI=true`), so CI cannot go green without the peer.
pub fn require<T>(found: Option<T>, what: &str, install: &str) -> Option<T> {
    if found.is_some() {
        return found;
    }
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("interop peer missing under CI: {what} (install: {install})");
    }
    eprintln!("skipping: {what} not installed ({install})");
    None
}

/// Connects with the library's default mode, times it, and appends the report line
/// `peer<TAB>transport<TAB>negotiated version<TAB>target era<TAB>connect ms` to
/// `$SMTHRS_INTEROP_REPORT` when that is set.
pub async fn connect(
    builder: ClientBuilder,
    transport: impl Transport,
    peer: &str,
    transport_name: &str,
    speaks: Era,
) -> smthrs_mcp::Result<Client> {
    let started = Instant::now();
    let client = builder.connect(transport).await?;
    report(peer, transport_name, &client, speaks, started.elapsed());
    Ok(client)
}

fn report(peer: &str, transport: &str, client: &Client, speaks: Era, took: Duration) {
    let Some(path) = std::env::var_os("SMTHRS_INTEROP_REPORT") else {
        return;
    };
    let line = format!(
        "{peer}\t{transport}\t{}\t{}\t{:.1}\n",
        client.protocol_version(),
        speaks.as_str(),
        took.as_secs_f64() * 1000.0
    );
    // One short O_APPEND write per line: concurrent tests do not interleave.
    if let Ok(mut file) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
    {
        let _ = file.write_all(line.as_bytes());
    }
}

/// A 300 ms request timeout, for the timeout-and-cancel case.
pub fn timeout_limits() -> Limits {
    let mut limits = Limits::default();
    limits.request_timeout_ms = 300;
    limits
}

/// How the `slow` tool of one of our servers takes its duration.
#[derive(Clone, Copy, Debug)]
pub enum SlowUnit {
    /// `slow {seconds}` (the Python servers).
    Seconds,
    /// `slow {ms}` (rmcp, TypeScript).
    Millis,
}

impl SlowUnit {
    fn args(self, ms: u64) -> Value {
        match self {
            SlowUnit::Seconds => json!({"seconds": ms as f64 / 1000.0}),
            SlowUnit::Millis => json!({"ms": ms}),
        }
    }
}

fn args(value: Value) -> serde_json::Map<String, Value> {
    match value {
        Value::Object(map) => map,
        other => panic!("arguments must be an object: {other}"),
    }
}

pub fn text(result: &ToolResult) -> &str {
    result
        .content
        .first()
        .and_then(|c| c["text"].as_str())
        .unwrap_or_default()
}

fn sum_of(result: &ToolResult) -> Option<f64> {
    result.structured_content.as_ref()?["sum"].as_f64()
}

/// Catalog, `echo`, `add` (structured), a bad argument as `isError`, a short `slow`.
pub async fn tools_and_calls(client: &Client, slow: SlowUnit) {
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
    assert_eq!(sum_of(&sum), Some(42.0), "{sum:?}");
    // Arguments that do not validate are a tool error (`isError: true`), not a
    // JSON-RPC error.
    let bad = client
        .call_tool("add", args(json!({"a": "x", "b": 1})))
        .await
        .unwrap();
    assert!(bad.is_error, "{bad:?}");
    let quick = client.call_tool("slow", args(slow.args(10))).await.unwrap();
    assert!(text(&quick).contains("slept"), "{quick:?}");
}

/// A call past `requestTimeoutMs` fails with `Timeout` (the library cancels it); the
/// same session then serves the next calls.
pub async fn timeout_then_cancel(client: &Client, slow: SlowUnit) {
    let error = client
        .call_tool("slow", args(slow.args(5000)))
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
    assert_eq!(sum_of(&sum), Some(3.0), "{sum:?}");
}
