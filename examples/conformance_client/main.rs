//! The client the official MCP conformance suite (`@modelcontextprotocol/conformance`)
//! drives: `interop/conformance/run.sh` builds it and hands it to
//! `conformance client --command <this binary> --requirements <revision>`, once for
//! `2026-07-28` and once for `2025-11-25`.
//!
//! The suite starts one test server per scenario, appends its URL as the last argument
//! and sets:
//!
//! - `MCP_CONFORMANCE_SCENARIO`: the scenario name;
//! - `MCP_CONFORMANCE_PROTOCOL_VERSION`: the revision whose wire the scenario speaks
//!   (`2026-07-28`: stateless, per-request `_meta`; `2025-11-25` and earlier: the
//!   `initialize` handshake), see [`Wire`];
//! - `MCP_CONFORMANCE_CONTEXT` (some scenarios): JSON with data for the client, such
//!   as `http-custom-headers`' `toolCalls: [{name, arguments}]` (auth scenarios carry
//!   credentials there, unused here).
//!
//! Every scenario goes over Streamable HTTP. One function per scenario, as the suite's
//! reference client (`examples/clients/typescript/everything-client.ts`) behaves:
//!
//! | scenario | what the client does |
//! | --- | --- |
//! | `initialize` | connect, close |
//! | `tools_call` | connect, call `add_numbers` with `{"a": 5, "b": 3}`, close |
//! | `sse-retry` | connect, call `test_reconnection` (the transport resumes the dropped SSE stream with `GET` + `Last-Event-ID` after the server's `retry:` delay), close |
//! | `elicitation-sep1034-client-defaults` | connect, call `test_client_elicitation_defaults`; the server's `elicitation/create` is answered `accept` with no content, and the library fills in the schema's defaults ([`ConformanceHost`]) |
//! | `request-metadata` | connect (the library's version negotiation, including the one corrective retry on -32022), close |
//! | `sep-2322-client-request-state` | connect, call `test_mrtr_echo_state`, `test_mrtr_no_state`, `test_mrtr_no_result_type`; the MRTR rounds' elicitations are answered by [`ConformanceHost`], which also calls `test_mrtr_unrelated` between the first round and its retry |
//! | `http-standard-headers` | connect, call every tool of the catalog ([`call_every_tool`]), read every resource, get every prompt |
//! | `http-custom-headers` | connect, perform the context's `toolCalls` in order |
//! | `http-invalid-tool-headers` | connect, call every tool the catalog kept (the library must have dropped the ten with an invalid `x-mcp-header`) |
//! | `json-schema-ref-no-deref` | connect (lists tools), close: no network `$ref` is fetched |
//! | `json-schema-2020-12-preservation` | connect, call `json_schema_echo` with `{"schema": <json_schema_2020_12_tool's inputSchema as the catalog holds it>}` |
//! | `sep-2640-client-no-prefetch` | connect, `skills/list`, read nothing |
//! | `sep-2640-client-verify-digest`, `-verify-size`, `-verify-frontmatter` | connect, list the skills, load the first (its `SKILL.md` read and verified against the listing), read its `references/FORMS.md`: the tampered `SKILL.md` fails the load (`invalid_response`, exit 1), so the supporting file is never read |
//! | anything else (`auth/*`: OAuth is not built) | connect, close |
//!
//! It prints what it did on stdout (the suite saves it as `stdout.txt`) and exits 0;
//! any library error ends it with `conformance_client: <kind>: <message>` on stderr
//! and exit code 1, as does a tool result with `isError: true` where the scenario
//! expects a result (kind `tool_error`); a missing URL is a usage error (exit code 2).
//!
//! By hand, against a scenario server the suite started with
//! `conformance client --scenario tools_call` (no `--command`):
//!
//! ```text
//! MCP_CONFORMANCE_SCENARIO=tools_call MCP_CONFORMANCE_PROTOCOL_VERSION=2025-11-25 \
//!     cargo run --example conformance_client -- http://localhost:PORT/mcp
//! ```

