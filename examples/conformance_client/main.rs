//! The client the official MCP conformance suite (`@modelcontextprotocol/conformance`)
//! drives: `interop/conformance/run.sh` builds it and hands it to
//! `conformance client --command <this binary>`.
//!
//! The suite starts one test server per scenario, appends its URL as the last
//! argument and names the scenario in `MCP_CONFORMANCE_SCENARIO` (a few auth
//! scenarios also set `MCP_CONFORMANCE_CONTEXT`, read by `auth.rs`, which builds
//! the transport with OAuth). Every scenario goes over Streamable HTTP:
//!
//! | scenario | what the client does |
//! | --- | --- |
//! | `initialize` | connect (`initialize`, `notifications/initialized`, `tools/list`), close |
//! | `tools_call` | connect, call `add_numbers` with `{"a": 5, "b": 3}`, close |
//! | `sse-retry` | connect, call `test_reconnection` (the server drops the SSE stream; the transport resumes with `GET` + `Last-Event-ID` after the server's `retry:` delay), close |
//! | `auth/*` | connect (the OAuth chain answers the 401), call the first tool, close |
//! | anything else | connect, close |
//!
//! The `initialize` scenario's server declares no `tools` capability, which the
//! library refuses by contract (`protocol_error`, "does not offer tools") right after
//! the `initialize` exchange: the scenario's one check (the `initialize` request)
//! passes, and the client exits 1. In suite mode the suite counts checks only.
//!
//! It prints what it did on stdout (the suite saves it as `stdout.txt`) and exits 0;
//! any library error ends it with `conformance_client: <kind>: <message>` on stderr
//! and exit code 1, as does a tool result with `isError: true` (kind `tool_error`);
//! a missing URL is a usage error (exit code 2).
//!
//! By hand, against a scenario server the suite started with
//! `conformance client --scenario tools_call` (no `--command`):
//!
//! ```text
//! MCP_CONFORMANCE_SCENARIO=tools_call cargo run --example conformance_client -- http://localhost:PORT/mcp
//! ```

mod auth;

use std::process::ExitCode;

use serde_json::{Value, json};
use smthrs_mcp::{Client, Limits};

/// The server name used in the library's messages.
const SERVER: &str = "conformance";

#[tokio::main]
async fn main() -> ExitCode {
    let Some(url) = std::env::args().skip(1).last() else {
        eprintln!("conformance_client: usage: conformance_client <server-url>");
        return ExitCode::from(2);
    };
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    match run(&scenario, &url).await {
        Ok(()) => {
            println!("conformance_client: scenario {scenario:?} done");
            ExitCode::SUCCESS
        }
        Err(Failure { kind, message }) => {
            eprintln!("conformance_client: {kind}: {message}");
            ExitCode::FAILURE
        }
    }
}

/// Why a scenario failed: a library error (its stable kind name) or a tool error.
struct Failure {
    kind: &'static str,
    message: String,
}

impl From<smthrs_mcp::Error> for Failure {
    fn from(error: smthrs_mcp::Error) -> Self {
        Failure {
            kind: error.kind().as_str(),
            message: error.message().to_owned(),
        }
    }
}

async fn run(scenario: &str, url: &str) -> Result<(), Failure> {
    let transport = auth::transport(SERVER, url, scenario)?;
    // The suite kills a client after 30 s: fail on our own well before that.
    let limits = Limits {
        request_timeout_ms: 20_000,
        ..Limits::default()
    };
    let client = Client::builder(SERVER)
        .limits(limits)
        .connect(transport)
        .await?;
    println!(
        "connected: protocol {}, {} tool(s): {}",
        client.protocol_version(),
        client.catalog().len(),
        client
            .catalog()
            .tools()
            .iter()
            .map(|tool| tool.name())
            .collect::<Vec<_>>()
            .join(", ")
    );
    let outcome = match scenario {
        "tools_call" => call(&client, "add_numbers", json!({"a": 5, "b": 3})).await,
        "sse-retry" => call(&client, "test_reconnection", json!({})).await,
        s if s.starts_with("auth/") => auth::exercise(&client).await,
        _ => Ok(()),
    };
    client.close().await;
    outcome
}

/// Calls `tool` and prints its result; a result with `isError: true` fails the
/// scenario.
async fn call(client: &Client, tool: &str, arguments: Value) -> Result<(), Failure> {
    let Value::Object(arguments) = arguments else {
        unreachable!("arguments are a JSON object literal")
    };
    let result = client.call_tool(tool, arguments).await?;
    let text = result
        .content
        .iter()
        .filter_map(|item| item.get("text").and_then(Value::as_str))
        .collect::<Vec<_>>()
        .join(" ");
    println!("{tool}: isError={} {text}", result.is_error);
    if result.is_error {
        return Err(Failure {
            kind: "tool_error",
            message: format!("tool {tool:?} answered with isError: true"),
        });
    }
    Ok(())
}