mod auth;

use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use futures_util::future::BoxFuture;
use serde_json::{Map, Value, json};
use smthrs_mcp::handler::{ElicitAnswer, ElicitRequest, HostCapabilities, HostHandler};
use smthrs_mcp::{Client, ClientBuilder, Limits, Tool};

/// The server name used in the library's messages.
const SERVER: &str = "conformance";

#[tokio::main]
async fn main() -> ExitCode {
    let Some(url) = std::env::args().skip(1).last() else {
        eprintln!("conformance_client: usage: conformance_client <server-url>");
        return ExitCode::from(2);
    };
    let env = match Env::from_process() {
        Ok(env) => env,
        Err(Failure { kind, message }) => {
            eprintln!("conformance_client: {kind}: {message}");
            return ExitCode::from(2);
        }
    };
    println!(
        "scenario {:?}, wire {} ({:?})",
        env.scenario,
        env.protocol_version.as_deref().unwrap_or("unset"),
        env.wire
    );
    match run(&env, &url).await {
        Ok(()) => {
            println!("conformance_client: scenario {:?} done", env.scenario);
            ExitCode::SUCCESS
        }
        Err(Failure { kind, message }) => {
            eprintln!("conformance_client: {kind}: {message}");
            ExitCode::FAILURE
        }
    }
}

/// The lifecycle a scenario's wire revision calls for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Wire {
    /// 2025-11-25 and earlier: the `initialize` handshake.
    Legacy,
    /// 2026-07-28 and later: stateless, per-request `_meta`.
    Modern,
}

impl Wire {
    /// `MCP_CONFORMANCE_PROTOCOL_VERSION` → wire (unset: legacy, as the suite's
    /// reference client does).
    fn of(protocol_version: Option<&str>) -> Wire {
        match protocol_version {
            Some(version) if version >= "2026-07-28" => Wire::Modern,
            _ => Wire::Legacy,
        }
    }
}

/// What the suite tells the client through the environment.
struct Env {
    scenario: String,
    protocol_version: Option<String>,
    wire: Wire,
    /// `MCP_CONFORMANCE_CONTEXT`, parsed (`Value::Null` when unset).
    context: Value,
}

impl Env {
    fn from_process() -> Result<Env, Failure> {
        let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
        let protocol_version = std::env::var("MCP_CONFORMANCE_PROTOCOL_VERSION")
            .ok()
            .filter(|v| !v.is_empty());
        let context = match std::env::var("MCP_CONFORMANCE_CONTEXT") {
            Ok(text) if !text.is_empty() => serde_json::from_str(&text).map_err(|e| Failure {
                kind: "usage",
                message: format!("MCP_CONFORMANCE_CONTEXT is not JSON: {e}"),
            })?,
            _ => Value::Null,
        };
        Ok(Env {
            wire: Wire::of(protocol_version.as_deref()),
            scenario,
            protocol_version,
            context,
        })
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

/// The client builder for a scenario.
///
/// MODERN ENGINE SEAM: the library's default mode (`auto`, once the 2026-07-28 engine
/// lands) probes with `server/discover` and falls back to `initialize`, which serves
/// both wires. If the library offers a way to pin the revision, pin it here from
/// `wire` (`Wire::Modern` → 2026-07-28, `Wire::Legacy` → the handshake), as the
/// reference client picks its lifecycle from `MCP_CONFORMANCE_PROTOCOL_VERSION`.
fn client_builder(_wire: Wire) -> ClientBuilder {
    // The suite kills a client after 30 s: fail on our own well before that.
    let mut limits = Limits::default();
    limits.request_timeout_ms = 20_000;
    Client::builder(SERVER).limits(limits)
}

async fn connect(env: &Env, url: &str, host: &Arc<ConformanceHost>) -> Result<Client, Failure> {
    let transport = auth::transport(SERVER, url, &env.scenario)?;
    let mut builder = client_builder(env.wire);
    // The Skills scenarios' server speaks both wires: speak the one the run
    // asks for, so both eras are exercised (`auto` would always find 2026-07-28).
    if env.scenario.starts_with("sep-2640-") {
        builder = builder.protocol(match env.wire {
            Wire::Legacy => smthrs_mcp::ProtocolMode::Legacy,
            Wire::Modern => smthrs_mcp::ProtocolMode::Modern,
        });
    }
    let client = builder
        .host_handler(host.clone())
        .connect(transport)
        .await?;
    *host.client.lock().unwrap_or_else(|e| e.into_inner()) = Some(client.clone());
    println!(
        "connected: protocol {}, {} tool(s): {}",
        client.protocol_version(),
        client.catalog().len(),
        client
            .catalog()
            .tools()
            .iter()
            .map(Tool::name)
            .collect::<Vec<_>>()
            .join(", ")
    );
    Ok(client)
}

async fn run(env: &Env, url: &str) -> Result<(), Failure> {
    let host = ConformanceHost::new(&env.scenario);
    let client = connect(env, url, &host).await?;
    let outcome = match env.scenario.as_str() {
        "tools_call" => tools_call(&client).await,
        "sse-retry" => sse_retry(&client).await,
        "elicitation-sep1034-client-defaults" => elicitation_sep1034_client_defaults(&client).await,
        "request-metadata" => request_metadata(&client).await,
        "sep-2322-client-request-state" => sep_2322_client_request_state(&client).await,
        "http-standard-headers" => http_standard_headers(&client).await,
        "http-custom-headers" => http_custom_headers(&client, &env.context).await,
        "http-invalid-tool-headers" => http_invalid_tool_headers(&client).await,
        "json-schema-ref-no-deref" => json_schema_ref_no_deref(&client).await,
        "json-schema-2020-12-preservation" => json_schema_2020_12_preservation(&client).await,
        "sep-2640-client-no-prefetch" => skills_no_prefetch(&client).await,
        "sep-2640-client-verify-digest"
        | "sep-2640-client-verify-size"
        | "sep-2640-client-verify-frontmatter" => skills_load_then_read(&client).await,
        // The OAuth chain answered the 401 while connecting; use the token.
        s if s.starts_with("auth/") => auth::exercise(&client).await,
        // `initialize`: the connect was the scenario.
        _ => Ok(()),
    };
    host.client.lock().unwrap_or_else(|e| e.into_inner()).take();
    client.close().await;
    outcome
}

// ---------------------------------------------------------------- scenarios

/// `sep-2640-client-no-prefetch`: list the skills and read nothing.
async fn skills_no_prefetch(client: &Client) -> Result<(), Failure> {
    let listed = client.list_skills().await?;
    println!(
        "skills/list: {} skill(s), {} declined, nothing read",
        listed.skills.len(),
        listed.declined.len()
    );
    Ok(())
}

/// `sep-2640-client-verify-{digest,size,frontmatter}`: list, load the first
/// skill (its `SKILL.md` read and verified), then read its supporting file
/// `references/FORMS.md`. The server tampered with `SKILL.md`: a verifying
/// client fails the load and never reads the supporting file.
async fn skills_load_then_read(client: &Client) -> Result<(), Failure> {
    let listed = client.list_skills().await?;
    let Some(skill) = listed.skills.into_iter().next() else {
        return Err(Failure {
            kind: "invalid_response",
            message: "skills/list listed no skill".to_owned(),
        });
    };
    let loaded = client.load_skill(skill).await?;
    println!("loaded skill {}", loaded.skill().name());
    let file = loaded.read("references/FORMS.md").await?;
    println!(
        "read {} ({} bytes, verified)",
        file.uri(),
        file.bytes().len()
    );
    Ok(())
}

/// `tools_call`: `add_numbers` with numeric `a`, `b`.
async fn tools_call(client: &Client) -> Result<(), Failure> {
    call(client, "add_numbers", json!({"a": 5, "b": 3})).await
}

/// `sse-retry`: the transport must resume the dropped stream.
async fn sse_retry(client: &Client) -> Result<(), Failure> {
    call(client, "test_reconnection", json!({})).await
}

/// `elicitation-sep1034-client-defaults` (2025-11-25 wire): the tool's server sends
/// `elicitation/create` with a schema whose fields all have defaults; the client
/// answers `accept` with no content ([`ConformanceHost`]) and the library applies
/// the defaults.
async fn elicitation_sep1034_client_defaults(client: &Client) -> Result<(), Failure> {
    call(client, "test_client_elicitation_defaults", json!({})).await
}

/// `request-metadata`: nothing beyond the connect. The library's modern path sends
/// `MCP-Protocol-Version` and `_meta` (protocolVersion, clientCapabilities,
/// clientInfo) on every request, and retries once on the scenario's deliberate
/// -32022 for the first request.
async fn request_metadata(_client: &Client) -> Result<(), Failure> {
    Ok(())
}

/// `sep-2322-client-request-state` (MRTR): three tools; the library runs the
/// `input_required` rounds (exact `requestState` echo, a new id per retry, no state
/// when none was sent, absent `resultType` = complete). The elicitations of the rounds
/// are answered by [`ConformanceHost`], which also calls `test_mrtr_unrelated`
/// between the first round and its retry (the isolation check).
async fn sep_2322_client_request_state(client: &Client) -> Result<(), Failure> {
    for tool in [
        "test_mrtr_echo_state",
        "test_mrtr_no_state",
        "test_mrtr_no_result_type",
    ] {
        call(client, tool, json!({})).await?;
    }
    Ok(())
}

/// `http-standard-headers`: exercise `tools/list` (the connect) and `tools/call` on
/// every tool, then `resources/list`, `resources/read` of each listed resource
/// (through the server, whatever its scheme: an `https` URI is never fetched),
/// `prompts/list` and `prompts/get` of each prompt, so `Mcp-Method` and
/// `Mcp-Name` are sent for every method the scenario checks.
async fn http_standard_headers(client: &Client) -> Result<(), Failure> {
    call_every_tool(client).await?;
    if client.declares("resources") {
        for resource in client.list_resources().await?.entries {
            client.read_resource(&resource.uri).await?;
        }
    }
    if client.declares("prompts") {
        for prompt in client.list_prompts().await?.entries {
            client.get_prompt(&prompt.name, Map::new()).await?;
        }
    }
    Ok(())
}

/// `http-custom-headers`: the context's `toolCalls`, in order, with their exact
/// arguments (the library mirrors the `x-mcp-header` parameters into `Mcp-Param-*`).
async fn http_custom_headers(client: &Client, context: &Value) -> Result<(), Failure> {
    let calls = context
        .get("toolCalls")
        .and_then(Value::as_array)
        .ok_or_else(|| Failure {
            kind: "usage",
            message: "MCP_CONFORMANCE_CONTEXT has no toolCalls array".into(),
        })?;
    for entry in calls {
        let name = entry
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| Failure {
                kind: "usage",
                message: format!("a toolCalls entry has no name: {entry}"),
            })?;
        let arguments = entry.get("arguments").cloned().unwrap_or_else(|| json!({}));
        call(client, name, arguments).await?;
    }
    Ok(())
}

/// `http-invalid-tool-headers`: call what the catalog kept. The library must have
/// dropped the ten tools with an invalid `x-mcp-header` and kept `valid_tool`.
async fn http_invalid_tool_headers(client: &Client) -> Result<(), Failure> {
    call_every_tool(client).await
}

/// `json-schema-ref-no-deref`: the connect lists the tools; nothing may fetch the
/// network `$ref` in their schemas.
async fn json_schema_ref_no_deref(_client: &Client) -> Result<(), Failure> {
    Ok(())
}

/// `json-schema-2020-12-preservation`: echo the focal tool's inputSchema, as the
/// catalog holds it, to `json_schema_echo`; the scenario diffs it with its fixture.
async fn json_schema_2020_12_preservation(client: &Client) -> Result<(), Failure> {
    const FOCAL: &str = "json_schema_2020_12_tool";
    let schema = client
        .catalog()
        .get(FOCAL)
        .map(|tool| Value::Object(tool.input_schema().clone()))
        .ok_or_else(|| Failure {
            kind: "tool_not_found",
            message: format!("the catalog has no {FOCAL:?}"),
        })?;
    call(client, "json_schema_echo", json!({ "schema": schema })).await
}

// ---------------------------------------------------------------- host

/// The host handler: answers the scenarios' elicitations.
///
/// - `elicitation-sep1034-client-defaults`: `accept` with no content; the library
///   fills in every field's `default` (SEP-1034).
/// - `sep-2322-client-request-state`: `accept` with `{"confirmed": true}` (as the
///   reference client), and before the first answer a call of
///   `test_mrtr_unrelated`, so it runs between the first `input_required` round
///   and its retry and must carry no `inputResponses`/`requestState`.
struct ConformanceHost {
    scenario: String,
    /// The connected client, for the MRTR isolation call; taken out when done so
    /// the handler holds no session alive.
    client: Mutex<Option<Client>>,
    unrelated_called: AtomicBool,
}

impl ConformanceHost {
    fn new(scenario: &str) -> Arc<Self> {
        Arc::new(ConformanceHost {
            scenario: scenario.to_owned(),
            client: Mutex::new(None),
            unrelated_called: AtomicBool::new(false),
        })
    }

    fn client(&self) -> Option<Client> {
        self.client
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

impl HostHandler for ConformanceHost {
    fn capabilities(&self) -> HostCapabilities {
        HostCapabilities::default().with_elicitation_form()
    }

    fn elicit(&self, request: ElicitRequest) -> BoxFuture<'_, ElicitAnswer> {
        Box::pin(async move {
            let ElicitRequest::Form(form) = request else {
                return ElicitAnswer::Decline;
            };
            println!("elicitation: {} field(s)", form.fields.len());
            if self.scenario != "sep-2322-client-request-state" {
                return ElicitAnswer::Accept(Map::new());
            }
            if !self.unrelated_called.swap(true, Ordering::SeqCst)
                && let Some(client) = self.client()
                && let Err(failure) = call(&client, "test_mrtr_unrelated", json!({})).await
            {
                eprintln!("conformance_client: {}: {}", failure.kind, failure.message);
            }
            let mut content = Map::new();
            content.insert("confirmed".into(), Value::Bool(true));
            ElicitAnswer::Accept(content)
        })
    }
}

// ---------------------------------------------------------------- helpers

/// Calls `tool` and prints its result; a result with `isError: true` fails the
/// scenario.
async fn call(client: &Client, tool: &str, arguments: Value) -> Result<(), Failure> {
    let Value::Object(arguments) = arguments else {
        return Err(Failure {
            kind: "usage",
            message: format!("the arguments for {tool:?} are not a JSON object"),
        });
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

/// Calls every tool of the catalog once, in catalog order, with [`arguments_for`]
/// its input schema.
async fn call_every_tool(client: &Client) -> Result<(), Failure> {
    for tool in client.catalog().tools() {
        call(client, tool.name(), arguments_for(tool)).await?;
    }
    Ok(())
}

/// Arguments satisfying a tool's `required` properties by their `type`: strings
/// `"conformance"`, integers `1`, numbers `1.5`, booleans `true`.
fn arguments_for(tool: &Tool) -> Value {
    let schema = tool.input_schema();
    let properties = schema.get("properties").and_then(Value::as_object);
    let mut arguments = Map::new();
    for name in schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        let kind = properties
            .and_then(|p| p.get(name))
            .and_then(|p| p.get("type"))
            .and_then(Value::as_str);
        let value = match kind {
            Some("integer") => json!(1),
            Some("number") => json!(1.5),
            Some("boolean") => json!(true),
            Some("object") => json!({}),
            Some("array") => json!([]),
            _ => json!("conformance"),
        };
        arguments.insert(name.to_owned(), value);
    }
    Value::Object(arguments)
}
